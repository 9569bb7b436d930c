"""Benchmark: 10,000 replicas of a 60-day training run on 16,384 GPUs (planner.analysis.simulate).

Run: python benchmarks/bench_simulate.py   (prints a markdown table for docs/performance-simulate.md)

The run: 16,384 synchronising ranks, 5 s steps with 0.1 s per-rank jitter and rare
2 s pauses (p = 1e-6 per rank per step); ~60 days of useful compute; GPU MTBF
50,675 h (Llama 3 405B report rate) so system MTBF ~3.1 h and ~470 failures per run;
60 s blocking checkpoints at Daly's interval; 10 min restarts.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from formulas import checkpoint as ck  # noqa: E402
from planner.analysis.simulate import RunSpec, closed_form, simulate, step_stats  # noqa: E402

GPUS = 16_384
DAYS = 60.0


def bench_spec() -> RunSpec:
    mtbf_c = 50_675 * 3600.0
    delta, restart = 60.0, 600.0
    probe = RunSpec(steps=1, step_time_s=5.0, step_time_std_s=0.1, sync_ranks=GPUS,
                    pause_probability=1e-6, pause_duration_s=2.0)
    e_step = step_stats(probe).mean_step_s
    tau = float(ck.daly_interval(delta, mtbf_c / GPUS))
    return RunSpec(steps=int(DAYS * 86400 / e_step), step_time_s=5.0, step_time_std_s=0.1,
                   sync_ranks=GPUS, pause_probability=1e-6, pause_duration_s=2.0,
                   components=GPUS, component_mtbf_s=mtbf_c, checkpoint_interval_s=tau,
                   checkpoint_cost_s=delta, restart_cost_s=restart,
                   busy_power_w=GPUS * 1000.0, idle_power_w=GPUS * 400.0, gpus=GPUS)


def main(replicas: int = 10_000, repeats: int = 3) -> None:
    spec = bench_spec()
    simulate(spec, replicas=100, seed=1)  # warm-up (scipy imports)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        res = simulate(spec, replicas=replicas, seed=0)
        times.append(time.perf_counter() - start)
    cf = closed_form(spec)
    s = res.summary()
    se = s["wall_days"]["stderr"]
    print(f"| machine | {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, numpy {np.__version__} |")
    print("|---|---|")
    print(f"| run | {spec.steps:,} steps x {GPUS:,} ranks, {DAYS:g} days useful compute, "
          f"{res.steps_per_checkpoint} steps/checkpoint |")
    print(f"| replicas | {replicas:,} (seed 0) |")
    print(f"| simulate() seconds, best of {repeats} | {min(times):.2f} |")
    print(f"| simulate() seconds, all | {', '.join(f'{t:.2f}' for t in times)} |")
    print(f"| mean wall days: simulated (± s.e.) vs Daly | {s['wall_days']['mean']:.3f} "
          f"± {se:.3f} vs {cf['wall_days']:.3f} "
          f"({100 * (s['wall_days']['mean'] / cf['wall_days'] - 1):+.2f}%) |")
    print(f"| mean failures: simulated vs wall/M | {s['failures']['mean']:.1f} vs "
          f"{cf['failures']:.1f} |")
    print(f"| wall days p10 / p50 / p90 | {s['wall_days']['p10']:.2f} / "
          f"{s['wall_days']['p50']:.2f} / {s['wall_days']['p90']:.2f} |")
    assert math.isfinite(min(times))


if __name__ == "__main__":
    main()
