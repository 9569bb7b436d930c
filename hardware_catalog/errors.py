"""Errors raised by the catalog loader (the CLI prints them as one line, exit code 2)."""

from __future__ import annotations


class CatalogError(ValueError):
    """Unknown name, malformed file or invalid value in a catalog file."""

    exit_code = 2
