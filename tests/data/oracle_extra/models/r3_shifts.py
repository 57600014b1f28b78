import torch
torch.manual_seed(48)
class M(torch.nn.Module):
    def forward(self, a, s, c):
        return (torch.bitwise_right_shift(a, s), a << 7, torch.bitwise_left_shift(c, 3) >> 2,
                torch.abs(c) - torch.neg(a >> 4), c * c, torch.bitwise_and(a, 0xF0F0), a ^ 0x55)
ModelUnderTest = M().eval()
ModelInputs = (torch.cat([torch.randint(-(2**31) + 1, 2**31 - 1, (1, 2, 3, 7), dtype=torch.int64).to(torch.int32),
                          torch.tensor([[[[-2**31 + 1, 2**31 - 1, -1, 1, 0, -2**30, 2**30]]]], dtype=torch.int32).expand(1, 2, 1, 7)], dim=2),
               torch.randint(0, 32, (1, 2, 4, 7), dtype=torch.int32),
               torch.randint(-40000, 40000, (1, 2, 4, 7), dtype=torch.int32))
