"""The checkpointing what-if (issue 15): GoCkpt as a kernel scheme, ``capplan checkpoint``
through the same kernel as evaluate, the factorial study, its figure, and the Monte Carlo
check of each scheme's closed form."""

from __future__ import annotations

import json

import pytest

from planner.analysis.checkpoint_study import (
    SCHEMES,
    Study,
    parse_gpu_counts,
    parse_schemes,
    run_study,
)
from planner.engine.layouts.evaluator import evaluate
from planner.errors import CapplanError

JOB = dict(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4, tokens=15e12)


def test_gpu_counts_and_schemes_parse():
    assert parse_gpu_counts("128..16384") == (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
    assert parse_gpu_counts("128,1024,128") == (128, 1024)
    for bad in ("", "0", "8..4", "a,b", "1..", "99999999999"):
        with pytest.raises(CapplanError, match="--gpus takes whole GPU counts"):
            parse_gpu_counts(bad)
    assert parse_schemes("all") == SCHEMES
    assert parse_schemes("gockpt, async") == ("gockpt", "async")
    with pytest.raises(CapplanError, match="did you mean: in-memory"):
        parse_schemes("inmemory")


@pytest.fixture(scope="module")
def study_rows():
    return run_study(Study(model="llama3-70b", gpus=(256, 2048), tokens=2e12,
                           gpu_mtbf_s=(None, 20_000 * 3600.0)))


def test_study_cells_are_kernel_runs(study_rows):
    """One source for the scheme arithmetic: every cell equals evaluate() of its layout."""
    assert len(study_rows) == 2 * 2 * len(SCHEMES)
    for row in study_rows[::3]:
        layout = {k: row[k] for k in ("tp", "pp", "cp", "ep", "vp", "micro_batch", "zero",
                                      "recompute")}
        r = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=row["gpus"], tokens=2e12,
                     checkpoint=row["scheme"], as_frame=False,
                     overrides={"gpu_mtbf_s": row["gpu_mtbf_hours"] * 3600}, **layout)
        for key, column in (("wall_days", "wall_days"), ("stall_s", "checkpoint_stall_s"),
                            ("ettr", "ettr"), ("energy_mwh", "energy_mwh"),
                            ("cost_usd", "cost_usd"), ("commit_latency_s", "commit_latency_s")):
            assert row[key] == pytest.approx(r[column], rel=1e-9), (row["scheme"], key)


def test_study_savings_and_fault_tolerance_energy(study_rows):
    for gpus in (256, 2048):
        for mtbf in {r["gpu_mtbf_hours"] for r in study_rows}:
            cell = {r["scheme"]: r for r in study_rows
                    if r["gpus"] == gpus and r["gpu_mtbf_hours"] == mtbf}
            base = cell["async"]
            assert base["days_saved_vs_async"] == 0
            for r in cell.values():
                assert r["days_saved_vs_async"] == pytest.approx(
                    base["wall_days"] - r["wall_days"], rel=1e-12, abs=1e-12)
                assert 0 < r["fault_tolerance_mwh"] < r["energy_mwh"]
                # the run overheads (evaluations, rollbacks) are not fault tolerance
                assert 0 < r["fault_tolerance_usd"] < r["cost_usd"] * (1 - r["ettr"])
            # synchronous writes stall longest; GoCkpt hides the copy in the steps
            assert cell["sync"]["stall_s"] > cell["async"]["stall_s"] >= cell["gockpt"]["stall_s"]
            # and commits later: it persists after the step that completes the copy
            assert cell["gockpt"]["commit_latency_s"] > cell["async"]["commit_latency_s"]
    # a less reliable cluster spends more on fault tolerance, whatever the scheme
    for scheme in SCHEMES:
        by_mtbf = sorted((r for r in study_rows if r["gpus"] == 2048 and r["scheme"] == scheme),
                         key=lambda r: r["gpu_mtbf_hours"])
        assert by_mtbf[0]["fault_tolerance_mwh"] > by_mtbf[-1]["fault_tolerance_mwh"]


def test_gockpt_spreads_over_more_steps_when_one_window_is_too_short():
    fast = evaluate(**JOB, checkpoint="gockpt", as_frame=False)
    # a 50 MB/s host link: the 1 GB shard (20 s) no longer fits in one 15 s window
    slow_link = {"host_copy_bytes_per_s_per_gpu": 0.05e9}
    slow = evaluate(**JOB, checkpoint="gockpt", overrides=slow_link, as_frame=False)
    slow_async = evaluate(**JOB, checkpoint="async", overrides=slow_link, as_frame=False)
    assert fast["checkpoint_steps"] == 1
    assert 1 < slow["checkpoint_steps"] <= 7
    assert slow["checkpoint_stall_s"] == 0.0 < slow_async["checkpoint_stall_s"]
    # the interval covers the k steps of the transfer and the write
    assert slow["checkpoint_interval_s"] >= slow["checkpoint_steps"] * slow["step_time_s"]
    # at most 7 steps: where even 7 cannot hide it, the stall is the one over 7 steps
    tiny = evaluate(**JOB, checkpoint="gockpt", as_frame=False,
                    overrides={"host_copy_bytes_per_s_per_gpu": 1e6})
    assert tiny["checkpoint_steps"] == 7 and tiny["checkpoint_stall_s"] > 0


@pytest.mark.parametrize("scheme", SCHEMES)
def test_simulate_confirms_each_scheme(capsys, scheme):
    """capplan simulate (Monte Carlo, fixed seed, 4,000 replicas) against the kernel's
    closed form for every scheme: wall time and failures within 0.5 %."""
    from planner.cli.main import main

    code = main(["simulate", "--model", "llama3-8b", "--gpus", "512", "--tp", "1", "--pp", "1",
                 "--tokens", "2e12", "--checkpoint", scheme, "--replicas", "4000",
                 "--seed", "11", "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    for key in ("wall_days", "failures", "energy_kwh"):
        assert abs(data[key]["mean"] / data[key]["closed_form"] - 1) < 0.005, (scheme, key)


def test_cli_study_every_format_and_plot(capsys, tmp_path):
    from planner.cli.main import main

    figure = tmp_path / "study.png"
    code = main(["checkpoint", "-m", "llama3-8b", "--gpus", "128..512", "--schemes",
                 "async,gockpt", "--gpu-mtbf-hours", "50000,10000", "--plot", str(figure),
                 "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert len(data["rows"]) == 3 * 2 * 2 and data["study"]["schemes"] == ["async", "gockpt"]
    assert figure.stat().st_size > 10_000 and f"wrote {figure}" in err
    for fmt in ("table", "csv", "markdown"):
        assert main(["checkpoint", "-m", "llama3-8b", "--gpus", "256", "-f", fmt]) == 0
        assert "gockpt" in capsys.readouterr().out


def test_study_refuses_an_unfinishable_run():
    with pytest.raises(CapplanError, match="never finishes in expectation"):
        run_study(Study(model="llama3-8b", gpus=(16384,), schemes=("sync",),
                        gpu_mtbf_s=(1.0,)))


def test_plot_target_is_checked_before_the_study(capsys, tmp_path):
    from planner.cli.main import main

    code = main(["checkpoint", "--gpus", "128", "--plot", str(tmp_path / "no" / "f.png")])
    err = capsys.readouterr().err
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("hardware, zero", [("h100-sxm", 1), ("tpu-v6e", 3)])
def test_the_study_searches_the_zero_stage_of_the_stack_it_runs_on(hardware, zero):
    # a TPU runs MaxText (its default stack), which shards with FSDP: the layout is searched
    # and evaluated at its ZeRO-3, not at Megatron-Core's ZeRO-1
    rows = run_study(Study(model="llama3-8b", hardware=hardware, gpus=(256,),
                           schemes=("async",)))
    assert rows[0]["zero"] == zero
