"""The ``capplan`` command line: the typer app (:mod:`planner.cli.app`), one module per
command, the options several commands share (:mod:`planner.cli.common`,
:mod:`planner.cli.environment_options`, :mod:`planner.cli.layout_options`,
:mod:`planner.cli.scenario_options`) and the error
boundary (:func:`planner.cli.main.main`).

Command modules import only typer at module level; everything heavy (numpy, pandas,
the catalog, the engine) is imported in one block at the top of each command's body,
so that ``capplan --help`` and one-shot queries start fast.
"""
