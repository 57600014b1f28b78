import torch
torch.manual_seed(6)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(12, 10)
    def forward(self, x):
        y = self.l(x)
        return torch.softmax(y, dim=-1), torch.log_softmax(y, dim=-1), torch.softmax(y, dim=1)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 5, 12) * 3,)
