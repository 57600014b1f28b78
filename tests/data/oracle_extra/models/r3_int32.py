import torch
torch.manual_seed(32)
class M(torch.nn.Module):
    def forward(self, a, b):
        s = a + b
        d = a - b
        m = a * 3 + b * b
        sh = (a << 2) + (b >> 1)
        mx = torch.maximum(a, b) - torch.minimum(a, b)
        ab = torch.abs(d)
        return s, d, m, sh, mx, ab
ModelUnderTest = M().eval()
ModelInputs = (torch.randint(-1000, 1000, (1, 4, 6, 5), dtype=torch.int32),
               torch.randint(-300, 300, (1, 4, 6, 5), dtype=torch.int32))
