"""coll as a torch.distributed backend.

    import coll_torch                  # registers the backend "coll"
    torch.distributed.init_process_group(backend="coll")

    python3 -m coll_torch.run --nproc-per-node 2 train.py   # torchrun's stand-in

The backend itself is the extension coll_torch._C (torch/coll_torch.cpp);
importing this package loads it, and loading it registers "coll" with
torch.distributed. The launcher, coll_torch.run, is plain Python.
docs/torch.md says what is supported.
"""
from coll_torch._C import ProcessGroupColl, create_process_group  # noqa: F401  (registers "coll")

__all__ = ["ProcessGroupColl", "create_process_group"]
