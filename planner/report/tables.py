"""Human reports of plan results: where the time and the energy go, rich tables."""

from __future__ import annotations

import io

from planner.analysis.estimates import flag_text
from planner.analysis.quantile_rows import quantile_label
from planner.analysis.uncertainty import risk_lines
from planner.engine.economics.ownership import COST_PART_LABELS, cost_basis
from planner.engine.economics.pricing import PriceQuote
from planner.engine.inputs.assumptions import assumptions_line
from planner.engine.run.columns import step_parts
from planner.engine.run.readable import count_text, device_word, table_amount
from planner.engine.search.explain import (
    accelerator_verdicts,
    active_constraints,
    plan_and_value_text,
    range_edge,
    range_edge_text,
)
from planner.engine.search.optimize import PlanResult
from planner.report.output import table_text, terminal_width

OBJECTIVE_LABELS = {"time": "fastest", "cost": "cheapest", "energy": "least energy",
                    "carbon": "least carbon", "tcdp": "least carbon x delay",
                    "cci": "least carbon per FLOP"}


def time_breakdown(row: dict) -> dict[str, float]:
    """Wall time of the whole run split by cause [s]; parts sum to ``wall_time_s``."""
    steps = row["steps"]
    parts = {label: steps * row[key] for label, key in step_parts()}
    checkpoints = row["solve_time_s"] / row["checkpoint_interval_s"]
    parts["checkpoint stalls"] = checkpoints * row["checkpoint_stall_s"]
    parts["failures and restarts"] = (row["wall_time_s"] - row["solve_time_s"]
                                      - parts["checkpoint stalls"])
    return parts


def energy_breakdown(row: dict) -> dict[str, float]:
    """Facility energy split by consumer [kWh]; parts sum to ``energy_kwh``."""
    return {
        "GPUs": row["energy_gpu_kwh"],
        "rest of nodes and network": row["energy_it_kwh"] - row["energy_gpu_kwh"],
        "cooling and power delivery (PUE)": row["energy_kwh"] - row["energy_it_kwh"],
    }


def money_breakdown(parts: dict[str, float]) -> dict[str, float]:
    """The cost parts (planner.engine.economics.ownership.cost_parts) by their labels [USD]."""
    return {COST_PART_LABELS[part]: usd for part, usd in parts.items()}


def layout_text(row: dict, batch: bool = False) -> str:
    """The layout of ``row`` in short (``batch``: with its global batch, ``B2048``, as a
    plan over a range of batches shows it)."""
    text = f"TP{int(row['tp'])} PP{int(row['pp'])} DP{int(row['dp'])}"
    for key, label in (("cp", "CP"), ("ep", "EP"), ("vp", "VP")):
        if int(row[key]) > 1:
            text += f" {label}{int(row[key])}"
    if int(row["ep"]) > 1 and int(row.get("etp", row["tp"])) != int(row["tp"]):
        text += f" ETP{int(row['etp'])}"
    text = f"{text} mb{int(row['micro_batch'])} {row['recompute']} ZeRO-{int(row['zero'])}"
    return f"{text} B{int(row['global_batch'])}" if batch else text


def winner_rows(result: PlanResult) -> list[dict]:
    """One flat row per objective (csv/markdown/table)."""
    rows = []
    for objective, row in result.best.items():
        if row is None:
            continue
        rows.append({"objective": objective, "method": result.scenario.method,
                     "hardware": row["hardware"], "gpus": int(row["gpus"]),
                     "layout": layout_text(row, result.scenario.global_batch_range is not None),
                     "quantile": quantile_label(result.scenario.confidence),
                     "days": float(row["wall_days"]), "usd": float(row["cost_usd"]),
                     "gpu_mwh": float(row["energy_gpu_mwh"]),
                     "it_mwh": float(row["energy_it_mwh"]),
                     "mwh": float(row["energy_mwh"]), "tco2e": float(row["co2e_t"]),
                     "tcdp_t_d": float(row["tcdp_t_d"]),
                     "cci_g_per_eflop": float(row["cci_g_per_eflop"]),
                     "mfu": float(row["mfu"]),
                     "estimate_flags": ",".join(result.estimate_flags.get(row["hardware"], [])),
                     **_rent_vs_buy_cells(result, objective),
                     **{f"usd_{part}": usd
                        for part, usd in result.cost_parts.get(objective, {}).items()}})
    return rows


def _rent_vs_buy_cells(result: PlanResult, objective: str) -> dict:
    """The owned-cluster cost and break-even utilisation of one winner (None: not computed
    or renting wins at any utilisation)."""
    rvb = result.rent_vs_buy.get(objective) or {}
    return {"owned_usd": rvb.get("owned_usd"),
            "breakeven_utilisation": rvb.get("breakeven_utilisation")}


def rent_vs_buy_lines(result: PlanResult) -> list[str]:
    """'Rent vs buy (<objective>): ...', once per plan: for the headline objective's winner
    (else the first winner); the cost on the plan's basis is the winners table's (both
    count the job's accelerators and its hot spares). JSON keeps every winner's."""
    lines = []
    chosen = result.scenario.objective
    if chosen not in result.rent_vs_buy:
        chosen = next(iter(result.rent_vs_buy), None)
    for objective, r in result.rent_vs_buy.items():
        if objective != chosen:
            continue
        u_star = r["breakeven_utilisation"]
        payback = r["payback_months"]
        mark = {"cloud": "", "tco": ""}
        mark[r.get("basis", "cloud")] = " (this plan's cost)"
        lines.append(
            f"Rent vs buy ({OBJECTIVE_LABELS[objective]}): cloud {_fmt_usd(r['cloud_usd'])} USD"
            f"{mark['cloud']} at {r['cloud_usd_per_gpu_hour']:.2f} $/GPU-h ({r['cloud_tier']}) "
            f"vs owned {_fmt_usd(r['owned_usd'])} USD{mark['tco']} "
            f"(capex {_fmt_usd(r['cluster_capex_usd'])} USD, "
            f"{r['ownership_usd_per_gpu_hour']:.2f} $/GPU-h fixed at "
            f"{r['utilisation']:.0%} utilisation, energy {r['energy_usd_per_gpu_hour']:.2f} "
            f"$/GPU-h at site {r['site']}); buying wins above "
            + (f"{u_star:.0%} utilisation" if u_star is not None else "no utilisation (rent)")
            + (f", pays back after {payback:.0f} months of use" if payback is not None
               else ", never pays back at this utilisation") + ".")
    return lines


def per_hardware_rows(result: PlanResult, objective: str) -> list[dict]:
    rows = []
    for hw, best in result.per_hardware.items():
        row = best[objective]
        knee = result.knee.get(hw)
        rows.append({"hardware": hw, "gpus": int(row["gpus"]), "layout": layout_text(row),
                     "days": float(row["wall_days"]), "usd": float(row["cost_usd"]),
                     "gpu_mwh": float(row["energy_gpu_mwh"]),
                     "it_mwh": float(row["energy_it_mwh"]),
                     "mwh": float(row["energy_mwh"]), "tco2e": float(row["co2e_t"]),
                     "tcdp_t_d": float(row["tcdp_t_d"]),
                     "cci_g_per_eflop": float(row["cci_g_per_eflop"]),
                     "mfu": float(row["mfu"]),
                     "knee_gpus": int(knee["gpus"]) if knee else None,
                     "knee_beyond_range": bool(knee and knee.get("beyond_range"))})
    order = {"time": "days", "cost": "usd", "energy": "mwh", "carbon": "tco2e",
             "tcdp": "tcdp_t_d", "cci": "cci_g_per_eflop"}[objective]
    return sorted(rows, key=lambda r: r[order])


#: Headers of the three energy columns of the plan tables (winner_rows' gpu_mwh, it_mwh, mwh).
ENERGY_HEADERS = ("GPU MWh", "IT MWh", "facility MWh")


def _energy_cells(r: dict) -> list[str]:
    return [table_amount(r[k]) for k in ("gpu_mwh", "it_mwh", "mwh")]


def _fmt_usd(v: float) -> str:
    return f"{v / 1e6:,.2f} M" if v >= 1e6 else f"{v:,.0f}"


def estimate_lines(result: PlanResult) -> list[str]:
    """The footnote of the winners table's '*': what each flagged winner's accelerator
    rests on that is a catalog estimate (planner.analysis.estimates)."""
    shown = dict.fromkeys(r["hardware"] for r in result.best.values() if r is not None)
    return [f"* {hw}: {flag_text(result.estimate_flags[hw])}" for hw in shown
            if result.estimate_flags.get(hw)]


def _at(s) -> str:
    """' at P90 (uncertainty model)' for a plan at a quantile; '' for the nominal run."""
    return "" if s.confidence is None else f" at {quantile_label(s.confidence)} (uncertainty model)"


def render_plan(result: PlanResult, width: int | None = None) -> str:
    """The rich ``capplan plan`` report as text, ``width`` characters wide (default: the
    terminal's, see :func:`planner.report.output.terminal_width`)."""
    from rich.console import Console, Group
    from rich.panel import Panel

    width = width or terminal_width()
    s = result.scenario
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    console.print(f"[bold]{s.model}[/bold] on {count_text(s.tokens)} tokens, "
                  f"{s.precision}, {s.checkpoint} checkpoints, "
                  f"{assumptions_line(result.assumptions)}; "
                  f"{result.evaluated:,} layouts evaluated ({result.fitting:,} fit) "
                  f"in {result.seconds:.2f} s", highlight=False)
    if result.assumptions.get("stack_hint"):
        console.print(f"note: {result.assumptions['stack_hint']}", highlight=False,
                      markup=False)
    # energy in three columns: GPUs, IT (GPUs, rest of nodes, network), facility (IT x PUE)
    numbers = {"GPUs", "days", "USD", *ENERGY_HEADERS, "tCO2e", "MFU", "knee GPUs"}
    winners = [[OBJECTIVE_LABELS[r["objective"]],
                r["hardware"] + (" *" if r["estimate_flags"] else ""), f"{r['gpus']:,}",
                r["layout"], table_amount(r["days"]), _fmt_usd(r["usd"]), *_energy_cells(r),
                table_amount(r["tco2e"]), f"{r['mfu']:.1%}"] for r in winner_rows(result)]
    if winners:
        buf.write(table_text(["objective", "hardware", "GPUs", "layout", "days", "USD",
                              *ENERGY_HEADERS, "tCO2e", "MFU"], winners,
                             title="Winners per objective" + _at(s), width=width,
                             right=numbers))
    for line in (estimate_lines(result) + price_lines(result) + spot_lines(result)
                 + rent_vs_buy_lines(result)):
        console.print(line, highlight=False, markup=False)
    if result.per_hardware:
        rows = [[r["hardware"], f"{r['gpus']:,}", r["layout"], table_amount(r["days"]),
                 _fmt_usd(r["usd"]), *_energy_cells(r), table_amount(r["tco2e"]),
                 f"{r['mfu']:.1%}", _knee_cell(r)]
                for r in per_hardware_rows(result, s.objective)]
        buf.write(table_text(["hardware", "GPUs", "layout", "days", "USD", *ENERGY_HEADERS,
                              "tCO2e", "MFU", "knee GPUs"], rows,
                             title=f"Best per accelerator ({s.objective})" + _at(s), width=width,
                             right=numbers))
    head = result.best.get(s.objective)
    if head is not None:
        panels = [
            Panel(_shares(time_breakdown(head), head["wall_time_s"], 86400, "days"), expand=False,
                  title=f"Where the time goes ({OBJECTIVE_LABELS[s.objective]} plan)"),
            Panel(_shares(energy_breakdown(head), head["energy_kwh"], 1000, "MWh"), expand=False,
                  title="Where the energy goes")]
        parts = result.cost_parts.get(s.objective)
        if parts:
            panels.append(Panel(_shares(money_breakdown(parts), head["cost_usd"], 1e6, "M USD"),
                                expand=False, title="Where the money goes ("
                                f"{result.rent_vs_buy[s.objective]['basis']}; sums to the "
                                "winners table's USD)"))
        console.print(Group(*panels))
        knee = result.knee.get(head["hardware"])
        if knee and knee.get("beyond_range"):
            word = device_word(head["hardware"])
            console.print(f"Knee on {head['hardware']}: not reached by {int(knee['gpus']):,} "
                          f"{word}, the largest cluster searched (marginal scaling efficiency "
                          f"still {knee['marginal_efficiency']:.2f} >= {s.knee_threshold} "
                          f"there); more {word} may still pay: raise --max-gpus to find it.")
        elif knee:
            console.print(f"Knee on {head['hardware']}: {int(knee['gpus']):,} "
                          f"{device_word(head['hardware'])} "
                          f"(marginal scaling efficiency {knee['marginal_efficiency']:.2f} "
                          f">= {s.knee_threshold}); beyond it adding "
                          f"{device_word(head['hardware'])} stops paying.")
    if active_constraints(s) and head is not None:
        buf.write(table_text(["objective", "binding", "unconstrained optimum"],
                             [[OBJECTIVE_LABELS[r["objective"]], r["binding"], r["unconstrained"]]
                              for r in binding_rows(result)],
                             title=f"What bound each winner ({constraints_text(s)})",
                             width=width))
    buf.write(table_text(["hardware", "verdict", "reason"],
                         [[r["hardware"], r["verdict"], r["reason"].replace("; ", "\n")]
                          for r in accelerator_verdicts(result)],
                         title=f"Why each accelerator won or lost ({s.objective}; "
                         f"{constraints_text(s)})",
                         width=width))
    for objective, text in result.infeasible.items():
        console.print(f"[bold]{objective}[/bold]: {text}")
    return buf.getvalue()


def constraints_text(s) -> str:
    """'deadline 90 days, budget 5,000,000 USD, power cap 20 MW' (the constraints set)."""
    parts = [f"deadline {s.deadline_days:g} days" if s.deadline_days is not None else None,
             f"budget {s.budget_usd:,.0f} USD" if s.budget_usd is not None else None,
             f"power cap {s.max_power_mw:g} MW" if s.max_power_mw is not None else None]
    return ", ".join(p for p in parts if p) or "no constraints"


def _knee_cell(row: dict) -> str:
    """The knee's GPU count ('512+' when it lies beyond the range searched; '-': none)."""
    if not row["knee_gpus"]:
        return "-"
    return f"{row['knee_gpus']:,}" + ("+" if row["knee_beyond_range"] else "")


def edge_lines(result) -> list[str]:
    """One line per winner on an edge of the GPU range searched (a plan of phases, whose
    report has no binding table): a wider range may move it."""
    s = result.scenario
    by_edge: dict[tuple[str, int], list[str]] = {}
    for objective, row in result.best.items():
        edge = range_edge(row, s)
        if edge is not None:
            by_edge.setdefault((edge, int(row["gpus"])), []).append(OBJECTIVE_LABELS[objective])
    return [f"{', '.join(labels)}: {gpus:,} GPUs is {range_edge_text(edge, s)}, the edge of "
            "the GPU range searched; a wider range may do better."
            for (edge, gpus), labels in by_edge.items()]


def binding_rows(result: PlanResult) -> list[dict]:
    """Per objective with a winner: the constraints that moved its optimum and the
    unconstrained optimum (planner.engine.search.explain.binding)."""
    rows = []
    for objective, b in result.binding.items():
        if b.best is None:
            continue
        parts = b.names() or (["all together"] if b.together else [])
        edge = range_edge_text(b.range_edge, result.scenario)
        if edge:
            parts.append(f"{edge} (the edge of the GPU range)")
        verdict = ", ".join(parts) or "none"
        free = b.unconstrained
        rows.append({"objective": objective, "binding": verdict,
                     "unconstrained": "-" if free is None else
                     plan_and_value_text(free, objective)})
    return rows


def price_lines(result: PlanResult) -> list[str]:
    """'Price <accelerator>: <which $/GPU-h, from where, spread>' for each winner's accelerator."""
    names = sorted({row["hardware"] for row in result.best.values() if row is not None})
    return [f"Price {hw}: {PriceQuote(**result.prices[hw]).label()}"
            for hw in names if hw in result.prices]


def spot_lines(result: PlanResult) -> list[str]:
    """With --pricing spot: does the headline plan still win once preemptions are paid?"""
    c = result.spot_vs_on_demand.get(result.scenario.objective)
    if not c:
        return []
    verdict = "spot wins" if c["spot_wins"] else "on-demand wins"
    text = (f"Spot vs on-demand (same layout): {_fmt_usd(c['spot_cost_usd'])} vs "
            f"{_fmt_usd(c['on_demand_cost_usd'])} USD, {verdict} with preemptions paid "
            f"(system MTBF {c['system_mtbf_s'] / 3600:.1f} h)")
    if c["breakeven_preemptions_per_instance_month"]:
        text += (f"; break-even at {c['breakeven_preemptions_per_instance_month']:.2g} "
                 f"preemptions per instance-month (system MTBF "
                 f"{c['breakeven_system_mtbf_s'] / 60:.0f} min)")
    return [text]


def _shares(parts: dict[str, float], total: float, scale: float, unit: str) -> str:
    lines = []
    for label, value in sorted(parts.items(), key=lambda kv: -kv[1]):
        if value <= 0 or value < 1e-4 * total:
            continue
        bar = "#" * max(1, round(30 * value / total))
        lines.append(f"{label:<34} {value / scale:>10,.2f} {unit} {value / total:>6.1%} {bar}")
    return "\n".join(lines)


def render_uncertainty(report: dict, width: int | None = None) -> str:
    """Tables of P10/P50/P90 of the nominal winners and each accelerator's win
    probability."""
    width = width or terminal_width()
    bands = [[OBJECTIVE_LABELS[objective], *(
        " / ".join(_short(q[k][p]) for p in ("p10", "p50", "p90"))
        for k in ("wall_days", "cost_usd", "energy_mwh", "co2e_t"))]
        for objective, q in report["nominal_winners"].items()]
    text = table_text(["objective", "days", "USD", "MWh", "tCO2e"], bands,
                      title=f"Uncertainty of the winners ({report['draws']} draws, seed "
                      f"{report['seed']}): P10 / P50 / P90", width=width,
                      right={"days", "USD", "MWh", "tCO2e"})
    labels = {o: f"the {label} plan" for o, label in OBJECTIVE_LABELS.items()}
    risks = "".join(f"{line}\n" for line in risk_lines(report, labels))
    if not report.get("win_probability"):
        return text + risks
    objectives = list(report["win_probability"])
    names = sorted(next(iter(report["win_probability"].values())))
    wins = []
    for hw in names:
        probs = [report["win_probability"][o][hw] for o in objectives]
        if any(p > 0 for p in probs):
            wins.append([hw, *(f"{p:.0%}" for p in probs)])
    sigma = report.get("price_sigma") or {}
    spread = ("price drawn per accelerator with log-spread sigma: "
              + ", ".join(f"{hw} {s:.2f}" for hw, s in sigma.items()) + "\n") if sigma else ""
    return text + table_text(["hardware", *objectives], wins,
                             title="Probability of being the winner", width=width,
                             right=set(objectives)) + spread + risks


def _short(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def winner_layout(row: dict) -> str:
    """A winner's layout; a run of several phases: each phase's, separated by ' / '."""
    if "phases" in row:
        return " / ".join(layout_text(p) for p in row["phases"])
    return layout_text(row)


def site_rows(results: dict, ranking: list[dict], winners: dict) -> list[dict]:
    """One flat row per site (csv/markdown/table): its inputs, the best value and accelerator
    per objective, the objectives it wins, and its least-carbon plan."""
    rows = []
    for r in ranking:
        carbon = results[r["site"]].best.get("carbon")
        rows.append({**r, "quantile": quantile_label(results[r["site"]].scenario.confidence),
                     "wins": ",".join(o for o, sites in winners.items()
                                          if r["site"] in sites),
                     "least_carbon_gpus": None if carbon is None else int(carbon["gpus"]),
                     "least_carbon_layout": None if carbon is None else winner_layout(carbon),
                     "least_carbon_days": None if carbon is None else float(carbon["wall_days"]),
                     "least_carbon_usd": None if carbon is None else float(carbon["cost_usd"])})
    return rows


def render_sites(results: dict, rows: list[dict], winners: dict,
                 width: int | None = None) -> str:
    """The ``capplan plan --site a,b,c`` report: sites ranked, winners, least-carbon plans."""
    width = width or terminal_width()
    s = next(iter(results.values())).scenario
    seconds = sum(r.seconds for r in results.values())
    phases = getattr(next(iter(results.values())), "phases", ())
    run = (f"{len(phases)} phases ({count_text(sum(p.tokens for p in phases))} tokens), one "
           "cluster" if phases else f"{count_text(s.tokens)} tokens")
    searches = len(results) * max(len(phases), 1)
    a = next(iter(results.values())).assumptions
    head = (f"{s.model} on {run} at {len(results)} sites, stack {a.get('stack', s.stack)}, "
            f"network {a.get('network', '')}, site class {s.site_class}, cost by "
            f"{cost_basis(s)}, {s.pricing} prices "
            f"({s.provider}), {quantile_label(s.confidence)}; {searches} searches in "
            f"{seconds:.1f} s\n")

    def cell(value, fmt):
        return "-" if value is None else fmt(value)

    ranked = [[r["site"], f"{r['pue']:.2f}", f"{r['usd_per_kwh']:.3f}", f"{r['g_per_kwh']:,.0f}",
               cell(r["best_cost_usd"], _fmt_usd) + f" {r['cost_hardware'] or ''}",
               cell(r["best_energy_mwh"], table_amount) + f" {r['energy_hardware'] or ''}",
               cell(r["best_co2e_t"], table_amount) + f" {r['carbon_hardware'] or ''}",
               cell(r["best_tcdp_t_d"], table_amount), r["wins"] or "-"]
              for r in rows]
    text = head + table_text(
        ["site", "PUE", "$/kWh", "gCO2/kWh", "best USD", "best MWh", "best tCO2e",
         "best tCDP [t d]", "wins"], ranked,
        title=f"Sites ranked by {s.objective}", width=width,
        right={"PUE", "$/kWh", "gCO2/kWh", "best tCDP [t d]"})
    text += "Winners: " + "; ".join(
        f"{OBJECTIVE_LABELS[o]}: {', '.join(sites) if sites else 'none'}"
        for o, sites in winners.items()) + "\n"
    carbon = [[r["site"], r["carbon_hardware"] or "-", cell(r["least_carbon_gpus"], str),
               r["least_carbon_layout"] or "-", cell(r["least_carbon_days"], lambda v: f"{v:.1f}"),
               cell(r["best_co2e_t"], table_amount),
               cell(r["least_carbon_usd"], _fmt_usd)] for r in rows]
    text += table_text(["site", "hardware", "GPUs", "layout", "days", "tCO2e", "USD"], carbon,
                       title="Least-carbon plan per site", width=width,
                       right={"GPUs", "days", "tCO2e", "USD"})
    return text
