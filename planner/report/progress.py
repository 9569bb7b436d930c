"""A rich progress bar on stderr for long searches (only on a terminal)."""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def search_progress(label: str = "evaluating"):
    """Yield a callback ``(done, total, name)``; draws a transient bar when stderr is a TTY."""
    if not sys.stderr.isatty():
        yield None
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
