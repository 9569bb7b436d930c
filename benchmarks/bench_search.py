"""Benchmark: the compiled search loop (planner/engine/search/native_search.py) against the numpy
block loop, and the Mixtral plan of issue 17 on one thread and on every core.

Run:  python benchmarks/bench_search.py [--model mixtral-8x7b] [--hardware h100-sxm]
      [--global-batch 55440] [--max-gpus 1048576] [--repeat 3] [--no-cli]

Prints a markdown table for docs/performance.md:

* ``capplan_search`` alone over one accelerator's whole layout space (best of
  ``--repeat``, wall): nanoseconds per candidate;
* ``plan()`` of that accelerator on one thread, caches warm, CPU time: through the
  compiled loop and through the numpy block loop (``optimize.compiled_slice`` off), with
  the frontiers compared (the script exits 1 if they differ);
* unless ``--no-cli``: ``capplan plan`` over the whole catalog as fresh processes, wall
  and CPU, with ``--workers 1`` and with the default (every core), their JSON compared
  but for ``seconds`` (exit 1 if they differ).
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
sys.path.insert(0, str(ROOT))


def search_alone(x, space, repeat: int) -> float:
    """Best wall seconds of one ``native_search.search`` over the whole space."""
    from planner.engine.run.kernel_run import needed_outputs
    from planner.engine.search import native_search
    from planner.engine.search.optimize import OBJECTIVE_COLUMNS, SEARCH_COLUMNS

    keywords = {"outputs": needed_outputs(("memory_per_gpu_bytes", *SEARCH_COLUMNS)),
                "objectives": tuple(OBJECTIVE_COLUMNS.values()),
                "constraints": ("wall_days", "cost_usd", "peak_power_mw"),
                "limits": (None, None, None)}
    if native_search.search(space, x, 0, space.size, **keywords) is None:
        raise SystemExit("the compiled search is not available here (CAPPLAN_KERNEL, cc)")
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        native_search.search(space, x, 0, space.size, **keywords)
        best = min(best, time.perf_counter() - start)
    return best


def plan_cpu(scenario: dict, loop: bool, repeat: int):
    """(best CPU seconds, frontier) of ``plan(**scenario)`` on one thread, caches warm."""
    import planner.engine.search.optimize as optimize

    compiled_slice = optimize.compiled_slice
    if loop:
        optimize.compiled_slice = lambda task: None
    try:
        result = optimize.plan(workers=1, **scenario)  # warm: builds, spare counts
        best = float("inf")
        for _ in range(repeat):
            start = time.process_time()
            result = optimize.plan(workers=1, **scenario)
            best = min(best, time.process_time() - start)
    finally:
        optimize.compiled_slice = compiled_slice
    return best, result.frontier


def cli_run(argv: list[str], out: Path) -> tuple[float, float, dict]:
    """(wall s, CPU s, JSON without ``seconds``) of one ``capplan plan`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "planner", "plan", *argv, "-f", "json", "-o",
                    str(out), "--force"], check=True, cwd=ROOT, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    data = json.loads(out.read_text())
    data.pop("seconds", None)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mixtral-8x7b")
    parser.add_argument("--hardware", default="h100-sxm")
    parser.add_argument("--global-batch", type=int, default=55440)
    parser.add_argument("--max-gpus", type=int, default=1048576)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cli", action="store_true")
    args = parser.parse_args()

    from hardware_catalog import load_catalog
    from planner.engine.layouts.space import SpaceOptions
    from planner.engine.run.run_inputs import RunChoices, base_inputs
    from planner.engine.search.optimize import layout_space

    catalog = load_catalog()
    x = base_inputs(catalog, RunChoices(model=args.model, hardware=args.hardware,
                    global_batch=args.global_batch))
    space = layout_space(x, SpaceOptions(max_gpus=args.max_gpus))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; "
          f"{args.model} on {args.hardware}: {space.size:,} layouts\n")
    alone = search_alone(x, space, args.repeat)
    scenario = {"model": args.model, "hardware": [args.hardware],
                "global_batch": args.global_batch, "max_gpus": args.max_gpus,
                "catalog": catalog}
    compiled_s, compiled_frontier = plan_cpu(scenario, loop=False, repeat=args.repeat)
    loop_s, loop_frontier = plan_cpu(scenario, loop=True, repeat=args.repeat)
    same = compiled_frontier.equals(loop_frontier)
    print("| measurement | result |")
    print("|---|---|")
    print(f"| `capplan_search` over {space.size:,} layouts (best of {args.repeat}, wall) | "
          f"{alone:.3f} s, {alone / space.size * 1e9:.1f} ns a candidate |")
    print(f"| `plan()` on {args.hardware}, one thread, caches warm, CPU: the block loop (numpy around the compiled kernel) | "
          f"{loop_s:.2f} s |")
    print(f"| the same through the compiled loop | {compiled_s:.2f} s "
          f"({loop_s / compiled_s:.2f}x); frontier {'identical' if same else 'DIFFERENT'} |")
    if not same:
        return 1
    if args.no_cli:
        return 0
    argv = ["--model", args.model, "--global-batch", str(args.global_batch),
            "--max-gpus", str(args.max_gpus)]
    with tempfile.TemporaryDirectory() as folder:
        runs = {label: cli_run([*argv, *extra], Path(folder) / f"{i}.json")
                for i, (label, extra) in enumerate((("`--workers 1`", ["--workers", "1"]),
                                                    ("default (every core)", [])))}
    reference = next(iter(runs.values()))[2]
    for label, (wall, cpu, data) in runs.items():
        print(f"| `capplan plan {' '.join(argv)} -f json`, {label} | {wall:.2f} s wall, "
              f"{cpu:.2f} s CPU; JSON {'identical' if data == reference else 'DIFFERENT'} |")
    return 0 if all(data == reference for *_, data in runs.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
