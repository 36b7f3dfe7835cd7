"""The Python stage markers read PyTorch's caching allocator at each stage boundary once
torch.cuda is initialised. This stands in for torch (a module whose cuda reports fixed
statistics for two devices) so the path marker -> trace -> report runs without a GPU.
check_device.py runs it under memstage and checks the figures."""
import sys
import types

MiB = 1 << 20
stats = [{"reserved_bytes.all.current": 0, "allocated_bytes.all.current": 0} for _ in range(2)]
initialized = [False]
cuda = types.SimpleNamespace(is_initialized=lambda: initialized[0], device_count=lambda: 2,
                             memory_stats=lambda device: dict(stats[device]))
sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)

import memstage  # noqa: E402  (after the stand-in: memstage must never import torch itself)

with memstage.stage("before_cuda"):
    pass
initialized[0] = True
with memstage.stage("forward"):
    stats[0].update({"reserved_bytes.all.current": 40 * MiB, "allocated_bytes.all.current": 30 * MiB})
    stats[1].update({"reserved_bytes.all.current": 20 * MiB, "allocated_bytes.all.current": 2 * MiB})
with memstage.stage("empty_cache"):
    stats[0].update({"reserved_bytes.all.current": 30 * MiB})
    stats[1].update({"reserved_bytes.all.current": 2 * MiB})
print("cache_markers: ok")
