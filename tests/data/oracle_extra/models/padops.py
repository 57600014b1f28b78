import torch
import torch.nn.functional as F
torch.manual_seed(8)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 4, 3)
    def forward(self, x):
        a = F.pad(x, (1, 2, 0, 1), mode="constant", value=0.0)
        b = F.pad(x, (2, 1, 1, 1), mode="constant", value=0.5)
        r = F.pad(x, (1, 1, 2, 2), mode="reflect")
        e = F.pad(x, (1, 1, 1, 1), mode="replicate")
        return self.c(a), b, r, e
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 6, 7),)
