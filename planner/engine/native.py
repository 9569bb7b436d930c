"""The compiled kernel: the generated run-model kernel's statements in C, one vectorised
loop over the candidates.

numpy runs the generated kernel one operation at a time over a chunk of candidates, so
each of its ~270 per-candidate statements writes a temporary array and reads it back
(~0.6 us a candidate).  Here the same statements are translated, expression by
expression, into one C loop that takes 8 candidates at a time (AVX-512) through all of
them in registers and writes the outputs straight into the result arrays: ~0.1 us a
candidate, 2.7x numpy with every output stored and 8x computed
(``benchmarks/bench_evaluate.py``, docs/performance.md).

* **What is translated.** A kernel function's syntax tree - the split kernel's main
  part (:func:`planner.engine.kernel.split_kernel_trees`; its GPU-count terms, the
  Poisson CDFs and ``erfinv``, stay in numpy and come in through a table indexed per
  candidate) or a partial kernel (:func:`planner.engine.kernel.partial_kernel_tree`):
  arithmetic, powers, ``numpy.minimum``/``maximum`` (NaN-propagating, the second of
  equal values, as numpy's), ``where``, comparisons and ``exp``, ``log``, ``log1p``,
  ``expm1``, ``sqrt``, ``ceil``.  Every sub-expression that depends on no per-candidate
  value is computed once, before the loop.  A tree that calls anything else raises
  :class:`Untranslatable` and numpy runs it.
* **numpy's numbers, to rounding.** Each expression is evaluated in the same order in
  IEEE double precision, without fused multiply-adds (``-ffp-contract=off``) or
  fast-math.  Arithmetic, min/max, ``where``, powers of -1, 2 and 1/2 and ``ceil`` give
  numpy's bits (NaN, infinities and signed zeros included); ``exp``/``log``/``pow``
  come from glibc's libmvec instead of numpy's own SIMD loops and may differ in the last
  bit, which the waste fraction (1 - e^-x for small x) amplifies to ~2e-11 relative
  (``tests/test_native.py`` checks every output within 1e-10 of numpy's).  Every row
  goes through the vectorised loop (a short tail is padded, :data:`LANES`), so a
  candidate's values are the same bits whichever call it is evaluated in.
* **Built once per machine.** The source is compiled with the system C compiler
  (``$CC`` or ``cc``; ``-O1 -march=native``) on first use into capplan's cache folder
  (``$CAPPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/capplan``, else ``~/.cache/capplan``;
  with ``CAPPLAN_CACHE_DIR=off``, once per process), named by a hash of the source,
  flags and processor, and loaded with :mod:`ctypes`, which releases the GIL during the
  call: ~1 s per kernel the first time (a plan builds two), a few ms after.
* **Optional.** ``CAPPLAN_KERNEL=auto`` (default) uses it where a compiler works and
  numpy elsewhere (no compiler, a compile error, glibc without libmvec: then the scalar
  ``libm`` functions); ``CAPPLAN_KERNEL=numpy`` turns it off, ``CAPPLAN_KERNEL=c`` makes
  a kernel that cannot be compiled an error.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from planner.engine.kernel import loaded_names

#: Compiler flags: IEEE semantics (no contraction into FMAs, no fast-math; errno is never
#: read), vectorised for this machine's processor (``#pragma omp simd`` vectorises the
#: loop at -O1 too: as fast as -O2 here, and a third quicker to build).
CFLAGS = ("-O1", "-march=native", "-fopenmp-simd", "-fPIC", "-shared", "-ffp-contract=off",
          "-fno-math-errno", "-fno-trapping-math")
#: Tried first: the vector forms of exp, log, log1p, expm1 and pow from glibc's libmvec
#: (glibc >= 2.35), so loops that call them vectorise too; without it, scalar libm calls.
VECTOR_MATH = ("exp", "log", "log1p", "expm1", "pow")

_MATH = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
         "ceil": "ceil"}
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
            "equal": "==", "not_equal": "!="}
_COMPARE_OPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==",
                ast.NotEq: "!="}

_VECTOR_MATH_MARK = "/* vector math declarations */"
_PRELUDE = """#include <math.h>
/* vector math declarations */

/* numpy.minimum / numpy.maximum: NaN if either argument is NaN, the second of equals */
static inline double np_minimum(double a, double b) { const double m = a < b ? a : b; return a == a ? m : a; }
static inline double np_maximum(double a, double b) { const double m = a > b ? a : b; return a == a ? m : a; }
static inline double np_square(double a) { return a * a; }
"""


class Untranslatable(ValueError):
    """The kernel calls something the C backend has no form of."""


def _c(node) -> str:
    """The C expression of a kernel expression (every sub-expression parenthesised, so
    C evaluates it in the order Python does)."""
    if isinstance(node, ast.Name):
        return f"v_{node.id}"
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Untranslatable(f"constant {value!r}")
        value = float(value)
        if value != value:
            return "NAN"
        if value in (float("inf"), float("-inf")):
            return "INFINITY" if value > 0 else "(-INFINITY)"
        return f"{value!r}"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_c(node.operand)})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return _c(node.operand)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return _power(node.left, node.right)
        op = _BINARY.get(type(node.op))
        if op is None:
            raise Untranslatable(f"operator {type(node.op).__name__}")
        return f"({_c(node.left)} {op} {_c(node.right)})"
    condition = _condition(node)
    if condition is not None:  # a comparison's value: 1.0 or 0.0, as numpy's bool in arithmetic
        return f"({condition} ? 1.0 : 0.0)"
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "numpy":
            args = [_c(a) for a in node.args]
            if f.attr in _MATH and len(args) == 1:
                return f"{_MATH[f.attr]}({args[0]})"
            if f.attr in ("minimum", "maximum") and len(args) == 2:
                return f"np_{f.attr}({args[0]}, {args[1]})"
            if f.attr == "where" and len(args) == 3:
                condition = _condition(node.args[0]) or f"({args[0]} != 0.0)"
                return f"({condition} ? {args[1]} : {args[2]})"
        raise Untranslatable(f"call {ast.unparse(node.func)}")
    raise Untranslatable(f"expression {type(node).__name__}")


def _condition(node) -> str | None:
    """A comparison as a C condition (``None`` if ``node`` is none).  Never an ``int``
    value: an ``int`` among the doubles makes GCC give up vectorising the loop."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = _COMPARE_OPS.get(type(node.ops[0]))
        if op is None:
            raise Untranslatable(f"comparison {type(node.ops[0]).__name__}")
        return f"({_c(node.left)} {op} {_c(node.comparators[0])})"
    f = getattr(node, "func", None)
    if (isinstance(node, ast.Call) and isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name) and f.value.id == "numpy"
            and f.attr in _COMPARE and len(node.args) == 2 and not node.keywords):
        return f"({_c(node.args[0])} {_COMPARE[f.attr]} {_c(node.args[1])})"
    return None


def _power(base, exponent) -> str:
    """``base ** exponent`` as numpy computes it for float64 arrays: ``x ** -1`` is
    ``1 / x``, ``x ** 2`` is ``x * x``, ``x ** 0.5`` is ``sqrt(x)``, the rest ``pow``."""
    b = _c(base)
    if isinstance(exponent, ast.UnaryOp) and isinstance(exponent.op, ast.USub) \
            and isinstance(exponent.operand, ast.Constant):
        exponent = ast.Constant(-exponent.operand.value)
    if isinstance(exponent, ast.Constant) and not isinstance(exponent.value, bool):
        if exponent.value == -1:
            return f"(1.0 / {b})"
        if exponent.value == 2:
            return f"np_square({b})"
        if exponent.value == 0.5:
            return f"sqrt({b})"
        if exponent.value == 1:
            return b
    return f"pow({b}, {_c(exponent)})"


def c_source(func: ast.FunctionDef, per_row: frozenset[str], table: tuple[str, ...],
             name: str = "capplan_kernel", storage: str = "",
             ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The C function of kernel ``func``: ``(source, scalar argument names, array argument
    names)``.

    ``per_row``: the arguments that are arrays of the candidates; ``table``: the
    arguments read from a table of shared rows (``func``'s last ones: the split kernel's
    values per GPU count), ``table[index[i] * len(table) + j]`` for candidate ``i``
    (``index``: 32-bit); the other arguments are scalars.  The function is::

        void name(long n, const double *scalars, const double *const *arrays,
                  const int *index, const double *table, double *const *out)

    with ``scalars`` and ``arrays`` in the orders returned, and ``out`` one array of ``n``
    per value ``func`` returns.  Raises :class:`Untranslatable`.
    """
    func = copy.deepcopy(func)  # the hoisting below rewrites it
    arguments = [a.arg for a in func.args.args]
    scalars = tuple(a for a in arguments if a not in per_row and a not in table)
    arrays = tuple(a for a in arguments if a in per_row and a not in table)
    *statements, returned = func.body
    assigns = [s for s in statements if isinstance(s, ast.Assign)]
    varies = set(arrays) | set(table)
    for s in assigns:
        if loaded_names(s.value) & varies:
            varies.add(s.targets[0].id)
    results = returned.value.elts
    looped = [s for s in assigns if s.targets[0].id in varies]
    hoist = _Invariants(varies)
    looped = [(s.targets[0].id, hoist.visit(s.value)) for s in looped]
    results = [hoist.visit(r) for r in results]
    lines = [f"{storage + ' ' if storage else ''}void {name}(long n, const double *restrict scalars,",
             "          const double *const *restrict arrays, const int *restrict index,",
             "          const double *restrict table, double *const *restrict out)", "{"]
    lines += [f"    const double v_{a} = scalars[{k}];" for k, a in enumerate(scalars)]
    lines += [f"    const double *restrict p_{a} = arrays[{k}];" for k, a in enumerate(arrays)]
    lines += [f"    double *restrict o_{k} = out[{k}];" for k in range(len(results))]
    lines += [f"    const double v_{s.targets[0].id} = {_c(s.value)};" for s in assigns
              if s.targets[0].id not in varies]
    lines += [f"    const double v_{target} = {_c(value)};" for target, value in hoist.hoisted]
    lines += ["    #pragma omp simd", "    for (long i = 0; i < n; i++) {"]
    if table:
        lines.append(f"        const int row = index[i] * {len(table)};")
        lines += [f"        const double v_{a} = table[row + {k}];" for k, a in enumerate(table)]
    lines += [f"        const double v_{a} = p_{a}[i];" for a in arrays]
    lines += [f"        const double v_{target} = {_c(value)};" for target, value in looped]
    lines += [f"        o_{k}[i] = {_c(r)};" for k, r in enumerate(results)]
    lines += ["    }", "}", ""]
    return _PRELUDE + "\n".join(lines), scalars, arrays


class _Invariants(ast.NodeTransformer):
    """Takes each largest sub-expression of the loop's statements that depends on no
    varying name out of the loop (:attr:`hoisted`): GCC vectorises a loop with fewer
    scalar selects (``numpy.minimum`` of two scalars), and computes them once."""

    def __init__(self, varies: set[str]):
        self.varies, self.hoisted = varies, []

    def visit(self, node):
        if isinstance(node, ast.expr) \
                and not isinstance(node, ast.Name | ast.Constant | ast.Attribute) \
                and not loaded_names(node) & self.varies:
            name = f"_h{len(self.hoisted)}"
            self.hoisted.append((name, node))
            return ast.Name(name, ast.Load())
        if isinstance(node, ast.Call):  # the arguments, not the function's name
            node.args = [self.visit(a) for a in node.args]
            return node
        return self.generic_visit(node)


def _vector_declarations() -> str:
    """Declarations that let GCC call libmvec's vector forms of :data:`VECTOR_MATH`."""
    simd = '__attribute__((simd("notinbranch")))'
    return "".join(f"double {f}(double, double) {simd};\n" if f == "pow"
                   else f"double {f}(double) {simd};\n" for f in VECTOR_MATH)


#: Rows per call are a multiple of this (a shorter tail runs padded to it): every row
#: then goes through the vectorised loop, whose libmvec functions may round differently
#: from the scalar ones of a remainder loop, so a candidate's values never depend on
#: where it stands in a call or how many others it is evaluated with.
LANES = 16


class NativeKernel:
    """A compiled kernel function: call it with the whole call's inputs."""

    def __init__(self, function, scalars: tuple[str, ...], arrays: tuple[str, ...],
                 outputs: int):
        self.function, self.scalars, self.arrays, self.outputs = function, scalars, arrays, outputs

    def __call__(self, n: int, given: dict, index=None, table=None,
                 out: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """The outputs (arrays of ``n``) for the inputs ``given`` (name -> scalar or array
        of ``n``); ``index``/``table``: each candidate's row of the shared-values table."""
        scalars = np.array([given[a] for a in self.scalars], dtype=float)
        arrays = [np.ascontiguousarray(given[a], dtype=float) for a in self.arrays]
        if table is not None:
            table = np.ascontiguousarray(table, dtype=float)
            index = np.ascontiguousarray(index, dtype=np.int32)
        if out is None:  # one block: large enough for transparent huge pages, fewer faults
            out = list(np.empty((self.outputs, n)))
        body = n - n % LANES
        if body:
            self._run(body, scalars, arrays, index, table, out)
        if body < n:  # the tail, padded with copies of its last row
            rows = np.minimum(np.arange(body, body + LANES), n - 1)
            tail = list(np.empty((self.outputs, LANES)))
            self._run(LANES, scalars, [a[rows] for a in arrays],
                      None if index is None else index[rows], table, tail)
            for o, t in zip(out, tail, strict=True):
                o[body:] = t[:n - body]
        return out

    def _run(self, n, scalars, arrays, index, table, out) -> None:
        pointers = np.array([a.ctypes.data for a in arrays] or [0], dtype=np.uintp)
        out_pointers = np.array([o.ctypes.data for o in out] or [0], dtype=np.uintp)
        self.function(n, scalars.ctypes.data, pointers.ctypes.data,
                      None if index is None else index.ctypes.data,
                      None if table is None else table.ctypes.data, out_pointers.ctypes.data)


def mode() -> str:
    """``CAPPLAN_KERNEL``: ``auto`` (default: C where a compiler works), ``numpy`` or ``c``."""
    value = os.environ.get("CAPPLAN_KERNEL", "auto").strip().lower() or "auto"
    if value not in MODES:
        from planner.errors import did_you_mean

        raise did_you_mean("CAPPLAN_KERNEL value", value, MODES)
    return value


#: The values of ``CAPPLAN_KERNEL``.
MODES = ("auto", "numpy", "c")


def available() -> bool:
    """Whether kernels will be compiled: the backend is on and a C compiler is on PATH
    (a kernel that then fails to compile still runs in numpy)."""
    import shutil

    return mode() != "numpy" and shutil.which(os.environ.get("CC", "cc")) is not None


def native_kernel(func: ast.FunctionDef, per_row: frozenset[str],
                  table: tuple[str, ...] = ()) -> NativeKernel | None:
    """The compiled form of kernel ``func`` (see :func:`c_source`), or ``None`` where the
    backend is off, ``func`` is untranslatable, or compiling failed (``CAPPLAN_KERNEL=c``:
    raises instead)."""
    if mode() == "numpy":
        return None
    try:
        source, scalars, arrays = c_source(func, per_row, table)
    except Untranslatable:
        return None
    import ctypes

    function = load(source, "capplan_kernel", [ctypes.c_long] + [ctypes.c_void_p] * 5)
    if function is None:
        return None
    return NativeKernel(function, scalars, arrays, len(func.body[-1].value.elts))


_LOADED: dict = {}
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """Where compiled kernels are kept: capplan's cache folder
    (:func:`hardware_catalog.toml_cache.cache_dir`), or, with the cache off
    (``CAPPLAN_CACHE_DIR=off``), a folder of this process's removed when it ends."""
    from hardware_catalog.toml_cache import cache_dir as capplan_cache_dir

    folder = capplan_cache_dir()
    if folder is not None:
        return folder
    global _PROCESS_DIR
    if _PROCESS_DIR is None:
        import atexit
        import shutil
        import tempfile

        _PROCESS_DIR = Path(tempfile.mkdtemp(prefix="capplan-kernels-"))
        atexit.register(shutil.rmtree, _PROCESS_DIR, ignore_errors=True)
    return _PROCESS_DIR


_PROCESS_DIR: Path | None = None


def _load(source: str, symbol: str = "capplan_kernel", argtypes=None, restype=None):
    """The function ``symbol`` of ``source`` (default: a kernel of :func:`c_source`),
    compiled once per machine (with libmvec's vector math where that links, else
    without); ``False`` where neither compiles (``CAPPLAN_KERNEL=c``: raises)."""
    import ctypes

    errors = []
    for text, libraries in ((source.replace(_VECTOR_MATH_MARK, _vector_declarations()),
                             ("-lmvec", "-lm")), (source, ("-lm",))):
        try:
            library = _compiled(text, libraries)
            function = getattr(ctypes.CDLL(str(library)), symbol)
        except (OSError, RuntimeError, AttributeError) as error:
            errors.append(str(error))
            continue
        function.restype = restype
        function.argtypes = argtypes if argtypes is not None else \
            [ctypes.c_long] + [ctypes.c_void_p] * 5
        return function
    if mode() == "c":
        raise RuntimeError(f"CAPPLAN_KERNEL=c: cannot compile the kernel: {errors[-1]}")
    return False


def load(source: str, symbol: str, argtypes, restype=None):
    """:func:`_load` once per process and source (thread-safe): the compiled function, or
    ``None`` where it cannot be built (``CAPPLAN_KERNEL=c``: raises)."""
    with _LOCK:
        function = _LOADED.get((source, symbol))
        if function is None:
            function = _load(source, symbol, argtypes, restype)
            _LOADED[(source, symbol)] = function
    return function or None


def _compiled(source: str, libraries: tuple[str, ...]) -> Path:
    """The shared library of ``source`` in :func:`cache_dir`, compiled if not there yet
    (named by a hash of the source, compiler, flags and processor: ``-march=native``).
    A failed compile leaves a ``.failed`` file, so it is not tried again."""
    import shutil
    import subprocess
    import tempfile

    compiler = os.environ.get("CC", "cc")
    key = "\0".join((source, compiler, *CFLAGS, *libraries, _processor()))
    library = cache_dir() / f"kernel-{hashlib.sha256(key.encode()).hexdigest()[:20]}.so"
    failed = library.with_suffix(".failed")
    if library.exists():
        return library
    if failed.exists():
        raise RuntimeError(failed.read_text())
    if shutil.which(compiler) is None:
        raise RuntimeError(f"no C compiler {compiler!r} on PATH (set CC)")
    library.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent) as work:
        c_file = Path(work) / "kernel.c"
        c_file.write_text(source)
        built = Path(work) / "kernel.so"
        try:
            subprocess.run([compiler, *CFLAGS, "-o", str(built), str(c_file), *libraries],
                           check=True, capture_output=True, text=True, timeout=600)
        except subprocess.CalledProcessError as error:
            message = f"{compiler} failed: {(error.stderr or '').strip().splitlines()[-1:]}"
            failed.write_text(message)
            raise RuntimeError(message) from error
        except (OSError, subprocess.SubprocessError) as error:
            raise RuntimeError(f"{compiler}: {error}") from error
        os.replace(built, library)  # atomic: concurrent processes see all of it or nothing
    return library


def _processor() -> str:
    """This processor's model and features (``-march=native`` compiles for them)."""
    import platform

    try:
        with open("/proc/cpuinfo") as info:
            lines = [line for line in info if line.startswith(("model name", "flags"))][:2]
        return "".join(lines) or platform.processor()
    except OSError:
        return platform.machine() + platform.processor()
