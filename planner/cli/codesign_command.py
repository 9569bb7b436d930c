"""``capplan codesign``: which hypothetical accelerator trains a model best (a grid around a catalog entry)."""

from __future__ import annotations

import typer

from planner.cli.common import (
    CheckpointOption,
    ForceOption,
    FormatOption,
    GlobalBatchOption,
    ModelOption,
    OutputOption,
    PrecisionOption,
    SchedulerOption,
    SiteClassOption,
    SiteOption,
    TokensOption,
    WorkersOption,
    check_output_targets,
    output_format,
)
from planner.cli.numbers import si_count, si_float
from planner.cli.scenario_options import scenario_of
from planner.engine.defaults import DEFAULTS
from planner.version import version

#: Objective -> (plan-summary key shown, label of the table column).
SHOWN = {"time": ("wall_days", "days"), "cost": ("cost_usd", "usd"),
         "energy": ("energy_mwh", "mwh"), "carbon": ("co2e_t", "co2e_t")}


def codesign_payload(result, pareto: bool) -> dict:
    """The JSON object: scenario, axes and per point the best plans, their ratio to point 0
    (the catalog accelerator: > 1 is better) and the Pareto front (size, rows with ``pareto``)."""
    from dataclasses import asdict

    from planner.report.plan_report import summarize

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
    from planner.report.tables import layout_text

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


def run(
    accelerator: str = typer.Option("h100-sxm", "--accelerator", "-a",
                                    help="Catalog accelerator the grid varies around."),
    vary: list[str] = typer.Option(
        None, "--vary", help="NAME=VALUES (repeatable): an accelerator field (or nic_gbps, "
        "peak_bf16, hbm_bandwidth, scale_up_domain, scale_up_bandwidth, price) and values "
        "v1,v2,... or lo..hi:n (n geometric steps); 'x' marks a multiple of the catalog "
        "value, e.g. peak_bf16=0.5x..2x:5 hbm_bytes=80e9,141e9 scale_up_domain=8,72."),
    model: ModelOption = DEFAULTS["model"],
    tokens: TokensOption = DEFAULTS["tokens"],
    min_gpus: int = typer.Option(DEFAULTS["min_gpus"], parser=si_count,
                                 help="Smallest cluster considered."),
    max_gpus: int = typer.Option(DEFAULTS["max_gpus"], parser=si_count,
                                 help="Largest cluster considered (16k = 16,000)."),
    global_batch: GlobalBatchOption = None,
    deadline_days: float = typer.Option(
        DEFAULTS["deadline_days"], help="Finish within this many days ('inf' for no deadline)."),
    budget_usd: float = typer.Option(None, parser=si_float,
                                     help="Spend at most this [USD] (5M = 5e6)."),
    max_power_mw: float = typer.Option(None, help="Facility peak power cap [MW]."),
    confidence: float = typer.Option(
        None, help="Quantile at which deadline, budget and power must hold (as `capplan plan "
        "--confidence`; 0.5 is the median): the catalog accelerator's multipliers tighten "
        "them for every point. Default: the nominal run."),
    objective: str = typer.Option(DEFAULTS["objective"],
                                  help="time | cost | energy | carbon (layout and gain shown)."),
    site: SiteOption = DEFAULTS["site"],
    site_class: SiteClassOption = DEFAULTS["site_class"],
    precision: PrecisionOption = DEFAULTS["precision"],
    checkpoint: CheckpointOption = DEFAULTS["checkpoint"],
    pareto: bool = typer.Option(False, "--pareto", help="JSON: list every point's Pareto rows "
                                "(time, cost, energy), not only their number."),
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    **prices,
):
    """Co-design: plan a run on a grid of hypothetical accelerators around a catalog entry.

    Every point of the grid (the product of the --vary axes) is searched over every
    layout and GPU count like `capplan plan`; each row is the point's --objective winner
    (its GPUs, layout, days, USD, MWh and t CO2e: one plan, never several objectives'
    winners mixed) and its gain over the catalog accelerator (the row 'catalog'; > 1 is
    better; the other objectives' winners are in -f json).  Example: which change to an H100
    buys most for a 70B model?  --vary hbm_bytes=1x,2x --vary hbm_bandwidth=1x,2x
    --vary scale_up_domain=8,72.
    """
    # every option (the price ones arrive in ``prices``), as plan's scenario
    scenario = scenario_of({**locals(), **prices}, hardware=(accelerator,))
    format = output_format(format, output)
    from planner.engine.codesign import codesign as run_codesign
    from planner.engine.codesign import parse_vary
    from planner.engine.distributed import check_scheduler
    from planner.engine.readable import count_text
    from planner.engine.scenario import check_choices
    from planner.errors import CapplanError
    from planner.report.output import render, write

    check_choices(objective=objective)
    if not vary:
        raise CapplanError("give at least one --vary NAME=VALUES (e.g. --vary "
                           "hbm_bytes=80e9,141e9,192e9)")
    parse_vary(list(vary))  # bad names and values fail before anything runs
    check_scheduler(scheduler, workers)
    check_output_targets(output, force)
    scenario.validate()
    searched = scenario
    if confidence is not None:  # the catalog accelerator's margins, for every point of the grid
        from planner.analysis.confidence import plan_at_confidence
        from planner.analysis.uncertainty import default_spreads

        margined = plan_at_confidence(scenario, default_spreads()).scenario
        scenario = scenario.with_(margins=margined.margins)
        searched = scenario.for_hardware(accelerator)
    from planner.report.progress import search_progress

    with search_progress("co-design") as progress:
        result = run_codesign(searched, accelerator, list(vary), scheduler=scheduler,
                              workers=workers, progress=progress)
    from planner.analysis.confidence import margin_payload

    payload = codesign_payload(result, pareto)
    payload["scenario"].update({k: getattr(scenario, k) for k in
                                ("deadline_days", "budget_usd", "max_power_mw")})
    payload["scenario"].pop("margins", None)
    payload.update(margin_payload(scenario))
    title = (f"Co-design around {accelerator} for {model} on {count_text(tokens)} tokens "
             f"({result.evaluated:,} configurations)")
    rows = codesign_rows(payload, objective)
    if format == "table":  # human units; JSON and CSV keep the stored values
        rows = readable_codesign_rows(rows)
    write(render(rows, format, title=title, payload=payload), output, force)


#: Table column -> the unit of its value (the varied fields: their parameter's unit).
ROW_UNITS = {"days": "d", "usd": "USD", "mwh": "MWh", "co2e_t": "t CO2e"}


def readable_codesign_rows(rows: list[dict]) -> list[dict]:
    """The codesign rows with values in human units (planner.engine.readable)."""
    from planner.engine.codesign import PARAMETERS
    from planner.engine.readable import quantity_text

    units = {**{SHORT.get(name, name): p.unit for name, p in PARAMETERS.items()
                if p.unit not in ("GPUs", "1")}, **ROW_UNITS}
    return [{k: quantity_text(v, units[k]) if k in units and v is not None else v
             for k, v in row.items()} for row in rows]
