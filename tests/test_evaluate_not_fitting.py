"""``capplan evaluate`` on a layout that does not fit in memory: exit 2 and one line naming
the shortfall (docs/quickstart.md); the Python API answers it with ``fits`` False."""

import pytest

from planner import evaluate
from planner.cli.main import main

#: Llama 3.1 405B at TP8 PP4 on 16,384 H100: 123.9 GB per GPU, 68.8 GB of it activations.
#: every size given (sizes left out are searched, and the search finds a layout that fits)
TOO_BIG = ["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n", "16384", "--cp", "1",
           "--ep", "1", "--vp", "1", "--micro-batch", "1", "--tp", "8", "--pp", "4"]


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_a_layout_that_does_not_fit_is_one_line_and_exit_2(capsys, fmt):
    code, out, err = _run(capsys, [*TOO_BIG, "-f", fmt])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("capplan: error: the layout does not fit")
    line = err
    assert "needs 123.9 GB per GPU (activations 68.8 GB)" in line
    assert "h100-sxm has 80.0 GB" in line
    assert "--recompute full" in line and "capplan plan" in line
    assert "micro-batch" not in line.partition("to fit try")[2]  # already 1


def test_the_hint_follows_the_largest_term(capsys):
    """ZeRO-0 on 64 GPUs: the optimizer states (104.3 GB) are the largest term."""
    code, _, err = _run(capsys, ["evaluate", "-m", "llama3-70b", "-n", "64", "--tp", "8",
                                 "--pp", "1", "--zero", "0"])
    assert code == 2
    assert "(optimizer states 104.3 GB)" in err and "to fit try --zero 1 or more --tp/--pp" in err


def test_the_fitting_layout_it_points_to_answers(capsys):
    code, out, _ = _run(capsys, [*TOO_BIG[:-2], "--pp", "16", "--recompute", "full", "-f",
                                 "json"])
    assert code == 0 and '"fits": true' in out


def test_the_api_answers_with_fits_false():
    row = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=4, cp=1,
                   ep=1, vp=1, micro_batch=1, as_frame=False)
    assert row["fits"] is False or not bool(row["fits"])
    assert row["memory_per_gpu_bytes"] == pytest.approx(123.9e9, rel=5e-4)
    assert row["step_time_s"] > 0
