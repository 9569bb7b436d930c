"""The CLI end to end: JSON/CSV parsed and values asserted; errors are one line."""

import csv
import io
import json

import pytest

from planner.cli.main import main

EVAL = ["evaluate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--gpus", "64",
        "--tp", "1", "--pp", "1", "--global-batch", "512", "--micro-batch", "2",
        "--tokens", "2e12"]


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluate_json_has_the_promised_keys(capsys):
    code, out, err = run(capsys, [*EVAL, "--format", "json"])
    assert code == 0, err
    data = json.loads(out)
    for key in ("step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "memory_per_gpu_bytes",
                "fits", "breakdown", "checkpoint_interval_s", "wall_days", "energy_kwh",
                "cost_usd", "co2e_kg"):
        assert key in data, key
    assert 0 < data["mfu"] < 1 and data["fits"] is True
    assert data["step_time_s"] == pytest.approx(sum(data["breakdown"].values()), rel=1e-9)
    assert data["tokens_per_s"] == pytest.approx(512 * 4096 / data["step_time_s"], rel=1e-9)
    assert data["inputs"]["dp"] == 64 and data["inputs"]["global_batch"] == 512


def test_evaluate_csv_and_markdown(capsys):
    code, out, _ = run(capsys, [*EVAL, "--format", "csv"])
    assert code == 0
    rows = {r["quantity"]: r["value"] for r in csv.DictReader(io.StringIO(out))}
    assert float(rows["step_time_s"]) > 0
    code, out, _ = run(capsys, [*EVAL, "--format", "markdown"])
    assert code == 0 and out.startswith("### ") and "| step_time_s |" in out


@pytest.mark.parametrize("args,needle", [
    (["--gpus", "63", "--tp", "2"], "does not divide --gpus 63"),
    (["--tp", "16"], "scale-up domain"),
    (["--hardware", "h10"], "did you mean"),
    (["--recompute", "some"], "recompute"),
    (["--format", "jsno"], "did you mean: json"),
])
def test_evaluate_bad_input_is_one_line_exit_2(capsys, args, needle):
    code, out, err = run(capsys, [*EVAL, *args])
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_plan_json(capsys):
    code, out, err = run(capsys, ["plan", "--model", "llama2-7b", "--tokens", "1e12",
                                  "--hardware", "h100-sxm,a100-80gb", "--max-gpus", "512",
                                  "--format", "json"])
    assert code == 0, err
    data = json.loads(out)
    assert set(data["best"]) == {"time", "cost", "energy", "carbon", "tcdp", "cci"}
    for row in data["best"].values():
        for key in ("hardware", "gpus", "tp", "pp", "dp", "micro_batch", "recompute", "zero",
                    "wall_days", "cost_usd", "energy_mwh", "co2e_t", "mfu"):
            assert key in row
    assert data["best"]["time"]["wall_days"] <= data["best"]["cost"]["wall_days"]
    assert set(data["per_hardware"]) == {"h100-sxm", "a100-80gb"}
    assert data["pareto"] and data["scenario"]["model"] == "llama2-7b"


def test_plan_infeasible_exit_1(capsys):
    code, out, err = run(capsys, ["plan", "--model", "llama2-7b", "--tokens", "1e12",
                                  "--hardware", "h100-sxm", "--max-gpus", "64",
                                  "--deadline-days", "0.01", "--format", "json"])
    assert code == 1
    assert "deadline" in err and len(err.strip().splitlines()) == 1


def test_checkpoint_json(capsys):
    code, out, _ = run(capsys, ["checkpoint", "--gpus", "4096", "--format", "json"])
    data = json.loads(out)
    schemes = {row["scheme"]: row for row in data["rows"]}
    assert code == 0 and set(schemes) == {"sync", "async", "in-memory", "gockpt"}
    assert schemes["async"]["stall_s"] < schemes["sync"]["stall_s"]
    assert schemes["async"]["wall_days"] <= schemes["sync"]["wall_days"]
    assert schemes["async"]["days_saved_vs_async"] == 0


def test_output_file_not_overwritten_without_force(capsys, tmp_path):
    target = tmp_path / "out.json"
    target.write_text("mine")
    code, _, err = run(capsys, ["checkpoint", "-n", "1024", "-f", "json", "-o", str(target)])
    assert code == 2 and "--force" in err and target.read_text() == "mine"
    code, _, _ = run(capsys, ["checkpoint", "-n", "1024", "-f", "json", "-o", str(target),
                              "--force"])
    assert code == 0 and json.loads(target.read_text())["rows"]


def test_init_writes_a_scenario_that_plan_reads(capsys, tmp_path):
    path = tmp_path / "run.toml"
    code, _, _ = run(capsys, ["init", str(path)])
    assert code == 0 and "model = " in path.read_text()
    code, _, err = run(capsys, ["init", str(path)])
    assert code == 2 and "--force" in err
    path.write_text('model = "llama2-7b"\ntokens = 1e12\nhardware = "h100-sxm"\n'
                    'max_gpus = 256\nobjective = "time"\n')
    code, out, err = run(capsys, ["plan", "--scenario", str(path), "--format", "json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["scenario"]["model"] == "llama2-7b" and data["scenario"]["objective"] == "time"
    # a flag typed on the command line overrides the file
    code, out, _ = run(capsys, ["plan", "--scenario", str(path), "--objective", "energy",
                                "--format", "json"])
    assert json.loads(out)["scenario"]["objective"] == "energy"


def test_scenario_file_unknown_key(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('modle = "llama2-7b"\n')
    code, _, err = run(capsys, ["plan", "--scenario", str(path)])
    assert code == 2 and "did you mean: model" in err and len(err.splitlines()) == 1


def test_sweep_csv_scaling_efficiency(capsys):
    code, out, err = run(capsys, ["sweep", "--model", "llama2-7b", "--tokens", "1e12",
                                  "--hardware", "h100-sxm", "--min-gpus", "64",
                                  "--max-gpus", "1024", "--format", "csv"])
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    gpus = [int(r["gpus"]) for r in rows]
    assert gpus == sorted(gpus) and gpus[0] == 64
    assert float(rows[0]["scaling_efficiency"]) == pytest.approx(1.0)
    days = [float(r["days"]) for r in rows]
    assert days == sorted(days, reverse=True)
    assert all(0 < float(r["scaling_efficiency"]) <= 1.0 + 1e-9 for r in rows)


def test_model_and_hardware_from_toml_files(capsys):
    """Wherever an id is accepted, a TOML file of the same schema is too (docs/examples)."""
    from pathlib import Path

    examples = Path(__file__).parents[1] / "docs" / "examples"
    code, out, err = run(capsys, ["evaluate", "--model", str(examples / "my-model.toml"),
                                  "--hardware", str(examples / "my-gpu.toml"), "--gpus", "64",
                                  "--tp", "4", "--pp", "2", "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["step_time_s"] > 0
    code, out, err = run(capsys, ["plan", "--model", str(examples / "my-model.toml"),
                                  "--hardware", "h100-sxm", "--max-gpus", "256",
                                  "--deadline-days", "inf", "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["best"]["cost"]["hardware"] == "h100-sxm"


def test_ctrl_c_exits_130_and_debug_shows_traceback(capsys, monkeypatch):
    import planner.engine.search.optimize

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(planner.engine.search.optimize, "plan", interrupted)
    code, out, err = run(capsys, ["plan", "--format", "json"])
    assert code == 130 and "interrupted" in err and "Traceback" not in err
    monkeypatch.undo()
    with pytest.raises(Exception, match="does not divide"):
        main([*EVAL, "--gpus", "63", "--tp", "2", "--debug"])


def test_checkpoint_takes_a_reliability_profile(capsys):
    code, out, _ = run(capsys, ["checkpoint", "--reliability", "meta-rsc", "--gpus", "1024",
                                "--restart-minutes", "5", "-f", "json"])
    data = json.loads(out)
    from hardware_catalog import load_catalog

    profile = load_catalog().reliability_profile("meta-rsc")
    assert code == 0
    assert data["study"]["overrides"]["restart_overhead_s"] == 300.0  # the typed flag wins
    rows = {r["scheme"]: r for r in data["rows"]}
    # the kernel's per-GPU rate: the profile's GPU failure domain
    assert rows["sync"]["gpu_mtbf_hours"] == pytest.approx(profile.domain_gpu_mtbf_s.value / 3600)
    # the restart: 5 min plus reading the checkpoint back (sync, async) or from a peer
    assert 300.0 < rows["sync"]["restart_s"] and 300.0 < rows["in-memory"]["restart_s"]
    code, _, err = run(capsys, ["checkpoint", "--reliability", "metarsc"])
    assert code == 2 and "did you mean: meta-rsc" in err


@pytest.mark.parametrize("value", ["", ",,", " , "])
def test_plan_hardware_naming_nothing_is_refused(capsys, value):
    """-H '' or ',,' names no accelerator: one line and exit 2, not a plan of the whole
    catalog (which the default 'all' asks for)."""
    code, out, err = run(capsys, ["plan", "-H", value])
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "names no accelerator" in err and "'all'" in err
