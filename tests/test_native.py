"""The compiled backend (planner.engine.run.native, the extension built at install from
planner/engine/run/_native_generated.c): the generated kernel's statements in C give numpy's
outputs to rounding, numpy runs where the extension is missing or stale, nothing is
compiled at run time, and the backend never changes what a plan chooses."""

from __future__ import annotations

import ast
import ctypes
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from spaces import space_inputs

from planner.codegen.c_translate import Untranslatable, c_source
from planner.codegen.native_source import C_PRELUDE, MANIFEST, SOURCE, generate
from planner.engine.run import kernel_run, native
from planner.engine.run.kernel import partial_kernel_tree, split_kernel_trees
from planner.engine.run.kernel_run import evaluate_columns, evaluate_inputs
from planner.errors import CapplanError

ROOT = Path(__file__).resolve().parents[1]
COMPILER = os.environ.get("CC", "cc")
needs_compiler = pytest.mark.skipif(shutil.which(COMPILER) is None, reason="no C compiler")
#: The extension is built by `pip install` wherever a compiler is found; under CI=true a
#: missing one is a failure, not a skip (.ci/run installs gcc before pip install).
needs_extension = pytest.mark.skipif(
    not native.available() and os.environ.get("CI") != "true",
    reason=f"the compiled extension is not installed ({native.backend().reason})")

#: Every output within this relative difference of numpy's: the documented bound
#: (planner.engine.run.native.RELATIVE_TOLERANCE).
RTOL = native.RELATIVE_TOLERANCE


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
    """The compiled backend on: its absence is an error."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")


def test_the_committed_source_is_what_the_model_generates():
    """planner/engine/run/_native_generated.c and its manifest are printed from the committed
    kernel and the layout rules (``python -m planner.codegen --only native``)."""
    source, manifest = generate()
    assert SOURCE.read_text() == source, "stale: run python -m planner.codegen --only native"
    assert MANIFEST.read_text() == manifest, "stale: run python -m planner.codegen --only native"


@needs_extension
@pytest.mark.parametrize("model, hardware, options", [
    ("llama3-70b", "h100-sxm", {"max_gpus": 4096}),
    ("mixtral-8x7b", "gb200", {"max_gpus": 2048, "recompute": ("selective",)}),
    ("deepseek-v3", "b200", {"max_gpus": 2048}),
])
def test_compiled_outputs_match_numpy(catalog, monkeypatch, compiled, model, hardware,
                                      options):
    inputs = space_inputs(catalog, model, hardware, **options)
    fast = evaluate_inputs(inputs)
    assert kernel_run.native_kernel(tuple(kernel_run.OUTPUTS), inputs) is not None  # C ran
    columns = ("memory_per_gpu_bytes", "wall_time_s", "cost_usd", "energy_facility_j", "fits")
    fast_columns = evaluate_columns(inputs, columns)
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    _close(fast, evaluate_inputs(inputs))
    _close(fast_columns, evaluate_columns(inputs, columns))


def _test_library(functions: list[tuple[str, ast.FunctionDef, frozenset, tuple]], folder):
    """The translator's C of ``functions`` (name, tree, per-row names, table names),
    compiled with setup.py's flags into a library in ``folder`` (tests only: capplan
    itself never runs a compiler)."""
    flags = runpy.run_path(str(ROOT / "setup.py"), run_name="capplan_tests")["IEEE_FLAGS"]
    texts, kernels = [C_PRELUDE], {}
    for name, tree, per_row, table in functions:
        text, scalars, arrays = c_source(tree, per_row, table, name=name)
        texts.append(text)
        kernels[name] = (scalars, arrays, len(tree.body[-1].value.elts))
    c_file, library = Path(folder) / "test_kernels.c", Path(folder) / "test_kernels.so"
    c_file.write_text("\n".join(texts))
    subprocess.run([COMPILER, *flags, "-fPIC", "-shared", "-o", str(library), str(c_file),
                    "-lm"], check=True, capture_output=True)
    loaded = ctypes.CDLL(str(library))
    out = {}
    for name, (scalars, arrays, outputs) in kernels.items():
        f = getattr(loaded, name)
        f.argtypes, f.restype = native.KERNEL_ARGTYPES, None
        out[name] = native.NativeKernel(f, scalars, arrays, tuple(range(outputs)))
    return out


EXPRESSIONS = [
    "numpy.minimum(a, b)", "numpy.maximum(a, b)", "numpy.minimum(numpy.maximum(a, 1.5), b)",
    "numpy.where(numpy.greater(a, b), a - b, 2 * b)", "numpy.where(a, b, -b)",
    "numpy.greater_equal(a, b) * 3 + 1", "a ** (-1.0)", "a ** 2", "a ** 0.5",
    "a ** b", "numpy.ceil(a * 7 / 3)", "numpy.floor(a * 7 / 3)", "1 / 2 * a + 1 / 3 * b",
    "-a / b",
]
MATH_FUNCTIONS = ["exp", "log", "log1p", "expm1", "sqrt"]


def _tree(expression: str, names: tuple[str, ...]) -> ast.FunctionDef:
    return ast.parse(f"def kernel({', '.join(names)}):\n    return [{expression}]").body[0]


@pytest.fixture(scope="module")
def test_kernels(tmp_path_factory):
    """Every translator test's kernel, in one library built once."""
    if shutil.which(COMPILER) is None:
        pytest.skip("no C compiler")
    functions = [(f"e{k}", _tree(e, ("a", "b")), frozenset({"a", "b"}), ())
                 for k, e in enumerate(EXPRESSIONS)]
    functions += [(f"m_{f}", _tree(f"numpy.{f}(a)", ("a",)), frozenset({"a"}), ())
                  for f in MATH_FUNCTIONS]
    functions.append(("pick", _tree("numpy.where(s, a, b), numpy.where(numpy.greater(s, 0.5), "
                                    "a - b, b * 2)", ("a", "b", "s")), frozenset({"a", "b"}), ()))
    functions.append(("table", ast.parse("def kernel(a, s, t):\n    x0 = s * 2\n    "
                                         "return [a * x0 + t, s + 1]").body[0],
                      frozenset({"a", "t"}), ("t",)))
    return _test_library(functions, tmp_path_factory.mktemp("kernels"))


@needs_compiler
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_exact_operations_match_numpy_bit_for_bit(test_kernels, expression):
    """Arithmetic, min/max (NaN-propagating), where, comparisons, powers, ceil and floor:
    the same IEEE operations, so the same bits, NaN, inf and signed zeros included."""
    special = [0.0, -0.0, 1.0, -2.5, 3.0, 1e300, -1e-300, np.inf, -np.inf, np.nan, 0.5, 7.0]
    a, b = (np.array(v, dtype=float).ravel() for v in np.meshgrid(special, special))
    function = test_kernels[f"e{EXPRESSIONS.index(expression)}"]
    with np.errstate(all="ignore"):
        expected = np.broadcast_to(eval(expression, {"numpy": np}, {"a": a, "b": b}),  # noqa: S307
                                   a.shape)
    (got,) = function(len(a), {"a": a, "b": b})
    if expression == "a ** b":  # pow: libm's against numpy's, to rounding
        np.testing.assert_allclose(got, expected, rtol=1e-15, equal_nan=True)
    else:
        assert np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


@needs_compiler
@pytest.mark.parametrize("function_name", MATH_FUNCTIONS)
def test_math_functions_match_numpy(test_kernels, function_name):
    x = np.concatenate([np.linspace(-5, 5, 1001), [0.0, -0.0, 1e-300, 1e300, np.inf,
                                                    -np.inf, np.nan, -1.0]])
    (got,) = test_kernels[f"m_{function_name}"](len(x), {"a": x})
    with np.errstate(all="ignore"):
        expected = getattr(np, function_name)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0, equal_nan=True)


@needs_compiler
def test_scalars_and_table_values(test_kernels):
    """Scalars are passed once, per-row values from arrays, shared values through each
    row's index into the table."""
    table = np.array([[10.0], [20.0], [30.0]])
    index = np.array([2, 0, 0, 1])
    out = test_kernels["table"](4, {"a": np.arange(4.0), "s": 0.5}, index, table)
    assert np.array_equal(out[0], np.arange(4.0) * 1.0 + table[index, 0])
    assert np.array_equal(out[1], np.full(4, 1.5))


@needs_compiler
@pytest.mark.parametrize("flag", [0.0, -0.0, 1.0, 0.25, np.nan, np.inf])
def test_a_where_on_a_scalar_condition_picks_numpys_bits(test_kernels, flag):
    """``numpy.where(s, a, b)`` with ``s`` the same for every row: picked by bits under a
    mask (``np_pick``, which GCC vectorises), the same values as numpy's, NaN and signed
    zeros included."""
    special = [0.0, -0.0, 1.0, -2.5, 1e300, np.inf, -np.inf, np.nan]
    a, b = (np.array(v, dtype=float).ravel() for v in np.meshgrid(special, special))
    got = test_kernels["pick"](len(a), {"a": a, "b": b, "s": flag})
    with np.errstate(all="ignore"):
        expected = [np.where(flag, a, b), np.where(np.greater(flag, 0.5), a - b, b * 2)]
    for g, e in zip(got, expected, strict=True):
        assert np.array_equal(g, e, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(e))


def test_a_where_on_a_scalar_condition_is_not_a_select_in_the_loop():
    """GCC 12 does not vectorise a loop holding a select on a loop-invariant condition; the
    translator hoists such a condition and picks by bits instead."""
    text, _, _ = c_source(_tree("numpy.where(numpy.greater(s, 0.0), s, a * 2)", ("a", "s")),
                          frozenset({"a"}), ())
    loop = text[text.index("for (long i"):]
    assert "np_pick(v__h0, v_s, (v_a * 2.0))" in loop
    assert "?" not in loop


@pytest.mark.slow
@needs_compiler
def test_the_committed_kernel_loops_are_vectorised(tmp_path):
    """The row loops of the committed C (every output, the search's kernel, the tie keys)
    vectorise with setup.py's flags and libmvec: a construct GCC cannot vectorise made the whole search
    2.7x slower once (a select on the scalar --checkpoint-interval; 349 -> 130 ns a
    candidate when fixed)."""
    version = subprocess.run([COMPILER, "-dumpversion"], capture_output=True, text=True)
    if version.returncode or int(version.stdout.split(".")[0] or 0) < 12:
        pytest.skip("needs GCC 12 or later (target_clones, omp simd with libmvec)")
    flags = runpy.run_path(str(ROOT / "setup.py"), run_name="capplan_tests")["IEEE_FLAGS"]
    include = subprocess.run([sys.executable, "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['include'])"],
                             capture_output=True, text=True).stdout.strip()
    result = subprocess.run([COMPILER, *flags, "-DCAPPLAN_LIBMVEC", "-fPIC", "-shared",
                             f"-I{include}", "-fopt-info-vec-optimized", "-o",
                             str(tmp_path / "k.so"), str(SOURCE), "-lmvec", "-lm"],
                            capture_output=True, text=True)
    if result.returncode:
        pytest.skip(f"the source does not build with libmvec here: {result.stderr[-300:]}")
    lines = SOURCE.read_text().splitlines()
    loops = [k + 2 for k, line in enumerate(lines) if line.strip() == "#pragma omp simd"
             and "for (long i = 0; i < n; i++)" in lines[k + 1]]
    assert len(loops) >= 3, loops  # capplan_rows, search_kernel, tie_keys
    vectorised = {int(message.split(":")[1]) for message in result.stderr.splitlines()
                  if f"{SOURCE.name}:" in message and "loop vectorized" in message}
    for line in loops:  # GCC names the loop's header or its first statement
        assert {line, line + 1} & vectorised, f"line {line} is not vectorised"


def test_untranslatable_trees_are_left_to_numpy():
    """The prelude calls the Poisson CDF: not translated (numpy runs it)."""
    trees = split_kernel_trees(("wall_time_s",), frozenset({"gpus", "tp", "spare_nodes"}))
    assert trees is not None
    prelude = trees[0]
    with pytest.raises(Untranslatable):
        c_source(prelude, frozenset({"gpus", "spare_nodes"}), ())


def test_translation_leaves_the_tree_unchanged():
    tree = partial_kernel_tree(("memory_per_gpu_bytes",))
    before = ast.dump(tree)
    c_source(tree, frozenset({"tp", "pp", "dp"}), ())
    assert ast.dump(tree) == before


def test_numpy_mode_turns_the_backend_off(monkeypatch):
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    assert native.backend().name == "numpy"
    assert kernel_run.native_kernel(("memory_per_gpu_bytes",), {"tp": np.ones(3)}) is None
    monkeypatch.setenv("CAPPLAN_KERNEL", "nmpy")
    with pytest.raises(CapplanError, match="unknown CAPPLAN_KERNEL value 'nmpy'; did you mean: numpy"):
        native.mode()
    monkeypatch.setenv("CAPPLAN_KERNEL", "xyz")
    with pytest.raises(CapplanError, match="unknown CAPPLAN_KERNEL value 'xyz'; allowed: auto, c, numpy"):
        native.mode()


@needs_extension
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


@needs_extension
def test_small_calls_run_numpy_unless_asked(catalog, monkeypatch):
    """A one-shot query's few candidates need no compiled kernel built."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "auto")
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=1024)
    rows = np.arange(kernel_run.NATIVE_MIN - 1)
    few = {k: v[rows] if np.ndim(v) else v for k, v in inputs.items()}
    built = []
    monkeypatch.setattr(kernel_run, "native_kernel", lambda *a: built.append(a))
    evaluate_inputs(few)
    assert built == []
    evaluate_inputs(few, compiled=True)
    assert len(built) == 1


@needs_extension
def test_a_table_past_the_32_bit_index_runs_numpy(catalog, compiled, monkeypatch):
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=1024)
    fast = evaluate_inputs(inputs)
    monkeypatch.setattr(kernel_run, "TABLE_LIMIT", 1)
    capped = evaluate_inputs(inputs)
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")
    assert all(np.array_equal(capped[k], v, equal_nan=True)
               for k, v in evaluate_inputs(inputs).items())
    _close(fast, capped)


def test_a_missing_or_stale_extension_runs_numpy_and_says_why(monkeypatch):
    monkeypatch.setenv("CAPPLAN_KERNEL", "auto")
    monkeypatch.setattr(native.importlib.util, "find_spec", lambda name: None)
    found = native._find()
    assert found.name == "numpy" and "not installed" in found.reason
    monkeypatch.undo()
    if not native.available():
        pytest.skip("no extension installed")
    monkeypatch.setattr(native.manifest, "SOURCE_HASH", "0" * 16)
    found = native._find()
    assert found.name == "numpy" and "stale" in found.reason


def test_c_mode_without_the_extension_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    monkeypatch.setattr(native, "_BACKEND", native.Backend("numpy", "it is not installed"))
    with pytest.raises(CapplanError, match="CAPPLAN_KERNEL=c, but it is not installed"):
        native.backend()


def test_version_names_the_backend():
    result = subprocess.run([sys.executable, "-m", "planner", "--version"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert f"kernel backend: {native.backend().name}" in result.stdout


def test_no_command_starts_a_compiler(tmp_path):
    """``plan`` and ``evaluate`` never run a C compiler: every compiler name on PATH is a
    script that records that it ran."""
    bin_dir, log = tmp_path / "bin", tmp_path / "ran"
    bin_dir.mkdir()
    for name in ("cc", "gcc", "clang", "c99", "x86_64-linux-gnu-gcc", "ld"):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\necho {name} >> {log}\nexit 1\n")
        script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "CC": str(bin_dir / "cc"), "CAPPLAN_CACHE_DIR": str(tmp_path / "cache")}
    for argv in (["plan", "--model", "llama3-8b", "--hardware", "h100-sxm,mi300x",
                  "--max-gpus", "512", "-f", "json"],
                 ["evaluate", "--model", "llama3-8b", "--gpus", "8", "-f", "json"]):
        result = subprocess.run([sys.executable, "-m", "planner", *argv], capture_output=True,
                                text=True, cwd=ROOT, env=env)
        assert result.returncode == 0, result.stderr
    assert not log.exists(), log.read_text()
