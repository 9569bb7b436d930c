"""Benchmark: the search reductions and a 20.8 M-candidate plan, former vs current, in one run.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_plan.py [--quick]
(prints a markdown table; copy it to docs/performance.md).

The machine is shared, so every comparison is measured in the same process,
alternating the former and the current implementation, as CPU seconds
(``time.process_time``) and as the ratio former / current; wall seconds of the
CLI are printed with the load average beside them.  The former
implementations are the references the tests compare against
(``tests/reference_reductions.py``: a lexsort per objective and mask, a
pairwise Pareto test) and the former per-block path (every output of every
candidate stored, then reduced).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout's code; the test references

BIG = {"model": "mixtral-8x7b", "global_batch": 55440, "max_gpus": 1048576}
BIG_ARGS = ["--model", "mixtral-8x7b", "--global-batch", "55440", "--max-gpus", "1048576"]


def cpu_seconds(call, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def former_plan_blocks(scenario, catalog) -> tuple[int, int]:
    """The former search loop: all outputs of every block stored, a lexsort per objective."""
    from reference_reductions import reference_kept_rows

    from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
    from planner.engine.run.kernel_run import evaluate_inputs
    from planner.engine.run.run_inputs import RunChoices, base_inputs
    from planner.engine.search.optimize import (
        KEEP_COLUMNS,
        OBJECTIVE_COLUMNS,
        PLAN_CHUNK,
        feasible_mask,
    )

    s = scenario
    options = SpaceOptions(min_gpus=s.min_gpus, max_gpus=s.max_gpus)
    evaluated = kept = 0
    for hw in sorted(catalog.accelerators):
        x = base_inputs(catalog, RunChoices.from_scenario(s, hw))
        layout = enumerate_layouts(
            layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
            seq_len=int(x["seq_len"]), experts=int(x["experts"]),
            global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
            scale_up_domain=int(x["scale_up_domain_gpus"]), options=options)
        for start in range(0, len(layout["gpus"]), PLAN_CHUNK):
            part = {k: v[start:start + PLAN_CHUNK] for k, v in layout.items()}
            out = evaluate_inputs({**x, **layout_flags(
                part, scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"])})
            out.update(part)
            rows = reference_kept_rows(out["gpus"], [out[c] for c in OBJECTIVE_COLUMNS.values()],
                                       (feasible_mask(out, s), out["fits"]))
            {c: out[c][rows] for c in KEEP_COLUMNS}  # noqa: B018  (the former copy of kept rows)
            evaluated += len(part["gpus"])
            kept += rows.size
    return evaluated, kept


def current_plan_blocks(scenario, catalog) -> tuple[int, int]:
    """The same loop with :func:`planner.engine.search.optimize.reduce_block`."""
    from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
    from planner.engine.run.run_inputs import RunChoices, base_inputs
    from planner.engine.search.optimize import PLAN_CHUNK, reduce_block

    s = scenario
    options = SpaceOptions(min_gpus=s.min_gpus, max_gpus=s.max_gpus)
    evaluated = kept = 0
    for hw in sorted(catalog.accelerators):
        x = base_inputs(catalog, RunChoices.from_scenario(s, hw))
        layout = enumerate_layouts(
            layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
            seq_len=int(x["seq_len"]), experts=int(x["experts"]),
            global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
            scale_up_domain=int(x["scale_up_domain_gpus"]), options=options)
        for start in range(0, len(layout["gpus"]), PLAN_CHUNK):
            part = {k: v[start:start + PLAN_CHUNK] for k, v in layout.items()}
            block = reduce_block({**x, **layout_flags(
                part, scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"])}, part, s)
            evaluated += len(part["gpus"])
            kept += block.rows.size
    return evaluated, kept


def reductions(frontier, repeats: int) -> list[tuple[str, float, float]]:
    """Best-per-group on real blocks and the Pareto mask of the plan's feasible frontier."""
    from reference_reductions import reference_group_best, reference_pareto_mask

    from planner.engine.run.reductions import GroupMinimum, pareto_mask

    rng = np.random.default_rng(0)
    feasible = frontier.loc[frontier["feasible"].astype(bool)]
    values = feasible[["wall_time_s", "cost_usd", "energy_kwh"]].to_numpy(dtype=float)
    # a block as the search sees it: runs of one GPU count, 4 objectives x 2 masks
    keys = np.repeat(rng.choice(np.arange(8, 4096, 8), 700), 96)[:65536]
    columns = [rng.lognormal(size=keys.size) for _ in range(4)]
    masks = [rng.random(keys.size) < 0.75, rng.random(keys.size) < 0.5]

    def group_former():
        for mask in masks:
            for v in columns:
                reference_group_best(keys, v, mask)

    def group_current():
        for mask in masks:
            g = GroupMinimum(keys, mask)
            for v in columns:
                g.argmin(v)

    rows = [("best per GPU count, one 65,536-candidate block (4 objectives x 2 masks)",
             cpu_seconds(group_former, repeats * 5), cpu_seconds(group_current, repeats * 5)),
            (f"Pareto mask of the plan's {len(values):,} feasible frontier rows (3 objectives)",
             cpu_seconds(lambda: reference_pareto_mask(values), 1),
             cpu_seconds(lambda: pareto_mask(values), repeats))]
    assert pareto_mask(values).tolist() == reference_pareto_mask(values).tolist()
    return rows


def command_wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "planner", *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the 2,048-GPU llama3-70b space instead of the 20.8 M Mixtral one")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from hardware_catalog import load_catalog
    from planner import plan
    from planner.engine.inputs.scenario import Scenario

    catalog = load_catalog()
    changes = {"model": "llama3-70b", "max_gpus": 2048} if args.quick else BIG
    s = Scenario().with_(**changes)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}, load average "
          f"{os.getloadavg()[0]:.1f} at start")
    print()
    print("| measurement | former (CPU s) | current (CPU s) | former / current |")
    print("|---|---|---|---|")
    former = current = np.inf
    for _ in range(args.repeats):  # alternate, keep the best of each
        start = time.process_time()
        n, _kept = former_plan_blocks(s, catalog)
        former = min(former, time.process_time() - start)
        start = time.process_time()
        n2, _kept2 = current_plan_blocks(s, catalog)
        current = min(current, time.process_time() - start)
        assert n == n2
    print(f"| search loop over {n:,} candidates ({s.model}, {len(catalog.accelerators)} "
          "accelerators): enumerate, "
          f"evaluate, reduce per block | {former:.1f} | {current:.1f} | {former / current:.2f} |")
    start = time.process_time()
    result = plan(s, catalog=catalog)
    whole = time.process_time() - start
    for label, old, new in reductions(result.frontier, args.repeats):
        print(f"| {label} | {old:.4f} | {new:.4f} | {old / new:.0f} |")
    print(f"| whole `plan()` (current), in process | | {whole:.1f} | |")
    if not args.quick:
        wall = command_wall(["plan", *BIG_ARGS, "-f", "json"])
        print(f"| `python -m planner plan {' '.join(BIG_ARGS)}` wall (current) | | {wall:.1f} s "
              f"wall, load average {os.getloadavg()[0]:.1f} | |")


if __name__ == "__main__":
    main()
