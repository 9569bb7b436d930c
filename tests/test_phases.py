"""Runs of several phases (issue 26): the three-phase example (ramp, main, 128K context
extension, docs/scenarios/llama3-phases.toml) through evaluate, plan, simulate and export
xlsx, each total the sum of its phases; the [[phases]] schema's one-line errors."""

import json
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.engine.inputs.phases import ADDITIVE, parse_phases, sum_phases
from planner.engine.layouts.evaluator import evaluate

EXAMPLE = str(Path(__file__).resolve().parents[1] / "docs" / "scenarios" / "llama3-phases.toml")
SUMMED = ("wall_days", "gpu_hours", "energy_gpu_kwh", "energy_it_kwh", "energy_kwh",
          "cost_usd", "co2e_kg", "steps", "tokens", "eval_time_s", "rollback_time_s")


def _json(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def evaluated():
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["evaluate", "--scenario", EXAMPLE, "-f", "json"]) == 0
    return json.loads(buf.getvalue())


def test_evaluate_totals_are_the_sums_of_the_phases(evaluated):
    phases, totals = evaluated["phases"], evaluated["totals"]
    assert [p["name"] for p in phases] == ["ramp", "main", "long-context"]
    for key in SUMMED:
        assert totals[key] == pytest.approx(sum(p[key] for p in phases), rel=1e-12), key
    assert totals["ettr"] == pytest.approx(
        sum(p["solve_time_s"] for p in phases) / totals["wall_time_s"], rel=1e-12)
    assert totals["tokens"] == pytest.approx(15e12)


def test_each_phase_is_the_one_phase_run(evaluated):
    """A phase's numbers are those of evaluating it alone (same cluster, its own shape)."""
    long = evaluated["phases"][2]
    assert (long["inputs"]["seq_len"], long["inputs"]["global_batch"], long["inputs"]["cp"]) \
        == (131072, 128, 16)
    # (the sizes the phase leaves out are searched: the same layout, given)
    sizes = {k: long["inputs"][k] for k in ("tp", "pp", "ep", "vp", "micro_batch")}
    alone = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024, cp=16, **sizes,
                     seq_len=131072, global_batch=128, tokens=0.8e12).iloc[0]
    for key in ("step_time_s", "wall_days", "gpu_hours", "cost_usd"):
        assert long[key] == pytest.approx(float(alone[key]), rel=1e-9), key


def test_evaluate_table_has_a_row_per_phase_and_a_total(capsys):
    assert main(["evaluate", "--scenario", EXAMPLE, "-f", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(",")[0] for line in lines[1:]] == ["ramp", "main", "long-context",
                                                          "total"]


def test_plan_totals_are_the_sums_of_the_phases(capsys):
    out = _json(capsys, ["plan", "--scenario", EXAMPLE, "-f", "json"])
    assert out["phases"] == ["ramp", "main", "long-context"]
    for objective, best in out["best"].items():
        assert len(best["phases"]) == 3
        for key in ("wall_days", "gpu_hours", "energy_mwh", "cost_usd", "co2e_t"):
            assert best[key] == pytest.approx(sum(p[key] for p in best["phases"]),
                                              rel=1e-12), (objective, key)
        assert best["wall_days"] <= 120  # the file's deadline, on the totals
    cost = out["best"]["cost"]
    # each phase at a layout of its own on the one cluster; re-evaluating it agrees
    p = cost["phases"][2]
    alone = evaluate(model="llama3-70b", hardware=cost["hardware"], gpus=cost["gpus"],
                     tp=p["tp"], pp=p["pp"], cp=p["cp"], vp=p["vp"], ep=p["ep"],
                     micro_batch=p["micro_batch"], recompute=p["recompute"], zero=p["zero"],
                     shard_group=p["shard_group"], seq_len=131072, global_batch=128, tokens=0.8e12).iloc[0]
    assert p["wall_days"] == pytest.approx(float(alone["wall_days"]), rel=1e-9)
    assert out["best"]["time"]["wall_days"] <= cost["wall_days"]


def test_plan_refuses_a_phase_gpu_count(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[phases]]\nname = "a"\ntokens = 1e12\ngpus = 64\n')
    assert main(["plan", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "gpus" in err and len(err.splitlines()) == 1


def test_simulate_sums_the_phases(capsys):
    out = _json(capsys, ["simulate", "--scenario", EXAMPLE, "--replicas", "200", "-f",
                         "json"])
    assert out["phases"] == ["ramp", "main", "long-context"]
    assert abs(out["wall_days"]["relative_difference"]) < 0.005
    assert abs(out["gpu_hours"]["relative_difference"]) < 0.005


def test_export_xlsx_phases_sheet(tmp_path, capsys):
    openpyxl = pytest.importorskip("openpyxl")
    target = tmp_path / "phases.xlsx"
    assert main(["export", "xlsx", "--scenario", EXAMPLE, "-o", str(target)]) == 0
    sheet = openpyxl.load_workbook(target)["Phases"]
    rows = list(sheet.iter_rows(values_only=True))
    header = rows[0]
    assert [r[0] for r in rows[1:]] == ["ramp", "main", "long-context", "total"]
    col = header.index("gpu_hours")
    letter = openpyxl.utils.get_column_letter(col + 1)
    assert rows[-1][col] == f"=SUM({letter}2:{letter}4)"


def test_sum_phases_of_rows():
    rows = [{k: 1.0 for k in ADDITIVE} | {"model_flops_per_token": 2.0, "peak_power_w": p,
                                          "solve_time_s": 0.5}
            for p in (3.0, 5.0)]
    total = sum_phases(rows)
    assert total["wall_time_s"] == 2.0 and total["ettr"] == 0.5
    assert total["peak_power_w"] == 5.0


@pytest.mark.parametrize("body,needle", [
    ('[[phases]]\nname = "a"\ntokns = 1e12\n', "did you mean: tokens"),
    ('[[phases]]\nname = "a"\n', "needs tokens"),
    ('[[phases]]\nname = "a"\ntokens = -1.0\n', "tokens must be"),
    ('[[phases]]\nname = "a"\ntokens = 1e12\n[[phases]]\nname = "a"\ntokens = 1e12\n',
     "unique"),
    ('phases = 3\n', "phases must be a list"),
])
def test_bad_phases_one_line(capsys, tmp_path, body, needle):
    path = tmp_path / "s.toml"
    path.write_text(body)
    assert main(["evaluate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1, err


def test_parse_phases_keeps_what_is_given():
    (phase,) = parse_phases([{"name": " main ", "tokens": 5, "seq_len": 4096}])
    assert phase.name == "main" and phase.options() == {"tokens": 5.0, "seq_len": 4096}


def test_a_phase_sets_every_size_evaluate_chooses(capsys, tmp_path):
    # the layout sizes of a phase are read from the layout's declaration: ETP too (an MoE
    # phase on a new GPU count may keep its experts' GEMMs whole)
    from planner.engine.inputs.layout_rules import CHOSEN_SIZES
    from planner.engine.inputs.phases import PHASE_KEYS

    assert {"gpus", *CHOSEN_SIZES} <= set(PHASE_KEYS)
    (phase,) = parse_phases([{"name": "main", "tokens": 1e11, "gpus": 64, "tp": 2, "ep": 8,
                              "etp": 1}])
    assert phase.options() == {"tokens": 1e11, "gpus": 64, "tp": 2, "ep": 8, "etp": 1}
    path = tmp_path / "moe.toml"
    path.write_text('model = "mixtral-8x7b"\nhardware = "h100-sxm"\n'
                    '[[phases]]\nname = "short"\ntokens = 1e11\ngpus = 64\ntp = 2\npp = 1\n'
                    'ep = 8\netp = 1\n'
                    '[[phases]]\nname = "long"\ntokens = 1e10\nseq_len = 8192\ngpus = 64\n'
                    'tp = 2\npp = 1\nep = 8\n')
    # full recompute: at TP2 the phases' activations (129 GB per GPU) do not fit otherwise
    data = _json(capsys, ["evaluate", "--scenario", str(path), "--recompute", "full", "-f",
                          "json"])
    etp = {p["name"]: p["inputs"]["etp"] for p in data["phases"]}
    assert etp == {"short": 1, "long": 2}  # left out: ETP = TP


def test_plan_of_phases_says_which_winners_sit_on_the_edge_of_the_gpu_range(capsys):
    data = _json(capsys, ["plan", "--scenario", EXAMPLE, "--max-gpus", "2048", "-f", "json"])
    for objective, row in data["best"].items():
        expected = "max_gpus" if row["gpus"] == 2048 else None
        assert row["range_edge"] == expected, objective
    assert data["best"]["time"]["range_edge"] == "max_gpus"
    assert main(["plan", "--scenario", EXAMPLE, "--max-gpus", "2048"]) == 0
    out = capsys.readouterr().out
    assert "2,048 GPUs is --max-gpus 2,048, the edge of the GPU range searched" in out


def test_plan_of_phases_at_a_confidence_keeps_the_deadline_at_that_quantile(capsys):
    nominal = _json(capsys, ["plan", "--scenario", EXAMPLE, "-f", "json"])
    p90 = _json(capsys, ["plan", "--scenario", EXAMPLE, "--confidence", "0.9", "-f", "json"])
    assert nominal["planned_quantile"] is None and nominal["margins"] == {}
    assert p90["planned_quantile"] == 0.9 and p90["margins"]
    for objective, best in p90["best"].items():
        m = p90["margins"][best["hardware"]]
        assert m["wall_days"] > 1.0  # the model's spread widens the run at P90
        # the file's deadline: by the margin on the nominal run, and at P90 as shown
        assert best["nominal"]["wall_days"] * m["wall_days"] <= 120, objective
        assert best["wall_days"] <= 120 * 1.03, objective
    # the least-cost cluster at P90 is never smaller than the nominal one on the same part
    cost, cost_nominal = p90["best"]["cost"], nominal["best"]["cost"]
    if cost["hardware"] == cost_nominal["hardware"]:
        assert cost["gpus"] >= cost_nominal["gpus"]


def test_phase_margins_are_each_phases_largest(monkeypatch):
    import types

    import pandas as pd

    from planner.analysis import confidence
    from planner.analysis.confidence import phase_margins
    from planner.engine.inputs.scenario import Scenario
    from planner.engine.search.explain import margin

    per_phase = iter([(("b200", 1.2, 1.0, 1.0), ("h100-sxm", 1.05, 1.02, 1.01)),
                      (("h100-sxm", 1.10, 1.01, 1.0),)])
    monkeypatch.setattr(confidence, "margins", lambda *a, **k: next(per_phase))
    result = types.SimpleNamespace(frontier=pd.DataFrame({"fits": [True]}))
    table = phase_margins([result, result], None, {}, 0.9)
    assert table == (("b200", 1.2, 1.0, 1.0), ("h100-sxm", 1.10, 1.02, 1.01))
    # the totals' check (explain.margin, as in plan_phases) reads them per cluster
    s = Scenario(model="llama3-70b", tokens=1e12, margins=table)
    got = margin({"hardware": ["h100-sxm", "b200", "mi300x"]}, s, "wall_days")
    assert got.tolist() == [1.10, 1.2, 1.0]  # an accelerator without a margin: none


def test_plan_of_phases_plots_the_totals_and_the_winners_phases(capsys, tmp_path,
                                                              monkeypatch):
    pytest.importorskip("matplotlib")
    from planner.engine.inputs.scenario import OBJECTIVE_COLUMNS
    from planner.report import plot

    drawn_results = []
    real = plot.plot_phases
    monkeypatch.setattr(plot, "plot_phases",
                        lambda result, *a, **k: drawn_results.append(result) or real(
                            result, *a, **k))
    out, png = tmp_path / "p.json", tmp_path / "p.png"
    assert main(["plan", "--scenario", EXAMPLE, "-f", "json", "-o", str(out),
                 "--plot", str(png)]) == 0
    assert png.stat().st_size > 20_000
    best = json.loads(out.read_text())["best"]
    # what the figure draws: per objective and cluster, the run's totals; the panels'
    # per-GPU-count minimum of an objective's column is that objective's own total, and
    # the winner is the least of it among the clusters that meet the constraints
    (result,) = drawn_results
    view = plot.phase_totals_view(result)
    # the figure's title counts the phases' tokens, not the scenario's own (unused) count
    assert view.scenario.tokens == sum(p.tokens for p in result.phases)
    for objective, column in OBJECTIVE_COLUMNS.items():
        totals = result.totals[objective]
        won = best[objective]
        row = totals.loc[(totals["hardware"] == won["hardware"])
                         & (totals["gpus"] == won["gpus"])].iloc[0]
        assert row[column] == pytest.approx(won[column], rel=1e-12)
        assert bool(row["meets"])
        assert row[column] == pytest.approx(totals.loc[totals["meets"], column].min(),
                                            rel=1e-12)
        drawn = view.frontier.loc[(view.frontier["hardware"] == won["hardware"])
                                  & (view.frontier["gpus"] == won["gpus"]), column].min()
        assert drawn == pytest.approx(row[column], rel=1e-12), objective


def test_plan_of_phases_refuses_a_bad_plot_before_searching(capsys, tmp_path):
    taken = tmp_path / "p.png"
    taken.write_text("mine")
    assert main(["plan", "--scenario", EXAMPLE, "--plot", str(taken)]) == 2
    assert taken.read_text() == "mine"  # nothing the user wrote is overwritten
    assert main(["plan", "--scenario", EXAMPLE, "--plot", str(tmp_path / "p.txt")]) == 2


def test_plan_of_phases_uncertainty_without_spread_is_the_nominal_total(capsys, tmp_path):
    # every sigma 0: each draw is the nominal run, so every quantile is the nominal total
    from planner.analysis.uncertainty import QUANTITIES, default_spreads

    flat = tmp_path / "flat.toml"
    flat.write_text(Path(EXAMPLE).read_text() + "\n[uncertainty]\n" + "".join(
        f"{name} = {{sigma = 0.0}}\n" for name in default_spreads()))
    out = _json(capsys, ["plan", "--scenario", str(flat), "--uncertainty", "--draws", "8",
                         "-f", "json"])
    for objective, best in out["best"].items():
        for q in QUANTITIES:
            band = out["uncertainty"]["nominal_winners"][objective][q]
            assert band["p10"] == pytest.approx(best[q], rel=1e-9), (objective, q)
            assert band["p90"] == pytest.approx(best[q], rel=1e-9), (objective, q)


def test_plan_of_phases_uncertainty_bands_and_risk(capsys):
    out = _json(capsys, ["plan", "--scenario", EXAMPLE, "--uncertainty", "--draws", "200",
                         "-f", "json"])
    report = out["uncertainty"]
    assert report["draws"] == 200
    for objective, probs in report["win_probability"].items():
        assert 0 < sum(probs.values()) <= 1 + 1e-12, objective
    for objective, best in out["best"].items():
        band = report["nominal_winners"][objective]["wall_days"]
        assert band["p10"] < band["p50"] < band["p90"]
        # lognormal factors of median 1: the median run is within 15 % of the nominal one
        assert band["p50"] == pytest.approx(best["wall_days"], rel=0.15)
        risk = report["constraint_risk"][objective]["deadline"]
        assert risk["limit"] == 120 and risk["missed_at_quantile"] == (band["p90"] > 120)


def test_plan_of_phases_win_probabilities(capsys, tmp_path):
    """Without spread every draw is the nominal plan: each objective's nominal winner wins
    every draw; with the default spreads the probabilities of each objective sum to the
    share of draws some cluster meets the constraints in (here all), and the table shows
    them."""
    args = ["--hardware", "h100-sxm,b200,mi300x", "--uncertainty", "--draws", "40"]
    flat = _flat(tmp_path, Path(EXAMPLE).read_text())
    out = _json(capsys, ["plan", "--scenario", str(flat), *args, "-f", "json"])
    assert set(out["uncertainty"]["win_probability"]["cost"]) == {"h100-sxm", "b200",
                                                                  "mi300x"}
    for objective, best in out["best"].items():
        assert out["uncertainty"]["win_probability"][objective][best["hardware"]] == 1.0
    drawn = _json(capsys, ["plan", "--scenario", EXAMPLE, *args, "-f", "json"])
    for objective, probs in drawn["uncertainty"]["win_probability"].items():
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-12), objective
    assert main(["plan", "--scenario", EXAMPLE, *args]) == 0
    assert "Probability of being the winner" in capsys.readouterr().out


def test_plan_of_phases_refuses_a_bad_output_before_the_search(capsys, monkeypatch):
    from planner.analysis import confidence

    def no_search(*args, **kwargs):
        raise AssertionError("searched before checking -o")

    monkeypatch.setattr(confidence, "plan_phases_at_confidence", no_search)
    assert main(["plan", "--scenario", EXAMPLE, "-o", "/nonexistent/dir/x.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not exist" in err and len(err.splitlines()) == 1


def test_plan_of_phases_flags_winners_resting_on_catalog_estimates(capsys):
    # issue 26: per-winner estimate flags in plan JSON, for phases as for one phase: the
    # same flags as the regular plan gives the same accelerator
    phased = _json(capsys, ["plan", "--scenario", EXAMPLE, "--hardware", "b300", "-f", "json"])
    single = _json(capsys, ["plan", "--model", "llama3-70b", "--hardware", "b300", "-f",
                            "json"])
    expected = single["best"]["cost"]["estimate_flags"]
    assert "performance" in expected  # no validation row on b300: the check can fail
    for objective, best in phased["best"].items():
        assert best["estimate_flags"] == expected, objective
    csv_text = main(["plan", "--scenario", EXAMPLE, "--hardware", "b300", "-f", "csv"])
    assert csv_text == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert "estimate_flags" in header.split(",")
    table = main(["plan", "--scenario", EXAMPLE, "--hardware", "b300"])
    assert table == 0
    assert "* b300: " in capsys.readouterr().out  # the footnote of the flags


def test_plan_of_phases_at_several_sites_ranks_each_sites_phases_plan(capsys):
    sites = _json(capsys, ["plan", "--scenario", EXAMPLE, "--site", "norway,us-average",
                           "-f", "json"])
    assert [r["site"] for r in sites["ranking"]] == ["norway", "us-average"]  # by cost: a tie
    for name in ("norway", "us-average"):
        one = _json(capsys, ["plan", "--scenario", EXAMPLE, "--site", name, "-f", "json"])
        got = sites["sites"][name]
        assert got["phases"] == ["ramp", "main", "long-context"]
        for objective, best in one["best"].items():
            assert got["best"][objective]["hardware"] == best["hardware"]
            assert got["best"][objective]["gpus"] == best["gpus"]
            assert got["best"][objective]["co2e_t"] == pytest.approx(best["co2e_t"], rel=1e-12)
        row = next(r for r in sites["ranking"] if r["site"] == name)
        assert row["best_co2e_t"] == pytest.approx(one["best"]["carbon"]["co2e_t"], rel=1e-12)
    assert sites["winners"]["carbon"] == ["norway"]  # the cleaner grid
    # a figure is one site's
    assert main(["plan", "--scenario", EXAMPLE, "--site", "all", "--plot", "x.png"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_plan_of_phases_at_several_sites_at_a_confidence_with_uncertainty(capsys):
    """Each site's phases plan at P90 is the one-site plan at P90, with its own margins
    and its winners' bands."""
    args = ["--confidence", "0.9", "--uncertainty", "--draws", "30", "-f", "json"]
    sites = _json(capsys, ["plan", "--scenario", EXAMPLE, "--site", "norway,us-average",
                           *args])
    for name in ("norway", "us-average"):
        one = _json(capsys, ["plan", "--scenario", EXAMPLE, "--site", name, *args])
        got = sites["sites"][name]
        assert got["planned_quantile"] == one["planned_quantile"] == 0.9
        for hw, margin in one["margins"].items():
            assert got["margins"][hw] == pytest.approx(margin, rel=1e-12)
        for objective, best in one["best"].items():
            assert got["best"][objective]["gpus"] == best["gpus"]
            assert got["best"][objective]["wall_days"] == pytest.approx(best["wall_days"],
                                                                        rel=1e-12)
        for objective, bands in one["uncertainty"]["nominal_winners"].items():
            for quantity in ("wall_days", "cost_usd", "energy_mwh"):
                assert got["uncertainty"]["nominal_winners"][objective][quantity] == \
                    pytest.approx(bands[quantity], rel=1e-12)


def _flat(tmp_path, text: str) -> Path:
    """``text`` as a scenario file whose [uncertainty] table sets every spread to 0."""
    from planner.analysis.uncertainty import default_spreads

    path = tmp_path / "flat.toml"
    path.write_text(text + "\n[uncertainty]\n" + "".join(
        f"{name} = {{sigma = 0.0}}\n" for name in default_spreads()))
    return path


def test_evaluate_of_phases_uncertainty_without_spread_is_the_nominal_total(capsys, tmp_path):
    # the file's [uncertainty] table reaches evaluate --uncertainty (it used the defaults)
    flat = _flat(tmp_path, Path(EXAMPLE).read_text())
    out = _json(capsys, ["evaluate", "--scenario", str(flat), "--uncertainty", "--draws", "8",
                         "-f", "json"])
    for q in ("wall_days", "cost_usd", "energy_mwh", "co2e_t"):
        band = out["uncertainty"][q]
        assert band["p10"] == pytest.approx(out["totals"][q], rel=1e-9), q
        assert band["p90"] == pytest.approx(out["totals"][q], rel=1e-9), q


def test_evaluate_of_one_phase_reads_the_files_spreads(capsys, tmp_path):
    flat = _flat(tmp_path, 'model = "llama3-8b"\ntokens = 1e12\n')
    out = _json(capsys, ["evaluate", "--scenario", str(flat), "--gpus", "64", "--uncertainty",
                         "--draws", "8", "-f", "json"])
    band = out["uncertainty"]["wall_days"]
    assert band["p10"] == pytest.approx(band["p90"], rel=1e-9)
    assert band["p50"] == pytest.approx(out["wall_days"], rel=1e-9)


def test_evaluate_of_phases_draws_one_set_of_factors_for_all_phases(capsys, tmp_path):
    # two identical phases: each draw's total is twice one phase's under the same factors,
    # so every quantile doubles (independent factors per phase would narrow the band)
    one = 'model = "llama3-8b"\n[[phases]]\nname = "a"\ntokens = 5e11\n'
    two = one + '[[phases]]\nname = "b"\ntokens = 5e11\n'
    (tmp_path / "one.toml").write_text(one)
    (tmp_path / "two.toml").write_text(two)
    args = ["--gpus", "64", "--uncertainty", "--draws", "200", "--seed", "3", "-f", "json"]
    single = _json(capsys, ["evaluate", "--scenario", str(tmp_path / "one.toml"), *args])
    double = _json(capsys, ["evaluate", "--scenario", str(tmp_path / "two.toml"), *args])
    for q in ("wall_days", "cost_usd", "energy_mwh", "co2e_t"):
        for p in ("p10", "p50", "p90"):
            assert double["uncertainty"][q][p] == pytest.approx(
                2 * single["uncertainty"][q][p], rel=1e-9), (q, p)
    peak = single["uncertainty"]["peak_power_mw"]["p90"]
    assert double["uncertainty"]["peak_power_mw"]["p90"] == pytest.approx(peak, rel=1e-9)
    assert single["uncertainty"]["wall_days"]["p90"] > single["uncertainty"]["wall_days"]["p10"]


def test_phase_uncertainty_blocks_do_not_change_the_report(monkeypatch):
    """The draws are evaluated in blocks and each phase's distinct rows once for every
    objective: any block size gives one report."""
    from hardware_catalog import load_catalog
    from planner.analysis import uncertainty as u
    from planner.engine.inputs.scenario import Scenario
    from planner.engine.search.phase_plan import plan_phases

    catalog = load_catalog()
    phases = parse_phases([{"name": "short", "tokens": 2e11, "seq_len": 2048},
                           {"name": "long", "tokens": 5e10, "seq_len": 8192}])
    result = plan_phases(Scenario(model="llama2-7b", tokens=2.5e11, max_gpus=256,
                                  hardware=("h100-sxm", "a100-80gb")), phases, catalog=catalog)
    spreads = u.default_spreads()
    whole = u.phase_uncertainty(result, catalog, spreads, draws=30, seed=3)
    monkeypatch.setattr(u, "UNCERTAINTY_BLOCK", 7)  # fewer rows than one draw
    assert u.phase_uncertainty(result, catalog, spreads, draws=30, seed=3) == whole
    assert set(whole["win_probability"]["cost"]) == {"h100-sxm", "a100-80gb"}
