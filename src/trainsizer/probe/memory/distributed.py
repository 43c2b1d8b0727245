"""Data-parallel memory probe across local GPUs: one process per GPU under torchrun.

``parallel.zero`` picks the wrapper, each as the framework that defines the stage does it:
0 = DistributedDataParallel (gradient buckets, PyTorch DDP docs); 1 = DDP with
``ZeroRedundancyOptimizer`` (optimizer states sharded, ZeRO stage 1); 2 = FSDP2 ``fully_shard`` with
``reshard_after_forward=False`` (SHARD_GRAD_OP); 3 = FSDP2 ``fully_shard`` per decoder layer and at the
root (FULL_SHARD), with ``CPUOffloadPolicy`` for ``offload: optimizer+params`` (PyTorch FSDP2 docs,
torch.distributed.fsdp.fully_shard). Mixed precision under FSDP is its ``MixedPrecisionPolicy``
(16-bit gathered parameters, fp32 gradient reduction) instead of autocast.

``python -m trainsizer.probe.memory.distributed --scenario S.yaml --out R.json`` is the per-rank entry point;
``launch()`` starts it with ``torch.distributed.run`` on this node. Every rank measures its own GPU and
rank 0 writes all readings: the report takes the most loaded rank, as the estimator does.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from trainsizer.errors import InputError
from trainsizer.scenario import Scenario


def _decoder_layers(model: Any) -> list[Any]:
    """The repeated blocks FSDP shards one by one (Hugging Face's ``_no_split_modules`` classes)."""
    names = set(getattr(model, "_no_split_modules", None) or [])
    return [m for m in model.modules() if type(m).__name__ in names]


def wrap_for_data_parallel(model: Any, scenario: Scenario) -> Any:
    import torch

    zero = scenario.parallel.zero
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    if zero <= 1:
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    precision = scenario.training.precision
    policy = MixedPrecisionPolicy()
    if precision in ("bf16-mixed", "fp16-mixed"):
        half = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
        policy = MixedPrecisionPolicy(param_dtype=half, reduce_dtype=torch.float32)
    kwargs: dict[str, Any] = {"mp_policy": policy, "reshard_after_forward": zero == 3}
    if scenario.parallel.offload == "optimizer+params":
        kwargs["offload_policy"] = CPUOffloadPolicy()
    for layer in _decoder_layers(model):
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    return model


def launch(scenario: Scenario, layers: int | None, steps: int, device: str,
           timeout_s: float | None = None) -> Any:
    """Run the probe on ``parallel.gpus`` local processes through torchrun; return the most loaded rank's
    Measurement (the estimator predicts the most loaded GPU)."""
    import yaml

    from trainsizer.probe.common.launch import run_ranks
    from trainsizer.probe.memory.measure import Measurement

    with tempfile.TemporaryDirectory(prefix="trainsizer-probe-") as tmp:
        path = Path(tmp) / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario.model_dump(exclude_none=True)), encoding="utf-8")
        args = ["--scenario", str(path), "--steps", str(steps), "--device", device,
                *(["--layers", str(layers)] if layers is not None else [])]
        ranks = json.loads(run_ranks("trainsizer.probe.memory.distributed", scenario.parallel.gpus, args, timeout_s))
    worst = max(ranks, key=lambda r: r["allocated_gib"])
    measurement = Measurement.from_dict(worst)
    measurement.notes.append(f"most loaded of {len(ranks)} ranks: rank {worst['rank']}")
    return measurement


def _main(argv: list[str] | None = None) -> None:
    import torch
    import torch.distributed as dist

    from trainsizer.probe.memory.measure import measure
    from trainsizer.scenario import load_scenario

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    scenario = load_scenario(args.scenario)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device: Any = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    world = dist.get_world_size()
    if world != scenario.parallel.gpus:
        raise InputError("parallel.gpus", f"{scenario.parallel.gpus} but torchrun started {world} processes")
    try:
        result = measure(scenario, device, args.layers, args.steps, wrap=wrap_for_data_parallel,
                         multi_process=True, world_size=world).to_dict()
        result["rank"] = dist.get_rank()
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, result)
        if dist.get_rank() == 0:
            Path(args.out).write_text(json.dumps(gathered), encoding="utf-8")
        dist.barrier()  # no rank tears its connections down while another still talks (gloo aborts then)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    from trainsizer.probe.common.launch import leave_rank

    _main()
    leave_rank(0)
