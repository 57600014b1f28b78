import torch
torch.manual_seed(34)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k9 = torch.nn.Conv2d(3, 8, 9, stride=3, padding=4)        # 9x9 stride 3
        self.k115 = torch.nn.Conv2d(8, 6, (1, 15), padding=(0, 7))     # 1x15
        self.s4 = torch.nn.Conv2d(3, 5, 4, stride=4)                   # patchify stride 4
        self.ds = torch.nn.Conv2d(6, 6, 3, stride=2, dilation=3, padding=3)  # dilation 3 stride 2
        self.k71 = torch.nn.Conv2d(5, 4, (7, 1), stride=(2, 1), dilation=(2, 1), padding=(6, 0))
    def forward(self, x):
        a = torch.relu(self.k9(x))
        a = self.k115(a)
        a = self.ds(a)
        b = self.s4(x)
        b = self.k71(b)
        return a, b
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 29, 31),)
