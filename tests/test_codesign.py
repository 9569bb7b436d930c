"""``capplan codesign`` and the task schedulers: grids, reductions, Dask = in process."""

import json
import re

import numpy as np
import pytest

from planner.cli.main import main
from planner.engine.inputs.scenario import Scenario
from planner.engine.layouts.space import LayoutSpace, SpaceOptions, enumerate_layouts
from planner.engine.search.codesign import codesign, parse_vary
from planner.engine.search.distributed import check_scheduler, run_tasks
from planner.engine.search.optimize import plan
from planner.errors import CapplanError

SMALL = Scenario(model="llama2-7b", tokens=2e12, hardware=("h100-sxm",), min_gpus=8,
                 max_gpus=128, deadline_days=None)
CLI = ["codesign", "--model", "llama2-7b", "--tokens", "2e12", "--min-gpus", "8",
       "--max-gpus", "64", "--deadline-days", "inf", "--vary", "hbm_bytes=1x,2x",
       "--vary", "scale_up_domain=8,16", "--format", "json", "--pareto"]


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_vary_lists_ranges_and_aliases():
    axes = parse_vary(["hbm_bytes=80e9,141e9,192e9", "peak_bf16=0.5x..2x:5", "nic_gbps=400,800"])
    assert axes[0].values == (80e9, 141e9, 192e9) and axes[0].relative == (False,) * 3
    assert axes[1].name == "peak_bf16_flops_per_s" and all(axes[1].relative)
    np.testing.assert_allclose(axes[1].values, [0.5, 2**-0.5, 1.0, 2**0.5, 2.0], rtol=1e-12)
    assert axes[1].values[0] == 0.5 and axes[1].values[-1] == 2.0  # exact ends
    assert axes[2].name == "nic_bandwidth_bits_per_s" and axes[2].values == (400e9, 800e9)


@pytest.mark.parametrize(("spec", "message"), [
    ("hbm=1x", "did you mean: hbm_bytes"),
    ("hbm_bytes", "is not NAME=VALUES"),
    ("hbm_bytes=__import__('os')", "expected numbers"),
    ("hbm_bytes=1..2x:3", "both relative or both absolute"),
    ("hbm_bytes=0x,1x", "must be > 0"),
    ("hbm_bytes=nan", "expected numbers"),
    ("hbm_bytes=1x..2x:1", "n >= 2"),
])
def test_parse_vary_rejects_bad_specs(spec, message):
    with pytest.raises(CapplanError, match=message):
        parse_vary([spec])


def test_parse_vary_rejects_the_same_field_twice():
    with pytest.raises(CapplanError, match="varied twice"):
        parse_vary(["hbm_bandwidth=1x", "hbm_bandwidth_bytes_per_s=2x"])


def test_grid_values_are_checked(catalog):
    with pytest.raises(CapplanError, match="whole numbers"):
        codesign(SMALL, "h100-sxm", ["scale_up_domain=8.5"], catalog=catalog)
    with pytest.raises(CapplanError, match="precision bf16"):
        codesign(SMALL, "h100-sxm", ["peak_fp8=2x"], catalog=catalog)
    # a value out of the domain is named by the field varied, then by the input it sets
    with pytest.raises(CapplanError, match=r"^--vary gemm_max_efficiency: "
                       r"gemm_max_efficiency must be a finite number in \(0, 1\]"):
        codesign(SMALL, "h100-sxm", ["gemm_max_efficiency=1.5"], catalog=catalog)


def test_catalog_point_equals_plan_and_grid_order(catalog):
    result = codesign(SMALL, "h100-sxm", ["hbm_bytes=1x,2x", "scale_up_domain=8,16"],
                      catalog=catalog)
    assert [p["index"] for p in result.points] == [0, 1, 2, 3, 4]
    assert [p["values"]["scale_up_domain_gpus"] for p in result.points] == [8, 8, 16, 8, 16]
    assert [p["values"]["hbm_bytes"] for p in result.points] == [80e9, 80e9, 80e9, 160e9, 160e9]
    reference = plan(SMALL, catalog=catalog)
    base, same = result.points[0], result.points[1]  # point 1 is the catalog chip again
    assert base["evaluated"] == reference.evaluated and base["fitting"] == reference.fitting
    for objective, row in reference.best.items():
        for key, value in base["best"][objective].items():
            assert row[key] == value, (objective, key)
        assert same["best"][objective] == base["best"][objective]
    assert len(base["pareto"]) == len(reference.pareto)
    for mine, theirs in zip(base["pareto"], reference.pareto, strict=True):
        assert all(theirs[k] == v for k, v in mine.items())


def test_more_memory_bandwidth_never_slows_the_best_plan(catalog):
    result = codesign(SMALL, "h100-sxm", ["hbm_bandwidth=0.5x..2x:4"], catalog=catalog)
    days = [p["best"]["time"]["wall_days"] for p in result.points[1:]]
    assert all(a >= b for a, b in zip(days, days[1:], strict=False)), days
    assert days[0] > days[-1]  # the search is not insensitive to the parameter


def test_layout_space_slices_are_the_enumeration():
    kwargs = dict(layers=32, heads=32, kv_heads=8, seq_len=8192, experts=8, global_batch=1024,
                  gpus_per_node=8, scale_up_domain=8)
    options = SpaceOptions(min_gpus=8, max_gpus=4096)
    whole = enumerate_layouts(**kwargs, options=options)
    space = LayoutSpace(**kwargs, options=options)
    assert space.size == len(whole["gpus"]) > 3000
    cuts = [0, 1000, 1001, 2500, space.size]
    parts = [b for lo, hi in zip(cuts, cuts[1:], strict=False) for b in space.blocks(700, lo, hi)]
    for column, values in whole.items():
        np.testing.assert_array_equal(np.concatenate([p[column] for p in parts]), values)


def test_scheduler_names_are_checked():
    assert check_scheduler(None) == "in-process"
    assert check_scheduler("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    with pytest.raises(CapplanError, match="did you mean: processes"):
        check_scheduler("proceses")
    with pytest.raises(CapplanError, match="tcp://HOST:PORT"):
        check_scheduler("tcp://nohost")
    with pytest.raises(CapplanError, match="--workers must be >= 1"):
        check_scheduler("processes", 0)
    with pytest.raises(CapplanError, match="--workers must be <= 4,096"):
        check_scheduler(None, 10**23)


def test_cli_errors_are_one_line(capsys):
    for args in (["codesign"], ["codesign", "--vary", "hbm=2x"],
                 ["codesign", "--vary", "hbm_bytes=2x", "--scheduler", "mpi"],
                 ["plan", "--scheduler", "proceses"], ["sweep", "--scheduler", "tcp://x"]):
        code, out, err = run(capsys, args)
        assert code == 2 and out == "", args
        assert err.count("\n") == 1 and err.startswith("capplan: error: "), err


def test_ctrl_c_exits_130_with_one_line(capsys, monkeypatch):
    import planner.engine.search.codesign as engine

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "codesign", interrupted)
    code, out, err = run(capsys, CLI)
    assert code == 130 and out == "" and err == "capplan: interrupted\n"


def _square(x):
    return x * x


def _has_dask() -> bool:
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


needs_dask = pytest.mark.skipif(not _has_dask(), reason="capplan[dask] is not installed")


@needs_dask
def test_dask_runs_tasks_in_order_and_cancels_on_ctrl_c():
    assert run_tasks(_square, list(range(7)), scheduler="threads", workers=2) == [
        x * x for x in range(7)]

    def progress(done, total, label):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tasks(_square, list(range(50)), scheduler="threads", workers=2, progress=progress)


@needs_dask
def test_plan_on_dask_threads_equals_in_process(catalog):
    from planner.engine.run.kernel import build_partial_kernel

    s = SMALL.with_(hardware=("h100-sxm", "a100-80gb"))
    build_partial_kernel.cache_clear()  # the threads build the partial kernels at once (a lock)
    there = plan(s, catalog=catalog, scheduler="threads", workers=2)
    here = plan(s, catalog=catalog)
    assert here.frontier.equals(there.frontier)
    assert here.best == there.best and here.evaluated == there.evaluated


@needs_dask
def test_codesign_json_is_byte_identical_on_two_dask_processes(capsys):
    code, here, err = run(capsys, CLI)
    assert code == 0, err
    code, there, err = run(capsys, [*CLI, "--scheduler", "processes", "--workers", "2"])
    # no Dask warnings or logs on stderr: only capplan's own progress lines, which a
    # non-terminal stderr gets every few seconds (Dask's start can take that long)
    others = [line for line in err.splitlines()
              if not re.fullmatch(r"capplan: progress: co-design: \d+% .*", line)]
    assert code == 0 and others == [], err
    assert here == there
    data = json.loads(here)
    assert len(data["points"]) == 5 and data["points"][0]["gain_vs_catalog"]["cost"] == 1.0
    assert all(p["pareto_size"] == len(p["pareto"]) > 0 for p in data["points"])


def _fails_at_three(x):
    if x == 3:
        raise ValueError("task 3")
    return x


def test_in_process_threads_keep_task_order_progress_and_errors():
    from planner.engine.search.distributed import usable_cores

    assert usable_cores() >= 1
    seen = []
    results = run_tasks(_square, list(range(9)), workers=3,
                        progress=lambda done, total, label: seen.append((done, total)),
                        labels=[str(i) for i in range(9)])
    assert results == [x * x for x in range(9)]
    assert seen[0] == (0, 9) and seen[-1] == (9, 9)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert run_tasks(_square, [4], workers=4) == [16]  # one task: no pool
    with pytest.raises(ValueError, match="task 3"):
        run_tasks(_fails_at_three, list(range(8)), workers=2)
    with pytest.raises(ValueError, match="task 3"):
        run_tasks(_fails_at_three, list(range(8)), workers=1)

    def interrupt(done, total, label):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tasks(_square, list(range(50)), workers=2, progress=interrupt)


@pytest.mark.parametrize("objective", ["cost", "time", "energy"])
def test_each_table_row_is_one_plan(capsys, objective):
    """No row mixes objectives: GPUs, layout, days, USD, MWh and tCO2e are all the
    --objective winner's (the fastest plan's days beside the cheapest plan's USD was a bug)."""
    cli = [a for a in CLI if a != "--pareto"]
    code, out, err = run(capsys, [*cli, "--objective", objective])
    assert code == 0, err
    payload = json.loads(out)
    code, out, err = run(capsys, [*cli[:-2], "--format", "csv", "--objective", objective])
    assert code == 0, err
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(payload["points"])
    for row, point in zip(rows, payload["points"], strict=True):
        winner = point["best"][objective]
        assert int(row["gpus"]) == winner["gpus"]
        for label, key in (("days", "wall_days"), ("usd", "cost_usd"), ("mwh", "energy_mwh"),
                           ("co2e_t", "co2e_t")):
            assert float(row[label]) == pytest.approx(winner[key], rel=1e-12), label


def test_purchase_price_sets_the_capital_with_its_node_share(catalog):
    """An absolute purchase price is the accelerator's: the capital per GPU the run model
    reads adds the node, network and storage share, as for the catalog accelerator."""
    from planner.engine.economics.ownership import ownership_inputs
    from planner.engine.run.run_inputs import RunChoices, base_inputs
    from planner.engine.search.codesign import hardware_points

    acc = catalog.accelerator("h100-sxm")
    x = base_inputs(catalog, RunChoices(model="llama2-7b", hardware="h100-sxm"))
    points = hardware_points(x, parse_vary(["purchase_price_usd=30000,1x"]),
                             catalog.node(acc.node), "bf16")
    price = float(acc.purchase_price_usd.value)
    assert points[0].values["purchase_price_usd"] == pytest.approx(price)
    assert points[1].inputs["capex_usd_per_gpu"] == pytest.approx(
        ownership_inputs(30000.0)["capex_usd_per_gpu"])
    assert points[2].inputs["capex_usd_per_gpu"] == pytest.approx(x["capex_usd_per_gpu"])


def test_gemm_efficiency_sets_the_inputs_that_run_at_bf16():
    from planner.engine.search.codesign import PARAMETERS, kernel_inputs

    p = PARAMETERS["gemm_max_efficiency"]
    # the catalog field is BF16's: in a BF16 run both the GEMMs and the attention core take
    # it, under FP8 and NVFP4 the attention core alone (it runs in BF16)
    assert kernel_inputs(p, "bf16") == ("gemm_max_efficiency", "attention_gemm_max_efficiency")
    assert kernel_inputs(p, "fp8") == ("attention_gemm_max_efficiency",)
    assert kernel_inputs(p, "nvfp4") == ("attention_gemm_max_efficiency",)
    assert kernel_inputs(PARAMETERS["hbm_efficiency"], "fp8") == ("hbm_efficiency",)
