import torch
import torch.nn.functional as F
torch.manual_seed(1)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c0 = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.c1 = torch.nn.Conv2d(8, 4, 1)
    def forward(self, x):
        x = self.c0(x)
        a = F.interpolate(x, scale_factor=2, mode="nearest")
        b = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        c = F.interpolate(x, size=(13, 11), mode="bilinear", align_corners=True)
        return self.c1(a + b), c
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 7, 6),)
