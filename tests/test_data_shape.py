"""The data shape (a scenario's ``data:`` block, estimate/data_shape.py) and ``trainsizer data-shape``: memory follows
the longest micro-batch, step time the expected one, packing fills every sequence; the lengths' arithmetic checked
against sampling; the command on a small JSONL file (characters per token: no network) and with a tiny local
tokenizer where transformers is installed."""

from __future__ import annotations

import copy
import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainsizer.estimate.data_shape import _Spread, sample_lengths
from trainsizer.estimate.estimator import estimate
from trainsizer.scenario import scenario_from_dict
from trainsizer.workflows.data_shape import data_shape

BASE: dict[str, Any] = {
    "model": {"preset": "llama-3.1-8b"},
    "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 4096, "activation_checkpointing": "full"},
    "parallel": {"gpus": 1},
    "hardware": {"gpu": "h100-sxm5-80gb"},
}


def shaped(data: dict[str, Any] | None, **training: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    out["training"].update(training)
    if data is not None:
        out["data"] = data
    return out


def figures(scenario: dict[str, Any]) -> tuple[float, float, float]:
    """(allocated bytes, step time, dataset tokens/s)."""
    e = estimate(scenario)
    return e.memory.allocated_bytes, e.performance.step_time_s, e.performance.tokens_per_s


def test_a_longer_longest_sample_raises_memory_not_speed():
    short = figures(shaped({"mean_tokens": 600, "max_tokens": 1000}))
    long = figures(shaped({"mean_tokens": 600, "max_tokens": 4000}))
    assert long[0] > short[0] * 1.02  # the peak comes with the batch that holds the longest sample
    assert long[1] == pytest.approx(short[1], rel=1e-9)  # one sample per micro-batch: a step costs the mean
    assert long[2] == pytest.approx(short[2], rel=1e-9)


def test_the_same_histogram_mean_with_a_longer_tail_raises_memory_not_speed():
    # bins taken at their midpoints: 100 and 300 half each (mean 200) against 100, 300 and a rare 1500 (mean 200)
    narrow = {"length_histogram": [{"up_to": 200, "samples": 50}, {"up_to": 400, "samples": 50}]}
    wide = {"length_histogram": [{"up_to": 200, "samples": 506}, {"up_to": 400, "samples": 493},
                                 {"up_to": 2600, "samples": 1}]}
    a, b = (sample_lengths(scenario_from_dict(shaped(d))) for d in (narrow, wide))
    assert a.tokens_per_sequence == pytest.approx(200, rel=1e-3) and b.tokens_per_sequence == pytest.approx(200, 1e-3)
    assert b.memory_seq_len == 2600 > a.memory_seq_len == 400
    assert figures(shaped(wide))[0] > figures(shaped(narrow))[0]
    assert figures(shaped(wide))[1] == pytest.approx(figures(shaped(narrow))[1], rel=1e-9)


def test_padding_to_each_batchs_longest_costs_between_the_mean_and_the_max():
    data = {"mean_tokens": 500, "max_tokens": 4096}
    longest = sample_lengths(scenario_from_dict(shaped(data, micro_batch_size=8)))
    assert 500 < longest.step_seq_len < 4096
    one = figures(shaped(data, micro_batch_size=1))
    eight = figures(shaped(data, micro_batch_size=8))
    to_max = figures(shaped({**data, "padding": "max-length"}, micro_batch_size=8))
    assert to_max[1] > eight[1] > one[1]  # a step of 8 samples padded to their longest, or all to seq_len
    assert to_max[2] < eight[2]  # the same dataset tokens, more padding
    assert eight[0] < to_max[0] * 1.05 and to_max[0] == figures(shaped(None, micro_batch_size=8))[0]


def test_packed_sequences_are_seq_len_full_and_per_document_attention_is_cheaper():
    plain = figures(shaped(None))
    packed = figures(shaped({"packing": True}))
    documents = figures(shaped({"packing": True, "per_document_attention": True, "mean_tokens": 500,
                                "max_tokens": 4096}))
    assert packed == pytest.approx(plain, rel=1e-12)  # a pack is seq_len tokens of data: the plain scenario
    assert documents[0] == pytest.approx(plain[0], rel=1e-12) and documents[1] < plain[1]


def test_padding_to_seq_len_is_the_plain_scenario_in_memory_and_time():
    padded = figures(shaped({"padding": "max-length", "mean_tokens": 4096, "max_tokens": 4096}))
    assert padded == pytest.approx(figures(shaped(None)), rel=1e-12)


def test_the_power_law_spread_matches_sampling():
    rng = random.Random(7)
    longest, mean = 4000.0, 500.0
    spread = _Spread(longest=longest, k=longest / mean - 1)
    for draws, cap in ((1, 4000), (8, 4000), (8, 2048), (64, 1000)):
        sampled = [min(cap, max(longest * rng.random() ** spread.k for _ in range(draws))) for _ in range(20_000)]
        assert spread.expected_longest(draws, cap) == pytest.approx(sum(sampled) / len(sampled), rel=0.03)
    lengths = [longest * rng.random() ** spread.k for _ in range(100_000)]
    assert spread.square_over_mean(1e9) == pytest.approx(sum(s * s for s in lengths) / sum(lengths), rel=0.03)


def test_the_histogram_expected_longest_matches_enumeration():
    spread = _Spread((100.0, 300.0, 900.0), (0.5, 0.3, 0.2))
    draws = 3
    exact = 0.0
    for i in range(3):
        for j in range(3):
            for k in range(3):
                p = spread.probabilities[i] * spread.probabilities[j] * spread.probabilities[k]
                exact += p * max(spread.lengths[i], spread.lengths[j], spread.lengths[k])
    assert spread.expected_longest(draws, 1e9) == pytest.approx(exact, rel=1e-12)


def test_a_truncated_sample_counts_seq_len_tokens():
    lengths = sample_lengths(scenario_from_dict(shaped({"mean_tokens": 3000, "max_tokens": 16000}, seq_len=2048)))
    assert lengths.memory_seq_len == 2048 and lengths.tokens_per_sequence < 2048


def write_jsonl(path: Path, rows: list[Any]) -> None:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")


ROWS = [{"text": "a" * 40}, {"messages": [{"role": "user", "content": "b" * 10},
                                          {"role": "assistant", "content": "c" * 30}]},
        {"instruction": "d" * 8, "input": "", "output": "e" * 100}, {"conversations": [{"from": "human",
                                                                                     "value": "f" * 401}]}]


def test_data_shape_counts_characters_per_token_and_its_yaml_is_a_data_block(tmp_path):
    path = tmp_path / "d.jsonl"
    write_jsonl(path, ROWS)
    expected = [10, 10, math.ceil(109 / 4), math.ceil(401 / 4)]  # alpaca: instruction and output joined by \n
    stats = data_shape(path, chars_per_token=4)
    assert stats.samples == 4 and stats.longest == max(expected) and stats.approximate
    assert stats.mean == pytest.approx(sum(expected) / 4)
    assert sum(n for _, n in stats.bins) == 4 and stats.bins[-1][0] == max(expected)
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "data-shape", str(path), "--chars-per-token", "4",
                           "--yaml"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    block = yaml.safe_load(proc.stdout)
    scenario = scenario_from_dict({**BASE, **block})
    assert scenario.data.max_tokens == max(expected) and scenario.data.mean_tokens == pytest.approx(stats.mean, 0.01)
    text = subprocess.run([sys.executable, "-m", "trainsizer.cli", "data-shape", str(path), "--chars-per-token", "4"],
                          capture_output=True, text=True, timeout=120).stdout
    assert "approximation" in text and "chars/4" in text
    out = json.loads(subprocess.run([sys.executable, "-m", "trainsizer.cli", "data-shape", str(path),
                                     "--chars-per-token", "4", "--json"], capture_output=True, text=True,
                                    timeout=120).stdout)
    assert out["approximate"] and out["max_tokens"] == max(expected) and out["data"]["max_tokens"] == max(expected)


def test_data_shape_reads_only_the_first_samples_asked_for(tmp_path):
    path = tmp_path / "d.jsonl"
    write_jsonl(path, [{"text": "a" * 4 * n} for n in range(1, 11)] + ["not json"])
    assert data_shape(path, chars_per_token=4, limit=10).longest == 10  # the bad line 11 is never read


def test_a_line_over_the_bound_is_refused_with_its_number(tmp_path, monkeypatch):
    import trainsizer.workflows.data_shape as ds
    from trainsizer.errors import InputError

    monkeypatch.setattr(ds, "MAX_LINE_BYTES", 64)
    path = tmp_path / "d.jsonl"
    write_jsonl(path, [{"text": "short"}, {"text": "x" * 100}])
    with pytest.raises(InputError) as err:
        data_shape(path, chars_per_token=4)
    assert err.value.field.endswith("d.jsonl:2")


def _tiny_tokenizer(folder: Path) -> None:
    """A word-level tokenizer of a few words, saved as transformers saves one (no download)."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    vocab = {"[UNK]": 0, "hello": 1, "world": 2, "tokens": 3}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.save_pretrained(str(folder))


def test_data_shape_counts_with_a_local_tokenizer(tmp_path):
    folder = tmp_path / "tok"
    _tiny_tokenizer(folder)
    path = tmp_path / "d.jsonl"
    write_jsonl(path, [{"text": "hello world"}, {"text": "hello hello world tokens other"}])
    stats = data_shape(path, tokenizer=str(folder))
    assert (stats.samples, stats.longest, stats.mean, stats.approximate) == (2, 5, 3.5, False)


def test_the_planner_screens_memory_at_the_longest_batch_as_the_estimate_does(monkeypatch):
    """A job whose samples are far shorter than its seq_len: the screen's memory is the estimate's on every layout
    the search re-checks, and its step time too where the layout keeps the job's micro-batch (plan.data_screen)."""
    import trainsizer.plan.search as search
    from trainsizer.estimate.data_shape import peak_scenario
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.fast import job_basis, memory_screen
    from trainsizer.workflows.jobs import job_from_dict
    from trainsizer.workflows.plan_job import plan_job
    from trainsizer.workflows.plan_request import PlanRequest

    job = job_from_dict({"model": {"preset": "qwen2.5-0.5b"},
                         "training": {"method": "lora", "micro_batch_size": 2, "seq_len": 16384, "tokens": 1.0e8},
                         "data": {"mean_tokens": 700, "max_tokens": 3000}})
    rechecked = []
    exact_options = search._exact_options

    def keep(chosen, planned, constraints, cat, mp, pp_, global_batch, *args, **kwargs):
        rechecked.append((list(chosen), planned, constraints, cat, mp, pp_, global_batch))
        return exact_options(chosen, planned, constraints, cat, mp, pp_, global_batch, *args, **kwargs)

    monkeypatch.setattr(search, "_exact_options", keep)
    planned = plan_job(job, PlanRequest(gpus=("rtx-4090-24gb",), max_gpus=2))
    assert planned.result.options, "the samples fit one 4090 at 3,000 tokens, not at 16,384"
    compared = stepped = 0
    for chosen, planned_job, constraints, cat, mp, pp_, global_batch in rechecked:
        screened = peak_scenario(planned_job.model_copy(update={"training": planned_job.training.model_copy(
            update={"global_batch_size": global_batch})}))
        basis = job_basis(screened, resolve_model(screened.model), mp)
        for item in chosen:
            sc = search._scenario_for(planned_job, item.gpu, item.layouts, item.index, item.inter_node,
                                      global_batch, constraints.intra_node)
            exact = estimate(sc, catalog=cat, memory_params=mp, performance_params=pp_, with_limits=False)
            device = memory_screen(basis, item.layouts, screened, mp).on(item.gpu)[0][item.index]
            assert device == pytest.approx(exact.memory.device_bytes, rel=1e-5)
            compared += 1
            if sc.training.micro_batch_size == job.training.micro_batch_size:
                assert item.step_time_s == pytest.approx(exact.performance.step_time_s, rel=1e-9)
                stepped += 1
    assert compared >= 3 and stepped >= 1


def test_packed_documents_of_a_stated_mean_alone_are_that_long():
    lengths = sample_lengths(scenario_from_dict(shaped({"packing": True, "per_document_attention": True,
                                                        "mean_tokens": 512})))
    assert lengths.document_tokens == 512 and not lengths.assumed_spread
    packed = sample_lengths(scenario_from_dict(shaped({"packing": True, "mean_tokens": 512, "max_tokens": 4000})))
    assert packed.document_tokens is None and not packed.assumed_spread  # whole-pack attention: lengths unused
