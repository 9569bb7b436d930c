"""Elasticities d ln(output) / d ln(input) from the symbolic run model.

The derivatives are taken by sympy on the same expressions the kernel is compiled
from, and compiled once into ``planner/analysis/_sensitivity_generated.py`` by
:mod:`planner.codegen.sensitivity` (regenerate with ``python -m planner.codegen``), so ``capplan sensitivity`` needs no sympy.
An elasticity of 0.5 means: 1% more of the input gives 0.5% more of the output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planner.engine.model import INPUTS

GENERATED = Path(__file__).with_name("_sensitivity_generated.py")

#: Outputs whose sensitivity is reported, with the label shown.
OUTPUTS = {"wall_time_s": "days", "cost_usd": "cost", "energy_facility_j": "energy",
           "co2e_kg": "co2e"}

#: Continuous inputs a user can be unsure of (layout sizes and flags are choices, not inputs).
UNCERTAIN_INPUTS = (
    "tokens", "peak_flops_per_s", "gemm_max_efficiency", "gemm_half_efficiency_dim",
    "hbm_bandwidth_bytes_per_s", "hbm_efficiency", "scale_up_bandwidth_bytes_per_s",
    "scale_up_bus_efficiency", "scale_out_bandwidth_bytes_per_s", "scale_out_bus_efficiency",
    "intra_latency_s", "inter_latency_s", "idle_power_w", "max_power_w",
    "node_overhead_power_w", "network_power_per_node_w", "storage_write_bytes_per_s_per_node",
    "storage_read_bytes_per_s_per_node", "host_copy_bytes_per_s_per_gpu",
    "price_usd_per_gpu_hour", "capex_usd_per_gpu", "lifetime_s", "opex_fraction_per_year",
    "embodied_kg_per_gpu", "pue", "electricity_usd_per_kwh", "grid_intensity_g_per_kwh",
    "gpu_mtbf_s", "restart_overhead_s", "step_time_cv", "pause_probability",
    "pause_duration_s", "tp_overlap", "dp_overlap", "checkpoint_bytes_per_param",
)


def elasticity_table(inputs: dict) -> list[dict]:
    """Rows (input, output, elasticity) for one configuration, ranked by |elasticity|."""
    from planner.analysis import _sensitivity_generated as gen
    from planner.engine.kernel import kernel_hash

    if (gen.INPUTS != tuple(INPUTS) or gen.UNCERTAIN_INPUTS != UNCERTAIN_INPUTS
            or gen.KERNEL_HASH != kernel_hash()):
        raise RuntimeError("planner/analysis/_sensitivity_generated.py is stale: "
                           "run python -m planner.codegen")
    args = [float(np.ravel(inputs[name])[0]) for name in INPUTS]
    with np.errstate(all="ignore"):
        values = [float(np.ravel(v)[0]) for v in gen.elasticities(*args)]
    per_input = {}
    for i, out in enumerate(OUTPUTS):
        for j, name in enumerate(UNCERTAIN_INPUTS):
            per_input.setdefault(name, {})[OUTPUTS[out]] = values[i * len(UNCERTAIN_INPUTS) + j]
    rows = [{"input": name, "value": float(np.ravel(inputs[name])[0]),
             "unit": INPUTS[name][0], **{k: (0.0 if np.isnan(v) else v) for k, v in e.items()}}
            for name, e in per_input.items()]
    return sorted(rows, key=lambda r: -max(abs(r[k]) for k in OUTPUTS.values()))

