"""The compiled kernel (planner.engine.native): the generated kernel's statements in C give
numpy's outputs to rounding, fall back to numpy where they cannot be built, and never
change what a plan chooses."""

from __future__ import annotations

import ast
import os
import shutil

import numpy as np
import pytest
from spaces import space_inputs

from planner.engine import evaluator, native
from planner.engine.evaluator import evaluate_columns, evaluate_inputs
from planner.engine.kernel import partial_kernel_tree, split_kernel_trees
from planner.errors import CapplanError

needs_compiler = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None,
                                    reason="no C compiler")

#: Every output within this relative difference of numpy's: the C code does the same
#: operations in the same order; only exp/log/pow (glibc's libmvec against numpy's own
#: SIMD loops) may differ in the last bits, which a few outputs amplify - the waste
#: fraction (1 - e^-x for small x) to ~2e-11 on the blocks below.
RTOL = 1e-10


def _close(compiled: dict, numpy_out: dict):
    assert compiled.keys() == numpy_out.keys()
    for name in numpy_out:
        c, r = np.asarray(compiled[name]), np.asarray(numpy_out[name])
        if r.dtype.kind != "f":
            assert (c == r).all(), name
            continue
        assert np.array_equal(np.isnan(c), np.isnan(r)), name
        if name == "launch_s":  # (a^h + b^h)^(1/h) - a: the difference of two near-equal
            # terms, so compared against the step time it is part of
            scale = np.abs(numpy_out["step_time_s"])
            assert np.all(np.abs(c - r) <= 1e-13 * scale), name
            continue
        if name == "waste_fraction":  # 1 - ETTR: compared against the ETTR it complements
            # (small where failures are rare: 0.4 % on one node)
            assert np.all(np.abs(c - r) <= RTOL), name
            continue
        if name == "energy_fault_tolerance_j":  # facility energy minus the ideal run's:
            # near-equal terms where failures are rare (an 8-GPU job fails every ~2 months),
            # so compared against the facility energy it is part of
            scale = np.abs(numpy_out["energy_facility_j"])
            assert np.all(np.abs(c - r) <= RTOL * scale), name
            continue
        np.testing.assert_allclose(c, r, rtol=RTOL, atol=0, equal_nan=True, err_msg=name)


@pytest.fixture
def compiled(monkeypatch):
    """The compiled backend on: a kernel that cannot be compiled is an error."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")


@needs_compiler
@pytest.mark.parametrize("model, hardware, options", [
    ("llama3-70b", "h100-sxm", {"max_gpus": 4096}),
    ("mixtral-8x7b", "gb200", {"max_gpus": 2048, "recompute": ("selective",)}),
    ("deepseek-v3", "b200", {"max_gpus": 2048}),
])
def test_compiled_outputs_match_numpy(catalog, monkeypatch, compiled, model, hardware,
                                      options):
    inputs = space_inputs(catalog, model, hardware, **options)
    key = (tuple(evaluator.OUTPUTS), frozenset(k for k, v in inputs.items() if np.ndim(v)))
    fast = evaluate_inputs(inputs)
    assert evaluator.native_kernel(*key) is not None  # the C kernel ran
    columns = ("memory_per_gpu_bytes", "wall_time_s", "cost_usd", "energy_facility_j", "fits")
    fast_columns = evaluate_columns(inputs, columns)
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    _close(fast, evaluate_inputs(inputs))
    _close(fast_columns, evaluate_columns(inputs, columns))


def _compile_expression(expression: str, names: tuple[str, ...]):
    """A compiled kernel returning one expression of per-row arrays ``names``."""
    tree = ast.parse(f"def kernel({', '.join(names)}):\n    return [{expression}]").body[0]
    function = native.native_kernel(tree, frozenset(names))
    assert function is not None
    return function


@needs_compiler
@pytest.mark.parametrize("expression", [
    "numpy.minimum(a, b)", "numpy.maximum(a, b)", "numpy.minimum(numpy.maximum(a, 1.5), b)",
    "numpy.where(numpy.greater(a, b), a - b, 2 * b)", "numpy.where(a, b, -b)",
    "numpy.greater_equal(a, b) * 3 + 1", "a ** (-1.0)", "a ** 2", "a ** 0.5",
    "a ** b", "numpy.ceil(a * 7 / 3)", "1 / 2 * a + 1 / 3 * b", "-a / b",
])
def test_exact_operations_match_numpy_bit_for_bit(compiled, expression):
    """Arithmetic, min/max (NaN-propagating), where, comparisons, powers and ceil: the
    same IEEE operations, so the same bits, NaN, inf and signed zeros included."""
    special = [0.0, -0.0, 1.0, -2.5, 3.0, 1e300, -1e-300, np.inf, -np.inf, np.nan, 0.5, 7.0]
    a, b = (np.array(v, dtype=float).ravel() for v in np.meshgrid(special, special))
    function = _compile_expression(expression, ("a", "b"))
    with np.errstate(all="ignore"):
        expected = np.broadcast_to(eval(expression, {"numpy": np}, {"a": a, "b": b}),  # noqa: S307
                                   a.shape)
    (got,) = function(len(a), {"a": a, "b": b})
    if expression == "a ** b":  # pow: glibc's against numpy's, to rounding
        np.testing.assert_allclose(got, expected, rtol=1e-15, equal_nan=True)
    else:
        assert np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


@needs_compiler
@pytest.mark.parametrize("function_name", ["exp", "log", "log1p", "expm1", "sqrt"])
def test_math_functions_match_numpy(compiled, function_name):
    x = np.concatenate([np.linspace(-5, 5, 1001), [0.0, -0.0, 1e-300, 1e300, np.inf,
                                                    -np.inf, np.nan, -1.0]])
    (got,) = _compile_expression(f"numpy.{function_name}(a)", ("a",))(len(x), {"a": x})
    with np.errstate(all="ignore"):
        expected = getattr(np, function_name)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0, equal_nan=True)


@needs_compiler
def test_scalars_and_table_values(compiled):
    """Scalars are passed once, per-row values from arrays, shared values through each
    row's index into the table."""
    tree = ast.parse("def kernel(a, s, t):\n    x0 = s * 2\n    return [a * x0 + t, s + 1]").body[0]
    function = native.native_kernel(tree, frozenset({"a", "t"}), ("t",))
    table = np.array([[10.0], [20.0], [30.0]])
    index = np.array([2, 0, 0, 1])
    out = function(4, {"a": np.arange(4.0), "s": 0.5}, index, table)
    assert np.array_equal(out[0], np.arange(4.0) * 1.0 + table[index, 0])
    assert np.array_equal(out[1], np.full(4, 1.5))


def test_untranslatable_trees_are_left_to_numpy(compiled):
    """The prelude calls the Poisson CDF: not translated (numpy runs it)."""
    trees = split_kernel_trees(("wall_time_s",), frozenset({"gpus", "tp", "spare_nodes"}))
    assert trees is not None
    prelude = trees[0]
    with pytest.raises(native.Untranslatable):
        native.c_source(prelude, frozenset({"gpus", "spare_nodes"}), ())
    assert native.native_kernel(prelude, frozenset({"gpus", "spare_nodes"})) is None


def test_translation_leaves_the_tree_unchanged():
    tree = partial_kernel_tree(("memory_per_gpu_bytes",))
    before = ast.dump(tree)
    native.c_source(tree, frozenset({"tp", "pp", "dp"}), ())
    assert ast.dump(tree) == before


def test_numpy_mode_turns_the_backend_off(monkeypatch):
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    assert evaluator.native_kernel(("memory_per_gpu_bytes",), frozenset({"tp"})) is None
    monkeypatch.setenv("CAPPLAN_KERNEL", "nmpy")
    with pytest.raises(CapplanError, match="unknown CAPPLAN_KERNEL value 'nmpy'; did you mean: numpy"):
        native.mode()
    monkeypatch.setenv("CAPPLAN_KERNEL", "xyz")
    with pytest.raises(CapplanError, match="unknown CAPPLAN_KERNEL value 'xyz'; allowed: auto, c, numpy"):
        native.mode()


def test_without_a_compiler_auto_falls_back_and_c_mode_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_LOADED", {})
    monkeypatch.setenv("CAPPLAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "capplan-no-such-compiler")
    tree = partial_kernel_tree(("memory_per_gpu_bytes",))
    monkeypatch.setenv("CAPPLAN_KERNEL", "auto")
    assert native.native_kernel(tree, frozenset({"tp"})) is None
    monkeypatch.setattr(native, "_LOADED", {})
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    with pytest.raises(RuntimeError, match="no C compiler 'capplan-no-such-compiler'"):
        native.native_kernel(tree, frozenset({"tp"}))


@needs_compiler
def test_a_failed_compile_is_remembered(monkeypatch, tmp_path):
    """A source the compiler rejects leaves a marker, and is not compiled again."""
    monkeypatch.setenv("CAPPLAN_CACHE_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match=" failed: "):
        native._compiled("this is not C", ("-lm",))
    assert len(list(tmp_path.glob("*.failed"))) == 1
    monkeypatch.setenv("PATH", "")  # a second try would not find the compiler
    with pytest.raises(RuntimeError, match=" failed: "):
        native._compiled("this is not C", ("-lm",))


@needs_compiler
def test_a_candidates_values_do_not_depend_on_its_call(catalog, compiled):
    """The same bits for a candidate evaluated in a block, alone, or among a few at any
    offset (the vectorised loop and its padded tail: no scalar remainder loop), as a
    search's kept rows are (``compiled=True``: small calls run numpy otherwise)."""
    inputs = space_inputs(catalog, "mixtral-8x7b", "h200", max_gpus=1024)
    block = evaluate_inputs(inputs)
    rng = np.random.default_rng(7)
    n = len(inputs["gpus"])
    for size in (1, 3, 15, 16, 17, 64, 101):
        rows = np.sort(rng.choice(n, size=size, replace=False))
        few = evaluate_inputs({k: v[rows] if np.ndim(v) else v for k, v in inputs.items()},
                              compiled=True)
        for name, values in few.items():
            assert np.array_equal(values, np.asarray(block[name])[rows], equal_nan=True), name


@needs_compiler
def test_small_calls_run_numpy_unless_asked(catalog, monkeypatch):
    """A one-shot query's few candidates need no compiled kernel built."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "auto")
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=1024)
    rows = np.arange(evaluator.NATIVE_MIN - 1)
    few = {k: v[rows] if np.ndim(v) else v for k, v in inputs.items()}
    built = []
    monkeypatch.setattr(evaluator, "native_kernel", lambda *a: built.append(a))
    evaluate_inputs(few)
    assert built == []
    evaluate_inputs(few, compiled=True)
    assert len(built) == 1


@needs_compiler
def test_cache_off_builds_in_a_folder_of_the_process(monkeypatch):
    monkeypatch.setattr(native, "_LOADED", {})
    monkeypatch.setattr(native, "_PROCESS_DIR", None)
    monkeypatch.setenv("CAPPLAN_CACHE_DIR", "off")
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    tree = partial_kernel_tree(("memory_per_gpu_bytes",))
    assert native.native_kernel(tree, frozenset({"tp"})) is not None
    assert native._PROCESS_DIR is not None
    assert [p.suffix for p in native._PROCESS_DIR.iterdir()] == [".so"]


def test_an_unwritable_cache_falls_back_to_numpy(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_LOADED", {})
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("CAPPLAN_CACHE_DIR", str(blocked / "capplan"))
    monkeypatch.setenv("CAPPLAN_KERNEL", "auto")
    assert native.native_kernel(partial_kernel_tree(("memory_per_gpu_bytes",)),
                                frozenset({"tp"})) is None


@needs_compiler
def test_a_table_past_the_32_bit_index_runs_numpy(catalog, compiled, monkeypatch):
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=1024)
    fast = evaluate_inputs(inputs)
    monkeypatch.setattr(evaluator, "TABLE_LIMIT", 1)
    capped = evaluate_inputs(inputs)
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    assert all(np.array_equal(capped[k], v, equal_nan=True)
               for k, v in evaluate_inputs(inputs).items())
    _close(fast, capped)
