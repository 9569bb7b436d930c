"""A fixed checkpoint interval and the run overheads (evaluations, maintenance, loss-spike
rollbacks): the kernel against the closed forms of formulas.checkpoint and
formulas.overhead, the Daly interval against fixed ones (hypothesis), and the flags and
scenario keys (bad values: one line, exit 2)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.checkpoint import daly_interval, daly_wall_time_committed, drained_checkpoint_interval
from formulas.overhead import evaluation_time, maintenance_time, rollback_cost
from planner.cli.main import main
from planner.engine.inputs.scenario import execution_defaults
from planner.engine.layouts.evaluator import evaluate

NO_OVERHEADS = {"eval_fraction": 0.0, "loss_spike_probability": 0.0,
                "maintenance_fraction": 0.0}


def _row(**overrides):
    frame = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024, tokens=15e12,
                     overrides=overrides)
    return frame.iloc[0]


def test_fixed_interval_gives_the_closed_form_wall_time():
    """--checkpoint-interval: Daly's committed wall time at that interval, not the optimum."""
    free = _row(**NO_OVERHEADS)
    for fixed_s in (600.0, 3600.0, 4 * 3600.0):
        row = _row(**NO_OVERHEADS, checkpoint_interval_fixed_s=fixed_s)
        assert row["checkpoint_interval_s"] == fixed_s
        expected = daly_wall_time_committed(
            row["solve_time_s"], fixed_s, row["checkpoint_stall_s"], row["restart_s"],
            row["system_mtbf_s"], row["commit_latency_s"])
        assert row["wall_time_s"] == pytest.approx(float(expected), rel=1e-9)
        assert row["wall_time_s"] > free["wall_time_s"]  # the optimum wastes less


def test_fixed_interval_never_shorter_than_a_step():
    row = _row(**NO_OVERHEADS, checkpoint_interval_fixed_s=1.0)
    assert row["checkpoint_interval_s"] == pytest.approx(row["step_time_s"], rel=1e-12)


def test_default_is_the_daly_optimum():
    assert execution_defaults()["checkpoint_interval_fixed_s"] == 0.0
    row = _row()
    optimum = drained_checkpoint_interval(
        daly_interval(row["checkpoint_stall_s"], row["system_mtbf_s"]), 0.0, 0.0,
        row["step_time_s"])
    assert row["checkpoint_interval_s"] >= float(optimum) - 1e-9


@settings(max_examples=80, deadline=None)
@given(st.floats(1.0, 600.0), st.floats(3600.0, 1e7), st.floats(0.0, 3600.0),
       st.floats(0.0, 60.0), st.floats(0.05, 20.0))
def test_daly_interval_wastes_no_more_than_a_fixed_one(delta, mtbf, restart, commit, factor):
    """Waste at Daly's interval <= waste at any fixed interval (Daly's higher-order
    estimate is within 0.1 % of the exact optimum's waste; arXiv-free: Daly 2006 s4)."""
    solve = 1e7
    tau = float(daly_interval(delta, mtbf))
    best = float(daly_wall_time_committed(solve, tau, delta, restart, mtbf, commit))
    other = float(daly_wall_time_committed(solve, tau * factor, delta, restart, mtbf, commit))
    assert (best - solve) <= (other - solve) * (1 + 1e-3) + 1e-9


def test_overheads_add_to_the_wall_time_as_their_closed_forms():
    base = _row(**NO_OVERHEADS)
    f_e, p_s, n_r, f_m = 0.02, 1e-4, 100.0, 0.05
    row = _row(eval_fraction=f_e, loss_spike_probability=p_s, rollback_steps=n_r,
               maintenance_fraction=f_m)
    eval_s = float(evaluation_time(base["solve_time_s"], f_e))
    rollback_s = base["steps"] * p_s * float(rollback_cost(n_r, base["step_time_s"],
                                                           base["restart_s"]))
    running = base["wall_time_s"] + eval_s + rollback_s
    assert row["eval_time_s"] == pytest.approx(eval_s, rel=1e-9)
    assert row["rollbacks"] == pytest.approx(base["steps"] * p_s, rel=1e-9)
    assert row["rollback_time_s"] == pytest.approx(rollback_s, rel=1e-9)
    assert row["maintenance_time_s"] == pytest.approx(float(maintenance_time(running, f_m)),
                                                      rel=1e-9)
    assert row["wall_time_s"] == pytest.approx(running / (1 - f_m), rel=1e-9)
    # GPU-hours and energy follow the wall time; the GPUs draw power while evaluating
    assert row["gpu_hours"] / base["gpu_hours"] == pytest.approx(
        row["wall_time_s"] / base["wall_time_s"], rel=1e-9)
    assert row["energy_gpu_kwh"] > base["energy_gpu_kwh"]


def test_published_defaults():
    d = execution_defaults()
    assert d["loss_spike_probability"] == pytest.approx(20 / 255_000, rel=0.01)  # PaLM s5.1
    assert d["rollback_steps"] == 100.0
    assert 0 < d["eval_fraction"] < 0.033 and d["maintenance_fraction"] == 0.0


def _json(capsys, args):
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_flags_on_evaluate(capsys):
    base = _json(capsys, ["evaluate", "-f", "json"])
    fixed = _json(capsys, ["evaluate", "-f", "json", "--checkpoint-interval", "3.6k",
                           "--loss-spikes", "0", "--eval-overhead", "0"])
    assert fixed["checkpoint_interval_s"] == 3600.0
    assert fixed["eval_time_s"] == 0.0 and fixed["rollback_time_s"] == 0.0
    assert base["eval_time_s"] > 0 and base["rollbacks"] > 0
    maint = _json(capsys, ["evaluate", "-f", "json", "--maintenance", "0.1"])
    assert maint["wall_time_s"] == pytest.approx(base["wall_time_s"] / 0.9, rel=1e-9)


def test_scenario_faults_keys(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[faults]\ncheckpoint_interval = 7200\nloss_spikes = 0\n")
    plan = ["plan", "-H", "h100-sxm", "--min-gpus", "1024", "--max-gpus", "1024",
            "--deadline-days", "inf", "-f", "json"]

    def days(out):
        return [w["wall_days"] for w in _dicts(out) if "wall_days" in w]

    from_file = days(_json(capsys, [*plan, "--scenario", str(path)]))
    from_flags = days(_json(capsys, [*plan, "--checkpoint-interval", "7200",
                                     "--loss-spikes", "0"]))
    default = days(_json(capsys, plan))
    assert from_file and from_file == from_flags and from_file != default


def _dicts(node):
    """Every dict inside a JSON document."""
    if isinstance(node, dict):
        yield node
        node = list(node.values())
    if isinstance(node, list):
        for item in node:
            yield from _dicts(item)


@pytest.mark.parametrize("args,needle", [
    (["--checkpoint-interval", "-5"], "--checkpoint-interval must be"),
    (["--maintenance", "1"], "--maintenance must be"),
    (["--eval-overhead", "nan"], "--eval-overhead must be"),
    (["--loss-spikes", "-1"], "--loss-spikes must be"),
])
def test_bad_values_one_line(capsys, args, needle):
    assert main(["evaluate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_bad_scenario_key_did_you_mean(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[faults]\ncheckpoint_intervl = 7200\n")
    assert main(["plan", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "checkpoint_interval" in err and len(err.splitlines()) == 1


def test_overheads_are_not_fault_tolerance_energy():
    """Without hot spares the overheads' energy is all outside energy_fault_tolerance_j."""
    base = _row(**NO_OVERHEADS, spare_nodes=0.0)
    row = _row(eval_fraction=0.02, loss_spike_probability=1e-4, maintenance_fraction=0.05,
               spare_nodes=0.0)
    assert row["energy_kwh"] > base["energy_kwh"] * 1.02
    assert row["energy_fault_tolerance_j"] == pytest.approx(base["energy_fault_tolerance_j"],
                                                            rel=1e-9)
