"""The output columns of capplan: one table from which every list of columns derives.

Each :class:`Column` says what one output holds (unit, group, human label), where it
comes from (the compiled kernel, the layout, the search, or :func:`finish
<planner.engine.kernel_run.finish>`), and where it is shown (``capplan evaluate``'s
summary, ``capplan plan``'s summary, the frontier kept by the search).  Derived from
:data:`COLUMNS`, in its order:

* the run model's outputs, :func:`kernel_outputs` (``planner.engine.model.OUTPUTS``:
  the order of the kernel columns below *is* the generated kernel's output order);
* the step-time and memory breakdowns, :func:`step_time_terms` and :func:`memory_terms`
  (evaluator, ``capplan evaluate``, the validation), with their labels and the plot
  colours of the step-time parts, :func:`part_colours`;
* the unit conversions done at the edge, :func:`conversions` (``finish``);
* the columns kept in the frontier (:func:`kept`), and the summaries of ``capplan
  evaluate`` (:func:`evaluate_summary`) and ``capplan plan`` (:func:`plan_summary`).

Add an output column by adding one line here (a kernel column also needs the run model
to return it and ``python -m planner.codegen --only kernel``).  The views are functions,
not constants, so that they always read the table as it is (tests extend it).

Units are those of the stored value: SI (s, B, FLOP, W, J, USD) for what the kernel
computes, with a few stated exceptions kept for their readers (``h``, ``TFLOP/s``,
``kgCO2e``); the conversions at the edge (days, kWh, MWh, MW, tCO2e) are declared as a
source column and a target unit, the factor coming from :data:`UNIT_IN_SI`.

This module imports nothing beyond the standard library (it is on the CLI start-up path).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Column", "COLUMNS", "GROUPS", "SOURCES", "KERNEL", "LAYOUT", "SEARCH", "FINISH",
           "UNIT_IN_SI", "RUN_TIME_PART_COLOURS", "column", "names", "layout_columns",
           "layout_key", "kernel_outputs",
           "step_time_terms", "memory_terms", "step_parts", "part_colours", "conversion_factor",
           "conversions", "kept", "evaluate_summary", "plan_summary"]

#: Sources of a column's value.
KERNEL = "kernel"    # computed by the compiled run model (planner.engine.model)
LAYOUT = "layout"    # a parallel layout choice (planner.engine.space)
SEARCH = "search"    # the candidate's accelerator (evaluate's argument, plan's search loop)
FINISH = "finish"    # derived after the kernel by planner.engine.kernel_run.finish
SOURCES = (KERNEL, LAYOUT, SEARCH, FINISH)

#: Groups, in reading order.
GROUPS = ("layout", "step time", "step-time breakdown", "memory", "memory breakdown", "model",
          "throughput", "reliability", "time", "energy", "cost", "carbon")

#: Value of one unit in the SI (or base) unit of its quantity, for the conversions at the
#: edge: 1 d = 86,400 s, 1 h = 3,600 s, 1 kWh = 3.6e6 J (BIPM SI Brochure, 9th ed., 2019,
#: Table 8: non-SI units accepted for use with the SI), 1 MWh = 1,000 kWh, 1 MW = 1e6 W,
#: 1 tCO2e = 1,000 kgCO2e.
UNIT_IN_SI = {"s": 1.0, "d": 86_400.0, "h": 3_600.0, "J": 1.0, "kWh": 3.6e6, "MWh": 3.6e9,
              "W": 1.0, "MW": 1e6, "kgCO2e": 1.0, "tCO2e": 1e3,
              # carbon metrics: 1 gCO2e/EFLOP = 1e-3 kg / 1e18 FLOP; 1 tCO2e d = 1e3 kg x 86,400 s
              "kgCO2e/FLOP": 1.0, "gCO2e/EFLOP": 1e-21, "kgCO2e s": 1.0,
              "tCO2e d": 1e3 * 86_400.0}


@dataclass(frozen=True)
class Column:
    """One output column.

    ``name`` is the column's name in frames and payloads, ``unit`` the unit of its value
    ("1" for counts and ratios, "" for text), ``label`` human text for tables and plots.
    ``of`` names the column a ``finish`` column converts (``unit`` then fixes the factor);
    ``derivation`` states how a ``finish`` column is computed.  ``colour`` is the tab20
    index of a step-time part.  ``evaluate``/``plan``/``keep``: shown in ``capplan
    evaluate``'s summary, in ``capplan plan``'s summary, kept in the search frontier.
    """

    name: str
    unit: str
    group: str
    label: str
    source: str = KERNEL
    dtype: str = "float"  # float | int | bool | str
    of: str = ""
    derivation: str = ""
    colour: int | None = None
    json_key: str = ""
    evaluate: bool = False
    plan: bool = False
    keep: bool = False

    @property
    def key(self) -> str:
        """The key of this column in JSON output."""
        return self.json_key or self.name


def _layout(name: str, label: str, *, dtype: str = "int", plan: bool = True) -> Column:
    return Column(name, "1" if dtype == "int" else "", "layout", label, source=LAYOUT,
                  dtype=dtype, plan=plan, keep=True)


def _part(name: str, label: str, colour: int) -> Column:
    return Column(name, "s", "step-time breakdown", label, colour=colour, keep=True)


def _memory(name: str, label: str) -> Column:
    return Column(name, "B", "memory breakdown", label, keep=True)


def _convert(name: str, unit: str, of: str, label: str, group: str, **shown) -> Column:
    return Column(name, unit, group, label, source=FINISH, of=of,
                  derivation=f"{of} in {unit}", **shown)


# The order of the kernel columns is the generated kernel's output order: keep it.
E, P, F = {"evaluate": True}, {"plan": True}, {"keep": True}  # where a column is shown
EPF, EF, PF = {**E, **P, **F}, {**E, **F}, {**P, **F}
COLUMNS: tuple[Column, ...] = (
    Column("hardware", "", "layout", "accelerator", source=SEARCH, dtype="str", **P),
    _layout("gpus", "GPUs"),
    _layout("tp", "tensor-parallel size"),
    _layout("pp", "pipeline-parallel size"),
    _layout("dp", "data-parallel size"),
    _layout("cp", "context-parallel size"),
    _layout("ep", "expert-parallel size"),
    _layout("etp", "expert-tensor-parallel size"),
    _layout("vp", "virtual pipeline stages per rank"),
    _layout("micro_batch", "micro-batch [sequences]"),
    _layout("recompute", "activation recompute", dtype="str"),
    _layout("zero", "ZeRO stage"),
    _layout("shard_group", "ZeRO shard group [DP ranks] (< dp: HSDP)"),
    _layout("sequence_parallel", "sequence parallelism", dtype="bool", plan=False),
    Column("step_time_s", "s", "step time", "step time", **EPF),
    _part("compute_s", "compute", 0),
    _part("launch_s", "host-bound launches", 12),
    _part("tp_comm_s", "TP communication", 2),
    _part("cp_comm_s", "CP communication", 4),
    _part("ep_comm_s", "EP all-to-all", 8),
    _part("pp_comm_s", "pipeline transfers", 10),
    _part("dp_comm_s", "DP gradient sync", 18),
    _part("bubble_s", "pipeline bubble", 14),
    _part("optimizer_s", "optimizer step", 16),
    _part("straggler_s", "stragglers", 6),
    _memory("weights_bytes", "weights"),
    _memory("grads_bytes", "gradients"),
    _memory("optimizer_state_bytes", "optimizer states"),
    _memory("activation_bytes", "activations"),
    _memory("reserve_bytes", "reserved (CUDA context, NCCL, allocator)"),
    Column("memory_per_gpu_bytes", "B", "memory", "memory per GPU (fullest stage)", **EPF),
    Column("hbm_bytes", "B", "memory", "HBM per GPU", source=FINISH,
           derivation="the hbm_bytes input, per candidate", **EF),
    Column("fits", "", "memory", "fits in HBM", source=FINISH, dtype="bool",
           derivation="memory_per_gpu_bytes <= hbm_bytes", **EF),
    Column("largest_memory_term", "", "memory", "largest memory term", source=FINISH,
           dtype="str", derivation="name of the largest memory-breakdown term", **E),
    Column("params", "1", "model", "parameters", **E),
    Column("active_params", "1", "model", "parameters active per token", **E),
    Column("tokens_per_s", "1/s", "throughput", "tokens per second", **EF),
    Column("model_flops_per_token", "FLOP", "model", "model FLOPs per token"),
    Column("tflops_per_gpu", "TFLOP/s", "throughput", "model TFLOP/s per GPU", **EF),
    Column("mfu", "1", "throughput", "model FLOPs utilisation (MFU)", **EPF),
    Column("hfu", "1", "throughput", "hardware FLOPs utilisation, recompute included", **EF),
    Column("steps", "1", "throughput", "optimizer steps (tokens / tokens per step)", **EF),
    Column("system_mtbf_s", "s", "reliability", "system MTBF (GPUs and nodes)", **EF),
    Column("checkpoint_bytes", "B", "reliability", "checkpoint size", **EF),
    Column("checkpoint_stall_s", "s", "reliability", "training blocked per checkpoint", **EF),
    Column("young_interval_s", "s", "reliability", "Young's checkpoint interval", **EF),
    Column("checkpoint_interval_s", "s", "reliability",
           "checkpoint interval (Daly or --checkpoint-interval; an asynchronous write drains "
           "first)", **EF),
    Column("checkpoint_steps", "1", "reliability",
           "steps one checkpoint is spread over (GoCkpt; 1 for the other schemes)", **EF),
    Column("commit_latency_s", "s", "reliability",
           "from a checkpoint's capture until it protects the run (persisted, consistent)",
           **EF),
    Column("restart_s", "s", "reliability", "restart after a failure (re-queue, load)", **EF),
    Column("solve_time_s", "s", "time", "failure-free run time (steps x step time)", **EF),
    Column("wall_time_s", "s", "time", "wall time (with checkpoints, failures and overheads)",
           **EF),
    _convert("wall_days", "d", "wall_time_s", "wall time (with checkpoints and failures)",
             "time", **EPF),
    Column("eval_time_s", "s", "time", "evaluation pauses (eval fraction x run time)", **EF),
    Column("rollbacks", "1", "reliability", "expected loss-spike rollbacks", **EF),
    Column("rollback_time_s", "s", "time",
           "loss-spike rollbacks (steps redone and restarts)", **EF),
    Column("maintenance_time_s", "s", "time", "planned maintenance downtime in the run", **EF),
    Column("expected_failures", "1", "reliability", "expected failures", **EPF),
    Column("waste_fraction", "1", "reliability", "wasted fraction of wall time", **EF),
    Column("ettr", "1", "reliability", "effective training time ratio", **EPF),
    Column("spare_nodes", "1", "reliability", "hot-spare nodes (idle, billed)", **EPF),
    Column("swap_fraction", "1", "reliability",
           "share of failures restarted on hot spares (no re-queue)", **EF),
    Column("gpu_hours", "h", "time", "GPU-hours ((GPUs + spare GPUs) x wall time)", **EF),
    Column("energy_gpu_j", "J", "energy", "GPU energy"),
    _convert("energy_gpu_kwh", "kWh", "energy_gpu_j", "GPU energy", "energy", **EF),
    _convert("energy_gpu_mwh", "MWh", "energy_gpu_kwh", "GPU energy", "energy", **PF),
    Column("energy_it_j", "J", "energy", "IT energy (GPUs, rest of nodes, network)"),
    _convert("energy_it_kwh", "kWh", "energy_it_j", "IT energy (GPUs, rest of nodes, network)",
             "energy", **EF),
    _convert("energy_it_mwh", "MWh", "energy_it_kwh", "IT energy (GPUs, rest of nodes, network)",
             "energy", **PF),
    Column("energy_facility_j", "J", "energy", "facility energy (IT energy x PUE)"),
    _convert("energy_kwh", "kWh", "energy_facility_j", "facility energy (IT energy x PUE)",
             "energy", **EF),
    _convert("energy_mwh", "MWh", "energy_kwh", "facility energy (IT energy x PUE)", "energy",
             **PF),
    Column("energy_fault_tolerance_j", "J", "energy",
           "facility energy beyond a failure- and checkpoint-free run (stalls, lost work, "
           "restarts, idle hot spares; not the run overheads)", **EF),
    Column("gpu_step_power_w", "W", "energy",
           "GPU power while stepping (compute, exposed communication, idle gaps)", **EF),
    Column("gpu_power_w", "W", "energy",
           "GPU power over the whole run (stalls and restarts at idle)", **EF),
    Column("avg_power_w", "W", "energy", "average facility power"),
    _convert("avg_power_mw", "MW", "avg_power_w", "average facility power", "energy", **EF),
    Column("peak_power_w", "W", "energy", "peak facility power (every GPU at max power)"),
    _convert("peak_power_mw", "MW", "peak_power_w",
             "peak facility power (every GPU at max power)", "energy", **EPF),
    Column("cost_cloud_usd", "USD", "cost", "cost at the cloud price per GPU-hour", **EF),
    Column("cost_tco_usd", "USD", "cost", "cost by TCO (capex share, energy, opex)", **EF),
    Column("cost_usd", "USD", "cost", "cost on the chosen basis (cloud or TCO)", **EPF),
    Column("co2e_operational_kg", "kgCO2e", "carbon",
           "operational CO2e (facility energy x grid intensity)", **EF),
    Column("co2e_embodied_kg", "kgCO2e", "carbon",
           "embodied CO2e (the run's share of the hardware's lifetime)", **EF),
    Column("co2e_kg", "kgCO2e", "carbon", "CO2e (operational + embodied)", **EF),
    _convert("co2e_t", "tCO2e", "co2e_kg", "CO2e (operational + embodied)", "carbon", **PF),
    Column("cci_kg_per_flop", "kgCO2e/FLOP", "carbon",
           "compute carbon intensity (CO2e per model FLOP, arXiv:2502.01671)"),
    _convert("cci_g_per_eflop", "gCO2e/EFLOP", "cci_kg_per_flop",
             "compute carbon intensity (CO2e per model FLOP, arXiv:2502.01671)", "carbon",
             **EPF),
    Column("tcdp_kg_s", "kgCO2e s", "carbon", "total carbon-delay product (CO2e x wall time)"),
    _convert("tcdp_t_d", "tCO2e d", "tcdp_kg_s", "total carbon-delay product (CO2e x wall time)",
             "carbon", **EPF),
)

#: Parts of the whole-run time beyond the step-time terms (``report.tables.time_breakdown``),
#: label -> tab20 colour index.
RUN_TIME_PART_COLOURS = {"checkpoint stalls": 9, "failures and restarts": 7}


def column(name: str) -> Column:
    """The column called ``name`` (KeyError if there is none)."""
    for c in COLUMNS:
        if c.name == name:
            return c
    raise KeyError(f"no output column '{name}'")


def names(*, source: str | None = None, group: str | None = None) -> tuple[str, ...]:
    """Names of the columns, optionally of one source and/or group, in table order."""
    return tuple(c.name for c in COLUMNS
                 if (source is None or c.source == source) and (group is None or c.group == group))


def layout_columns() -> tuple[str, ...]:
    """The choices that make a layout (the design space's dimensions)."""
    return names(source=LAYOUT)


def layout_key() -> tuple[str, ...]:
    """The columns that identify a candidate of a plan: the accelerator and its layout."""
    return names(group="layout")


def kernel_outputs() -> dict[str, str]:
    """The run model's outputs, name -> unit, in the kernel's output order."""
    return {c.name: c.unit for c in COLUMNS if c.source == KERNEL}


def step_time_terms() -> tuple[str, ...]:
    """The terms that add up to ``step_time_s``."""
    return names(group="step-time breakdown")


def memory_terms() -> tuple[str, ...]:
    """The terms that add up to ``memory_per_gpu_bytes``."""
    return names(group="memory breakdown")


def step_parts() -> tuple[tuple[str, str], ...]:
    """(label, column) of the step-time terms, for reports."""
    return tuple((c.label, c.name) for c in COLUMNS if c.group == "step-time breakdown")


def part_colours() -> dict[str, int]:
    """Label -> tab20 colour index of every part of the step and run time."""
    colours = {c.label: c.colour for c in COLUMNS if c.colour is not None}
    return {**colours, **RUN_TIME_PART_COLOURS}


def conversion_factor(c: Column) -> float:
    """What the source column of a unit conversion is divided by."""
    return UNIT_IN_SI[c.unit] / UNIT_IN_SI[column(c.of).unit]


def conversions() -> tuple[tuple[str, str, float], ...]:
    """(name, source column, divisor) of the unit conversions, in an order that computes
    every source before its use."""
    return tuple((c.name, c.of, conversion_factor(c)) for c in COLUMNS
                 if c.source == FINISH and c.of)


def kept() -> tuple[str, ...]:
    """Columns the search keeps for each candidate of the frontier (besides ``hardware``)."""
    return tuple(c.name for c in COLUMNS if c.keep)


def evaluate_summary() -> tuple[Column, ...]:
    """Columns of ``capplan evaluate``'s summary (its breakdowns are listed apart)."""
    return tuple(c for c in COLUMNS if c.evaluate)


def plan_summary() -> tuple[Column, ...]:
    """Columns of each plan row in ``capplan plan``'s JSON."""
    return tuple(c for c in COLUMNS if c.plan)
