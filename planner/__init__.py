"""capplan's planner: scenarios, design space, vectorised evaluation, optimisation, reports.

The notebook API (imported lazily so that the CLI starts fast):

- :func:`planner.evaluate` -- one or many layouts of a model on an accelerator;
- :func:`planner.plan` -- optima per objective, Pareto front and knee across the catalog;
- :class:`planner.Scenario` -- the inputs of a planning question.
"""

import sys as _sys  # first: no `from __future__` import (it runs before the handler)

if _sys.argv and _sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".exe") \
        == "capplan":
    # The ``capplan`` console script imports this package first: Ctrl-C from here until
    # the CLI is ready is one line and exit 130, not a KeyboardInterrupt traceback from
    # the middle of an import (planner.cli.main installs the same handler, and main()
    # restores Python's once it can clean up).  These are the first statements capplan's
    # code can run: built-in modules only (signal imports enum, ~10 ms; os may be half
    # imported when the signal comes).
    import _signal

    try:
        import posix as _system
    except ImportError:  # pragma: no cover - Windows
        import nt as _system

    def _interrupted_while_starting(signum, frame) -> None:
        _system.write(2, b"capplan: interrupted\n")
        _system._exit(130)

    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

__all__ = ["evaluate", "plan", "Scenario", "PlanResult"]


def __getattr__(name):
    if name == "evaluate":
        from planner.engine.layouts.evaluator import evaluate

        return evaluate
    if name in ("plan", "PlanResult"):
        from planner.engine.search import optimize
        return getattr(optimize, name)
    if name == "Scenario":
        from planner.engine.inputs.scenario import Scenario

        return Scenario
    raise AttributeError(f"module 'planner' has no attribute {name!r}")
