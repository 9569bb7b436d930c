"""Every registered formula is complete (fluids-style cross-cutting checks).

For each formula in ``formulas.registry()``: a reference that cites a DOI, an
arXiv id or a named document; a unit for every argument and for the result; a
numpydoc docstring whose Parameters match the signature exactly, with a
Returns section and a ``.. math::`` block; a symbolic call that returns a
sympy expression, whose lambdify (mpmath, independent of the numpy/scipy
path) equals the numeric call at random valid points (rel 1e-9).
"""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest
import sympy

import formulas

REGISTRY = formulas.registry()
NAMES = sorted(REGISTRY)

DOI = re.compile(r"\b(doi:\s*)?10\.\d{4,9}/\S+|doi\.org/", re.I)
ARXIV = re.compile(r"\barXiv:\s*\d{4}\.\d{4,5}", re.I)
#: A named document: an author-year citation, a standard, a vendor document or a file/URL.
NAMED_DOCUMENT = re.compile(
    r"[A-Z][\w'-]+( et al\.| and [A-Z][\w'-]+)?,? \(?(19|20)\d{2}\b"
    r"|\b(white ?paper|datasheet|data sheet|brochure|specification|handbook|user guide"
    r"|documentation|technical report|standard)\b"
    r"|\b(RFC|ISO(/IEC)?|IEC|IEEE|JEDEC|ASHRAE)\s*\d+"
    r"|\b[\w.-]+/[\w./-]+\.(md|pdf|html?|rst|txt)\b|https?://",
    re.I)


def _sections(doc: str) -> dict[str, list[str]]:
    """numpydoc sections (lower-case title -> lines), plus the text before them as ''."""
    lines = inspect.cleandoc(doc or "").splitlines()
    sections: dict[str, list[str]] = {"": []}
    current = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if (i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}
                and not line.startswith(" ")):
            current = line.strip().lower()
            sections[current] = []
            i += 2
            continue
        sections[current].append(line)
        i += 1
    return sections


def _parameter_names(lines: list[str]) -> list[str]:
    names = []
    for line in lines:
        if line and not line.startswith(" ") and line.strip():
            head = line.split(":")[0]
            names += [n.strip() for n in head.split(",") if n.strip()]
    return names


@pytest.mark.parametrize("name", NAMES)
def test_reference_cites_a_source(name):
    ref = REGISTRY[name].reference
    assert ref and ref.strip(), f"{name}: empty reference"
    assert DOI.search(ref) or ARXIV.search(ref) or NAMED_DOCUMENT.search(ref), (
        f"{name}: reference {ref!r} has no DOI, arXiv id or named document")


@pytest.mark.parametrize("name", NAMES)
def test_units_for_every_argument_and_result(name):
    f = REGISTRY[name]
    missing = [a.name for a in f.arguments if not a.unit]
    assert not missing, f"{name}: no [unit] in the docstring for {missing}"
    assert f.result_unit, f"{name}: no [unit] in the Returns section"
    assert set(f.units) == {a.name for a in f.arguments} | {"return"}


@pytest.mark.parametrize("name", NAMES)
def test_docstring_sections(name):
    f = REGISTRY[name]
    sections = _sections(f.__doc__)
    assert f.summary, f"{name}: no summary line"
    assert "parameters" in sections, f"{name}: no Parameters section"
    assert "returns" in sections, f"{name}: no Returns section"
    documented = _parameter_names(sections["parameters"])
    assert documented == list(f.signature.parameters), (
        f"{name}: Parameters {documented} != signature {list(f.signature.parameters)}")
    assert any(line.strip() for line in sections["returns"]), f"{name}: empty Returns"
    assert ".. math::" in (f.__doc__ or ""), f"{name}: no '.. math::' block"


def _draw(domain: str, rng) -> float:
    if domain == ">0":
        return float(np.exp(rng.uniform(np.log(0.1), np.log(20.0))))
    if domain == ">=0":
        return float(rng.uniform(0.0, 20.0))
    if domain == ">=1":
        return float(rng.uniform(1.0, 50.0))
    if domain == "real":
        return float(rng.uniform(-5.0, 5.0))
    value = float(rng.uniform(0.0, 1.0))
    return min(max(value, 1e-6), 1 - 1e-6) if domain != "[0,1]" else value


@pytest.mark.parametrize("name", NAMES)
def test_symbolic_call_matches_numeric(name):
    f = REGISTRY[name]
    symbols = f.symbols()
    expr = f(**symbols)
    assert isinstance(expr, sympy.Basic), f"{name}: symbolic call returned {type(expr)}"
    assert expr.free_symbols <= set(symbols.values())
    func = sympy.lambdify(list(symbols.values()), expr, modules="mpmath")
    rng = np.random.default_rng(NAMES.index(name))
    checked = 0
    for _ in range(200):
        point = {a.name: _draw(a.domain, rng) for a in f.arguments}
        numeric = float(f(**point))
        if not math.isfinite(numeric):
            continue
        symbolic = float(func(*point.values()))
        assert math.isclose(symbolic, numeric, rel_tol=1e-9, abs_tol=1e-12), (
            f"{name} at {point}: lambdify {symbolic!r} != numeric {numeric!r}")
        checked += 1
        if checked == 3:
            break
    assert checked, f"{name}: no random valid point with a finite result"


def test_registry_is_not_empty_and_modules_known():
    assert len(REGISTRY) >= 9
    assert {f.module for f in REGISTRY.values()} <= set(formulas.DOMAINS)
