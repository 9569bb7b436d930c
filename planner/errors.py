"""Errors the CLI turns into one line on stderr and an exit code."""

from __future__ import annotations

import difflib

USAGE = 2
INFEASIBLE = 1


class CapplanError(Exception):
    """A problem with the user's input or request; ``exit_code`` 2 (usage) or 1 (infeasible)."""

    def __init__(self, message: str, exit_code: int = USAGE):
        super().__init__(message)
        self.exit_code = exit_code


def did_you_mean(kind: str, name: str, choices) -> CapplanError:
    """``unknown <kind> 'x'; did you mean: a, b?`` (or the allowed names)."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    if not close:
        close = [c for c in choices if c.startswith(name[:2])][:3]
    if close:
        return CapplanError(f"unknown {kind} '{name}'; did you mean: {', '.join(close)}?")
    shown = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return CapplanError(f"unknown {kind} '{name}'; allowed: {shown}")
