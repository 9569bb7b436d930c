"""Long work bounded and visible: how much a search or a draw set will evaluate, how long
that should take, and the caps it must stay under.

A command counts its work before doing it: the candidates (layouts x accelerators) of every
search it will run, and the frontier rows x draws of every Monte Carlo.  Above a cap
(``--max-candidates``, ``--max-draw-rows``) it stops with one line saying the count, the
estimate, the cap and how to raise it; above :data:`ESTIMATE_ABOVE_S` it says on stderr
what it will do and for about how long, and reports progress every few seconds
(:mod:`planner.report.progress`).

The caps and where the messages go are the current :class:`Limits` (a context variable:
:func:`bounded` sets them for a block; the library API runs under the defaults, silently).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from dataclasses import dataclass, replace

from planner.engine.inputs.defaults import MAX_CANDIDATES, MAX_DRAW_ROWS
from planner.engine.run import native
from planner.errors import CapplanError

#: Seconds one candidate of a search costs one core: the compiled search loop 90-140 ns
#: (docs/performance.md), the numpy path 0.8-2.1 us of CPU (the default plan and a
#: llama2-7b plan on one thread, 2026-11-29; a loaded machine takes longer).
SEARCH_S_PER_CANDIDATE = {True: 1.4e-7, False: 2.0e-6}
#: Seconds one frontier row under one draw costs (:mod:`planner.analysis.uncertainty`, one
#: thread): numpy 3.2 us for the margin's three columns, 6.7-10 us for --uncertainty's
#: (the default plan, 400 and 2,000 draws, 2026-11-29); the compiled kernel ~10x less.
DRAW_S_PER_ROW = {True: 1.0e-6, False: 1.0e-5}
#: Seconds the ``--confidence`` margins of one accelerator's frontier cost per search at 200
#: draws (a few hundred rows; 0.9-1.7 s of CPU for the 20 accelerators of a llama3-8b plan,
#: 2026-11-29), scaled by the margin draws; the compiled kernel ~10x less.
MARGIN_S_PER_ACCELERATOR = {True: 0.007, False: 0.07}
#: Work expected to take longer than this is announced on stderr before it starts.
ESTIMATE_ABOVE_S = 10.0


@dataclass(frozen=True)
class Limits:
    """The caps of the work in progress, and where its estimate and progress go."""

    max_candidates: int = MAX_CANDIDATES
    max_draw_rows: int = MAX_DRAW_ROWS
    #: prints one line (the estimate) at once; None: say nothing (the library API)
    announce: Callable[[str], None] | None = None
    #: label -> a progress callback ``(done, total, name)``, or None
    progress: Callable[[str], Callable | None] | None = None


_CURRENT: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("capplan_limits",
                                                                         default=None)


def current() -> Limits:
    """The limits in force: :func:`bounded`'s, else the defaults."""
    return _CURRENT.get() or Limits()


@contextlib.contextmanager
def bounded(**changes):
    """Run a block under :func:`current` limits with ``changes`` (fields of :class:`Limits`;
    a ``None`` value keeps the current one)."""
    token = _CURRENT.set(replace(current(), **{k: v for k, v in changes.items()
                                              if v is not None}))
    try:
        yield current()
    finally:
        _CURRENT.reset(token)


def search_seconds(candidates: int, threads: int, compiled: bool | None = None) -> float:
    """Expected wall seconds of searching ``candidates`` on ``threads`` cores [s]."""
    compiled = native.available() if compiled is None else compiled
    return candidates * SEARCH_S_PER_CANDIDATE[bool(compiled)] / max(1, threads)


def draw_seconds(row_draws: int, compiled: bool | None = None) -> float:
    """Expected wall seconds of evaluating ``row_draws`` frontier rows x draws [s]."""
    compiled = native.available() if compiled is None else compiled
    return row_draws * DRAW_S_PER_ROW[bool(compiled)]


def margin_seconds(margins: int, accelerators: int, draws: int,
                   compiled: bool | None = None) -> float:
    """Expected seconds of ``margins`` margin computations (one per nominal search) over
    ``accelerators`` accelerators at ``draws`` draws each [s]."""
    compiled = native.available() if compiled is None else compiled
    return margins * accelerators * MARGIN_S_PER_ACCELERATOR[bool(compiled)] * draws / 200


def seconds_text(seconds: float) -> str:
    """'~40 s', '~6 min', '~2.1 h': an estimate, rounded as one."""
    if seconds < 120:
        return f"~{max(1, round(seconds))} s"
    if seconds < 7200:
        return f"~{round(seconds / 60)} min"
    return f"~{seconds / 3600:.1f} h"


def kernel_text(compiled: bool | None = None) -> str:
    compiled = native.available() if compiled is None else compiled
    return "compiled kernel" if compiled else "numpy kernel"


def check_search(candidates: int, what: str, threads: int, announce: bool = True,
                 also_s: float = 0.0) -> float:
    """The expected seconds of a search of ``candidates`` (``what``: how it is made up, e.g.
    '24 accelerators x 2 passes'); one :class:`CapplanError` above ``--max-candidates``, one
    line on stderr (:attr:`Limits.announce`) when it will take over
    :data:`ESTIMATE_ABOVE_S` (and ``announce``).  ``also_s``: the seconds of the work that
    comes with the search (the margins of :func:`margin_seconds`)."""
    limits = current()
    seconds = search_seconds(candidates, threads) + also_s
    estimate = (f"{candidates:,} candidates ({what}; {seconds_text(seconds)} on {threads} "
                f"thread{'s' * (threads != 1)}{' with the margins' * (also_s > 0)}, "
                f"{kernel_text()})")
    if candidates > limits.max_candidates:
        raise CapplanError(
            f"the search would evaluate {estimate}, more than --max-candidates "
            f"{limits.max_candidates:,}; narrow it (fewer -H accelerators, a smaller "
            "--max-gpus, --global-batch or fewer --site) or raise --max-candidates")
    if announce and seconds > ESTIMATE_ABOVE_S and limits.announce is not None:
        limits.announce(f"searching {estimate}; progress every few seconds, --max-candidates "
                        "caps it")
    return seconds


def check_draws(rows: int, draws: int, what: str,
                fewer: str = "fewer --draws, a narrower plan"):
    """A progress callback ``(done, total, name)`` (or None) for a Monte Carlo of ``rows``
    frontier rows x ``draws`` draws (``what``: e.g. '--uncertainty'; ``fewer``: how to ask
    for less); one
    :class:`CapplanError` above ``--max-draw-rows``, one line on stderr when it will take
    over :data:`ESTIMATE_ABOVE_S`."""
    limits = current()
    row_draws = int(rows) * int(draws)
    seconds = draw_seconds(row_draws)
    estimate = (f"{rows:,} frontier rows x {draws:,} draws = {row_draws:,} row-draws "
                f"({seconds_text(seconds)}, {kernel_text()})")
    if row_draws > limits.max_draw_rows:
        raise CapplanError(
            f"{what} would evaluate {estimate}, more than --max-draw-rows "
            f"{limits.max_draw_rows:,}; ask for {fewer} or raise --max-draw-rows")
    if seconds > ESTIMATE_ABOVE_S and limits.announce is not None:
        limits.announce(f"{what}: evaluating {estimate}; progress every few seconds, "
                        "--max-draw-rows caps it")
    return limits.progress(what) if limits.progress is not None else None
