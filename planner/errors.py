"""Errors the CLI turns into one line on stderr and an exit code.

Exit codes of ``capplan`` (also in the README):

* 0 -- success;
* 1 -- :data:`INFEASIBLE`: no plan meets the constraints;
* 2 -- :data:`USAGE`: a bad flag, value, file or output target;
* 3 -- :data:`INTERNAL`: an unexpected exception (a bug: rerun with ``--debug``);
* 130 -- interrupted.
"""

from __future__ import annotations

import difflib

USAGE = 2
INFEASIBLE = 1
INTERNAL = 3


class CapplanError(ValueError):
    """A problem with the user's input or request; ``exit_code`` 2 (usage) or 1 (infeasible).

    A ``ValueError``, so that notebook code catching ``ValueError`` catches it too.
    """

    def __init__(self, message: str, exit_code: int = USAGE):
        super().__init__(message)
        self.exit_code = exit_code


class RunRefused(CapplanError):
    """A run its accelerator and stack cannot take; ``why`` is the rule it breaks, without
    the flag, for a line that names the alternative instead of timing it."""

    def __init__(self, message: str, why: str):
        super().__init__(message)
        self.why = why


class PrecisionRefused(RunRefused):
    """An accelerator (with its stack) that cannot run a precision recipe (``why``: ``stack
    'x' does not train in int8 ...``)."""


class ModelRefused(RunRefused):
    """A stack that has no implementation of a model's architecture (a hybrid model's
    Mamba-2 layers on torchtitan or MaxText)."""


class ReaderGone(Exception):
    """The program reading capplan's standard output went away (``capplan ... | head``).

    Not an ``OSError``, so that click does not turn it into exit code 1 (which means "no
    plan" here): the CLI ends quietly with exit code 0.
    """


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (repr-like)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown(value) -> str:
    """A user-supplied value for an error message: repr of strings, one line."""
    return one_line(repr(value) if isinstance(value, str) else str(value))


def did_you_mean(kind: str, name: str, choices) -> CapplanError:
    """``unknown <kind> 'x'; did you mean: a, b?`` (or the allowed names)."""
    return CapplanError(f"unknown {kind} '{one_line(name)}'; {suggestion(name, choices)}")


def choice_error(option: str, value, allowed) -> CapplanError:
    """``--<option> 'x' is not one of: a, b, c`` and, when one is near, ``; did you mean:
    b?`` (case ignored: ``NVFP4`` suggests ``nvfp4``)."""
    message = f"--{option} {shown(value)} is not one of: {', '.join(allowed)}"
    close = difflib.get_close_matches(str(value).lower(), list(allowed), n=3, cutoff=0.5)
    return CapplanError(message + (f"; did you mean: {', '.join(close)}?" if close else ""))


def suggestion(name: str, choices) -> str:
    """``did you mean: a, b?`` (the nearest of ``choices`` to ``name``), or
    ``allowed: ...`` (the first twelve) when none is near."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    if not close:
        close = [c for c in choices if c.startswith(name[:2])][:3]
    if close:
        return f"did you mean: {', '.join(close)}?"
    listed = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return f"allowed: {listed}"
