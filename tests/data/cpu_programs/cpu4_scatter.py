import torch
torch.manual_seed(42)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("idx", torch.tensor([[2, 0, 1, 3, 0], [1, 1, 3, 2, 0]]))
        self.register_buffer("rows", torch.tensor([3, 0, 5]))
    def forward(self, x, s):
        a = torch.scatter_add(x, 0, self.idx, s)
        b = torch.scatter(x, 0, self.idx, s)
        c = x.clone()
        c[self.rows[:2]] = s[:2] * 2.0
        d = torch.index_put(x, (self.rows[:2],), s[:2], accumulate=True)
        e = x.scatter(1, self.idx, 0.5)
        return a, b, c, d, e
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(6, 5), torch.randn(2, 5))
