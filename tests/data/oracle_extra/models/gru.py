import torch
torch.manual_seed(14)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.g = torch.nn.GRU(6, 8, batch_first=True)
    def forward(self, x):
        y, h = self.g(x)
        return y
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 6),)
