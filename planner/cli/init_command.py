"""``capplan init``: write a commented example scenario file."""

from __future__ import annotations

import typer


def init(
    path: str = typer.Argument("scenario.toml", help="File to write."),
    force: bool = typer.Option(False, help="Overwrite PATH if it exists."),
):
    """Write a commented example scenario for `capplan plan --scenario PATH`."""
    from pathlib import Path

    from planner.cli.scenario_file import example
    from planner.report.output import write

    write(example(Path(path).name), path, force)
