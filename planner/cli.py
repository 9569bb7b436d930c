"""Entry point of the ``capplan`` command: registers commands, maps errors to exit codes."""

from __future__ import annotations

import sys

from hardware_catalog.errors import CatalogError

from .cli_app import app
from .errors import CapplanError

# Command modules register themselves on ``app`` when imported (one line each).
from . import cmd_checkpoint  # noqa: E402,F401  isort: skip
from . import cmd_formula  # noqa: E402,F401  isort: skip
from . import cmd_catalog  # noqa: E402,F401  isort: skip
from . import cmd_evaluate  # noqa: E402,F401  isort: skip
from . import cmd_plan  # noqa: E402,F401  isort: skip
from . import cmd_sweep  # noqa: E402,F401  isort: skip
from . import cmd_init  # noqa: E402,F401  isort: skip
from . import cmd_sensitivity  # noqa: E402,F401  isort: skip
from . import cmd_simulate  # noqa: E402,F401  isort: skip
from . import cmd_validate  # noqa: E402,F401  isort: skip
from . import cmd_export  # noqa: E402,F401  isort: skip
from . import cmd_plot  # noqa: E402,F401  isort: skip


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("capplan")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def _click_exceptions():
    try:  # typer >= 0.20 vendors click
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import exceptions
    return exceptions


@app.callback()
def _root():
    """Closed-form capacity planner for LLM training clusters.

    Every command takes --format table|json|csv|markdown and -o FILE; data goes to
    stdout, diagnostics to stderr. Add --debug for a traceback on errors.
    """


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; errors become one line on stderr and a non-zero exit code."""
    import typer

    click = _click_exceptions()

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if args in (["--version"], ["-V"]):
        print(f"capplan {_version()}")
        return 0
    try:
        result = app(args=args, prog_name="capplan", standalone_mode=False)
        code = result if isinstance(result, int) else 0
        if code == 130:  # click returns Ctrl-C as exit code 130 when not standalone
            print("capplan: interrupted", file=sys.stderr)
    except (typer.Exit, getattr(click, "Exit", typer.Exit)) as exc:
        code = exc.exit_code
    except (typer.Abort, getattr(click, "Abort", typer.Abort)):
        print("capplan: aborted", file=sys.stderr)
        code = 130
    except KeyboardInterrupt:
        print("capplan: interrupted", file=sys.stderr)
        code = 130
    except getattr(click, "NoArgsIsHelpError", ()) as exc:
        print(exc.format_message(), file=sys.stderr)
        code = 2
    except click.ClickException as exc:
        if debug:
            raise
        print(f"capplan: error: {exc.format_message()}", file=sys.stderr)
        code = exc.exit_code
    except (CapplanError, CatalogError) as exc:
        if debug:
            raise
        print(f"capplan: error: {exc}", file=sys.stderr)
        code = exc.exit_code
    except BrokenPipeError:
        code = 0
    if argv is None:
        sys.exit(code)
    return code
