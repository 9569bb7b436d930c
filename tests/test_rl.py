"""planner.engine.layouts.rl: the GRPO/PPO step (generation, scoring, training, sync), the pool
split, the whole run; decode checked against published vLLM measurements."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware_catalog import load_catalog
from planner.engine.inputs import scenario
from planner.engine.layouts import rl
from planner.engine.run.model import param_counts
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.errors import CapplanError

CATALOG = load_catalog()
QWEN72 = str(Path(__file__).parent / "data" / "models" / "qwen2.5-72b.toml")


def _inputs(model, hardware):
    return base_inputs(CATALOG, RunChoices(model=model, hardware=hardware))


def _tpot(model, hardware, engine_gpus, batch=1, prompt=1024, response=128):
    """Time per output token of ``batch`` equal requests on one engine (cv = 0)."""
    x = _inputs(model, hardware)
    p = param_counts(x)
    w = rl.RLConfig(prompts=1, group_size=batch, prompt_len=prompt, response_len=response,
                    response_cv=0.0, mode="disaggregated")
    g = rl.generation_time(x, w, p["params"], p["active_params"], engine_gpus, engine_gpus)
    return float((g["decode_s"] + g["rollout_tp_comm_s"]) / g["decode_steps"])


# Published vLLM decode times at concurrency 1 (BF16), each: model, GPU, engine GPUs,
# prompt tokens, measured time per output token [s], source.
PUBLISHED_TPOT = [
    ("llama3-8b", "a100-40gb", 1, 1024, 1 / 75,
     "johnmusgrave.com/p/vllm-throughput-latency-sweep-on: Llama-3.1-8B-Instruct, vLLM 0.23, "
     "1024 in / 128 out, ~75 tok/s at concurrency 1"),
    ("llama3-8b", "h100-sxm", 1, 256, 6.48e-3,
     "yobitelcomm.github.io/bench/recipes/concurrency-sweep: Llama-3.1-8B-Instruct, H100 "
     "80GB HBM3, vLLM 0.21, tpot_p50 6.48 ms at concurrency 1 (chatbot-short prompts)"),
    (QWEN72, "h100-sxm", 2, 1024, 30.9e-3,
     "github.com/tenstorrent/tt-inference-server issue 143 (2025-04-01): Qwen2.5-72B-Instruct "
     "on 2x H100, ISL 1024 / OSL 128, concurrency 1, TPOT 30.9 ms"),
]


@pytest.mark.parametrize("model,hardware,engine,prompt,measured,source", PUBLISHED_TPOT,
                         ids=["llama3.1-8b-a100", "llama3.1-8b-h100", "qwen2.5-72b-2xh100"])
def test_decode_time_per_token_matches_published_vllm(model, hardware, engine, prompt,
                                                      measured, source):
    """Within 10 %: one decode efficiency (0.76 of the datasheet HBM bandwidth) for every
    model and GPU; the 72B check adds two TP all-reduces per layer per token."""
    assert _tpot(model, hardware, engine, prompt=prompt) == pytest.approx(measured, rel=0.10), \
        source


def test_decode_efficiency_is_a_sourced_catalog_default():
    """0.76 lives in planner/engine/inputs/execution.toml with its sources (the three vLLM checks
    above), reaches the run's inputs, and decode-bound time scales as its inverse."""
    entry = tomllib.loads((Path(scenario.__file__).with_name("execution.toml")).read_text())[
        "decode_memory_efficiency"]
    assert entry["value"] == 0.76 and entry["estimate"] is True
    for source in ("johnmusgrave.com", "yobitelcomm.github.io", "tt-inference-server"):
        assert source in entry["source"]
    x = _inputs("llama3-8b", "h100-sxm")
    assert x["decode_memory_efficiency"] == 0.76
    p = param_counts(x)
    w = rl.RLConfig(prompts=1, group_size=1, prompt_len=64, response_len=64,
                    response_cv=0.0, mode="disaggregated")
    base = float(rl.generation_time(x, w, p["params"], p["active_params"], 1, 1)["decode_s"])
    halved = float(rl.generation_time({**x, "decode_memory_efficiency": 0.38}, w, p["params"],
                                      p["active_params"], 1, 1)["decode_s"])
    assert halved == pytest.approx(2 * base, rel=0.02)  # memory-bound at batch 1
    own = float(rl.generation_time(x, replace(w, decode_memory_efficiency=0.38), p["params"],
                                   p["active_params"], 1, 1)["decode_s"])
    assert own == pytest.approx(halved, rel=1e-12)


def test_batching_amortises_weights():
    """Per-token time grows far less than the batch (weights read once per step)."""
    one = _tpot("llama3-8b", "h100-sxm", 1, batch=1)
    sixteen = _tpot("llama3-8b", "h100-sxm", 1, batch=16)
    assert one < sixteen < 2 * one


def _generation(response_len, bandwidth, engine=2):
    x = _inputs("llama3-8b", "h100-sxm")
    x["hbm_bandwidth_bytes_per_s"] = bandwidth
    p = param_counts(x)
    w = rl.RLConfig(prompts=64, group_size=8, prompt_len=512, response_len=response_len,
                    response_cv=0.6, mode="disaggregated")
    return float(rl.generation_time(x, w, p["params"], p["active_params"], 8, engine)
                 ["generation_s"])


@settings(max_examples=40, deadline=None)
@given(st.floats(16, 16000), st.floats(1.05, 3.0), st.floats(1e12, 8e12))
def test_generation_grows_with_response_length_and_falls_with_bandwidth(length, factor, bw):
    base = _generation(length, bw)
    assert _generation(length * factor, bw) > base
    assert _generation(length, bw * factor) < base


def test_moe_decode_reads_only_the_touched_experts():
    x = _inputs("qwen3-30b-a3b", "h100-sxm")
    p = param_counts(x)
    w = rl.RLConfig(prompts=1, group_size=1, prompt_len=64, response_len=64, response_cv=0.0,
                    mode="disaggregated")
    g = rl.generation_time(x, w, p["params"], p["active_params"], 1, 1)
    all_weights_s = 64 * p["params"] * 2 / (x["hbm_bandwidth_bytes_per_s"] * 0.76)
    active_s = 64 * p["active_params"] * 2 / (x["hbm_bandwidth_bytes_per_s"] * 0.76)
    assert active_s < float(g["decode_s"]) < 0.5 * all_weights_s


def test_mla_cache_is_the_latent():
    x = _inputs("deepseek-v3", "h200")
    p = param_counts(x)
    g = rl.generation_time(x, rl.RLConfig(mode="disaggregated"), p["params"],
                           p["active_params"], 64, 8)
    assert float(g["kv_bytes_per_token"]) == 61 * (512 + 64) * 2


CHOICES = RunChoices(model="llama3-8b", hardware="h100-sxm")
WORK = rl.RLConfig(prompts=128, group_size=8, prompt_len=512, response_len=1024)


def test_colocated_phases_add():
    s = rl.rl_step(CHOICES, WORK, 16)
    total = s["generation_s"] + s["scoring_s"] + s["training_s"] + s["sync_s"]
    np.testing.assert_allclose(s["rl_step_time_s"], total, rtol=1e-12)
    shares = s["generation_share"] + s["scoring_share"] + s["training_share"] + s["sync_share"]
    np.testing.assert_allclose(shares, 1.0, rtol=1e-12)
    # GRPO scoring: the policy's old log-probs and the reference's, two forward passes
    # of the trainer's layout, each at most a quarter of a training step (full recompute:
    # four forward-equivalents per step, besides the optimizer and gradient sync)
    assert 0.3 < (s["scoring_s"] / s["training_s"])[0] <= 2 / 4


def test_forward_time_is_a_third_of_the_step_without_recompute():
    cols = {"step_time_s": np.array([10.0]), "optimizer_s": np.array([1.0]),
            "dp_comm_s": np.array([0.5]), "mfu": np.array([0.4]), "hfu": np.array([0.4])}
    assert rl.forward_time(cols)[0] == pytest.approx(8.5 / 3, rel=1e-12)
    cols["hfu"] = np.array([0.4 * 4 / 3])  # full recompute: 4 forwards of work
    assert rl.forward_time(cols)[0] == pytest.approx(8.5 / 4, rel=1e-12)


def test_ppo_adds_critic_training_and_value_pass():
    grpo = rl.rl_step(CHOICES, WORK, 16)
    ppo = rl.rl_step(CHOICES, replace(WORK, critic=True), 16)
    np.testing.assert_allclose(ppo["training_s"], 2 * grpo["training_s"], rtol=1e-12)
    np.testing.assert_allclose(ppo["scoring_s"], 1.5 * grpo["scoring_s"], rtol=1e-12)


def test_disaggregated_best_split_is_the_brute_force_optimum():
    work = replace(WORK, mode="disaggregated", off_policy=True)
    s = rl.rl_step(CHOICES, work, 16)
    brute = {}
    for r in s["rollout_gpus"].astype(int):
        one = rl.rl_step(CHOICES, replace(work, rollout_gpus=int(r)), 16)
        assert one["rollout_gpus"].size == 1
        brute[int(r)] = float(one["rl_step_time_s"][0])
    best = min(brute, key=brute.get)
    assert int(s["rollout_gpus"][s["best"]]) == best
    assert float(s["rl_step_time_s"][s["best"]]) == pytest.approx(brute[best], rel=1e-12)
    # one-step off-policy: the longer pool plus the sync
    i = s["best"]
    longer = max(s["generation_s"][i], s["scoring_s"][i] + s["training_s"][i])
    assert s["rl_step_time_s"][i] == pytest.approx(longer + s["sync_s"][i], rel=1e-12)


def test_on_policy_disaggregated_phases_add():
    s = rl.rl_step(CHOICES, replace(WORK, mode="disaggregated", rollout_gpus=8), 16)
    total = s["generation_s"] + s["scoring_s"] + s["training_s"] + s["sync_s"]
    np.testing.assert_allclose(s["rl_step_time_s"], total, rtol=1e-12)
    assert s["trainer_gpus"][0] == 8


def test_whole_run_cost_is_gpu_hours_times_price():
    run = rl.whole_run(CHOICES, WORK, 16, 100)
    x = base_inputs(CATALOG, rl.training_choices(CHOICES, WORK))
    assert run["wall_time_s"] >= 100 * run["rl_step_time_s"]
    assert run["solve_time_s"] == pytest.approx(100 * run["rl_step_time_s"], rel=1e-9)
    assert run["gpu_hours"] == pytest.approx(16 * run["wall_time_s"] / 3600, rel=1e-9)
    assert run["cost_usd"] == pytest.approx(run["gpu_hours"] * x["price_usd_per_gpu_hour"],
                                            rel=1e-9)
    assert 0 < run["expected_failures"] < 1 and run["energy_facility_j"] > 0


@pytest.mark.parametrize("work,message", [
    (replace(WORK, mode="hybrid"), "--rl-mode 'hybrid' is not one of: colocated, disaggregated"),
    (replace(WORK, group_size=0), "--rollout-group-size 0 must be an integer >= 1"),
    (replace(WORK, response_len=-5.0), "--response-len -5.0 must be a number > 0"),
    (replace(WORK, mode="disaggregated", rollout_gpus=16),
     "no split of 16 GPUs leaves a trainer"),
])
def test_bad_input_is_one_line(work, message):
    with pytest.raises(CapplanError) as err:
        rl.rl_step(CHOICES, work, 16)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_several_totals_in_one_call_match_one_at_a_time():
    work = replace(WORK, mode="disaggregated", off_policy=True)
    many = rl.rl_candidates(CHOICES, work, [8, 16, 24])
    best = rl.best_split(many)
    assert list(many["gpus"][best]) == [8.0, 16.0, 24.0]
    runs = rl.whole_runs(CHOICES, work, {k: v[best] for k, v in many.items()
                                         if np.ndim(v)}, 50)
    for j, g in enumerate((8, 16, 24)):
        one = rl.whole_run(CHOICES, work, g, 50)
        assert one["rollout_gpus"] == many["rollout_gpus"][best[j]]
        assert one["rl_step_time_s"] == pytest.approx(many["rl_step_time_s"][best[j]], rel=1e-12)
        assert one["cost_usd"] == pytest.approx(runs["cost_usd"][j], rel=1e-12)


PAGE = Path(__file__).resolve().parents[1] / "docs" / "post-training-rl.md"


def test_post_training_rl_page_numbers():
    """The numbers of docs/post-training-rl.md, recomputed (the page's checked markers)."""
    text = " ".join(PAGE.read_text().split())
    expected = []
    for args in PUBLISHED_TPOT:
        expected.append(f"{_tpot(*args[:3], prompt=args[3]) * 1e3:.2f} ms")
    colocated = rl.whole_run(CHOICES, rl.RLConfig(), 16, 1000)
    on = rl.whole_run(CHOICES, rl.RLConfig(mode="disaggregated"), 16, 1000)
    off = rl.whole_run(CHOICES, rl.RLConfig(mode="disaggregated", off_policy=True), 16, 1000)
    c = colocated
    expected += [f"{c['rl_step_time_s']:.1f} s", f"{c['generation_s']:.1f} s",
                 f"{c['scoring_s']:.1f} s", f"{c['training_s']:.1f} s",
                 f"{c['sync_s']:.2f} s", f"{100 * c['generation_share']:.0f} %",
                 f"{100 * c['scoring_share']:.0f} %", f"{100 * c['training_share']:.0f} %",
                 f"{c['decode_s']:.1f} s", f"{c['rollout_tp_comm_s']:.1f} s",
                 f"{c['wall_time_s'] / 3600:.1f} h", f"{c['cost_usd']:.0f} USD",
                 f"{c['energy_facility_j'] / 3.6e6:.0f} kWh", f"{c['co2e_kg']:.0f} kg CO2e",
                 f"{on['rl_step_time_s']:.1f} s", f"{off['rl_step_time_s']:.1f} s",
                 f"{off['cost_usd']:.0f} USD"]
    assert (c["engine_gpus"], c["concurrent"], c["longest_response"]) == (4, 512, 4096)
    assert (off["rollout_gpus"], off["trainer_gpus"]) == (8, 8)
    missing = [e for e in expected if e not in text]
    assert not missing, f"docs/post-training-rl.md lacks (or has stale) {missing}"
    # the GRPO section of docs/post-training.md quotes the same run
    summary = " ".join((PAGE.parent / "post-training.md").read_text().split())
    quoted = [f"{c['rl_step_time_s']:.1f} s", f"generation {100 * c['generation_share']:.0f} %",
              f"scoring {100 * c['scoring_share']:.0f} %",
              f"training {100 * c['training_share']:.0f} %",
              f"{c['wall_time_s'] / 3600:.1f} h", f"{c['cost_usd']:.0f} USD"]
    worst = max(abs(_tpot(*a[:3], prompt=a[3]) / a[4] - 1) for a in PUBLISHED_TPOT)
    assert worst < 0.05  # "within 5 %"
    missing = [q for q in quoted if q not in summary]
    assert not missing, f"docs/post-training.md lacks (or has stale) {missing}"


def test_a_model_larger_than_a_node_gets_a_multi_node_engine():
    run = rl.whole_run(RunChoices(model="deepseek-v3", hardware="h200"), rl.RLConfig(), 256, 10)
    assert run["engine_gpus"] > 8 and np.isfinite(run["rl_step_time_s"])
    # the engine's all-reduces cross nodes: slower per step than inside one
    assert run["rollout_tp_comm_s"] > 0


def test_nothing_fits_says_which_pool():
    with pytest.raises(CapplanError, match="the trainer does not fit in memory on 8 GPUs"):
        rl.whole_run(RunChoices(model="llama3-70b", hardware="h100-sxm"), rl.RLConfig(), 8, 10)
    with pytest.raises(CapplanError, match="no inference engine .* holds the 16 GB of weights"):
        rl.whole_run(CHOICES, rl.RLConfig(kv_memory_fraction=0.001), 16, 10)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([8, 16, 32]), st.floats(64, 8192), st.booleans())
def test_best_split_equals_brute_force_property(gpus, response_len, off_policy):
    work = rl.RLConfig(prompts=64, group_size=8, prompt_len=256, response_len=response_len,
                       mode="disaggregated", off_policy=off_policy)
    s = rl.rl_step(CHOICES, work, gpus)
    brute = [float(rl.rl_step(CHOICES, replace(work, rollout_gpus=int(r)), gpus)
                   ["rl_step_time_s"][0]) for r in s["rollout_gpus"]]
    assert float(s["rl_step_time_s"][s["best"]]) == pytest.approx(min(brute), rel=1e-12)


def test_disaggregated_cluster_larger_than_the_batch_plans(recwarn):
    """Regression: a cluster with more GPUs than the trainer's batch has micro-batches
    (8 sequences, 32 GPUs) ran the whole-run stages on DP 32 > 8 and failed a domain check."""
    from planner.engine.search.rl_plan import plan_rl

    work = rl.RLConfig(prompts=4, group_size=2, mode="disaggregated", off_policy=True)
    result = plan_rl(CHOICES, work, "h100-sxm", [16, 32], 10)
    assert {r["gpus"] for r in result["rows"]} == {16, 32}
    assert all(np.isfinite(r["cost_usd"]) for r in result["rows"])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("updates", [1, 2, 4])
def test_whole_run_solves_rl_steps_times_the_rl_step(updates):
    """The RL step holds its ``updates`` optimizer steps: the run's failure-free time is
    rl_steps x the RL step whatever the mini-batches (was updates x too long)."""
    run = rl.whole_run(RunChoices(model="llama3-8b", hardware="h100-sxm"),
                       rl.RLConfig(updates=updates), 16, 100.0, catalog=CATALOG)
    assert run["solve_time_s"] == pytest.approx(100 * run["rl_step_time_s"], rel=1e-9)
    assert run["solve_time_s"] <= run["wall_time_s"] < 1.2 * run["solve_time_s"]
