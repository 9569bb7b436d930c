"""Benchmark: one-shot `capplan evaluate` wall time and `planner.evaluate` calls per second.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_oneshot.py [--runs 20] [--batches 3]
     [--peer /tmp/peer/bin/python]      (prints a markdown table; copy to docs/performance.md)

Every command is started as a fresh process ``--runs`` times per batch, the commands
interleaved (one run of each in turn) so that a change of load hits all alike; the table
gives the median and the minimum over all runs, and the median of each batch.  Floors for
context: ``python -c pass`` and ``python -c "import numpy"`` on the same interpreter.

``--former DIR`` adds the same evaluate commands run from another checkout (e.g. the
branch point: ``git archive f5b329f | tar -x -C /tmp/former``), for the ratio former / now
in one run whatever the load.  ``--peer PYTHON`` adds llm-analysis' CLI (``python -m llm_analysis.analysis train``,
installed in its own virtual environment, see benchmarks/peer_llm_analysis.py) on
LLaMA-2 7B / 8 x A100-80GB, ZeRO-1, full recompute (it also writes its summary files); the ratio capplan / peer is taken within the same run.
``--installed VENV`` adds the evaluate commands run by the ``capplan`` script of a virtual
environment with capplan installed as a user installs it (``python -m venv VENV &&
VENV/bin/pip install .``: no editable-install finder on the path), with that
environment's ``python -c pass`` as its floor.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # measure this checkout's code, not an installed one

EVALUATE = [sys.executable, "-m", "planner", "evaluate", "--model", "llama3-8b", "--gpus", "8"]
LAYOUT = ["--tp", "1", "--pp", "1", "--cp", "2"]
COMMANDS = {
    "`python -c pass` (floor)": [sys.executable, "-c", "pass"],
    "`python -c 'import numpy'` (floor)": [sys.executable, "-c", "import numpy"],
    "`capplan evaluate --model llama3-8b --gpus 8` (table)": EVALUATE,
    "same, `-f json`": [*EVALUATE, "-f", "json"],
    "same, explicit layout `--tp 1 --pp 1 --cp 2` (table)": [*EVALUATE, *LAYOUT],
    "same, explicit layout, `-f json`": [*EVALUATE, *LAYOUT, "-f", "json"],
}
PEER_ARGS = ["-m", "llm_analysis.analysis", "train", "--model_name", "NousResearch_Llama-2-7b-hf",
             "--gpu_name", "a100-sxm-80gb", "--total_num_gpus", "8", "--tp_size", "1",
             "--pp_size", "1", "--batch_size_per_gpu", "1", "--seq_len", "4096",
             "--total_num_tokens", "1000000000", "--flops_efficiency", "0.5",
             "--hbm_memory_efficiency", "0.9", "--ds_zero", "1", "--activation_recomputation",
             "2", "--output_dir", "/tmp/bench_oneshot_peer"]  # bundled config, fits in HBM


def run_once(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + sys of the child) of one run."""
    root = ROOT
    if command[0] == "--in":  # ["--in", DIR, *command]: run another checkout's code
        root, command = Path(command[1]), command[2:]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root)}
    if command[0] == "--installed":  # ["--installed", *command]: the environment's own code
        command, root = command[1:], Path("/")
        env.pop("PYTHONPATH")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: pip writes every .pyc
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def wall_times(commands: dict[str, list[str]], runs: int, batches: int) -> dict[str, list]:
    """Per command, one list of wall times per batch (commands interleaved)."""
    times = {name: [[] for _ in range(batches)] for name in commands}
    for batch in range(batches):
        for _ in range(runs):
            for name, command in commands.items():
                times[name][batch].append(run_once(command))
    return times


def api_calls_per_second(seconds: float = 2.0) -> dict[str, tuple[float, float]]:
    """(calls per CPU-second, calls per wall-second) of planner.evaluate for one layout."""
    import planner
    from hardware_catalog import load_catalog

    catalog = load_catalog()
    run = dict(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1, global_batch=512,
               micro_batch=2, tokens=2e12, catalog=catalog)
    result = {}
    for label, extra in (("`evaluate(..., as_frame=False)` (light result)", {"as_frame": False}),
                         ("`evaluate(...)` (DataFrame, the default)", {})):
        planner.evaluate(**run, **extra)  # warm: catalog inputs, kernel import
        calls, cpu0, wall0 = 0, time.process_time(), time.perf_counter()
        while time.perf_counter() - wall0 < seconds:
            planner.evaluate(**run, **extra)
            calls += 1
        result[label] = (calls / (time.process_time() - cpu0),
                         calls / (time.perf_counter() - wall0))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--peer", help="python of a virtual environment with llm-analysis")
    parser.add_argument("--former", help="another checkout to compare with (same commands)")
    parser.add_argument("--installed", help="a virtual environment with capplan installed")
    args = parser.parse_args()
    commands = dict(COMMANDS)
    if args.former:
        for name in list(COMMANDS)[2:]:
            commands[f"former: {name}"] = ["--in", args.former, *COMMANDS[name]]
    if args.installed:
        venv = Path(args.installed)
        commands["installed: `python -c pass` (floor)"] = [
            "--installed", str(venv / "bin" / "python"), "-c", "pass"]
        for name in list(COMMANDS)[2:]:
            commands[f"installed: {name}"] = ["--installed", str(venv / "bin" / "capplan"),
                                              *COMMANDS[name][3:]]
    if args.peer:
        commands["llm-analysis 0.2.2 CLI, `train` (LLaMA-2 7B, 8 x A100)"] = [args.peer,
                                                                               *PEER_ARGS]
    # An installed capplan (pip install .) has its bytecode compiled; a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would compile ~60 modules on every run (~0.1 s).
    import compileall

    for root in {ROOT, *([Path(args.former)] if args.former else [])}:
        for package in ("planner", "formulas", "hardware_catalog"):
            compileall.compile_dir(root / package, quiet=1)
    load_before = os.getloadavg()[0]
    times = wall_times(commands, args.runs, args.batches)
    load_after = os.getloadavg()[0]
    print(f"{args.batches} batches x {args.runs} runs, interleaved; load average "
          f"{load_before:.1f} before, {load_after:.1f} after; {os.cpu_count()} cores\n")
    print("| command | median wall [s] | min wall [s] | median wall per batch [s] | "
          "median CPU (user+sys) [s] |")
    print("|---|---|---|---|---|")
    medians = {}
    for name, batches in times.items():
        every = [wall for batch in batches for wall, _ in batch]
        medians[name] = statistics.median(every)
        cpu = statistics.median(c for batch in batches for _, c in batch)
        per_batch = ", ".join(f"{statistics.median(w for w, _ in b):.3f}" for b in batches)
        print(f"| {name} | {medians[name]:.3f} | {min(every):.3f} | {per_batch} | {cpu:.3f} |")
    peer = [n for n in medians if n.startswith("llm-analysis")]
    print()
    for name in list(COMMANDS)[2:]:
        if args.former:
            print(f"- {name}: former / now {medians['former: ' + name] / medians[name]:.2f}")
        if peer:
            print(f"- {name}: {medians[name] / medians[peer[0]]:.2f}x the peer's median")
    print("\n| Python API, one layout | calls per CPU-second | calls per wall-second |")
    print("|---|---|---|")
    for label, (cpu, wall) in api_calls_per_second().items():
        print(f"| {label} | {cpu:,.0f} | {wall:,.0f} |")


if __name__ == "__main__":
    main()
