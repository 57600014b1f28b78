import torch
torch.manual_seed(25)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.LSTM(5, 7, num_layers=2, batch_first=True)
        self.o = torch.nn.Linear(7, 3)
    def forward(self, x):
        y, _ = self.l(x)
        return self.o(y[:, -1])
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 5, 5),)
