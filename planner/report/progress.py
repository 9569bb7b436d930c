"""Progress of long work on stderr: a rich bar on a terminal, else one line every few
seconds (a log, a CI job or a pipe sees how far a long search is, and no carriage returns)."""

from __future__ import annotations

import contextlib
import sys
import time

from planner.engine.run.workload import seconds_text

#: Seconds between two progress lines when stderr is not a terminal.
PROGRESS_EVERY_S = 5.0
#: Seconds before the first line: work done sooner says nothing (as it is not announced,
#: planner.engine.run.workload.ESTIMATE_ABOVE_S).
FIRST_LINE_AFTER_S = 10.0


class ProgressLines:
    """A progress callback ``(done, total, name)`` writing at most one line every
    ``every_s`` seconds to ``stream``, the first after ``first_after_s`` (none for work
    shorter than that):
    ``capplan: progress: searching: 45% (9 of 20), 100 s elapsed, ~2 min left (h100-sxm)``.

    ``passes``: how many runs of ``done`` from 0 to ``total`` make up the work (a plan at
    several sites, or planned twice for ``--confidence``); each counts as an equal share.
    ``clock``: seconds, monotonic (tests pass a fake one).
    """

    def __init__(self, label: str, stream=None, *, passes: int = 1,
                 every_s: float = PROGRESS_EVERY_S, first_after_s: float = FIRST_LINE_AFTER_S,
                 clock=time.monotonic):
        self.label, self.stream, self.passes = label, stream or sys.stderr, max(1, passes)
        self.every_s, self.clock = every_s, clock
        self.started = clock()
        self.last_line = self.started + first_after_s - every_s  # the first line's time
        self.finished = 0  # passes done
        self.at_end = False  # the last call ended a pass

    def fraction(self, done: int, total: int) -> float:
        """The share of the whole work done: finished passes and this one's ``done/total``."""
        if total and done >= total:
            self.finished += not self.at_end  # a pass ends once, however often it is said
            self.at_end, current = True, 0.0
        else:
            self.at_end, current = False, (done / total if total else 0.0)
        return min(1.0, (self.finished + current) / self.passes)

    def __call__(self, done: int, total: int, name: str = "") -> None:
        share = self.fraction(done, total)
        now = self.clock()
        if now - self.last_line < self.every_s:
            return
        self.last_line = now
        elapsed = now - self.started
        left = f", {seconds_text(elapsed / share * (1 - share))} left" if share > 0 else ""
        where = f" ({name})" if name else ""
        of_pass = (f", pass {min(self.finished + 1, self.passes)} of {self.passes}"
                   if self.passes > 1 else "")
        self.stream.write(f"capplan: progress: {self.label}: {share:.0%} ({done:,} of {total:,}"
                          f"{of_pass}), {round(elapsed)} s elapsed{left}{where}\n")
        self.stream.flush()


@contextlib.contextmanager
def search_progress(label: str = "evaluating", passes: int = 1):
    """Yield a callback ``(done, total, name)``: a transient bar when stderr is a TTY, else
    :class:`ProgressLines` (one line every :data:`PROGRESS_EVERY_S` seconds)."""
    if not sys.stderr.isatty():
        yield ProgressLines(label, passes=passes)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeElapsedColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{label} {name}")

        yield update
