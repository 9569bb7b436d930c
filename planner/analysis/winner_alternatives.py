"""What a typical alternative would change for a plan's winner: the winner's layout
re-evaluated with the alternative stack and site class of planner.engine.search.alternatives
(one extra evaluation of one row each; a stack that cannot fit the layout says so).
"""

from __future__ import annotations

import pandas as pd

from planner.analysis.uncertainty import frontier_inputs
from planner.engine.inputs.defaults import cuda_part, stack_of
from planner.engine.run.kernel_run import evaluate_columns
from planner.engine.search.alternatives import (
    alternative_site_class,
    alternative_stack,
    change,
    unavailable,
)
from planner.errors import PrecisionRefused

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
            got = evaluate_columns(frontier_inputs(s.with_(stack=stack), catalog, hw, frame),
                                   COMPARED)
            out.append(change(f"--stack {stack}", "gpu_hours", "GPU-hours",
                              float(nominal["gpu_hours"]), float(got["gpu_hours"][0]),
                              bool(got["fits"][0])))
        except PrecisionRefused as refused:  # e.g. int8 on a stack that trains in floats
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
