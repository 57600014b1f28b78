import torch
torch.manual_seed(11)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 16)
        self.fc = torch.nn.Linear(16, 8)
    def forward(self, idx, x):
        e = self.emb(idx)                      # 1,6,16
        return self.fc(e + x)
ModelUnderTest = M().eval()
ModelInputs = (torch.tensor([[3, 0, 19, 7, 7, 12]]), torch.randn(1, 6, 16))
