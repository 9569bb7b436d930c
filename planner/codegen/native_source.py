"""The compiled backend's C source and its manifest, generated from the one model.

``python -m planner.codegen --only native`` writes

* ``planner/engine/run/_native_generated.c``: the functions of the optional extension
  ``planner.engine.run._native``, built by ``pip install`` where a C compiler works
  (``setup.py``), never at run time:

  - ``capplan_rows``: every output of the run-model kernel (the split kernel's main
    part, :func:`planner.engine.run.kernel.split_kernel_trees`) for candidates whose layout
    and flags are arrays (:data:`ROW_ARRAYS`); its GPU-count terms come in through a
    table computed by numpy;
  - ``capplan_search`` / ``capplan_layouts``: the search's inner loop
    (:mod:`planner.engine.search.native_search`): layouts decoded, their flags (the rules of
    :func:`planner.engine.inputs.layout_rules.derived_inputs`, traced to C), the kernel of the
    objectives and constraints, and the best rows per GPU count;
  - ``capplan_source_hash``: the hash of the rest of the file, so a stale build is
    recognised and not used.

* ``planner/engine/run/_native_manifest.py``: what those functions read and return (input
  and output names in order), the hash, and the kernel's hash.

Nothing here is hand-written C of a model rule: the kernel statements come from the
generated kernel's syntax tree (:mod:`planner.codegen.c_translate`), the flags from the
layout rules, the reduction from :data:`planner.engine.search.optimize.OBJECTIVE_COLUMNS` and
the column registry's unit conversions.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

from planner.codegen import specialise
from planner.codegen.c_translate import (
    C_CODES,
    C_OPS,
    CExpr,
    c_source,
    c_text,
    vector_declarations,
)
from planner.engine.inputs.layout_rules import (
    DERIVED,
    FLAG_CONTEXT_NAMES,
    LAYOUT_NAMES,
    derived_inputs,
)
from planner.engine.layouts.space import HEAD_COLUMNS, LAYOUT_COLUMNS, TAIL_COLUMNS, unpacked
from planner.engine.run import kernel as generated
from planner.engine.run.columns import conversions
from planner.engine.run.kernel_run import needed_outputs
from planner.engine.run.model import OUTPUTS
from planner.engine.run.native import LANES
from planner.engine.run.reductions import TIE_DROP
from planner.engine.search.native_search import BUFFER_NAMES, BUFFERS, CHUNK, buffer_of
from planner.engine.search.optimize import OBJECTIVE_COLUMNS, SEARCH_COLUMNS

ENGINE = Path(__file__).resolve().parents[1] / "engine" / "run"
SOURCE = ENGINE / "_native_generated.c"
MANIFEST = ENGINE / "_native_manifest.py"

#: The kernel inputs that are arrays of candidates in both compiled kernels: the layout,
#: its flags, the GPU count and the spare count (every other input is one scalar a call).
ROW_ARRAYS = frozenset(BUFFERS)
#: The search's outputs (memory and the sources of its objective and constraint columns).
SEARCH_OUTPUTS = needed_outputs(("memory_per_gpu_bytes", *SEARCH_COLUMNS))
#: The columns whose minima the search keeps: the objectives', and the peak power (the
#: plan nearest to a power cap, planner.engine.search.explain).
SEARCH_OBJECTIVES = (*OBJECTIVE_COLUMNS.values(), "peak_power_mw")
#: The deadline, budget and power columns the constraints limit.
SEARCH_CONSTRAINTS = ("wall_days", "cost_usd", "peak_power_mw")
#: The sets of rows the search keeps minima among (planner.engine.search.native_search.SETS):
#: those that fit; that also meet every constraint; every constraint but the deadline,
#: but the budget, but the power cap.  An unset constraint is met by every row.
SEARCH_SETS = ("1", "met_d && met_b && met_p", "met_b && met_p", "met_d && met_p",
               "met_d && met_b")

#: Vector math functions taken from glibc's libmvec where the build links it.
VECTOR_MATH = ("exp", "log", "log1p", "expm1", "pow")

#: The C every generated function needs: numpy's minimum/maximum and square.
C_PRELUDE = """#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* numpy.minimum / numpy.maximum: NaN if either argument is NaN, the second of equals */
static inline double np_minimum(double a, double b) { const double m = a < b ? a : b; return a == a ? m : a; }
static inline double np_maximum(double a, double b) { const double m = a > b ? a : b; return a == a ? m : a; }
static inline double np_square(double a) { return a * a; }
/* numpy.where with a condition the same for every row (a scalar input's): a or b picked by
   their bits under a mask, not by a select on a scalar condition, which stops GCC
   vectorising the loop (GCC 12: "relevant stmt not supported") */
static inline double np_pick(double flag, double a, double b)
{
    const uint64_t mask = flag != 0.0 ? ~UINT64_C(0) : UINT64_C(0);
    uint64_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    const uint64_t picked = (ua & mask) | (ub & ~mask);
    double out;
    memcpy(&out, &picked, sizeof out);
    return out;
}
"""

_HEADER = f"""/* Generated by `python -m planner.codegen` (planner/codegen/native_source.py) from
   planner/engine/run/_kernel_generated.py and planner/engine/inputs/layout_rules.py: do not edit.
   Built by `pip install` as the optional extension planner.engine.run._native (setup.py);
   loaded with ctypes by planner/engine/run/native.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* glibc's vector exp/log/pow (libmvec), where setup.py links it; GCC's simd attribute
   (Clang has none: it calls the scalar ones, within native.RELATIVE_TOLERANCE) */
#if defined(CAPPLAN_LIBMVEC) && !defined(__clang__)
{vector_declarations(VECTOR_MATH)}#endif

/* one copy per x86-64 level, chosen when the library is loaded (GCC >= 12) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 \\
    && defined(__linux__)
#define CAPPLAN_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", \\
                                                    "arch=x86-64-v4")))
#else
#define CAPPLAN_CLONES
#endif

{C_PRELUDE}"""

_MODULE = """
/* an importable (empty) module, so setuptools builds and installs it as an extension */
static struct PyModuleDef capplan_native_module = {
    PyModuleDef_HEAD_INIT, "_native", "capplan's compiled kernels (loaded with ctypes)", -1, NULL
};
PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&capplan_native_module); }
"""


def _kernel_part(outputs: tuple[str, ...], name: str, storage: str,
                 variants: tuple[tuple[str, tuple[str, ...]], ...] = ()):
    """The C of the split kernel's main part for ``outputs`` with :data:`ROW_ARRAYS`
    arrays, and its manifest entry; with ``variants`` (suffix, scalar inputs taken as
    zero), also one specialised copy each (:mod:`planner.codegen.specialise`), named
    ``name_suffix``, reading the same scalars, arrays and table."""
    arrays = ROW_ARRAYS & set(generated.partial_kernel(outputs)[1])
    trees = generated.split_kernel_trees(tuple(outputs), arrays)
    if trees is None:
        raise RuntimeError(f"{name}: the kernel has no GPU-count terms to split off")
    _, main, shared = trees
    text, scalars, array_names = c_source(main, arrays, shared, name=name, storage=storage)
    entry = {"outputs": tuple(outputs), "array_set": tuple(sorted(arrays)),
             "scalars": scalars, "arrays": array_names, "table": tuple(shared)}
    kept = []
    for suffix, zeros in variants:
        zeros = tuple(z for z in zeros if z in scalars)
        copy_text, copy_scalars, copy_arrays = c_source(
            specialise.folded(main, zeros), arrays, shared, name=f"{name}_{suffix}",
            storage=storage)
        if (copy_scalars, copy_arrays) != (scalars, array_names):
            raise RuntimeError(f"{name}_{suffix}: reads other inputs than {name}")
        text += "\n" + copy_text
        kept.append((suffix, zeros))
    if variants:
        entry["variants"] = tuple(kept)
    return text, entry


def flags_loop() -> str:
    """The layout rules (:func:`planner.engine.inputs.layout_rules.derived_inputs`, flash
    attention on as every search runs) traced to C: one vectorised loop over a chunk's
    decoded layouts that fills the flag buffers."""
    names = {"shard": "shard", "rec": "rec", "zero": "zero"}
    v = SimpleNamespace(**{k: CExpr(k) for k in (*LAYOUT_NAMES, *FLAG_CONTEXT_NAMES)})
    rules = derived_inputs(v, C_OPS, flash_attention=True)
    reads = ", ".join(f"{k} = b_{names.get(k, BUFFERS.get(k, k))}[i]" for k in LAYOUT_NAMES)
    lines = ["    #pragma omp simd", "    for (long i = 0; i < padded; i++) {",
             f"        const double {reads};"]
    for name in DERIVED:
        text = rules[name].text
        buffer = BUFFERS[name]
        if text != buffer:  # shard_ranks is the decoded shard group itself
            lines.append(f"        b_{buffer}[i] = {text};")
    lines.append("    }")
    return "\n".join(lines)


def decode_rows() -> str:
    """The C that decodes one search row into the layout buffers: the table row's
    :data:`~planner.engine.layouts.space.HEAD_COLUMNS` and each list's code, then the layout
    columns :func:`planner.engine.layouts.space.unpacked` makes of them, traced (the one place the
    packing is undone)."""
    head = [f"        const double head_{k} = row[{j}];" for j, k in enumerate(HEAD_COLUMNS)]
    codes = [f"        const double code_{k} = "
             f"(double)s->tail_values[{j}][h * s->tail_widths[{j}] + c->pos[{j}]];"
             for j, k in enumerate(TAIL_COLUMNS)]
    v = SimpleNamespace(**{k: CExpr(f"head_{k}") for k in HEAD_COLUMNS},
                        **{k: CExpr(f"code_{k}") for k in TAIL_COLUMNS})
    columns = {**{k: CExpr(f"head_{k}") for k in HEAD_COLUMNS}, **unpacked(v, C_CODES)}
    lines = ["        const double *row = s->head + h * NHEAD;", *head, *codes]
    lines += [f"        b_{buffer_of(k)}[i] = {c_text(columns[k])};" for k in LAYOUT_COLUMNS]
    return "\n".join(lines)


def _divided(spec) -> str:
    index, divisors = spec
    text = f"o_{index}[i]"
    for d in divisors:
        text = f"({text} / {d!r})"
    return text


def _column_spec(column: str) -> tuple[int, tuple[float, ...]]:
    """(index among :data:`SEARCH_OUTPUTS`, the divisors that convert it to ``column``)."""
    units = {name: (source, divisor) for name, source, divisor in conversions()}
    divisors: list[float] = []
    while column in units:
        column, divisor = units[column]
        divisors.insert(0, divisor)
    return SEARCH_OUTPUTS.index(column), tuple(divisors)


def kernel_choice(scalars: tuple[str, ...], variants) -> str:
    """The C function that picks the search kernel for a call: the first of ``variants``
    (suffix, scalar inputs taken as zero) whose inputs are all exactly zero in the call's
    ``scalars`` (in the order ``scalars``), else the full kernel."""
    lines = ["typedef void (*search_kernel_fn)(long, const double *restrict,",
             "    const double *const *restrict, const int *restrict, const double *restrict,",
             "    double *const *restrict);", "",
             "/* the most specialised kernel whose dropped inputs are all zero in this call",
             "   (planner/codegen/specialise.py); specialised == 0: the full kernel */",
             "static search_kernel_fn pick_kernel(const double *restrict scalars, int specialised)",
             "{", "    if (!specialised) return search_kernel;"]
    for suffix, zeros in variants:
        tests = " && ".join(f"scalars[{scalars.index(z)}] == 0.0" for z in zeros) or "1"
        lines.append(f"    if ({tests})\n        return search_kernel_{suffix};")
    lines += ["    return search_kernel;", "}"]
    return "\n".join(lines)


def search_driver(arrays: tuple[str, ...], scalars: tuple[str, ...], variants) -> str:
    """The C of ``capplan_search`` and ``capplan_layouts`` around ``search_kernel``
    (``arrays``: its array arguments; ``scalars``: its scalar ones; ``variants``: its
    specialised copies, :func:`kernel_choice`)."""
    outputs = len(SEARCH_OUTPUTS)
    columns = [_column_spec(c) for c in SEARCH_OBJECTIVES]
    deadline, budget, power = (_divided(_column_spec(c)) for c in SEARCH_CONSTRAINTS)
    memory = SEARCH_OUTPUTS.index("memory_per_gpu_bytes")
    buffers = "\n".join(f"    double *restrict b_{name} = buffer + {k} * STRIDE;"
                        for k, name in enumerate(BUFFER_NAMES))
    outs = "\n".join(f"    double *restrict o_{k} = buffer + {len(BUFFER_NAMES) + k} * STRIDE;"
                     for k in range(outputs))
    array_list = ", ".join(f"b_{BUFFERS[a]}" for a in arrays) or "0"
    out_list = ", ".join(f"o_{k}" for k in range(outputs))
    pad = "\n".join(f"        b_{name}[i] = b_{name}[n - 1];" for name in BUFFER_NAMES)
    keys = "\n".join(
        f"        t_{k}[i] = tie_key({_divided(c)});" for k, c in enumerate(columns))
    key_buffers = "\n".join(
        f"    double *restrict t_{k} = buffer + {len(BUFFER_NAMES) + outputs + k} * STRIDE;"
        for k in range(len(columns)))
    sets = ", ".join(SEARCH_SETS)
    key_list = ", ".join(f"t_{k}" for k in range(len(columns)))
    return kernel_choice(scalars, variants) + f"""
#define CHUNK {CHUNK}
/* buffers 3 cache lines further apart than CHUNK doubles (a multiple of 4 KiB): the ~40
   streams of the loops then fall in different L1 sets (at CHUNK apart, 4 KiB aliasing
   made decoding alone cost 70 ns a row) */
#define STRIDE (CHUNK + 24)
#define BUFFERS {len(BUFFER_NAMES)}
#define LANES {LANES}
#define NTAIL {len(TAIL_COLUMNS)}
#define NHEAD {len(HEAD_COLUMNS)}
#define NCOLUMNS {len(columns)}
#define NSETS {len(SEARCH_SETS)}

/* A layout space's tables (planner.engine.layouts.space.LayoutSpace) and a task's GPU counts. */
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
CAPPLAN_CLONES
static long fill(const struct space *s, struct cursor *c, long n, double *restrict buffer,
                 int *restrict index, int *restrict groups)
{{
    const double domain = s->domain, layers = s->layers;
{buffers}
    long long h = c->h;
    for (long i = 0; i < n; i++) {{
{decode_rows()}
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
    /* the layout rules (planner/engine/inputs/layout_rules.py), traced */
{flags_loop()}
    return padded;
}}

/* planner.engine.run.reductions.tie_key: v rounded to TIE_BITS significant bits, half to
   even, on its binary form; NaN and infinities unchanged (the same integer operations) */
static inline double tie_key(double v)
{{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    const uint64_t rounded = (u + {(1 << (TIE_DROP - 1)) - 1}ULL + ((u >> {TIE_DROP}) & 1ULL))
                             & ~{(1 << TIE_DROP) - 1}ULL;
    u = (u & 0x7FF0000000000000ULL) == 0x7FF0000000000000ULL ? u : rounded;
    memcpy(&v, &u, sizeof v);
    return v;
}}

/* the first minimum: NaN is larger than every number, ties keep the earlier row (the
   values compared are tie keys) */
static inline void keep_first_min(double *best, long long *row, double v, long long r)
{{
    if (*row < 0 || (*best != *best && v == v) || v < *best) {{ *best = v; *row = r; }}
}}

/* The compared columns' tie keys of a chunk, in one vectorised pass. */
CAPPLAN_CLONES
static void tie_keys(long n, {', '.join(f"const double *restrict o_{k}" for k in range(outputs))},
                     {', '.join(f"double *restrict t_{k}" for k in range(len(columns)))})
{{
    #pragma omp simd
    for (long i = 0; i < n; i++) {{
{keys}
    }}
}}

/* Rows first .. last - 1 of the layout space: decode, flags, kernel, per-group minima.
   params: HBM bytes, then (in use, limit) of the deadline, budget and power cap, then
   whether each of the NSETS sets and each of the NCOLUMNS columns is kept, then whether
   a specialised kernel may be used (pick_kernel).
   best_value / best_row: groups x NCOLUMNS x NSETS, updated in place (the values as
   compared: their tie keys);
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
    int used_sets[NSETS], used_columns[NCOLUMNS], nsets = 0, ncolumns = 0;
    for (int j = 0; j < NSETS; j++) if (params[7 + j] != 0.0) used_sets[nsets++] = j;
    for (int k = 0; k < NCOLUMNS; k++)
        if (params[7 + NSETS + k] != 0.0) used_columns[ncolumns++] = k;
    const search_kernel_fn kernel = pick_kernel(scalars, params[7 + NSETS + NCOLUMNS] != 0.0);
    double *buffer = malloc(sizeof(double) * STRIDE * (BUFFERS + {outputs} + NCOLUMNS));
    int *index = malloc(sizeof(int) * CHUNK);
    int *groups = malloc(sizeof(int) * CHUNK);
    if (!buffer || !index || !groups) {{ free(buffer); free(index); free(groups); return -1; }}
{buffers}
{outs}
{key_buffers}
    const double *keys[] = {{{key_list}}};
    const double *arrays[] = {{{array_list}}};
    double *out[] = {{{out_list}}};
    struct cursor c;
    seek(s, &c, first);
    long long fitting = 0;
    for (long long start = first; start < last; start += CHUNK) {{
        const long n = last - start < CHUNK ? (long)(last - start) : CHUNK;
        const long padded = fill(s, &c, n, buffer, index, groups);
        kernel(padded, scalars, arrays, index, table, out);
        tie_keys(padded, {', '.join(f"o_{k}" for k in range(outputs))}, {', '.join(f"t_{k}" for k in range(len(columns)))});
        for (long i = 0; i < n; i++) {{
            const long long r = start + i;
            const double m = o_{memory}[i];
            if (stats[2] < 0.0 || (stats[1] != stats[1] && m == m) || m < stats[1]) {{
                stats[1] = m; stats[2] = (double)r;
            }}
            if (!(m <= hbm)) continue;
            fitting++;
            const int met_d = !use_deadline || {deadline} <= deadline;
            const int met_b = !use_budget || {budget} <= budget;
            const int met_p = !use_power || {power} <= power;
            const int in[NSETS] = {{{sets}}};
            double *bv = best_value + (long long)groups[i] * NCOLUMNS * NSETS;
            long long *br = best_row + (long long)groups[i] * NCOLUMNS * NSETS;
            for (int q = 0; q < nsets; q++) {{
                const int j = used_sets[q];
                if (!in[j]) continue;
                for (int c = 0; c < ncolumns; c++) {{
                    const int k = used_columns[c];
                    keep_first_min(bv + k * NSETS + j, br + k * NSETS + j, keys[k][i], r);
                }}
            }}
        }}
    }}
    stats[0] += (double)fitting;
    free(buffer); free(index); free(groups);
    return 0;
}}

/* The kernel inputs of rows first .. last - 1 as the search computes them: out holds
   BUFFERS arrays of last - first values, in the order of native_search.BUFFER_NAMES,
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


def generate() -> tuple[str, str]:
    """``(C source, manifest source)``."""
    rows, rows_entry = _kernel_part(tuple(OUTPUTS), "capplan_rows", "CAPPLAN_CLONES")
    search, search_entry = _kernel_part(SEARCH_OUTPUTS, "search_kernel",
                                        "CAPPLAN_CLONES static", specialise.VARIANTS)
    search_entry.update(objectives=SEARCH_OBJECTIVES, constraints=SEARCH_CONSTRAINTS,
                        sets=len(SEARCH_SETS), head=HEAD_COLUMNS, tail=TAIL_COLUMNS)
    body = "\n".join([_HEADER, "/* every output, for candidates of the search's arrays */",
                      rows, "", "/* the search's objectives and constraints */", search,
                      search_driver(search_entry["arrays"], search_entry["scalars"],
                                    search_entry["variants"]), _MODULE])
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    source = body + (f'\n/* the hash of everything above: a stale build is not used */\n'
                     f'const char *capplan_source_hash(void) {{ return "{digest}"; }}\n')
    manifest = "\n".join([
        '"""What the compiled extension\'s functions read and return.',
        "",
        "Generated by ``python -m planner.codegen`` (planner/codegen/native_source.py) with",
        'planner/engine/run/_native_generated.c: do not edit."""',
        "",
        f"SOURCE_HASH = {digest!r}",
        f"KERNEL_HASH = {generated.kernel_hash()!r}",
        f"ROWS = {_format(rows_entry)}",
        f"SEARCH = {_format(search_entry)}",
        ""])
    return source, manifest


def _format(entry: dict) -> str:
    lines = ["{"]
    for key, value in entry.items():
        lines.append(f"    {key!r}: {value!r},")
    lines.append("}")
    return "\n".join(lines)
