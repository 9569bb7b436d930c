"""What a typical alternative would change for a plan's winner: the winner's layout
re-evaluated with the alternative stack and site class of planner.engine.search.alternatives
(one extra evaluation each: the stack at its own ZeRO stage and with the recompute the
layout needs, a stack that cannot fit it at all says so).
"""

from __future__ import annotations

import pandas as pd

from planner.analysis.uncertainty import frontier_inputs
from planner.engine.inputs.defaults import cuda_part, stack_of
from planner.engine.inputs.scenario import stack_zero_stage
from planner.engine.run.kernel_run import evaluate_columns
from planner.engine.search.alternatives import (
    alternative_site_class,
    alternative_stack,
    change,
    settled_note,
    unavailable,
)
from planner.errors import RunRefused

#: Columns compared: GPU-hours for a stack, facility energy for a PUE.
COMPARED = ("fits", "gpu_hours", "energy_kwh")


def row_alternatives(s, catalog, row: dict) -> list[dict]:
    """The alternatives of one plan row (a frontier row of scenario ``s``)."""
    frame = pd.DataFrame([row])
    hw = row["hardware"]
    nominal = {**row, **row.get("nominal", {})}  # a row at --confidence Q: its nominal run
    out = []
    stack = alternative_stack(stack_of(catalog, hw, s.stack, s.model),
                              cuda_part(catalog.accelerator(hw)))
    if stack is not None and stack in catalog.stacks:
        try:
            out.append(_stack_change(s, catalog, hw, row, stack, float(nominal["gpu_hours"])))
        except RunRefused as refused:  # int8 on a float stack, a Mamba model on torchtitan
            out.append(unavailable(f"--stack {stack}", "gpu_hours", refused.why))
    site_class = alternative_site_class(s.site_class)
    pue = float(catalog.pue_entry(site_class, catalog.site(s.site)).pue.value)
    if "pue" not in s.extra:  # a PUE the user set is theirs: no alternative to it
        got = evaluate_columns(frontier_inputs(s.with_(site_class=site_class), catalog, hw,
                                               frame), COMPARED)
        out.append(change(f"--site-class {site_class}", "energy_kwh", "energy",
                          float(nominal["energy_kwh"]), float(got["energy_kwh"][0]),
                          note=f" (PUE {pue:.2f})"))
    return out


#: Activation recompute from the least to the most (a run that does not fit recomputes more).
RECOMPUTE_ORDER = ("none", "selective", "full")


def _stack_change(s, catalog, hw: str, row: dict, stack: str, gpu_hours: float) -> dict:
    """The winner's layout under ``stack`` as a team moving to it would run it: at the
    stack's own ZeRO stage where it shards more (the FSDP stacks: 3), and with more
    recompute where the layout does not fit otherwise; the cheapest variant that fits
    (one vectorised evaluation of at most six rows), the settings it changed in the
    line."""
    zeros = sorted({int(row["zero"]), max(int(row["zero"]),
                                          stack_zero_stage(catalog.stack(stack)))})
    recomputes = RECOMPUTE_ORDER[RECOMPUTE_ORDER.index(str(row["recompute"])):]
    variants = [{**row, "zero": z, "recompute": r} for z in zeros for r in recomputes]
    got = evaluate_columns(frontier_inputs(s.with_(stack=stack), catalog, hw,
                                           pd.DataFrame(variants)), COMPARED)
    fitting = [i for i in range(len(variants)) if bool(got["fits"][i])]
    if not fitting:
        return change(f"--stack {stack}", "gpu_hours", "GPU-hours", gpu_hours, None, False)
    best = min(fitting, key=lambda i: float(got["gpu_hours"][i]))
    return change(f"--stack {stack}", "gpu_hours", "GPU-hours", gpu_hours,
                  float(got["gpu_hours"][best]), note=settled_note(row, variants[best]))
