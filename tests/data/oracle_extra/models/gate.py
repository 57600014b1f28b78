import torch
torch.manual_seed(15)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lz = torch.nn.Linear(48, 48)
        self.lr = torch.nn.Linear(48, 48)
        self.lo = torch.nn.Linear(48, 48)
    def forward(self, x):
        z = torch.sigmoid(self.lz(x))
        r = self.lr(x)
        return self.lo(torch.clamp((1 - z) * r + z, -1.0, 1.0))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(3, 48),)
