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
``capplan evaluate --scenario FILE`` with the row's options as flags (the same code path:
:func:`planner.cli.phases.apply_scenario_file`, :func:`planner.cli.phases.resolve_phases`,
:func:`planner.engine.phases.sum_phases`). Blank means one phase of ``tokens`` at the
row's layout and batch (``capplan evaluate`` with the row's options).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

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
    """The ``capplan evaluate`` options of one run: the command's defaults, then the row's.

    ``nic_gbps`` [Gb/s per GPU, one direction] is the ``--nic-gbps`` option.
    """
    call: dict = dict(_defaults())
    call |= {name: int(row[name]) for name in _INT if row.get(name)}
    call |= {name: row[name] for name in _STR if row.get(name)}
    call["tokens"] = float(row["tokens"])
    if row.get("nic_gbps"):
        call["nic_gbps"] = float(row["nic_gbps"])
    return call


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


def _defaults() -> dict:
    """The default value of every ``capplan evaluate`` run option."""
    import inspect

    from planner.cli.evaluate import evaluate
    from planner.cli.layout_options import LAYOUT_OPTIONS
    from planner.cli.phases import _default

    params = inspect.signature(evaluate).parameters
    return {name: _default(params[name]) for name in LAYOUT_OPTIONS}


def evaluate_run(row: dict) -> tuple[list[dict], dict]:
    """(each phase's row, the run's totals) as ``capplan evaluate [--scenario FILE]`` gives
    them for this run; a run without phases is one phase."""
    from planner.cli.common import flush_notices
    from planner.cli.evaluate import evaluate
    from planner.cli.layout_options import resolve
    from planner.cli.phases import apply_scenario_file, resolve_phases
    from planner.engine.phases import sum_phases

    path = phases_file(row)
    try:
        if path is None:
            run = resolve(options(row), overrides(row))
            run.row["tokens"] = float(run.echo["tokens"])
            rows = [run.row]
        else:
            opts, phases = apply_scenario_file(evaluate, options(row), str(path))
            if not phases:
                raise ValueError(f"{row['run_id']}: {path} has no [[phases]]")
            rows = [r.row for r in resolve_phases(opts, phases, overrides(row))]
    finally:
        flush_notices(False)  # layout notices of the one-shot path are not for this table
    return rows, sum_phases(rows)


def tdp_w(hardware: str) -> float:
    """The accelerator's maximum power (TDP) [W] from the catalog."""
    from hardware_catalog import load_catalog

    return float(load_catalog().accelerator(hardware).max_power_w.value)


def predict(row: dict) -> dict:
    """Predicted totals of one run (the :data:`QUANTITIES` columns, plus the phase count)."""
    phases, total = evaluate_run(row)
    total["co2e_operational_t"] = total["co2e_operational_kg"] / 1e3
    tdp = tdp_w(row["hardware"])
    total["energy_gpu_tdp_mwh"] = total["gpu_hours"] * tdp / 1e6
    compute_gpu_h = sum(float(p["solve_time_s"]) * float(p["gpus"]) for p in phases) / 3600
    total["energy_gpu_tdp_compute_mwh"] = compute_gpu_h * tdp / 1e6
    out = {column: float(total[column]) for _, column in QUANTITIES.values()}
    window = row.get("interruptions_window_days")
    if window:
        rate = out["expected_failures"] / out["wall_days"]
        if row.get("interruptions_phase"):
            named = [p for p, ph in zip(phases, phase_names(row), strict=True)
                     if ph == row["interruptions_phase"]]
            if not named:
                raise ValueError(f"{row['run_id']}: no phase {row['interruptions_phase']!r}")
            rate = float(named[0]["expected_failures"]) / float(named[0]["wall_days"])
        out["expected_failures"] = rate * float(window)
    out["phases"] = len(phases)
    return out


def phase_names(row: dict) -> list[str]:
    """The names of the run's phases (``["run"]`` for a run of one phase)."""
    path = phases_file(row)
    if path is None:
        return ["run"]
    from planner.cli import scenario_file

    return [p.name for p in scenario_file.load(str(path))["phases"]]


def compare(path: Path = DATA) -> list[dict]:
    """One row per (run, published quantity): published, predicted, ratio predicted/published."""
    rows = []
    for run in load(path):
        got = predict(run)
        for quantity, (unit, column) in QUANTITIES.items():
            if not run.get(quantity):
                continue
            published = float(run[quantity])
            ratio = got[column] / published
            rows.append({"run": run["run_id"], "quantity": quantity, "unit": unit,
                         "published": published, "predicted": got[column], "ratio": ratio,
                         "phases": got["phases"],
                         "in_target": bool(TARGET[0] <= ratio <= TARGET[1])})
    return rows


def summary(rows: list[dict]) -> dict:
    """Count of compared quantities, how many fall in :data:`TARGET`, geometric mean error."""
    logs = [abs(math.log(r["ratio"])) for r in rows]
    return {"compared": len(rows), "in_target": sum(r["in_target"] for r in rows),
            "target": list(TARGET),
            "geomean_abs_error": math.exp(sum(logs) / len(logs)) - 1 if logs else None}
