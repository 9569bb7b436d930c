"""``capplan plan``: the best cluster per objective across the catalog."""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    SchedulerOption,
    WorkersOption,
    check_output_targets,
    notice,
    output_format,
)
from planner.cli.environment_options import prepend_options
from planner.cli.rl_options import RL_OPTIONS, refuse_without_grpo, rl_options
from planner.cli.scenario_options import with_scenario_options
from planner.cli.workload_options import MaxCandidatesOption, MaxDrawRowsOption
from planner.engine.inputs.assumptions import assumptions_line
from planner.engine.run.columns import plan_summary
from planner.engine.run.readable import count_text
from planner.errors import INFEASIBLE, CapplanError
from planner.version import version


def summarize(row: dict | None, prices: dict | None = None) -> dict | None:
    """The plan summary of the column registry for one plan row (plain Python values); with
    ``prices`` (accelerator -> resolved price) the row's price tier, provider, source and
    spread."""
    if row is None:
        return None
    plain = {"str": str, "int": int, "bool": bool, "float": float}
    out = {c.key: plain[c.dtype](row[c.name]) for c in plan_summary()}
    if "quantile" in row:  # a plan at --confidence Q: the values above are its Q-quantile
        out["quantile"] = row["quantile"]
        out["nominal"] = dict(row["nominal"])
    if prices is not None and row["hardware"] in prices:
        out["price"] = prices[row["hardware"]]
    return out


def flagged(summary: dict | None, result) -> dict | None:
    """A winner's summary with ``estimate_flags``: what it rests on that is a catalog
    estimate (planner.analysis.estimates; [] when nothing)."""
    if summary is None:
        return None
    return {**summary, "estimate_flags": list(result.estimate_flags.get(summary["hardware"], []))}


def binding_payload(b) -> dict:
    """One objective's binding constraints (planner.engine.search.explain.Binding) as JSON: their
    names, whether only all together bind, and the optima without them."""
    return {"constraints": list(b.constraints), "together": b.together,
            "range_edge": b.range_edge,
            "unconstrained": summarize(b.unconstrained),
            "without": {c: summarize(row) for c, row in b.without.items()}}


def plan_payload(result) -> dict:
    from dataclasses import asdict

    from planner.analysis.confidence import margin_payload
    from planner.engine.search.explain import accelerator_verdicts

    scenario = asdict(result.scenario)
    scenario.pop("margins", None)
    extra = scenario.pop("extra", None)
    if extra:  # run-model inputs the flags set (site network), in SI units
        scenario["inputs"] = extra
    return {
        "scenario": scenario,
        **margin_payload(result.scenario),
        "best": {obj: flagged(summarize(row, result.prices), result)
                 for obj, row in result.best.items()},
        "per_hardware": {hw: {obj: flagged(summarize(r, result.prices), result)
                              for obj, r in rows.items()}
                         for hw, rows in result.per_hardware.items()},
        "pareto": [summarize(r) for r in result.pareto],
        "knee": {hw: (None if r is None else {**summarize(r),
                                             "marginal_efficiency": r["marginal_efficiency"],
                                             "beyond_range": r["beyond_range"]})
                 for hw, r in result.knee.items()},
        **({"spot_vs_on_demand": result.spot_vs_on_demand} if result.spot_vs_on_demand
           else {}),
        "rent_vs_buy": result.rent_vs_buy,
        "prices": result.prices,  # accelerator -> the price paid (as `catalog list` shows)
        "assumptions": result.assumptions,
        "cost_parts": result.cost_parts,
        "skipped": result.skipped,
        "binding": {obj: binding_payload(b) for obj, b in result.binding.items()},
        "infeasible": result.infeasible,
        "accelerators": accelerator_verdicts(result),
        "evaluated": result.evaluated,
        "fitting": result.fitting,
        "seconds": result.seconds,
        "version": version(),
        "catalog_version": result.catalog_version,
    }


def explanation_markdown(result) -> str:
    """The binding constraints per objective and each accelerator's verdict, as Markdown."""
    from planner.engine.search.explain import accelerator_verdicts
    from planner.report.output import render
    from planner.report.tables import binding_rows, constraints_text

    text = ""
    rows = binding_rows(result)
    if rows:
        text += "\n" + render(rows, "markdown", title="What bound each winner ("
                              f"{constraints_text(result.scenario)})")
    return text + "\n" + render(accelerator_verdicts(result), "markdown",
                                title="Why each accelerator won or lost "
                                f"({result.scenario.objective}; "
                                f"{constraints_text(result.scenario)})")


def sites_payload(results: dict, ranking: list[dict], winners: dict) -> dict:
    """The JSON of ``capplan plan --site a,b,c``: every site's plan, the ranking, winners."""
    return {"ranking": ranking, "winners": winners,
            "sites": {name: phases_payload(result, result.scenario)
                      if hasattr(result, "phases") else plan_payload(result)
                      for name, result in results.items()}}


def plan_several_sites(scenario, format, output, force, plot, overrides=None, *,
                       draws: int = 0, seed: int = 0, phases=None, passes: int = 1,
                       quantile_draws: int = 400) -> None:
    """``capplan plan --site a,b,c|all``: one search per site, the sites ranked; with
    ``phases`` (a scenario's ``[[phases]]``), one plan of the phases per site. Each site's
    constraints hold at ``scenario.confidence`` (its own margins: PUE, energy price and grid
    move them); ``draws`` > 0 (``--uncertainty``): each site's winners' P10/P50/P90 and the
    constraints they miss at P90 (``overrides``: the scenario's ``[uncertainty]`` table).
    At a ``--confidence`` each site's rows are at that quantile over
    ``quantile_draws`` draws, as the one-site plan's (planner.analysis.quantile_rows)."""
    from hardware_catalog import load_catalog
    from planner.analysis.confidence import (
        percentile_text,
        plan_at_confidence,
        plan_phases_at_confidence,
    )
    from planner.analysis.uncertainty import phase_uncertainty, plan_uncertainty, spreads_from
    from planner.engine.search.optimize import require
    from planner.engine.search.sites import plan_sites, site_ranking, site_winners
    from planner.report.output import render, write
    from planner.report.progress import search_progress
    from planner.report.tables import render_sites, render_uncertainty, site_rows

    if plot:
        raise CapplanError(f"--plot takes one site; got --site {scenario.site!r} "
                           "(run it once per site)")
    spreads = spreads_from(overrides)
    catalog = load_catalog(tuple(scenario.catalog_dirs or ()), scenario.price_files)

    def plan_one(s, **options):
        if phases:
            return plan_phases_at_confidence(s, phases, spreads, **options)
        return plan_at_confidence(s, spreads, **options)

    with search_progress("searching", passes) as progress:
        results = plan_sites(scenario, catalog=catalog, progress=progress, plan_one=plan_one)
    first = next(iter(results.values()))
    for text in getattr(first, "notices", ()):  # the phases' notices, the same at every site
        notice(text)
    if scenario.confidence is not None:  # each site's rows at the quantile, then ranked
        from planner.analysis.quantile_rows import set_at_quantile, set_phases_at_quantile

        at_quantile = set_phases_at_quantile if phases else set_at_quantile
        for result in results.values():
            at_quantile(result, catalog, spreads, draws=quantile_draws, seed=seed)
    reports = {}
    if draws:
        uncertainty_of = phase_uncertainty if phases else plan_uncertainty
        reports = {name: uncertainty_of(result, catalog, spreads, draws=draws, seed=seed)
                   for name, result in results.items()
                   if any(row is not None for row in result.best.values())}
    ranking = site_ranking(results, catalog)
    winners = site_winners(ranking)
    rows = site_rows(results, ranking, winners)
    if reports:  # the constraints each site's winners miss at P90, objective:constraint
        for row in rows:
            risk = reports.get(row["site"], {}).get("constraint_risk", {})
            row["missed_at_p90"] = ",".join(
                f"{objective}:{c}" for objective, by in risk.items()
                for c, x in by.items() if x["missed_at_quantile"])
    if format == "table":
        text = render_sites(results, rows, winners)
        p = percentile_text(scenario.confidence or 0.5)  # unused for the nominal run
        text += ("constraints planned on the nominal run at every site (not the P50 of "
                 "--uncertainty; --confidence 0.9 for a margin)" if scenario.confidence is None
                 else
                 f"numbers and constraints at {p} of the uncertainty model at every site "
                 f"(each winner's own {p} over --draws, --seed), with each site's own "
                 "margins (-f json: sites.<site>.margins)")
        text += "\n"
        for name, report in reports.items():
            text += f"\nSite {name}:\n" + render_uncertainty(report)
    else:
        tokens = sum(p.tokens for p in phases) if phases else scenario.tokens
        payload = sites_payload(results, ranking, winners)
        for name, report in reports.items():
            payload["sites"][name]["uncertainty"] = report
        text = render(rows, format, title=f"Sites for {scenario.model} on "
                      f"{count_text(tokens)} tokens" + (f", {len(phases)} phases" if phases
                                                        else ""),
                      payload=payload)
    feasible = [r for r in results.values() if r.best.get(scenario.objective) is not None]
    if feasible or output in (None, "-"):
        write(text, output, force)
    if not feasible and phases:
        raise CapplanError(first.infeasible.get(scenario.objective, "no plan"),
                           exit_code=INFEASIBLE)
    if not feasible:
        require(first, scenario.objective)


@with_scenario_options
def plan(
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    plot: str = typer.Option(None, "--plot", help="Also write the plan figure (PNG/SVG/PDF)."),
    uncertainty: bool = typer.Option(
        False, help="Propagate input uncertainty: P10/P50/P90 and win probabilities."),
    draws: int = typer.Option(400, help="Monte Carlo draws for --uncertainty and for the "
                              "--confidence quantiles of the plans reported."),
    seed: int = typer.Option(0, help="Random seed of those draws."),
    confidence: float = typer.Option(
        None, help="Quantile of the uncertainty model at which deadline, budget and power "
        "must hold and the plans' numbers are shown, e.g. 0.9 (P90), 0.5 (the median, P50): "
        "each constraint is tightened per accelerator by the quantile multiplier of a "
        "fixed-seed Monte Carlo. Default: the nominal run (every input at its catalog "
        "value; not the P50)."),
    scheduler: SchedulerOption = None,
    workers: WorkersOption = None,
    max_candidates: MaxCandidatesOption = None,
    max_draw_rows: MaxDrawRowsOption = None,
    **options,
):
    """Find the fastest, cheapest, least-energy and least-carbon cluster for a training run.

    With no options: Llama 3 70B on 15T tokens across the whole catalog, 8 to 16,384 GPUs,
    finishing within 90 days, cheapest first.  When no plan meets the constraints the
    explanation goes to stderr (exit 1) and no -o/--plot file is written.
    """
    from planner.cli.scenario_options import resolve_scenario

    format = output_format(format, output)
    from planner.engine.inputs.domains import check

    check({"draws": draws, "seed": seed})
    from planner.engine.search.distributed import check_scheduler

    check_scheduler(scheduler, workers)
    rl = {k: options.pop(k) for k in RL_OPTIONS}
    scenario, v = resolve_scenario(options)
    rl.update({k: v[k] for k in RL_OPTIONS if k in v})  # a scenario file's, under the flags
    if scenario.method == "grpo":
        if v.get("phases") or uncertainty or plot or confidence is not None:
            raise CapplanError("--method grpo takes none of [[phases]], --uncertainty, "
                               "--plot, --confidence yet")
        from planner.cli.rl_run import plan_grpo

        return plan_grpo(scenario, {**rl, "method": "grpo"}, format, output, force)
    refuse_without_grpo({**rl, "method": scenario.method})
    scenario = scenario.with_(confidence=confidence)
    scenario.validate()
    check_output_targets(output, force, plot)  # a bad -o or --plot fails before the search
    from planner.cli.workload_options import bounded_plan

    with bounded_plan(scenario, v.get("phases"), max_candidates, max_draw_rows,
                      workers) as passes:
        plan_command(scenario, v, format, output, force, plot, uncertainty, draws, seed,
                     scheduler, workers, passes)


#: plan's options: the scenario's, its own, then the RL ones (--method grpo).
prepend_options((), plan, after=(rl_options,))


def plan_command(scenario, v, format, output, force, plot, uncertainty, draws, seed,
                 scheduler, workers, passes: int = 1) -> None:
    """``capplan plan`` of a checked ``scenario`` (``v``: the resolved options, its
    ``[uncertainty]`` and ``[[phases]]``): one site, several, or a plan of phases;
    ``passes``: how many searches it runs (for the progress lines)."""
    from planner.engine.search.optimize import require
    from planner.engine.search.sites import is_several
    from planner.report.output import render, write

    if is_several(scenario.site):
        plan_several_sites(scenario, format, output, force, plot, v["uncertainty"],
                           draws=draws if uncertainty else 0, seed=seed, phases=v.get("phases"),
                           passes=passes, quantile_draws=draws)
        return
    if v.get("phases"):
        plan_phases_command(scenario, v["phases"], format, output, force, scheduler, workers,
                            v["uncertainty"], draws=draws if uncertainty else 0, seed=seed,
                            plot=plot, passes=passes, quantile_draws=draws)
        return
    to_file = output not in (None, "-")
    model, tokens, catalog = scenario.model, scenario.tokens, scenario.catalog_dirs
    from planner.analysis.confidence import plan_at_confidence
    from planner.analysis.uncertainty import spreads_from
    from planner.report.progress import search_progress

    with search_progress("searching", passes) as progress:
        result = plan_at_confidence(scenario, spreads_from(v["uncertainty"]), progress=progress,
                                    scheduler=scheduler, workers=workers)
    if scenario.confidence is not None:  # every reported row at the quantile planned at
        from hardware_catalog import load_catalog
        from planner.analysis.quantile_rows import set_at_quantile

        set_at_quantile(result, load_catalog(tuple(catalog or ()), scenario.price_files),
                        spreads_from(v["uncertainty"]), draws=draws, seed=seed)
    payload = plan_payload(result)
    winner = result.best.get(scenario.objective)
    alternatives = []
    if winner is not None:  # what a typical alternative stack or PUE would change
        from hardware_catalog import load_catalog
        from planner.analysis.winner_alternatives import row_alternatives
        from planner.engine.search.alternatives import alternatives_line

        alternatives = row_alternatives(
            result.scenario, load_catalog(tuple(catalog or ()), scenario.price_files), winner)
        payload["alternatives"] = {"objective": scenario.objective, "changes": alternatives}
        alternatives_text = (f"what a typical alternative would change for the "
                             f"{scenario.objective} winner (nominal run): "
                             f"{alternatives_line(alternatives)}")
    if uncertainty and any(row is not None for row in result.best.values()):
        from hardware_catalog import load_catalog
        from planner.analysis.uncertainty import plan_uncertainty, spreads_from

        payload["uncertainty"] = plan_uncertainty(
            result, load_catalog(tuple(catalog or ()), scenario.price_files),
            spreads_from(v["uncertainty"]),
            draws=draws, seed=seed)
    if format == "table":
        from planner.analysis.confidence import quantile_text
        from planner.report.tables import render_plan, render_uncertainty

        text = render_plan(result) + quantile_text(result.scenario) + "\n"
        if alternatives:
            text += alternatives_text + "\n"
        if "uncertainty" in payload:
            text += render_uncertainty(payload["uncertainty"])
    else:
        from planner.report.tables import winner_rows

        rows = winner_rows(result)
        if "uncertainty" in payload:  # the constraints each winner misses at P90
            risk = payload["uncertainty"]["constraint_risk"]
            rows = [{**r, "missed_at_p90": ",".join(
                c for c, v in risk.get(r["objective"], {}).items() if v["missed_at_quantile"])}
                for r in rows]
        assumed = result.assumptions
        text = render(rows, format,
                      title=f"Best plans for {model} on {count_text(tokens)} tokens; "
                      f"{assumptions_line(assumed)}", payload=payload)
        if format == "csv":  # CSV rows have no title: the assumptions on stderr
            notice(f"assumed: {assumptions_line(assumed)}")
        if alternatives and format != "json":
            notice(alternatives_text)
        if assumed.get("stack_hint") and format != "json":
            notice(assumed["stack_hint"])
        if format == "markdown":  # the explanations as tables of their own
            text += explanation_markdown(result)
    feasible = result.best.get(scenario.objective) is not None
    from planner.report.output import committed_together

    with committed_together(force):  # -o and --plot together or not at all
        if feasible or not to_file:  # no output file when no plan meets the constraints
            write(text, output, force)
        if plot and feasible:
            from planner.report.plot import plot_plan

            plot_plan(result, plot, force=force)
    require(result, scenario.objective)


def phases_payload(result, scenario) -> dict:
    """The JSON of a plan of several phases (:class:`planner.engine.search.phase_plan.PhasePlan`):
    the winners with their phases and estimate flags, the quantile planned at."""
    from dataclasses import asdict

    from planner.analysis.confidence import margin_payload
    from planner.engine.search.explain import range_edge

    flags = result.estimate_flags
    return {"scenario": asdict(scenario),
            "phases": [p.name for p in result.phases],
            "best": {obj: None if row is None else {
                **row, "estimate_flags": list(flags.get(row["hardware"], [])),
                "range_edge": range_edge(row, result.scenario)}
                for obj, row in result.best.items()},
            "infeasible": result.infeasible, "evaluated": result.evaluated,
            "prices": result.prices, "assumptions": result.assumptions,
            **margin_payload(result.scenario),
            "approximation": "each phase's layout is the best for the objective on the "
            "cluster, chosen before the constraints are checked on the totals"}


#: Columns of the phases plan's table, per objective and per phase.
PHASE_TABLE = ("wall_days", "gpu_hours", "energy_mwh", "cost_usd", "co2e_t", "peak_power_mw")


def plan_phases_command(scenario, phases, format, output, force, scheduler, workers,
                        uncertainty=None, *, draws: int = 0, seed: int = 0,
                        plot: str | None = None, passes: int = 1,
                        quantile_draws: int = 400) -> None:
    """``capplan plan`` of a scenario with ``[[phases]]``: the winners per objective (one
    cluster, each phase at its best layout), then the headline winner's phases; with
    ``--confidence`` the constraints hold at that quantile (``uncertainty``: the scenario's
    ``[uncertainty]`` table); ``draws`` > 0 (``--uncertainty``): the winners' P10/P50/P90
    and the constraints they miss at P90 (``quantile_draws``: the draws the winners'
    numbers at ``--confidence`` are taken over); ``plot``: the figure of
    :func:`planner.report.plot.plot_phases`, written together with ``output``."""
    from planner.analysis.confidence import (
        plan_phases_at_confidence,
        quantile_text,
    )
    from planner.analysis.quantile_rows import quantile_label
    from planner.analysis.uncertainty import spreads_from
    from planner.report.output import render, write
    from planner.report.progress import search_progress

    spreads = spreads_from(uncertainty)
    with search_progress("searching", passes) as progress:
        result = plan_phases_at_confidence(scenario, phases, spreads,
                                           progress=progress, scheduler=scheduler,
                                           workers=workers)
    catalog = None
    if scenario.confidence is not None:  # the winners and their phases at the quantile
        from hardware_catalog import load_catalog
        from planner.analysis.quantile_rows import set_phases_at_quantile

        catalog = load_catalog(tuple(scenario.catalog_dirs or ()), scenario.price_files)
        set_phases_at_quantile(result, catalog, spreads, draws=quantile_draws, seed=seed)
    for text in result.notices:
        notice(text)
    best = result.best.get(scenario.objective)
    if best is None:
        raise CapplanError(result.infeasible.get(scenario.objective, "no plan"),
                           exit_code=INFEASIBLE)
    flags = result.estimate_flags
    label = quantile_label(scenario.confidence)  # each phase's own quantile, and the total's
    rows = [{"objective": obj, "phase": "total", "hardware": row["hardware"],
             "gpus": row["gpus"], "layout": "", **{k: row[k] for k in PHASE_TABLE},
             "estimate_flags": ",".join(flags.get(row["hardware"], [])), "quantile": label}
            for obj, row in result.best.items() if row is not None]
    rows += [{"objective": scenario.objective, "phase": p["name"], "hardware": best["hardware"],
              "gpus": best["gpus"],
              "layout": f"TP{p['tp']} PP{p['pp']} CP{p['cp']} DP{p['dp']} VP{p['vp']}",
              **{k: p[k] for k in PHASE_TABLE}, "estimate_flags": "", "quantile": label}
             for p in best["phases"]]
    report = None
    if draws:
        from hardware_catalog import load_catalog
        from planner.analysis.uncertainty import phase_uncertainty

        report = phase_uncertainty(result, catalog or load_catalog(
            tuple(scenario.catalog_dirs or ()), scenario.price_files), spreads, draws=draws,
            seed=seed)
        risk = report["constraint_risk"]
        rows = [{**r, "missed_at_p90": ",".join(
            c for c, x in risk.get(r["objective"], {}).items() if x["missed_at_quantile"])
            if r["phase"] == "total" else ""} for r in rows]
    payload = {**phases_payload(result, scenario),
               **({"uncertainty": report} if report else {}), "version": version()}
    title = (f"Best plans for {scenario.model}, {len(phases)} phases "
             f"({count_text(sum(p.tokens for p in phases))} tokens), one cluster; "
             f"{assumptions_line(result.assumptions)}")
    text = render(rows, format, title=title, payload=payload)
    if format == "csv":  # CSV rows have no title: the assumptions on stderr
        notice(f"assumed: {assumptions_line(result.assumptions)}")
    if result.assumptions.get("stack_hint") and format != "json":
        notice(result.assumptions["stack_hint"])
    if format == "table":
        from planner.report.tables import edge_lines, estimate_lines

        text += "".join(line + "\n" for line in estimate_lines(result))
        text += "".join(line + "\n" for line in edge_lines(result))
        text += quantile_text(result.scenario) + "\n"
        if scenario.confidence is not None:  # a quantile of a sum is not a sum of quantiles
            text += (f"each phase row is that phase's own {label}; the phases' {label}s do not "
                     f"add up to the total's {label}\n")
        if report:
            from planner.report.tables import render_uncertainty

            text += render_uncertainty(report)
    from planner.report.output import committed_together

    with committed_together(force):  # -o and --plot together or not at all
        write(text, output, force)
        if plot:
            from planner.report.plot import plot_phases

            plot_phases(result, plot, force=force)
