"""Whole training runs predicted from the options a user has, against their published totals.

Each row of ``hardware_catalog/data/validation/whole_runs.csv`` is one published run written
as ``capplan evaluate`` options (model, accelerator, GPUs, layout, batch, tokens, stack,
reliability profile, site, site class, checkpointing) and the totals its authors published
(GPU-hours, wall days, GPU and total energy, CO2e, interruptions; blank where not published).
No row carries a correction factor: every parameter is the catalog's.

``phases`` is reserved for the phases of a run (batch ramp, context extension, annealing):
blank means the run is evaluated as one phase of ``tokens`` at its final layout and batch,
which is how every run is expressed until scenario phases exist (issue 26 item 3).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from planner.engine.evaluator import evaluate

DATA = Path(__file__).resolve().parents[2] / "hardware_catalog" / "data" / "validation" / "whole_runs.csv"

#: Published quantities compared, with their unit and the predicted column each is compared
#: with (``interruptions`` is the expected failures, over ``interruptions_window_days`` when
#: the source gives a count for a window of the run).
QUANTITIES = {
    "gpu_hours": ("GPU-h", "gpu_hours"),
    "wall_days": ("d", "wall_days"),
    "energy_gpu_mwh": ("MWh", "energy_gpu_mwh"),
    "energy_total_mwh": ("MWh", "energy_mwh"),
    "co2e_t": ("t", "co2e_t"),
    "co2e_operational_t": ("t", "co2e_operational_t"),
    "interruptions": ("count", "expected_failures"),
}

#: Columns that are ``evaluate`` options, with their types.
_INT = ("gpus", "tp", "pp", "cp", "micro_batch", "global_batch", "seq_len", "zero",
        "shard_group")
_STR = ("model", "hardware", "recompute", "stack", "reliability", "site", "site_class",
        "checkpoint")

#: The ratio band the issue asks every published quantity to fall in.
TARGET = (0.75, 1.33)


def load(path: Path = DATA) -> list[dict]:
    """The runs of the dataset, as rows of strings (one dict per run)."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def options(row: dict) -> dict:
    """The keyword arguments of :func:`planner.engine.evaluator.evaluate` for one run.

    ``nic_gbps`` [Gb/s per GPU, one direction] is the ``--nic-gbps`` option and ``vocab``
    the model's (padded) vocabulary, as a model TOML would give it.
    """
    if row.get("phases"):
        raise ValueError(f"{row['run_id']}: run phases are not supported yet")
    call: dict = {name: int(row[name]) for name in _INT if row.get(name)}
    call |= {name: row[name] for name in _STR if row.get(name)}
    call["tokens"] = float(row["tokens"])
    overrides = {}
    if row.get("vocab"):
        overrides["vocab"] = int(row["vocab"])
    if row.get("nic_gbps"):
        overrides["scale_out_bandwidth_bytes_per_s"] = float(row["nic_gbps"]) * 1e9 / 8
    if overrides:
        call["overrides"] = overrides
    return call


def predict(row: dict, catalog=None) -> dict:
    """Predicted totals of one run (the :data:`QUANTITIES` columns, plus wall days)."""
    r = evaluate(catalog=catalog, **options(row)).iloc[0]
    r["co2e_operational_t"] = float(r["co2e_operational_kg"]) / 1e3
    out = {column: float(r[column]) for _, column in QUANTITIES.values()}
    window = row.get("interruptions_window_days")
    if window:
        out["expected_failures"] *= float(window) / out["wall_days"]
    out["mfu"] = float(r["mfu"])
    return out


def compare(catalog=None, path: Path = DATA) -> list[dict]:
    """One row per (run, published quantity): published, predicted, ratio predicted/published."""
    rows = []
    for run in load(path):
        got = predict(run, catalog)
        for quantity, (unit, column) in QUANTITIES.items():
            if not run.get(quantity):
                continue
            published = float(run[quantity])
            ratio = got[column] / published
            rows.append({"run": run["run_id"], "quantity": quantity, "unit": unit,
                         "published": published, "predicted": got[column], "ratio": ratio,
                         "in_target": bool(TARGET[0] <= ratio <= TARGET[1])})
    return rows


def summary(rows: list[dict]) -> dict:
    """Count of compared quantities, how many fall in :data:`TARGET`, geometric mean error."""
    logs = [abs(math.log(r["ratio"])) for r in rows]
    return {"compared": len(rows), "in_target": sum(r["in_target"] for r in rows),
            "target": list(TARGET),
            "geomean_abs_error": math.exp(sum(logs) / len(logs)) - 1 if logs else None}
