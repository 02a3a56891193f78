"""torch.distributed collectives the evaluation code calls while several ranks train or evaluate together; each is
a no-op in a single process (no process group), so callers need not ask."""

from __future__ import annotations


def active() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank_world() -> tuple[int, int]:
    import torch.distributed as dist

    return (dist.get_rank(), dist.get_world_size()) if active() else (0, 1)


def barrier() -> None:
    if active():
        import torch.distributed as dist

        dist.barrier()


def total(count: int) -> int:
    """The sum of ``count`` over the ranks."""
    if not active():
        return count
    import torch
    import torch.distributed as dist

    value = torch.tensor([count], dtype=torch.int64)
    if dist.get_backend() == "nccl":
        value = value.cuda()
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return int(value.item())


def broadcast(obj, src: int = 0):
    """Rank ``src``'s ``obj`` on every rank (a decision every rank must take alike, e.g. which units are missing)."""
    if not active():
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def share(items: list) -> list:
    """This rank's share of ``items`` (round-robin), for work split after a joint fine-tune."""
    rank, world = rank_world()
    return items[rank::world]


def all_reduce_gradients(parameters) -> None:
    """Sum every gradient over the ranks, in one flat buffer per dtype and device. A rank that computed no
    micro-batch this step contributes zeros; a parameter no rank used (e.g. BERT's pooler under a tagging head)
    keeps ``grad=None`` everywhere, so the optimiser skips it as one process would."""
    import torch
    import torch.distributed as dist

    params = [p for p in parameters if p.requires_grad]
    if not params:
        return
    device = params[0].device
    used = torch.tensor([p.grad is not None for p in params], dtype=torch.int32, device=device)
    dist.all_reduce(used, op=dist.ReduceOp.SUM)
    params = [p for p, n in zip(params, used.tolist()) if n > 0]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    groups: dict = {}
    for p in params:
        groups.setdefault((p.grad.dtype, p.grad.device), []).append(p.grad)
    for grads in groups.values():
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()
