"""``capplan evaluate/plan --method grpo``: pools, phase shares, whole-run totals; bad
input one line, exit 2."""

from __future__ import annotations

import json

import pytest
from test_bad_files_and_values import one_line_usage_error, run_cli

from planner.errors import INFEASIBLE

SMALL = ("--model", "llama3-8b", "--hardware", "h100-sxm", "--method", "grpo")


def test_evaluate_grpo_json_has_pools_shares_and_totals(capsys):
    code, out, err = run_cli(capsys, "evaluate", *SMALL, "--gpus", "16", "--rl-mode",
                             "disaggregated", "--off-policy", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["method"] == "grpo" and data["mode"] == "disaggregated"
    assert data["rollout_gpus"] + data["trainer_gpus"] == 16
    shares = sum(data[f"{p}_share"] for p in ("generation", "scoring", "training", "sync"))
    assert shares == pytest.approx(1.0, rel=1e-9)
    assert data["wall_time_s"] >= data["rl_steps"] * data["rl_step_time_s"]
    assert data["cost_usd"] > 0 and data["co2e_kg"] > 0 and data["expected_failures"] > 0


def test_evaluate_grpo_csv_and_table(capsys):
    code, out, err = run_cli(capsys, "evaluate", *SMALL, "--gpus", "8", "--format", "csv")
    assert code == 0, err
    assert out.startswith("quantity,value\n") and "generation_share," in out
    code, out, err = run_cli(capsys, "evaluate", *SMALL, "--gpus", "8")
    assert code == 0 and "generation_share" in out


def test_plan_grpo_sizes_the_pools(capsys):
    code, out, err = run_cli(capsys, "plan", *SMALL[:2], "--method", "grpo", "--hardware",
                             "h100-sxm,b200", "--max-gpus", "64", "--rl-mode",
                             "disaggregated", "--off-policy", "--objective", "time",
                             "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    best = data["best"]["time"]
    assert best["rollout_gpus"] + best["trainer_gpus"] == best["gpus"]
    assert best["rollout_gpus"] % 8 == 0  # whole nodes
    fastest = min(data["candidates"], key=lambda r: r["wall_time_s"])
    assert best["wall_time_s"] == fastest["wall_time_s"]
    assert data["best"]["cost"]["cost_usd"] == min(r["cost_usd"] for r in data["candidates"])


def test_plan_grpo_infeasible_deadline_exits_1(capsys):
    code, out, err = run_cli(capsys, "plan", *SMALL[:2], "--method", "grpo", "--hardware",
                             "h100-sxm", "--max-gpus", "16", "--deadline-days", "0.001")
    assert code == INFEASIBLE and "no grpo run" in err and out == ""


@pytest.mark.parametrize("args,needle", [
    (("evaluate", *SMALL, "--rl-mode", "hybrid"), "--rl-mode 'hybrid'"),
    (("evaluate", *SMALL, "--rollout-group-size", "0"), "--rollout-group-size 0"),
    (("evaluate", *SMALL, "--response-len", "1e12"), "--prompt-len + the longest response"),
    (("evaluate", *SMALL, "--max-response-len", "nan"), "--max-response-len nan"),
    (("evaluate", *SMALL, "--rollout-group-size", "100000000"), "sequences a step; at most"),
    (("evaluate", *SMALL, "--rollout-gpus", "4"), "--rollout-gpus applies to --rl-mode"),
    (("evaluate", *SMALL, "--lora-rank", "8"), "--lora-rank does not apply to --method grpo"),
    (("evaluate", *SMALL, "--seq-len", "2048"), "--seq-len does not apply"),
    (("evaluate", *SMALL, "--rl-mode", "disaggregated", "--rollout-gpus", "16", "--gpus",
      "16"), "no split of 16 GPUs"),
    (("evaluate", "--model", "llama3-8b", "--response-len", "100"),
     "--response-len applies to --method grpo, not pretrain"),
    (("plan", "--model", "llama3-8b", "--prompts", "100"), "--prompts applies to --method grpo"),
    (("plan", *SMALL[:2], "--method", "grpo", "--objective", "tcdp"),
     "--objective 'tcdp' is not one of: time, cost, energy, carbon (a grpo plan's objectives)"),
    (("sweep", "--model", "llama3-8b", "--method", "grpo", "--max-gpus", "64"),
     "--method grpo runs in capplan evaluate and capplan plan"),
    (("simulate", "--model", "llama3-8b", "--gpus", "8", "--method", "grpo"),
     "--method grpo runs in capplan evaluate and capplan plan"),
    (("sensitivity", "--model", "llama3-8b", "--gpus", "8", "--method", "grpo"),
     "--method grpo runs in capplan evaluate and capplan plan"),
    (("export", "xlsx", "--model", "llama3-8b", "--gpus", "8", "--method", "grpo", "-o",
      "unwritten.xlsx"), "--method grpo runs in capplan evaluate and capplan plan"),
    (("plot", "scaling", "--model", "llama3-8b", "--method", "grpo", "-o", "unwritten.png"),
     "--method grpo runs in capplan evaluate and capplan plan"),
])
def test_bad_rl_input_is_one_line_exit_2(capsys, args, needle):
    code, out, err = run_cli(capsys, *args)
    one_line_usage_error(code, err, needle)


def test_plan_grpo_table_is_compact(capsys):
    code, out, err = run_cli(capsys, "plan", *SMALL[:2], "--method", "grpo", "--hardware",
                             "h100-sxm", "--max-gpus", "16", "--rl-mode", "disaggregated")
    assert code == 0, err
    assert "gen/score/train %" in out and "16 (8+8)" in out


def _grpo(capsys, *args):
    code, out, err = run_cli(capsys, "evaluate", *SMALL, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_thinner_network_slows_weight_sync_and_trainer_collectives(capsys):
    """--nic-gbps reaches the RL path: the disaggregated sync crosses the scale-out
    network; a colocated FSDP trainer over 4 nodes all-gathers over it."""
    split = ("--gpus", "16", "--rl-mode", "disaggregated", "--rollout-gpus", "8")
    base, thin = _grpo(capsys, *split), _grpo(capsys, *split, "--nic-gbps", "50")
    assert thin["sync_s"] == pytest.approx(base["sync_s"] * 400 / 50, rel=0.05)
    assert thin["generation_s"] == pytest.approx(base["generation_s"], rel=1e-9)  # one node
    base, thin = _grpo(capsys, "--gpus", "32"), _grpo(capsys, "--gpus", "32", "--nic-gbps", "25")
    assert thin["training_s"] > 1.05 * base["training_s"]
    named = _grpo(capsys, "--gpus", "32", "--network", "dgx-h100", "--nic-gbps", "25")
    assert named["training_s"] == pytest.approx(thin["training_s"], rel=1e-9)


@pytest.mark.parametrize("flag,value", [("--maintenance", "0.1"), ("--slow-nodes", "0.5"),
                                        ("--checkpoint-interval", "60")])
def test_fault_flags_change_the_whole_grpo_run(capsys, flag, value):
    base = _grpo(capsys, "--gpus", "16")
    hit = _grpo(capsys, "--gpus", "16", flag, value)
    assert hit["wall_time_s"] > 1.001 * base["wall_time_s"], flag  # ignored before: equal


def test_plan_grpo_honours_the_network(capsys):
    def best(*extra):
        code, out, err = run_cli(capsys, "plan", *SMALL[:2], "--method", "grpo",
                                 "--hardware", "h100-sxm", "--min-gpus", "16", "--max-gpus",
                                 "16", "--rl-mode", "disaggregated", "--objective", "time",
                                 *extra, "--format", "json")
        assert code == 0, err
        return json.loads(out)["best"]["time"]

    assert best("--nic-gbps", "25")["sync_s"] > 4 * best()["sync_s"]
    assert best("--maintenance", "0.1")["wall_time_s"] > 1.05 * best()["wall_time_s"]


RL_FILE = ('model = "llama3-8b"\nhardware = "h100-sxm"\nmethod = "grpo"\n'
           'rl_mode = "disaggregated"\noff_policy = true\nrollout_group_size = 4\n'
           'response_len = 512\nmax_gpus = 16\nrl_steps = 10\n')


def test_scenario_file_takes_the_rl_keys_under_the_flags(capsys, tmp_path):
    path = tmp_path / "rl.toml"
    path.write_text(RL_FILE, encoding="utf-8")
    code, out, err = run_cli(capsys, "evaluate", "--gpus", "16", "--scenario", str(path),
                             "--response-len", "256", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "disaggregated" and data["rl"]["off_policy"] is True
    assert data["rl"]["group_size"] == 4 and data["rl"]["response_len"] == 256  # flag wins
    assert data["rl_steps"] == 10
    code, out, err = run_cli(capsys, "plan", "--scenario", str(path), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["rl"]["group_size"] == 4 and data["rl"]["response_len"] == 512
    assert data["rl"]["mode"] == "disaggregated" and data["best"]["time"]["gpus"] <= 16


@pytest.mark.parametrize("text,needle", [
    ('method = "grpo"\nrespons_len = 5\n', "unknown key 'respons_len'; did you mean: "
     "response_len"),
    ('method = "grpo"\noff_policy = 1\n', "off_policy must be a bool, got 1"),
    ('method = "grpo"\nprompts = 2.5\n', "prompts must be a int, got 2.5"),
    ('method = "grpo"\nrl_mode = "hybrid"\n', "--rl-mode 'hybrid'"),
    ('response_len = 100\n', "--response-len applies to --method grpo, not pretrain"),
])
def test_bad_rl_scenario_key_is_one_line_exit_2(capsys, tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text('model = "llama3-8b"\n' + text, encoding="utf-8")
    for command in (("evaluate", "--gpus", "8"), ("plan", "--max-gpus", "16")):
        code, out, err = run_cli(capsys, *command, "--scenario", str(path))
        one_line_usage_error(code, err, needle)


PHASED = ('model = "llama3-8b"\nhardware = "h100-sxm"\n'
          '[[phases]]\nname = "sft"\ntokens = 1e9\nmethod = "sft"\n'
          '[[phases]]\nname = "rl"\nmethod = "grpo"\nrl_steps = 50\nresponse_len = 512\n'
          'rl_mode = "disaggregated"\noff_policy = true\n')


def test_grpo_phase_is_the_rl_run_and_adds_to_the_totals(capsys, tmp_path):
    """A method = "grpo" phase is evaluate --method grpo with its keys as flags; the run's
    totals add it to the other phases."""
    path = tmp_path / "phased.toml"
    path.write_text(PHASED, encoding="utf-8")
    code, out, err = run_cli(capsys, "evaluate", "--gpus", "16", "--scenario", str(path),
                             "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    sft, grpo = data["phases"]
    assert grpo["method"] == "grpo" and grpo["inputs"]["method"] == "grpo"
    alone = _grpo(capsys, "--gpus", "16", "--rl-mode", "disaggregated", "--off-policy",
                  "--response-len", "512", "--rl-steps", "50")
    for key in ("wall_time_s", "gpu_hours", "cost_usd", "co2e_kg", "rollout_gpus",
                "rl_step_time_s"):
        assert grpo[key] == pytest.approx(alone[key], rel=1e-9), key
    totals = data["totals"]
    assert totals["wall_time_s"] == pytest.approx(sft["wall_time_s"] + grpo["wall_time_s"],
                                                  rel=1e-9)
    assert totals["cost_usd"] == pytest.approx(sft["cost_usd"] + grpo["cost_usd"], rel=1e-9)
    # 50 steps of 256 prompts x 8 responses of 512 + 512 tokens
    assert grpo["tokens"] == pytest.approx(50 * 2048 * 1024, rel=1e-12)
    code, out, err = run_cli(capsys, "evaluate", "--gpus", "16", "--scenario", str(path),
                             "--format", "csv")
    assert code == 0 and out.splitlines()[2].startswith("rl,16,"), err


@pytest.mark.parametrize("phase,needle", [
    ('method = "grpo"\nrl_steps = 5\ntokens = 1e9\n',
     'tokens does not apply to a method = "grpo" phase'),
    ('method = "grpo"\n', "needs rl_steps"),
    ('method = "grpo"\nrl_steps = 5\nrespone_len = 9\n',
     "unknown key 'respone_len'; did you mean: response_len"),
    ('method = "grpo"\nrl_steps = 5\ncritic = "yes"\n', "critic must be a bool"),
    ('method = "grpo"\nrl_steps = 5\nrl_mode = "hybrid"\n',
     "phase 1 (p): rl_mode 'hybrid' is not one of: colocated, disaggregated"),
    ('method = "grpo"\nrl_steps = 0\n', "phase 1 (p): rl_steps = 0 must be a number in (0, 1e9]"),
    ('method = "sft"\ntokens = 1e9\nresponse_len = 9\n',
     'response_len applies to a method = "grpo" phase'),
])
def test_bad_grpo_phase_is_one_line_exit_2(capsys, tmp_path, phase, needle):
    path = tmp_path / "bad.toml"
    path.write_text('model = "llama3-8b"\n[[phases]]\nname = "p"\n' + phase, encoding="utf-8")
    code, out, err = run_cli(capsys, "evaluate", "--gpus", "16", "--scenario", str(path))
    one_line_usage_error(code, err, needle)


@pytest.mark.parametrize("command", [
    ("simulate", "--gpus", "16", "--replicas", "32"),
    ("export", "xlsx", "--gpus", "16"),
    ("plan", "--max-gpus", "16"),
])
def test_grpo_phases_elsewhere_refused_in_one_line(capsys, tmp_path, command):
    path = tmp_path / "phased.toml"
    path.write_text(PHASED, encoding="utf-8")
    extra = ("-o", str(tmp_path / "w.xlsx")) if command[0] == "export" else ()
    code, out, err = run_cli(capsys, *command, "--scenario", str(path), *extra)
    one_line_usage_error(code, err, 'method = "grpo" phases run in capplan evaluate')


def test_scenario_and_phase_rl_keys_are_the_rl_flags():
    """The RL keys of a scenario file and of a phase are the RL options, same types."""
    from planner.cli import scenario_file
    from planner.cli.rl_options import RL_OPTIONS
    from planner.engine.inputs.phases import RL_KEYS

    assert set(scenario_file.RL_KEYS) == set(RL_KEYS) == set(RL_OPTIONS)
    assert all(RL_KEYS[k][0] is t for k, t in scenario_file.RL_KEYS.items())


def test_bad_rl_mode_is_a_choice_error(capsys):
    """--rl-mode says what every bad choice says (errors.choice_error), not 'unknown ...'."""
    code, _, err = run_cli(capsys, "evaluate", *SMALL, "--gpus", "16", "--rl-mode",
                           "disagregated")
    one_line_usage_error(code, err, "--rl-mode 'disagregated' is not one of: colocated, "
                         "disaggregated; did you mean: disaggregated?")
