"""Megatron-Core's selective-recompute modules as run-model flags.

``--recompute-modules`` (TransformerConfig ``recompute_modules``, with recompute granularity
``selective``) names the parts of a layer whose forward runs again in backward instead of
keeping their tensors.  Each module the run model knows sets one flag the stacks also set
(hardware_catalog/data/stacks, planner/engine/inputs/execution.toml); ``core_attn`` runs
the attention core's forward again in backward, a fused (flash) kernel included: Megatron-Core
wraps the core in ``tensor_parallel.checkpoint`` whatever its kernel
(megatron/core/transformer/attention.py ``_checkpointed_attention_forward``).
"""

from __future__ import annotations

from planner.errors import CapplanError, choice_error

#: Module name (Megatron-Core's) -> the run-model flag it sets.
MODULES = {
    "core_attn": "recompute_core_attn",
    "layernorm": "recompute_norms",
    "mla_up_proj": "recompute_mla_up_proj",
    "moe_act": "recompute_moe_act",
    "mlp": "recompute_mlp",
    "moe": "recompute_moe",
}

#: Every flag a module list sets, listed or not.
FLAGS = tuple(sorted({flag for flag in MODULES.values() if flag}))


def module_flags(text: str | None, recompute: str) -> dict[str, float]:
    """The run-model flags of a comma-separated module list: 1 for each module listed, 0 for
    every other (the list replaces the stack's policy, as Megatron-Core's option does);
    none without a list (the stack's).  Modules apply to selective recompute only."""
    if text is None:
        return {}
    names = [n.strip() for n in str(text).split(",") if n.strip()]
    if not names:
        raise CapplanError("--recompute-modules: no module named; allowed: "
                           + ", ".join(MODULES))
    for name in names:
        if name not in MODULES:
            raise choice_error("recompute-modules", name, tuple(MODULES))
    if recompute != "selective":
        raise CapplanError(f"--recompute-modules needs --recompute selective (got "
                           f"{recompute}): full recompute runs every module again anyway, "
                           "none runs none")
    listed = {MODULES[n] for n in names}
    return {flag: float(flag in listed) for flag in FLAGS}


def modules_of(x: dict) -> tuple[str, ...]:
    """The modules a model has (``x``: its run-model inputs): Megatron-Core refuses
    ``mla_up_proj`` without multi-latent attention and ``moe_act`` without experts;
    ``mlp`` needs a dense layer and ``moe`` an MoE layer."""
    dense = x["layers"] - x["moe_layers"] - x.get("mlp_free_layers", 0)  # hybrid: MLP-free
    has = {"moe_act": x["moe_layers"] > 0, "moe": x["moe_layers"] > 0,
           "mla_up_proj": x["kv_lora_rank"] > 0, "mlp": dense > 0}
    return tuple(name for name in MODULES if has.get(name, True))


def recomputed_modules(x: dict) -> tuple[str, ...]:
    """The modules of the model whose forward ``x`` (its run-model inputs: the stack's
    flags, or a module list's) runs again in backward."""
    return tuple(name for name in modules_of(x) if float(x.get(MODULES[name], 0.0)) >= 1.0)
