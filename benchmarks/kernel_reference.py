"""Write tests/data/kernel_reference.npz: kernel inputs and outputs of a fixed set of layouts.

The fixture pins the numbers the generated kernel produces, so that a refactoring of
the run model (planner/engine/run/model.py) can be checked to change nothing
(tests/test_kernel_reference.py, relative tolerance 1e-12).  It spans dense, MoE, GQA
and tied-embedding models, eight accelerators, every recompute mode, ZeRO stage,
TP/PP/CP/EP/VP, flash attention on/off, the four checkpoint schemes, both cost bases,
several sites, reliability profiles and precisions.

A deliberate physics change regenerates it (and says so in its commit)::

    python benchmarks/kernel_reference.py

Rows are drawn from ``enumerate_layouts`` with a fixed seed, so the same catalog and
code give the same file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's code, not an installed capplan

from hardware_catalog import load_catalog  # noqa: E402
from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags  # noqa: E402
from planner.engine.run.kernel_run import evaluate_inputs  # noqa: E402
from planner.engine.run.model import INPUTS, OUTPUTS  # noqa: E402
from planner.engine.run.run_inputs import RunChoices, base_inputs  # noqa: E402

OUT = ROOT / "tests" / "data" / "kernel_reference.npz"
ROWS_PER_CASE = 24
SEED = 20261123
OVERLAPS = ("tp_overlap", "dp_overlap", "cp_overlap", "ep_overlap")

#: (model, hardware, base_inputs keywords, flash attention)
CASES = [
    ("llama3-70b", "h100-sxm", {}, True),                                  # GQA, untied
    ("llama3-70b", "h100-sxm", {"precision": "fp8", "checkpoint": "sync"}, False),
    ("llama3-8b", "gb200", {"seq_len": 32768, "checkpoint": "in-memory"}, True),  # CP, NVL72
    ("mixtral-8x7b", "mi300x", {"cost_basis": "tco", "site": "france"}, True),   # MoE, EP
    ("deepseek-v3", "h800", {"reliability": "llama3-405b"}, True),        # MoE + shared experts
    ("gpt3-175b", "a100-80gb", {"checkpoint": "sync", "cost_basis": "tco"}, False),  # MHA, GELU
    ("bloom-176b", "a100-80gb", {"reliability": "bloom-176b", "site": "norway"}, False),
    ("llama3.2-1b", "l40s", {"checkpoint": "in-memory"}, True),          # tied embeddings
    ("gpt2-small", "tpu-v5p", {"cost_basis": "tco"}, False),               # tied, dropout
    ("tinyllama-1.1b", "gaudi3", {"site": "singapore"}, True),
    ("llama3.1-405b", "b200", {"seq_len": 16384, "reliability": "meta-rsc"}, True),
    ("megatron-18.4b", "mi250x", {"checkpoint": "sync", "site": "quebec"}, False),
    ("llama3-8b", "h200", {"checkpoint": "gockpt"}, True),                # GoCkpt
]


def case_inputs(catalog, model, hardware, kwargs, flash, rng) -> dict[str, np.ndarray]:
    """Run-model inputs of ``ROWS_PER_CASE`` layouts of one case drawn with ``rng``."""
    x = base_inputs(catalog, RunChoices(model=model, hardware=hardware, tokens=1e12, **kwargs))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]),
        # without flash attention, selective recompute differs from none: draw it there
        # (a search drops it where none is tried: space.search_recompute_codes)
        options=SpaceOptions(min_gpus=8, max_gpus=16384,
                             **({} if flash else {"recompute": ("selective", "full")})))
    n = len(layout["gpus"])
    pick = np.sort(rng.choice(n, size=min(ROWS_PER_CASE, n), replace=False))
    layout = {k: v[pick] for k, v in layout.items()}
    flags = layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                         layers=x["layers"], flash_attention=flash)
    merged = {**x, **flags}
    # the catalog's overlaps hide CP (and often TP/DP) communication entirely; half of
    # the rows draw them at random so that every communication term is exercised
    for name in OVERLAPS:
        drawn = rng.uniform(0.0, 1.0, size=pick.shape)
        merged[name] = np.where(np.arange(pick.size) % 2 == 1, drawn, x[name])
    return {name: np.broadcast_to(np.asarray(merged[name], dtype=float), pick.shape).copy()
            for name in INPUTS}


def build() -> dict[str, np.ndarray]:
    catalog = load_catalog()
    rng = np.random.default_rng(SEED)
    parts = [case_inputs(catalog, *case, rng) for case in CASES]
    inputs = {name: np.concatenate([p[name] for p in parts]) for name in INPUTS}
    outputs = evaluate_inputs(inputs)
    return {
        "input_names": np.array(list(INPUTS)),
        "inputs": np.column_stack([inputs[name] for name in INPUTS]),
        "output_names": np.array(list(OUTPUTS)),
        "outputs": np.column_stack([outputs[name] for name in OUTPUTS]),
    }


def main() -> None:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **data)
    print(f"{OUT}: {data['inputs'].shape[0]} layouts, {len(data['input_names'])} inputs, "
          f"{len(data['output_names'])} outputs")


if __name__ == "__main__":
    main()
