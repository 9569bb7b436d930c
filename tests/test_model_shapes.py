"""Model shapes of issue 13: head sizes apart from h/a, MLA, sliding-window layers, MTP.

The new formulas reduce to the old ones for the shapes the old ones describe; the
catalog's new models match their published sizes; the kernel follows the new inputs;
the schema reports each bad combination on its own line.
"""

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic, sample_point
from hypothesis import given, settings
from hypothesis import strategies as st
from spaces import space_inputs

from formulas import communication, compute, memory
from hardware_catalog import load_catalog
from hardware_catalog.errors import CatalogError
from hardware_catalog.loader import parse_file
from planner.engine.inputs.scenario import model_inputs
from planner.engine.run.kernel_run import evaluate_inputs
from planner.engine.run.model import INPUTS, OUTPUTS, param_counts, run_model

CATALOG = load_catalog()

NEW = [compute.attention_input_params, compute.attention_output_params,
       compute.latent_norm_params, compute.matmul_forward_flops_per_token,
       compute.projection_width, compute.attended_keys_per_query,
       compute.attention_core_flops_per_token, compute.attention_core_head_bytes,
       compute.mtp_projection_params, compute.mtp_module_params,
       compute.mtp_layers_beyond_fullest_stage,
       memory.attention_shape_activation_bytes, communication.kv_chunk_head_bytes]


@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(13)
    check_symbolic(f, [sample_point(f, rng) for _ in range(6)], rel=1e-12, lambdified=True)


@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    rng = np.random.default_rng(2)
    check_input_kinds(f, [sample_point(f, rng) for _ in range(3)])


@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_documented_with_units_and_examples(f):
    assert f.reference and all(a.unit for a in f.arguments) and f.result_unit
    assert "Examples" in f.__doc__


# ---- the general formulas reduce to the standard-attention ones ----------------------------

shapes = st.tuples(st.integers(1, 128), st.sampled_from([1, 2, 4, 8]), st.integers(1, 8),
                   st.integers(1, 2**17), st.sampled_from([1, 2, 4, 8]))


@settings(max_examples=200, deadline=None)
@given(shapes)
def test_heads_of_h_over_a_give_the_standard_counts(shape):
    head, group, kv_heads, s, tp = shape
    a = kv_heads * group
    h, d = a * head, float(head)
    full = compute.attention_input_params(h, a, kv_heads, d, d, 0, 0, 0) \
        + compute.attention_output_params(h, a, d)
    assert full == compute.attention_params(h, a, kv_heads)
    assert compute.attention_core_flops_per_token(s, a, d, d) \
        == compute.attention_core_forward_flops_per_token(h, s)
    assert compute.attention_core_head_bytes(s, a, d, d, tp, 2) == pytest.approx(
        compute.attention_core_bytes(s, h, tp, 2), rel=1e-15)
    assert communication.kv_chunk_head_bytes(s, kv_heads, d, d, tp, 2) == pytest.approx(
        communication.kv_chunk_bytes(s, h, a, kv_heads, tp, 2), rel=1e-15)
    assert memory.attention_shape_activation_bytes(s, 1, h, a, kv_heads, d, d, 0, 0, 0,
                                                   tp) == 0
    assert compute.projection_width(
        compute.attention_input_params(h, a, kv_heads, d, d, 0, 0, 0), h, tp) \
        == pytest.approx(compute.qkv_projection_width(h, a, kv_heads, tp), rel=1e-15)


def test_wider_heads_store_more_activations():
    """Qwen3-235B: 64 heads of 128 against h = 4096; Q, K, V and O as tensors, by hand."""
    s, b, h, a, kv, d, t = 4096, 1, 4096, 64, 4, 128, 4
    korthikanti = 2 * s * b * h * (2 + 2 * kv / a) / t  # Q, K, V, O at heads of h/a
    by_hand = 2 * s * b * (a * d + kv * d + kv * d + a * d) / t
    assert memory.attention_shape_activation_bytes(s, b, h, a, kv, d, d, 0, 0, 0, t) \
        == by_hand - korthikanti


def test_mla_latents_are_stored_on_every_tp_rank():
    args = (4096, 1, 7168, 128, 128, 192, 128)
    extra = memory.attention_shape_activation_bytes(*args, 1536, 512, 64, 8) \
        - memory.attention_shape_activation_bytes(*args, 0, 0, 0, 8)
    assert extra == 2 * 4096 * (1536 + 512 + 64)


# ---- sliding window --------------------------------------------------------------------------

@pytest.mark.parametrize("s,w", [(4096, 128), (8192, 4096), (1000, 1), (512, 512),
                                 (4096, 1024)])
def test_banded_keys_match_an_enumeration_of_the_causal_band(s, w):
    """Query i sees keys max(0, i-w+1)..i; the counting doubles the causal pairs."""
    pairs = sum(min(i, w) for i in range(1, s + 1))
    counted = s * compute.attended_keys_per_query(s, w) / 2  # non-causal counting / 2
    assert counted == pytest.approx(pairs, rel=1 / s)  # w/2 pairs: the diagonal's half


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2**17), st.integers(1, 2**17), st.integers(1, 2**17))
def test_window_keys_are_monotone_and_capped_at_s(s, w1, w2):
    lo, hi = sorted((w1, w2))
    k_lo = compute.attended_keys_per_query(s, lo)
    k_hi = compute.attended_keys_per_query(s, hi)
    assert 0 < k_lo <= k_hi * (1 + 1e-15) <= s * (1 + 1e-15)
    assert compute.attended_keys_per_query(s, s + hi) == s
    assert k_lo <= 2 * lo


# ---- catalog models --------------------------------------------------------------------------

def _counts(model_id, **override):
    return param_counts({**model_inputs(CATALOG.model(model_id)), **override})


#: (model, published total, published active or None, relative tolerance, why)
PUBLISHED = [
    ("qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02, "30.5B / 3.3B rounded; QK-norms not counted"),
    ("qwen3-235b-a22b", 235e9, 22e9, 0.01, "235B / 22B rounded to 1B"),
    ("qwen3-next-80b-a3b", 80e9, None, 0.02,
     "80B; the count is 81.2B with its MTP module (1.6B), 79.6B without; the '3B activated' "
     "leaves out the embeddings (count: 3.77B with them)"),
    ("gpt-oss-120b", 116.83e9, None, 0.001, "biases and attention sinks not counted"),
    ("nemotron4-15b", 15.7e9, None, 0.01, "3.2B + 12.5B, each rounded to 0.1B"),
    ("nemotron4-340b", 341.0e9, None, 0.001, "9.4B + 331.6B"),
    ("grok1-314b", 314e9, None, 0.01, "314B; the count is 315.7B (+0.5 %)"),
]


@pytest.mark.parametrize("model_id,total,active,rel,why", PUBLISHED)
def test_new_models_match_their_published_sizes(model_id, total, active, rel, why):
    counts = _counts(model_id)
    assert counts["params"] == pytest.approx(total, rel=rel), why
    assert CATALOG.model(model_id).params_published.value == total
    if active is not None:
        assert counts["active_params"] == pytest.approx(active, rel=rel), why


def test_gpt_oss_active_count_leaves_out_the_input_embedding():
    """Model card Table 1: 5.13B active; the count less the 201,088 x 2,880 input table."""
    m = CATALOG.model("gpt-oss-120b")
    active = _counts("gpt-oss-120b")["active_params"] - m.vocab * m.hidden
    assert active == pytest.approx(5.13e9, rel=0.002)
    assert m.active_params_published.value == 5.13e9


def test_new_model_shapes():
    qwen = CATALOG.model("qwen3-30b-a3b")
    assert qwen.head_dim * qwen.heads == 2 * qwen.hidden and qwen.moe_layers == 48
    oss = CATALOG.model("gpt-oss-120b")
    assert (oss.sliding_window, oss.window_layers, oss.layers) == (128, 18, 36)
    assert CATALOG.model("grok1-314b").tied_embeddings
    assert CATALOG.model("deepseek-v3").mtp_layers == 1


def test_deepseek_mtp_module_is_the_model_card_14b():
    """HF model card: 685B = 671B main + 14B MTP, the 14B with its own copy of the
    embedding and head (shared in training, not counted by capplan); rounded to 1B."""
    m = CATALOG.model("deepseek-v3")
    mtp = _counts("deepseek-v3")["mtp_params"]
    assert mtp + 2 * m.vocab * m.hidden == pytest.approx(14e9, rel=0.04)


# ---- the kernel follows the new inputs -------------------------------------------------------

def _inputs(model_id, hardware="h100-sxm", max_gpus=512):
    return space_inputs(CATALOG, model_id, hardware, tokens=1e12, min_gpus=64,
                        max_gpus=max_gpus)


@pytest.mark.parametrize("model_id", ["gpt-oss-120b", "qwen3-30b-a3b", "deepseek-v3"])
def test_kernel_equals_direct_composition(model_id):
    x = _inputs(model_id)
    compiled = evaluate_inputs(x)
    direct = run_model({k: (v if np.ndim(v) else float(v)) for k, v in x.items()})
    for name in OUTPUTS:
        expected = np.broadcast_to(direct[name], compiled[name].shape)
        scale = np.max(np.abs(expected))
        np.testing.assert_allclose(compiled[name], expected, rtol=1e-9,
                                   atol=1e-12 * max(scale, 1.0), err_msg=name)


def _one(model_id, where=None, **override):
    """Outputs of one layout (the first enumerated with the sizes ``where``), overridden."""
    x = _inputs(model_id)
    chosen = np.ones_like(x["pp"], dtype=bool)
    for size, value in (where or {}).items():
        chosen &= x[size] == value
    i = int(np.flatnonzero(chosen)[0])
    first = {k: (v[i:i + 1] if np.ndim(v) else v) for k, v in x.items()}
    return evaluate_inputs({**first, **override})


def test_sliding_window_cuts_attention_flops_by_the_band():
    """gpt-oss-120b: 18 of 36 layers see k(s, 128) keys instead of s; model FLOPs per token
    (3 x forward) fall by exactly 3 x 18 x 2 a (d_h + d_v) (s - k)."""
    x = _inputs("gpt-oss-120b")
    # on a stack with a fused sink kernel (the default stack's runs gpt-oss's sinks
    # unfused, where the window saves no time: tests/test_kernels_exist.py)
    windowed = _one("gpt-oss-120b", fused_attention_sinks=1.0)
    full = _one("gpt-oss-120b", window_layers=0.0, fused_attention_sinks=1.0)
    s, gpus = x["seq_len"], x["gpus"][0]
    saved = 18 * 2 * 64 * (64 + 64) * (s - compute.attended_keys_per_query(s, 128))

    def flops_per_token(out):  # TFLOP/s per GPU -> FLOP per token
        return out["tflops_per_gpu"][0] * 1e12 * gpus / out["tokens_per_s"][0]

    assert flops_per_token(full) - flops_per_token(windowed) == pytest.approx(3 * saved,
                                                                               rel=1e-9)
    assert windowed["step_time_s"][0] < full["step_time_s"][0]


def test_mtp_module_costs_a_layer_and_logits():
    layout = {"pp": 1, "tp": 8, "ep": 8}
    with_mtp = _one("deepseek-v3", layout)
    without = _one("deepseek-v3", layout, mtp_layers=0.0)
    for name in ("step_time_s", "memory_per_gpu_bytes", "params", "checkpoint_bytes"):
        assert with_mtp[name][0] > without[name][0], name
    # the MTP block's TP all-reduces and all-to-alls: one more layer's worth (62 vs 61)
    assert without["tp_comm_s"][0] > 0 and without["ep_comm_s"][0] > 0
    assert with_mtp["tp_comm_s"][0] / without["tp_comm_s"][0] == pytest.approx(62 / 61)
    assert (with_mtp["params"] - without["params"])[0] == pytest.approx(11.61e9, rel=1e-3)
    # one MoE layer + projection + logits on top of 61 layers + logits: 1-10 % more time
    ratio = with_mtp["step_time_s"][0] / without["step_time_s"][0]
    assert 1.005 < ratio < 1.10


def test_mtp_module_on_a_light_last_stage_costs_no_time():
    """PP 16: stages of 4 layers, the last of 1 + the MTP module, shorter than a full one."""
    stages = {"pp": np.array([16.0]), "stage_layers": np.array([4.0])}  # 61 = 15 x 4 + 1
    with_mtp = _one("deepseek-v3", {"pp": 1}, **stages)
    without = _one("deepseek-v3", {"pp": 1}, mtp_layers=0.0, **stages)
    assert with_mtp["step_time_s"][0] == without["step_time_s"][0]
    assert with_mtp["params"][0] > without["params"][0]
    assert compute.mtp_layers_beyond_fullest_stage(61, 16, 4, 1) == 0
    assert compute.mtp_layers_beyond_fullest_stage(64, 16, 4, 1) == 1  # a full last stage
    assert compute.mtp_layers_beyond_fullest_stage(63, 2, 32, 2) == 1  # 31 + 2 vs 32


def test_head_dim_sets_the_attention_width():
    """Qwen3-30B-A3B with heads of h/a = 64 instead of 128: fewer params, less time."""
    wide = _one("qwen3-30b-a3b")
    narrow = _one("qwen3-30b-a3b", head_dim=64.0, v_head_dim=64.0)
    layers, h, a, kv = 48, 2048, 32, 4
    assert (wide["params"] - narrow["params"])[0] == layers * 64 * (2 * h * (a + kv))
    assert narrow["step_time_s"][0] < wide["step_time_s"][0]


def test_context_parallel_chunks_follow_the_head_sizes():
    """DeepSeek-V3 at CP 2: K of 192 and V of 128 per head, not 2h/a = 112."""
    x = _inputs("deepseek-v3")
    first = {k: (v[:1] if np.ndim(v) else v) for k, v in x.items()}
    cp = {**first, "cp": np.array([2.0]), "cp_overlap": 0.0}
    mla = run_model(cp)["cp_comm_s"]
    mha = run_model({**cp, "head_dim": 56.0, "v_head_dim": 56.0})["cp_comm_s"]
    assert mla[0] > 2 * mha[0]


def test_new_inputs_are_at_the_end_of_the_model_section():
    names = list(INPUTS)
    # the workload's tokens and the batch they are counted at, then the shape fields
    start = names.index("tokens")
    assert names[start + 1:start + 3] == ["critical_batch_tokens", "reference_batch"]
    assert names[start + 3:start + 11] == [
        "head_dim", "v_head_dim", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
        "window", "window_layers", "mtp_layers"]


# ---- schema: one line per problem ------------------------------------------------------------

BASE = """schema_version = 1
kind = "model"
id = "x"
name = "x"
layers = 4
hidden = 100
heads = 8
vocab = 1000
seq_len = 2048
"""


@pytest.mark.parametrize("extra,message", [
    ("head_dim = 32\n", None),  # 8 x 32 != 100 is allowed with head_dim
    ("head_dim = 32\nsliding_window = 4096\n", None),  # a window beyond seq_len is allowed
    ("head_dim = 0\n", "head_dim"),
    ("sliding_window = 128\nsliding_window_layers = 5\nhead_dim = 32\n",
     "sliding_window_layers: expected 0..layers (4), got 5"),
    ("sliding_window_layers = 2\nhead_dim = 32\n",
     "sliding_window_layers: given without sliding_window"),
    ("mtp_layers = 9\nhead_dim = 32\n", "mtp_layers: expected 0..layers (4), got 9"),
    ("mtp_layers = -1\nhead_dim = 32\n", "mtp_layers"),
    ("v_head_dim = 16\nhead_dim = 32\n", "v_head_dim: MLA field given without kv_lora_rank"),
    ("kv_lora_rank = 16\nqk_rope_head_dim = 8\nqk_nope_head_dim = 8\nv_head_dim = 8\n"
     "head_dim = 32\n", "head_dim: not used with MLA"),
])
def test_schema_checks(tmp_path, extra, message):
    path = tmp_path / "x.toml"
    path.write_text(BASE + extra)
    if message is None:
        entry = parse_file(path, user=True)
        assert entry.head_dim in (None, 32)
        return
    with pytest.raises(CatalogError) as exc:
        parse_file(path, user=True)
    text = str(exc.value)
    assert message in text and "\n" not in text.strip()


def test_every_problem_is_listed_once(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(BASE + "sliding_window_layers = 9\nmtp_layers = 9\n")
    text = str(pytest.raises(CatalogError, parse_file, path, user=True).value)
    for key in ("heads: expected a divisor of hidden", "sliding_window_layers:",
                "mtp_layers:"):
        assert text.count(key) == 1, text


def test_window_layers_default_to_all_layers(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(BASE + "head_dim = 32\nsliding_window = 4096\n")
    entry = parse_file(path, user=True)
    x = model_inputs(entry)
    assert (x["window"], x["window_layers"], x["head_dim"]) == (4096.0, 4.0, 32.0)


def test_cli_bad_user_model_is_one_line(tmp_path, capsys):
    from planner.cli.main import main

    path = tmp_path / "bad.toml"
    path.write_text(BASE + "head_dim = 32\nsliding_window = 128\nsliding_window_layers = 7\n"
                    "mtp_layers = 5\n")
    assert main(["evaluate", "--model", str(path), "--hardware", "h100-sxm", "--gpus", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("capplan: error: ")
    assert "sliding_window_layers: expected 0..layers (4), got 7" in err
    assert "mtp_layers: expected 0..layers (4), got 5" in err and "Traceback" not in err


def test_cli_evaluates_the_example_windowed_model(capsys):
    import json
    from pathlib import Path

    from planner.cli.main import main

    example = Path(__file__).parent.parent / "docs/examples/my-windowed-model.toml"
    assert main(["evaluate", "--model", str(example), "--hardware", "h100-sxm", "--gpus", "64",
                 "-f", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = out[0] if isinstance(out, list) else out
    assert row["params"] == pytest.approx(9.24e9, rel=1e-3)  # Gemma 2 9B, arXiv:2408.00118
