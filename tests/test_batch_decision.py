"""The global batch as a decision (issue 41 item 3): ``plan --global-batch LO..HI`` chooses
the batch per layout, and the tokens the run needs grow with the batch beyond the critical
batch (McCandlish et al. 2018, arXiv:1812.06162: E = E_min (1 + B / B_noise); Kaplan et
al. 2020, arXiv:2001.08361 eq. 5.3 for B_crit).  docs/model.md, "Batch as a decision".
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from formulas import batch
from planner.engine.inputs.scenario import Scenario
from planner.engine.layouts.evaluator import evaluate
from planner.engine.layouts.space import batch_candidates
from planner.engine.search.optimize import plan
from planner.report.plot import scaling_curves
from tests.test_bad_files_and_values import one_line_usage_error, run_cli

SEQ = 8192  # Llama 3 70B's sequence


def _critical_batch_tokens(r):
    """Kaplan's B_crit of Llama 3 70B on ``r``'s tokens, by hand: its non-embedding
    parameters are those a token uses less the input and output embeddings."""
    non_embedding = r["active_params"] - 2 * 128256 * 8192
    return batch.kaplan_critical_batch_tokens(batch.kaplan_loss(non_embedding, r["tokens"]))


def test_tokens_of_a_batch_above_the_critical_batch():
    """A run planned at 1,024 sequences (8.4 M tokens) and trained at 4,096 (34 M tokens,
    above Llama 3 70B's critical batch of ~15 M tokens): the tokens it needs are
    E_min (1 + B / B_noise), E_min = D / (1 + B_ref / B_noise), within 1e-9."""
    r = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4,
                 micro_batch=1, global_batch=4096, tokens=15e12,
                 overrides={"reference_batch": 1024.0}, as_frame=False)
    noise = _critical_batch_tokens(r)
    assert 14e6 < noise < 16e6  # 14.9 M: Kaplan eq. 5.3 at L(N, D) = 1.73 nat
    b = 4096 * SEQ
    assert b > 2 * noise
    e_min = 15e12 / (1 + 1024 * SEQ / noise)
    needed = r["steps"] * b  # tokens trained
    assert needed / e_min == pytest.approx(1 + b / noise, rel=1e-9)
    assert needed / 15e12 == pytest.approx(2.08, abs=0.01)  # 108 % more tokens than at B_ref


def test_one_batch_needs_exactly_the_tokens_given():
    """With one global batch (the reference) the run needs exactly ``tokens``: steps =
    D / (B s), unchanged by the batch model."""
    r = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4,
                 micro_batch=1, global_batch=2048, tokens=15e12, as_frame=False)
    assert r["steps"] == 15e12 / (2048 * SEQ)


def test_a_larger_critical_batch_lets_the_fastest_plan_take_a_larger_batch():
    """The batch is chosen from the data it costs: at 16,384 H100 the fastest plan under
    Kaplan's 15 M-token critical batch stays at or below 2,048 sequences (16.8 M tokens:
    beyond it every doubling nearly doubles the tokens), and takes a larger one when the
    user says the critical batch is 60 M tokens (--critical-batch 60M)."""
    base = Scenario(hardware=("h100-sxm",), global_batch=1024, global_batch_range=(1024, 8192),
                    min_gpus=16384, max_gpus=16384, deadline_days=None, objective="time")
    kaplan = plan(base).best["time"]
    wider = plan(base.with_(extra={"critical_batch_tokens": 60e6})).best["time"]
    assert int(kaplan["global_batch"]) <= 2048
    assert int(wider["global_batch"]) > int(kaplan["global_batch"])
    assert wider["wall_days"] < kaplan["wall_days"]


def test_a_plan_with_one_batch_keeps_it_and_its_tokens():
    """Default behaviour: a plan given one --global-batch searches that batch alone, and
    every row trains exactly --tokens (steps = D / (B s) to rounding)."""
    s = Scenario(hardware=("h100-sxm",), global_batch=2048, min_gpus=1024, max_gpus=2048,
                 deadline_days=None)
    f = plan(s).frontier
    assert len(f) and (f["global_batch"] == 2048).all()
    np.testing.assert_allclose(f["steps"].to_numpy(float), 15e12 / (2048 * SEQ), rtol=1e-15)


@given(b=st.floats(1e5, 1e9), b2=st.floats(1e5, 1e9), noise=st.floats(1e5, 1e9))
def test_tokens_grow_with_the_batch(b, b2, noise):
    """E(B) is increasing in B, S(B) decreasing, and E S = E_min S_min (1 + B/Bn)(1 + Bn/B)
    >= 4 E_min S_min (McCandlish's hyperbola, minimum at B = B_noise)."""
    lo, hi = min(b, b2), max(b, b2)
    assert batch.tokens_to_target_loss(1.0, lo, noise) <= batch.tokens_to_target_loss(1.0, hi, noise)
    assert batch.steps_to_target_loss(1.0, lo, noise) >= batch.steps_to_target_loss(1.0, hi, noise)
    product = batch.tokens_to_target_loss(1.0, b, noise) * batch.steps_to_target_loss(1.0, b, noise)
    assert product >= 4 * (1 - 1e-12)
    assert batch.tokens_at_batch(7.0, b, b, noise) == 7.0


def test_batch_candidates_give_dp_the_odd_factors():
    got = batch_candidates(1024, 8192)
    assert got[0] == 1024 and got[-1] == 8192 and len(got) == 25
    assert all(b2 / b1 <= 1.125 + 1e-12 for b1, b2 in zip(got, got[1:], strict=False))
    assert {3072, 2560, 3584, 2304} <= set(got)  # DP of 3, 5, 7, 9 x 2^j


@pytest.fixture(scope="module")
def ranged_plan():
    s = Scenario(hardware=("h100-sxm",), global_batch=1024, global_batch_range=(1024, 8192),
                 min_gpus=512, max_gpus=8192, deadline_days=None)
    return plan(s)


def test_range_chooses_the_batch_per_cluster_size(ranged_plan):
    """Non-power-of-two counts get the layouts of their powers of two (PP <= 4 at 3,072
    H100, where a fixed 2,048-sequence batch leaves PP3 CP2), each with its own batch."""
    f = ranged_plan.frontier
    f = f.loc[f["fits"].astype(bool)]
    at = f.loc[f["gpus"] == 3072].sort_values("cost_usd").iloc[0]
    assert int(at["pp"]) <= 4 and int(at["global_batch"]) % int(at["dp"]) == 0
    assert set(f["global_batch"].astype(int)) <= set(batch_candidates(1024, 8192))
    assert f["global_batch"].nunique() > 1


def test_plan_cost_curve_has_no_jumps_physics_does_not_explain(ranged_plan):
    """Between neighbouring sensible GPU counts the cheapest cost changes by less than 1.5x.

    The bound: neighbouring counts of the curve are at most a power of two apart, and at
    their own best layouts their cost differs by the tokens a forced larger batch costs
    (at most 1 + B/B_noise over 1 + B_ref/B_noise for one step of the candidate grid:
    < 1.4 here, B <= 2 B_ref) and by a few % of MFU; the issue's symptom was a 2.5x jump."""
    curve = scaling_curves(ranged_plan.frontier.loc[ranged_plan.frontier["fits"].astype(bool)])
    cost = curve["h100-sxm"]["cost_usd"].to_numpy(float)
    gpus = curve["h100-sxm"].index.to_numpy()
    assert len(gpus) >= 20  # not only powers of two
    ratio = np.maximum(cost[1:] / cost[:-1], cost[:-1] / cost[1:])
    assert ratio.max() < 1.5, (gpus[np.argmax(ratio)], ratio.max())
    assert np.all(gpus[1:] / gpus[:-1] <= 2)


def test_cli_range_and_its_errors(capsys):
    code, out, err = run_cli(capsys, "plan", "-H", "h100-sxm", "--global-batch", "1k..2k",
                             "--min-gpus", "512", "--max-gpus", "1024", "--deadline-days", "inf",
                             "-f", "csv")
    assert code == 0, err
    assert " B1" in out or " B2" in out  # the layout shows its batch
    code, _, err = run_cli(capsys, "plan", "--global-batch", "8192..1024")
    one_line_usage_error(code, err, "8192..1024", "LO <= HI", "1024..8192")
    code, _, err = run_cli(capsys, "plan", "--global-batch", "1024..")
    one_line_usage_error(code, err, "LO..HI")
    code, _, err = run_cli(capsys, "plan", "--global-batch", "1024..2048..4096")
    one_line_usage_error(code, err, "LO..HI")


def _scenario_file(tmp_path, batch: str) -> str:
    path = tmp_path / "ranged.toml"
    path.write_text('model = "llama3-8b"\ntokens = 2e12\nhardware = "h100-sxm"\n'
                    f"min_gpus = 64\nmax_gpus = 256\nglobal_batch = {batch}\n")
    return str(path)


def test_a_scenario_file_takes_a_batch_range_as_the_flag_does(capsys, tmp_path):
    """``global_batch = "1024..8192"`` in a file plans as ``--global-batch 1024..8192``."""
    import json

    flags = ["-m", "llama3-8b", "--tokens", "2e12", "-H", "h100-sxm", "--min-gpus", "64",
             "--max-gpus", "256"]
    code, by_flag, err = run_cli(capsys, "plan", *flags, "--global-batch", "1024..8192",
                                 "-f", "json")
    assert code == 0, err
    code, by_file, err = run_cli(capsys, "plan", "--scenario",
                                 _scenario_file(tmp_path, '"1024..8192"'), "-f", "json")
    assert code == 0, err
    by_flag, by_file = json.loads(by_flag), json.loads(by_file)
    assert by_file["scenario"]["global_batch_range"] == [1024, 8192]
    assert by_file["scenario"]["global_batch"] == 1024
    for objective, row in by_flag["best"].items():
        mine = by_file["best"][objective]
        for key in ("gpus", "tp", "pp", "dp", "global_batch"):
            assert mine[key] == row[key], (objective, key)
        assert by_file["best"][objective]["cost_usd"] == pytest.approx(row["cost_usd"],
                                                                       rel=1e-12)
    # a plain batch as text is one batch; the flag overrides the file's range
    code, out, err = run_cli(capsys, "plan", "--scenario", _scenario_file(tmp_path, '"2k"'),
                             "-f", "json")
    assert code == 0, err
    assert json.loads(out)["scenario"]["global_batch_range"] is None
    assert json.loads(out)["scenario"]["global_batch"] == 2000
    code, out, err = run_cli(capsys, "plan", "--scenario",
                             _scenario_file(tmp_path, '"1024..8192"'), "--global-batch", "2048",
                             "-f", "json")
    assert code == 0, err
    assert json.loads(out)["scenario"]["global_batch_range"] is None


@pytest.mark.parametrize(("batch", "needles"), [
    ('"8192..1024"', ("ranged.toml: global_batch", "LO <= HI", "did you mean 1024..8192")),
    ('"1024.."', ("ranged.toml: global_batch", "LO..HI")),
    ('"1024..2048..4096"', ("ranged.toml: global_batch", "LO..HI")),
    ('"1k..x"', ("ranged.toml: global_batch", "'x' is not a number")),
    ("1.5", ("ranged.toml: global_batch must be a int or a range", "1.5")),
    ("[1024, 8192]", ("ranged.toml: global_batch must be a int or a range \"LO..HI\"",)),
])
def test_a_scenario_files_bad_batch_range_is_one_line(capsys, tmp_path, batch, needles):
    code, _, err = run_cli(capsys, "plan", "--scenario", _scenario_file(tmp_path, batch))
    one_line_usage_error(code, err, *needles)
