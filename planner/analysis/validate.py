"""Validation: predict every published measurement with the catalog's parameters.

The measurements live in ``hardware_catalog/data/validation`` (copied from the
project's shared validation set, with their ``source`` and ``verification``
columns and, for vTrain, its MIT licence).  Each dataset loader turns rows into
*cases*: one kernel input row (model shape, accelerator, layout, software
flags) and one measured number.  :func:`predict` evaluates all cases of a
dataset through the compiled kernel in one vectorised call per
(accelerator, flash attention) group; :func:`summarise` gives count, MAPE, max
error, signed bias and the worst rows.

Mapping rules (also in docs/validation.md):

* the model shape comes from the row (layers, hidden, heads, vocab, seq_len);
  GPT-2 style MLP (ffn = 4h, 2 matrices), tied embeddings;
* accelerator: A100 rows -> ``a100-80gb`` (``a100-40gb`` when the row says 40GB),
  H100 rows -> ``h100-sxm``; fp16 and bf16 share the dense peak;
* Megatron-LM / Megatron-DeepSpeed rows (SC21, GPT-3 example, vTrain, BLOOM):
  no flash attention, full recompute as published, ZeRO as published, sequence
  parallelism off (it did not exist yet); vTrain runs with
  ``use_gradient_bucket = false`` so the gradient all-reduce is not overlapped
  (``dp_overlap = 0``) and its nodes have 4 x 200 Gb/s HDR (12.5 GB/s per GPU);
* llm-foundry rows: FSDP FULL_SHARD = ZeRO-3 (SHARD_GRAD_OP = ZeRO-2), TP = PP = 1,
  flash attention, recompute as published;
* benchmark rows use the ``benchmark`` reliability profile (short clean runs,
  see its provenance); full production runs (BLOOM, OPT) use their own profile;
* modern rows (2024-2026 NeMo / Megatron-Core, Megatron-Bridge, InternLM, torchtitan;
  :func:`load_modern_runs`): the whole shape from the row (GQA, gated MLP, MoE), what the
  row does not state (dense-first layers, shared experts, tied embeddings) from the
  catalog model of the same id, else tied or untied embeddings by whichever parameter
  count is nearer the row's ``params``; precision, CP, EP, ZeRO as published; flash
  attention; sequence parallelism when TP > 1 (Megatron-Core recipes); no dropout; a
  network stated in ``notes`` ("4x100Gb RoCE per node") replaces the node's.  Rows the
  planner cannot express are listed with the reason (:func:`modern_unexpressible`) and
  not predicted.

Nothing here is fitted per run: the accelerator's efficiency parameters are
the same for every row on that accelerator.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from formulas import memory as m
from formulas.compute import narayanan_flops_per_iteration
from formulas.pipeline import fullest_stage_layers
from hardware_catalog import load_catalog
from hardware_catalog.recipes import GEMM_PRECISIONS
from planner.engine.inputs import recompute_modules
from planner.engine.inputs.method import LORA_METHODS, method_inputs, method_spec
from planner.engine.inputs.scenario import (
    PRECISIONS,
    attention_shape_inputs,
    model_inputs,
    precision_refusal,
    recipe_gemm_inputs,
    stack_factor,
    stack_inputs,
)
from planner.engine.layouts.evaluator import evaluate
from planner.engine.layouts.layout_check import check_layout
from planner.engine.layouts.space import RECOMPUTE_CODES, layout_flags
from planner.engine.run.columns import step_time_terms
from planner.engine.run.kernel_run import evaluate_columns, evaluate_inputs
from planner.engine.run.model import param_counts
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.errors import CapplanError, did_you_mean

DATA_DIR = Path(__file__).resolve().parents[2] / "hardware_catalog" / "data" / "validation"

#: MPT model shapes (llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml: d_model,
#: n_heads, n_layers; vocab 50,368; expansion ratio 4; tied embeddings).
MPT_SHAPES = {
    "125m": (12, 768, 12), "350m": (24, 1024, 16), "760m": (24, 1536, 12),
    "1b": (24, 2048, 16), "3b": (32, 2560, 20), "7b": (32, 4096, 32),
    "13b": (40, 5120, 40), "30b": (48, 7168, 56), "70b": (80, 8192, 64),
}
MPT_VOCAB = 50368
GPT2_VOCAB_PADDED = 51200  # Megatron-LM GPT-2 BPE vocabulary padded (SC21 paper, s5.1)

#: Rows used to fit the efficiency parameters (the rest is held out).
#: SC21 Table 1: odd rows (1.7B, 7.5B, 39.1B, 145.6B, 529.6B); vTrain multi-node: even
#: rows (0, 2, 4, ... of the file); llm-foundry: runs whose GPU count is 8 or 64;
#: vTrain single-node: every 10th row.  BLOOM, OPT and the GPT-3 example are held out.
FIT_RULES = {
    "sc21": "SC21 Table 1 rows 1, 3, 5, 7, 9 (1.7B, 7.5B, 39.1B, 145.6B, 529.6B)",
    "vtrain-multi": "even rows of ground_truth_multi.csv (0, 2, 4, ...)",
    "vtrain-single": "every 10th row of ground_truth_single.csv (0, 10, 20, ...)",
    "llm-foundry-a100": "runs on 8 or 64 GPUs",
    "llm-foundry-h100": "runs on 8 or 64 GPUs",
    "modern-runs": ("model families Llama and Grok-1 (36 rows); held out (56 rows): the "
                    "families the fit never sees - Nemotron-4, DeepSeek-V3, InternLM - the "
                    "GB300 rows, the NeMo tables of the 2024 releases (36 rows) and NVIDIA's "
                    "low-precision recipe comparisons outside its tables (6 rows: BF16 to "
                    "NVFP4 on GB200 and GB300; MODERN_HELD_OUT_SOURCES)"),
    "independent-runs": ("held out, no row fitted: publishers the calibration never saw "
                         "(torchtitan's benchmark tables, its NVFP4 page's BF16 / MXFP8 / NVFP4 "
                         "rows on GB200 and its DeepEP page's Qwen3-30B-A3B "
                         "MoE rows on B200, Trainy's H200 run, the Llama 3 paper, Intel's Gaudi 2 table, "
                         "AMD's MaxText Llama 3.1 405B runs on MI355X, AMD's Primus (Megatron-LM) Llama 3.1 8B FP8 "
                         "rows on MI325X (its ROCm performance results as the Primus projection blog "
                         "prints them), Google's MaxText recipes "
                         "on TPU7x (Ironwood: Llama 3.1 70B/405B, DeepSeek-V3, Qwen3-235B-A22B, gpt-oss-120b) "
                         "and TPU v6e (Trillium: Llama 3.1 8B/70B/405B, GPT-3 175B; "
                         "tpu-recipes), NVIDIA's MaxText Llama 2 7B on H100 (JAX-Toolbox); "
                         "independent_runs.csv); its rows keep their `stack` (Float8 rowwise rows: the "
                         "fp8-rowwise recipe), torchtitan's default-EP Qwen3 row is "
                         "unexpressible and the Llama 3 rows, whose layout the paper does not "
                         "pin, and AMD's dropless-MoE A/B rows, whose absolute throughput their "
                         "authors call a floor, and the MI325X Llama 3.1 70B rows, whose recompute the table "
                         "does not give (its two 1-node values are one number printed twice), excluded"),
    "moe-runs": ("every expressible row of the shared file (the MoE stacks' launch times and "
                 "all-to-all overlap are fitted on them); the four gpt-oss-120b rows the project "
                 "appends (MB2511G-01..04) held out; the cross-validated error is "
                 "leave-one-model-family-out (planner/analysis/calibration.py)"),
}

#: Run-model inputs a loader may set per case beyond its model shape, layout and
#: measurement (:func:`_case`); a case without them
#: gets the GPT-style defaults of the older datasets (ffn = 4h, 2 matrices, tied, dense).
SHAPE_DEFAULTS = {"kv_heads": "heads", "ffn": "4h", "mlp_matrices": 2.0,
                  "embedding_matrices": 1.0, "moe_layers": 0.0, "experts": 1.0,
                  "experts_per_token": 1.0, "shared_experts": 0.0, "moe_ffn": "4h",
                  "cp": 1.0, "ep": 1.0, "sequence_parallel": 0.0, "precision": "bf16",
                  # ZeRO sharded over every DP rank unless a row shards within a group (HSDP)
                  "shard_group": "dp",
                  "stack": "megatron-lm-2021", "unexpressible": "", "excluded": "",
                  # heads of h/a, no MLA, no sliding window, no MTP modules
                  "head_dim": "h/a", "v_head_dim": "h/a", "q_lora_rank": 0.0,
                  "kv_lora_rank": 0.0, "qk_rope_head_dim": 0.0, "window": "seq_len",
                  "window_layers": 0.0, "attention_sinks": 0.0, "attention_softcap": 0.0, "mtp_layers": 0.0, "linear_attention_layers": 0.0,
                  "linear_key_heads": 1.0, "linear_value_heads": 1.0, "linear_head_dim": 1.0,
                  # no Mamba-2 layers, every layer a mixer and an MLP
                  "mamba_layers": 0.0, "mamba_heads": 1.0, "mamba_head_dim": 1.0,
                  "mamba_state_dim": 1.0, "mamba_groups": 1.0, "mixer_free_layers": 0.0,
                  "mlp_free_layers": 0.0, "moe_latent_dim": 0.0}
#: The shape inputs of SHAPE_DEFAULTS that describe the attention, the MTP modules and the
#: linear-attention layers.
ATTENTION_SHAPE = ("head_dim", "v_head_dim", "q_lora_rank", "kv_lora_rank",
                   "qk_rope_head_dim", "window", "window_layers", "attention_sinks", "attention_softcap",
                   "mtp_layers",
                   "linear_attention_layers", "linear_key_heads", "linear_value_heads",
                   "linear_head_dim", "mamba_layers", "mamba_heads", "mamba_head_dim",
                   "mamba_state_dim", "mamba_groups", "mixer_free_layers", "mlp_free_layers",
                   "moe_latent_dim")


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    metric_label: str
    loader: object
    target_mape: float | None = None


def _num(text) -> float:
    """The first number in a CSV cell ('~32', '104.70 (it 85376)', '2 (1 early)')."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return float("nan")
    m = re.search(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?", str(text))
    return float(m.group(0).replace(",", "")) if m else float("nan")


@cache
def published_runs() -> pd.DataFrame:
    return pd.read_csv(DATA_DIR / "published_runs.csv", dtype=str)


def _cell(text: str):
    """A project CSV cell: blank -> None, a whole number -> int, a number -> float, else
    the text."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


@cache
def data_rows(name: str) -> dict[str, dict]:
    """A project CSV of this folder (one run a row, its ``source``), by ``run_id``."""
    frame = pd.read_csv(DATA_DIR / name, dtype=str, keep_default_na=False)
    return {r["run_id"]: {k: _cell(v) for k, v in r.items()}
            for r in frame.to_dict("records")}


def published_value(run_id: str, column: str) -> float:
    """One number of a published_runs.csv row (its first number when the cell explains it)."""
    return _num(published_runs().set_index("run_id").loc[run_id, column])


@cache
def reliability_rows() -> pd.DataFrame:
    return pd.read_csv(DATA_DIR / "reliability.csv", dtype=str)


def _case(**kw) -> dict:
    # dropout: Megatron-LM/-DeepSpeed and metaseq train with dropout 0.1 (masks stored)
    # stack: the software the rows ran on (hardware_catalog/data/stacks); Megatron-LM 2021
    # unless the loader says otherwise
    base = {"reliability": "benchmark", "stack": "megatron-lm-2021", "vp": 1, "zero": 0,
            "flash": False, "dp_overlap": np.nan,
            "scale_out_bytes_per_s": np.nan, "fit": False, "source": "", "dropout": 1}
    base.update(kw)
    return base


# ---- loaders -------------------------------------------------------------------------

def load_sc21() -> pd.DataFrame:
    """Megatron SC21 Table 1 (10 rows), the Megatron-LM GPT-3 175B 1024-GPU example,
    Korthikanti et al. 2022 Table 5 (8 iteration times, korthikanti_2022.csv), Megatron-LM's
    2020 README tables (12 iteration times on V100 and A100, megatron_readme_2020.csv),
    MT-NLG 530B's (3, mtnlg_2022.csv) and SC21 Table 2's ZeRO-3 rows (6,
    narayanan_2021_zero3.csv)."""
    runs = published_runs()
    rows = []
    sc21 = runs[runs.run_id.str.startswith("megatron-sc21-")]
    for i, (_, r) in enumerate(sc21.iterrows()):
        layers = int(_num(r.layers))
        pp = int(_num(r.PP))
        vp_text = str(r.VP)
        per_virtual = _num(vp_text) if "virtual" in vp_text else float("nan")
        vp = int(layers / pp / per_virtual) if per_virtual == per_virtual else 1
        rows.append(_case(dataset="sc21", case_id=r.run_id, hardware="a100-80gb",
                          layers=layers, hidden=int(_num(r.hidden)), heads=int(_num(r.heads)),
                          vocab=int(_num(r.vocab)), seq_len=int(_num(r.seq_len)),
                          gpus=int(_num(r.gpu_count)), tp=int(_num(r.TP)), pp=pp, vp=vp,
                          micro_batch=int(_num(r.micro_batch)),
                          global_batch=int(_num(r.global_batch_seqs)), recompute="full",
                          metric="tflops_per_gpu", measured=_num(r.tflops_per_gpu),
                          fit=(i % 2 == 0), source=r.source))
    r = runs.set_index("run_id").loc["megatron-gpt3-175b-1024"]
    rows.append(_case(dataset="sc21", case_id="megatron-gpt3-175b-1024", hardware="a100-80gb",
                      layers=96, hidden=12288, heads=96, vocab=GPT2_VOCAB_PADDED, seq_len=2048,
                      gpus=1024, tp=8, pp=16, micro_batch=1, global_batch=1536,
                      recompute="full", metric="tflops_per_gpu",
                      measured=_num(r.tflops_per_gpu), fit=False, source=r.source))
    # Korthikanti et al. 2022 Table 5: the same Megatron-LM on A100s a year later, full
    # recompute against sequence parallelism + selective recompute (held out)
    for run, o in data_rows("korthikanti_2022.csv").items():
        rows.append(_case(dataset="sc21", case_id=run, hardware=o["hardware"],
                          **{k: int(o[k]) for k in ("layers", "hidden", "heads", "vocab",
                                                    "seq_len", "gpus", "tp", "pp", "vp",
                                                    "micro_batch", "global_batch")},
                          recompute=o["recompute"],
                          sequence_parallel=float(o["sequence_parallel"]),
                          metric="step_time_s", measured=float(o["iteration_time_s"]),
                          fit=False, source=o["source"]))
    # Megatron-LM's README of 2020: tensor-parallel weak scaling on a DGX-2 (V100) and a
    # DGX-A100, and with 128-way data parallelism on DGX-A100s (the V100 single-GPU row
    # set v100-32gb's GEMM efficiency and is excluded); MT-NLG 530B's training iterations
    # on 2,240-3,360 A100s (Megatron-DeepSpeed, 2021). Held out.
    for run, o in (data_rows("megatron_readme_2020.csv") | data_rows("mtnlg_2022.csv")).items():
        rows.append(_case(dataset="sc21", case_id=run, hardware=o["hardware"],
                          **{k: int(o[k]) for k in ("layers", "hidden", "heads", "vocab",
                                                    "seq_len", "gpus", "tp", "pp",
                                                    "micro_batch", "global_batch")},
                          recompute=o["recompute"], precision=o["precision"],
                          metric="step_time_s", measured=float(o["iteration_time_s"]),
                          excluded=o["excluded"], fit=False, source=o["source"]))
    # the same paper's Table 2: DeepSpeed ZeRO-3 without model parallelism on the same
    # cluster, batch fixed while the GPUs double (held out: no row fits the stack)
    for run, o in data_rows("narayanan_2021_zero3.csv").items():
        rows.append(_case(dataset="sc21", case_id=run, hardware=o["hardware"],
                          **{k: int(o[k]) for k in ("layers", "hidden", "heads", "vocab",
                                                    "seq_len", "gpus", "micro_batch",
                                                    "global_batch")},
                          tp=1, pp=1, zero=3, recompute="full", stack="deepspeed-zero",
                          metric="tflops_per_gpu", measured=float(o["tflops_per_gpu"]),
                          fit=False, source=o["source"]))
    return pd.DataFrame(rows)


VTRAIN_SOURCE = ("vTrain (Bang et al., MICRO'24, arXiv:2312.12391) measured Megatron-DeepSpeed "
                 "iteration times, MIT licence (vtrain/LICENSE)")
VTRAIN_SCALE_OUT = 4 * 200e9 / 8 / 8  # 4 x 200 Gb/s HDR per 8-GPU node -> B/s per GPU


def _vtrain(path: str, dataset: str, every: int) -> pd.DataFrame:
    d = pd.read_csv(DATA_DIR / "vtrain" / path, encoding="utf-8-sig")
    d.columns = [c.strip() for c in d.columns]
    tp = d["tensor parallelism"].astype(int)
    return pd.DataFrame({
        "dataset": dataset, "case_id": [f"{dataset}-{i}" for i in range(len(d))],
        "hardware": "a100-80gb", "reliability": "benchmark",
        "layers": d["# layers"].astype(int), "hidden": d["hidden size"].astype(int),
        "heads": d["attention heads"].astype(int),
        # GPT-2 BPE (50,257) padded to a multiple of 128 x TP (Megatron-DeepSpeed)
        "vocab": np.ceil(50257 / (128 * tp)) * 128 * tp,
        "seq_len": d["sequence length"].astype(int), "gpus": d["# GPUs"].astype(int), "tp": tp,
        "pp": d["pipeline parallelism"].astype(int), "vp": 1,
        "micro_batch": d["micro batch"].astype(int), "global_batch": d["global batch"].astype(int),
        "recompute": "full", "zero": 0, "flash": False, "dp_overlap": 0.0, "dropout": 1,
        "scale_out_bytes_per_s": VTRAIN_SCALE_OUT, "metric": "step_time_s",
        "measured": d["iteration time (ms)"].astype(float) / 1000,
        "fit": (np.arange(len(d)) % every == 0), "source": VTRAIN_SOURCE,
    })


def load_vtrain_multi() -> pd.DataFrame:
    return _vtrain("ground_truth_multi.csv", "vtrain-multi", 2)


def load_vtrain_single() -> pd.DataFrame:
    return _vtrain("ground_truth_single.csv", "vtrain-single", 10)


def _llm_foundry(gpu: str) -> pd.DataFrame:
    runs = published_runs()
    m = runs[runs.run_id.str.startswith("mpt-bench-") & runs.gpu_type.str.startswith(gpu)]
    m = m[m.precision.isin(["bf16", "amp_bf16"])]
    rows = []
    for _, r in m.iterrows():
        size = r.model.split()[-1]
        layers, hidden, heads = MPT_SHAPES[size]
        hardware = {"a100_40gb": "a100-40gb", "a100_80gb": "a100-80gb",
                    "h100_80gb": "h100-sxm"}[r.gpu_type]
        gpus = int(_num(r.gpu_count))
        rows.append(_case(dataset=f"llm-foundry-{gpu}", case_id=r.run_id, hardware=hardware,
                          layers=layers, hidden=hidden, heads=heads, vocab=MPT_VOCAB,
                          seq_len=int(_num(r.seq_len)), gpus=gpus, tp=1, pp=1,
                          micro_batch=int(_num(r.micro_batch)),
                          global_batch=int(_num(r.global_batch_seqs)),
                          recompute="full" if r.act_recompute == "full" else "none",
                          zero=3 if "FULL_SHARD" in r.zero_fsdp else 2, flash=True,
                          stack="llm-foundry-2023",
                          dropout=0,  # MPT: attn/resid/emb_pdrop 0.0
                          metric="tokens_per_s_per_gpu", measured=_num(r.tokens_per_s_per_gpu),
                          fit=gpus in (8, 64), source=r.source))
    return pd.DataFrame(rows)


def load_llm_foundry_a100() -> pd.DataFrame:
    return _llm_foundry("a100")


def load_llm_foundry_h100() -> pd.DataFrame:
    return _llm_foundry("h100")


def load_full_runs() -> pd.DataFrame:
    """BLOOM-176B iteration time and OPT-175B per-GPU TFLOP/s (production runs)."""
    runs = published_runs().set_index("run_id")
    b, o = runs.loc["bloom-176b"], runs.loc["opt-175b"]
    return pd.DataFrame([
        # BLOOM: vocab padded to 250,880 (config.json); 2 x 100 Gb/s-class Omni-Path per
        # node at 4 x 100 Gb/s = 6.25 GB/s per GPU; ZeRO-1; full recompute; bf16.
        _case(dataset="full-runs", case_id="bloom-176b", hardware="a100-80gb",
              reliability="bloom-176b", layers=70, hidden=14336, heads=112, vocab=250880,
              seq_len=2048, gpus=384, tp=4, pp=12, micro_batch=2, global_batch=2048,
              recompute="full", zero=1, scale_out_bytes_per_s=4 * 100e9 / 8 / 8,
              metric="step_time_s", measured=_num(b.step_time_s), source=b.source),
        # OPT: Megatron TP 8 + FSDP over the rest (992 = 8 x 124), 2M tokens per batch, no
        # pipeline, activation checkpointing (metaseq opt_baselines.py: --ddp-backend
        # fully_sharded --checkpoint-activations). The launcher's local batch is
        # 2M / 124 ranks / 2048 = 8 sequences with --update-freq 1: one micro-batch of 8.
        # "Up to 147 TFLOP/s" counts the recomputed forward (Megatron's formula): the
        # chronicles' 4.30e23 FLOPs = 96 B s l h^2 (1 + s/6h + V/16lh) over 300B tokens, and
        # 4.30e23 / (33 days x 1,024 GPUs) = 147 TFLOP/s (projects/OPT/chronicles/final_update.md).
        _case(dataset="full-runs", case_id="opt-175b", hardware="a100-80gb",
              reliability="opt-175b", layers=96, hidden=12288, heads=96, vocab=50272,
              seq_len=2048, gpus=992, tp=8, pp=1, micro_batch=8, global_batch=992,
              recompute="full", zero=3, metric="tflops_per_gpu",
              measured=_num(o.tflops_per_gpu), source=o.source),
    ])


# ---- modern runs (2024-2026 software stacks) ----------------------------------------

#: Sources whose rows are held out: NVIDIA's NeMo performance tables of the 2024 releases
#: (24.03 and 24.05 in the NeMo-Framework-Launcher README, 24.07 in the NeMo repository's
#: docs), one publisher's earlier releases of the 25.x tables the fit sees: they measure
#: how the 2025-calibrated stack carries to the same recipes a year earlier.
NEMO_2024_SOURCES = ("NVIDIA/NeMo@", "NVIDIA/NeMo-Framework-Launcher@")
#: NVIDIA's low-precision recipe comparisons outside its performance tables, held out: the
#: Megatron-Bridge tutorial's BF16 / FP8-CS / MXFP8 / NVFP4 runs of Llama 3.1 8B on 4 GB200
#: and the DGX Station playbook's BF16 / NVFP4 runs on one GB300 (the plain recipes, no CUDA
#: graphs): they measure the FP4 GEMM efficiency no row was fitted on.
LOW_PRECISION_SOURCES = ("NVIDIA-NeMo/Megatron-Bridge@1e9a459b4 tutorials/",
                         "NVIDIA/dgx-spark-playbooks@")
MODERN_HELD_OUT_SOURCES = (*NEMO_2024_SOURCES, *LOW_PRECISION_SOURCES)

#: Groups of the modern dataset, first match wins (every row is in exactly one group):
#: (name, rule on a case row). Issue 13's targets: MAPE <= 15 % in each group.
MODERN_GROUPS = (
    ("MoE", lambda r: r.experts > 1),
    ("NeMo 2024 releases", lambda r: str(r.source).startswith(NEMO_2024_SOURCES)),
    ("NVIDIA low-precision recipes", lambda r: str(r.source).startswith(LOW_PRECISION_SOURCES)),
    ("A100 on non-DGX networks", lambda r: r.hardware.startswith("a100")),
    ("B200/GB200", lambda r: r.hardware in ("b200", "gb200")),
    ("GB300", lambda r: r.hardware == "gb300"),
    ("H100 FP8", lambda r: r.hardware == "h100-sxm" and r.precision.startswith("fp8")),
    ("H100 BF16", lambda r: r.hardware == "h100-sxm" and r.precision == "bf16"),
)
#: Families whose rows fit the parameters; the others are held out (FIT_RULES).
MODERN_FIT_FAMILIES = ("llama", "grok")
#: Parts whose rows are held out: GB300 shares Blackwell's parameters, and its two rows
#: (19-21 % faster than GB200's at the same rated peak and preset) measure that sharing.
MODERN_HELD_OUT_PARTS = ("gb300",)
MODERN_ETP = re.compile(r"\bETP\s*=\s*(\d+)")
MODERN_MTP = re.compile(r"\bMTP\b")
MODERN_NETWORK = re.compile(r"(\d+)\s*x\s*(\d+)\s*Gb\b[^;]*per node")
#: Hybrid sharding as a row's notes state it ("ZeRO-1 sharded within 8 GPUs")
MODERN_SHARD = re.compile(r"sharded within (\d+) GPUs")
#: A row whose notes turn sequence parallelism off (Intel Gaudi's FP8 recipes: HL_SEQ_PARALLEL=0);
#: otherwise it is on wherever TP > 1, as every Megatron recipe sets it.
MODERN_NO_SP = re.compile(r"sequence parallelism off", re.I)
#: A row whose activations live in host memory (MaxText's remat_policy ... decoder_layer_input=
#: offload): the run input offloaded_activation_vectors, the h-vectors a token and layer the
#: notes count, else 1 (the layer input)
MODERN_OFFLOAD = re.compile(r"offloading (?:only )?the decoder-layer input")
MODERN_OFFLOADED = re.compile(r"h-vectors offloaded a token and layer: ([\d.]+)")
#: A row whose optimizer keeps another state than the stack's FP32 master weights and
#: moments (MaxText's weight_dtype bfloat16): the run input optimizer_bytes_per_param
MODERN_OPTIMIZER_BYTES = re.compile(r"optimizer-state bytes a parameter: ([\d.]+)")
#: The attention kernel's tiles a row's recipe sets (MaxText's sa_block_* flags) as its notes
#: state them: the run inputs attention_block_tokens and attention_block_tokens_bwd
MODERN_ATTENTION_TILES = re.compile(r"attention tiles: forward (\d+), backward (\d+)")


#: Software stack of a modern row, by the repository its source names (first match).
MODERN_STACKS = (("InternLM/", "internevo-2023"), ("pytorch/torchtitan", "torchtitan-fsdp2"),
                 ("NVIDIA-NeMo/Megatron-Bridge", "megatron-bridge-2025"),
                 ("NVIDIA", "megatron-core-2025"))


def modern_stack(source: str) -> str:
    """The software stack a modern row ran on (NeMo/Megatron-Core unless named otherwise)."""
    return next((stack for prefix, stack in MODERN_STACKS if prefix in source),
                "megatron-core-2025")


def modern_group(case) -> str:
    """The issue-13 group of one modern case (a row of :func:`load_modern_runs`)."""
    return next(name for name, rule in MODERN_GROUPS if rule(case))


def shape_param_count(shape: dict) -> float:
    """Parameters of a kernel-input shape: the run model's own count."""
    return param_counts(shape)["params"]


def modern_shape(row, catalog) -> dict:
    """Run-model shape inputs of one modern_runs.csv row.

    The row states layers, hidden, heads, KV heads, ffn, gated MLP, vocab and the MoE
    shape; what it does not state comes from the catalog model of the same id (dense-first
    layers, shared experts, tied embeddings); for a model outside the catalog, tied or
    untied embeddings by whichever parameter count is nearer the row's ``params``.
    """
    experts = _num(row.experts)
    experts = int(experts) if np.isfinite(experts) else 0  # an empty cell: dense
    hidden, layers = float(_num(row.hidden)), float(_num(row.layers))
    shape = {"layers": layers, "hidden": hidden, "heads": _num(row.heads),
             "kv_heads": _num(row.kv_heads), "ffn": _num(row.ffn),
             "mlp_matrices": 3.0 if str(row.gated_mlp).lower() == "true" else 2.0,
             "vocab": _num(row.vocab), "seq_len": _num(row.seq_len), "dropout": 0,
             "moe_layers": layers if experts else 0.0, "experts": float(max(experts, 1)),
             "experts_per_token": _num(row.experts_per_token) if experts else 1.0,
             "shared_experts": 0.0,
             "moe_ffn": _num(row.moe_ffn) if experts else _num(row.ffn)}
    # heads of h/a, no MLA, window or MTP unless the catalog model of the row has them
    shape.update(attention_shape_inputs(SimpleNamespace(hidden=hidden, heads=shape["heads"]),
                                        shape["seq_len"]))
    if row.model in catalog.models:
        m = catalog.model(row.model)
        shape["moe_layers"] = float(m.moe_layers)
        shape["shared_experts"] = float(m.shared_experts)
        shape["embedding_matrices"] = 1.0 if m.tied_embeddings else 2.0
        shape.update(attention_shape_inputs(m, shape["seq_len"]))
        # MTP modules only where the row says the run trained them
        shape["mtp_layers"] = float(max(m.mtp_layers, 1)) if MODERN_MTP.search(
            str(row.notes)) else 0.0
    else:
        published = _num(row.params)
        shape["embedding_matrices"] = min((1.0, 2.0), key=lambda e: abs(
            shape_param_count(shape | {"embedding_matrices": e}) - published))
    return shape


def _attention_tiles(notes: str) -> dict[str, float]:
    """The forward and backward attention tiles a row's notes state (NaN: the stack's)."""
    tiles = MODERN_ATTENTION_TILES.search(notes)
    forward, backward = (float(tiles.group(1)), float(tiles.group(2))) if tiles \
        else (np.nan, np.nan)
    return {"attention_block_tokens": forward, "attention_block_tokens_bwd": backward}


def _offloaded_vectors(notes: str) -> float:
    """The h-wide vectors a token and layer a row's notes say it offloads (NaN: none)."""
    counted = MODERN_OFFLOADED.search(notes)
    if counted:
        return float(counted.group(1))
    return 1.0 if MODERN_OFFLOAD.search(notes) else np.nan


def _optimizer_bytes(notes: str) -> float:
    """The optimizer-state bytes a parameter a row's notes state (NaN: the stack's)."""
    stated = MODERN_OPTIMIZER_BYTES.search(notes)
    return float(stated.group(1)) if stated else np.nan


def modern_unexpressible(case, catalog) -> str:
    """Why the planner cannot express a modern case ('' when it can): '; '-joined reasons.

    The layout rules are the planner's own (``check_layout``, as ``capplan evaluate``
    applies them); the rest are what the row's notes name that no input can state.
    """
    reasons = []
    if case.hardware not in catalog.accelerators:
        return f"accelerator '{case.hardware}' is not in the catalog"
    acc = catalog.accelerator(case.hardware)
    if case.precision not in PRECISIONS or precision_refusal(acc, case.precision):
        reasons.append(f"precision {case.precision} has no peak on {case.hardware} "
                       f"(planner precisions: {', '.join(PRECISIONS)})")
    dp = case.gpus // (case.tp * case.pp * case.cp)
    x = {"scale_up_domain_gpus": acc.scale_up_domain_gpus.value, "heads": case.heads,
         "kv_heads": case.kv_heads, "seq_len": case.seq_len, "layers": case.layers,
         "global_batch": case.global_batch, "experts": case.experts,
         "dualpipe": stack_inputs(catalog.stack(case.stack))["dualpipe"]
         if getattr(case, "stack", "") else 0.0}
    try:
        check_layout(x, gpus=int(case.gpus), tp=int(case.tp), pp=int(case.pp),
                     cp=int(case.cp), ep=int(case.ep), vp=int(case.vp),
                     micro_batch=int(case.micro_batch), dp=int(dp), etp=int(case.etp))
    except CapplanError as exc:
        reasons.append(f"layout: {exc}")
    return "; ".join(reasons)


def _default_etp(tp: int, cp: int, dp: int, ep: int) -> int:
    """Megatron-Core's expert-TP default (= TP) when EP x TP divides TP x CP x DP, else 1."""
    return tp if (tp * cp * dp) % (ep * tp) == 0 else 1


def load_modern_runs() -> pd.DataFrame:
    """modern_runs.csv: 92 rows of 2024-2026 stacks on H100, B200, GB200, GB300 and A100.

    A row's ``stack`` cell names the stack its preset ran (Megatron-Bridge presets without
    CUDA graphs: megatron-core-2025), else :func:`modern_stack` of its source."""
    return _modern_frame("modern_runs.csv", "modern-runs",
                         lambda r: (r.model.startswith(MODERN_FIT_FAMILIES)
                                    and r.hardware not in MODERN_HELD_OUT_PARTS
                                    and not r.source.startswith(MODERN_HELD_OUT_SOURCES)),
                         modern_group)


#: The Hopper parts of independent-runs (gt-h100-96gb: torchtitan's Grand Teton H100).
HOPPER_IDS = ("h100-sxm", "h200", "h800", "gt-h100-96gb", "gh200")
#: Groups of independent-runs (first match wins): accelerator vendor and precision.
INDEPENDENT_GROUPS = (
    ("Hopper BF16", lambda r: r.hardware in HOPPER_IDS and r.precision == "bf16"),
    ("Hopper FP8", lambda r: r.hardware in HOPPER_IDS),
    ("other accelerators", lambda r: True),
)


#: A torchtitan benchmark row (its source names torchtitan) on ``torchtitan-fsdp2`` whose
#: notes do not state torch.compile ran eagerly (torchtitan's default ``compile = false``;
#: its tables name "FSDP + torch.compile" where they compiled): ``torchtitan-fsdp2-eager``.
EAGER_TORCHTITAN = ("torchtitan-fsdp2", "torchtitan-fsdp2-eager")
TORCH_COMPILE = re.compile(r"torch\.compile", re.I)


def eager_torchtitan_stack(stack: str, source: str, notes: str) -> str:
    """The stack of an independent-runs row: :data:`EAGER_TORCHTITAN`'s rule, else its own."""
    compiled, eager = EAGER_TORCHTITAN
    if stack == compiled and "torchtitan" in source and not TORCH_COMPILE.search(notes):
        return eager
    return stack


def load_independent_runs() -> pd.DataFrame:
    """independent_runs.csv: publishers other than the calibration's (torchtitan's benchmark
    tables and DeepEP page, Trainy's H200 run, the Llama 3 paper's 405B scaling table, Intel's Gaudi 2 table), held
    out: no row is fitted.  A row's ``stack`` cell names its stack (torchtitan rows without
    torch.compile: the eager stack, :func:`eager_torchtitan_stack`); ``unexpressible`` a
    recipe no planner input states; ``excluded`` a row its source does not pin down."""
    frame = _modern_frame("independent_runs.csv", "independent-runs", lambda r: False,
                          lambda c: next(n for n, rule in INDEPENDENT_GROUPS if rule(c)))
    frame["stack"] = [eager_torchtitan_stack(c.stack, c.source, c.notes)
                      for c in frame.itertuples()]
    return frame


def _modern_frame(file: str, dataset: str, fit, group) -> pd.DataFrame:
    """Cases of a CSV in modern_runs.csv's columns (optional ``stack``, ``unexpressible``,
    ``excluded`` columns): ``fit(row)`` says whether a row is fitted, ``group(case)`` its
    group."""
    catalog = load_catalog()
    runs = pd.read_csv(DATA_DIR / file, dtype=str, keep_default_na=False)
    rows = []
    for r in runs.itertuples(index=False):
        shape = modern_shape(r, catalog)
        tp, pp, cp = int(_num(r.tp)), int(_num(r.pp)), int(_num(r.cp))
        network = MODERN_NETWORK.search(r.notes)
        scale_out = np.nan
        if network and r.hardware in catalog.accelerators:
            node = catalog.node(catalog.accelerator(r.hardware).node)
            scale_out = (int(network.group(1)) * int(network.group(2)) * 1e9 / 8
                         / node.gpus_per_node)
        # ETP as the source states it (notes "ETP=1"), else Megatron-Core's default (TP)
        # when EP x TP folds over TP x CP x DP, else 1: the only size the layout allows
        etp = MODERN_ETP.search(r.notes)
        etp = int(etp.group(1)) if etp else _default_etp(tp, cp, int(_num(r.gpus)) // (
            tp * pp * cp), int(_num(r.ep)))
        # HSDP: the ZeRO state sharded within the GPUs the notes name (InternLM: a node)
        shard = MODERN_SHARD.search(r.notes)
        shard_group = int(shard.group(1)) // (tp * cp) if shard else np.nan
        case = _case(dataset=dataset, case_id=r.case_id, hardware=r.hardware,
                     **shape, gpus=int(_num(r.gpus)), tp=tp, pp=pp, vp=int(_num(r.vp)),
                     cp=cp, ep=int(_num(r.ep)), etp=etp,
                     micro_batch=int(_num(r.micro_batch)),
                     global_batch=int(_num(r.global_batch)),
                     recompute=recompute_kind(r.recompute, r.recompute),
                     zero=int(_num(r.zero)), shard_group=shard_group, flash=True,
                     sequence_parallel=float(tp > 1 and not MODERN_NO_SP.search(r.notes)),
                     precision=r.precision, scale_out_bytes_per_s=scale_out,
                     metric=r.metric, measured=_num(r.published), model=r.model,
                     notes=r.notes, fit=fit(r),
                     family=re.match(r"[a-z]*", r.model.lower()).group(0),
                     source=r.source,
                     stack=getattr(r, "stack", "") or modern_stack(r.source),
                     excluded=getattr(r, "excluded", ""),
                     # 'selective: mlp, layernorm': the modules a row's recompute names
                     **recompute_module_flags(r.recompute),
                     offloaded_activation_vectors=_offloaded_vectors(r.notes),
                     optimizer_bytes_per_param=_optimizer_bytes(r.notes),
                     **_attention_tiles(r.notes))
        stated = getattr(r, "unexpressible", "")
        case["unexpressible"] = stated
        rows.append(case)
    frame = pd.DataFrame(rows)
    frame["group"] = [group(c) for c in frame.itertuples()]
    # the planner's own reasons for every row its source pins down (an excluded row keeps
    # only the reason its data file states)
    frame["unexpressible"] = ["; ".join(x for x in (c.unexpressible, "" if c.excluded else
                                                    modern_unexpressible(c, catalog)) if x)
                              for c in frame.itertuples()]
    return frame


# ---- MoE runs (issue 27): moe_runs.csv ------------------------------------------------

#: Model of a moe_runs.csv row -> (catalog model id, family).  Families are the units of the
#: leave-one-family-out error: a family's rows are predicted by a calibration that never saw
#: them (Kimi K2 is DeepSeek-V3's architecture from another lab: a family of its own).
MOE_MODELS = {
    "DeepSeek-V3": ("deepseek-v3", "deepseek"), "Kimi-K2": ("kimi-k2", "kimi"),
    "Qwen3-30B-A3B": ("qwen3-30b-a3b", "qwen3"), "Qwen3-235B-A22B": ("qwen3-235b-a22b", "qwen3"),
    "Qwen3-Next-80B-A3B": ("qwen3-next-80b-a3b", "qwen3"),
    "Grok-1-314B": ("grok1-314b", "grok"), "Mixtral-8x7B": ("mixtral-8x7b", "mixtral"),
    "Mixtral-8x22B": ("mixtral-8x22b", "mixtral"),
    "Llama4-Maverick-400B(E128)": ("llama4-maverick", "llama4"),
    "Llama4-Scout(E16)": ("llama4-scout", "llama4"),
    "MegaScale-MoE-internal-352B": ("megascale-moe-352b", "megascale"),
    "GPT-OSS-120B": ("gpt-oss-120b", "gpt-oss"),
}
MOE_HARDWARE = {"H100": "h100-sxm", "H800": "h800", "B200": "b200", "GB200": "gb200",
                "GB300": "gb300"}
#: What no planner input can state yet (the data-file column ``excluded`` holds the rows
#: whose source does not pin the measurement down).
MOE_UNEXPRESSIBLE: dict[str, str] = {}
#: Groups of moe-runs (first match wins): the stack a row runs on, by accelerator generation.
#: NVIDIA's baseline MoE configuration (NCCL all-to-all, eager launches): the generic stack
#: and steps 1-3 of the GB200 guide (DeepEP from step 4)
MOE_BASELINE_STACKS = ("megatron-core-moe-baseline",
                       *(f"megatron-core-moe-gb200-guide-{i:02d}" for i in (1, 2, 3)))
MOE_GROUPS = (
    ("MoE Blackwell tuned", lambda r: r.hardware in BLACKWELL_IDS
     and r.stack not in MOE_BASELINE_STACKS),
    ("MoE Blackwell baseline", lambda r: r.hardware in BLACKWELL_IDS),
    ("MoE Hopper tuned", lambda r: r.stack not in MOE_BASELINE_STACKS),
    ("MoE Hopper baseline", lambda r: True),
)
BLACKWELL_IDS = ("b200", "gb200", "b300", "gb300")
#: Evidence in a row's ``software`` cell: CUDA graphs on (TE partial graphs, cuda_graphs true,
#: CUDA_GRAPH default true, "run with CUDA Graphs enabled"), the DeepEP / HybridEP dispatcher,
#: the EP all-to-all 1F1B overlap; and of graphs off, which wins over a mention of graphs.
MOE_GRAPHS_ON = re.compile(r"cuda[_ ]graphs? ?(?:true|=attn|scope|default true)|TE (?:partial )?"
                           r"cuda graphs|cuda_graph_impl=transformer_engine|CUDA Graphs enabled"
                           r"|CUDA graphs true", re.I)
MOE_GRAPHS_OFF = re.compile(r"cuda[_ ]graphs?\s*[= ]\s*(?:false|none)|CUDA_GRAPH default false",
                            re.I)
MOE_FAST_A2A = re.compile(r"deepep|hybridep", re.I)
MOE_HYBRIDEP = re.compile(r"hybridep", re.I)
# a row of NVIDIA's DeepSeek-V3 GB200 optimisation guide states its step ("step 4/13 cumulative"):
# it runs on that step's stack (hardware_catalog/data/stacks/megatron-core-moe-gb200-guide-NN.toml,
# each the step before with only what the step changed)
MOE_GB200_GUIDE_STEP = re.compile(r"\bstep (\d+)/13 cumulative")
MOE_A2A_OVERLAP = re.compile(r"moe_a2a_overlap=True|1F1B overlap on|A2A 1F1B overlap", re.I)
MOE_FSDP2 = re.compile(r"FSDP2", re.I)
#: Routing a row states: token dropping with padding to the capacity (NeMo 25.09's
#: 'MoE routing: token-drop', dgxc's 'capacity factor 1.0 with padding'), and forced
#: balance (Megatron-Core --moe-router-force-load-balancing, the tables' footnote); in the
#: ``software`` cell or the notes (MegaScale-MoE's s6.1 text).
MOE_TOKEN_DROP = re.compile(r"routing: token-drop|capacity factor ([\d.]+)", re.I)
MOE_FORCE_BALANCE = re.compile(r"force[- _]?(?:load[- _])?balanc", re.I)
#: A Megatron-Bridge 25.11 row on GB200/GB300 whose own settings no config of the period
#: holds ran the period's GB200/GB300 configuration: every 25.11 GB200/GB300 workload base
#: config uses HybridEP and TE CUDA graphs (scripts/performance/configs, the rows' notes).
MOE_BRIDGE_2511_UNSTATED = re.compile(r"25\.11 container;\s*(?:settings for this layout not in "
                                      r"configs of the period)?\s*$")
#: Run-model inputs a case may set (NaN: the catalog's / execution.toml's): a moe_runs.csv
#: row's routing and recompute modules, a modern or independent row's recompute modules,
#: offloaded activations and attention tiles (from its recompute cell and notes).
CASE_INPUTS = ("routed_node_limit", "token_drop", "capacity_factor", "expert_load_cv",
               "recompute_norms", "recompute_moe_act", "recompute_mla_up_proj",
               "recompute_mlp", "recompute_moe", "recompute_core_attn",
               "offloaded_activation_vectors", "optimizer_bytes_per_param",
               "attention_block_tokens", "attention_block_tokens_bwd")
#: Megatron-Core's recompute modules (planner.engine.inputs.recompute_modules, the flag
#: each sets) and the other names the rows of moe_runs.csv give them; a shared-expert-only
#: recompute is not modelled (its tensors stay counted).
RECOMPUTE_MODULES = {
    **recompute_modules.MODULES,
    "norm": "recompute_norms", "rmsnorm": "recompute_norms", "act": "recompute_moe_act",
    "up_proj": "recompute_mla_up_proj", "mla up-projection": "recompute_mla_up_proj",
    "shared_expert": None, "shared_experts": None}


def recompute_kind(cell: str, other: str) -> str:
    """The recompute of a data file's cell: ``selective`` or ``full`` where it starts so
    (``selective: <modules>`` included, :func:`recompute_module_flags`), else ``other``."""
    return next((k for k in ("selective", "full") if cell.startswith(k)), other)


def recompute_module_flags(cell: str) -> dict[str, float]:
    """The run-model flags of a ``selective: <modules>`` recompute cell (the modules before
    any parenthesis): 1 for each module listed, NaN (the stack's value) for the others -
    Megatron-Core's stacks recompute none of them by default, and a paper's list (DeepSeek-V3)
    names what it adds to its stack's own policy."""
    flags = dict.fromkeys(recompute_modules.FLAGS, np.nan)
    head, sep, listed = cell.partition(":")
    if not sep or not head.strip().startswith("selective"):
        return flags
    names = [n.strip().lower() for n in listed.split("(")[0].split(",") if n.strip()]
    unknown = [n for n in names if n not in RECOMPUTE_MODULES]
    if unknown:
        raise ValueError(f"moe_runs.csv: unknown recompute module(s) {unknown} in {cell!r}")
    # a list replaces Megatron-Core's default ['core_attn'] (TransformerConfig
    # recompute_modules): the attention core is recomputed only where the list names it
    flags["recompute_core_attn"] = 0.0
    for n in names:
        if RECOMPUTE_MODULES[n]:
            flags[RECOMPUTE_MODULES[n]] = 1.0
    return flags
MOE_SAME = re.compile(r";\s*same(?: yaml settings)?\s*$")


#: Rows the project's copy appends to the shared file (``software`` starts 'capplan ADDED
#: row'): held out - no calibration, leave-one-out refit or speedup fit sees them as fit rows.
MOE_APPENDED = re.compile(r"^capplan ADDED row;")

#: DeepSeek's own framework (HAI-LLM: DualPipe, FP8, its all-to-all kernels)
MOE_HAI_LLM = re.compile(r"\bHAI-LLM\b")


def moe_stack(software: str) -> str:
    """The software stack (``--stack``) a moe_runs.csv row ran on, from its ``software`` cell.

    PyTorch FSDP2 with DeepEP (NeMo AutoModel) -> ``nemo-automodel-fsdp2``, without it
    ``torchtitan-fsdp2``; the EP all-to-all overlap on -> ``megatron-core-moe-a2a-overlap``
    with DeepEP named, else ``megatron-core-moe-a2a-overlap-alltoall`` (NCCL); the HybridEP
    dispatcher -> ``megatron-core-moe-hybridep``; CUDA graphs -> ``megatron-core-moe-tuned``
    with DeepEP named, else ``megatron-core-moe-graphs`` (NCCL all-to-all, the Megatron-Bridge
    and NeMo recipes' dispatcher where no flex backend is set); DeepSeek's HAI-LLM ->
    ``deepseek-hai-llm-2024``; DeepEP without CUDA graphs ->
    ``megatron-core-moe-deepep``; neither -> ``megatron-core-moe-baseline`` (NVIDIA's baseline
    MoE configuration: eager launches, NCCL all-to-all).  A step of NVIDIA's DeepSeek-V3 GB200
    optimisation guide ('step N/13 cumulative') -> ``megatron-core-moe-gb200-guide-NN``, the
    stack with the settings of that step.
    """
    if MOE_HAI_LLM.search(software):
        return "deepseek-hai-llm-2024"
    if step := MOE_GB200_GUIDE_STEP.search(software):
        return f"megatron-core-moe-gb200-guide-{int(step.group(1)):02d}"
    if MOE_FSDP2.search(software):
        return "nemo-automodel-fsdp2" if MOE_FAST_A2A.search(software) else "torchtitan-fsdp2"
    fast = MOE_FAST_A2A.search(software)
    if MOE_A2A_OVERLAP.search(software):
        return "megatron-core-moe-a2a-overlap" if fast else "megatron-core-moe-a2a-overlap-alltoall"
    graphs = MOE_GRAPHS_ON.search(software) and not MOE_GRAPHS_OFF.search(software)
    if MOE_HYBRIDEP.search(software):
        return "megatron-core-moe-hybridep"
    if graphs:
        return "megatron-core-moe-tuned" if fast else "megatron-core-moe-graphs"
    if MOE_FAST_A2A.search(software):
        return "megatron-core-moe-deepep"
    return "megatron-core-moe-baseline"


def _moe_mtp(notes: str, software: str) -> float:
    """MTP modules trained: 1 where the row says so ('w/ MTP', 'with MTP', 'MTP D=1', a
    pipeline layout with an 'm' stage), else 0 ('w/o MTP', '(no MTP)', or nothing said)."""
    text = f"{notes} {software}"
    if re.search(r"w/o MTP|no MTP", text):
        return 0.0
    if re.search(r"w/ MTP|with MTP|MTP D=1|includes MTP|\(tt\|\)\*\d+mL", text):
        return 1.0
    return 0.0


def _moe_zero(text: str) -> int:
    """ZeRO stage of a row: FSDP -> 3; otherwise the distributed optimizer (ZeRO-1), which
    every Megatron-Core / NeMo / Megatron-Bridge recipe and HAI-LLM's ZeRO-1 DP use."""
    return 3 if "fsdp" in str(text).lower() and "FSDP=0" not in str(text) else 1


def _moe_value(cell, default: float) -> float:
    v = _num(cell)
    return v if np.isfinite(v) else default


def load_moe_runs() -> pd.DataFrame:
    """moe_runs.csv: 115 MoE rows (Megatron-Bridge, Megatron-LM guide, dgxc, ModelZoo, ...).

    Each row as a user would state it: ``--model`` (the catalog model of its name),
    ``--hardware``, TP/PP/VP/CP/EP/ETP, ZeRO, global and micro-batch, sequence, precision
    (every FP8 recipe - per-tensor, MXFP8, blockwise - at the FP8 peak), recompute (a
    selective module list = selective, its modules as the stack's recompute flags:
    :func:`recompute_module_flags`) and ``--stack`` from its ``software`` cell
    (:func:`moe_stack`).  Empty VP/CP = 1; empty ETP = Megatron-Core's default; an empty
    micro-batch (ModelZoo's long-sequence rows) = 1, Megatron's default.  Every row of the
    shared file is fit (the calibration sees them all), the rows the project appends
    (:data:`MOE_APPENDED`) are held out; the cross-validated error is leave-one-family-out
    (:mod:`planner.analysis.calibration`).
    """
    catalog = load_catalog()
    runs = pd.read_csv(DATA_DIR / "moe_runs.csv", dtype=str, keep_default_na=False)
    rows, stack = [], ""
    for r in runs.itertuples(index=False):
        model_id, family = MOE_MODELS.get(r.model, ("", r.model.split("-")[0].lower()))
        # a cell ending "same" / "same yaml settings" refers to the row above (same table)
        stack = stack if MOE_SAME.search(r.software) else moe_stack(r.software)
        if MOE_BRIDGE_2511_UNSTATED.search(r.software) and r.hardware in ("GB200", "GB300"):
            stack = "megatron-core-moe-hybridep"
        seq = _moe_value(r.seq_len, 4096.0)
        shape = {}
        if model_id:
            shape = model_inputs(catalog.model(model_id), int(seq))
            shape["mtp_layers"] = _moe_mtp(r.notes, r.software) if shape["mtp_layers"] else 0.0
        tp, pp, cp = (_moe_value(r.tp, 1.0), _moe_value(r.pp, 1.0), _moe_value(r.cp, 1.0))
        gpus = _moe_value(r.gpus, np.nan)
        ep = _moe_value(r.ep, 1.0)
        dp = gpus // (tp * pp * cp) if np.isfinite(gpus) else np.nan
        etp = _moe_value(r.etp, np.nan)
        if not np.isfinite(etp):
            etp = _default_etp(int(tp), int(cp), int(dp), int(ep)) if np.isfinite(dp) else 1
        precision = "bf16" if r.precision.strip().lower() == "bf16" else "fp8"
        recompute = recompute_kind(r.recompute, "none")
        if not r.recompute and "activation_checkpointing true" in f"{r.software} {r.notes}":
            recompute = "full"  # NeMo AutoModel configs: whole-layer activation checkpointing
        metric = {"tflops_per_gpu": "model_tflops_per_gpu"}.get(r.metric, r.metric)
        drop = MOE_TOKEN_DROP.search(f"{r.software} {r.notes}")
        routing = {"token_drop": float(bool(drop)),
                   "capacity_factor": float(drop.group(1)) if drop and drop.group(1) else 1.0,
                   # forced balance: multinomial noise only; else a trained router's spread
                   "expert_load_cv": 0.0 if MOE_FORCE_BALANCE.search(f"{r.software} {r.notes}")
                   else np.nan}
        case = _case(dataset="moe-runs", case_id=r.case_id,
                     hardware=MOE_HARDWARE.get(r.hardware, r.hardware.lower()),
                     **shape, gpus=gpus, tp=tp, pp=pp, vp=_moe_value(r.vp, 1.0), cp=cp, ep=ep,
                     etp=etp, micro_batch=_moe_value(r.micro_batch, 1.0),
                     global_batch=_moe_value(r.global_batch, np.nan), recompute=recompute,
                     zero=_moe_zero(r.zero), flash=True, sequence_parallel=float(tp > 1),
                     precision=precision, metric=metric, measured=_num(r.published),
                     model=r.model, family=family, notes=r.notes,
                     fit=not MOE_APPENDED.search(r.software), source=r.source,
                     stack=stack, **routing, **recompute_module_flags(r.recompute))
        # excluded (data file): the row's own source does not pin the measurement down
        case["excluded"] = r.excluded
        reason = MOE_UNEXPRESSIBLE.get(r.case_id, "")
        if not reason and not model_id and not r.excluded:
            reason = f"model '{r.model}' is not in the catalog"
        case["unexpressible"] = reason
        rows.append(case)
    frame = pd.DataFrame(rows)
    frame["group"] = [next(n for n, rule in MOE_GROUPS if rule(c)) for c in frame.itertuples()]
    todo = (frame.unexpressible == "") & (frame.excluded == "")
    frame.loc[todo, "unexpressible"] = [modern_unexpressible(c, catalog)
                                        for c in frame[todo].itertuples()]
    return frame


# ---- fine-tuning runs (issue 43): finetune_runs.csv -----------------------------------

#: The source of a finetune_runs.csv row, by the start of its ``source`` cell: the groups
#: whose errors are reported one by one (each source predicted by parameters fitted on
#: other datasets only: no parameter is fitted on fine-tuning rows).
FINETUNE_SOURCES = (("NVIDIA/NeMo", "NeMo 24.07 (H100, FP8)"),
                    ("pytorch/torchtune", "torchtune (A100, FSDP)"),
                    ("QwenLM/Qwen", "Qwen README (A100, HF PEFT)"))
#: The method options of a case (planner.engine.inputs.method); absent: pre-training.
FINETUNE_METHOD_COLUMNS = ("method", "lora_rank", "lora_targets")


def load_finetune_runs() -> pd.DataFrame:
    """finetune_runs.csv: published SFT, LoRA and QLoRA throughputs (NeMo 24.07, torchtune,
    Qwen); the whole shape from the row (gated MLP, untied embeddings), flash attention,
    sequence parallelism when TP > 1, the method as published."""
    runs = pd.read_csv(DATA_DIR / "finetune_runs.csv", dtype=str, keep_default_na=False)
    rows = []
    for r in runs.itertuples(index=False):
        tp = int(_num(r.tp))
        rows.append(_case(
            dataset="finetune-runs", case_id=r.case_id, hardware=r.hardware,
            layers=int(_num(r.layers)), hidden=int(_num(r.hidden)), heads=int(_num(r.heads)),
            kv_heads=int(_num(r.kv_heads)), ffn=int(_num(r.ffn)), mlp_matrices=3.0,
            vocab=int(_num(r.vocab)), embedding_matrices=float(_num(r.embedding_matrices)),
            seq_len=int(_num(r.seq_len)), gpus=int(_num(r.gpus)), tp=tp, pp=int(_num(r.pp)),
            micro_batch=int(_num(r.micro_batch)), global_batch=int(_num(r.global_batch)),
            recompute=r.recompute, zero=int(_num(r.zero)), flash=True,
            sequence_parallel=float(tp > 1), precision=r.precision, dropout=0,
            metric=r.metric, measured=_num(r.published), model=r.model, notes=r.notes,
            source=r.source, stack=r.stack, method=r.method,
            lora_rank=float(_num(r.lora_rank)) if r.lora_rank else np.nan,
            lora_targets=r.lora_targets, excluded=r.excluded,
            group=next(name for start, name in FINETUNE_SOURCES if r.source.startswith(start)),
            family=r.model.split("-")[0]))
    return pd.DataFrame(rows)


def _method_inputs(cases: pd.DataFrame) -> dict:
    """Run-model inputs of the cases' training methods (one array each; a case without a
    method: pre-training)."""
    if "method" not in cases:
        return {}
    per_case = []
    for c in cases.itertuples():
        method = c.method if isinstance(c.method, str) and c.method else "pretrain"
        lora = method in LORA_METHODS
        spec = method_spec(method, int(c.lora_rank) if lora else None,
                           c.lora_targets if lora else None)
        per_case.append(method_inputs(spec, float(c.seq_len), float(c.seq_len)))
    return {k: np.array([d[k] for d in per_case]) for k in per_case[0]}


DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("sc21", "Megatron-LM on A100: SC21 Table 1 + GPT-3 175B example (TFLOP/s per "
            "GPU), Korthikanti 2022 Table 5, Megatron-LM's 2020 README (V100 and A100) and "
            "MT-NLG 530B (iteration time)",
            "TFLOP/s per GPU or iteration s", load_sc21, 0.06),
    Dataset("vtrain-multi", "vTrain multi-node, 64-512 A100 (iteration time)",
            "iteration time [s]", load_vtrain_multi, 0.10),
    Dataset("vtrain-single", "vTrain single-node, 2-8 A100 (iteration time)",
            "iteration time [s]", load_vtrain_single, 0.12),
    Dataset("llm-foundry-a100", "llm-foundry MPT, A100 bf16 (MFU = tokens/s per GPU)",
            "tokens/s per GPU", load_llm_foundry_a100, 0.10),
    Dataset("llm-foundry-h100", "llm-foundry MPT, H100 bf16 (MFU = tokens/s per GPU)",
            "tokens/s per GPU", load_llm_foundry_h100, 0.10),
    Dataset("full-runs", "Production runs: BLOOM-176B step time, OPT-175B TFLOP/s",
            "s or TFLOP/s", load_full_runs, None),
    Dataset("modern-runs", "2024-2026 stacks: NeMo/Megatron-Core, InternLM, torchtitan on "
            "H100, B200, GB200, A100 (step time or tokens/s per GPU)",
            "s or tokens/s per GPU", load_modern_runs, 0.10),
    Dataset("independent-runs", "Other publishers, held out: torchtitan's benchmark tables "
            "(H100 96GB, FSDP2/TP/PP/CP, BF16 and Float8; GB200 at BF16, MXFP8 and NVFP4), "
            "Trainy's H200 run, the Llama 3 "
            "paper's 405B scaling table, Intel's Gaudi 2 and AMD's MI355X runs (tokens/s or "
            "model TFLOP/s per GPU)",
            "tokens/s or TFLOP/s per GPU", load_independent_runs, None),
    Dataset("moe-runs", "2025 MoE training: Megatron-Bridge, Megatron-LM's GB200 guide, dgxc, "
            "ModelZoo, AutoModel on H100, B200, GB200, GB300 (tokens/s, step time or model "
            "TFLOP/s per GPU)", "tokens/s, s or TFLOP/s per GPU", load_moe_runs, 0.15),
    Dataset("finetune-runs", "Fine-tuning: SFT, LoRA, QLoRA (NeMo 24.07, torchtune, Qwen) on "
            "H100 and A100 (tokens/s per GPU or step time)", "tokens/s per GPU or s",
            load_finetune_runs, 0.15),
)}


def resolve_names(names) -> list[str]:
    """Dataset names from a list (each may be a comma list); did-you-mean on unknown."""
    out = []
    for item in names or ():
        for name in (s.strip() for s in str(item).split(",")):
            if not name:
                continue
            if name == "all":
                out.extend(DATASETS)
                continue
            if name not in DATASETS:
                raise did_you_mean("dataset", name, DATASETS)
            out.append(name)
    return list(dict.fromkeys(out)) or list(DATASETS)


def with_shape_defaults(cases: pd.DataFrame) -> pd.DataFrame:
    """Cases with every SHAPE_DEFAULTS column, missing values filled with the default."""
    out = cases.copy()
    for name, default in SHAPE_DEFAULTS.items():
        fill = {"heads": out["heads"], "4h": 4 * out["hidden"],
                "dp": out["gpus"] // (out["tp"] * out["pp"] * out.get("cp", 1.0)),
                "h/a": out["hidden"] / out["heads"],
                "seq_len": out["seq_len"]}.get(default, default)
        if name not in out:
            out[name] = fill
        else:
            out[name] = out[name].where(out[name].notna(), fill)
    return out


def load_cases(names=None) -> pd.DataFrame:
    frames = [DATASETS[n].loader() for n in resolve_names(names)]
    return with_shape_defaults(pd.concat(frames, ignore_index=True))


# ---- prediction ----------------------------------------------------------------------

def _excluded(cases: pd.DataFrame) -> pd.Series:
    """Each case's exclusion reason ("" = not excluded; cases of loaders without one)."""
    if "excluded" not in cases:
        return pd.Series("", index=cases.index)
    return cases["excluded"].fillna("").astype(str)


def predictable(cases: pd.DataFrame) -> pd.Series:
    """Cases the planner predicts: neither unexpressible nor excluded by their data file."""
    return (cases.unexpressible == "") & (_excluded(cases) == "")


_MODEL_TEMPLATE = "megatron-1.7b"  # any catalog model; every shape input is overridden


def _case_inputs(cases: pd.DataFrame, hardware: str, flash: bool, reliability: str,
                 precision: str, stack: str, catalog) -> tuple[dict, tuple]:
    """The kernel inputs of one group of cases before the calibration's ``params``, and
    ``late``: the inputs that apply after them (the routed node limit, and the MoE routing
    inputs the cases state, NaN where not stated)."""
    x = base_inputs(catalog, RunChoices(model=_MODEL_TEMPLATE, hardware=hardware, reliability=reliability,
                    precision=precision, stack=stack))
    shape = ("layers", "hidden", "heads", "kv_heads", "ffn", "mlp_matrices", "vocab", "seq_len",
             "embedding_matrices", "moe_layers", "experts", "experts_per_token",
             "shared_experts", "moe_ffn", "global_batch", *ATTENTION_SHAPE)
    col = {k: cases[k].to_numpy(dtype=float) for k in
           (*shape, "gpus", "tp", "pp", "vp", "cp", "ep", "micro_batch", "zero",
            "shard_group", "sequence_parallel")}
    layout = {"gpus": col["gpus"], "tp": col["tp"], "pp": col["pp"],
              "dp": col["gpus"] // (col["tp"] * col["pp"] * col["cp"]),
              "cp": col["cp"], "ep": col["ep"], "vp": col["vp"],
              # expert TP: the case's, else Megatron-Core's default (= TP)
              "etp": (cases["etp"].to_numpy(dtype=float) if "etp" in cases else
                      np.full_like(col["tp"], np.nan)),
              "micro_batch": col["micro_batch"],
              "recompute": cases["recompute"].map(RECOMPUTE_CODES).to_numpy(),
              "zero": col["zero"], "shard_group": col["shard_group"],
              "sequence_parallel": col["sequence_parallel"]}
    layout["etp"] = np.where(np.isnan(layout["etp"]), col["tp"], layout["etp"])
    x.update(layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"], layers=1.0,
                          flash_attention=flash))
    x["stage_layers"] = fullest_stage_layers(col["layers"], col["pp"], col["vp"])
    x.update({k: col[k] for k in shape})
    x["dropout_masks"] = cases["dropout"].to_numpy(dtype=float)
    x.update(_method_inputs(cases))  # LoRA, QLoRA, SFT (finetune-runs); else pre-training
    for name, column in (("dp_overlap", "dp_overlap"),
                         ("scale_out_bandwidth_bytes_per_s", "scale_out_bytes_per_s")):
        v = cases[column].to_numpy(dtype=float)
        if np.isfinite(v).any():
            x[name] = np.where(np.isfinite(v), v, x[name])
    # what a case states (CASE_INPUTS: MoE routing - node limit (no limit: k), token
    # dropping, forced balance - recompute modules, offloading, attention tiles) - over
    # the execution defaults and the calibration's values
    stated = {name: cases[name].to_numpy(dtype=float) for name in CASE_INPUTS
              if name in cases}
    return x, (col["experts_per_token"], stated)


def _params_read(hardware: str, reliability: str, precision: str, stack: str) -> tuple:
    """The keys of ``params`` (see :func:`predict`) a group of cases reads: the accelerator's
    GEMM efficiency under every GEMM precision (keyed ``hardware:<GEMM precision>``, not by
    the recipe: an ``fp8-cs`` or ``mxfp8`` case reads ``hardware:fp8``, and its recipe's
    BF16 share the plain key), the execution terms, its reliability profile and stack."""
    return (hardware, *(f"{hardware}:{p}" for p in GEMM_PRECISIONS), "*",
            f"rel:{reliability}", f"stack:{stack}", f"stack:{stack}@{hardware}")


def _with_params(x: dict, late: tuple, hardware: str, reliability: str, precision: str,
                 stack: str, catalog, params: dict | None) -> dict:
    """:func:`_case_inputs`' ``x`` with ``params`` applied, then the cases' own ``late``
    inputs (a new dict: ``x`` is not changed)."""
    x = dict(x)
    params = params or {}
    # GEMM efficiencies given for this accelerator, by GEMM precision (the plain key holds
    # BF16's): the case's recipe takes them as it takes the catalog's (its GEMM precision,
    # rate factor and BF16 share), so a row-wise FP8 or NVFP4 case is not given BF16's
    replaced = {p: params[key]["gemm_max_efficiency"] for p, key in
                (("bf16", hardware), *((p, f"{hardware}:{p}") for p in GEMM_PRECISIONS))
                if "gemm_max_efficiency" in params.get(key, {})}
    for name, value in params.get(hardware, {}).items():
        if name != "gemm_max_efficiency":
            x[name] = value
    if replaced:
        gemm = recipe_gemm_inputs(catalog.accelerator(hardware), precision, replaced)
        for name in ("peak_flops_per_s", "gemm_max_efficiency", "attention_gemm_max_efficiency"):
            x[name] = gemm[name]
    # a replaced accelerator efficiency is the accelerator's own: the stack's share of it
    # (catalog, else the one given below) applies again
    factor = 1.0
    if replaced and stack in catalog.stacks:
        factor = stack_factor(catalog.stack(stack), "gemm_efficiency_factor", hardware).value
    # a stack's own factor on this accelerator (catalog on_accelerator) is not replaced by
    # a value given for the stack in general, only by one given for it on this accelerator
    own = catalog.stack(stack).on_accelerator.get(hardware) if stack in catalog.stacks else None
    for key in ("*", f"rel:{reliability}", f"stack:{stack}", f"stack:{stack}@{hardware}"):
        for name, value in (params or {}).get(key, {}).items():
            if key == f"stack:{stack}" and getattr(own, name, None) is not None:
                continue
            if name == "gemm_efficiency_factor":  # a stack's share of the GEMM efficiency
                factor = value
            else:
                x[name] = value
    x["gemm_max_efficiency"] = x["gemm_max_efficiency"] * factor
    x["attention_gemm_max_efficiency"] = x["attention_gemm_max_efficiency"] * factor
    x["routed_node_limit"], stated = late
    for name, v in stated.items():
        x[name] = np.where(np.isfinite(v), v, x[name])
    return x


#: The kernel outputs :meth:`CaseGroup.predicted` reads.
METRIC_OUTPUTS = ("step_time_s", "tflops_per_gpu")


class CaseGroup:
    """One group of :func:`predict` (cases of one accelerator, attention kernel, reliability
    profile, precision and stack) with everything that does not depend on ``params`` built
    once: the kernel inputs and the FLOP counts of its metrics."""

    def __init__(self, cases: pd.DataFrame, key: tuple, catalog):
        hw, flash, rel, precision, stack = key
        self.key, self.catalog = key, catalog
        self.name = (key, tuple(cases.index))
        self.reads = _params_read(hw, rel, precision, stack)
        self.x, self.late = _case_inputs(cases, hw, bool(flash), rel, precision, stack, catalog)
        g = cases
        self.flops_iter = narayanan_flops_per_iteration(
            g.global_batch.to_numpy(float), g.seq_len.to_numpy(float), g.layers.to_numpy(float),
            g.hidden.to_numpy(float), g.vocab.to_numpy(float),
            (g.recompute == "full").to_numpy(float))
        self.model_flops_iter = narayanan_flops_per_iteration(
            g.global_batch.to_numpy(float), g.seq_len.to_numpy(float), g.layers.to_numpy(float),
            g.hidden.to_numpy(float), g.vocab.to_numpy(float), 0.0)
        self.gpus = g.gpus.to_numpy(float)
        self.tokens = g.global_batch.to_numpy(float) * g.seq_len.to_numpy(float)
        self.metric = g.metric.to_numpy()

    def inputs(self, params: dict | None) -> dict:
        """The kernel inputs under ``params`` (see :func:`predict`)."""
        hw, _, rel, precision, stack = self.key
        return _with_params(self.x, self.late, hw, rel, precision, stack, self.catalog, params)

    def params_read(self, params: dict | None) -> tuple:
        """The part of ``params`` this group's inputs depend on (hashable): two ``params``
        with the same part predict the same values."""
        return tuple(tuple(sorted((params or {}).get(k, {}).items())) for k in self.reads)

    def predicted_for(self, params: dict | None) -> np.ndarray:
        """Each case's predicted metric under ``params`` (the kernel's statements these
        outputs need only: the same values as :func:`evaluate_inputs`', bit for bit)."""
        return self.predicted(evaluate_columns(self.inputs(params), METRIC_OUTPUTS))

    def predicted(self, r: dict) -> np.ndarray:
        """Each case's predicted metric from the kernel outputs ``r`` of :meth:`inputs`."""
        step = r["step_time_s"]
        metric_values = {
            "step_time_s": step,
            "tflops_per_gpu": self.flops_iter / step / self.gpus / 1e12,
            "tflops_model_per_gpu": self.model_flops_iter / step / self.gpus / 1e12,
            # the run model's own model-FLOP count (MoE: routed and shared experts, router;
            # MLA; MTP): what Megatron-Core's num_floating_point_operations reports
            "model_tflops_per_gpu": r["tflops_per_gpu"],
            "tokens_per_s_per_gpu": self.tokens / step / self.gpus,
        }
        return np.select([self.metric == k for k in metric_values],
                         list(metric_values.values()), np.nan)


def case_groups(cases: pd.DataFrame, catalog=None,
                built: dict | None = None) -> list[tuple[np.ndarray, CaseGroup]]:
    """The groups :func:`predict` evaluates ``cases`` (with their shape defaults) in, in its
    order, each with its cases' positions in ``cases``.

    ``built``: groups built before, by ``CaseGroup.name`` (its key and its cases' index
    labels), reused and added to; share it only between frames cut from one frame.
    """
    if catalog is None:
        catalog = load_catalog()
    built = {} if built is None else built
    expressible = cases[predictable(cases).to_numpy()]
    position = pd.Series(np.arange(len(cases)), index=cases.index)
    keys = ["hardware", "flash", "reliability", "precision", "stack"]
    out = []
    for key, idx in expressible.groupby(keys).groups.items():
        name = (key, tuple(idx))
        if name not in built:
            built[name] = CaseGroup(cases.loc[idx], key, catalog)
        out.append((position[idx].to_numpy(), built[name]))
    return out


def predict(cases: pd.DataFrame, catalog=None, params: dict | None = None) -> pd.DataFrame:
    """Cases with ``predicted``, ``error`` (predicted/measured - 1) and model outputs.

    ``params`` optionally replaces kernel inputs per accelerator id (``{"a100-80gb":
    {"gemm_max_efficiency": 0.8}}``, ``"<id>:<precision>"`` for one precision on it; key
    ``"*"`` for all, ``"rel:<profile>"`` for the cases of one reliability profile,
    ``"stack:<id>"`` for those of one software stack, ``"stack:<id>@<accelerator>"`` for
    those of one stack on one accelerator) - used by the calibration.  A replaced
    ``gemm_max_efficiency`` is the accelerator's own; a ``gemm_efficiency_factor`` given
    for the stack then scales it (as the catalog's stack factor scales the catalog value).
    """
    out = with_shape_defaults(cases)
    outputs = ("step_time_s", "memory_per_gpu_bytes", "hbm_bytes", "activation_bytes", "mfu",
               *step_time_terms())
    # filled per group by position, assigned to the frame once (pandas .loc per group is slow)
    columns = {col: np.full(len(out), np.nan) for col in ("predicted", *outputs)}
    columns["fits"] = np.ones(len(out), bool)
    for at, group in case_groups(out, catalog):
        r = evaluate_inputs(group.inputs(params))
        columns["predicted"][at] = group.predicted(r)
        for col in outputs:
            columns[col][at] = r[col]
        columns["fits"][at] = r["fits"]
    out = out.assign(**columns)
    out["error"] = out["predicted"] / out["measured"] - 1
    return out


# ---- metrics -------------------------------------------------------------------------

def metrics(errors) -> dict:
    e = np.asarray(errors, dtype=float)
    e = e[np.isfinite(e)]
    if not len(e):
        return {"count": 0, "mape": float("nan"), "max_error": float("nan"),
                "bias": float("nan")}
    return {"count": int(len(e)), "mape": float(np.mean(np.abs(e))),
            "max_error": float(e[np.argmax(np.abs(e))]), "bias": float(np.mean(e))}


#: The cross-validation splits besides leave-one-family-out whose ``<split>_error`` columns
#: :func:`summarise` reads when present (planner/analysis/crossval.py): leave-one-source-out
#: and leave-one-accelerator-out.
CROSS_SPLITS = ("loso", "loao")


def summarise(pred: pd.DataFrame, worst: int = 3) -> list[dict]:
    """Per dataset: all rows, fit subset, held-out subset, the cross-validated errors
    (``lofo_error``, ``loso_error``, ``loao_error`` columns when present); plus the worst
    rows."""
    rows = []
    for name, g in pred.groupby("dataset", sort=False):
        m_all, m_fit, m_held = metrics(g.error), metrics(g.error[g.fit]), metrics(
            g.error[~g.fit])
        m_lofo = metrics(g["lofo_error"]) if "lofo_error" in g else metrics([])
        m_split = {split: metrics(g[f"{split}_error"]) if f"{split}_error" in g else
                   metrics([]) for split in CROSS_SPLITS}
        bad = g.reindex(g.error.abs().sort_values(ascending=False).index).head(worst)
        ds = DATASETS.get(name)
        rows.append({
            "dataset": name, "count": m_all["count"], "mape": m_all["mape"],
            "max_error": m_all["max_error"], "bias": m_all["bias"],
            "fit_count": m_fit["count"], "fit_mape": m_fit["mape"],
            "held_out_count": m_held["count"], "held_out_mape": m_held["mape"],
            "held_out_bias": m_held["bias"],
            "lofo_count": m_lofo["count"], "lofo_mape": m_lofo["mape"],
            "lofo_bias": m_lofo["bias"],
            **{f"{split}_{k}": m[k] for split, m in m_split.items()
               for k in ("count", "mape", "bias")},
            "target_mape": ds.target_mape if ds else None,
            "worst": [{"case": r.case_id, "measured": float(r.measured),
                       "predicted": float(r.predicted), "error": float(r.error)}
                      for r in bad.itertuples() if np.isfinite(r.error)],
            "unexpressible_count": int((g.unexpressible != "").sum()),
            "unexpressible": [{"case": r.case_id, "reason": r.unexpressible}
                              for r in g.itertuples() if r.unexpressible],
            "excluded_count": int((_excluded(g) != "").sum()),
            "excluded": [{"case": c, "reason": why} for c, why in zip(g.case_id, _excluded(g), strict=True)
                         if why],
            "groups": group_metrics(g),
        })
    return rows


def group_metrics(pred: pd.DataFrame) -> list[dict]:
    """MAPE per group of a dataset's predictions (datasets with a ``group`` column)."""
    if "group" not in pred or pred.group.isna().all():
        return []
    rows = []
    names = ([n for n, _ in (*MODERN_GROUPS, *INDEPENDENT_GROUPS, *MOE_GROUPS)]
             + [n for _, n in FINETUNE_SOURCES])
    for name in (n for n in names if (pred.group == n).any()):
        g = pred[pred.group == name]
        m = metrics(g.error)
        rows.append({"group": name, "rows": int(len(g)), "predicted": m["count"],
                     "unexpressible": int((g.unexpressible != "").sum()),
                     "excluded": int((_excluded(g) != "").sum()), "mape": m["mape"],
                     "bias": m["bias"], "max_error": m["max_error"],
                     "held_out_mape": metrics(g.error[~g.fit.astype(bool)])["mape"],
                     "lofo_mape": metrics(g["lofo_error"] if "lofo_error" in g else [])["mape"],
                     **{f"{split}_mape": metrics(g[f"{split}_error"] if f"{split}_error" in g
                                                 else [])["mape"] for split in CROSS_SPLITS}})
    return rows


# ---- memory, reliability and energy checks --------------------------------------------

#: Korthikanti et al. 2022 Fig. 1 activation memory per GPU (GiB; values as transcribed
#: in calculon-ai/calculon validation) for the Table 3 configurations: tensor parallel only
#: (no recompute) and sequence parallel + selective recompute; s = 2048.
KORTHIKANTI_FIG1 = {  # name: (a, h, L, t, p, b, v, none GiB, seq+sel GiB)
    "22B": (64, 6144, 48, 8, 1, 4, 1, 59.25, 9.5625),
    "175B": (96, 12288, 96, 8, 8, 1, 3, 66.84375, 12.3515625),
    "530B": (128, 20480, 105, 8, 35, 1, 3, 114.0234375, 23.076171875),
    "1T": (160, 25600, 128, 8, 64, 1, 1, 131.25, 26.5625),
}


def korthikanti_check(catalog=None) -> list[dict]:
    """Planner activation memory (first stage, layers only) vs Korthikanti Fig. 1."""
    rows = []
    for name, (a, h, L, t, p, b, v, none_gib, seqsel_gib) in KORTHIKANTI_FIG1.items():
        stage = L / p * m.inflight_microbatches_1f1b(p, 1e6) * m.interleaved_activation_factor(p, v)
        for label, sp_, stored, published in (("tp only", 0, 1, none_gib),
                                              ("seq-par + selective", 1, 0, seqsel_gib)):
            per_layer = m.activation_bytes_per_layer(2048, b, h, 4 * h, a, a, 2, t, sp_, stored,
                                                     1)
            got = stage * per_layer / 2**30
            rows.append({"model": name, "case": label, "published_gib": published,
                         "predicted_gib": float(got), "error": float(got / published - 1)})
    return rows


def memory_check(pred: pd.DataFrame) -> dict:
    """Every measured run ran, so none may be predicted not to fit; OOM rows must not fit."""
    ran = pred[pred.metric.notna() & pred.predicted.notna()]  # unexpressible: not predicted
    false_oom = ran[~ran.fits.astype(bool)]
    return {"runs": int(len(ran)), "predicted_oom_for_runs_that_ran": int(len(false_oom)),
            "examples": false_oom.case_id.head(5).tolist(),
            "reported_oom_rows": 0, "predicted_fit_for_reported_oom": 0}


def published_memory_check(pred: pd.DataFrame) -> list[dict]:
    """Predicted memory per GPU vs the peak memory a source publishes with its throughput
    (published_memory.csv; its rows are rows of ``pred``).  A published peak is the
    allocator's (reserved memory: its cache, the collectives' buffers and transient
    tensors besides what the model counts), so predictions run below it."""
    by_row = pred.set_index(["dataset", "case_id"])
    rows = []
    for run, o in data_rows("published_memory.csv").items():
        r = by_row.loc[(o["dataset"], run)]
        predicted_gib = float(r["memory_per_gpu_bytes"]) / 2**30
        rows.append({"run": run, "layout": f"TP{int(r.tp)} PP{int(r.pp)} CP{int(r.cp)} "
                     f"DP{int(r.gpus) // int(r.tp * r.pp * r.cp)}, micro-batch "
                     f"{int(r.micro_batch)}, {r.recompute} recompute",
                     "published_gib": float(o["published_memory_gib"]),
                     "predicted_gib": predicted_gib,
                     "ratio": predicted_gib / float(o["published_memory_gib"]),
                     "fits": bool(r["fits"])})
    return rows


#: Job sizes of the MTTF-vs-GPUs curve (docs/validation.md, tests/test_validation.py).
MTTF_GPUS = (8, 16, 32, 64, 128, 512, 1024, 2048, 4096, 8192, 16384)

#: Profiles of the curve and the accelerator each is evaluated on (8 GPUs per node).
MTTF_PROFILES = {"meta-rsc": "a100-80gb", "default": "h100-sxm"}

#: Published job MTTFs [h] by GPU count, from reliability.csv: rows rsc-mttf1024 (7.9 h at
#: 1,024 GPUs, "vs 47.7 days for 8-GPU jobs"), rsc-mttf16k (1.8 h projected at 16,384).
RSC_MTTF_ROWS = {8: ("rsc-mttf1024", 47.7 * 24), 1024: ("rsc-mttf1024", None),
                 16384: ("rsc-mttf16k", None)}


def job_mttf_s(profile: str, gpus: int, *, hardware: str | None = None, catalog=None) -> float:
    """The kernel's system MTBF [s] of a job of ``gpus`` GPUs under a reliability profile.

    Evaluated through the run model (a Llama 3 8B job, TP 8, one pipeline stage): the MTBF
    depends only on the GPU count, the node size and the profile's failure domains, so any
    layout gives the same value.
    """
    hardware = hardware or MTTF_PROFILES.get(profile, "h100-sxm")
    r = evaluate(catalog=catalog, model="llama3-8b", hardware=hardware, gpus=gpus,
                 tp=min(8, gpus), pp=1, global_batch=max(2048, gpus), micro_batch=1,
                 seq_len=4096, tokens=1e12, reliability=profile).iloc[0]
    return float(r["system_mtbf_s"])


def published_mttf_h(rel=None) -> dict[int, tuple[str, float]]:
    """GPU count -> (row id, published job MTTF [h]) from reliability.csv's rsc rows."""
    rel = reliability_rows().set_index("id") if rel is None else rel
    out = {}
    for gpus, (row, fixed) in RSC_MTTF_ROWS.items():
        out[gpus] = (row, fixed if fixed is not None else _num(rel.loc[row, "value"]))
    return out


def mttf_curve(catalog=None) -> list[dict]:
    """Job MTTF [h] against GPUs for the meta-rsc and default profiles, with the
    published points (Kokolis et al. at 8, 1,024, 16,384; Llama 3 at 16,384)."""
    rel = reliability_rows().set_index("id")
    rsc = published_mttf_h(rel)
    llama3 = llama3_mttf_h(rel)
    rows = []
    for gpus in MTTF_GPUS:
        row = {"gpus": gpus}
        for profile in MTTF_PROFILES:
            row[f"{profile}_h"] = job_mttf_s(profile, gpus, catalog=catalog) / 3600
        row["published_rsc_h"] = rsc[gpus][1] if gpus in rsc else None
        row["published_llama3_h"] = llama3 if gpus == 16384 else None
        rows.append(row)
    return rows


def llama3_mttf_h(rel=None) -> float:
    """Llama 3 405B's job MTTF at 16,384 GPUs [h]: 54 days / 419 unexpected interruptions
    (reliability.csv row l3-int)."""
    rel = reliability_rows().set_index("id") if rel is None else rel
    interruptions = _num(rel.loc["l3-int", "value"].split("=")[-1].split("+")[-1])
    return 54 * 24 / interruptions


def reliability_check(catalog=None) -> list[dict]:
    """Job MTTF at several sizes (meta-rsc vs Kokolis et al.; default vs Llama 3) through the
    kernel's system MTBF, and Llama 3 405B's ETTR."""
    if catalog is None:
        catalog = load_catalog()
    rel = reliability_rows().set_index("id")
    rows = []
    for gpus, (row, published) in published_mttf_h(rel).items():
        got = job_mttf_s("meta-rsc", gpus, catalog=catalog) / 3600
        rows.append({"check": f"Meta RSC job MTTF, {gpus:,} GPUs [h]", "published": published,
                     "predicted": got, "ok": 1 / 1.5 <= got / published <= 1.5,
                     "note": f"row {row}; meta-rsc profile, a100-80gb; tolerance 0.67-1.5x"})
    published = llama3_mttf_h(rel)
    got = job_mttf_s("default", 16384, catalog=catalog) / 3600
    rows.append({"check": "Llama 3 405B job MTTF, 16,384 GPUs [h]", "published": published,
                 "predicted": got, "ok": 1 / 1.5 <= got / published <= 1.5,
                 "note": "row l3-int: 54 d / 419 unexpected interruptions; default profile"})
    small = job_mttf_s("default", 8, catalog=catalog) / 86400
    rows.append({"check": "default profile, 8-GPU job MTTF [d]", "published": None,
                 "predicted": small, "ok": small >= 10,
                 "note": "no published point; at least 10 days (RSC: 47.7 d on A100)"})
    # Llama 3 405B: TP8 CP1 PP16 DP128 on 16,384 H100, 16M-token batches of 8192
    # (arXiv:2407.21783 s3.3.2 Table 4; 15.6T tokens); asynchronous checkpoints.
    r = evaluate(catalog=catalog, model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8,
                 pp=16, global_batch=2048, micro_batch=1, seq_len=8192, recompute="none",
                 zero=1, tokens=15.6e12, reliability="llama3-405b",
                 checkpoint="async").iloc[0]
    rows.append({"check": "Llama 3 405B effective training time ratio", "published": 0.90,
                 "predicted": float(r["ettr"]), "ok": bool(r["ettr"] > 0.90),
                 "note": "reported '>90%'; TP8 PP16 DP128, async checkpoints, llama3-405b profile"})
    return rows


#: Whole runs with published energy or carbon, each with its published layout, reliability
#: profile, site (grid) and site class (PUE), as a user would choose them; published values
#: from published_runs.csv (rows bloom-176b, opt-175b, llama31-405b-total).
WHOLE_RUN_ENERGY = {
    # BLOOM: Jean Zay (France, an HPC centre); Luccioni et al. arXiv:2211.02001 Table 1:
    # 433 MWh of GPU energy (GPU-hours x 400 W TDP, not measured), 690 MWh with the idle
    # infrastructure (433 + ~257 MWh: Table 1 as issue 26 quotes it; not in the shared CSV),
    # 50.5 t CO2e with idle and embodied carbon
    "bloom-176b": (dict(model="bloom-176b", hardware="a100-80gb", gpus=384, tp=4, pp=12,
                        micro_batch=2, global_batch=2048, seq_len=2048, recompute="full",
                        zero=1, tokens=366e9, reliability="bloom-176b", site="france",
                        site_class="hpc",
                        overrides={"scale_out_bandwidth_bytes_per_s": 4 * 100e9 / 8 / 8}),
                   {"energy_gpu_mwh": 433.196, "energy_total_mwh": 690.0, "co2e_t": 50.5}),
    # OPT-175B is not here (until 2026-11-27 it was, at 1.21x of its 75 t): its setup had
    # 180B tokens, the dataset's size, where OPT trained on 300B, and the 75 t is the TDP
    # estimate of failure-free compute (324 MWh: Luccioni et al. Table 4) times a grid the
    # authors do not publish, not a facility energy. `capplan validate --whole-runs`
    # compares OPT's energy like for like (energy_gpu_tdp_compute_mwh) over 300B tokens.
    # Llama 3 405B: TP8 PP16 on 16,384 H100, 15.6T tokens (arXiv:2407.21783 Table 4);
    # 8,930 t CO2e location-based (Llama 3.1 model card: GPU-hours x 700 W TDP, PUE-adjusted)
    "llama3-405b": (dict(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=16,
                         micro_batch=1, global_batch=2048, seq_len=8192, recompute="none",
                         zero=1, tokens=15.6e12, reliability="llama3-405b",
                         site="us-average", site_class="hyperscale"),
                    {"co2e_operational_t": 8930.0}),
}

#: Ratios of capplan's prediction to the published value before the measured-average energy
#: accounting (commit be4fedc: the site's PUE, 1.50 France / 1.58 US average, and node
#: power beside the GPUs at the DGX nameplate maximum), from benchmarks/whole_run_energy.py.
WHOLE_RUN_ENERGY_BEFORE = {
    ("bloom-176b", "energy_gpu_mwh"): 0.72, ("bloom-176b", "energy_total_mwh"): 1.53,
    ("bloom-176b", "co2e_t"): 1.41, ("llama3-405b", "co2e_operational_t"): 2.61,
}


def whole_run_energy_check(catalog=None) -> list[dict]:
    """Predicted GPU / IT / facility energy and CO2e of the :data:`WHOLE_RUN_ENERGY` runs
    against their published values (BLOOM's 690 MWh "total" against the facility energy)."""
    rows = []
    for run, (call, published) in WHOLE_RUN_ENERGY.items():
        r = evaluate(catalog=catalog, checkpoint="async", **call).iloc[0]
        predicted = {"energy_gpu_mwh": r["energy_gpu_j"] / 3.6e9,
                     "energy_it_mwh": r["energy_it_j"] / 3.6e9,
                     "energy_total_mwh": r["energy_facility_j"] / 3.6e9,
                     "co2e_t": r["co2e_kg"] / 1e3,
                     "co2e_operational_t": r["co2e_operational_kg"] / 1e3}
        for quantity, value in published.items():
            ratio = float(predicted[quantity] / value)
            before = WHOLE_RUN_ENERGY_BEFORE.get((run, quantity))
            rows.append({"run": run, "quantity": quantity, "published": value,
                         "predicted": float(predicted[quantity]), "ratio": ratio,
                         "ratio_before": before,
                         "wall_days": float(r["wall_days"]),
                         "gpu_power_w": float(r["energy_gpu_j"] / r["wall_time_s"] / call["gpus"]),
                         "avg_power_mw": float(r["avg_power_w"]) / 1e6,
                         "peak_power_mw": float(r["peak_power_mw"]),
                         "note": (f"{call['site']} grid, {call['site_class']} PUE; GPU "
                                  f"{predicted['energy_gpu_mwh']:,.0f} / IT "
                                  f"{predicted['energy_it_mwh']:,.0f} / facility "
                                  f"{predicted['energy_total_mwh']:,.0f} MWh; "
                                  f"{float(r['wall_days']):.0f} days")})
    return rows


def olmo_runs() -> dict[str, dict]:
    """OLMo's measured GPU training energies [MWh, GPU power only] and the setups used to
    predict them (olmo_energy.csv, each row's source: published_runs.csv rows and the
    allenai/OLMo configs; shapes from the catalog's Llama 2 entries, which share OLMo's
    layer shapes; FSDP full sharding, bf16, flash attention, no activation checkpointing;
    ``shard_group``: HSDP within a node; ``other_gpu_energy_mwh``: the energy another source
    lists)."""
    return data_rows("olmo_energy.csv")


def energy_check(catalog=None) -> list[dict]:
    """Predicted GPU energy of the OLMo runs vs their measured GPU energy.

    The note turns each published energy into the wall time it implies at the predicted
    mean GPU power, next to the predicted wall time: a ratio well above 1 is GPU time the
    run spent outside steady-state steps, failures and checkpoints.
    """
    rows = []
    for run, o in olmo_runs().items():
        model, vocab, hw, gpus = o["model"], o["vocab"], o["hardware"], o["gpus"]
        tokens, mwh = o["tokens"], o["gpu_energy_mwh"]
        r = evaluate(catalog=catalog, model=model, hardware=hw, gpus=gpus, tp=1, pp=1,
                     global_batch=o["global_batch"], micro_batch=o["micro_batch"],
                     seq_len=o["seq_len"], recompute="none", zero=3,
                     shard_group=o["shard_group"], tokens=tokens, reliability="default",
                     overrides={"vocab": vocab}).iloc[0]
        got = float(r["energy_gpu_kwh"]) / 1000
        gpu_power_w = float(r["energy_gpu_j"]) / float(r["wall_time_s"]) / gpus
        implied_days = mwh * 3.6e9 / (gpus * gpu_power_w) / 86400
        rows.append({"check": f"{run} GPU energy [MWh]", "published": mwh, "predicted": got,
                     "error": got / mwh - 1, "ok": abs(got / mwh - 1) <= 0.15,
                     "implied_days": implied_days, "predicted_days": float(r["wall_days"]),
                     "note": (f"{model} shape, vocab {vocab:,}, on {gpus} x {hw}, "
                              f"{tokens:.3g} tokens; at the predicted {gpu_power_w:.0f} W "
                              f"per GPU the published energy means {implied_days:.0f} days, "
                              f"predicted {float(r['wall_days']):.0f}")})
    return rows


def steady_state_check(catalog=None) -> list[dict]:
    """Predicted tokens/s per GPU vs OLMo-core's published H100 throughput, the code base
    that trained OLMo 2 (olmo_core_throughput.csv: layouts from its training scripts, the
    PyTorch FSDP2 + FlashAttention-2 stack).  ``error`` is to the middle of the published
    range; ``ok``: within 15 % of the range itself (the source publishes a spread, e.g.
    13B 4,400-4,600, and no one value of it is the measurement)."""
    rows = []
    for run, o in data_rows("olmo_core_throughput.csv").items():
        model, micro, gpus, vocab = o["model"], o["micro_batch"], o["gpus"], o["vocab"]
        published = o["tokens_per_s_per_gpu"]
        r = evaluate(catalog=catalog, model=model, hardware=o["hardware"], gpus=gpus,
                     tp=1, pp=1, global_batch=o["global_batch"], micro_batch=micro,
                     seq_len=o["seq_len"], recompute="none", zero=3, reliability="benchmark",
                     stack=o["stack"], overrides={"vocab": vocab}).iloc[0]
        got = float(r["tokens_per_s"]) / gpus
        low, high = (_num(v) for v in (o["published_range"].split("-") * 2)[:2])
        rows.append({"check": f"{run} tokens/s per GPU", "published": published,
                     "predicted": got, "error": got / published - 1,
                     "ok": low * 0.85 <= got <= high * 1.15,
                     "note": (f"{model} shape, vocab {vocab:,}, {gpus} x "
                              f"{o['hardware']}, FSDP, micro-batch {micro}; published "
                              f"{o['published_range']}; predicted MFU {float(r['mfu']):.0%}")})
    return rows


def later_stack_check(catalog=None) -> list[dict]:
    """Predicted tokens/s per GPU vs Megatron-Bridge 25.11's DeepSeek-V3 on GB200/GB300
    (later_stack_runs.csv). Not part of modern-runs: they show how much of the dgxc v25.04
    GB200 row's error is that early software."""
    rows = []
    for run, o in data_rows("later_stack_runs.csv").items():
        hw, precision, batch, gpus = o["hardware"], o["precision"], o["global_batch"], o["gpus"]
        pp, vp, ep, published = o["pp"], o["vp"], o["ep"], o["tokens_per_s_per_gpu"]
        r = evaluate(catalog=catalog, model="deepseek-v3", hardware=hw, gpus=gpus, tp=1,
                     pp=pp, vp=vp, cp=1, ep=ep, etp=1, global_batch=batch, micro_batch=1,
                     seq_len=4096, recompute="selective", zero=1, precision=precision,
                     reliability="benchmark", stack="megatron-core-2025",
                     overrides={"mtp_layers": 0.0}).iloc[0]
        got = float(r["tokens_per_s"]) / gpus
        rows.append({"check": f"{run} tokens/s per GPU", "published": published,
                     "predicted": got, "error": got / published - 1,
                     "ok": abs(got / published - 1) <= 0.15,
                     "note": (f"{gpus} x {hw}, "
                              f"{'MXFP8 (at the FP8 peak)' if precision == 'fp8' else 'BF16'}, "
                              f"TP1 PP{pp} "
                              f"VP{vp} EP{ep} (ETP 1), global batch {batch}, no MTP; "
                              f"predicted MFU {float(r['mfu']):.0%}")})
    return rows


def maxtext_check(catalog=None) -> list[dict]:
    """Predicted MFU vs MaxText's own published v5p and v5e MFU tables (maxtext_runs.csv:
    synthetic 16B-1T models, layouts from MaxText's config scripts) on the maxtext-xla stack.
    Each shape is llama2-7b's entry (gated MLP, untied embeddings, vocab 32,000, as MaxText's
    base.yml) with the row's sizes.  Slices are joined by DCN data parallelism with FSDP
    within each slice (MaxText's dcn_data_parallelism and ici_fsdp_parallelism): ZeRO-3
    sharded over the row's FSDP ranks and replicated across slices (``shard_group``)."""
    catalog = catalog or load_catalog()
    base = catalog.model("llama2-7b")
    rows = []
    for run, o in data_rows("maxtext_runs.csv").items():
        model = base.model_copy(update={"id": o["model"], "name": o["model"], **{
            k: int(o[k]) for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn",
                                   "vocab", "seq_len")}})
        r = evaluate(catalog=catalog, model=model, hardware=o["hardware"], gpus=o["chips"],
                     tp=o["tp"], pp=1, zero=3, shard_group=o["fsdp"],
                     global_batch=o["global_batch"],
                     micro_batch=o["micro_batch"], seq_len=o["seq_len"],
                     recompute=o["recompute"], precision=o["precision"], stack=o["stack"],
                     reliability="benchmark").iloc[0]
        published, got = o["published_mfu_pct"] / 100, float(r["mfu"])
        rows.append({"check": f"{run} MFU", "hardware": o["hardware"], "published": published,
                     "predicted": got, "error": got / published - 1,
                     "ok": abs(got / published - 1) <= 0.15,
                     "note": (f"{o['model']}, {o['chips']} x {o['hardware']} "
                              f"({o['slices']} slice(s)), TP{o['tp']} FSDP{o['fsdp']}, "
                              f"micro-batch {o['micro_batch']}, {o['recompute']} recompute")})
    return rows


def quantised_speedup_check(catalog=None) -> list[dict]:
    """Predicted vs published speedup of a quantised recipe over BF16 on one layout
    (quantised_speedups.csv: MaxText's Gemma MFU table, AQT int8 against BF16 on TPU v5e
    and v5p). Both published MFUs are over the bf16 peak, so their ratio is the speedup;
    the layouts are assumed (the table gives none) and cancel in the ratio. The int8
    recipe's ``gemm_rate_factor`` is set from these rows (recipes.csv), so this is a fit."""
    catalog = catalog or load_catalog()
    rows = []
    for run, o in data_rows("quantised_speedups.csv").items():
        step = {}
        for precision in (o["baseline_precision"], o["precision"]):
            step[precision] = float(evaluate(
                catalog=catalog, model=o["model"], hardware=o["hardware"], gpus=o["chips"],
                tp=1, pp=1, cp=1, zero=3, global_batch=o["chips"] * o["micro_batch"],
                micro_batch=o["micro_batch"], seq_len=o["seq_len"], recompute=o["recompute"],
                precision=precision, stack=o["stack"], reliability="benchmark"
            ).iloc[0]["step_time_s"])
        published = o["mfu_pct"] / o["baseline_mfu_pct"]
        got = step[o["baseline_precision"]] / step[o["precision"]]
        rows.append({"check": f"{run} speedup", "hardware": o["hardware"],
                     "published": published, "predicted": got, "error": got / published - 1,
                     "ok": abs(got / published - 1) <= 0.10,
                     "note": (f"{o['model']}, {o['chips']} x {o['hardware']}, "
                              f"{o['precision']} over {o['baseline_precision']}, FSDP, "
                              f"micro-batch {o['micro_batch']}, {o['recompute']} recompute")})
    return rows


#: Published layouts the memory model must fit (issue 27): (label, evaluate arguments,
#: source). Meta's Llama 3 405B: TP 8, PP 16 with interleaving (126 layers over 128 stage
#: units: the embedding and the loss as units), CP 1, DP 128 of 16 sequences of 8,192 tokens,
#: no activation recompute, FSDP sharding the gradients and optimizer states but not the
#: weights (= ZeRO-2) - arXiv:2407.21783 s3.3.1-3.3.2, Table 4. DeepSeek-V3: 2,048 H800,
#: PP 16, EP 64 (ETP 1), no TP, ZeRO-1, FP8, the final batch of 15,360 sequences of 4,096
#: tokens, 14.8T tokens, on the HAI-LLM stack - arXiv:2412.19437 s3.1-3.3, s4.2, Table 1
#: (2.664M H800 GPU-hours of pre-training). Micro-batch 1 (not published).
PUBLISHED_LAYOUTS = {
    "Llama 3 405B (Meta), 16,384 H100": dict(
        model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=16, vp=8, cp=1,
        global_batch=2048, micro_batch=1, seq_len=8192, recompute="none", zero=2,
        precision="bf16", stack="megatron-core-2025", tokens=15.6e12),
    "DeepSeek-V3, 2,048 H800": dict(
        model="deepseek-v3", hardware="h800", gpus=2048, tp=1, pp=16, vp=1, cp=1, ep=64, etp=1,
        global_batch=15360, micro_batch=1, seq_len=4096, recompute="selective", zero=1,
        precision="fp8", stack="deepseek-hai-llm-2024", tokens=14.8e12),
}
DEEPSEEK_V3_PRETRAIN_GPU_HOURS = 2.664e6  # arXiv:2412.19437 Table 1


def published_layout_check(catalog=None) -> list[dict]:
    """Memory per GPU of the published layouts (each ran), and DeepSeek-V3's GPU-hours."""
    rows = []
    for label, args in PUBLISHED_LAYOUTS.items():
        r = evaluate(catalog=catalog, reliability="benchmark", **args).iloc[0]
        note = (f"weights {r['weights_bytes'] / 1e9:.1f}, grads {r['grads_bytes'] / 1e9:.1f}, "
                f"optimizer {r['optimizer_state_bytes'] / 1e9:.1f}, activations "
                f"{r['activation_bytes'] / 1e9:.1f} GB; {args['stack']}")
        rows.append({"check": f"{label}: memory per GPU [GB]",
                     "published": float(r["hbm_bytes"]) / 1e9,
                     "predicted": float(r["memory_per_gpu_bytes"]) / 1e9,
                     "ok": bool(r["fits"]), "note": f"ran; HBM as published; {note}"})
        if args["model"] == "deepseek-v3":
            # a whole run: its GPU-hours ("less than two months", Table 1) include what
            # the default reliability profile charges for failures and checkpoints
            hours = float(evaluate(catalog=catalog, reliability="default",
                                   **args).iloc[0]["gpu_hours"])
            rows.append({"check": f"{label}: pre-training GPU-hours [M]",
                         "published": DEEPSEEK_V3_PRETRAIN_GPU_HOURS / 1e6,
                         "predicted": hours / 1e6,
                         "ok": 0.8 <= hours / DEEPSEEK_V3_PRETRAIN_GPU_HOURS <= 1.25,
                         "note": ("14.8T tokens at the final batch (the report ramps it from "
                                  "3,072); DualPipe (deepseek-hai-llm-2024); default "
                                  "reliability profile")})
    return rows
