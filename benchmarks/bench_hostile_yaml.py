"""Hostile YAML files given to `trainsizer estimate`: each runs as its own process (`python -m trainsizer.cli`, this
checkout's src first), with its own empty cache folder; the figures are its wall-clock time, its peak memory (maximum
resident set size, from GNU time) and the bytes it left in the cache folder, with its exit status and the length of
its output. Targets (the issue's): under 2 s, under 300 MB, nothing cached, exit 2 and one line.

Files: the 'billion laughs' bombs of 8 and 9 alias levels (342 and 377 bytes), a 50 MB YAML list, a 50 MB
scalar, and for scale a 3 MB scalar (under the size cap: parsed, refused by the scenario check, quoted in an
excerpt). Then the 9-level bomb through each command that reads a user's YAML file (estimate, plan, quotes,
validate, --catalog).

Usage: python benchmarks/bench_hostile_yaml.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S, TARGET_MB = 2.0, 300
TIME = "/usr/bin/time"  # GNU time (Debian package 'time')


def bomb(levels: int) -> str:
    names = "abcdefghijklmnopqrstuvwxyz"
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{names[i]}: &{names[i]} [{','.join([f'*{names[i - 1]}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def write_files(folder: Path) -> dict[str, Path]:
    files = {"bomb, 8 levels": bomb(8), "bomb, 9 levels": bomb(9)}
    out = {}
    for name, text in files.items():
        out[name] = folder / f"{name.replace(', ', '-').replace(' ', '')}.yaml"
        out[name].write_text(text, encoding="utf-8")
    out["50 MB list"] = folder / "list50.yaml"
    with out["50 MB list"].open("w", encoding="utf-8") as f:
        f.write("- 12345678\n" * (50 * 2**20 // 11 + 1))
    out["50 MB scalar"] = folder / "scalar50.yaml"
    out["50 MB scalar"].write_text("x" * (50 * 2**20) + "\n", encoding="utf-8")
    out["3 MB scalar"] = folder / "scalar3.yaml"
    out["3 MB scalar"].write_text("model: " + "x" * (3 * 2**20) + "\n", encoding="utf-8")
    return out


COMMANDS = {"estimate": ["estimate", "{f}"], "plan": ["plan", "{f}", "--gpu", "rtx-4090-24gb"],
            "quotes": ["quotes", "{f}"], "validate": ["validate", "{f}"], "--catalog": ["estimate", "--catalog", "{f}"]}


def run_once(path: Path, folder: Path, command: str = "estimate") -> tuple[float, float, int, int, int]:
    """(wall s, peak MB, cached bytes, exit status, output characters) of one `trainsizer estimate PATH`, measured
    by GNU time (``/usr/bin/time -f``: %e elapsed s, %M maximum resident set in KB), which starts the command from
    its own small process (a child forked from this one would count this process's memory as its own)."""
    cache = Path(tempfile.mkdtemp(dir=folder, prefix="cache-"))
    report = folder / "time.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TRAINSIZER_CACHE_DIR": str(cache)}
    args = [a.format(f=path) for a in COMMANDS[command]]
    proc = subprocess.run([TIME, "-o", str(report), "-f", "%e %M", sys.executable, "-m", "trainsizer.cli", *args],
                          env=env, capture_output=True, text=True, errors="replace")
    wall, kb = report.read_text().split()[-2:]
    cached = sum(p.stat().st_size for p in cache.rglob("user-*"))
    return float(wall), int(kb) / 1024, cached, proc.returncode, len(proc.stdout + proc.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_files(folder)
        print(f"{'file':<16} {'bytes':>11} {'wall s (median)':>16} {'peak MB':>8} {'cached B':>9} {'exit':>4} "
              f"{'output chars':>12}")
        for name, path in files.items():
            runs = [run_once(path, folder) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in runs)
            peak = max(r[1] for r in runs)
            cached, code, chars = runs[-1][2], runs[-1][3], runs[-1][4]
            ok = wall < TARGET_S and peak < TARGET_MB and cached == 0 and code == 2
            print(f"{name:<16} {path.stat().st_size:>11,} {wall:>16.3f} {peak:>8.1f} {cached:>9} {code:>4} "
                  f"{chars:>12}  {'ok' if ok else 'OVER TARGET'}")
        print("\nthe 9-level bomb through each command that reads a user's YAML file (one run each)")
        for command in COMMANDS:
            wall, peak, cached, code, chars = run_once(files["bomb, 9 levels"], folder, command)
            ok = wall < TARGET_S and peak < TARGET_MB and cached == 0 and code == 2
            print(f"{command:<16} {wall:>8.3f} s {peak:>8.1f} MB {cached:>4} B cached  exit {code}  "
                  f"{'ok' if ok else 'OVER TARGET'}")


if __name__ == "__main__":
    main()
