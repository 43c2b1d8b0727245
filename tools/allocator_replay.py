"""Replay a training step's tensor allocations through PyTorch's CUDA caching-allocator rules, without a GPU.

Evidence for the allocator terms of estimate/memory.py (``reserved_fraction_*``): the HF BERT-large runs on one
V100 (validation/cases/memory.yaml, hf-bert-large-v100-*) are recorded on the CPU and their allocation / free
sequence replayed through the caching allocator's rules, which gives the peak reserved bytes beside the peak
allocated ones.

Recording: every tensor storage an ATen op returns is seen by a ``TorchDispatchMode``; its release by a weakref
finalizer on the storage. Dropout keeps CUDA's 1-byte mask (``torch.native_dropout``; the CPU's ``F.dropout``
keeps an input-dtype multiplier), and ``--softmax-keeps-input`` restores PyTorch < 1.11's softmax, whose backward
formula read its input (``_softmax_backward_data(grad, result, dim, self)``; pytorch/pytorch PR #65242 made it the
dtype; transformers ``pytorch_utils.softmax_backward_data`` passes ``self`` before torch 1.11). The optimizer is
transformers' ``AdamW`` of v4.16 (per parameter: lazily created states, one ``denom`` temporary), after torch 1.10's
``clip_grad_norm_``, and ``zero_grad`` zero-fills (torch 1.x ``set_to_none=False``).

Replay: c10/cuda/CUDACachingAllocator.cpp (torch 1.10): sizes rounded up to 512 B; requests of at most 1 MiB from
the small pool in 2 MiB segments; larger ones from the large pool, a new segment of 20 MiB below 10 MiB, else the
request rounded up to 2 MiB; the smallest cached free block that fits (by size, then address); a block split when
the remainder is at least 512 B (small pool) or more than 1 MiB (large); a freed block merged with free neighbours
of its segment; segments never returned (no out-of-memory retry).

    python tools/allocator_replay.py --layers 24 --batch 1 --accumulation 4 --checkpointing
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import weakref
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024
MIN_BLOCK = 512
SMALL_SIZE = 1 * MIB  # kSmallSize
SMALL_BUFFER = 2 * MIB  # kSmallBuffer
LARGE_BUFFER = 20 * MIB  # kLargeBuffer
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
ROUND_LARGE = 2 * MIB  # kRoundLarge


def round_size(n: int) -> int:
    return MIN_BLOCK if n < MIN_BLOCK else MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


def segment_size(n: int) -> int:
    if n <= SMALL_SIZE:
        return SMALL_BUFFER
    if n < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((n + ROUND_LARGE - 1) // ROUND_LARGE)


@dataclass(eq=False)
class Block:
    size: int
    addr: int
    small: bool
    prev: Block | None = None
    next: Block | None = None
    free: bool = True


@dataclass
class Allocator:
    pools: dict[bool, list[tuple[int, int]]] = field(default_factory=lambda: {True: [], False: []})
    blocks: dict[tuple[bool, int, int], Block] = field(default_factory=dict)
    next_addr: int = 0
    reserved: int = 0
    allocated: int = 0
    peak_reserved: int = 0
    peak_allocated: int = 0

    def _cache(self, b: Block) -> None:
        bisect.insort(self.pools[b.small], (b.size, b.addr))
        self.blocks[(b.small, b.size, b.addr)] = b

    def _uncache(self, b: Block) -> None:
        pool = self.pools[b.small]
        pool.pop(bisect.bisect_left(pool, (b.size, b.addr)))
        del self.blocks[(b.small, b.size, b.addr)]

    def malloc(self, n: int) -> Block:
        size = round_size(n)
        small = size <= SMALL_SIZE
        pool = self.pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            b = self.blocks[(small, *pool[i])]
            self._uncache(b)
        else:
            seg = segment_size(size)
            self.reserved += seg
            self.peak_reserved = max(self.peak_reserved, self.reserved)
            b = Block(seg, self.next_addr, small)
            self.next_addr += seg + MIN_BLOCK  # segments are never adjacent
        rest = b.size - size
        if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
            r = Block(rest, b.addr + size, small, prev=b, next=b.next)
            if b.next:
                b.next.prev = r
            b.next, b.size = r, size
            self._cache(r)
        b.free = False
        self.allocated += b.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return b

    def free(self, b: Block) -> None:
        b.free = True
        self.allocated -= b.size
        if b.prev is not None and b.prev.free:  # coalesce with free neighbours, as free_block does
            self._uncache(b.prev)
            b = self._absorb(b.prev, b)
        if b.next is not None and b.next.free:
            self._uncache(b.next)
            b = self._absorb(b, b.next)
        self._cache(b)

    @staticmethod
    def _absorb(left: Block, right: Block) -> Block:
        """``left`` grown by its right neighbour ``right``, which leaves the segment's block list."""
        left.size += right.size
        left.next = right.next
        if right.next:
            right.next.prev = left
        return left


def replay(events: list[tuple[str, int, int]]) -> Allocator:
    """Replay ``(action, key, bytes)`` events (``alloc`` / ``free``) in order; the allocator holds the peaks."""
    a = Allocator()
    live: dict[int, Block] = {}
    for action, key, size in events:
        if action == "alloc" and size and key not in live:
            live[key] = a.malloc(size)
        elif action == "free" and key in live:
            a.free(live.pop(key))
    return a


# long: one script of a training run (model, CUDA-like dropout, optional old softmax, optimizer, loop) to record
def record(layers: int, batch: int, accumulation: int, steps: int, checkpointing: bool,
           softmax_keeps_input: bool) -> list[tuple[str, int, int]]:
    """The allocation / free events of ``steps`` optimizer steps of BertForSequenceClassification (bert-large
    shape, eager attention, fp32, random weights), the weights, buffers and inputs allocated first."""
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from transformers import BertConfig, BertForSequenceClassification

    def dropout(x: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
        return torch.native_dropout(x, p, True)[0] if training and p > 0 else x

    class SoftmaxKeepsInput(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, dim: int) -> Any:
            y = torch.softmax(x, dim)
            ctx.save_for_backward(x, y)
            ctx.dim = dim
            return y

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, y = ctx.saved_tensors
            return torch._softmax_backward_data(g, y, ctx.dim, x.dtype), None

    saved_functions = F.dropout, F.softmax
    F.dropout = dropout
    if softmax_keeps_input:
        F.softmax = lambda x, dim=None, _stacklevel=3, dtype=None: SoftmaxKeepsInput.apply(
            x if dtype is None else x.to(dtype), dim)
    try:
        torch.manual_seed(0)
        cfg = BertConfig(hidden_size=1024, num_hidden_layers=layers, num_attention_heads=16, intermediate_size=4096,
                         vocab_size=30522, num_labels=2, attn_implementation="eager")
        model = BertForSequenceClassification(cfg).train()
        if checkpointing:  # transformers v4.16: torch.utils.checkpoint.checkpoint, reentrant
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        params = list(model.parameters())
        ids = torch.randint(0, 30522, (batch, 512))
        labels = torch.randint(0, 2, (batch,))
        events: list[tuple[str, int, int]] = []
        live: dict[tuple[int, int], int] = {}
        keys = itertools.count()

        def seen(storage: Any) -> None:
            where = (storage.data_ptr(), storage.nbytes())
            if storage.nbytes() == 0 or where in live:
                return
            key = live[where] = next(keys)
            events.append(("alloc", key, storage.nbytes()))

            def released() -> None:
                if live.get(where) == key:
                    del live[where]
                events.append(("free", key, 0))
            weakref.finalize(storage, released)

        for t in [*params, *model.buffers(), ids, labels]:
            seen(t.untyped_storage())

        class Track(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor):
                        seen(t.untyped_storage())
                return out

        state: dict[Any, dict[str, Any]] = {}
        with Track():
            for _ in range(steps):
                for _ in range(accumulation):
                    loss = model(input_ids=ids, labels=labels).loss / accumulation
                    loss.backward()
                    del loss
                norms = [torch.norm(p.grad.detach(), 2.0) for p in params]  # torch 1.10 clip_grad_norm_
                coef = 1.0 / (torch.norm(torch.stack(norms), 2.0) + 1e-6)
                del norms
                if coef < 1:
                    for p in params:
                        p.grad.detach().mul_(coef)
                del coef
                for p in params:  # transformers.optimization.AdamW.step @ v4.16
                    st = state.setdefault(p, {})
                    if not st:
                        st["m"], st["v"] = torch.zeros_like(p), torch.zeros_like(p)
                    st["m"].mul_(0.9).add_(p.grad, alpha=0.1)
                    st["v"].mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                    denom = st["v"].sqrt().add_(1e-6)
                    p.data.addcdiv_(st["m"], denom, value=-5e-5)
                    del denom
                for p in params:  # torch 1.x Module.zero_grad(set_to_none=False)
                    p.grad.zero_()
        return events
    finally:
        F.dropout, F.softmax = saved_functions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--accumulation", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--checkpointing", action="store_true")
    ap.add_argument("--softmax-keeps-input", action="store_true", help="PyTorch < 1.11's softmax backward")
    a = ap.parse_args()
    r = replay(record(a.layers, a.batch, a.accumulation, a.steps, a.checkpointing, a.softmax_keeps_input))
    print(f"peak allocated {r.peak_allocated / MIB:.0f} MiB, peak reserved {r.peak_reserved / MIB:.0f} MiB, "
          f"reserved over allocated {(r.peak_reserved - r.peak_allocated) / MIB:.0f} MiB")


if __name__ == "__main__":
    main()
