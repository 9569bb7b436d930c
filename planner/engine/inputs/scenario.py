"""Scenario: the user's question, resolved against the catalog into kernel inputs.

A :class:`Scenario` holds names and numbers as the user gave them; the
``*_inputs`` functions turn catalog entries into the SI inputs of
:func:`planner.model.run_model`.  Nothing here evaluates the model.
"""

from __future__ import annotations

import tomllib
import typing
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from formulas.carbon import embodied_per_accelerator
from formulas.compute import mixed_precision_peak, quantisation_cast_bytes_per_element
from hardware_catalog import load_catalog
from hardware_catalog.recipes import load_recipes
from hardware_catalog.schema import Quantity, SoftwareStack
from planner.engine.economics.ownership import ownership_inputs, ownership_parameters
from planner.engine.economics.pricing import check_choice, spot_interruption
from planner.engine.inputs.call_checks import (
    check_catalog_dirs,
    check_given,
    check_hardware_list,
    check_names,
    check_scalars,
)
from planner.engine.inputs.defaults import (  # noqa: F401
    CHECKPOINT_SCHEMES,
    COST_BASES,
    DEFAULT_GLOBAL_BATCH_TOKENS,
    DEFAULT_MODEL,
    DEFAULT_TOKENS,
    DEFAULTS,
    EFFICIENCY_FALLBACK,
    OBJECTIVE_COLUMNS,
    OBJECTIVES,
    PRECISIONS,
    PREFERRED_LAYOUT,
)
from planner.engine.inputs.domains import INPUT_DOMAINS, check, check_confidence
from planner.engine.inputs.layout_rules import DEFAULT_ZERO
from planner.engine.inputs.method import check_padded_length, method_of
from planner.errors import (
    CapplanError,
    ModelRefused,
    PrecisionRefused,
    choice_error,
    did_you_mean,
    shown,
)


@dataclass(frozen=True)
class Scenario:
    """One planning question (names resolved later against the catalog)."""

    model: str = DEFAULTS["model"]
    tokens: float = DEFAULTS["tokens"]
    global_batch: int | None = None  # sequences; default 16M tokens / seq_len
    #: (LO, HI) sequences: the plan chooses each layout's batch in this range (global_batch
    #: is LO, with which the run needs `tokens`; planner.engine.layouts.space.batch_candidates)
    global_batch_range: tuple[int, int] | None = None
    seq_len: int | None = None  # default: the model's
    hardware: tuple[str, ...] = (DEFAULTS["hardware"],)
    site: str = DEFAULTS["site"]
    site_class: str = DEFAULTS["site_class"]  # PUE by class of data centre, or "site"
    reliability: str = DEFAULTS["reliability"]
    precision: str = DEFAULTS["precision"]
    #: software stack id (hardware_catalog/data/stacks); None: each accelerator's own for
    #: the model (planner.engine.inputs.defaults.stack_of: maxtext-xla on TPUs, else
    #: megatron-core-moe-tuned for an MoE model; for a dense one megatron-bridge-2025 on
    #: Blackwell, megatron-core-2025 elsewhere)
    stack: str | None = None
    checkpoint: str = DEFAULTS["checkpoint"]
    cost_basis: str = DEFAULTS["cost_basis"]
    min_gpus: int = DEFAULTS["min_gpus"]
    max_gpus: int = DEFAULTS["max_gpus"]
    pricing: str = DEFAULTS["pricing"]  # price tier (planner.engine.economics.pricing.TIERS)
    provider: str = DEFAULTS["provider"]  # median | cheapest | a provider name
    spot_interruption: str = DEFAULTS["spot_interruption"]  # spot preemption bucket or monthly fraction
    deadline_days: float | None = DEFAULTS["deadline_days"]  # None: no deadline
    budget_usd: float | None = None
    max_power_mw: float | None = None
    #: the quantile of the uncertainty model at which deadline, budget and power must hold
    #: the quantile of the uncertainty model the constraints hold at and the numbers are shown
    #: at (0.5: the median, P50); None: the nominal run (every input at its catalog value,
    #: no margin), which is not the median; planner.analysis.confidence
    confidence: float | None = None
    #: (accelerator, wall-time, cost, peak-power multipliers) of ``confidence``: a candidate
    #: meets a limit when its nominal value x the multiplier does (empty: no margin)
    margins: tuple = ()
    objective: str = DEFAULTS["objective"]
    knee_threshold: float = DEFAULTS["knee_threshold"]
    catalog_dirs: tuple[str, ...] = ()
    price_files: tuple[str, ...] = ()  # the user's own price quotes (--prices FILE)
    #: Owned-cluster parameters overriding hardware_catalog/data/prices/ownership.csv.
    ownership: dict = field(default_factory=dict)
    #: Run-model input overrides in SI units (see ``planner.model.INPUTS``).
    extra: dict = field(default_factory=dict)
    #: the training method and its options (planner.engine.inputs.method; None: the default)
    method: str = DEFAULTS["method"]
    lora_rank: int | None = None
    lora_targets: str | None = None
    base_precision: str | None = None
    packing: str | None = None
    max_seq_len: int | None = None
    reference_logprobs: str | None = None

    def with_(self, **changes) -> Scenario:
        return replace(self, **changes)

    def margin(self, hardware: str) -> tuple[float, float, float]:
        """The (wall-time, cost, peak-power) multipliers of ``hardware`` (1s: no margin)."""
        for hw, *m in self.margins:
            if hw == hardware:
                return tuple(m)
        return (1.0, 1.0, 1.0)

    def for_hardware(self, hardware: str) -> Scenario:
        """This scenario for one accelerator's search: each limit divided by its margin
        (a candidate passes the deadline when days x m_days <= deadline), no margins left."""
        if not self.margins:
            return self
        m_days, m_cost, m_power = self.margin(hardware)
        scaled = {field: (None if getattr(self, field) is None else getattr(self, field) / m)
                  for field, m in (("deadline_days", m_days), ("budget_usd", m_cost),
                                   ("max_power_mw", m_power))}
        return replace(self, margins=(), **scaled)

    def validate(self) -> None:
        """Raise CapplanError on the first value outside its domain (planner.engine.inputs.domains)
        or of the wrong kind (planner.engine.inputs.call_checks: names are strings, numbers are
        one number each, booleans are no counts)."""
        check_names({"model": self.model, "site": self.site, "site_class": self.site_class,
                     "reliability": self.reliability, "pricing": self.pricing,
                     "provider": self.provider,
                     **({} if self.stack is None else {"stack": self.stack})}, entries={})
        check_hardware_list(self.hardware)
        check_catalog_dirs(self.catalog_dirs)
        check_given("tokens", self.tokens)
        check_scalars({"tokens": self.tokens, "global_batch": self.global_batch,
                       "seq_len": self.seq_len, "min_gpus": self.min_gpus,
                       "max_gpus": self.max_gpus, "deadline_days": self.deadline_days,
                       "budget_usd": self.budget_usd, "max_power_mw": self.max_power_mw,
                       "knee_threshold": self.knee_threshold})
        check_choices(precision=self.precision, checkpoint=self.checkpoint,
                      cost_basis=self.cost_basis, objective=self.objective)
        check_padded_length(method_of(self).max_seq_len, self.seq_len)
        check_choice(self.pricing, self.provider)
        if self.pricing == "spot":
            spot_interruption(self.spot_interruption)
        check({"tokens": self.tokens, "global_batch": self.global_batch,
               "seq_len": self.seq_len, "min_gpus": self.min_gpus, "max_gpus": self.max_gpus,
               "deadline_days": self.deadline_days, "budget_usd": self.budget_usd,
               "max_power_mw": self.max_power_mw, "knee_threshold": self.knee_threshold})
        if self.confidence is not None:
            check_confidence(self.confidence)
        if self.global_batch_range is not None:
            check_batch_range(self.global_batch_range, self.global_batch)
        if self.max_gpus < self.min_gpus:
            raise CapplanError(
                f"GPU range {self.min_gpus}..{self.max_gpus} is empty; need --min-gpus <= "
                "--max-gpus")
        if not isinstance(self.extra, dict):
            raise CapplanError(f"extra must be a dict of run-model inputs, got {self.extra!r}")
        check_overrides(self.extra)
        if not isinstance(self.ownership, dict):
            raise CapplanError(f"ownership must be a dict of parameters, got {self.ownership!r}")
        ownership_parameters(self.ownership)


#: Site-network flags (``--gpus-per-node`` ...) -> (run-model input, factor to SI).
NETWORK_FLAGS = {"gpus_per_node": ("gpus_per_node", 1.0),
                 "nic_gbps": ("scale_out_bandwidth_bytes_per_s", 1e9 / 8),
                 "scale_up_domain": ("scale_up_domain_gpus", 1.0),
                 "oversubscription": ("oversubscription", 1.0),
                 "pod_gpus": ("pod_gpus", 1.0)}


def node_network(node) -> dict[str, float]:
    """The site-network flags of a catalog node (``--network ID``): its GPUs per node,
    NIC bandwidth per GPU [Gb/s], and the pod and oversubscription of its fabric."""
    return {"gpus_per_node": node.gpus_per_node,
            "nic_gbps": node.scale_out_bytes_per_s_per_gpu * 8 / 1e9,
            "oversubscription": value(getattr(node, "oversubscription_ratio", None) or 1.0),
            "pod_gpus": value(getattr(node, "pod_gpus", None) or NO_POD_LIMIT_GPUS)}


def network_overrides(network=None, catalog=None, **flags) -> dict[str, float]:
    """Run-model inputs of the site-network flags given (None = the node's own value);
    ``network`` names a catalog node whose network the flags start from.

    ``gpus_per_node``, ``nic_gbps`` (scale-out bandwidth per GPU, one direction [Gb/s]),
    ``scale_up_domain`` (GPUs per NVLink/xGMI domain), ``oversubscription`` and
    ``pod_gpus`` (a 1:R taper above pods of N GPUs, Llama 3: 7 and 3,072).
    """
    check(flags)
    if network is not None:
        if catalog is None:
            catalog = load_catalog()
        flags = {**node_network(catalog.node(network)),
                 **{k: v for k, v in flags.items() if v is not None}}
    out = {}
    for flag, given in flags.items():
        if given is not None:
            name, factor = NETWORK_FLAGS[flag]
            out[name] = float(given) * factor
    return out


def check_overrides(overrides: dict) -> None:
    """Run-model input overrides: known names (did you mean) inside their domains."""
    for name in overrides:
        if name not in INPUT_DOMAINS:
            raise did_you_mean("run-model input", str(name), INPUT_DOMAINS)
    check(overrides)


NEVER_S = 1e18
NO_POD_LIMIT_GPUS = 2.0**24  # a non-blocking fabric: one pod as large as any cluster
#: The exponential rate of an accelerator whose catalog entry gives none [1/s]: so fast
#: that a fused attention kernel's softmax never waits for it
#: (formulas.compute.fused_attention_slowdown)
UNBOUNDED_EXP_OPS_PER_S = 1e30
UNLIMITED_BYTES_PER_S = 1e18
#: ``spare_nodes`` of ``--spares auto`` (planner.engine.run.spares.AUTO).
SPARES_AUTO = -1.0

#: Software stragglers an operator states (``--gc-interval``, ...); these defaults add
#: none: no unplanned GC beyond the profile's pauses, balanced stages, no slow nodes.
STRAGGLER_DEFAULTS: dict[str, float] = {
    "gc_interval_s": NEVER_S, "gc_duration_s": 0.0, "gc_planned": 0.0,
    "gc_planned_steps": 1.0, "stage_extra_layers": 0.0, "slow_node_fraction": 0.0,
    "slow_node_slowdown": 1.0,
}


def value(quantity) -> float:
    """The number of a catalog Quantity (or a plain number)."""
    return float(getattr(quantity, "value", quantity))


@cache
def execution_defaults() -> dict[str, float]:
    """Software/efficiency defaults from planner/execution.toml (name -> SI value)."""
    data = tomllib.loads((Path(__file__).with_name("execution.toml")).read_text())
    return {k: float(v["value"]) for k, v in data.items() if isinstance(v, dict)}


#: Stack quantities that are no run-model input: a share of the accelerator's GEMM efficiency
#: (applied in :func:`hardware_inputs`), the precision check's int8 flag and the model
#: check's Mamba-2 flag.
NOT_RUN_INPUTS = ("gemm_efficiency_factor", "int8_training", "mamba2_layers", "zero_stage")


def stack_zero_stage(stack) -> int:
    """The ZeRO stage a run on ``stack`` (catalog entry) takes when the user leaves it out:
    the stack's ``zero_stage`` (torchtitan's FSDP2, MaxText's FSDP, llm-foundry's FSDP: 3),
    else 1 (Megatron-Core's distributed optimizer)."""
    q = getattr(stack, "zero_stage", None)
    return int(q.value) if q is not None else DEFAULT_ZERO


def _stack_input_names() -> tuple[str, ...]:
    """The quantities of :class:`hardware_catalog.schema.SoftwareStack`, each a run-model
    input of its name, but ``gemm_efficiency_factor`` (a share of the accelerator's GEMM
    efficiency, applied in :func:`hardware_inputs`)."""
    return tuple(name for name, f in SoftwareStack.model_fields.items()
                 if name not in NOT_RUN_INPUTS
                 and Quantity in (typing.get_args(f.annotation) or (f.annotation,)))


#: Run-model inputs a software stack sets: read from the schema, so that a new stack field
#: is declared once (the schema) and given a default in execution.toml where it is optional.
STACK_INPUTS = _stack_input_names()


def stack_inputs(stack, accelerator_id: str | None = None) -> dict[str, float]:
    """Kernel inputs of a software stack (catalog entry): overlaps, attention, launches.

    A field the stack sets for ``accelerator_id`` (``on_accelerator``: the fused-attention
    factor and variants of a kernel written, or not, for that architecture) replaces its
    general value.
    """
    defaults = execution_defaults()  # the fields a stack leaves unset
    own = stack.on_accelerator.get(accelerator_id or "")
    return {name: value(getattr(own, name, None) if getattr(own, name, None) is not None
                        else getattr(stack, name) if getattr(stack, name) is not None
                        else defaults[name])
            for name in STACK_INPUTS}


def stack_factor(stack, name: str, accelerator_id: str | None = None):
    """A stack's ``attention_efficiency_factor`` / ``gemm_efficiency_factor`` (Quantity):
    its own on ``accelerator_id`` when it names one, else its general value."""
    own = stack.on_accelerator.get(accelerator_id or "")
    return getattr(own, name, None) or getattr(stack, name)


def model_inputs(model, seq_len: int | None = None) -> dict[str, float]:
    """Kernel inputs describing the model architecture."""
    experts = int(getattr(model, "experts", 0) or 0)
    return {
        "layers": float(model.layers),
        "hidden": float(model.hidden),
        "heads": float(model.heads),
        "kv_heads": float(model.kv_heads or model.heads),
        "ffn": float(model.ffn or 4 * model.hidden),
        "mlp_matrices": 3.0 if model.gated_mlp else 2.0,
        "dropout_masks": 1.0 if getattr(model, "dropout", False) else 0.0,
        "vocab": float(model.vocab),
        "seq_len": float(seq_len or model.seq_len),
        "embedding_matrices": 1.0 if model.tied_embeddings else 2.0,
        "moe_layers": float(model.moe_layers),  # (ModelSpec: dense and MLP-free ones aside)
        "experts": float(max(experts, 1)),
        # dense models: one "expert" with moe_layers = 0, so MoE terms vanish
        "experts_per_token": float(getattr(model, "experts_per_token", 0) or 1)
        if experts else 1.0,
        "shared_experts": float(getattr(model, "shared_experts", 0) or 0) if experts else 0.0,
        # node-limited routing: no limit = as many nodes as experts per token
        "routed_node_limit": float(getattr(model, "routed_node_limit", None)
                                   or getattr(model, "experts_per_token", 0) or 1),
        "moe_ffn": float(getattr(model, "moe_ffn", 0) or model.ffn or 4 * model.hidden),
        **attention_shape_inputs(model, seq_len or model.seq_len),
    }


def attention_shape_inputs(model, seq_len: float) -> dict[str, float]:
    """Kernel inputs of the head sizes, MLA, sliding window, MTP modules and linear-attention
    layers of ``model``.

    A model that sets none of them gets heads of h/a, no MLA, no window and no MTP,
    which leave the kernel's outputs as they were before these inputs existed.
    """
    mla = getattr(model, "kv_lora_rank", None) is not None
    if mla:
        head_dim = float(model.qk_nope_head_dim + model.qk_rope_head_dim)
        v_head_dim = float(model.v_head_dim)
    else:
        head_dim = float(getattr(model, "head_dim", None) or model.hidden / model.heads)
        v_head_dim = head_dim
    window = getattr(model, "sliding_window", None)
    window_layers = getattr(model, "window_layers", 0) if window is not None else 0
    return {
        "head_dim": head_dim,
        "v_head_dim": v_head_dim,
        "q_lora_rank": float(getattr(model, "q_lora_rank", None) or 0) if mla else 0.0,
        "kv_lora_rank": float(model.kv_lora_rank) if mla else 0.0,
        "qk_rope_head_dim": float(model.qk_rope_head_dim) if mla else 0.0,
        "window": float(window if window is not None else seq_len),
        "window_layers": float(window_layers),
        "attention_sinks": 1.0 if getattr(model, "attention_sinks", False) else 0.0,
        "attention_softcap": 1.0 if getattr(model, "attention_softcap", None) else 0.0,
        "mtp_layers": float(getattr(model, "mtp_layers", 0) or 0),
        **linear_attention_inputs(model),
        **hybrid_inputs(model),
        # LatentMoE's latent size of the routed experts (0: they work in hidden)
        "moe_latent_dim": float(getattr(model, "moe_latent_dim", None) or 0),
    }


def linear_attention_inputs(model) -> dict[str, float]:
    """Kernel inputs of the gated-linear-attention layers of ``model`` (none: 0 layers, and
    heads of size 1 that then count nothing)."""
    layers = float(getattr(model, "linear_attention_layers", 0) or 0)
    return {"linear_attention_layers": layers,
            **{k: float(getattr(model, k, None) or 1) if layers else 1.0
               for k in ("linear_key_heads", "linear_value_heads", "linear_head_dim")}}


def hybrid_inputs(model) -> dict[str, float]:
    """Kernel inputs of the Mamba-2 layers and of the one-part blocks of a hybrid model
    (none: 0 layers, and a mixer of size 1 that then counts nothing)."""
    layers = float(getattr(model, "mamba_layers", 0) or 0)
    return {"mamba_layers": layers,
            **{k: float(getattr(model, k, None) or 1) if layers else 1.0
               for k in ("mamba_heads", "mamba_head_dim", "mamba_state_dim", "mamba_groups")},
            "mixer_free_layers": float(getattr(model, "mixer_free_layers", 0) or 0),
            "mlp_free_layers": float(getattr(model, "mlp_free_layers", 0) or 0)}


#: GEMM precisions below BF16: their recipes keep the attention core in BF16.
LOW_PRECISIONS = ("fp8", "fp6", "fp4", "int8")


def precision_recipe(precision: str):
    """The recipe ``--precision`` names (hardware_catalog/data/precisions/recipes.csv)."""
    recipes = load_recipes()
    if precision not in recipes:
        raise did_you_mean("precision", shown(precision), recipes)
    return recipes[precision]


def gemm_precision(precision: str) -> str:
    """The peak a recipe's low-precision GEMMs run at (``mxfp8`` -> ``fp8``); a GEMM
    precision (``fp6``, ``int8`` ...) is its own; ``fp16`` runs at the BF16 peak."""
    if precision == "fp16":
        return "bf16"
    return load_recipes()[precision].gemm_precision if precision in load_recipes() \
        else precision


def peak_flops(accelerator, precision: str) -> float:
    """Dense peak FLOP/s of ``accelerator`` at ``precision`` (a recipe or GEMM precision);
    error if unsupported."""
    gemm = gemm_precision(precision)
    quantity = getattr(accelerator, f"peak_{gemm}_flops_per_s", None)
    if quantity is None:
        raise CapplanError(f"accelerator '{accelerator.id}' has no {gemm} peak; "
                           f"use --precision bf16")
    return value(quantity)


def _float16_formats(accelerator) -> tuple[str, ...]:
    """The 16-bit float formats the part's matrix units take (both where unstated)."""
    return tuple(getattr(accelerator, "float16_formats", None) or ("bf16", "fp16"))


def native_float16(accelerator) -> str:
    """The 16-bit recipe a part trains in where a command names none: bf16, or fp16 on a
    part whose matrix units take no BF16 (V100's ``float16_formats``)."""
    formats = _float16_formats(accelerator)
    return "bf16" if "bf16" in formats else formats[0]


def precision_refusal(accelerator, precision: str, stack=None) -> str:
    """Why ``accelerator`` (with ``stack``) cannot run recipe ``precision`` ('' : it can):
    a peak the recipe needs is missing, the format is another vendor's, or the stack does
    not train at that precision."""
    r = precision_recipe(precision)
    if getattr(accelerator, f"peak_{r.gemm_precision}_flops_per_s", None) is None:
        return f"accelerator '{accelerator.id}' has no {r.gemm_precision} peak"
    for needed in r.requires:
        if getattr(accelerator, f"peak_{needed}_flops_per_s", None) is None:
            # the recipe's further peak stands for a unit of the matrix engine (MX formats:
            # the block scaling of the parts with an fp4 path)
            return (f"accelerator '{accelerator.id}' has no hardware block scaling, which "
                    f"{precision} needs (the parts with an {needed} peak scale its blocks in "
                    f"their matrix units)")
    # fp16 trains in FP16; every other recipe but tf32 keeps its 16-bit GEMMs in BF16
    float16 = {"fp16": "fp16", "tf32": None}.get(precision, "bf16")
    formats = _float16_formats(accelerator)
    if float16 and float16 not in formats:
        return (f"accelerator '{accelerator.id}' has no {float16} matrix units (its 16-bit "
                f"format is {' and '.join(formats)}: use --precision "
                f"{native_float16(accelerator)})")
    if r.vendors and getattr(accelerator, "vendor", None) not in r.vendors:
        return f"{precision} is a {'/'.join(r.vendors)} format; '{accelerator.id}' is not"
    if stack is not None and r.stack_flag and not value(
            getattr(stack, r.stack_flag, None) or 0.0):
        return f"stack '{stack.id}' does not train in {precision} ({r.stack_flag} = 0)"
    return ""


def stack_for_precision(catalog, accelerator, stack: str, precision) -> str:
    """The stack a run left to its part's default (``stack``, an id) takes at ``precision``:
    that one, or where it does not train in the precision (int8: the Megatron stacks do
    not) the first stack by id that does on ``accelerator``, as a team training in that
    precision runs a stack that can; ``stack`` too where none can (the refusal says so)."""
    if not isinstance(precision, str) or precision not in PRECISIONS \
            or not hasattr(accelerator, "id") or not isinstance(stack, str) \
            or not precision_refusal(accelerator, precision, catalog.stack(stack)) \
            .startswith("stack"):
        return stack
    able = [i for i in sorted(catalog.stacks)
            if not precision_refusal(accelerator, precision, catalog.stacks[i])]
    return able[0] if able else stack


#: The choices of a run named by one of a few words: option (underscores) -> allowed words.
CHOICES = {"precision": PRECISIONS, "checkpoint": CHECKPOINT_SCHEMES, "cost_basis": COST_BASES,
           "objective": OBJECTIVES}


def check_choices(**values) -> None:
    """CapplanError (:func:`planner.errors.choice_error`'s line) for the first value that is
    not one of its option's words (:data:`CHOICES`); the one check of these choices."""
    for name, value in values.items():
        allowed = CHOICES[name]
        if not isinstance(value, str) or value not in allowed:
            raise choice_error(name.replace("_", "-"), value, allowed)


def check_precision(catalog, accelerator, precision: str, stack=None) -> None:
    """Raise CapplanError (one line) when ``accelerator`` and ``stack`` cannot run
    ``precision``, naming the shipped and loaded parts (and stacks) that can."""
    why = precision_refusal(accelerator, precision, stack)
    if not why:
        return
    if why.startswith("stack"):
        can = sorted(i for i, st in catalog.stacks.items()
                     if not precision_refusal(accelerator, precision, st))
        where = f"stacks that do on '{accelerator.id}': {', '.join(can) or 'none'}"
    else:
        can = sorted(i for i, a in catalog.accelerators.items()
                     if not precision_refusal(a, precision))
        where = f"it runs on: {', '.join(can) or 'no accelerator in the catalog'}"
    raise PrecisionRefused(f"--precision {precision}: {why}; {where}", why)


#: Stacks a refusal names at most (the catalog has many variants of one stack).
SHOWN_STACKS = 4


def model_refusal(model, stack) -> str:
    """Why ``stack`` (a catalog entry) cannot train ``model``, or '': a hybrid model's
    Mamba-2 layers need a stack that has them (its ``mamba2_layers``: Megatron-Core's
    MambaMixer; torchtitan's and MaxText's models have none)."""
    mamba = int(getattr(model, "mamba_layers", 0) or 0)
    if stack is None or not mamba or value(getattr(stack, "mamba2_layers", None) or 0.0):
        return ""
    return f"stack '{stack.id}' has no Mamba-2 layers (mamba2_layers = 0)"


def check_model_support(catalog, model, stack) -> None:
    """Raise ModelRefused (one line) when ``stack`` cannot train ``model``, naming the
    stacks that can."""
    why = model_refusal(model, stack)
    if why:
        can = sorted(i for i, st in catalog.stacks.items() if not model_refusal(model, st))
        shown_can = ", ".join(can[:SHOWN_STACKS]) + (f" ({len(can)} in all)"
                                                      if len(can) > SHOWN_STACKS else "")
        raise ModelRefused(f"model '{model.id}' has {model.mamba_layers} Mamba-2 layers: "
                           f"{why}; stacks that have them: {shown_can or 'none'}", why)


def attention_precision(precision: str) -> str:
    """The precision the fused attention core runs in: BF16 under FP8, FP6, FP4 and int8
    recipes (Transformer Engine's ``fp8_dpa`` is off by default, TE 2.x
    ``transformer_engine.common.recipe``; DeepSeek-V3 keeps "attention operators" in BF16,
    arXiv:2412.19437 s3.3; the NVFP4 recipe keeps the attention GEMMs in BF16,
    arXiv:2509.25149 s4), the run's precision otherwise."""
    gemm = gemm_precision(precision)
    return "bf16" if gemm in LOW_PRECISIONS else gemm


def gemm_efficiency(accelerator, precision: str, replaced: dict | None = None) -> float:
    """Large-GEMM fraction of the peak at ``precision``: the accelerator's value for that
    precision (``gemm_max_efficiency_fp8`` ...), else that of the next wider precision
    (fp4 -> fp8 -> bf16, ``EFFICIENCY_FALLBACK``), else its bf16 ``gemm_max_efficiency``.
    ``replaced`` (GEMM precision -> value, "bf16" for ``gemm_max_efficiency``) stands in
    for the accelerator's values, as a calibration trying other values needs."""
    replaced = replaced or {}
    precision = gemm_precision(precision)
    while precision in EFFICIENCY_FALLBACK:
        own = replaced.get(precision, getattr(accelerator, f"gemm_max_efficiency_{precision}",
                                              None))
        if own is not None:
            return value(own)
        precision = EFFICIENCY_FALLBACK[precision]
    return value(replaced.get("bf16", accelerator.gemm_max_efficiency))


#: Bytes of one quantised GEMM-input element with its scales, as the recipes cache it.
QUANTISED_BYTES = 1.0


def recipe_gemm_inputs(accelerator, precision: str,
                       replaced: dict | None = None) -> dict[str, float]:
    """The GEMM peak, large-GEMM efficiency and cached-input bytes of recipe ``precision``
    on ``accelerator``: its low-precision GEMMs at the part's efficiency for that precision
    times the recipe's ``gemm_rate_factor``; the share of the GEMM FLOPs it keeps in BF16
    (its BF16 layers, and the weight gradients where they stay in high precision) runs at
    the BF16 peak and efficiency (:func:`formulas.compute.mixed_precision_peak`), its cached
    GEMM inputs at the recipe's bytes for its low-precision layers and 2 for the rest."""
    r = precision_recipe(precision)
    # the recipe's own kernels (row-wise scales: slower GEMMs and casts than per-tensor
    # scaling) reach gemm_rate_factor of the per-tensor path's efficiency
    low_peak = peak_flops(accelerator, precision)
    low_eff = gemm_efficiency(accelerator, precision, replaced) * r.gemm_rate_factor
    share, layers = r.gemm_flop_share, r.low_precision_share
    peak = low_peak if share == 1 else mixed_precision_peak(
        share, low_peak, peak_flops(accelerator, "bf16"), low_eff,
        gemm_efficiency(accelerator, "bf16", replaced))
    return {"peak_flops_per_s": peak, "gemm_max_efficiency": low_eff,
            # the attention core's GEMMs run in its own precision (BF16 under the
            # low-precision recipes), at that precision's large-GEMM efficiency
            "attention_gemm_max_efficiency": gemm_efficiency(
                accelerator, attention_precision(precision), replaced),
            "linear_input_bytes": layers * r.cached_input_bytes + (1 - layers) * 2.0,
            # a quantised element with its scales: 1 byte (FP8, int8; FP4's copy with its
            # Hadamard-transformed one), one copy where the weight gradient stays in BF16
            "cast_bytes_per_element": quantisation_cast_bytes_per_element(
                r.cast_passes, QUANTISED_BYTES, layers,
                quantised_copies=2 - r.wgrad_high_precision)}


def output_layer_at_low_precision(precision: str, stack_converts: float) -> float:
    """1 where the output layer (LM head) runs at the recipe's low precision: the stack
    converts it (``low_precision_output_layer``) and the recipe does not keep it in 16-bit
    (``output_layer_high_precision``: NVIDIA's NVFP4 recipe with a BF16 tail keeps the LM
    head in BF16 with the final layers, as torchtitan's mixed NVFP4 config does)."""
    return stack_converts * (1 - precision_recipe(precision).output_layer_high_precision)


def hardware_inputs(accelerator, node, precision: str, stack=None) -> dict[str, float]:
    """Kernel inputs describing one accelerator in its node and fabric.

    ``stack`` (a catalog software stack) scales the large-GEMM efficiency by the fraction
    of it the stack's GEMM path reaches on this accelerator (``gemm_efficiency_factor``).
    """
    gemm_factor = 1.0 if stack is None else value(
        stack_factor(stack, "gemm_efficiency_factor", accelerator.id))
    gpus_per_node = float(value(node.gpus_per_node))
    nic_bytes_per_s = value(node.nics_per_node) * value(node.nic_bandwidth_bits_per_s) / 8
    ports = value(getattr(node, "network_ports_per_node", node.nics_per_node))
    lifetime_years = value(getattr(accelerator, "lifetime_years", 5.0))
    gemm = recipe_gemm_inputs(accelerator, precision)
    return {
        "peak_flops_per_s": gemm["peak_flops_per_s"],
        "attention_peak_flops_per_s": peak_flops(accelerator, attention_precision(precision)),
        # Linear inputs kept for the backward pass in the GEMM precision: FP8 (and FP4)
        # recipes cache the quantised input their weight-gradient GEMM reads (Transformer
        # Engine; DeepSeek-V3 arXiv:2412.19437 s3.3.2), BF16 and TF32 runs keep 2 bytes
        "linear_input_bytes": gemm["linear_input_bytes"],
        "cast_bytes_per_element": gemm["cast_bytes_per_element"],
        "gemm_max_efficiency": gemm["gemm_max_efficiency"] * gemm_factor,
        "attention_gemm_max_efficiency": gemm["attention_gemm_max_efficiency"] * gemm_factor,
        "gemm_half_efficiency_dim": value(accelerator.gemm_half_efficiency_dim),
        **grouped_gemm_inputs(accelerator),
        "hbm_bytes": value(accelerator.hbm_bytes),
        "hbm_bandwidth_bytes_per_s": value(accelerator.hbm_bandwidth_bytes_per_s),
        "hbm_efficiency": value(accelerator.hbm_efficiency),
        # the softmax's exponential unit; a part without a published rate: never binding
        "exp_ops_per_s": value(accelerator.exp_ops_per_s) if accelerator.exp_ops_per_s
        is not None else UNBOUNDED_EXP_OPS_PER_S,
        "scale_up_bandwidth_bytes_per_s": value(accelerator.scale_up_bandwidth_bytes_per_s),
        "scale_up_bus_efficiency": value(accelerator.scale_up_bus_efficiency),
        "scale_out_bandwidth_bytes_per_s": nic_bytes_per_s / gpus_per_node,
        "scale_out_bus_efficiency": value(accelerator.scale_out_bus_efficiency),
        "intra_latency_s": value(node.intra_node_latency_s),
        "inter_latency_s": value(node.inter_node_latency_s),
        "gpus_per_node": gpus_per_node,
        "scale_up_domain_gpus": value(accelerator.scale_up_domain_gpus),
        "host_launch_factor": value(getattr(accelerator, "host_launch_factor", None) or 1.0),
        # DeepEP's measured NVLink bandwidth on the part; unmeasured: the links' all-to-all
        "deepep_scale_up_bytes_per_s": value(
            getattr(accelerator, "deepep_scale_up_bytes_per_s", None)
            or value(accelerator.scale_up_bandwidth_bytes_per_s)
            * value(accelerator.scale_up_bus_efficiency)),
        # a rack (scale-up domain) failure takes all its nodes out
        "rack_nodes": max(1.0, value(accelerator.scale_up_domain_gpus)
                          / value(node.gpus_per_node)),
        "idle_power_w": value(accelerator.idle_power_w),
        "max_power_w": value(accelerator.max_power_w),
        "node_overhead_power_w": value(node.node_overhead_power_w),
        "network_power_per_node_w": ports * value(node.switch_power_per_port_w),
        "storage_write_bytes_per_s_per_node": value(node.storage_write_bytes_per_s),
        "storage_read_bytes_per_s_per_node": value(node.storage_read_bytes_per_s),
        "host_copy_bytes_per_s_per_gpu": value(node.host_copy_bytes_per_s_per_gpu),
        "price_usd_per_gpu_hour": value(accelerator.cloud_price_usd_per_gpu_hour),
        "lifetime_s": lifetime_years * 365.25 * 86400,
        **ownership_inputs(value(accelerator.purchase_price_usd)),  # the catalog defaults
        "embodied_kg_per_gpu": embodied_per_accelerator(
            value(accelerator.embodied_kg_co2e), value(node.embodied_kg_co2e or 0.0),
            gpus_per_node),
        "oversubscription": value(getattr(node, "oversubscription_ratio", None) or 1.0),
        "pod_gpus": value(getattr(node, "pod_gpus", None) or NO_POD_LIMIT_GPUS),
    }


def grouped_gemm_inputs(accelerator) -> dict[str, float]:
    """Kernel inputs of the accelerator's MoE grouped GEMMs (tile rows along the tokens,
    half-efficiency tokens per expert and inner size); an entry without them: the GEMM
    tile of planner/engine/inputs/execution.toml and its ``gemm_half_efficiency_dim``."""
    half = value(accelerator.gemm_half_efficiency_dim)
    tile = accelerator.grouped_gemm_tile_tokens
    return {
        "grouped_gemm_tile_tokens": value(tile) if tile is not None
        else execution_defaults()["gemm_tile_dim"],
        "grouped_gemm_token_half_dim": value(accelerator.grouped_gemm_token_half_dim or half),
        "grouped_gemm_inner_half_dim": value(accelerator.grouped_gemm_inner_half_dim or half),
    }


def site_inputs(site, cost_basis: str = "cloud", site_class=None) -> dict[str, float]:
    """Kernel inputs of a site (grid, price) and the PUE of its class of data centre
    (``site_class``: the entry ``Catalog.pue_entry`` gives; None: the site's own PUE)."""
    pue_from = site if site_class is None else site_class
    return {
        "pue": value(pue_from.pue),
        "electricity_usd_per_kwh": value(site.electricity_usd_per_kwh),
        "grid_intensity_g_per_kwh": value(site.grid_intensity_g_per_kwh),
        "use_tco": 1.0 if cost_basis == "tco" else 0.0,
    }


def reliability_inputs(profile, scheme: str) -> dict[str, float]:
    """Kernel inputs of a reliability profile and a checkpoint scheme.

    A profile with failure domains (``domain_*_mtbf_s``, ``swap_restart_s``, ...) gives
    the rates by domain; one without gives its GPU and node rates and one restart cost,
    with no network, rack or software domain and re-queue = swap, which is the model
    before failure domains, result for result.  Hot spares default to ``auto``.
    """
    def given(name):
        return getattr(profile, name, None)

    restart = value(given("swap_restart_s") or profile.restart_overhead_s)
    return {
        "gpu_mtbf_s": value(given("domain_gpu_mtbf_s") or profile.gpu_mtbf_s),
        # absent rates/caps mean "never" / "unlimited" (a large finite number keeps checks on)
        "node_mtbf_s": value(given("domain_node_mtbf_s") or given("node_mtbf_s") or NEVER_S),
        "network_mtbf_s": value(given("domain_network_mtbf_s") or NEVER_S),
        "rack_mtbf_s": value(given("domain_rack_mtbf_s") or NEVER_S),
        "software_mtbf_s": value(given("domain_software_mtbf_s") or NEVER_S),
        "software_internode_mtbf_s": value(given("domain_software_internode_mtbf_s")
                                           or NEVER_S),
        "software_node_exponent": value(given("domain_software_node_exponent") or 1.0),
        "failure_detection_s": value(given("failure_detection_s") or 0.0),
        "requeue_restart_s": value(given("requeue_restart_s") or restart),
        "node_repair_s": value(given("node_repair_s") or 0.0),
        "manual_restart_fraction": value(given("manual_restart_fraction") or 0.0),
        "manual_restart_s": value(given("manual_restart_s") or 0.0),
        "spare_nodes": SPARES_AUTO,
        **STRAGGLER_DEFAULTS,
        "storage_write_cap_bytes_per_s": value(
            getattr(profile, "checkpoint_write_bytes_per_s", None) or UNLIMITED_BYTES_PER_S),
        "storage_read_cap_bytes_per_s": value(
            getattr(profile, "checkpoint_read_bytes_per_s", None) or UNLIMITED_BYTES_PER_S),
        "restart_overhead_s": restart,
        "step_time_cv": value(profile.step_time_cv),
        "pause_probability": value(profile.pause_probability_per_step),
        "pause_duration_s": value(profile.pause_duration_s),
        "ckpt_sync": float(scheme == "sync"),
        "ckpt_async": float(scheme == "async"),
        "ckpt_in_memory": float(scheme == "in-memory"),
        "ckpt_gockpt": float(scheme == "gockpt"),
    }


def check_batch_range(batch_range, global_batch) -> None:
    """CapplanError unless ``batch_range`` is (LO, HI), whole batches LO <= HI within their
    domain, and ``global_batch`` is LO (the batch with which the run needs its tokens)."""
    if (not isinstance(batch_range, tuple) or len(batch_range) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in batch_range)):
        raise CapplanError(f"global_batch_range must be (LO, HI), two whole batches, got "
                           f"{shown(batch_range)}")
    low, high = batch_range
    check({"global_batch": low})
    check({"global_batch": high})
    if low > high:
        raise CapplanError(f"--global-batch {low}..{high}: the range is empty; give LO..HI "
                           "with LO <= HI")
    if global_batch != low:
        raise CapplanError(f"global_batch {shown(global_batch)} must be the range's LO {low} "
                           "(the batch with which the run needs its tokens)")


def default_global_batch(seq_len: float) -> int:
    """Sequences per batch for about 16M tokens (a power of two)."""
    sequences = max(1, int(DEFAULT_GLOBAL_BATCH_TOKENS // seq_len))
    return 1 << (sequences.bit_length() - 1)
