import torch
import torch.nn as nn
torch.manual_seed(42)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 12)
        self.conv = nn.Conv1d(12, 16, 3, padding=1)
        self.lstm = nn.LSTM(16, 8, batch_first=True, bidirectional=True)
        self.out = nn.Linear(16, 5)
    def forward(self, ids):
        e = self.emb(ids).transpose(1, 2)
        h = torch.relu(self.conv(e)).transpose(1, 2)
        y, _ = self.lstm(h)
        return self.out(y).max(dim=1).values
ModelUnderTest = M().eval()
ModelInputs = (torch.randint(0, 20, (1, 7)),)
