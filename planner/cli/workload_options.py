"""``--max-candidates`` and ``--max-draw-rows`` of ``capplan plan``: the command's work
counted before it starts, refused above its caps, announced on stderr when long
(:mod:`planner.engine.run.workload`), with progress lines (:mod:`planner.report.progress`)."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated

import typer

from planner.cli.numbers import si_count
from planner.engine.inputs.defaults import MAX_CANDIDATES, MAX_DRAW_ROWS

MaxCandidatesOption = Annotated[int, typer.Option(
    "--max-candidates", parser=si_count,
    help="Most layout candidates the command may evaluate, over all its searches (every "
    "site, twice with --confidence); above it the command stops before searching. Default "
    f"{MAX_CANDIDATES:,} (4G).")]
MaxDrawRowsOption = Annotated[int, typer.Option(
    "--max-draw-rows", parser=si_count,
    help="Most frontier rows x draws one Monte Carlo may evaluate (--uncertainty, the "
    f"--confidence margins). Default {MAX_DRAW_ROWS:,} (500M).")]

def say(line: str) -> None:
    """One line on stderr now (not queued: the estimate comes before the work), marked
    ``capplan: estimate:`` as the progress lines are ``capplan: progress:`` (a log reader
    or a check that errors are one line tells them from the answer's lines)."""
    sys.stderr.write(f"capplan: estimate: {line}\n")
    sys.stderr.flush()


def draw_progress(what: str):
    """The progress of a Monte Carlo: one line every few seconds (also on a terminal)."""
    from planner.report.progress import ProgressLines

    return ProgressLines(what)


def check_caps(max_candidates: int | None, max_draw_rows: int | None) -> None:
    """One line unless each cap given is a count of at least one."""
    from planner.engine.inputs.domains import check_value
    from planner.engine.inputs.glossary import Domain

    cap = Domain(">=1", integer=True, maximum=10**18)
    for name, value in (("max_candidates", max_candidates), ("max_draw_rows", max_draw_rows)):
        if value is not None:
            check_value(name, value, cap)


def planned_searches(scenario, phases=None) -> tuple[list, int]:
    """(the searches ``capplan plan`` runs at one site, how many sites): each phase's
    scenario with ``phases`` (searched once: their margins apply to the totals), else the
    scenario's, twice with ``--confidence`` (nominal, then margined).  A site changes no
    layout space, so every site searches as many candidates."""
    from hardware_catalog import load_catalog
    from planner.engine.search.phase_plan import phase_searches
    from planner.engine.search.sites import is_several, site_names

    sites = 1
    if is_several(scenario.site):
        catalog = load_catalog(tuple(scenario.catalog_dirs or ()))
        names = site_names(catalog, scenario.site)
        scenario, sites = scenario.with_(site=names[0]), len(names)
    if phases:
        return phase_searches(scenario, phases), sites
    return [scenario.with_(confidence=None, margins=())] * (1 + (scenario.confidence is not None)), \
        sites


def threads_of(workers: int | None) -> int:
    """Threads the search runs on: ``--workers``, else the usable cores."""
    from planner.engine.search.distributed import usable_cores

    return workers or usable_cores()


@contextlib.contextmanager
def bounded_plan(scenario, phases, max_candidates: int | None, max_draw_rows: int | None,
                 workers: int | None):
    """Run ``capplan plan``'s work under its caps: the candidates of every search counted
    first (refused above ``--max-candidates``, announced when long); yields how many
    searches there are (the progress lines' passes)."""
    from hardware_catalog import load_catalog
    from planner.engine.inputs.domains import margin_draws
    from planner.engine.run import workload
    from planner.engine.search.optimize import search_size

    check_caps(max_candidates, max_draw_rows)
    with workload.bounded(max_candidates=max_candidates, max_draw_rows=max_draw_rows,
                          announce=say, progress=draw_progress):
        searches, sites = planned_searches(scenario, phases)
        catalog = load_catalog(tuple(scenario.catalog_dirs or ()))
        if phases:  # each phase its own space
            counted = [search_size(s, catalog) for s in searches]
        else:  # the margined search evaluates as many candidates as the nominal one
            counted = [search_size(searches[0], catalog)] * len(searches)
        candidates = sites * sum(c for c, _ in counted)
        accelerators = max((a for _, a in counted), default=0)
        what = f"{accelerators} accelerator{'s' * (accelerators != 1)}"
        if sites * len(searches) > 1:
            what += f" x {sites * len(searches)} searches"
        margins = 0  # one margin computation per nominal search
        if scenario.confidence is not None:
            margins = sites * (len(searches) if phases else 1)
        also_s = workload.margin_seconds(margins, accelerators, margin_draws(
            scenario.confidence) if scenario.confidence is not None else 0)
        workload.check_search(candidates, what, threads_of(workers), also_s=also_s)
        yield sites * len(searches)
