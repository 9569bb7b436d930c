"""Benchmark: the CPU time of one capplan command in several checkouts, runs interleaved.

Run: python benchmarks/bench_checkouts.py RUNS NAME=DIR [NAME=DIR ...] -- COMMAND ARGS
e.g. python benchmarks/bench_checkouts.py 20 former=/tmp/former now=. -- evaluate \
         --model llama3-8b --gpus 8

Each run is a fresh ``python -m planner COMMAND ARGS`` process in DIR (its own code on
``PYTHONPATH``, ``OMP_NUM_THREADS=1``, bytecode written as an installed capplan has it);
the checkouts take turns, the first one rotating, so that a change of load on a shared
machine hits all alike.  Prints each checkout's user CPU time of the child (median,
quartiles, range; from ``os.wait4``) and the ratio of the first checkout's median to each
other's: the ratio is measured in one run whatever the load.  A benchmark, not a test:
no timing is asserted anywhere.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys


def main(argv: list[str]) -> None:
    if "--" not in argv or len(argv) < 4:
        raise SystemExit(__doc__.split("\n\n")[1])
    split = argv.index("--")
    runs = int(argv[0])
    checkouts = dict(a.split("=", 1) for a in argv[1:split])
    command = argv[split + 1:]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    user: dict[str, list[float]] = {name: [] for name in checkouts}
    load = os.getloadavg()[0]
    order = list(checkouts.items())
    for i in range(runs):
        for name, folder in order[i % len(order):] + order[:i % len(order)]:
            child = subprocess.Popen([sys.executable, "-m", "planner", *command], cwd=folder,
                                     env={**env, "PYTHONPATH": os.path.abspath(folder)},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            if status != 0:
                raise SystemExit(f"{name}: capplan {' '.join(command)} failed ({status})")
            user[name].append(usage.ru_utime)
    print(f"{runs} runs each, interleaved; load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; capplan {' '.join(command)}")
    medians = {}
    for name, times in user.items():
        q1, median, q3 = statistics.quantiles(times, n=4)
        medians[name] = statistics.median(times)
        print(f"- {name}: user CPU median {medians[name]:.3f} s (quartiles {q1:.3f}-{q3:.3f}, "
              f"range {min(times):.3f}-{max(times):.3f})")
    first, *others = checkouts
    for name in others:
        print(f"- {first} / {name}: {medians[first] / medians[name]:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
