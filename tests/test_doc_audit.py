"""Every result number in README.md and docs/*.md is computed, checked, or dated.

The audit reads every page (no command runs here: it is fast) and, for every prose item (a
paragraph, a list item, a table row) that states a quantity, requires one of:

(a) **computed**: the page is generated (``planner/codegen/fingerprint.py`` ``STEPS`` lists
    the outputs; their generators compute every number), or the number sits in a code
    block: doctests run (``--doctest-glob=*.md``), shell commands and input files are
    inputs, not results;
(b) **dated**: it is a measurement of a stated day, shown where the reader sees it, as
    ``(measured YYYY-MM-DD)`` (``(measured YYYY-MM-DD, on what)`` also) in the item, or in
    a paragraph ending in ``:`` just before a list or table (its caption dates it), or a
    date ``YYYY-MM-DD`` in a heading, which dates its whole section (up to the next heading
    of the same or a higher level; in the title, the page), or in a marker comment ``<!-- numbers: measured DATE ... -->``
    or ``<!-- numbers: history DATE ... -->`` (see ``MARKER``);
(c) **checked**: a test in ``tests/test_doc_numbers.py`` recomputes it: the item holds a
    quote registered in ``CHECKED`` (page, quoted text, test) and this audit verifies that
    each quote still appears in its page and that its test exists, so a check cannot
    silently stop matching; or a marker ``<!-- numbers: checked tests/FILE.py::TEST -->``.

Quotes of other people's numbers and the question's inputs are not results: a marker
``<!-- numbers: published SOURCE -->`` or ``<!-- numbers: inputs WHERE -->`` says so.

What counts as a quantity (``quantities``): a number with a unit right after it (``%``,
days, h, min, s, ms, USD, MWh, kW, W, GPU-hours, TFLOP/s, GB, t CO2e, ``x`` ratios ...,
see ``_UNITS``) or a ``$`` before it, in prose or in a heading (a heading's number needs
a date in it or above it).  Counts (GPUs, layouts, steps, tokens) carry no unit and are
not audited: mostly the question's inputs.  Not a quantity: anything in an inline code
span (names, options, values typed on the command line), a "quotation" (others' words),
link targets and URLs, dates and
clock times, years, ordinals, version numbers and names with digits (``H100``,
``llama3-70b``, ``TP8``), references (issue 40, Table 2).  Pages in ``STRICT`` (audited
before this file existed) keep the stricter rule: every number, with or without a unit.
"""

from __future__ import annotations

import re
from pathlib import Path

from planner.codegen.fingerprint import STEPS

ROOT = Path(__file__).resolve().parents[1]
NUMBERS_TESTS = ROOT / "tests" / "test_doc_numbers.py"

#: Pages whose every number (unit or not) must be accounted for.
STRICT = ("docs/economics.md", "docs/distributed.md", "docs/whatif-checkpointing.md")

#: ``(page, quoted text, test in tests/test_doc_numbers.py that checks the numbers in it)``.
#: The quote is matched with runs of whitespace as one space; the numbers inside it count
#: as checked.  Keep quotes short and exactly as the page shows them.
CHECKED: tuple[tuple[str, str, str], ...] = (
    ("docs/whatif-stragglers.md", "At 128 GPUs the three causes together waste 49.4 % (each "
     "alone 11-26 %)", "test_whatif_stragglers_tables_and_prose"),
    ("docs/whatif-stragglers.md", "a full pause per step (20 % of a 4 s step)",
     "test_whatif_stragglers_tables_and_prose"),
    ("docs/whatif-stragglers.md", "cuts the GC share to 0.2 % and the total to 6.8 % at 128 "
     "GPUs and 8.7 % at 16,384", "test_whatif_stragglers_tables_and_prose"),
    ("docs/model.md", "wastes 49.4 % (`capplan stragglers --preset bytedance-osdi25`",
     "test_whatif_stragglers_tables_and_prose"),
    ("docs/model.md", "each cause alone wastes 11-26 %", "test_whatif_stragglers_tables_and_prose"),
    ("docs/model.md", "takes 150.0 days instead of 146.6 (+2.3 %: 1.4 days of evaluations, 1.9 "
     "days of 70 rollbacks)", "test_model_default_evaluation_overheads"),
    ("docs/model.md", "1.09 s of bubble against 2.16 s under 1F1B",
     "test_model_dualpipe_and_moe_memory_examples"),
    ("docs/model.md", "(880 against 432 MiB per layer at 4,096 tokens, BF16)",
     "test_model_dualpipe_and_moe_memory_examples"),
    ("docs/model.md", "216 of the experts' 584 MiB per layer at 4,096 tokens",
     "test_model_dualpipe_and_moe_memory_examples"),
    ("docs/model.md", "MTTF: 56.6 days at 8 GPUs", "test_model_job_mttf_and_spares_examples"),
    ("docs/model.md", "25.9 h at 1,024", "test_model_job_mttf_and_spares_examples"),
    ("docs/model.md", "3.09 h at 16,384", "test_model_job_mttf_and_spares_examples"),
    ("docs/model.md", "`meta-rsc` 47.7 d / 10.1 h / 1.42 h",
     "test_model_job_mttf_and_spares_examples"),
    ("docs/model.md", "16 spare nodes (0.8 %) cut the wall time of a 54-day solve from 102 to "
     "63 days and the GPU-hours by 37 %", "test_model_job_mttf_and_spares_examples"),
    ("docs/model.md", "it is 16 spares: wall time 65 days instead of 109 with none",
     "test_model_job_mttf_and_spares_examples"),
    ("docs/model.md", "prediction 517 -> 1,020 TFLOP/s/GPU against 494 -> 970",
     "test_model_gb200_guide_predictions_are_validation_mds"),
)

#: ``<!-- numbers: KIND ... -->``.  ``checked tests/FILE.py::TEST`` names the test that
#: recomputes the numbers; ``measured DATE ...`` a timing or other run on a stated date and
#: machine (not regenerated: timings depend on the machine and its load); ``published
#: SOURCE`` values quoted from a paper, vendor or data source, with their source in the
#: text; ``history DATE`` a record of what an earlier version gave (kept to explain a
#: change); ``inputs WHERE`` the question's inputs and documented defaults (a scenario, a
#: CLI default, a catalog or data-file value), not results.  A marker on its own line covers
#: the block after it; one that says ``(to the next heading)`` every block up to it.
MARKER = re.compile(r"<!--\s*numbers:\s*(checked|measured|published|history|inputs)\b\s*(.*?)"
                    r"-->", re.S)
#: The visible date of a measurement, in an item or a heading.
DATED_ITEM = re.compile(r"\bmeasured (?:on )?\d{4}-\d{2}-\d{2}\b")
DATED_HEADING = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")

_NUMBER = re.compile(r"(?<![\w.\-/:#=@$])\d+(?:,\d{3})*(?:\.\d+)?(?![\w]|\.\d)")
_UNITS = (
    r"%|"
    r"(?:k|M|G|T|P)?(?:USD|EUR|Wh|FLOP/s|FLOPs?|B/s|bit/s|b/s)\b|(?:k|M|G|T|P)W\b|"
    r"(?:K|M|G|T|P)i?B\b|"
    r"(?:M|k|B|bn)?\s?(?:USD|\$)|"
    r"GPU-(?:hours?|h|days?|years?)\b|CPU-(?:s|seconds?|min|minutes?|h|hours?)\b|"
    r"(?:wall-)?(?:days?|hours?|min|minutes?|seconds?|ms|µs|us|ns|weeks?|months?|years?|"
    r"yr)\b|"
    r"(?:t|kg|g|tonnes?|Mt|kt)\s?CO2e?\b|tonnes?\b|"
    r"(?:GW|MW|kW)\b|°C|USD/kWh|USD/h|USD/GPU-h(?:our)?"
)
_QUANTITY = re.compile(
    r"(?<![\w.,/:#=@])(?<![A-Za-z_]-)(\$\s?)?(\d+(?:,\d{3})*(?:\.\d+)?)(?!\.\d)"
    rf"(?(1)(?:\s?(?:k|M|bn|B)\b)?|(?:x\b|×|\s(?:d|h|s|t|W)\b|\s?(?:{_UNITS})))")
#: Text that holds digits but no quantity: inline code (names, commands, inputs), links,
#: paper ids, dates and times, references to issues, items, tables, sections and papers.
_NOT_QUANTITIES = [
    re.compile(r"`[^`]*`"),
    re.compile(r'"[^"\n]*"'),  # quotations: others' words (a published figure, a datasheet's)
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"\S*(?:arXiv:|doi:|https?://|github\.com|\.com/|\.org/|\.dev/|\.io/)\S*"),
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}(?:-\d{1,2}:\d{2})?\s*UTC"),
    re.compile(r"\b(?:issue|issues|item|items|Table|Fig\.|Figure|step|H[12]|Aug|ISCA|HPCA|"
               r"ASPLOS|et al\.|Llama|LLaMA|Llama 3\.1|OLMo|v|Gaudi|x86-64 level)\s+"
               r"[\d.,]+(?:\s*(?:and|,)\s*[\d.]+)*"),
    re.compile(r"\b(?:19|20)\d{2}\b(?!\s?(?:[%×$]|[A-Za-zµ°]))"),  # years (not 2048 s)
    re.compile(r"\b\d+(?:st|nd|rd|th)\b"),
    re.compile(r"^\s*\d+\.\s", re.M),  # ordered-list numbers
]


def generated_pages() -> set[str]:
    """Pages a generator writes (every number in them is computed)."""
    return {out for step in STEPS for out in step.outputs if out.endswith(".md")}


def audited_pages() -> list[str]:
    """README.md and every hand-written docs/*.md page."""
    pages = ["README.md"] + [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in pages if p not in generated_pages()]


def _blocks(lines: list[str]):
    """(kind, first line number, text) per markdown block: fenced and indented code blocks
    whole, headings, other blocks split at blank lines."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            yield "code", i + 1, "\n".join(lines[i + 1:j])
            i = j + 1
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            yield "code", i + 1, "\n".join(lines[i:j])
            i = j
        elif line.startswith("#"):
            yield "heading", i + 1, line
            i += 1
        elif not line.strip():
            i += 1
        elif line.startswith(">>> "):  # a doctest outside a fence: it runs
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            yield "code", i + 1, "\n".join(lines[i:j])
            i = j
        else:
            j = i
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("```", "#")):
                j += 1
            yield "text", i + 1, "\n".join(lines[i:j])
            i = j


_ITEM_START = re.compile(r"^\s*(?:[-*+]\s|\d+\.\s|\|)")


def _items(first_line: int, text: str):
    """(line number, text) per prose item of a block: a table row, a list item (with its
    continuation lines) or the whole paragraph."""
    items: list[list] = []
    for k, line in enumerate(text.splitlines()):
        if not items or _ITEM_START.match(line) or items[-1][1].lstrip().startswith("|"):
            items.append([first_line + k, line])
        else:
            items[-1][1] += "\n" + line
    return [(n, t) for n, t in items if not re.fullmatch(r"\s*\|[\s|:-]*", t)]


def _spaced(text: str) -> str:
    return " ".join(text.split())


def quantities(text: str, strict: bool = False) -> list[str]:
    """The numbers of a prose item that state a quantity (see the module docstring)."""
    text = MARKER.sub(" ", text)
    for pattern in _NOT_QUANTITIES:
        text = pattern.sub(" ", text)
    if strict:
        return _NUMBER.findall(text)
    return [m.group(0).strip() for m in _QUANTITY.finditer(text)]


def _test_exists(test: str, file: Path = NUMBERS_TESTS) -> bool:
    return file.is_file() and re.search(rf"^def {re.escape(test)}\(", file.read_text(),
                                        re.M) is not None


def unaccounted(path: Path, page: str, strict: bool = False,
                checked: tuple = CHECKED) -> list[str]:
    """One line per item of ``path`` holding a quantity that is neither dated nor checked."""
    quotes = [_spaced(q) for p, q, _t in checked if p == page]
    problems, marker, section, dated = [], None, None, []  # dated: heading levels
    for kind, line_no, text in _blocks(path.read_text().splitlines()):
        found = MARKER.search(text)
        if kind == "heading":
            level = len(text) - len(text.lstrip("#"))
            dated = [lv for lv in dated if lv < level]
            if DATED_HEADING.search(text):
                dated.append(level)
            elif not (dated or strict) and (numbers := quantities(text.lstrip("#"))):
                problems.append(f"{page}:{line_no}: {', '.join(numbers)} in: {text!r}")
            marker = section = None
            continue
        if found:
            if found.group(1) in ("measured", "history") and not DATED_HEADING.search(
                    found.group(2)):
                problems.append(f"{page}:{line_no}: a {found.group(1)} marker needs its date "
                                f"(YYYY-MM-DD): {found.group(0)}")
            if found.group(1) == "checked":
                target = re.split(r"[\s;,]", found.group(2).strip())[0]
                file, _, test = target.partition("::")
                if not (test and _test_exists(test, ROOT / file)):
                    problems.append(f"{page}:{line_no}: marker names no test: {found.group(0)}")
            if "(to the next heading)" in found.group(2):
                section = found.groups()
            if kind == "text" and not MARKER.sub("", text).strip():
                marker = found.groups()
                continue  # a marker line of its own: it covers the next block
        items = _items(line_no, text) if kind == "text" else []
        if found and (len(items) == 1 or text.lstrip().startswith("<!--")):
            marker = found.groups()  # a paragraph's marker, or one atop a list, covers it
        if kind == "code" or marker or section or dated:
            marker = None
            continue
        if (items and not _ITEM_START.match(items[0][1]) and DATED_ITEM.search(items[0][1])
                and items[0][1].rstrip().endswith(":")):
            # a dated caption covers the list or table after it (in its block or the next)
            marker = ("measured", "a dated caption") if len(items) == 1 else None
            continue
        for item_line, item in items:
            if DATED_ITEM.search(item) or MARKER.search(item):
                continue  # in a list or a table, a marker covers its item
            spaced = _spaced(item)
            for quote in quotes:
                spaced = spaced.replace(quote, " ")
            if numbers := quantities(spaced, strict):
                problems.append(f"{page}:{item_line}: {', '.join(numbers)} in: {spaced[:90]!r}")
    return problems


HOW = ("Each number must be (a) computed: in a generated page or a code block (doctest), "
       "(b) dated: '(measured YYYY-MM-DD)' in the item or a dated heading '... (YYYY-MM-DD)' "
       "over its section, or (c) checked: a test in tests/test_doc_numbers.py that reruns "
       "what the text quotes, registered in tests/test_doc_audit.py CHECKED as (page, quote, "
       "test). Inputs and published values: a '<!-- numbers: inputs|published ... -->' "
       "marker. Or remove the number.")


def test_every_result_number_is_computed_checked_or_dated():
    problems = [p for page in audited_pages()
                for p in unaccounted(ROOT / page, page, strict=page in STRICT)]
    assert not problems, f"{len(problems)} unaccounted numbers:\n" + "\n".join(problems) + \
        "\n" + HOW


def registry_problems(checked=CHECKED) -> list[str]:
    """Registered quotes no longer in their page, naming no test, or holding no number."""
    problems = []
    for page, quote, test in checked:
        if _spaced(quote) not in _spaced((ROOT / page).read_text()):
            problems.append(f"{page}: no longer says {quote!r} (checked by {test})")
        if not _test_exists(test):
            problems.append(f"{page}: {quote!r}: tests/test_doc_numbers.py has no {test}")
        if not quantities(quote, strict=page in STRICT):
            problems.append(f"{page}: {quote!r} holds no number to check")
    return problems


def test_every_registered_quote_is_still_in_its_page_and_checked():
    """A quote that no longer matches its page would silently stop covering a number."""
    problems = registry_problems()
    assert not problems, "\n".join(problems)


def test_a_stale_registry_entry_is_reported():
    test = "test_model_default_evaluation_overheads"
    assert registry_problems((("docs/model.md", "takes 999.9 days", test),)) == [
        "docs/model.md: no longer says 'takes 999.9 days' (checked by " + test + ")"]
    assert "has no test_gone" in registry_problems((("docs/model.md", "150.0 days",
                                                     "test_gone"),))[0]
    assert "no number" in registry_problems((("docs/model.md", "The expected", test),))[0]


def test_the_generated_pages_are_the_fingerprinted_outputs():
    assert {"docs/formulas.md", "docs/columns.md", "docs/cli.md", "docs/validation.md",
            "docs/whole-runs.md"} <= generated_pages()
    assert "README.md" in audited_pages() and "docs/model.md" in audited_pages()


def test_the_audit_finds_an_unmarked_number(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Title 3\n\nIt takes 12.5 s on `h100-sxm` (issue 29, 2026-11-26).\n\n"
                   "<!-- numbers: measured 2026-11-26 on a laptop -->\nIt took 3.1 s.\n\n"
                   "And 4.2 s.\n\n"
                   "## Next\n\n<!-- numbers: history 2026-11-01 (to the next heading) -->\n\n"
                   "Was 9 days.\n\nThen 8 days.\n\n## Last\n\nNow 7 days.\n\n"
                   "```python\n>>> 1 + 41\n42\n```\n")
    problems = unaccounted(doc, "doc.md", strict=True)
    assert len(problems) == 3, problems
    assert "12.5" in problems[0] and "4.2" in problems[1] and "7 in" in problems[2]
    assert problems[0].startswith("doc.md:3:")
    doc.write_text("<!-- numbers: checked tests/test_doc_numbers.py::no_such_test -->\nA 5.\n")
    assert "names no test" in unaccounted(doc, "doc.md", strict=True)[0]
    doc.write_text("<!-- numbers: measured 2026-11 on a laptop -->\nIt took 3.1 s.\n")
    assert "needs its date" in unaccounted(doc, "doc.md")[0]


def test_the_unit_rule_dated_items_headings_and_quotes(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Intro\n\n"
        "Version 1.14.0 of sympy, `--gpus 1024`, H100, TP8, 2026, [x](a/b2.md).\n\n"
        "- The run takes 41.3 days\n  and costs $2.1M.\n- It uses 80 GB (measured 2026-11-26).\n\n"
        "| run | time |\n|---|---|\n| a | 3 s |\n| b | 1.5x |\n\n"
        "## Timings (2026-11-27)\n\nPlan: 17 s.\n\n### Deeper\n\nStill 9 s.\n\n"
        "## Later\n\nSaves 12 % of the cost, as 5 MWh say.\n\n"
        "## Took 9 s\n\nThe \"up to 45 %\" of 2024, then 2048 s.\n")
    problems = unaccounted(doc, "doc.md", checked=(("doc.md", "as 5 MWh say", "t"),))
    assert [p.split(":")[1] for p in problems] == ["5", "11", "12", "24", "26", "28"], problems
    assert "41.3 days" in problems[0] and "$2.1" in problems[0]
    assert problems[4].endswith("'## Took 9 s'") and ": 2048 s in:" in problems[5]
    assert "3 s" in problems[1] and "1.5x" in problems[2]
    assert "12 %" in problems[3] and "5 MWh" not in problems[3]
