"""The reports of an RL run (``--method grpo``, planner.engine.layouts.rl, planner.engine.search.rl_plan;
docs/post-training.md): ``capplan evaluate``'s one run (:func:`evaluation_report`), a
``method = "grpo"`` phase of a run of phases (:func:`phase_run`) and ``capplan plan``'s
best per objective (:func:`plan_report`).  The commands check the RL options and write
(planner/cli/rl_run.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict

from hardware_catalog import load_catalog
from planner.analysis.one_run import ResolvedRun
from planner.engine.inputs.recompute_modules import module_flags
from planner.engine.inputs.scenario import NETWORK_FLAGS, network_overrides
from planner.engine.layouts.rl import TrainerLayout, whole_run
from planner.engine.run.columns import conversions
from planner.engine.run.readable import count_text, readable_rows, seconds_text, usd_text
from planner.engine.run.run_inputs import RunChoices
from planner.engine.search.rl_plan import OBJECTIVE_COLUMNS, doubling_totals, plan_rl
from planner.errors import INFEASIBLE, CapplanError, choice_error
from planner.report.output import Report, render
from planner.version import version

#: Columns of the one-run answer shown first (the rest follow).
PHASES = ("generation", "scoring", "training", "sync")
#: The quantities of ``capplan evaluate --method grpo``, in order.
EVALUATE_KEYS = (("gpus", "rollout_gpus", "trainer_gpus", "engine_gpus", "rl_step_time_s")
                 + tuple(f"{p}_share" for p in PHASES) + tuple(f"{p}_s" for p in PHASES)
                 + ("prefill_s", "decode_s", "rollout_tp_comm_s", "concurrent",
                    "decode_steps", "longest_response", "kv_bytes_per_token", "params",
                    "active_params", "rl_steps", "wall_time_s", "solve_time_s", "ettr",
                    "gpu_hours", "cost_usd", "energy_facility_j", "avg_power_w", "co2e_kg",
                    "expected_failures", "system_mtbf_s", "checkpoint_interval_s",
                    "checkpoint_stall_s"))
#: The quantities of an RL phase in a run of several phases' JSON.
PHASE_KEYS = ("gpus", "rollout_gpus", "trainer_gpus", "engine_gpus", "rl_step_time_s",
              *(f"{p}_share" for p in PHASES), *(f"{p}_s" for p in PHASES), "rl_steps",
              "wall_time_s", "solve_time_s", "ettr", "gpu_hours", "cost_usd",
              "energy_facility_j", "co2e_kg", "expected_failures")


def _whole_run(options: dict, config, layout, faults: dict | None, **more):
    """(RunChoices, the whole RL run, the catalog) of a command's options (``catalog``:
    directories, ``prices``: price files, the network flags: run-model inputs as
    pre-training's, planner.analysis.one_run; ``faults``: the fault options' inputs)."""
    catalog = load_catalog(tuple(options.get("catalog") or ()),
                           tuple(options.get("prices") or ()))
    choices = RunChoices.pick(options)
    network = network_overrides(options.get("network"), catalog,
                                **{k: options.get(k) for k in NETWORK_FLAGS})
    # Megatron-Core's recompute modules of the trainer (as pre-training's, one_run)
    recomputed = module_flags(options.get("recompute_modules"), layout.recompute)
    run = whole_run(choices, config, options["gpus"], options["rl_steps"], layout=layout,
                    catalog=catalog, overrides={**(faults or {}), **network, **recomputed},
                    **more)
    return choices, run, catalog


def evaluation_report(options: dict, config, layout, format: str, *,
                      faults: dict | None = None) -> Report:
    """One GRPO/PPO run on ``--gpus`` GPUs of ``--hardware``: pools, phase shares, step
    time, and the whole run (failures, checkpoints, energy, cost, carbon)."""
    choices, run, _ = _whole_run(options, config, layout, faults)
    rows = [{"quantity": k, "value": run[k]} for k in EVALUATE_KEYS]
    payload = {"method": "grpo", "model": choices.model, "hardware": choices.hardware,
               "mode": config.mode, "rl": _config_echo(config), "trainer_layout":
               layout.__dict__, **{k: run[k] for k in EVALUATE_KEYS}, "version": version()}
    title = (f"{choices.model} (grpo, {config.mode}) on {options['gpus']:,} x "
             f"{choices.hardware}: rollout {run['rollout_gpus']} GPUs in engines of "
             f"{run['engine_gpus']}, trainer {run['trainer_gpus']} GPUs (TP{layout.tp} "
             f"PP{layout.pp} ZeRO-{layout.zero}, recompute {layout.recompute})")
    if format == "table":
        rows = readable_rows(rows)
    return Report(text=render(rows, format, title=title, payload=payload))


def phase_run(options: dict, config, layout, *, faults: dict | None = None) -> ResolvedRun:
    """One ``method = "grpo"`` phase of a run of several phases: the row holds every
    run-model output of the whole RL run (and their unit conversions), so the phases'
    totals add it like any phase's; ``echo["rl"]`` its RL quantities for the JSON."""
    choices, run, catalog = _whole_run(options, config, layout, faults, columns=None)
    row = dict(run)
    for name, source, factor in conversions():
        if source in row:
            row[name] = row[source] / factor
    row["tokens"] = row["steps"] * config.sequences * (config.prompt_len + config.response_len)
    echo = {"model": choices.model, "hardware": choices.hardware, "method": "grpo",
            "gpus": options["gpus"], "tp": layout.tp, "pp": layout.pp, "cp": layout.cp,
            "dp": max(run["trainer_gpus"] // (layout.tp * layout.pp * layout.cp), 1),
            "seq_len": int(round(config.prompt_len + config.response_len)),
            "global_batch": config.sequences, "tokens": row["tokens"],
            "rl": {**_config_echo(config), **{k: run[k] for k in PHASE_KEYS},
                   "trainer_layout": layout.__dict__}}
    return ResolvedRun(row=row, inputs={}, echo=echo,
                       catalog_version=str(getattr(catalog, "version", "")))


def plan_report(scenario, config, rl_steps: float, format: str) -> Report:
    """The best accelerator, GPU count and pool split per objective for a GRPO run of a
    checked ``scenario``; none meeting the deadline and budget: CapplanError (exit 1)."""
    if scenario.objective not in OBJECTIVE_COLUMNS:  # tcdp, cci: not yet for an RL run
        raise CapplanError(f"{choice_error('objective', scenario.objective, OBJECTIVE_COLUMNS)}"
                           " (a grpo plan's objectives)")
    catalog = load_catalog(tuple(scenario.catalog_dirs or ()), scenario.price_files)
    choices = RunChoices.from_scenario(scenario, scenario.hardware[0])
    deadline = scenario.deadline_days
    result = plan_rl(choices, config, list(scenario.hardware),
                     doubling_totals(scenario.min_gpus, scenario.max_gpus),
                     rl_steps, layout=TrainerLayout(),
                     deadline_days=None if deadline is None or math.isinf(deadline) else deadline,
                     budget_usd=scenario.budget_usd, catalog=catalog,
                     overrides=dict(scenario.extra))
    objectives = [scenario.objective] + [o for o in OBJECTIVE_COLUMNS if o != scenario.objective]
    winners = [{"objective": o, **result["best"][o]} for o in objectives
               if result["best"][o] is not None]
    if not winners:
        reasons = "; ".join(f"{hw}: {why}" for hw, why in result["skipped"].items())
        raise CapplanError(f"no grpo run of {scenario.model} meets the deadline and budget "
                           f"between {scenario.min_gpus} and {scenario.max_gpus} GPUs"
                           + (f" ({reasons})" if reasons else ""), exit_code=INFEASIBLE)
    payload = {"method": "grpo", "model": scenario.model, "rl": _config_echo(config),
               "objective": scenario.objective, "best": result["best"],
               "candidates": result["rows"], "skipped": result["skipped"],
               "version": version()}
    title = (f"grpo plan for {scenario.model} ({config.mode}, {config.prompts} prompts x "
             f"{config.group_size} responses of {config.response_len:g} tokens, "
             f"{rl_steps:g} steps), best per objective")
    if format == "table":  # the headline columns, in human units
        winners = [_compact(w) for w in winners]
    return Report(text=render(winners, format, title=title, payload=payload))


def _compact(row: dict) -> dict:
    """A plan winner's headline columns for the table."""
    return {"objective": row["objective"], "hardware": row["hardware"],
            "GPUs (rollout+trainer)": f"{row['gpus']:,}" + (
                "" if row["mode"] == "colocated"
                else f" ({row['rollout_gpus']:,}+{row['trainer_gpus']:,})"),
            "engine GPUs": row["engine_gpus"], "step": seconds_text(row["rl_step_time_s"]),
            "gen/score/train %": "/".join(f"{100 * row[f'{p}_share']:.0f}"
                                          for p in ("generation", "scoring", "training")),
            "wall": seconds_text(row["wall_time_s"]), "cost": usd_text(row["cost_usd"]),
            "MWh": f"{row['energy_facility_j'] / 3.6e9:.3g}",
            "t CO2e": f"{row['co2e_kg'] / 1e3:.3g}",
            "failures": count_text(row["expected_failures"])}


def _config_echo(config) -> dict:
    return {**asdict(config), "response_cap": config.response_cap,
            "memory_fraction": config.memory_fraction}
