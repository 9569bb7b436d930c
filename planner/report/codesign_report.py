"""The report of ``capplan codesign``: plans on a grid of hypothetical accelerators.

:func:`check_request` checks the grid and the options before any work;
:func:`codesign_report` searches every point of the grid (at the catalog accelerator's
``--confidence`` margins when asked) and returns each point's winner and its gain over
the catalog accelerator as a :class:`~planner.report.output.Report`; the command builds
the scenario and writes the report (planner/cli/codesign_command.py).
"""

from __future__ import annotations

from dataclasses import asdict

from planner.analysis.confidence import margin_payload, plan_at_confidence
from planner.analysis.uncertainty import default_spreads
from planner.engine.inputs.scenario import check_choices
from planner.engine.run.readable import count_text, quantity_text
from planner.engine.search import codesign as grid
from planner.engine.search.codesign import PARAMETERS, parse_vary
from planner.engine.search.distributed import check_scheduler
from planner.errors import CapplanError
from planner.report.output import Report, render
from planner.report.plan_report import summarize
from planner.report.progress import search_progress
from planner.report.tables import layout_text
from planner.version import version


def check_request(*, objective: str, vary, scheduler, workers) -> None:
    """CapplanError (one line) for a bad ``--objective``, no or a bad ``--vary``, a bad
    ``--scheduler``/``--workers``: before anything runs."""
    check_choices(objective=objective)
    if not vary:
        raise CapplanError("give at least one --vary NAME=VALUES (e.g. --vary "
                           "hbm_bytes=80e9,141e9,192e9)")
    parse_vary(list(vary))  # bad names and values fail before anything runs
    check_scheduler(scheduler, workers)


def codesign_report(scenario, accelerator: str, vary, format: str, *, pareto: bool = False,
                    scheduler=None, workers=None) -> Report:
    """Every point of the ``vary`` grid around ``accelerator`` planned for the checked
    ``scenario``; one row per point (its ``--objective`` winner and gain), every objective's
    winners (and with ``pareto`` the Pareto rows) in the JSON."""
    searched = scenario
    if scenario.confidence is not None:  # the catalog accelerator's margins, for every point
        margined = plan_at_confidence(scenario, default_spreads()).scenario
        scenario = scenario.with_(margins=margined.margins)
        searched = scenario.for_hardware(accelerator)
    with search_progress("co-design") as progress:
        result = grid.codesign(searched, accelerator, list(vary), scheduler=scheduler,
                               workers=workers, progress=progress)
    payload = codesign_payload(result, pareto)
    payload["scenario"].update({k: getattr(scenario, k) for k in
                                ("deadline_days", "budget_usd", "max_power_mw")})
    payload["scenario"].pop("margins", None)
    payload.update(margin_payload(scenario))
    title = (f"Co-design around {accelerator} for {scenario.model} on "
             f"{count_text(scenario.tokens)} tokens ({result.evaluated:,} configurations)")
    rows = codesign_rows(payload, scenario.objective)
    if format == "table":  # human units; JSON and CSV keep the stored values
        rows = readable_codesign_rows(rows)
    return Report(text=render(rows, format, title=title, payload=payload))


#: Objective -> (plan-summary key shown, label of the table column).
SHOWN = {"time": ("wall_days", "days"), "cost": ("cost_usd", "usd"),
         "energy": ("energy_mwh", "mwh"), "carbon": ("co2e_t", "co2e_t")}


def codesign_payload(result, pareto: bool) -> dict:
    """The JSON object: scenario, axes and per point the best plans, their ratio to point 0
    (the catalog accelerator: > 1 is better) and the Pareto front (size, rows with ``pareto``)."""
    scenario = {k: v for k, v in asdict(result.scenario).items() if k != "extra"}
    base = result.points[0]["best"]
    points = []
    for p in result.points:
        best = {obj: summarize(row) for obj, row in p["best"].items()}
        gain = {}
        for obj, (key, _) in SHOWN.items():
            here, ref = best.get(obj), base.get(obj)
            gain[obj] = (summarize(ref)[key] / here[key]) if here and ref and here[key] > 0 \
                else None
        point = {"point": p["index"], "values": p["values"], "evaluated": p["evaluated"],
                 "fitting": p["fitting"], "best": best, "gain_vs_catalog": gain,
                 "pareto_size": len(p["pareto"])}
        if pareto:
            point["pareto"] = [summarize(row) for row in p["pareto"]]
        points.append(point)
    return {"scenario": scenario, "accelerator": result.hardware,
            "vary": {a.name: list(a.values) for a in result.axes},
            "points": points, "evaluated": result.evaluated, "version": version()}


#: Table headers of the varied fields: their short --vary names.
SHORT = {"peak_bf16_flops_per_s": "peak_bf16", "peak_fp8_flops_per_s": "peak_fp8",
         "peak_tf32_flops_per_s": "peak_tf32", "hbm_bandwidth_bytes_per_s": "hbm_bandwidth",
         "scale_up_domain_gpus": "scale_up_domain",
         "scale_up_bandwidth_bytes_per_s": "scale_up_bandwidth",
         "cloud_price_usd_per_gpu_hour": "price"}


def codesign_rows(payload: dict, objective: str) -> list[dict]:
    """One flat row per hardware point (table/csv/markdown): the point's --objective
    winner, every number of that one plan (the other objectives' winners are in the JSON)."""
    rows = []
    for p in payload["points"]:
        row = {"point": p["point"] if p["point"] else "catalog"}
        row.update({SHORT.get(name, name): value for name, value in p["values"].items()})
        headline = p["best"][objective]
        row["gpus"] = headline["gpus"] if headline else None
        row["layout"] = layout_text(headline) if headline else "infeasible"
        for key, label in SHOWN.values():
            row[label] = headline[key] if headline else None
        row[f"{objective}_gain"] = p["gain_vs_catalog"].get(objective)
        row["pareto"] = p["pareto_size"]
        rows.append(row)
    return rows


#: Table column -> the unit of its value (the varied fields: their parameter's unit).
ROW_UNITS = {"days": "d", "usd": "USD", "mwh": "MWh", "co2e_t": "t CO2e"}


def readable_codesign_rows(rows: list[dict]) -> list[dict]:
    """The codesign rows with values in human units (planner.engine.run.readable)."""
    units = {**{SHORT.get(name, name): p.unit for name, p in PARAMETERS.items()
                if p.unit not in ("GPUs", "1")}, **ROW_UNITS}
    return [{k: quantity_text(v, units[k]) if k in units and v is not None else v
             for k, v in row.items()} for row in rows]
