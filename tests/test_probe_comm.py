"""trainsizer probe comm: bus-bandwidth math, a real 2-process gloo run through the launcher, the link profile that
estimate/plan read through --catalog, and the CLI's one-line errors. CPU only; timings never decide pass/fail."""

from __future__ import annotations

import json
import subprocess
import sys
from statistics import median

import pytest

pytest.importorskip("torch")

import typer  # noqa: E402
import yaml  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from trainsizer.errors import InputError  # noqa: E402
from trainsizer.estimate.comm import fabric  # noqa: E402
from trainsizer.estimate.step import default_performance_model  # noqa: E402
from trainsizer.hardware.catalog import load_catalog  # noqa: E402
from trainsizer.probe.comm import measure as probe  # noqa: E402
from trainsizer.probe.comm.cli import comm_command  # noqa: E402
from trainsizer.probe.comm.link_profile import link_profile, write_link_profile  # noqa: E402
from trainsizer.probe.common.gpu_match import intra_link_for_device  # noqa: E402

TINY = ["--backend", "gloo", "--nproc", "2", "--min-size", "1K", "--max-size", "64K", "--iters", "3", "--warmup", "1",
        "--timeout", "120"]
TINY_SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10]
GPU = "h100-sxm5-80gb"


def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("comm")(comm_command)
    return app


# --- pure functions ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 4, 8, 16])
def test_busbw_factors_are_the_nccl_tests_performance_md_ones(n):
    assert probe.busbw_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    assert probe.busbw_factor("all_gather", n) == pytest.approx((n - 1) / n)
    assert probe.busbw_factor("reduce_scatter", n) == pytest.approx((n - 1) / n)


def test_busbw_factor_and_algbw_edge_cases():
    assert probe.busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert probe.algbw_gbps(2_000_000_000, 1.0) == pytest.approx(2.0)  # GB/s are 1e9 bytes, as nccl-tests
    assert probe.algbw_gbps(1024, 0.0) == 0.0
    with pytest.raises(InputError) as err:
        probe.busbw_factor("broadcast", 2)
    assert err.value.field == "--ops"


def test_sizes_follow_nccl_tests_conventions():
    assert [probe.parse_size(s, "--max-size") for s in ("512", "1K", "64M", "1G", "1.5MiB", "2kb", 4096)] == \
        [512, 1024, 64 << 20, 1 << 30, 3 << 19, 2048, 4096]
    gpu_sizes = probe.message_sizes(1 << 10, 1 << 30, 4)
    assert gpu_sizes[:3] == [1024, 4096, 16384] and gpu_sizes[-1] == 1 << 30 and len(gpu_sizes) == 11
    assert probe.message_sizes(1 << 10, 32 << 10, 4) == [1024, 4096, 16384, 32768]  # the asked maximum is kept
    # all-gather / reduce-scatter "size" is the full buffer = per-rank chunk x n: a multiple of n elements
    assert probe.element_count("all_gather", 1000, 4, 3) == 249 and probe.element_count("all_reduce", 1000, 4, 3) == 250
    assert probe.element_count("reduce_scatter", 4, 4, 8) == 8  # never below one element per rank
    for bad in ("1Q", "0", "-1", "1 PB", "128G"):
        with pytest.raises(InputError) as err:
            probe.parse_size(bad, "--max-size")
        assert err.value.field == "--max-size"


def test_settings_validate_options_and_take_backend_defaults():
    cpu = probe.resolve_settings(cuda_available=False)
    assert (cpu.backend, cpu.dtype, cpu.ops) == ("gloo", "fp32", probe.OPS)
    assert (cpu.min_size_bytes, cpu.max_size_bytes, cpu.iters, cpu.warmup) == (1 << 10, 1 << 20, 5, 2)
    gpu = probe.resolve_settings(cuda_available=True, ops="all-reduce, reduce_scatter")
    assert (gpu.backend, gpu.dtype, gpu.ops) == ("nccl", "bf16", ("all_reduce", "reduce_scatter"))
    assert (gpu.max_size_bytes, gpu.iters, gpu.warmup) == (1 << 30, 20, 5)
    assert probe.resolve_settings(backend="gloo", min_size="4M").max_size_bytes == 4 << 20
    cases = [({"ops": "all_reduce,bcast"}, "--ops"), ({"ops": ""}, "--ops"), ({"backend": "mpi"}, "--backend"),
             ({"backend": "nccl", "cuda_available": False}, "--backend"), ({"min_size": "1M", "max_size": "1K"},
                                                                           "--max-size"),
             ({"factor": 1}, "--factor"), ({"iters": 0}, "--iters"), ({"warmup": -1}, "--warmup")]
    for kwargs, field in cases:
        with pytest.raises(InputError) as err:
            probe.resolve_settings(**{"backend": "gloo", **kwargs})
        assert err.value.field == field, kwargs


@pytest.mark.parametrize(("device", "link"), [
    ("NVIDIA H100 80GB HBM3", "nvlink4"), ("NVIDIA H100 PCIe", "pcie5"), ("NVIDIA A100-SXM4-80GB", "nvlink3"),
    ("NVIDIA A100-PCIE-40GB", "pcie4"), ("NVIDIA GeForce RTX 4090", "pcie4"), ("NVIDIA H200", "nvlink4"),
    ("NVIDIA L40S", "pcie4"), ("Tesla V100-SXM2-32GB", "nvlink2"), ("AMD Instinct MI300X", "xgmi"),
    ("Some Unknown Accelerator", None)])
def test_link_id_is_guessed_from_the_cuda_device_name(device, link):
    assert intra_link_for_device(device, load_catalog()) == link


# --- a real 2-process gloo run through the CLI and the launcher --------------------------------------------------

@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("comm")
    out, profile = tmp / "result.json", tmp / "pcie4.yaml"
    res = CliRunner().invoke(_app(), [*TINY, "--out", str(out), "--link-profile", str(profile), "--link-id", "pcie4",
                                      "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), out, profile, res


def test_real_gloo_run_has_every_op_and_size_with_nccl_tests_bandwidths(real_run):
    data, out, _, _ = real_run
    env = data["environment"]
    assert (env["backend"], env["world_size"], env["nodes"], env["local_world_size"], env["dtype"]) == \
        ("gloo", 2, 1, 2, "fp32")
    assert env["device_names"] == ["cpu"] and env["nccl_version"] is None and env["date"]
    assert set(data["ops"]) == set(probe.OPS) and not data["notes"]
    for op, rows in data["ops"].items():
        assert [r["size_bytes"] for r in rows] == TINY_SIZES, op
        for r in rows:
            assert r["time_us"] > 0 and r["algbw_gbps"] > 0 and r["busbw_gbps"] > 0
            assert r["count"] * 4 == r["size_bytes"]
            assert r["algbw_gbps"] == pytest.approx(r["size_bytes"] / (r["time_us"] * 1e-6) / 1e9)
            assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * probe.busbw_factor(op, 2))
        summary = data["summary"][op]
        assert summary["peak_busbw_gbps"] == max(r["busbw_gbps"] for r in rows)
        assert summary["largest_size_bytes"] == TINY_SIZES[-1]
        assert summary["busbw_at_largest_gbps"] == rows[-1]["busbw_gbps"]
    assert json.loads(out.read_text()) == data  # --out holds what --json printed
    assert probe.load_result(out).to_dict() == data  # and round-trips


def test_profile_from_the_run_loads_as_a_catalog_and_sets_intra_busbw(real_run):
    data, _, profile, res = real_run
    assert "--catalog" in res.output and str(profile) in res.output  # the how-to-use line
    written = yaml.safe_load(profile.read_text())
    entry = written["links"][0]
    # a gloo run on CPUs: marked so, never preferred; passed explicitly with --catalog it replaces the shipped figures
    assert entry["id"] == "pcie4" and entry["prefer_measured"] is False and entry["scope"] == "pcie"
    assert (written["backend"], written["measured_on"]) == ("gloo", "cpu") and "shipped pcie4" in written["replaces"]
    assert "not a GPU link figure" in profile.read_text() and "replaces the shipped pcie4" in res.output
    assert entry["source"].startswith("trainsizer probe comm on ")
    assert entry["as_of"] == data["environment"]["date"][:10]
    assert "world size 2" in entry["notes"] and "1 node(s)" in entry["notes"]
    largest = [r["busbw_gbps"] for r in data["ops"]["all_reduce"]][-probe.PROFILE_SIZES:]
    assert [m["busbw_gbps"] for m in entry["measured_allreduce_busbw_gbps"]] == pytest.approx(largest, rel=1e-3)

    params = default_performance_model()
    catalog = load_catalog([profile])
    gpu = catalog.accelerator(GPU)
    measured = fabric(catalog, gpu, "pcie4", None, None, 8, params)
    shipped = fabric(load_catalog(), gpu, "pcie4", None, None, 8, params)
    assert measured.intra_busbw_gbps == pytest.approx(median(largest), rel=1e-3)  # the median rule of _achievable
    assert measured.intra_busbw_gbps != pytest.approx(shipped.intra_busbw_gbps)


def test_saved_result_is_shown_and_profiled_without_running(real_run, tmp_path):
    _, out, _, _ = real_run
    profile = tmp_path / "again.yaml"
    res = CliRunner().invoke(_app(), ["--from-json", str(out), "--link-profile", str(profile), "--link-id", "pcie4"])
    assert res.exit_code == 0, res.output
    for text in ("all_reduce", "all_gather", "reduce_scatter", "busbw (GB/s)", "Summary", "--catalog"):
        assert text in res.stdout
    assert yaml.safe_load(profile.read_text())["links"][0]["prefer_measured"] is False  # gloo: never preferred
    res = CliRunner().invoke(_app(), ["--from-json", str(out), "--link-profile", str(profile), "--link-id", "pcie4"])
    assert isinstance(res.exception, InputError) and res.exception.field == "--link-profile"  # no silent overwrite


# --- scale-out profiles and the shipped catalog ------------------------------------------------------------------

def _two_node_result(busbw_gbps: list[float]) -> probe.CommProbeResult:
    env = probe.CommEnvironment(backend="nccl", world_size=16, nodes=2, local_world_size=8, dtype="bf16",
                                device_names=["NVIDIA H100 80GB HBM3"], torch_version="2.13.0", nccl_version="2.27.3",
                                hostname="node0", hostnames=["node0", "node1"], date="2026-12-01T10:00:00+00:00",
                                nccl_env={"NCCL_ALGO": "Ring"})
    sizes = [1 << 20 << (2 * i) for i in range(len(busbw_gbps))]
    rows = [probe.CommRow(s, s // 2, 100.0, bw / probe.busbw_factor("all_reduce", 16), bw)
            for s, bw in zip(sizes, busbw_gbps, strict=True)]
    return probe.CommProbeResult(env, {"all_reduce": rows}, iters=20, warmup=5)


def test_scale_out_profile_is_per_nic_and_wins_over_the_line_rate_fraction(tmp_path):
    result = _two_node_result([50.0, 300.0, 320.0, 340.0])  # node-level busbw; 50 is a small size, not recorded
    profile = link_profile(result, load_catalog(), "ib-ndr-400", nics_per_node=8)
    entry = profile["links"][0]
    assert [m["busbw_gbps"] for m in entry["measured_allreduce_busbw_gbps"]] == [37.5, 40.0, 42.5]
    assert "per NIC" in entry["measured_allreduce_busbw_gbps"][0]["setup"] and "--nics-per-node 8" in entry["notes"]
    path = tmp_path / "ib.yaml"
    write_link_profile(profile, path)

    params = default_performance_model()
    catalog = load_catalog([path])
    gpu = catalog.accelerator(GPU)
    measured = fabric(catalog, gpu, None, "ib-ndr-400", 8, 8, params, total_gpus=16)
    shipped = fabric(load_catalog(), gpu, None, "ib-ndr-400", 8, 8, params, total_gpus=16)
    assert measured.inter_busbw_gbps == pytest.approx(320.0)  # median per NIC x 8 NICs = the measured node figure
    # the shipped NIC entries keep the line-rate fraction: their published measurements stay context only
    assert shipped.inter_busbw_gbps == pytest.approx(50 * params.communication.busbw_fraction["ib"] * 8)
    assert load_catalog().link("ib-ndr-400").prefer_measured is False


def test_profile_refuses_a_link_that_does_not_fit_the_run():
    catalog = load_catalog()
    two_nodes = _two_node_result([300.0, 320.0])
    one_node = probe.CommProbeResult(
        probe.CommEnvironment("nccl", 8, 1, 8, "bf16", ["NVIDIA H100 80GB HBM3"], "2.13.0", "2.27.3", "n0", ["n0"],
                              "2026-12-01T10:00:00+00:00"), two_nodes.ops, 20, 5)
    assert link_profile(one_node, catalog)["links"][0]["id"] == "nvlink4"  # from the device name
    cases = [(two_nodes, "ib-ndr-400", None, "--nics-per-node"), (two_nodes, None, 8, "--link-id"),
             (two_nodes, "nvlink4", None, "--link-id"), (one_node, "ib-ndr-400", 8, "--link-id"),
             (one_node, "nvlink4", 8, "--nics-per-node"), (one_node, "nvlink9", None, "--link-id")]
    for result, link_id, nics, field in cases:
        with pytest.raises(InputError) as err:
            link_profile(result, catalog, link_id, nics)
        assert err.value.field == field, (link_id, nics)
    no_all_reduce = probe.CommProbeResult(one_node.environment, {"all_gather": two_nodes.ops["all_reduce"]}, 20, 5)
    with pytest.raises(InputError) as err:
        link_profile(no_all_reduce, catalog, "nvlink4")
    assert err.value.field == "--link-profile"


# --- an op the backend lacks is skipped with a note --------------------------------------------------------------

def test_unsupported_collective_is_skipped_with_a_note(monkeypatch):
    import torch.distributed as dist

    def unsupported(*args, **kwargs):
        raise RuntimeError("ProcessGroupGloo does not support reduce_scatter")

    monkeypatch.setattr(dist, "reduce_scatter_single", unsupported, raising=False)
    monkeypatch.setattr(dist, "reduce_scatter_tensor", unsupported)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        settings = probe.resolve_settings(backend="gloo", max_size="4K", iters=1, warmup=0)
        result = probe.run_worker(settings)
    finally:
        dist.destroy_process_group()
    assert list(result.ops) == ["all_reduce", "all_gather"]
    assert any(n.startswith("reduce_scatter skipped") and "does not support" in n for n in result.notes)
    assert all(r.busbw_gbps == 0 for r in result.ops["all_reduce"])  # one rank: nothing crosses a link


# --- CLI errors: one line, exit 2 --------------------------------------------------------------------------------

_ENTRY = ("import sys, typer\n"
          "from trainsizer.errors import InputError\n"
          "from trainsizer.probe.comm.cli import comm_command\n"
          "app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)\n"
          "app.command('comm')(comm_command)\n"
          "try:\n    app(sys.argv[1:], standalone_mode=False)\n"
          "except InputError as exc:\n    print(f'error: {exc}', file=sys.stderr); sys.exit(2)\n")


@pytest.mark.parametrize(("args", "expected"), ids=["ops", "max-size", "existing-out"], argvalues=[
    (["--ops", "all_reduce,broadcast"], "error: --ops: unknown collective 'broadcast'; accepted: all_reduce, "
                                        "all_gather, reduce_scatter (comma separated)"),
    (["--max-size", "12X"], "error: --max-size: '12X' is not a size; use bytes or a number with K, M, G (binary: "
                            "1K = 1024), e.g. 1K, 64M, 1G"),
    (["--out", "{existing}"], "error: --out: {existing} already exists; pass --overwrite to replace it"),
])
def test_cli_bad_options_print_one_line_and_exit_2(tmp_path, args, expected):
    existing = tmp_path / "result.json"
    existing.write_text("{}")
    args = [a.format(existing=existing) for a in args]
    proc = subprocess.run([sys.executable, "-c", _ENTRY, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip() == expected.format(existing=existing), proc.stderr
    assert existing.read_text() == "{}"


def test_a_slow_measured_link_slows_the_estimate_and_the_plan_uses_it(tmp_path):
    """A link profile measured at 20 GB/s where the catalog says ~370 GB/s for NVLink 4: `estimate --catalog`
    gives a slower step for an 8-GPU FSDP job, as `plan` does through the same fabric()."""
    from trainsizer.api import estimate

    link = load_catalog().link("nvlink4").model_dump()
    link.update(measured_allreduce_busbw_gbps=[{"setup": "test", "busbw_gbps": 20.0, "source": "test"}],
                prefer_measured=True)
    path = tmp_path / "links.yaml"
    path.write_text(yaml.safe_dump({"links": [link]}))
    job = {"model": {"preset": "llama-3.1-8b"},
           "training": {"method": "full", "micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64},
           "parallel": {"gpus": 8, "zero": 3}, "hardware": {"gpu": GPU, "intra_node": "nvlink4"}}
    shipped = estimate(job).performance
    measured = estimate(job, catalog=load_catalog([path])).performance
    assert measured.step_time_s > 2 * shipped.step_time_s and measured.mfu < shipped.mfu
