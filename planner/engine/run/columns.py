"""The output columns of capplan: one table from which every list of columns derives.

Each :class:`Column` says what one output holds (unit, group, human label), where it
comes from (the compiled kernel, the layout, the search, or :func:`finish
<planner.engine.run.kernel_run.finish>`), and where it is shown (``capplan evaluate``'s
summary, ``capplan plan``'s summary, the frontier kept by the search).  :data:`COLUMNS`
is assembled from three tables, in this order:

* the accelerator and the layout choices (:data:`LEADING`, here, one column per
  dimension of :data:`planner.engine.inputs.layout_rules.DIMENSIONS`);
* the run model's outputs, :data:`planner.engine.run.model.OUTPUT_COLUMNS`, declared beside
  the stages that compute them (their order *is* the generated kernel's output order);
* the columns derived after the kernel (:data:`DERIVED`, here): unit conversions, each
  listed after the column it converts, and the memory check.

Derived from :data:`COLUMNS`, in its order:

* the run model's outputs, :func:`kernel_outputs`;
* the step-time and memory breakdowns, :func:`step_time_terms` and :func:`memory_terms`
  (evaluator, ``capplan evaluate``, the validation), with their labels and the plot
  colours of the step-time parts, :func:`part_colours`;
* the unit conversions done at the edge, :func:`conversions` (``finish``);
* the columns kept in the frontier (:func:`kept`), and the summaries of ``capplan
  evaluate`` (:func:`evaluate_summary`) and ``capplan plan`` (:func:`plan_summary`).

Add a run-model output with one row of ``OUTPUT_COLUMNS`` and the line of ``run_model``
that computes it (then ``python -m planner.codegen``); a unit conversion or another
derived column with one row of :data:`DERIVED` here.  The views are functions, not
constants, so that they always read the table as it is (tests extend it).

Units are those of the stored value: SI (s, B, FLOP, W, J, USD) for what the kernel
computes, with a few stated exceptions kept for their readers (``h``, ``TFLOP/s``,
``kgCO2e``); the conversions at the edge (days, kWh, MWh, MW, tCO2e) are declared as a
source column and a target unit, the factor coming from :data:`UNIT_IN_SI`.
"""

from __future__ import annotations

from planner.engine.inputs.layout_rules import DIMENSIONS
from planner.engine.run.column import (
    EF,
    EPF,
    FINISH,
    GROUPS,
    KERNEL,
    LAYOUT,
    PF,
    SEARCH,
    SOURCES,
    Column,
    E,
    P,
)
from planner.engine.run.model import OUTPUT_COLUMNS

__all__ = ["Column", "COLUMNS", "LEADING", "DERIVED", "GROUPS", "SOURCES", "KERNEL", "LAYOUT",
           "SEARCH", "FINISH", "UNIT_IN_SI", "RUN_TIME_PART_COLOURS", "column", "names",
           "layout_columns", "layout_key", "kernel_outputs",
           "step_time_terms", "memory_terms", "step_parts", "part_colours", "conversion_factor",
           "conversions", "kept", "evaluate_summary", "plan_summary"]

#: Value of one unit in the SI (or base) unit of its quantity, for the conversions at the
#: edge: 1 d = 86,400 s, 1 h = 3,600 s, 1 kWh = 3.6e6 J (BIPM SI Brochure, 9th ed., 2019,
#: Table 8: non-SI units accepted for use with the SI), 1 MWh = 1,000 kWh, 1 MW = 1e6 W,
#: 1 tCO2e = 1,000 kgCO2e.
UNIT_IN_SI = {"s": 1.0, "d": 86_400.0, "h": 3_600.0, "J": 1.0, "kWh": 3.6e6, "MWh": 3.6e9,
              "W": 1.0, "MW": 1e6, "kgCO2e": 1.0, "tCO2e": 1e3,
              # carbon metrics: 1 gCO2e/EFLOP = 1e-3 kg / 1e18 FLOP; 1 tCO2e d = 1e3 kg x 86,400 s
              "kgCO2e/FLOP": 1.0, "gCO2e/EFLOP": 1e-21, "kgCO2e s": 1.0,
              "tCO2e d": 1e3 * 86_400.0}


def _layout(name: str, label: str, *, dtype: str = "int", plan: bool = True) -> Column:
    return Column(name, "1" if dtype == "int" else "", "layout", label, source=LAYOUT,
                  dtype=dtype, plan=plan, keep=True)


def _convert(name: str, unit: str, of: str, label: str, group: str, **shown) -> Column:
    return Column(name, unit, group, label, source=FINISH, of=of,
                  derivation=f"{of} in {unit}", **shown)


#: The accelerator and the layout choices (one column per dimension of
#: :data:`planner.engine.inputs.layout_rules.DIMENSIONS`): the first columns of every table.
LEADING: tuple[Column, ...] = (
    Column("hardware", "", "layout", "accelerator", source=SEARCH, dtype="str", **P),
    *(_layout(d.name, d.label, dtype=d.dtype, plan=d.plan) for d in DIMENSIONS),
)

#: Columns derived after the kernel by :func:`planner.engine.run.kernel_run.finish`; each is
#: listed in :data:`COLUMNS` right after its ``of`` (or ``after``) column.
DERIVED: tuple[Column, ...] = (
    Column("hbm_bytes", "B", "memory", "HBM per GPU", source=FINISH,
           derivation="the hbm_bytes input, per candidate", after="memory_per_gpu_bytes",
           **EF),
    Column("fits", "", "memory", "fits in HBM", source=FINISH, dtype="bool",
           derivation="memory_per_gpu_bytes <= hbm_bytes", after="hbm_bytes", **EF),
    Column("largest_memory_term", "", "memory", "largest memory term", source=FINISH,
           dtype="str", derivation="name of the largest memory-breakdown term",
           after="fits", **E),
    _convert("wall_days", "d", "wall_time_s", "wall time (with checkpoints and failures)",
             "time", **EPF),
    _convert("energy_gpu_kwh", "kWh", "energy_gpu_j", "GPU energy", "energy", **EF),
    _convert("energy_gpu_mwh", "MWh", "energy_gpu_kwh", "GPU energy", "energy", **PF),
    _convert("energy_it_kwh", "kWh", "energy_it_j", "IT energy (GPUs, rest of nodes, network)",
             "energy", **EF),
    _convert("energy_it_mwh", "MWh", "energy_it_kwh", "IT energy (GPUs, rest of nodes, network)",
             "energy", **PF),
    _convert("energy_kwh", "kWh", "energy_facility_j", "facility energy (IT energy x PUE)",
             "energy", **EF),
    _convert("energy_mwh", "MWh", "energy_kwh", "facility energy (IT energy x PUE)", "energy",
             **PF),
    _convert("avg_power_mw", "MW", "avg_power_w", "average facility power", "energy", **EF),
    _convert("peak_power_mw", "MW", "peak_power_w",
             "peak facility power (every GPU at max power)", "energy", **EPF),
    _convert("co2e_t", "tCO2e", "co2e_kg", "CO2e (operational + embodied)", "carbon", **PF),
    _convert("cci_g_per_eflop", "gCO2e/EFLOP", "cci_kg_per_flop",
             "compute carbon intensity (CO2e per model FLOP, arXiv:2502.01671)", "carbon",
             **EPF),
    _convert("tcdp_t_d", "tCO2e d", "tcdp_kg_s", "total carbon-delay product (CO2e x wall time)",
             "carbon", **EPF),
)


def _assemble(leading, outputs, derived) -> tuple[Column, ...]:
    """``leading``, then ``outputs`` with each derived column right after its anchor (a
    derived column can anchor another: kWh after J, MWh after kWh)."""
    following: dict[str, list[Column]] = {}
    for c in derived:
        following.setdefault(c.of or c.after, []).append(c)
    out = list(leading)

    def place(c: Column) -> None:
        out.append(c)
        for d in following.pop(c.name, ()):
            place(d)

    for c in outputs:
        place(c)
    if following:
        raise ValueError(f"derived columns anchored on no column: {sorted(following)}")
    return tuple(out)


#: Every output column, in table order.
COLUMNS: tuple[Column, ...] = _assemble(LEADING, OUTPUT_COLUMNS, DERIVED)

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
