"""MobileNetV2 1.0 224 in torchvision's layout (inverted residuals, ReLU6, 1000 classes), seeded random weights."""
import torch
from torch import nn

torch.manual_seed(0)


def cbr(i, o, k=3, s=1, g=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o), nn.ReLU6())


class Block(nn.Module):
    def __init__(self, i, o, s, t):
        super().__init__()
        h = i * t
        layers = [] if t == 1 else [cbr(i, h, 1)]
        layers += [cbr(h, h, 3, s, h), nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o)]
        self.conv = nn.Sequential(*layers)
        self.res = s == 1 and i == o

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


class MV2(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        layers, c = [cbr(3, 32, 3, 2)], 32
        for t, o, n, s in cfg:
            for k in range(n):
                layers.append(Block(c, o, s if k == 0 else 1, t))
                c = o
        layers.append(cbr(c, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, 1000)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


ModelUnderTest = MV2().eval()
ModelInputs = (torch.rand(1, 3, 224, 224),)
