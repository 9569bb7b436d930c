"""Co-design sweeps on Dask: wall time by scheduler and worker count, and the same answer.

Run:  python benchmarks/bench_codesign.py [--runs in-process processes:1 processes:2]
      [--model mixtral-8x7b] [--global-batch 55440] [--max-gpus 1048576]
      [--vary peak_bf16=0.5x..2x:6 --vary hbm_bytes=1x,2x] [--repeat 1]

Each run is a fresh ``python -m planner codesign ... -f json --pareto`` process (so start-up,
catalog loading and, for Dask, starting the local cluster are counted), timed by wall
clock and by the CPU time of the process and its children.  Every run's JSON must be
byte-identical to the first run's, else the script exits 1.  Prints a markdown table
for docs/performance.md: configurations, wall seconds, configurations per wall-second,
speed-up over the first run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(argv: list[str], scheduler: str, out: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one codesign run."""
    name, _, workers = scheduler.partition(":")
    extra = [] if name == "in-process" else ["--scheduler", name]
    if workers:
        extra += ["--workers", workers]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "planner", "codesign", *argv, *extra, "-f", "json",
                    "--pareto", "-o", str(out), "--force"], check=True, cwd=ROOT,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", nargs="+", default=["in-process", "processes:1", "processes:2"],
                   help="schedulers, NAME[:WORKERS] (in-process, processes, threads, tcp://...)")
    p.add_argument("--model", default="mixtral-8x7b")
    p.add_argument("--accelerator", default="h100-sxm")
    p.add_argument("--global-batch", default="55440")
    p.add_argument("--max-gpus", default="1048576")
    p.add_argument("--vary", action="append", default=None)
    p.add_argument("--repeat", type=int, default=1, help="rounds of all runs (interleaved)")
    a = p.parse_args()
    vary = a.vary or ["peak_bf16=0.5x..2x:6", "hbm_bytes=1x,2x"]
    argv = ["--model", a.model, "--accelerator", a.accelerator, "--global-batch",
            a.global_batch, "--max-gpus", a.max_gpus]
    for v in vary:
        argv += ["--vary", v]
    print("capplan codesign", " ".join(argv), f"(load average {os.getloadavg()[0]:.2f})")
    rows, reference, configurations = [], None, 0
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(a.repeat):
            for scheduler in a.runs:
                out = Path(tmp) / f"{round_}-{scheduler.replace('/', '_')}.json"
                wall, cpu = run(argv, scheduler, out)
                text = out.read_bytes()
                if reference is None:
                    reference = text
                    configurations = json.loads(text)["evaluated"]
                same = text == reference
                rows.append((scheduler, wall, cpu, same))
                print(f"  {scheduler}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
                      f"{'identical' if same else 'DIFFERENT'} JSON", flush=True)
    first = rows[0][1]
    print(f"\n{configurations:,} configurations; load average {os.getloadavg()[0]:.2f} at the end\n")
    print("| scheduler | wall | CPU (all processes) | configurations / wall-s | speed-up | JSON |")
    print("|---|---|---|---|---|---|")
    for scheduler, wall, cpu, same in rows:
        print(f"| {scheduler} | {wall:.1f} s | {cpu:.1f} s | {configurations / wall / 1e6:.2f} M "
              f"| {first / wall:.2f} | {'identical' if same else 'different'} |")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
