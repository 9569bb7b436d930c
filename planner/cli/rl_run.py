"""``capplan evaluate --method grpo`` and ``capplan plan --method grpo``: an RL run with
rollouts (planner.engine.rl, planner.engine.rl_plan; docs/post-training.md).

Imported by the evaluate and plan commands only when the method is grpo; the engine loads
inside the functions (the CLI's lazy boundary, planner/cli/app.py)."""

from __future__ import annotations

from planner.cli.rl_options import RL_OPTIONS, rl_config, trainer_layout
from planner.errors import INFEASIBLE, CapplanError
from planner.version import version

#: Options of the other methods, refused with grpo.
OTHER_METHOD_OPTIONS = ("lora_rank", "lora_targets", "base_precision", "packing",
                        "max_seq_len", "reference_logprobs")
#: Columns of the one-run answer shown first (the rest follow).
PHASES = ("generation", "scoring", "training", "sync")


def _refuse(options: dict, names: tuple[str, ...], why: str) -> None:
    for name in names:
        if options.get(name) is not None:
            raise CapplanError(f"--{name.replace('_', '-')} does not apply to --method grpo "
                               f"({why})")


def _check_grpo_options(options: dict) -> None:
    _refuse(options, OTHER_METHOD_OPTIONS, "it has no adapters, padding or DPO reference")
    _refuse(options, ("global_batch", "seq_len"), "a step is --prompts x "
            "--rollout-group-size sequences of --prompt-len + --response-len tokens")


def run_overrides(options: dict, catalog) -> dict:
    """Run-model inputs (SI) of the site-network, fault and straggler flags, as
    pre-training's evaluate reads them (planner.cli.layout_options.resolve)."""
    from planner.cli.fault_options import fault_inputs
    from planner.engine.scenario import NETWORK_FLAGS, network_overrides

    network = network_overrides(options.get("network"), catalog,
                                **{k: options.get(k) for k in NETWORK_FLAGS})
    return {**fault_inputs(options), **network}


def evaluate_grpo(options: dict, format: str, output, force: bool) -> None:
    """One GRPO/PPO run on ``--gpus`` GPUs of ``--hardware``: pools, phase shares, step
    time, and the whole run (failures, checkpoints, energy, cost, carbon)."""
    _check_grpo_options(options)
    config = rl_config(options)
    layout = trainer_layout(options)
    from hardware_catalog import load_catalog
    from planner.cli.environment_options import price_files
    from planner.engine.readable import readable_rows
    from planner.engine.rl import whole_run
    from planner.engine.run_inputs import RunChoices
    from planner.report.output import render, write

    catalog = load_catalog(tuple(options.get("catalog") or ()),
                           price_files(options.get("prices")))
    choices = RunChoices.pick({k: v for k, v in options.items() if k not in RL_OPTIONS})
    run = whole_run(choices, config, options["gpus"], options["rl_steps"], layout=layout,
                    catalog=catalog, overrides=run_overrides(options, catalog))
    keys = (["gpus", "rollout_gpus", "trainer_gpus", "engine_gpus", "rl_step_time_s"]
            + [f"{p}_share" for p in PHASES] + [f"{p}_s" for p in PHASES]
            + ["prefill_s", "decode_s", "rollout_tp_comm_s", "concurrent", "decode_steps",
               "longest_response", "kv_bytes_per_token", "params", "active_params",
               "rl_steps", "wall_time_s", "solve_time_s", "ettr", "gpu_hours", "cost_usd",
               "energy_facility_j", "avg_power_w", "co2e_kg", "expected_failures",
               "system_mtbf_s", "checkpoint_interval_s", "checkpoint_stall_s"])
    rows = [{"quantity": k, "value": run[k]} for k in keys]
    payload = {"method": "grpo", "model": choices.model, "hardware": choices.hardware,
               "mode": config.mode, "rl": _config_echo(config), "trainer_layout":
               layout.__dict__, **{k: run[k] for k in keys}, "version": version()}
    title = (f"{choices.model} (grpo, {config.mode}) on {options['gpus']:,} x "
             f"{choices.hardware}: rollout {run['rollout_gpus']} GPUs in engines of "
             f"{run['engine_gpus']}, trainer {run['trainer_gpus']} GPUs (TP{layout.tp} "
             f"PP{layout.pp} ZeRO-{layout.zero}, recompute {layout.recompute})")
    if format == "table":
        rows = readable_rows(rows)
    write(render(rows, format, title=title, payload=payload), output, force)


#: The quantities of an RL phase in a run of several phases' JSON.
PHASE_KEYS = ("gpus", "rollout_gpus", "trainer_gpus", "engine_gpus", "rl_step_time_s",
              *(f"{p}_share" for p in PHASES), *(f"{p}_s" for p in PHASES), "rl_steps",
              "wall_time_s", "solve_time_s", "ettr", "gpu_hours", "cost_usd",
              "energy_facility_j", "co2e_kg", "expected_failures")


def resolve_grpo_phase(options: dict):
    """One ``method = "grpo"`` phase of a run of several phases, as a
    :class:`planner.analysis.one_run.ResolvedRun`: the row holds every run-model output
    of the whole RL run (and their unit conversions), so the phases' totals add it like
    any phase; ``echo["rl"]`` its RL quantities for the JSON."""
    _check_grpo_options(options)
    config = rl_config(options)
    layout = trainer_layout(options)
    from hardware_catalog import load_catalog
    from planner.analysis.one_run import ResolvedRun
    from planner.cli.environment_options import price_files
    from planner.engine.columns import conversions
    from planner.engine.rl import whole_run
    from planner.engine.run_inputs import RunChoices

    catalog = load_catalog(tuple(options.get("catalog") or ()),
                           price_files(options.get("prices")))
    choices = RunChoices.pick({k: v for k, v in options.items() if k not in RL_OPTIONS})
    run = whole_run(choices, config, options["gpus"], options["rl_steps"], layout=layout,
                    catalog=catalog, overrides=run_overrides(options, catalog), columns=None)
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


def plan_grpo(scenario, options: dict, format: str, output, force: bool) -> None:
    """The best accelerator, GPU count and pool split per objective for a GRPO run."""
    _check_grpo_options({"global_batch": scenario.global_batch, "seq_len": scenario.seq_len,
                         **{k: getattr(scenario, k) for k in OTHER_METHOD_OPTIONS}})
    scenario.with_(method="pretrain").validate()  # the rest of the scenario, as plan's
    config = rl_config(options, rollout_gpus_ok=False)
    from planner.engine.rl_plan import OBJECTIVE_COLUMNS

    if scenario.objective not in OBJECTIVE_COLUMNS:
        raise CapplanError(f"--objective {scenario.objective} is not one of the grpo plan's: "
                           f"{', '.join(OBJECTIVE_COLUMNS)}")
    import math

    from hardware_catalog import load_catalog
    from planner.engine.rl import TrainerLayout
    from planner.engine.rl_plan import doubling_totals, plan_rl
    from planner.engine.run_inputs import RunChoices
    from planner.report.output import render, write

    catalog = load_catalog(tuple(scenario.catalog_dirs or ()), scenario.price_files)
    choices = RunChoices.from_scenario(scenario, scenario.hardware[0])
    deadline = scenario.deadline_days
    result = plan_rl(choices, config, list(scenario.hardware),
                     doubling_totals(scenario.min_gpus, scenario.max_gpus),
                     options["rl_steps"], layout=TrainerLayout(),
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
             f"{options['rl_steps']:g} steps), best per objective")
    if format == "table":  # the headline columns, in human units
        winners = [_compact(w) for w in winners]
    write(render(winners, format, title=title, payload=payload), output, force)


def _compact(row: dict) -> dict:
    """A plan winner's headline columns for the table."""
    from planner.engine.readable import count_text, seconds_text, usd_text

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
    from dataclasses import asdict

    return {**asdict(config), "response_cap": config.response_cap,
            "memory_fraction": config.memory_fraction}
