"""The figure of ``capplan plot KIND``: a plan's scaling curves, Pareto front or time
breakdown (or all three), drawn by :mod:`planner.report.plot`.

:func:`check_request` refuses an unknown kind or an unwritable file before the search;
:func:`draw` searches the scenario and writes the figure; the command resolves the
options and says where it wrote (planner/cli/plot_command.py).
"""

from __future__ import annotations

from planner.engine.search import optimize
from planner.engine.search.sites import is_several
from planner.errors import CapplanError, did_you_mean
from planner.report import plot as figures
from planner.report.progress import search_progress

#: The kinds of figure, in --help order.
KINDS = ("scaling", "pareto", "breakdown", "plan")


def check_request(kind: str, output: str, force: bool) -> None:
    """CapplanError (one line) for an unknown ``kind`` or a figure file that may not be
    written, before the search."""
    if kind not in KINDS:  # the argument KIND, not a flag: did-you-mean's words
        raise did_you_mean("plot kind", kind, KINDS)
    figures.check_target(output, force)


def draw(scenario, kind: str, output: str, force: bool = False) -> None:
    """Search the checked one-site ``scenario`` and write its figure of ``kind``."""
    if is_several(scenario.site):
        raise CapplanError(f"capplan plot takes one site; got --site {scenario.site!r} "
                           "(capplan plan ranks several)")
    with search_progress() as progress:
        result = optimize.plan(scenario, progress=progress)
    figures.PLOTS[kind](result, output, force=force)
