# harness/bench/overhead.sh's torch workload: import torch, then 10 forward and backward passes
# of a small MLP on random data (the "small torch program"). Prints the final loss.
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(512, 256); y = torch.randint(0, 10, (512,))
for _ in range(10):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print(round(float(loss), 3))
