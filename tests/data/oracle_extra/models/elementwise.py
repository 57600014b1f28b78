import torch
torch.manual_seed(10)
class M(torch.nn.Module):
    def forward(self, x, y, z):
        a = torch.abs(x) - y
        b = torch.minimum(x, y) * z
        c = torch.maximum(x, z) - torch.neg(y)
        d = x * y[:, :, :1, :]
        e = x - z[:, :1]
        return a, b, c, d, e
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 6, 5), torch.randn(1, 4, 6, 5) * 2, torch.randn(1, 4, 1, 5) * 0.5)
