import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(40)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(4, 8, 3, padding=1)
        self.prelu = nn.PReLU(8)
    def forward(self, x):
        y = self.c(x)
        return (self.prelu(y), F.softplus(y), F.mish(y), F.selu(y), F.celu(y, 0.5), F.logsigmoid(y),
                F.hardtanh(y, -1.0, 3.0), F.relu(y) ** 2, torch.erf(y), F.tanhshrink(y))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 6, 6) * 2,)
