"""Benchmark: this checkout's generated kernel against another generated kernel file.

Run: OMP_NUM_THREADS=1 python benchmarks/bench_kernel_vs.py FORMER_KERNEL.py
     (e.g. ``git show f5b329f:planner/engine/run/_kernel_generated.py > /tmp/former_kernel.py``;
     both must have the same INPUTS/OUTPUTS)

Both kernels run alternately on the same inputs (llama3-70b on h100-sxm, the default
layout space, chunks of 4,096), best of 5 per round, CPU time; prints configurations
per CPU-second of each and the largest relative difference of their outputs.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # measure this checkout's code, not an installed one


def load(path: str):
    spec = importlib.util.spec_from_file_location("former_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    from hardware_catalog import load_catalog
    from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
    from planner.engine.run import _kernel_generated as now
    from planner.engine.run.kernel_run import CHUNK
    from planner.engine.run.model import INPUTS
    from planner.engine.run.run_inputs import RunChoices, base_inputs

    former = load(sys.argv[1])
    assert former.INPUTS == now.INPUTS and former.OUTPUTS == now.OUTPUTS
    x = base_inputs(load_catalog(), RunChoices(model="llama3-70b", hardware="h100-sxm", tokens=15e12))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]), options=SpaceOptions())
    inputs = {**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                  layers=x["layers"])}
    n = len(inputs["gpus"])
    args = [inputs[k] for k in INPUTS]

    def seconds(kernel) -> float:
        start = time.process_time()
        with np.errstate(all="ignore"):
            for s in range(0, n, CHUNK):
                result = kernel(*[v[s:s + CHUNK] if np.ndim(v) else v for v in args])
                del result
        return time.process_time() - start

    with np.errstate(all="ignore"):
        a, b = former.kernel(*args), now.kernel(*args)
    diff = max(float(np.nanmax(np.abs(np.asarray(u, float) - np.asarray(v, float))
                               / np.maximum(np.abs(np.asarray(u, float)), 1e-300)))
               for u, v in zip(a, b, strict=True))
    print(f"{n:,} configurations; largest relative difference of any output: {diff:.2g}")
    for _ in range(3):
        t_former = min(seconds(former.kernel) for _ in range(5))
        t_now = min(seconds(now.kernel) for _ in range(5))
        print(f"former {n / t_former / 1e6:.2f} M/s, now {n / t_now / 1e6:.2f} M/s "
              f"(now / former {t_former / t_now:.2f})")


if __name__ == "__main__":
    main()
