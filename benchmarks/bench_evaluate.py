"""Benchmark: configurations evaluated per second, and the default `capplan plan` wall time.

Run: python benchmarks/bench_evaluate.py   (prints a markdown table; copy to docs/performance.md)
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time

import numpy as np


def configs_per_second(repeats: int = 5) -> tuple[int, float, float]:
    """(layouts, rate with every output computed, rate with every output also stored)."""
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

    rates = []
    for call in (computed, lambda: evaluate_inputs(inputs)):
        call()  # warm-up
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - start)
        rates.append(n / best)
    return n, rates[0], rates[1]


def command_seconds(args: list[str], repeats: int = 3) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "planner", *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    n, rate, stored = configs_per_second()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}")
    print()
    print("| measurement | result |")
    print("|---|---|")
    print(f"| kernel, llama3-70b on h100-sxm, {n:,} layouts, every output computed | "
          f"{rate:,.0f} configurations/s |")
    print(f"| same, every output also stored in arrays (`evaluate_inputs`) | "
          f"{stored:,.0f} configurations/s |")
    for label, args in [("`capplan --help`", ["--help"]),
                        ("`capplan evaluate` (defaults)", ["evaluate", "-f", "json"]),
                        ("`capplan plan` (default scenario)", ["plan", "-f", "json"])]:
        print(f"| {label} | {command_seconds(args):.2f} s wall |")


if __name__ == "__main__":
    main()
