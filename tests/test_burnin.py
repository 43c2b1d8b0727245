"""trainsizer burnin: fake-backend runs, the verdict, the database (crash + resume), the CLI and the exporter.

CPU only: the fake backend simulates GPUs and its load is a sleeper, so neither torch nor a GPU is needed.
"""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import types
import urllib.request

import pytest
from conftest import REPO
from typer.testing import CliRunner

from trainsizer.errors import InputError
from trainsizer.probe.burnin import report, run_burnin
from trainsizer.probe.burnin.backend import REASON_BITS, THROTTLE_REASONS, decode_reasons
from trainsizer.probe.burnin.cli import burnin_app
from trainsizer.probe.burnin.fake import FakeBackend, FakeConfig, FakeEvent
from trainsizer.probe.burnin.run import parse_duration
from trainsizer.probe.burnin.verdict import thresholds
from trainsizer.probe.burnin.xid import KernelLogXids, bus_key, parse_xid_line


def _fake(tmp_path, name="run.db", **kw):
    kw.setdefault("interval", 0.1)
    kw.setdefault("duration", "1s")
    return run_burnin(backend="fake", db=tmp_path / name, quiet=True, **kw)


def _rules(verdict):
    return {(r.rule, r.gpu): r for r in verdict.reasons}


# --- parsing and data --------------------------------------------------------------------------------------

def test_durations():
    assert parse_duration("2m") == 120
    assert parse_duration("72h") == 72 * 3600
    assert parse_duration("3d") == 3 * 86400
    assert parse_duration("1h30m") == 5400
    assert parse_duration("90") == 90
    assert parse_duration(2.5) == 2.5
    for bad in ("", "3x", "-2m", "0s", "2m30", "m"):
        with pytest.raises(InputError) as exc:
            parse_duration(bad)
        assert exc.value.field == "--duration" and "72h" in str(exc.value)


def test_throttle_reasons_decode_and_match_nvml():
    assert decode_reasons(0) == []
    assert decode_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_reasons(0x1000) == ["bit_0x1000"]
    pynvml = pytest.importorskip("pynvml")
    for bit, (name, _) in THROTTLE_REASONS.items():
        camel = "".join(part.capitalize() for part in name.split("_"))  # hw_thermal_slowdown -> HwThermalSlowdown
        value = getattr(pynvml, f"nvmlClocksEventReason{camel}", None)
        if value is None:  # nvidia-ml-py before the rename
            value = getattr(pynvml, f"nvmlClocksThrottleReason{camel}")
        assert value == bit, name


def test_thresholds_have_sources():
    data = thresholds()
    for rule, entry in data["rules"].items():
        assert entry["level"] in ("WARN", "FAIL"), rule
        assert len(entry["source"]) > 20, rule
    assert {48, 63, 64, 79, 94, 95} <= set(data["rules"]["xid_critical"]["codes"])
    for vendor, entry in data["slowdown_default_c"].items():
        assert entry["value"] > 0 and entry["source"], vendor


def test_kernel_log_reader(tmp_path):
    assert bus_key("00000000:10:1C.0") == bus_key("0000:10:1c") == "10:1c"
    assert parse_xid_line("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper") == ("10:1c", 63)
    assert parse_xid_line("NVRM: Xid (0000:01:00): 79, GPU has fallen off the bus.") == ("01:00", 79)
    assert parse_xid_line("usb 1-1: new device") is None
    log = tmp_path / "kmsg"
    log.write_text("6,1,1,-;NVRM: Xid (PCI:0000:10:1c): 48, old line before the run\n")
    reader = KernelLogXids({"10:1c": 3}, path=str(log), use_dmesg=False)
    assert reader.source == "kmsg" and reader.poll(0.0) == []
    with log.open("a") as f:
        f.write("4,2,2,-;NVRM: Xid (PCI:0000:10:1c): 79, GPU has fallen off the bus.\n4,3,3,-;other\n")
    (ev,) = reader.poll(1.0)
    assert (ev.gpu, ev.code, ev.source) == (3, 79, "kmsg")
    reader.close()
    unreadable = KernelLogXids({}, path=str(tmp_path / "missing"), use_dmesg=False)
    assert unreadable.source == "" and "not readable" in unreadable.note and unreadable.poll(0.0) == []


# --- runs and verdicts -------------------------------------------------------------------------------------

def test_fake_run_writes_every_sample_and_is_stable(tmp_path):
    verdict = _fake(tmp_path, duration="2s", interval=0.2, fake_gpus=3)
    db = tmp_path / "run.db"
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    counts = dict(conn.execute("SELECT gpu, COUNT(*) FROM samples GROUP BY gpu").fetchall())
    assert counts == {0: 10, 1: 10, 2: 10}
    status, started, duration = conn.execute("SELECT status, started_at, duration_s FROM runs").fetchone()
    assert status == "completed" and duration == 2.0 and started <= time.time()
    elapsed = [r[0] for r in conn.execute("SELECT elapsed FROM samples WHERE gpu = 0 ORDER BY elapsed")]
    assert elapsed[0] < 0.1 and 1.7 < elapsed[-1] < 2.0
    conn.close()
    assert verdict.status == "STABLE", verdict.reasons
    g = verdict.gpus[0]
    assert g.samples == 10 and g.headroom_c > 40 and g.power_mean_w > 500 and g.tflops_first > 600
    assert g.drift_percent is not None and abs(g.drift_percent) < 5


def test_verdict_fails_on_injected_ecc_and_xid(tmp_path):
    verdict = _fake(tmp_path, fake_events=["ecc@0.5s:gpu=1", "xid79@0.4s:gpu=0", "xid13@0.2s:gpu=1"])
    assert verdict.status == "FAIL"
    rules = _rules(verdict)
    assert rules[("xid_critical", 0)].level == "FAIL" and "XID 79" in rules[("xid_critical", 0)].message
    assert rules[("ecc_uncorrected_new", 1)].level == "FAIL"
    assert rules[("xid_other", 1)].level == "WARN"  # XID 13 is usually the application's
    assert rules[("remap_pending", 1)].level == "WARN"
    assert ("xid_critical", 1) not in rules and ("ecc_uncorrected_new", 0) not in rules
    assert verdict.gpus[0].xids == [79] and verdict.gpus[1].ecc_uncorrected_new == 1
    assert verdict.reasons[0].level == "FAIL" and "NVIDIA XID catalogue" in rules[("xid_critical", 0)].source


def test_verdict_warns_on_a_throttle_episode(tmp_path):
    verdict = _fake(tmp_path, duration="1.5s", fake_events=["throttle@1.1s-1.5s:gpu=0:reason=hw_thermal_slowdown"])
    assert verdict.status == "WARN"
    rules = _rules(verdict)
    assert all(r.level == "WARN" for r in verdict.reasons)
    assert "HW thermal slowdown" in rules[("throttle", 0)].message
    assert rules[("thermal_headroom", 0)].level == "WARN"  # the simulated GPU sits at its slowdown threshold
    assert rules[("throughput_drift", 0)].level == "WARN"  # half the TFLOPS at the end
    assert verdict.gpus[0].throttled_percent > 5 and verdict.gpus[1].throttled_percent == 0
    assert not any(r.gpu == 1 for r in verdict.reasons)


def test_report_rebuilds_the_same_verdict(tmp_path):
    verdict = _fake(tmp_path, fake_events=["ecc@0.3s", "throttle@0.2s-0.6s:gpu=1"])
    again = report(tmp_path / "run.db")
    assert again.to_dict() == verdict.to_dict()
    assert again.status == "FAIL"


def test_user_mistakes_name_the_option(tmp_path):
    cases = [
        (dict(backend="gpu"), "--backend"), (dict(interval=0), "--interval"), (dict(duration="3x"), "--duration"),
        (dict(metrics_port=70000), "--metrics-port"),
        (dict(metrics_port=9400, metrics_host="my host"), "--metrics-host"),
        (dict(fake_events=["boom@1s"]), "--fake-event"), (dict(fake_events=["throttle@1s"]), "--fake-event"),
        (dict(fake_events=["xid79@1s:gpu=7"]), "--fake-event"), (dict(fake_gpus=0), "--fake-gpus"),
    ]
    for kwargs, field in cases:
        kwargs = {"backend": "fake", "duration": "0.2s", **kwargs}
        with pytest.raises(InputError) as exc:
            run_burnin(db=tmp_path / "x.db", quiet=True, **kwargs)
        assert exc.value.field == field, (kwargs, exc.value)
        assert not (tmp_path / "x.db").exists()
    with pytest.raises(InputError, match="RUN.db: no such file"):
        report(tmp_path / "missing.db")
    with pytest.raises(InputError, match="--resume"):
        run_burnin(resume=tmp_path / "missing.db")
    (tmp_path / "junk.db").write_text("not sqlite")
    with pytest.raises(InputError, match="not a burn-in database"):
        report(tmp_path / "junk.db")
    _fake(tmp_path, duration="0.2s")
    with pytest.raises(InputError, match="--db.*exists"):
        _fake(tmp_path, duration="0.2s")
    with pytest.raises(InputError, match="--resume.*already"):
        run_burnin(resume=tmp_path / "run.db", quiet=True)


def test_auto_backend_without_a_gpu_says_so(tmp_path):
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA GPU")
    except Exception:
        pass
    with pytest.raises(InputError) as exc:
        run_burnin(backend="auto", db=tmp_path / "a.db", quiet=True)
    assert exc.value.field == "--backend" and "no GPU found" in str(exc.value) and "--backend fake" in str(exc.value)
    assert not (tmp_path / "a.db").exists()


# --- crash and resume --------------------------------------------------------------------------------------

def _samples(db):
    try:
        conn = sqlite3.connect(db, timeout=5)
        try:
            return conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def test_kill_9_loses_at_most_the_last_second_and_resume_continues(tmp_path):
    db = tmp_path / "crash.db"
    code = (f"from trainsizer.probe.burnin import run_burnin; run_burnin(duration='30s', interval=0.1, "
            f"backend='fake', db={str(db)!r}, quiet=True)")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.time() + 30
        while not (db.exists() and _samples(db) >= 5):
            assert proc.poll() is None, "the burn-in exited early"
            assert time.time() < deadline, "no samples after 30 s"
            time.sleep(0.05)
        time.sleep(2.0)
        kill_time = time.time()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    conn = sqlite3.connect(db)
    run_id, started, status = conn.execute("SELECT id, started_at, status FROM runs").fetchone()
    last_t, last_elapsed, n_before = conn.execute("SELECT MAX(t), MAX(elapsed), COUNT(*) FROM samples").fetchone()
    conn.close()
    assert status == "running"  # no clean end was written
    print(f"last sample {kill_time - last_t:.3f} s before the kill")
    assert kill_time - last_t <= 1.0, f"lost {kill_time - last_t:.2f} s of samples"
    assert n_before >= 2 * 20

    interrupted = report(db)
    assert ("run_incomplete", None) in _rules(interrupted)

    # continue where the samples stop (the next round is at last + interval), for 1 s more
    verdict = run_burnin(resume=db, duration=last_elapsed + 0.1 + 1.0, quiet=True)
    conn = sqlite3.connect(db)
    runs = conn.execute("SELECT id, started_at, status, duration_s FROM runs").fetchall()
    n_after = conn.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (run_id,)).fetchone()[0]
    segments = conn.execute("SELECT segment, start_elapsed FROM segments ORDER BY segment").fetchall()
    resumed_first = conn.execute("SELECT MIN(elapsed) FROM samples WHERE segment = 1").fetchone()[0]
    conn.close()
    assert runs == [(run_id, started, "completed", pytest.approx(last_elapsed + 1.1))]
    assert n_after - n_before == 2 * 10  # 1 s more at 0.1 s on 2 simulated GPUs
    assert [s for s, _ in segments] == [0, 1] and resumed_first >= last_elapsed
    assert verdict.run["segments"] == 2 and verdict.status == "STABLE", verdict.reasons
    assert any("resumed" in n for n in verdict.notes)


# --- CLI ---------------------------------------------------------------------------------------------------

def test_cli_run_json_report_and_command_load(tmp_path):
    runner = CliRunner()
    db = tmp_path / "cli.db"
    res = runner.invoke(burnin_app, ["--backend", "fake", "--duration", "0.5s", "--interval", "0.1", "--db", str(db),
                                     "--fake-event", "xid48@0.2s", "--quiet", "--json"])
    assert res.exit_code == 1, res.output  # FAIL
    out = json.loads(res.stdout)
    assert out["verdict"] == "FAIL" and out["reasons"][0]["rule"] == "xid_critical"
    assert out["gpus"][0]["samples"] == 5 and out["run"]["db"] == str(db)
    res = runner.invoke(burnin_app, ["report", str(db), "--json"])
    assert res.exit_code == 1 and json.loads(res.stdout)["reasons"] == out["reasons"]
    res = runner.invoke(burnin_app, ["report", str(db)])
    assert "Verdict: FAIL" in res.stdout and "XID 48" in res.stdout

    # the load after -- is the user's command; it is stopped at the end and not counted as a failure
    db2 = tmp_path / "cmd.db"
    res = runner.invoke(burnin_app, ["--backend", "fake", "--duration", "0.5s", "--interval", "0.1", "--db", str(db2),
                                     "--quiet", "--json", "--", sys.executable, "-c", "import time; time.sleep(30)"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["verdict"] == "STABLE" and out["run"]["load"] == "command"
    assert out["run"]["config"]["command"] == [sys.executable, "-c", "import time; time.sleep(30)"]

    db3 = tmp_path / "fail.db"
    res = runner.invoke(burnin_app, ["--backend", "fake", "--duration", "2s", "--interval", "0.1", "--db", str(db3),
                                     "--quiet", "--json", "--", sys.executable, "-c", "raise SystemExit(3)"])
    out = json.loads(res.stdout)
    assert res.exit_code == 1 and out["run"]["status"] == "load-failed" and out["run"]["load_exit_code"] == 3
    assert {r["rule"] for r in out["reasons"]} == {"load_failed", "run_incomplete"}

    res = runner.invoke(burnin_app, ["--backend", "quantum"])
    assert isinstance(res.exception, InputError) and res.exception.field == "--backend"


def test_cli_subprocess_prints_one_line_and_exits_2(tmp_path):
    """The real entry point (once cli.py mounts the sub-app) must keep the one-line error contract."""
    code = ("import sys, typer\n"
            "from trainsizer.errors import InputError\n"
            "from trainsizer.probe.burnin.cli import burnin_app\n"
            "try:\n    burnin_app(sys.argv[1:], standalone_mode=False)\n"
            "except InputError as exc:\n    print(f'error: {exc}', file=sys.stderr); sys.exit(2)\n")
    proc = subprocess.run([sys.executable, "-c", code, "report", str(tmp_path / "none.db")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: RUN.db: no such file: {tmp_path / 'none.db'}"


# --- Prometheus exporter -----------------------------------------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_exporter_serves_metrics_on_localhost(tmp_path):
    pytest.importorskip("prometheus_client")
    port = _free_port()
    scraped = {}

    def on_sample(info):
        if info["round"] == 3:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                scraped["text"] = resp.read().decode()

    _fake(tmp_path, duration="0.6s", metrics_port=port, fake_events=["xid79@0.1s:gpu=1"], on_sample=on_sample)
    text = scraped["text"]
    for name in ("temperature_celsius", "power_watts", "sm_clock_mhz", "memory_clock_mhz", "throttle_reasons_mask",
                 "throttle_active", "ecc_errors", "remapped_rows", "pcie_replays", "xid_errors", "throughput_tflops",
                 "utilization_gpu_percent", "elapsed_seconds"):
        assert f"trainsizer_burnin_{name}" in text, name
    assert 'trainsizer_burnin_xid_errors{gpu="1"' in text
    xid_line = next(ln for ln in text.splitlines() if ln.startswith('trainsizer_burnin_xid_errors{gpu="1"'))
    assert xid_line.endswith(" 1.0")
    with pytest.raises(OSError):  # the server is closed with the run
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_exporter_binds_localhost_and_reports_a_busy_port(tmp_path):
    pytest.importorskip("prometheus_client")
    from trainsizer.probe.burnin.exporter import Exporter

    gpus = FakeBackend(FakeConfig(gpus=1)).devices()
    port = _free_port()
    exp = Exporter(port, gpus)
    try:
        assert exp._server.server_address[0] == "127.0.0.1"
        with pytest.raises(InputError) as exc:
            Exporter(port, gpus)
        assert exc.value.field == "--metrics-port" and "another port" in str(exc.value)
    finally:
        exp.close()


def test_fake_config_round_trips_for_resume():
    cfg = FakeConfig(gpus=3, seed=7, events=[FakeEvent("xid", 1.0, gpu=2, code=79)])
    assert FakeConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert REASON_BITS["hw_thermal_slowdown"] == 0x40


# --- the real backends' code paths, against stand-ins for pynvml and torch ---------------------------------

class _NVMLError(Exception):
    def __init__(self, value=3):
        self.value = value
        super().__init__(f"NVML error {value}")


def _fake_pynvml(xid_queue):
    nv = types.ModuleType("pynvml")
    nv.NVMLError = _NVMLError
    consts = dict(NVML_TEMPERATURE_GPU=0, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN=1, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
                  NVML_MEMORY_ERROR_TYPE_CORRECTED=0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1, NVML_VOLATILE_ECC=0,
                  NVML_AGGREGATE_ECC=1, nvmlEventTypeXidCriticalError=8, NVML_ERROR_TIMEOUT=10)
    vars(nv).update(consts)

    def unsupported(*_):
        raise _NVMLError(3)

    def wait(es, timeout_ms):
        if not xid_queue:
            raise _NVMLError(10)
        gpu, code = xid_queue.pop(0)
        return types.SimpleNamespace(eventType=8, eventData=code, device=f"h{gpu}")

    vars(nv).update(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}", nvmlDeviceGetIndex=lambda h: int(h[1:]),
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3", nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=f"00000000:{int(h[1:]) + 0x18:02X}:00.0".encode()),
        nvmlDeviceGetTemperatureThreshold=lambda h, kind: 87 if h == "h0" else unsupported(),
        nvmlEventSetCreate=lambda: "es", nvmlDeviceRegisterEvents=lambda h, mask, es: None,
        nvmlEventSetWait_v2=wait, nvmlEventSetFree=lambda es: None,
        nvmlDeviceGetCurrentClocksEventReasons=unsupported,  # an old driver: only the pre-rename call works
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x4,
        nvmlDeviceGetTemperature=lambda h, sensor: 61, nvmlDeviceGetPowerUsage=lambda h: 612_500,
        nvmlDeviceGetClockInfo=lambda h, clock: 1980 if clock == 1 else 2619,
        nvmlDeviceGetTotalEccErrors=lambda h, kind, counter: 0, nvmlDeviceGetRemappedRows=lambda h: [0, 0, 0, 0],
        nvmlDeviceGetPcieReplayCounter=unsupported,
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=100, memory=57))
    return nv


def _fake_torch():
    class Tensor:
        def copy_(self, other):
            return self

    torch = types.ModuleType("torch")
    torch.bfloat16 = "bfloat16"
    torch.device = lambda kind, index: (kind, index)
    torch.randn = torch.empty = lambda *a, **k: Tensor()
    torch.empty_like = lambda t: Tensor()
    torch.mm = lambda a, b, out=None: out
    torch.cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 2, set_device=lambda d: None,
                                       synchronize=lambda d=None: time.sleep(0.002))
    return torch


def test_nvml_backend_and_torch_load_code_paths(tmp_path, monkeypatch):
    xids = [(1, 79)]
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(xids))
    monkeypatch.setitem(sys.modules, "torch", _fake_torch())
    verdict = run_burnin(backend="auto", duration="0.6s", interval=0.1, db=tmp_path / "nv.db", quiet=True,
                         kernel_log=False, matmul_size=256, copy_mib=1)
    assert verdict.run["backend"] == "nvml" and verdict.run["load"] == "torch"
    g0, g1 = verdict.gpus
    assert g0.name == "NVIDIA H100 80GB HBM3" and g0.samples == 6 and g0.power_mean_w == 612.5
    assert g0.slowdown_c == 87 and "NVML" in g0.slowdown_source and g0.headroom_c == 26
    assert g1.slowdown_c == 89 and "thresholds.yaml" in g1.slowdown_source  # the documented default
    assert g0.throttle_percent_by_reason == {"sw_power_cap": 100.0} and g0.throttled_percent == 0
    assert g0.pcie_replays_new is None  # not supported -> stored as NULL, not a failure
    assert g1.xids == [79] and verdict.status == "FAIL"
    assert g0.tflops_last is not None and g0.tflops_last > 0
    conn = sqlite3.connect(tmp_path / "nv.db")
    assert conn.execute("SELECT source FROM xids").fetchall() == [("nvml",)]
    conn.close()
    with pytest.raises(InputError) as exc:
        run_burnin(backend="nvml", duration="0.2s", db=tmp_path / "small.db", quiet=True, kernel_log=False,
                   matmul_size=16)
    assert exc.value.field == "--matmul-size"


def test_ctrl_c_stops_the_command_and_still_judges(tmp_path):
    marker = tmp_path / "got-sigint"
    child = ("import pathlib, signal, sys, time\n"
             "def stop(signum, frame):\n"
             f"    pathlib.Path({str(marker)!r}).write_text('1')\n"
             "    sys.exit(130)\n"
             "signal.signal(signal.SIGINT, stop)\n"
             "time.sleep(60)\n")

    def on_sample(info):
        if info["round"] == 10:
            raise KeyboardInterrupt  # what Ctrl-C raises in the sampling loop

    verdict = _fake(tmp_path, duration="30s", command=[sys.executable, "-c", child], on_sample=on_sample)
    assert verdict.run["status"] == "interrupted" and verdict.run["load_exit_code"] == 130 and marker.exists()
    assert verdict.status == "WARN" and [r.rule for r in verdict.reasons] == ["run_incomplete"]
    assert verdict.gpus[0].samples == 11


# --- a store that a crash, a full disk and an operator cannot lose -----------------------------------------------

CLI = [sys.executable, "-m", "trainsizer.cli", "burnin"]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _read_only(db):
    """A connection that changes nothing (the test's own look at a database)."""
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def _crashed_run(db, min_elapsed):
    """A 60 s fake burn-in in its own process, killed with SIGKILL once it has samples ``min_elapsed`` s in; the
    files are left as the kill leaves them (RUN.db, RUN.db-wal, RUN.db-shm)."""
    proc = subprocess.Popen([*CLI, "--backend", "fake", "--duration", "60s", "--interval", "0.1", "--db", str(db),
                             "--quiet"], env=ENV)
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, "the burn-in exited early"
            assert time.time() < deadline, "no samples after 60 s"
            try:
                with _read_only(db) as conn:
                    last = conn.execute("SELECT MAX(elapsed) FROM samples").fetchone()[0]
            except sqlite3.Error:
                last = None
            if last is not None and last >= min_elapsed:
                break
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert db.with_name(db.name + "-wal").exists()


def _stored(db):
    """(samples, last elapsed) in a database, read without changing it."""
    conn = _read_only(db)
    try:
        return conn.execute("SELECT COUNT(*), MAX(elapsed) FROM samples").fetchone()
    finally:
        conn.close()


def test_kill_9_then_the_db_copied_alone_holds_all_but_the_last_seconds(tmp_path):
    """After kill -9 the last rows are in RUN.db-wal; the run checkpoints every store.CHECKPOINT_S s, so the .db
    copied alone reports every sample but those of the last seconds (CHECKPOINT_S and a round; at most 10 s)."""
    from trainsizer.probe.burnin.store import CHECKPOINT_S

    db = tmp_path / "crash.db"
    _crashed_run(db, CHECKPOINT_S + 2.0)
    alone = tmp_path / "copy" / "alone.db"
    alone.parent.mkdir()
    alone.write_bytes(db.read_bytes())  # the .db only, as an operator copies it
    n_all, last_all = _stored(db)
    verdict = report(alone)
    assert sorted(p.name for p in alone.parent.iterdir()) == ["alone.db"]  # the report wrote nothing beside it
    n_alone, last_alone = verdict.run["samples"], verdict.run["elapsed_s"] - verdict.run["interval_s"]
    assert 0 < n_alone <= n_all and last_all - last_alone <= 10.0, (n_alone, n_all, last_alone, last_all)
    assert ("run_incomplete", None) in _rules(verdict)


def test_a_new_run_refuses_a_path_with_a_crashed_runs_wal_and_nothing_is_lost(tmp_path):
    """The stale-WAL sequence: kill -9, the operator renames run.db to keep it, the -wal stays behind; a new run on
    run.db (with --overwrite too) is refused in one line naming the files and how to recover them, and leaves
    them as they were; moved beside the renamed database, they give back every sample."""
    db = tmp_path / "run.db"
    _crashed_run(db, 0.5)
    n_samples, _ = _stored(db)
    db.rename(tmp_path / "keep.db")
    wal, shm = (tmp_path / "run.db-wal").read_bytes(), (tmp_path / "run.db-shm").read_bytes()
    for extra in ([], ["--overwrite"]):
        proc = subprocess.run([*CLI, "--backend", "fake", "--duration", "1s", "--db", str(db), *extra], env=ENV,
                              capture_output=True, text=True, timeout=120)
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
        assert proc.returncode == 2 and len(lines) == 1, proc.stdout + proc.stderr
        assert lines[0].startswith("error: --db: run.db-wal and run.db-shm beside") and "burnin report" in lines[0]
        assert not db.exists()
        assert (tmp_path / "run.db-wal").read_bytes() == wal and (tmp_path / "run.db-shm").read_bytes() == shm
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"run.db{suffix}").rename(tmp_path / f"keep.db{suffix}")
    assert report(tmp_path / "keep.db").run["samples"] == n_samples


def _file_state(folder):
    """Every file in ``folder``: its bytes and mode (permissions), by name."""
    return {p.name: (p.read_bytes(), p.stat().st_mode) for p in sorted(folder.iterdir())}


def test_report_opens_read_only_and_changes_no_file(tmp_path):
    """report opens with mode=ro and sets no journal mode: a 0-byte file stays 0 bytes, an unrelated SQLite file
    keeps its bytes and its rollback journal (no -wal/-shm appear beside it), a finished run is judged without a
    byte changed or a file added (its WAL-mode file opened immutable: no -shm, no -wal)."""
    (tmp_path / "empty.db").write_bytes(b"")
    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    _fake(tmp_path, name="run.db", duration="0.3s")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "other.db", "run.db"]
    before = _file_state(tmp_path)
    for name in ("empty.db", "other.db"):
        with pytest.raises(InputError, match="not a burn-in database"):
            report(tmp_path / name)
    assert report(tmp_path / "run.db").run["samples"] == 6
    assert _file_state(tmp_path) == before
    with sqlite3.connect(tmp_path / "other.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def _unshare_ro_works():
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _read_only_mount(target, command):
    """``command`` (a shell line) run where ``target`` (a folder or a file) is a read-only bind mount, in a mount
    namespace of its own (unshare -rm). Tests run as root, and root writes a chmod 0444 file all the same: a
    read-only mount is refused to root too (EROFS), so this is what a read-only disk or file does to SQLite."""
    script = f"mount --bind '{target}' '{target}' && mount -o remount,bind,ro '{target}' && {command}"
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], env=ENV, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not _unshare_ro_works(), reason="needs unshare -rm (a mount namespace) for a read-only mount")
def test_read_only_folder_and_file_report_reads_and_resume_refuses_in_one_line(tmp_path):
    """In a read-only folder: report judges a finished run and a crashed one (its -wal and -shm beside it); resume
    is refused in one line, exit 2, before any load starts. A read-only database file in a writable folder
    (SQLite: 'attempt to write a readonly database') is refused the same way. No file changes."""
    finished, crashed = tmp_path / "ro" / "done.db", tmp_path / "ro" / "crash.db"
    finished.parent.mkdir()
    _fake(finished.parent, name="done.db", duration="0.3s")
    _crashed_run(crashed, 0.5)
    before = _file_state(finished.parent)
    cli = " ".join(CLI)
    proc = _read_only_mount(finished.parent, f"{cli} report {finished} --json; echo rc=$?; {cli} report {crashed} "
                                             f"--json; echo rc=$?; {cli} --resume {finished} --duration 5s; echo rc=$?")
    out = proc.stdout + proc.stderr
    done_json, crash_json, _ = proc.stdout.split("rc=")[:3]
    assert json.loads(done_json[done_json.index("{"):])["run"]["samples"] == 6, out
    assert json.loads(crash_json[crash_json.index("{"):])["run"]["samples"] == _stored(crashed)[0], out
    errors = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.stdout.rstrip().endswith("rc=2") and len(errors) == 1, out
    assert errors[0].startswith(f"error: --resume: {finished} cannot be written") and "Traceback" not in out
    assert _file_state(finished.parent) == before

    writable = tmp_path / "rw"
    writable.mkdir()
    _fake(writable, name="run.db", duration="0.3s")
    before = _file_state(writable)
    proc = _read_only_mount(writable / "run.db", f"{cli} --resume {writable / 'run.db'} --duration 5s")
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stdout + proc.stderr
    assert "cannot be written (attempt to write a readonly database)" in lines[0], lines[0]
    assert {k: v for k, v in _file_state(writable).items() if k == "run.db"} == {"run.db": before["run.db"]}


def test_a_full_disk_ends_the_run_in_one_line_with_the_samples_kept_and_judged(tmp_path):
    """The disk fills mid-run: a file-size limit (RLIMIT_FSIZE; Python ignores SIGXFSZ, so a write past it fails
    with EFBIG as on a full disk) makes SQLite's next write fail. The run ends in one line, exit 2, naming the
    samples stored and their verdict; they are all there afterwards, and --resume continues the run."""
    import re
    import resource

    db = tmp_path / "full.db"

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    proc = subprocess.run([*CLI, "--backend", "fake", "--duration", "60s", "--interval", "0.05", "--db", str(db),
                           "--quiet"], env=ENV, capture_output=True, text=True, timeout=120, preexec_fn=limit)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    said = re.fullmatch(rf"error: --db: {re.escape(str(db))}: writing stopped the run at ([\d.]+) s \((.+)\); the "
                        r"(\d+) samples stored are kept and judge (WARN|FAIL|STABLE) .*--resume .*", lines[0])
    assert said, lines[0]
    verdict = report(db)
    assert verdict.run["samples"] == int(said[3]) > 0 and verdict.status == said[4]
    resumed = run_burnin(resume=db, duration=verdict.run["elapsed_s"] + 0.5, quiet=True)
    assert resumed.run["samples"] > int(said[3]) and resumed.run["status"] == "completed"
