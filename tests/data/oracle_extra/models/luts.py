import torch
import torch.nn.functional as F
torch.manual_seed(3)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(16, 16)
    def forward(self, x):
        y = self.l(x)
        return (torch.sigmoid(y), torch.tanh(y), F.hardswish(y), F.hardsigmoid(y), F.gelu(y), F.silu(y),
                torch.exp(y), F.elu(y))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(2, 16) * 2,)
