import torch
torch.manual_seed(33)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 10, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(10, 10, 3, padding=1, groups=10)
        self.mp = torch.nn.MaxPool2d(2)
        self.ap = torch.nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.l = torch.nn.Linear(10 * 4 * 4, 7)
    def forward(self, x):
        y = torch.relu(self.c(x))
        y = self.dw(y) + y
        p = self.mp(y)
        a = self.ap(p)
        return self.l(a.flatten(1)), a
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(3, 3, 15, 15),)
