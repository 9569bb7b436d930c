"""planner.report.excel: sympy -> Excel printer, checked against two spreadsheet engines.

Engines: pycel (pure Python, ``pip install pycel``; NORM.S.INV and POISSON.DIST, which
pycel lacks, are supplied by :func:`norm_s_inv` and :func:`poisson_dist` below from
the standard library, not scipy) and LibreOffice Calc headless (``apt-get install libreoffice-calc-nogui``),
whose formula semantics (unary minus before ``^``, left-associative ``^``)
follow Excel's.  Locally a missing engine skips its tests with the reason;
under CI (``CI=true``) it fails them.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import subprocess

import numpy as np
import pytest
import sympy

import formulas
from planner.report.excel import (
    ExcelPrintError,
    ExcelUnsupportedError,
    harmonic_approximation,
    to_excel,
    xlsx_formula,
)

REGISTRY = formulas.registry()
POINTS_PER_FORMULA = 4
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _engine_missing(reason: str):
    if IN_CI:
        pytest.fail(f"{reason} (required under CI=true)")
    pytest.skip(reason)


def norm_s_inv(p):
    """NORM.S.INV for pycel (plugin found by name), from the standard library."""
    return statistics.NormalDist().inv_cdf(float(p))


# -- random valid points ------------------------------------------------------------
def poisson_dist(k, mu, cumulative):
    """POISSON.DIST for pycel (plugin found by name), summed in the standard library."""
    assert cumulative
    k = math.floor(k)
    return sum(math.exp(j * math.log(mu) - mu - math.lgamma(j + 1)) if mu > 0 else float(j == 0)
               for j in range(k + 1))


def _draw(domain: str, rng, integer: bool) -> float:
    if domain == ">0":
        value = float(np.exp(rng.uniform(np.log(0.1), np.log(20.0))))
        return max(1.0, round(value)) if integer else value
    if domain == ">=0":
        value = float(rng.uniform(0.0, 20.0))
        return float(round(value)) if integer else value
    if domain == ">=1":
        value = float(rng.uniform(1.0, 50.0))
        return float(round(value)) if integer else value
    if domain == "real":
        return float(rng.uniform(-5.0, 5.0))
    low, high = float(domain[1:-1].split(",")[0]), float(domain[1:-1].split(",")[1])
    if integer and domain == "[0,1]":
        return float(rng.integers(0, 2))
    value = float(rng.uniform(low, high))
    return min(max(value, 1e-6), 1 - 1e-6) if domain != "[0,1]" else value


def valid_points(f, count: int, seed: int):
    """``count`` random points in ``f``'s domain with a finite numeric result."""
    rng = np.random.default_rng(seed)
    points = []
    for attempt in range(50 * count):
        point = {a.name: _draw(a.domain, rng, integer=attempt % 2 == 1) for a in f.arguments}
        try:
            value = float(f(**point))
        except ZeroDivisionError:  # a singular point (whole numbers can hit one): skip it
            continue
        if math.isfinite(value):
            points.append((point, value))
            if len(points) == count:
                return points
    raise AssertionError(f"{f.name}: no finite numeric result at random valid points")


def plain_expr(f):
    """The expression built from assumption-free symbols (as ``capplan formula show`` prints)."""
    return f.func(**{a.name: sympy.Symbol(a.name) for a in f.arguments})


def _cases():
    """(formula name, variant, point, expected value, Excel formula on cells B..)."""
    cases = []
    for seed, (name, f) in enumerate(REGISTRY.items()):
        cells = {a.name: f"{_col(i + 2)}{{row}}" for i, a in enumerate(f.arguments)}
        for variant, expr in (("assumptions", f.expr()), ("plain", plain_expr(f))):
            for point, value in valid_points(f, POINTS_PER_FORMULA, seed):
                cases.append((name, variant, point, value, to_excel(expr, cells)))
    return cases


def _col(index: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(index)


def _workbook(path, cases):
    """Row r: A = formula, B.. = inputs in argument order."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "f"
    for row, (name, _variant, point, _value, excel) in enumerate(cases, start=1):
        for i, a in enumerate(REGISTRY[name].arguments):
            ws.cell(row=row, column=i + 2, value=point[a.name])
        ws.cell(row=row, column=1, value=xlsx_formula(excel.format(row=row)))
    wb.save(path)


def _assert_all_close(cases, got):
    bad = []
    for (name, variant, point, value, excel), result in zip(cases, got, strict=True):
        ok = isinstance(result, int | float) and not isinstance(result, bool) and math.isclose(
            float(result), value, rel_tol=1e-9, abs_tol=1e-12)
        if not ok:
            bad.append(f"{name} [{variant}] {point}: formula {value!r}, Excel {result!r} "
                       f"for {excel}")
    assert not bad, f"{len(bad)} of {len(cases)} mismatches:\n" + "\n".join(bad[:20])


@pytest.fixture(scope="module")
def cases():
    return _cases()


def test_every_registered_formula_prints(cases):
    assert {c[0] for c in cases} == set(REGISTRY)
    for name, _v, _p, _value, excel in cases:
        assert excel.startswith("="), name
        assert "**" not in excel and "sqrt(" not in excel and "erfinv" not in excel, excel


def test_registry_matches_pycel(cases, tmp_path):
    try:
        from pycel import ExcelCompiler
    except ImportError:
        _engine_missing("pycel is not installed (pip install 'pycel>=1.0b30')")
    path = tmp_path / "formulas.xlsx"
    _workbook(path, cases)
    compiler = ExcelCompiler(filename=str(path), plugins=[__name__])
    got = [compiler.evaluate(f"f!A{row}") for row in range(1, len(cases) + 1)]
    _assert_all_close(cases, got)


def _soffice():
    return shutil.which("soffice") or shutil.which("libreoffice")


def test_registry_matches_libreoffice(cases, tmp_path):
    import openpyxl

    soffice = _soffice()
    if soffice is None:
        _engine_missing("LibreOffice is not installed (apt-get install libreoffice-calc-nogui)")
    source, out = tmp_path / "formulas.xlsx", tmp_path / "out"
    _workbook(source, cases)
    subprocess.run(
        [soffice, f"-env:UserInstallation=file://{tmp_path / 'profile'}", "--headless",
         "--calc", "--convert-to", "xlsx", "--outdir", str(out), str(source)],
        check=True, capture_output=True, timeout=300)
    ws = openpyxl.load_workbook(out / "formulas.xlsx", data_only=True)["f"]
    got = [ws.cell(row=row, column=1).value for row in range(1, len(cases) + 1)]
    _assert_all_close(cases, got)


# -- printer unit tests -----------------------------------------------------------------
x, y, z = sympy.symbols("x y z", positive=True)
W = sympy.Symbol("w", real=True)
CELLS = {"x": "B2", "y": "B3", "z": "B4"}


def xl(expr, cells=CELLS):
    return to_excel(expr, cells)


@pytest.mark.parametrize("expr, expected", [
    (sympy.sqrt(2 * x * y), "=SQRT(2*B2*B3)"),
    (sympy.sqrt(2 * sympy.Symbol("x") * sympy.Symbol("y")), "=SQRT(2*B2*B3)"),
    (sympy.sqrt(x) / sympy.sqrt(2 * y), "=SQRT(2*B2)/(2*SQRT(B3))"),
    (x + y, "=B2 + B3"),
    (x - y, "=B2 - B3"),
    (x * y / z, "=B2*B3/B4"),
    (x / (y * z), "=B2/(B3*B4)"),
    (1 / x, "=1/B2"),
    (x**-2, "=1/B2^2"),
    (x / sympy.sqrt(y), "=B2/SQRT(B3)"),
    (1 / sympy.sqrt(x), "=1/SQRT(B2)"),
    (x**y, "=B2^B3"),
    (x**(y**z), "=B2^(B3^B4)"),
    ((x**y)**sympy.Symbol("w"), None),
    (-x**2, "=-(B2^2)"),
    (-x**2 * y, "=-(B2^2*B3)"),
    (y - x**2, "=B3 - B2^2"),
    (-3 * x**2, "=-3*B2^2"),
    (-x * y, "=-B2*B3"),
    ((x + 1)**2, "=(B2 + 1)^2"),
    (x**sympy.Rational(1, 3), "=B2^(1/3)"),
    (x**-y, "=B2^(-B3)"),
    (sympy.Rational(3, 4) * x, "=3*B2/4"),
    (sympy.Rational(1, 2), "=1/2"),
    (sympy.Float(0.1) * x, "=0.1*B2"),
    (sympy.Float(1 / 3) * x, "=0.3333333333333333*B2"),
    (sympy.Float(2.5e-17) * x, "=2.5e-17*B2"),
    (sympy.exp(x), "=EXP(B2)"),
    (sympy.log(x), "=LN(B2)"),
    (sympy.log(x, 2), "=LN(B2)/LN(2)"),
    (sympy.Max(x, y, z), "=MAX(B2, B3, B4)"),
    (sympy.Min(x, 1), "=MIN(1, B2)"),
    (sympy.floor(x), "=INT(B2)"),
    (sympy.ceiling(x), "=CEILING.MATH(B2)"),
    (sympy.erf(x), "=ERF(B2)"),
    (sympy.erfc(x), "=1 - ERF(B2)"),
    (sympy.sqrt(2) * sympy.erfinv(2 * x - 1), "=NORM.S.INV(B2)"),
    (sympy.erfinv(x), "=SQRT(2)*NORM.S.INV(B2/2 + 1/2)/2"),
    (sympy.pi * x, "=PI()*B2"),
    (sympy.E * x, "=EXP(1)*B2"),
    (sympy.Abs(W - 1), "=ABS(B5 - 1)"),
    (sympy.sign(W), "=SIGN(B5)"),
    (sympy.Piecewise((x, y > 1), (z, True)), "=IF(B3>1, B2, B4)"),
    (sympy.Piecewise((x, y > 1), (z, W < 0), (1, True)), "=IF(B3>1, B2, IF(B5<0, B4, 1))"),
    (sympy.Piecewise((x, y >= 1)), "=IF(B3>=1, B2, NA())"),
    (sympy.Piecewise((x, sympy.Eq(y, 2)), (z, sympy.Ne(y, 3))), "=IF(B3=2, B2, IF(B3<>3, B4, NA()))"),
    (sympy.Piecewise((x, sympy.And(y > 1, z <= 2)), (0, True)), "=IF(AND(B4<=2, B3>1), B2, 0)"),
    (sympy.Piecewise((x, sympy.Or(y > 1, sympy.Not(z < 2))), (0, True)), None),
    (sympy.Integer(7), "=7"),
    (sympy.atan2(W, sympy.Symbol("x")), "=ATAN2(B2, B5)"),
])
def test_printer_strings(expr, expected):
    cells = dict(CELLS, w="B5")
    text = xl(expr, cells)
    if expected is not None:
        assert text == expected
    assert text.startswith("=")


def test_harmonic_is_a_stated_approximation():
    n = sympy.Symbol("n", positive=True)
    text = xl(sympy.harmonic(n), {"n": "A1"})
    assert text.startswith("=LN(A1 + 6) + 0.5772156649015329")
    import mpmath

    approx = sympy.lambdify(n, harmonic_approximation(n), "mpmath")
    for value in [0.0, 0.3, 1.0, 1.5, 2.0, 7.0, 100.0, 1e6]:
        error = abs(approx(mpmath.mpf(value)) - mpmath.harmonic(mpmath.mpf(value)))
        assert error < (3e-11 if value >= 1 else 2e-10), value
    with pytest.raises(ExcelUnsupportedError, match="generalised harmonic"):
        xl(sympy.harmonic(n, 2), {"n": "A1"})


def test_symbol_lookup_by_symbol_then_name():
    assert xl(x + y, {x: "$A$1", "y": "rate"}) == "=$A$1 + rate"
    assert xl(sympy.Symbol("x") * 2, {"x": "Inputs!B2"}) == "=2*Inputs!B2"


@pytest.mark.parametrize("expr, error, match", [
    (sympy.gamma(x), ExcelUnsupportedError, "gamma has no Excel equivalent"),
    (sympy.Integral(x, x), ExcelUnsupportedError, "Integral"),
    (sympy.I * x, ExcelUnsupportedError, "ImaginaryUnit"),
    (sympy.zeta(x), ExcelUnsupportedError, "zeta"),
    (sympy.oo * x, ExcelPrintError, "infinity"),
    (sympy.nan, ExcelPrintError, "NaN"),
    (x + sympy.Symbol("q"), ExcelPrintError, "no cell reference for symbol 'q'"),
])
def test_unsupported_raise(expr, error, match):
    with pytest.raises(error, match=match):
        xl(expr)


def test_unsupported_is_not_implemented_error():
    with pytest.raises(NotImplementedError):
        xl(sympy.besselj(0, x))


def test_too_long_formula_raises():
    expr = sympy.Add(*(sympy.Symbol(f"s{i}") for i in range(3000)))
    with pytest.raises(ExcelPrintError, match="8192"):
        to_excel(expr, {f"s{i}": f"AB{i + 1000}" for i in range(3000)})


def test_xlsx_prefix():
    assert xlsx_formula("=CEILING.MATH(A1)+NORM.S.INV(B2)+INT(C3)") == (
        "=_xlfn.CEILING.MATH(A1)+_xlfn.NORM.S.INV(B2)+INT(C3)")


def test_no_python_syntax_leaks_for_any_formula():
    for name, f in REGISTRY.items():
        text = to_excel(f.expr(), {a.name: f"B{i + 2}" for i, a in enumerate(f.arguments)})
        for bad in ("**", "sqrt(", "exp(", "log(", "Max(", "Min(", "Piecewise", "True", "oo"):
            assert bad not in text, (name, text)
