"""Hybrid Mamba-Transformer models (Nemotron-H): Mamba-2 layers and one-part blocks.

The accounting of a hybrid's blocks is checked against the transformer's: a transformer
whose layers are each written as two one-part blocks (attention only, MLP only) is the
same model, and must give the same parameters, FLOPs, memory and step time. The Mamba-2
terms are checked against the module shapes of Megatron-Core's MambaMixer and the FLOP
count NVIDIA's published TFLOP/s per GPU use (Megatron-LM ``hybrid_flops``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from formulas import communication, compute
from hardware_catalog import load_catalog
from hardware_catalog.errors import CatalogError
from hardware_catalog.hf_config import model_data
from planner.engine.layouts import rl
from planner.engine.run.model import param_counts
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.errors import CapplanError, ModelRefused

NEMOTRON_H_56B_PATTERN = (
    "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
    "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")

#: One layout of each part dgxc-benchmarking publishes for Nemotron-H 56B
#: (NVIDIA/dgxc-benchmarking@841f546 nemotron-h/README.md: FP8, sequence 8,192, PP 1,
#: global batch 3 per GPU).
PUBLISHED_LAYOUTS = [("gb300", 64, 2, 1), ("gb200", 64, 2, 1), ("b200", 64, 2, 1),
                     ("b200", 32, 4, 2), ("h100-sxm", 64, 8, 1)]


def _model_file(directory, model_id, **fields):
    """A model TOML of ``fields`` (shape keys and values) in ``directory``."""
    path = directory / f"{model_id}.toml"
    body = "".join(f"{key} = {str(value).lower() if isinstance(value, bool) else value}\n"
                   for key, value in fields.items())
    path.write_text(f'schema_version = 1\nkind = "model"\nid = "{model_id}"\n'
                    f'name = "{model_id}"\nsource = "test"\nas_of = 2025-04-10\n{body}')
    return str(path)


def _split_model(tmp_path, layers=32):
    """Llama 3 8B's shape written as 2 x layers one-part blocks."""
    return _model_file(tmp_path, "split", layers=2 * layers, hidden=4096, heads=32,
                       kv_heads=8, ffn=14336, gated_mlp=True, vocab=128256, seq_len=8192,
                       mixer_free_layers=layers, mlp_free_layers=layers)


def _run(model, **kw):
    layout = dict(hardware="h100-sxm", gpus=64, tp=2, pp=1, cp=1, micro_batch=1,
                  global_batch=128, seq_len=8192, precision="bf16", as_frame=False)
    return planner.evaluate(model=model, **{**layout, **kw})


def test_mamba_mixer_weights_match_megatron_module_shapes():
    # MambaMixer (Megatron-LM@d98e8a6 megatron/core/ssm/mamba_mixer.py) for Nemotron-H
    # 56B: in_proj h x (2 d + 2 G N + H), conv1d (d + 2 G N) x 4 taps + bias, A_log, D,
    # dt_bias (H each), the gated norm (d), out_proj d x h; d = 256 x 64, G N = 8 x 256
    h, d, gn, heads = 8192, 256 * 64, 8 * 256, 256
    expected = h * (2 * d + 2 * gn + heads) + (d + 2 * gn) * 5 + 3 * heads + d + d * h
    assert compute.mamba2_mixer_params(h, heads, 64, 256, 8) == expected


@pytest.mark.parametrize("model, published, resolution", [
    ("nemotron-h-8b", 8e9, 1e9), ("nemotron-h-47b", 47e9, 1e9),
    ("nemotron-h-56b", 56e9, 1e9), ("nemotron3-nano-30b-a3b", 31.6e9, 0.1e9)])
def test_nemotron_parameter_counts_match_the_published_sizes(model, published, resolution):
    params = _run(model, hardware="gb300", gpus=64, tp=2)["params"]
    assert params == pytest.approx(published, abs=resolution / 2)


def test_model_flops_match_megatrons_hybrid_count():
    # Megatron-LM@d98e8a6 megatron/training/training.py hybrid_flops for Nemotron-H 56B,
    # per token: attention (GQA 8 groups, 128-wide heads), squared-ReLU MLP (expansion 4),
    # Mamba (d_in = 2h, state 256, 8 groups, 256 heads), logits; x3 for the backward
    h, s, vocab, d_in = 8192, 8192, 131072, 2 * 8192
    attention = 4 * h * (h + h * 8 / 64) + 2 * s * h
    mlp = 4 * 4 * h * h
    mamba = 2 * h * (2 * d_in + 2 * 8 * 256 + 256) + 7 * d_in * 256 + 2 * d_in * h
    megatron = 3 * (10 * attention + 54 * mlp + 54 * mamba + 2 * h * vocab)
    ours = _run("nemotron-h-56b", hardware="gb200", tp=2, global_batch=192,
                precision="fp8-cs")["model_flops_per_token"]
    # the scan: 2QNG + 2QPH + 4NPH (ours) vs 7 d N (Megatron's estimate); conv and norm
    # weights counted as matmul weights (0.05 %)
    assert ours == pytest.approx(megatron, rel=0.02)


# (on Megatron stacks; torchtitan's op-level selective recompute counts whole layers, so
# a model with one-part blocks gets the attention-core accounting instead, and an FSDP
# stack gathers each block's weights apart: twice the collectives, each half the size)
@pytest.mark.parametrize("stack", [None, "megatron-bridge-2025", "megatron-core-2025"])
def test_a_transformer_as_one_part_blocks_is_the_same_model(tmp_path, stack):
    a = _run("llama3-8b", stack=stack)
    b = _run(_split_model(tmp_path), stack=stack)
    for key in ("params", "model_flops_per_token", "hfu",
                "memory_per_gpu_bytes", "activation_bytes", "step_time_s", "compute_s",
                "launch_s", "tp_comm_s", "dp_comm_s"):
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12), key


def _hybrid_file(directory, attention, mamba, mlp):
    return _model_file(directory, f"hybrid-{attention}-{mamba}-{mlp}",
                       layers=attention + mamba + mlp, hidden=2048, heads=16, kv_heads=8,
                       ffn=8192, gated_mlp=False, vocab=32000, seq_len=4096,
                       mamba_layers=mamba, mamba_heads=64, mamba_head_dim=64,
                       mamba_state_dim=128, mamba_groups=8, mixer_free_layers=mlp,
                       mlp_free_layers=attention + mamba)


@settings(max_examples=15, deadline=None)
@given(attention=st.integers(0, 4), mamba=st.integers(1, 6), mlp=st.integers(0, 6))
def test_hybrid_weights_are_the_sum_of_its_blocks(tmp_path_factory, attention, mamba, mlp):
    # every block: its part and one norm (h); embeddings untied (2 V h) and the final norm
    h = 2048
    attention_block = h * (h + 2 * 8 * 128) + h * h
    expected = (attention * attention_block
                + mamba * compute.mamba2_mixer_params(h, 64, 64, 128, 8)
                + mlp * 2 * h * 8192 + (attention + mamba + mlp) * h + 2 * 32000 * h + h)
    path = _hybrid_file(tmp_path_factory.mktemp("hybrid"), attention, mamba, mlp)
    r = _run(path, gpus=8, tp=1, global_batch=8, seq_len=4096)
    assert r["params"] == pytest.approx(expected, rel=1e-12)
    # and more blocks of any kind never make a step faster
    more = _hybrid_file(tmp_path_factory.mktemp("hybrid"), attention, mamba + 1, mlp + 1)
    assert _run(more, gpus=8, tp=1, global_batch=8, seq_len=4096)["step_time_s"] \
        > r["step_time_s"]


@pytest.mark.parametrize("hardware, gpus, tp, mb", PUBLISHED_LAYOUTS)
def test_published_nemotron_h_layouts_are_timed(hardware, gpus, tp, mb):
    r = _run("nemotron-h-56b", hardware=hardware, gpus=gpus, tp=tp, micro_batch=mb,
             global_batch=3 * gpus, precision="fp8-cs")
    assert np.isfinite(r["step_time_s"]) and r["step_time_s"] > 0
    # within the memory model's 10 % of the part's memory (the runs ran)
    assert r["memory_per_gpu_bytes"] <= 1.1 * r["hbm_bytes"] or r["fits"]
    assert 0.15 < r["mfu"] < 0.7


def test_hybrid_pattern_of_a_config_json_gives_the_catalog_model():
    config = {"model_type": "nemotron_h", "_name_or_path": "nvidia/Nemotron-H-56B-Base-8K",
              "hidden_size": 8192, "num_hidden_layers": 118, "num_attention_heads": 64,
              "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 32768,
              "vocab_size": 131072, "tie_word_embeddings": False,
              "max_position_embeddings": 8192,
              "hybrid_override_pattern": NEMOTRON_H_56B_PATTERN,
              "mamba_num_heads": 256, "mamba_head_dim": 64, "ssm_state_size": 256,
              "n_groups": 8}
    data = model_data(json.dumps(config), "config.json", "config")
    assert (data["mamba_layers"], data["mixer_free_layers"], data["mlp_free_layers"]) \
        == (54, 54, 64)
    assert (data["mamba_heads"], data["mamba_head_dim"], data["mamba_state_dim"],
            data["mamba_groups"]) == (256, 64, 256, 8)
    assert not data["gated_mlp"]


@pytest.mark.parametrize("pattern, message", [
    ("M-M", "expected one character a layer (118)"),
    (NEMOTRON_H_56B_PATTERN[:-1] + "Q", "'Q' is not a block kind; expected M, *, -, E"),
    (NEMOTRON_H_56B_PATTERN[:-1] + "G", "'G' is a Gated DeltaNet block, which a config.json "
                                        "does not describe here (write a model TOML)"),
])
def test_bad_hybrid_pattern_is_one_clear_error(pattern, message):
    config = {"hidden_size": 8192, "num_hidden_layers": 118, "num_attention_heads": 64,
              "vocab_size": 131072, "max_position_embeddings": 8192,
              "hybrid_override_pattern": pattern,
              "mamba_num_heads": 256, "mamba_head_dim": 64, "ssm_state_size": 256}
    with pytest.raises(CatalogError, match=re.escape(message)):
        model_data(json.dumps(config), "config.json", "config")


def test_mamba_fields_without_mamba_layers_are_refused_on_the_command_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('schema_version = 1\nkind = "model"\nid = "bad"\nname = "bad"\n'
                    'source = "test"\nas_of = 2025-01-01\nlayers = 4\nhidden = 256\n'
                    'heads = 4\nvocab = 1000\nseq_len = 512\nmamba_heads = 8\n')
    done = subprocess.run([sys.executable, "-m", "planner", "evaluate", "-m", str(path),
                           "-H", "h100", "-n", "8"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "mamba_heads" in lines[0] and "mamba_layers" in lines[0]
    assert "Traceback" not in done.stderr


def test_context_parallel_mamba_layers_pay_their_all_to_alls():
    # Megatron-Core's Mamba CP: all-to-alls around the scan in the forward and backward,
    # not hidden; the 10 attention layers' ring exchange hides behind their attention
    kw = dict(hardware="gb200", gpus=256, tp=2, pp=1, micro_batch=1, global_batch=768,
              precision="fp8-cs", recompute="selective", return_inputs=True)
    one, _ = _run("nemotron-h-56b", cp=1, **kw)
    two, x = _run("nemotron-h-56b", cp=2, **kw)
    assert one["cp_comm_s"] == 0
    # 54 Mamba layers x 12 micro-batches x both all-to-alls of 4,096 tokens a rank, at the
    # NVLink bandwidth the CP pair gets (two GPUs of one NVL72 domain)
    bandwidth = x["scale_up_bandwidth_bytes_per_s"] * x["scale_up_bus_efficiency"]
    per_layer = communication.mamba_context_parallel_time(
        4096, compute.mamba2_in_proj_width(256, 64, 256, 8) / 2, 256 * 64 / 2, 2, 2, 0,
        bandwidth, x["intra_latency_s"])
    assert two["cp_comm_s"] == pytest.approx(54 * 12 * per_layer, rel=0.02)


def test_moe_blocks_of_a_hybrid_pattern_give_the_catalog_model(tmp_path):
    # Nemotron 3 Nano: 'E' blocks are MoE layers without a token mixer
    config = {"model_type": "nemotron_h", "_name_or_path": "nvidia/Nemotron-3-Nano-30B-A3B",
              "hidden_size": 2688, "num_hidden_layers": 52, "num_attention_heads": 32,
              "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 1856,
              "vocab_size": 131072, "tie_word_embeddings": False,
              "max_position_embeddings": 8192,
              "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
              "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128,
              "n_groups": 8, "n_routed_experts": 128, "num_experts_per_tok": 6,
              "moe_intermediate_size": 1856, "n_shared_experts": 2}
    data = model_data(json.dumps(config), "config.json", "config")
    assert (data["mamba_layers"], data["mixer_free_layers"], data["mlp_free_layers"],
            data["dense_layers"]) == (23, 23, 29, 0)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    layout = dict(hardware="gb200", gpus=8, tp=1, pp=1, cp=1, ep=8, micro_batch=2,
                  global_batch=512, as_frame=False)
    from_config = planner.evaluate(model=str(path), **layout)
    catalog = planner.evaluate(model="nemotron3-nano-30b-a3b", **layout)
    for key in ("params", "active_params", "step_time_s", "memory_per_gpu_bytes"):
        assert from_config[key] == pytest.approx(catalog[key], rel=1e-12), key
    # the MoE blocks are the MoE layers, and no dense MLP is left: 3.2-3.6 billion a token
    # (model card, with and without the embeddings)
    assert 3.2e9 < catalog["active_params"] < 3.7e9


def test_tp_must_divide_the_mamba_groups():
    # Megatron-Core's MambaMixer: ngroups % tp == 0 (Nemotron-H: 8 groups, 64 attention
    # heads); TP 16 fits the attention heads and the NVL72 domain, not the groups
    with pytest.raises(CapplanError, match="--tp 16 does not divide the 8 heads"):
        _run("nemotron-h-56b", hardware="gb200", gpus=256, tp=16, global_batch=768)
    assert _run("llama3-70b", hardware="gb200", gpus=256, tp=16,
                global_batch=768)["step_time_s"] > 0


def _generation(model):
    x = base_inputs(load_catalog(), RunChoices(model=model, hardware="h100-sxm"))
    counts = param_counts(x)
    config = rl.RLConfig(prompts=8, group_size=8, prompt_len=512, response_len=1024,
                         response_cv=0.0, mode="disaggregated")
    return rl.generation_time(x, config, counts["params"], counts["active_params"], 8, 8)


def test_rollouts_cache_keys_and_values_of_the_attention_layers_only(tmp_path):
    # vLLM's hybrid cache: K and V in the 10 attention layers of Nemotron-H 56B (8 KV
    # heads of 128, BF16), a fixed-size state per sequence in its 54 Mamba layers
    gen = _generation("nemotron-h-56b")
    assert float(gen["kv_bytes_per_token"]) == 2 * 10 * 8 * 128 * 2
    # a model of Mamba-2 layers only caches no key or value and still generates
    path = _model_file(tmp_path, "mamba2", layers=48, hidden=2048, heads=16, vocab=50280,
                       seq_len=4096, tied_embeddings=True, mamba_layers=48, mamba_heads=64,
                       mamba_head_dim=64, mamba_state_dim=128, mamba_groups=1,
                       mlp_free_layers=48)
    gen = _generation(path)
    assert float(gen["kv_bytes_per_token"]) == 0
    assert 0 < float(gen["generation_s"]) < np.inf


def test_nemotron3_super_sizes_match_the_published_ones():
    # arXiv:2604.12374: 120.6B weights, 12.7B active; the count assumes 32 query heads and
    # 8 Mamba groups (not in the sources read) and leaves out the MTP block
    r = _run("nemotron3-super-120b-a12b", hardware="gb300", gpus=64, tp=1, ep=64,
             global_batch=512)
    assert r["params"] == pytest.approx(120.6e9, rel=0.002)
    assert r["active_params"] == pytest.approx(12.7e9, rel=0.01)


def _moe_file(directory, latent):
    fields = dict(layers=8, hidden=2048, heads=16, kv_heads=4, ffn=1024, gated_mlp=True,
                  vocab=32000, seq_len=4096, experts=64, experts_per_token=8, moe_ffn=1024)
    if latent:
        fields["moe_latent_dim"] = latent
    return _model_file(directory, f"moe-latent-{latent}", **fields)


def test_latent_moe_dispatches_and_computes_in_the_latent_size(tmp_path):
    kw = dict(hardware="h100-sxm", gpus=64, tp=1, ep=16, global_batch=64, seq_len=4096)
    plain = _run(_moe_file(tmp_path, 0), **kw)
    same = _run(_moe_file(tmp_path, 2048), **kw)  # a latent as wide as the hidden size
    narrow = _run(_moe_file(tmp_path, 512), **kw)
    # at l = h only the two h x h projections are added, in every MoE layer
    assert same["params"] - plain["params"] == 8 * 2 * 2048 * 2048
    assert same["ep_comm_s"] == pytest.approx(plain["ep_comm_s"], rel=1e-12)
    # a narrower latent: the routed experts' weights and the dispatched bytes shrink
    routed = 8 * 64 * 3 * 1024
    assert narrow["params"] == pytest.approx(
        plain["params"] - routed * (2048 - 512) + 8 * 2 * 2048 * 512, rel=1e-12)
    assert narrow["ep_comm_s"] < 0.5 * plain["ep_comm_s"]
    assert narrow["step_time_s"] < plain["step_time_s"]


def test_moe_latent_size_of_a_config_json_is_read():
    config = {"hidden_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 32,
              "vocab_size": 131072, "max_position_embeddings": 8192,
              "n_routed_experts": 512, "num_experts_per_tok": 22,
              "moe_intermediate_size": 2688, "moe_latent_size": 1024}
    assert model_data(json.dumps(config), "config.json", "config")["moe_latent_dim"] == 1024


def test_a_stack_without_mamba_layers_is_refused_in_one_line():
    # torchtitan's and MaxText's models have no Mamba-2 mixer (stack field mamba2_layers)
    for args in (["-H", "gb200", "--tp", "2", "--pp", "1", "--stack", "torchtitan-fsdp2"],
                 ["-H", "tpu-v6e"]):  # the TPUs' own stack is MaxText
        done = subprocess.run([sys.executable, "-m", "planner", "evaluate", "-m",
                               "nemotron-h-56b", "-n", "64", *args],
                              capture_output=True, text=True, timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr
        assert "has no Mamba-2 layers" in lines[0]
        assert "stacks that have them: megatron-bridge-2025, megatron-core-2025" in lines[0]
    with pytest.raises(ModelRefused, match="stack 'maxtext-xla' has no Mamba-2 layers"):
        _run("nemotron3-nano-30b-a3b", hardware="tpu-v7", gpus=64, tp=1, ep=8,
             global_batch=512)


def test_the_alternative_stack_line_names_a_stack_without_mamba_layers():
    done = subprocess.run([sys.executable, "-m", "planner", "evaluate", "-m", "nemotron-h-56b",
                           "-H", "gb200", "-n", "64", "--tp", "2", "--pp", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert ("with --stack torchtitan-fsdp2: stack 'torchtitan-fsdp2' has no Mamba-2 layers"
            in done.stderr)


def test_one_problem_is_counted_once(tmp_path):
    # a problem's own words hold no '; ' (the separator of several problems)
    path = _model_file(tmp_path, "latent-without-experts", layers=4, hidden=256, heads=4,
                       vocab=1000, seq_len=512, moe_latent_dim=128)
    with pytest.raises(CatalogError) as refused:
        _run(path, gpus=8, tp=1)
    assert "problems" not in str(refused.value)
    assert "moe_latent_dim: given without experts (set experts or remove it)" in str(
        refused.value)
