"""Activation offloading (issue 42): each layer's input kept in host memory between its
forward and backward (MaxText's ``decoder_layer_input=offload``, Megatron-Core's CPU
offloading), ``--offload-activations`` / run input ``offloaded_activation_vectors``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import compute, memory
from planner.engine.layouts.evaluator import evaluate

#: Google's tpu-recipes Llama 3.1 405B FP8 recipe on 256 TPU7x chips (remat custom with the
#: layer input offloaded: full recompute), validation row tpurec-l31-405b-fp8-tpu7x-256
IRONWOOD_405B = dict(model="llama3.1-405b", hardware="tpu-v7", gpus=256, tp=1, pp=1, cp=1,
                     vp=1, micro_batch=6, global_batch=1536, seq_len=8192, recompute="full",
                     zero=3, precision="fp8", stack="maxtext-xla", tokens=1e12,
                     reliability="benchmark")
#: a small model on PCIe H100s, whose short layers cannot hide the copies
SMALL_H100 = dict(model="llama3.2-1b", hardware="h100-sxm", gpus=8, tp=1, pp=1, cp=1, vp=1,
                  micro_batch=8, global_batch=64, seq_len=8192, recompute="full", zero=1,
                  tokens=1e12, reliability="benchmark")


def _run(args, offload):
    return evaluate(**args, overrides={"offloaded_activation_vectors": float(offload)}).iloc[0]


def test_formula_examples_and_symbolic_form():
    assert compute.offload_exposed_time(134e6, 40e9, 0.05, 0.15) == 0.0
    assert compute.offload_exposed_time(134e6, 40e9, 0.002, 0.006) == pytest.approx(1.35e-3)
    q, b, f, w = sympy.symbols("Q_h beta_h t_f t_b", positive=True)
    expr = compute.offload_exposed_time(q, b, f, w)
    values = {q: 1e9, b: 20e9, f: 0.01, w: 0.03}
    assert float(expr.subs(values)) == pytest.approx(
        compute.offload_exposed_time(1e9, 20e9, 0.01, 0.03), rel=1e-12)
    assert memory.offloaded_layer_input_bytes(126, 1e9) == 124e9
    assert memory.offloaded_layer_input_bytes(2, 1e9) == 0.0


def test_formulas_run_on_scalars_arrays_and_series():
    copies = np.array([1e8, 1e9, 4e9])
    scalar = [compute.offload_exposed_time(c, 30e9, 0.02, 0.06) for c in copies]
    np.testing.assert_allclose(compute.offload_exposed_time(copies, 30e9, 0.02, 0.06), scalar)
    series = compute.offload_exposed_time(pd.Series(copies), 30e9, 0.02, 0.06)
    np.testing.assert_allclose(series.to_numpy(), scalar)
    layers = np.array([0.0, 2.0, 3.0, 80.0])
    np.testing.assert_allclose(memory.offloaded_layer_input_bytes(layers, 1.0),
                               [0.0, 0.0, 1.0, 78.0])


@settings(max_examples=30, deadline=None)
@given(copy=st.floats(0, 1e11), bw=st.floats(1e9, 1e12), f=st.floats(0, 1), b=st.floats(0, 3))
def test_exposed_time_is_never_negative_nor_more_than_two_copies(copy, bw, f, b):
    t = compute.offload_exposed_time(copy, bw, f, b)
    assert 0 <= t <= 2 * copy / bw + 1e-12
    # more compute beside the copies hides more
    assert compute.offload_exposed_time(copy, bw, f + 0.1, b + 0.1) <= t + 1e-15


def test_offload_frees_the_layer_inputs_but_two():
    on, off = _run(IRONWOOD_405B, 1), _run(IRONWOOD_405B, 0)
    # full recompute: 126 layers' inputs of 6 x 8,192 tokens x 16,384 x 2 B, all but two
    per_layer = memory.full_recompute_activation_bytes_per_layer(8192, 6, 16384, 1, 0)
    assert off["activation_bytes"] - on["activation_bytes"] == pytest.approx(
        (126 - 2) * per_layer, rel=1e-9)
    # the published recipe does not fit without it and fits with it (192 GiB HBM)
    assert not off["fits"] and on["fits"]
    # a 405B layer's compute hides its 1.6 GB copies at 30 GB/s: the step is the same
    assert on["step_time_s"] == pytest.approx(off["step_time_s"], rel=1e-12)


def test_copies_slower_than_the_layers_show():
    # a 1B layer (268 MB of input at 8 x 8,192 tokens) computes in ~10 ms: hidden behind
    # it at the node's 40 GB/s, shown at 5 GB/s (54 ms a copy)
    on, off = _run(SMALL_H100, 1), _run(SMALL_H100, 0)
    assert on["compute_s"] == pytest.approx(off["compute_s"], rel=1e-12)
    assert on["memory_per_gpu_bytes"] < off["memory_per_gpu_bytes"]
    slow = evaluate(**SMALL_H100, overrides={"offloaded_activation_vectors": 1.0,
                                             "host_copy_bytes_per_s_per_gpu": 5e9}).iloc[0]
    assert slow["compute_s"] > off["compute_s"]


def test_offloaded_time_grows_as_the_host_link_shrinks():
    t = [evaluate(**SMALL_H100, overrides={"offloaded_activation_vectors": 1.0,
                                           "host_copy_bytes_per_s_per_gpu": bw}).iloc[0]
         ["step_time_s"] for bw in (64e9, 8e9, 2e9)]
    assert t[0] <= t[1] < t[2]


def test_cli_flag_offloads_and_the_refusal_names_it(capsys):
    from planner.cli.main import main

    args = ["evaluate", "-m", "llama3.1-405b", "-H", "tpu-v7", "-n", "256", "--tp", "1",
            "--pp", "1", "--cp", "1", "--ep", "1", "--vp", "1", "--micro-batch", "6",
            "--global-batch", "1536", "--seq-len", "8192", "--recompute", "full", "--zero", "3",
            "--stack", "maxtext-xla", "--precision", "fp8", "-f", "json"]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "does not fit" in err and "--offload-activations" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--offload-activations"]) == 0
    out = capsys.readouterr().out
    assert '"fits": true' in out


def test_plan_takes_the_flag_for_every_candidate(capsys):
    """`capplan plan --offload-activations` searches with the layer inputs in host memory:
    on 64 TPU7x chips, where 405B is memory-bound, a faster layout fits."""
    import json

    from planner.cli.main import main

    base = ["plan", "-m", "llama3.1-405b", "-H", "tpu-v7", "--stack", "maxtext-xla",
            "--min-gpus", "64", "--max-gpus", "64", "--deadline-days", "100000", "-f", "json"]
    days = []
    for extra in ([], ["--offload-activations"]):
        assert main([*base, *extra]) == 0
        days.append(json.loads(capsys.readouterr().out)["best"]["time"]["wall_days"])
    assert days[1] < days[0]


def test_a_scenario_file_offloads_and_refuses_a_number(tmp_path, capsys):
    from planner.cli.main import main

    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text('model = "llama3.1-405b"\n\n[faults]\noffload_activations = true\n')
    bad.write_text('model = "llama3.1-405b"\n\n[faults]\noffload_activations = 1\n')
    args = ["evaluate", "-H", "tpu-v7", "-n", "256", "--tp", "1", "--pp", "1", "--cp", "1",
            "--ep", "1", "--vp", "1", "--micro-batch", "6", "--global-batch", "1536",
            "--seq-len", "8192", "--recompute", "full", "--zero", "3", "--stack", "maxtext-xla",
            "--precision", "fp8", "-f", "json"]
    assert main([*args, "-s", str(good)]) == 0
    assert '"fits": true' in capsys.readouterr().out
    assert main([*args, "-s", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "offload_activations must be a bool, got 1" in err and "Traceback" not in err
