"""A BERT layer's saved tensors as PyTorch counts them, against estimate.activations.layer_activations.

Runs transformers' BertLayer (eager attention, dropout on) on the CPU under
torch.autograd.graph.saved_tensors_hooks and adds up the distinct storages autograd keeps for backward in the
first layer (parameters and autocast's fp16 weight copies excluded: model states count them). CPU and CUDA keep
different dropout masks (the CPU keeps an input-dtype multiplier, CUDA's fused kernel a 1-byte mask:
aten/src/ATen/native/cuda/Dropout.cu), so a saved tensor whose values are all 0 or 1/(1-p) counts 1 byte per element.
Under CPU autocast softmax runs in fp16 (CUDA's autocast runs it in fp32), so the fp16 comparison leaves out the
(s x s) score tensors and checks the rest of the layer, where the per-module fp16 casts of the fp32 norm output are a
known undercount (xfail, strict: it fails as soon as they are counted, and the marker must go).
"""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from trainsizer.estimate.activations import activation_factor, layer_activations  # noqa: E402
from trainsizer.estimate.memory import default_memory_model  # noqa: E402
from trainsizer.estimate.training_state import training_state  # noqa: E402
from trainsizer.models.catalog import resolve_model  # noqa: E402
from trainsizer.scenario import scenario_from_dict  # noqa: E402

H, HEADS, FFN, SEQ, DROP = 64, 4, 256, 32, 0.1


def _saved_per_token(amp: bool) -> tuple[float, float]:
    """(bytes per token of the first layer without the (s, s) score tensors, bytes per token of the scores)."""
    torch.manual_seed(0)
    cfg = transformers.BertConfig(hidden_size=H, num_hidden_layers=2, num_attention_heads=HEADS,
                                  intermediate_size=FFN, vocab_size=100, max_position_embeddings=2 * SEQ,
                                  hidden_dropout_prob=DROP, attention_probs_dropout_prob=DROP, num_labels=2,
                                  attn_implementation="eager")
    model = transformers.BertForSequenceClassification(cfg).train()
    shapes = {tuple(p.shape) for p in model.parameters()}
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    inside = [False]
    layer = model.bert.encoder.layer[0]
    layer.register_forward_pre_hook(lambda *_: inside.__setitem__(0, True))
    layer.register_forward_hook(lambda *_: inside.__setitem__(0, False))
    seen: set[int] = set()
    rest = scores = 0.0

    def pack(t):
        nonlocal rest, scores
        ptr = t.untyped_storage().data_ptr()
        if not inside[0] or ptr in params or ptr in seen or tuple(t.shape) in shapes:
            return t  # another layer, a weight or its fp16 copy, or a storage counted already
        seen.add(ptr)
        values = torch.unique(t.detach().float())
        mask = t.is_floating_point() and bool(((values == 0) | ((values - 1 / (1 - DROP)).abs() < 1e-3)).all())
        nbytes = t.numel() if mask else t.untyped_storage().nbytes()
        if t.dim() >= 2 and t.shape[-1] == SEQ and t.shape[-2] == SEQ:
            scores += nbytes
        else:
            rest += nbytes
        return t

    ids = torch.randint(0, 100, (1, SEQ))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if amp:
            with torch.autocast("cpu", dtype=torch.float16):
                model(input_ids=ids, labels=torch.tensor([1]))
        else:
            model(input_ids=ids, labels=torch.tensor([1]))
    return rest / SEQ, scores / SEQ


def _model_per_token(precision: str) -> tuple[float, float]:
    sc = scenario_from_dict({
        "model": {"architecture": {"model_type": "bert", "hidden_size": H, "num_hidden_layers": 2,
                                   "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
                                   "intermediate_size": FFN, "vocab_size": 100, "hidden_act": "gelu"}},
        "training": {"method": "full", "precision": precision, "optimizer": "adamw", "micro_batch_size": 1,
                     "seq_len": SEQ, "global_batch_size": 1, "activation_checkpointing": "none",
                     "attention": "eager"},
        "parallel": {"gpus": 1}, "hardware": {"gpu": "v100-sxm2-16gb"}})
    arch = resolve_model(sc.model)
    p = default_memory_model()
    la = layer_activations(sc, arch, p, training_state(sc, arch, p).layers[0])
    factor = activation_factor(False, p)  # the fitted implementation_factor: compare the tensors as listed
    return (la.replicated + la.sharded) / factor, la.scores / factor


def test_fp32_eager_layer_saves_what_pytorch_saves():
    """The probabilities @ V product keeps its inputs, not its output: only the contiguous copy that feeds the
    output projection is saved (before: the attention output was counted as well, +4h bytes a token)."""
    rest, scores = _saved_per_token(amp=False)
    m_rest, m_scores = _model_per_token("fp32")
    assert m_scores == pytest.approx(scores, rel=0.01)
    assert m_rest == pytest.approx(rest, rel=0.01)  # LayerNorm's mean / rstd (8 B a token each) are not listed


@pytest.mark.xfail(strict=True, reason="known undercount, not counted: under fp16-mixed autocast each of query / key / "
                   "value casts the fp32 norm output and saves its own fp16 copy (autocast caches only leaf weight "
                   "casts: aten/src/ATen/autocast_mode.cpp cached_cast), 4h bytes a token a BERT layer more than "
                   "counted; counting them moved the speed folds' fits (throughput LOSO 8.25/25.36 -> 8.45/25.63 %) "
                   "while changing one memory case by 1 point, so it waits for the speed model's element-wise traffic")
def test_fp16_mixed_layer_counts_one_input_cast_per_linear():
    """Under autocast each of query / key / value casts the fp32 norm output to fp16 and saves its own copy."""
    rest, _ = _saved_per_token(amp=True)
    m_rest, _ = _model_per_token("fp16-mixed")
    assert m_rest == pytest.approx(rest, rel=0.01)
