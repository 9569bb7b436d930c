"""Issue 29, items 3 and 4 (parts): every output path honest, SI suffixes, one GPU range.

- ``-o`` with an extension no command writes as text (``.xlsx``, ``.png`` ...) is a
  one-line error (exit 2) naming what writes it, instead of a text table in a ``.xlsx``;
- ``--scheduler processes`` without Dask and ``--plot`` without matplotlib are a
  one-line install hint (exit 2) before any work;
- counts and money take SI suffixes (``15T``, ``5M``, ``2.5k``); garbage is refused in
  one line with a did-you-mean;
- ``sweep`` and ``plan`` search the same default GPU range.
"""

from __future__ import annotations

import json
import sys

import pytest

from planner.cli.main import main
from planner.cli.numbers import si_count, si_float
from planner.errors import USAGE

SMALL = ["-m", "llama3-8b", "-H", "h100-sxm", "--max-gpus", "64", "--tokens", "1e11"]


def _run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_usage_error(code, err, *needles):
    assert code == USAGE, err
    assert err.startswith("capplan: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.fixture
def no_search(monkeypatch):
    """Fail the test if a search starts: errors must come before any work."""
    from planner.engine.search import optimize
    def searched(*args, **kwargs):
        raise AssertionError("the search ran before the error")

    monkeypatch.setattr(optimize, "plan", searched)


# ------------------------------------------------------------------------- -o extensions

@pytest.mark.parametrize("name,hint", [("out.xlsx", "capplan export xlsx"),
                                       ("OUT.XLS", "capplan export xlsx"),
                                       ("plan.png", "--plot FILE"), ("plan.pdf", "--plot FILE"),
                                       ("page.html", "-o writes text")])
@pytest.mark.parametrize("format", [[], ["-f", "json"]])
def test_o_with_an_extension_the_command_cannot_write(tmp_path, capsys, monkeypatch,
                                                      no_search, name, hint, format):
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, "plan", *SMALL, *format, "-o", name)
    _one_line_usage_error(code, err, f"cannot write {name[name.index('.'):].lower()} files",
                          "table (.txt), json (.json), csv (.csv), markdown (.md)", hint)
    assert out == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name,mark", [("out.txt", "┏"), ("out.log", "┏"), ("out", "┏"),
                                       ("out.json", '{\n  "step_time_s"'), ("out.md", "\n|")])
def test_o_with_a_text_extension_writes_that_format(tmp_path, capsys, monkeypatch, name,
                                                    mark):
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "evaluate", "-m", "llama3-8b", "-H", "h100-sxm", "-n", "64",
                        "--tp", "8", "--pp", "1", "-o", name)
    assert code == 0, err
    assert mark in (tmp_path / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------- missing extras

@pytest.mark.parametrize("scheduler", ["processes", "threads", "tcp://127.0.0.1:8786"])
def test_scheduler_without_dask_is_an_install_hint_before_any_work(capsys, monkeypatch,
                                                                   no_search, scheduler):
    monkeypatch.setitem(sys.modules, "dask", None)  # import dask -> ImportError
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, out, err = _run(capsys, "plan", *SMALL, "--scheduler", scheduler)
    _one_line_usage_error(code, err, f"--scheduler {scheduler} needs Dask",
                          "pip install 'capplan[dask]'")
    assert out == ""


@pytest.mark.parametrize("command", [["plan", *SMALL], ["sweep", *SMALL],
                                     ["checkpoint", "--gpus", "128"],
                                     ["sensitivity", "-m", "llama3-8b", "-n", "64"]])
def test_plot_without_matplotlib_is_an_install_hint_before_any_work(tmp_path, capsys,
                                                                    monkeypatch, no_search,
                                                                    command):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    code, out, err = _run(capsys, *command, "--plot", "fig.png")
    _one_line_usage_error(code, err, "matplotlib is not installed",
                          "pip install 'capplan[plot]'")
    assert out == ""  # no table printed first
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------ SI suffixes

@pytest.mark.parametrize("text,value", [("15T", 15e12), ("5M", 5e6), ("2.5k", 2500.0),
                                        ("2.5K", 2500.0), ("7B", 7e9), ("1G", 1e9),
                                        ("1P", 1e15), ("1.5e3k", 1.5e6), ("15e12", 15e12),
                                        ("1024", 1024.0), (" 3M ", 3e6), ("inf", float("inf"))])
def test_si_float(text, value):
    assert si_float(text) == value


@pytest.mark.parametrize("text,value", [("2.5k", 2500), ("16k", 16000), ("1M", 10**6),
                                        ("64", 64), ("1e3", 1000),
                                        ("9223372036854775808", 2**63)])
def test_si_count(text, value):
    got = si_count(text)
    assert got == value and type(got) is int


@pytest.mark.parametrize("args,needle", [
    (["plan", "--tokens", "15t"], "did you mean: 15T?"),
    (["plan", "--budget-usd", "5m"], "did you mean: 5M?"),
    (["plan", "--budget-usd", "five"], "'five' is not a number, optionally with a suffix"),
    (["plan", "--budget-usd", "5MM"], "is not a number"),
    (["plan", "--budget-usd", "5 million"], "is not a number"),
    (["plan", "--tokens", "1__5"], "is not a number"),
    (["plan", "--tokens", "2+2"], "is not a number"),
    (["plan", "--tokens", "15X"], "unknown suffix 'X'"),
    (["evaluate", "-n", "1.5"], "'1.5' is not a whole number"),
    (["evaluate", "-n", "2.0005k"], "is not a whole number"),
    (["evaluate", "-n", "nan"], "is not a whole number"),
    (["plan", "--max-gpus", "1.5k5"], "is not a number"),
])
def test_garbage_numbers_are_one_line_errors(capsys, no_search, args, needle):
    code, out, err = _run(capsys, *args)
    _one_line_usage_error(code, err, needle)
    assert out == ""


def test_plain_floats_still_work_and_domains_still_apply(capsys):
    code, _, err = _run(capsys, "plan", "--tokens", "nan")
    _one_line_usage_error(code, err, "--tokens must be a finite number", "got nan")
    code, _, err = _run(capsys, "plan", "--max-gpus", "9223372036854775808")
    _one_line_usage_error(code, err, "--max-gpus")


def test_suffixed_and_plain_values_give_the_same_answer(capsys):
    base = ["evaluate", "-m", "llama3-8b", "-H", "h100-sxm", "--tp", "8", "--pp", "1", "-f",
            "json"]
    code, plain, err = _run(capsys, *base, "-n", "1024", "--tokens", "2e12")
    assert code == 0, err
    code, suffixed, err = _run(capsys, *base, "-n", "1.024k", "--tokens", "2T")
    assert code == 0, err
    assert json.loads(suffixed) == json.loads(plain)


def test_plan_budget_in_millions(capsys):
    code, out, err = _run(capsys, "plan", *SMALL, "--budget-usd", "5M", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["scenario"]["budget_usd"] == 5e6


# ------------------------------------------------------------------ one GPU range

def test_sweep_searches_plans_default_gpu_range(capsys):
    code, out, err = _run(capsys, "sweep", "-m", "llama3-8b", "--max-gpus", "64", "-f", "json")
    assert code == 0, err  # was "GPU range 128..64 is empty"
    counts = [row["gpus"] for row in json.loads(out)["rows"]]
    assert counts and min(counts) >= 8 and max(counts) <= 64 and min(counts) < 128


def test_sweep_and_plan_share_their_defaults():
    from planner.cli._commands_generated import codesign, sweep
    from planner.cli.scenario_options import scenario_options as _options
    from planner.engine.inputs.scenario import DEFAULTS

    def default(function, name):
        import inspect

        return inspect.signature(function).parameters[name].default.default

    for function in (sweep, _options, codesign):
        assert default(function, "min_gpus") == DEFAULTS["min_gpus"] == 8
        assert default(function, "max_gpus") == DEFAULTS["max_gpus"]
