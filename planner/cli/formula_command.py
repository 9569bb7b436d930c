"""``capplan formula list|show|eval``: the closed-form models, one at a time.

Module-level imports stay light (typer only); the registry and sympy load
inside the commands.  ``eval`` parses values with ``float()`` only: user text
is never passed to ``eval`` or ``sympify``.
"""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    command_group,
    output_format,
)
from planner.errors import CapplanError, did_you_mean

formula_app = command_group(
    "formula", "List, show (LaTeX, Python, Excel, text) and evaluate the closed-form formulas.")

FORMS = ("text", "latex", "python", "excel")
_FORMAT_HELP = "table | json | csv | markdown."
_OUTPUT_HELP = "Write to FILE ('-' = stdout)."




def _registry() -> dict:
    import formulas

    return formulas.registry()


def _get(name: str):
    registry = _registry()
    if name not in registry:
        raise did_you_mean("formula", name, registry)
    return registry[name]


def _arg_label(a) -> str:
    return f"{a.name} [{a.unit}]" if a.unit else a.name


# -- list --------------------------------------------------------------------------
@formula_app.command("list")
def list_(
    module: str = typer.Option(None, "--module", "-m", help="Only this module (e.g. checkpoint)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
):
    """List the formulas: name, module, result unit, summary, reference."""
    from planner.report.formula_docs import defaults, domain_text
    from planner.report.output import render, write

    format = output_format(format, output)
    registry = _registry()
    if module is not None:
        modules = {f.module for f in registry.values()}
        if module not in modules:
            raise did_you_mean("module", module, modules)
        registry = {n: f for n, f in registry.items() if f.module == module}
    rows = [{"name": f.name, "module": f.module, "result_unit": f.result_unit,
             "summary": f.summary, "reference": f.reference} for f in registry.values()]
    payload = []
    for row, f in zip(rows, registry.values(), strict=True):
        dflt = defaults(f)
        payload.append(dict(row, arguments=[
            {"name": a.name, "unit": a.unit, "domain": domain_text(a.domain),
             "default": dflt.get(a.name)} for a in f.arguments]))
    title = f"{len(rows)} formulas" + (f" in module {module}" if module else "")
    write(render(rows, format, title=title, payload=payload), output, force)


# -- show --------------------------------------------------------------------------
def _python_source(f) -> str:
    """The formula's own code (decorator and docstring removed)."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f.func)))
    except (OSError, TypeError, SyntaxError):  # pragma: no cover - source unavailable
        import sympy

        return f"{f.result} = {sympy.pycode(f.expr(), strict=False)}"
    func = tree.body[0]
    func.decorator_list = []
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                             ast.Constant):
        func.body = body[1:] or [ast.Pass()]
    from formulas import ops as _ops

    ops = sorted({n.id for n in ast.walk(func) if isinstance(n, ast.Name)} & set(_ops.__all__))
    header = f"from formulas.ops import {', '.join(ops)}\n\n\n" if ops else ""
    return header + ast.unparse(func)


def _expression(f, form: str) -> str:
    from planner.report.formula_docs import excel_formula, plain_expr

    if form == "latex":
        return f.latex
    if form == "python":
        return _python_source(f)
    if form == "excel":
        return excel_formula(f)
    return f"{f.result} = {plain_expr(f)}"


def _show_text(f, form: str) -> str:
    from planner.report.formula_docs import defaults, domain_text, excel_cells

    dflt = defaults(f)
    cells = excel_cells(f)
    lines = [f"{f.name} ({f.module}): {f.summary}", ""]
    lines += ["  " + line for line in _expression(f, form).splitlines()]
    lines += ["", "Arguments:"]
    width = max(len(a.name) for a in f.arguments) if f.arguments else 0
    for a in f.arguments:
        extra = []
        if form == "excel":
            extra.append(f"cell {cells[a.name]}")
        if form == "latex":
            extra.append(f"symbol {a.latex}")
        if a.name in dflt:
            extra.append(f"default {dflt[a.name]:g}" if isinstance(dflt[a.name], float)
                         else f"default {dflt[a.name]}")
        lines.append(f"  {a.name:<{width}}  [{a.unit}]  {domain_text(a.domain)}"
                     + (f"  ({', '.join(extra)})" if extra else ""))
    lines += [f"Result: {f.result} [{f.result_unit}]", f"Reference: {f.reference}"]
    return "\n".join(lines) + "\n"


@formula_app.command("show")
def show(
    name: str = typer.Argument(..., help="Formula name (see capplan formula list)."),
    as_: str = typer.Option("text", "--as", "-a", help="text | latex | python | excel."),
    format: str = typer.Option(
        "table", "--format", "-f",
        help="table (readable text) | json (every form) | markdown (as in docs/formulas.md) | "
             "csv (the arguments)."),
    output: OutputOption = None,
    force: ForceOption = False,
):
    """Show a formula as text, LaTeX, Python or an Excel formula, with the units of every
    argument and of the result, and its reference."""
    from planner.report.formula_docs import (
        defaults,
        domain_text,
        excel_cells,
        render_formula_markdown,
    )
    from planner.report.output import render, write

    if as_ not in FORMS:
        raise CapplanError(f"unknown form '{as_}'; allowed: {', '.join(FORMS)}")
    format = output_format(format, output)
    f = _get(name)
    dflt = defaults(f)
    cells = excel_cells(f)
    args = [{"name": a.name, "unit": a.unit, "domain": domain_text(a.domain),
             "default": dflt.get(a.name), "symbol": a.latex, "excel_cell": cells[a.name]}
            for a in f.arguments]
    if format == "json":
        payload = {"name": f.name, "module": f.module, "summary": f.summary,
                   "expression": {form: _expression(f, form) for form in FORMS},
                   "arguments": args, "result": f.result, "result_unit": f.result_unit,
                   "reference": f.reference}
        text = render([], "json", payload=payload)
    elif format == "csv":
        text = render(args, "csv")
    elif format == "markdown":
        text = render_formula_markdown(f)
    else:
        text = _show_text(f, as_)
    write(text, output, force)


# -- eval --------------------------------------------------------------------------
def _parse_assignments(f, assignments: list[str]) -> dict[str, float]:
    names = [a.name for a in f.arguments]
    values: dict[str, float] = {}
    for item in assignments:
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or not key:
            raise CapplanError(f"expected ARG=VALUE, got '{item}'")
        if key not in names:
            raise did_you_mean(f"argument of {f.name}", key, names)
        if key in values:
            raise CapplanError(f"{key} given twice")
        try:
            values[key] = float(raw)
        except ValueError:
            raise CapplanError(f"{key}: '{raw}' is not a number (SI units, e.g. 3600 or 1.5e9)"
                               ) from None
    return values


@formula_app.command("eval")
def eval_(
    name: str = typer.Argument(..., help="Formula name (see capplan formula list)."),
    assignments: list[str] = typer.Argument(
        None, help="ARG=VALUE pairs, plain numbers in SI units (see capplan formula show NAME)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
):
    """Evaluate a formula at numeric arguments (SI units); arguments with defaults may be
    omitted."""
    import math

    from planner.report.formula_docs import defaults
    from planner.report.output import render, write

    format = output_format(format, output)
    f = _get(name)
    given = _parse_assignments(f, assignments or [])
    dflt = defaults(f)
    missing = [a for a in f.arguments if a.name not in given and a.name not in dflt]
    if missing:
        required = [_arg_label(a) for a in f.arguments if a.name not in dflt]
        raise CapplanError(
            f"{f.name}: missing {', '.join(_arg_label(a) for a in missing)}; "
            f"required: {', '.join(required)}")
    inputs = {a.name: given.get(a.name, dflt.get(a.name)) for a in f.arguments}
    try:
        result = float(f(**inputs))
    except ValueError as exc:
        raise CapplanError(str(exc).replace("\n", " ")) from None
    units = {a.name: a.unit for a in f.arguments}
    if format == "json":
        payload = {"formula": f.name, "inputs": inputs, "result": result, "unit": f.result_unit}
        write(render([], "json", payload=payload), output, force)
        return
    table = format in ("table", "markdown")

    def shown(value):
        if not table:
            return value
        return f"{value:.10g}" if math.isfinite(value) else str(value)

    rows = [{"quantity": n, "value": shown(float(v)), "unit": units[n],
             "source": "given" if n in given else "default"} for n, v in inputs.items()]
    rows.append({"quantity": f.result, "value": shown(result), "unit": f.result_unit,
                 "source": "result"})
    title = f"{f.name} = {result:.10g} {f.result_unit}".rstrip()
    write(render(rows, format, title=title), output, force)
