"""An activation written as separate PyTorch ops (``training.activation_kernel: unfused``: Hugging Face's gelu_new,
GPT-2's activation) costs HBM traffic beyond a fused kernel's, counted op by op (estimate/activation_ops.py); under
torch.cuda.amp autocast (``training.autocast``) its chain runs in fp32 from ``pow`` on. The estimate and the
planner's screen price it alike."""

from dataclasses import replace

import numpy as np
import pytest
from screen_layouts import one_layout  # tests/ is on sys.path

from trainsizer.errors import InputError
from trainsizer.estimate.activation_ops import extra_bytes
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.step import default_performance_model, estimate_performance
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_step_time
from trainsizer.scenario import scenario_from_dict

GPU = "v100-sxm2-32gb"


def _job(precision="fp16-mixed", ckpt="none", tp=1, **training):
    return {"model": {"preset": "gpt2-124m"},
            "training": {"method": "full", "precision": precision, "micro_batch_size": 8, "seq_len": 1024,
                         "global_batch_size": 8 * 2 // tp, "activation_checkpointing": ckpt, "attention": "eager",
                         **training},
            "parallel": {"gpus": 2, "tp": tp}, "hardware": {"gpu": GPU, "gpus_per_node": 2}}


def _elementwise(job):
    cat = default_catalog()
    sc = scenario_from_dict(job)
    return estimate_performance(sc, resolve_model(sc.model), cat.accelerator(GPU), cat).breakdown_s["elementwise"]


def _extra_s(precision, autocast, recomputed=0.0, tp=1):
    """The traffic the mechanism adds, from the byte table: layers x tokens x intermediate / tp elements."""
    p = default_performance_model()
    fwd, bwd = extra_bytes(p, precision, autocast)
    hbm = default_catalog().accelerator(GPU).memory_bandwidth_gbps * 1e9 * p.memory_bound.hbm_efficiency
    return 12 * 8 * 1024 * 3072 / tp * (fwd * (1 + recomputed) + bwd) / hbm


@pytest.mark.parametrize("precision,autocast", [("fp16-mixed", False), ("fp16-mixed", True), ("fp32", False),
                                                ("bf16-mixed", True)])
def test_an_unfused_activation_adds_its_counted_traffic_to_the_elementwise_term(precision, autocast):
    fused = _elementwise(_job(precision))
    unfused = _elementwise(_job(precision, activation_kernel="unfused", autocast=autocast))
    assert unfused - fused == pytest.approx(_extra_s(precision, autocast), rel=1e-9)
    assert unfused - fused > 0.02  # ~10 % of GPT-2 small's step on a V100 at 8 x 1024 tokens


def test_autocast_runs_the_chain_in_fp32_fp32_training_doubles_the_16_bit_bytes():
    p = default_performance_model()
    half, amp, full = (extra_bytes(p, q, a) for q, a in (("fp16-mixed", False), ("fp16-mixed", True),
                                                        ("fp32", True)))
    assert full == (2 * half[0], 2 * half[1])
    assert amp[0] > half[0] and amp[1] > half[1]
    assert extra_bytes(p, "bf16-true", True) == half  # autocast is a mixed precision's; bf16-true has no fp32 weights


def test_recomputation_runs_the_forward_chain_again_and_tp_splits_it():
    base = _elementwise(_job(ckpt="full"))
    assert _elementwise(_job(ckpt="full", activation_kernel="unfused")) - base == pytest.approx(
        _extra_s("fp16-mixed", False, recomputed=1.0), rel=1e-9)
    base_tp = _elementwise(_job(tp=2))
    assert _elementwise(_job(tp=2, activation_kernel="unfused")) - base_tp == pytest.approx(
        _extra_s("fp16-mixed", False, tp=2), rel=1e-9)


def test_fused_or_compiled_activations_add_nothing():
    assert _elementwise(_job(compile=True, activation_kernel="unfused")) == pytest.approx(
        _elementwise(_job(compile=True)))
    assert _elementwise(_job(autocast=True)) == pytest.approx(_elementwise(_job()))  # GELU fused: autocast alone


@pytest.mark.parametrize("tp,ckpt", [(1, "none"), (2, "none"), (1, "full")])
def test_the_screen_adds_what_the_estimate_adds(tp, ckpt):
    cat = default_catalog()
    gpu = cat.accelerator(GPU)
    params = default_performance_model()
    fab = fabric(cat, gpu, None, None, None, 2, params, 2)
    lay = replace(one_layout(gpus=2, mbs=8, gpus_per_node=2, ckpt=ckpt), tp=np.array([tp]))

    def both(**training):
        sc = scenario_from_dict(_job(ckpt=ckpt, tp=tp, **training))
        arch = resolve_model(sc.model)
        screen = float(screen_step_time(job_basis(sc, arch), lay, sc, gpu, fab, params)[0])
        return screen, estimate_performance(sc, arch, gpu, cat).step_time_s

    (s0, e0), (s1, e1) = both(), both(activation_kernel="unfused", autocast=True)
    assert e1 - e0 > 0.01
    assert s1 - s0 == pytest.approx(e1 - e0, rel=0.02)


@pytest.mark.parametrize("key,value", [("activation_kernel", "python"), ("autocast", "yes")])
def test_a_bad_value_names_the_field_and_what_it_accepts(key, value):
    with pytest.raises(InputError) as err:
        scenario_from_dict(_job(**{key: value}))
    text = str(err.value)
    assert key in text and ("fused" in text if key == "activation_kernel" else "true" in text.lower())
