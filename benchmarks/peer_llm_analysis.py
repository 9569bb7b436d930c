"""Side-by-side peer benchmark: llm-analysis (Cheng Li, 0.2.2) on the same configurations.

llm-analysis is a per-configuration Python calculator. Run it in its own virtual
environment (it is not a capplan dependency):

    python -m venv /tmp/peer && /tmp/peer/bin/pip install llm-analysis==0.2.2
    /tmp/peer/bin/python benchmarks/peer_llm_analysis.py

It evaluates OPT-175B on A100-SXM-80GB over a grid of (TP, PP, micro-batch) layouts
with 1,024 GPUs and prints configurations per second and its predicted step times,
for comparison with `python benchmarks/bench_evaluate.py` and
`python benchmarks/peer_llm_analysis.py --capplan` (capplan on the same grid).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import sys
import time

GPUS, GBS, SEQ = 1024, 2048, 2048
GRID = [(tp, pp, mb) for tp, pp, mb in itertools.product((1, 2, 4, 8), (1, 2, 4, 8, 12, 16),
                                                         (1, 2, 4))
        if GBS % ((GPUS // (tp * pp)) * mb) == 0]


def run_peer() -> None:
    from llm_analysis.analysis import train

    logging.disable(logging.CRITICAL)
    start = time.perf_counter()
    times = []
    for tp, pp, mb in GRID:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            out = train(model_name="facebook_opt-175b", gpu_name="a100-sxm-80gb",
                        tp_size=tp, pp_size=pp, total_num_gpus=GPUS, batch_size_per_gpu=mb,
                        global_batch_size=GBS, seq_len=SEQ, total_num_tokens=int(300e9),
                        activation_recomputation=2, flops_efficiency=0.5,
                        hbm_memory_efficiency=0.9, log_level="CRITICAL")
        times.append(out["latency_per_iter"])
    seconds = time.perf_counter() - start
    print(f"llm-analysis: {len(GRID)} configurations in {seconds:.2f} s = "
          f"{len(GRID) / seconds:,.1f} configurations/s")
    for (tp, pp, mb), t in list(zip(GRID, times, strict=True))[:5]:
        print(f"  TP{tp} PP{pp} mb{mb}: {t:.1f} s/iteration")


def run_capplan() -> None:
    import numpy as np

    from hardware_catalog import load_catalog
    from planner import evaluate

    catalog = load_catalog()
    tp, pp, mb = (np.array(column) for column in zip(*GRID, strict=True))
    for label, call in [
        ("one evaluate() call per configuration", lambda: [
            evaluate(catalog=catalog, model="opt-175b", hardware="a100-80gb", gpus=GPUS,
                     tp=int(t), pp=int(p), global_batch=GBS, micro_batch=int(m), seq_len=SEQ,
                     recompute="full", zero=1).loc[0, "step_time_s"]
            for t, p, m in GRID]),
        ("one vectorised evaluate() call", lambda: evaluate(
            catalog=catalog, model="opt-175b", hardware="a100-80gb", gpus=GPUS, tp=tp, pp=pp,
            global_batch=GBS, micro_batch=mb, seq_len=SEQ, recompute="full",
            zero=1)["step_time_s"].tolist()),
    ]:
        start = time.perf_counter()
        times = call()
        seconds = time.perf_counter() - start
        print(f"capplan, {label}: {len(GRID)} in {seconds:.3f} s = "
              f"{len(GRID) / seconds:,.1f} configurations/s")
    for (tp, pp, mb), t in list(zip(GRID, times, strict=True))[:5]:
        print(f"  TP{tp} PP{pp} mb{mb}: {t:.1f} s/iteration")


if __name__ == "__main__":
    run_capplan() if "--capplan" in sys.argv else run_peer()
