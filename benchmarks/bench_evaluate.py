"""Benchmark: configurations evaluated per CPU-second, and the default `capplan plan` wall time.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_evaluate.py   (prints a markdown table; copy to
docs/performance.md).  Rates are CPU time (the machine may be shared); the numpy and the
compiled kernel (planner.engine.run.native) are measured alternately in the same run.  The search reductions and the
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


def configs_per_second(repeats: int = 5, rounds: int = 3) -> tuple[int, dict[str, float]]:
    """(layouts, {measurement: configurations per CPU-second}).

    * ``numpy computed``: the generated numpy kernel over chunks of 4,096, every output
      computed and discarded (the former "computed" row);
    * ``C computed``: the compiled kernel (planner.engine.run.native) over the same chunks
      into reused output buffers, the GPU-count terms computed once per call as
      ``evaluate_inputs`` does;
    * ``numpy stored`` / ``C stored``: ``evaluate_inputs`` (every output stored in result
      arrays) with ``CAPPLAN_KERNEL=numpy`` / the compiled kernel.

    Measured alternately ``rounds`` times, best of ``repeats`` each, CPU time.
    """
    from hardware_catalog import load_catalog
    from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
    from planner.engine.run import kernel_run
    from planner.engine.run.kernel_run import CHUNK, evaluate_inputs, kernel
    from planner.engine.run.model import INPUTS, OUTPUTS
    from planner.engine.run.run_inputs import RunChoices, base_inputs
    from planner.engine.run.spares import resolve_spares

    catalog = load_catalog()
    x = base_inputs(catalog, RunChoices(model="llama3-70b", hardware="h100-sxm", tokens=15e12))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]), options=SpaceOptions())
    inputs = resolve_spares({**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                                 layers=x["layers"])})
    n = len(layout["gpus"])
    f = kernel()
    arrays = frozenset(k for k in INPUTS if np.ndim(inputs[k]) > 0)
    compiled = kernel_run.native_kernel(tuple(OUTPUTS), arrays)
    if compiled is None:
        raise SystemExit("the compiled kernel is not available here (CAPPLAN_KERNEL, cc)")

    def numpy_computed():
        with np.errstate(all="ignore"):
            for s in range(0, n, CHUNK):
                f(*(v[s:s + CHUNK] if np.ndim(v) else v for v in (inputs[k] for k in INPUTS)))

    def c_computed():
        split, function = compiled
        call = kernel_run._SplitCall(split, INPUTS)
        call.prepare(*(inputs[k] for k in INPUTS))
        buffers = list(np.empty((len(OUTPUTS), CHUNK)))
        for s in range(0, n, CHUNK):
            rows = slice(s, min(s + CHUNK, n))
            m = rows.stop - rows.start
            chunk = {k: v[rows] if np.ndim(v) else v for k, v in inputs.items()}
            function(m, chunk, call.inverse[rows], call.table,
                     out=[b[:m] for b in buffers])

    def stored(mode):
        def run():
            os.environ["CAPPLAN_KERNEL"] = mode
            try:
                evaluate_inputs(inputs)
            finally:
                os.environ.pop("CAPPLAN_KERNEL")
        return run

    calls = {"numpy computed": numpy_computed, "C computed": c_computed,
             "numpy stored": stored("numpy"), "C stored": stored("auto")}
    best = dict.fromkeys(calls, np.inf)
    for call in calls.values():
        call()  # warm-up (and the compile, once per machine)
    for _ in range(rounds):
        for name, call in calls.items():
            for _ in range(repeats):
                start = time.process_time()
                call()
                best[name] = min(best[name], time.process_time() - start)
    return n, {name: n / seconds for name, seconds in best.items()}


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
    n, rates = configs_per_second()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}")
    print()
    print("| measurement | result |")
    print("|---|---|")
    for name, rate in rates.items():
        print(f"| kernel, llama3-70b on h100-sxm, {n:,} layouts, every output {name} | "
              f"{rate:,.0f} configurations/CPU-s |")
    print(f"| compiled / numpy, computed | {rates['C computed'] / rates['numpy computed']:.2f}x |")
    print(f"| compiled / numpy, stored | {rates['C stored'] / rates['numpy stored']:.2f}x |")
    for label, args in [("`capplan --help`", ["--help"]),
                        ("`capplan evaluate` (defaults)", ["evaluate", "-f", "json"]),
                        ("`capplan plan` (default scenario)", ["plan", "-f", "json"])]:
        print(f"| {label} | {command_seconds(args):.2f} s wall |")


if __name__ == "__main__":
    main()
