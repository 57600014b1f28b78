import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(30)
class SE(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)
    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s
class Block(nn.Module):
    def __init__(self, cin, cexp, cout, k, s, se, hs):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(cin, cexp, 1, bias=False), nn.BatchNorm2d(cexp)) if cexp != cin else None
        self.dw = nn.Sequential(nn.Conv2d(cexp, cexp, k, s, k // 2, groups=cexp, bias=False), nn.BatchNorm2d(cexp))
        self.se = SE(cexp) if se else None
        self.proj = nn.Sequential(nn.Conv2d(cexp, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.act = nn.Hardswish() if hs else nn.ReLU()
        self.res = s == 1 and cin == cout
    def forward(self, x):
        y = x
        if self.expand is not None:
            y = self.act(self.expand(y))
        y = self.act(self.dw(y))
        if self.se is not None:
            y = self.se(y)
        y = self.proj(y)
        return x + y if self.res else y
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(
            Block(16, 16, 16, 3, 2, True, False),
            Block(16, 72, 24, 3, 2, False, False),
            Block(24, 88, 24, 3, 1, False, False),
            Block(24, 96, 40, 5, 2, True, True),
            Block(40, 120, 40, 5, 1, True, True),
        )
        self.head = nn.Sequential(nn.Conv2d(40, 96, 1), nn.Hardswish())
        self.fc = nn.Sequential(nn.Linear(96, 64), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(64, 10))
    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)
m = M().eval()
with torch.no_grad():
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.2, 0.2); mod.running_var.uniform_(0.5, 1.5)
ModelUnderTest = m
ModelInputs = (torch.randn(1, 3, 64, 64),)
