"""The column registry (planner/engine/run/columns.py) and everything derived from it.

The golden files under tests/data/columns/ are the JSON and CSV outputs of ``capplan
evaluate`` and ``capplan plan`` captured before the registry existed (commit 8f2dc44);
the registry must reproduce their keys and values.  Regenerate them only for an intended
change of the numbers, from the repository root:
``python -c "from tests.test_columns import write_golden; write_golden()"``.
"""

import csv
import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.engine.run import columns
from planner.engine.run.columns import (
    COLUMNS,
    FINISH,
    GROUPS,
    KERNEL,
    LAYOUT,
    SOURCES,
    UNIT_IN_SI,
    Column,
)

GOLDEN = Path(__file__).parent / "data" / "columns"

#: Every option pinned, so that a changed default elsewhere does not move the numbers.
EVALUATE = ["evaluate", "-m", "llama3-70b", "-H", "h100-sxm", "-n", "1024", "--tp", "8",
            "--pp", "4", "--vp", "1", "--cp", "1", "--ep", "1", "--global-batch", "2048",
            "--micro-batch", "1", "--recompute", "selective", "--zero", "1",
            "--precision", "bf16", "--site", "us-average", "--tokens", "15e12",
            "--checkpoint", "async", "--cost-basis", "cloud", "--reliability", "default"]
EVALUATE_PP = ["evaluate", "-m", "llama2-7b", "-H", "a100-80gb", "-n", "64", "--tp", "2",
               "--pp", "4", "--vp", "2", "--cp", "1", "--ep", "1", "--global-batch", "512",
               "--micro-batch", "2", "--recompute", "full", "--zero", "2",
               "--precision", "bf16", "--site", "us-average", "--tokens", "2e12",
               "--checkpoint", "sync", "--cost-basis", "tco", "--reliability", "default"]
PLAN = ["plan", "-m", "llama2-7b", "--tokens", "2e12", "-H", "h100-sxm", "--min-gpus", "8",
        "--max-gpus", "256", "--deadline-days", "90", "--objective", "cost",
        "--site", "us-average", "--precision", "bf16", "--checkpoint", "async",
        "--cost-basis", "cloud", "--reliability", "default", "--knee-threshold", "0.8"]
CASES = {"evaluate.json": [*EVALUATE, "-f", "json"], "evaluate.csv": [*EVALUATE, "-f", "csv"],
         "evaluate_pp.json": [*EVALUATE_PP, "-f", "json"],
         "plan.json": [*PLAN, "-f", "json"], "plan.csv": [*PLAN, "-f", "csv"]}
#: Not outputs of the model: how long the search took and which build answered.
IGNORED = {"seconds", "version", "catalog_version"}
#: Wide enough for other changes in the last digits (a parameter count differing by one
#: norm vector moves a 70B model's numbers by ~1e-7), narrow enough that a column wired
#: to another quantity, or a unit conversion lost, cannot pass.
RTOL = 1e-6


def run_cli(capsys, args) -> str:
    from planner.cli.main import main

    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


# --------------------------------------------------------------------------- the table


def test_names_are_unique_and_fields_valid():
    names = [c.name for c in COLUMNS]
    assert len(names) == len(set(names))
    keys = [c.key for c in COLUMNS]
    assert len(keys) == len(set(keys))
    for c in COLUMNS:
        assert c.group in GROUPS and c.source in SOURCES, c
        assert c.dtype in ("float", "int", "bool", "str"), c
        assert c.label.strip(), c
        assert (c.unit == "") == (c.dtype in ("str", "bool")), c
        assert bool(c.of) <= (c.source == FINISH), c
        assert c.source != FINISH or c.derivation, c


def test_kernel_columns_are_the_generated_kernels_outputs_in_order():
    from planner.engine.run import _kernel_generated
    from planner.engine.run.model import OUTPUTS

    assert tuple(columns.kernel_outputs()) == _kernel_generated.OUTPUTS
    assert OUTPUTS == columns.kernel_outputs()


def test_the_registry_is_the_run_models_outputs_with_each_derived_column_after_its_anchor():
    from planner.engine.run.model import OUTPUT_COLUMNS

    assert tuple(c for c in COLUMNS if c.source == KERNEL) == OUTPUT_COLUMNS
    assert COLUMNS[:len(columns.LEADING)] == columns.LEADING
    order = [c.name for c in COLUMNS]
    for c in columns.DERIVED:
        assert c.of or c.after, c.name
        assert order.index(c.name) > order.index(c.of or c.after), c.name
    assert len(COLUMNS) == len(columns.LEADING) + len(OUTPUT_COLUMNS) + len(columns.DERIVED)
    with pytest.raises(ValueError, match="anchored on no column: \\['nowhere'\\]"):
        columns._assemble((), OUTPUT_COLUMNS,
                          (Column("x_kwh", "kWh", "energy", "x", source=FINISH, of="nowhere"),))


# Base dimensions and the exponents of every unit the run model's inputs and outputs use.
# FLOPs are counts here: the model derives them from dimensionless sizes.
DIMENSIONS = ("time", "bytes", "money", "energy", "carbon")
UNIT_DIMENSIONS = {"1": {}, "s": {"time": 1}, "h": {"time": 1}, "d": {"time": 1},
                   "B": {"bytes": 1}, "FLOP": {}, "TFLOP": {}, "EFLOP": {}, "USD": {"money": 1},
                   "J": {"energy": 1}, "kWh": {"energy": 1}, "MWh": {"energy": 1},
                   "W": {"energy": 1, "time": -1}, "MW": {"energy": 1, "time": -1},
                   "kW": {"energy": 1, "time": -1}, "month": {"time": 1},
                   "kgCO2e": {"carbon": 1}, "gCO2e": {"carbon": 1}, "tCO2e": {"carbon": 1}}


def exponents(unit: str) -> dict[str, int]:
    """Dimension exponents of a unit written ``num`` or ``num/den``; a space multiplies
    (``kgCO2e s``)."""
    num, _, den = unit.partition("/")
    out = dict.fromkeys(DIMENSIONS, 0)
    for part, sign in ((num, 1), (den, -1)):
        for factor in part.split() or ["1"]:
            for dim, e in UNIT_DIMENSIONS[factor].items():
                out[dim] += sign * e
    return out


#: (dimension, output) pairs whose scaling is known to break, and why.  Neither is a unit
#: error of the column: the inputs carry a hidden unit.
KNOWN_HIDDEN_UNITS = {
    ("time", "cost_tco_usd"): "opex_fraction_per_year is a rate per year declared '1'",
    ("bytes", "activation_bytes"): "activation bytes per element are constants of the "
                                   "formula (Korthikanti et al. 2022), not an input",
    ("bytes", "memory_per_gpu_bytes"): "contains activation_bytes",
}


@pytest.fixture(scope="module")
def one_layout(catalog):
    from planner.engine.layouts.evaluator import evaluate
    from planner.engine.run.model import INPUTS

    _, x = evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=1024,
                    tp=8, pp=4, tokens=15e12, return_inputs=True)
    return {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in x.items() if k in INPUTS}


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_kernel_units_scale_with_the_inputs_units(one_layout, dimension):
    """Measure every input of one dimension in a unit 7x smaller: each output must change by
    7**(its unit's exponent).  The declared units of kernel and inputs must agree."""
    from planner.engine.run.kernel_run import evaluate_inputs
    from planner.engine.run.model import INPUTS

    factor = 7.0
    scaled = {k: v * factor ** exponents(INPUTS[k][0])[dimension] for k, v in one_layout.items()}
    before, after = evaluate_inputs(one_layout), evaluate_inputs(scaled)
    wrong = set()
    for name, unit in columns.kernel_outputs().items():
        want = before[name] * factor ** exponents(unit)[dimension]
        if not np.allclose(after[name], want, rtol=1e-9, atol=0):
            wrong.add(name)
    assert wrong <= {n for d, n in KNOWN_HIDDEN_UNITS if d == dimension}


def test_conversions_keep_the_dimension_and_follow_their_source():
    position = {c.name: i for i, c in enumerate(COLUMNS)}
    conversions = columns.conversions()
    assert {n for n, _, _ in conversions} == {c.name for c in COLUMNS if c.of}
    for name, of, divisor in conversions:
        c, source = columns.column(name), columns.column(of)
        assert exponents(c.unit) == exponents(source.unit), name
        assert position[of] < position[name], f"{name} is computed before its source {of}"
        assert divisor == UNIT_IN_SI[c.unit] / UNIT_IN_SI[source.unit]
    assert dict((n, d) for n, _, d in conversions)["wall_days"] == 86_400.0
    assert dict((n, d) for n, _, d in conversions)["energy_mwh"] == 1_000.0


def test_docs_columns_md_is_up_to_date():
    from planner.codegen.column_docs import DOC, render_columns_markdown

    assert DOC.read_text() == render_columns_markdown(), (
        "docs/columns.md is stale; run: python -m planner.codegen --only columns")
    for c in COLUMNS:
        assert f"| `{c.name}` |" in DOC.read_text()


# --------------------------------------------------------------------------- what derives


def design_space(catalog, model: str, hardware: str, max_gpus: int, **overrides) -> dict:
    """Every layout the search enumerates for ``model`` on ``hardware`` up to ``max_gpus``,
    evaluated at once: the kernel inputs and the evaluator's outputs (``finish`` included)."""
    from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
    from planner.engine.run.kernel_run import evaluate_inputs
    from planner.engine.run.run_inputs import RunChoices, base_inputs

    x = base_inputs(catalog, RunChoices(model=model, hardware=hardware, tokens=1e12))
    x.update(overrides)
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]),
        options=SpaceOptions(min_gpus=8, max_gpus=max_gpus))
    inputs = {**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                  layers=x["layers"])}
    return evaluate_inputs(inputs)


@pytest.fixture(scope="module")
def spaces(catalog):
    """A dense model (TP, PP, VP, DP, recompute, ZeRO) and a MoE model at 32k context (EP,
    CP; CP exchange not hidden, so that it shows): thousands of layouts each."""
    dense = design_space(catalog, "llama3-70b", "h100-sxm", 1024)
    moe = design_space(catalog, "mixtral-8x7b", "h100-sxm", 512, seq_len=32768.0,
                       cp_overlap=0.0)
    return dense, moe


def test_step_time_terms_sum_to_the_step_time(spaces):
    terms = columns.step_time_terms()
    assert terms == tuple(key for _, key in columns.step_parts())
    for out in spaces:
        parts = np.array([out[t] for t in terms])
        assert parts.shape[1] > 1000
        assert np.all(parts >= 0)
        np.testing.assert_allclose(parts.sum(axis=0), out["step_time_s"], rtol=1e-12)
    moe = spaces[1]
    assert (moe["ep_comm_s"] > 0).any() and (moe["cp_comm_s"] > 0).any()


def test_memory_terms_sum_to_the_memory_per_gpu(spaces):
    for out in spaces:
        parts = np.array([out[t] for t in columns.memory_terms()])
        np.testing.assert_allclose(parts.sum(axis=0), out["memory_per_gpu_bytes"], rtol=1e-12)
        np.testing.assert_array_equal(out["largest_memory_term_index"], parts.argmax(axis=0))


def test_every_step_part_has_a_label_and_its_own_colour():
    colours = columns.part_colours()
    for label, key in columns.step_parts():
        assert label and key in columns.step_time_terms()
        assert label in colours, label
    assert colours["host-bound launches"] == columns.column("launch_s").colour
    assert len(set(colours.values())) == len(colours), "two parts share a colour"
    assert all(0 <= c < 20 for c in colours.values())  # tab20


def test_plotted_parts_sum_to_the_step_and_wall_time(catalog):
    from planner.engine.search.optimize import plan
    from planner.report import plot
    from planner.report.tables import time_breakdown

    result = plan(model="llama2-7b", tokens=2e12, hardware=["h100-sxm"], max_gpus=256,
                  catalog=catalog)
    rows = plot.breakdown_rows(result)
    assert rows
    colours = columns.part_colours()
    for _, row, step, run in rows:
        assert set(step) == {label for label, _ in columns.step_parts()}
        assert sum(step.values()) == pytest.approx(row["step_time_s"], rel=1e-12)
        assert set(time_breakdown(row)) <= set(colours)
        assert sum(run.values()) == pytest.approx(row["wall_time_s"], rel=1e-9)


def test_evaluator_returns_every_engine_column_and_conversions_are_exact(spaces):
    from planner.engine.layouts.space import LAYOUT_COLUMNS

    for out in spaces:
        computed = {c.name for c in COLUMNS if c.source in (KERNEL, FINISH)}
        assert computed - {"largest_memory_term"} <= set(out)  # named by evaluate()
        for name, of, divisor in columns.conversions():
            np.testing.assert_array_equal(out[name], out[of] / divisor)
    assert set(columns.names(source=LAYOUT)) == set(LAYOUT_COLUMNS)


def test_evaluate_frame_names_the_largest_memory_term(catalog):
    from planner.engine.layouts.evaluator import evaluate

    frame = evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm",
                     gpus=np.array([64, 1024]), tp=8, pp=np.array([8, 1]), zero=0)
    engine = {c.name for c in COLUMNS if c.source in (KERNEL, FINISH, LAYOUT)}
    assert engine <= set(frame.columns)
    assert set(frame["largest_memory_term"]) <= set(columns.memory_terms())


def test_frontier_keeps_the_kept_columns(catalog):
    from planner.engine.search.optimize import plan

    result = plan(model="llama2-7b", tokens=2e12, hardware=["h100-sxm"], max_gpus=64,
                  catalog=catalog)
    assert list(result.frontier.columns) == ["hardware", *columns.kept(), "feasible"]
    assert {c.name for c in columns.plan_summary()} <= set(result.frontier.columns)


# --------------------------------------------------------------------------- outputs


def _compare(got, want, path=""):
    """``got`` holds every key of ``want`` (new columns may be added) with equal values."""
    if isinstance(want, dict):
        assert isinstance(got, dict), path
        missing = [k for k in want if k not in got and k not in IGNORED]
        assert not missing, f"{path}: keys lost: {missing}"
        for k in want:
            if k not in IGNORED:
                _compare(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _compare(g, w, f"{path}[{i}]")
    elif isinstance(want, bool) or want is None or isinstance(want, str):
        assert got == want, f"{path}: {got!r} != {want!r}"
    else:
        assert isinstance(got, int | float) and not isinstance(got, bool), path
        assert got == pytest.approx(want, rel=RTOL) or (math.isnan(got) and math.isnan(want)), \
            f"{path}: {got!r} != {want!r}"


def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def _csv_value(text: str):
    try:
        return float(text)
    except ValueError:
        return text


@pytest.mark.parametrize("name", CASES)
def test_outputs_match_the_branch_start(capsys, name):
    out = run_cli(capsys, CASES[name])
    want_text = (GOLDEN / name).read_text()
    if name.endswith(".json"):
        _compare(json.loads(out), json.loads(want_text))
        return
    got, want = _csv_rows(out), _csv_rows(want_text)
    if "quantity" in want[0]:  # evaluate: one quantity per row, in the registry's order
        got = {r["quantity"]: _csv_value(r["value"]) for r in got}
        want = {r["quantity"]: _csv_value(r["value"]) for r in want}
    else:
        got = [{k: _csv_value(v) for k, v in r.items()} for r in got]
        want = [{k: _csv_value(v) for k, v in r.items()} for r in want]
    _compare(got, want)


def test_evaluate_json_lists_the_registry_summary_and_breakdowns(capsys):
    data = json.loads(run_cli(capsys, [*EVALUATE, "-f", "json"]))
    summary = [c.key for c in columns.evaluate_summary()]
    assert list(data)[:len(summary)] == summary
    assert list(data["breakdown"]) == list(columns.step_time_terms())
    assert list(data["memory_breakdown"]) == list(columns.memory_terms())
    assert isinstance(data["fits"], bool)


def test_a_column_added_to_the_registry_alone_appears_in_evaluate_json(capsys, monkeypatch):
    wall_hours = Column("wall_hours", "h", "time", "wall time", source=FINISH, of="wall_time_s",
                        derivation="wall_time_s converted to h", evaluate=True)
    monkeypatch.setattr(columns, "COLUMNS", (*COLUMNS, wall_hours))
    data = json.loads(run_cli(capsys, [*EVALUATE, "-f", "json"]))
    assert data["wall_hours"] == pytest.approx(data["wall_time_s"] / 3600, rel=1e-15)
    rows = _csv_rows(run_cli(capsys, [*EVALUATE, "-f", "csv"]))
    assert "wall_hours" in {r["quantity"] for r in rows}


def test_a_step_part_added_to_the_registry_alone_is_in_the_breakdown(capsys, monkeypatch):
    # an existing output shown a second time as a part: the breakdown then over-counts,
    # which is what this test wants to see (the payload follows the registry alone)
    extra = Column("compute_again_s", "s", "step-time breakdown", "compute again",
                   source=FINISH, of="compute_s", derivation="compute_s again", colour=19)
    monkeypatch.setattr(columns, "COLUMNS", (*COLUMNS, extra))
    data = json.loads(run_cli(capsys, [*EVALUATE, "-f", "json"]))
    assert data["breakdown"]["compute_again_s"] == data["breakdown"]["compute_s"]
    assert "compute again" in columns.part_colours()


def write_golden() -> None:  # pragma: no cover - run by hand, see the module docstring
    """Rewrite the golden files from the code as it is (only for an intended change)."""
    import contextlib

    from planner.cli.main import main

    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, args in CASES.items():
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(args) == 0
        (GOLDEN / name).write_text(buffer.getvalue())
        print(f"wrote {GOLDEN / name}", file=sys.stderr)

