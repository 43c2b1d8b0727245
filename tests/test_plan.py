"""The planner reaches the seed guide's tiers by itself; screen and reference agree; JSON contract."""

import json
import subprocess
import sys

import numpy as np
import pytest

from trainsizer.api import estimate
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_memory
from trainsizer.plan.ranking import rank_options
from trainsizer.plan.search import Constraints, _scenario_for, enumerate_layouts, plan
from trainsizer.report.message_text import text as _text
from trainsizer.scenario import scenario_from_dict


def job(preset, method="full", precision="bf16-mixed", seq=2048, gbs=64, **training):
    data = {"model": {"preset": preset},
            "training": {"method": method, "precision": precision, "micro_batch_size": 1, "seq_len": seq,
                         "global_batch_size": gbs, **training},
            "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}}
    sc = scenario_from_dict(data)
    return sc, resolve_model(sc.model)


def test_tier_8b_lora_fits_one_24gb_card():
    sc, arch = job("llama-3.1-8b", "lora", "bf16-true", gbs=16)
    result = plan(sc, arch, Constraints(("rtx-4090-24gb",), max_gpus=8))
    fewest = result.options[rank_options(result.options)["fewest_gpus"][0]]
    assert fewest.gpus == 1


def test_tier_8b_full_finetune_needs_sharding_8bit_or_offload_beyond_one_80gb_card():
    sc, arch = job("llama-3.1-8b", "full", "bf16-mixed", gbs=64)
    result = plan(sc, arch, Constraints(("h100-sxm5-80gb",), max_gpus=8))
    single = [o for o in result.options if o.gpus == 1]
    assert all(o.offload != "none" for o in single)
    assert any(o.gpus > 1 and o.offload == "none" for o in result.options)


def test_tier_70b_full_finetune_needs_8x80gb_with_full_sharding_and_more_without_offload():
    sc, arch = job("llama-3.1-70b", "full", "bf16-mixed", seq=4096, gbs=256)
    result = plan(sc, arch, Constraints(("a100-sxm4-80gb",), max_gpus=64))
    counts = [o.gpus for o in result.options]
    assert min(counts) >= 8
    at_eight = [o for o in result.options if o.gpus == 8]
    assert all(o.scenario.parallel.zero == 3 or o.offload != "none" for o in at_eight)
    no_offload = [o.gpus for o in result.options if o.offload == "none"]
    assert all(n > 8 for n in no_offload)  # (the fastest layout of a count may be an offloading one)


def test_tier_175b_pretraining_fastest_options_are_multi_node_over_infiniband():
    sc, arch = job("gpt3-175b", "full", "bf16-mixed", seq=2048, gbs=1536, tokens=3.0e11)
    result = plan(sc, arch, Constraints(("h100-sxm5-80gb", "a100-sxm4-80gb"), max_gpus=1024))
    fastest = result.options[rank_options(result.options)["fastest"][0]]
    assert fastest.nodes > 1 and fastest.inter_node.startswith("ib-")
    # at every multi-node size, InfiniBand is at least as fast as RoCE
    best: dict = {}
    for o in result.options:
        if o.nodes > 1:
            key = (o.gpu, o.gpus, o.inter_node[:2])
            best[key] = max(best.get(key, 0), o.tokens_per_s)
    for (gpu, n, net), tps in best.items():
        if net == "ib" and (gpu, n, "ro") in best:
            assert tps >= best[(gpu, n, "ro")]


def test_nothing_fits_gives_suggestions_instead_of_an_empty_list():
    sc, arch = job("llama-3.1-70b", "full", "bf16-mixed", seq=4096, gbs=8)
    result = plan(sc, arch, Constraints(("rtx-4090-24gb",), max_gpus=4))
    assert not result.options
    codes = {s.code for s in result.suggestions}
    assert codes & {"plan.relaxation_fits", "plan.nothing_fits"}


@pytest.mark.parametrize("preset,method,gpu", [("llama-3.1-8b", "full", "h100-sxm5-80gb"),
                                               ("qwen2.5-7b", "lora", "rtx-4090-24gb"),
                                               ("mixtral-8x7b", "qlora", "a100-sxm4-80gb")])
def test_vectorised_screen_agrees_with_the_reference_estimator(preset, method, gpu):
    extra = {"quantization": "nf4"} if method == "qlora" else {}
    sc, arch = job(preset, method, "bf16-true" if method != "full" else "bf16-mixed", gbs=64, **extra)
    acc = default_catalog().accelerator(gpu)
    lay = enumerate_layouts(sc, arch, acc, Constraints((gpu,), max_gpus=16), 8, 64)
    screened, _host = screen_memory(job_basis(sc, arch), lay, sc, acc)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(lay), size=min(40, len(lay)), replace=False):
        ref = estimate(_scenario_for(sc, acc, lay, int(i), "ib-ndr-400", 64), with_limits=False,
                       with_performance=False).memory.device_bytes
        # single-stage layouts hold the embedding and the output head both (the screen once left the head out)
        assert screened[i] == pytest.approx(ref, rel=0.005), (preset, int(i))


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", *args], capture_output=True, text=True,
                          timeout=300)
    return proc


def test_plan_json_contract(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("model: {preset: llama-3.1-8b}\ntraining: {method: lora, framework: llama-factory, "
                    "precision: bf16-true, "
                    "micro_batch_size: 1, seq_len: 2048, global_batch_size: 16, tokens: 1.0e+8}\n")
    proc = run_cli("plan", str(path), "--gpu", "rtx-4090-24gb", "--max-gpus", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= {"options", "suggestions"}
    times = [o["performance"]["step_time_s"] for o in data["options"]]
    assert times == sorted(times)
    first = data["options"][0]
    assert set(first["hardware"]) == {"gpu", "gpus", "gpus_per_node", "nodes", "intra_node", "inter_node"}
    assert {"tp", "pp", "cp", "zero", "dp", "virtual_pp", "offload"} <= set(first["parallel"])
    assert {"micro_batch_size", "activation_checkpointing"} <= set(first["training"])
    assert {"allocated_gib", "fits", "components_gib"} <= set(first["memory"])
    assert {"time_to_train_s", "gpu_hours", "mfu", "tokens_per_s"} <= set(first["performance"])


def test_scale_json_shows_throughput_per_count_and_link(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("model: {preset: qwen2.5-1.5b}\ntraining: {method: full, precision: bf16-mixed, "
                    "micro_batch_size: 1, seq_len: 1024, global_batch_size: 32}\n")
    proc = run_cli("scale", str(path), "--gpu", "rtx-4090-24gb", "--max-gpus", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    labels = {c["label"]["args"]["links"]: c["label"]["text"] for c in data["curves"]}  # ids in args, names in text
    assert any(links.startswith("pcie4") and text.startswith("PCI Express 4.0") for links, text in labels.items())
    pts = data["curves"][0]["points"]
    assert [p["gpus"] for p in pts] == [1, 2, 4, 8]


@pytest.mark.parametrize("args,field", [
    (["--max-gpus", "0"], "--max-gpus"), (["--deadline", "soon"], "--deadline"), (["--gpu", "h100"], "--gpu")])
def test_plan_bad_input_exits_2(tmp_path, args, field):
    path = tmp_path / "job.yaml"
    path.write_text("model: {preset: llama-3.1-8b}\ntraining: {method: lora, micro_batch_size: 1, seq_len: 512, "
                    "tokens: 1.0e+6}\n")
    proc = run_cli("plan", str(path), *args)
    assert proc.returncode == 2 and field in proc.stderr and "Traceback" not in proc.stderr


def test_plan_recommendation_carries_bom_site_fit_cost_timeline_and_verification():
    proc = run_cli("plan", "examples/jobs/llama-3.1-70b-full-finetune.yaml", "--max-gpus", "32", "--deadline",
                   "7d", "--site", "chengdu-legacy-colo", "--currency", "CNY", "--json", "--all")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["site"] == "chengdu-legacy-colo" and data["currency"] == "CNY"
    rec = data["recommendation"]
    assert rec["option"] == data["rankings"]["recommended"][0]
    if rec["acquisition"] == "quote":  # no known offer rents it by the hour: the layout to ask a quote on leads
        assert data["offer_gap"]["leads"] and not rec["site_applies"]
        assert data["options"][rec["option"]]["performance"]["time_to_train_s"] <= 7 * 86400
    pick = data["options"][rec.get("priced", rec)["option"]]  # the priced answer (beside the quote where one leads)
    if pick["site_applies"]:  # bought and hosted: the room's racks must hold it
        assert pick["system"]["site_fit"]["fits"]
        assert pick["system"]["power"]["server_max_kw"] <= 8.0  # 80 % of a 10 kW rack
    else:  # rented: the provider's data centre, never failed by the user's room
        assert pick["per_run"]["acquisition"] == "rent"
    assert pick["performance"]["time_to_train_s"] <= 7 * 86400
    if pick["availability"]["buy"]["status"] in ("yes", "unknown"):  # a buy price only where the market sells it
        assert {"capex", "opex_per_year", "total"} <= set(pick["cost"]["buy"])
    else:
        assert pick["cost"] is None and pick["per_run"]["buy_unavailable"]["code"] == "cost.not_buyable"
    assert pick["verdict"]["text"].startswith(("rent", "buy"))
    assert len(data["verification"]) == 3
    steps = [s["step"]["code"] for s in data["timeline"]["steps"]]
    if rec["site_applies"]:  # bought: the seed's steps with the vendor's delivery, and the burn-in
        assert len(steps) == 5 and "timeline.delivery" in steps
        assert data["verification"][2]["command"].startswith("trainsizer burnin")
    else:  # rented: the instance (or the quoted cluster), no server preparation or burn-in; the first hour checks it
        first = "timeline.quote_cluster" if rec["acquisition"] == "quote" else "timeline.rent_instance"
        assert steps[0] == first and "timeline.preparation" not in steps
        assert data["verification"][2]["step"]["code"] == "verify.first_hour"
    assert data["prices_used"]
    # an 8-GPU H800 SXM server (~10 kW, as the H100's) does not fit that room; the option says what to do (the
    # H100 itself is rented in China only as single servers, and 32 of them are not offered: no option)
    h800 = [o for o in data["options"] if o["hardware"]["gpu"] == "h800-sxm5-80gb"]
    assert h800 and not h800[0]["system"]["site_fit"]["fits"] and h800[0]["system"]["site_fit"]["remedies"]


def test_quotes_cli_and_bad_site(tmp_path):
    proc = run_cli("quotes", "examples/quotes.yaml", "--currency", "CNY", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["quotes"]) == 3 and all("flags" in q for q in data["quotes"])
    bad = run_cli("plan", "examples/jobs/qwen2.5-7b-lora.yaml", "--site", "chengdu-legacy")
    assert bad.returncode == 2 and "--site" in bad.stderr and "chengdu-legacy-colo" in bad.stderr
    neg = run_cli("plan", "examples/jobs/qwen2.5-7b-lora.yaml", "--budget", "-5")
    assert neg.returncode == 2 and "--budget" in neg.stderr


def en(message):
    """An engine message in English."""
    return _text(message, "en")


@pytest.mark.parametrize("vendor", ["nvidia", "amd", "huawei", "hygon"])
@pytest.mark.parametrize("acquisition", ["rent", "buy"])
def test_verification_steps_name_the_tools_of_the_gpus_vendor(vendor, acquisition):
    """trainsizer's probes read torch.cuda (and NVML for the burn-in): on an Ascend server the steps name npu-smi and
    torch_npu, never nvidia-smi or a probe that cannot see the NPUs; PyTorch's ROCm build answers torch.cuda, so the
    memory and profile probes stay on AMD GPUs while the device query is rocm-smi."""
    from trainsizer.workflows.next_steps import device_tools, verification_steps

    steps = verification_steps("job.yaml", acquisition, vendor)
    commands = " ".join(s["command"] for s in steps)
    tools = device_tools(vendor)
    assert len(steps) == 3 and all(s["command"] for s in steps[:2])
    assert steps[2]["command"] or (tools is None and acquisition == "buy")  # no device tool known to name
    probes = tools.probes if tools else {"memory", "profile"}
    assert ("trainsizer probe memory" in commands) == ("memory" in probes)
    assert ("trainsizer burnin" in commands) == (acquisition == "buy" and "burnin" in probes)
    if tools is not None and vendor != "nvidia":
        assert "nvidia-smi" not in commands and tools.device_query in commands
