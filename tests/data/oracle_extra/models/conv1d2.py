import torch
torch.manual_seed(12)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv1d(3, 8, 5, stride=2, padding=2)
        self.b = torch.nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=8)
        self.c = torch.nn.Conv1d(8, 4, 1, bias=False)
    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 37),)
