"""The report of ``capplan evaluate``: built here, written by the command.

:func:`evaluation_report` turns one evaluated run (``planner.cli.layout_options.resolve``'s
``ResolvedRun``) into a :class:`~planner.report.output.Report`: every number of the run
model as rows, its JSON payload (price, rent-vs-buy, assumptions, the alternatives), the
P10/P50/P90 of ``--uncertainty``, and the lines for stderr; :func:`phases_report` does so
for a run of ``[[phases]]``.  A layout that does not fit is refused here, in one line
(one over its HBM by less than the memory model's error is timed, with a warning).
The command only resolves the options, chooses the format and writes
(planner/cli/evaluate_command.py).
"""

from __future__ import annotations

from planner.analysis.one_run import site_class_pue
from planner.engine.economics.pricing import PriceQuote
from planner.engine.inputs.assumptions import commitment_text
from planner.engine.inputs.defaults import MEMORY_TOLERANCE
from planner.engine.inputs.domains import check
from planner.engine.inputs.phases import in_phase, sum_phases
from planner.engine.layouts.layout_check import within_memory_tolerance
from planner.engine.run.columns import column
from planner.engine.run.readable import count_text, readable_rows
from planner.engine.search.alternatives import (
    alternative_site_class,
    alternative_stack,
    alternatives_line,
    change,
    settled_note,
    unavailable,
)
from planner.errors import CapplanError, RunRefused
from planner.report.output import Report, render
from planner.report.payloads import evaluation_payload
from planner.version import version

#: Columns of the per-phase breakdown table (and of its total row).
TABLE_COLUMNS = ("tokens", "steps", "step_time_s", "wall_days", "ettr", "gpu_hours",
                 "energy_gpu_mwh", "energy_it_mwh", "energy_mwh", "cost_usd", "co2e_t")


def check_request(*, draws: int, seed: int) -> None:
    """CapplanError (one line) for a bad ``--draws`` or ``--seed``, before the run."""
    check({"draws": draws, "seed": seed})


def evaluation_report(run, format: str, *, options: dict, resolve, spreads=None,
                      draws: int = 2000, seed: int = 0) -> Report:
    """The report of one evaluated ``run`` in ``format``; ``options``/``resolve``: the
    command's options and its resolver, which re-evaluate the run's alternatives (a
    typical other stack, the other PUE of its site); ``spreads`` (``--uncertainty``): the
    input spreads of the P10/P50/P90 over ``draws`` draws from ``seed``."""
    shortfall = memory_shortfall(run.row, run.echo)
    if shortfall:
        raise CapplanError(shortfall)
    payload = evaluation_payload(run.row, run.echo)
    payload["catalog_version"] = run.catalog_version
    payload["price"] = run.price
    payload["rent_vs_buy"] = run.rent_vs_buy
    payload["assumptions"] = run.assumptions
    payload["method"] = run.echo["method"]
    payload["alternatives"] = alternatives(options, run, resolve)
    rows = [{"quantity": k, "value": v} for k, v in payload.items()
            if k not in ("breakdown", "memory_breakdown", "inputs", "price", "rent_vs_buy",
                         "assumptions", "alternatives")]
    price = PriceQuote(**run.price).label()
    rows.append({"quantity": "price", "value": price})
    rows += [{"quantity": f"rent_vs_buy.{k}", "value": run.rent_vs_buy[k]}
             for k in ("cloud_usd", "owned_usd", "cluster_capex_usd",
                       "ownership_usd_per_gpu_hour", "utilisation", "breakeven_utilisation",
                       "payback_months")]
    if spreads is not None:
        from planner.analysis.uncertainty import run_uncertainty  # pandas: only when asked

        bands = run_uncertainty(run.inputs, spreads, draws=draws, seed=seed, price=run.price,
                                hardware=run.echo["hardware"])
        payload["uncertainty"] = {"draws": draws, "seed": seed, **bands}
        rows += [{"quantity": f"{q}.{p}", "value": v} for q, band in bands.items()
                 for p, v in band.items()]
    rows += [{"quantity": f"breakdown.{k}", "value": v} for k, v in payload["breakdown"].items()]
    e = run.echo
    method = "" if e["method"] == "pretrain" else f" ({e['method']})"
    title = (f"{e['model']}{method} on {e['gpus']:,} x {e['hardware']}: TP{e['tp']} PP{e['pp']} "
             f"DP{e['dp']} CP{e['cp']} EP{e['ep']} ETP{e['etp']} VP{e['vp']}, micro-batch "
             f"{e['micro_batch']}, recompute {e['recompute']}, ZeRO-{e['zero']}")
    warning = memory_warning(run.row, run.echo)
    notices = [warning] if warning else []
    notices.append(assumptions_text(e, price, run.assumptions))
    if run.assumptions.get("stack_hint"):
        notices.append(run.assumptions["stack_hint"])
    if payload["alternatives"]:
        notices.append("what a typical alternative would change: "
                       + alternatives_line(payload["alternatives"]))
    if format == "table":  # human units; JSON and CSV keep the stored (SI) values
        rows = readable_rows(rows)
    return Report(text=render(rows, format, title=title, payload=payload), notices=notices)


def phases_report(phases, runs, format: str, *, spreads=None, draws: int = 2000,
                  seed: int = 0) -> Report:
    """The report of a run of ``phases`` (``runs``: each phase's evaluated run): each
    phase, then the totals; with ``spreads`` (``--uncertainty``) the P10/P50/P90 of the
    whole run, every phase drawn under the same factors and the phases summed per draw."""
    warnings = []
    for phase, run in zip(phases, runs, strict=True):
        if run.echo["method"] == "grpo":  # whole_run refuses an RL run that does not fit
            continue
        shortfall = memory_shortfall(run.row, run.echo)
        if shortfall:
            raise in_phase(phase, CapplanError(shortfall))
        warning = memory_warning(run.row, run.echo)
        if warning:  # said of the phase, as its errors are
            warnings.append(str(in_phase(phase, CapplanError(warning))))
    totals = sum_phases([r.row for r in runs])
    payload = {**phases_payload(phases, runs, totals), "version": version(),
               "catalog_version": runs[0].catalog_version}
    rows = phase_table(phases, runs, totals)
    if spreads is not None:
        from planner.analysis.uncertainty import phases_run_uncertainty  # pandas: when asked

        bands = phases_run_uncertainty([r.inputs for r in runs], spreads, draws=draws,
                                       seed=seed, price=runs[0].price,
                                       hardware=runs[0].echo["hardware"])
        payload["uncertainty"] = {"draws": draws, "seed": seed, **bands}
        total = rows[-1]
        for p in ("p10", "p50", "p90"):  # the drawn quantities; the rest left blank
            rows.append({k: f"total {p.upper()}" if k == "phase" else
                         bands[k][p] if k in bands else None for k in total})
    e = runs[0].echo
    title = (f"{e['model']} on {e['hardware']}: {len(phases)} phases, "
             f"{totals['wall_days']:.1f} days, {totals['gpu_hours']:,.0f} GPU-hours")
    return Report(text=render(rows, format, title=title, payload=payload), notices=warnings)


def alternatives(options: dict, run, resolve) -> list[dict]:
    """The run re-evaluated (``resolve``: the command's resolver), at its layout, with the
    typical alternative stack and the other PUE of its site (planner.engine.search.alternatives),
    each as one change; none when the catalog lacks the alternative."""
    e = run.echo
    # the run's sizes; its recompute and ZeRO stage only where the user gave them: left out,
    # the alternative stack settles them as the run did (its own ZeRO stage, more recompute
    # where the layout does not fit)
    same_layout = {**options, **{k: e[k] for k in ("tp", "pp", "cp", "ep", "vp",
                                                   "micro_batch")}}
    out = []
    stack = alternative_stack(e["stack"], run.cuda_part)  # None: none runs on this part
    if stack is not None:
        try:
            alt = resolve({**same_layout, "stack": stack})
            out.append(change(f"--stack {stack}", "gpu_hours", "GPU-hours",
                              run.row["gpu_hours"], alt.row["gpu_hours"], bool(alt.row["fits"]),
                              note=settled_note(e, alt.echo)))
        except RunRefused as refused:  # int8 on a float stack, a Mamba model on torchtitan
            out.append(unavailable(f"--stack {stack}", "gpu_hours", refused.why))
        except CapplanError:  # e.g. a user catalog without the alternative stack
            pass
    try:
        if "pue" not in (e.get("network") or {}):
            # the site class sets the PUE alone, and facility energy is the IT energy
            # times the PUE (formulas.energy.facility_power): the run's energy scaled,
            # not a re-evaluation
            site_class = alternative_site_class(e["site_class"])
            pue = site_class_pue(options, site_class)
            out.append(change(f"--site-class {site_class}", "energy_kwh", "energy",
                              run.row["energy_kwh"],
                              run.row["energy_kwh"] * pue / run.assumptions["pue"],
                              note=f" (PUE {pue:.2f})"))
    except CapplanError:  # e.g. a user catalog without the site's own PUE
        pass
    return out


def memory_remedy(largest: str, echo: dict) -> str:
    """What shrinks the largest memory term of a GPU under this layout."""
    if largest == "activation_bytes":
        # an MoE layer's tensors go with Megatron-Core's selective module moe
        moe = int(echo.get("ep") or 1) > 1 and echo["recompute"] == "selective" \
            and not echo.get("recompute_modules")
        ways = (["--recompute full"] if echo["recompute"] != "full" else []) + \
               (["--recompute-modules moe"] if moe else []) + \
               (["--offload-activations"] if not echo.get("offload_activations") else []) + \
               (["a smaller --micro-batch"] if echo["micro_batch"] > 1 else [])
        return _either([*ways, "more --tp/--cp"])
    stage = {"weights_bytes": 3, "grads_bytes": 2, "optimizer_state_bytes": 1}.get(largest)
    if stage is None:
        return "an accelerator with more memory"
    zero = [f"--zero {stage if echo['zero'] < stage else 3}"] if echo["zero"] < 3 else []
    return _either([*zero, "more --tp/--pp"])


def _either(ways: list[str]) -> str:
    return ", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0]


def _needs(row: dict, echo: dict) -> str:
    largest = str(row["largest_memory_term"])
    modules = echo.get("recompute_modules") if echo["recompute"] == "selective" else None
    recompute = echo["recompute"] + (f" ({modules.replace(',', ', ')})" if modules else "")
    return (f"{echo['model']} at TP{echo['tp']} PP{echo['pp']} DP{echo['dp']} CP{echo['cp']} "
            f"EP{echo['ep']}, micro-batch {echo['micro_batch']}, recompute {recompute}, "
            f"ZeRO-{echo['zero']} needs {row['memory_per_gpu_bytes'] / 1e9:.1f} GB per GPU "
            f"({column(largest).label} {row[largest] / 1e9:.1f} GB), {echo['hardware']} has "
            f"{row['hbm_bytes'] / 1e9:.1f} GB")


def memory_shortfall(row: dict, echo: dict) -> str | None:
    """One line naming the memory a layout lacks and what would make it fit, or None
    when it fits or lacks less than the memory model's error (:func:`memory_warning`).
    ``capplan evaluate`` refuses such a layout (its step time would be of a run that
    cannot start); the Python API keeps returning ``fits`` False."""
    if bool(row["fits"]) or bool(within_memory_tolerance(row)):
        return None
    return (f"the layout does not fit: {_needs(row, echo)}; to fit try "
            f"{memory_remedy(str(row['largest_memory_term']), echo)} "
            "(or `capplan plan` to search layouts that fit)")


def memory_warning(row: dict, echo: dict) -> str | None:
    """The warning line of a layout over its HBM by less than the memory model's error
    (published runs that ran were predicted up to 1.075x theirs): timed, ``fits`` False."""
    if bool(row["fits"]) or not bool(within_memory_tolerance(row)):
        return None
    over = row["memory_per_gpu_bytes"] / row["hbm_bytes"] - 1
    return (f"warning: the layout may not fit: {_needs(row, echo)} ({100 * over:.0f} % over, "
            f"within the memory model's {100 * MEMORY_TOLERANCE:.0f} % error on published runs "
            f"that ran); timed as given, fits = no; to be sure try "
            f"{memory_remedy(str(row['largest_memory_term']), echo)}")


def assumptions_text(echo: dict, price: str, assumed: dict) -> str:
    """One line: the assumptions of a one-shot run the user did not necessarily type
    (``assumed``: planner.engine.inputs.assumptions.assumptions, its ``cost_basis`` the basis the
    run was costed by)."""
    batch = echo["global_batch"] * echo["seq_len"]
    basis = "TCO (owned cluster)" if assumed["cost_basis"] == "tco" else "cloud"
    site_class = ("its own PUE" if assumed["site_class"] == "site"
                  else f"class {assumed['site_class']}")
    precision = f"precision {assumed['precision']}, " if assumed.get("precision") else ""
    return (f"assumed: {count_text(echo['tokens'])} tokens, global batch "
            f"{echo['global_batch']:,} x {echo['seq_len']:,}-token sequences "
            f"({count_text(batch)} tokens a step), stack {assumed['stack']}, {precision}network "
            f"{assumed['network']}, site {echo['site']} ({site_class}, PUE "
            f"{assumed['pue']:.2f}, grid {assumed['grid_intensity_g_per_kwh']:,.0f} g/kWh), "
            f"cost by {basis} at {price}{commitment_text(assumed)}, nominal run")


def _layout(echo: dict) -> str:
    return f"TP{echo['tp']} PP{echo['pp']} CP{echo['cp']} DP{echo['dp']}"


def phase_table(phases, runs, totals: dict) -> list[dict]:
    """Rows of the per-phase breakdown, then the total."""
    rows = []
    for phase, run in zip(phases, runs, strict=True):
        e = run.echo
        rows.append({"phase": phase.name, "gpus": e["gpus"], "layout": _layout(e),
                     "seq_len": e["seq_len"], "global_batch": e["global_batch"],
                     **{k: run.row[k] for k in TABLE_COLUMNS}})
    rows.append({"phase": "total", "gpus": max(r["gpus"] for r in rows), "layout": "",
                 "seq_len": max(r["seq_len"] for r in rows), "global_batch": None,
                 **{k: totals.get(k, float("nan")) for k in TABLE_COLUMNS}})
    return rows


def phases_payload(phases, runs, totals: dict) -> dict:
    """The JSON object of a run of several phases: totals, then each phase's run."""
    return {"totals": totals,
            "phases": [{"name": p.name, "tokens": r.row["tokens"],
                        **(_grpo_payload(r) if r.echo["method"] == "grpo"
                           else evaluation_payload(r.row, r.echo))}
                       for p, r in zip(phases, runs, strict=True)]}


def _grpo_payload(run) -> dict:
    """An RL phase's JSON: its inputs and RL quantities (pools, shares, step, totals)."""
    inputs = {k: v for k, v in run.echo.items() if k != "rl"}
    return {"method": "grpo", "inputs": inputs, **run.echo["rl"]}
