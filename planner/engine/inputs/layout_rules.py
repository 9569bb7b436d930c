"""The layout, declared once: its dimensions (:data:`DIMENSIONS`), which layouts are valid
(:data:`VALIDITY`) and the run-model inputs a layout implies (flags, shard counts, link
placement).

:data:`DIMENSIONS` is the one list of a layout's choices.  The column registry's layout
columns (:data:`planner.engine.run.columns.LEADING`), the command-line options of a one-layout
command (:mod:`planner.cli.layout_options`), the sizes ``evaluate`` chooses when left out
and the preferred layout it tries first (:data:`PREFERRED_LAYOUT`), the layout inputs the
run model reads (:data:`KERNEL_DIMENSIONS`) and the compiled search loop's buffers
(:data:`planner.engine.search.native_search.BUFFERS`) are all read from it.

:func:`derived_inputs` is the only place the flag rules are written.  It is run three ways,
by the ``ops`` it is given:

* ``NUMPY`` - arrays of layouts (:func:`planner.engine.layouts.space.layout_flags`);
* :data:`FLOATS` - one layout as Python floats, no numpy call
  (:func:`planner.engine.layouts.space.layout_flags_one`, the per-call path of
  ``evaluate(..., as_frame=False)``);
* traced into C by :mod:`planner.codegen.native_source` for the compiled search loop,
  which decodes layouts and computes their flags itself.

Each rule is one expression of the layout's sizes, evaluated in the same order by all
three, so they give the same bits (``tests/test_native_search.py`` compares the C with
``NUMPY`` on whole layout spaces, ``tests/test_evaluate_api.py`` :data:`FLOATS` with
``NUMPY``).

Rank order follows Megatron-LM (TP fastest, then CP, DP, PP; the experts' grid: ETP
fastest, then EP, EDP, PP): a group is inside the scale-up domain when the product of the
sizes up to it fits.

Standard library only: the command line builds its options from :data:`DIMENSIONS`
without importing numpy (``NUMPY``, the array ops, live in :mod:`planner.engine.layouts.space`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

# ---- the dimensions of a layout ------------------------------------------------------------

#: Largest GPU count, parallel size or node size accepted: 16.7 M GPUs (2**24), some 170x
#: the largest announced 2025 training clusters (~100k GPUs).
MAX_GPUS = 2**24
#: Largest global batch [sequences]: 2**30 (Llama 3 405B used 2**11 x 8k tokens).
MAX_GLOBAL_BATCH = 2**30


@dataclass(frozen=True)
class Dimension:
    """One choice that makes a layout, declared once.

    ``name`` is its column, its argument of ``evaluate`` and its option (``--micro-batch``
    for ``micro_batch``); ``label`` its column label; ``dtype`` its column type (``int``,
    ``str``, ``bool``).  ``option`` is the help of its command-line option (``""``: it has
    none of this kind: ``gpus`` has its own, ``dp`` follows from the others).  ``preferred``
    marks a size ``evaluate`` chooses when it is left out (the fastest layout that fits),
    and is the size it takes for it over arrays of layouts (:data:`PREFERRED_LAYOUT`;
    ``None``: not a size that is chosen so).  ``kernel`` says whether the run model reads it
    as an input of the same name (its glossary line is in
    :data:`planner.engine.inputs.glossary.GLOSSARY`); ``plan`` whether ``capplan plan``'s summary
    shows it; ``given`` whether a caller gives it (an argument of ``evaluate``: ``dp``
    follows from the GPU count and the other sizes).  ``default`` is the value ``evaluate``
    takes when it is left out and not chosen (``None``: chosen, see ``preferred``, or
    following from the others: ``etp`` = ``tp``, ``shard_group`` = all DP ranks).
    ``meaning`` is its glossary text (default: ``label``); ``smallest`` and ``largest`` the
    sizes allowed (checked before any kernel call: :mod:`planner.engine.inputs.domains`).
    ``search`` is the sizes ``capplan plan`` tries of a dimension its search space has no
    choice of its own for (:data:`planner.engine.layouts.space.DECLARED_COLUMNS`; ``()``: its
    ``default`` alone); its rules may then read the layout's sizes but not EP, ETP, ZeRO,
    the shard group or sequence parallelism (``space`` says so at import).
    """

    name: str
    label: str
    dtype: str = "int"
    option: str = ""
    preferred: int | None = None
    kernel: bool = True
    plan: bool = True
    given: bool = True
    default: object = None
    meaning: str = ""
    smallest: int = 1
    largest: int = MAX_GPUS
    search: tuple = ()

    @property
    def flag(self) -> str:
        """Its command-line option (``--micro-batch``)."""
        return "--" + self.name.replace("_", "-")

    @property
    def python_type(self) -> type:
        """The Python type of its values (``int``, ``str``, ``bool``)."""
        return {"int": int, "str": str, "bool": bool}[self.dtype]


_FITS = " (left out: searched)"

#: The layout's choices, in the order of its columns.  ``evaluate`` searches the sizes a
#: caller leaves out (the fastest layout for the GPU count that fits in memory); the
#: preferred layout, Llama 3 70B's TP8 x PP4 (arXiv:2407.21783 Table 4), other sizes 1, is
#: what it takes for them when it evaluates arrays of layouts at once.
DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("gpus", "GPUs", default=1024, meaning="GPUs N = tp*pp*cp*dp"),
    Dimension("tp", "tensor-parallel size", preferred=8, option="Tensor-parallel size"),
    Dimension("pp", "pipeline-parallel size", preferred=4, option="Pipeline-parallel size"),
    Dimension("dp", "data-parallel size", given=False),
    Dimension("cp", "context-parallel size", preferred=1, option="Context-parallel size"),
    Dimension("ep", "expert-parallel size", preferred=1,
              option="Expert-parallel size (MoE)",
              meaning="expert-parallel size (folded over tp*cp*dp with etp)"),
    Dimension("etp", "expert-tensor-parallel size",
              option="Expert-tensor-parallel size (MoE): the experts' GEMMs split over ETP "
              "ranks; EP x ETP folds over TP x CP x DP (Megatron-Core parallel folding). "
              "Default: --tp.",
              meaning="expert-tensor-parallel size (Megatron-Core default: tp)"),
    Dimension("vp", "virtual pipeline stages per rank", preferred=1,
              option="Virtual pipeline stages per rank",
              meaning="virtual pipeline stages per rank (interleaving)"),
    Dimension("micro_batch", "micro-batch [sequences]", preferred=1,
              option="Micro-batch [sequences]. The sizes left out of --tp, --pp, --cp, --ep, "
              "--vp and --micro-batch are searched together: the fastest layout for --gpus "
              "that fits in memory and keeps the sizes given, reported on stderr",
              meaning="micro-batch size b [sequences]", largest=MAX_GLOBAL_BATCH),
    # the global batch: the run's (--global-batch), or chosen per layout by a plan given a
    # range of batches (the tokens the run needs grow with it: formulas.batch)
    Dimension("global_batch", "global batch [sequences]", given=False,
              meaning="global batch B [sequences]", largest=MAX_GLOBAL_BATCH),
    Dimension("recompute", "activation recompute", dtype="str", kernel=False,
              option="none | selective | full. Left out: selective (with more of "
              "Megatron-Core's modules where the stack's do not fit: --recompute-modules; the "
              "norms alone on a dense model), or full where no layout of the sizes given fits "
              "in memory with selective (said on stderr)."),
    Dimension("zero", "ZeRO stage", kernel=False,
              option="ZeRO stage 0-3 (3 = FSDP). Left out: the stack's (--stack): 3 for the "
              "FSDP stacks (torchtitan, MaxText, llm-foundry, NeMo AutoModel), else 1 (a "
              "distributed optimizer); where nothing fits at it, the next stage that does "
              "(said on stderr).", smallest=0, largest=3),
    Dimension("shard_group", "ZeRO shard group [DP ranks] (< dp: HSDP)", kernel=False,
              option="HSDP: shard the ZeRO state over groups of this many DP ranks and "
              "replicate it across the groups (e.g. the DP ranks of one node; needs --zero "
              "1-3). Default: all DP ranks."),
    Dimension("sequence_parallel", "sequence parallelism", dtype="bool", plan=False,
              option="Sequence parallelism (default: on when tp>1).",
              meaning="1 if sequence parallelism is on"),
)

#: The activation recompute of a layout that leaves it out and fits with it (one layout
#: that does not fits with ``full`` where that fits: :func:`planner.engine.layouts.
#: evaluator.evaluate_run`).
DEFAULT_RECOMPUTE = "selective"
#: The ZeRO stage of a layout that leaves it out on a stack without its own (``zero_stage``:
#: the FSDP stacks' 3): Megatron-Core's distributed optimizer.
DEFAULT_ZERO = 1

#: The sizes ``evaluate`` chooses when they are left out (searched for one layout; these
#: sizes over arrays of layouts), name -> size.
PREFERRED_LAYOUT: dict[str, int] = {d.name: d.preferred for d in DIMENSIONS
                                    if d.preferred is not None}
#: The sizes a caller may leave out (``None``) to have them chosen: the preferred ones and
#: ``etp`` (default: ``tp``).
CHOSEN_SIZES: tuple[str, ...] = (*PREFERRED_LAYOUT, "etp")
#: The sizes a caller gives beside those ``evaluate`` may choose and those it handles on
#: their own (``recompute``, ``zero``, ``shard_group``, ``sequence_parallel``): a declared
#: dimension with a default; none today.
OTHER_SIZES: tuple[str, ...] = tuple(d.name for d in DIMENSIONS if d.given and d.name not in (
    "gpus", *CHOSEN_SIZES, "recompute", "zero", "shard_group", "sequence_parallel"))
#: The sizes the layout rules of one layout read (``dp`` follows from the others).
CHECKED_SIZES: tuple[str, ...] = ("gpus", *CHOSEN_SIZES, *OTHER_SIZES)
#: The layout's run-model inputs (read by the kernel under the same names), in order.
KERNEL_DIMENSIONS: tuple[str, ...] = tuple(d.name for d in DIMENSIONS if d.kernel)
#: The values ``evaluate`` takes for the dimensions left out that are not chosen.
LAYOUT_DEFAULTS: dict[str, object] = {d.name: d.default for d in DIMENSIONS
                                      if d.default is not None}


def layout_arguments(row) -> dict:
    """The layout of ``row`` (a plan's or an evaluation's row: a mapping with every layout
    column) as ``evaluate``'s arguments: every dimension a caller gives, as a Python int,
    str or bool, so that re-evaluating it gives the same layout."""
    return {d.name: d.python_type(row[d.name]) for d in DIMENSIONS if d.given}


def option_help(d: Dimension) -> str:
    """The help of ``d``'s command-line option, with its preferred size."""
    if d.preferred is None:
        return d.option
    return f"{d.option}{_FITS}."


# ---- the run-model inputs a layout implies -------------------------------------------------

#: What :func:`derived_inputs` reads: the layout's sizes and codes, in this order.
#: ``shard``: the ZeRO shard group (DP ranks; fewer under HSDP); ``rec``: recompute code
#: (0 none, 1 selective, 2 full); ``zero``: ZeRO stage 0-3.
LAYOUT_NAMES = ("gpus", "tp", "cp", "pp", "dp", "vp", "ep", "etp", "shard", "rec", "zero")
#: The scalars of the model and node it reads.
FLAG_CONTEXT_NAMES = ("domain", "layers")

#: The run-model inputs it returns, in this order.
DERIVED = ("stage_layers", "selective", "attention_scores_stored", "full_recompute",
           "selective_option", "shard_ranks", "weight_shards", "grad_shards", "optimizer_shards", "zero3",
           "expert_weight_shards", "expert_grad_shards", "expert_optimizer_shards",
           "tp_intra_ranks", "cp_intra", "ep_intra", "pp_intra", "dp_intra_ranks",
           "replica_intra_ranks", "expert_dp_ranks", "expert_shard_ranks",
           "expert_dp_intra_ranks")


def derived_inputs(v, ops, flash_attention: bool = True) -> dict:
    """The run-model inputs of a layout ``v`` (an object with the attributes
    :data:`LAYOUT_NAMES` and :data:`FLAG_CONTEXT_NAMES`), computed with ``ops``
    (``NUMPY``, :data:`FLOATS` or the C tracer): name -> value, in :data:`DERIVED`'s
    order."""
    shard = v.shard
    f = {}
    # uneven stages (Megatron-Core's split, formulas.pipeline.fullest_stage_layers): the
    # fullest virtual stage holds ceil(L / (PP VP)) layers, the fullest GPU VP of them
    f["stage_layers"] = v.vp * ops.ceil(v.layers / (v.pp * v.vp))
    # Flash attention never stores the s x s scores and recomputes them in its own
    # backward pass, so selective recompute then adds no scores (Dao et al. 2022,
    # arXiv:2205.14135); a stack that checkpoints the fused core anyway runs its forward
    # again (recompute_core_attn, planner.engine.run.model._core_recomputed)
    if flash_attention:
        f["selective"] = ops.zero(v.rec)
        f["attention_scores_stored"] = ops.zero(v.rec)
    else:
        f["selective"] = ops.flag(ops.eq(v.rec, 1.0))
        f["attention_scores_stored"] = ops.flag(ops.ne(v.rec, 1.0))
    f["full_recompute"] = ops.flag(ops.eq(v.rec, 2.0))
    # the layout asks for selective recompute, flash or not: a stack whose selective policy
    # is op-level (torchtitan) recomputes matmuls then (op_selective_recompute)
    f["selective_option"] = ops.flag(ops.eq(v.rec, 1.0))
    # ZeRO shards over the shard group (all DP ranks; fewer under HSDP, replicated across)
    # times the CP ranks, which hold the same weights: Megatron-Core's distributed optimizer
    # shards over the data-parallel group with context parallelism
    # (parallel_state.get_data_parallel_group(with_context_parallel=True)), torchtitan's
    # FSDP2 over its dp_shard x cp mesh ("dp_shard_cp"); the collectives keep the DP group
    f["shard_ranks"] = shard
    state_shards = shard * v.cp
    f["weight_shards"] = ops.where(ops.ge(v.zero, 3.0), state_shards, 1.0)
    f["grad_shards"] = ops.where(ops.ge(v.zero, 2.0), state_shards, 1.0)
    f["optimizer_shards"] = ops.where(ops.ge(v.zero, 1.0), state_shards, 1.0)
    f["zero3"] = ops.flag(ops.ge(v.zero, 3.0))
    # routed experts: sharded over the expert-data-parallel group (parallel folding), of
    # which HSDP keeps the shard group's share
    edp = ops.maximum(((v.tp * v.cp) * shard) / (v.etp * v.ep), 1.0)
    f["expert_weight_shards"] = ops.where(ops.ge(v.zero, 3.0), edp, 1.0)
    f["expert_grad_shards"] = ops.where(ops.ge(v.zero, 2.0), edp, 1.0)
    f["expert_optimizer_shards"] = ops.where(ops.ge(v.zero, 1.0), edp, 1.0)
    f["tp_intra_ranks"] = ops.minimum(v.tp, v.domain)
    f["cp_intra"] = ops.flag(ops.le(v.tp * v.cp, v.domain))
    f["ep_intra"] = ops.flag(ops.le(v.etp * v.ep, v.domain))
    f["pp_intra"] = ops.flag(ops.le(v.gpus, v.domain))
    # data-parallel ranks inside one domain: floor(domain / (TP CP)), 1..DP
    # (floor(a / b), not a // b: whole counts far below 2**52 never round onto an integer)
    f["dp_intra_ranks"] = ops.minimum(ops.maximum(ops.floor(v.domain / (v.tp * v.cp)), 1.0),
                                      v.dp)
    # the replicas of one shard are TP x CP x shard ranks apart
    f["replica_intra_ranks"] = ops.minimum(
        ops.maximum(ops.floor(v.domain / ((v.tp * v.cp) * shard)), 1.0), v.dp / shard)
    # a routed expert's data-parallel group (Megatron-Core's expert-data-parallel group,
    # parallel folding): the TP x CP x DP ranks of a stage hold ETP x EP different expert
    # shards, so each shard has TP CP DP / (ETP EP) replicas, ETP x EP ranks apart (the
    # expert grid orders ETP, EP, then EDP); of them, the shard group's share holds one
    # copy of the ZeRO state, and floor(domain / (ETP EP)) share a scale-up domain
    f["expert_dp_ranks"] = ops.maximum(((v.tp * v.cp) * v.dp) / (v.etp * v.ep), 1.0)
    f["expert_shard_ranks"] = edp
    f["expert_dp_intra_ranks"] = ops.minimum(
        ops.maximum(ops.floor(v.domain / (v.etp * v.ep)), 1.0), f["expert_dp_ranks"])
    return f


def _float_minimum(a: float, b: float) -> float:
    """numpy.minimum of two floats: NaN if either is NaN."""
    if a != a or b != b:
        return math.nan
    return a if a < b else b


def _float_maximum(a: float, b: float) -> float:
    """numpy.maximum of two floats: NaN if either is NaN."""
    if a != a or b != b:
        return math.nan
    return a if a > b else b


def _float_floor(x: float) -> float:
    return float(math.floor(x)) if math.isfinite(x) else x


def _float_ceil(x: float) -> float:
    return float(math.ceil(x)) if math.isfinite(x) else x


#: Python floats, one layout (no numpy call: ~1 us for all rules).
FLOATS = SimpleNamespace(
    where=lambda c, a, b: a if c else b, minimum=_float_minimum, maximum=_float_maximum,
    floor=_float_floor, ceil=_float_ceil,
    flag=float, zero=lambda like: 0.0, eq=lambda a, b: a == b, ne=lambda a, b: a != b,
    ge=lambda a, b: a >= b, le=lambda a, b: a <= b)


# ---- which layouts are valid ---------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One rule a valid layout obeys: the names it reads, whether it holds (on Python ints
    or on numpy integer arrays of layouts alike) and, for one layout that breaks it, the
    message naming the flags to change."""

    reads: frozenset[str]
    holds: Callable
    broken: Callable


def _rule(reads: str, holds, broken) -> Rule:
    return Rule(frozenset(reads.split()), holds, broken)


def _at_least_1(value):
    """``value``, at least 1: on a Python int or elementwise on a numpy array of layouts."""
    return value.clip(1) if hasattr(value, "clip") else max(value, 1)


def tp_split_heads(x) -> int:
    """The heads TP splits, as the ``heads`` of the rule context: the attention heads, and
    with Mamba-2 layers also their heads and groups (Megatron-Core's MambaMixer asserts
    that TP divides both): the greatest common divisor, which TP must divide."""
    heads = int(x["heads"])
    if x.get("mamba_layers", 0):
        heads = math.gcd(heads, int(x["mamba_heads"]), int(x["mamba_groups"]))
    return heads


#: The numbers besides the layout's sizes that the rules read.
CONTEXT_NAMES = ("domain", "heads", "kv_heads", "layers", "seq_len", "experts", "dualpipe")


def rule_context(*, domain, heads, kv_heads, layers, seq_len, experts,
                 dualpipe=0) -> dict[str, int]:
    """The model's, node's and stack's numbers the rules read (:data:`CONTEXT_NAMES`), as
    ints: ``domain`` GPUs of the scale-up domain, the model's shape and the stack's
    pipeline schedule (``dualpipe`` 1: DeepSeek's DualPipe).  The one place the context is
    built, for a user's layout and for the search alike (the global batch is a size of
    the layout)."""
    return {"domain": int(domain), "heads": int(heads), "kv_heads": int(kv_heads),
            "layers": int(layers), "seq_len": int(seq_len), "experts": int(experts),
            "dualpipe": int(dualpipe)}


#: The rules of a valid layout, in the order a message reports them.  ``v`` holds the
#: layout's sizes (``gpus tp pp cp dp ep etp vp micro_batch global_batch shard_group``, the
#: ``zero`` stage) and the model's and node's
#: numbers (``domain`` GPUs of the scale-up domain, ``heads kv_heads layers seq_len
#: experts``) and the stack's pipeline schedule (``dualpipe``).  The one place these rules are written: a user's layout is checked by
#: :func:`planner.engine.layouts.layout_check.check_layout` (the first broken rule's message), the
#: search's layouts are masked by them (:func:`planner.engine.layouts.space.enumerate_layouts`).
VALIDITY: tuple[Rule, ...] = (
    _rule("gpus tp pp cp", lambda v: v.gpus % _at_least_1(v.tp * v.pp * v.cp) == 0,
          lambda v: f"TP*PP*CP = {v.tp}*{v.pp}*{v.cp} = {v.tp * v.pp * v.cp} does not divide "
                    f"--gpus {v.gpus}; change --tp/--pp/--cp or --gpus"),
    _rule("tp domain", lambda v: v.tp <= v.domain,
          lambda v: f"--tp {v.tp} exceeds the scale-up domain of {v.domain} GPUs"),
    _rule("tp heads", lambda v: v.heads % _at_least_1(v.tp) == 0,
          lambda v: f"--tp {v.tp} does not divide the {v.heads} heads (of the attention, "
                    "and of a hybrid model's Mamba layers and their groups)"),
    # GQA: each TP rank holds whole key/value heads, or one head replicated on tp/kv ranks
    _rule("tp kv_heads", lambda v: (v.kv_heads % _at_least_1(v.tp) == 0)
          | (v.tp % _at_least_1(v.kv_heads) == 0),
          lambda v: f"--tp {v.tp} neither divides nor is a multiple of the {v.kv_heads} "
                    "key/value heads"),
    _rule("pp layers", lambda v: v.pp <= v.layers,
          lambda v: f"--pp {v.pp} exceeds the {v.layers} layers"),
    # the embedding and the loss may be stage units of their own (Megatron-Core's
    # account_for_embedding/loss_in_pipeline_split): L + 2 virtual stages at most
    _rule("pp vp layers", lambda v: v.pp * v.vp <= v.layers + 2,
          lambda v: f"--vp {v.vp}: PP*VP = {v.pp * v.vp} virtual stages exceed the {v.layers} "
                    "layers and the embedding and loss stage units"),
    _rule("pp vp", lambda v: (v.vp == 1) | (v.pp > 1), lambda v: "--vp > 1 needs --pp > 1"),
    # load-balanced context parallelism splits each sequence into 2 CP chunks
    # (Megatron-Core: seq_length % (2 * context_parallel_size) == 0)
    _rule("cp seq_len", lambda v: (v.cp == 1) | (v.seq_len % _at_least_1(2 * v.cp) == 0),
          lambda v: f"--cp {v.cp}: the {v.seq_len}-token sequence does not split into "
                    f"2*CP = {2 * v.cp} equal chunks; change --cp or --seq-len"),
    _rule("dp micro_batch global_batch",
          lambda v: v.global_batch % _at_least_1(v.dp * v.micro_batch) == 0,
          lambda v: f"global batch {v.global_batch} is not divisible by DP*micro-batch = "
                    f"{v.dp}*{v.micro_batch} = {v.dp * v.micro_batch}; change --micro-batch, "
                    "--global-batch or the GPU count"),
    _rule("tp cp dp ep etp", lambda v: (v.tp * v.cp * v.dp) % _at_least_1(v.ep * v.etp) == 0,
          lambda v: f"EP*ETP = {v.ep}*{v.etp} = {v.ep * v.etp} must divide TP*CP*DP = "
                    f"{v.tp}*{v.cp}*{v.dp} = {v.tp * v.cp * v.dp} (the experts' grid ETP x EP x "
                    "EDP folds over the attention's TP x CP x DP); change --ep or --etp"),
    _rule("ep experts", lambda v: (v.ep == 1) | (v.experts % _at_least_1(v.ep) == 0),
          lambda v: f"--ep {v.ep} does not divide the {v.experts} experts"),
    # DeepSeek's DualPipe (a stack's schedule, ``dualpipe`` 1): two stages per rank fed from
    # both ends, no virtual stages, an even number of ranks, and an even number of at least
    # 2 PP micro-batches (deepseek-ai/DualPipe dualpipe.py@bb214e8, DualPipe.step)
    _rule("dualpipe vp", lambda v: (v.dualpipe == 0) | (v.vp == 1),
          lambda v: f"--vp {v.vp}: the stack's DualPipe schedule has no virtual stages; "
                    "use --vp 1"),
    _rule("dualpipe pp", lambda v: (v.dualpipe == 0) | (v.pp % 2 == 0),
          lambda v: f"--pp {v.pp}: the stack's DualPipe schedule feeds the pipeline from both "
                    "ends and needs an even --pp"),
    _rule("dualpipe pp dp micro_batch global_batch",
          lambda v: (v.dualpipe == 0) | (
              ((v.global_batch // _at_least_1(v.dp * v.micro_batch)) % 2 == 0)
              & (v.global_batch // _at_least_1(v.dp * v.micro_batch) >= 2 * v.pp)),
          lambda v: f"the stack's DualPipe schedule needs an even number of at least 2*PP = "
                    f"{2 * v.pp} micro-batches, got "
                    f"{v.global_batch // max(v.dp * v.micro_batch, 1)} "
                    f"(global batch {v.global_batch} / (DP {v.dp} x micro-batch {v.micro_batch})); "
                    "change --micro-batch, --global-batch or --pp"),
    # HSDP: the ZeRO state sharded over groups of shard_group DP ranks, replicated across
    # the groups (PyTorch FSDP's HYBRID_SHARD; torchtitan's dp_shard x dp_replicate mesh)
    _rule("shard_group dp zero", lambda v: (v.shard_group == v.dp) | (v.zero >= 1),
          lambda v: f"--shard-group {v.shard_group} needs --zero 1, 2 or 3 (ZeRO-0 shards "
                    "nothing); drop --shard-group or set --zero"),
    _rule("shard_group dp", lambda v: (v.shard_group == v.dp) | (
        (v.shard_group <= v.dp) & (v.dp % _at_least_1(v.shard_group) == 0)),
          lambda v: f"--shard-group {v.shard_group} must divide the data-parallel size "
                    f"{v.dp} (the ZeRO state is sharded over groups of that many DP ranks and "
                    "replicated across them)"),
)


#: Every name the rules read.
LAYOUT_RULE_NAMES = frozenset().union(*(rule.reads for rule in VALIDITY))


def holding(v, names, involving=None) -> object:
    """Whether ``v`` obeys every rule of :data:`VALIDITY` that reads only ``names`` (and,
    given ``involving``, reads one of those: the rules a newly added size brings in) -
    True, or a boolean array over the layouts of ``v``."""
    ok = True
    for rule in VALIDITY:
        if rule.reads <= names and (involving is None or rule.reads & involving):
            ok = ok & rule.holds(v)
    return ok


def first_broken(v) -> str | None:
    """The message of the first rule one layout ``v`` (Python ints, as attributes) breaks,
    or None; rules reading a name ``v`` does not hold are not checked."""
    names = frozenset(vars(v))
    for rule in VALIDITY:
        if rule.reads <= names and not rule.holds(v):
            return rule.broken(v)
    return None
