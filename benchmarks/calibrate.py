"""Calibrate the catalog's efficiency parameters against published measurements.

Procedure (``python benchmarks/calibrate.py``; it prints the fitted values and the residual
MAPE of every dataset, fit subset and held-out rows separately; ``--write`` puts the fitted
values into the catalog and planner/execution.toml, keeping each entry's ``source`` text):

1. Cases: :func:`planner.analysis.validate.load_cases` maps every measured run to kernel inputs
   (rules in docs/validation.md).  Only the FIT subset enters the objective
   (``planner.analysis.validate.FIT_RULES``: SC21 rows 1, 3, 5, 7, 9; vTrain multi-node even rows;
   every 10th vTrain single-node row; llm-foundry runs on 8 or 64 GPUs).  Everything else,
   plus BLOOM, OPT and the GPT-3 175B example, is held out.
2. Parameters, one value each, shared by every run (no per-run knob):
   ``gemm_max_efficiency`` of the A100 (40 GB and 80 GB share the silicon: one value for
   both) and of the H100 SXM (written to the H200 and H800 too: the same GH100 silicon;
   the B200/GB200 entries copy it by hand, having no measured runs); and the software
   terms of planner/execution.toml:
   ``layer_overhead_s`` (host time to launch a layer's forward pass),
   ``host_overlap_exponent`` (how sharply host and GPU time overlap),
   ``collective_overhead_s`` (fixed cost per TP collective) and
   ``attention_efficiency_factor`` (flash attention core relative to large GEMMs).
3. Objective: the mean over datasets of the fit-subset MAPE (each dataset counts once, so
   the 144 vTrain single-node rows do not drown the 5 SC21 rows), minimised by coordinate
   descent over the grids in ``GRID`` (each parameter in turn, others fixed, until a full
   round changes nothing).
4. Why grids and not least squares: a free least-squares fit of every efficiency (tried,
   2026-11-23) ran to its bounds, using bus efficiencies and the GEMM half-efficiency
   dimension to stand in for terms the model then lacked.  The other efficiencies keep
   their micro-benchmark values (nccl-tests busbw, STREAM-like copies).

Outcome (2026-11-23, after the host-bound launch model of formulas.compute.host_bound_time
and the two-level ZeRO-3 all-gather of formulas.communication.hierarchical_allgather_time):
A100 0.79, H100 0.575, layer_overhead_s 0.9 ms, host_overlap_exponent 4,
collective_overhead_s 80 us, attention_efficiency_factor 0.6 (87 evaluations, 3.4 s); mean
fit-subset MAPE 6.5 % (sc21 1.6, vtrain-multi 7.8, vtrain-single 8.1, llm-foundry A100 8.1,
H100 6.6); held-out rows: docs/validation.md.  Exponents 2, 3, 4, 6 scored 6.77, 6.67, 6.67,
6.79 with the other terms refitted (before the all-gather change).  Before the launch model
(launch time added to GPU time instead of overlapping it) the same search reached 8.0 % with
vTrain single-node at 14.4 %.

Public micro-benchmarks used as priors/sanity bounds: nccl-tests all_reduce_perf busbw
(8x A100 SXM4 ~230-250 GB/s of 300 GB/s NVLink; multi-node HDR ~ 85-95 % of line rate),
cuBLAS GEMM sweeps (A100 bf16 large GEMMs 250-280 TFLOP/s of 312; H100 SXM 700-780 of
989 TFLOP/s; the fitted H100 0.575 sits below them: clock-throttled training kernels).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hardware_catalog import load_catalog  # noqa: E402
from planner.analysis import validate as v  # noqa: E402
from planner.engine.scenario import execution_defaults, stack_factor  # noqa: E402

A100 = ("a100-80gb", "a100-40gb")
HOPPER = ("h100-sxm", "h200", "h800")  # same GH100 silicon: one value
BLACKWELL = ("b200", "gb200", "b300", "gb300")  # B200/GB200 measured; B300/GB300 share it
#: Stacks by attention kernel and launch path: FlashAttention-2 (eager PyTorch) stacks share
#: one fused-attention factor; every stack launches eagerly (no CUDA graphs): one overhead.
FA2_STACKS = ("stack:llm-foundry-2023", "stack:torchtitan-fsdp2", "stack:internevo-2023",
              "stack:megatron-lm-2021")
EAGER_STACKS = (*FA2_STACKS, "stack:megatron-core-2025")
MCORE = ("stack:megatron-core-2025",)
FIT_DATASETS = ("sc21", "vtrain-multi", "vtrain-single", "llm-foundry-a100", "llm-foundry-h100",
                "modern-runs")

#: (owners, parameter) -> candidate values.  Owners: accelerator ids, "stack:<id>" (a
#: software stack in hardware_catalog/data/stacks) or "*" (planner/engine/execution.toml).
#: A ``gemm_max_efficiency_<precision>`` parameter is the kernel's ``gemm_max_efficiency``
#: for the cases of that precision.
GRID: dict[tuple[tuple[str, ...], str], list[float]] = {
    (A100, "gemm_max_efficiency"): [0.74, 0.76, 0.78, 0.79, 0.80, 0.81, 0.82, 0.84, 0.86],
    (HOPPER, "gemm_max_efficiency"): [0.55, 0.575, 0.60, 0.625, 0.65, 0.675, 0.70, 0.725,
                                      0.75, 0.775, 0.80],
    (HOPPER, "gemm_max_efficiency_fp8"): [0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70],
    (BLACKWELL, "gemm_max_efficiency"): [0.50, 0.55, 0.575, 0.60, 0.65, 0.70, 0.75],
    (BLACKWELL, "gemm_max_efficiency_fp8"): [0.40, 0.45, 0.50, 0.55, 0.60, 0.65],
    (EAGER_STACKS, "layer_overhead_s"): [3e-4, 5e-4, 7e-4, 8e-4, 8.5e-4, 9e-4, 9.5e-4, 1e-3,
                                         1.2e-3],
    (("*",), "host_overlap_exponent"): [2.0, 3.0, 4.0, 6.0],
    (("*",), "collective_overhead_s"): [0.0, 4e-5, 8e-5, 1.2e-4, 1.6e-4, 2e-4],
    (FA2_STACKS, "attention_efficiency_factor"): [0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7,
                                                  0.8],
    (tuple(f"stack:llm-foundry-2023@{hw}" for hw in HOPPER), "attention_efficiency_factor"):
        [0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6],
    (tuple(f"stack:llm-foundry-2023@{hw}" for hw in HOPPER), "gemm_efficiency_factor"):
        [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
    (MCORE, "attention_efficiency_factor"): [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    (MCORE, "tp_overlap"): [0.0, 0.25, 0.5, 0.75, 0.9],
    (("stack:llm-foundry-2023",), "dp_overlap"): [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
    (("stack:torchtitan-fsdp2",), "dp_overlap"): [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
}
PRECISION_SUFFIX = "gemm_max_efficiency_"


def start_values(catalog) -> dict:
    execution = execution_defaults()
    out = {}
    for owners, name in GRID:
        first = owners[0]
        if first == "*":
            out[(owners, name)] = execution[name]
        elif first.startswith("stack:"):
            stack, _, hw = first[6:].partition("@")
            out[(owners, name)] = stack_factor(catalog.stack(stack), name, hw or None).value \
                if name.endswith("_factor") else getattr(catalog.stack(stack), name).value
        else:
            acc = catalog.accelerator(first)
            q = getattr(acc, name, None)
            out[(owners, name)] = (q or acc.gemm_max_efficiency).value
    return out


def to_params(values: dict) -> dict:
    """``planner.analysis.validate.predict`` params: per accelerator id (``id:precision``
    for one precision), ``stack:<id>`` per software stack, "*" for execution terms."""
    params: dict[str, dict] = {}
    for (owners, name), value in values.items():
        for key in owners:
            if name.startswith(PRECISION_SUFFIX):
                key, name_in = f"{key}:{name[len(PRECISION_SUFFIX):]}", "gemm_max_efficiency"
            else:
                name_in = name
            params.setdefault(key, {})[name_in] = float(value)
    return params


def case_errors(pred):
    """Absolute relative errors with the set each counts in: the dataset, and for
    modern-runs its issue-13 group (each group counts once, as each dataset does)."""
    err = (pred.predicted / pred.measured - 1).abs()
    label = pred.dataset.where(pred.dataset != "modern-runs",
                               "modern-runs/" + pred.get("group", "").astype(str))
    return err, label


def objective(cases, catalog, values) -> float:
    """Mean over datasets (modern-runs: over its groups) of the fit-subset MAPE."""
    pred = v.predict(cases, catalog=catalog, params=to_params(values))
    err, label = case_errors(pred)
    return float(err.groupby(label).mean().mean())


def fit(catalog=None, verbose=True, rounds: int = 4):
    """Coordinate descent over GRID from the catalog's current values."""
    catalog = catalog or load_catalog()
    cases = v.load_cases(FIT_DATASETS)
    fit_cases = cases[cases.fit & (cases.unexpressible == "")]
    values = start_values(catalog)
    best = objective(fit_cases, catalog, values)
    evaluations, t = 1, time.perf_counter()
    for _ in range(rounds):
        changed = False
        for key, grid in GRID.items():
            for candidate in grid:
                trial = {**values, key: candidate}
                score = objective(fit_cases, catalog, trial)
                evaluations += 1
                if score < best - 1e-6:
                    best, values, changed = score, trial, True
        if not changed:
            break
    if verbose:
        print(f"fit: {evaluations} evaluations, {time.perf_counter() - t:.1f} s; "
              f"mean fit-subset MAPE {best:.4f}")
        for (owners, name), value in values.items():
            print(f"  {'/'.join(owners)[:40]:40s} {name:28s} {value:.4g}")
    return values, best


def toml_float(value: float) -> str:
    """4 significant digits, always a TOML float (``4.0``, ``9.0e-4``, ``0.575``)."""
    text = f"{value:.4g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        mantissa = mantissa if "." in mantissa else mantissa + ".0"
        return f"{mantissa}e{int(exponent)}"
    return text if "." in text else text + ".0"


def replace_value(path: Path, pattern: str, value: float) -> None:
    """Put ``value`` after the single match of ``pattern`` (its group 1) in ``path``."""
    text, n = re.subn(pattern, rf"\g<1>{toml_float(value)}", path.read_text(), flags=re.M)
    assert n == 1, (path, pattern)
    path.write_text(text)


def write_values(values: dict) -> None:
    """Replace the ``value`` of each fitted entry in place (sources are kept)."""
    data = ROOT / "hardware_catalog" / "data"
    for (owners, name), value in values.items():
        for owner in owners:
            if owner == "*":
                replace_value(ROOT / "planner" / "engine" / "execution.toml",
                              rf"(\[{name}\]\nvalue = )[^\n]+", value)
                continue
            hw = ""
            if owner.startswith("stack:"):
                stack, _, hw = owner[6:].partition("@")
                path = data / "stacks" / f"{stack}.toml"
            else:
                path = data / "accelerators" / f"{owner}.toml"
            # the entry's top-level line, or for a stack on one accelerator the line in its
            # [on_accelerator.<id>] table (lines up to the name: none opens a table)
            start = rf"^\[on_accelerator\.{re.escape(hw)}\]\n" if hw else r"\A"
            replace_value(path, rf"({start}(?:(?!\[)[^\n]*\n)*?{name} = \{{ value = )[^,]+",
                          value)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true",
                    help="write the fitted values into the catalog and execution.toml")
    args = ap.parse_args(argv)
    catalog = load_catalog()
    values, _ = fit(catalog)
    pred = v.predict(v.load_cases(), catalog=catalog, params=to_params(values))
    err, label = case_errors(pred)
    fit_rows = pred.fit & pred.predicted.notna()
    for name, e in err.groupby(label):
        on = fit_rows[e.index]
        print(f"  {name:40s} fit {e[on].mean():.3f} (n={int(on.sum())})  "
              f"held-out {e[~on].mean():.3f} (n={int((~on).sum())})")
    for s in v.summarise(pred):
        print(f"  {s['dataset']:18s} fit MAPE {s['fit_mape']:.3f} (n={s['fit_count']})  "
              f"held-out MAPE {s['held_out_mape']:.3f} (n={s['held_out_count']})  "
              f"bias {s['bias']:+.3f}")
    if args.write:
        write_values(values)
        print("wrote the values; regenerate: python -m planner.engine.kernel is not needed (inputs), "
              "but run capplan validate --write-docs and the test suite")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
