import torch
import torch.nn as nn
torch.manual_seed(34)
class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.n1 = nn.LayerNorm(d); self.n2 = nn.LayerNorm(d)
        self.h = h
        self.qkv = nn.Linear(d, 3 * d); self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
    def forward(self, x):
        B, N, D = x.shape
        q, k, v = self.qkv(self.n1(x)).reshape(B, N, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1)) * (D // self.h) ** -0.5
        a = a.softmax(dim=-1)
        y = (a @ v).transpose(1, 2).reshape(B, N, D)
        x = x + self.proj(y)
        return x + self.mlp(self.n2(x))
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 8, 8)
        self.cls = nn.Parameter(torch.randn(1, 1, 32) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, 32) * 0.02)
        self.blocks = nn.Sequential(Block(32, 2), Block(32, 2))
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 10)
    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 32, 32),)
