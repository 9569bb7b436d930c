"""Tables follow the terminal width and never cut a cell (issue 18, item 7)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.report import output
from planner.report.output import render, table_text, terminal_width

IDS = ["megatron-145.6b", "in-memory", "llama3.1-405b", "gb200-nvl72-tray", "h100-sxm"]
ROWS = [{"id": i, "kind": "model", "layers": 96, "hidden": 12288, "heads": 96,
         "params (B)": 145.6, "checkpoint": "in-memory", "note": "a longer free-text note"}
        for i in IDS]


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").splitlines()


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
def test_table_fits_and_keeps_ids_whole(width):
    text = render(ROWS, "table", title="models", width=width)
    assert max(len(line) for line in _lines(text)) <= width
    assert "\u2026" not in text  # rich's ellipsis: nothing is cut
    for cell in [*IDS, "in-memory", "a longer free-text note"]:
        assert cell in text


def test_wide_terminal_gets_rows_narrow_terminal_gets_blocks():
    wide = render(ROWS, "table", width=200)
    assert sum("megatron-145.6b" in line and "in-memory" in line for line in _lines(wide)) == 1
    narrow = render(ROWS, "table", width=60)
    # one "key  value" line per cell: the id's line holds no other column
    assert [line for line in _lines(narrow) if "megatron-145.6b" in line] == [
        line for line in _lines(narrow) if "megatron-145.6b" in line and " id " in line]
    assert sum(" params (B) " in line for line in _lines(narrow)) == len(ROWS)


@settings(max_examples=40, deadline=None)
@given(width=st.integers(20, 240),
       cells=st.lists(st.lists(st.text(st.characters(codec="ascii", categories=["L", "N", "P"]),
                                       min_size=1, max_size=30), min_size=3, max_size=3),
                      min_size=1, max_size=6))
def test_every_character_survives_any_width(width, cells):
    text = table_text(["a", "bb", "ccc"], cells, width=width)
    assert max(len(line) for line in _lines(text)) <= width
    flat = "".join(ch for ch in text if ch not in " \n\u2502\u2503\u2500\u2501\u250c\u2510"
                   "\u2514\u2518\u251c\u2524\u252c\u2534\u253c\u250f\u2513\u2517\u251b"
                   "\u2523\u252b\u2533\u253b\u254b\u2521\u2529\u2547\u2548\u2549\u254a"
                   "\u2547\u2548\u2543\u2544\u2545\u2546\u2530\u2538\u2542\u2540")
    for row in cells:
        for cell in row:
            assert cell.replace(" ", "") in flat  # folded across lines, never dropped


def test_width_follows_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "73")
    assert terminal_width() == 73
    monkeypatch.setenv("COLUMNS", "5")
    assert terminal_width() == output.MIN_WIDTH
    monkeypatch.setenv("COLUMNS", "100000")
    assert terminal_width() == output.MAX_WIDTH


def test_width_falls_back_when_not_a_terminal(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)

    def no_terminal(*args):
        raise OSError("not a terminal")

    monkeypatch.setattr("os.get_terminal_size", no_terminal)
    assert terminal_width() == output.FALLBACK_WIDTH


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_cli_tables_follow_columns(monkeypatch, capsys, columns):
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["catalog", "list", "models"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in _lines(out)) <= int(columns)
    assert "megatron-145.6b" in out and "\u2026" not in out


def _rich_table(headers, rows, title, width, right):
    """What table_text drew with rich before the ASCII renderer (the reference)."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title) if title else None, header_style="bold")
    for h in headers:
        table.add_column(Text(h), justify="right" if h in right else "left", no_wrap=True)
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


_ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), columns=st.integers(1, 4), n=st.integers(0, 4),
       title=st.none() | _ASCII, width=st.integers(20, 120))
def test_ascii_renderer_draws_what_rich_draws(data, columns, n, title, width):
    headers = data.draw(st.lists(_ASCII.filter(bool), min_size=columns, max_size=columns,
                                 unique=True))
    rows = [data.draw(st.lists(_ASCII, min_size=columns, max_size=columns)) for _ in range(n)]
    right = set(data.draw(st.lists(st.sampled_from(headers), max_size=columns)))
    simple = output.ascii_cells_table(headers, rows, title=title or None, width=width,
                                      right=right)
    if simple is not None:
        assert simple == _rich_table(headers, rows, title or None, width, right)


def test_ascii_renderer_declines_what_it_cannot_draw():
    assert output.ascii_cells_table(["a"], [["é"]]) is None  # not ASCII
    assert output.ascii_cells_table(["a"], [["x\ny"]]) is None  # two lines
    assert output.ascii_cells_table(["a"], [["x" * 200]], width=80) is None  # too wide
    assert output.ascii_cells_table(["a"], [["x"]], title="a long title") is None  # wraps
    assert output.ascii_cells_table(["a"], [["x"]], title="t") is not None
