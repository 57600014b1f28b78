import torch
torch.manual_seed(23)
class M(torch.nn.Module):
    def forward(self, x, s, r):
        a = x * s            # per-channel scale broadcast (1,C,1,1)
        b = x + r            # row broadcast (1,1,1,W)
        c = x / 3.0          # scalar division
        d = (x - 0.5) * 2.0  # scalar ops
        e = s - x            # reversed-order broadcast
        return a, b, c, d, e, torch.square(x)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 5, 4, 6), torch.rand(1, 5, 1, 1) + 0.5, torch.randn(1, 1, 1, 6))
