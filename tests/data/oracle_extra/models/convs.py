import torch
torch.manual_seed(11)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dw2 = torch.nn.Conv2d(4, 8, 3, padding=1, groups=4)          # channel multiplier 2
        self.grp = torch.nn.Conv2d(8, 12, 3, padding=1, groups=2)         # grouped
        self.dil = torch.nn.Conv2d(12, 8, 3, padding=2, dilation=2)       # dilated
        self.st = torch.nn.Conv2d(8, 6, 5, stride=3, padding=2)           # strided, odd sizes
        self.st2 = torch.nn.Conv2d(6, 6, (3, 1), stride=(2, 1))           # non-square kernel
    def forward(self, x):
        x = torch.relu(self.dw2(x))
        x = self.grp(x)
        x = torch.relu(self.dil(x))
        x = self.st(x)
        return self.st2(x)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 17, 15),)
