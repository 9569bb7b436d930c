"""The one-shot path imports only what it needs (issue 17, item 1).

``capplan evaluate`` for one layout, in every output format, runs without pandas,
scipy, sympy, matplotlib or rich (subprocess + sys.modules).  Timings are measured
by benchmarks/bench_oneshot.py, never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "scipy", "sympy", "matplotlib", "rich")
PROBE = (
    "import sys\n"
    "from planner.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    f"print('LOADED=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _loaded(args: list[str], code: int = 0) -> tuple[list[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                        "PYTHONPATH": str(ROOT),
                                                        "COLUMNS": "200"})
    assert done.returncode == code, done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("LOADED=")][-1]
    return [m for m in line.removeprefix("LOADED=").split(",") if m], done.stdout


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
@pytest.mark.parametrize("layout", [[], ["--tp", "1", "--pp", "1", "--cp", "2"]])
def test_evaluate_imports_nothing_heavy(fmt, layout):
    loaded, out = _loaded(["evaluate", "--model", "llama3-8b", "--gpus", "8", "-f", fmt,
                           *layout])
    assert loaded == []
    assert "step_time" in out  # step_time_s but in the table, whose values show their unit
    if fmt == "json":
        assert json.loads(out)["fits"] is True


def test_the_probe_sees_heavy_imports():
    # the check can fail: plan builds a pandas frontier (here an infeasible one, exit 1)
    loaded, _ = _loaded(["plan", "--model", "llama2-7b", "--max-gpus", "8", "-f", "json"],
                        code=1)
    assert "pandas" in loaded


def test_evaluate_builds_no_split_kernel():
    # the split kernel's syntax-tree work (~50 ms) does not pay for the ~100 candidate
    # layouts a one-shot query compares (run_kernel's SPLIT_BUILD_MIN); the values are the
    # same without it
    probe = ("import sys\n"
             "from planner.cli.main import main\n"
             "code = main(sys.argv[1:])\n"
             "from planner.engine.run import kernel\n"
             "print('BUILT=%d' % kernel.build_split_kernel.cache_info().currsize, file=sys.stderr)\n"
             "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", probe, "evaluate", "--model", "llama3-8b",
                           "--gpus", "8", "-f", "json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "BUILT=0" in done.stderr.splitlines()


def test_small_calls_give_the_split_kernels_values(monkeypatch):
    # so whether a call of SPLIT_MIN .. SPLIT_BUILD_MIN candidates takes the split kernel
    # (built already by a larger call) or the whole one changes no value
    import numpy as np
    from spaces import space_inputs

    from hardware_catalog import load_catalog
    from planner.engine.run import kernel_run
    from planner.engine.run.kernel_run import evaluate_inputs

    inputs = space_inputs(load_catalog(), "llama3-8b", "h100-sxm", max_gpus=64)
    small = {k: v[:300] if np.ndim(v) else v for k, v in inputs.items()}
    monkeypatch.setattr(kernel_run, "SPLIT_MIN", 10**9)  # the whole kernel
    whole = evaluate_inputs(small, compiled=False)
    monkeypatch.setattr(kernel_run, "SPLIT_MIN", 64)
    monkeypatch.setattr(kernel_run, "SPLIT_BUILD_MIN", 0)  # the split kernel, built here
    split = evaluate_inputs(small, compiled=False)
    for name in whole:
        assert np.array_equal(whole[name], split[name], equal_nan=True), name


def test_the_capplan_process_collects_less_often():
    # main() without argv is the capplan process: the young generation is collected every
    # YOUNG_COLLECTION_ALLOCATIONS allocations; called with argv (tests, notebooks) it
    # leaves the caller's collector alone
    probe = ("import gc, sys\n"
             "from planner.cli.main import YOUNG_COLLECTION_ALLOCATIONS, main\n"
             "before = gc.get_threshold()\n"
             "main(['--version'])\n"
             "assert gc.get_threshold() == before, gc.get_threshold()\n"
             "sys.argv = ['capplan', '--version']\n"
             "main()\n"
             "assert gc.get_threshold() == (YOUNG_COLLECTION_ALLOCATIONS, *before[1:])\n"
             "print('OK')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                        "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("OK")
