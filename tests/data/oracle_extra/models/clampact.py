import torch
import torch.nn.functional as F
torch.manual_seed(9)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 8, 3, padding=1)
    def forward(self, x):
        y = self.c(x)
        return (F.relu6(y), torch.clamp(y, -0.5, 1.25), F.leaky_relu(y, 0.1), F.hardtanh(y, -2.0, 2.0),
                torch.clamp(y, min=0.3))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 8, 8),)
