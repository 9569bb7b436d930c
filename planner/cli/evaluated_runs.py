"""Whole published runs evaluated as the command line evaluates them (``capplan validate
--whole-runs``): each row of :mod:`planner.analysis.whole_runs`'s dataset as ``capplan
evaluate`` options, and a row with phases as ``capplan evaluate --scenario FILE`` - the same
functions (:func:`planner.cli.scenario_phases.apply_scenario_file`,
:func:`planner.cli.scenario_phases.resolve_phases`, :func:`planner.engine.inputs.phases.sum_phases`), so
the comparison tests what a user would run.  The data, the compared quantities and the
summary stay in :mod:`planner.analysis.whole_runs`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planner.analysis import whole_runs as w
from planner.analysis.uncertainty import default_spreads, drawn_run, factors
from planner.cli import scenario_file
from planner.cli.common import flush_notices
from planner.cli.layout_options import LAYOUT_OPTIONS, layout_defaults, resolve
from planner.cli.scenario_phases import apply_scenario_file, resolve_phases
from planner.engine.inputs.phases import sum_phases

#: Draws of the uncertainty model per run for the P10-P90 band (fixed seed 0).
BAND_DRAWS = 400


def _defaults() -> dict:
    """The default value of every ``capplan evaluate`` run option."""
    defaults = layout_defaults()
    return {name: defaults[name] for name in LAYOUT_OPTIONS}


def _runs(row: dict) -> list:
    """Each phase's :class:`~planner.analysis.one_run.ResolvedRun` as ``capplan evaluate
    [--scenario FILE]`` resolves it for this run; a run without phases is one phase."""
    path = w.phases_file(row)
    try:
        if path is None:
            run = resolve(options(row), w.overrides(row))
            run.row["tokens"] = float(run.echo["tokens"])
            return [run]
        opts, phases = apply_scenario_file(layout_defaults(), options(row), str(path))
        if not phases:
            raise ValueError(f"{row['run_id']}: {path} has no [[phases]]")
        return resolve_phases(opts, phases, w.overrides(row))
    finally:
        flush_notices(False)  # layout notices of the one-shot path are not for this table


def evaluate_run(row: dict) -> tuple[list[dict], dict]:
    """(each phase's row, the run's totals) as ``capplan evaluate [--scenario FILE]`` gives
    them for this run; a run without phases is one phase."""
    rows = [r.row for r in _runs(row)]
    return rows, sum_phases(rows)


def options(row: dict) -> dict:
    """The ``capplan evaluate`` options of one run: the command's defaults, then the row's.

    ``nic_gbps`` [Gb/s per GPU, one direction] is the ``--nic-gbps`` option.
    """
    call: dict = dict(_defaults())
    call |= {name: int(row[name]) for name in w.INT_COLUMNS if row.get(name)}
    call |= {name: row[name] for name in w.STR_COLUMNS if row.get(name)}
    call["tokens"] = float(row["tokens"])
    if row.get("nic_gbps"):
        call["nic_gbps"] = float(row["nic_gbps"])
    return call


def _compared(row: dict, phases: list, total: dict) -> dict:
    """The :data:`w.QUANTITIES` columns from each phase's columns and the totals: floats,
    or arrays of draws (:func:`predict_band`), by the same arithmetic."""
    total = dict(total)
    total["co2e_operational_t"] = total["co2e_operational_kg"] / 1e3
    tdp = w.tdp_w(row["hardware"])
    total["energy_gpu_tdp_mwh"] = total["gpu_hours"] * tdp / 1e6
    compute_gpu_h = sum(np.asarray(p["solve_time_s"], dtype=float) * float(p["gpus"])
                        for p in phases) / 3600
    total["energy_gpu_tdp_compute_mwh"] = compute_gpu_h * tdp / 1e6
    out = {column: np.asarray(total[column], dtype=float)
           for _, column in w.QUANTITIES.values()}
    window = row.get("interruptions_window_days")
    if window:
        rate = out["expected_failures"] / out["wall_days"]
        if row.get("interruptions_phase"):
            named = [p for p, ph in zip(phases, phase_names(row), strict=True)
                     if ph == row["interruptions_phase"]]
            if not named:
                raise ValueError(f"{row['run_id']}: no phase {row['interruptions_phase']!r}")
            rate = (np.asarray(named[0]["expected_failures"], dtype=float)
                    / np.asarray(named[0]["wall_days"], dtype=float))
        out["expected_failures"] = rate * float(window)
    return out


def predict(row: dict) -> dict:
    """Predicted totals of one run (the :data:`w.QUANTITIES` columns, plus the phase count)."""
    phases, total = evaluate_run(row)
    out = {k: float(v) for k, v in _compared(row, phases, total).items()}
    out["phases"] = len(phases)
    return out


#: Kernel columns a run's compared quantities are computed from.
DRAWN = ("gpu_hours", "wall_days", "energy_gpu_mwh", "energy_mwh", "co2e_t",
         "co2e_operational_kg", "expected_failures", "solve_time_s")


def predict_band(row: dict, spreads: dict, draws: int = BAND_DRAWS,
                 seed: int = 0) -> dict[str, tuple[float, float]]:
    """The P10 and P90 of each compared quantity of one run under the uncertainty model
    (``spreads``: :func:`planner.analysis.uncertainty.default_spreads` or a file's): one
    set of factors per draw shared by every phase, each phase's kernel columns drawn and
    summed per draw, then the quantities computed as :func:`predict` computes them."""
    runs = _runs(row)
    f = factors(spreads, draws, 1, seed)
    phases = [{**drawn_run(r.inputs, f, draws, DRAWN), "gpus": float(r.row["gpus"])}
              for r in runs]
    total = {k: sum(p[k] for p in phases) for k in DRAWN}
    return {k: (float(np.percentile(v, 10)), float(np.percentile(v, 90)))
            for k, v in _compared(row, phases, total).items()}


def phase_names(row: dict) -> list[str]:
    """The names of the run's phases (``["run"]`` for a run of one phase)."""
    path = w.phases_file(row)
    if path is None:
        return ["run"]
    return [p.name for p in scenario_file.load(str(path))["phases"]]


def compare(path: Path = w.DATA) -> list[dict]:
    """One row per (run, published quantity): published, predicted, ratio predicted/published,
    and the P10-P90 band of the prediction under the default uncertainty model (whether
    the published value falls inside it: ``in_band``)."""
    rows = []
    spreads = default_spreads()
    for run in w.load(path):
        got = predict(run)
        band = predict_band(run, spreads)
        for quantity, (unit, column) in w.QUANTITIES.items():
            if not run.get(quantity):
                continue
            published = float(run[quantity])
            ratio = got[column] / published
            p10, p90 = band[column]
            rows.append({"run": run["run_id"], "quantity": quantity, "unit": unit,
                         "published": published, "predicted": got[column], "ratio": ratio,
                         "p10": p10, "p90": p90, "in_band": bool(p10 <= published <= p90),
                         "phases": got["phases"],
                         "in_target": bool(w.TARGET[0] <= ratio <= w.TARGET[1])})
    return rows


