"""Host time as a mechanism: eager launches per layer, CUDA-graph scope, asynchronous launch.

The host issues each micro-batch's kernels ahead of the GPU; only the host time the GPU
work cannot cover is exposed (formulas.compute.host_bound_time).  The stack's CUDA-graph
scope (``cuda_graphs``: 0 none, 1 per layer, 2 whole iteration) decides how many launches
the host makes (formulas.compute.graphed_host_launch_time).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.compute import graphed_host_launch_time, host_launch_time
from hardware_catalog import load_catalog
from planner import evaluate
from planner.analysis.validate import moe_stack
from planner.cli.main import main

LAYERS = st.floats(0, 200)
SECONDS = st.floats(0, 1e-2)
RECOMPUTE = st.sampled_from([0.0, 1.0])
MICROBATCHES = st.floats(1, 512)


@settings(max_examples=200, deadline=None)
@given(LAYERS, SECONDS, SECONDS, RECOMPUTE, MICROBATCHES)
def test_no_graphs_is_the_eager_launch_time(layers, eager_s, graph_s, recompute, m):
    assert graphed_host_launch_time(layers, eager_s, graph_s, recompute, 0, m) \
        == pytest.approx(host_launch_time(layers, eager_s, recompute), rel=1e-12, abs=1e-300)


@settings(max_examples=200, deadline=None)
@given(LAYERS, SECONDS, SECONDS, RECOMPUTE, MICROBATCHES, st.sampled_from([0, 1, 2]))
def test_host_time_grows_with_layers_and_launch_costs(layers, eager_s, graph_s, recompute, m,
                                                      scope):
    base = graphed_host_launch_time(layers, eager_s, graph_s, recompute, scope, m)
    assert base >= 0
    assert graphed_host_launch_time(layers + 1, eager_s, graph_s, recompute, scope, m) >= base
    assert graphed_host_launch_time(layers, eager_s * 2, graph_s, recompute, scope, m) >= base
    assert graphed_host_launch_time(layers, eager_s, graph_s * 2, recompute, scope, m) >= base


def test_whole_iteration_graph_is_one_replay_per_iteration():
    # 32 layers of 0.85 ms eager forward launches: 81.6 ms a micro-batch eagerly; one
    # 10 us replay for the 16 micro-batches of an iteration with a whole-iteration graph
    eager = graphed_host_launch_time(32, 0.85e-3, 1e-5, 0, 0, 16)
    assert eager == pytest.approx(32 * 3 * 0.85e-3, rel=1e-12)
    assert graphed_host_launch_time(32, 0.85e-3, 1e-5, 0, 2, 16) == pytest.approx(1e-5 / 16)
    # per-layer graphs: the launches left outside (0.1 ms) plus a replay per forward and
    # backward of each layer (two with full recompute: three)
    assert graphed_host_launch_time(32, 1e-4, 1e-5, 0, 1, 16) \
        == pytest.approx(32 * (3 * 1e-4 + 2 * 1e-5), rel=1e-12)
    assert graphed_host_launch_time(32, 1e-4, 1e-5, 1, 1, 16) \
        == pytest.approx(32 * (4 * 1e-4 + 3 * 1e-5), rel=1e-12)


SMALL_DENSE = dict(gpus=8, tp=1, pp=1, cp=1, micro_batch=2, global_batch=128, seq_len=4096,
                   tokens=1e12, as_frame=False)


@pytest.mark.parametrize("model", ["llama3.2-1b", "tinyllama-1.1b"])
@pytest.mark.parametrize("hardware", ["b200", "gb200"])
def test_small_model_on_blackwell_is_not_host_bound_with_whole_iteration_graphs(model,
                                                                                hardware):
    eager = evaluate(model=model, hardware=hardware, stack="megatron-core-2025", **SMALL_DENSE)
    graphed = evaluate(model=model, hardware=hardware, stack="megatron-bridge-2025",
                       **SMALL_DENSE)
    # eager launches: the host time is a visible share of the step (5-54 %, Grace worst)
    assert eager["launch_s"] > 0.04 * eager["step_time_s"]
    # whole-iteration graph: the launches hide behind the GPU's work (< 0.1 % of the step)
    assert graphed["launch_s"] < 1e-3 * graphed["step_time_s"]
    assert graphed["compute_s"] == pytest.approx(eager["compute_s"], rel=1e-12)
    assert graphed["step_time_s"] < eager["step_time_s"]


def test_whole_iteration_graph_does_not_capture_a_dropless_moe_model():
    # expert token counts change every step: Megatron-Core's full_iteration scope needs a
    # dispatch padded to the capacity; the dropless model runs eagerly, as on the base stack
    run = dict(model="mixtral-8x7b", hardware="b200", gpus=64, tp=1, pp=1, ep=8,
               tokens=1e12, as_frame=False)
    eager = evaluate(stack="megatron-core-2025", **run)
    graphed = evaluate(stack="megatron-bridge-2025", **run)
    assert graphed["launch_s"] == pytest.approx(eager["launch_s"], rel=1e-12)
    assert graphed["launch_s"] > 0


def test_stacks_declare_the_capture_scope_their_validation_rows_name():
    # the MoE rows whose software cell says CUDA graphs are on (validate.MOE_GRAPHS_ON) run
    # on a stack with per-layer graphs; those saying off on one without
    stacks = load_catalog().stack
    assert stacks(moe_stack("TE partial cuda graphs; DeepEP")).cuda_graphs.value == 1
    assert stacks(moe_stack("HybridEP, CUDA graphs true")).cuda_graphs.value == 1
    assert stacks(moe_stack("cuda_graphs=none; DeepEP")).cuda_graphs.value == 0
    assert stacks(moe_stack("NCCL a2a")).cuda_graphs.value == 0
    assert stacks("megatron-core-moe-gb200-guide-05").cuda_graphs.value == 0
    assert stacks("megatron-core-moe-gb200-guide-06").cuda_graphs.value == 1
    assert stacks("megatron-core-moe-gb200-guide-13").cuda_graphs.value == 1


def test_an_unknown_capture_scope_is_one_line_and_exit_2(tmp_path, capsys):
    shipped = Path(__file__).parents[1] / "hardware_catalog" / "data" / "stacks"
    text = (shipped / "megatron-bridge-2025.toml").read_text()
    mine = tmp_path / "my-graphs.toml"
    mine.write_text(text.replace('id = "megatron-bridge-2025"', 'id = "my-graphs"')
                    .replace("cuda_graphs = { value = 2.0", "cuda_graphs = { value = 3.0"))
    code = main(["evaluate", "-m", "llama3-8b", "-H", "b200", "-n", "8", "--stack", str(mine),
                 "-f", "json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "cuda_graphs.value: expected 0 (none), 1 (per layer) or 2 (whole iteration)" in err[0]
