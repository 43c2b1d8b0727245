"""Web planner under load: concurrent clients (default 50) for a bounded time against ``POST /api/plan``, each
client with its own job (model preset, method, sequence length, GPU list, max GPUs, drawn from a fixed seed),
the server on loopback in its own process with its pool of planner workers.

Prints p50 / p99 latency of the answered plans, requests completed and errors by kind (503: the planner's
queue was full or a request waited past its limit; timeouts; others). A client that gets 503 waits the
``Retry-After`` it was given (at most until the run ends), as a browser's retry would. ``--single`` first
times each client's plan in this process (one core, no HTTP): what the pool can at best sustain.

It also says how the machine's CPU time went during the run: the server with its workers, this client, and
other processes (a shared machine lends the server fewer cores than it has).

Stops by itself: bounded in time (--duration, then in-flight requests get --timeout) and in count
(--max-requests); traffic only to 127.0.0.1.

``--bursts R`` (the issue's test: a team submitting at once) instead sends R bursts: in each, every client posts
its job once, all at the same moment, and waits for its answer; each burst's jobs differ from the other bursts'
(the training tokens), so no answer comes from the server's cache of recent answers. It prints each burst's
p50 / p99 / max and errors, and the range of p99 over the bursts (target: p99 <= 2 s, no error, on 2 cores).
In the timed mode, each client repeats its own job: after its first answer the server answers it from its cache.

Usage: python benchmarks/bench_web.py [--clients 50] [--duration 20] [--bursts R] [--workers N] [--queue-limit N]
       [--single]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

SEED = 15
MODELS = ["qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "llama-3.2-1b", "llama-3.2-3b",
          "llama-3.1-8b", "mistral-7b", "qwen3-8b", "gemma-2-9b", "phi-2", "tinyllama-1.1b", "llama-2-13b"]
METHODS = ["full", "lora", "qlora"]
SEQ_LENS = [1024, 2048, 4096, 8192]
GPU_LISTS = [["rtx-4090-24gb"], ["rtx-4090-24gb", "l40s-48gb"], ["a100-sxm4-80gb"], ["h100-sxm5-80gb"],
             ["a800-sxm4-80gb", "h800-sxm5-80gb"], ["rtx-5090-32gb", "rtx-a6000-48gb"], ["h20-96gb"],
             ["ascend-910b-64gb", "a100-pcie-80gb"], ["l20-48gb", "rtx-4090d-24gb", "h100-pcie-80gb"]]
MAX_GPUS = [4, 8, 16, 32, 64]


def jobs(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` distinct plan requests from a fixed seed (the same list on every run)."""
    rng, out, seen = random.Random(seed), [], set()
    while len(out) < n:
        pick = (rng.choice(MODELS), rng.choice(METHODS), rng.choice(SEQ_LENS), rng.randrange(len(GPU_LISTS)),
                rng.choice(MAX_GPUS))
        if pick in seen:
            continue
        seen.add(pick)
        model, method, seq, gpus, max_gpus = pick
        training: dict[str, Any] = {"method": method, "micro_batch_size": 1, "seq_len": seq,
                                    "global_batch_size": 64, "activation_checkpointing": "full", "tokens": 2.0e8}
        if method == "full":
            training["precision"] = "bf16-mixed"
        else:
            training |= {"precision": "bf16-true", "lora": {"rank": 16, "targets": "all-linear"}}
        out.append({"job": {"model": {"preset": model}, "training": training},
                    "constraints": {"gpus": GPU_LISTS[gpus], "max_gpus": max_gpus}})
    return out


def cpu_seconds() -> tuple[float, float, float] | None:
    """(all CPUs' busy seconds from /proc/stat, this process's, its reaped children's); None off Linux."""
    try:
        import resource

        head = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except (ImportError, OSError):
        return None
    ticks = [int(v) for v in head[1:9]]
    busy = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return busy, time.process_time(), kids.ru_utime + kids.ru_stime


def tree_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` and its live descendants (the server and its
    planner workers), from /proc; None off Linux. A burst's share of it hardly depends on what else the machine
    runs: on a machine of its own with ``cores`` cores the burst cannot end sooner than this over ``cores``."""
    try:
        stats = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    except OSError:
        return None
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, _) in stats.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(stats[p][1] for p in tree if p in stats) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, workers: int | None, queue_limit: int | None) -> subprocess.Popen[bytes]:
    code = ("import sys, uvicorn; from trainsizer.web.app import create_app; "
            "w, q = (None if a == '-' else int(a) for a in sys.argv[2:4]); "
            "uvicorn.run(create_app(workers=w, queue_limit=q), host='127.0.0.1', port=int(sys.argv[1]), "
            "log_level='warning', access_log=False)")
    settings = ("-" if v is None else str(v) for v in (workers, queue_limit))
    return subprocess.Popen([sys.executable, "-c", code, str(port), *settings])


async def post_plan(client: httpx.AsyncClient, body: dict[str, Any], latencies: list[float],
                    errors: dict[str, int]) -> float:
    """POST one plan: its latency when answered, else its error counted; the Retry-After of a 503 (0 otherwise)."""
    t0 = time.perf_counter()
    wait_s = 0.0
    try:
        resp = await client.post("/api/plan", json=body)
        key = None if resp.status_code == 200 and "options" in resp.json() else f"HTTP {resp.status_code}"
        if resp.status_code == 503:
            wait_s = float(resp.headers.get("retry-after", "1"))
    except httpx.TimeoutException:
        key = "timeout"
    except httpx.HTTPError as exc:
        key = type(exc).__name__
    if key is None:
        latencies.append(time.perf_counter() - t0)
    else:
        errors[key] = errors.get(key, 0) + 1
    return wait_s


async def wait_ready(base: str, proc: subprocess.Popen[bytes], limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    async with httpx.AsyncClient(base_url=base, timeout=2.0) as client:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited with {proc.returncode}")
            with contextlib.suppress(httpx.TransportError):
                if (await client.get("/api/catalog/sites")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise SystemExit("server did not start")
            await asyncio.sleep(0.1)


async def load(base: str, bodies: list[dict[str, Any]], duration_s: float, timeout_s: float, max_requests: int
               ) -> tuple[list[float], dict[str, int], float]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    started = 0
    stop_at = time.monotonic() + duration_s
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))

    async def one_client(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
        nonlocal started
        while time.monotonic() < stop_at and started < max_requests:
            started += 1
            wait_s = await post_plan(client, body, latencies, errors)
            if wait_s:
                await asyncio.sleep(min(wait_s, max(0.0, stop_at - time.monotonic())))

    t0 = time.monotonic()
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits) as client:
        await asyncio.gather(*(one_client(client, body) for body in bodies))
    return latencies, errors, time.monotonic() - t0


async def bursts(base: str, bodies: list[dict[str, Any]], rounds: int, timeout_s: float, server_pid: int
                 ) -> list[tuple[list[float], dict[str, int], float | None]]:
    """``rounds`` bursts of every body at once; round r's jobs are made distinct from the others' (tokens). Each
    burst: its latencies, its errors, and the CPU seconds the server and its workers spent on it."""
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    out = []
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits) as client:
        for r in range(rounds):
            latencies: list[float] = []
            errors: dict[str, int] = {}

            async def one(body: dict[str, Any], r: int, latencies: list[float], errors: dict[str, int]) -> None:
                body = {**body, "job": {**body["job"], "training": {**body["job"]["training"],
                                                                    "tokens": 2.0e8 + 1e6 * (r + 1)}}}
                await post_plan(client, body, latencies, errors)

            cpu0 = tree_cpu(server_pid)
            await asyncio.gather(*(one(b, r, latencies, errors) for b in bodies))
            cpu1 = tree_cpu(server_pid)
            out.append((latencies, errors, None if cpu0 is None or cpu1 is None else cpu1 - cpu0))
            await asyncio.sleep(0.5)
    return out


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def single(bodies: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Each job's plan in this process, after the workers' warm-up: wall and CPU seconds each (CPU time
    hardly depends on what else the machine runs)."""
    from trainsizer.web import jobs as web_jobs
    from trainsizer.web import schemas as s

    requests = [s.PlanIn.model_validate(b) for b in bodies]
    web_jobs.warm()
    wall, cpu = [], []
    for req in requests:
        t0, c0 = time.perf_counter(), time.process_time()
        web_jobs.plan(req)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-request timeout, seconds")
    parser.add_argument("--max-requests", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=None, help="server's planner processes (default: cores)")
    parser.add_argument("--queue-limit", type=int, default=None, help="server's queue (default: 4 per worker)")
    parser.add_argument("--single", action="store_true", help="first time each job's plan in this process")
    parser.add_argument("--bursts", type=int, default=0, help="send this many bursts (all clients at once, once each) "
                        "instead of the timed load")
    args = parser.parse_args()
    bodies = jobs(args.clients)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = cores if args.workers is None else args.workers
    from trainsizer.web.pool import default_queue

    queue = default_queue(max(workers, 1)) if args.queue_limit is None else args.queue_limit
    if args.single:
        for name, times in zip(("wall", "CPU"), map(sorted, single(bodies)), strict=True):
            print(f"single plan in-process, {len(times)} jobs, {name} time: mean {statistics.fmean(times) * 1000:.0f} "
                  f"ms, p50 {percentile(times, 50) * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms; {cores} free cores "
                  f"would sustain at most {cores / statistics.fmean(times):.1f} plans/s, so {args.clients} clients "
                  f"wait ~{args.clients * statistics.fmean(times) / cores:.1f} s each")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cpu0, t0 = cpu_seconds(), time.monotonic()
    proc = start_server(port, args.workers, args.queue_limit)
    try:
        asyncio.run(wait_ready(base, proc))
        if args.bursts:
            rounds = asyncio.run(bursts(base, bodies, args.bursts, args.timeout, proc.pid))
        else:
            latencies, errors, wall = asyncio.run(load(base, bodies, args.duration, args.timeout, args.max_requests))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    cpu1, span = cpu_seconds(), time.monotonic() - t0
    if args.bursts:
        print(f"POST /api/plan, {args.bursts} bursts of {args.clients} clients at once (distinct jobs), {cores} cores, "
              f"{workers} workers, queue limit {queue}; load average {os.getloadavg()[0]:.2f}")
        p99s = []
        burst_cpus = [c for _, _, c in rounds if c is not None]
        for i, (lat, errs, cpu) in enumerate(rounds, 1):
            p99s.append(percentile(lat, 99))
            print(f"  burst {i}: answered {len(lat)}, errors {sum(errs.values())}" + (f" {errs}" if errs else "")
                  + f", latency p50 {percentile(lat, 50) * 1000:.0f} ms, p99 {p99s[-1] * 1000:.0f} ms, "
                  f"max {max(lat, default=float('nan')) * 1000:.0f} ms"
                  + (f"; server and workers CPU {cpu:.2f} s" if cpu is not None else ""))
        print(f"  p99 over the bursts: min {min(p99s) * 1000:.0f} ms, median {statistics.median(p99s) * 1000:.0f} ms, "
              f"max {max(p99s) * 1000:.0f} ms  target <= 2000 ms, no error  "
              f"{'OK' if max(p99s) <= 2 and not any(e for _, e, _ in rounds) else 'SLOW'}")
        if burst_cpus:
            print(f"  server and workers CPU per burst: min {min(burst_cpus):.2f} s, median "
                  f"{statistics.median(burst_cpus):.2f} s, max {max(burst_cpus):.2f} s; on {cores} cores of its own "
                  f"a burst ends no sooner than {statistics.median(burst_cpus) / cores * 1000:.0f} ms (median)")
        _cpu_line(cpu0, cpu1, span, cores)
        return
    done = len(latencies)
    n_err = sum(errors.values())
    print(f"POST /api/plan, {args.clients} concurrent clients (distinct jobs) for {args.duration:g} s "
          f"(wall {wall:.1f} s), {cores} cores, {workers} workers, queue limit {queue}")
    print(f"  completed {done} ({done / wall:.1f}/s), errors {n_err}" + (f" {errors}" if errors else ""))
    print(f"  latency p50 {percentile(latencies, 50) * 1000:.0f} ms, p99 {percentile(latencies, 99) * 1000:.0f} ms, "
          f"max {max(latencies, default=float('nan')) * 1000:.0f} ms")
    _cpu_line(cpu0, cpu1, span, cores)


def _cpu_line(cpu0: tuple[float, float, float] | None, cpu1: tuple[float, float, float] | None, span: float,
              cores: int) -> None:
    if cpu0 and cpu1:  # the server's workers are reaped by the server, the server by us: its figure has theirs
        busy, client, server = (b - a for a, b in zip(cpu0, cpu1, strict=True))
        print(f"  CPU over the {span:.1f} s with the server up ({cores} cores = {cores * span:.0f} core-s): server and "
              f"workers {server:.1f} s (start-up included), this client {client:.1f} s, other processes "
              f"{max(0.0, busy - server - client):.1f} s")


if __name__ == "__main__":
    main()
