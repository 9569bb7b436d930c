"""Gated linear attention (Gated DeltaNet) layers: Qwen3-Next-80B-A3B (issue 27, MZOO-06).

Each new formula states its units and reproduces a hand-checked number; the run model
charges the linear-attention layers their own projections, the chunked delta rule (linear
in the sequence length) and their activations; a model without such layers (every dense
model, every other MoE model) gets exactly what it got before.
"""

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic, sample_point
from spaces import space_inputs

from formulas import compute, memory
from hardware_catalog import load_catalog
from hardware_catalog.errors import CatalogError
from hardware_catalog.loader import parse_file
from planner.engine.inputs.scenario import model_inputs
from planner.engine.run.kernel_run import evaluate_inputs
from planner.engine.run.model import OUTPUTS, param_counts

CATALOG = load_catalog()
NEW = [compute.gated_deltanet_params, compute.gated_delta_rule_flops_per_token,
       compute.gated_delta_rule_bytes, memory.softmax_attention_activation_bytes,
       memory.gated_deltanet_activation_bytes, memory.gated_delta_rule_state_bytes]
UNITS = {"gated_deltanet_params": "1", "gated_delta_rule_flops_per_token": "FLOP",
         "gated_delta_rule_bytes": "B", "softmax_attention_activation_bytes": "B",
         "gated_deltanet_activation_bytes": "B", "gated_delta_rule_state_bytes": "B"}


@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_units_reference_and_symbolic_form(f):
    assert f.result_unit == UNITS[f.name]
    assert f.reference and all(a.unit for a in f.arguments) and "Examples" in f.__doc__
    rng = np.random.default_rng(27)
    check_symbolic(f, [sample_point(f, rng) for _ in range(4)], rel=1e-12, lambdified=True)
    check_input_kinds(f, [sample_point(f, rng) for _ in range(3)])


def test_hand_checked_numbers():
    """Qwen3-Next-80B-A3B: h 2048, 16 key / 32 value heads of d = 128, chunks of 64."""
    # in-projection 2048 x (2*16*128 + 2*32*128 + 2*32) + out-projection 32*128 x 2048
    assert compute.gated_deltanet_params(2048, 16, 32, 128) == 2048 * 12352 + 4096 * 2048
    # per head 6 d^2 + 10 C d + 2 C^2 / 3 = 98304 + 81920 + 2730.67
    assert compute.gated_delta_rule_flops_per_token(32, 128, 64) == pytest.approx(
        32 * (98304 + 81920 + 8192 / 3), rel=1e-15)
    # 2 B x 4096 tokens x 32 heads x (4 x 128 + 128^2 / 64)
    assert compute.gated_delta_rule_bytes(4096, 32, 128, 64, 2, 2) == 2 * 4096 * 32 * 768 / 2
    # 2 B x 4096 x (4*16*128 + 5*32*128 + 32*64 + 4*32) on TP 2
    assert memory.gated_deltanet_activation_bytes(4096, 1, 16, 32, 128, 64, 2) == \
        2 * 4096 * 30848 / 2
    assert memory.gated_delta_rule_state_bytes(4096, 2, 32, 128, 64, 1, 2) == \
        2 * 2 * 64 * 32 * 128**2
    # the softmax core tensors are what activation_bytes_per_layer + the shape term count
    s, b, h, a, kv, d, t = 4096, 1, 2048, 16, 2, 256, 2
    both = memory.activation_bytes_per_layer(s, b, h, 4 * h, a, kv, 2, t, 0, 0, 0) \
        + memory.attention_shape_activation_bytes(s, b, h, a, kv, d, d, 0, 0, 0, t)
    no_attention = memory.activation_bytes_per_layer(s, b, h, 4 * h, 1, 1, 2, t, 0, 0, 0) \
        - s * b * h * (4 + 4) / t  # Q, K, V and the output-projection input at a = a_kv
    assert both - no_attention == pytest.approx(
        memory.softmax_attention_activation_bytes(s, b, a, kv, d, d, t, 0, 0), rel=1e-12)


def test_delta_rule_is_linear_in_the_sequence_length():
    """Per token the chunked delta rule costs the same at 4k and 64k tokens; softmax
    attention's core grows with s."""
    assert compute.gated_delta_rule_flops_per_token(32, 128) == \
        compute.gated_delta_rule_flops_per_token(32, 128, compute.GATED_DELTA_CHUNK)
    per_token = [compute.gated_delta_rule_bytes(s, 32, 128, 64, 1, 2) / s
                 for s in (4096, 65536)]
    assert per_token[0] == per_token[1]
    assert compute.attention_core_flops_per_token(65536, 16, 256, 256) == \
        16 * compute.attention_core_flops_per_token(4096, 16, 256, 256)


def test_catalog_model_and_inputs():
    m = CATALOG.model("qwen3-next-80b-a3b")
    assert (m.layers, m.linear_attention_layers, m.linear_key_heads, m.linear_value_heads,
            m.linear_head_dim) == (48, 36, 16, 32, 128)
    x = model_inputs(m)
    assert (x["linear_attention_layers"], x["linear_value_heads"]) == (36.0, 32.0)
    dense = model_inputs(CATALOG.model("llama3-8b"))
    assert dense["linear_attention_layers"] == 0.0
    # 36 layers of Gated DeltaNet instead of softmax attention: the count moves by exactly
    # 36 x (P_gdn - P_attn)
    softmax = param_counts({**x, "linear_attention_layers": 0.0})
    p_attn = compute.attention_input_params(2048, 16, 2, 256, 256, 0, 0, 0) \
        + compute.attention_output_params(2048, 16, 256)
    assert param_counts(x)["params"] - softmax["params"] == pytest.approx(
        36 * (compute.gated_deltanet_params(2048, 16, 32, 128) - p_attn), rel=1e-12)


def _first(model_id, **override):
    x = space_inputs(CATALOG, model_id, "h100-sxm", tokens=1e12, min_gpus=64, max_gpus=256)
    first = {k: (v[:1] if np.ndim(v) else v) for k, v in x.items()}
    return first, evaluate_inputs({**first, **override})


def test_model_flops_follow_the_linear_layers():
    """Model FLOPs per token (3 x forward) of Qwen3-Next fall, against the same model with
    softmax attention everywhere, by 3 x 36 x (the softmax layer's projections and core -
    the Gated DeltaNet projections and delta rule)."""
    x, hybrid = _first("qwen3-next-80b-a3b")
    _, softmax = _first("qwen3-next-80b-a3b", linear_attention_layers=0.0)
    s = x["seq_len"]
    p_attn = compute.attention_input_params(2048, 16, 2, 256, 256, 0, 0, 0) \
        + compute.attention_output_params(2048, 16, 256)
    softmax_layer = 2 * p_attn + compute.attention_core_flops_per_token(s, 16, 256, 256)
    linear_layer = 2 * compute.gated_deltanet_params(2048, 16, 32, 128) \
        + compute.gated_delta_rule_flops_per_token(32, 128)

    def flops_per_token(out):
        return out["tflops_per_gpu"][0] * 1e12 * x["gpus"][0] / out["tokens_per_s"][0]

    assert flops_per_token(softmax) - flops_per_token(hybrid) == pytest.approx(
        3 * 36 * (softmax_layer - linear_layer), rel=1e-9)
    assert hybrid["activation_bytes"][0] != softmax["activation_bytes"][0]


@pytest.mark.parametrize("model_id", ["llama3-8b", "qwen3-30b-a3b"])
def test_models_without_linear_layers_are_unaffected(model_id):
    """With 0 linear-attention layers the linear heads' sizes change no output."""
    _, plain = _first(model_id)
    _, other = _first(model_id, linear_key_heads=64.0, linear_value_heads=96.0,
                      linear_head_dim=256.0)
    for name in OUTPUTS:
        np.testing.assert_array_equal(plain[name], other[name], err_msg=name)


@pytest.mark.parametrize("extra, message", [
    ("linear_attention_layers = 5\nlinear_key_heads = 2\nlinear_value_heads = 2\n"
     "linear_head_dim = 8\n", "linear_attention_layers: expected 0..layers (4)"),
    ("linear_attention_layers = 2\n", "linear_key_heads: required with linear_attention_layers"),
    ("linear_value_heads = 2\n", "linear_value_heads: given without linear_attention_layers"),
])
def test_schema_reports_bad_linear_attention_fields(tmp_path, extra, message):
    path = tmp_path / "x.toml"
    path.write_text('schema_version = 1\nkind = "model"\nid = "x"\nname = "x"\nlayers = 4\n'
                    'hidden = 64\nheads = 4\nvocab = 100\nseq_len = 128\nsource = "test"\n'
                    'as_of = 2025-01-01\n' + extra)
    with pytest.raises(CatalogError) as err:
        parse_file(path)
    assert message in str(err.value)
