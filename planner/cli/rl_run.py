"""``capplan evaluate --method grpo`` and ``capplan plan --method grpo``: an RL run with
rollouts (planner.engine.layouts.rl, planner.engine.search.rl_plan; docs/post-training.md).

The RL options are checked here; :mod:`planner.report.rl_report` (one lazy import per
function, docs/architecture.md) evaluates or plans the run and builds the report.
"""

from __future__ import annotations

from planner.cli.common import write_report
from planner.cli.environment_options import price_files
from planner.cli.fault_options import fault_inputs
from planner.cli.rl_options import rl_config, trainer_layout
from planner.errors import CapplanError

#: Options of the other methods, refused with grpo.
OTHER_METHOD_OPTIONS = ("lora_rank", "lora_targets", "base_precision", "packing",
                        "max_seq_len", "reference_logprobs")


def _refuse(options: dict, names: tuple[str, ...], why: str) -> None:
    for name in names:
        if options.get(name) is not None:
            raise CapplanError(f"--{name.replace('_', '-')} does not apply to --method grpo "
                               f"({why})")


def _check_grpo_options(options: dict) -> None:
    _refuse(options, OTHER_METHOD_OPTIONS, "it has no adapters, padding or DPO reference")
    _refuse(options, ("global_batch", "seq_len"), "a step is --prompts x "
            "--rollout-group-size sequences of --prompt-len + --response-len tokens")


def _with_price_files(options: dict) -> dict:
    return {**options, "prices": price_files(options.get("prices"))}


def evaluate_grpo(options: dict, format: str, output, force: bool) -> None:
    """One GRPO/PPO run on ``--gpus`` GPUs of ``--hardware``: pools, phase shares, step
    time, and the whole run (failures, checkpoints, energy, cost, carbon)."""
    _check_grpo_options(options)
    config = rl_config(options)
    layout = trainer_layout(options)
    from planner.report import rl_report as report  # numpy, the engine: when it runs

    write_report(report.evaluation_report(_with_price_files(options), config, layout, format,
                                          faults=fault_inputs(options)), output, force)


def resolve_grpo_phase(options: dict):
    """One ``method = "grpo"`` phase of a run of several phases, as a
    :class:`planner.analysis.one_run.ResolvedRun` (:func:`planner.report.rl_report.
    phase_run`)."""
    _check_grpo_options(options)
    config = rl_config(options)
    layout = trainer_layout(options)
    from planner.report import rl_report as report  # numpy, the engine: when it runs

    return report.phase_run(_with_price_files(options), config, layout,
                            faults=fault_inputs(options))


def plan_grpo(scenario, options: dict, format: str, output, force: bool) -> None:
    """The best accelerator, GPU count and pool split per objective for a GRPO run."""
    _check_grpo_options({"global_batch": scenario.global_batch, "seq_len": scenario.seq_len,
                         **{k: getattr(scenario, k) for k in OTHER_METHOD_OPTIONS}})
    scenario.with_(method="pretrain").validate()  # the rest of the scenario, as plan's
    config = rl_config(options, rollout_gpus_ok=False)
    from planner.report import rl_report as report  # numpy, the engine: when it runs

    write_report(report.plan_report(scenario, config, options["rl_steps"], format),
                 output, force)
