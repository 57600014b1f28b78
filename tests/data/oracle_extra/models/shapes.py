import torch
torch.manual_seed(7)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(4, 6, 1)
    def forward(self, x, y):
        a = self.c(x)                                 # 1,6,5,7
        b = torch.cat([a, y], dim=1)                  # 1,9,5,7
        c = b[:, 2:7, 1:4, ::2]                       # slice + step
        d = c.permute(0, 2, 3, 1)                     # NHWC
        e = d.reshape(1, -1, 5)
        f = torch.transpose(e, 1, 2)
        g = torch.cat([f, f * 2], dim=2)
        return g, torch.cat([a, a], dim=3)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 5, 7), torch.randn(1, 3, 5, 7))
