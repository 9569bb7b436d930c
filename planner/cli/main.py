"""Entry point of the ``capplan`` command: the one error boundary of the CLI.

Every failure becomes one line on stderr and an exit code (see :mod:`planner.errors`):
expected ones (bad values, files, permissions, encodings, infeasible plans) say what was
wrong; anything else is a bug, reported as ``capplan: internal error: ...`` with exit
code 3.  ``--debug`` shows the traceback instead.  Values in messages are escaped so the
error stays on one line.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import warnings


def interrupted_while_starting(signum, frame) -> None:
    """SIGINT handler while the ``capplan`` process imports its modules (before
    :func:`main` can catch ``KeyboardInterrupt``): one line, exit 130, no traceback."""
    os.write(2, b"capplan: interrupted\n")
    os._exit(130)


if os.path.basename(sys.argv[0]) == "capplan":  # the console script (python -m planner: its
    signal.signal(signal.SIGINT, interrupted_while_starting)  # __main__ does the same)

from hardware_catalog.errors import CatalogError  # noqa: E402
from planner.cli.app import app_for  # noqa: E402
from planner.cli.common import flush_notices  # noqa: E402
from planner.errors import (  # noqa: E402
    INFEASIBLE,
    INTERNAL,
    USAGE,
    CapplanError,
    ReaderGone,
    one_line,
)
from planner.version import version  # noqa: E402


def _click_exceptions():
    try:  # typer >= 0.20 vendors click
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import exceptions
    return exceptions


def _error(message: str) -> None:
    print(f"capplan: error: {one_line(message)}", file=sys.stderr)


def _ignore_further_interrupts(whole_process: bool) -> None:
    """After the first Ctrl-C the command is over: a second one while the process exits
    must not print a traceback (only for the ``capplan`` process, not an in-process call)."""
    if whole_process:
        import signal

        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass


def _interrupted(whole_process: bool) -> None:
    _ignore_further_interrupts(whole_process)
    print("capplan: interrupted", file=sys.stderr)


def os_error_message(exc: OSError) -> str:
    """``<file>: <reason>`` of a failed read or write (one line)."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    name = exc.filename if isinstance(exc.filename, str) else str(exc.filename)
    return f"{name!r}: {reason}"


#: Allocations between two collections of the youngest generation in the ``capplan``
#: process (CPython's default is 700).  A command allocates mostly objects that live until
#: it ends (modules, catalog entries, result rows), so at 700 the collector ran ~110 times
#: in a one-shot query and traversed the whole heap once or twice (~15 ms each); at 10,000
#: it runs ~10 times and a full collection is rare.  Memory: at most this many young
#: objects wait for their collection.  Not changed when :func:`main` is called in a
#: process of the caller's (tests, notebooks).
YOUNG_COLLECTION_ALLOCATIONS = 10_000


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; errors become one line on stderr and a non-zero exit code."""
    if argv is None:  # the capplan process
        gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, *gc.get_threshold()[1:])
    import typer

    click = _click_exceptions()

    if argv is None and signal.getsignal(signal.SIGINT) is interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # started: Ctrl-C cleans up
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if args in (["--version"], ["-V"]):
        from planner.engine.run import native
        try:
            print(f"capplan {version()}")
            print(native.describe(), flush=True)
        except CapplanError as error:  # a bad CAPPLAN_KERNEL value
            print(f"capplan: {error}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # `capplan --version | head -1`
            _stdout_gone()
        return 0
    flush_notices(show=False)
    with warnings.catch_warnings(record=True) as held:  # shown if the command succeeds
        try:
            if "CAPPLAN_KERNEL" in os.environ:  # read by every command alike (one line)
                from planner.engine.run.native import check_setting

                check_setting()
            result = app_for(args)(args=args, prog_name="capplan", standalone_mode=False)
            code = result if isinstance(result, int) else 0
            if code == 130:  # click returns Ctrl-C as exit code 130 when not standalone
                _interrupted(argv is None)
        except (typer.Exit, getattr(click, "Exit", typer.Exit)) as exc:
            code = exc.exit_code
        except (typer.Abort, getattr(click, "Abort", typer.Abort)):
            _ignore_further_interrupts(argv is None)
            print("capplan: aborted", file=sys.stderr)
            code = 130
        except KeyboardInterrupt:
            _interrupted(argv is None)
            code = 130
        except getattr(click, "NoArgsIsHelpError", ()) as exc:
            print(exc.format_message(), file=sys.stderr)
            code = USAGE
        except click.ClickException as exc:
            if debug:
                raise
            _error(exc.format_message())
            code = exc.exit_code
        except (CapplanError, CatalogError) as exc:
            if debug:
                raise
            _error(str(exc))
            code = exc.exit_code
        except (BrokenPipeError, ReaderGone):  # the reader went away (`| head`): not an error
            _stdout_gone()
            code = 0
        except OSError as exc:  # unreadable input, unwritable output, full disk ...
            if debug:
                raise
            _error(os_error_message(exc))
            code = USAGE
        except UnicodeError as exc:
            if debug:
                raise
            _error(f"a file is not valid UTF-8 text ({getattr(exc, 'reason', exc)}); save it as UTF-8")
            code = USAGE
        except Exception as exc:  # a bug: one line, a distinct exit code
            if debug:
                raise
            print(f"capplan: internal error: {type(exc).__name__}: {one_line(str(exc))} "
                  "(rerun with --debug and report it)", file=sys.stderr)
            code = INTERNAL
    _show_warnings(held, show=code == 0)
    flush_notices(show=code in (0, INFEASIBLE))
    if argv is None:
        if code == 130 and "distributed" not in sys.modules:  # Dask cleans up at exit
            _exit_now(code)
        sys.exit(code)
    return code


def _show_warnings(held: list, show: bool) -> None:
    """Warnings raised while a command ran (numpy's RuntimeWarnings on overflowing inputs,
    a library's deprecations): one line each on stderr when the command succeeds, dropped
    when it fails, whose one line already says what was wrong (an overflow warning
    before "no finite wall_time_s" made a one-line error three)."""
    if not show:
        return
    for w in held:
        where = f"{os.path.basename(w.filename)}:{w.lineno}"
        print(f"capplan: warning: {one_line(str(w.message))} ({w.category.__name__}, {where})",
              file=sys.stderr)


def _stdout_gone() -> None:
    """Point stdout at the null device once its reader has gone, so that the interpreter's
    final flush does not print 'Exception ignored ... BrokenPipeError' (the recipe of the
    Python docs, signal module: 'Note on SIGPIPE')."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (a test's capture)
        pass


def _exit_now(code: int) -> None:
    """End the process at once after Ctrl-C: the files it wrote were removed or committed
    on the way here, and a search thread inside a long compiled or numpy call would
    otherwise hold up the interpreter's shutdown (1-2 s) by keeping the lock it needs."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
