import torch
torch.manual_seed(35)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c0 = torch.nn.Conv2d(3, 6, 1)
        self.ap_ceil = torch.nn.AvgPool2d(3, stride=2, ceil_mode=True)
        self.ap_ceil_p = torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.ap_big = torch.nn.AvgPool2d((5, 3), stride=(2, 3), padding=(2, 1), count_include_pad=False)
        self.mp_over = torch.nn.MaxPool2d(5, stride=2, padding=2)
        self.mp_ceil = torch.nn.MaxPool2d(3, stride=3, ceil_mode=True)
        self.mp_dil = torch.nn.MaxPool2d(3, stride=1, dilation=2)
    def forward(self, x):
        x = self.c0(x)
        return (self.ap_ceil(x), self.ap_ceil_p(x), self.ap_big(x), self.mp_over(x), self.mp_ceil(x),
                self.mp_dil(x))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 13, 11),)
