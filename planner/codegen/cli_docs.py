"""docs/cli.md generated from the commands' ``--help`` (``python -m planner.codegen``).

The help of every command is rendered at a fixed width of 100 columns, so the
file is the same on every machine; ``tests/test_cli_docs.py`` fails when it is
stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer.main

from planner.cli.app import app
from planner.report.output import write_or_check

WIDTH = 100
DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

HEADER = """\
# Command-line reference

<!-- Generated from --help by `python -m planner.codegen`; do not edit by hand. -->

Every command prints its help with `capplan COMMAND --help` (or `-h`). Errors are one
line on stderr: exit code 2 for a usage problem (bad flag, value, file or output target),
1 when no plan meets the constraints, 3 for an internal error (a bug: rerun with --debug).
"""


def _walk(command, ctx, path: list[str]):
    """Yield (path, command, context) depth-first, in the order the group lists them."""
    yield path, command, ctx
    if not hasattr(command, "list_commands"):
        return
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        sub_ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True,
                                   terminal_width=WIDTH, max_content_width=WIDTH)
        yield from _walk(sub, sub_ctx, [*path, name])


def render_cli_markdown() -> str:
    """docs/cli.md: an index, then each command's ``--help`` at width 100."""
    root = typer.main.get_command(app)
    ctx = root.make_context("capplan", [], resilient_parsing=True, terminal_width=WIDTH,
                            max_content_width=WIDTH)
    entries = list(_walk(root, ctx, ["capplan"]))
    lines = [HEADER]
    for path, command, _ in entries[1:]:
        name = " ".join(path)
        short = command.get_short_help_str(limit=WIDTH - len(name) - 10)
        lines.append(f"- [`{name}`](#{_anchor(name)}): {short}")
    lines.append("")
    for path, command, sub_ctx in entries:
        name = " ".join(path)
        lines += [f"## {name}", "", "```text", command.get_help(sub_ctx).rstrip(), "```", ""]
    return "\n".join(lines)


def _anchor(title: str) -> str:
    """The GitHub anchor of a '## title' heading."""
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def main(argv: list[str] | None = None) -> int:
    """Write docs/cli.md (or the path given); ``--check`` exits 1 when it is stale."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    target = Path(args[0]) if args else DOC
    return write_or_check(target, render_cli_markdown(), check=check,
                          command="python -m planner.codegen")

