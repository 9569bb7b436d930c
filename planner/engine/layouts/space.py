"""The design space as arrays: every valid layout of a model on one accelerator.

Candidates are columns of integer arrays (never a Python object per
candidate), built as a masked Cartesian product:
GPU count N = tp * pp * cp * dp (a multiple of the node size within the range,
or a divisor of it), tensor parallel within the scale-up domain, pipeline
stages dividing the layers, virtual stages dividing the layers per stage,
micro-batch, recompute, ZeRO stage, sequence parallel, context parallel and
(for MoE) expert parallel and expert tensor parallel folded over TP x CP x DP
(Megatron-Core's parallel folding, arXiv:2504.14960).  :func:`layout_flags`
turns a layout into the 0/1 flags and shard counts of the run model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from planner.engine.inputs.domains import check
from planner.engine.inputs.layout_rules import (
    CONTEXT_NAMES,
    DIMENSIONS,
    FLOATS,
    KERNEL_DIMENSIONS,
    LAYOUT_NAMES,
    VALIDITY,
    derived_inputs,
    holding,
    rule_context,
)
from planner.engine.layouts._layout_generated import DeclaredSizes
from planner.engine.run.columns import layout_columns
from planner.errors import CapplanError

RECOMPUTE_CODES = {"none": 0, "selective": 1, "full": 2}
RECOMPUTE_NAMES = {v: k for k, v in RECOMPUTE_CODES.items()}
#: EP and ETP share one column of the enumeration, code = ep * EXPERT_RADIX + etp (their
#: rule couples them: etp * ep divides tp * cp * dp)
EXPERT_RADIX = 1 << 20
#: The design space's dimensions (the column registry's layout columns).
LAYOUT_COLUMNS = layout_columns()


#: The columns of :class:`LayoutSpace`'s table, in the order of the compiled search's
#: ``head`` matrix (``domain_dp``: the DP ranks inside one scale-up domain, HSDP's shard).
HEAD_COLUMNS = ("tp", "cp", "pp", "vp", "micro_batch", "global_batch", "dp", "gpus",
                "domain_dp")
#: The layout columns the search's own choice of sizes builds (:func:`_layout_factors`):
#: the table's and those :func:`unpacked` makes of the packed codes.
BUILT_COLUMNS = ("gpus", "tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch",
                 "global_batch", "recompute", "zero", "shard_group", "sequence_parallel")
#: The dimensions of the declaration the search has no choice of its own for: each is
#: tried over its declared sizes (``Dimension.search``, else its default; a field of
#: :class:`SpaceOptions` each), as a list crossed with every table row and masked by the
#: rules that read it.  A new dimension is searched so with nothing written here.
_DECLARED = tuple(d for d in DIMENSIONS if d.name not in BUILT_COLUMNS)
DECLARED_COLUMNS = tuple(d.name for d in _DECLARED)
#: The lists of allowed codes crossed with each table row, in enumeration order (the last
#: varies fastest); :func:`unpacked` turns their codes into layout columns.
TAIL_COLUMNS = ("ep_etp", "recompute", "zero_hsdp", "sequence_parallel", *DECLARED_COLUMNS)


def unpacked(v, ops) -> dict:
    """The layout columns a search row packs into its codes: ``v`` holds the row's
    :data:`HEAD_COLUMNS` and :data:`TAIL_COLUMNS` as attributes, ``ops`` the operations
    (:data:`CODES` on numpy integer arrays; traced into the compiled search's decoder by
    :mod:`planner.codegen.native_source`).  The one place the packing is undone.

    ``ep_etp`` = EP x :data:`EXPERT_RADIX` + ETP; ``zero_hsdp`` = ZeRO stage x 2 + HSDP
    (1: the ZeRO state sharded over the DP ranks of one scale-up domain, ``domain_dp``;
    0: over all DP ranks).
    """
    hsdp = ops.remainder(v.zero_hsdp, 2)
    return {"ep": ops.quotient(v.ep_etp, EXPERT_RADIX),
            "etp": ops.remainder(v.ep_etp, EXPERT_RADIX),
            "recompute": v.recompute,
            "zero": ops.quotient(v.zero_hsdp, 2),
            "shard_group": ops.where(ops.eq(hsdp, 1), v.domain_dp, v.dp),
            "sequence_parallel": v.sequence_parallel,
            **{name: getattr(v, name) for name in DECLARED_COLUMNS}}


#: :func:`unpacked`'s operations on numpy integer arrays (exact).
CODES = SimpleNamespace(quotient=np.floor_divide, remainder=np.remainder, where=np.where,
                        eq=np.equal)


def _np_flag(condition):
    return np.asarray(condition).astype(float)


def _np_zero(like):
    return np.zeros(np.shape(like))


#: :func:`planner.engine.inputs.layout_rules.derived_inputs`' ops on numpy arrays of layouts.
#: ``minimum``/``maximum`` are numpy's (NaN-propagating), which the C tracer prints as
#: ``np_minimum``/``np_maximum`` with the same semantics.
NUMPY = SimpleNamespace(
    where=np.where, minimum=np.minimum, maximum=np.maximum, floor=np.floor, ceil=np.ceil,
    flag=_np_flag, zero=_np_zero, eq=np.equal, ne=np.not_equal, ge=np.greater_equal,
    le=np.less_equal)


@dataclass(frozen=True)
class SpaceOptions(DeclaredSizes):
    """Which values each decision of the search may take (``None``: derive from the model):
    the sizes the search builds (these fields) and, from :class:`DeclaredSizes` (generated
    from :data:`~planner.engine.inputs.layout_rules.DIMENSIONS`), one field per declared dimension
    (:data:`DECLARED_COLUMNS`), default its declared sizes."""

    min_gpus: int = 8
    max_gpus: int = 16384
    #: tensor-parallel sizes; None: the powers of two up to the scale-up domain (NVL72: up
    #: to 64), of which the head counts allow
    tp: tuple[int, ...] | None = None
    pp: tuple[int, ...] | None = None
    vp: tuple[int, ...] = (1, 2, 4)
    cp: tuple[int, ...] | None = None
    ep: tuple[int, ...] | None = None
    #: expert-tensor-parallel sizes; None: Megatron-Core's default (= tp) and 1 (MoE only)
    etp: tuple[int, ...] | None = None
    micro_batch: tuple[int, ...] = (1, 2, 4)
    #: global batches [sequences] the search chooses from per layout (None: the run's one);
    #: the run model charges a batch the tokens it needs (formulas.batch.tokens_at_batch)
    global_batch: tuple[int, ...] | None = None
    recompute: tuple[str, ...] = ("none", "selective", "full")
    zero: tuple[int, ...] = (0, 1, 2, 3)
    #: 0: ZeRO state sharded over all DP ranks; 1: HSDP (ZeRO-2/3), sharded over the DP
    #: ranks inside one scale-up domain and replicated across domains (when those are
    #: fewer than DP)
    hsdp: tuple[int, ...] = (0, 1)
    sequence_parallel: tuple[int, ...] = (0, 1)
    #: the stack's pipeline schedule: 1 DeepSeek's DualPipe (its layout rules apply), 0 1F1B
    dualpipe: int = 0
    #: the stack's selective recompute: 1 op-level (torchtitan), whose layouts differ from
    #: those without recompute, so the search keeps them; 0 the attention core only
    op_selective: int = 0
    #: 1: ZeRO-3 layouts with pipeline stages are tried too (FSDP2 under PP: torchtitan,
    #: Meta's Llama 3 405B, arXiv:2407.21783 s3.3.2); 0: ZeRO-3 without PP only, as
    #: DeepSpeed and Megatron-Core run it
    zero3_pipeline: int = 0
    #: 1: every pipeline split is tried, its fullest virtual stage holding
    #: ceil(L / (PP VP)) layers as evaluate times a given PP (Megatron-Core's
    #: --decoder-first/last-pipeline-num-layers: DeepSeek-V3's 61 layers over PP 16);
    #: 0: the splits into whole stages of L, L + 1 or L + 2 units only
    uneven_pipeline: int = 0
    #: 1: virtual stages (VP > 1) only where the micro-batches come in whole rounds of PP
    #: (the interleaved schedule's preferred shape); 0: any count the layout rules take
    interleave_rounds: int = 1

    def validate(self) -> None:
        """CapplanError on the first value outside its domain (planner.engine.inputs.domains)."""
        check({"min_gpus": self.min_gpus, "max_gpus": self.max_gpus})
        for name in ("tp", "pp", "vp", "cp", "ep", "etp", "micro_batch", "global_batch", "zero",
                     "hsdp",
                     "sequence_parallel", *DECLARED_COLUMNS):
            values = getattr(self, name)
            if values is None:
                continue
            if not isinstance(values, tuple | list) or not values:
                raise CapplanError(f"SpaceOptions.{name} must be a non-empty tuple, got "
                                   f"{values!r}")
            check({name: np.asarray(values)})
        unknown = [r for r in self.recompute if r not in RECOMPUTE_CODES]
        if unknown or not self.recompute:
            raise CapplanError(f"SpaceOptions.recompute must hold none | selective | full, "
                               f"got {self.recompute!r}")


def _declared_sizes(d) -> tuple:
    """The sizes the search tries of a declared dimension ``d`` by default: its ``search``
    sizes, else its default alone."""
    name = d.name
    if d.dtype == "str":
        raise TypeError(f"layout dimension {name!r}: the search codes a text dimension by hand "
                        "(see recompute in space.py); declare it as int or bool")
    sizes = d.search or ((int(d.default),) if d.default is not None else ())
    if not sizes:
        raise TypeError(f"layout dimension {name!r} needs search sizes or a default")
    # the search masks it with the rules that read it before the other lists are crossed
    seen = frozenset((*HEAD_COLUMNS, *CONTEXT_NAMES, name))
    for rule in VALIDITY:
        if name in rule.reads and not rule.reads <= seen:
            raise TypeError(f"layout dimension {name!r}: a rule reads "
                            f"{sorted(rule.reads - seen)}, which the search crosses later")
    return tuple(sizes)


def declared_sizes() -> dict[str, tuple]:
    """The default sizes of each declared dimension (:data:`DECLARED_COLUMNS`): the fields
    of :class:`DeclaredSizes` (planner/codegen/layout_types.py writes them)."""
    return {d.name: _declared_sizes(d) for d in _DECLARED}


declared_sizes()  # a declared dimension the search cannot try fails here, at import


#: Global batches tried per doubling of a plan's range of batches (k x 2^j, k = 8 .. 15):
#: their odd factors 1 .. 15 let DP take the GPU counts between powers of two.
BATCHES_PER_OCTAVE = 8


def batch_candidates(low: int, high: int) -> tuple[int, ...]:
    """The global batches [sequences] a plan tries in ``low .. high``: both ends and every
    k x 2^j (k = 8 .. 15) between them, increasing.

    A GPU count N = TP PP CP DP needs DP (times the micro-batch) to divide the batch:
    powers of two alone leave N = 3 x 2^j only awkward layouts (PP3); steps of 1/8 of an
    octave give DP the odd factors 3 .. 15 at most 12.5 % above the next smaller batch.

    >>> batch_candidates(1024, 2048)
    (1024, 1152, 1280, 1408, 1536, 1664, 1792, 1920, 2048)
    >>> batch_candidates(3000, 3000)
    (3000,)
    """
    low, high = int(low), int(high)
    found = {low, high}
    step = 1
    while step * BATCHES_PER_OCTAVE <= high:
        found.update(b for k in range(BATCHES_PER_OCTAVE, 2 * BATCHES_PER_OCTAVE)
                     if low <= (b := k * step) <= high)
        step *= 2
    return tuple(sorted(found))


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n`` in increasing order.

    Trial division by 1..isqrt(n) as one numpy operation: 2**30 (the largest global
    batch ``planner.engine.inputs.domains`` allows) takes 32,768 divisions.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"divisors: n must be >= 1, got {n}")
    if n >= 2**62:
        raise ValueError(f"divisors: n must be < 2**62, got {n}")
    candidates = np.arange(1, math.isqrt(n) + 1, dtype=np.int64)
    small = candidates[n % candidates == 0].tolist()
    return sorted(set(small + [n // d for d in small]))


def _cross(table: dict[str, np.ndarray], name: str, values, allowed=None) -> dict[str, np.ndarray]:
    """Cartesian product of the rows of ``table`` with ``values`` for column ``name``.

    ``allowed(table, values)`` -> a rows x values boolean matrix keeps only some
    pairs, in the same order as filtering the full product, without building it.
    """
    values = np.asarray(values, dtype=np.int64)
    rows = len(next(iter(table.values()))) if table else 1
    ok = np.ones((rows, len(values)), dtype=bool) if allowed is None else np.broadcast_to(
        allowed(table, values[None, :]), (rows, len(values)))
    row, column = np.nonzero(ok)  # row-major: each row's allowed values in order
    out = {k: v.take(row) for k, v in table.items()}
    out[name] = values.take(column)
    return out


def _keep(table: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[mask] for k, v in table.items()}


def enumerate_layouts(*, layers: int, heads: int, kv_heads: int, seq_len: int, experts: int,
                      global_batch: int, gpus_per_node: int, scale_up_domain: int,
                      options: SpaceOptions = SpaceOptions()) -> dict[str, np.ndarray]:
    """Every valid layout, as a dict of equally long int64 arrays (``LAYOUT_COLUMNS``)."""
    blocks = list(layout_blocks(
        layers=layers, heads=heads, kv_heads=kv_heads, seq_len=seq_len, experts=experts,
        global_batch=global_batch, gpus_per_node=gpus_per_node, scale_up_domain=scale_up_domain,
        options=options, block=np.iinfo(np.int64).max))
    return blocks[0] if blocks else {k: np.empty(0, dtype=np.int64) for k in LAYOUT_COLUMNS}


def layout_blocks(*, layers: int, heads: int, kv_heads: int, seq_len: int, experts: int,
                  global_batch: int, gpus_per_node: int, scale_up_domain: int,
                  options: SpaceOptions = SpaceOptions(), block: int = 65536,
                  start: int = 0, stop: int | None = None):
    """:func:`enumerate_layouts` in consecutive blocks of ``block`` rows, built one at a time.

    The layouts are the rows of a small table of (tp, cp, pp, vp, micro-batch, dp)
    each crossed with its allowed EP, recompute, ZeRO and sequence-parallel
    values; a block decodes its row numbers into a table row and a mixed-radix
    index into its lists of allowed values, so the whole space is never held in memory.
    ``start``/``stop`` (layout row numbers) enumerate one slice of the space, in blocks
    starting at ``start``: a distributed search gives each task its own slice.
    """
    space = LayoutSpace(layers=layers, heads=heads, kv_heads=kv_heads, seq_len=seq_len,
                        experts=experts, global_batch=global_batch,
                        gpus_per_node=gpus_per_node, scale_up_domain=scale_up_domain,
                        options=options)
    return space.blocks(block, start, stop)


class LayoutSpace:
    """Every valid layout of a model on one kind of node, as numbered rows (nothing enumerated).

    ``size`` is the number of layouts; :meth:`blocks` decodes any slice of row numbers.
    """

    def __init__(self, *, layers: int, heads: int, kv_heads: int, seq_len: int, experts: int,
                 global_batch: int, gpus_per_node: int, scale_up_domain: int,
                 options: SpaceOptions = SpaceOptions()):
        self.arguments = space_arguments(
            layers=layers, heads=heads, kv_heads=kv_heads, seq_len=seq_len, experts=experts,
            global_batch=global_batch, gpus_per_node=gpus_per_node,
            scale_up_domain=scale_up_domain, options=options)
        head, tail = _layout_factors(
            layers=layers, heads=heads, kv_heads=kv_heads, seq_len=seq_len, experts=experts,
            global_batch=global_batch, gpus_per_node=gpus_per_node,
            scale_up_domain=scale_up_domain, options=options)
        rows = len(head["gpus"])
        lists = []  # per tail column: per head row its allowed values first (flat), width, counts
        for name, values, allowed in tail:
            values = np.asarray(values, dtype=np.int64)
            ok = np.ones((rows, len(values)), dtype=bool) if allowed is None else np.broadcast_to(
                allowed(head, values[None, :]), (rows, len(values)))
            order = np.argsort(~ok, axis=1, kind="stable")  # each row's allowed values first
            lists.append((name, values[order].ravel(), len(values), ok.sum(axis=1)))
        self.head, self.lists = head, lists
        self.per_row = np.prod([counts for *_, counts in lists], axis=0, dtype=np.int64)
        self.ends = np.cumsum(self.per_row)
        self.size = int(self.ends[-1]) if rows else 0

    def __reduce__(self):
        """Pickled as its arguments (a few hundred bytes, not the tens of MB of its tables):
        a Dask worker rebuilds it once per process (:func:`_rebuilt_space`)."""
        return _rebuilt_space, (self.arguments,)

    def gpu_counts(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The distinct GPU counts of layout rows ``start`` .. ``stop``, increasing."""
        end = self.size if stop is None else min(int(stop), self.size)
        if end <= start:
            return np.empty(0, dtype=np.int64)
        first, last = np.searchsorted(self.ends, [int(start), end - 1], side="right")
        return np.unique(self.head["gpus"][first:last + 1])

    def blocks(self, block: int = 65536, start: int = 0, stop: int | None = None):
        """The layouts of rows ``start`` .. ``stop`` (default: the end) in blocks of ``block``."""
        per_row, ends = self.per_row, self.ends
        end = self.size if stop is None else min(int(stop), self.size)
        for first_row in range(int(start), end, block):
            last_row = min(first_row + block, end)
            first, last = np.searchsorted(ends, [first_row, last_row - 1], side="right")
            h = np.repeat(np.arange(first, last + 1), np.diff(
                np.clip(np.r_[ends[first] - per_row[first], ends[first:last + 1]],
                        first_row, last_row)))
            yield self._decode(h, np.arange(first_row, last_row, dtype=np.int64))

    def take(self, rows) -> dict[str, np.ndarray]:
        """The layouts of the row numbers ``rows`` (any order; each in ``0 .. size - 1``)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size and (rows.min() < 0 or rows.max() >= self.size):
            raise IndexError(f"layout rows must be in 0 .. {self.size - 1}")
        return self._decode(np.searchsorted(self.ends, rows, side="right"), rows)

    def _decode(self, h: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The layouts of row numbers ``rows``, which lie in the table rows ``h``: the
        row's mixed-radix index into its lists of allowed values, last column fastest."""
        head, lists, per_row, ends = self.head, self.lists, self.per_row, self.ends
        index = rows - (ends[h] - per_row[h])
        out = {k: v[h] for k, v in head.items()}
        for name, values, width, counts in reversed(lists):  # the last column varies fastest
            index, position = np.divmod(index, counts[h])
            out[name] = values[h * width + position]
        out.update(unpacked(SimpleNamespace(**out), CODES))
        return {k: out[k] for k in LAYOUT_COLUMNS}


@lru_cache(maxsize=64)
def _rebuilt_space(arguments: tuple) -> LayoutSpace:
    """The :class:`LayoutSpace` of ``arguments`` (its ``arguments``), built once per process."""
    return LayoutSpace(**dict(arguments))


def space_arguments(*, layers: int, heads: int, kv_heads: int, seq_len: int, experts: int,
                    global_batch: int, gpus_per_node: int, scale_up_domain: int,
                    options: SpaceOptions = SpaceOptions()) -> tuple:
    """:class:`LayoutSpace`'s arguments as a hashable tuple of (name, value) pairs
    (whole numbers as ``int``, the options' lists as tuples): its ``arguments``."""
    return (("layers", int(layers)), ("heads", int(heads)), ("kv_heads", int(kv_heads)),
            ("seq_len", int(seq_len)), ("experts", int(experts)),
            ("global_batch", int(global_batch)), ("gpus_per_node", int(gpus_per_node)),
            ("scale_up_domain", int(scale_up_domain)),
            ("options", SpaceOptions(**{k: tuple(v) if isinstance(v, list) else v
                                        for k, v in options.__dict__.items()})))


def shared_layout_space(**arguments) -> LayoutSpace:
    """:class:`LayoutSpace` of these arguments (:func:`space_arguments`), built once per
    process (read-only: the accelerators of one node shape share it, as the tasks of a
    Dask worker do)."""
    return _rebuilt_space(space_arguments(**arguments))


def default_tp_sizes(scale_up_domain: int, largest: int = 128) -> tuple[int, ...]:
    """The tensor-parallel sizes the search tries: powers of two inside the scale-up domain.

    Tensor parallelism splits every layer's GEMMs and all-reduces their outputs twice per
    layer and pass, so it lives where the links are fastest (Shoeybi et al. 2019,
    arXiv:1909.08053 s3; Narayanan et al. 2021, arXiv:2104.04473 s3.2): an 8-GPU board
    allows 1-8, an NVL72 rack 1-64.  ``largest`` (no model has more heads) bounds
    domains of thousands of chips (TPU pods).

    >>> default_tp_sizes(8)
    (1, 2, 4, 8)
    >>> default_tp_sizes(72)
    (1, 2, 4, 8, 16, 32, 64)
    """
    top = min(int(scale_up_domain), largest)
    return tuple(1 << i for i in range(top.bit_length()) if 1 << i <= top)


def _layout_factors(*, layers, heads, kv_heads, seq_len, experts, global_batch, gpus_per_node,
                    scale_up_domain, options):
    """The table of (tp, cp, pp, vp, micro_batch, dp, gpus) and the columns crossed with it."""
    # the rules of a valid layout (layout_rules.VALIDITY), applied as soon as the table has
    # the sizes a rule reads; the rest of this function is the search's choice of sizes
    context = rule_context(domain=scale_up_domain, heads=heads, kv_heads=kv_heads,
                           layers=layers, seq_len=seq_len, experts=experts,
                           dualpipe=options.dualpipe)

    def valid(t, involving=None):
        ok = holding(SimpleNamespace(**t, **context), frozenset(t) | frozenset(context),
                     involving)
        return np.broadcast_to(ok, np.broadcast_shapes(*(np.shape(v) for v in t.values())))

    tp_values = _kept_values("tp", options.tp or default_tp_sizes(scale_up_domain), valid)
    # even splits, and Megatron-Core's uneven ones with the loss (L + 1 units) or the
    # embedding and the loss (L + 2) as pipeline-stage units (formulas.pipeline)
    # (with uneven_pipeline: every stage count up to L, the fullest stage ceil(L / PP))
    units = (layers, layers + 1, layers + 2)
    pp_values = options.pp or (list(range(1, min(128, layers) + 1)) if options.uneven_pipeline
                               else sorted({p for u in units for p in divisors(u)
                                            if p <= min(128, layers)}))
    cp_values = options.cp or ([1, 2, 4, 8] if seq_len >= 32768 else [1, 2] if seq_len >= 8192
                               else [1])
    ep_values = options.ep or ([e for e in divisors(experts) if e <= 64] if experts > 1 else [1])
    # ETP: the default (= TP) and, for MoE, 1 (Megatron-Core's --expert-tensor-parallel-size)
    etp_values = tp_values if experts <= 1 else sorted(set(options.etp or ()) or {*tp_values, 1})
    expert_codes = [e * EXPERT_RADIX + x for e in ep_values for x in etp_values]

    def expert_allowed(t, code):
        ep, etp = np.divmod(code, EXPERT_RADIX)
        tp = t["tp"][:, None]
        chosen = (etp == tp) if experts <= 1 else (
            np.isin(etp, options.etp) if options.etp else (etp == tp) | (etp == 1))
        grid = {k: t[k][:, None] for k in ("tp", "cp", "dp", "gpus", "pp", "vp",
                                           "micro_batch")}
        return chosen & valid({**grid, "ep": ep, "etp": etp}, involving={"ep", "etp"})

    t = _cross({}, "tp", tp_values)
    t = _cross(t, "cp", cp_values)
    t = _keep(t, valid(t, involving={"cp"}))
    t = _cross(t, "pp", pp_values)
    t = _cross(t, "vp", options.vp)
    stages = t["pp"] * t["vp"]
    # the search tries the splits with whole stages of L, L + 1 or L + 2 units only
    # (evaluate takes any PP and puts ceil(L / (PP VP)) layers on the fullest stage; so
    # does the search with uneven_pipeline)
    split = (layers % stages == 0) | ((layers + 1) % stages == 0) \
        | ((layers + 2) % stages == 0) | bool(options.uneven_pipeline)
    t = _keep(t, split & valid(t, involving={"pp", "vp"}))
    t = _cross(t, "micro_batch", options.micro_batch)
    # the global batch: the run's, or each of a plan's batches; DP x micro-batch divides it
    batches = options.global_batch or (global_batch,)
    t = _cross(t, "global_batch", batches)
    t = _cross(t, "dp", sorted({d for b in batches for d in divisors(b)}),
               lambda t, dp: t["global_batch"][:, None] % (dp * t["micro_batch"][:, None]) == 0)
    t["gpus"] = t["tp"] * t["pp"] * t["cp"] * t["dp"]
    t["domain_dp"] = domain_dp_ranks(t["tp"], t["cp"], t["dp"], scale_up_domain)
    n = t["gpus"]
    # the search's choices: whole nodes (or a part of one), the GPU range, and the
    # interleaved schedule's micro-batches in whole rounds of PP
    fits_node = (n % gpus_per_node == 0) | (gpus_per_node % n == 0)
    microbatches = t["global_batch"] // np.maximum(t["dp"] * t["micro_batch"], 1)
    ok = ((n >= options.min_gpus) & (n <= options.max_gpus) & fits_node
          & valid(t, involving={"dp", "micro_batch", "gpus"})
          & ((t["vp"] == 1) | (microbatches % t["pp"] == 0)
             | (options.interleave_rounds == 0)))
    tail = [
        ("ep_etp", expert_codes, expert_allowed),
        ("recompute", search_recompute_codes(options.recompute, options.op_selective), None),
        # ZeRO needs data parallelism; DeepSpeed/Megatron do not combine ZeRO-3 with PP.
        # HSDP (code zero * 2 + 1): ZeRO-2/3 shards within a scale-up domain's DP ranks, when
        # those are fewer than DP and divide it: the per-micro-batch reduce-scatters and
        # gathers stay in the domain.  (Under ZeRO-1 HSDP only costs memory in this model:
        # the one gradient all-reduce is hierarchical either way; evaluate still takes it.)
        ("zero_hsdp", [2 * z + h for z in options.zero for h in options.hsdp],
         lambda t, code: _zero_allowed(t, code, valid, options.zero3_pipeline)),
        ("sequence_parallel", options.sequence_parallel,
         lambda t, sp: (sp == 0) | (t["tp"][:, None] > 1)),
        *((name, getattr(options, name), _declared_allowed(name, valid))
          for name in DECLARED_COLUMNS),
    ]
    return _keep(t, ok), tail


def _declared_allowed(name: str, valid):
    """Which sizes of the declared dimension ``name`` each table row tries: those its
    rules allow (:data:`planner.engine.inputs.layout_rules.VALIDITY`)."""
    def allowed(t, values):
        grid = {k: t[k][:, None] for k in HEAD_COLUMNS}
        return valid({**grid, name: values}, involving={name})
    return allowed


def _kept_values(name: str, values, valid) -> list[int]:
    """The ``values`` of one size that the layout rules reading it alone allow."""
    array = np.asarray(values, dtype=np.int64)
    return [int(v) for v in array[np.broadcast_to(valid({name: array}), array.shape)]]


def search_recompute_codes(recompute, op_selective: int = 0) -> list[int]:
    """The recompute codes a search tries: ``selective`` only when ``none`` is not tried,
    unless the stack's selective recompute is op-level (``op_selective``).

    A search runs with flash attention (:func:`layout_flags`' default), under which
    selective recomputation of the attention core (Korthikanti et al. 2022,
    arXiv:2205.05198 s5) adds no work and stores nothing more: its layouts have the same
    run-model outputs as ``none``'s and lose every tie to them (they come later).  Leaving
    them out drops a third of the space and no winner.  An op-level policy (torchtitan)
    recomputes matmuls and keeps less: a layout of its own.

    >>> search_recompute_codes(("none", "selective", "full"))
    [0, 2]
    >>> search_recompute_codes(("none", "selective", "full"), op_selective=1)
    [0, 1, 2]
    >>> search_recompute_codes(("selective",))
    [1]
    """
    codes = [RECOMPUTE_CODES[r] for r in recompute]
    none, selective = RECOMPUTE_CODES["none"], RECOMPUTE_CODES["selective"]
    return [c for c in codes if c != selective or none not in codes or op_selective]


def _zero_allowed(t, code, valid, zero3_pipeline=0):
    """Which ZeRO x HSDP codes each table row tries: the search's choices (ZeRO with data
    parallelism, ZeRO-3 without PP unless ``zero3_pipeline``, HSDP under ZeRO-2/3 over the
    DP ranks of one scale-up domain when those are fewer than DP), masked by the HSDP rules
    of the layout (``valid``: :data:`planner.engine.inputs.layout_rules.VALIDITY`)."""
    zero, hsdp = np.divmod(code, 2)
    dp, domain_dp = t["dp"][:, None], t["domain_dp"][:, None]
    chosen = (((zero == 0) | (dp > 1))
              & ((zero < 3) | (t["pp"][:, None] == 1) | bool(zero3_pipeline))
              & ((hsdp == 0) | ((zero >= 2) & (domain_dp < dp))))
    shard_group = np.where(hsdp == 1, domain_dp, dp)
    return chosen & valid({"dp": dp, "shard_group": shard_group, "zero": zero},
                          involving={"shard_group"})


def domain_dp_ranks(tp, cp, dp, scale_up_domain):
    """Data-parallel ranks inside one scale-up domain: floor(domain / (TP x CP)), 1..DP.

    Ranks are ordered TP fastest, then CP, then DP (Megatron-LM), so a domain holds the
    TP x CP groups of that many consecutive DP ranks.

    >>> int(domain_dp_ranks(2, 1, 64, 8))
    4
    """
    domain, ranks = np.asarray(scale_up_domain), np.asarray(tp) * np.asarray(cp)
    if domain.dtype.kind == "f" or ranks.dtype.kind == "f":
        # floor(a / b), not a // b (3x slower on floats): the counts are whole numbers far
        # below 2**52, so their quotient never rounds onto an integer
        return np.clip(np.floor(domain / ranks), 1, np.asarray(dp))
    return np.clip(domain // ranks, 1, np.asarray(dp))


#: What :func:`planner.engine.inputs.layout_rules.derived_inputs` reads of a layout
#: (:data:`~planner.engine.inputs.layout_rules.LAYOUT_NAMES`): these from its run-model inputs
#: (``etp`` completed); these from its columns, as whole numbers (``rec``: the recompute
#: code); and ``shard``, the shard group (all DP ranks when left out).
_FROM_KERNEL = tuple(k for k in LAYOUT_NAMES if k in KERNEL_DIMENSIONS)
_FROM_LAYOUT = tuple((k, "recompute" if k == "rec" else k) for k in LAYOUT_NAMES
                     if k not in KERNEL_DIMENSIONS and k != "shard")


#: Layout sizes a layout may leave to the run: without one, the run's input stays (the
#: global batch of ``--global-batch``; a plan over a range of batches puts each layout's).
_RUN_SIZES = ("global_batch",)


def layout_flags(layout: dict[str, np.ndarray], *, scale_up_domain, layers,
                 flash_attention: bool = True) -> dict[str, np.ndarray]:
    """Run-model inputs derived from arrays of layouts: flags, shard counts and link
    placement (the rules: :func:`planner.engine.inputs.layout_rules.derived_inputs`, the one
    place they are written; the compiled search loop runs the same rules, traced to C)."""
    f = {k: np.asarray(layout.get(k, layout["tp"]) if k == "etp" else layout[k], dtype=float)
         for k in KERNEL_DIMENSIONS if k in layout or k not in _RUN_SIZES}
    v = SimpleNamespace(**{k: f[k] for k in _FROM_KERNEL},
                        **{k: np.asarray(layout[source], dtype=float) for k, source in _FROM_LAYOUT},
                        shard=np.asarray(layout.get("shard_group", f["dp"]), dtype=float),
                        domain=np.asarray(scale_up_domain, dtype=float), layers=float(layers))
    f.update(derived_inputs(v, NUMPY, flash_attention))
    return f


def layout_flags_one(layout: dict, *, scale_up_domain, layers,
                     flash_attention: bool = True) -> dict[str, float]:
    """:func:`layout_flags` of one layout, as Python floats (the same rules, no numpy
    call: the per-call path of ``evaluate(..., as_frame=False)``)."""
    f = {k: float(layout.get(k, layout["tp"]) if k == "etp" else layout[k])
         for k in KERNEL_DIMENSIONS if k in layout or k not in _RUN_SIZES}
    v = SimpleNamespace(**{k: f[k] for k in _FROM_KERNEL},
                        **{k: float(int(layout[source])) for k, source in _FROM_LAYOUT},
                        shard=float(layout.get("shard_group", f["dp"])),
                        domain=float(scale_up_domain), layers=float(layers))
    f.update(derived_inputs(v, FLOATS, flash_attention))
    return f


def pipeline_split_text(layers: int, pp: int, vp: int) -> str:
    """How Megatron-Core splits ``layers`` over PP x VP uneven stages ('' when even).

    With L + 2 (or L + 1) divisible by PP*VP it counts the embedding and the loss (or
    the loss) as stage units (``account_for_embedding_in_pipeline_split``,
    ``account_for_loss_in_pipeline_split``); otherwise the first and last stages take
    fewer layers (``num_layers_in_first/last_pipeline_stage``).  The fullest stage
    (formulas.pipeline.fullest_stage_layers) sets the pace either way.
    """
    stages = pp * vp
    if layers % stages == 0:
        return ""
    per_stage = math.ceil(layers / stages)
    fullest = vp * per_stage
    where = f"PP*VP = {stages} virtual stages" if vp > 1 else f"PP = {pp} stages"
    if (layers + 2) % stages == 0:
        how = (f"the embedding and the loss counted as stage units ({layers + 2} units, "
               f"{per_stage} per virtual stage; the first and last hold {_layers(per_stage - 1)} "
               "each)")
    elif (layers + 1) % stages == 0:
        how = (f"the loss counted as a stage unit ({layers + 1} units, {per_stage} per "
               f"virtual stage; the last holds {_layers(per_stage - 1)})")
    else:
        short = stages * per_stage - layers
        how = (f"{per_stage} layers per virtual stage, {short} fewer in all on the first and "
               "last stages")
    return (f"the {layers} layers do not split evenly over {where}: using Megatron-Core's "
            f"uneven split, {how}; the fullest GPU holds {fullest} layers")


def _layers(count: int) -> str:
    return f"{count} layer" + ("" if count == 1 else "s")
