"""The JSON objects of one-run commands (``capplan evaluate``, its phases)."""

from __future__ import annotations

from planner.engine.run.columns import column, evaluate_summary, memory_terms, step_time_terms
from planner.version import version


def evaluation_payload(row: dict, inputs: dict) -> dict:
    """The JSON object of one evaluated layout (SI units, ratios in 0..1): the evaluate
    summary of the column registry, then the step-time and memory breakdowns."""
    payload = {c.key: bool(row[c.name]) if c.dtype == "bool" else row[c.name]
               for c in evaluate_summary()}
    payload["breakdown"] = {column(k).key: row[k] for k in step_time_terms()}
    payload["memory_breakdown"] = {column(k).key: row[k] for k in memory_terms()}
    payload["inputs"] = inputs
    payload["version"] = version()
    return payload
