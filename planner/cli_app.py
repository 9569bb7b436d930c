"""The typer application objects; command modules register on them.

Kept free of heavy imports (numpy, pandas, sympy load inside commands) so that
``capplan --help`` stays fast.
"""

from __future__ import annotations

import typer

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

app = typer.Typer(
    name="capplan",
    help="Closed-form capacity planner for LLM training clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=CONTEXT,
)
