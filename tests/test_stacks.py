"""Software stacks and GEMM efficiency by precision (issue 13 items 3-4).

A stack (hardware_catalog/data/stacks) sets the communication overlaps, the fused-attention
efficiency and the launch overhead of a run, and what share of the accelerator's GEMM
efficiency its kernels reach; ``--precision`` picks the accelerator's GEMM efficiency at
that precision.
"""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.communication import sharded_grad_reduce_time
from hardware_catalog import load_catalog
from planner.cli.main import main
from planner.engine.inputs.scenario import DEFAULTS, STACK_INPUTS, gemm_efficiency, stack_inputs
from planner.engine.layouts.evaluator import evaluate
from planner.engine.run.run_inputs import RunChoices, base_inputs

EVAL = ["evaluate", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "64",
        "--tp", "8", "--pp", "2", "--global-batch", "128", "--micro-batch", "1",
        "--tokens", "1e12", "--format", "json"]


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_shipped_stacks_and_the_default(cat):
    assert {"megatron-core-2025", "megatron-lm-2021", "torchtitan-fsdp2", "llm-foundry-2023",
            "internevo-2023"} <= set(cat.stacks)
    assert DEFAULTS["stack"] == "megatron-core-2025"
    for stack in cat.stacks.values():
        x = stack_inputs(stack)
        assert set(x) == set(STACK_INPUTS)
        assert all(0 <= x[k] <= 1 for k in ("tp_overlap", "dp_overlap", "cp_overlap",
                                              "ep_overlap", "attention_efficiency_factor"))
        for q in stack.quantities().values():
            assert len(q.source) > 20  # every value says where it comes from


def test_precision_picks_the_gemm_efficiency(cat):
    h100 = cat.accelerator("h100-sxm")
    assert gemm_efficiency(h100, "bf16") == h100.gemm_max_efficiency.value
    assert gemm_efficiency(h100, "fp8") == h100.gemm_max_efficiency_fp8.value
    assert gemm_efficiency(h100, "fp8") != gemm_efficiency(h100, "bf16")
    mi325x = cat.accelerator("mi325x")  # no fp8 value of its own: the bf16 one
    assert mi325x.gemm_max_efficiency_fp8 is None
    assert gemm_efficiency(mi325x, "fp8") == mi325x.gemm_max_efficiency.value
    fp8 = base_inputs(cat, RunChoices(model="llama3-8b", hardware="h100-sxm", precision="fp8"))
    assert fp8["gemm_max_efficiency"] == pytest.approx(h100.gemm_max_efficiency_fp8.value)


def test_a_stack_on_one_accelerator(cat):
    """llm-foundry's FlashAttention-2 on Hopper has its own factors; on A100 the general."""
    stack = cat.stack("llm-foundry-2023")
    own = stack.on_accelerator["h100-sxm"]
    assert stack_inputs(stack, "h100-sxm")["attention_efficiency_factor"] \
        == own.attention_efficiency_factor.value
    assert stack_inputs(stack, "a100-80gb")["attention_efficiency_factor"] \
        == stack.attention_efficiency_factor.value
    x = base_inputs(cat, RunChoices(model="llama3-8b", hardware="h100-sxm", stack="llm-foundry-2023"))
    h100 = cat.accelerator("h100-sxm")
    assert x["gemm_max_efficiency"] == pytest.approx(
        h100.gemm_max_efficiency.value * own.gemm_efficiency_factor.value)
    assert x["dp_overlap"] == stack.dp_overlap.value


def test_the_stack_changes_the_step_time(cat):
    old = evaluate(catalog=cat, model="llama3-70b", hardware="h100-sxm", gpus=64, tp=8, pp=2,
                   global_batch=128, micro_batch=1, tokens=1e12, stack="megatron-lm-2021")
    new = evaluate(catalog=cat, model="llama3-70b", hardware="h100-sxm", gpus=64, tp=8, pp=2,
                   global_batch=128, micro_batch=1, tokens=1e12)
    assert new["stack"].iloc[0] == "megatron-core-2025"
    # the 2025 stack overlaps TP communication; the 2021 one does not
    assert new["tp_comm_s"].iloc[0] < old["tp_comm_s"].iloc[0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6))
def test_more_overlap_is_never_slower(overlaps):
    """Step time is non-increasing in each overlap fraction (property)."""
    cat = load_catalog()
    values = np.sort(np.asarray(overlaps))
    for name in ("tp_overlap", "dp_overlap", "ep_overlap"):
        out = evaluate(catalog=cat, model="mixtral-8x7b", hardware="h100-sxm",
                       gpus=np.full(values.size, 128), tp=2, pp=2, ep=8, global_batch=256,
                       micro_batch=1, tokens=1e12, overrides={name: values})
        step = out["step_time_s"].to_numpy()
        assert np.all(np.diff(step) <= 1e-12 * step[:-1]), (name, values, step)


def test_sharded_gradients_reduce_scatter_every_microbatch(cat):
    """ZeRO-2: one reduce-scatter (half an all-reduce) per micro-batch (ZeRO arXiv:1910.02054
    s5.2); ZeRO-1: one all-reduce per iteration. Without overlap the ratio is m / 2."""
    assert sharded_grad_reduce_time(0.2, 8) == pytest.approx(0.8)
    kw = dict(catalog=cat, model="llama3-8b", hardware="h100-sxm", gpus=64, tp=1, pp=1,
              global_batch=512, micro_batch=2, tokens=1e12, recompute="full",
              overrides={"dp_overlap": 0.0})
    z1, z2 = evaluate(zero=1, **kw).iloc[0], evaluate(zero=2, **kw).iloc[0]
    microbatches = 512 / 64 / 2
    assert z2["dp_comm_s"] == pytest.approx(z1["dp_comm_s"] * microbatches / 2, rel=1e-9)


def test_cli_stack_flag(capsys):
    assert main([*EVAL, "--stack", "megatron-lm-2021"]) == 0
    old = json.loads(capsys.readouterr().out)
    assert main(EVAL) == 0
    new = json.loads(capsys.readouterr().out)
    assert old["inputs"]["stack"] == "megatron-lm-2021"
    assert new["inputs"]["stack"] == DEFAULTS["stack"]
    assert new["step_time_s"] != old["step_time_s"]


def test_cli_unknown_stack_is_one_line(capsys):
    assert main([*EVAL, "--stack", "megatron-core-2052"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("capplan: error: unknown stack")
    assert "megatron-core-2025" in err


def test_plan_and_scenario_file_take_a_stack(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('model = "llama3-8b"\nhardware = "h100-sxm"\nstack = "torchtitan-fsdp2"\n'
                    "min_gpus = 8\nmax_gpus = 16\ntokens = 1e11\n")
    assert main(["plan", "--scenario", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scenario"]["stack"] == "torchtitan-fsdp2"
    assert main(["plan", "--scenario", str(path), "--stack", "nope", "--format", "json"]) == 2
    assert "unknown stack 'nope'" in capsys.readouterr().err
    path.write_text(path.read_text() + 'network = "llama3-roce-24k"\nnic_gbps = 200\n')
    assert main(["plan", "--scenario", str(path), "--format", "json"]) == 0
    inputs = json.loads(capsys.readouterr().out)["scenario"]["inputs"]
    assert inputs["oversubscription"] == 7 and inputs["pod_gpus"] == 3072
    assert inputs["scale_out_bandwidth_bytes_per_s"] == pytest.approx(25e9)  # the key wins


# ---- site networks (issue 13 item 5) ---------------------------------------------------------

def test_pod_bandwidth_llama3():
    """Llama 3 (arXiv:2407.21783 s3.3.1): full bisection inside 3,072-GPU pods, 1:7 above."""
    from formulas.communication import pod_bandwidth

    assert pod_bandwidth(50e9, 7, 3072, 3072) == 50e9  # a pod: non-blocking
    assert pod_bandwidth(50e9, 7, 3073, 3072) == pytest.approx(50e9 / 7, rel=1e-12)
    assert pod_bandwidth(50e9, 1, 24576, 3072) == 50e9  # no taper


def test_network_entry_and_flags(cat):
    from planner.engine.inputs.scenario import network_overrides, node_network

    node = cat.node("llama3-roce-24k")
    assert node_network(node) == {"gpus_per_node": 8, "nic_gbps": pytest.approx(400.0),
                                  "oversubscription": 7.0, "pod_gpus": 3072.0}
    x = network_overrides("llama3-roce-24k", cat, oversubscription=None, nic_gbps=200.0)
    assert x["scale_out_bandwidth_bytes_per_s"] == pytest.approx(25e9)  # the flag wins
    assert x["oversubscription"] == 7.0 and x["pod_gpus"] == 3072.0


def test_oversubscription_slows_only_groups_beyond_a_pod(cat):
    """DP spans a pipeline stage's GPUs (gpus / pp): 16,384 / 2 crosses a 3,072-GPU pod,
    16,384 / 8 = 2,048 does not."""
    taper = {"oversubscription": 7.0, "pod_gpus": 3072.0}
    kw = dict(catalog=cat, model="llama3-70b", hardware="h100-sxm", gpus=16384, tp=8,
              global_batch=2048, micro_batch=1, tokens=1e12)
    for pp, crosses in ((2, True), (8, False)):
        flat = evaluate(pp=pp, **kw).iloc[0]
        thin = evaluate(pp=pp, overrides=taper, **kw).iloc[0]
        assert bool(thin["dp_comm_s"] > 2 * flat["dp_comm_s"]) is crosses
        assert thin["tp_comm_s"] == flat["tp_comm_s"]  # TP stays inside the node


def test_cli_network_flags(capsys):
    args = ["evaluate", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "16384",
            "--tp", "8", "--pp", "2", "--global-batch", "2048", "--format", "json"]
    assert main(args) == 0
    flat = json.loads(capsys.readouterr().out)
    assert main([*args, "--network", "llama3-roce-24k"]) == 0
    llama = json.loads(capsys.readouterr().out)
    assert main([*args, "--oversubscription", "7", "--pod-gpus", "3072"]) == 0
    flags = json.loads(capsys.readouterr().out)
    assert llama["step_time_s"] == pytest.approx(flags["step_time_s"], rel=1e-12)
    assert llama["step_time_s"] > flat["step_time_s"]
    assert main([*args, "--nic-gbps", "100"]) == 0
    thin = json.loads(capsys.readouterr().out)
    assert thin["breakdown"]["dp_comm_s"] > flat["breakdown"]["dp_comm_s"]
    # a node of 4 GPUs with a 4-GPU NVLink domain cannot hold TP 8
    assert main([*args, "--gpus-per-node", "4", "--scale-up-domain", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scale-up domain of 4 GPUs" in err
    assert main([*args, "--nic-gbps", "-1"]) == 2
    assert capsys.readouterr().err.startswith("capplan: error: --nic-gbps must be")


def test_plan_takes_a_network(capsys):
    base = ["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--min-gpus", "8",
            "--max-gpus", "64", "--tokens", "1e11", "--format", "json"]
    assert main([*base, "--nic-gbps", "25", "--gpus-per-node", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    network = {"gpus_per_node": 4.0, "scale_out_bandwidth_bytes_per_s": 25e9 / 8}
    assert {k: data["scenario"]["inputs"][k] for k in network} == network
    assert main(base) == 0
    default = json.loads(capsys.readouterr().out)
    # the default scenario's inputs hold the fault options only, none of the network's
    assert not set(network) & set(default["scenario"].get("inputs", {}))
    thin, fat = data["best"]["time"], default["best"]["time"]
    assert thin["step_time_s"] >= fat["step_time_s"]


# ---- FP4 (NVFP4 / MXFP4) on Blackwell Ultra and MI355X ------------------------------------------

def test_fp4_precision(cat, capsys):
    """--precision fp4 runs every linear layer's GEMM FLOPs at the FP4 peak, as Transformer
    Engine and Megatron-Bridge's NVFP4 recipe do; nvfp4-bf16-tail, NVIDIA's accuracy recipe
    (arXiv:2509.25149 s4), runs 85 % there and the rest in BF16, each share at its own peak
    and efficiency; the efficiency falls back to the fp8 value where the accelerator has no
    fp4 one; weights, gradients and optimizer state keep their bytes, the BF16 layers cache
    2-byte inputs."""
    gb300 = cat.accelerator("gb300")
    assert gb300.gemm_max_efficiency_fp4 is None
    assert gemm_efficiency(gb300, "fp4") == gemm_efficiency(gb300, "fp8")
    x = base_inputs(cat, RunChoices(model="llama3-70b", hardware="gb300", precision="fp4"))
    fp4, bf16 = gb300.peak_fp4_flops_per_s.value, gb300.peak_bf16_flops_per_s.value
    e4, e16 = gemm_efficiency(gb300, "fp4"), gemm_efficiency(gb300, "bf16")
    assert x["peak_flops_per_s"] == fp4 and x["linear_input_bytes"] == 1.0
    tail = base_inputs(cat, RunChoices(model="llama3-70b", hardware="gb300",
                                       precision="nvfp4-bf16-tail"))
    assert tail["peak_flops_per_s"] == pytest.approx(
        1 / (0.85 / fp4 + 0.15 * e4 / (bf16 * e16)), rel=1e-12)
    assert bf16 < tail["peak_flops_per_s"] < fp4
    assert tail["linear_input_bytes"] == pytest.approx(0.85 * 1 + 0.15 * 2, rel=1e-12)
    kw = dict(catalog=cat, model="llama3-70b", hardware="gb300", gpus=64, tp=4, pp=2,
              tokens=1e12)
    fp4, fp8, tail = (evaluate(precision=p, **kw).iloc[0]
                      for p in ("fp4", "fp8", "nvfp4-bf16-tail"))
    assert fp4["step_time_s"] < tail["step_time_s"] < fp8["step_time_s"]
    # the BF16 layers' cached inputs: more activation memory than FP8, never less
    assert fp8["memory_per_gpu_bytes"] <= tail["memory_per_gpu_bytes"] \
        <= fp8["memory_per_gpu_bytes"] * 1.2
    assert main(["evaluate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8",
                 "--precision", "fp4"]) == 2
    assert "has no fp4 peak" in capsys.readouterr().err


def test_catalog_lists_and_shows_stacks(capsys):
    import csv
    import io

    assert main(["catalog", "list", "stacks", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert "megatron-core-2025" in {r["id"] for r in rows}
    assert main(["catalog", "show", "llm-foundry-2023", "--format", "csv"]) == 0
    shown = {r["field"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    own = shown["on_accelerator.h100-sxm.attention_efficiency_factor"]
    assert float(own["value"]) < float(shown["attention_efficiency_factor"]["value"])
    assert "arXiv:2407.08608" in own["source"]


@settings(max_examples=200, deadline=None)
@given(st.floats(1e9, 1e12), st.floats(1.0, 16.0), st.floats(1.0, 16.0),
       st.integers(1, 2**20), st.integers(1, 2**20), st.integers(1, 2**16))
def test_pod_bandwidth_never_grows_with_taper_or_span(bw, r1, r2, span1, span2, pod):
    """More oversubscription or a wider group never gives more bandwidth; never above B."""
    from formulas.communication import pod_bandwidth

    lo_r, hi_r = sorted((r1, r2))
    lo_s, hi_s = sorted((span1, span2))
    assert pod_bandwidth(bw, hi_r, lo_s, pod) <= pod_bandwidth(bw, lo_r, lo_s, pod) * (1 + 1e-12)
    assert pod_bandwidth(bw, hi_r, hi_s, pod) <= pod_bandwidth(bw, hi_r, lo_s, pod) * (1 + 1e-12)
    assert bw / hi_r * (1 - 1e-12) <= pod_bandwidth(bw, hi_r, hi_s, pod) <= bw


def test_a_stack_file_can_extend_another_beside_it(tmp_path, capsys):
    """``extends = "<id>"``: the stack file <id>.toml in the same folder, with this file's
    keys replacing its keys; a missing base or a cycle is one clear line, exit 2."""
    from hardware_catalog.errors import CatalogError
    from hardware_catalog.loader import parse_file

    shipped = load_catalog().stack("megatron-core-moe-baseline")
    base = (load_catalog().origins[("stack", "megatron-core-moe-baseline")]).read_text()
    (tmp_path / "megatron-core-moe-baseline.toml").write_text(base)
    child = tmp_path / "graphed.toml"
    child.write_text('extends = "megatron-core-moe-baseline"\nid = "graphed"\nname = "g"\n'
                     'layer_overhead_s = { value = 1e-4, source = "test" }\n')
    stack = parse_file(child, expect_kind="stack", user=True)
    assert stack.layer_overhead_s.value == 1e-4
    assert stack.tp_overlap == shipped.tp_overlap and stack.id == "graphed"
    EVAL_GRAPHED = [*EVAL, "--stack", str(child)]
    assert main(EVAL_GRAPHED) == 0
    capsys.readouterr()
    child.write_text('extends = "megatron-core-moe-baselin"\nid = "x"\nname = "x"\n')
    with pytest.raises(CatalogError, match="did you mean: megatron-core-moe-baseline"):
        parse_file(child, expect_kind="stack", user=True)
    assert main([*EVAL, "--stack", str(child)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    (tmp_path / "a.toml").write_text('extends = "b"\nid = "a"\nname = "a"\n')
    (tmp_path / "b.toml").write_text('extends = "a"\nid = "b"\nname = "b"\n')
    with pytest.raises(CatalogError, match="cycle"):
        parse_file(tmp_path / "a.toml", expect_kind="stack", user=True)
    # a user's file elsewhere extends a shipped stack by id
    (tmp_path / "own").mkdir()
    own = tmp_path / "own" / "mine.toml"
    own.write_text('extends = "megatron-core-moe-gb200-guide-13"\nid = "mine"\nname = "m"\n')
    assert parse_file(own, expect_kind="stack", user=True).dispatch_host_sync.value == 0


def test_a_negative_memory_reserve_is_refused(tmp_path):
    """A stack's ``memory_reserve_bytes`` (in general or on one part) is memory the runtime
    keeps back: a negative value is refused with the field named, not run."""
    from hardware_catalog.errors import CatalogError
    from hardware_catalog.loader import parse_file

    stack = tmp_path / "mine.toml"
    head = 'extends = "maxtext-xla"\nid = "mine"\nname = "m"\n'
    stack.write_text(head + 'memory_reserve_bytes = { value = -1.0, source = "test" }\n')
    with pytest.raises(CatalogError, match=r"memory_reserve_bytes.value: expected >= 0"):
        parse_file(stack, expect_kind="stack", user=True)
    stack.write_text(head + '[on_accelerator.tpu-v6e]\n'
                     'memory_reserve_bytes = { value = -5.0, source = "test", '
                     'as_of = 2026-12-01 }\n')
    with pytest.raises(CatalogError,
                       match=r"on_accelerator.tpu-v6e.memory_reserve_bytes.value: expected >= 0"):
        parse_file(stack, expect_kind="stack", user=True)
    stack.write_text(head + 'memory_reserve_bytes = { value = 0.0, source = "test" }\n')
    assert parse_file(stack, expect_kind="stack", user=True).memory_reserve_bytes.value == 0


def test_every_stack_field_is_a_model_input_with_a_default_where_optional():
    # STACK_INPUTS is read from the schema: each of its quantities (but the GEMM share) is a
    # run-model input of its name, and an optional one has an execution.toml default
    from hardware_catalog.schema import SoftwareStack
    from planner.engine.inputs.glossary import INPUTS as GLOSSARY
    from planner.engine.inputs.scenario import execution_defaults
    from planner.engine.run.model import INPUTS

    assert "dualpipe" in STACK_INPUTS and "gemm_efficiency_factor" not in STACK_INPUTS
    for name in STACK_INPUTS:
        assert name in INPUTS and name in GLOSSARY, name
        if not SoftwareStack.model_fields[name].is_required():
            assert name in execution_defaults(), name


def test_mi300x_fa2_factor_follows_the_published_flashattention_ratio(cat):
    """The FA2 stacks' MI300X attention factor is a published ratio, not a fit: the stacks'
    general factor times FlashAttention-2's share of the bf16 peak on MI300X over that on
    A100 (Azure AI-benchmarking-guide: 328.6 TFLOP/s on ND MI300X v5, 179.5 on ND A100 v4)
    times the A100 over the MI300X large-GEMM efficiency. A recalibration that moves either
    efficiency or the general factor makes this fail until the value is re-derived."""
    a100, mi300x = cat.accelerator("a100-80gb"), cat.accelerator("mi300x")
    share = (328.6e12 / mi300x.peak_bf16_flops_per_s.value) / (
        179.5e12 / a100.peak_bf16_flops_per_s.value)
    for name in ("torchtitan-fsdp2", "llm-foundry-2023"):
        stack = cat.stack(name)
        expected = (stack.attention_efficiency_factor.value * share
                    * a100.gemm_max_efficiency.value / mi300x.gemm_max_efficiency.value)
        own = stack.on_accelerator["mi300x"].attention_efficiency_factor.value
        assert own == pytest.approx(expected, abs=0.005), name
        assert stack_inputs(stack, "mi300x")["attention_efficiency_factor"] == own
