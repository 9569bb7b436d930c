"""capplan's version: one constant, which ``pyproject.toml`` reads at build time
(``[tool.setuptools.dynamic]``), so a command need not import ``importlib.metadata``
(~25 ms of a one-shot query) to print it."""

from __future__ import annotations

__version__ = "0.1.0"


def version() -> str:
    """The version of this capplan (the installed package's, by construction)."""
    return __version__
