"""The speed model's element-wise traffic is priced on the activation bytes as counted, not on the memory fit's
``implementation_factor`` (which absorbs allocator and framework slack in peak memory): a memory refit must not move
step times, in the estimate and in the planner's screen alike (issue 23: the two fits were coupled)."""

import pytest
from screen_layouts import one_layout  # tests/ is on sys.path

from trainsizer.estimate.comm import fabric
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model, step_context
from trainsizer.estimate.step_terms import raw_step
from trainsizer.estimate.typed_data import with_value
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_step_time
from trainsizer.scenario import scenario_from_dict

GPU = "a100-sxm4-80gb"
JOB = {"model": {"preset": "llama-3.1-8b"},
       "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 2048,
                    "global_batch_size": 8, "activation_checkpointing": "none", "attention": "flash"},
       "parallel": {"gpus": 8, "zero": 3},
       "hardware": {"gpu": GPU, "gpus_per_node": 8}}


def _memory(factor: float):
    return with_value(default_memory_model(), "activations", "implementation_factor", factor)


def test_the_estimates_elementwise_traffic_ignores_the_memory_fits_factor():
    cat = default_catalog()
    sc = scenario_from_dict(JOB)
    arch = resolve_model(sc.model)
    traffic = [raw_step(step_context(sc, arch, cat.accelerator(GPU), cat, default_performance_model(),
                                     _memory(f))[0]).saved_traffic_s for f in (0.9, 1.0, 1.3)]
    assert traffic[0] > 0 and traffic[0] == pytest.approx(traffic[1]) == pytest.approx(traffic[2])


def test_the_screens_elementwise_traffic_ignores_it_too():
    cat = default_catalog()
    gpu = cat.accelerator(GPU)
    params = default_performance_model()
    fab = fabric(cat, gpu, None, None, None, 1, params, 8)
    lay = one_layout(gpus=8, zero=3, gpus_per_node=8)
    sc = scenario_from_dict(JOB)
    arch = resolve_model(sc.model)
    steps = [float(screen_step_time(job_basis(sc, arch, _memory(f)), lay, sc, gpu, fab, params)[0]) for f in (0.9, 1.3)]
    assert steps[0] > 0 and steps[0] == pytest.approx(steps[1])
