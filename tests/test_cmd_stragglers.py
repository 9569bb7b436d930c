"""``capplan stragglers``: the what-if table, the published setting, formats, bad input."""

import csv
import io
import json

import pytest

from planner.cli.main import main
from planner.cli.stragglers_command import parse_gpu_list

USAGE = 2


def run(capsys, args):
    code = main(["stragglers", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_bytedance_preset_reproduces_the_published_tail(capsys):
    """Lin et al. OSDI'25: ~1 % of jobs waste >= 45 % of their GPU-hours.  Unmitigated GC,
    an 8-stage pipeline carrying the LM head and sequence imbalance (1.34) waste 49.4 %
    at 128 GPUs (closed form; the GC pause adds to the step once), each alone 11-26 %."""
    code, out, _ = run(capsys, ["--preset", "bytedance-osdi25", "-f", "json"])
    assert code == 0
    data = json.loads(out)
    first = data["rows"][0]
    assert first["gpus"] == 128
    assert first["combined_waste"] == pytest.approx(0.494, abs=0.002)
    assert first["combined_waste"] >= 0.45
    assert first["gc_waste"] == pytest.approx(0.106, abs=0.002)
    assert first["pipeline_waste"] == pytest.approx(0.264, abs=0.002)
    assert first["sequence_waste"] == pytest.approx(1 - 1 / 1.34, rel=1e-12)
    assert data["setting"]["preset"] == "bytedance-osdi25" and "2505.05713" in data["source"]
    # unsynchronised GC waits for the slowest of more ranks as the job grows
    wastes = [r["gc_waste"] for r in data["rows"]]
    assert wastes == sorted(wastes)


def test_simulated_column_confirms_the_closed_form(capsys):
    """Monte Carlo, 50,000 steps per count, seed 5: within 0.3 % of the step time."""
    code, out, _ = run(capsys, ["--gpus", "128..16384", "--gc-interval", "1000",
                                "--slow-nodes", "1e-4", "--stages", "16", "-m", "llama3.1-405b",
                                "--simulate", "--steps", "50000", "--seed", "5", "-f", "json"])
    assert code == 0
    rows = json.loads(out)["rows"]
    assert [r["gpus"] for r in rows] == [128 * 2**k for k in range(8)]
    for r in rows:
        closed = r["combined_slowdown"]
        simulated = 1 / (1 - r["simulated_waste"])
        assert simulated == pytest.approx(closed, rel=0.003), r["gpus"]


def test_typed_flags_win_over_the_preset(capsys):
    code, out, _ = run(capsys, ["--preset", "bytedance-osdi25", "--stages", "1",
                                "--gpus", "128", "-f", "json"])
    assert code == 0
    row = json.loads(out)["rows"][0]
    assert row["pipeline_waste"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("fmt", ["table", "csv", "markdown"])
def test_every_format(capsys, fmt):
    code, out, _ = run(capsys, ["--gpus", "128,1024", "--gc-interval", "600", "-f", fmt])
    assert code == 0 and "combined_waste" in out
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [int(r["gpus"]) for r in rows] == [128, 1024]


def test_output_file_is_not_overwritten_without_force(capsys, tmp_path):
    target = tmp_path / "w.json"
    assert run(capsys, ["--gpus", "128", "-o", str(target)])[0] == 0
    assert json.loads(target.read_text())["rows"][0]["gpus"] == 128
    code, _, err = run(capsys, ["--gpus", "256", "-o", str(target)])
    assert code == USAGE and err.count("\n") == 1 and "--force" in err
    assert run(capsys, ["--gpus", "256", "-o", str(target), "--force"])[0] == 0
    assert json.loads(target.read_text())["rows"][0]["gpus"] == 256


def test_gpu_lists_and_ranges():
    assert parse_gpu_list("128..1024") == [128, 256, 512, 1024]
    assert parse_gpu_list("8, 24") == [8, 24]
    assert parse_gpu_list("64") == [64]


@pytest.mark.parametrize("args,needle", [
    (["--gpus", "0"], "--gpus must be an integer >= 1"),
    (["--gpus", "12a"], "is not a whole number"),
    (["--gpus", "1024..128"], "empty range"),
    (["--preset", "bytedance"], "did you mean"),
    (["--slow-nodes", "2"], "--slow-nodes must be a finite number in [0, 1], got 2"),
    (["--slow-node-slowdown", "0.5"], "--slow-node-slowdown must be"),
    (["--gc-interval", "-5"], "--gc-interval must be a finite number > 0"),
    (["--gc-pause", "-1"], "--gc-pause must be"),
    (["--gc-every-steps", "0"], "--gc-every-steps must be an integer >= 1"),
    (["--stage-imbalance", "-1"], "--stage-imbalance must be"),
    (["--sequence-slowdown", "0.5"], "--sequence-slowdown must be a finite number >= 1"),
    (["--stages", "0"], "--stages must be an integer >= 1"),
    (["--step-time", "0"], "--step-time must be a finite number > 0"),
    (["-m", "no-such-model"], "no-such-model"),
])
def test_bad_input_gives_one_line(capsys, args, needle):
    code, _, err = run(capsys, args)
    assert code == USAGE, err
    assert err.startswith("capplan: error: ") and err.count("\n") == 1, err
    assert needle in err and "Traceback" not in err


def test_bad_preset_is_a_choice_error(capsys):
    """--preset says what every bad choice says (errors.choice_error)."""
    code, out, err = run(capsys, ["--preset", "bytedance"])
    assert code == 2 and out == ""
    assert err.strip() == ("capplan: error: --preset 'bytedance' is not one of: "
                           "bytedance-osdi25; did you mean: bytedance-osdi25?"), err
