"""``--optimizer-bytes``: the optimizer's state per trained parameter, beside its 16-bit
weight and gradient (run input optimizer_bytes_per_param; default the stack's, 12)."""

from __future__ import annotations

import json

import pytest

from planner.cli.main import main

#: tpu-recipes Llama 3.1 70B on v6e-32 (FSDP 32, 2 sequences of 8,192 a chip, the layer
#: input and Q, K, V offloaded), which ran with MaxText's weight_dtype bfloat16
RUN = ["evaluate", "-m", "llama3.1-70b", "-H", "tpu-v6e", "-n", "32", "--tp", "1", "--pp", "1",
       "--cp", "1", "--ep", "1", "--vp", "1", "--micro-batch", "2", "--global-batch", "64",
       "--seq-len", "8192", "--recompute", "selective", "--recompute-modules",
       "mlp,layernorm,core_attn", "--offload-activations"]


def _json(capsys, *extra):
    code = main([*RUN, *extra, "-f", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def _row(payload):
    return payload["rows"][0] if "rows" in payload else payload["result"]


def test_bf16_state_fits_the_run_that_ran(capsys):
    # docs/model.md: 45.9 GB a 32 GiB chip with the stack's 12 bytes, 28.5 GB with 4
    code, _, err = _json(capsys)
    assert code == 2 and "needs 45.9 GB per GPU" in err  # FP32 master and moments
    code, payload, _ = _json(capsys, "--optimizer-bytes", "4")
    assert code == 0
    text = json.dumps(payload)
    assert '"fits": true' in text
    from planner import evaluate

    row = evaluate(model="llama3.1-70b", hardware="tpu-v6e", gpus=32, tp=1, pp=1, cp=1, ep=1,
                   vp=1, micro_batch=2, global_batch=64, seq_len=8192, recompute="selective",
                   overrides={"recompute_mlp": 1.0, "recompute_norms": 1.0,
                              "recompute_core_attn": 1.0, "offloaded_activation_vectors": 1.0,
                              "optimizer_bytes_per_param": 4.0}, as_frame=False)
    assert row["memory_per_gpu_bytes"] == pytest.approx(28.5e9, abs=0.05e9)


def test_the_state_scales_with_the_bytes():
    from planner import evaluate

    run = dict(model="llama3-8b", hardware="h100-sxm", gpus=8, tp=1, pp=1, cp=1, ep=1, vp=1,
               micro_batch=1, zero=1, reliability="benchmark", as_frame=False)
    full = evaluate(**run)
    bf16 = evaluate(**run, overrides={"optimizer_bytes_per_param": 4.0})
    # the state is linear in its bytes a parameter: 4 of the stack's 12
    assert bf16["optimizer_state_bytes"] == pytest.approx(
        full["optimizer_state_bytes"] * 4 / 12, rel=1e-12)
    assert full["weights_bytes"] == bf16["weights_bytes"]


@pytest.mark.parametrize("value", ["-1", "25", "x"])
def test_out_of_range_bytes_are_one_line(capsys, value):
    code = main([*RUN, "--optimizer-bytes", value])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "optimizer-bytes" in err
