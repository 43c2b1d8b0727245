"""Under torch.cuda.amp autocast over fp32 weights (``training.autocast``: the Hugging Face Trainer's ``--fp16``
without DeepSpeed) the 16-bit weights of a mixed-precision full fine-tune are autocast's casts, made only for the
ops it runs in 16 bits (linears, matmuls; a tied LM head casts the embedding): embedding lookups and layer norms read
the fp32 weight itself and have no copy (estimate/model_states.autocast_copies_linears_only). The planner's screen
reads the estimate's weights, so it prices them alike."""

import pytest
from screen_layouts import one_layout  # tests/ is on sys.path

from trainsizer.api import estimate
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.models.param_counts import count_params, layer_norm_params
from trainsizer.plan.fast import job_basis, screen_memory
from trainsizer.scenario import scenario_from_dict

GPU = "v100-sxm2-16gb"


def _scenario(preset: str, autocast: bool, precision: str = "fp16-mixed", method: str = "full", zero: int = 0):
    return scenario_from_dict({
        "model": {"preset": preset},
        "training": {"method": method, "precision": precision, "micro_batch_size": 1, "seq_len": 512,
                     "global_batch_size": 1 if zero == 0 else 2, "activation_checkpointing": "full",
                     "attention": "eager", "autocast": autocast},
        "parallel": {"gpus": 1 if zero == 0 else 2, "zero": zero}, "hardware": {"gpu": GPU}})


def _weights(sc) -> float:
    mem = estimate(sc, with_limits=False, with_performance=False).memory
    return next(c.bytes for c in mem.components if c.name == "weights")


def _embeddings_and_norms(preset: str) -> tuple[float, float]:
    arch = resolve_model(_scenario(preset, False).model)
    norms = sum(layer_norm_params(arch, arch.is_moe_layer(i)) for i in range(arch.num_layers))
    return float(count_params(arch).embedding), float(norms)


def test_an_encoder_without_lm_head_has_no_16_bit_copy_of_its_embeddings_and_norms():
    embed, norms = _embeddings_and_norms("bert-large")
    saved = _weights(_scenario("bert-large", False)) - _weights(_scenario("bert-large", True))
    assert saved == pytest.approx(2 * (embed + norms), rel=1e-9)
    assert 60 * 2**20 < saved < 70 * 2**20  # BERT-large: ~31.8 M embedding parameters, the 61 MiB of the V100 runs


def test_a_tied_lm_head_casts_the_embedding_so_only_the_norms_lose_their_copy():
    _, norms = _embeddings_and_norms("gpt2-124m")
    saved = _weights(_scenario("gpt2-124m", False)) - _weights(_scenario("gpt2-124m", True))
    assert saved == pytest.approx(2 * norms, rel=1e-9)


@pytest.mark.parametrize("precision,method", [("fp32", "full"), ("bf16-true", "full"), ("fp16-mixed", "lora")])
def test_nothing_changes_where_autocast_makes_no_weight_copy_the_estimate_counts(precision, method):
    assert _weights(_scenario("bert-large", True, precision, method)) == _weights(
        _scenario("bert-large", False, precision, method))


def _screen_and_estimate(autocast: bool, zero: int) -> tuple[float, float]:
    sc = _scenario("bert-large", autocast, zero=zero)
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator(GPU)
    screened, _host = screen_memory(job_basis(sc, arch), one_layout(sc.parallel.gpus, zero, ckpt="full"), sc, gpu)
    return float(screened[0]), estimate(sc, with_limits=False, with_performance=False).memory.device_bytes


@pytest.mark.parametrize("zero", [0, 1])
def test_the_planners_screen_prices_the_copies_as_the_estimate_does(zero):
    (screen_amp, estimate_amp), (screen_plain, estimate_plain) = (_screen_and_estimate(a, zero) for a in (True, False))
    assert screen_plain - screen_amp == pytest.approx(estimate_plain - estimate_amp, rel=1e-6)
    assert screen_plain - screen_amp > 60 * 2**20
    # with data parallelism too: the bucket copies the embedding's gradients as well as the layers'
    assert screen_amp == pytest.approx(estimate_amp, rel=1e-9) and screen_plain == pytest.approx(estimate_plain,
                                                                                                   rel=1e-9)
