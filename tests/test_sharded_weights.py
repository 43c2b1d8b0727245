"""What a rank keeps of its zero-3 weight shard (``parallel.sharded_weights``): DeepSpeed ZeRO-3 keeps a compute-dtype
partition beside the fp32 master one; PyTorch FSDP's mixed precision keeps only the fp32 sharded parameter and casts a
unit when it gathers it (``MixedPrecisionPolicy``). The estimate and the planner's screen price it alike."""

import numpy as np
import pytest

from trainsizer.api import estimate
from trainsizer.estimate.model_states import master_only_shards
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory
from trainsizer.scenario import scenario_from_dict


def _scenario(sharded="master-only", method="full", precision="bf16-mixed", zero=3, gpus=8, offload="none"):
    # zero_grad zeros: gradients kept between steps by both, so only the weight shard differs (FSDP's transient
    # gradients: tests/test_transient_gradients.py)
    training = {"method": method, "precision": precision, "micro_batch_size": 1, "seq_len": 8192,
                "activation_checkpointing": "full", "zero_grad": "zeros"}
    if method == "qlora":
        training["quantization"] = "nf4"
    return scenario_from_dict({
        "model": {"preset": "llama-3.1-8b"}, "training": training,
        "parallel": {"gpus": gpus, "zero": zero, "offload": offload, "sharded_weights": sharded},
        "hardware": {"gpu": "h100-sxm5-80gb"}})


def _memory(sc):
    return estimate(sc, with_limits=False, with_performance=False).memory


def _detail(mem, name):
    return next((c.bytes for c in mem.components if c.name == name), 0.0)


@pytest.mark.parametrize("precision", ["bf16-mixed", "fp8-mixed"])
def test_fsdp_mixed_precision_keeps_no_compute_dtype_shard_of_a_full_fine_tune(precision):
    fsdp, deepspeed = _memory(_scenario(precision=precision)), _memory(_scenario("compute-copy", precision=precision))
    shard = _detail(deepspeed, "weights")
    assert shard > 0 and _detail(fsdp, "weights") == 0.0
    assert fsdp.allocated_bytes == pytest.approx(deepspeed.allocated_bytes - shard)
    # the fp32 masters, the optimizer states, the gradients and the gathered units are the same bytes
    for name in ("master_weights", "optimizer_states", "gradients", "buffers"):
        assert _detail(fsdp, name) == pytest.approx(_detail(deepspeed, name)) and _detail(fsdp, name) > 0, name


@pytest.mark.parametrize("kwargs", [
    {"method": "lora"},  # frozen weights have no master: the shard is what the rank holds
    {"method": "qlora"},
    {"precision": "bf16-true"},  # no fp32 master: the bf16 shard is the weight
    {"zero": 2},  # weights not sharded
    {"gpus": 1},  # one rank: nothing sharded
    {"offload": "optimizer"},  # the masters live on the host: the GPU keeps its compute-dtype shard
])
def test_master_only_changes_nothing_where_the_rank_has_no_master_shard_to_compute_from(kwargs):
    sc, ref = _scenario(**kwargs), _scenario("compute-copy", **kwargs)
    assert not master_only_shards(sc)
    assert _memory(sc).device_bytes == pytest.approx(_memory(ref).device_bytes)


def test_the_planners_screen_prices_master_only_shards_as_the_estimate_does():
    sc = _scenario()
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator("h100-sxm5-80gb")
    n = 3
    arr = lambda *v, dtype=int: np.array(v, dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=arr(8, 8, 8), tp=arr(1, 1, 2), pp=arr(1, 1, 1), cp=arr(1, 1, 1), vpp=arr(1, 1, 1),
                  zero=arr(3, 1, 3), dist_opt=arr(*[False] * n, dtype=bool), sp=arr(*[False] * n, dtype=bool),
                  offload=arr(0, 0, 0), mbs=arr(1, 1, 1), ckpt=arr(*[CKPT.index("full")] * n),
                  gpus_per_node=arr(8, 8, 8))
    screened, _host = screen_memory(job_basis(sc, arch), lay, sc, gpu)
    for i, (zero, tp) in enumerate(((3, 1), (1, 1), (3, 2))):
        ref = sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"zero": zero, "tp": tp})})
        assert screened[i] == pytest.approx(_memory(ref).device_bytes, rel=0.005), (zero, tp)
    # and the screen of the DeepSpeed layout keeps the compute-dtype shard
    ds = _scenario("compute-copy")
    screened_ds, _host = screen_memory(job_basis(ds, arch), lay, ds, gpu)
    assert screened_ds[0] > screened[0] and screened_ds[1] == pytest.approx(screened[1])
