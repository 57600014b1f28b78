import torch
torch.manual_seed(41)
class M(torch.nn.Module):
    def forward(self, x, y):
        a = torch.logit(torch.sigmoid(x), eps=1e-3)
        b = torch.nn.functional.glu(x, dim=-1)
        c = torch.asinh(x) + torch.acosh(y + 1.5) + torch.atanh(torch.tanh(x) * 0.9)
        v, m = torch.var_mean(x, dim=2, keepdim=True, correction=0)
        d = torch.tril(x, diagonal=1) + v - m
        e = torch.std(x, dim=(1, 3))
        return a, b, c, d, e
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 6, 8), torch.rand(1, 3, 6, 8))
