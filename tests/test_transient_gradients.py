"""Gradients freed between steps (``training.zero_grad: none``, PyTorch >= 2.0's ``set_to_none=True``): with one
micro-batch a step no gradient exists during forward, and in backward each layer's gradients replace its freed
activations. The estimate and the planner's screen price it alike."""

import numpy as np
import pytest

from trainsizer.api import estimate
from trainsizer.estimate.memory import gradients_transient, peak_phase
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory
from trainsizer.scenario import scenario_from_dict


def _scenario(zero_grad="none", gbs=8, gpus=8, zero=3, tp=1, sharded="master-only", offload="none", ckpt="selective-op",
              optimizer_in_backward=False, method="full"):
    return scenario_from_dict({
        "model": {"preset": "llama-3.1-8b"},
        "training": {"method": method, "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 8192,
                     "global_batch_size": gbs, "activation_checkpointing": ckpt, "zero_grad": zero_grad,
                     "optimizer_in_backward": optimizer_in_backward},
        "parallel": {"gpus": gpus, "zero": zero, "tp": tp, "offload": offload, "sharded_weights": sharded},
        "hardware": {"gpu": "h100-sxm5-80gb"}})


def _memory(sc):
    return estimate(sc, with_limits=False, with_performance=False).memory


def _detail(mem, name):
    return next((c.bytes for c in mem.components if c.name == name), 0.0)


def test_peak_phase_holds_no_gradient_in_forward_and_the_larger_of_gradients_and_activations_in_backward():
    # kept gradients add to every phase
    assert peak_phase(4.0, 10.0, 3.0, 1.0, 0.0) == ("forward+loss", (10.0, 3.0), 4.0)
    # transient: none at the loss; in backward the gradients (4) fit in the freed activations (10)
    assert peak_phase(4.0, 10.0, 3.0, 1.0, 0.0, True) == ("forward+loss", (10.0, 3.0), 0.0)
    assert peak_phase(4.0, 10.0, 0.5, 1.0, 0.0, True) == ("backward", (10.0, 1.0), 0.0)
    # gradients larger than the activations: at the end of backward they all exist (12 = 2 + (12 - 2) alive)
    phase, extra, alive = peak_phase(12.0, 2.0, 3.0, 1.0, 0.0, True)
    assert phase == "backward" and alive == 10.0 and sum(extra) + alive == 13.0


def test_gradients_are_transient_only_where_nothing_keeps_them_between_steps():
    assert gradients_transient(_scenario())  # FSDP2, one micro-batch a step, set_to_none
    assert gradients_transient(_scenario(gpus=1, zero=0, gbs=1))  # plain PyTorch on one GPU
    assert not gradients_transient(_scenario(zero_grad="zeros"))  # PyTorch 1.x: zero-filled, kept
    assert not gradients_transient(_scenario(gbs=16))  # accumulation keeps them across micro-batches
    assert gradients_transient(_scenario(zero=2))  # DeepSpeed ZeRO-1/2 free their gradient partitions in step()
    assert not gradients_transient(_scenario(tp=2, gbs=4))  # Megatron's contiguous gradient buffer
    assert not gradients_transient(_scenario(offload="optimizer"))  # on the host
    assert not gradients_transient(_scenario(optimizer_in_backward=True))  # its own rule


def test_the_forward_peak_drops_exactly_the_gradients_and_says_so():
    kept, freed = _memory(_scenario("zeros")), _memory(_scenario())
    grads = _detail(kept, "gradients")
    assert kept.phase == freed.phase == "forward+loss" and grads > 0
    assert _detail(freed, "gradients") == 0.0
    assert freed.allocated_bytes == pytest.approx(kept.allocated_bytes - grads)
    why = next(c.why for c in freed.components if c.name == "gradients")
    assert "mem.grads_transient" in repr(why)


def test_full_checkpointing_peaks_in_backward_where_the_gradients_outgrow_the_activations():
    # full checkpointing keeps one input a layer (1 GiB), less than the gradients (3.7 GiB on 8 ranks): they
    # count above the activations they replace, not on top of all of them
    kept, freed = _memory(_scenario("zeros", ckpt="full", gpus=8)), _memory(_scenario(ckpt="full", gpus=8))
    assert freed.allocated_bytes < kept.allocated_bytes
    saved = _detail(kept, "activations")
    grads = _detail(kept, "gradients")
    if freed.phase == "backward":
        assert _detail(freed, "gradients") == pytest.approx(max(0.0, grads - saved))


def _layouts(gpus, zero, tp):
    n = len(gpus)
    arr = lambda *v, dtype=int: np.array(v, dtype=dtype)  # noqa: E731
    return Layouts(gpus=arr(*gpus), tp=arr(*tp), pp=arr(*[1] * n), cp=arr(*[1] * n), vpp=arr(*[1] * n),
                   zero=arr(*zero), dist_opt=arr(*[False] * n, dtype=bool), sp=arr(*[False] * n, dtype=bool),
                   offload=arr(*[0] * n), mbs=arr(*[1] * n), ckpt=arr(*[CKPT.index("full")] * n),
                   gpus_per_node=arr(*[8] * n))


@pytest.mark.parametrize("zero_grad", ["none", "zeros"])
def test_the_planners_screen_prices_transient_gradients_as_the_estimate_does(zero_grad):
    sc = _scenario(zero_grad, gbs=8, ckpt="full")
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator("h100-sxm5-80gb")
    # 8 GPUs: one micro-batch a step (transient); 4 GPUs: two (kept); zero 1; tensor parallel (kept)
    rows = ((8, 3, 1), (4, 3, 1), (8, 1, 1), (8, 3, 2))
    lay = _layouts(*[[r[i] for r in rows] for i in range(3)])
    screened, _host = screen_memory(job_basis(sc, arch), lay, sc, gpu)
    for i, (gpus, zero, tp) in enumerate(rows):
        ref = sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"gpus": gpus, "zero": zero, "tp": tp})})
        assert screened[i] == pytest.approx(_memory(ref).device_bytes, rel=0.005), (gpus, zero, tp)
    if zero_grad == "none":
        kept = _scenario("zeros", gbs=8, ckpt="full")
        screened_kept, _host = screen_memory(job_basis(kept, arch), lay, kept, gpu)
        assert screened[0] < screened_kept[0] and screened[1] == pytest.approx(screened_kept[1])


def test_freed_gradients_leave_cached_segments_like_other_transient_blocks():
    # the allocator keeps the freed gradients' segments; the next step's activations reuse them only where the
    # sizes fit, so they count as churn (reserved_fraction_dynamic), not as allocated bytes
    from trainsizer.estimate.memory import default_memory_model, reserved_bytes

    p = default_memory_model()
    kept, freed = _memory(_scenario("zeros")), _memory(_scenario())
    grads = _detail(kept, "gradients")
    assert freed.reserved_bytes - freed.allocated_bytes > 0
    base = reserved_bytes(1e10, 4e9, p)
    assert reserved_bytes(1e10, 4e9, p, freed=grads) == pytest.approx(
        base + p.allocator.reserved_fraction_dynamic * grads)
    # what the step's reserved memory keeps of the gradients is less than holding them
    assert freed.reserved_bytes < kept.reserved_bytes


def test_the_gradients_alive_in_backward_never_exceed_all_the_gradients():
    # the last layer's full activations (1.5) above all a stage saves (0.9: a frozen or checkpointed stage)
    gib = 2**30
    phase, _extra, alive = peak_phase(0.4 * gib, 0.9 * gib, 0.1 * gib, 1.7 * gib, 0.0, True, 1.5 * gib)
    assert phase == "backward" and alive == pytest.approx(0.4 * gib)
    # method freeze, fp32, selective checkpointing: sharding the gradients (ZeRO-2) must not raise the peak
    data = {"model": {"preset": "phi-1.5"},
            "training": {"method": "freeze", "precision": "fp32", "optimizer": "sgd", "micro_batch_size": 2,
                         "seq_len": 2048, "global_batch_size": 16, "activation_checkpointing": "selective",
                         "attention": "eager"},
            "parallel": {"gpus": 8}, "hardware": {"gpu": "a100-sxm4-80gb"}}
    peaks = [_memory(scenario_from_dict({**data, "parallel": {"gpus": 8, "zero": z}})).allocated_bytes
             for z in range(4)]
    assert all(a >= b - 1 for a, b in zip(peaks, peaks[1:], strict=False)), peaks
