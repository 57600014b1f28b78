import torch
import torch.nn.functional as F
torch.manual_seed(27)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(12, 16)
        self.b = torch.nn.Linear(16, 8)
        self.ln = torch.nn.LayerNorm(16)
    def forward(self, x):
        h = self.ln(self.a(x))
        return self.b(F.gelu(h)), torch.exp(-h.abs()), F.silu(h), F.hardswish(h)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(2, 12),)
