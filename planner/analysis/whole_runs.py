"""Whole training runs predicted from the options a user has, against their published totals.

Each row of ``hardware_catalog/data/validation/whole_runs.csv`` is one published run written
as ``capplan evaluate`` options (model, accelerator, GPUs, layout, batch, tokens, stack,
reliability profile, site, site class, checkpointing) and the totals its authors published
(GPU-hours, wall days, GPU and total energy, CO2e, interruptions; blank where not published).
No row carries a correction factor: every parameter is the catalog's.

``phases`` names a scenario file (relative to the repository, e.g.
``docs/scenarios/whole-runs/llama3-405b.toml``) whose ``[[phases]]`` (batch ramp, context extension, a
first stage on fewer GPUs) and ``[faults]`` (checkpoint interval, loss spikes ...) are the
run's, as a user would write them; the row is then evaluated exactly as
``capplan evaluate --scenario FILE`` with the row's options as flags (the same code path,
which is the command line's: :mod:`planner.cli.evaluated_runs` runs the rows). Blank means one
phase of ``tokens`` at the row's layout and batch (``capplan evaluate`` with the row's
options). This module holds the data and what is compared; it imports nothing above the
analysis layer.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from hardware_catalog import load_catalog

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "hardware_catalog" / "data" / "validation" / "whole_runs.csv"

#: Published quantities compared, with their unit and the predicted column each is compared
#: with (``interruptions`` is the expected failures, over ``interruptions_window_days`` when
#: the source gives a count for a window of the run, at the failure rate of the phase
#: ``interruptions_phase`` names when the source counts them in one phase). Energies some
#: authors estimate rather than measure are compared with the same estimate from capplan's
#: numbers: ``energy_gpu_tdp_mwh`` = GPU-hours x the accelerator's TDP (BLOOM),
#: ``energy_gpu_tdp_compute_mwh`` = failure-free compute GPU-hours x TDP (OPT).
QUANTITIES = {
    "gpu_hours": ("GPU-h", "gpu_hours"),
    "wall_days": ("d", "wall_days"),
    "energy_gpu_mwh": ("MWh", "energy_gpu_mwh"),
    "energy_gpu_tdp_mwh": ("MWh", "energy_gpu_tdp_mwh"),
    "energy_gpu_tdp_compute_mwh": ("MWh", "energy_gpu_tdp_compute_mwh"),
    "energy_total_mwh": ("MWh", "energy_mwh"),
    "co2e_t": ("t", "co2e_t"),
    "co2e_operational_t": ("t", "co2e_operational_t"),
    "interruptions": ("count", "expected_failures"),
}

#: Columns that are ``evaluate`` options: integers, then strings.
INT_COLUMNS = ("gpus", "tp", "pp", "cp", "ep", "vp", "micro_batch", "global_batch", "seq_len",
        "zero", "shard_group")
STR_COLUMNS = ("model", "hardware", "recompute", "stack", "reliability", "site", "site_class",
        "checkpoint")

#: The ratio band the issue asks every published quantity to fall in.
TARGET = (0.75, 1.33)


def load(path: Path = DATA) -> list[dict]:
    """The runs of the dataset, as rows of strings (one dict per run)."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def overrides(row: dict) -> dict:
    """Model-file values of one run: the (padded) vocabulary, as a model TOML gives it."""
    return {"vocab": int(row["vocab"])} if row.get("vocab") else {}


def phases_file(row: dict) -> Path | None:
    """The run's scenario file with its ``[[phases]]`` (None: one phase)."""
    if not row.get("phases"):
        return None
    path = ROOT / row["phases"]
    if not path.is_file():
        raise ValueError(f"{row['run_id']}: phases file {path} does not exist")
    return path


def tdp_w(hardware: str) -> float:
    """The accelerator's maximum power (TDP) [W] from the catalog."""
    return float(load_catalog().accelerator(hardware).max_power_w.value)


def summary(rows: list[dict]) -> dict:
    """Count of compared quantities, how many fall in :data:`TARGET`, geometric mean error,
    and how many published values fall inside the prediction's P10-P90 band (a calibrated
    uncertainty model would hold ~80 %)."""
    logs = [abs(math.log(r["ratio"])) for r in rows]
    return {"compared": len(rows), "in_target": sum(r["in_target"] for r in rows),
            "target": list(TARGET),
            "geomean_abs_error": math.exp(sum(logs) / len(logs)) - 1 if logs else None,
            "in_p10_p90": sum(bool(r.get("in_band")) for r in rows)}
