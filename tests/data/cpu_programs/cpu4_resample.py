import torch
import torch.nn.functional as F
torch.manual_seed(43)
class M(torch.nn.Module):
    def forward(self, x, g):
        a = F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=False)
        b = F.grid_sample(x, g, mode="bicubic", padding_mode="border", align_corners=True)
        c = F.grid_sample(x, g, mode="nearest", padding_mode="reflection", align_corners=False)
        d = F.adaptive_avg_pool2d(x, (3, 5))
        e = F.interpolate(x, size=(4, 3), mode="bilinear", antialias=True)
        return a, b, c, d, e
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 7, 9), torch.rand(1, 4, 6, 2) * 2.4 - 1.2)
