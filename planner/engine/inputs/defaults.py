"""The names a run may choose among and the defaults of every question: the command-line
options, scenario files and the Python API all read them from here.

Nothing but constants: the CLI imports this module to build its options, so it starts
without numpy, the catalog or the engine.
"""

from __future__ import annotations

from planner.engine.inputs.layout_rules import LAYOUT_DEFAULTS as _LAYOUT_DEFAULTS
from planner.engine.inputs.layout_rules import PREFERRED_LAYOUT as _PREFERRED

#: ``--precision`` choices: the recipes of hardware_catalog/data/precisions/recipes.csv (a
#: test keeps the two equal). bf16, fp16, tf32; fp8 (per-tensor current fp8-cs or delayed
#: fp8-ds scaling, or DeepSeek-style fp8-block) and mxfp8 / fp8-mx (MX block scaling in
#: hardware); fp6 / mxfp6; fp4, nvfp4 and
#: mxfp4 (every transformer layer's linear GEMMs in FP4, the frameworks' default) and
#: nvfp4-bf16-tail (NVIDIA's accuracy recipe, arXiv:2509.25149: the final ~15 % of the
#: linear layers kept in BF16); weights, gradients, optimizer state and stored activations
#: keep their execution.toml bytes; int8 (AQT-style int8 training, on stacks that do it); fp8-hpu
#: (Intel Gaudi's default FP8 coverage: the MLP down-projection stays BF16);
#: fp8-rowwise-gw-hp (torchao's rowwise_with_gw_hp: the weight gradients in BF16).
PRECISIONS = ("bf16", "fp16", "fp8", "fp8-cs", "fp8-ds", "fp8-block", "fp8-rowwise",
              "fp8-rowwise-gw-hp", "mxfp8",
              "fp8-mx", "fp6", "mxfp6", "fp4", "nvfp4", "mxfp4", "nvfp4-bf16-tail", "int8",
              "fp8-hpu", "tf32")
#: Where an accelerator has no GEMM efficiency of its own at a precision, the next one up.
EFFICIENCY_FALLBACK = {"fp4": "fp8", "fp6": "fp8", "int8": "fp8", "fp8": "bf16"}
CHECKPOINT_SCHEMES = ("sync", "async", "in-memory", "gockpt")
#: Run choices (and CLI options) that name a catalog entry, and the kind each names
NAMED_CHOICES = (("model", "model"), ("hardware", "accelerator"), ("stack", "stack"))
COST_BASES = ("cloud", "tco")
#: Training methods (planner.engine.inputs.method; docs/post-training.md).
METHODS = ("pretrain", "sft", "lora", "qlora", "dpo", "grpo")
#: Weight matrices of a layer a LoRA adapter may sit beside, and the names of groups of
#: them (``--lora-targets qkv,o,mlp``; ``all-linear`` as Hugging Face PEFT's).
LORA_MATRICES = ("q", "k", "v", "o", "gate", "up", "down")
LORA_TARGET_GROUPS = {"qkv": ("q", "k", "v"), "attention": ("q", "k", "v", "o"),
                      "mlp": ("gate", "up", "down"), "all-linear": LORA_MATRICES}
BASE_PRECISIONS = ("bf16", "fp8", "nf4")
PACKINGS = ("packed", "padded")
REFERENCE_LOGPROBS = ("model", "precomputed")
OBJECTIVES = ("time", "cost", "energy", "carbon", "tcdp", "cci")
#: Objective -> the column a search minimises for it.
OBJECTIVE_COLUMNS = {"time": "wall_time_s", "cost": "cost_usd", "energy": "energy_kwh",
                     "carbon": "co2e_kg", "tcdp": "tcdp_t_d", "cci": "cci_g_per_eflop"}

#: The default scenario of ``capplan plan``: Llama 3 70B on 15T tokens (Meta, 2024).
DEFAULT_MODEL = "llama3-70b"
DEFAULT_TOKENS = 15e12
DEFAULT_GLOBAL_BATCH_TOKENS = 16 * 2**20  # Llama 3: 16M tokens per batch (arXiv:2407.21783)

#: The one source of scenario defaults: the command-line options, scenario files and the
#: Python API (:class:`Scenario`, :func:`planner.evaluate`, :func:`planner.plan`) all
#: read them, so the same question gets the same answer everywhere.
DEFAULTS: dict = {
    "model": DEFAULT_MODEL, "tokens": DEFAULT_TOKENS, "hardware": "all",
    "site": "us-average", "reliability": "default", "precision": "bf16",
    # the PUE's class of data centre (hardware_catalog/data/site_classes); "site": the site's
    "site_class": "hyperscale",
    "stack": "megatron-core-2025",  # software stack (hardware_catalog/data/stacks)
    "checkpoint": "async", "cost_basis": "cloud", "min_gpus": 8, "max_gpus": 16384,
    "deadline_days": 90.0, "objective": "cost", "knee_threshold": 0.8,
    # one run (capplan evaluate / sensitivity / simulate / export, planner.evaluate); the
    # layout's defaults (gpus, recompute, zero) are declared with its dimensions
    "evaluate_hardware": "h100-sxm", **_LAYOUT_DEFAULTS,
    # prices (planner.engine.economics.pricing): tier, provider, spot preemption bucket
    "pricing": "on-demand", "provider": "median", "spot_interruption": "gt20",
    # the training method (planner.engine.inputs.method): its options default per method
    "method": "pretrain",
}

#: The stack a mixture-of-experts model runs on when none is named, on a part without a
#: stack of its own: NVIDIA's tuned Megatron-Core MoE configuration (grouped GEMMs, DeepEP
#: dispatch, partial CUDA graphs; hardware_catalog/data/stacks/megatron-core-moe-tuned.toml),
#: what a team training an MoE model on Megatron-Core switches on.
MOE_STACK = "megatron-core-moe-tuned"


def default_stack(accelerator, moe: bool = False) -> str:
    """The software stack a run on ``accelerator`` (catalog entry) takes when the user names
    none: the part's own ``default_stack`` (the TPUs': maxtext-xla, as Megatron-Core runs on
    CUDA GPUs only), else :data:`MOE_STACK` for a mixture-of-experts model (``moe``), else
    the part's ``default_dense_stack`` (the Blackwell parts': megatron-bridge-2025, NVIDIA's
    whole-iteration CUDA graphs), else ``DEFAULTS["stack"]``."""
    own = getattr(accelerator, "default_stack", None)
    if own or moe:
        return own or MOE_STACK
    return getattr(accelerator, "default_dense_stack", None) or DEFAULTS["stack"]


def stack_of(catalog, hardware, stack, model=None):
    """``stack``, or where it is None (left out) the default stack of the accelerator
    ``hardware`` for ``model`` (each an id, alias or TOML path, or an entry):
    :func:`default_stack`."""
    if stack is not None:
        return stack
    m = catalog.model(model) if isinstance(model, str) else model
    moe = bool(getattr(m, "experts", 0) or 0) and MOE_STACK in catalog.stacks
    return default_stack(catalog.accelerator(hardware) if isinstance(hardware, str)
                         else hardware, moe=moe)


def cuda_part(accelerator) -> bool:
    """Whether the planner's CUDA stacks run on ``accelerator`` (it names no stack of its
    own): where the typical alternative stack (torchtitan) is a choice."""
    return getattr(accelerator, "default_stack", None) is None


#: The software-straggler parameters, one name and one default each, shared by the
#: step-time model (:class:`planner.analysis.simulate.StragglerSpec`), ``capplan
#: stragglers`` (:class:`planner.analysis.stragglers.WhatIf`) and the run model's fault
#: options (``--gc-pause``, ``--slow-node-slowdown``): name -> (default, source). A cause
#: is off until its rate is stated (no unplanned GC, no slow nodes, one pipeline stage);
#: its size is then the default below.
STRAGGLERS: dict[str, tuple[float, str]] = {
    "step_time_cv": (0.005, "the default reliability profile "
                     "(hardware_catalog/data/reliability/default.toml): Llama 3 "
                     "arXiv:2407.21783 s3.3.4, MegaScale arXiv:2402.15627 s6"),
    "gc_interval_s": (float("inf"), "none unless stated"),
    "gc_pause_s": (1.0, "validation/reliability.csv row sg-cause: Python GC pauses of about "
                   "1 s (Lin et al., OSDI'25, arXiv:2505.05713)"),
    "slow_node_slowdown": (1.1, "validation/reliability.csv row ms-straggler: straggler "
                           "hosts ~10 % slower (MegaScale arXiv:2402.15627 s6.2)"),
    "layers": (32.0, "Llama 3 8B, capplan stragglers' default model"),
    "stages": (1, "no pipeline unless stated"),
    "last_stage_extra_layers": (0.0, "no imbalance unless stated"),
    "microbatches": (64, "micro-batches per step and pipeline; 64 in the bytedance-osdi25 "
                     "setting (planner.analysis.stragglers.PRESETS)"),
}

#: The layout tried first by ``evaluate`` when the caller leaves layout sizes out
#: (Llama 3 70B's TP8 x PP4, arXiv:2407.21783 Table 4), declared with the layout's
#: dimensions (:data:`planner.engine.inputs.layout_rules.DIMENSIONS`); when it does not fit the GPU
#: count, the fastest layout for that count is chosen instead.
PREFERRED_LAYOUT: dict[str, int] = dict(_PREFERRED)

#: Default --max-candidates: 4e9, four times the largest documented search (the 10^9
#: configurations of docs/distributed.md; a plan's largest, the Mixtral plan, is 1e8).
MAX_CANDIDATES = 4 * 10**9
#: Default --max-draw-rows: 5e8 frontier rows x draws (``plan --uncertainty --draws
#: 100000`` of the default plan is 1.3e8: ~20 min with numpy, ~2 min compiled).
MAX_DRAW_ROWS = 5 * 10**8

#: How far over its HBM the memory model may put a layout that `evaluate` still times (with
#: a warning) instead of refusing: the model's error on published runs that ran. Meta ran
#: Llama 3 405B on 8,192 80 GB H100 at TP8 x PP16 without activation checkpointing
#: (arXiv:2407.21783 s3.3.2, Table 4), predicted at 86.0 GB (1.075x); Intel's Llama 3.1 70B
#: on 64 Gaudi 2 at 1.06x and NeMo 24.07's Nemotron-4 340B on 128 H100 at 1.035x
#: (docs/validation.md, Memory). Larger misses there have a mechanism the model lacks
#: (activation offload, a chunked loss) and stay refused. ``plan`` keeps to layouts that fit.
MEMORY_TOLERANCE = 0.10
