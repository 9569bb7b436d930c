"""capplan's planner: scenarios, design space, vectorised evaluation, optimisation, reports.

The notebook API (imported lazily so that the CLI starts fast):

- :func:`planner.evaluate` -- one or many layouts of a model on an accelerator;
- :func:`planner.plan` -- optima per objective, Pareto front and knee across the catalog;
- :class:`planner.Scenario` -- the inputs of a planning question.
"""

from __future__ import annotations

__all__ = ["evaluate", "plan", "Scenario", "PlanResult"]


def __getattr__(name):
    if name == "evaluate":
        from planner.engine.evaluator import evaluate

        return evaluate
    if name in ("plan", "PlanResult"):
        from planner.engine import optimize

        return getattr(optimize, name)
    if name == "Scenario":
        from planner.engine.scenario import Scenario

        return Scenario
    raise AttributeError(f"module 'planner' has no attribute {name!r}")
