import torch
torch.manual_seed(21)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(16)
        self.att = torch.nn.MultiheadAttention(16, 2, batch_first=True)
        self.ff = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16))
    def forward(self, x):
        h = self.ln(x)
        a, _ = self.att(h, h, h, need_weights=False)
        x = x + a
        return x + self.ff(self.ln(x))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 6, 16),)
