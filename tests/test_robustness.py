"""Issue 18: one error boundary, input domains, atomic output files, one default source.

Every reproducer of issue 18 in this area runs here in-process: a bad value is one line
on stderr naming the flag with exit code 2, an infeasible plan exit 1, a bug exit 3.
"""

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.errors import INFEASIBLE, INTERNAL, USAGE, CapplanError, one_line

TINY = ["-m", "tinyllama-1.1b", "-H", "h100-sxm"]


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, err, *needles):
    assert code == USAGE, err
    assert err.startswith("capplan: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


# --------------------------------------------------------------------- bad values, exit 2

@pytest.mark.parametrize("args,needle", [
    (["evaluate", "--tokens", "-5"], "--tokens must be a finite number >= 1"),
    (["sensitivity", "--tokens", "1e-308"], "--tokens must be a finite number >= 1"),
    (["evaluate", "--tokens", "-inf"], "got -inf"),
    (["evaluate", "--tokens", "nan"], "got nan"),
    (["evaluate", "--gpus", "0"], "--gpus must be an integer >= 1"),
    (["evaluate", "--micro-batch", "0"], "--micro-batch must be an integer >= 1"),
    (["evaluate", "--vp", "0"], "--vp must be"),
    (["evaluate", "--ep", "0"], "--ep must be"),
    (["evaluate", "--zero", "7"], "--zero must be an integer >= 0 and <= 3, got 7"),
    (["evaluate", "--gpus", "9223372036854775808"], "got 9223372036854775808"),
    (["sensitivity", "--tp", "18446744073709551616"], "--tp must be an integer"),
    (["simulate", "--replicas", "10", "--weibull-shape", "0.01"],
     "--weibull-shape must be a finite number >= 0.2 and <= 20, got 0.01"),
    (["plan", *TINY, "--tokens", "inf"], "--tokens must be a finite number"),
    (["plan", *TINY, "--tokens", "1e308"], "<= 1e+18, got 1e+308"),
    (["plan", *TINY, "--deadline-days", "nan"], "--deadline-days must be a finite number > 0"),
    (["plan", *TINY, "--budget-usd", "inf", "--max-power-mw", "-0"], "--budget-usd"),
    (["plan", *TINY, "--max-power-mw", "-0"], "--max-power-mw must be a finite number > 0"),
    (["plan", "-m", "gpt3-175b", "-H", "h100-sxm", "--max-gpus", "64", "--global-batch",
      "18446744073709551616"], "--global-batch must be an integer >= 1 and <= 2**30"),
    (["plan", *TINY, "--max-gpus", "9223372036854775808"], "--max-gpus"),
    (["checkpoint", "--gpu-mtbf-hours", "1e400"], "--gpu-mtbf-hours must be a finite number"),
    (["checkpoint", "--gpus", "9223372036854775808"], "--gpus takes whole GPU counts"),
    (["checkpoint", "--storage-write-gbps", "Infinity"], "--storage-write-gbps"),
    (["checkpoint", "--restart-minutes", "1e300"], "--restart-minutes must be"),
    (["checkpoint", "--tokens", "1e308"], "--tokens must be"),
    (["checkpoint", "--host-copy-gbps", "1e308"], "--host-copy-gbps must be"),
    (["checkpoint", "--gpu-mtbf-hours", "1e-6", "-n", "16384"],
     "never finishes in expectation"),
    (["checkpoint", "--gpus", "0"], "--gpus takes whole GPU counts"),
    (["checkpoint", "--gpus", "16384..128"], "--gpus takes whole GPU counts"),
    (["checkpoint", "--schemes", "gocpt"], "did you mean: gockpt"),
    (["checkpoint", "--gockpt-steps", "0"], "--gockpt-steps must be"),
    (["evaluate", "--draws", "0", "--uncertainty"], "--draws"),
])
def test_bad_values_are_one_line_usage_errors(capsys, args, needle):
    code, out, err = run(capsys, args)
    assert_usage_error(code, err, needle)
    assert out == ""


def test_deadline_nan_is_a_usage_error_not_an_infeasible_plan(capsys):
    code, _, err = run(capsys, ["plan", *TINY, "--deadline-days", "nan"])
    assert code == USAGE != INFEASIBLE, err


def test_multi_line_value_gives_a_one_line_error(capsys):
    code, _, err = run(capsys, ["evaluate", "--hardware", "a\nb"])
    assert_usage_error(code, err, r"a\nb")


def test_unexpected_exception_is_an_internal_error_with_its_own_exit_code(capsys, monkeypatch):
    from planner.engine.layouts import evaluator
    def broken(*_, **__):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(evaluator, "evaluate_run", broken)  # what `capplan evaluate` calls
    code, _, err = run(capsys, ["evaluate"])
    assert code == INTERNAL == 3
    assert err == ("capplan: internal error: RuntimeError: boom\\nsecond line "
                   "(rerun with --debug and report it)\n")
    with pytest.raises(RuntimeError):
        main(["evaluate", "--debug"])


def test_os_errors_are_usage_errors(capsys, monkeypatch):
    def denied(*_, **__):
        raise PermissionError(13, "Permission denied", "/read-only/out.csv")

    monkeypatch.setattr("planner.report.output.write", denied)
    code, _, err = run(capsys, ["evaluate", *TINY, "--gpus", "8", "--tp", "1", "--pp", "1",
                                "-o", "x.csv"])
    assert_usage_error(code, err, "'/read-only/out.csv': Permission denied")


def test_one_line_escapes_control_characters():
    assert one_line("a\nb\tc\x1b") == r"a\nb\tc\x1b"
    assert one_line("plain") == "plain"


# ------------------------------------------------------------ evaluate chooses a layout

def test_evaluate_8_gpus_picks_a_layout_that_fits_and_says_so(capsys):
    code, out, err = run(capsys, ["evaluate", "--model", "llama3-8b", "--gpus", "8", "-f", "json"])
    assert code == 0, err
    e = json.loads(out)["inputs"]
    assert e["tp"] * e["pp"] * e["cp"] * e["dp"] == 8
    assert "layout: " in err and "the fastest for 8 GPUs that fits" in err  # a notice
    assert "searched: --tp, --pp, --cp, --ep, --vp, --micro-batch choose another" in err
    assert f"TP{e['tp']} x PP{e['pp']} x CP{e['cp']}" in err


def test_typed_sizes_are_kept_when_choosing(capsys):
    code, out, err = run(capsys, ["evaluate", "--model", "llama3-8b", "--gpus", "16", "--tp",
                                  "2", "-f", "json"])
    assert code == 0, err
    e = json.loads(out)["inputs"]
    assert e["tp"] == 2 and e["tp"] * e["pp"] * e["cp"] * e["dp"] == 16


def test_impossible_explicit_layout_names_the_rule(capsys):
    code, _, err = run(capsys, ["evaluate", "--model", "llama3-8b", "--gpus", "8", "--tp", "8",
                                "--pp", "2"])
    assert_usage_error(code, err, "TP*PP*CP = 8*2*1 = 16 does not divide --gpus 8",
                       "--tp 8, --pp 2")


def test_the_default_layout_is_the_fastest_that_fits(capsys):
    # no size given: the search's layout is at least as fast as Llama 3 70B's published
    # TP8 x PP4 (the fixed default before) and fits
    code, out, err = run(capsys, ["evaluate", "-f", "json"])
    assert code == 0 and "does not fit" not in err
    chosen = json.loads(out)
    code, out, _ = run(capsys, ["evaluate", "--tp", "8", "--pp", "4", "--cp", "1", "--ep", "1",
                                "--vp", "1", "--micro-batch", "1", "-f", "json"])
    fixed = json.loads(out)
    assert chosen["fits"] and chosen["inputs"]["gpus"] == 1024
    assert chosen["step_time_s"] <= fixed["step_time_s"]


def test_check_layout_checks_divisibility_before_dividing(catalog):
    from planner.engine.layouts.layout_check import check_layout
    from planner.engine.run.run_inputs import RunChoices, base_inputs

    x = base_inputs(catalog, RunChoices(model="llama3-8b", hardware="h100-sxm"))
    with pytest.raises(CapplanError, match="does not divide --gpus 8"):
        check_layout(x, gpus=8, tp=8, pp=4, cp=1, ep=1, vp=1, micro_batch=1)
    with pytest.raises(CapplanError, match="--gpus must be"):
        check_layout(x, gpus=0, tp=1, pp=1, cp=1, ep=1, vp=1, micro_batch=1)


# ------------------------------------------------------------------------- Python API

@pytest.mark.parametrize("kwargs,needle", [
    ({"zero": 7, "gpus": 8.5}, "--gpus must be an integer"),
    ({"zero": 7}, "--zero must be"),
    ({"gpus": 0}, "--gpus"),
    ({"tokens": float("nan")}, "--tokens"),
    ({"tokens": "60"}, "--tokens"),
    ({"micro_batch": 0}, "--micro-batch"),
    ({"gpus": np.array([8, 0])}, "got 0"),
    ({"recompute": "some"}, "--recompute 'some' is not one of"),
    ({"overrides": {"tokns": 1.0}}, "did you mean: tokens"),
    ({"overrides": {"pue": 0.5}}, "run-model input 'pue' must be a finite number >= 1"),
])
def test_api_rejects_bad_values_with_the_cli_message(catalog, kwargs, needle):
    from planner import evaluate

    with pytest.raises(CapplanError, match=None) as info:
        evaluate(catalog=catalog, model="llama3-8b", **kwargs)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


def test_api_and_cli_defaults_agree(capsys, catalog):
    from planner import evaluate

    code, out, err = run(capsys, ["evaluate", "-f", "json"])
    assert code == 0, err
    cli = json.loads(out)
    api = evaluate(catalog=catalog).iloc[0]
    assert api["tokens"] == cli["inputs"]["tokens"] == 15e12
    assert api["wall_days"] == pytest.approx(cli["wall_days"], rel=1e-12)
    assert (int(api["tp"]), int(api["pp"])) == (cli["inputs"]["tp"], cli["inputs"]["pp"])


def _default(parameter):
    """An option's default: typer.Option(default, ...) or a shared Annotated type's ``= default``."""
    return getattr(parameter.default, "default", parameter.default)


def test_scenario_defaults_are_the_cli_defaults():
    import inspect

    from planner.cli._commands_generated import evaluate as evaluate_command
    from planner.cli._commands_generated import plan as plan_command
    from planner.engine.inputs.scenario import DEFAULTS, Scenario

    plan_options = inspect.signature(plan_command).parameters  # search + environment options
    scenario = Scenario()
    for name in ("model", "tokens", "site", "reliability", "precision", "checkpoint",
                 "cost_basis", "min_gpus", "max_gpus", "deadline_days", "objective",
                 "knee_threshold"):
        assert _default(plan_options[name]) == getattr(scenario, name) == DEFAULTS[name]
    run_options = inspect.signature(evaluate_command).parameters  # layout + environment
    for name in ("model", "tokens", "gpus", "site", "reliability",
                 "cost_basis", "pricing"):
        assert _default(run_options[name]) == DEFAULTS[name]
    # left out: selective, or full where selective does not fit; the stack's ZeRO stage
    # (chosen per run)
    for name in ("recompute", "zero"):
        assert _default(run_options[name]) is None and name not in DEFAULTS
    assert scenario.deadline_days == 90.0


def test_api_evaluate_chooses_a_layout_for_8_gpus(catalog):
    from planner import evaluate

    row = evaluate(catalog=catalog, model="llama3-8b", gpus=8).iloc[0]
    assert row["tp"] * row["pp"] * row["cp"] * row["dp"] == 8 and bool(row["fits"])


def test_plan_api_infinite_deadline_means_none(catalog):
    from planner import plan

    result = plan(catalog=catalog, model="tinyllama-1.1b", hardware=["h100-sxm"],
                  max_gpus=16, deadline_days=float("inf"))
    assert result.scenario.deadline_days is None and result.best["cost"] is not None


def test_formulas_reject_numeric_strings_and_keep_numbers():
    from formulas.compute import training_flops_per_token

    with pytest.raises(TypeError, match="must be a real number"):
        training_flops_per_token("60")
    with pytest.raises(TypeError):
        training_flops_per_token(None)
    assert training_flops_per_token(60) == 180.0
    assert training_flops_per_token(np.array([1, 2])).tolist() == [3.0, 6.0]
    series = training_flops_per_token(pd.Series([1.0, 2.0]))
    assert isinstance(series, pd.Series) and series.tolist() == [3.0, 6.0]


# ------------------------------------------------------------------------ domain table

def test_every_kernel_input_has_a_domain():
    from planner.engine.inputs.domains import INPUT_DOMAINS
    from planner.engine.run.model import INPUTS

    assert set(INPUTS) <= set(INPUT_DOMAINS)


def test_catalog_defaults_are_inside_their_domains(catalog):
    from planner.engine.run.run_inputs import RunChoices, base_inputs

    for hw in catalog.accelerators:
        # the default bf16, or fp16 on a part whose matrix units take no BF16 (V100)
        precision = "bf16" if "bf16" in catalog.accelerator(hw).float16_formats else "fp16"
        try:
            base_inputs(catalog, RunChoices(model="llama3-70b", hardware=hw,
                                            precision=precision))
        except CapplanError as exc:  # only "no fp8/tf32 peak" may stop a 16-bit run: none here
            pytest.fail(f"{hw}: {exc}")


anything = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-2**80, max_value=2**80),
    st.text(max_size=5), st.none(), st.booleans(),
    st.lists(st.floats(allow_nan=True), min_size=1, max_size=4).map(np.array))


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(__import__("planner.engine.inputs.domains",
                                              fromlist=["DOMAINS"]).DOMAINS)),
       value=anything)
def test_domain_check_only_ever_raises_capplan_errors(name, value):
    from planner.engine.inputs.domains import DOMAINS, check_value

    try:
        check_value(name, value)
    except CapplanError as exc:
        assert str(exc).startswith(f"--{name.replace('_', '-')} ") or "run-model input" in str(exc)
        assert "\n" not in str(exc)
        return
    array = np.asarray(value, dtype=float)  # accepted: finite and inside the domain
    assert np.all(np.isfinite(array)) and np.all(DOMAINS[name].ok(array))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=1, max_value=10**6))
def test_divisors_are_exactly_the_divisors(n):
    from planner.engine.layouts.space import divisors

    got = divisors(n)
    assert got == sorted(got) and all(n % d == 0 for d in got)
    assert got[0] == 1 and got[-1] == n
    if n <= 5000:
        assert got == [d for d in range(1, n + 1) if n % d == 0]


def test_divisors_of_the_largest_batch_are_fast_to_enumerate():
    from planner.engine.inputs.domains import MAX_GLOBAL_BATCH
    from planner.engine.layouts.space import divisors

    assert divisors(MAX_GLOBAL_BATCH) == [2**i for i in range(31)]


# -------------------------------------------------------------- non-finite rows, knees

def test_knee_and_explanation_survive_non_finite_totals():
    from planner.engine.inputs.scenario import Scenario
    from planner.engine.search.optimize import explain_infeasible, knee_row

    frame = pd.DataFrame({"hardware": ["h"] * 2, "gpus": [8, 16], "fits": [True, True],
                          "wall_time_s": [math.inf] * 2, "wall_days": [math.nan] * 2,
                          "cost_usd": [math.nan] * 2, "peak_power_mw": [1.0, 2.0]})
    assert knee_row(frame, 0.8) is None
    text = explain_infeasible(Scenario(budget_usd=1.0), frame, (1e9, "h", 8e10))
    assert "memory" in text or "No plan" in text


def test_run_with_overflowing_totals_is_refused():
    from planner.analysis.one_run import check_finite

    row = {"step_time_s": 1.0, "memory_per_gpu_bytes": 1.0, "wall_time_s": math.inf,
           "gpu_hours": 1.0, "energy_facility_j": 1.0, "cost_usd": 1.0, "co2e_kg": 1.0,
           "system_mtbf_s": 1e-3}
    with pytest.raises(CapplanError, match="no finite wall_time_s"):
        check_finite(row)


# -------------------------------------------------------------------- simulate bounds

def test_simulation_work_is_bounded_and_says_what_is_allowed():
    from planner.analysis.simulate import RunSpec
    from planner.report.simulate_report import MAX_FAILURE_EVENTS, check_work

    # ~1,000 failures per run: system MTBF 10 s over a 10,000 s run
    spec = RunSpec(steps=10_000, step_time_s=1.0, components=10, component_mtbf_s=100.0,
                   checkpoint_interval_s=5.0, checkpoint_cost_s=0.1, restart_cost_s=0.1)
    check_work(spec, replicas=32, seed=0)  # the pilot itself: always allowed
    check_work(spec, replicas=MAX_FAILURE_EVENTS // 4000, seed=0)
    with pytest.raises(CapplanError, match=r"--replicas 10000 would simulate about .* use "
                                           r"--replicas \d+ or fewer"):
        check_work(spec, replicas=10_000, seed=0)


# ---------------------------------------------------------------------- output files

def test_output_target_errors(capsys, tmp_path):
    base = ["checkpoint", "-n", "1024", "-f", "csv"]
    code, _, err = run(capsys, [*base, "-o", ""])
    assert_usage_error(code, err, "--output needs a file name")
    code, _, err = run(capsys, [*base, "-o", str(tmp_path / "no" / "such" / "out.csv")])
    assert_usage_error(code, err, "does not exist")
    code, _, err = run(capsys, [*base, "-o", str(tmp_path)])
    assert_usage_error(code, err, "is a directory")
    target = tmp_path / "out.csv"
    assert run(capsys, [*base, "-o", str(target)])[0] == 0
    first = target.read_text()
    code, _, err = run(capsys, [*base, "--schemes", "sync", "-o", str(target)])
    assert_usage_error(code, err, "exists; pass --force")
    assert target.read_text() == first
    assert run(capsys, [*base, "--schemes", "sync", "-o", str(target), "--force"])[0] == 0
    assert target.read_text() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no temporary left


def test_a_failing_write_leaves_no_file(tmp_path):
    from planner.report.output import atomic_target

    target = tmp_path / "half.json"
    with pytest.raises(RuntimeError), atomic_target(str(target)) as tmp:
        tmp.write_text('{"half": ')
        raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_infeasible_plan_writes_no_output_file(capsys, tmp_path):
    target = tmp_path / "plan.json"
    code, _, err = run(capsys, ["plan", *TINY, "--max-gpus", "16", "--deadline-days", "0.001",
                                "-o", str(target)])
    assert code == INFEASIBLE, err
    assert "No plan meets the constraints" in err
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_plan_refuses_a_bad_output_before_searching(capsys, tmp_path, monkeypatch):
    import planner.engine.search.optimize as optimize

    monkeypatch.setattr(optimize, "plan", lambda *a, **k: pytest.fail("searched"))
    code, _, err = run(capsys, ["plan", *TINY, "-o", str(tmp_path / "missing" / "p.json")])
    assert_usage_error(code, err, "does not exist")


def test_write_docs_refuses_outside_a_source_checkout(capsys, monkeypatch, tmp_path):
    import planner.report.validation as validation

    monkeypatch.setattr(validation, "DOCS", Path(tmp_path) / "site-packages" / "docs")
    code, _, err = run(capsys, ["validate", "--write-docs"])
    assert_usage_error(code, err, "source checkout")


sizes = st.one_of(st.integers(min_value=-2, max_value=70), st.sampled_from([2**24, 2**64]),
                  st.floats(allow_nan=True, allow_infinity=True), st.none())


@settings(max_examples=60, deadline=None)
@given(gpus=sizes, tp=sizes, pp=sizes, micro_batch=sizes, tokens=sizes,
       zero=st.integers(min_value=-1, max_value=4))
def test_api_evaluate_answers_or_raises_capplan_error(catalog, gpus, tp, pp, micro_batch,
                                                      tokens, zero):
    """No ZeroDivisionError, IndexError or OverflowError reaches a notebook."""
    from planner import evaluate

    kwargs = {k: v for k, v in dict(gpus=gpus, tp=tp, pp=pp, micro_batch=micro_batch,
                                    tokens=tokens).items() if v is not None}
    try:
        row = evaluate(catalog=catalog, model="tinyllama-1.1b", zero=zero, **kwargs).iloc[0]
    except CapplanError as exc:
        assert "\n" not in str(exc)
        return
    assert row["gpus"] == row["tp"] * row["pp"] * row["cp"] * row["dp"] >= 1
    for column in ("step_time_s", "wall_days", "cost_usd", "energy_kwh"):
        assert math.isfinite(row[column]) and row[column] > 0, column


def test_plan_api_takes_a_comma_separated_hardware_string(catalog):
    from planner import plan

    result = plan(catalog=catalog, model="tinyllama-1.1b", hardware="h100-sxm", max_gpus=16)
    assert result.scenario.hardware == ("h100-sxm",)


def test_a_user_model_file_value_outside_its_domain_names_the_entry(capsys, tmp_path):
    shipped = Path(__file__).parents[1] / "hardware_catalog" / "data" / "models" / "llama3-8b.toml"
    text = shipped.read_text().replace('id = "llama3-8b"', 'id = "my-8b"')
    user = tmp_path / "my.toml"
    user.write_text(text.replace("seq_len = 8192", "seq_len = 8192000000000"))
    code, _, err = run(capsys, ["evaluate", "-m", str(user), "--gpus", "8", "--tp", "1",
                                "--pp", "1"])
    assert_usage_error(code, err, "model 'my-8b': seq_len must be an integer >= 1")


@pytest.mark.parametrize("options,needle", [
    ({"tp": (0,)}, "--tp must be an integer >= 1"),
    ({"micro_batch": ()}, "non-empty tuple"),
    ({"zero": (4,)}, "--zero must be"),
    ({"recompute": ("some",)}, "SpaceOptions.recompute"),
])
def test_plan_api_checks_space_options(catalog, options, needle):
    from planner import plan
    from planner.engine.layouts.space import SpaceOptions

    with pytest.raises(CapplanError, match=None) as info:
        plan(catalog=catalog, model="tinyllama-1.1b", hardware=["h100-sxm"], max_gpus=16,
             options=SpaceOptions(**options))
    assert needle in str(info.value)


def test_init_example_shows_the_default_scenario():
    import tomllib

    from planner.cli.scenario_file import example as example_text
    from planner.engine.inputs.scenario import DEFAULTS

    example = tomllib.loads(example_text("run.toml"))
    for key, value in example.items():
        assert value == DEFAULTS[key], key
    assert example["deadline_days"] == DEFAULTS["deadline_days"] == 90


def test_simulating_a_run_with_millions_of_failures_is_refused_at_once(capsys):
    code, _, err = run(capsys, ["simulate", "--replicas", "1", "-m", "tinyllama-1.1b",
                                "--tokens", "1e18"])
    # far more failures than a run can simulate (1.7e5 with the default profile's domains
    # at the searched layout; the count follows the step time): refused before any is drawn
    assert_usage_error(code, err, "failures (at most 50,000 can be simulated per run)",
                       "lower --tokens or --gpus")
    assert re.search(r"one run would see about \d\.\de\+0[5-9] failures", err), err


def test_export_checks_the_workbook_name_before_choosing_a_layout(capsys):
    """Fuzz reproducer: a bad -o after a layout notice gave two stderr lines."""
    from planner.cli.main import main

    code = main(["export", "xlsx", "--output", "-", "--cp", "2", "--gpus", "8"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines() == [
        "capplan: error: the workbook must end in .xlsx, got '-'"]


@pytest.mark.parametrize("command", [["sweep", "--max-gpus", "256"], ["sensitivity"]])
def test_a_bad_plot_target_fails_before_any_file_is_written(tmp_path, capsys, command):
    """Fuzz reproducer (sweep -o out.csv --plot no/such/dir/fig.png): -o was written,
    then --plot failed; now both targets are checked before the work."""
    from planner.cli.main import main

    out = tmp_path / "out.csv"
    code = main([*command, "-o", str(out), "--plot", str(tmp_path / "no" / "fig.png")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "does not exist" in err
    assert not out.exists()


def test_a_directory_that_takes_no_new_files_is_one_line_naming_the_output(
        capsys, tmp_path, monkeypatch):
    # /proc passes the mode-bit checks but refuses new files; the message named capplan's
    # own temporary file ('/proc/.x.json.1_rl0pk_.tmp.json') until 2026-11-27
    import tempfile

    def refuse(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "x.json"
    code, out, err = run(capsys, ["evaluate", "--model", "llama3-8b", "--gpus", "8", "-f",
                                  "json", "-o", str(target)])
    assert code == USAGE
    assert len(err.strip().splitlines()) == 1
    assert f"--output '{target}': cannot create a file in '{tmp_path}'" in err
    assert ".tmp" not in err and not target.exists()
