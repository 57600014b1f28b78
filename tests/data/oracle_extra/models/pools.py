import torch
torch.manual_seed(2)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c0 = torch.nn.Conv2d(3, 8, 3)
        self.mp = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.mp2 = torch.nn.MaxPool2d(2, stride=2, ceil_mode=True)
        self.ap = torch.nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=True)
        self.ap2 = torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
    def forward(self, x):
        x = self.c0(x)
        return self.mp(x), self.mp2(x), self.ap(x), self.ap2(x)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 13, 12),)
