"""One output sink: records to table | json | csv | markdown, on stdout or a file."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from planner.errors import CapplanError, ReaderGone, shown

FORMATS = ("table", "json", "csv", "markdown")


@dataclass
class Report:
    """A command's answer, built before anything is written.

    ``text`` is the output in the format asked; ``notices`` the lines for stderr (shown
    when the command succeeds); ``written`` whether ``text`` goes to an output file (a
    plan that meets no constraint writes none, but still prints to stdout); ``figure``
    writes the figure of ``--plot`` (``figure(force)``, committed together with the text)
    or is None; ``finish`` raises the exit-1 error of a plan that met no constraint, after
    the text is written.
    """

    text: str
    notices: list[str] = field(default_factory=list)
    written: bool = True
    figure: Callable[[bool], None] | None = None
    finish: Callable[[], None] = lambda: None


def format_cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
            return f"{value:.3g}"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    return "" if value is None else str(value)


#: First characters that make a spreadsheet read a text cell as a formula (OWASP, "CSV
#: Injection": ``=``, ``+``, ``-``, ``@``, tab, carriage return).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(value):
    """``value`` for a CSV cell: text starting with a formula character gets a leading
    ``'`` so a spreadsheet shows it as written (``=HYPERLINK(..)`` stays text); numbers,
    negative ones included, the lone ``-`` of an empty cell (no formula) and every other
    value are returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and value != "-":
        return "'" + value
    return value


def plot_text(text) -> str:
    """``text`` as matplotlib should draw it, character for character: each ``$`` escaped
    (matplotlib shows ``\\$`` as ``$``), so a user's name (a phase called ``$x^$``) is
    never read as mathtext.  Every plot label holding user text passes through here."""
    return str(text).replace("$", r"\$")


def to_jsonable(value):
    """Plain Python for json.dumps: numpy scalars -> float/int, NaN/inf -> None."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def render(rows: list[dict], fmt: str, *, title: str | None = None, payload=None,
           width: int | None = None) -> str:
    """Render ``rows`` (list of flat dicts) in ``fmt``; JSON uses ``payload`` if given.
    CSV text cells are data for a spreadsheet, never formulas (:func:`spreadsheet_text`)."""
    if fmt == "json":
        return json.dumps(to_jsonable(payload if payload is not None else rows), indent=2) + "\n"
    columns = list(rows[0]) if rows else []
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
        writer.writerow({c: spreadsheet_text(str(c)) for c in columns})
        for row in rows:
            writer.writerow({k: spreadsheet_text(to_jsonable(v)) for k, v in row.items()})
        return buf.getvalue()
    if fmt == "markdown":
        lines = [f"### {title}", ""] if title else []
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "|".join("---" for _ in columns) + "|")
        lines += ["| " + " | ".join(format_cell(r[c]) for c in columns) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    numeric = {c for c in columns if rows and isinstance(rows[0][c], int | float)
               and not isinstance(rows[0][c], bool)}
    cells = [[format_cell(r[c]) for c in columns] for r in rows]
    return table_text([str(c) for c in columns], cells, title=title,
                      width=width or terminal_width(), right=numeric)


#: Table width when stdout is no terminal and $COLUMNS is unset (pipes, files, CI logs).
FALLBACK_WIDTH = 120
#: Narrowest and widest table drawn, whatever $COLUMNS says [characters].
MIN_WIDTH, MAX_WIDTH = 20, 1000


def terminal_width() -> int:
    """Characters per line for tables: $COLUMNS, else the terminal's, else FALLBACK_WIDTH."""
    columns = shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns
    return min(MAX_WIDTH, max(MIN_WIDTH, columns)) if columns > 0 else FALLBACK_WIDTH


def natural_width(headers: list[str], rows: list[list[str]]) -> int:
    """Width of the boxed table with every cell on one line [characters]."""
    from rich.cells import cell_len

    widths = [max([cell_len(line) for cell in [h, *(r[i] for r in rows)]
                   for line in str(cell).splitlines() or [""]])
              for i, h in enumerate(headers)]
    return sum(widths) + 3 * len(widths) + 1  # "│ " before each cell, " " after, last "│"


def table_text(headers: list[str], rows: list[list[str]], *, title: str | None = None,
               width: int = FALLBACK_WIDTH, right=()) -> str:
    """Formatted cells as a boxed table that fits ``width``, no cell ever cut short.

    When every column fits on one line the table is drawn as usual (``right``: the
    headers of right-aligned columns); otherwise as a vertical layout, one block of
    ``header  value`` lines per row, where a value longer than the line wraps.  Cells are
    data, not rich markup (``[h]`` stays ``[h]``).  Tables of printable ASCII that fit
    are drawn by :func:`ascii_cells_table` without importing rich (the same text).
    """
    simple = ascii_cells_table(headers, rows, title=title, width=width, right=right)
    if simple is not None:
        return simple
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if natural_width(headers, rows) <= width:
        table = Table(title=Text(title) if title else None, header_style="bold")
        for h in headers:
            table.add_column(Text(h), justify="right" if h in right else "left", no_wrap=True)
        for r in rows:
            table.add_row(*(Text(c) for c in r))
    else:
        table = Table(title=Text(title) if title else None, show_header=False)
        table.add_column(no_wrap=True, style="bold")
        table.add_column(overflow="fold")
        for n, r in enumerate(rows):
            if n:
                table.add_section()
            for h, c in zip(headers, r, strict=True):
                table.add_row(Text(h), Text(c))
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


def _printable_ascii(text: str) -> bool:
    """Printable ASCII without leading or trailing spaces (rich would strip those)."""
    return text.isascii() and text.isprintable() and text == text.strip(" ")


def ascii_cells_table(headers: list[str], rows: list[list[str]], *, title: str | None = None,
                      width: int = FALLBACK_WIDTH, right=()) -> str | None:
    """The boxed table :func:`table_text` draws with rich, drawn here, or ``None``.

    Only for the common case, where rich's layout is simple: every header, cell and the
    title printable ASCII (one character, one column) with no leading or trailing space, the table no wider than ``width``
    and the title no wider than the table (rich would wrap it).  rich's default heavy-head
    box, one space of padding, the title centred above (``tests/test_table_width.py``
    compares both renderers).
    """
    texts = [*headers, *(c for r in rows for c in r), *([title] if title else [])]
    if not all(isinstance(t, str) and _printable_ascii(t) for t in texts):
        return None
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    total = sum(widths) + 3 * len(widths) + 1
    if not headers or total > width or (title and len(title) > total):
        return None

    def line(left, fill, middle, end):
        return left + middle.join(fill * (w + 2) for w in widths) + end

    def cells(values, bar, align):
        return bar + bar.join(f" {v.rjust(w) if align(h) else v.ljust(w)} "
                              for v, w, h in zip(values, widths, headers, strict=True)) + bar

    out = []
    if title:
        left = (total - len(title)) // 2
        out.append(" " * left + title + " " * (total - len(title) - left))
    out.append(line("┏", "━", "┳", "┓"))
    out.append(cells(headers, "┃", lambda h: h in right))
    out.append(line("┡", "━", "╇", "┩"))
    out += [cells(r, "│", lambda h: h in right) for r in rows]
    out.append(line("└", "─", "┴", "┘"))
    return "\n".join(out) + "\n"


def check_target(output: str, force: bool = False, flag: str = "--output") -> Path:
    """The file ``output`` may become, or one CapplanError (exit 2) saying why not.

    Refused: an empty name, a directory, a missing parent directory, an existing file
    without ``force`` (``--force`` is the only way to replace a file), a parent
    directory this process may not write to.
    """
    if not output or not str(output).strip():
        raise CapplanError(f"{flag} needs a file name, got ''")
    path = Path(output)
    name = shown(str(output))
    if path.is_dir():
        raise CapplanError(f"{flag} {name} is a directory; give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise CapplanError(f"{flag} {name}: directory {shown(str(parent))} does not exist; "
                           "create it first")
    if path.exists() or path.is_symlink():
        if not force:
            raise CapplanError(f"{name} exists; pass --force to overwrite it")
        if not path.is_file():
            raise CapplanError(f"{flag} {name} is not a regular file; not replacing it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CapplanError(f"{flag} {name}: directory {shown(str(parent))} is not writable")
    return path


#: Files written inside :func:`committed_together`, not yet renamed into place:
#: (temporary path, target, name as given); ``None`` outside such a block.
_staged: list[tuple[Path, Path, str]] | None = None


@contextmanager
def atomic_target(output: str, force: bool = False):
    """Yield a temporary path beside ``output`` (same suffix) to write the whole file to;
    on success it replaces ``output`` in one ``os.replace``, on any error it is removed,
    so a failing run never leaves a half-written file.  Inside
    :func:`committed_together` the rename waits for the end of that block."""
    target = check_target(output, force)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}",
                                   dir=target.parent)
    except OSError as exc:  # e.g. /proc, /sys: writable by mode bits, no new files
        raise CapplanError(f"--output {shown(str(output))}: cannot create a file in "
                           f"{shown(str(target.parent))} ({exc.strerror or exc}); "
                           "choose another directory") from None
    os.close(fd)
    try:
        yield Path(tmp)
        if _staged is not None:
            _staged.append((Path(tmp), target, output))
            return
        _check_not_appeared(target, output, force)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_figure(fig, path, dpi: int = 120) -> None:
    """Write a matplotlib figure to ``path`` in one piece (:func:`atomic_target`; the
    caller has already refused an existing file without --force) and close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_target(str(path), force=True) as tmp:
            fig.savefig(tmp, dpi=dpi)
    finally:
        plt.close(fig)


def _check_not_appeared(target: Path, output: str, force: bool) -> None:
    if target.exists() and not force:  # appeared while we were writing
        raise CapplanError(f"{output} appeared meanwhile; pass --force to overwrite it")


@contextmanager
def committed_together(force: bool = False):
    """The files a command writes inside this block (its ``-o`` file and its ``--plot``
    figure) are all renamed into place at the block's end, or none is: an error, a full
    disk or Ctrl-C while the figure is drawn leaves no ``-o`` file behind.  Each is
    announced (``capplan: wrote ...``) once it is in place."""
    global _staged
    if _staged is not None:  # nested: the outer block commits
        yield
        return
    _staged = []
    try:
        yield
        staged = _staged
        _commit(staged, force)
    except BaseException:
        for tmp, _, _ in _staged:
            tmp.unlink(missing_ok=True)
        raise
    finally:
        _staged = None
    for _, _, output in staged:
        print(f"capplan: wrote {output}", file=sys.stderr)


def _commit(staged: list[tuple[Path, Path, str]], force: bool) -> None:
    """Rename every staged file into place with Ctrl-C held back (delivered after the
    last rename), so the files land together."""
    for _, target, output in staged:
        _check_not_appeared(target, output, force)
    mode = 0o666 & ~_umask()
    can_block = hasattr(signal, "pthread_sigmask")
    if can_block:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        for tmp, target, _ in staged:
            os.chmod(tmp, mode)
            os.replace(tmp, target)
    finally:
        if can_block:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write(text: str, output: str | None, force: bool = False) -> None:
    """Write to stdout ('-' or None) or atomically to a file (refusing to overwrite
    without ``force``; see :func:`atomic_target`)."""
    if output is None or output == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError as exc:
            raise ReaderGone() from exc
        return
    with atomic_target(output, force) as tmp:
        tmp.write_text(text, encoding="utf-8")
    if _staged is None:  # else announced when committed
        print(f"capplan: wrote {output}", file=sys.stderr)


def write_or_check(path: Path, text: str, *, check: bool, command: str) -> int:
    """Write a generated document, or with ``check`` return 1 if the file differs from it."""
    if check:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is stale; run: {command}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0
