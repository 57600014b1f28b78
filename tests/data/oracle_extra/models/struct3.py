import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(41)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.same = nn.Conv2d(8, 8, 3, padding="same")
        self.dw = nn.Conv2d(8, 8, 3, stride=2, groups=8)
        self.gn = nn.GroupNorm(2, 8)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
    def forward(self, x):
        a = torch.flip(x, dims=[3])
        b = torch.roll(x, shifts=2, dims=2)
        c = F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)
        s1, s2 = torch.split(x, [3, 5], dim=1)
        d = torch.stack([s1.mean(1), s2.mean(1)], dim=1)
        e = F.adaptive_avg_pool2d(x, (3, 3))
        f = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False)
        g = self.same(x)
        h = self.dw(x)
        cs = x.view(1, 2, 4, 9, 9).transpose(1, 2).reshape(1, 8, 9, 9)
        return a + b + c + cs, d, e, f, self.gn(g), h, x.repeat(1, 1, 2, 1)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 8, 9, 9),)
