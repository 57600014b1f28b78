import torch
torch.manual_seed(45)
class M(torch.nn.Module):
    def forward(self, x, s):
        m = x > 0.3
        a = x.masked_scatter(m, s)
        b = torch.max(x) - torch.min(x)
        c = torch.narrow_copy(x, 3, 2, 3)
        d = torch.mean(x, dtype=torch.float32)
        e = torch.nn.functional.conv2d(x, torch.ones(2, 4, 1, 1) * 0.25) * 2.0
        return a, b, c, d, e
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 5, 6), torch.randn(120))
