"""Failure-domain, spare and software-straggler flags of evaluate, plan and simulate.

The kernel's straggler terms are checked against the Monte Carlo of
:func:`planner.analysis.simulate.simulate_stragglers` (100,000 steps, seed 3, within
0.3 %); ``capplan simulate`` against the closed form with spares and stragglers on
(300 runs, seed 0, within 0.5 %); bad values give one line and exit 2.
"""

import json

import numpy as np
import pytest

from planner.analysis.simulate import StragglerSpec, simulate_stragglers
from planner.cli.main import main
from planner.engine.layouts.evaluator import evaluate
from planner.engine.run.model import run_stages
from planner.engine.run.spares import resolve_spares

USAGE = 2
RUN = ["-m", "llama3.1-405b", "-n", "16384", "--reliability", "llama3-405b",
       "--tokens", "15.6e12"]
#: RUN at a layout that fits (PP16 with full recompute: 22.3 GB of 80 per GPU); evaluate
#: refuses one that does not (the default TP8 PP4 needs 123.9 GB).
FITTING = [*RUN, "--pp", "16", "--recompute", "full"]


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _stages(**overrides):
    """Every stage quantity of one run (cv 0, no pauses: the software terms alone)."""
    _, x = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tokens=15.6e12,
                    reliability="llama3-405b", return_inputs=True,
                    overrides={"step_time_cv": 0.0, "pause_probability": 0.0, **overrides})
    return run_stages({k: float(np.ravel(v)[0]) for k, v in resolve_spares(x).items()})


@pytest.mark.parametrize("name,overrides,spec", [
    ("gc", {"gc_interval_s": 800.0, "gc_duration_s": 1.0, "gc_planned": 0.0},
     dict(ranks=16384, gc_interval_s=800.0, gc_pause_s=1.0)),
    ("slow-nodes", {"slow_node_fraction": 1e-3, "slow_node_slowdown": 1.1},
     dict(ranks=2048, slow_rank_fraction=1e-3, slow_node_slowdown=1.1)),
])
def test_kernel_straggler_terms_match_monte_carlo(name, overrides, spec):
    """GC on any of 16,384 ranks stalls the step; one slow node in 2,048 holds it."""
    base = _stages()["step_time_s"]
    with_cause = _stages(**overrides)["step_time_s"]
    mc = simulate_stragglers(StragglerSpec(step_time_s=base, step_time_cv=0.0, **spec),
                             steps=100_000, seed=3)
    assert with_cause == pytest.approx(mc["step_time_s"], rel=0.003), name
    assert with_cause > base * 1.005  # the cause is not negligible here


def test_planned_gc_costs_its_length_once_per_interval():
    base = _stages()["step_time_s"]
    planned = _stages(gc_planned=1.0, gc_planned_steps=50.0, gc_duration_s=1.0)
    assert planned["step_time_s"] - base == pytest.approx(1.0 / 50, rel=1e-9)


def test_stage_imbalance_is_linear_in_layer_equivalents():
    base, one, two = (_stages(stage_extra_layers=e)["straggler_s"] for e in (0.0, 1.0, 2.0))
    assert two - base == pytest.approx(2 * (one - base), rel=1e-9)
    assert one > base


def test_evaluate_shows_spares_and_stragglers(capsys):
    code, out, _ = run(capsys, ["evaluate", *FITTING, "--spares", "8", "--gc-interval", "800",
                                "-f", "json"])
    assert code == 0
    data = json.loads(out)
    assert data["spare_nodes"] == 8 and 0 < data["swap_fraction"] < 1
    code, out, _ = run(capsys, ["evaluate", *FITTING, "-f", "json"])
    auto = json.loads(out)
    assert auto["spare_nodes"] == 16 and auto["wall_days"] < data["wall_days"]
    assert auto["breakdown"]["straggler_s"] < data["breakdown"]["straggler_s"]


@pytest.mark.parametrize("fmt", ["table", "csv", "markdown"])
def test_evaluate_formats_list_the_spares(capsys, fmt):
    code, out, _ = run(capsys, ["evaluate", *FITTING, "--spares", "4", "-f", fmt])
    assert code == 0 and "spare" in out


def test_simulate_agrees_with_spares_and_stragglers(capsys):
    code, out, _ = run(capsys, ["simulate", *RUN, "--spares", "16", "--gc-interval", "800",
                                "--slow-nodes", "1e-3", "--stage-imbalance", "2",
                                "--replicas", "300", "-f", "json"])
    assert code == 0
    data = json.loads(out)
    for quantity in ("wall_days", "gpu_hours", "energy_kwh", "failures"):
        assert abs(data[quantity]["relative_difference"]) < 0.005, quantity


def test_plan_takes_the_flags_and_a_faults_section(capsys, tmp_path):
    base = ["plan", "-m", "llama2-7b", "--tokens", "2e12", "-H", "h100-sxm",
            "--max-gpus", "256", "-f", "json"]
    code, out, _ = run(capsys, [*base, "--spares", "3"])
    assert code == 0
    assert json.loads(out)["best"]["cost"]["spare_nodes"] == 3
    file = tmp_path / "s.toml"
    file.write_text('[faults]\nspares = 2\nslow_nodes = 0.5\nslow_node_slowdown = 1.2\n')
    code, out, _ = run(capsys, [*base, "--scenario", str(file)])
    from_file = json.loads(out)["best"]["cost"]
    assert code == 0 and from_file["spare_nodes"] == 2
    code, out, _ = run(capsys, [*base, "--scenario", str(file), "--spares", "5"])
    assert json.loads(out)["best"]["cost"]["spare_nodes"] == 5  # the flag wins


@pytest.mark.parametrize("command", ["evaluate", "plan", "simulate"])
@pytest.mark.parametrize("args,needle", [
    (["--spares", "-1"], "--spares must be a whole number of nodes >= 0"),
    (["--spares", "aut"], "did you mean: auto?"),
    (["--spares", "2.5"], "--spares must be a whole number"),
    (["--gc-interval", "0"], "--gc-interval must be a finite number > 0"),
    (["--gc-interval", "-60"], "--gc-interval must be a finite number > 0"),
    (["--gc-pause", "-1"], "--gc-pause must be a finite number >= 0"),
    (["--gc-every-steps", "0"], "--gc-every-steps must be an integer >= 1"),
    (["--stage-imbalance", "-2"], "--stage-imbalance must be a finite number >= 0"),
    (["--slow-nodes", "1.5"], "--slow-nodes must be a finite number in [0, 1], got 1.5"),
    (["--slow-nodes", "-0.1"], "--slow-nodes must be a finite number in [0, 1]"),
    (["--slow-node-slowdown", "0.9"], "--slow-node-slowdown must be a finite number >= 1"),
    (["--gc-interval", "nan"], "got nan"),
])
def test_bad_fault_values_give_one_line(capsys, command, args, needle):
    code, _, err = run(capsys, [command, *args])
    assert code == USAGE, err
    assert err.startswith("capplan: error: ") and err.count("\n") == 1, err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("body,needle", [
    ("[faults]\nspare = 2\n", "did you mean"),
    ("[faults]\nslow_nodes = \"many\"\n", "[faults] slow_nodes must be a float"),
    ("[faults]\nslow_nodes = 2.0\n", "--slow-nodes must be a finite number in [0, 1]"),
    ("[faults]\nspares = -4\n", "--spares must be a whole number"),
    ("[faults]\nnode_mtbf = 0\n", "unknown key 'node_mtbf'; allowed: checkpoint_interval, commitment_reuse, eval_overhead"),
])
def test_bad_faults_section_gives_one_line(capsys, tmp_path, body, needle):
    file = tmp_path / "s.toml"
    file.write_text(body)
    code, _, err = run(capsys, ["plan", "--scenario", str(file)])
    assert code == USAGE, err
    assert err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize("name,value", [("network_mtbf_s", 0), ("rack_mtbf_s", -5),
                                        ("software_mtbf_s", 0), ("node_repair_s", -1),
                                        ("failure_detection_s", -1), ("spare_nodes", -2),
                                        ("slow_node_fraction", 2)])
def test_bad_run_model_overrides_are_refused(name, value):
    from planner.engine.inputs.scenario import check_overrides
    from planner.errors import CapplanError

    with pytest.raises(CapplanError, match=name):
        check_overrides({name: value})


@pytest.mark.parametrize("field,value", [("domain_rack_mtbf_s", -5), ("domain_rack_mtbf_s", 0),
                                         ("domain_software_mtbf_s", 0),
                                         ("node_repair_s", -1), ("requeue_restart_s", -60)])
def test_a_user_profile_with_bad_domain_data_gives_one_line(capsys, tmp_path, field, value):
    from pathlib import Path

    source = Path(__file__).parents[1] / "hardware_catalog" / "data" / "reliability"
    text = (source / "rack-domains.toml").read_text().replace('id = "rack-domains"',
                                                               'id = "mine"')
    lines = [f"{field} = {{ value = {value}" + line[line.index(","):]
             if line.startswith(f"{field} = ") else line for line in text.splitlines()]
    (tmp_path / "reliability").mkdir()
    (tmp_path / "reliability" / "mine.toml").write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, ["evaluate", "--catalog", str(tmp_path), "--reliability",
                                "mine"])
    assert code == USAGE, err
    assert err.count("\n") == 1 and f"{field}.value" in err, err
