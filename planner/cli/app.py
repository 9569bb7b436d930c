"""The typer application and the explicit registration of every command.

Each command lives in its own module of :mod:`planner.cli`, named
``<command>_command.py`` (so no command module shares its name with the analysis or
report module it calls), and is registered here, in the order ``capplan --help`` lists them.  Command modules import only typer at
module level (numpy, pandas, the catalog and the engine load inside the command),
so building the app stays cheap and ``capplan --help`` fast.
"""

from __future__ import annotations

from importlib import import_module

import typer

from planner.cli.common import CONTEXT

#: The commands that share option groups, registered from planner/cli/_commands_generated.py
#: (planner.codegen.command_signatures.REGISTERED; a test checks the two agree).
GENERATED = frozenset({"evaluate", "plan", "sweep", "codesign", "sensitivity", "simulate",
                       "export", "plot"})


def _root():
    """Closed-form capacity planner for LLM training clusters.

    Every command takes --format table|json|csv|markdown and -o FILE; data goes to
    stdout, diagnostics to stderr. Add --debug for a traceback on errors.
    """


#: Every top-level command, in the order ``capplan --help`` lists them: (name, module of
#: planner.cli, attribute, whether it is a group of subcommands).
COMMANDS = (
    ("checkpoint", "checkpoint_command", "checkpoint", False),
    ("formula", "formula_command", "formula_app", True),
    ("catalog", "catalog_command", "catalog_app", True),
    ("prices", "prices_command", "prices_app", True),
    ("evaluate", "evaluate_command", "evaluate", False),
    ("plan", "plan_command", "plan", False),
    ("sweep", "sweep_command", "sweep", False),
    ("codesign", "codesign_command", "codesign", False),
    ("init", "init_command", "init", False),
    ("sensitivity", "sensitivity_command", "sensitivity", False),
    ("simulate", "simulate_command", "simulate", False),
    ("stragglers", "stragglers_command", "stragglers", False),
    ("validate", "validate_command", "validate", False),
    ("export", "export_command", "export_app", True),
    ("plot", "plot_command", "plot", False),
)


def _registered(name: str, module: str, attribute: str):
    """What ``capplan`` registers as command ``name``: the generated command with every option
    written out (planner/cli/_commands_generated.py, for the commands that share option
    groups; it runs ``run`` of its module), else the module's own."""
    source = "_commands_generated" if name in GENERATED else module
    return getattr(import_module(f"planner.cli.{source}"), attribute)


def build_app(only: str | None = None) -> typer.Typer:
    """The ``capplan`` app with every command registered, or with command ``only``.

    typer builds the parameters of every registered command on each invocation; a
    one-shot ``capplan evaluate`` registers ``evaluate`` alone (and imports no other
    command module), which answers the same and starts ~20 ms sooner.
    """
    app = typer.Typer(
        name="capplan",
        help="Closed-form capacity planner for LLM training clusters.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=CONTEXT,
    )
    app.callback()(_root)
    for name, module, attribute, group in COMMANDS:
        if only is not None and name != only:
            continue
        target = _registered(name, module, attribute)
        if group:
            app.add_typer(target, name=name)
        else:
            app.command()(target)
    return app


def app_for(args: list[str]) -> typer.Typer:
    """The app to run ``args`` with: only the named command when the first argument names
    one, else every command (help, version, did-you-mean on a misspelt command)."""
    first = args[0] if args else None
    return build_app(first if first in {name for name, *_ in COMMANDS} else None)


def __getattr__(name: str):
    if name == "app":  # the full app, built on first use (docs, tests, the fuzzer)
        global app
        app = build_app()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
