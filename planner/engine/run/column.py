"""What one output column is: :class:`Column`, its sources and groups, and where it is shown.

The column registry is :data:`planner.engine.run.columns.COLUMNS`; the run model's own columns
are declared in :data:`planner.engine.run.model.OUTPUT_COLUMNS`, beside the stages that
compute them.  This module imports nothing beyond the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Column", "KERNEL", "LAYOUT", "SEARCH", "FINISH", "SOURCES", "GROUPS",
           "E", "P", "F", "EPF", "EF", "PF", "step_part", "memory_part"]

#: Sources of a column's value.
KERNEL = "kernel"    # computed by the compiled run model (planner.engine.run.model)
LAYOUT = "layout"    # a parallel layout choice (planner.engine.layouts.space)
SEARCH = "search"    # the candidate's accelerator (evaluate's argument, plan's search loop)
FINISH = "finish"    # derived after the kernel by planner.engine.run.kernel_run.finish
SOURCES = (KERNEL, LAYOUT, SEARCH, FINISH)

#: Groups, in reading order.
GROUPS = ("layout", "step time", "step-time breakdown", "memory", "memory breakdown", "model",
          "throughput", "reliability", "time", "energy", "cost", "carbon")


#: Where a column is shown: ``capplan evaluate``'s summary (E), each plan row of ``capplan
#: plan`` (P), the frontier kept by the search (F); combined as keyword arguments.
E, P, F = {"evaluate": True}, {"plan": True}, {"keep": True}
EPF, EF, PF = {**E, **P, **F}, {**E, **F}, {**P, **F}


@dataclass(frozen=True)
class Column:
    """One output column.

    ``name`` is the column's name in frames and payloads, ``unit`` the unit of its value
    ("1" for counts and ratios, "" for text), ``label`` human text for tables and plots.
    ``of`` names the column a ``finish`` column converts (``unit`` then fixes the factor);
    ``derivation`` states how a ``finish`` column is computed; ``after`` names the column
    a ``finish`` column is listed after when it converts none (else it follows ``of``).
    ``colour`` is the tab20 index of a step-time part.  ``evaluate``/``plan``/``keep``:
    shown in ``capplan evaluate``'s summary, in ``capplan plan``'s summary, kept in the
    search frontier.
    """

    name: str
    unit: str
    group: str
    label: str
    source: str = KERNEL
    dtype: str = "float"  # float | int | bool | str
    of: str = ""
    derivation: str = ""
    after: str = ""
    colour: int | None = None
    json_key: str = ""
    evaluate: bool = False
    plan: bool = False
    keep: bool = False

    @property
    def key(self) -> str:
        """The key of this column in JSON output."""
        return self.json_key or self.name


def step_part(name: str, label: str, colour: int) -> Column:
    """A term of the step time [s] (``colour``: its tab20 index in plots)."""
    return Column(name, "s", "step-time breakdown", label, colour=colour, keep=True)


def memory_part(name: str, label: str) -> Column:
    """A term of the memory per GPU [B]."""
    return Column(name, "B", "memory breakdown", label, keep=True)
