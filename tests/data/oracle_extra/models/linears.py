import torch
torch.manual_seed(13)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(20, 12)
        self.b = torch.nn.Linear(12, 7, bias=False)
    def forward(self, x, p, q):
        y = self.b(torch.relu(self.a(x)))
        return y, torch.bmm(p, q), torch.matmul(p, q.transpose(1, 2).transpose(1, 2))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(3, 20), torch.randn(2, 4, 6), torch.randn(2, 6, 5))
