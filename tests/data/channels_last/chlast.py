import torch
import torch.nn as nn
torch.manual_seed(52)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 4, 3, stride=2)
    def forward(self, x):
        y = torch.relu(self.c1(x))
        return self.c2(y), y.mean(dim=(2, 3))
ModelUnderTest = M().eval().to(memory_format=torch.channels_last)
ModelInputs = (torch.randn(1, 3, 12, 10).to(memory_format=torch.channels_last),)
