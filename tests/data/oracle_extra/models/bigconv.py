import torch
torch.manual_seed(24)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 40, 7, stride=2, padding=3)
        self.b = torch.nn.Conv2d(40, 40, 3, padding=1, groups=40)
        self.c = torch.nn.Conv2d(40, 72, 1)
        self.d = torch.nn.Conv2d(72, 24, 3, stride=2)
    def forward(self, x):
        x = torch.relu(self.a(x))
        x = torch.relu(self.b(x))
        x = torch.relu(self.c(x))
        return self.d(x)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 40, 36),)
