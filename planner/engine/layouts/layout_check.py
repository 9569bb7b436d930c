"""The rules of a valid layout given by the user: each broken rule named in one message,
and the layout chosen for the sizes a user left out (``evaluate``'s ``None`` sizes).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from planner.engine.inputs.defaults import MEMORY_TOLERANCE
from planner.engine.inputs.domains import check
from planner.engine.inputs.layout_rules import (
    CHECKED_SIZES,
    CHOSEN_SIZES,
    OTHER_SIZES,
    first_broken,
    holding,
    rule_context,
    tp_split_heads,
)
from planner.engine.inputs.scenario import PREFERRED_LAYOUT
from planner.engine.layouts.space import (
    RECOMPUTE_NAMES,
    SpaceOptions,
    enumerate_layouts,
    layout_flags,
)
from planner.engine.run.kernel_run import evaluate_inputs
from planner.errors import CapplanError


def context_of(x: dict) -> dict:
    """The layout rules' context (:func:`planner.engine.inputs.layout_rules.rule_context`) of the
    kernel inputs ``x`` (``dualpipe``: the stack's schedule, 0 when ``x`` names none)."""
    return rule_context(domain=x["scale_up_domain_gpus"], heads=tp_split_heads(x),
                        kv_heads=x["kv_heads"], layers=x["layers"], seq_len=x["seq_len"],
                        experts=x["experts"], dualpipe=x.get("dualpipe", 0))


_CHECKED = frozenset(CHECKED_SIZES)


def check_layout(x: dict, *, gpus, tp, pp, cp, dp=None, etp=None, **sizes) -> None:
    """Raise CapplanError naming the first broken rule of an explicit layout
    (:data:`planner.engine.inputs.layout_rules.VALIDITY`): ``sizes`` are the others of
    :data:`CHECKED_SIZES` (``ep``, ``vp``, ``micro_batch`` ...); a rule reading a size not
    given is not checked.

    Sizes are checked against their domains first; ``dp`` is GPUs / (TP PP CP) (the
    argument is ignored); ``etp`` None: ``tp``.
    """
    unknown = sizes.keys() - _CHECKED
    if unknown:
        raise TypeError(f"check_layout: unknown sizes {sorted(unknown)}")
    sizes = {"gpus": gpus, "tp": tp, "pp": pp, "cp": cp, "etp": tp if etp is None else etp,
             **sizes}
    check(sizes)
    sizes = {k: int(v) for k, v in sizes.items()}
    sizes["dp"] = max(sizes["gpus"] // (sizes["tp"] * sizes["pp"] * sizes["cp"]), 1)
    sizes["global_batch"] = int(x["global_batch"])  # the run's
    broken = first_broken(SimpleNamespace(**sizes, **context_of(x)))
    if broken is not None:
        raise CapplanError(broken)


def best_layout(x: dict, gpus: int, fixed: dict, *, recompute: int, zero: int,
                sequence_parallel, flash_attention: bool = True,
                objective: str = "wall_time_s") -> dict | None:
    """The layout of ``gpus`` GPUs minimising ``objective`` among those that fit in memory
    (when none does, among those within the memory model's error of fitting,
    :data:`~planner.engine.inputs.defaults.MEMORY_TOLERANCE`; the leanest when none is),
    keeping the sizes in ``fixed``; ``None`` if no layout of that many GPUs obeys the
    rules.  Reuses the design-space enumeration of ``plan``: its preferred shapes first
    (whole pipeline splits, interleaving in whole rounds of PP), and where the sizes given
    leave none of those, every split and round count evaluate would time.
    """
    for relaxed in (False, True):
        layout = _searched_layouts(x, gpus, fixed, recompute=recompute, zero=zero,
                                   sequence_parallel=sequence_parallel, relaxed=relaxed)
        if layout["gpus"].size:
            break
    else:
        return None
    out = evaluate_inputs({**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                               layers=x["layers"],
                                               flash_attention=flash_attention)})
    # those that fit; else those the memory model puts over the HBM by less than its error
    # (the evaluation warns); else the leanest
    fits = out["fits"]
    if not fits.any():
        fits = within_memory_tolerance(out)
    score = np.where(fits, out[objective], np.inf) if fits.any() else out["memory_per_gpu_bytes"]
    i = int(np.argmin(score))
    return {k: int(v[i]) for k, v in layout.items()}


def _searched_layouts(x: dict, gpus: int, fixed: dict, *, recompute: int, zero: int,
                      sequence_parallel, relaxed: bool) -> dict[str, np.ndarray]:
    """The layouts :func:`best_layout` chooses among (``relaxed``: every pipeline split and
    interleaving round count the layout rules take, not only the search's preferred ones)."""
    def only(name, default):
        return (int(fixed[name]),) if fixed.get(name) is not None else default

    base = SpaceOptions()
    # every size the search tries, kept where given (any TP up to 128: any domain)
    sizes = {name: only(name, getattr(base, name)) for name in (*CHOSEN_SIZES, *OTHER_SIZES)}
    options = SpaceOptions(
        min_gpus=gpus, max_gpus=gpus, **{**sizes, "tp": only("tp", tuple(2**i for i in range(8)))},
        recompute=(RECOMPUTE_NAMES[recompute],), zero=tuple(sorted({0, zero})), hsdp=(0,),
        dualpipe=context_of(x)["dualpipe"],
        # the ZeRO stage asked for is searched with pipeline stages too: an FSDP stack's
        # run with PP keeps its FSDP (torchtitan, Meta's Llama 3 405B)
        zero3_pipeline=int(zero >= 3),
        # a PP given is timed as evaluate times it, its fullest stage ceil(L / (PP VP))
        uneven_pipeline=int(relaxed or fixed.get("pp") is not None),
        interleave_rounds=int(not relaxed),
        # sequence parallelism asked for: on wherever TP > 1; at TP 1 it has nothing to
        # split (Megatron-LM turns it off), so those layouts are searched without it
        sequence_parallel=(0,) if sequence_parallel is not None and not sequence_parallel
        else (0, 1))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=tp_split_heads(x), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=1,  # any count is allowed here
        scale_up_domain=int(x["scale_up_domain_gpus"]), options=options)
    # the requested ZeRO stage, or ZeRO-0 where there is no data parallelism; sequence
    # parallelism as evaluate() sets it by default (on when tp > 1)
    keep = (layout["zero"] == zero) | ((layout["dp"] == 1) & (layout["zero"] == 0))
    if sequence_parallel is None or sequence_parallel:
        keep &= layout["sequence_parallel"] == (layout["tp"] > 1)
    if fixed.get("etp") is None:  # left out: Megatron-Core's default, ETP = TP, or 1
        keep &= layout["etp"] == expert_tp(x, layout["tp"], None, layout, layout["gpus"])
    return {k: v[keep] for k, v in layout.items()}


def within_memory_tolerance(out: dict):
    """Where the memory per GPU is at most the HBM plus the memory model's error on
    published runs that ran (:data:`~planner.engine.inputs.defaults.MEMORY_TOLERANCE`):
    ``out`` a run's row or columns (``memory_per_gpu_bytes``, ``hbm_bytes``)."""
    return out["memory_per_gpu_bytes"] <= (1 + MEMORY_TOLERANCE) * out["hbm_bytes"]


def resolve_layout(x: dict, gpus, given: dict, *, recompute: int, zero: int,
                   sequence_parallel=None, flash_attention: bool = True) -> dict:
    """The layout sizes to evaluate: the caller's when every size is given, else the
    fastest layout of ``gpus`` GPUs that fits in memory keeping the sizes given
    (:func:`best_layout`; the leanest when none fits).

    A fixed default (Llama 3 70B's TP8 x PP4) would time Llama 3 8B on 512 GB200 (512
    sequences of 8,192 tokens, FP8) at 1.85 s a step against 0.31 s for its fastest layout,
    TP1 x DP512: a team runs the layout it tuned, which the search stands in for.
    Raises CapplanError naming the broken rule when the given sizes admit no layout.
    """
    candidate = {k: v for k, v in given.items() if v is not None}
    if all(candidate.get(k) is not None for k in PREFERRED_LAYOUT):
        candidate["etp"] = expert_tp(x, candidate["tp"], given.get("etp"), candidate, gpus)
        check_layout(x, gpus=gpus, **candidate)
        return candidate
    check({"gpus": gpus, **given})
    chosen = best_layout(x, int(gpus), given, recompute=recompute, zero=zero,
                         sequence_parallel=sequence_parallel, flash_attention=flash_attention)
    if chosen is None:  # the search space has none (e.g. its sequence-parallel rule): the
        # preferred sizes for those left out, if they make a valid layout
        preferred = {**PREFERRED_LAYOUT, **candidate}
        preferred["etp"] = expert_tp(x, preferred["tp"], given.get("etp"), preferred, gpus)
        try:
            check_layout(x, gpus=gpus, **preferred)
            return preferred
        except CapplanError as broken:
            typed = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items()
                              if v is not None)
            if typed:
                raise CapplanError(f"{broken}; and no other layout of {int(gpus)} GPUs "
                                   f"obeys the rules with {typed}: try another --gpus") from None
            raise CapplanError(no_layout_text(x, int(gpus))) from None
    return {k: chosen[k] for k in (*PREFERRED_LAYOUT, "etp")}


def no_layout_text(x: dict, gpus: int) -> str:
    """Why no layout of ``gpus`` GPUs exists for a run none of whose sizes was given, and
    the nearest larger global batch that has one where there is such a batch: at a multiple
    of the GPU count every GPU can take its own sequences (DP = GPUs, micro-batch 1), which
    the rules admit unless the stack's schedule needs a pipeline (DualPipe)."""
    batch = int(x["global_batch"])
    text = (f"no layout of {gpus} GPUs obeys the rules with a global batch of {batch:,} "
            "sequences (TP*PP*CP*DP = GPUs, DP*micro-batch dividing the global batch)")
    multiple = -(-batch // gpus) * gpus
    try:
        check_layout({**x, "global_batch": multiple}, gpus=gpus, tp=1, pp=1, cp=1, ep=1,
                     vp=1, micro_batch=1)
    except CapplanError:
        return f"{text}: try another --gpus"
    return (f"{text}: try another --gpus, or a --global-batch that {gpus} divides "
            f"(e.g. {multiple:,})")


def expert_tp(x: dict, tp, etp, sizes: dict, gpus):
    """The expert-tensor-parallel size: ``etp`` for an MoE model when given, else ``tp``
    (Megatron-Core's default; a dense model has no experts to split) where that obeys the
    folding rule of :data:`~planner.engine.inputs.layout_rules.VALIDITY` (EP x ETP divides
    TP x CP x DP), else 1 (``sizes``: the layout's ``pp``, ``cp`` and ``ep``, with ``gpus``;
    the recipes that fold a wide EP over a small TP set it so, e.g. DeepSeek-V3's TP2 x
    EP64 on 1,024 H100 in NVIDIA's dgxc-benchmarking)."""
    if x["experts"] <= 1:
        return tp
    if etp is not None:
        return etp
    tp, pp, cp, ep = (np.asarray(v) for v in (tp, sizes["pp"], sizes["cp"], sizes["ep"]))
    dp = np.asarray(gpus) // np.maximum(tp * pp * cp, 1)
    folds = holding(SimpleNamespace(tp=tp, cp=cp, dp=dp, ep=ep, etp=tp),
                    frozenset({"tp", "cp", "dp", "ep", "etp"}))
    chosen = np.where(folds, tp, 1)
    return int(chosen) if chosen.ndim == 0 else chosen


def _layout_sizes(x: dict, layout: dict) -> dict[str, np.ndarray]:
    """The sizes the layout rules read, broadcast to one shape: :data:`CHECKED_SIZES`,
    ``dp`` and the layout's global batch (the run's when the layout has none)."""
    names = (*CHECKED_SIZES, "dp", "global_batch")
    values = (*(layout[k] for k in names[:-1]), layout.get("global_batch", x["global_batch"]))
    return dict(zip(names, np.broadcast_arrays(*values), strict=True))


def layouts_hold(x: dict, layout: dict) -> np.ndarray:
    """Which layouts (arrays of :data:`CHECKED_SIZES` and ``dp``) obey every layout rule of
    :data:`planner.engine.inputs.layout_rules.VALIDITY` with every size at least 1 (a boolean
    array of the sizes' broadcast shape)."""
    sizes = _layout_sizes(x, layout)
    positive = np.minimum.reduce([sizes[k] for k in ("gpus", *CHOSEN_SIZES, "dp")]) >= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        context = context_of(x)
        ok = positive & holding(SimpleNamespace(**sizes, **context),
                                frozenset(sizes) | frozenset(context))
    return np.broadcast_to(ok, sizes["gpus"].shape)


def check_layouts(x: dict, layout: dict[str, np.ndarray]) -> None:
    """Vectorised :func:`check_layout`: the first broken layout raises with its rule."""
    ok = layouts_hold(x, layout)
    if not np.all(ok):
        sizes = _layout_sizes(x, layout)
        shape = sizes["gpus"].shape if sizes["gpus"].ndim else (1,)
        i = int(np.flatnonzero(~np.broadcast_to(ok, shape))[0])
        pick = {k: int(np.ravel(v)[i] if np.size(v) > 1 else np.ravel(v)[0])
                for k, v in sizes.items()}
        check_layout({**x, "global_batch": pick.pop("global_batch")}, **pick)


#: What the HSDP rules read.
_SHARD_NAMES = frozenset({"dp", "shard_group", "zero"})


def check_shard_group(dp: int, shard_group: int, zero: int) -> None:
    """Raise CapplanError unless ``shard_group`` DP ranks can hold one copy of the ZeRO state
    (the HSDP rules of :data:`planner.engine.inputs.layout_rules.VALIDITY`)."""
    broken = first_broken(SimpleNamespace(dp=int(dp), shard_group=int(shard_group),
                                          zero=int(zero)))
    if broken is not None:
        raise CapplanError(broken)


def check_shard_groups(layout: dict[str, np.ndarray]) -> None:
    """Vectorised :func:`check_shard_group`: the first broken layout raises."""
    dp, shard, zero = (np.asarray(layout[k]) for k in ("dp", "shard_group", "zero"))
    ok = holding(SimpleNamespace(dp=dp, shard_group=shard, zero=zero), _SHARD_NAMES)
    bad = ~np.broadcast_to(ok, np.broadcast_shapes(dp.shape, shard.shape, zero.shape))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        check_shard_group(int(np.ravel(dp)[i]), int(np.ravel(shard)[i]), int(np.ravel(zero)[i]))
