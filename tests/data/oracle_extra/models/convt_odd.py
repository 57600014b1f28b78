import torch
torch.manual_seed(22)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t1 = torch.nn.ConvTranspose2d(4, 6, 4, stride=2, padding=1)
        self.t2 = torch.nn.ConvTranspose2d(6, 3, 3, stride=2, padding=0)
        self.t3 = torch.nn.ConvTranspose2d(3, 4, (1, 5), stride=(1, 2), padding=(0, 2), bias=False)
    def forward(self, x):
        return self.t3(torch.relu(self.t2(self.t1(x))))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 4, 5, 7),)
