"""Long work bounded and visible (issue 44, item 4): the work counted before it starts,
refused above --max-candidates / --max-draw-rows with one line, announced on stderr when
long, progress lines when stderr is not a terminal.  Small inputs, tiny caps, a fake clock:
nothing here runs long work."""

import io
import json

import pytest

from planner.engine.inputs.scenario import Scenario
from planner.engine.run import workload
from planner.engine.search.optimize import plan, search_size
from planner.errors import CapplanError
from planner.report.progress import ProgressLines

SMALL = ["plan", "-m", "llama2-7b", "--tokens", "2T", "-H", "h100-sxm", "--max-gpus", "64",
         "-f", "json"]


def run(capsys, args):
    from planner.cli.main import main

    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_count_is_what_the_search_evaluates(catalog):
    s = Scenario(model="llama2-7b", tokens=2e12, hardware=("h100-sxm", "mi300x"), max_gpus=256)
    candidates, accelerators = search_size(s, catalog)
    assert accelerators == 2
    assert candidates == plan(s, catalog=catalog).evaluated > 0


def test_a_search_above_its_cap_stops_with_one_line():
    with workload.bounded(max_candidates=100):
        assert workload.check_search(100, "1 accelerator", threads=2) >= 0
        with pytest.raises(CapplanError) as caught:
            workload.check_search(101, "1 accelerator", threads=2)
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 2
    assert message.startswith("the search would evaluate 101 candidates (1 accelerator; ~1 s "
                              "on 2 threads, ")
    assert message.endswith("more than --max-candidates 100; narrow it (fewer -H accelerators, "
                            "a smaller --max-gpus, --global-batch or fewer --site) or raise "
                            "--max-candidates")


def test_long_work_is_announced_and_short_work_is_not(monkeypatch):
    monkeypatch.setattr(workload.native, "available", lambda: False)
    said = []
    n = int(2 * workload.ESTIMATE_ABOVE_S / workload.SEARCH_S_PER_CANDIDATE[False])
    with workload.bounded(announce=said.append):
        workload.check_search(n // 4, "3 accelerators", threads=1)
        assert said == []  # ~5 s: nothing said
        workload.check_search(n, "3 accelerators", threads=1, announce=False)
        assert said == []  # a search inside a command: the command announced it
        workload.check_search(n, "3 accelerators", threads=1)
    assert said == [f"searching {n:,} candidates (3 accelerators; ~20 s on 1 thread, numpy "
                    "kernel); progress every few seconds, --max-candidates caps it"]


@pytest.mark.parametrize("seconds, text", [(0.2, "~1 s"), (42.4, "~42 s"), (119, "~119 s"),
                                           (150, "~2 min"), (7199, "~120 min"),
                                           (9000, "~2.5 h")])
def test_seconds_text(seconds, text):
    assert workload.seconds_text(seconds) == text


def test_the_cli_refuses_a_plan_above_max_candidates(capsys):
    code, out, err = run(capsys, [*SMALL, "--max-candidates", "10"])
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("capplan: error: the search would evaluate ")
    assert "more than --max-candidates 10;" in lines[0] and "raise --max-candidates" in lines[0]


def test_the_cap_counts_every_search_of_the_command(capsys, catalog):
    """--confidence searches twice: the cap is on both together."""
    one, _ = search_size(Scenario(model="llama2-7b", tokens=2e12, hardware=("h100-sxm",),
                                  max_gpus=64), catalog)
    code, _, err = run(capsys, [*SMALL, "--confidence", "0.9", "--max-candidates",
                                str(2 * one - 1)])
    assert code == 2 and f"would evaluate {2 * one:,} candidates (1 accelerator x 2 " \
        "searches;" in err
    code, _, err = run(capsys, [*SMALL, "--confidence", "0.9", "--max-candidates", str(2 * one)])
    assert code == 0, err


@pytest.mark.parametrize("cap", ["0", "-5", "1.5", "abc"])
def test_a_bad_cap_is_one_line(capsys, cap):
    code, out, err = run(capsys, [*SMALL, "--max-candidates", cap])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


def test_draws_above_max_draw_rows_stop_with_one_line(capsys):
    code, out, err = run(capsys, [*SMALL, "--uncertainty", "--draws", "400",
                                  "--max-draw-rows", "399"])
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("capplan: error: --uncertainty would evaluate ")
    assert "x 400 draws = " in line
    assert line.endswith("more than --max-draw-rows 399; ask for fewer --draws, a narrower "
                         "plan or raise --max-draw-rows")


def test_the_margins_draws_are_capped_too(capsys):
    code, _, err = run(capsys, [*SMALL, "--confidence", "0.99", "--max-draw-rows", "999"])
    assert code == 2
    assert "--confidence 0.99 margins would evaluate " in err and "x 1,000 draws" in err
    assert "a --confidence nearer 0.5" in err


def test_the_estimate_goes_to_stderr_first_and_the_answer_is_unchanged(capsys, monkeypatch):
    code, quiet, err = run(capsys, SMALL)
    assert code == 0 and err == ""
    monkeypatch.setattr(workload, "ESTIMATE_ABOVE_S", 0.0)
    code, out, err = run(capsys, SMALL)
    assert code == 0
    first = err.splitlines()[0]
    assert first.startswith("capplan: estimate: searching ") and "--max-candidates caps it" in first
    drop = ("seconds",)
    assert {k: v for k, v in json.loads(out).items() if k not in drop} == \
        {k: v for k, v in json.loads(quiet).items() if k not in drop}


def test_a_draw_set_reports_its_progress_to_the_end(catalog):
    from planner.analysis.uncertainty import default_spreads, plan_uncertainty

    result = plan(catalog=catalog, model="llama2-7b", tokens=2e12,
                  hardware=["h100-sxm", "mi300x"], max_gpus=128)
    calls = []
    with workload.bounded(progress=lambda what: lambda d, t, n: calls.append((what, d, t))):
        plan_uncertainty(result, catalog, default_spreads(), draws=30, seed=0)
    rows = int(result.frontier["fits"].astype(bool).sum())
    assert calls and calls[-1] == ("--uncertainty", rows * 30, rows * 30)
    assert [d for _, d, _ in calls] == sorted(d for _, d, _ in calls)


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_lines_every_few_seconds_never_a_carriage_return():
    clock, stream = FakeClock(), io.StringIO()
    lines = ProgressLines("searching", stream, every_s=5.0, first_after_s=10.0, clock=clock)
    lines(0, 10, "")
    clock.now += 9.9
    lines(1, 10, "a100")
    assert stream.getvalue() == ""  # short work says nothing
    clock.now += 0.2  # 10.1 s
    lines(2, 10, "h100-sxm")
    clock.now += 1.0
    lines(3, 10, "h100-sxm")  # within 5 s of the last line: nothing
    clock.now += 5.0
    lines(5, 10, "mi300x")
    assert stream.getvalue().splitlines() == [
        "capplan: progress: searching: 20% (2 of 10), 10 s elapsed, ~40 s left (h100-sxm)",
        "capplan: progress: searching: 50% (5 of 10), 16 s elapsed, ~16 s left (mi300x)"]
    assert "\r" not in stream.getvalue()


def test_progress_counts_passes_as_shares_of_the_whole():
    """--site a,b --confidence 0.9: four searches, each 0..total; the share is the whole's."""
    clock, stream = FakeClock(), io.StringIO()
    lines = ProgressLines("searching", stream, passes=4, every_s=0.0, first_after_s=0.0,
                          clock=clock)
    for done in (0, 1, 2, 2, 0, 1):  # 2 of 2 twice: one pass ends once
        clock.now += 1
        lines(done, 2, "x")
    shares = [line.split(": ")[3].split(" ")[0] for line in stream.getvalue().splitlines()]
    assert shares == ["0%", "12%", "25%", "25%", "25%", "38%"]
    assert "pass 2 of 4" in stream.getvalue().splitlines()[-1]


def test_a_terminal_less_run_gets_progress_lines(monkeypatch):
    import sys

    from planner.report.progress import search_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with search_progress("searching", passes=2) as progress:
        assert isinstance(progress, ProgressLines) and progress.passes == 2


def test_the_estimate_of_a_margined_plan_counts_its_margins(capsys, monkeypatch):
    monkeypatch.setattr(workload, "ESTIMATE_ABOVE_S", 0.0)
    code, _, err = run(capsys, [*SMALL, "--confidence", "0.99"])
    assert code in (0, 1)
    first = err.splitlines()[0]
    assert "(1 accelerator x 2 searches; ~" in first and "with the margins" in first
    # margins cost in proportion to their draws: 1,000 at 0.99 against 200 at 0.9
    assert workload.margin_seconds(1, 20, 1000, compiled=False) == pytest.approx(
        5 * workload.margin_seconds(1, 20, 200, compiled=False), rel=1e-12)


def test_the_count_of_a_plan_of_phases_at_several_sites_is_what_it_evaluates(capsys):
    """Each phase searched once per site (its margins apply to the totals): the up-front
    count is each site's phases' evaluated candidates, summed over the sites."""
    from pathlib import Path

    from planner.cli.scenario_file import load

    example = str(Path(__file__).parents[1] / "docs" / "scenarios" / "llama3-phases.toml")
    code, out, _ = run(capsys, ["plan", "--scenario", example, "-H", "h100-sxm",
                                "--site", "norway,us-average", "--confidence", "0.9",
                                "-f", "json"])
    assert code == 0
    evaluated = sum(site["evaluated"] for site in json.loads(out)["sites"].values())
    phases = len(load(example)["phases"])
    code, _, err = run(capsys, ["plan", "--scenario", example, "-H", "h100-sxm",
                                "--site", "norway,us-average", "--confidence", "0.9",
                                "--max-candidates", str(evaluated - 1)])
    assert code == 2 and f"would evaluate {evaluated:,} candidates (1 accelerator x " \
        f"{2 * phases} searches;" in err, err


def test_the_library_api_is_capped_too(catalog):
    """planner.plan under workload.bounded: the same cap and message as the CLI's."""
    with workload.bounded(max_candidates=10), pytest.raises(
            CapplanError, match=r"^the search would evaluate [\d,]+ candidates \(1 "
            r"accelerator; .*more than --max-candidates 10;"):
        plan(catalog=catalog, model="llama2-7b", tokens=2e12, hardware=["h100-sxm"],
             max_gpus=64)
