"""Calibrate the catalog's efficiency parameters against published measurements.

Procedure (run ``python benchmarks/calibrate.py``; it prints the fitted values and
the residuals, and with ``--write`` updates the catalog TOMLs in place):

1. Cases: :func:`planner.validate.load_cases` maps every measured run to kernel inputs
   (rules in docs/validation.md).  Only the FIT subset enters the objective
   (``planner.validate.FIT_RULES``: SC21 rows 1, 3, 5, 7, 9; vTrain multi-node even rows;
   every 10th vTrain single-node row; llm-foundry runs on 8 or 64 GPUs).  Everything
   else, plus BLOOM, OPT and the GPT-3 175B example, is held out.
2. Parameters (one value per chip, shared by every run on it; no per-run knob):
   ``gemm_max_efficiency`` of the A100 (40 GB and 80 GB share the silicon: one value for
   both) and of the H100 SXM; ``step_time_cv`` of the ``benchmark`` reliability profile
   (its pause probability is 0, see that file).
3. Objective: the mean over datasets of the fit-subset MAPE (each dataset counts once,
   so the 144 vTrain single-node rows do not drown the 5 SC21 rows), minimised by grid
   search: A100 ``gemm_max_efficiency`` 0.600..0.950 x ``step_time_cv`` {0, .005, .01,
   .015, .02} on the A100 rows, then H100 ``gemm_max_efficiency`` 0.400..0.850 on the
   H100 rows (steps of 0.025).
4. Why so few free parameters: a least-squares fit of all five efficiencies per chip
   (scipy.optimize.least_squares, soft-L1 on log errors; tried, 2026-11-23) ran to the
   bounds (GEMM efficiency 1.0 with a 1,400-wide half-efficiency dimension, bus
   efficiencies 1.0, pause probability at its cap) because it used them to stand in for
   terms the model lacks (tensor parallelism across nodes, per-kernel launch overheads of
   tiny models, flash-attention efficiency at long sequences; docs/validation.md).  The
   other efficiencies keep their micro-benchmark values (nccl-tests, STREAM-like copies).

Outcome (2026-11-23): the grid's optimum is A100 0.70 with step_time_cv 0 (SC21 MAPE 2.5 %),
but a straggler-free profile contradicts the production evidence the default profile encodes and
breaks tests/test_accuracy_sanity.py (which predicts SC21 with the default profile). The catalog
therefore keeps A100 0.80 (SC21 MAPE 3.2 % with the default straggler values, which the
``benchmark`` profile copies) and keeps H100 at the cuBLAS value 0.75: the H100 grid under those
straggler values prefers 0.50, which only absorbs missing flash-attention/FSDP terms.
Do not run ``--write`` without re-checking that trade-off.

Public micro-benchmarks used as priors/sanity bounds: nccl-tests all_reduce_perf busbw
(8x A100 SXM4 ~230-250 GB/s of 300 GB/s NVLink; multi-node HDR ~ 85-95 % of line rate),
cuBLAS GEMM sweeps (A100 bf16 large GEMMs 250-280 TFLOP/s of 312; H100 SXM 600-780 of
989 TFLOP/s).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hardware_catalog import load_catalog  # noqa: E402
from planner import validate as v  # noqa: E402

CHIPS = {"a100": ("a100-80gb", "a100-40gb"), "h100": ("h100-sxm",)}
CHIP_PARAMS = ("gemm_max_efficiency",)
FIT_DATASETS = ("sc21", "vtrain-multi", "vtrain-single", "llm-foundry-a100", "llm-foundry-h100")


def parameter_names() -> list[tuple[str, str]]:
    names = [(chip, p) for chip in CHIPS for p in CHIP_PARAMS]
    return names + [("rel:benchmark", "step_time_cv")]


def to_params(vector) -> dict:
    params: dict[str, dict] = {}
    for (chip, name), value in zip(parameter_names(), vector, strict=True):
        for hw in CHIPS.get(chip, (chip,)):
            params.setdefault(hw, {})[name] = float(value)
    return params


def start_vector(catalog) -> np.ndarray:
    out = []
    for chip, name in parameter_names():
        if chip not in CHIPS:
            out.append({"step_time_cv": 0.01}[name])
        else:
            out.append(getattr(catalog.accelerator(CHIPS[chip][0]), name).value)
    return np.array(out, dtype=float)


def objective(cases, catalog, params) -> float:
    """Mean over datasets of the fit-subset MAPE (each dataset counts once)."""
    pred = v.predict(cases, catalog=catalog, params=params)
    err = (pred.predicted / pred.measured - 1).abs()
    return float(err.groupby(pred.dataset).mean().mean())


def fit(catalog=None, verbose=True):
    """Grid search: A100 gemm_max_efficiency x benchmark step_time_cv, then H100."""
    catalog = catalog or load_catalog()
    cases = v.load_cases(FIT_DATASETS)
    fit_cases = cases[cases.fit]
    a100 = fit_cases[fit_cases.hardware.str.startswith("a100")]
    h100 = fit_cases[fit_cases.hardware == "h100-sxm"]
    t = time.perf_counter()
    grid = [(g, cv) for g in np.arange(0.60, 0.951, 0.025) for cv in (0.0, 0.005, 0.01, 0.015, 0.02)]
    scores = [(objective(a100, catalog, to_params([g, 0.75, cv])), g, cv) for g, cv in grid]
    best_a100, g_a100, cv = min(scores)
    scores_h = [(objective(h100, catalog, to_params([g_a100, g, cv])), g)
                for g in np.arange(0.40, 0.851, 0.025)]
    best_h100, g_h100 = min(scores_h)
    x = np.array([g_a100, g_h100, cv])
    if verbose:
        print(f"fit: {len(grid) + len(scores_h)} evaluations, {time.perf_counter() - t:.1f} s; "
              f"A100 objective {best_a100:.4f}, H100 objective {best_h100:.4f}")
        for (chip, name), value in zip(parameter_names(), x, strict=True):
            print(f"  {chip:5s} {name:28s} {value:.4g}")
    return x, (best_a100, best_h100)


TOML_LINE = re.compile(r"^(?P<name>\w+) = \{ value = [^,]+, source = \"[^\"]*\", "
                       r"as_of = [0-9-]+, estimate = (true|false)(, note = \"[^\"]*\")? \}$",
                       re.M)


def write_values(values: dict[str, dict[str, float]], notes: dict[str, str], source: str) -> None:
    """Replace catalog Quantity lines in place (accelerators and benchmark profile)."""
    today = date.today().isoformat()
    files = {hw: ROOT / "hardware_catalog/data/accelerators" / f"{hw}.toml"
             for hw in values if hw != "benchmark"}
    files["benchmark"] = ROOT / "hardware_catalog/data/reliability/benchmark.toml"
    for key, path in files.items():
        text = path.read_text()
        for name, value in values.get(key, {}).items():
            line = (f'{name} = {{ value = {value:.4g}, source = "{source}", as_of = {today}, '
                    f'estimate = true, note = "{notes.get(name, "")}" }}')
            text, n = re.subn(rf"^{name} = \{{.*\}}$", line, text, flags=re.M)
            assert n == 1, (path, name)
        path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the values into the catalog")
    args = ap.parse_args(argv)
    catalog = load_catalog()
    x, _ = fit(catalog)
    params = to_params(x)
    cases = v.load_cases()
    pred = v.predict(cases, catalog=catalog, params=params)
    summary = v.summarise(pred)
    for s in summary:
        print(f"  {s['dataset']:18s} fit MAPE {s['fit_mape']:.3f} (n={s['fit_count']})  "
              f"held-out MAPE {s['held_out_mape']:.3f} (n={s['held_out_count']})  "
              f"bias {s['bias']:+.3f}")
    if args.write:
        residual = {s["dataset"]: (s["fit_mape"], s["held_out_mape"]) for s in summary}
        text = "; ".join(f"{k} fit {a:.1%} / held-out {b:.1%}" for k, (a, b) in residual.items()
                         if a == a)
        values = {hw: {k: val for k, val in params[hw].items()} for hw in params if hw != "*"}
        values = {hw: d for hw, d in values.items() if not hw.startswith("rel:")}
        values["benchmark"] = {"step_time_cv": params["rel:benchmark"]["step_time_cv"]}
        source = (f"benchmarks/calibrate.py grid search minimising the mean per-dataset MAPE over the "
                  f"FIT subset of planner/validate.py (FIT_RULES), {date.today().isoformat()}")
        write_values(values, {k: f"fitted; MAPE {text}" for k in
                              (*CHIP_PARAMS, "step_time_cv", "pause_probability_per_step")},
                     source)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
