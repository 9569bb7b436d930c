"""Evaluate candidate training runs with the compiled kernel, in bounded chunks.

``evaluate_inputs`` is the array engine (dict of arrays in, dict of arrays out);
``evaluate`` is the notebook API: one or many layouts of a model on an
accelerator, a pandas DataFrame back whose column names carry units.

>>> from planner import evaluate
>>> df = evaluate(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1,
...               global_batch=512, micro_batch=2, tokens=2e12)
>>> bool(df.loc[0, "fits"]), bool(0 < df.loc[0, "mfu"] < 1)
(True, True)
"""

from __future__ import annotations

import inspect
from dataclasses import fields, replace

import numpy as np

from hardware_catalog import load_catalog
from hardware_catalog.recipes import recipe_name
from planner.engine.inputs.call_checks import (
    candidate_count,
    check_catalog,
    check_catalog_dirs,
    check_flag,
    check_given,
    check_mapping,
    check_switch,
)
from planner.engine.inputs.domains import check
from planner.engine.inputs.layout_rules import (
    CHOSEN_SIZES,
    DEFAULT_RECOMPUTE,
    DIMENSIONS,
    OTHER_SIZES,
)
from planner.engine.inputs.recompute_modules import MODULES, modules_of, recomputed_modules
from planner.engine.inputs.scenario import (
    DEFAULTS,
    PREFERRED_LAYOUT,
    check_overrides,
    stack_zero_stage,
)
from planner.engine.layouts._layout_generated import LayoutRequest
from planner.engine.layouts.layout_check import (
    check_layout,
    check_layouts,
    check_shard_group,
    check_shard_groups,
    expert_tp,
    resolve_layout,
    within_memory_tolerance,
)
from planner.engine.layouts.result import Evaluation
from planner.engine.layouts.space import RECOMPUTE_CODES, layout_flags, layout_flags_one
from planner.engine.run.columns import memory_terms
from planner.engine.run.kernel_run import evaluate_inputs, evaluate_scalar
from planner.engine.run.run_inputs import RunChoices, base_inputs, canonical_choices
from planner.errors import choice_error, suggestion


def evaluate(*, model=DEFAULTS["model"], hardware=DEFAULTS["evaluate_hardware"],
             global_batch=None, seq_len=None, precision=DEFAULTS["precision"],
             site=DEFAULTS["site"], tokens=DEFAULTS["tokens"],
             checkpoint=DEFAULTS["checkpoint"], cost_basis=DEFAULTS["cost_basis"],
             site_class=DEFAULTS["site_class"], flash_attention=True,
             reliability=DEFAULTS["reliability"], catalog=None, catalog_dirs=(),
             overrides=None, return_inputs=False, pricing=DEFAULTS["pricing"],
             provider=DEFAULTS["provider"], spot_interruption=DEFAULTS["spot_interruption"],
             stack=None, method=DEFAULTS["method"], lora_rank=None,
             lora_targets=None, base_precision=None, packing=None, max_seq_len=None,
             reference_logprobs=None, as_frame=True, **layout):
    """Evaluate layouts of ``model`` on ``hardware``; a pandas DataFrame, one row each.

    The layout is given by the keywords of its dimensions (:data:`planner.engine.
    layout_rules.DIMENSIONS`: gpus, tp, pp, cp, ep, etp, vp, micro_batch, recompute, zero,
    shard_group, sequence_parallel: the fields of :class:`LayoutRequest`, typed, with
    their defaults).  Sizes may be scalars or equally long arrays: arrays evaluate many layouts
    in one call.  ``etp`` (expert tensor parallelism, MoE) defaults to ``tp``; EP x ETP
    folds over TP x CP x DP (Megatron-Core's parallel folding).  ``shard_group`` (ZeRO
    1-3) shards the ZeRO state over that many DP ranks and replicates it across the others
    (HSDP); default: all DP ranks.
    Sizes left out (``None``) are chosen: for one layout, the fastest layout of ``gpus``
    GPUs that fits in memory keeping the sizes given (:func:`layout_check.resolve_layout`);
    over arrays of layouts, TP8 x PP4 (``scenario.PREFERRED_LAYOUT``, other sizes 1).  Defaults come from ``planner.engine.inputs.scenario.DEFAULTS``
    (the CLI's); every value is checked against ``planner.engine.inputs.domains``.

    ``model``/``hardware`` are catalog ids or TOML paths.  ``overrides`` replaces any
    run-model input (SI units, see ``planner.model.INPUTS``) by a scalar or array;
    ``pricing``/``provider`` choose the price per GPU-hour (``planner.engine.economics.pricing``);
    ``stack`` the software stack (catalog id or entry: overlaps, attention, launches; None:
    the accelerator's for the model, :func:`planner.engine.inputs.defaults.stack_of`);
    ``method`` the training method (pretrain, sft, lora, qlora, dpo) with its options
    ``lora_rank``, ``lora_targets``, ``base_precision``, ``packing``, ``max_seq_len``,
    ``reference_logprobs`` (``planner.engine.inputs.method``; docs/post-training.md);
    arrays evaluate many variants at once (one row each).  With ``return_inputs`` the
    kernel inputs are returned too: ``(frame, inputs)``.

    ``as_frame=False`` returns a light :class:`planner.engine.layouts.result.Evaluation` instead
    (a dict of columns, ``.to_frame()`` for the DataFrame; pandas is not imported): for
    one layout its values are Python scalars computed by the kernel on scalars (thousands
    of calls per second), equal to the DataFrame's to rounding (``tests/test_evaluate_api.py``).

    Inputs are checked as strictly as the CLI's, with its messages: a wrong value or
    kind raises :class:`planner.errors.CapplanError` (a ``ValueError``) before any work.
    Names are strings (``model``/``hardware``/``stack`` may be catalog entries);
    ``catalog`` is a loaded catalog; booleans stand for no count or number (``gpus=True``
    is refused), ``None`` only for sizes that are chosen; layout sizes and ``overrides``
    are scalars or one-dimensional arrays of one length, at most
    :data:`planner.engine.inputs.call_checks.MAX_CANDIDATES` (1,000,000) rows a call (evaluate
    more in slices and concatenate); ``tokens``, ``seq_len``, ``global_batch`` are one
    number each (many: ``overrides``).

    >>> r = evaluate(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1,
    ...              global_batch=512, micro_batch=2, tokens=2e12, as_frame=False)
    >>> r["fits"], round(r["mfu"], 2) == round(float(r.to_frame().loc[0, "mfu"]), 2)
    (True, True)
    """
    check_switch("as_frame", as_frame)
    check_switch("return_inputs", return_inputs)
    if isinstance(precision, str):  # 'FP8', 'fp8_cs', 'bfloat16' as the CLI takes them
        precision = recipe_name(precision)
    choices = RunChoices(
        model=model, hardware=hardware, site=site, site_class=site_class,
        reliability=reliability, precision=precision, checkpoint=checkpoint,
        cost_basis=cost_basis, seq_len=seq_len, tokens=tokens, global_batch=global_batch,
        pricing=pricing, provider=provider, spot_interruption=spot_interruption, stack=stack,
        method=method, lora_rank=lora_rank, lora_targets=lora_targets,
        base_precision=base_precision, packing=packing, max_seq_len=max_seq_len,
        reference_logprobs=reference_logprobs)
    request = _layout_of_keywords(layout, flash_attention)
    columns, x = evaluate_run(choices, request, catalog=catalog, catalog_dirs=catalog_dirs,
                              overrides=overrides, scalar=not as_frame)
    result = Evaluation(columns)
    if as_frame:
        result = result.to_frame()
    return (result, x) if return_inputs else result


#: evaluate's layout keywords (the fields of LayoutRequest but flash attention, its own).
_LAYOUT_KEYWORDS = tuple(f.name for f in fields(LayoutRequest) if f.name != "flash_attention")
#: evaluate's keywords, its own and the layout's (a misspelt one is named with the nearest).
_KEYWORDS = (*(p.name for p in inspect.signature(evaluate).parameters.values()
               if p.kind is p.KEYWORD_ONLY), *_LAYOUT_KEYWORDS)


def _layout_of_keywords(layout: dict, flash_attention) -> LayoutRequest:
    """The layout of ``evaluate``'s layout keywords: a TypeError, as Python's own for a
    misspelt keyword, naming one that is no layout field and the nearest names."""
    for name in layout.keys() - set(_LAYOUT_KEYWORDS):
        raise TypeError(f"evaluate() got an unexpected keyword argument {name!r}; "
                        + suggestion(name, _KEYWORDS))
    return LayoutRequest(**layout, flash_attention=flash_attention)


def layout_request(options: dict) -> LayoutRequest:
    """The layout among ``options`` (e.g. a command's options), the rest ignored."""
    return LayoutRequest(**{f.name: options[f.name] for f in fields(LayoutRequest)
                            if f.name in options})


def evaluate_run(choices: RunChoices, request: LayoutRequest, *, catalog=None,
                 catalog_dirs=(), overrides=None, scalar: bool = False,
                 settle_memory: bool = False) -> tuple[dict, dict]:
    """:func:`evaluate` without pandas: ``(columns, kernel inputs)``.

    Columns are arrays of one entry per layout; with ``scalar`` and one layout, Python
    scalars from the kernel run on numpy float64 scalars (:func:`evaluate_scalar`).
    ``settle_memory`` (one layout): what the request leaves out of its memory savings is
    settled as a team would to make the layout fit, in this order: selective-recompute
    modules beyond the stack's (:data:`MODULE_LADDER`), full recompute (a recompute left
    out), a higher ZeRO stage (one left out); the kernel inputs show the module flags
    and the columns the recompute and ZeRO stage.  Without it only a recompute left out
    is settled (selective, else full).
    """
    c, r = choices, request
    gpus, zero, recompute = r.gpus, r.zero, r.recompute
    sequence_parallel, shard_group, flash_attention = (r.sequence_parallel, r.shard_group,
                                                       r.flash_attention)
    if recompute is not None and (not isinstance(recompute, str)
                                  or recompute not in RECOMPUTE_CODES):
        raise choice_error("recompute", recompute, tuple(RECOMPUTE_CODES))
    sizes = {k: getattr(r, k) for k in CHOSEN_SIZES}
    others = {k: getattr(r, k) for k in OTHER_SIZES}
    check_switch("flash_attention", flash_attention)
    check_flag("sequence_parallel", sequence_parallel)
    check_catalog(catalog)
    check_catalog_dirs(catalog_dirs)
    check_mapping("overrides", overrides)
    check_given("gpus", gpus)
    candidate_count({"gpus": gpus, **sizes, **others, "zero": zero,
                     "shard_group": shard_group, "sequence_parallel": sequence_parallel,
                     **(overrides or {})})
    check({"gpus": gpus, **sizes, **others, "zero": zero, "tokens": c.tokens,
           "global_batch": c.global_batch, "seq_len": c.seq_len, "shard_group": shard_group,
           "sequence_parallel": sequence_parallel})
    check_overrides(overrides or {})
    if catalog is None:
        catalog = load_catalog(catalog_dirs)
    c = choices = canonical_choices(catalog, choices)
    zero_left_out = zero is None
    if zero_left_out:  # the stack's (FSDP stacks shard everything)
        zero = stack_zero_stage(catalog.stack(c.stack) if isinstance(c.stack, str)
                                else c.stack)
    # overrides first, so the layout checks and flags (stage_layers from layers ...) see the
    # overridden inputs; applied again after the flags so an overridden flag wins
    x = {**base_inputs(catalog, choices), **(overrides or {})}
    one = not any(type(v) not in _SCALARS and np.ndim(v) > 0
                  for v in (gpus, zero, sequence_parallel, shard_group, *sizes.values(),
                            *others.values(), *(overrides or {}).values()))
    batch = _divisible_default_batch(x, gpus, sizes, c.global_batch) if one else None
    if batch is not None:
        c = choices = replace(c, global_batch=batch)
        x = {**base_inputs(catalog, choices), **(overrides or {})}
    if not one:
        sizes = {k: PREFERRED_LAYOUT[k] if v is None else v for k, v in sizes.items()
                 if k != "etp"}
        sizes["etp"] = expert_tp(x, sizes["tp"], r.etp, sizes, gpus)
        recompute = DEFAULT_RECOMPUTE if recompute is None else recompute
    else:  # one layout: choose it (and the recompute left out) on the inputs the kernel sees
        recompute, sizes, modules, zero = _resolve_one(
            {**x, **(overrides or {})}, gpus, {**sizes, **others}, recompute, zero=int(zero),
            zero_left_out=zero_left_out and settle_memory, ladder=settle_memory,
            shard_group=shard_group,
            sequence_parallel=sequence_parallel,
            flash_attention=flash_attention, overrides=overrides or {})
        overrides = {**(overrides or {}), **modules}
    meta = {"model": c.model if isinstance(c.model, str) else c.model.id,
            "hardware": c.hardware if isinstance(c.hardware, str) else c.hardware.id,
            "method": c.method, "precision": c.precision, "stack": c.stack if isinstance(c.stack, str) else c.stack.id,
            "site": c.site, "site_class": c.site_class, "checkpoint": c.checkpoint,
            "recompute": recompute, "zero": zero}
    if one and scalar:
        return _evaluate_one(x, meta, gpus, {**sizes, **others},
                             recompute=RECOMPUTE_CODES[recompute],
                             zero=zero, shard_group=shard_group,
                             sequence_parallel=sequence_parallel,
                             flash_attention=flash_attention, overrides=overrides or {}), x
    tp = np.asarray(sizes["tp"])
    dp = np.asarray(gpus) // np.maximum(tp * sizes["pp"] * sizes["cp"], 1)
    if sequence_parallel is None:
        sequence_parallel = tp > 1
    layout = {"gpus": gpus, **sizes, **others, "dp": dp, "global_batch": int(x["global_batch"]),
              "recompute": RECOMPUTE_CODES[recompute],
              "zero": zero, "shard_group": dp if shard_group is None else shard_group,
              "sequence_parallel": np.asarray(sequence_parallel, dtype=int)}
    layout = dict(zip(layout, np.broadcast_arrays(*(np.atleast_1d(v) for v in layout.values())),
                      strict=True))
    check_layouts(x, layout)
    check_shard_groups(layout)
    x.update(layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"],
                          flash_attention=flash_attention))
    x.update(overrides or {})
    meta.update({k: x[k] for k in META_INPUTS})
    out = evaluate_inputs(x)
    out["largest_memory_term"] = np.asarray(memory_terms())[out.pop("largest_memory_term_index")]
    return {**meta, **{k: layout[k] for k in SHOWN_LAYOUT}, **out}, x


_SCALARS = frozenset({int, float, bool, type(None)})


def _divisible_default_batch(x: dict, gpus, sizes: dict, global_batch) -> int | None:
    """The default global batch (``x``'s, ``global_batch`` left out) rounded to the nearest
    multiple of DP x micro-batch where the model-parallel sizes given fix DP and it is
    not one (2,048 sequences on 24 GPUs at TP1 PP1: 2,040), as Megatron-Core needs whole
    micro-batches per DP rank; else None (the batch stands, or the search picks sizes it
    divides)."""
    if global_batch is not None or any(sizes.get(k) is None for k in ("tp", "pp", "cp")):
        return None
    model_parallel = int(sizes["tp"]) * int(sizes["pp"]) * int(sizes["cp"])
    if model_parallel < 1 or int(gpus) % model_parallel:
        return None
    unit = int(gpus) // model_parallel * int(sizes.get("micro_batch") or 1)
    batch = int(x["global_batch"])
    if batch % unit == 0:
        return None
    return max(unit, round(batch / unit) * unit)


#: Selective recompute's module lists beyond a stack's own, lightest first (each adds
#: to the stack's list): a one-layout run that names no modules and does not fit with its
#: stack's list takes the first that fits.  Megatron-Core's MoE guide lists the
#: output-discarding modules (norms, MoE activation, MLA up-projection: elementwise work
#: or small GEMMs) as its low-overhead answer to a memory bottleneck, before the modules
#: that checkpoint whole GEMM blocks (``mlp``, ``moe``) and the attention core
#: (NVIDIA/Megatron-LM@d98e8a6 megatron/core/transformer/moe/README.md "Memory
#: Optimization", "Fine-grained Recomputation"; TransformerConfig ``recompute_modules``).
MODULE_LADDER = (("layernorm", "moe_act", "mla_up_proj"),
                 ("layernorm", "moe_act", "mla_up_proj", "mlp", "moe"),
                 ("layernorm", "moe_act", "mla_up_proj", "mlp", "moe", "core_attn"))


def _resolve_one(x: dict, gpus, given: dict, recompute: str | None, *, zero: int,
                 zero_left_out: bool, **layout) -> tuple[str, dict, dict, int]:
    """(recompute, layout sizes, module flags, ZeRO stage) of one layout, resolved as
    :func:`_resolve_recompute` does at the stack's ZeRO stage ``zero``; a ZeRO stage left
    out is the next one up where nothing fits at the stack's (ZeRO-3 where none fits):
    Megatron-FSDP shards the optimizer states, then the gradients, then the parameters
    (``--data-parallel-sharding-strategy`` optim, optim_grads, optim_grads_params;
    NVIDIA/Megatron-LM@d98e8a6 megatron/training/arguments.py)."""
    chosen = _resolve_recompute(x, gpus, given, recompute, zero=zero, **layout)
    if zero_left_out and not chosen[3]:
        for stage in range(zero + 1, 4):
            chosen = _resolve_recompute(x, gpus, given, recompute, zero=stage, **layout)
            zero = stage
            if chosen[3]:
                break
    # where no stage fits, the last tried: it comes closest, and the refusal names what
    # would shrink it further, not the stages already tried
    return *chosen[:3], zero


def _resolve_recompute(x: dict, gpus, given: dict, recompute: str | None, *, zero: int,
                       ladder: bool, shard_group, sequence_parallel, flash_attention: bool,
                       overrides: dict) -> tuple[str, dict, dict, bool]:
    """(recompute, layout sizes, module flags, whether it fits) of one layout: the sizes as
    :func:`resolve_layout` chooses them.  A published run whose checkpointing is not
    stated ran in its memory, and Megatron-Core's answers to a layout that does not fit
    are more selective modules, then full recompute.  With selective recompute (given or
    left out) and no module flag among ``overrides``: the stack's modules where the layout
    fits or comes within the memory model's error of fitting; else the first of the
    :data:`MODULE_LADDER` lists (and full recompute, when the recompute is left out: after
    the first list alone for a dense model) that fits, or failing that the first that comes
    within the error (without ``ladder``: full recompute alone); where none does, the last
    of them.  The flags returned are the modules added to the stack's (empty: the stack's
    list)."""
    def layout_for(name, flags):
        return resolve_layout({**x, **flags}, gpus, given, recompute=RECOMPUTE_CODES[name],
                              zero=zero, sequence_parallel=sequence_parallel,
                              flash_attention=flash_attention)

    def tried(name, flags):
        sizes = layout_for(name, flags)
        return name, sizes, flags, _memory_verdict(
            {**x, **flags}, gpus, sizes, name, zero=zero, shard_group=shard_group,
            sequence_parallel=sequence_parallel, flash_attention=flash_attention,
            overrides={**overrides, **flags})

    if recompute not in (None, DEFAULT_RECOMPUTE) or set(MODULES.values()) & overrides.keys():
        name, sizes, flags, verdict = tried(DEFAULT_RECOMPUTE if recompute is None
                                            else recompute, {})
        return name, sizes, flags, verdict > 0
    own = tried(DEFAULT_RECOMPUTE, {})
    if own[3]:
        return *own[:3], True
    rungs = list(_added_modules(x)) if ladder else []
    if recompute is None and not x["moe_layers"]:
        # a dense run whose recompute is not stated: the norms, then full recompute, as
        # dense Megatron recipes that do not fit run it (the MoE guide offers the mlp
        # module for the dense layers of MoE models)
        rungs = rungs[:1]
    more = [tried(DEFAULT_RECOMPUTE, flags) for flags in rungs]
    if recompute is None:
        more.append(tried("full", {}))
    for verdict in (FITS, NEARLY):
        for name, sizes, flags, found in more:
            if found == verdict:
                return name, sizes, flags, True
    # none fits: the last tried (every module list, or full recompute when the recompute is
    # left out) comes closest, and the refusal names what would shrink it further, not the
    # modules already tried
    return (*(more[-1] if more else own)[:3], False)


def _added_modules(x: dict):
    """The module flags of each :data:`MODULE_LADDER` list that recomputes more than the
    stack's own list (``x``'s flags) and than the list before it, of the modules the
    model has."""
    has = modules_of(x)
    own = {MODULES[name] for name in recomputed_modules(x)}
    added: set[str] = set()
    for names in MODULE_LADDER:
        more = {MODULES[n] for n in names if n in has} - own - added
        if more:
            added |= more
            yield dict.fromkeys(sorted(added), 1.0)


#: :func:`_memory_verdict`'s answers.
FITS, NEARLY, OVER = 2, 1, 0


def _memory_verdict(x: dict, gpus, sizes: dict, recompute: str, *, zero: int, shard_group,
                    sequence_parallel, flash_attention: bool, overrides: dict) -> int:
    """Whether one layout fits in memory (FITS), is over it by less than the memory
    model's error (NEARLY: :func:`layout_check.within_memory_tolerance`) or more (OVER)."""
    inputs = dict(x)
    _one_layout(inputs, gpus, sizes, recompute=RECOMPUTE_CODES[recompute], zero=zero,
                shard_group=shard_group, sequence_parallel=sequence_parallel,
                flash_attention=flash_attention, overrides=overrides)
    out = evaluate_scalar(inputs)
    if bool(out["fits"]):
        return FITS
    return NEARLY if bool(within_memory_tolerance(out)) else OVER


#: The layout columns after the run's own (``recompute`` and ``zero`` are among those).
SHOWN_LAYOUT = tuple(d.name for d in DIMENSIONS if d.name not in ("recompute", "zero"))
#: Kernel inputs shown among the leading columns of :func:`evaluate` (after overrides).
META_INPUTS = ("global_batch", "seq_len", "tokens")


def _evaluate_one(x: dict, meta: dict, gpus, sizes: dict, *, recompute: int, zero,
                  sequence_parallel, flash_attention: bool, overrides: dict,
                  shard_group=None) -> dict:
    """The columns of one layout as Python scalars (updates ``x`` to the kernel inputs)."""
    if overrides:  # else resolve_layout checked this layout on these very inputs
        check_layout(x, gpus=int(gpus), **{k: int(v) for k, v in sizes.items()})
    layout = _one_layout(x, gpus, sizes, recompute=recompute, zero=zero,
                         shard_group=shard_group, sequence_parallel=sequence_parallel,
                         flash_attention=flash_attention, overrides=overrides)
    meta = {**meta, **{k: x[k] for k in META_INPUTS}}
    return {**{k: _plain(v) for k, v in meta.items()}, **{k: layout[k] for k in SHOWN_LAYOUT},
            **evaluate_scalar(x)}


def _one_layout(x: dict, gpus, sizes: dict, *, recompute: int, zero, shard_group,
                sequence_parallel, flash_attention: bool, overrides: dict) -> dict:
    """One layout's sizes with DP, batch, shard group and sequence parallelism; ``x``
    updated to its kernel inputs (its flags, then ``overrides``: an overridden flag wins)."""
    layout = {"gpus": int(gpus), **{k: int(v) for k, v in sizes.items()}}
    layout["dp"] = layout["gpus"] // (layout["tp"] * layout["pp"] * layout["cp"])
    layout["global_batch"] = int(x["global_batch"])
    layout["shard_group"] = layout["dp"] if shard_group is None else int(shard_group)
    check_shard_group(layout["dp"], layout["shard_group"], int(zero))
    if sequence_parallel is None:
        sequence_parallel = layout["tp"] > 1
    layout["sequence_parallel"] = int(bool(sequence_parallel))
    x.update(layout_flags_one({**layout, "recompute": recompute, "zero": int(zero)},
                              scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"],
                              flash_attention=flash_attention))
    x.update(overrides)
    return layout


def _plain(value):
    """A numpy scalar or 0-d array as the Python scalar; anything else unchanged."""
    return value.item() if hasattr(value, "item") and np.ndim(value) == 0 else value
