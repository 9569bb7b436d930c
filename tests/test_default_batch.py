"""A global batch left out is 16M tokens of sequences (a power of two), rounded to the
nearest multiple of DP x micro-batch where the model-parallel sizes given fix DP and the
power of two is not one: a published run on 24, 96 or 1,536 GPUs ran whole micro-batches
per DP rank (Megatron-Core refuses a batch they do not divide).  A batch given stands."""

import json

import pytest

from planner import evaluate
from planner.cli.main import main
from planner.errors import CapplanError


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


BASE = ["evaluate", "-m", "llama3-8b", "-H", "h100-sxm", "--tp", "1", "--pp", "1", "--cp", "1"]


def test_the_default_batch_is_rounded_to_whole_micro_batches(capsys):
    code, out, err = _run(capsys, [*BASE, "-n", "24", "-f", "json"])
    assert code == 0, err
    assert json.loads(out)["inputs"]["global_batch"] == 2040  # 85 x 24, nearest to 2,048
    assert ("capplan: global batch: 2,040 sequences, the default 2,048 rounded to a multiple "
            "of DP x micro-batch = 24 (--global-batch chooses another)") in err
    # a batch the layout divides is not touched, and nothing is said
    code, out, err = _run(capsys, [*BASE, "-n", "32", "-f", "json"])
    assert code == 0 and json.loads(out)["inputs"]["global_batch"] == 2048
    assert "global batch:" not in err


def test_a_batch_given_stands(capsys):
    code, out, err = _run(capsys, [*BASE, "-n", "24", "--global-batch", "2048"])
    assert code == 2 and "global batch 2048 is not divisible by DP*micro-batch" in err
    with pytest.raises(CapplanError, match="not divisible"):
        evaluate(model="llama3-8b", gpus=24, tp=1, pp=1, cp=1, global_batch=2048)


@pytest.mark.parametrize("gpus, tp, pp, micro_batch, expected", [
    (24, 1, 1, 1, 2040), (96, 2, 1, 1, 2064), (1536, 8, 2, 1, 2016), (48, 1, 2, 2, 2064),
    (12, 4, 3, 1, 2048),
])
def test_the_api_rounds_alike(gpus, tp, pp, micro_batch, expected):
    row = evaluate(model="llama3-8b", gpus=gpus, tp=tp, pp=pp, cp=1,
                   micro_batch=micro_batch, as_frame=False)
    unit = gpus // (tp * pp) * micro_batch
    assert row["global_batch"] == expected and expected % unit == 0
    assert abs(expected - 2048) <= unit / 2
