"""Benchmark: configurations evaluated per CPU-second, and the default `capplan plan` wall time.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_evaluate.py   (prints a markdown table; copy to
docs/performance.md).  Rates are CPU time (the machine may be shared); the former stored path
is measured alternately with the current one in the same run.  The search reductions and the
20.8 M-candidate plan: benchmarks/bench_plan.py.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # measure this checkout's code, not an installed one


def former_evaluate_inputs(inputs: dict, chunk: int) -> dict:
    """The former stored path (before 2026-11-23), for the ratio former / current."""
    from planner.engine.evaluator import finish, kernel
    from planner.engine.model import INPUTS, OUTPUTS

    n = len(inputs["gpus"])
    f = kernel()
    out = {name: np.empty(n) for name in OUTPUTS}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            args = [v[start:stop] if np.ndim(v) > 0 else float(v)
                    for v in (inputs[name] for name in INPUTS)]
            for name, values in zip(OUTPUTS, f(*args), strict=True):
                out[name][start:stop] = values
    return finish(out, inputs)


def configs_per_second(repeats: int = 5, rounds: int = 3) -> tuple[int, float, float, float]:
    """(layouts, rate computed, rate stored by the former path, rate stored now), CPU time.

    The three are measured alternately ``rounds`` times, best of ``repeats`` each.
    """
    from hardware_catalog import load_catalog
    from planner.engine.evaluator import CHUNK, base_inputs, evaluate_inputs, kernel
    from planner.engine.model import INPUTS
    from planner.engine.space import SpaceOptions, enumerate_layouts, layout_flags

    catalog = load_catalog()
    x = base_inputs(catalog, model="llama3-70b", hardware="h100-sxm", tokens=15e12)
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]), options=SpaceOptions())
    inputs = {**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                  layers=x["layers"])}
    n = len(layout["gpus"])
    f = kernel()

    def computed():  # every output computed chunk by chunk, then discarded
        with np.errstate(all="ignore"):
            for s in range(0, n, CHUNK):
                f(*(v[s:s + CHUNK] if np.ndim(v) else v for v in (inputs[k] for k in INPUTS)))

    calls = (computed, lambda: former_evaluate_inputs(inputs, CHUNK), lambda: evaluate_inputs(inputs))
    best = [np.inf] * len(calls)
    for call in calls:
        call()  # warm-up
    for _ in range(rounds):
        for i, call in enumerate(calls):
            for _ in range(repeats):
                start = time.process_time()
                call()
                best[i] = min(best[i], time.process_time() - start)
    return n, n / best[0], n / best[1], n / best[2]


def command_seconds(args: list[str], repeats: int = 3) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "planner", *args], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    n, rate, former, stored = configs_per_second()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}")
    print()
    print("| measurement | result |")
    print("|---|---|")
    print(f"| kernel, llama3-70b on h100-sxm, {n:,} layouts, every output computed | "
          f"{rate:,.0f} configurations/s |")
    print(f"| same, every output also stored in arrays, former `evaluate_inputs` | "
          f"{former:,.0f} configurations/s |")
    print(f"| same, every output also stored in arrays (`evaluate_inputs`) | "
          f"{stored:,.0f} configurations/s ({stored / former:.2f}x the former) |")
    for label, args in [("`capplan --help`", ["--help"]),
                        ("`capplan evaluate` (defaults)", ["evaluate", "-f", "json"]),
                        ("`capplan plan` (default scenario)", ["plan", "-f", "json"])]:
        print(f"| {label} | {command_seconds(args):.2f} s wall |")


if __name__ == "__main__":
    main()
