"""Pydantic schema of catalog entries (``schema_version = 1``).

Units are SI and live in the field names (``_bytes``, ``_bytes_per_s``, ``_bits_per_s``,
``_flops_per_s``, ``_w``, ``_s``, ``_usd``, ``_usd_per_gpu_hour``, ``_kg_co2e``,
``_g_per_kwh``). Every number with provenance is a :class:`Quantity`: value, source
(document and table/page), as_of date, and ``estimate = true`` where it is not a
published figure. Unknown keys are rejected everywhere (``extra = "forbid"``).

A user's own file (``--model ./my.toml``, a ``--catalog`` directory) may leave out the
identity and provenance keys: :func:`hardware_catalog.loader.parse_file` fills them in
before validation (``user=True``) and requires them, and the keys marked "required in the
shipped catalog", for the shipped data. Model-level checks report every problem at once.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = 1
KINDS = ("accelerator", "node", "site", "site_class", "model", "reliability", "stack")


class Quantity(BaseModel):
    """A number with provenance: ``{ value, source, as_of, estimate, note }``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    value: float
    source: str = Field(min_length=3)
    as_of: date
    estimate: bool = False
    note: str | None = None

    @field_validator("value")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("value must be a finite number")
        return v

    def __float__(self) -> float:
        return float(self.value)


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    schema_version: Literal[1]
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str
    description: str | None = None

    def quantities(self) -> dict[str, Quantity]:
        """Every Quantity field that is set, by field name."""
        return {k: v for k in type(self).model_fields
                if isinstance(v := getattr(self, k), Quantity)}


#: Keys an entry kind gained after users had written files without them: kind -> key ->
#: (default value, date the key was added, what the default means and its source). A user's
#: file that leaves one out takes the default, said once on stderr
#: (:func:`hardware_catalog.loader.parse_file`); the shipped catalog states every key.
ADDED_KEYS: dict[str, dict[str, tuple[float, str, str]]] = {
    "stack": {
        "recompute_mla_up_proj": (0.0, "2026-11-26", "no MLA up-projection recomputed "
                                  "(Megatron-Core recompute_modules default ['core_attn'])"),
        "recompute_norms": (0.0, "2026-11-26", "the norm outputs kept for the backward pass "
                            "(Megatron-Core recompute_modules default ['core_attn'])"),
        "optimizer_bytes_per_param": (12.0, "2026-11-26", "mixed-precision Adam: fp32 master "
                                      "weights and two fp32 moments (Rajbhandari et al. 2020, "
                                      "ZeRO, arXiv:1910.02054 s3.1, K = 12)"),
        "cuda_graphs": (0.0, "2026-11-29", "no CUDA graphs: every kernel launched eagerly "
                        "(0 none, 1 per layer, 2 whole iteration; PyTorch and Megatron-Core "
                        "launch eagerly unless graphs are configured)"),
        "graph_launch_s": (1e-5, "2026-11-29", "host time of one CUDA graph replay, of the "
                           "order of one eager kernel launch (PyTorch CUDA semantics, 'CUDA "
                           "Graphs': a replay is one cudaGraphLaunch)"),
    },
}


#: Separates the problems one model-level check reports in a single ValueError.
PROBLEM_SEP = "; "


def _check(problems: list[str], cond: bool, key: str, message: str) -> None:
    if not cond:
        problems.append(f"{key}: {message}")


def _check_dependent(problems: list[str], entry, switch: str, names) -> None:
    """Fields ``names`` of ``entry`` required where its count ``switch`` is above 0 and
    refused where it is 0 (a mixer's shape without the mixer)."""
    on = getattr(entry, switch)
    for name in names:
        if on:
            _check(problems, getattr(entry, name) is not None, name,
                   f"required with {switch} > 0")
        else:
            _check(problems, getattr(entry, name) is None, name,
                   f"given without {switch} (set it or remove this field)")


def _raise(problems: list[str]) -> None:
    """Report every problem a model-level check found at once (joined by PROBLEM_SEP)."""
    if problems:
        raise ValueError(PROBLEM_SEP.join(problems))


#: Physical ranges of catalog numbers: what hardware, a site or a failure profile can be,
#: some 1,000x beyond today's parts either way.  Values outside (5e-324 FLOP/s, a 1e308 W
#: GPU, a 5e-324-year lifetime) are typos that would overflow the model; they are refused
#: here, naming the file's key.  Numbers without a range need only be > 0.
RANGES: dict[str, tuple[float, float]] = {
    "peak_tf32_flops_per_s": (1e9, 1e18), "peak_bf16_flops_per_s": (1e9, 1e18),
    "peak_fp8_flops_per_s": (1e9, 1e18), "peak_fp4_flops_per_s": (1e9, 1e18),
    "peak_fp6_flops_per_s": (1e9, 1e18), "peak_int8_flops_per_s": (1e9, 1e18),
    "hbm_bytes": (1e6, 1e15), "hbm_bandwidth_bytes_per_s": (1e6, 1e15),
    "scale_up_bandwidth_bytes_per_s": (1e6, 1e15), "max_power_w": (1e-3, 1e5),
    "idle_power_w": (1e-3, 1e5), "gemm_half_efficiency_dim": (1e-3, 1e6),
    "purchase_price_usd": (1e-3, 1e9), "cloud_price_usd_per_gpu_hour": (1e-6, 1e5),
    "embodied_kg_co2e": (1e-3, 1e6), "lifetime_years": (0.1, 100),
    "nic_bandwidth_bits_per_s": (1e3, 1e15), "intra_node_latency_s": (1e-12, 1e3),
    "inter_node_latency_s": (1e-12, 1e3), "node_overhead_power_w": (1e-3, 1e7),
    "switch_power_per_port_w": (1e-3, 1e5), "storage_write_bytes_per_s": (1e3, 1e15),
    "storage_read_bytes_per_s": (1e3, 1e15), "host_copy_bytes_per_s_per_gpu": (1e3, 1e15),
    "electricity_usd_per_kwh": (1e-6, 1e3), "grid_intensity_g_per_kwh": (1e-6, 1e4),
    "gpu_mtbf_s": (1, 1e15), "node_mtbf_s": (1, 1e15), "domain_gpu_mtbf_s": (1, 1e15),
    "domain_node_mtbf_s": (1, 1e15), "domain_network_mtbf_s": (1, 1e15),
    "domain_software_mtbf_s": (1, 1e15), "domain_rack_mtbf_s": (1, 1e15),
    "pause_duration_s": (1e-9, 1e7), "node_repair_s": (1e-3, 1e10),
    "checkpoint_write_bytes_per_s": (1e3, 1e18), "checkpoint_read_bytes_per_s": (1e3, 1e18),
    "exp_ops_per_s": (1e6, 1e17),
}
#: Smallest efficiency (a fraction of a peak) accepted: 0.1 %.
MIN_EFFICIENCY = 1e-3


def _positive(problems: list[str], entry: Entry, *names: str) -> None:
    """Each named number > 0, and inside its physical range (:data:`RANGES`) if it has one."""
    for name in names:
        q = getattr(entry, name)
        if q is None:
            continue
        if name in RANGES:
            low, high = RANGES[name]
            _check(problems, low <= q.value <= high, f"{name}.value",
                   f"expected a number from {low:g} to {high:g}, got {q.value:g}")
        else:
            _check(problems, q.value > 0, f"{name}.value",
                   f"expected a number > 0, got {q.value:g}")


def _fraction(problems: list[str], entry: Entry, *names: str) -> None:
    for name in names:
        q = getattr(entry, name)
        if q is not None:
            _check(problems, MIN_EFFICIENCY <= q.value <= 1, f"{name}.value",
                   f"expected a fraction from {MIN_EFFICIENCY:g} to 1, got {q.value:g}")


def _integral(problems: list[str], entry: Entry, *names: str) -> None:
    for name in names:
        q = getattr(entry, name)
        if q is not None:
            _check(problems, float(q.value).is_integer() and q.value >= 1, f"{name}.value",
                   f"expected a whole number >= 1, got {q.value:g}")


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class Accelerator(Entry):
    """One accelerator (per GPU / per chip; GB200 is counted per GPU)."""

    kind: Literal["accelerator"]
    vendor: str | None = None  # required in the shipped catalog (loader)
    release_date: date | None = None  # required in the shipped catalog (loader)
    node: str  # id of the default node type
    # id of the software stack a run on this part takes when the user names none (None: the
    # planner's default, Megatron-Core): the TPUs' is MaxText's, as Megatron-Core, a CUDA
    # stack, does not run on them
    default_stack: str | None = None
    # id of the stack a dense model takes on this part when the user names none and the
    # part has no default_stack (None: the planner's default, Megatron-Core eager): the
    # Blackwell parts name NVIDIA's published configs for them, which capture whole
    # iterations in one CUDA graph (megatron-bridge-2025)
    default_dense_stack: str | None = None
    # other names the part goes by ('h100', 'trillium'), matched like the id: case, spaces
    # and underscores aside (Catalog.get)
    aliases: list[str] = []
    peak_tf32_flops_per_s: Quantity | None = None  # dense; None when there is no TF32 path
    peak_bf16_flops_per_s: Quantity  # dense (no sparsity) 16-bit float peak: BF16 and FP16
    # the 16-bit float formats the matrix units take at peak_bf16_flops_per_s: both on
    # every part since Ampere; Volta's tensor cores multiply FP16 only, so a part listing
    # ["fp16"] refuses --precision bf16 (planner.engine.inputs.scenario.precision_refusal)
    float16_formats: list[Literal["bf16", "fp16"]] = Field(default=["bf16", "fp16"],
                                                           min_length=1)
    peak_fp8_flops_per_s: Quantity | None = None  # dense; None when unsupported
    # dense 4-bit float (NVFP4 / OCP MXFP4) matrix peak; None when the part has no FP4 path.
    # ``--precision fp4`` runs the GEMMs at this peak (planner.engine.inputs.scenario.PRECISIONS).
    peak_fp4_flops_per_s: Quantity | None = None
    # dense 6-bit float (OCP MXFP6) matrix peak (Blackwell: the FP8 rate; CDNA 4: the FP4
    # rate); None when the part has no FP6 path
    peak_fp6_flops_per_s: Quantity | None = None
    # dense int8 matrix peak [integer OP/s, counted as FLOP/s]; None when the part lists none.
    # ``--precision int8`` (AQT-style int8 training) runs the GEMMs at it
    peak_int8_flops_per_s: Quantity | None = None
    # host time to launch a kernel relative to the x86 hosts the launch times were fitted
    # on (Grace superchips: GB200/GB300); None: 1
    host_launch_factor: Quantity | None = None
    # DeepEP's normal kernels' measured intranode (scale-up) dispatch/combine bandwidth per
    # GPU on this part, used by stacks that dispatch with DeepEP; None: the links' all-to-all
    # bandwidth (scale_up_bandwidth_bytes_per_s x scale_up_bus_efficiency)
    deepep_scale_up_bytes_per_s: Quantity | None = None
    hbm_bytes: Quantity
    hbm_bandwidth_bytes_per_s: Quantity
    max_power_w: Quantity
    idle_power_w: Quantity
    scale_up_domain_gpus: Quantity
    scale_up_bandwidth_bytes_per_s: Quantity  # per GPU, one direction
    gemm_max_efficiency: Quantity  # bf16 (and fp16/tf32) large-GEMM fraction of peak
    gemm_half_efficiency_dim: Quantity
    # fp8 large-GEMM fraction of the fp8 peak (per-tensor scaled, Transformer Engine);
    # None: the bf16 value is used (planner.engine.inputs.scenario.gemm_efficiency)
    gemm_max_efficiency_fp8: Quantity | None = None
    # fp4 (NVFP4 / MXFP4) large-GEMM fraction of the fp4 peak; None: the fp8 value
    gemm_max_efficiency_fp4: Quantity | None = None
    # MoE grouped GEMMs (formulas.moe.grouped_gemm_efficiency): tile rows along the tokens
    # (Hopper wgmma 128, Blackwell 2-CTA tcgen05 256) and the tokens per expert and inner
    # size at which its fixed per-tile costs halve the efficiency; None: the GEMM tile of
    # planner/engine/inputs/execution.toml and gemm_half_efficiency_dim for both
    # measured maximum achievable matmul rate (MAMF: the best large GEMM of a shape sweep) at
    # BF16 / FP8 / FP4; an accelerator no training row calibrated takes its GEMM efficiency
    # from it (planner.analysis.transfer); None: not measured
    mamf_bf16_flops_per_s: Quantity | None = None
    mamf_fp8_flops_per_s: Quantity | None = None
    mamf_fp4_flops_per_s: Quantity | None = None
    grouped_gemm_tile_tokens: Quantity | None = None
    grouped_gemm_token_half_dim: Quantity | None = None
    grouped_gemm_inner_half_dim: Quantity | None = None
    # largest head size a fused (flash) attention kernel runs on this part; 0: none runs on
    # it (Volta: FlashAttention-2 and cuDNN's fused attention need Ampere or later), so
    # attention takes the unfused path whatever the stack's kernel
    # (planner.engine.run.run_inputs caps the stack's fused_head_dim_max with it); None: the
    # stack's
    fused_attention_head_dim_max: Quantity | None = None
    # peak rate of the exponential unit (NVIDIA's SFU/MUFU.EX2: exponentials per clock and
    # SM x SMs x clock) that a fused attention kernel's softmax runs on
    # (formulas.compute.fused_attention_slowdown); None: not published, taken as never binding
    exp_ops_per_s: Quantity | None = None
    hbm_efficiency: Quantity
    scale_up_bus_efficiency: Quantity
    scale_out_bus_efficiency: Quantity
    purchase_price_usd: Quantity
    cloud_price_usd_per_gpu_hour: Quantity
    embodied_kg_co2e: Quantity
    lifetime_years: Quantity

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        _positive(problems, self, "peak_tf32_flops_per_s", "peak_bf16_flops_per_s", "peak_fp8_flops_per_s",
                  "peak_fp4_flops_per_s", "peak_fp6_flops_per_s", "peak_int8_flops_per_s",
                  "hbm_bytes", "hbm_bandwidth_bytes_per_s", "max_power_w", "idle_power_w",
                  "scale_up_bandwidth_bytes_per_s", "gemm_half_efficiency_dim",
                  "purchase_price_usd", "cloud_price_usd_per_gpu_hour", "embodied_kg_co2e",
                  "lifetime_years", "grouped_gemm_tile_tokens", "exp_ops_per_s")
        for name in ("grouped_gemm_token_half_dim", "grouped_gemm_inner_half_dim",
                     "fused_attention_head_dim_max"):
            q = getattr(self, name)
            _check(problems, q is None or q.value >= 0, f"{name}.value", "expected >= 0")
        _fraction(problems, self, "gemm_max_efficiency", "hbm_efficiency", "scale_up_bus_efficiency",
                  "scale_out_bus_efficiency", "gemm_max_efficiency_fp8", "gemm_max_efficiency_fp4")
        _integral(problems, self, "scale_up_domain_gpus")
        for precision in ("bf16", "fp8", "fp4"):
            measured = getattr(self, f"mamf_{precision}_flops_per_s")
            peak = getattr(self, f"peak_{precision}_flops_per_s")
            if measured is None:
                continue
            name = f"mamf_{precision}_flops_per_s"
            if peak is None:
                _check(problems, False, name, f"the part has no {precision.upper()} peak "
                       f"(peak_{precision}_flops_per_s) to measure against")
            else:
                _check(problems, 0 < measured.value <= peak.value, f"{name}.value",
                       f"expected a measured rate above 0 and at most the {precision.upper()} "
                       f"peak ({peak.value:g} FLOP/s), got {measured.value:g}")
        _check(problems, self.idle_power_w.value < self.max_power_w.value, "idle_power_w.value",
               f"expected idle power below max_power_w ({self.max_power_w.value:g} W), "
               f"got {self.idle_power_w.value:g}")
        bf16 = self.peak_bf16_flops_per_s.value
        if self.peak_tf32_flops_per_s is not None:
            _check(problems, self.peak_tf32_flops_per_s.value <= bf16, "peak_tf32_flops_per_s.value",
                   "expected TF32 peak <= BF16 peak")
        if self.peak_fp8_flops_per_s is not None:
            _check(problems, self.peak_fp8_flops_per_s.value >= bf16, "peak_fp8_flops_per_s.value",
                   "expected FP8 peak >= BF16 peak")
        if self.peak_fp4_flops_per_s is not None:
            floor = max(bf16, getattr(self.peak_fp8_flops_per_s, "value", bf16))
            _check(problems, self.peak_fp4_flops_per_s.value >= floor, "peak_fp4_flops_per_s.value",
                   "expected FP4 peak >= FP8 (and BF16) peak")
        if self.peak_fp6_flops_per_s is not None:
            fp6 = self.peak_fp6_flops_per_s.value
            _check(problems, fp6 >= getattr(self.peak_fp8_flops_per_s, "value", bf16),
                   "peak_fp6_flops_per_s.value", "expected FP6 peak >= FP8 (and BF16) peak")
            _check(problems, fp6 <= getattr(self.peak_fp4_flops_per_s, "value", fp6),
                   "peak_fp6_flops_per_s.value", "expected FP6 peak <= FP4 peak")
        _raise(problems)
        return self


class Node(Entry):
    """A node (server / tray / TPU host) type and its fabric."""

    kind: Literal["node"]
    gpus_per_node: int = Field(ge=1)
    nics_per_node: int = Field(ge=0)
    nic_bandwidth_bits_per_s: Quantity  # per NIC, one direction
    intra_node_latency_s: Quantity
    inter_node_latency_s: Quantity
    node_overhead_power_w: Quantity  # CPU, DRAM, NICs, fans, switches in the box; beyond GPUs
    switch_power_per_port_w: Quantity
    network_ports_per_node: int = Field(ge=0)
    storage_write_bytes_per_s: Quantity  # aggregate per node, checkpoints
    storage_read_bytes_per_s: Quantity
    host_copy_bytes_per_s_per_gpu: Quantity  # device-to-host, async snapshots
    embodied_kg_co2e: Quantity | None = None  # the node without its GPUs
    # the site's scale-out fabric above the node: non-blocking pods of pod_gpus GPUs with
    # 1:oversubscription_ratio above them (Llama 3: 3,072 and 7); None: non-blocking
    oversubscription_ratio: Quantity | None = None
    pod_gpus: Quantity | None = None

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        _positive(problems, self, "nic_bandwidth_bits_per_s", "intra_node_latency_s",
                  "inter_node_latency_s", "node_overhead_power_w", "switch_power_per_port_w",
                  "storage_write_bytes_per_s", "storage_read_bytes_per_s",
                  "host_copy_bytes_per_s_per_gpu", "embodied_kg_co2e", "pod_gpus")
        if self.oversubscription_ratio is not None:
            _check(problems, self.oversubscription_ratio.value >= 1,
                   "oversubscription_ratio.value",
                   f"expected a ratio >= 1, got {self.oversubscription_ratio.value:g}")
        _raise(problems)
        return self

    @property
    def scale_out_bytes_per_s_per_gpu(self) -> float:
        """Injection bandwidth per GPU, one direction [B/s]."""
        return self.nics_per_node * self.nic_bandwidth_bits_per_s.value / 8 / self.gpus_per_node


class Site(Entry):
    """A data-centre location: efficiency, energy price, grid carbon intensity."""

    kind: Literal["site"]
    pue: Quantity
    electricity_usd_per_kwh: Quantity
    grid_intensity_g_per_kwh: Quantity

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        _check(problems, 1 <= self.pue.value <= 3, "pue.value", f"expected 1 <= PUE <= 3, got {self.pue.value:g}")
        _positive(problems, self, "electricity_usd_per_kwh", "grid_intensity_g_per_kwh")
        _raise(problems)
        return self


class SiteClass(Entry):
    """A class of data centre (hyperscale, HPC centre, colocation, enterprise): its
    annual power usage effectiveness.  The site (``--site``) gives the grid and the price;
    the class (``--site-class``) the PUE."""

    kind: Literal["site_class"]
    pue: Quantity

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        _check(problems, 1 <= self.pue.value <= 3, "pue.value",
               f"expected 1 <= PUE <= 3, got {self.pue.value:g}")
        _raise(problems)
        return self


class ModelSpec(Entry):
    """A transformer's shape. Dense unless ``experts > 0`` (MoE); MLA if ``kv_lora_rank``."""

    kind: Literal["model"]
    source: str = Field(min_length=3)
    as_of: date
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int | None = Field(default=None, ge=1)  # default: heads (multi-head attention)
    ffn: int | None = Field(default=None, ge=1)  # default: 4 * hidden
    gated_mlp: bool = False  # SwiGLU / GeGLU: 3 matrices instead of 2
    dropout: bool = False  # trains with dropout: 1-byte masks kept for the backward pass
    vocab: int = Field(ge=1)
    seq_len: int = Field(ge=1)
    tied_embeddings: bool = False
    # other names the model goes by ('llama-3.1-8b', as Hugging Face spells it), matched
    # like the id: case, spaces and underscores aside (Catalog.get)
    aliases: list[str] = []
    # mixture of experts
    experts: int = Field(default=0, ge=0)
    experts_per_token: int = Field(default=0, ge=0)
    moe_ffn: int | None = Field(default=None, ge=1)
    dense_layers: int = Field(default=0, ge=0)  # leading dense layers of an MoE model
    shared_experts: int = Field(default=0, ge=0)
    # LatentMoE (Nemotron 3 Super): the routed experts work in this latent size, the tokens
    # projected down from hidden before the dispatch and up after the combine
    moe_latent_dim: int | None = Field(default=None, ge=1)
    # multi-head latent attention (DeepSeek-V2/V3); all None for standard attention
    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int | None = Field(default=None, ge=1)
    qk_rope_head_dim: int | None = Field(default=None, ge=1)
    qk_nope_head_dim: int | None = Field(default=None, ge=1)
    v_head_dim: int | None = Field(default=None, ge=1)
    # attention head size when it is not hidden / heads (Qwen3, GPT-OSS, Gemma); not with MLA
    head_dim: int | None = Field(default=None, ge=1)
    # sliding-window (banded causal) attention: window in tokens, on sliding_window_layers of
    # the layers (default: all). GPT-OSS alternates full / 128-token banded layers (half),
    # Gemma 2 local:global 1:1 (half), Gemma 3 5:1 (5/6), Mistral 7B all layers.
    sliding_window: int | None = Field(default=None, ge=1)
    # learnable per-head softmax sinks (an extra logit in each head's denominator: GPT-OSS,
    # arXiv:2508.10925 s2.1); they need a fused kernel that implements them
    attention_sinks: bool = False
    # attention logits soft-capped before the softmax, cap * tanh(logits / cap) (Gemma 2:
    # 50, arXiv:2408.00118 s2); a fused kernel must implement it, else the core runs unfused
    attention_softcap: float | None = Field(default=None, gt=0)
    sliding_window_layers: int | None = Field(default=None, ge=0)
    # multi-token-prediction modules (DeepSeek-V3: 1), each a transformer block and a
    # projection sharing the embedding and output head
    mtp_layers: int = Field(default=0, ge=0)
    # gated linear attention (Gated DeltaNet, arXiv:2412.06464) on linear_attention_layers
    # of the layers, the others softmax attention (Qwen3-Next: 36 of 48); heads and their
    # size (keys and values alike) of the linear-attention token mixer
    linear_attention_layers: int = Field(default=0, ge=0)
    linear_key_heads: int | None = Field(default=None, ge=1)
    linear_value_heads: int | None = Field(default=None, ge=1)
    linear_head_dim: int | None = Field(default=None, ge=1)
    # Mamba-2 state-space token mixers (arXiv:2405.21060) on mamba_layers of the layers:
    # heads, their size, the state size and the groups sharing B and C. A hybrid model's
    # blocks (Megatron-Core's hybrid_override_pattern: Nemotron-H) hold a token mixer or
    # an MLP: mixer_free_layers have an MLP only ('-'), mlp_free_layers a mixer only ('M',
    # '*'); the others both, as a transformer layer
    mamba_layers: int = Field(default=0, ge=0)
    mamba_heads: int | None = Field(default=None, ge=1)
    mamba_head_dim: int | None = Field(default=None, ge=1)
    mamba_state_dim: int | None = Field(default=None, ge=1)
    mamba_groups: int | None = Field(default=None, ge=1)
    mixer_free_layers: int = Field(default=0, ge=0)
    mlp_free_layers: int = Field(default=0, ge=0)
    # node-limited routing: most nodes (scale-up domains) one token is sent to (DeepSeek-V3:
    # topk_group 4 of n_group 8, arXiv:2412.19437 s2.1.2); None: no limit
    routed_node_limit: int | None = Field(default=None, ge=1)
    # published sizes, for the parameter-count check
    params_published: Quantity | None = None  # required in the shipped catalog (loader)
    params_rounding: float = Field(default=0.0, ge=0)  # resolution of the published figure
    active_params_published: Quantity | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data):
        if isinstance(data, dict):
            data = dict(data)
            # derived defaults only from valid values (an invalid one is reported once)
            if data.get("kv_heads") is None and _whole(data.get("heads")):
                data["kv_heads"] = data["heads"]
            if data.get("ffn") is None and _whole(data.get("hidden")):
                data["ffn"] = 4 * data["hidden"]
        return data

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        _check(problems, self.heads % self.kv_heads == 0, "kv_heads",
               f"expected a divisor of heads ({self.heads}), got {self.kv_heads}")
        if not self.is_mla:
            if self.head_dim is None:
                _check(problems, self.hidden % self.heads == 0, "heads",
                       f"expected a divisor of hidden ({self.hidden}) unless head_dim is "
                       f"given, got {self.heads}")
            for k in ("q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
                _check(problems, getattr(self, k) is None, k,
                       "MLA field given without kv_lora_rank (set kv_lora_rank or remove it)")
        else:
            for k in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
                _check(problems, getattr(self, k) is not None, k, "required with kv_lora_rank (MLA)")
            _check(problems, self.head_dim is None, "head_dim",
                   "not used with MLA (its head size is qk_nope_head_dim + qk_rope_head_dim): "
                   "remove head_dim")
        if self.sliding_window is None:
            _check(problems, self.sliding_window_layers is None, "sliding_window_layers",
                   "given without sliding_window (set the window in tokens or remove it)")
        elif self.sliding_window_layers is not None:
            _check(problems, self.sliding_window_layers <= self.layers, "sliding_window_layers",
                   f"expected 0..layers ({self.layers}), got {self.sliding_window_layers}")
        _check(problems, self.mtp_layers <= self.layers, "mtp_layers",
               f"expected 0..layers ({self.layers}), got {self.mtp_layers}")
        _check(problems, self.linear_attention_layers + self.window_layers <= self.layers,
               "linear_attention_layers", f"expected 0..layers ({self.layers}) minus the "
               f"sliding-window layers ({self.window_layers}), got {self.linear_attention_layers}")
        _check_dependent(problems, self, "linear_attention_layers",
                         ("linear_key_heads", "linear_value_heads", "linear_head_dim"))
        mixers = self.linear_attention_layers + self.window_layers + self.mamba_layers
        _check(problems, mixers + self.mixer_free_layers <= self.layers, "mamba_layers",
               f"expected the Mamba, linear-attention, sliding-window and mixer-free layers "
               f"to add up to at most layers ({self.layers}), got "
               f"{mixers + self.mixer_free_layers}")
        _check(problems, self.mixer_free_layers + self.mlp_free_layers <= self.layers,
               "mlp_free_layers", f"expected the mixer-free and MLP-free layers to add up to "
               f"at most layers ({self.layers}): a layer has a mixer or an MLP")
        _check_dependent(problems, self, "mamba_layers",
                         ("mamba_heads", "mamba_head_dim", "mamba_state_dim", "mamba_groups"))
        if self.mamba_layers and self.mamba_heads and self.mamba_groups:
            _check(problems, self.mamba_heads % self.mamba_groups == 0, "mamba_groups",
                   f"expected a divisor of mamba_heads ({self.mamba_heads}), "
                   f"got {self.mamba_groups}")
        if self.experts:
            _check(problems, self.moe_ffn is not None, "moe_ffn", "required when experts > 0")
            _check(problems, 1 <= self.experts_per_token <= self.experts, "experts_per_token",
                   f"expected 1..experts ({self.experts}), got {self.experts_per_token}")
            _check(problems, self.dense_layers + self.mlp_free_layers < self.layers,
                   "dense_layers", f"expected fewer than layers ({self.layers}) minus the "
                   f"MLP-free layers ({self.mlp_free_layers})")
            if self.moe_latent_dim is not None:
                _check(problems, self.moe_latent_dim <= self.hidden, "moe_latent_dim",
                       f"expected at most hidden ({self.hidden}), got {self.moe_latent_dim}")
        else:
            _check(problems, self.moe_latent_dim is None, "moe_latent_dim",
                   "given without experts (set experts or remove it)")
            for k in ("experts_per_token", "dense_layers", "shared_experts"):
                _check(problems, getattr(self, k) == 0, k, "expected 0 for a dense model (experts = 0)")
        _positive(problems, self, "params_published", "active_params_published")
        _raise(problems)
        return self

    # --- derived ---------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.gated_mlp else 2

    @property
    def window_layers(self) -> int:
        """Layers with sliding-window attention (all of them if only the window is given)."""
        if self.sliding_window is None:
            return 0
        return self.layers if self.sliding_window_layers is None else self.sliding_window_layers

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers - self.mlp_free_layers if self.is_moe else 0

    # Parameter counts are physics, not data: planner.engine.run.model.param_counts.


class ReliabilityProfile(Entry):
    """Failure, restart and straggler defaults (see ../shared/validation/reliability.csv)."""

    kind: Literal["reliability"]
    gpu_mtbf_s: Quantity  # job-stopping failures, per GPU
    node_mtbf_s: Quantity | None = None  # non-GPU node failures; None: all in gpu_mtbf_s
    restart_overhead_s: Quantity
    step_time_cv: Quantity
    pause_probability_per_step: Quantity
    pause_duration_s: Quantity
    checkpoint_write_bytes_per_s: Quantity | None = None  # aggregate storage, whole job
    checkpoint_read_bytes_per_s: Quantity | None = None
    # failure domains and hot spares (formulas/reliability.py); optional
    domain_gpu_mtbf_s: Quantity | None = None  # per GPU; a failure takes its node out
    domain_node_mtbf_s: Quantity | None = None  # per node, host (non-GPU, non-network) causes
    domain_network_mtbf_s: Quantity | None = None  # per node, switch/cable/NIC causes
    domain_software_mtbf_s: Quantity | None = None  # per job, size-independent software faults
    # inter-node software faults (NCCL hangs, timeouts): per two-node job, growing as
    # (nodes - 1)^exponent (formulas.reliability.software_failure_rate)
    domain_software_internode_mtbf_s: Quantity | None = None
    domain_software_node_exponent: Quantity | None = None  # in (0, 1]
    domain_rack_mtbf_s: Quantity | None = None  # per rack (scale-up domain); takes it all out
    failure_detection_s: Quantity | None = None
    swap_restart_s: Quantity | None = None  # restart onto hot spares
    requeue_restart_s: Quantity | None = None  # restart after waiting for replacement nodes
    node_repair_s: Quantity | None = None  # until a failed node is healthy again
    # restarts that need a person (manual intervention) instead of the automatic one
    manual_restart_fraction: Quantity | None = None  # share of failures, in [0, 1]
    manual_restart_s: Quantity | None = None
    validation_rows: list[str] = Field(default_factory=list)  # ids in reliability.csv

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        _positive(problems, self, "gpu_mtbf_s", "node_mtbf_s", "pause_duration_s",
                  "checkpoint_write_bytes_per_s", "checkpoint_read_bytes_per_s",
                  "domain_gpu_mtbf_s", "domain_node_mtbf_s", "domain_network_mtbf_s",
                  "domain_software_mtbf_s", "domain_rack_mtbf_s", "node_repair_s",
                  "domain_software_internode_mtbf_s")
        beta = self.domain_software_node_exponent
        _check(problems, beta is None or 0 < beta.value <= 1,
               "domain_software_node_exponent.value", "expected in (0, 1]")
        _fraction(problems, self, "manual_restart_fraction")
        for name in ("failure_detection_s", "swap_restart_s", "requeue_restart_s",
                     "manual_restart_s"):
            q = getattr(self, name)
            _check(problems, q is None or q.value >= 0, f"{name}.value", "expected >= 0")
        _check(problems, self.restart_overhead_s.value >= 0, "restart_overhead_s.value", "expected >= 0")
        _check(problems, self.step_time_cv.value >= 0, "step_time_cv.value", "expected >= 0")
        p = self.pause_probability_per_step.value
        _check(problems, 0 <= p <= 1, "pause_probability_per_step.value",
               f"expected a probability in [0, 1], got {p:g}")
        _raise(problems)
        return self


class StackOnAccelerator(BaseModel):
    """A software stack's own factors on one accelerator (each optional)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    attention_efficiency_factor: Quantity | None = None
    gemm_efficiency_factor: Quantity | None = None
    # the attention variants its fused kernel covers on this accelerator (a generation's own
    # kernel: FlashAttention-2 on Ampere, FlashAttention-3 on Hopper, cuDNN on Blackwell)
    fused_window_attention: Quantity | None = None
    fused_attention_sinks: Quantity | None = None
    fused_attention_softcap: Quantity | None = None
    fused_head_dim_max: Quantity | None = None
    attention_head_dim_granule: Quantity | None = None
    fused_split_head_dims: Quantity | None = None
    attention_block_tokens: Quantity | None = None
    attention_block_tokens_bwd: Quantity | None = None
    # the memory its runtime withholds on this accelerator
    memory_reserve_bytes: Quantity | None = None



#: The fused attention kernel's sizes a stack sets (in general or on one accelerator), each
#: at least 1: largest head size, head-size step, forward and backward tile edges.
_KERNEL_SIZES = ("fused_head_dim_max", "attention_head_dim_granule", "attention_block_tokens",
                 "attention_block_tokens_bwd")


class SoftwareStack(Entry):
    """A training software stack: what its kernels and schedules overlap and fuse.

    Each value is a run-model input of the same name (planner/engine/run/model.py ``INPUTS``);
    the stack's values replace planner/engine/inputs/execution.toml's for the run.
    """

    kind: Literal["stack"]
    # the framework's own name that users type for this stack ('maxtext', 'megatron-core'),
    # matched like the id (Catalog.get); a stack that extends this one does not inherit it
    aliases: list[str] = []
    tp_overlap: Quantity  # TP collectives hidden behind GEMMs (userbuffers / TP comm overlap)
    # share of what the per-layer buckets of the gradient reduction / parameter gather could
    # hide behind the compute that is hidden (1: all, overlap_grad_reduce; 0: none)
    dp_overlap: Quantity
    cp_overlap: Quantity  # context-parallel ring exchange hidden behind attention
    ep_overlap: Quantity  # MoE dispatch/combine all-to-all hidden behind expert compute
    attention_efficiency_factor: Quantity  # fused attention kernel relative to large GEMMs
    # host time of one layer forward's kernel launches outside any CUDA graph (eager: all of
    # them, ~60-120 kernels at ~5-10 us; per-layer graphs: those left outside)
    layer_overhead_s: Quantity
    # CUDA-graph capture scope: 0 none, 1 per layer (Transformer Engine
    # make_graphed_callables, Megatron-Core --cuda-graph-scope attn/mlp/...), 2 whole
    # iteration (Megatron-Core --cuda-graph-impl local --cuda-graph-scope full_iteration)
    cuda_graphs: Quantity
    # host time of one CUDA graph replay (cudaGraphLaunch)
    graph_launch_s: Quantity
    # fraction of the accelerator's large-GEMM efficiency (gemm_max_efficiency*, measured
    # with current cuBLAS / Transformer Engine) that the stack's GEMM path reaches
    gemm_efficiency_factor: Quantity
    # 1 if the stack recomputes the MLA up-projections in the backward pass (DeepSeek-V3
    # arXiv:2412.19437 s3.2.3; Megatron-Core --recompute-modules mla_up_proj), else 0
    recompute_mla_up_proj: Quantity
    # 1 if the stack recomputes the norms in the backward pass (their outputs not kept:
    # DeepSeek-V3 s3.2.3; Megatron-Core --recompute-modules layernorm), else 0
    recompute_norms: Quantity
    # optimizer-state bytes per parameter: fp32 master weights and Adam moments (12), or
    # BF16 moments (8: DeepSeek-V3 s3.3.1; Megatron-Core's precision-aware optimizer)
    optimizer_bytes_per_param: Quantity
    # MoE token dispatch and host launches (issue 27; unset: planner/engine/inputs/execution.toml):
    # 1 if tokens are dispatched in FP8 under FP8 recipes (combine stays BF16), else 0
    fp8_dispatch: Quantity | None = None
    # 1 if the dispatcher sends a token once per destination scale-up domain and forwards
    # it over NVLink (DeepEP / HybridEP), 0 for a flat all-to-all (NCCL)
    hierarchical_dispatch: Quantity | None = None
    # 1 if the dispatcher runs DeepEP's kernels (Megatron-Core flex dispatcher with the deepep
    # backend, NeMo AutoModel, torchtitan's DeepEP path): its scale-up bandwidth is the part's
    # measured DeepEP bandwidth (accelerator deepep_scale_up_bytes_per_s), else 0
    deepep_dispatch: Quantity | None = None
    # 1 if selective recompute is torchtitan's op-level policy (keeps every matmul's output
    # but every second one's, recomputes the rest), 0 for Megatron-Core's (the attention
    # core only)
    op_selective_recompute: Quantity | None = None
    # 1 if the stack's full activation checkpoint stops recomputing once the backward's
    # last saved tensor is back (PyTorch non-reentrant checkpoint), 0 if it re-runs the
    # whole layer
    recompute_early_stop: Quantity | None = None
    # bytes a logit the stack's loss holds beyond a fused FP32 cross-entropy's 4 (0 fused;
    # PyTorch's unfused loss on 16-bit logits: 6)
    loss_extra_bytes_per_logit: Quantity | None = None
    # chunks of the sequence the loss computes its logits in, one chunk held at a time
    # (1: all at once; torchtitan's ChunkedLossWrapper: 8)
    loss_logit_chunks: Quantity | None = None
    # HBM bytes one logit costs over the loss kernels' passes, forward and backward
    # (formulas.compute.cross_entropy_loss_bytes: Megatron-Core's fused loss 28, unfused 52,
    # PyTorch eager 48, one-pass fused or compiled 8)
    loss_bytes_per_logit: Quantity | None = None
    # the ZeRO stage the stack runs when the user leaves it out (0-3; 3: FSDP): its
    # optimizer's or sharding's default (not a run-model input)
    zero_stage: Quantity | None = None
    # 1 if ZeRO-3/FSDP under pipeline parallelism keeps each stage's gathered parameters
    # through the step and reduce-scatters its gradients once (torchtitan), 0 if it gathers
    # and reduce-scatters in every micro-batch
    fsdp_keeps_gathered_under_pp: Quantity | None = None
    # 1 if the stack's recompute policies keep only the tensors they name and recompute
    # every other one from the layer input (JAX checkpoint policies, MaxText's remat_policy),
    # 0 if a recomputed module keeps its inputs (Megatron-Core's selective recompute)
    remat_keeps_named_only: Quantity | None = None
    # 1 if the stack's ZeRO collectives run flat over the data-parallel group (every GPU's
    # share through its own scale-out link), 0 if node-aware (hierarchical, rail-aggregated)
    dp_collectives_flat: Quantity | None = None
    # device memory the runtime keeps from the model (CUDA context, NCCL buffers, caching-
    # allocator fragmentation; an XLA runtime's withheld HBM), in general or on one part
    memory_reserve_bytes: Quantity | None = None
    # achieved all-to-all bandwidth over the accelerator's nccl-tests bus bandwidth
    a2a_efficiency_factor: Quantity | None = None
    # host time of one MoE layer's forward beyond a dense layer's (router, permute,
    # all-to-all and its token-count synchronisation), and per local expert (GEMM launches)
    moe_layer_overhead_s: Quantity | None = None
    expert_overhead_s: Quantity | None = None
    # 1 if the host waits for the routed token counts every MoE layer (dropless dispatchers
    # size their buffers on the CPU): that layer's MoE launches cannot run ahead of the GPU
    dispatch_host_sync: Quantity | None = None
    # share of the SMs an overlapped EP all-to-all holds (DeepSeek-V3: 20 of 132)
    comm_sm_fraction: Quantity | None = None
    # 1 if the stack runs DeepSeek's DualPipe pipeline schedule (two stages per rank fed from
    # both ends; arXiv:2412.19437 s3.2.1), 0 for (interleaved) 1F1B
    dualpipe: Quantity | None = None
    # the experts' activation function: 1 if its output is recomputed in backward
    # (DeepSeek-V3 s3.3.3; Megatron-Core --recompute-modules moe_act), and the bytes per
    # element its stored input is kept at under an FP8 recipe (DeepSeek-V3: 1)
    recompute_moe_act: Quantity | None = None
    moe_act_input_bytes: Quantity | None = None
    # 1 if the layout's selective recompute runs the attention core's forward again in
    # backward, fused kernel included (Megatron-Core's recompute module core_attn); 0 where
    # the selective policy keeps the attention output (execution.toml's default)
    recompute_core_attn: Quantity | None = None
    # Megatron-Core --recompute-modules mlp and moe: 1 if each dense layer's MLP, or each
    # MoE layer (router, dispatch, experts, combine), runs its forward again in backward
    # from its input instead of keeping what is inside it
    recompute_mlp: Quantity | None = None
    recompute_moe: Quantity | None = None
    # HBM traffic of the element-wise ops (norms, activation, rotary embedding, residual
    # adds) relative to fused kernels (1; unset: planner/engine/inputs/execution.toml): eager
    # PyTorch runs each as several kernels, with fp32 upcasts, each reading and writing HBM
    elementwise_traffic_factor: Quantity | None = None
    # the attention variants the stack's fused kernel covers (unset: planner/engine/
    # execution.toml, FlashAttention-2's); a variant it lacks runs the unfused path:
    # 1 if it skips the masked blocks of a sliding window (cost ~ window, not sequence)
    fused_window_attention: Quantity | None = None
    # 1 if it implements learnable softmax sinks (GPT-OSS)
    fused_attention_sinks: Quantity | None = None
    # 1 if it soft-caps the logits in its tiles (Gemma 2)
    fused_attention_softcap: Quantity | None = None
    # largest head size it supports, the head-size step of its compiled tiles (sizes in
    # between padded up), and 1 if q/k and v may differ in size (MLA's 192/128)
    fused_head_dim_max: Quantity | None = None
    attention_head_dim_granule: Quantity | None = None
    fused_split_head_dims: Quantity | None = None
    # the tile edge of its query and key blocks in the forward and the backward kernels: a
    # tile the causal or window mask hides in part is computed whole
    attention_block_tokens: Quantity | None = None
    attention_block_tokens_bwd: Quantity | None = None
    # 1 if the stack runs the output layer (the vocabulary GEMM) at the recipe's low
    # precision, 0 if it keeps it in BF16 under FP8/FP4 recipes (Megatron-Core's output layer
    # is not a Transformer Engine module; DeepSeek-V3 s3.3.1); unset: execution.toml (1)
    low_precision_output_layer: Quantity | None = None
    # the data-parallel gradient buckets: each holds max(dp_bucket_min_params,
    # dp_bucket_params_per_dp_rank x DP ranks) parameters (Megatron-Core's
    # DistributedDataParallelConfig.bucket_size default); unset (0): one bucket per layer
    dp_bucket_min_params: Quantity | None = None
    dp_bucket_params_per_dp_rank: Quantity | None = None
    # 1 if the stack trains with int8 GEMMs (AQT in MaxText; ``--precision int8``), else 0;
    # unset: 0. Read by the precision check, not a run-model input
    int8_training: Quantity | None = None
    # 1 if the stack has Mamba-2 token mixers (hybrid models: Megatron-Core's MambaMixer,
    # Hugging Face's NemotronH on mamba_ssm); unset: 0. Read by the model check, not a
    # run-model input
    mamba2_layers: Quantity | None = None
    # the stack on an architecture its kernels were not written for (e.g. FlashAttention-2
    # on Hopper, without wgmma/TMA): accelerator id -> its own factors
    on_accelerator: dict[str, StackOnAccelerator] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sanity(self):
        problems: list[str] = []
        for name in ("tp_overlap", "dp_overlap", "cp_overlap", "ep_overlap"):
            v = getattr(self, name).value
            _check(problems, 0 <= v <= 1, f"{name}.value", f"expected a fraction in [0, 1], got {v:g}")
        _fraction(problems, self, "attention_efficiency_factor", "gemm_efficiency_factor")
        for acc, own in self.on_accelerator.items():
            for name in ("attention_efficiency_factor", "gemm_efficiency_factor"):
                q = getattr(own, name)
                _check(problems, q is None or 0 < q.value <= 1,
                       f"on_accelerator.{acc}.{name}.value",
                       f"expected a fraction in (0, 1], got {getattr(q, 'value', 0):g}")
            for name in ("fused_window_attention", "fused_attention_sinks",
                         "fused_attention_softcap", "fused_split_head_dims"):
                q = getattr(own, name)
                _check(problems, q is None or q.value in (0, 1),
                       f"on_accelerator.{acc}.{name}.value", "expected 0 or 1")
            for name in _KERNEL_SIZES:
                q = getattr(own, name)
                _check(problems, q is None or q.value >= 1,
                       f"on_accelerator.{acc}.{name}.value", "expected >= 1")
            q = own.memory_reserve_bytes
            _check(problems, q is None or q.value >= 0,
                   f"on_accelerator.{acc}.memory_reserve_bytes.value", "expected >= 0")
        _check(problems, self.layer_overhead_s.value >= 0, "layer_overhead_s.value", "expected >= 0")
        _check(problems, self.graph_launch_s.value >= 0, "graph_launch_s.value", "expected >= 0")
        _check(problems, self.cuda_graphs.value in (0, 1, 2), "cuda_graphs.value",
               "expected 0 (none), 1 (per layer) or 2 (whole iteration)")
        for name in ("recompute_mla_up_proj", "recompute_norms"):
            _check(problems, getattr(self, name).value in (0, 1), f"{name}.value",
                   "expected 0 or 1")
        for name in ("fp8_dispatch", "hierarchical_dispatch", "deepep_dispatch",
                     "op_selective_recompute", "recompute_early_stop",
                     "fsdp_keeps_gathered_under_pp", "remat_keeps_named_only",
                     "dp_collectives_flat",
                     "dispatch_host_sync", "dualpipe",
                     "recompute_moe_act", "recompute_mlp", "recompute_moe",
                     "recompute_core_attn", "fused_window_attention", "fused_attention_sinks",
                     "fused_attention_softcap",
                     "fused_split_head_dims", "int8_training", "mamba2_layers",
                     "low_precision_output_layer"):
            q = getattr(self, name)
            _check(problems, q is None or q.value in (0, 1), f"{name}.value", "expected 0 or 1")
        for name in ("moe_layer_overhead_s", "expert_overhead_s", "dp_bucket_min_params",
                     "dp_bucket_params_per_dp_rank", "memory_reserve_bytes"):
            q = getattr(self, name)
            _check(problems, q is None or q.value >= 0, f"{name}.value", "expected >= 0")
        for name in _KERNEL_SIZES:
            q = getattr(self, name)
            _check(problems, q is None or q.value >= 1, f"{name}.value", "expected >= 1")
        q = self.elementwise_traffic_factor
        _check(problems, q is None or q.value >= 1, "elementwise_traffic_factor.value",
               "expected >= 1 (1: fused element-wise kernels)")
        q = self.loss_extra_bytes_per_logit
        _check(problems, q is None or q.value >= 0, "loss_extra_bytes_per_logit.value",
               "expected >= 0 (0: a fused FP32 cross-entropy)")
        q = self.zero_stage
        _check(problems, q is None or q.value in (0, 1, 2, 3), "zero_stage.value",
               "expected 0, 1, 2 or 3 (3: FSDP)")
        q = self.loss_bytes_per_logit
        _check(problems, q is None or 0 <= q.value <= 128, "loss_bytes_per_logit.value",
               "expected 0-128 bytes a logit (Megatron-Core's fused loss: 28)")
        q = self.loss_logit_chunks
        _check(problems, q is None or (q.value >= 1 and float(q.value).is_integer()),
               "loss_logit_chunks.value", "expected a whole number >= 1 (1: unchunked)")
        q = self.moe_act_input_bytes
        _check(problems, q is None or q.value in (1, 2), "moe_act_input_bytes.value",
               "expected 1 (FP8) or 2 (BF16)")
        q = self.comm_sm_fraction
        _check(problems, q is None or 0 <= q.value < 1, "comm_sm_fraction.value",
               "expected a fraction in [0, 1)")
        q = self.a2a_efficiency_factor
        _check(problems, q is None or 0 < q.value <= 1.5, "a2a_efficiency_factor.value",
               "expected a factor in (0, 1.5]")
        _check(problems, self.optimizer_bytes_per_param.value > 0,
               "optimizer_bytes_per_param.value", "expected > 0")
        _raise(problems)
        return self


KIND_MODELS: dict[str, type[Entry]] = {
    "accelerator": Accelerator,
    "node": Node,
    "site": Site,
    "site_class": SiteClass,
    "model": ModelSpec,
    "reliability": ReliabilityProfile,
    "stack": SoftwareStack,
}


@contextmanager
def plugins_off() -> Iterator[None]:
    """Build validators inside with pydantic's plugin loading off.

    The models are built on first use (``defer_build``: a catalog served validated by
    :mod:`hardware_catalog.validated_cache` never builds them, ~40 ms of a one-shot query).
    pydantic looks for plugins (an entry-point scan of every installed distribution,
    ~6 ms) when it builds a validator; the catalog's models use none.  As typer does for
    its own adapters, the setting is restored afterwards.
    """
    setting = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "1"
    try:
        yield
    finally:
        if setting is None:
            del os.environ["PYDANTIC_DISABLE_PLUGINS"]
        else:
            os.environ["PYDANTIC_DISABLE_PLUGINS"] = setting
