import torch
torch.manual_seed(36)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(5, 330, 1)
        self.dw = torch.nn.Conv2d(330, 330, 3, padding=1, groups=330)
        self.b = torch.nn.Conv2d(330, 37, 3, padding=1)
        self.l = torch.nn.Linear(37, 301)
    def forward(self, x):
        y = torch.relu(self.a(x))
        y = torch.relu(self.dw(y))
        z = self.b(y)
        mc = z.mean(dim=1, keepdim=True)
        g = z.mean(dim=(2, 3))
        return self.l(g), mc, y.amax(dim=1, keepdim=True)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 5, 7, 9),)
