import torch
import torch.nn as nn
torch.manual_seed(33)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        layers = []
        cin = 20
        for cout, k, s, d in [(32, 11, 2, 1), (32, 7, 1, 1), (32, 7, 1, 1), (48, 9, 1, 2), (64, 1, 1, 1)]:
            layers += [nn.Conv1d(cin, cout, k, s, padding=(k // 2) * d, dilation=d), nn.ReLU()]
            cin = cout
        layers += [nn.Conv1d(cin, 29, 1)]
        self.net = nn.Sequential(*layers)
    def forward(self, x):
        return torch.log_softmax(self.net(x), dim=1)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 20, 50),)
