"""PyTorch on a GPU under memstage: per stage, torch's own view of the memory its caching
allocator reserved (torch.cuda.max_memory_reserved, its peak reset at each stage's start),
reserved and allocated at each stage's end, written to a JSON file for compare_device.py. Run by device_check.sh on a machine with a GPU.

    memstage run -o OUT -- python3 torch_stages.py EXPECTED.json"""
import json
import sys

import torch

import memstage

MiB = 1 << 20
expected = {}
torch.cuda.init()
torch.zeros(1, device="cuda")  # the context and the allocator's first segment, outside the stages
torch.cuda.synchronize()
tensors = {}


def stage(name, body):
    torch.cuda.reset_peak_memory_stats()  # the peak starts at what is reserved now
    with memstage.stage(name):
        body()
        torch.cuda.synchronize()
    expected[name] = {"max_reserved_bytes": torch.cuda.max_memory_reserved(),
                      "reserved_bytes": torch.cuda.memory_reserved(),
                      "allocated_bytes": torch.cuda.memory_allocated()}


def allocate():
    tensors["x"] = torch.empty(512 * MiB // 4, dtype=torch.float32, device="cuda")


def matmul():
    a = tensors["x"][: 4096 * 4096].view(4096, 4096)
    tensors["y"] = a @ a


stage("alloc", allocate)
stage("matmul", matmul)
stage("free", tensors.clear)
stage("empty_cache", torch.cuda.empty_cache)
with open(sys.argv[1], "w") as f:
    json.dump(expected, f, indent=1)
print("torch_stages:", json.dumps(expected))
