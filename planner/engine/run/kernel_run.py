"""Run the generated kernel over candidates: numpy chunks, the split kernel (the terms of
each GPU count once), or the compiled extension; and one candidate on Python floats.

``evaluate_inputs`` is the array engine (a dict of input arrays in, a dict of output
arrays out); ``evaluate_columns`` runs only the part of the kernel some columns need;
``evaluate_scalar`` is the per-call path of one layout.  Every path gives the same values
(to rounding; the compiled extension within :data:`planner.engine.run.native.RELATIVE_TOLERANCE`).
"""

from __future__ import annotations

import math
import threading
from functools import cache

import numpy as np

from planner.engine.inputs.glossary import INPUTS
from planner.engine.run import kernel as generated
from planner.engine.run import native
from planner.engine.run.columns import conversions, memory_terms
from planner.engine.run.kernel import (
    SPLIT_GROUP,
    float_kernel,
    load_kernel,
    partial_kernel,
    split_kernel,
)
from planner.engine.run.model import OUTPUTS
from planner.engine.run.reductions import unique_runs
from planner.engine.run.spares import AUTO, resolve_spares

#: Candidates per kernel call; bounds memory whatever the size of the space.
CHUNK = 4096


_KERNEL = None


def kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = load_kernel()
    return _KERNEL


def evaluate_inputs(inputs: dict, chunk: int = CHUNK, *,
                    compiled: bool | None = None) -> dict[str, np.ndarray]:
    """Run the kernel over candidates; every output is an array of the candidates' length
    (``compiled``: see :func:`run_kernel`)."""
    missing = [name for name in INPUTS if name not in inputs]
    if missing:
        raise KeyError(f"missing run-model inputs: {', '.join(missing)}")
    return finish(run_kernel(kernel(), INPUTS, OUTPUTS, inputs, chunk, compiled=compiled),
                  inputs)


def candidate_count(inputs: dict) -> int:
    """The common length of the array inputs (1 when all are scalars)."""
    sizes = {np.size(v) for v in inputs.values() if _is_array(v)}
    if len(sizes) > 1:
        raise ValueError(f"input arrays have different lengths: {sorted(sizes)}")
    return sizes.pop() if sizes else 1


def _is_array(value) -> bool:
    """Whether an input holds one value per candidate (``np.ndim`` is slow on floats)."""
    if type(value) in (float, int, np.float64):
        return False
    return value.ndim > 0 if isinstance(value, np.ndarray) else np.ndim(value) > 0


def evaluate_columns(inputs: dict, columns, chunk: int = CHUNK, *,
                     compiled: bool | None = None) -> dict[str, np.ndarray]:
    """Only ``columns`` (kernel outputs, ``fits`` or the unit columns of :func:`finish`).

    Runs the part of the kernel these columns need (:func:`planner.engine.run.kernel.partial_kernel`),
    so the values are bit-identical to :func:`evaluate_inputs`' at a fraction of the
    work when few outputs are asked for (memory per GPU alone: ~7x faster).
    ``compiled``: see :func:`run_kernel`.
    """
    needed = needed_outputs(tuple(columns))
    f, names = partial_kernel(needed)
    out = run_kernel(f, names, needed, inputs, chunk, compiled=compiled)
    for name, source, divisor in conversions():
        if source in out:
            out[name] = out[source] / divisor
    if "fits" in columns:
        out["fits"] = out["memory_per_gpu_bytes"] <= np.asarray(inputs["hbm_bytes"], dtype=float)
    return {name: out[name] for name in columns}


@cache
def needed_outputs(columns: tuple[str, ...]) -> tuple[str, ...]:
    """The kernel outputs :func:`evaluate_columns` computes for ``columns``."""
    derived = {name: source for name, source, _ in conversions()}
    derived["fits"] = "memory_per_gpu_bytes"
    needed: list[str] = []
    for column in columns:
        while column in derived:
            column = derived[column]
        if column not in OUTPUTS:
            raise KeyError(f"not an output column: {column}")
        if column not in needed:
            needed.append(column)
    return tuple(needed)


def run_kernel(f, names, outputs, inputs: dict, chunk: int = CHUNK, *,
               compiled: bool | None = None) -> dict[str, np.ndarray]:
    """``f(*inputs[names])`` over chunks of ``chunk`` candidates into one array per output.

    Calls of :data:`NATIVE_MIN` candidates or more run the compiled kernel where it is
    available (:func:`native_kernel`); smaller ones run numpy (a one-shot query would
    otherwise spend more on building the compiled kernel, ~0.1 s per process and kernel,
    than on its few hundred candidates), unless ``compiled=True``: then any call with
    array inputs runs it, as the rows a search keeps do, so their values are the bits
    that selected them.

    ``spare_nodes = -1`` (``--spares auto``) becomes each candidate's optimal spare count
    first (:func:`planner.engine.run.spares.resolve_spares`).
    """
    if "spare_nodes" in names:
        inputs = resolve_spares(inputs)
    n = candidate_count(inputs)
    values = [inputs[name] for name in names]
    is_array = [_is_array(v) for v in values]
    wanted = any(is_array) and (n >= NATIVE_MIN if compiled is None else compiled)
    native = native_kernel(tuple(outputs), inputs) if wanted else None
    if native is not None:  # the C kernel: every candidate at once, no temporaries
        split, function = native
        # the kernel's array inputs given as one value are spread over the candidates
        given = {**inputs, **{k: np.broadcast_to(np.asarray(inputs[k], dtype=float), (n,))
                              for k in function.arrays if not _is_array(inputs[k])}}
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            table, inverse = prelude_table(split[0], split[1], given)
            if table.size < TABLE_LIMIT:  # the C index is 32-bit
                every = dict(zip(function.outputs, function(n, given, inverse, table),
                                 strict=True))
                return {name: every[name] for name in outputs}
    if n >= SPLIT_MIN:  # the GPU-count terms once per distinct GPU count of the call

        split = split_kernel(tuple(outputs), frozenset(
            k for k, a in zip(names, is_array, strict=True) if a), build=n >= SPLIT_BUILD_MIN)
        if split:
            f = _SplitCall(split, names)
            f.prepare(*values)
    if n <= chunk:  # one chunk: no copy
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = f(*values)  # a split call: rows = all
        return {name: np.broadcast_to(np.asarray(v, dtype=float), (n,))
                for name, v in zip(outputs, result, strict=True)}
    values = [v if a else float(v) for v, a in zip(values, is_array, strict=True)]
    out, columns = {}, []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            args = [v[start:stop] if a else v for v, a in zip(values, is_array, strict=True)]
            result = f(*args, rows=slice(start, stop)) if isinstance(f, _SplitCall) else f(*args)
            if not columns:  # an output of scalar inputs only is one value: a broadcast view
                for name, v in zip(outputs, result, strict=True):
                    out[name] = (np.empty(n) if np.ndim(v) else
                                 np.broadcast_to(np.asarray(v, dtype=float), (n,)))
                columns = [out[name] if np.ndim(v) else None
                           for name, v in zip(outputs, result, strict=True)]
            for column, v in zip(columns, result, strict=True):
                if column is not None:
                    column[start:stop] = v
            del result, v  # free the chunk's arrays before the next call reuses their memory
    return out


def native_kernel(outputs: tuple[str, ...], inputs: dict):
    """The compiled kernel that computes ``outputs`` for ``inputs``
    (:func:`planner.engine.run.native.rows_kernel`: every output, for candidates whose array
    inputs are among its own): ``(split kernel, compiled function)``, or ``None`` on the
    numpy backend or where an input it reads as one value varies per candidate.

    The compiled kernel is the split kernel's main part, fed the prelude's values
    (computed by numpy, once per GPU count) through a table.
    """
    if not native.available():
        return None
    rows = native.manifest.ROWS
    if not set(outputs) <= set(rows["outputs"]):
        return None
    with _NATIVE_LOCK:
        if "rows" not in _NATIVE:
            _NATIVE["rows"] = (generated.split_kernel(rows["outputs"],
                                                      frozenset(rows["array_set"])),
                               native.rows_kernel())
        found = _NATIVE["rows"]
    split, function = found
    one_value = set(function.scalars) | (set(split[1]) - set(rows["array_set"]))
    if any(_is_array(inputs[k]) for k in one_value):
        return None
    return found


_NATIVE: dict = {}


_NATIVE_LOCK = threading.Lock()


#: Candidates from which :func:`run_kernel` runs the compiled kernel unless told.
NATIVE_MIN = CHUNK


#: Values in a split call's table up to which the compiled kernel reads it (its row index
#: is a 32-bit int; beyond, ~10^7 distinct GPU counts in one call, numpy runs).
TABLE_LIMIT = 1 << 31


#: Candidates from which :func:`run_kernel` runs the split kernel (a few distinct GPU
#: counts among many candidates; below this the grouping costs more than it saves) ...
SPLIT_MIN = 64


#: ... and from which it builds it if not built yet (the same values either way: a
#: one-shot query's ~100 candidate layouts do not pay for the build).
SPLIT_BUILD_MIN = 1024


class _SplitCall:
    """``f(*values)`` of :func:`run_kernel` by the split kernel
    (:func:`planner.engine.run.kernel.build_split_kernel`): the prelude on the distinct
    (GPU count, spare count) pairs of the candidates, spread back, then the main part.

    :meth:`prepare` groups the whole call's candidates by pair once and runs the prelude
    on the pairs not known yet; the values are remembered per prelude and scalar inputs
    (:data:`_PRELUDE_VALUES`), so the blocks of a search compute each GPU count's terms
    once.  A chunk (``rows`` of the call) then only looks its pairs' values up.
    """

    def __init__(self, split, names):
        self.prelude, self.prelude_names, self.main, self.main_names, _ = split
        self.names = list(names)

    def prepare(self, *values) -> None:
        """Group the candidates of ``values`` (the whole call's inputs) by pair: a table of
        the prelude's values per distinct pair, and each candidate's row in it."""
        self.table, self.inverse = prelude_table(self.prelude, self.prelude_names,
                                                 dict(zip(self.names, values, strict=True)))

    def __call__(self, *values, rows=slice(None)):
        """The outputs of the candidates ``rows`` of the prepared call (``values``: theirs)."""
        given = dict(zip(self.names, values, strict=True))
        shared = self.table[self.inverse[rows]].T
        return self.main(*(given[k] for k in self.main_names), *shared)


def prelude_table(prelude, prelude_names, given: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(table, inverse)``: the split kernel's ``prelude`` values (a row per distinct
    (GPU count, spare count) pair of ``given``, the inputs by name) and each candidate's
    row in it.  Values are remembered per prelude and scalar inputs (:func:`_remembered`),
    so the blocks of a search compute each GPU count's terms once."""
    columns = [np.asarray(given[k], dtype=float) for k in SPLIT_GROUP
               if k in given and np.ndim(given[k]) > 0]
    n = max(np.size(c) for c in columns)
    first, inverse = _group_pairs(*(np.broadcast_to(c, (n,)) for c in columns))
    keys = [complex(*pair) for pair in zip(*(c[first].tolist() for c in columns), strict=True)]
    known = _remembered(prelude, tuple(
        float(given[k]) for k in prelude_names if np.ndim(given[k]) == 0))
    new = [i for i, key in enumerate(keys) if key not in known or key != key]
    fresh = {}
    if new:
        picked = first[new]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf, as the kernel
            values = prelude(*(given[k][picked] if np.ndim(given[k]) > 0 else given[k]
                               for k in prelude_names))
        computed = [np.broadcast_to(np.asarray(v, dtype=float), (len(new),)) for v in values]
        for j, i in enumerate(new):
            fresh[i] = [c[j] for c in computed]
            if keys[i] == keys[i]:  # a NaN key is never the same key again
                known[keys[i]] = fresh[i]
    table = np.array([fresh[i] if i in fresh else known[key] for i, key in enumerate(keys)],
                     dtype=float)
    return table, inverse.reshape(-1)


#: Pairs of whole numbers below this are grouped by one float key (exact below 2**53).
_PAIR_SCALE = float(1 << 26)


def _group_pairs(a: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(a, b)`` pairs: the first row of each and every row's pair, as
    :func:`numpy.unique` gives them (a NaN is a pair of its own, as it is a candidate of
    its own).  Whole numbers in ``[0, 2**26)`` (GPU and spare counts) are sorted as one
    float key, several times faster than complex pairs."""
    b = np.zeros_like(a) if b is None else b
    if (np.all((a >= 0) & (a < _PAIR_SCALE) & (b >= 0) & (b < _PAIR_SCALE))
            and np.array_equal(a, np.rint(a)) and np.array_equal(b, np.rint(b))):
        _, first, inverse = unique_runs(a * _PAIR_SCALE + b)
    else:
        pairs = np.empty(len(a), dtype=complex)
        pairs.real, pairs.imag = a, b
        _, first, inverse = np.unique(pairs, return_index=True, return_inverse=True,
                                      equal_nan=False)
    return first, inverse.reshape(-1)


def _remembered(prelude, scalars: tuple) -> dict:
    """The remembered values of ``prelude`` for these scalar inputs (a new dict if none)."""
    key = (prelude, scalars)
    with _PRELUDE_LOCK:  # the threads of a Dask worker share it
        known = _PRELUDE_VALUES.pop(key, None)
        if known is None or len(known) > _PRELUDE_PAIRS:
            known = {}
        _PRELUDE_VALUES[key] = known  # most recently used last
        while len(_PRELUDE_VALUES) > _PRELUDE_KEYS:
            del _PRELUDE_VALUES[next(iter(_PRELUDE_VALUES))]
    return known


#: Prelude values remembered across calls: (prelude, its scalar inputs) -> {pair: values}.
#: At most this many sets of scalar inputs (least recently used dropped) ...
_PRELUDE_KEYS = 64


#: ... and this many pairs per set (a set grown past it starts again).
_PRELUDE_PAIRS = 1 << 16


_PRELUDE_VALUES: dict = {}


_PRELUDE_LOCK = threading.Lock()


def finish(out: dict[str, np.ndarray], inputs: dict) -> dict[str, np.ndarray]:
    """The ``finish`` columns of :mod:`planner.engine.run.columns`: fits, the largest memory
    term, and the unit conversions at the edge."""
    n = len(out["step_time_s"])
    hbm = np.broadcast_to(np.asarray(inputs["hbm_bytes"], dtype=float), (n,))
    out["hbm_bytes"] = np.array(hbm)
    out["fits"] = out["memory_per_gpu_bytes"] <= hbm
    out["largest_memory_term_index"] = largest_index(out, memory_terms())
    for name, source, divisor in conversions():
        out[name] = out[source] / divisor
    return out


def largest_index(out: dict[str, np.ndarray], terms: tuple[str, ...]) -> np.ndarray:
    """Per candidate, the index into ``terms`` of the largest (the first of equals)."""
    largest = np.zeros(len(out[terms[0]]), dtype=np.int8)
    biggest = out[terms[0]]
    for i, term in enumerate(terms[1:], start=1):
        larger = out[term] > biggest
        largest[larger] = i
        biggest = np.maximum(biggest, out[term])
    return largest


def evaluate_scalar(inputs: dict) -> dict:
    """Every output column of one candidate as Python scalars, in :func:`evaluate_inputs`'
    order.  The kernel runs on Python floats (:func:`planner.engine.run.kernel.float_kernel`;
    on numpy float64 scalars where floats raise, inf/NaN as with arrays); the values agree
    with the array path to rounding (a few ulp; up to ~1e-8 relative where the model
    subtracts nearly equal numbers).
    """
    missing = [name for name in INPUTS if name not in inputs]
    if missing:
        raise KeyError(f"missing run-model inputs: {', '.join(missing)}")

    if np.ravel(inputs["spare_nodes"])[0] == AUTO:  # --spares auto: the optimal count
        resolved = resolve_spares(inputs)["spare_nodes"]
        inputs = {**inputs, "spare_nodes": float(np.ravel(resolved)[0])}
    raw = [inputs[name] for name in INPUTS]
    try:
        values = np.array(raw, dtype=float).tolist()  # Python floats
    except ValueError:  # some input is a 1-element array
        values = [float(np.ravel(v)[0]) for v in raw]
    out = _scalar_outputs(values)
    terms, units = _finish_columns()
    hbm = float(np.ravel(inputs["hbm_bytes"])[0])
    out["hbm_bytes"] = hbm
    out["fits"] = out["memory_per_gpu_bytes"] <= hbm
    largest, biggest = 0, out[terms[0]]
    for i, term in enumerate(terms[1:], start=1):  # as largest_index: first of equals, NaN
        value = out[term]
        if value > biggest:
            largest = i
        biggest = math.nan if math.isnan(biggest) or math.isnan(value) else max(biggest, value)
    for name, source, divisor in units:
        out[name] = out[source] / divisor
    out["largest_memory_term"] = terms[largest]
    return out


def _scalar_outputs(values: list[float]) -> dict[str, float]:
    """The kernel's outputs for one candidate: the float kernel, else (where Python raises
    on a division by zero, a log of 0, an overflow, or meets a complex power) the numpy
    kernel on float64 scalars, which gives inf/NaN as the array path does."""
    try:
        return {name: float(v) for name, v in zip(OUTPUTS, float_kernel()(*values),
                                                  strict=True)}
    except (ArithmeticError, ValueError, TypeError):
        pass
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return {name: float(v) for name, v in zip(OUTPUTS, kernel()(*np.array(values)),
                                                  strict=True)}


@cache
def _finish_columns() -> tuple[tuple[str, ...], tuple[tuple[str, str, float], ...]]:
    """The memory terms and the unit conversions of :func:`finish` (constant)."""
    return memory_terms(), conversions()
