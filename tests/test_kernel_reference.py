"""The generated kernel reproduces the recorded outputs of a fixed set of layouts.

tests/data/kernel_reference.npz holds the inputs and outputs of 312 layouts (dense,
MoE, GQA and tied-embedding models on nine accelerators; every recompute mode, ZeRO
stage, TP/PP/CP/EP/VP, checkpoint scheme and cost basis), written by
benchmarks/kernel_reference.py.  A refactoring of planner/engine/run/model.py must leave
every output equal within a relative 1e-12; where a recorded output is exactly 0 the
new one must be within 1e-12 of that output's largest magnitude.

The fixture was last regenerated for the GoCkpt scheme and the commit latency of
asynchronous checkpoints (Daly's wall time with the write's drain, issue 15), after
checking that the kernel reproduced the former fixture everywhere but on the async rows'
wall-time outputs (at most 0.08 %).  Its outputs were recomputed on the same inputs when
the checkpoint interval's floor gained the checkpoint's stall (issue 41: interval >= stall
+ the async write): 6 async rows' intervals moved by at most 0.31 %, wall times by at most
4.2e-6 relative.  Its outputs were recomputed on the same inputs again when the routed
experts' data-parallel traffic moved to their expert-data-parallel group (issue 41 item
7): the dense rows' step times were unchanged (within 2.2e-16), 46 of the 48 MoE rows'
moved by at most 0.30 %; the inputs added then (the batch's reference batch, the expert
groups) and the training-method inputs (issue 43, pre-training values) are stored with it.
The outputs were recomputed on the same inputs once more for the MoE grouped GEMMs
timed from their shapes and the attention kernel a stack has (issue 42; the attention
inputs at their neutral values: every variant fused, no head padding): the dense rows
reproduced the former outputs within 5e-16 and the MoE rows' compute time moved by
-4.6 % median, at most 38 %.  And for the CUDA-graph scope and the bucketed
data-parallel overlap (issue 42; the fixture's stacks launch eagerly): the dense rows
reproduce h4's regenerated fixture within 1e-15 (their step times moved from the former
outputs by 0.1 % median, at most 15 %).  The element-wise traffic factor by stack (issue
42) takes its fused value 1 on the fixture (no output moved).  The outputs were recomputed
on the same inputs when the busiest pipeline rank under an uneven split is counted
(formulas.memory.pipeline_inflight_layers, 2026-12-01): only activation_bytes and
memory_per_gpu_bytes moved, on 69 rows, by -4.7 % and -1.7 % median (at most -16 % and
-12 %); every other output within 1e-12.  A fixture written before an input existed gives
that input the value that leaves the model as it was (:data:`SHAPE_NEUTRAL`,
:data:`LEGACY_EQUIVALENT`).  A deliberate physics change regenerates the fixture
(``python benchmarks/kernel_reference.py``) in the same commit and says so.
"""

from pathlib import Path

import numpy as np
import pytest

from planner.engine.run.kernel_run import evaluate_inputs
from planner.engine.run.model import INPUTS, OUTPUTS

FIXTURE = Path(__file__).parent / "data" / "kernel_reference.npz"
RTOL = 1e-12

#: Attention-shape inputs the fixture predates -> their value for a model without them
#: (as planner.engine.inputs.scenario.attention_shape_inputs gives it).
SHAPE_NEUTRAL = {
    "head_dim": lambda x: x["hidden"] / x["heads"],
    "v_head_dim": lambda x: x["hidden"] / x["heads"],
    "q_lora_rank": lambda x: 0 * x["hidden"],
    "kv_lora_rank": lambda x: 0 * x["hidden"],
    "qk_rope_head_dim": lambda x: 0 * x["hidden"],
    "window": lambda x: x["seq_len"],
    "window_layers": lambda x: 0 * x["hidden"],
    "mtp_layers": lambda x: 0 * x["hidden"],
    "linear_attention_layers": lambda x: 0 * x["hidden"],
    "linear_key_heads": lambda x: 0 * x["hidden"] + 1,
    "linear_value_heads": lambda x: 0 * x["hidden"] + 1,
    "linear_head_dim": lambda x: 0 * x["hidden"] + 1,
    "mamba_layers": lambda x: 0 * x["hidden"],
    "mamba_heads": lambda x: 0 * x["hidden"] + 1,
    "mamba_head_dim": lambda x: 0 * x["hidden"] + 1,
    "mamba_state_dim": lambda x: 0 * x["hidden"] + 1,
    "mamba_groups": lambda x: 0 * x["hidden"] + 1,
    "mixer_free_layers": lambda x: 0 * x["hidden"],
    "mlp_free_layers": lambda x: 0 * x["hidden"],
    "moe_latent_dim": lambda x: 0 * x["hidden"],
    "attention_softcap": lambda x: 0 * x["hidden"],
}
#: Inputs added after the fixture was written, at the values that leave the model as it
#: was: no network, rack or software failure domain (rate exactly 0), no detection time,
#: a re-queue as fast as a swap, no spares, no software stragglers, GPU power at max while
#: computing and at idle otherwise (the execution.toml defaults of the phase power model),
#: an owned cluster without resale value or facility rent, busy all its life (the TCO
#: cost basis before it became planner.engine.economics.ownership's owned-cluster cost), no CUDA
#: graphs.
#: So the fixture also checks that a reliability profile without domain data gives the
#: results it gave.
LEGACY_EQUIVALENT = {
    "network_mtbf_s": np.inf, "rack_mtbf_s": np.inf, "software_mtbf_s": np.inf,
    # finite "never" (the spare search checks its inputs), as scenario.reliability_inputs
    "software_internode_mtbf_s": 1e300, "software_node_exponent": 1.0,
    "manual_restart_fraction": 0.0, "manual_restart_s": 0.0,
    "rack_nodes": 1.0, "failure_detection_s": 0.0, "node_repair_s": 0.0, "spare_nodes": 0.0,
    "gc_interval_s": np.inf, "gc_duration_s": 0.0, "gc_planned": 0.0, "gc_planned_steps": 1.0,
    "stage_extra_layers": 0.0, "slow_node_fraction": 0.0, "slow_node_slowdown": 1.0,
    "compute_power_fraction": 1.0, "comm_power_fraction": 0.0,
    "ckpt_gockpt": 0.0, "gockpt_steps": 7.0,
    "residual_value_fraction": 0.0, "facility_usd_per_kw_month": 0.0, "utilisation": 1.0,
    "commitment_term_s": 0.0, "commitment_reuse_fraction": 0.0,  # pay as you go
    # the training method (issue 43): pre-training, every weight trained, no padding
    "frozen_base": 0.0, "lora_rank": 0.0, "lora_q": 0.0, "lora_k": 0.0, "lora_v": 0.0,
    "lora_o": 0.0, "lora_gate": 0.0, "lora_up": 0.0, "lora_down": 0.0,
    "base_weight_bytes_per_param": 2.0, "dequantize_base": 0.0, "reference_model": 0.0,
    "token_efficiency": 1.0,
    # no CUDA graphs: every kernel launched eagerly (the replay cost is then unused)
    "cuda_graphs": 0.0, "graph_launch_s": 1e-5,
    # fused element-wise kernels: the count the model had before the factor existed
    "elementwise_traffic_factor": 1.0,
    # no DeepEP dispatch: the all-to-all at the links' bandwidth (the measured DeepEP rate
    # is then unused)
    "deepep_dispatch": 0.0, "deepep_scale_up_bytes_per_s": 1.0,
    # selective recompute of the attention core only (Megatron-Core's): the op-level
    # policy's terms are then unused, whatever the layout asked
    "op_selective_recompute": 0.0, "selective_option": 0.0, "recompute_early_stop": 0.0,
    # a fused FP32 cross-entropy (Korthikanti's output-layer count alone)
    "loss_extra_bytes_per_logit": 0.0,
    # the logits computed at once
    "loss_logit_chunks": 1.0,
    # the loss's passes over the logits not timed
    "loss_bytes_per_logit": 0.0,
    # the layer inputs in device memory
    "offloaded_activation_vectors": 0.0,
    # selective recompute keeps the attention output (no core forward again)
    "recompute_core_attn": 0.0,
    # ZeRO-3 gathers and reduce-scatters in every micro-batch, PP or not
    "fsdp_keeps_gathered_under_pp": 0.0,
    # selective recompute keeps each recomputed module's inputs (Megatron-Core)
    "remat_keeps_named_only": 0.0,
    # node-aware (hierarchical) data-parallel collectives
    "dp_collectives_flat": 0.0,
    # no time for a low-precision recipe's casts
    "cast_bytes_per_element": 0.0,
    # no kernel that soft-caps the logits (unused: the fixture's models cap none)
    "fused_attention_softcap": 0.0,
}
#: Outputs added after the fixture was written.
NEW_OUTPUTS: tuple[str, ...] = ()


@pytest.fixture(scope="module")
def reference():
    data = np.load(FIXTURE)
    inputs = dict(zip(data["input_names"].tolist(), data["inputs"].T, strict=True))
    outputs = dict(zip(data["output_names"].tolist(), data["outputs"].T, strict=True))
    for name, neutral in SHAPE_NEUTRAL.items():
        inputs.setdefault(name, neutral(inputs))
    return {name: inputs[name] for name in INPUTS if name in inputs}, outputs


def with_new_inputs(inputs: dict) -> dict:
    """The fixture's inputs, and :data:`LEGACY_EQUIVALENT` (re-queue = swap restart) for
    the inputs it predates; ZeRO shards over all DP ranks, as before HSDP."""
    return {**LEGACY_EQUIVALENT, "requeue_restart_s": inputs["restart_overhead_s"],
            # ZeRO sharded over every DP rank (no HSDP): one replica
            "shard_ranks": inputs["dp"], "replica_intra_ranks": np.ones_like(inputs["dp"]),
            # the attention core at the GEMMs' efficiency, as before it had its own
            "attention_gemm_max_efficiency": inputs["gemm_max_efficiency"],
            **inputs}


def test_fixture_matches_the_model_signature(reference):
    inputs, outputs = reference
    assert sorted(with_new_inputs(inputs)) == sorted(INPUTS)
    assert list(outputs) == [name for name in OUTPUTS if name not in NEW_OUTPUTS]
    assert len(outputs["step_time_s"]) >= 200


def test_fixture_spans_the_design_space(reference):
    inputs, _ = reference
    for flag in ("full_recompute", "selective", "attention_scores_stored", "zero3",
                 "sequence_parallel", "ckpt_sync", "ckpt_async", "ckpt_in_memory", "ckpt_gockpt",
                 "use_tco",
                 "dropout_masks"):
        assert set(np.unique(inputs[flag])) == {0.0, 1.0}, flag
    for size in ("tp", "pp", "cp", "ep", "vp"):
        assert np.max(inputs[size]) > 1, size
    assert set(np.unique(inputs["embedding_matrices"])) == {1.0, 2.0}
    assert np.any(inputs["moe_layers"] > 0) and np.any(inputs["moe_layers"] == 0)
    # MoE parallel folding: ETP other than TP, and EP beyond DP
    assert np.any(inputs["etp"] != inputs["tp"]) and np.any(inputs["ep"] > inputs["dp"])
    assert np.any(inputs["kv_heads"] < inputs["heads"])


@pytest.mark.parametrize("name", [name for name in OUTPUTS if name not in NEW_OUTPUTS])
def test_kernel_reproduces_reference(reference, name):
    inputs, outputs = reference
    got = evaluate_inputs(with_new_inputs(inputs))[name]
    expected = outputs[name]
    nonzero = expected != 0
    scale = max(float(np.max(np.abs(expected))), 1.0)
    # relative 1e-12; plus 1e-12 of the output's largest magnitude for the outputs that are
    # small differences of large terms (launch_s = host-bound time - device time): a
    # regenerated kernel orders its sums differently, and 1 ulp of the 10^4 s compute time
    # is 10^-6 of a 10^-6 s launch time
    np.testing.assert_allclose(got[nonzero], expected[nonzero], rtol=RTOL, atol=RTOL * scale,
                               err_msg=name)
    np.testing.assert_allclose(got[~nonzero], 0.0, rtol=0, atol=RTOL * scale, err_msg=name)


def test_float_kernel_reproduces_reference(reference):
    # the one-candidate path (planner.engine.run.kernel.float_kernel on Python floats, the
    # numpy kernel where floats raise) on each of the reference layouts
    from planner.engine.run.kernel_run import evaluate_scalar

    inputs, outputs = reference
    full = with_new_inputs(inputs)
    columns = np.column_stack([np.broadcast_to(np.asarray(full[name], dtype=float),
                                               outputs["step_time_s"].shape)
                               for name in INPUTS])
    for row, values in enumerate(columns):
        got = evaluate_scalar(dict(zip(INPUTS, values.tolist(), strict=True)))
        for name, expected in outputs.items():
            want = float(expected[row])
            if np.isnan(want):
                assert np.isnan(got[name]), (row, name)
            else:
                assert got[name] == pytest.approx(want, rel=1e-9, abs=1e-9), (row, name)


def test_float_kernel_falls_back_where_floats_raise():
    # a division by zero: floats raise, the numpy kernel gives inf or NaN as arrays do
    from planner.engine.run.kernel import float_kernel
    from planner.engine.run.kernel_run import _scalar_outputs

    data = np.load(FIXTURE)
    inputs = dict(zip(data["input_names"].tolist(), data["inputs"][0], strict=True))
    for name, neutral in SHAPE_NEUTRAL.items():
        inputs.setdefault(name, neutral(inputs))
    values = {**with_new_inputs(inputs), "peak_flops_per_s": 0.0}
    ordered = [float(values[name]) for name in INPUTS]
    with pytest.raises(ZeroDivisionError):
        float_kernel()(*ordered)
    got = _scalar_outputs(ordered)
    array = evaluate_inputs({k: np.array([v]) for k, v in values.items()})
    assert got["step_time_s"] == float(array["step_time_s"][0]) or (
        np.isnan(got["step_time_s"]) and np.isnan(array["step_time_s"][0]))
