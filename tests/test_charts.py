"""Honest charts (report/charts.py, report/specs.py, report/axes.py), drawn alike by the HTML report and the
web page: the memory bars add up to the headline device figure and show the GPU's capacity and a safety
margin, a fit above 90 % is "tight", the Pareto chart marks the recommended option, and an axis is
logarithmic only when its data spans more than 20x."""

from __future__ import annotations

import copy
import re

import pytest

from trainsizer.report.axes import LOG_SPAN, choose_axis, log_ticks, use_log_axis
from trainsizer.report.charts import TIGHT_FRACTION, fit_status, line_chart, render_chart
from trainsizer.report.specs import memory_parts, memory_spec, pareto_spec, plan_chart_specs
from trainsizer.report.words import gpu_name
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

JOB = "examples/jobs/qwen2.5-7b-lora.yaml"


@pytest.fixture(scope="module")
def out():
    # the global market: these parts cannot be bought new in China, and the cost chart needs a buy price
    req = PlanRequest(gpus=("rtx-4090-24gb", "h100-sxm5-80gb"), max_gpus=8, site="chengdu-legacy-colo", market="global")
    return plan_job(load_job(JOB, None), req).out


def _rec(out):
    return out["options"][out["rankings"]["recommended"][0]]


# --- memory: parts add up to the headline ---------------------------------------------------------------

def test_memory_parts_sum_to_the_headline_for_every_option(out):
    for option in out["options"]:
        mem = option["memory"]
        labels, values = memory_parts(mem)
        assert sum(values) == pytest.approx(mem["device_gib"], abs=1e-9)
        assert all(v > 0 for v in values) and len(labels) == len(values)
        assert sum(mem["detail_gib"].values()) < mem["device_gib"]  # the remainder is real: it must be drawn


def test_memory_remainder_is_labelled_allocator_cache_and_context(out):
    mem = _rec(out)["memory"]
    labels, values = memory_parts(mem)
    by = dict(zip(labels, values, strict=True))
    assert by["allocator cache (reserved − allocated)"] == pytest.approx(
        mem["reserved_gib"] - sum(mem["detail_gib"].values()), abs=1e-9)
    assert by["CUDA context, NCCL (device − reserved)"] == pytest.approx(mem["device_gib"] - mem["reserved_gib"])
    zh_labels, zh_values = memory_parts(mem, "zh-CN")
    assert "分配器缓存（预留 − 已分配）" in zh_labels and zh_values == values


def test_memory_chart_has_the_capacity_line_margin_and_total(out):
    spec = memory_spec(_rec(out))
    assert spec["total"] == _rec(out)["memory"]["device_gib"] and sum(spec["values"]) == pytest.approx(spec["total"])
    svg = render_chart(spec)
    for testid in ("capacity-line", "safety-margin", "memory-total", "memory-status"):
        assert f"data-testid='{testid}'" in svg
    # the capacity line sits at capacity, the total bar ends at the headline, on the same scale
    line_x = float(re.search(r"class='capacity-line'[^>]* x1='([\d.]+)'", svg).group(1))
    total = re.search(r"class='memory-total'[^>]* x='([\d.]+)'[^>]* width='([\d.]+)'", svg)
    x0, width = float(total.group(1)), float(total.group(2))
    assert width / (line_x - x0) == pytest.approx(spec["total"] / spec["capacity"], abs=0.01)
    assert f"capacity {spec['capacity']:.1f} GiB" in svg


# --- tight above 90 % -----------------------------------------------------------------------------------

def test_tight_fraction_is_ninety_percent():
    assert TIGHT_FRACTION == 0.90
    assert fit_status(21.6, 24.0) == "fits"  # exactly 90 %
    assert fit_status(21.7, 24.0) == "tight"
    assert fit_status(24.0, 24.0) == "tight"
    assert fit_status(24.1, 24.0) == "no_fit"
    assert fit_status(10.0, 24.0, fits=False) == "no_fit"


def test_a_fit_above_ninety_percent_is_marked_tight_with_the_reason(out):
    option = copy.deepcopy(_rec(out))
    mem = option["memory"]
    extra = 0.95 * mem["capacity_gib"] - mem["device_gib"]
    mem["device_gib"] += extra  # the context grows: still fits, within the top 10 %
    spec = memory_spec(option)
    assert spec["status"] == "tight" and sum(spec["values"]) == pytest.approx(mem["device_gib"])
    svg = render_chart(spec)
    assert "data-status='tight'" in svg and "tight: " in svg
    assert "fragmentation" in svg and "variable-length batches" in svg
    roomy = copy.deepcopy(_rec(out))
    roomy["memory"]["device_gib"] = 0.5 * roomy["memory"]["capacity_gib"]
    assert memory_spec(roomy)["status"] == "fits"
    assert "偏紧" in memory_spec(option, "zh-CN")["text"]["status"]


# --- axes: linear under 20x, log above ------------------------------------------------------------------

@pytest.mark.parametrize(("values", "log"), [([1, 20], False), ([1, 21], True), ([0.5, 10], False),
                                             ([1, 2, 4, 8], False), ([1, 2, 4, 8, 16, 32, 64], True),
                                             ([0, 1000], False), ([-5, 100], False), ([], False), ([7], False),
                                             ([3, None, 90], True)])
def test_log_axis_only_above_twenty_times(values, log):
    assert LOG_SPAN == 20
    assert use_log_axis(values) is log


def test_axes_follow_the_rule_in_the_drawing():
    wide = line_chart("t", [1, 2, 4, 8, 16, 32, 64], {"a": [1.0, 2, 4, 8, 16, 32, 64]}, "GPUs", "tokens/s")
    narrow = line_chart("t", [1, 2, 4, 8], {"a": [100.0, 180, 300, 500]}, "GPUs", "tokens/s")
    assert wide.count("(log scale)") == 2 and "(log scale)" not in narrow
    assert choose_axis([100, 500], from_zero=True).lo == 0  # a linear axis of amounts starts at zero


def test_log_ticks_are_round_numbers():
    assert log_ticks(0.45, 33) == [0.5, 1, 2, 5, 10, 20]
    assert log_ticks(1, 1e6) == [1, 10, 100, 1000, 1e4, 1e5, 1e6]


# --- Pareto: the recommended option is marked -----------------------------------------------------------

def test_pareto_marks_the_recommended_point(out):
    spec = pareto_spec(out)
    idx = out["rankings"]["recommended"][0]
    assert spec["recommended"] == idx
    hw = out["options"][idx]["hardware"]
    assert spec["recommended_label"] == f"recommended: {hw['gpus']} × {gpu_name(hw['gpu'])}"
    svg = render_chart(spec)
    assert svg.count("data-testid='recommended-point'") == 1 and spec["recommended_label"] in svg


def test_without_a_recommendation_the_fastest_is_marked(out):
    plain = copy.deepcopy(out)
    plain["rankings"]["recommended"] = []
    spec = pareto_spec(plain)
    assert spec["recommended"] == 0 and spec["recommended_label"].startswith("fastest: ")


def test_plan_specs_cover_memory_cost_and_pareto(out):
    specs = plan_chart_specs(out, "zh-CN")
    assert set(specs) == {"memory", "cost", "pareto"}
    assert specs["memory"]["title"].startswith("单卡显存") and specs["pareto"]["front_label"] == "帕累托前沿"
    assert plan_chart_specs({**out, "options": [], "rankings": {}}) == {}


def test_pareto_points_sit_inside_the_frame_and_gpu_doublings_are_even_steps():
    """The 70B job's options (8, 16 and 32 GPUs): no point on the frame (the first and last GPU counts drawn clear
    of the y axis and the right edge), and each doubling of the GPU count one even step (a log x axis)."""
    out = plan_job(load_job("examples/jobs/llama-3.1-70b-full-finetune.yaml"), PlanRequest(currency="CNY")).out
    svg = render_chart(pareto_spec(out, "zh-CN"))
    frame = re.search(r"<rect x='([\d.]+)' y='[\d.]+' width='([\d.]+)'", svg)
    left, width = float(frame.group(1)), float(frame.group(2))
    xs = sorted({float(x) for x in re.findall(r"<circle cx='([\d.]+)'", svg)})
    counts = sorted({o["hardware"]["gpus"] for o in out["options"]})
    assert len(counts) >= 3 and len(xs) == len(counts), (counts, xs)
    assert xs[0] - left >= 10 and left + width - xs[-1] >= 10, (left, width, xs)
    steps = [b - a for a, b in zip(xs, xs[1:], strict=False)]
    doublings = [b / a for a, b in zip(counts, counts[1:], strict=False)]
    if all(d == 2 for d in doublings):
        assert max(steps) - min(steps) < 1.0, steps
    assert "对数坐标" in svg
