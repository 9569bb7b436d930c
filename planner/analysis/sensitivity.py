"""Elasticities d ln(output) / d ln(input) of the run model, by central differences of
the generated kernel.

Each uncertain input is scaled by 1 +- h (h = 1e-4) with every other input held, and
the elasticity is (ln y+ - ln y-) / (ln(1 + h) - ln(1 - h)): truncation error O(h^2)
~ 1e-8, round-off ~ 1e-12 / h. All 2 x 35 variants run in one kernel call, so
``capplan sensitivity`` needs no sympy. (Until 2026-11 the derivatives were taken by
sympy and compiled; since the GoCkpt terms put the step time inside Min/Max/ceiling that
took over 50 CPU-minutes, and the derivative of ceiling is not defined for printing.)
The hot-spare count is resolved once at the unperturbed point and held. An elasticity
of 0.5 means: 1% more of the input gives 0.5% more of the output.
"""

from __future__ import annotations

import numpy as np

from planner.engine.run.kernel_run import evaluate_inputs
from planner.engine.run.model import INPUTS
from planner.engine.run.spares import resolve_spares

#: Relative step of the central differences.
STEP = 1e-4

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


#: Inputs that move with an uncertain input where they hold the same value: the attention
#: core's peak and large-GEMM efficiency are the GEMMs' unless an FP8/FP4 run keeps
#: attention in BF16.
TIED = {"peak_flops_per_s": ("attention_peak_flops_per_s",),
        "gemm_max_efficiency": ("attention_gemm_max_efficiency",)}


def elasticities(inputs: dict) -> dict[str, dict[str, float]]:
    """``{input: {label: elasticity}}`` of one configuration (kernel inputs, SI units)."""
    base = resolve_spares({k: float(np.ravel(inputs[k])[0]) for k in INPUTS})
    n = len(UNCERTAIN_INPUTS)
    batch = {k: np.full(2 * n, v) for k, v in base.items()}
    for j, name in enumerate(UNCERTAIN_INPUTS):
        for moved in (name, *(t for t in TIED.get(name, ()) if base[t] == base[name])):
            batch[moved][2 * j] *= 1 + STEP
            batch[moved][2 * j + 1] *= 1 - STEP
    with np.errstate(all="ignore"):
        out = evaluate_inputs(batch)
        scale = np.log1p(STEP) - np.log1p(-STEP)
        return {name: {label: float((np.log(out[output][2 * j]) - np.log(out[output][2 * j + 1]))
                                    / scale)
                       for output, label in OUTPUTS.items()}
                for j, name in enumerate(UNCERTAIN_INPUTS)}


def elasticity_table(inputs: dict) -> list[dict]:
    """Rows (input, output, elasticity) for one configuration, ranked by |elasticity|."""
    per_input = elasticities(inputs)
    rows = [{"input": name, "value": float(np.ravel(inputs[name])[0]),
             "unit": INPUTS[name][0], **{k: (0.0 if np.isnan(v) else v) for k, v in e.items()}}
            for name, e in per_input.items()]
    return sorted(rows, key=lambda r: -max(abs(r[k]) for k in OUTPUTS.values()))

