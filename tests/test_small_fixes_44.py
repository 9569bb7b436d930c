"""The smaller items of issue 44 ("Why" item 7): each was a wrong exit code, a silent
answer or a multi-line error; each is now one stderr line (exit 2) or a sensible answer."""

from __future__ import annotations

import pytest

from hardware_catalog import clear_cache
from hardware_catalog.loader import ENV_VAR
from planner.cli.main import main
from planner.errors import USAGE

SMALL_PLAN = ["plan", "-m", "llama2-7b", "-H", "h100-sxm", "--tokens", "1e11",
              "--max-gpus", "64"]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("CAPPLAN_KERNEL", raising=False)
    clear_cache()
    yield
    clear_cache()


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_usage_error(code: int, err: str, *needles: str) -> None:
    assert code == USAGE, err
    assert err.startswith("capplan: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


def test_plan_refuses_an_unknown_provider_as_evaluate_does(capsys):
    """Was exit 1, "No layout ... exists" (every accelerator skipped for the provider)."""
    code, _, plan_err = _run(capsys, *SMALL_PLAN, "--provider", "bogus")
    _one_line_usage_error(code, plan_err, "unknown provider 'bogus'", "did you mean: nebius?")
    code, _, evaluate_err = _run(capsys, "evaluate", "-m", "llama2-7b", "-H", "h100-sxm",
                                 "--gpus", "64", "--provider", "bogus")
    assert code == USAGE and evaluate_err == plan_err
