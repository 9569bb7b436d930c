"""Study: where Young's checkpoint interval breaks down (writes docs/simulation.md).

Run: python benchmarks/study_young_breakdown.py [--replicas 2000] [--out docs/simulation.md]

For delta/M from 0.001 to 1 and failure models (exponential; Weibull k = 0.7, 0.5
as one renewing system; Weibull on 16,384 components, in service and new), it
compares Young's interval, Daly's interval and the simulated optimum (grid scan
with common random numbers, refined by a quadratic fit of mean wall time in
log tau), and the waste 1 - T_s / E[wall] at each.  Every number in the
document is produced here.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from formulas import checkpoint as ck  # noqa: E402
from planner.analysis.simulate import RunSpec, closed_form, optimal_interval, simulate  # noqa: E402

M = 3600.0                       # system MTBF [s]
STEP = M / 10_000                # step time [s]: intervals resolved to 0.01% of M
SOLVE = 40 * M                   # failure-free compute [s]
RATIOS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
GRID = np.geomspace(0.25, 4.0, 15)
SEED = 0

CASES = [
    # (label, components, shape, age)
    ("exponential (Daly's assumptions)", 1, 1.0, "stationary"),
    ("Weibull k=0.7, one renewing system", 1, 0.7, "stationary"),
    ("Weibull k=0.5, one renewing system", 1, 0.5, "stationary"),
    ("Weibull k=0.5, 16,384 components in service", 16_384, 0.5, "stationary"),
    ("Weibull k=0.7, 16,384 new components", 16_384, 0.7, "new"),
]


def base_spec(ratio: float, components: int, shape: float, age: str) -> RunSpec:
    delta = ratio * M
    return RunSpec(steps=int(round(SOLVE / STEP)), step_time_s=STEP, components=components,
                   component_mtbf_s=components * M, weibull_shape=shape, component_age=age,
                   checkpoint_interval_s=M, checkpoint_cost_s=delta, restart_cost_s=delta)


def refine(opt: dict) -> float:
    """Quadratic fit of mean wall vs log(interval) through the 5 grid points around the min."""
    x = np.log(opt["effective_interval_s"])
    y = opt["mean_wall_s"]
    i = int(np.argmin(y))
    lo, hi = max(0, i - 2), min(len(x), i + 3)
    if hi - lo < 3:
        return float(opt["best_interval_s"])
    a, b, _ = np.polyfit(x[lo:hi], y[lo:hi], 2)
    if a <= 0:
        return float(opt["best_interval_s"])
    return float(np.exp(np.clip(-b / (2 * a), x[lo], x[hi - 1])))


def study_row(ratio, components, shape, age, replicas):
    spec = base_spec(ratio, components, shape, age)
    delta = spec.checkpoint_cost_s
    young = float(ck.young_interval(delta, M))
    daly = float(ck.daly_interval(delta, M))
    cands = np.concatenate([daly * GRID, [young, daly]])
    opt = optimal_interval(spec, cands, replicas=replicas, seed=SEED)
    tau_sim = refine(opt)

    def sim_waste(tau):
        res = simulate(replace(spec, checkpoint_interval_s=tau), replicas=replicas, seed=SEED)
        wall = res.wall_time_s
        return 1 - SOLVE / wall.mean(), wall.mean(), wall.std(ddof=1) / math.sqrt(replicas)

    w_young, wall_young, _ = sim_waste(young)
    w_daly, wall_daly, _ = sim_waste(daly)
    w_opt, wall_opt, se_opt = sim_waste(tau_sim)
    best_grid = float(np.min(opt["mean_wall_s"]))
    if best_grid < wall_opt:             # the fit may be worse than the best grid point
        tau_sim = float(opt["best_interval_s"])
        w_opt, wall_opt, se_opt = 1 - SOLVE / best_grid, best_grid, float(
            opt["stderr_wall_s"][int(np.argmin(opt["mean_wall_s"]))])
    model = closed_form(replace(spec, checkpoint_interval_s=daly))
    return {"ratio": ratio, "young": young / M, "daly": daly / M, "sim": tau_sim / M,
            "w_young": w_young, "w_daly": w_daly, "w_opt": w_opt, "se_opt": se_opt / wall_opt,
            "w_model": model["waste_fraction"],
            "pen_young": wall_young / wall_opt - 1, "pen_daly": wall_daly / wall_opt - 1}


def table(rows) -> list[str]:
    out = ["| delta/M | tau Young/M | tau Daly/M | tau sim-opt/M | waste @Young | "
           "waste @Daly | waste @sim-opt | Daly model waste @Daly | wall penalty Young | "
           "wall penalty Daly |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['ratio']:g} | {r['young']:.4f} | {r['daly']:.4f} | {r['sim']:.4f} | "
                   f"{r['w_young']:.2%} | {r['w_daly']:.2%} | {r['w_opt']:.2%} | "
                   f"{r['w_model']:.2%} | {r['pen_young']:+.2%} | {r['pen_daly']:+.2%} |")
    return out


def breakdown(rows, threshold=0.01):
    for r in rows:
        if r["pen_young"] > threshold:
            return r["ratio"]
    return None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=int, default=2000)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs",
                                                  "simulation.md"))
    args = ap.parse_args(argv)
    start = time.perf_counter()
    sections = []
    for label, components, shape, age in CASES:
        rows = []
        for ratio in RATIOS:
            rows.append(study_row(ratio, components, shape, age, args.replicas))
            print(f"{label}: delta/M={ratio:g} done ({time.perf_counter() - start:.0f} s)",
                  file=sys.stderr, flush=True)
        sections.append((label, components, shape, age, rows))
    elapsed = time.perf_counter() - start
    text = render(sections, args.replicas, elapsed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text)
    print(text)


def render(sections, replicas, elapsed) -> str:
    exp_rows = sections[0][4]
    b1 = breakdown(exp_rows, 0.01)
    b5 = breakdown(exp_rows, 0.05)
    lines = [
        # The date in the title dates every number below (tests/test_doc_audit.py): the
        # study takes ~12 CPU-min, so it is a measurement of its day, not regenerated.
        "# Simulation: where Young's checkpoint interval breaks down "
        f"(run {datetime.date.today().isoformat()})",
        "",
        "Generated by `python benchmarks/study_young_breakdown.py` "
        f"({replicas:,} replicas per point, seed {SEED}, {elapsed:.0f} s on "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}). Do not edit the numbers "
        "by hand: re-run the script.",
        "",
        "## Set-up",
        "",
        f"System MTBF M = {M:g} s, failure-free compute T_s = {SOLVE / M:g} M, step "
        f"{STEP:g} s (= M/10,000, so intervals are resolved to 0.01% of M), checkpoint cost "
        "delta = (delta/M)·M, restart cost R = delta (reload at the checkpoint bandwidth). "
        "Simulated with `planner.analysis.simulate` (see its module docstring for the model: "
        "segments of tau compute + delta checkpoint, a failure during compute, checkpoint "
        "or restart loses everything since the last completed checkpoint, restarts can "
        "fail, exactly Daly's complete model for exponential failures).",
        "",
        "* **tau Young** = sqrt(2 delta M) (Young 1974); **tau Daly** = Daly 2006 eq. (37); "
        "**tau sim-opt** = the simulated optimum: mean wall time on a grid of 15 intervals "
        "from 0.25 to 4 x tau Daly plus Young's and Daly's, common random numbers (the "
        "same failure timeline for every interval), refined by a quadratic fit in log tau.",
        "* **waste** = 1 - T_s / E[wall], simulated; **Daly model waste** is the closed "
        "form at Daly's interval; **wall penalty** = E[wall at that interval] / E[wall at "
        "the simulated optimum] - 1.",
        "* Monte Carlo standard error of the simulated waste is below "
        f"{max(r['se_opt'] for s in sections for r in s[4]):.2%} of wall time everywhere "
        "(differences between intervals are smaller still thanks to common random numbers).",
        "",
        "## Headline",
        "",
    ]
    lines += [
        "* **Exponential failures.** Young's interval costs "
        f"{exp_rows[0]['pen_young']:+.2%} at delta/M = {exp_rows[0]['ratio']:g}, "
        + ", ".join(f"{r['pen_young']:+.2%} at {r['ratio']:g}" for r in exp_rows[1:])
        + " of extra wall time against the simulated optimum. "
        + (f"It breaks down (penalty > 1%) from delta/M = {b1:g}" if b1 else
           "It never costs more than 1%")
        + (f", > 5% from delta/M = {b5:g}. " if b5 else ". ")
        + "Daly's interval stays within "
        f"{max(abs(r['pen_daly']) for r in exp_rows):.2%} of the optimum over the whole "
        "range, and Daly's closed-form waste matches the simulation (the 1% agreement is "
        "tested in `tests/test_simulate.py`).",
    ]
    for label, _, _, _, rows in sections[1:]:
        worst = max(rows, key=lambda r: r["pen_young"])
        worst_d = max(rows, key=lambda r: r["pen_daly"])
        gap = max(rows, key=lambda r: abs(r["w_daly"] - r["w_model"]))
        lines.append(
            f"* **{label}.** Young's worst penalty {worst['pen_young']:+.2%} "
            f"(delta/M = {worst['ratio']:g}), Daly's worst {worst_d['pen_daly']:+.2%} "
            f"(delta/M = {worst_d['ratio']:g}); the simulated optimum is "
            + ", ".join(f"{r['sim'] / r['daly']:.2f}" for r in rows)
            + " x Daly's interval across delta/M; Daly's closed form mis-states the waste by "
            f"up to {gap['w_model'] - gap['w_daly']:+.1%} points (delta/M = {gap['ratio']:g}).")
    lines += [
        "",
        "What the Weibull cases show: with k < 1 **for one renewing system** (the "
        "Schroeder-Gibson fit of system-level time between failures) failures bunch: "
        "after a failure the next one is likely soon, often during the restart, where it "
        "destroys no work. At the same mean rate the waste is therefore *lower* than the "
        "exponential model says, and the optimum moves to longer intervals. For **16,384 "
        "independent components in service** the superposition of their renewal "
        "processes is Poisson (Palm-Khintchine theorem): Weibull components change "
        "nothing and Young/Daly apply unchanged. For **new components** (k < 1, infant "
        "mortality) the failure rate during the run is several times the nominal N/M_c "
        "and any closed form fed with the nominal MTBF under-predicts the waste badly; "
        "Young's and Daly's intervals then checkpoint too rarely.",
        "",
    ]
    lines += [
        "## How the simulation is checked",
        "",
        "`tests/test_simulate.py` (fixed seeds, each tolerance stated against the Monte "
        "Carlo standard error):",
        "",
        "* exponential failures: simulated mean wall time = Daly's complete model within "
        "4 s.e. and within 1% (s.e. < 0.1%), including delta comparable to M and a shorter "
        "final segment; expected failures = E[wall]/M (Wald) within 4 s.e.;",
        "* E[step] from the simulation = order statistics (`formulas.straggler`) + pause "
        "delay within 1%, on both the exact (<= 32 steps) and the CLT path; the "
        "inverse-CDF sampler of the maximum matches brute-force maxima;",
        "* no failures and no noise: wall = steps x step + checkpoints x delta to 1e-12;",
        "* the Weibull renewal superposition matches a brute-force per-component "
        "simulation (counts, their variance, short-gap frequencies, first failure), for "
        "components in service and new; a whole run with stragglers, pauses and Weibull "
        "components matches an event-driven reference simulation that draws every rank "
        "of every step;",
        "* Weibull k = 1 equals the Poisson shortcut; k < 1 wastes more on a new cluster, "
        "less for one renewing system, and makes no difference for 16,384 components in "
        "service (the three regimes above);",
        "* same seed, identical results.",
        "",
    ]
    for label, components, shape, age, rows in sections:
        lines += [f"## {label}", "",
                  f"components = {components:,}, Weibull shape k = {shape:g}, component "
                  f"ages: {age}; M = {M:g} s is the mean system time between failures.", ""]
        lines += table(rows)
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
