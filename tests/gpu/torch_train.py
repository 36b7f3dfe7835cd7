"""A small GPU training job for device_check.sh: a transformer encoder trained for a few
steps, one stage to build the model and one to train it. It measures memstage's cost on a
GPU program (device_check.sh times it untraced and under `memstage run`) and writes torch's
own figures per stage (the caching allocator's reserved peak) for the report to be read
beside.

    memstage run -o OUT -- python3 torch_train.py EXPECTED.json [STEPS]"""
import json
import sys
import time

import torch

import memstage

steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
expected = {}
torch.manual_seed(0)


def stage(name, body):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with memstage.stage(name):
        result = body()
        torch.cuda.synchronize()
    expected[name] = {"max_reserved_bytes": torch.cuda.max_memory_reserved(),
                      "max_allocated_bytes": torch.cuda.max_memory_allocated(),
                      "seconds": time.perf_counter() - start}
    return result


def build():
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=6).cuda()


def train(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = torch.randn(32, 256, 512, device="cuda")
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = model(data).square().mean()
        loss.backward()
        optimizer.step()
    return float(loss)


model = stage("model", build)
loss = stage("train", lambda: train(model))
with open(sys.argv[1], "w") as f:
    json.dump(expected, f, indent=1)
print("torch_train: loss %.6f" % loss, json.dumps(expected))
