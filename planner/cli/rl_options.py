"""Command-line options of an RL run (``--method grpo``: rollout group, prompt and response
lengths, colocated or disaggregated pools), and ``evaluate``/``plan`` of such a run
(planner.engine.layouts.rl, planner.engine.search.rl_plan; docs/post-training.md)."""

from __future__ import annotations

import inspect

import typer

from planner.errors import CapplanError, choice_error

#: Defaults of the RL options (planner.engine.layouts.rl.RLConfig's, the CLI's names).
RL_DEFAULTS = {"rollout_group_size": 8, "prompts": 256, "prompt_len": 512.0,
               "response_len": 1024.0, "response_cv": 0.6, "max_response_len": None,
               "rl_mode": "colocated", "rollout_gpus": None, "off_policy": False,
               "critic": False, "rl_updates": 1, "rl_steps": 1000.0}


def rl_options(
    rollout_group_size: int = typer.Option(
        RL_DEFAULTS["rollout_group_size"],
        help="GRPO: responses sampled per prompt, the group G (DeepSeekMath: 64)."),
    prompts: int = typer.Option(RL_DEFAULTS["prompts"], help="GRPO: prompts per RL step."),
    prompt_len: float = typer.Option(RL_DEFAULTS["prompt_len"],
                                     help="GRPO: mean prompt length [tokens]."),
    response_len: float = typer.Option(RL_DEFAULTS["response_len"],
                                       help="GRPO: mean response length [tokens]."),
    response_cv: float = typer.Option(
        RL_DEFAULTS["response_cv"], help="GRPO: coefficient of variation of the response "
        "length (lognormal); a batch waits for its longest response."),
    max_response_len: float = typer.Option(
        RL_DEFAULTS["max_response_len"],
        help="GRPO: generation limit [tokens] (default 4x --response-len)."),
    rl_mode: str = typer.Option(
        RL_DEFAULTS["rl_mode"], help="GRPO: colocated (all GPUs take turns generating and "
        "training) | disaggregated (a rollout pool and a trainer pool)."),
    rollout_gpus: int = typer.Option(
        RL_DEFAULTS["rollout_gpus"], help="GRPO disaggregated: GPUs of the rollout pool "
        "(default: the fastest split)."),
    off_policy: bool = typer.Option(
        RL_DEFAULTS["off_policy"], "--off-policy/--on-policy",
        help="GRPO disaggregated: generate step n+1 while training on step n (one step "
        "off-policy; the pools overlap)."),
    critic: bool = typer.Option(RL_DEFAULTS["critic"], "--critic/--no-critic",
                                help="PPO: train a value model of the policy's size too."),
    rl_updates: int = typer.Option(
        RL_DEFAULTS["rl_updates"], help="GRPO: optimizer steps per RL step (mini-batches x "
        "epochs)."),
    rl_steps: float = typer.Option(RL_DEFAULTS["rl_steps"],
                                   help="GRPO: RL steps of the whole run."),
):
    """Holder of the RL options (never called)."""


#: The names of the RL options.
RL_OPTIONS = tuple(inspect.signature(rl_options).parameters)


def refuse_without_grpo(options: dict) -> None:
    """One line when an RL option is set but the method is not grpo."""
    for name in RL_OPTIONS:
        if name in options and options[name] != RL_DEFAULTS[name]:
            raise CapplanError(f"--{name.replace('_', '-')} applies to --method grpo, not "
                               f"{options.get('method')}")


def rl_config(options: dict, *, rollout_gpus_ok: bool = True):
    """The :class:`planner.engine.layouts.rl.RLConfig` of the options (checked: one line)."""
    from planner.engine.layouts.rl import RLConfig

    if options["rl_mode"] not in ("colocated", "disaggregated"):
        raise choice_error("rl-mode", options["rl_mode"], ("colocated", "disaggregated"))
    if options["rl_mode"] == "colocated":
        for name in ("rollout_gpus", "off_policy"):
            if options[name] != RL_DEFAULTS[name]:
                raise CapplanError(f"--{name.replace('_', '-')} applies to --rl-mode "
                                   "disaggregated (colocated GPUs do both)")
    if not rollout_gpus_ok and options["rollout_gpus"] is not None:
        raise CapplanError("--rollout-gpus fixes one split of one cluster; plan searches "
                           "the split (use evaluate --gpus N --rollout-gpus R)")
    config = RLConfig(
        prompts=options["prompts"], group_size=options["rollout_group_size"],
        prompt_len=_number(options["prompt_len"]), response_len=_number(options["response_len"]),
        response_cv=_number(options["response_cv"]),
        max_response_len=options["max_response_len"], mode=options["rl_mode"],
        rollout_gpus=options["rollout_gpus"], off_policy=options["off_policy"],
        critic=options["critic"], updates=options["rl_updates"])
    config.check()
    return config


def _number(value):
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def trainer_layout(options: dict):
    """The trainer's sizes: those typed (--tp, --pp, --cp, --ep, --micro-batch), ZeRO and
    recompute when changed from the pre-training defaults, else FSDP with full recompute
    (planner.engine.layouts.rl.TrainerLayout)."""
    from planner.engine.inputs.defaults import DEFAULTS
    from planner.engine.layouts.rl import TrainerLayout

    base = TrainerLayout()
    given = {k: options.get(k) for k in ("tp", "pp", "cp", "ep", "micro_batch")
             if options.get(k) is not None}
    for name in ("zero", "recompute"):
        if options.get(name) is not None and options[name] != DEFAULTS.get(name):
            given[name] = options[name]
    layout = TrainerLayout(**{**base.__dict__, **given})
    for name in ("tp", "pp", "cp", "ep", "micro_batch"):
        value = getattr(layout, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CapplanError(f"--{name.replace('_', '-')} {value!r} must be an integer >= 1")
    return layout
