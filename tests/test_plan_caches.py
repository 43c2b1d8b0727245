"""What the faster exact re-check relies on, checked against a recomputation without its caches: the FLOPs read
only the model and the training block, layouts that share a parallel layout share their model states, the
screen is element-wise (a subset of layouts screens the same), and the enumeration keeps the frameworks' rules."""

from __future__ import annotations

import itertools

import numpy as np

from trainsizer.api import estimate
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.estimator import clear_caches
from trainsizer.estimate.flops import count_step_flops, step_flops
from trainsizer.estimate.step import default_performance_model
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_memory, screen_step_time
from trainsizer.plan.search import Constraints, _scenario_for, enumerate_layouts
from trainsizer.scenario import scenario_from_dict


def _job(preset="llama-3.1-8b", method="full", seq=4096, gbs=64, **parallel):
    training = {"method": method, "micro_batch_size": 1, "seq_len": seq, "global_batch_size": gbs}
    if method == "lora":
        training |= {"precision": "bf16-true", "lora": {"rank": 16, "targets": "all-linear"}}
    sc = scenario_from_dict({"model": {"preset": preset}, "training": training,
                             "parallel": {"gpus": 8, **parallel}, "hardware": {"gpu": "h100-sxm5-80gb"}})
    return sc, resolve_model(sc.model)


def test_step_flops_read_the_model_and_training_only():
    sc, arch = _job(tp=2, pp=2)
    other = sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"tp": 8, "pp": 1}),
                                  "hardware": sc.hardware.model_copy(update={"gpu": "rtx-4090-24gb"})})
    assert count_step_flops(sc, arch) == count_step_flops(other, arch) == step_flops(other, arch)
    longer = sc.model_copy(update={"training": sc.training.model_copy(update={"seq_len": 8192})})
    assert step_flops(longer, arch) != step_flops(sc, arch)  # the cache is keyed by the training block


def test_cached_estimates_equal_cold_ones_across_layouts_and_gpus():
    """The planner's pattern (one parallel layout at several micro-batches, checkpointing policies and GPUs)
    gives, with the caches warm, what each layout gives alone from cold caches."""
    base, _ = _job("qwen2.5-7b", "lora", zero=0)
    layouts = [(gpu, mbs, ckpt, par) for gpu in ("h100-sxm5-80gb", "rtx-4090-24gb") for mbs in (1, 2)
               for ckpt in ("none", "full") for par in ({"tp": 1, "pp": 1}, {"tp": 2, "pp": 2, "zero": 1})]

    def scenario(gpu, mbs, ckpt, par):
        return base.model_copy(update={
            "training": base.training.model_copy(update={"micro_batch_size": mbs, "activation_checkpointing": ckpt}),
            "parallel": base.parallel.model_copy(update=par),
            "hardware": base.hardware.model_copy(update={"gpu": gpu})})

    clear_caches()
    warm = [estimate(scenario(*lay), with_limits=False).to_dict() for lay in layouts]
    for lay, got in zip(layouts, warm, strict=True):
        clear_caches()
        assert estimate(scenario(*lay), with_limits=False).to_dict() == got, lay


def test_the_screen_of_a_subset_is_the_subset_of_the_screen():
    sc, arch = _job("llama-3.1-70b", gbs=256)
    gpu = default_catalog().accelerator("a100-sxm4-80gb")
    lay = enumerate_layouts(sc, arch, gpu, Constraints(max_gpus=64), 8, 256)
    basis = job_basis(sc, arch)
    idx = np.arange(0, len(lay), 7)
    part = lay.take(idx)
    fab = fabric(default_catalog(), gpu, None, "ib-ndr-400", None, 8, default_performance_model())
    whole = screen_step_time(basis, lay, sc, gpu, fab)
    assert np.array_equal(screen_step_time(basis, part, sc, gpu, fab), whole[idx])
    assert np.array_equal(screen_memory(basis, part, sc, gpu)[0], screen_memory(basis, lay, sc, gpu)[0][idx])


def test_enumeration_is_every_legal_layout_in_order():
    """The two-stage enumeration against a plain loop over all nine axes with the frameworks' rules."""
    sc, arch = _job("llama-3.1-70b", gbs=256)
    gpu = default_catalog().accelerator("h100-sxm5-80gb")
    lay = enumerate_layouts(sc, arch, gpu, Constraints(max_gpus=64), 8, 256)
    got = list(zip(*(getattr(lay, name).tolist() for name in ("gpus", "tp", "pp", "cp", "vpp", "zero", "offload",
                                                                "mbs", "ckpt", "zero_shard")), strict=True))
    expected = []
    for g, tp, pp, cp, vpp, zero, off, mbs, ckpt in itertools.product(
            (1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8), (1, 2, 4, 8, 16, 32, 64), (1,), (1, 2), range(4), range(3),
            (1, 2, 4, 8), range(3)):
        if g % (tp * pp * cp):
            continue
        dp = g // (tp * pp * cp)
        legal = (arch.num_layers % (pp * vpp) == 0 and (vpp == 1 or pp > 1)
                 and (vpp == 1 or (256 // (mbs * dp)) % pp == 0) and (zero <= 1 or pp == 1)
                 and (off == 0 or (off == 1 and zero >= 1) or (off == 2 and zero == 3))
                 and (zero == 0 or dp > 1 or off > 0) and 256 % (mbs * dp) == 0 and (tp * cp <= 8 or g <= 8))
        if legal:
            expected.append((g, tp, pp, cp, vpp, zero, off, mbs, ckpt, 0))
    # then, in the same order, each ZeRO-3 layout over more than one node sharded within a node (hybrid sharding)
    expected += [(*x[:-1], 8) for x in expected if x[5] == 3 and x[0] > 8 and x[0] // (x[1] * x[2] * x[3]) > 8]
    assert got == expected
    sc0 = _scenario_for(sc, gpu, lay, 0, None, 256)
    assert sc0.parallel.gpus == got[0][0]


def test_the_checked_catalog_kept_in_the_cache_folder_is_the_catalog_checked_entry_by_entry():
    from trainsizer.hardware.catalog import _lazy_catalog

    kept, lazy = default_catalog(), _lazy_catalog()
    assert list(kept.accelerators) == list(lazy.accelerators) and list(kept.links) == list(lazy.links)
    assert all(kept.accelerators[k] == lazy.accelerators[k] for k in lazy.accelerators)
    assert all(kept.links[k] == lazy.links[k] for k in lazy.links)


def test_cached_objects_rebuild_on_a_changed_source_and_trust_only_a_private_file(tmp_path, monkeypatch):
    import os

    from trainsizer.datafiles import cached_objects

    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    built = []

    def build() -> dict:
        built.append(1)
        return {"value": len(built)}

    assert cached_objects("t", [source], build) == {"value": 1}
    assert cached_objects("t", [source], build) == {"value": 1} and len(built) == 1  # read back, not built
    source.write_text("a: 22\n")  # another size and time: another key
    assert cached_objects("t", [source], build) == {"value": 2}
    assert cached_objects("t", [source], build, version="other") == {"value": 3}
    pickled = max((tmp_path / "cache" / "trainsizer" / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    os.chmod(pickled, 0o666)  # another user could have written it: never loaded
    assert cached_objects("t", [source], build, version="other") == {"value": 4}

    def broken() -> dict:
        raise ValueError("an entry that fails its check")

    assert cached_objects("u", [source], broken) is None  # the caller checks entries as it uses them


def test_the_kept_sites_and_price_list_are_those_checked_row_by_row():
    from trainsizer.cost.prices import PriceFile, _default_data, shipped_price_file
    from trainsizer.system.sites import _checked_sites, default_sites

    assert default_sites() == _checked_sites()
    assert shipped_price_file() == PriceFile.model_validate(_default_data())


def test_a_users_yaml_is_parsed_once_per_text(tmp_path, monkeypatch):
    import pytest

    from trainsizer import datafiles
    from trainsizer.errors import InputError

    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path / "cache"))
    parsed = []
    real = datafiles.load_yaml_text
    monkeypatch.setattr(datafiles, "load_yaml_text", lambda text: parsed.append(text) or real(text))
    job = tmp_path / "job.yaml"
    job.write_text("model: {preset: qwen2.5-7b}\ntraining: {method: lora, seq_len: 512, as_of: 2025-01-02}\n")
    first = datafiles.user_yaml(job)
    assert datafiles.user_yaml(job) == first and len(parsed) == 1  # the JSON copy, dates included
    job.write_text("model: {preset: qwen2.5-7b}\ntraining: {method: lora, seq_len: 1024, as_of: 2025-01-02}\n")
    assert datafiles.user_yaml(job)["training"]["seq_len"] == 1024 and len(parsed) == 2  # another text: parsed
    for text in ("a: .nan\n", "1: one\n"):  # JSON cannot hold it exactly: parsed every time
        job.write_text(text)
        datafiles.user_yaml(job)
        datafiles.user_yaml(job)
    assert len(parsed) == 6
    job.write_text("a: 1\na: 2\n")
    for _ in range(2):  # a mistake is never kept: the same error each time
        with pytest.raises(InputError, match="duplicate key"):
            datafiles.user_yaml(job)
    job.write_text("a: 1\n")
    datafiles._user_cache_file("a: 1\n").write_text('{"text": "a: 2\\n", "data": {"a": 2}}')  # not this text's
    assert datafiles.user_yaml(job) == {"a": 1}


def _kinds_jobs():
    """Jobs whose layers differ: a dense first layer before routed experts, frozen lower layers, QLoRA inputs kept
    through checkpointing, one layer in two recomputed."""
    def job(preset, method, **training):
        sc, arch = _job(preset, method, pp=2)
        return sc.model_copy(update={"training": sc.training.model_copy(update=training)}), arch
    return [job("deepseek-v2-lite", "lora"), job("qwen2.5-7b", "freeze", freeze_trainable_layers=3),
            job("qwen2.5-7b", "qlora", quantization="nf4-dq", quantized_inputs="kept",
                activation_checkpointing="full"),
            job("llama-3.1-8b", "full", activation_checkpointing="every-n-layers", checkpoint_every_n_layers=3)]


def test_stages_alike_in_contents_have_the_same_model_states():
    """job_basis computes one row per kind of stage (first, last, its layers but their index): every stage's own row
    equals the row of each stage of its kind."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.training_state import training_state
    from trainsizer.plan.fast import _contents, _probe, _stage_row

    for sc, arch in _kinds_jobs():
        L = arch.num_layers
        st = training_state(_probe(sc, tp=1, pp=L, cp=1, zero=0, gpus=L, virtual_pp=1), arch, default_memory_model())
        rows: dict[tuple, list[dict[str, float]]] = {}
        for stage in range(L):
            key = (stage == 0, stage == L - 1, tuple(_contents(layer) for layer in st.stage_layers(stage)))
            rows.setdefault(key, []).append(_stage_row(st, stage, L))
        assert len(rows) < L  # some stages are alike
        for alike in rows.values():
            assert all(row == alike[0] for row in alike)


def test_layers_of_one_kind_keep_the_same_activations():
    """A stage's activations are computed once per kind of layer (MoE-ness, trainability, adapters, recomputed or
    not): each layer's own figures equal its kind's."""
    from trainsizer.estimate.activations import _layer_saved, layer_activations, layer_bytes, replicated_divisor
    from trainsizer.estimate.flops import recomputed_layer
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.training_state import training_state

    mp = default_memory_model()
    for sc, arch in _kinds_jobs():
        st = training_state(sc, arch, mp)
        tokens, tp = sc.training.micro_batch_size * sc.training.seq_len, sc.parallel.tp
        div = replicated_divisor(tp, sc.parallel.sequence_parallel)
        kinds: dict[tuple, set[tuple[float, ...]]] = {}
        for layer in st.layers:
            la = layer_activations(sc, arch, mp, layer)
            full = layer_bytes(la.replicated, la.sharded + la.scores, tp, div, tokens)
            key = (arch.is_moe_layer(layer.index), layer.trainable_base, tuple(lin.name for lin in layer.lora),
                   recomputed_layer(sc, layer.index))
            saved = _layer_saved(sc, arch, mp, layer, la, full, tokens, div)
            kinds.setdefault(key, set()).add((full, la.unsaved, *saved))
        assert all(len(figures) == 1 for figures in kinds.values()), kinds
