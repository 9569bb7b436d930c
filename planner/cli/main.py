"""Entry point of the ``capplan`` command: maps errors to one stderr line and an exit code."""

from __future__ import annotations

import sys

from hardware_catalog.errors import CatalogError
from planner.cli.app import app
from planner.errors import CapplanError
from planner.version import version


def _click_exceptions():
    try:  # typer >= 0.20 vendors click
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import exceptions
    return exceptions


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; errors become one line on stderr and a non-zero exit code."""
    import typer

    click = _click_exceptions()

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if args in (["--version"], ["-V"]):
        print(f"capplan {version()}")
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
