"""The search's inner loop compiled: layouts decoded, their flags, the kernel and the best
rows per GPU count, in one C call per search task.

:func:`planner.engine.optimize.search_slice` reduces a slice of an accelerator's layout
space to the rows it keeps: per GPU count and objective, the first minimum among the
candidates that fit in memory and among the feasible ones.  Run with numpy, each
65,536-layout block is decoded into arrays, turned into the run model's flags
(:func:`planner.engine.space.layout_flags`), evaluated and grouped: ~15 whole-array passes
besides the kernel, which with the compiled kernel (:mod:`planner.engine.native`) cost
three times the kernel itself.  Here one C function does all of it per chunk of
:data:`CHUNK` candidates, in cache:

1. **Decode.**  The rows of :class:`planner.engine.space.LayoutSpace` are a table of
   (TP, CP, PP, VP, micro-batch, DP) rows each crossed with its lists of allowed EP x ETP,
   recompute, ZeRO x HSDP and sequence-parallel values; the loop walks that mixed-radix
   counter one row after the other (no division per row).
2. **Flags.**  :func:`planner.engine.space.layout_flags`' rules, written once more in C
   (the same operations in the same order, so the same bits:
   ``tests/test_native_search.py`` compares them on whole spaces), in a vectorised loop.
3. **Kernel.**  The split kernel's main part for memory, the objectives and the
   constraints, as :func:`planner.engine.native.c_source` prints it; its GPU-count terms
   (the prelude: spare pools' Poisson CDFs, the straggler's ``erfinv``) come from numpy
   once per GPU count, through a table.
4. **Reduce.**  Per GPU count, objective and {fitting, feasible}: the first minimum
   (NaN larger than every number, ties to the lowest row, as
   :class:`planner.engine.reductions.GroupMinimum`), kept across the calls of a task.

The rows kept are then evaluated whole by :func:`planner.engine.evaluator.evaluate_inputs`
(compiled, so their values are the bits that selected them).  The answer is the one the
numpy block loop gives, row for row (``tests/test_native_search.py``); ctypes releases the
GIL, so tasks run side by side on threads.  Where no compiler works, ``CAPPLAN_KERNEL=numpy``,
or an input the loop does not know varies per candidate, :func:`search` returns ``None``
and the block loop runs.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

#: Candidates per pass through the loop's stages (their ~50 columns stay in L2 cache).
CHUNK = 1024

#: The layout space's table columns, in the order of the C ``head`` matrix.
HEAD_COLUMNS = ("tp", "cp", "pp", "vp", "micro_batch", "dp", "gpus", "domain_dp")
#: Its crossed lists, in enumeration order (the last varies fastest).
TAIL_COLUMNS = ("ep_etp", "recompute", "zero_hsdp", "sequence_parallel")

#: Kernel inputs the loop computes per candidate -> its C buffer.
BUFFERS = {
    "gpus": "gpus", "tp": "tp", "pp": "pp", "dp": "dp", "cp": "cp", "ep": "ep",
    "etp": "etp", "vp": "vp", "micro_batch": "micro_batch", "stage_layers": "stage_layers",
    "selective": "selective", "attention_scores_stored": "attention_scores_stored",
    "full_recompute": "full_recompute", "sequence_parallel": "sp", "shard_ranks": "shard",
    "weight_shards": "weight_shards", "grad_shards": "grad_shards",
    "optimizer_shards": "optimizer_shards", "zero3": "zero3",
    "expert_weight_shards": "expert_weight_shards", "expert_grad_shards": "expert_grad_shards",
    "expert_optimizer_shards": "expert_optimizer_shards", "tp_intra_ranks": "tp_intra_ranks",
    "cp_intra": "cp_intra", "ep_intra": "ep_intra", "pp_intra": "pp_intra",
    "dp_intra_ranks": "dp_intra_ranks", "replica_intra_ranks": "replica_intra_ranks",
    "spare_nodes": "spare_nodes",
}
#: Every C buffer of a chunk: the decoded layout (with ``rec``, ``zero``) and the flags.
_BUFFER_NAMES = tuple(dict.fromkeys((*BUFFERS.values(), "rec", "zero")))

# The flags of layout_flags (flash attention on, as every search runs), per candidate.
_FLAGS = """
    #pragma omp simd
    for (long i = 0; i < padded; i++) {
        const double tp = b_tp[i], cp = b_cp[i], pp = b_pp[i], dp = b_dp[i], vp = b_vp[i];
        const double ep = b_ep[i], etp = b_etp[i], gpus = b_gpus[i], shard = b_shard[i];
        const double rec = b_rec[i], zero = b_zero[i];
        b_stage_layers[i] = vp * ceil(layers / (pp * vp));
        b_selective[i] = 0.0;
        b_attention_scores_stored[i] = 0.0;
        b_full_recompute[i] = rec == 2.0 ? 1.0 : 0.0;
        b_weight_shards[i] = zero >= 3.0 ? shard : 1.0;
        b_grad_shards[i] = zero >= 2.0 ? shard : 1.0;
        b_optimizer_shards[i] = zero >= 1.0 ? shard : 1.0;
        b_zero3[i] = zero >= 3.0 ? 1.0 : 0.0;
        const double edp = np_maximum(((tp * cp) * shard) / (etp * ep), 1.0);
        b_expert_weight_shards[i] = zero >= 3.0 ? edp : 1.0;
        b_expert_grad_shards[i] = zero >= 2.0 ? edp : 1.0;
        b_expert_optimizer_shards[i] = zero >= 1.0 ? edp : 1.0;
        b_tp_intra_ranks[i] = np_minimum(tp, domain);
        b_cp_intra[i] = (tp * cp) <= domain ? 1.0 : 0.0;
        b_ep_intra[i] = (etp * ep) <= domain ? 1.0 : 0.0;
        b_pp_intra[i] = gpus <= domain ? 1.0 : 0.0;
        b_dp_intra_ranks[i] = np_minimum(np_maximum(floor(domain / (tp * cp)), 1.0), dp);
        b_replica_intra_ranks[i] = np_minimum(np_maximum(floor(domain / ((tp * cp) * shard)),
                                                         1.0), dp / shard);
    }
"""


def _driver(arrays: tuple[str, ...], outputs: int, columns: list[tuple[int, tuple[float, ...]]],
            constraints: list[tuple[int, tuple[float, ...]]], memory: int) -> str:
    """The C of ``capplan_search`` around the kernel ``search_kernel`` (``arrays``: its
    array arguments; ``columns``/``constraints``: (output index, divisors) of each
    objective and of the deadline, budget and power constraints)."""
    from planner.engine.native import LANES
    from planner.engine.space import EXPERT_RADIX

    def value(spec) -> str:
        index, divisors = spec
        text = f"o_{index}[i]"
        for d in divisors:
            text = f"({text} / {d!r})"
        return text

    buffers = "\n".join(f"    double *restrict b_{name} = buffer + {k} * STRIDE;"
                        for k, name in enumerate(_BUFFER_NAMES))
    outs = "\n".join(f"    double *restrict o_{k} = buffer + {len(_BUFFER_NAMES) + k} * STRIDE;"
                     for k in range(outputs))
    array_list = ", ".join(f"b_{BUFFERS[a]}" for a in arrays) or "0"
    out_list = ", ".join(f"o_{k}" for k in range(outputs))
    names = [f"b_{name}" for name in _BUFFER_NAMES]
    pad = "\n".join(f"            {b}[i] = {b}[n - 1];" for b in names)
    objectives = "\n".join(
        f"            {{ const double v = {value(c)};\n"
        f"              keep_first_min(bv + {2 * k}, br + {2 * k}, v, r);\n"
        f"              if (ok) keep_first_min(bv + {2 * k + 1}, br + {2 * k + 1}, v, r); }}"
        for k, c in enumerate(columns))
    deadline, budget, power = (value(c) for c in constraints)
    return f"""
#include <stdlib.h>

#define CHUNK {CHUNK}
/* buffers 3 cache lines further apart than CHUNK doubles (a multiple of 4 KiB): the ~40
   streams of the loops then fall in different L1 sets */
#define STRIDE (CHUNK + 24)
#define LANES {LANES}
#define NTAIL {len(TAIL_COLUMNS)}
#define NHEAD {len(HEAD_COLUMNS)}
#define NCOLUMNS {len(columns)}
#define RADIX {EXPERT_RADIX}LL

/* the first minimum: NaN is larger than every number, ties keep the earlier row */
static inline void keep_first_min(double *best, long long *row, double v, long long r)
{{
    if (*row < 0 || (*best != *best && v == v) || v < *best) {{ *best = v; *row = r; }}
}}

/* Rows first .. last - 1 of the layout space: decode, flags, kernel, per-group minima.
   best_value / best_row: groups x NCOLUMNS x (fitting, feasible), updated in place;
   stats: (fitting candidates, leanest memory, its row), updated in place.
   Returns 0, or -1 if the buffers could not be allocated. */
int capplan_search(long long first, long long last, long long heads,
    const long long *restrict ends, const long long *restrict per_row,
    const double *restrict head, const int *restrict group,
    const long long *const *restrict tail_values, const long long *restrict tail_widths,
    const long long *const *restrict tail_counts,
    const double *restrict scalars, const double *restrict params,
    const double *restrict group_spares, const int *restrict group_row,
    const double *restrict table,
    double *restrict best_value, long long *restrict best_row, double *restrict stats)
{{
    const double domain = params[0], layers = params[1], hbm = params[2];
    const int use_deadline = params[3] != 0.0, use_budget = params[5] != 0.0,
              use_power = params[7] != 0.0;
    const double deadline = params[4], budget = params[6], power = params[8];
    double *buffer = malloc(sizeof(double) * STRIDE * ({len(_BUFFER_NAMES)} + {outputs}));
    int *index = malloc(sizeof(int) * CHUNK);
    int *groups = malloc(sizeof(int) * CHUNK);
    if (!buffer || !index || !groups) {{ free(buffer); free(index); free(groups); return -1; }}
{buffers}
{outs}
    const double *arrays[] = {{{array_list}}};
    double *out[] = {{{out_list}}};

    /* the first row's table row and its position in each list */
    long long lo = 0, hi = heads;
    while (lo < hi) {{ const long long mid = lo + (hi - lo) / 2;
                      if (ends[mid] > first) hi = mid; else lo = mid + 1; }}
    long long h = lo, pos[NTAIL];
    long long rest = first - (ends[h] - per_row[h]);
    for (int k = NTAIL - 1; k >= 0; k--) {{
        const long long c = tail_counts[k][h];
        pos[k] = rest % c; rest /= c;
    }}
    long long fitting = 0;
    for (long long start = first; start < last; start += CHUNK) {{
        const long n = last - start < CHUNK ? (long)(last - start) : CHUNK;
        for (long i = 0; i < n; i++) {{
            const double *row = head + h * NHEAD;
            b_tp[i] = row[0]; b_cp[i] = row[1]; b_pp[i] = row[2]; b_vp[i] = row[3];
            b_micro_batch[i] = row[4]; b_dp[i] = row[5]; b_gpus[i] = row[6];
            const long long expert = tail_values[0][h * tail_widths[0] + pos[0]];
            const long long zero_hsdp = tail_values[2][h * tail_widths[2] + pos[2]];
            b_ep[i] = (double)(expert / RADIX);
            b_etp[i] = (double)(expert % RADIX);
            b_rec[i] = (double)tail_values[1][h * tail_widths[1] + pos[1]];
            b_zero[i] = (double)(zero_hsdp / 2);
            b_shard[i] = zero_hsdp % 2 == 1 ? row[7] : row[5];
            b_sp[i] = (double)tail_values[3][h * tail_widths[3] + pos[3]];
            const int g = group[h];
            groups[i] = g;
            index[i] = group_row[g];
            b_spare_nodes[i] = group_spares[g];
            int k = NTAIL - 1;  /* the next row: the last list's position first */
            for (; k >= 0; k--) {{
                if (++pos[k] < tail_counts[k][h]) break;
                pos[k] = 0;
            }}
            if (k < 0) {{
                do h++; while (h < heads && per_row[h] == 0);
            }}
        }}
        /* every row through the vectorised loops: the tail padded with the last row */
        const long padded = (n + LANES - 1) / LANES * LANES;
        for (long i = n; i < padded; i++) {{
{pad}
            index[i] = index[n - 1];
        }}
{_FLAGS}
        search_kernel(padded, scalars, arrays, index, table, out);
        for (long i = 0; i < n; i++) {{
            const long long r = start + i;
            const double m = o_{memory}[i];
            if (stats[2] < 0.0 || (stats[1] != stats[1] && m == m) || m < stats[1]) {{
                stats[1] = m; stats[2] = (double)r;
            }}
            if (!(m <= hbm)) continue;
            fitting++;
            const int ok = (!use_deadline || {deadline} <= deadline)
                && (!use_budget || {budget} <= budget)
                && (!use_power || {power} <= power);
            double *bv = best_value + (long long)groups[i] * 2 * NCOLUMNS;
            long long *br = best_row + (long long)groups[i] * 2 * NCOLUMNS;
{objectives}
        }}
    }}
    stats[0] += (double)fitting;
    free(buffer); free(index); free(groups);
    return 0;
}}
"""


class CompiledSearch:
    """``capplan_search`` for one kernel: the C function and what it reads, in order."""

    def __init__(self, function, scalars: tuple[str, ...], split, columns: tuple[str, ...]):
        self.function, self.scalars, self.split, self.columns = function, scalars, split, columns


_ARGTYPES = [ctypes.c_longlong, ctypes.c_longlong, ctypes.c_longlong] + [ctypes.c_void_p] * 15


def compiled_search(outputs: tuple[str, ...], array_inputs: frozenset[str],
                    objectives: tuple[str, ...], constraints: tuple[str, str, str],
                    memory: str = "memory_per_gpu_bytes") -> CompiledSearch | None:
    """The compiled search for kernel ``outputs`` with these per-candidate inputs, reducing
    the columns ``objectives`` (kernel outputs or their unit conversions) under the
    ``constraints`` (deadline, budget and power columns); ``None`` where it cannot be built."""
    key = (outputs, array_inputs, objectives, constraints, memory)
    with _BUILD_LOCK:  # threads of one search wait for its one build
        if key not in _BUILT:
            _BUILT[key] = _build(*key)
        return _BUILT[key]


def _build(outputs, array_inputs, objectives, constraints, memory) -> CompiledSearch | None:
    from planner.engine import kernel as generated
    from planner.engine import native
    from planner.engine.columns import conversions

    if native.mode() == "numpy" or not array_inputs <= set(BUFFERS):
        return None
    split = generated.split_kernel(outputs, array_inputs)
    with generated.BUILD_LOCK:
        trees = generated.split_kernel_trees(outputs, array_inputs)
    if split is None or trees is None:
        return None
    _, main, shared = trees
    try:
        kernel, scalars, arrays = native.c_source(main, array_inputs, shared,
                                                  name="search_kernel", storage="static")
    except native.Untranslatable:
        return None
    units = {name: (source, divisor) for name, source, divisor in conversions()}

    def spec(column: str) -> tuple[int, tuple[float, ...]]:
        divisors: list[float] = []
        while column in units:
            column, divisor = units[column]
            divisors.insert(0, divisor)
        return outputs.index(column), tuple(divisors)

    source = kernel + _driver(arrays, len(outputs), [spec(c) for c in objectives],
                              [spec(c) for c in constraints], outputs.index(memory))
    function = native.load(source, "capplan_search", _ARGTYPES, ctypes.c_int)
    return None if function is None else CompiledSearch(function, scalars, split, objectives)


_BUILT: dict = {}
_BUILD_LOCK = threading.Lock()
_LOCK = threading.Lock()


class _SpaceTables:
    """A layout space's tables as the C function reads them (contiguous, typed)."""

    def __init__(self, space):
        self.ends = np.ascontiguousarray(space.ends, dtype=np.int64)
        self.per_row = np.ascontiguousarray(space.per_row, dtype=np.int64)
        self.head = np.ascontiguousarray(np.stack(
            [np.asarray(space.head[c], dtype=float) for c in HEAD_COLUMNS], axis=1))
        names = tuple(name for name, *_ in space.lists)
        if names != TAIL_COLUMNS:
            raise ValueError(f"layout space lists {names}, the C search reads {TAIL_COLUMNS}")
        self.values = [np.ascontiguousarray(v, dtype=np.int64) for _, v, _, _ in space.lists]
        self.counts = [np.ascontiguousarray(c, dtype=np.int64) for *_, c in space.lists]
        self.widths = np.array([w for _, _, w, _ in space.lists], dtype=np.int64)
        self.value_pointers = _pointers(self.values, np.uintp)
        self.count_pointers = _pointers(self.counts, np.uintp)


def _pointers(arrays, dtype) -> np.ndarray:
    return np.array([a.ctypes.data for a in arrays], dtype=dtype)


def _tables(space) -> _SpaceTables:
    with _LOCK:
        tables = _TABLES.get(space)
        if tables is None:
            tables = _TABLES[space] = _SpaceTables(space)
    return tables


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class SearchResult:
    """What :func:`search` found in a slice: the kept rows and the slice's statistics."""

    def __init__(self, rows: np.ndarray, fitting: int, min_memory_bytes: float,
                 min_memory_row: int):
        self.rows, self.fitting = rows, fitting
        self.min_memory_bytes, self.min_memory_row = min_memory_bytes, min_memory_row


def search(space, inputs: dict, start: int, stop: int, *, outputs: tuple[str, ...],
           objectives: tuple[str, ...], constraints: tuple[str, str, str],
           limits: tuple[float | None, float | None, float | None]) -> SearchResult | None:
    """The rows ``start`` .. ``stop`` of ``space`` reduced in C (module docstring): per GPU
    count and objective column, the first minimum among fitting and among feasible rows.

    ``inputs``: the run model's scalar inputs (``spare_nodes`` may be ``-1``, auto);
    ``outputs``: the kernel outputs computed (memory and the columns' sources);
    ``limits``: the deadline, budget and power cap in the constraint columns' units
    (``None``: no limit).  ``None`` where the compiled search cannot run.
    """
    from planner.engine.evaluator import prelude_table
    from planner.engine.kernel import partial_kernel
    from planner.engine.spares import resolve_spares

    _, names = partial_kernel(outputs)
    per_candidate = set(BUFFERS) - {"spare_nodes"}
    if any(np.ndim(inputs[k]) for k in names if k not in per_candidate):
        return None  # an input varies per candidate that the loop does not decode
    gpus = space.gpu_counts(start, stop).astype(float)
    if gpus.size == 0:
        return SearchResult(np.empty(0, dtype=np.int64), 0, np.inf, -1)
    spares = resolve_spares({**inputs, "gpus": gpus})["spare_nodes"]
    array_inputs = frozenset(k for k in names if k in per_candidate
                             or (k == "spare_nodes" and np.ndim(spares)))
    compiled = compiled_search(outputs, array_inputs, objectives, constraints)
    if compiled is None:
        return None
    tables = _tables(space)
    prelude, prelude_names = compiled.split[0], compiled.split[1]
    table, group_row = prelude_table(prelude, prelude_names,
                                     {**inputs, "gpus": gpus, "spare_nodes": spares})
    group = np.searchsorted(gpus, space.head["gpus"]).clip(0, gpus.size - 1).astype(np.int32)
    scalars = np.array([float(inputs[k]) for k in compiled.scalars], dtype=float)
    domain = float(inputs["scale_up_domain_gpus"])
    params = np.array([domain, float(inputs["layers"]), float(inputs["hbm_bytes"]),
                       *(v for limit in limits
                         for v in ((0.0, 0.0) if limit is None else (1.0, float(limit))))],
                      dtype=float)
    group_spares = np.ascontiguousarray(np.broadcast_to(np.asarray(spares, dtype=float),
                                                        gpus.shape))
    group_row = np.ascontiguousarray(group_row, dtype=np.int32)
    table = np.ascontiguousarray(table, dtype=float)
    slots = gpus.size * 2 * len(objectives)
    best_value = np.full(slots, np.nan)
    best_row = np.full(slots, -1, dtype=np.int64)
    stats = np.array([0.0, np.nan, -1.0])
    status = compiled.function(
        int(start), int(stop), int(space.head["gpus"].size),
        tables.ends.ctypes.data, tables.per_row.ctypes.data, tables.head.ctypes.data,
        group.ctypes.data, tables.value_pointers.ctypes.data, tables.widths.ctypes.data,
        tables.count_pointers.ctypes.data, scalars.ctypes.data, params.ctypes.data,
        group_spares.ctypes.data, group_row.ctypes.data, table.ctypes.data,
        best_value.ctypes.data, best_row.ctypes.data, stats.ctypes.data)
    if status != 0:
        raise MemoryError("capplan_search: cannot allocate its chunk buffers")
    rows = np.unique(best_row[best_row >= 0])
    return SearchResult(rows, int(stats[0]), float(stats[1]), int(stats[2]))
