"""The report of ``capplan plan``: built here, written by the command.

:func:`plan_report` searches (one site, several sites, or a plan of ``[[phases]]``), adds
what was asked (the quantile at ``--confidence``, ``--uncertainty``'s P10/P50/P90, the
winner's alternatives) and returns a :class:`Report`: the text in the format asked, the
lines for stderr, the figure to write with it, and the check that a plan met the
constraints (exit 1 after the text is written): a :class:`planner.report.output.Report`.  The command only chooses the format and
writes (planner/cli/plan_command.py).
"""

from __future__ import annotations

from dataclasses import asdict

from hardware_catalog import load_catalog
from planner.analysis import confidence
from planner.analysis.quantile_rows import (
    quantile_label,
    set_at_quantile,
    set_phases_at_quantile,
)
from planner.analysis.uncertainty import (
    phase_uncertainty,
    plan_uncertainty,
    spreads_from,
)
from planner.analysis.winner_alternatives import row_alternatives
from planner.engine.inputs.assumptions import assumptions_line
from planner.engine.inputs.domains import check
from planner.engine.run.columns import plan_summary
from planner.engine.run.readable import count_text
from planner.engine.search.alternatives import alternatives_line
from planner.engine.search.distributed import check_scheduler
from planner.engine.search.explain import accelerator_verdicts, range_edge
from planner.engine.search.optimize import require
from planner.engine.search.sites import is_several, plan_sites, site_ranking, site_winners
from planner.errors import INFEASIBLE, CapplanError
from planner.report import plot as figures
from planner.report.output import Report, render
from planner.report.progress import search_progress
from planner.report.tables import (
    binding_rows,
    constraints_text,
    edge_lines,
    estimate_lines,
    render_plan,
    render_sites,
    render_uncertainty,
    site_rows,
    winner_rows,
)
from planner.version import version


def check_request(*, draws: int, seed: int, scheduler, workers) -> None:
    """CapplanError (one line) for a bad ``--draws``, ``--seed``, ``--scheduler`` or
    ``--workers``, before the scenario is resolved."""
    check({"draws": draws, "seed": seed})
    check_scheduler(scheduler, workers)


def plan_report(scenario, uncertainty_table, format: str, *, uncertainty: bool,
                draws: int, seed: int, plot: str | None = None, phases=None,
                scheduler=None, workers=None, passes: int = 1) -> Report:
    """``capplan plan`` of a checked ``scenario``: one site, several (``--site a,b,c``) or
    a plan of ``phases``; ``uncertainty_table``: the scenario file's ``[uncertainty]``;
    ``uncertainty``: add the winners' P10/P50/P90 over ``draws`` (``--confidence``
    quantiles are taken over ``draws`` too); ``passes``: the searches it runs (progress)."""
    if is_several(scenario.site):
        if plot:
            raise CapplanError(f"--plot takes one site; got --site {scenario.site!r} "
                               "(run it once per site)")
        return sites_report(scenario, format, uncertainty_table,
                            draws=draws if uncertainty else 0, seed=seed, phases=phases,
                            passes=passes, quantile_draws=draws)
    if phases:
        return phases_report(scenario, phases, format, scheduler, workers,
                             uncertainty_table, draws=draws if uncertainty else 0, seed=seed,
                             plot=plot, passes=passes, quantile_draws=draws)
    return site_report(scenario, format, uncertainty_table, uncertainty=uncertainty,
                       draws=draws, seed=seed, plot=plot, scheduler=scheduler,
                       workers=workers, passes=passes)


def _catalog(scenario):
    return load_catalog(tuple(scenario.catalog_dirs or ()), scenario.price_files)


def _missed_at_p90(risk: dict, objective: str) -> str:
    """The constraints a winner for ``objective`` misses at P90 (``risk``: an uncertainty
    report's ``constraint_risk``), comma-separated."""
    return ",".join(c for c, x in risk.get(objective, {}).items() if x["missed_at_quantile"])


def site_report(scenario, format: str, uncertainty_table=None, *, uncertainty: bool = False,
                draws: int = 400, seed: int = 0, plot: str | None = None, scheduler=None,
                workers=None, passes: int = 1) -> Report:
    """The plan of one site: the winners, the binding constraints, each accelerator's
    verdict; at ``--confidence`` every row at that quantile; with ``uncertainty`` the
    winners' P10/P50/P90 and the constraints they miss at P90."""
    spreads = spreads_from(uncertainty_table)
    with search_progress("searching", passes) as progress:
        result = confidence.plan_at_confidence(scenario, spreads, progress=progress,
                                    scheduler=scheduler, workers=workers)
    if scenario.confidence is not None:  # every reported row at the quantile planned at
        set_at_quantile(result, _catalog(scenario), spreads, draws=draws, seed=seed)
    payload = plan_payload(result)
    winner = result.best.get(scenario.objective)
    alternatives = []
    if winner is not None:  # what a typical alternative stack or PUE would change
        alternatives = row_alternatives(result.scenario, _catalog(scenario), winner)
        payload["alternatives"] = {"objective": scenario.objective, "changes": alternatives}
        alternatives_text = (f"what a typical alternative would change for the "
                             f"{scenario.objective} winner (nominal run): "
                             f"{alternatives_line(alternatives)}")
    if uncertainty and any(row is not None for row in result.best.values()):
        payload["uncertainty"] = plan_uncertainty(result, _catalog(scenario), spreads,
                                                  draws=draws, seed=seed)
    notices = []
    if format == "table":
        text = render_plan(result) + confidence.quantile_text(result.scenario) + "\n"
        if alternatives:
            text += alternatives_text + "\n"
        if "uncertainty" in payload:
            text += render_uncertainty(payload["uncertainty"])
    else:
        rows = winner_rows(result)
        if "uncertainty" in payload:  # the constraints each winner misses at P90
            risk = payload["uncertainty"]["constraint_risk"]
            rows = [{**r, "missed_at_p90": _missed_at_p90(risk, r["objective"])} for r in rows]
        assumed = result.assumptions
        text = render(rows, format,
                      title=f"Best plans for {scenario.model} on {count_text(scenario.tokens)} "
                      f"tokens; {assumptions_line(assumed)}", payload=payload)
        if format == "csv":  # CSV rows have no title: the assumptions on stderr
            notices.append(f"assumed: {assumptions_line(assumed)}")
        if alternatives and format != "json":
            notices.append(alternatives_text)
        if assumed.get("stack_hint") and format != "json":
            notices.append(assumed["stack_hint"])
        if format == "markdown":  # the explanations as tables of their own
            text += explanation_markdown(result)
    feasible = result.best.get(scenario.objective) is not None
    return Report(text=text, notices=notices, written=feasible,
                  figure=(lambda force: figures.plot_plan(result, plot, force=force))
                  if plot and feasible else None,
                  finish=lambda: require(result, scenario.objective))


def sites_report(scenario, format: str, uncertainty_table=None, *, draws: int = 0,
                 seed: int = 0, phases=None, passes: int = 1,
                 quantile_draws: int = 400) -> Report:
    """``--site a,b,c|all``: one search per site, the sites ranked; with ``phases`` (a
    scenario's ``[[phases]]``), one plan of the phases per site. Each site's constraints
    hold at ``scenario.confidence`` (its own margins: PUE, energy price and grid move
    them); ``draws`` > 0 (``--uncertainty``): each site's winners' P10/P50/P90 and the
    constraints they miss at P90.  At a ``--confidence`` each site's rows are at that
    quantile over ``quantile_draws`` draws, as the one-site plan's."""
    spreads = spreads_from(uncertainty_table)
    catalog = _catalog(scenario)

    def plan_one(s, **options):
        if phases:
            return confidence.plan_phases_at_confidence(s, phases, spreads, **options)
        return confidence.plan_at_confidence(s, spreads, **options)

    with search_progress("searching", passes) as progress:
        results = plan_sites(scenario, catalog=catalog, progress=progress, plan_one=plan_one)
    first = next(iter(results.values()))
    notices = list(getattr(first, "notices", ()))  # the phases', the same at every site
    if scenario.confidence is not None:  # each site's rows at the quantile, then ranked
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
        p = confidence.percentile_text(scenario.confidence or 0.5)  # unused for the nominal run
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
    feasible = any(r.best.get(scenario.objective) is not None for r in results.values())

    def finish():
        if feasible:
            return
        if phases:
            raise CapplanError(first.infeasible.get(scenario.objective, "no plan"),
                               exit_code=INFEASIBLE)
        require(first, scenario.objective)

    return Report(text=text, notices=notices, written=feasible, finish=finish)


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
    """The JSON of a one-site plan: the scenario, the winners (per objective and per
    accelerator), the Pareto front, knees, prices, what bound each winner, each
    accelerator's verdict."""
    scenario = asdict(result.scenario)
    scenario.pop("margins", None)
    extra = scenario.pop("extra", None)
    if extra:  # run-model inputs the flags set (site network), in SI units
        scenario["inputs"] = extra
    return {
        "scenario": scenario,
        **confidence.margin_payload(result.scenario),
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


def phases_payload(result, scenario) -> dict:
    """The JSON of a plan of several phases (:class:`planner.engine.search.phase_plan.PhasePlan`):
    the winners with their phases and estimate flags, the quantile planned at."""
    flags = result.estimate_flags
    return {"scenario": asdict(scenario),
            "phases": [p.name for p in result.phases],
            "best": {obj: None if row is None else {
                **row, "estimate_flags": list(flags.get(row["hardware"], [])),
                "range_edge": range_edge(row, result.scenario)}
                for obj, row in result.best.items()},
            "infeasible": result.infeasible, "evaluated": result.evaluated,
            "prices": result.prices, "assumptions": result.assumptions,
            **confidence.margin_payload(result.scenario),
            "approximation": "each phase's layout is the best for the objective on the "
            "cluster, chosen before the constraints are checked on the totals"}


#: Columns of the phases plan's table, per objective and per phase.
PHASE_TABLE = ("wall_days", "gpu_hours", "energy_mwh", "cost_usd", "co2e_t", "peak_power_mw")




def phases_report(scenario, phases, format: str, scheduler=None, workers=None,
                  uncertainty_table=None, *, draws: int = 0, seed: int = 0,
                  plot: str | None = None, passes: int = 1,
                  quantile_draws: int = 400) -> Report:
    """A scenario with ``[[phases]]``: the winners per objective (one cluster, each phase
    at its best layout), then the headline winner's phases; with ``--confidence`` the
    constraints hold at that quantile; ``draws`` > 0 (``--uncertainty``): the winners'
    P10/P50/P90 and the constraints they miss at P90 (``quantile_draws``: the draws the
    winners' numbers at ``--confidence`` are taken over); ``plot``: the figure of
    :func:`planner.report.plot.plot_phases`.  No plan: CapplanError (exit 1) at once."""
    spreads = spreads_from(uncertainty_table)
    with search_progress("searching", passes) as progress:
        result = confidence.plan_phases_at_confidence(scenario, phases, spreads,
                                           progress=progress, scheduler=scheduler,
                                           workers=workers)
    catalog = None
    if scenario.confidence is not None:  # the winners and their phases at the quantile
        catalog = _catalog(scenario)
        set_phases_at_quantile(result, catalog, spreads, draws=quantile_draws, seed=seed)
    notices = list(result.notices)
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
        report = phase_uncertainty(result, catalog or _catalog(scenario), spreads,
                                   draws=draws, seed=seed)
        risk = report["constraint_risk"]
        rows = [{**r, "missed_at_p90": _missed_at_p90(risk, r["objective"])
                 if r["phase"] == "total" else ""} for r in rows]
    payload = {**phases_payload(result, scenario),
               **({"uncertainty": report} if report else {}), "version": version()}
    title = (f"Best plans for {scenario.model}, {len(phases)} phases "
             f"({count_text(sum(p.tokens for p in phases))} tokens), one cluster; "
             f"{assumptions_line(result.assumptions)}")
    text = render(rows, format, title=title, payload=payload)
    if format == "csv":  # CSV rows have no title: the assumptions on stderr
        notices.append(f"assumed: {assumptions_line(result.assumptions)}")
    if result.assumptions.get("stack_hint") and format != "json":
        notices.append(result.assumptions["stack_hint"])
    if format == "table":
        text += "".join(line + "\n" for line in estimate_lines(result))
        text += "".join(line + "\n" for line in edge_lines(result))
        text += confidence.quantile_text(result.scenario) + "\n"
        if scenario.confidence is not None:  # a quantile of a sum is not a sum of quantiles
            text += (f"each phase row is that phase's own {label}; the phases' {label}s do not "
                     f"add up to the total's {label}\n")
        if report:
            text += render_uncertainty(report)
    return Report(text=text, notices=notices,
                  figure=(lambda force: figures.plot_phases(result, plot, force=force))
                  if plot else None)
