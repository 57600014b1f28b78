import torch
torch.manual_seed(38)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dw3 = torch.nn.Conv2d(5, 15, 3, stride=2, padding=1, groups=5)     # multiplier 3, stride 2
        self.dw5 = torch.nn.Conv2d(15, 30, 5, stride=2, padding=2, groups=15)   # multiplier 2, 5x5 stride 2
        self.dwd = torch.nn.Conv2d(30, 30, 3, padding=2, dilation=2, groups=30, bias=False)
        self.dw4 = torch.nn.Conv2d(5, 20, (1, 7), stride=(1, 3), padding=(0, 3), groups=5)  # multiplier 4, 1x7
    def forward(self, x):
        y = torch.relu(self.dw3(x))
        y = self.dw5(y)
        return self.dwd(y), self.dw4(x)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 5, 23, 19),)
