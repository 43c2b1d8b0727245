"""Web planner under load: 50 concurrent clients for 20 s against ``POST /api/plan`` with a small job
(Qwen2.5-1.5B LoRA on RTX 4090s, up to 8 GPUs), the server on loopback in its own process.

Prints p50 / p99 latency, requests completed and errors (any non-200, timeout or connection error; a 503
means a request waited longer than the planner's busy limit). Stops by itself: the run is bounded in
time (--duration, then in-flight requests get --timeout) and in count (--max-requests).

Usage: python benchmarks/bench_web.py [--clients 50] [--duration 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import statistics
import subprocess
import sys
import time

import httpx

JOB = {"job": {"model": {"preset": "qwen2.5-1.5b"},
               "training": {"method": "lora", "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 2048,
                            "global_batch_size": 16, "activation_checkpointing": "full", "tokens": 1.0e8,
                            "lora": {"rank": 16, "targets": "all-linear"}}},
       "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 8}}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "uvicorn", "trainsizer.web.app:create_app", "--factory", "--host", "127.0.0.1",
           "--port", str(port), "--log-level", "warning", "--no-access-log"]
    return subprocess.Popen(cmd)


async def wait_ready(base: str, proc: subprocess.Popen[bytes], limit_s: float = 30.0) -> None:
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


async def load(base: str, clients: int, duration_s: float, timeout_s: float, max_requests: int
               ) -> tuple[list[float], dict[str, int], float]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    started = 0
    stop_at = time.monotonic() + duration_s
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def one_client(client: httpx.AsyncClient) -> None:
        nonlocal started
        while time.monotonic() < stop_at and started < max_requests:
            started += 1
            t0 = time.perf_counter()
            try:
                resp = await client.post("/api/plan", json=JOB)
                ok = resp.status_code == 200 and resp.json()["options"]
                key = None if ok else f"HTTP {resp.status_code}"
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            if key is None:
                latencies.append(time.perf_counter() - t0)
            else:
                errors[key] = errors.get(key, 0) + 1

    t0 = time.monotonic()
    async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits) as client:
        await asyncio.gather(*(one_client(client) for _ in range(clients)))
    return latencies, errors, time.monotonic() - t0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-request timeout, seconds")
    parser.add_argument("--max-requests", type=int, default=20_000)
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(port)
    try:
        asyncio.run(wait_ready(base, proc))
        latencies, errors, wall = asyncio.run(load(base, args.clients, args.duration, args.timeout,
                                                   args.max_requests))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    done = len(latencies)
    n_err = sum(errors.values())
    print(f"POST /api/plan, {args.clients} concurrent clients for {args.duration:g} s (wall {wall:.1f} s)")
    print(f"  completed {done} ({done / wall:.1f}/s), errors {n_err}" + (f" {errors}" if errors else ""))
    print(f"  latency p50 {percentile(latencies, 50) * 1000:.0f} ms, p99 {percentile(latencies, 99) * 1000:.0f} ms, "
          f"max {max(latencies, default=float('nan')) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
