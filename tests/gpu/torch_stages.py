"""PyTorch on a GPU under memstage: per stage, torch's own view of the memory its caching
allocator reserved (torch.cuda.max_memory_reserved, its peak reset at each stage's start;
reserved and allocated at the stage's start and end) and the driver's (cudaMemGetInfo's
used bytes at the stage's start and end), written to a JSON file for compare_device.py.
Run by device_check.sh on a machine with a GPU.

The first stage makes the cuBLAS handle (the first matrix product does): cuBLAS allocates
device memory of its own there, beside the caching allocator, which torch's figures do not
count and memstage does.

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


def used_bytes():
    free, total = torch.cuda.mem_get_info()
    return total - free


def stage(name, body):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()  # the peak starts at what is reserved now
    begin = {"reserved_at_start_bytes": torch.cuda.memory_reserved(), "used_at_start_bytes": used_bytes()}
    with memstage.stage(name):
        body()
        torch.cuda.synchronize()
    expected[name] = dict(begin,
                          max_reserved_bytes=torch.cuda.max_memory_reserved(),
                          reserved_bytes=torch.cuda.memory_reserved(),
                          allocated_bytes=torch.cuda.memory_allocated(),
                          used_at_end_bytes=used_bytes())


def blas_handle():
    a = torch.ones(64, 64, device="cuda")
    tensors["small"] = a @ a


def allocate():
    tensors["x"] = torch.empty(512 * MiB // 4, dtype=torch.float32, device="cuda")


def matmul():
    a = tensors["x"][: 4096 * 4096].view(4096, 4096)
    tensors["y"] = a @ a


stage("blas_handle", blas_handle)
stage("alloc", allocate)
stage("matmul", matmul)
stage("free", tensors.clear)
stage("empty_cache", torch.cuda.empty_cache)
with open(sys.argv[1], "w") as f:
    json.dump(expected, f, indent=1)
print("torch_stages:", json.dumps(expected))
