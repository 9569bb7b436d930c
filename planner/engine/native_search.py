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

#: Kernel inputs the loop computes per candidate -> its C buffer (``spare_nodes``: the
#: candidate's GPU count's).
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
    """The C of ``capplan_search`` and ``capplan_layouts`` around the kernel
    ``search_kernel`` (``arrays``: its array arguments; ``columns``/``constraints``:
    (output index, divisors) of each objective and of the deadline, budget and power
    constraints)."""
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
    pad = "\n".join(f"        b_{name}[i] = b_{name}[n - 1];" for name in _BUFFER_NAMES)
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
   streams of the loops then fall in different L1 sets (at CHUNK apart, 4 KiB aliasing
   made decoding alone cost 70 ns a row) */
#define STRIDE (CHUNK + 24)
#define BUFFERS {len(_BUFFER_NAMES)}
#define LANES {LANES}
#define NTAIL {len(TAIL_COLUMNS)}
#define NHEAD {len(HEAD_COLUMNS)}
#define NCOLUMNS {len(columns)}
#define RADIX {EXPERT_RADIX}LL

/* A layout space's tables (planner.engine.space.LayoutSpace) and a task's GPU counts. */
struct space {{
    long long heads;                       /* table rows */
    const long long *ends, *per_row;       /* per table row: its last layout + 1, its layouts */
    const double *head;                    /* table rows x NHEAD */
    const int *group;                      /* per table row: its GPU count's group */
    const long long *const *tail_values;   /* per list: allowed values, per table row */
    const long long *tail_widths;
    const long long *const *tail_counts;   /* per list: allowed values per table row */
    const double *group_spares;            /* per group: spare nodes */
    const int *group_row;                  /* per group: its row of the kernel's table */
    double domain, layers;                 /* scale-up domain [GPUs], transformer layers */
}};

/* Where the walk through the rows stands: a table row and each list's position. */
struct cursor {{ long long h, pos[NTAIL]; }};

static void seek(const struct space *s, struct cursor *c, long long first)
{{
    long long lo = 0, hi = s->heads;
    while (lo < hi) {{ const long long mid = lo + (hi - lo) / 2;
                      if (s->ends[mid] > first) hi = mid; else lo = mid + 1; }}
    c->h = lo;
    long long rest = first - (s->ends[lo] - s->per_row[lo]);
    for (int k = NTAIL - 1; k >= 0; k--) {{
        const long long count = s->tail_counts[k][lo];
        c->pos[k] = rest % count; rest /= count;
    }}
}}

/* The next n rows (n <= CHUNK) into the buffers: layout, flags, each row's kernel-table
   row (index) and group; rows n .. padded - 1 copy row n - 1.  Returns padded. */
static long fill(const struct space *s, struct cursor *c, long n, double *restrict buffer,
                 int *restrict index, int *restrict groups)
{{
    const double domain = s->domain, layers = s->layers;
{buffers}
    long long h = c->h;
    for (long i = 0; i < n; i++) {{
        const double *row = s->head + h * NHEAD;
        b_tp[i] = row[0]; b_cp[i] = row[1]; b_pp[i] = row[2]; b_vp[i] = row[3];
        b_micro_batch[i] = row[4]; b_dp[i] = row[5]; b_gpus[i] = row[6];
        const long long expert = s->tail_values[0][h * s->tail_widths[0] + c->pos[0]];
        const long long zero_hsdp = s->tail_values[2][h * s->tail_widths[2] + c->pos[2]];
        b_ep[i] = (double)(expert / RADIX);
        b_etp[i] = (double)(expert % RADIX);
        b_rec[i] = (double)s->tail_values[1][h * s->tail_widths[1] + c->pos[1]];
        b_zero[i] = (double)(zero_hsdp / 2);
        b_shard[i] = zero_hsdp % 2 == 1 ? row[7] : row[5];
        b_sp[i] = (double)s->tail_values[3][h * s->tail_widths[3] + c->pos[3]];
        const int g = s->group[h];
        groups[i] = g;
        index[i] = s->group_row[g];
        b_spare_nodes[i] = s->group_spares[g];
        int k = NTAIL - 1;  /* the next row: the last list's position first */
        for (; k >= 0; k--) {{
            if (++c->pos[k] < s->tail_counts[k][h]) break;
            c->pos[k] = 0;
        }}
        if (k < 0) {{
            do h++; while (h < s->heads && s->per_row[h] == 0);
        }}
    }}
    c->h = h;
    /* every row through the vectorised loops: the tail padded with the last row */
    const long padded = (n + LANES - 1) / LANES * LANES;
    for (long i = n; i < padded; i++) {{
{pad}
        index[i] = index[n - 1];
        groups[i] = groups[n - 1];
    }}
{_FLAGS}
    return padded;
}}

/* the first minimum: NaN is larger than every number, ties keep the earlier row */
static inline void keep_first_min(double *best, long long *row, double v, long long r)
{{
    if (*row < 0 || (*best != *best && v == v) || v < *best) {{ *best = v; *row = r; }}
}}

/* Rows first .. last - 1 of the layout space: decode, flags, kernel, per-group minima.
   best_value / best_row: groups x NCOLUMNS x (fitting, feasible), updated in place;
   stats: (fitting candidates, leanest memory, its row), updated in place.
   Returns 0, or -1 if the buffers could not be allocated. */
int capplan_search(long long first, long long last, const struct space *restrict s,
    const double *restrict scalars, const double *restrict params,
    const double *restrict table,
    double *restrict best_value, long long *restrict best_row, double *restrict stats)
{{
    const double hbm = params[0];
    const int use_deadline = params[1] != 0.0, use_budget = params[3] != 0.0,
              use_power = params[5] != 0.0;
    const double deadline = params[2], budget = params[4], power = params[6];
    double *buffer = malloc(sizeof(double) * STRIDE * (BUFFERS + {outputs}));
    int *index = malloc(sizeof(int) * CHUNK);
    int *groups = malloc(sizeof(int) * CHUNK);
    if (!buffer || !index || !groups) {{ free(buffer); free(index); free(groups); return -1; }}
{buffers}
{outs}
    const double *arrays[] = {{{array_list}}};
    double *out[] = {{{out_list}}};
    struct cursor c;
    seek(s, &c, first);
    long long fitting = 0;
    for (long long start = first; start < last; start += CHUNK) {{
        const long n = last - start < CHUNK ? (long)(last - start) : CHUNK;
        const long padded = fill(s, &c, n, buffer, index, groups);
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

/* The kernel inputs of rows first .. last - 1 as the search computes them: out holds
   BUFFERS arrays of last - first values, in the order of native_search._BUFFER_NAMES,
   then the rows' kernel-table rows (as doubles).  Returns 0, or -1 (no memory). */
int capplan_layouts(long long first, long long last, const struct space *restrict s,
                    double *const *restrict out)
{{
    double *buffer = malloc(sizeof(double) * STRIDE * BUFFERS);
    int *index = malloc(sizeof(int) * CHUNK);
    int *groups = malloc(sizeof(int) * CHUNK);
    if (!buffer || !index || !groups) {{ free(buffer); free(index); free(groups); return -1; }}
    struct cursor c;
    seek(s, &c, first);
    for (long long start = first; start < last; start += CHUNK) {{
        const long n = last - start < CHUNK ? (long)(last - start) : CHUNK;
        fill(s, &c, n, buffer, index, groups);
        for (int b = 0; b < BUFFERS; b++)
            for (long i = 0; i < n; i++) out[b][start - first + i] = buffer[b * STRIDE + i];
        for (long i = 0; i < n; i++) out[BUFFERS][start - first + i] = (double)index[i];
    }}
    free(buffer); free(index); free(groups);
    return 0;
}}
"""


class CompiledSearch:
    """The compiled search for one kernel: ``capplan_search``, ``capplan_layouts`` and what
    they read (the kernel's scalar inputs in order; the split kernel's prelude)."""

    def __init__(self, search, layouts, scalars: tuple[str, ...], split):
        self.search, self.layouts, self.scalars, self.split = search, layouts, scalars, split


class _Space(ctypes.Structure):
    """``struct space`` of the C source."""

    _fields_ = [("heads", ctypes.c_longlong), ("ends", ctypes.c_void_p),
                ("per_row", ctypes.c_void_p), ("head", ctypes.c_void_p),
                ("group", ctypes.c_void_p), ("tail_values", ctypes.c_void_p),
                ("tail_widths", ctypes.c_void_p), ("tail_counts", ctypes.c_void_p),
                ("group_spares", ctypes.c_void_p), ("group_row", ctypes.c_void_p),
                ("domain", ctypes.c_double), ("layers", ctypes.c_double)]


_SEARCH_ARGTYPES = [ctypes.c_longlong, ctypes.c_longlong, ctypes.POINTER(_Space)] + \
    [ctypes.c_void_p] * 6
_LAYOUTS_ARGTYPES = [ctypes.c_longlong, ctypes.c_longlong, ctypes.POINTER(_Space),
                     ctypes.c_void_p]


def compiled_search(outputs: tuple[str, ...], array_inputs: frozenset[str],
                    objectives: tuple[str, ...], constraints: tuple[str, str, str],
                    memory: str = "memory_per_gpu_bytes") -> CompiledSearch | None:
    """The compiled search for kernel ``outputs`` with these per-candidate inputs, reducing
    the columns ``objectives`` (kernel outputs or their unit conversions) under the
    ``constraints`` (deadline, budget and power columns); ``None`` where it cannot be
    built.  Built once per process (and compiled once per machine)."""
    from planner.engine import native

    if native.mode() == "numpy":
        return None
    key = (outputs, array_inputs, objectives, constraints, memory)
    with _BUILD_LOCK:  # the threads of one search wait for its one build
        if key not in _BUILT:
            _BUILT[key] = _build(*key)
        return _BUILT[key]


def _build(outputs, array_inputs, objectives, constraints, memory) -> CompiledSearch | None:
    from planner.engine import kernel as generated
    from planner.engine import native
    from planner.engine.columns import conversions

    if not array_inputs <= set(BUFFERS):
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
    search = native.load(source, "capplan_search", _SEARCH_ARGTYPES, ctypes.c_int)
    layouts = native.load(source, "capplan_layouts", _LAYOUTS_ARGTYPES, ctypes.c_int)
    if search is None or layouts is None:
        return None
    return CompiledSearch(search, layouts, scalars, split)


_BUILT: dict = {}
_BUILD_LOCK = threading.Lock()


class _SpaceTables:
    """A layout space's tables as the C code reads them (contiguous, typed); built once
    per space (:func:`_tables`)."""

    def __init__(self, space):
        self.ends = np.ascontiguousarray(space.ends, dtype=np.int64)
        self.per_row = np.ascontiguousarray(space.per_row, dtype=np.int64)
        self.head = np.ascontiguousarray(np.stack(
            [np.asarray(space.head[c], dtype=float) for c in HEAD_COLUMNS], axis=1))
        self.values = [np.ascontiguousarray(v, dtype=np.int64) for _, v, _, _ in space.lists]
        self.counts = [np.ascontiguousarray(c, dtype=np.int64) for *_, c in space.lists]
        self.widths = np.array([w for _, _, w, _ in space.lists], dtype=np.int64)
        self.value_pointers = np.array([a.ctypes.data for a in self.values], dtype=np.uintp)
        self.count_pointers = np.array([a.ctypes.data for a in self.counts], dtype=np.uintp)
        self.gpus = np.asarray(space.head["gpus"], dtype=float)


def _tables(space) -> _SpaceTables:
    with _TABLES_LOCK:
        tables = _TABLES.get(space)
        if tables is None:
            tables = _TABLES[space] = _SpaceTables(space)
    return tables


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


class _Call:
    """What one call of the C code reads besides its rows: the compiled search, the
    space and GPU-count tables (kept alive for the call) and the kernel's inputs."""

    def __init__(self, compiled: CompiledSearch, space, inputs: dict, gpus: np.ndarray,
                 spares, table: np.ndarray, group_row: np.ndarray):
        tables = _tables(space)
        self.compiled, self.tables = compiled, tables
        self.group = np.searchsorted(gpus, tables.gpus).clip(0, gpus.size - 1).astype(np.int32)
        self.group_spares = np.ascontiguousarray(
            np.broadcast_to(np.asarray(spares, dtype=float), gpus.shape))
        self.group_row = np.ascontiguousarray(group_row, dtype=np.int32)
        self.table = np.ascontiguousarray(table, dtype=float)
        self.scalars = np.array([float(inputs[k]) for k in compiled.scalars], dtype=float)
        self.space = _Space(
            tables.gpus.size, tables.ends.ctypes.data, tables.per_row.ctypes.data,
            tables.head.ctypes.data, self.group.ctypes.data, tables.value_pointers.ctypes.data,
            tables.widths.ctypes.data, tables.count_pointers.ctypes.data,
            self.group_spares.ctypes.data, self.group_row.ctypes.data,
            float(inputs["scale_up_domain_gpus"]), float(inputs["layers"]))


def _prepare(space, inputs: dict, start: int, stop: int, outputs: tuple[str, ...],
             objectives: tuple[str, ...], constraints: tuple[str, str, str]):
    """``(gpus, call)`` for rows ``start`` .. ``stop``: the distinct GPU counts and the
    :class:`_Call` (``None`` where the compiled search cannot run; no GPU count: no call)."""
    from planner.engine.evaluator import prelude_table
    from planner.engine.kernel import partial_kernel
    from planner.engine.spares import resolve_spares

    if tuple(name for name, *_ in space.lists) != TAIL_COLUMNS \
            or not set(HEAD_COLUMNS) <= set(space.head):
        return None  # a space of another shape than the C code decodes
    _, names = partial_kernel(outputs)
    per_candidate = set(BUFFERS) - {"spare_nodes"}
    if any(np.ndim(inputs[k]) for k in names if k not in per_candidate) \
            or any(np.ndim(inputs[k]) for k in ("scale_up_domain_gpus", "layers", "hbm_bytes")):
        return None  # an input varies per candidate that the loop does not decode
    gpus = space.gpu_counts(start, stop).astype(float)
    if gpus.size == 0:
        return gpus, None
    spares = resolve_spares({**inputs, "gpus": gpus})["spare_nodes"]
    array_inputs = frozenset(k for k in names if k in per_candidate
                             or (k == "spare_nodes" and np.ndim(spares)))
    compiled = compiled_search(outputs, array_inputs, objectives, constraints)
    if compiled is None:
        return None
    prelude, prelude_names = compiled.split[0], compiled.split[1]
    table, group_row = prelude_table(prelude, prelude_names,
                                     {**inputs, "gpus": gpus, "spare_nodes": spares})
    return gpus, _Call(compiled, space, inputs, gpus, spares, table, group_row)


class SearchResult:
    """What :func:`search` found in a slice: the kept rows and the slice's statistics.

    ``best_rows``/``best_values``: per GPU count (``gpus``), objective and {fitting,
    feasible} (the last axis), the row kept (-1: none) and its value.
    """

    def __init__(self, gpus, best_rows, best_values, fitting: int, min_memory_bytes: float,
                 min_memory_row: int):
        self.gpus, self.best_rows, self.best_values = gpus, best_rows, best_values
        self.rows = np.unique(best_rows[best_rows >= 0])
        self.fitting = fitting
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
    prepared = _prepare(space, inputs, start, stop, outputs, objectives, constraints)
    if prepared is None:
        return None
    gpus, call = prepared
    shape = (gpus.size, len(objectives), 2)
    best_value, best_row = np.full(shape, np.nan), np.full(shape, -1, dtype=np.int64)
    stats = np.array([0.0, np.nan, -1.0])
    if call is not None:
        params = np.array([float(inputs["hbm_bytes"]),
                           *(v for limit in limits
                             for v in ((0.0, 0.0) if limit is None else (1.0, float(limit))))],
                          dtype=float)
        status = call.compiled.search(
            int(start), int(stop), ctypes.byref(call.space), call.scalars.ctypes.data,
            params.ctypes.data, call.table.ctypes.data, best_value.ctypes.data,
            best_row.ctypes.data, stats.ctypes.data)
        if status != 0:
            raise MemoryError("capplan_search: cannot allocate its chunk buffers")
    return SearchResult(gpus, best_row, best_value, int(stats[0]), float(stats[1]),
                        int(stats[2]))


def layouts(space, inputs: dict, start: int, stop: int, *, outputs: tuple[str, ...],
            objectives: tuple[str, ...], constraints: tuple[str, str, str]) -> dict | None:
    """The kernel inputs the compiled search computes for rows ``start`` .. ``stop``: the
    decoded layout and its flags by kernel input name (see :data:`BUFFERS`), ``rec`` and
    ``zero`` (codes), and ``table_row`` (each row's row of the GPU-count table); ``None``
    where the compiled search cannot run.  For tests: they must equal
    :func:`planner.engine.space.layout_flags` of :meth:`LayoutSpace.blocks`, bit for bit."""
    prepared = _prepare(space, inputs, start, stop, outputs, objectives, constraints)
    if prepared is None:
        return None
    _, call = prepared
    n = max(int(stop) - int(start), 0)
    out = np.empty((len(_BUFFER_NAMES) + 1, n))
    if call is not None and n:
        pointers = np.array([row.ctypes.data for row in out], dtype=np.uintp)
        if call.compiled.layouts(int(start), int(stop), ctypes.byref(call.space),
                                 pointers.ctypes.data) != 0:
            raise MemoryError("capplan_layouts: cannot allocate its chunk buffers")
    columns = dict(zip(_BUFFER_NAMES, out[:-1], strict=True))
    found = {name: columns[buffer] for name, buffer in BUFFERS.items()}
    found.update(rec=columns["rec"], zero=columns["zero"], table_row=out[-1])
    return found
