"""Elasticities (central differences of the compiled kernel) are consistent across step
sizes, exact where the model is linear in an input, and finite on every command."""

import json

import numpy as np
import pytest

from planner import evaluate
from planner.analysis.sensitivity import OUTPUTS, TIED, UNCERTAIN_INPUTS, elasticity_table
from planner.engine.run.kernel_run import evaluate_inputs


@pytest.mark.parametrize("layout", [
    dict(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4, checkpoint="sync"),
    dict(model="llama2-7b", hardware="mi300x", gpus=256, tp=1, pp=1, global_batch=1024,
         micro_batch=2, recompute="full", zero=2, cost_basis="tco"),
])
def test_elasticities_match_finite_differences(catalog, layout):
    _, x = evaluate(catalog=catalog, return_inputs=True, **layout)
    table = {r["input"]: r for r in elasticity_table(x)}
    # the table's central differences (h = 1e-4) against ten times the step: both within
    # O(h^2) ~ 1e-6 of the derivative where the model is smooth, so they agree to 1e-3
    h = 1e-3
    for name in UNCERTAIN_INPUTS:
        if float(np.ravel(x[name])[0]) == 0:
            continue  # elasticity of a zero input is 0 by definition
        # with the inputs that move with it (the attention core's peak, where it is the same)
        moved = [name, *(t for t in TIED.get(name, ())
                         if float(np.ravel(x[t])[0]) == float(np.ravel(x[name])[0]))]
        up = evaluate_inputs({**x, **{m: x[m] * (1 + h) for m in moved}})
        down = evaluate_inputs({**x, **{m: x[m] * (1 - h) for m in moved}})
        for output, label in OUTPUTS.items():
            fd = float((np.log(up[output]) - np.log(down[output]))[0]
                       / (np.log1p(h) - np.log1p(-h)))
            assert table[name][label] == pytest.approx(fd, rel=1e-3, abs=1e-6), (name, label)


def test_known_elasticities(catalog):
    _, x = evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8,
                    pp=4, return_inputs=True)
    table = {r["input"]: r for r in elasticity_table(x)}
    assert table["tokens"]["days"] == pytest.approx(1.0)
    assert table["price_usd_per_gpu_hour"]["cost"] == pytest.approx(1.0)
    assert table["pue"]["energy"] == pytest.approx(1.0)
    assert -1 < table["peak_flops_per_s"]["days"] < 0


def test_the_peak_moves_the_attention_core_only_where_it_runs_at_that_peak(catalog):
    # BF16: one peak for the GEMMs and the attention core; FP8: the core keeps the BF16 peak
    run = dict(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4)
    _, bf16 = evaluate(catalog=catalog, return_inputs=True, **run)
    _, fp8 = evaluate(catalog=catalog, return_inputs=True, precision="fp8", **run)
    e_bf16 = {r["input"]: r for r in elasticity_table(bf16)}["peak_flops_per_s"]["days"]
    e_fp8 = {r["input"]: r for r in elasticity_table(fp8)}["peak_flops_per_s"]["days"]
    h = 1e-4
    alone = evaluate_inputs({**bf16, "peak_flops_per_s": bf16["peak_flops_per_s"] * (1 + h)})
    base = evaluate_inputs(bf16)
    e_alone = float(np.log(alone["wall_time_s"] / base["wall_time_s"])[0] / np.log1p(h))
    assert e_bf16 < e_alone < 0  # the GEMMs alone move the run less than the whole peak
    assert e_fp8 < 0


def test_cli_sensitivity_json_and_plot(capsys, tmp_path):
    from planner.cli.main import main

    plot = tmp_path / "tornado.png"
    code = main(["sensitivity", "--top", "5", "--format", "json", "--plot", str(plot)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)["elasticities"]
    # tokens (days, cost), the price (cost) and the PUE (energy) all have elasticity 1, equal
    # to rounding: any of them ranks first
    assert len(rows) == 5 and rows[0]["input"] in ("tokens", "price_usd_per_gpu_hour", "pue")
    assert "tokens" in {r["input"] for r in rows}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sensitivity_with_the_llama3_405b_profile_is_finite_and_signed(capsys):
    """Issue 18 reproducer ``sensitivity --reliability llama3-405b``: the "days" column is
    an elasticity d ln(days)/d ln(input), negative for inputs that shorten the run (peak
    FLOP/s, bandwidths), not a number of days; every value is finite."""
    from planner.cli.main import main

    code = main(["sensitivity", "--reliability", "llama3-405b", "--top", "100", "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = {r["input"]: r for r in json.loads(out)["elasticities"]}
    assert all(np.isfinite(v) for r in rows.values() for k, v in r.items()
               if k in ("days", "cost", "energy", "co2e"))
    assert rows["tokens"]["days"] == pytest.approx(1.0, rel=1e-6)
    assert rows["peak_flops_per_s"]["days"] < 0
    assert rows["gpu_mtbf_s"]["days"] < 0  # rarer failures: a shorter run
