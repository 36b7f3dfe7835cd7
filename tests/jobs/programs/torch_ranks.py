"""jobs.ranks: a 2-rank torch.distributed job (gloo, CPU) launched the way torchrun does:
one child per rank with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set.

usage: torch_ranks.py launch TRUTH_FILE [PREFIX...]   the launcher; PREFIX... (say
                                                       `memstage run -o DIR_{rank} --`) goes
                                                       before each rank's command
       torch_ranks.py rank                             one rank (from its environment)

Each rank holds a tensor of its own size (rank r: 24 + 16 r MiB) through two barriers, so
that both hold theirs at once, and all-reduces a small tensor. Truth: each rank's bytes
and their sum.
"""
import json
import os
import socket
import subprocess
import sys

MIB = 1 << 20


def held_bytes(rank):
    return (24 + 16 * rank) * MIB


def rank_main():
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    held = torch.ones(held_bytes(rank) // 4, dtype=torch.float32)
    dist.barrier()  # both hold their tensors from here ...
    total = torch.tensor([float(held.numel())])
    dist.all_reduce(total)
    dist.barrier()  # ... to here
    assert int(total.item()) == sum(held_bytes(r) // 4 for r in range(dist.get_world_size()))
    del held
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(truth_file, prefix):
    world_size = 2
    port = str(free_port())
    children = []
    for rank in range(world_size):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        command = [a.replace("{rank}", str(rank)) for a in prefix] + [sys.executable, os.path.abspath(__file__), "rank"]
        children.append(subprocess.Popen(command, env=env))
    codes = [c.wait() for c in children]
    with open(truth_file, "w") as f:
        json.dump({"pids": [c.pid for c in children], "held_bytes": [held_bytes(r) for r in range(world_size)],
                   "job_held_bytes": sum(held_bytes(r) for r in range(world_size))}, f)
    return 0 if codes == [0] * world_size else 1


if __name__ == "__main__":
    if sys.argv[1] == "rank":
        rank_main()
    else:
        sys.exit(launch(sys.argv[2], sys.argv[3:]))
