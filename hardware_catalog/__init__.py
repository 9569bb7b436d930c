"""capplan's hardware, model and site catalog.

Kept light on import (``planner.cli`` imports :mod:`hardware_catalog.errors` at start-up):
the loader and the pydantic schema are imported on first use of a name below.

>>> from hardware_catalog import load_catalog
>>> cat = load_catalog()                       # shipped data + $CAPPLAN_CATALOG dirs
>>> cat.accelerator("h100-sxm").peak_bf16_flops_per_s.value
989400000000000.0
"""

from __future__ import annotations

from .errors import CatalogError

__all__ = [
    "SCHEMA_VERSION", "Accelerator", "Catalog", "CatalogError", "ModelSpec", "Node", "Quantity",
    "ReliabilityProfile", "Site", "load_catalog", "parse_file", "clear_cache",
]

_LAZY = {
    "SCHEMA_VERSION": "schema", "Accelerator": "schema", "ModelSpec": "schema", "Node": "schema",
    "Quantity": "schema", "ReliabilityProfile": "schema", "Site": "schema",
    "Catalog": "loader", "load_catalog": "loader", "parse_file": "loader",
    "clear_cache": "loader",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
