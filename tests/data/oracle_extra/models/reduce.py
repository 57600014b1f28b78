import torch
torch.manual_seed(5)
class M(torch.nn.Module):
    def forward(self, x):
        return (x.mean(dim=(2, 3), keepdim=True), x.sum(dim=1, keepdim=True), x.mean(dim=-1),
                torch.amax(x, dim=2, keepdim=True), torch.amin(x, dim=3, keepdim=True))
ModelUnderTest = M().eval()
ModelInputs = (torch.randn(1, 6, 7, 9),)
