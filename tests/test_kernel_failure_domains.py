"""Failure domains and hot spares in the kernel's reliability stage.

The kernel's system MTBF and effective restart cost come from the profile's failure
domains (GPU, node, network, rack, software) and the spare pool
(:func:`formulas.reliability.pool_swap_probability`); ``--spares auto`` picks each
candidate's optimal count (:mod:`planner.engine.run.spares`).  Checked here: the Monte
Carlo of :func:`planner.analysis.simulate.simulate_domains` reproduces the kernel's wall
time (fixed seed, 1 % + 4 standard errors; 0.02-0.43 % measured), the automatic count
equals :func:`planner.analysis.simulate.optimal_spares`' search, spares are billed, and
profiles without domain data give what they gave (also at 1e-12 over 288 layouts in
tests/test_kernel_reference.py).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.checkpoint import daly_wall_time_committed
from formulas.reliability import effective_restart_cost
from planner.analysis.simulate import (
    FailureDomain,
    failure_domains,
    optimal_spares,
    simulate_domains,
)
from planner.engine.layouts.evaluator import evaluate
from planner.engine.run.spares import optimal_spare_nodes

JOB = dict(model="llama3.1-405b", tokens=15.6e12)


#: The run overheads (evaluations, loss-spike rollbacks, maintenance) set to zero: these
#: tests compare the failure model alone with its Monte Carlo and Daly's closed form.
NO_OVERHEADS = {"eval_fraction": 0.0, "loss_spike_probability": 0.0, "maintenance_fraction": 0.0}


def _run(hardware, profile, gpus=16384, **overrides):
    frame, x = evaluate(hardware=hardware, gpus=gpus, reliability=profile,
                        overrides={**NO_OVERHEADS, **overrides}, return_inputs=True, **JOB)
    return frame.loc[0], x


def _read_s(row, x):
    """The kernel's checkpoint read: its restart minus the failure's (automatic swap or
    re-queue, or a manual restart)."""
    from formulas.reliability import manual_restart_cost

    automatic = effective_restart_cost(row.system_mtbf_s, x["failure_detection_s"],
                                       x["restart_overhead_s"], x["requeue_restart_s"],
                                       row.swap_fraction)
    return row.restart_s - manual_restart_cost(
        row.system_mtbf_s, automatic, x["failure_detection_s"] + x["manual_restart_s"],
        x["manual_restart_fraction"])


def _domains_as_kernel(catalog, row, x, profile, rack_mtbf_s=None):
    """The profile's domains with the kernel's checkpoint read added to every restart."""
    read_s = _read_s(row, x)
    gpn = int(x["gpus_per_node"])
    out = []
    for d in failure_domains(catalog.reliability_profile(profile), gpus=int(row.gpus),
                             gpus_per_node=gpn, rack_gpus=int(x["rack_nodes"]) * gpn):
        mtbf = rack_mtbf_s if d.name == "rack" and rack_mtbf_s else d.unit_mtbf_s
        out.append(FailureDomain(d.name, d.units, mtbf, d.nodes_lost, d.detection_s,
                                 d.swap_restart_s + read_s, d.requeue_restart_s + read_s))
    return out


CASES = {  # hardware, profile, spares (-1: auto), rack MTBF override [s]
    "h100-8-spares": ("h100-sxm", "llama3-405b", 8.0, None),
    "h100-auto": ("h100-sxm", "llama3-405b", -1.0, None),
    # NVL72 racks failing every 1e7 s (about 2 a day over 228 racks): 18 nodes out at once
    "nvl72-36-spares": ("gb200", "rack-domains", 36.0, 1e7),
    "nvl72-auto": ("gb200", "rack-domains", -1.0, 1e7),
}


@pytest.mark.parametrize("name", list(CASES))
def test_monte_carlo_reproduces_the_kernel_with_spares(catalog, name):
    """405B on 16,384 GPUs, 1-day repairs, 2-h re-queues: simulate_domains (1,000
    replicas, seed 7) within 1 % + 4 standard errors of the kernel's Daly wall time."""
    hardware, profile, spares, rack_mtbf = CASES[name]
    over = {"spare_nodes": spares, **({"rack_mtbf_s": rack_mtbf} if rack_mtbf else {})}
    row, x = _run(hardware, profile, **over)
    tau, stall = row.checkpoint_interval_s, row.checkpoint_stall_s
    solve = round(row.solve_time_s / tau) * tau  # whole intervals, as the simulation needs
    # the kernel's closed form: Daly's with the async write's commit latency (a few seconds
    # against hours of MTBF, which the domain simulation leaves out)
    kernel = daly_wall_time_committed(solve, tau, stall, row.restart_s, row.system_mtbf_s,
                                      row.commit_latency_s)
    mc = simulate_domains(_domains_as_kernel(catalog, row, x, profile, rack_mtbf),
                          spares=int(row.spare_nodes), repair_time_s=x["node_repair_s"],
                          solve_time_s=solve, interval_s=tau, checkpoint_cost_s=stall,
                          replicas=1000, seed=7,
                          manual_fraction=float(x["manual_restart_fraction"]),
                          manual_restart_s=float(x["manual_restart_s"]) + _read_s(row, x)
                          ).summary()
    assert abs(mc["wall_time_s"] - kernel) <= 0.01 * kernel + 4 * mc["wall_time_stderr_s"]
    assert mc["swap_fraction"] == pytest.approx(row.swap_fraction, abs=0.02)
    assert row.wall_time_s == pytest.approx(daly_wall_time_committed(
        row.solve_time_s, tau, stall, row.restart_s, row.system_mtbf_s, row.commit_latency_s),
        rel=1e-9)


def test_auto_spares_equal_the_closed_form_search(catalog):
    """Llama 3 405B's domains on 2,048 nodes: 16 spares, as optimal_spares finds
    (docs/model.md), whatever the solve time and checkpoint interval."""
    row, x = _run("h100-sxm", "llama3-405b", spare_nodes=-1.0)
    assert row.spare_nodes == 16
    doms = failure_domains(catalog.reliability_profile("llama3-405b"), gpus=16384,
                           gpus_per_node=8)
    for solve_days, interval_s in ((54, 1800.0), (200, 60.0)):
        best = optimal_spares(doms, job_nodes=2048, gpus_per_node=8, max_spares=64,
                              repair_time_s=86400.0, solve_time_s=solve_days * 86400.0,
                              interval_s=interval_s, checkpoint_cost_s=30.0,
                              manual_fraction=x["manual_restart_fraction"],
                              manual_restart_s=x["manual_restart_s"])
        assert best["best_spares"] == row.spare_nodes


@pytest.mark.parametrize("gpus", [128, 1024, 4096, 16384])
def test_auto_spares_minimise_billed_gpu_hours(gpus):
    """The chosen count is the minimum of the kernel's own GPU-hours over 0..2x it."""
    auto, _ = _run("h100-sxm", "llama3-405b", gpus=gpus, spare_nodes=-1.0)
    hours = [_run("h100-sxm", "llama3-405b", gpus=gpus, spare_nodes=float(s))[0].gpu_hours
             for s in range(int(2 * auto.spare_nodes) + 3)]
    assert int(np.argmin(hours)) == auto.spare_nodes
    assert auto.gpu_hours == pytest.approx(min(hours), rel=1e-12)


def test_spares_are_billed_and_draw_idle_power():
    """BLOOM's profile has no domains, so 16 spares leave the wall time as it is and
    add exactly their bill and their idle power."""
    none, x = _run("h100-sxm", "bloom-176b", spare_nodes=0.0)
    some, _ = _run("h100-sxm", "bloom-176b", spare_nodes=16.0)
    assert some.wall_time_s == pytest.approx(none.wall_time_s, rel=1e-12)
    gpus = 16384 + 16 * 8
    assert some.gpu_hours == pytest.approx(gpus * some.wall_time_s / 3600, rel=1e-12)
    assert some.cost_cloud_usd == pytest.approx(
        some.gpu_hours * x["price_usd_per_gpu_hour"], rel=1e-12)
    spare_w = 16 * (8 * x["idle_power_w"] + x["node_overhead_power_w"]
                    + x["network_power_per_node_w"])
    assert (some.energy_it_kwh - none.energy_it_kwh) * 3.6e6 == pytest.approx(
        spare_w * some.wall_time_s, rel=1e-9)


def test_spares_shorten_a_domain_profile_run():
    """Llama 3's domains on 16,384 GPUs: 16 spares turn re-queues into swaps and cut
    the wall time by more than a third (101.8 -> 63.2 days in docs/model.md's example)."""
    none, _ = _run("h100-sxm", "llama3-405b", spare_nodes=0.0)
    some, _ = _run("h100-sxm", "llama3-405b", spare_nodes=16.0)
    assert some.wall_time_s < 0.65 * none.wall_time_s
    assert some.swap_fraction > 0.99 > 0.2 > none.swap_fraction


@pytest.mark.parametrize("profile", ["benchmark", "bloom-176b", "opt-175b"])
def test_profiles_without_domains_are_unchanged_by_spares(profile):
    """No domain data: MTBF from GPUs and nodes only, restart = the profile's, and
    spares change nothing but their own bill (auto chooses none)."""
    auto, x = _run("h100-sxm", profile, gpus=1024)
    assert auto.spare_nodes == 0
    nodes = 1024 / 8
    assert auto.system_mtbf_s == pytest.approx(
        1 / (1024 / x["gpu_mtbf_s"] + nodes / x["node_mtbf_s"]), rel=1e-9)
    many, _ = _run("h100-sxm", profile, gpus=1024, spare_nodes=40.0)
    for column in ("system_mtbf_s", "restart_s", "wall_time_s"):
        assert many[column] == pytest.approx(auto[column], rel=1e-12), column


@settings(max_examples=40, deadline=None)
@given(gpus=st.integers(8, 100_000), spares=st.integers(0, 200),
       repair_h=st.floats(0.5, 96.0), requeue_h=st.floats(0.2, 12.0))
def test_more_spares_never_hurt_the_restart(gpus, spares, repair_h, requeue_h):
    """Swap probability and restart cost are monotone in the spare count; auto never
    bills more GPU-hours than no spares."""
    x = {"gpus": np.float64(gpus), "gpus_per_node": 8.0, "gpu_mtbf_s": 285228322.0,
         "node_mtbf_s": 180285826.0, "network_mtbf_s": 273004251.0, "rack_mtbf_s": 5.156e9,
         "software_mtbf_s": 5.9733e6, "software_internode_mtbf_s": 7.387e5,
         "software_node_exponent": 0.3, "rack_nodes": 1.0, "restart_overhead_s": 600.0,
         "requeue_restart_s": 600.0 + requeue_h * 3600, "node_repair_s": repair_h * 3600,
         "manual_restart_fraction": 0.0, "manual_restart_s": 0.0}
    from formulas import reliability as rel

    nodes = gpus / 8
    single = gpus / x["gpu_mtbf_s"] + nodes / x["node_mtbf_s"] + nodes / x["network_mtbf_s"]
    mu1 = single * x["node_repair_s"]
    mu_r = nodes / x["rack_mtbf_s"] * x["node_repair_s"]
    p = [float(rel.pool_swap_probability(s, 1, mu1, mu_r, 1.0)) for s in (spares, spares + 1)]
    assert 0 <= p[0] <= p[1] <= 1 + 1e-12  # a sum of probabilities: rounding above 1
    software = 1 / x["software_mtbf_s"] + max(nodes - 1, 0) ** 0.3 / x["software_internode_mtbf_s"]
    mtbf = 1 / (single + nodes / x["rack_mtbf_s"] + software)
    r = [effective_restart_cost(mtbf, 30.0, 600.0, x["requeue_restart_s"], min(q, 1.0))
         for q in p]
    assert r[1] <= r[0] + 1e-9
    best = float(optimal_spare_nodes(**x)[0])
    assert best >= 0 and math.isfinite(best)
