import torch
torch.manual_seed(31)
class M(torch.nn.Module):
    def forward(self, x, y):
        gt = x > y
        ge = x >= 0.25
        lt = x < y
        eq = torch.eq(torch.round(x), torch.round(y))
        sel = torch.where(gt, x, y * 0.5)
        land = torch.logical_and(gt, ge)
        lor = torch.logical_or(lt, eq)
        lnot = torch.logical_not(ge)
        w2 = torch.where(lor, x - y, y)
        return sel, land, lor, lnot, w2, gt
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 3, 5, 7), torch.randn(1, 3, 5, 7))
