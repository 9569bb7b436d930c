"""The installed package version (``0+unknown`` when running from a source tree)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version


def version() -> str:
    try:
        return installed_version("capplan")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"
