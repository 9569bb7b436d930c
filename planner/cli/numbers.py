"""Counts and money on the command line with SI suffixes: ``15T`` tokens, ``5M`` USD,
``2.5k`` GPUs.

``k`` = 10^3, ``M`` = 10^6, ``G`` or ``B`` (billion) = 10^9, ``T`` = 10^12, ``P`` =
10^15.  Plain numbers (``15e12``, ``1024``, ``inf``) are read as before, so their
domains (:mod:`planner.engine.inputs.domains`) still say what is allowed.  A lower-case ``m``
(milli in SI, million in finance) is refused with a did-you-mean, as is any other text.
Never ``eval``: the text is a number and one suffix letter, or an error.
"""

from __future__ import annotations

import re

import typer

#: Suffix -> multiplier.
SUFFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12, "P": 1e15}
_WITH_SUFFIX = re.compile(r"^\s*([+-]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z])\s*$")
_CLOSE = {"m": "M", "g": "G", "b": "B", "t": "T", "p": "P"}
ALLOWED = "a number, optionally with a suffix k, M, G (or B), T, P (e.g. 15T, 5M, 2.5k)"


def _parse(text: str) -> float | int:
    """``text`` as a number: ``int`` for a plain integer (exact, however large), else
    ``float``; ``typer.BadParameter`` (one line) when it is not one."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    match = _WITH_SUFFIX.match(text)
    if match is None:
        raise typer.BadParameter(f"{text!r} is not {ALLOWED}")
    number, suffix = match.groups()
    if suffix not in SUFFIXES:
        close = _CLOSE.get(suffix)
        hint = f"; did you mean: {number}{close}?" if close else ""
        raise typer.BadParameter(f"{text!r}: unknown suffix {suffix!r}; expected {ALLOWED}"
                                 f"{hint}")
    return float(number) * SUFFIXES[suffix]


def si_float(value) -> float:
    """Option parser: a float, SI suffixes allowed."""
    if not isinstance(value, str):
        return value  # a default
    try:
        return float(_parse(value))
    except OverflowError:  # an integer beyond float range: its domain check says so
        return float("inf")


def si_count(value) -> int:
    """Option parser: a whole count, SI suffixes allowed (``2.5k`` = 2500)."""
    if not isinstance(value, str):
        return value  # a default
    number = _parse(value)
    if isinstance(number, int):
        return number
    if number != number or number in (float("inf"), float("-inf")) or not number.is_integer():
        raise typer.BadParameter(f"{value!r} is not a whole number; expected an integer, "
                                 "optionally with a suffix k, M, G, T (e.g. 2k, 1.5M)")
    return int(number)


#: The separator of a range of global batches (``1024..8192``).
RANGE = ".."


def batch_or_range(value):
    """Option parser: a global batch (a whole count, SI suffixes allowed) or a range of
    them ``LO..HI`` (``1024..8192``, ``1k..8k``), returned as ``(LO, HI)``; the plan then
    chooses the batch per layout within it."""
    if not isinstance(value, str) or RANGE not in value:
        return si_count(value)
    low, _, high = value.partition(RANGE)
    if not low.strip() or not high.strip() or RANGE in high:
        raise typer.BadParameter(f"{value!r} is not a batch or a range LO..HI of batches "
                                 "(e.g. 2048 or 1024..8192)")
    low, high = si_count(low.strip()), si_count(high.strip())
    if low > high:
        raise typer.BadParameter(f"{value!r}: the range is empty; give LO..HI with LO <= HI "
                                 f"(did you mean {high}..{low}?)")
    return (low, high)
