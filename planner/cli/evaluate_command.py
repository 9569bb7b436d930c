"""``capplan evaluate``: one layout, every number of the run model."""

from __future__ import annotations

import typer

from planner.cli.common import ForceOption, FormatOption, OutputOption, output_format
from planner.cli.environment_options import prepend_options
from planner.cli.layout_options import with_layout_options
from planner.cli.rl_options import RL_OPTIONS, refuse_without_grpo, rl_options
from planner.errors import CapplanError
from planner.report.payloads import evaluation_payload
from planner.version import version


@with_layout_options
def evaluate(
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    uncertainty: bool = typer.Option(False, help="Add P10/P50/P90 from input uncertainty."),
    draws: int = typer.Option(2000, help="Monte Carlo draws for --uncertainty."),
    seed: int = typer.Option(0, help="Random seed for --uncertainty."),
    scenario_file: str = typer.Option(
        None, "--scenario", "-s", help="TOML scenario file (flags override it); its "
        "[[phases]] make a run of several phases, summed with a per-phase breakdown."),
    **options,
):
    """Evaluate one layout: step time and breakdown, memory, MFU, checkpointing, totals."""
    format = output_format(format, output)
    from planner.cli.layout_options import resolve
    from planner.cli.scenario_phases import apply_scenario_file
    from planner.engine.inputs.domains import check
    from planner.report.output import render, write

    check({"draws": draws, "seed": seed})
    options, phases = apply_scenario_file(evaluate, options, scenario_file)
    from planner.cli.scenario_phases import scenario_spreads

    spreads = scenario_spreads(scenario_file) if uncertainty else None
    grpo_phases = any(dict(p.method).get("method") == "grpo" for p in phases)
    if uncertainty and (grpo_phases or options.get("method") == "grpo"):
        raise CapplanError("--method grpo (and a method = \"grpo\" phase) takes no "
                           "--uncertainty yet")
    if options.get("method") == "grpo" and not phases:
        from planner.cli.rl_run import evaluate_grpo

        return evaluate_grpo(options, format, output, force)
    if options.get("method") != "grpo":
        refuse_without_grpo(options)
    rl = {k: options[k] for k in RL_OPTIONS}
    options = {k: v for k, v in options.items() if k not in RL_OPTIONS}
    if phases:
        return _evaluate_phases(options, phases, format, output, force,
                                spreads=spreads, draws=draws, seed=seed, rl=rl)
    run = resolve(options)
    shortfall = memory_shortfall(run.row, run.echo)
    if shortfall:
        raise CapplanError(shortfall)
    payload = evaluation_payload(run.row, run.echo)
    payload["catalog_version"] = run.catalog_version
    payload["price"] = run.price
    payload["rent_vs_buy"] = run.rent_vs_buy
    payload["assumptions"] = run.assumptions
    payload["method"] = run.echo["method"]
    payload["alternatives"] = evaluate_alternatives(options, run)
    rows = [{"quantity": k, "value": v} for k, v in payload.items()
            if k not in ("breakdown", "memory_breakdown", "inputs", "price", "rent_vs_buy",
                         "assumptions", "alternatives")]
    from planner.engine.economics.pricing import PriceQuote

    rows.append({"quantity": "price", "value": PriceQuote(**run.price).label()})
    rows += [{"quantity": f"rent_vs_buy.{k}", "value": run.rent_vs_buy[k]}
             for k in ("cloud_usd", "owned_usd", "cluster_capex_usd",
                       "ownership_usd_per_gpu_hour", "utilisation", "breakeven_utilisation",
                       "payback_months")]
    if uncertainty:
        from planner.analysis.uncertainty import run_uncertainty

        bands = run_uncertainty(run.inputs, spreads, draws=draws, seed=seed, price=run.price)
        payload["uncertainty"] = {"draws": draws, "seed": seed, **bands}
        rows += [{"quantity": f"{q}.{p}", "value": v} for q, band in bands.items()
                 for p, v in band.items()]
    rows += [{"quantity": f"breakdown.{k}", "value": v} for k, v in payload["breakdown"].items()]
    e = run.echo
    method = "" if e["method"] == "pretrain" else f" ({e['method']})"
    title = (f"{e['model']}{method} on {e['gpus']:,} x {e['hardware']}: TP{e['tp']} PP{e['pp']} "
             f"DP{e['dp']} CP{e['cp']} EP{e['ep']} ETP{e['etp']} VP{e['vp']}, micro-batch "
             f"{e['micro_batch']}, recompute {e['recompute']}, ZeRO-{e['zero']}")
    from planner.cli.common import notice

    notice(assumptions_text(e, PriceQuote(**run.price).label(), run.assumptions))
    if run.assumptions.get("stack_hint"):
        notice(run.assumptions["stack_hint"])
    if payload["alternatives"]:
        from planner.engine.search.alternatives import alternatives_line

        notice("what a typical alternative would change: "
               + alternatives_line(payload["alternatives"]))
    if format == "table":  # human units; JSON and CSV keep the stored (SI) values
        rows = readable_rows(rows)
    write(render(rows, format, title=title, payload=payload), output, force)


#: evaluate's options: the run's, its own, then the RL ones (--method grpo).
prepend_options((), evaluate, after=(rl_options,))


def _evaluate_phases(options, phases, format, output, force, *, spreads=None,
                     draws: int = 2000, seed: int = 0, rl: dict | None = None) -> None:
    """``evaluate --scenario`` with ``[[phases]]``: each phase, then the totals; with
    ``spreads`` (``--uncertainty``) the P10/P50/P90 of the whole run, every phase drawn
    under the same factors and the phases summed per draw."""
    from planner.cli.scenario_phases import phase_table, phases_payload, resolve_phases
    from planner.engine.inputs.phases import in_phase, sum_phases
    from planner.report.output import render, write

    runs = resolve_phases(options, phases, rl=rl)
    for phase, run in zip(phases, runs, strict=True):
        if run.echo["method"] == "grpo":  # whole_run refuses an RL run that does not fit
            continue
        shortfall = memory_shortfall(run.row, run.echo)
        if shortfall:
            raise in_phase(phase, CapplanError(shortfall))
    totals = sum_phases([r.row for r in runs])
    payload = {**phases_payload(phases, runs, totals), "version": version(),
               "catalog_version": runs[0].catalog_version}
    rows = phase_table(phases, runs, totals)
    if spreads is not None:
        from planner.analysis.uncertainty import phases_run_uncertainty

        bands = phases_run_uncertainty([r.inputs for r in runs], spreads, draws=draws,
                                       seed=seed, price=runs[0].price)
        payload["uncertainty"] = {"draws": draws, "seed": seed, **bands}
        total = rows[-1]
        for p in ("p10", "p50", "p90"):  # the drawn quantities; the rest left blank
            rows.append({k: f"total {p.upper()}" if k == "phase" else
                         bands[k][p] if k in bands else None for k in total})
    e = runs[0].echo
    title = (f"{e['model']} on {e['hardware']}: {len(phases)} phases, "
             f"{totals['wall_days']:.1f} days, {totals['gpu_hours']:,.0f} GPU-hours")
    write(render(rows, format, title=title, payload=payload), output, force)


def evaluate_alternatives(options: dict, run) -> list[dict]:
    """The run re-evaluated, at its layout, with the typical alternative stack and the
    other PUE of its site (planner.engine.search.alternatives), each as one change."""
    from planner.cli.common import pending_notices
    from planner.cli.layout_options import resolve
    from planner.engine.search.alternatives import alternative_site_class, alternative_stack, change

    e = run.echo
    same_layout = {**options, **{k: e[k] for k in ("tp", "pp", "cp", "ep", "vp",
                                                   "micro_batch")}}
    asked = len(pending_notices)
    out = []
    try:
        stack = alternative_stack(e["stack"])
        alt = resolve({**same_layout, "stack": stack})
        out.append(change(f"--stack {stack}", "gpu_hours", "GPU-hours", run.row["gpu_hours"],
                          alt.row["gpu_hours"], bool(alt.row["fits"])))
        if "pue" not in (e.get("network") or {}):
            site_class = alternative_site_class(e["site_class"])
            alt = resolve({**same_layout, "site_class": site_class})
            out.append(change(f"--site-class {site_class}", "energy_kwh", "energy",
                              run.row["energy_kwh"], alt.row["energy_kwh"],
                              note=f" (PUE {alt.assumptions['pue']:.2f})"))
    except CapplanError:  # e.g. a user catalog without the alternative stack
        pass
    del pending_notices[asked:]  # the alternatives' own notices repeat the run's
    return out


def memory_remedy(largest: str, echo: dict) -> str:
    """What shrinks the largest memory term of a GPU under this layout."""
    if largest == "activation_bytes":
        ways = (["--recompute full"] if echo["recompute"] != "full" else []) + \
               (["a smaller --micro-batch"] if echo["micro_batch"] > 1 else [])
        return _either([*ways, "more --tp/--cp"])
    stage = {"weights_bytes": 3, "grads_bytes": 2, "optimizer_state_bytes": 1}.get(largest)
    if stage is None:
        return "an accelerator with more memory"
    zero = [f"--zero {stage if echo['zero'] < stage else 3}"] if echo["zero"] < 3 else []
    return _either([*zero, "more --tp/--pp"])


def _either(ways: list[str]) -> str:
    return ", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0]


def memory_shortfall(row: dict, echo: dict) -> str | None:
    """One line naming the memory a layout lacks and what would make it fit, or None
    when it fits. ``capplan evaluate`` refuses such a layout (its step time would be of
    a run that cannot start); the Python API keeps returning ``fits`` False."""
    if bool(row["fits"]):
        return None
    largest = str(row["largest_memory_term"])
    from planner.engine.run.columns import column

    return (f"the layout does not fit: {echo['model']} at TP{echo['tp']} PP{echo['pp']} "
            f"DP{echo['dp']} CP{echo['cp']} EP{echo['ep']}, micro-batch {echo['micro_batch']}, "
            f"recompute {echo['recompute']}, ZeRO-{echo['zero']} needs "
            f"{row['memory_per_gpu_bytes'] / 1e9:.1f} GB per GPU ({column(largest).label} "
            f"{row[largest] / 1e9:.1f} GB), {echo['hardware']} has {row['hbm_bytes'] / 1e9:.1f} GB; "
            f"to fit try {memory_remedy(largest, echo)} "
            "(or `capplan plan` to search layouts that fit)")


def assumptions_text(echo: dict, price: str, assumed: dict) -> str:
    """One line: the assumptions of a one-shot run the user did not necessarily type
    (``assumed``: planner.engine.inputs.assumptions.assumptions, its ``cost_basis`` the basis the
    run was costed by)."""
    from planner.engine.inputs.assumptions import commitment_text
    from planner.engine.run.readable import count_text

    batch = echo["global_batch"] * echo["seq_len"]
    basis = "TCO (owned cluster)" if assumed["cost_basis"] == "tco" else "cloud"
    site_class = ("its own PUE" if assumed["site_class"] == "site"
                  else f"class {assumed['site_class']}")
    return (f"assumed: {count_text(echo['tokens'])} tokens, global batch "
            f"{echo['global_batch']:,} x {echo['seq_len']:,}-token sequences "
            f"({count_text(batch)} tokens a step), stack {assumed['stack']}, network "
            f"{assumed['network']}, site {echo['site']} ({site_class}, PUE "
            f"{assumed['pue']:.2f}, grid {assumed['grid_intensity_g_per_kwh']:,.0f} g/kWh), "
            f"cost by {basis} at {price}{commitment_text(assumed)}, nominal run")


def readable_rows(rows: list[dict]) -> list[dict]:
    """The rows with each value in a human unit (planner.engine.run.readable.readable_rows)."""
    from planner.engine.run.readable import readable_rows as readable

    return readable(rows)
