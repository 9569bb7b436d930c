"""Does spot still win once preemptions are paid?  A spot plan row against on-demand.

The same layout is evaluated at the on-demand price of the same provider choice (no
preemptions); the break-even system MTBF is Young's first-order closed form
:func:`formulas.cost.spot_breakeven_mtbf`, converted to preemptions per instance-month
(one instance = one node) with the on-demand failures kept.
"""

from __future__ import annotations

from dataclasses import replace

from formulas.cost import SECONDS_PER_MONTH, spot_breakeven_mtbf
from planner.engine.inputs.layout_rules import layout_arguments
from planner.engine.inputs.scenario import DEFAULTS, value
from planner.engine.layouts.evaluator import LayoutRequest, evaluate_run
from planner.engine.run.run_inputs import RunChoices
from planner.errors import CapplanError


def spot_versus_on_demand(catalog, scenario, row: dict) -> dict | None:
    """Spot and on-demand cost of ``row``'s layout, and the preemption rate where they meet.

    None when the provider has no on-demand price for the accelerator.
    """
    s = scenario
    # the scenario's run (RunChoices.from_scenario: every choice, the stack too) at the
    # on-demand price, the row's whole layout
    # and the row's batch (a plan over a range of batches: the range's LO is the batch
    # with which the run needs its tokens)
    choices = replace(RunChoices.from_scenario(s, row["hardware"]), pricing="on-demand",
                      spot_interruption=DEFAULTS["spot_interruption"],
                      global_batch=int(row["global_batch"]))
    overrides = dict(s.extra)
    if s.global_batch_range is not None:
        overrides["reference_batch"] = float(s.global_batch_range[0])
    try:
        columns, _ = evaluate_run(choices, LayoutRequest(**layout_arguments(row)),
                                  catalog=catalog, overrides=overrides or None)
    except CapplanError:
        return None
    od = {k: columns[k].item(0) for k in ("cost_usd", "cost_cloud_usd", "wall_time_s",
                                          "solve_time_s", "system_mtbf_s")}
    price_ratio = (row["cost_cloud_usd"] / row["wall_time_s"]) / (
        od["cost_cloud_usd"] / od["wall_time_s"])
    out = {"spot_cost_usd": float(row["cost_usd"]), "on_demand_cost_usd": float(od["cost_usd"]),
           "spot_wins": bool(row["cost_usd"] < od["cost_usd"]),
           "price_ratio": float(price_ratio),
           "system_mtbf_s": float(row["system_mtbf_s"]),
           "on_demand_system_mtbf_s": float(od["system_mtbf_s"]),
           "breakeven_system_mtbf_s": None, "breakeven_preemptions_per_instance_month": None,
           "method": "Young first-order break-even (formulas.cost.spot_breakeven_mtbf)"}
    if price_ratio >= 1:
        return out  # spot is not cheaper per hour: it never breaks even
    waste = od["wall_time_s"] / od["solve_time_s"] - 1
    m_star = float(spot_breakeven_mtbf(price_ratio, max(row["checkpoint_stall_s"], 1e-9),
                                       row["restart_s"], waste))
    gpus_per_node = value(catalog.node(catalog.accelerator(row["hardware"]).node).gpus_per_node)
    nodes = row["gpus"] / gpus_per_node
    per_node_rate = (1 / m_star - 1 / od["system_mtbf_s"]) / nodes
    out["breakeven_system_mtbf_s"] = m_star
    if per_node_rate > 0:
        out["breakeven_preemptions_per_instance_month"] = per_node_rate * SECONDS_PER_MONTH
    return out
