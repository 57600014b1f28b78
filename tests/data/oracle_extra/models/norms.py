import torch
torch.manual_seed(15)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.ln = torch.nn.LayerNorm(10)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1); self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 1.5); self.bn.bias.uniform_(-0.5, 0.5)
    def forward(self, x, y):
        return self.bn(self.c(x)), self.ln(y)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 9, 9), torch.randn(1, 6, 10))
