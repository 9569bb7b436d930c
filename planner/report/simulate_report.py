"""The report of ``capplan simulate``: the Monte Carlo of whole runs beside the closed forms.

:func:`simulation_report` simulates ``replicas`` runs of each evaluated run (one, or the
``[[phases]]`` one after the other, summed per simulated run) with
:mod:`planner.analysis.simulate` and compares the distribution of wall time, GPU-hours,
energy and failures with the run model's closed forms, as a
:class:`~planner.report.output.Report`; the command resolves the options and writes it
(planner/cli/simulate_command.py).
"""

from __future__ import annotations

import math

import numpy as np

from formulas.straggler import expected_max_normal, pause_delay
from planner.analysis.simulate import RunSpec, closed_form
from planner.analysis.simulate import simulate as run_simulation
from planner.engine.inputs.domains import check
from planner.engine.inputs.phases import sum_phases
from planner.errors import CapplanError, choice_error
from planner.report.output import Report, render
from planner.version import version

#: The ages of the components at the start of the run (``--component-age``).
COMPONENT_AGES = ("stationary", "new")

#: The quantities compared: name -> the run-model column of its closed form.
QUANTITIES = {"wall_days": "wall_days", "gpu_hours": "gpu_hours", "energy_kwh": "energy_kwh",
              "failures": "expected_failures"}


def run_spec(row: dict, x: dict, weibull_shape: float = 1.0, component_age: str = "stationary"):
    """The simulator's RunSpec for an evaluated configuration (same inputs, SI units)."""
    def scalar(name):
        return float(np.ravel(x[name])[0])

    gpus = int(row["gpus"])
    base_step = row["step_time_s"] - row["straggler_s"]
    # the simulator draws the per-rank noise and pauses itself; the software stragglers
    # (GC, stage imbalance, slow nodes: their expectation) stay in the step time
    noise_and_pauses = (float(expected_max_normal(gpus, base_step,
                                                  scalar("step_time_cv") * base_step))
                        - base_step + float(pause_delay(gpus, scalar("pause_probability"),
                                                        scalar("pause_duration_s"))))
    software_s = max(0.0, row["straggler_s"] - noise_and_pauses)
    gpn = scalar("gpus_per_node")
    nodes, spares = gpus / gpn, float(row.get("spare_nodes", 0.0))
    idle_w, max_w, pue = scalar("idle_power_w"), scalar("max_power_w"), scalar("pue")
    node_rest_w = scalar("node_overhead_power_w") + scalar("network_power_per_node_w")
    # hot spares idle all run long, billed
    rest_w = nodes * node_rest_w + spares * (gpn * idle_w + node_rest_w)
    busy = row["compute_s"] / row["step_time_s"]
    return RunSpec(
        steps=max(1, math.ceil(row["steps"])), step_time_s=base_step + software_s,
        step_time_std_s=scalar("step_time_cv") * base_step, sync_ranks=gpus,
        pause_probability=scalar("pause_probability"),
        pause_duration_s=scalar("pause_duration_s"), components=gpus,
        component_mtbf_s=row["system_mtbf_s"] * gpus, weibull_shape=weibull_shape,
        checkpoint_interval_s=row["checkpoint_interval_s"],
        checkpoint_cost_s=row["checkpoint_stall_s"], restart_cost_s=row["restart_s"],
        commit_latency_s=min(row["commit_latency_s"], row["checkpoint_interval_s"]),
        busy_power_w=pue * (gpus * (idle_w + (max_w - idle_w) * busy) + rest_w),
        idle_power_w=pue * (gpus * idle_w + rest_w), gpus=gpus + int(spares * gpn),
        component_age=component_age, eval_fraction=scalar("eval_fraction"),
        rollback_busy_s=row["rollbacks"] * scalar("rollback_steps") * row["step_time_s"],
        rollback_idle_s=row["rollbacks"] * row["restart_s"], rollbacks=row["rollbacks"],
        maintenance_fraction=scalar("maintenance_fraction"))


#: Most simulated failures (replicas x failures per run) one ``capplan simulate`` may take:
#: at the 8 us (exponential) to 17 us (Weibull renewal) per failure measured on one core,
#: 16-34 s.  The default run (Llama 3 70B, 1,024 H100, 10,000 replicas) needs 1.2e6.
MAX_FAILURE_EVENTS = 2 * 10**6
#: Most failures in one simulated run: the simulator steps all replicas failure by
#: failure, ~0.1 ms a step in Python, so 50,000 failures take some 5 s even for one replica.
MAX_FAILURES_PER_RUN = 50_000
PILOT_REPLICAS = 32


def check_work(spec, replicas: int, seed: int) -> None:
    """Refuse a simulation whose failures would take minutes.

    The closed form's expected failures per run bound the work first (1e18 tokens mean
    1.4 million failures in one run); Weibull failures (k != 1 or new components) are
    then measured on a pilot of a few replicas, since infant mortality multiplies them
    (k = 0.2, new: 34x the closed form).  The limit is :data:`MAX_FAILURE_EVENTS`.
    """
    per_run = max(1.0, float(closed_form(spec)["failures"]))
    _refuse_above(replicas, per_run)
    exponential = spec.weibull_shape == 1.0 and spec.component_age == "stationary"
    if exponential or replicas <= PILOT_REPLICAS:
        return
    pilot = run_simulation(spec, replicas=PILOT_REPLICAS, seed=seed)
    _refuse_above(replicas, max(per_run, float(pilot.failures.mean())))


def _refuse_above(replicas: int, per_run: float) -> None:
    if per_run > MAX_FAILURES_PER_RUN:
        raise CapplanError(
            f"one run would see about {per_run:.2g} failures (at most {MAX_FAILURES_PER_RUN:,} "
            "can be simulated per run): lower --tokens or --gpus, or raise --weibull-shape")
    if replicas * per_run > MAX_FAILURE_EVENTS:
        raise CapplanError(
            f"--replicas {replicas} would simulate about {replicas * per_run:.2g} failures "
            f"({per_run:.0f} per run; at most {MAX_FAILURE_EVENTS:.0e} allowed): use "
            f"--replicas {int(MAX_FAILURE_EVENTS / per_run)} or fewer, or a larger "
            "--weibull-shape")


def check_request(*, replicas: int, seed: int, weibull_shape: float,
                  component_age: str) -> None:
    """CapplanError (one line) for a bad ``--replicas``, ``--seed``, ``--weibull-shape`` or
    ``--component-age``, before the run is evaluated."""
    check({"replicas": replicas, "seed": seed, "weibull_shape": weibull_shape})
    if component_age not in COMPONENT_AGES:
        raise choice_error("component-age", component_age, COMPONENT_AGES)


def simulation_report(runs, phases, format: str, *, replicas: int, seed: int,
                      weibull_shape: float, component_age: str) -> Report:
    """``replicas`` simulated runs of the evaluated ``runs`` (one, or one per phase of
    ``phases``, seeds ``seed``, ``seed + 1`` ...) against their closed forms."""
    planner_row = sum_phases([r.row for r in runs]) if phases else runs[0].row
    run = runs[0]
    specs = [run_spec(r.row, r.inputs, weibull_shape, component_age) for r in runs]
    for spec in specs:
        check_work(spec, replicas, seed)
    # phases run one after the other: each simulated run is the sum of its phases' runs
    summary = _summed([run_simulation(spec, replicas=replicas, seed=seed + i)
                       for i, spec in enumerate(specs)])
    closed = [closed_form(spec) for spec in specs]
    segmented = {name: sum(float(c[name]) for c in closed) for name in QUANTITIES}
    # the training method of the run (phases of several methods: each once, in order)
    method = "+".join(dict.fromkeys(r.echo["method"] for r in runs))
    result, rows = {}, []
    for name, column in QUANTITIES.items():
        sim = summary[name]
        planner_value = float(planner_row[column])
        result[name] = {**{k: sim[k] for k in ("mean", "stderr", "p10", "p50", "p90")},
                        "closed_form": planner_value,
                        "closed_form_segmented": float(segmented[name]),
                        "relative_difference": sim["mean"] / planner_value - 1
                        if planner_value else float("nan")}
        rows.append({"quantity": name, "method": method, **result[name]})
    phase_names = {"phases": [p.name for p in phases]} if phases else {}
    payload = {"inputs": run.echo, "method": method, **phase_names, "replicas": replicas,
               "seed": seed, "weibull_shape": weibull_shape, "component_age": component_age,
               **result, "version": version(), "catalog_version": run.catalog_version}
    title = (f"Simulated {replicas:,} runs (seed {seed}) of {run.echo['model']} on "
             f"{run.echo['gpus']:,} x {run.echo['hardware']} vs the closed forms")
    return Report(text=render(rows, format, title=title, payload=payload))


def _summed(results) -> dict:
    """Mean, standard error, p10, p50, p90 of the per-run sums over the phases' results
    (one result: its own summary)."""
    if len(results) == 1:
        return results[0].summary()
    out = {}
    for name in QUANTITIES:
        v = sum(np.asarray(getattr(r, name), dtype=float) for r in results)
        p10, p50, p90 = np.percentile(v, [10, 50, 90])
        out[name] = {"mean": float(v.mean()),
                     "stderr": float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0,
                     "p10": float(p10), "p50": float(p50), "p90": float(p90)}
    return out
