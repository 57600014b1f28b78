import torch
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c0 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.t1 = torch.nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.t2 = torch.nn.ConvTranspose2d(6, 4, 2, stride=2)
        self.t3 = torch.nn.ConvTranspose2d(4, 5, 3, stride=1, padding=1)
    def forward(self, x):
        x = torch.relu(self.c0(x))
        x = torch.relu(self.t1(x))
        x = self.t2(x)
        return self.t3(x)
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 5, 6),)
