"""Scenario files and phases for the one-layout commands (``evaluate``, ``simulate``).

:func:`apply_scenario_file` puts a ``--scenario`` file's values under the options the
user left at their defaults; :func:`resolve_phases` evaluates each ``[[phases]]`` entry
as a one-phase run (:func:`planner.cli.layout_options.resolve`) on the same accelerator
and, unless a phase says otherwise, the same GPU count; the per-phase breakdown and the
totals are :mod:`planner.report.evaluate_report`'s.
"""

from __future__ import annotations

from planner.cli.layout_options import resolve
from planner.engine.inputs.defaults import PREFERRED_LAYOUT
from planner.errors import CapplanError


def apply_scenario_file(defaults: dict, options: dict, path: str | None) -> tuple[dict, tuple]:
    """(options with the file's values where the user kept the default (``defaults``: the
    command's, :func:`planner.cli.layout_options.layout_defaults`), the file's phases).

    Keys the command does not take (a plan's ``min_gpus``, ``deadline_days`` ...) are
    ignored; ``hardware`` applies when it names one accelerator.
    """
    if not path:
        return options, ()
    values = _load(path)
    phases = values.pop("phases", ())
    merged = dict(options)
    for key, value in values.items():
        if key == "hardware" and ("," in value or value == "all"):
            continue
        if key in merged and merged[key] == defaults.get(key, merged[key]):
            merged[key] = value
    return merged, phases


def _load(path: str) -> dict:
    from planner.cli import scenario_file as sf

    return sf.load(path)


def scenario_spreads(path: str | None) -> dict:
    """The input spreads of ``--uncertainty``: the defaults, updated by the scenario file's
    ``[uncertainty]`` table when ``path`` names one."""
    from planner.analysis.uncertainty import spreads_from

    return spreads_from(_load(path).get("uncertainty") if path else None)


def resolve_phases(options: dict, phases, overrides: dict | None = None,
                   rl: dict | None = None) -> list:
    """One :class:`~planner.analysis.one_run.ResolvedRun` per phase (``overrides``: run-model
    inputs every phase shares, as :func:`~planner.cli.layout_options.resolve` takes them).

    ``rl``: the command's RL options (``evaluate``), under which a ``method = "grpo"``
    phase runs (:func:`planner.cli.rl_run.resolve_grpo_phase`); without them (the other
    commands) a grpo phase is refused with one line."""
    from planner.engine.inputs.phases import in_phase

    runs = []
    for phase in phases:
        own = phase.options()
        phase_options = dict(options)
        if "gpus" in own:  # a new GPU count: the layout the phase states, else the best
            phase_options.update({k: None for k in PREFERRED_LAYOUT})
        phase_options.update(own)
        try:
            if phase_options.get("method") == "grpo":
                run = _grpo_phase(phase, phase_options, rl)
            else:
                run = resolve(phase_options, overrides)
        except CapplanError as error:  # said of the phase: its file, name and keys
            raise in_phase(phase, error) from None
        if run.echo["method"] == "grpo":
            runs.append(run)
            continue
        check_whole_step(phase, run.echo)
        run.row["tokens"] = float(run.echo["tokens"])
        runs.append(run)
    return runs


def _grpo_phase(phase, options: dict, rl: dict | None):
    """A ``method = "grpo"`` phase (evaluate only), its own RL keys over the command's."""
    if rl is None:
        from planner.engine.inputs.defaults import METHODS

        raise CapplanError("method = \"grpo\" phases run in capplan evaluate --scenario "
                           "(planner.engine.layouts.rl), not here; here use one of: "
                           + ", ".join(m for m in METHODS if m != "grpo"))
    if dict(phase.method).get("method") != "grpo":
        raise CapplanError("a grpo phase says method = \"grpo\" and its rl_steps itself")
    from planner.cli.rl_run import resolve_grpo_phase

    return resolve_grpo_phase({**options, **rl, **dict(phase.method)})


def check_whole_step(phase, echo: dict) -> None:
    """A phase is at least one optimizer step: fewer tokens than one global batch would
    report a fraction of a step (``tokens = 1``: 5.96e-08 steps) and its cost."""
    step_tokens = echo["global_batch"] * echo["seq_len"]
    if phase.tokens < step_tokens:
        raise CapplanError(
            f"{phase.where} ({phase.name}): tokens = {phase.tokens:g} is less than one step "
            f"(global batch {echo['global_batch']:,} x {echo['seq_len']:,} tokens = "
            f"{step_tokens:,} tokens); a phase is at least one step: raise its tokens or "
            "lower its global_batch")
