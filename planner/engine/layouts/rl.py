"""One step of RL post-training with rollouts (GRPO, PPO), and the whole run.

A step has four phases (Shao et al. 2024, DeepSeekMath, arXiv:2402.03300 s4.1;
Sheng et al. 2024, HybridFlow/veRL, arXiv:2409.19256 s2; Hu et al. 2024, OpenRLHF,
arXiv:2405.11143 s3):

1. generation: every prompt is sampled ``group_size`` times by inference engines of
   ``engine_gpus`` GPUs each (tensor/expert parallel), prefill then decode
   (:mod:`formulas.inference`);
2. scoring: forward passes over the generated sequences: the policy's log-probs
   before the update, the frozen reference's (KL term), optionally a reward model's
   and (PPO) the critic's values;
3. training: the policy's update (``updates`` optimizer steps over mini-batches), and
   the critic's for PPO, timed by the training evaluator
   (:func:`planner.engine.layouts.evaluator.evaluate_run`) on the trainer's layout;
4. weight synchronisation: the new policy weights reach the engines.

Colocated (veRL's hybrid engine): all GPUs run every phase in turn, the phases add,
and the sync is a reshard of the weights inside the scale-up domain.  Disaggregated
(OpenRLHF's Ray layout): a rollout pool and a trainer pool; the sync is a broadcast over
the scale-out network; with ``off_policy`` (one-step asynchronous) the pools overlap and
the step is the longer pool plus the sync, else the phases still add.
:func:`best_split` sizes the pools over every split at once (numpy arrays).

Forward passes reuse the training evaluator: a forward pass is the step's compute less
the optimizer and gradient sync, scaled by model FLOP / (3 x hardware FLOP) (the
backward pass is twice the forward; recompute adds forwards: ``hfu``/``mfu``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from formulas import communication, compute, inference
from hardware_catalog import load_catalog
from planner.engine.inputs.scenario import check_overrides
from planner.engine.layouts.evaluator import LayoutRequest, evaluate_run
from planner.engine.layouts.layout_check import layouts_hold
from planner.engine.layouts.space import RECOMPUTE_CODES, layout_flags
from planner.engine.run.model import STAGES, block_share, softmax_attention_layers, step_time
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.run.spares import resolve_spares
from planner.errors import CapplanError, choice_error

MODES = ("colocated", "disaggregated")

#: Share of HBM the inference engine may take (vLLM's gpu_memory_utilization): vLLM's own
#: default 0.9 (docs.vllm.ai engine arguments) on a rollout pool of its own; veRL's
#: rollout default 0.5 when colocated (verl/trainer/config ppo_trainer.yaml), the rest
#: held by the trainer's state.
KV_MEMORY_FRACTION = {"colocated": 0.5, "disaggregated": 0.9}
#: Most sequences an engine runs at once: veRL's rollout.max_num_seqs default (vLLM's
#: max_num_seqs engine argument), verl/trainer/config/rollout/rollout.yaml.
MAX_NUM_SEQS = 1024


@dataclass(frozen=True)
class RLConfig:
    """The RL workload of one step and how it is run (sizes in tokens, counts in 1).

    ``response_len`` is the mean response length and ``response_cv`` its coefficient of
    variation (lognormal lengths); ``max_response_len`` caps the longest (default 4x the
    mean).  ``updates`` is the optimizer steps per RL step (mini-batches x PPO epochs);
    ``rollout_gpus`` fixes the disaggregated split (None: :func:`best_split` chooses it);
    ``engine_gpus`` fixes the GPUs of one inference engine (None: the fastest power of two
    up to the scale-up domain); ``pool_step``: rollout pools are multiples of it (e.g. a
    node's GPUs).  ``decode_memory_efficiency`` (None: the run's
    ``decode_memory_efficiency`` input, planner/engine/inputs/execution.toml) is the achieved
    fraction of the datasheet HBM bandwidth in decode.
    """

    prompts: int = 256
    group_size: int = 8
    prompt_len: float = 512.0
    response_len: float = 1024.0
    response_cv: float = 0.6
    max_response_len: float | None = None
    mode: str = "colocated"
    rollout_gpus: int | None = None
    engine_gpus: int | None = None
    updates: int = 1
    reference: bool = True
    old_logprobs: bool = True
    reward_model: bool = False
    critic: bool = False
    off_policy: bool = False
    decode_memory_efficiency: float | None = None
    kv_memory_fraction: float | None = None
    max_num_seqs: int = MAX_NUM_SEQS
    pool_step: int = 1
    inference_bytes_per_param: float = 2.0
    kv_bytes_per_element: float = 2.0

    @property
    def sequences(self) -> int:
        return self.prompts * self.group_size

    @property
    def memory_fraction(self) -> float:
        return KV_MEMORY_FRACTION.get(self.mode, 0.9) if self.kv_memory_fraction is None \
            else float(self.kv_memory_fraction)

    @property
    def response_cap(self) -> float:
        return 4.0 * self.response_len if self.max_response_len is None \
            else float(self.max_response_len)

    def check(self) -> None:
        """Raise CapplanError (one line: the flag, the allowed values) on a bad value."""
        if self.mode not in MODES:
            raise choice_error("rl-mode", self.mode, MODES)
        for name in ("prompts", "group_size", "updates", "max_num_seqs", "pool_step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise CapplanError(f"{FLAGS[name]} {value!r} must be an integer >= 1")
        if self.sequences > MAX_SEQUENCES:
            raise CapplanError(f"--prompts x --rollout-group-size = {self.sequences:,} "
                               f"sequences a step; at most {MAX_SEQUENCES:,}")
        for name in ("prompt_len", "response_len", "max_response_len", "kv_bytes_per_element",
                     "inference_bytes_per_param"):
            value = getattr(self, name)
            if name == "max_response_len" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not np.isfinite(value) or value <= 0:
                raise CapplanError(f"{FLAGS[name]} {value!r} must be a number > 0")
        if self.prompt_len + self.response_cap > MAX_TOKENS:
            raise CapplanError(f"--prompt-len + the longest response = "
                               f"{self.prompt_len + self.response_cap:g} tokens; at most "
                               f"{MAX_TOKENS:,}")
        if not (isinstance(self.response_cv, int | float) and 0 <= self.response_cv <= 10):
            raise CapplanError(f"--response-cv {self.response_cv!r} must be in [0, 10]")
        if self.response_cap < self.response_len:
            raise CapplanError(f"--max-response-len {self.max_response_len!r} must be at "
                               f"least the mean response length {self.response_len:g}")
        for name in ("decode_memory_efficiency", "memory_fraction"):
            value = getattr(self, name)
            if name == "decode_memory_efficiency" and value is None:
                continue
            if not (isinstance(value, int | float) and 0 < value <= 1):
                raise CapplanError(f"{name} {value!r} must be in (0, 1]")
        for name in ("rollout_gpus", "engine_gpus"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, int | np.integer) or value < 1):
                raise CapplanError(f"{FLAGS[name]} {value!r} must be an integer >= 1")


#: The command-line flag of each RLConfig field (for messages).
FLAGS = {"prompts": "--prompts", "group_size": "--rollout-group-size",
         "updates": "--rl-updates", "max_num_seqs": "max_num_seqs", "pool_step": "pool_step",
         "prompt_len": "--prompt-len", "response_len": "--response-len",
         "max_response_len": "--max-response-len", "kv_bytes_per_element":
         "kv_bytes_per_element", "inference_bytes_per_param": "inference_bytes_per_param",
         "rollout_gpus": "--rollout-gpus", "engine_gpus": "engine_gpus"}
#: Most sequences a step (the run model's largest global batch, planner.engine.inputs.domains).
MAX_SEQUENCES = 2**30
#: Longest sequence [tokens] (the run model's largest --seq-len).
MAX_TOKENS = 2**31 - 1


def training_choices(choices: RunChoices, rl: RLConfig) -> RunChoices:
    """The trainer's run: sequences of prompt + mean response (packed, no padding), a
    mini-batch of ``sequences / updates`` sequences per optimizer step."""
    mini = max(rl.sequences // rl.updates, 1)
    # the policy update is full training of every weight on packed sequences
    return replace(choices, seq_len=int(round(rl.prompt_len + rl.response_len)),
                   global_batch=mini, method="pretrain")


def decode_efficiency(x: dict, rl: RLConfig) -> float:
    """Achieved fraction of the HBM bandwidth in decode: the RL config's, else the run's
    input (planner/engine/inputs/execution.toml ``decode_memory_efficiency``)."""
    return x["decode_memory_efficiency"] if rl.decode_memory_efficiency is None \
        else rl.decode_memory_efficiency


def _moe_expert_params(x: dict, params, active_params):
    """Routed-expert parameters of the whole model (0 for a dense model)."""
    experts, k = x["experts"], x["experts_per_token"]
    moe = experts > k
    return np.where(moe, (params - active_params) * experts / np.where(moe, experts - k, 1), 0.0)


def generation_time(x: dict, rl: RLConfig, params, active_params, rollout_gpus,
                    engine_gpus) -> dict:
    """The generation phase on ``rollout_gpus`` GPUs in engines of ``engine_gpus``
    (arrays broadcast): prefill, decode and the engines' TP all-reduces, in s.

    ``concurrent`` is the sequences running at once per engine; where the weights leave
    no room for one sequence's cache, ``generation_s`` is inf.
    """
    rollout_gpus = np.asarray(rollout_gpus, dtype=float)
    m = np.asarray(engine_gpus, dtype=float)
    engines = np.floor(rollout_gpus / m)
    engines_ok = engines >= 1
    engines = np.maximum(engines, 1)
    n = np.ceil(rl.sequences / engines)  # responses on the busiest engine
    prompts = np.ceil(rl.prompts / engines)
    mu, cv, cap, p = rl.response_len, rl.response_cv, rl.response_cap, rl.prompt_len
    mla = x["kv_lora_rank"] > 0
    # a KV cache in the softmax-attention layers only; the linear-attention and Mamba
    # layers hold a recurrent state of fixed size per sequence instead
    attention_layers = softmax_attention_layers(x)
    kv_token = np.where(
        mla, inference.mla_kv_cache_bytes_per_token(attention_layers,
                                                    max(x["kv_lora_rank"], 1.0),
                                                    x["qk_rope_head_dim"],
                                                    rl.kv_bytes_per_element),
        inference.kv_cache_bytes_per_token(attention_layers, x["kv_heads"], x["head_dim"],
                                           rl.kv_bytes_per_element))
    state = _recurrent_state_bytes(x, rl.kv_bytes_per_element)  # per sequence, split over TP
    # KV heads split over the engine's TP ranks (replicated beyond kv_heads); the MLA latent
    # is replicated on every rank
    kv_shard = np.where(mla, 1.0, np.minimum(m, x["kv_heads"]))
    weights = params * rl.inference_bytes_per_param
    # paged cache: a sequence holds its prompt and (on average) its mean response
    concurrent_max = inference.max_concurrent_sequences(
        rl.memory_fraction * x["hbm_bytes"], weights / m, x["memory_reserve_bytes"],
        kv_token * (p + mu) / kv_shard + state / m)
    fits = engines_ok & (concurrent_max >= 1)
    concurrent = np.maximum(np.minimum(np.minimum(n, concurrent_max), rl.max_num_seqs), 1)
    longest = np.minimum(inference.expected_max_response_len(concurrent, mu, cv), cap)
    steps = inference.decode_steps(n, concurrent, mu, longest)
    batch = n * mu / steps  # mean sequences per decode step
    expert = _moe_expert_params(x, params, active_params)
    touched = np.where(expert > 0, inference.experts_touched_fraction(
        batch, np.maximum(x["experts"], 1), np.maximum(x["experts_per_token"], 1)), 0.0)
    weight_step = (params - expert + expert * touched) * rl.inference_bytes_per_param / m
    kv_reads = inference.kv_tokens_read_per_sequence(p, mu, cv)
    attention_per_read = 4 * attention_layers * x["heads"] * x["head_dim"]  # QK, AV: 2 FLOP
    decode_flops = n * (2 * active_params * mu + attention_per_read * kv_reads) / m
    # (each decoded token reads and writes its sequence's recurrent state)
    decode_s = inference.decode_time(steps, weight_step, n * kv_reads * kv_token / kv_shard
                                     + 2 * n * mu * state / m,
                                     decode_flops, x["hbm_bandwidth_bytes_per_s"],
                                     decode_efficiency(x, rl), x["peak_flops_per_s"],
                                     x["gemm_max_efficiency"])
    prefill_s = inference.prefill_time(
        active_params / m, prompts * p,
        prompts * inference.causal_attention_flops(attention_layers, x["heads"], x["head_dim"],
                                                   p) / m,
        x["peak_flops_per_s"], x["gemm_max_efficiency"])
    # two all-reduces of the step's hidden states (in the engine's dtype) per layer
    # (Megatron TP), per decode step, inside the scale-up domain or (an engine of several
    # domains) across them
    intra = (m <= x["scale_up_domain_gpus"]).astype(float)
    bandwidth = communication.group_bandwidth(
        intra, communication.achievable_bandwidth(x["scale_up_bandwidth_bytes_per_s"],
                                                  x["scale_up_bus_efficiency"]),
        communication.achievable_bandwidth(x["scale_out_bandwidth_bytes_per_s"],
                                           x["scale_out_bus_efficiency"]))
    latency = communication.group_latency(intra, x["intra_latency_s"], x["inter_latency_s"])
    # (one a block in a hybrid model's one-part blocks)
    blocks = 2 * x["layers"] * block_share(x)
    tp_comm_s = np.where(m > 1, steps * blocks * communication.ring_allreduce_time(
        batch * x["hidden"] * rl.inference_bytes_per_param, np.maximum(m, 2), bandwidth,
        latency), 0.0)
    total = prefill_s + decode_s + tp_comm_s
    return {"prefill_s": prefill_s, "decode_s": decode_s, "rollout_tp_comm_s": tp_comm_s,
            "generation_s": np.where(fits, total, np.inf), "concurrent": concurrent,
            "decode_steps": steps, "longest_response": longest, "engines": engines,
            "kv_bytes_per_token": kv_token}


def _recurrent_state_bytes(x: dict, bytes_per_element):
    """Recurrent state one sequence holds in the Mamba-2 and Gated DeltaNet layers."""
    mamba_conv = x["mamba_heads"] * x["mamba_head_dim"] \
        + 2 * x["mamba_groups"] * x["mamba_state_dim"]  # x, B and C
    linear_conv = x["linear_head_dim"] * (2 * x["linear_key_heads"]
                                          + x["linear_value_heads"])  # q, k and v
    return inference.recurrent_state_bytes_per_sequence(
        x["mamba_layers"], x["mamba_heads"], x["mamba_head_dim"], x["mamba_state_dim"],
        mamba_conv, compute.MAMBA_CONV_TAPS, bytes_per_element) \
        + inference.recurrent_state_bytes_per_sequence(
            x["linear_attention_layers"], x["linear_value_heads"], x["linear_head_dim"],
            x["linear_head_dim"], linear_conv, compute.MAMBA_CONV_TAPS, bytes_per_element)


def forward_time(columns: dict):
    """One forward pass over the trainer's mini-batch, from the training step (s)."""
    work = columns["step_time_s"] - columns["optimizer_s"] - columns["dp_comm_s"]
    return work * columns["mfu"] / (3 * columns["hfu"])


def trainer_phases(columns: dict, rl: RLConfig) -> dict:
    """Scoring and training phases (s) from the trainer's evaluated step."""
    forward = forward_time(columns)
    passes = rl.old_logprobs + rl.reference + rl.reward_model + rl.critic
    scoring = rl.updates * forward * passes
    training = rl.updates * columns["step_time_s"] * (1 + rl.critic)
    return {"scoring_s": scoring, "training_s": training}


def sync_time(x: dict, rl: RLConfig, params, engine_gpus, colocated: bool):
    """Weight synchronisation (s): each engine GPU receives its shard of the new policy.

    Colocated: gathered from the trainer's shards over the scale-up domain (all-gather);
    disaggregated: broadcast from the trainer over the scale-out network (pipelined, so
    each receiver's link carries its shard once)."""
    shard = params * rl.inference_bytes_per_param / np.asarray(engine_gpus, dtype=float)
    if colocated:
        bw = communication.achievable_bandwidth(x["scale_up_bandwidth_bytes_per_s"],
                                                x["scale_up_bus_efficiency"])
        ranks = max(x["scale_up_domain_gpus"], 2)
        return communication.allgather_time(shard * ranks, ranks, bw, x["intra_latency_s"])
    bw = communication.achievable_bandwidth(x["scale_out_bandwidth_bytes_per_s"],
                                            x["scale_out_bus_efficiency"])
    return communication.p2p_time(shard, bw, x["inter_latency_s"])


#: Largest inference engine tried [GPUs]: an engine may span scale-up domains (a 671B
#: model in BF16 needs more than one 8-GPU node), at scale-out all-reduce cost.
MAX_ENGINE_GPUS = 64


def _engine_sizes(x: dict) -> np.ndarray:
    """Engine sizes tried: powers of two up to the larger of the domain and 64 GPUs."""
    largest = max(int(x["scale_up_domain_gpus"]), MAX_ENGINE_GPUS)
    return 2 ** np.arange(int(np.log2(largest)) + 1)


def best_engine(x: dict, rl: RLConfig, params, active_params, rollout_gpus) -> dict:
    """Generation with the fastest engine size per rollout pool (arrays over pools)."""
    pools = np.atleast_1d(np.asarray(rollout_gpus, dtype=float))
    sizes = _engine_sizes(x) if rl.engine_gpus is None else np.array([rl.engine_gpus])
    grid = generation_time(x, rl, params, active_params, pools[None, :], sizes[:, None])
    best = np.argmin(grid["generation_s"], axis=0)
    cols = np.arange(pools.size)
    out = {k: np.broadcast_to(v, grid["generation_s"].shape)[best, cols] for k, v in grid.items()}
    out["engine_gpus"] = sizes[best]
    return out


@dataclass(frozen=True)
class TrainerLayout:
    """The trainer's sizes (DP follows from its GPUs).  Default: FSDP (ZeRO-3) with full
    activation recompute, as veRL's FSDP workers and OpenRLHF's ZeRO-3 examples."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    micro_batch: int = 1
    zero: int = 3
    recompute: str = "full"


def _request(layout: TrainerLayout, gpus) -> LayoutRequest:
    return LayoutRequest(gpus=gpus, tp=layout.tp, pp=layout.pp, cp=layout.cp, ep=layout.ep,
                         etp=None, vp=1, micro_batch=layout.micro_batch,
                         recompute=layout.recompute, zero=layout.zero)


def valid_trainer_gpus(x: dict, layout: TrainerLayout, gpus) -> np.ndarray:
    """Which trainer GPU counts obey the layout rules with these sizes (boolean array);
    the trainer steps on the run's global batch (its mini-batch)."""
    gpus = np.atleast_1d(np.asarray(gpus, dtype=int))
    return layouts_hold(x, {"gpus": gpus, "tp": layout.tp, "pp": layout.pp, "cp": layout.cp,
                            "ep": layout.ep, "etp": layout.tp, "vp": 1,
                            "micro_batch": layout.micro_batch,
                            "dp": gpus // (layout.tp * layout.pp * layout.cp)})


def evaluate_trainer(choices: RunChoices, layout: TrainerLayout, gpus, *, catalog=None,
                     overrides=None):
    """Training columns (arrays) and kernel inputs of the trainer on ``gpus`` GPUs."""
    return evaluate_run(choices, _request(layout, np.atleast_1d(np.asarray(gpus))),
                        catalog=catalog, overrides=overrides)


def run_inputs(catalog, choices: RunChoices, rl: RLConfig, overrides=None) -> dict:
    """Kernel inputs of the trainer's run with the run-model input ``overrides`` (SI: the
    site network, fault and straggler flags, as pre-training's) applied."""
    check_overrides(overrides or {})
    return {**base_inputs(catalog, training_choices(choices, rl)), **(overrides or {})}


def _combine(x: dict, rl: RLConfig, columns: dict, gen: dict, gpus, rollout_gpus,
             colocated: bool, params) -> dict:
    """The step of each candidate: phases, sync and step time (arrays)."""
    trainer = trainer_phases(columns, rl)
    sync = sync_time(x, rl, params, gen["engine_gpus"], colocated)
    train_side = trainer["scoring_s"] + trainer["training_s"]
    if colocated or not rl.off_policy:
        step = gen["generation_s"] + train_side + sync
    else:
        step = np.maximum(gen["generation_s"], train_side) + sync
    step = np.where(columns["fits"], step, np.inf)
    out = {**gen, **trainer, "sync_s": sync, "rl_step_time_s": step,
           "rollout_gpus": np.asarray(rollout_gpus, dtype=float),
           "trainer_gpus": np.asarray(gpus - (0 if colocated else rollout_gpus), dtype=float),
           "trainer_fits": columns["fits"]}
    busy = out["generation_s"] + train_side + sync
    finite = np.isfinite(busy)
    for phase in ("generation", "scoring", "training", "sync"):  # nan where nothing fits
        out[f"{phase}_share"] = np.where(finite, out[f"{phase}_s"] / np.where(finite, busy, 1),
                                         np.nan)
    return out


def split_candidates(x: dict, rl: RLConfig, layout: TrainerLayout, totals) -> tuple:
    """(total, rollout) GPU pairs to evaluate: per total, every rollout pool leaving a
    trainer the layout rules allow (colocated: the whole cluster does both)."""
    totals = np.atleast_1d(np.asarray(totals, dtype=int))
    if rl.mode == "colocated":
        ok = valid_trainer_gpus(x, layout, totals)
        return totals[ok], totals[ok]
    total = np.concatenate([np.full(g - 1, g) for g in totals]) if totals.max() > 1 \
        else np.zeros(0, dtype=int)
    rollout = np.concatenate([np.arange(1, g) for g in totals]) if total.size \
        else np.zeros(0, dtype=int)
    keep = rollout % rl.pool_step == 0
    total, rollout = total[keep], rollout[keep]
    ok = valid_trainer_gpus(x, layout, total - rollout) if total.size else total > 0
    if rl.rollout_gpus is not None:
        ok = ok & (rollout == rl.rollout_gpus)
    return total[ok], rollout[ok]


def _check_totals(totals) -> np.ndarray:
    values = np.atleast_1d(np.asarray(totals, dtype=object))
    for g in values:
        if isinstance(g, bool) or not isinstance(g, int | np.integer) or not 1 <= g <= 2**20:
            raise CapplanError(f"--gpus {g!r} must be an integer in 1..{2**20}")
    return values.astype(int)


def rl_candidates(choices: RunChoices, rl: RLConfig, totals, *,
                  layout: TrainerLayout = TrainerLayout(), catalog=None,
                  overrides=None) -> dict:
    """Every candidate (total GPUs, rollout pool) of the RL step, as arrays: the phases,
    sync, step time and shares, ``gpus`` the total; all candidates in one trainer
    evaluation and one generation grid.  ``overrides``: run-model inputs (SI) replacing
    the catalog's for every phase (:func:`run_inputs`)."""
    rl.check()
    totals = _check_totals(totals)
    catalog = load_catalog() if catalog is None else catalog
    train_choices = training_choices(choices, rl)
    x0 = run_inputs(catalog, choices, rl, overrides)
    total, rollout = split_candidates(x0, rl, layout, totals)
    if total.size == 0:
        raise CapplanError(
            f"no split of {', '.join(map(str, totals))} GPUs leaves a trainer the layout rules "
            f"allow with TP {layout.tp} x PP {layout.pp} x CP {layout.cp} and micro-batch "
            f"{layout.micro_batch} for a mini-batch of {x0['global_batch']:g} sequences"
            + (f" and --rollout-gpus {rl.rollout_gpus}" if rl.rollout_gpus else "")
            + ": try other --gpus, --rollout-gpus or trainer sizes")
    colocated = rl.mode == "colocated"
    trainer = total if colocated else total - rollout
    columns, _ = evaluate_trainer(train_choices, layout, trainer, catalog=catalog,
                                  overrides=overrides)
    params, active = float(columns["params"][0]), float(columns["active_params"][0])
    gen = best_engine(x0, rl, params, active, rollout)
    out = _combine(x0, rl, columns, gen, total, rollout, colocated, params)
    out["gpus"] = total.astype(float)
    out["params"], out["active_params"] = params, active
    return out


def best_split(candidates: dict) -> np.ndarray:
    """Index of the fastest candidate of each total GPU count (in increasing totals)."""
    step, total = candidates["rl_step_time_s"], candidates["gpus"]
    order = np.lexsort((step, total))  # by total, then step time
    first = np.r_[True, total[order][1:] != total[order][:-1]]
    return order[first]


def rl_step(choices: RunChoices, rl: RLConfig, gpus: int, *,
            layout: TrainerLayout = TrainerLayout(), catalog=None, overrides=None) -> dict:
    """The RL step on ``gpus`` GPUs: one row (colocated) or every disaggregated split
    (arrays over the candidates, with ``best`` the index of the fastest)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int | np.integer) or gpus < 1:
        raise CapplanError(f"--gpus {gpus!r} must be an integer >= 1")
    out = rl_candidates(choices, rl, [gpus], layout=layout, catalog=catalog,
                        overrides=overrides)
    out["best"] = int(best_split(out)[0])
    return out


#: Whole-run columns taken from the run model's stages.
RUN_COLUMNS = ("wall_time_s", "solve_time_s", "expected_failures", "checkpoint_interval_s",
               "checkpoint_stall_s", "system_mtbf_s", "energy_facility_j", "gpu_hours",
               "cost_usd", "co2e_kg", "avg_power_w", "ettr")


def whole_runs(choices: RunChoices, rl: RLConfig, rows: dict, steps: float, *,
               layout: TrainerLayout = TrainerLayout(), catalog=None,
               overrides=None, columns: tuple | None = RUN_COLUMNS) -> dict:
    """``steps`` RL steps of each row of ``rows`` (candidate arrays) as a whole run on all
    its GPUs: wall time with checkpoints and failures (Young/Daly), energy, cost and carbon,
    by the training run model's own stages with the RL step in place of the training step.

    Energy: the GPUs count as busy (the training step's compute power) for the GPU-seconds
    of generation, scoring and training, idle while they wait for the other pool or the
    sync.  Checkpoints hold the policy's training state (the trainer's layout).
    ``columns``: the run model's outputs returned (None: every one, as a phase of a run
    needs them).
    """
    if isinstance(steps, bool) or not isinstance(steps, int | float) or not steps > 0 \
            or not np.isfinite(steps) or steps > 1e9:
        raise CapplanError(f"--rl-steps {steps!r} must be a number in (0, 1e9]")
    catalog = load_catalog() if catalog is None else catalog
    gpus = np.asarray(rows["gpus"], dtype=float)
    x = run_inputs(catalog, choices, rl, overrides)
    x.update(_layout_inputs(x, layout, gpus))
    # one run-model step per RL step (the RL step already holds its ``updates`` optimizer
    # steps): the tokens of ``steps`` mini-batches
    x["tokens"] = steps * x["global_batch"] * x["seq_len"]
    x = resolve_spares(x)
    if rl.mode == "colocated":
        busy_gpu_s = (rows["generation_s"] + rows["scoring_s"] + rows["training_s"]) * gpus
    else:
        busy_gpu_s = (rows["generation_s"] * rows["rollout_gpus"]
                      + (rows["scoring_s"] + rows["training_s"]) * rows["trainer_gpus"])
    r: dict = {}
    for stage in STAGES:
        r.update(stage(x, r))
        if stage is step_time:  # the RL step in place of the training step
            r["step_time_s"] = np.asarray(rows["rl_step_time_s"], dtype=float)
            r["compute_s"] = busy_gpu_s / gpus
            for part in ("tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_comm_s", "dp_comm_s"):
                r[part] = np.zeros_like(r["step_time_s"])
    out = {k: np.broadcast_to(np.asarray(r[k], dtype=float), gpus.shape)
           for k in (r if columns is None else columns)}
    out["rl_steps"] = np.full(gpus.shape, float(steps))
    return out


def whole_run(choices: RunChoices, rl: RLConfig, gpus: int, steps: float, *,
              layout: TrainerLayout = TrainerLayout(), catalog=None,
              overrides=None, columns: tuple | None = RUN_COLUMNS) -> dict:
    """The fastest configuration on ``gpus`` GPUs and ``steps`` RL steps of it as a whole
    run (:func:`whole_runs`, ``columns`` of the run model), as one dict of Python
    scalars."""
    catalog = load_catalog() if catalog is None else catalog
    step = rl_step(choices, rl, gpus, layout=layout, catalog=catalog, overrides=overrides)
    i = step["best"]
    one = {k: np.asarray(v)[[i]] if np.ndim(v) else v for k, v in step.items() if k != "best"}
    if not np.isfinite(one["rl_step_time_s"][0]):
        raise CapplanError(_nothing_fits(step, gpus, layout, rl))
    run = whole_runs(choices, rl, one, steps, layout=layout, catalog=catalog,
                     overrides=overrides, columns=columns)
    row = {k: (float(np.ravel(v)[0]) if np.ndim(v) else v) for k, v in {**one, **run}.items()}
    for key in ("rollout_gpus", "trainer_gpus", "engine_gpus", "engines"):
        row[key] = int(row[key])
    return {**row, "mode": rl.mode, "gpus": gpus}


def _nothing_fits(step: dict, gpus: int, layout: TrainerLayout, rl: RLConfig) -> str:
    """Why no candidate on ``gpus`` GPUs has a finite step (one line)."""
    weights_gb = step["params"] * rl.inference_bytes_per_param / 1e9
    if not np.any(step["trainer_fits"]):
        return (f"the trainer does not fit in memory on {gpus} GPUs (TP{layout.tp} "
                f"PP{layout.pp} ZeRO-{layout.zero}, recompute {layout.recompute}): try more "
                "GPUs or --tp/--pp")
    return (f"no inference engine (a power of two up to {MAX_ENGINE_GPUS} GPUs, within the "
            f"rollout pool of {gpus} GPUs) holds the {weights_gb:,.0f} GB of weights and one "
            f"sequence's KV cache ({rl.prompt_len + rl.response_len:g} tokens) in "
            f"{rl.memory_fraction:g} of its memory: try more GPUs")


def _layout_inputs(x: dict, layout: TrainerLayout, gpus) -> dict:
    """Kernel layout inputs of the trainer's sizes on all ``gpus`` (the whole cluster's
    failures, checkpoints and energy are those of every GPU; DP at most the micro-batches
    of the trainer's batch)."""
    gpus = np.atleast_1d(np.asarray(gpus, dtype=float))
    # the stages before the step need a layout the batch fills (a disaggregated cluster
    # may hold more GPUs than the trainer's batch has micro-batches)
    dp = np.maximum(np.minimum(gpus // (layout.tp * layout.pp * layout.cp),
                               x["global_batch"] // layout.micro_batch), 1)
    sizes = {"gpus": gpus, "tp": layout.tp, "pp": layout.pp, "cp": layout.cp,
             "ep": layout.ep, "etp": layout.tp, "vp": 1, "micro_batch": layout.micro_batch,
             "dp": dp, "recompute": RECOMPUTE_CODES[layout.recompute], "zero": layout.zero,
             "shard_group": dp, "sequence_parallel": int(layout.tp > 1)}
    sizes = dict(zip(sizes, np.broadcast_arrays(*(np.atleast_1d(v) for v in sizes.values())),
                     strict=True))
    return {**sizes, **layout_flags(sizes, scale_up_domain=x["scale_up_domain_gpus"],
                                    layers=x["layers"], flash_attention=True)}
