import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(35)
def cbr(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = cbr(3, 8); self.e2 = cbr(8, 16); self.b = cbr(16, 32)
        self.u2 = nn.ConvTranspose2d(32, 16, 2, 2); self.d2 = cbr(32, 16)
        self.d1 = cbr(24, 8); self.out = nn.Conv2d(8, 2, 1)
    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool2d(e1, 2))
        b = self.b(F.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([self.u2(b), e2], 1))
        d1 = self.d1(torch.cat([F.interpolate(d2, scale_factor=2, mode="nearest"), e1], 1))
        return torch.sigmoid(self.out(d1))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 24, 24),)
