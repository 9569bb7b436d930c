"""``capplan stragglers``: what-if table of the cluster share each straggler cause wastes."""

from __future__ import annotations

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    GcEveryStepsOption,
    GcIntervalOption,
    GcPauseOption,
    ModelOption,
    OutputOption,
    SlowNodeSlowdownOption,
    SlowNodesOption,
    StageImbalanceOption,
    output_format,
)
from planner.engine.inputs.defaults import STRAGGLERS
from planner.errors import CapplanError, choice_error, shown
from planner.version import version

DEFAULT_GPUS = "128,1024,4096,16384"


def parse_gpu_list(text: str) -> list[int]:
    """``128,1024`` (a list) or ``128..16384`` (powers of two from the first to the last)."""
    from planner.engine.inputs.domains import check_value

    def count(part: str) -> int:
        try:
            value = int(part.strip())
        except ValueError:
            raise CapplanError(f"--gpus {shown(text)}: {shown(part.strip())} is not a whole "
                               "number; give a list (128,1024) or a range (128..16384)") from None
        check_value("gpus", value)
        return value

    if ".." in text:
        first, _, last = text.partition("..")
        lo, hi = count(first), count(last)
        if hi < lo:
            raise CapplanError(f"--gpus {shown(text)} is an empty range; need first <= last")
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return out
    return [count(p) for p in text.split(",") if p.strip()] or [count(text)]


def stragglers(
    ctx: typer.Context,
    gpus: str = typer.Option(DEFAULT_GPUS, "--gpus", "-n",
                             help="GPU counts: a list (128,1024) or a doubling range "
                             "(128..16384)."),
    preset: str = typer.Option(None, help="A published setting: bytedance-osdi25 (Lin et al. "
                               "OSDI'25, the 'up to 45 %' of wasted GPU-hours)."),
    model: ModelOption = "llama3-8b",
    step_time: float = typer.Option(4.0, help="Straggler-free step time [s]."),
    step_time_cv: float = typer.Option(STRAGGLERS["step_time_cv"][0], help="Per-rank step-time coefficient of "
                                       "variation."),
    stages: int = typer.Option(STRAGGLERS["stages"][0], help="Pipeline stages (the last one carries the LM head)."),
    microbatches: int = typer.Option(STRAGGLERS["microbatches"][0], help="Micro-batches per step and pipeline."),
    lm_head: bool = typer.Option(True, "--lm-head/--no-lm-head",
                                 help="Count the LM head on the last pipeline stage."),
    stage_imbalance: StageImbalanceOption = 0.0,
    gc_interval: GcIntervalOption = None,
    gc_pause: GcPauseOption = STRAGGLERS["gc_pause_s"][0],
    gc_every_steps: GcEveryStepsOption = None,
    slow_nodes: SlowNodesOption = 0.0,
    slow_node_slowdown: SlowNodeSlowdownOption = STRAGGLERS["slow_node_slowdown"][0],
    sequence_slowdown: float = typer.Option(
        1.0, help="Slowdown from sequence-length imbalance, a measured factor >= 1."),
    simulate: bool = typer.Option(False, "--simulate/--no-simulate",
                                  help="Confirm the combined waste by Monte Carlo."),
    steps: int = typer.Option(100_000, help="Simulated steps per GPU count (--simulate)."),
    seed: int = typer.Option(0, help="Random seed (--simulate)."),
    catalog: list[str] = typer.Option(None, "--catalog", help="Extra catalog directory."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
):
    """How much of the cluster each software straggler cause wastes (GC pauses, pipeline
    stage imbalance, slow nodes, sequence imbalance, all together) as the job grows."""
    format = output_format(format, output)
    from planner.engine.inputs.domains import Domain, check

    counts = parse_gpu_list(gpus)
    check({"gc_interval": gc_interval, "gc_pause": gc_pause, "gc_every_steps": gc_every_steps,
           "stage_imbalance": stage_imbalance, "slow_nodes": slow_nodes,
           "slow_node_slowdown": slow_node_slowdown, "seed": seed})
    for name, value, domain in (
            ("step_time", step_time, Domain(">0", maximum=1e9)),
            ("step_time_cv", step_time_cv, Domain(">=0", maximum=10)),
            ("stages", stages, Domain(">=1", integer=True, maximum=2**20)),
            ("microbatches", microbatches, Domain(">=1", integer=True, maximum=2**31)),
            ("sequence_slowdown", sequence_slowdown, Domain(">=1", maximum=1e6)),
            ("steps", steps, Domain(">=1", integer=True, maximum=10**7))):
        if not bool(domain.ok(value)):
            raise CapplanError(f"--{name.replace('_', '-')} must be {domain.text}, "
                               f"got {value:g}")

    import math

    from hardware_catalog import load_catalog
    from planner.analysis.stragglers import PRESETS, WhatIf, whatif_rows, with_model
    from planner.report.output import render, write

    given = {"step_time_s": step_time, "step_time_cv": step_time_cv, "model": model,
             "stages": stages, "microbatches": microbatches,
             "sequence_slowdown": sequence_slowdown,
             "gc_interval_s": math.inf if gc_interval is None else gc_interval,
             "gc_pause_s": gc_pause}
    flag_of = {"step_time_s": "step_time", "gc_interval_s": "gc_interval",
               "gc_pause_s": "gc_pause"}
    if preset is not None:
        if preset not in PRESETS:
            raise choice_error("preset", preset, PRESETS)
        for key, value in PRESETS[preset].items():  # typed flags win over the preset
            source = ctx.get_parameter_source(flag_of.get(key, key))
            if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
                given[key] = value
    cat = load_catalog(tuple(catalog or ()))
    m = cat.model(given["model"])
    what = with_model(WhatIf(step_time_s=given["step_time_s"],
                             step_time_cv=given["step_time_cv"],
                             gc_interval_s=given["gc_interval_s"], gc_pause_s=given["gc_pause_s"],
                             gc_every_steps=gc_every_steps, slow_node_fraction=slow_nodes,
                             slow_node_slowdown=slow_node_slowdown, stages=given["stages"],
                             microbatches=given["microbatches"],
                             sequence_slowdown=given["sequence_slowdown"]),
                      m, lm_head=lm_head, extra_layers=stage_imbalance)
    rows = whatif_rows(what, counts, simulate=simulate, steps=steps, seed=seed)
    setting = {"preset": preset, "model": m.id, **{k: v for k, v in given.items()
                                                    if k != "model"},
               "gc_every_steps": gc_every_steps, "slow_nodes": slow_nodes,
               "slow_node_slowdown": slow_node_slowdown,
               "last_stage_extra_layers": what.last_stage_extra_layers,
               "layers": what.layers}
    payload = {"setting": setting, "rows": rows,
               "source": "Lin et al., Understanding Stragglers in Large Model Training Using "
               "What-if Analysis, OSDI'25, arXiv:2505.05713 (waste = 1 - 1/slowdown)",
               "simulated": {"steps": steps, "seed": seed} if simulate else None,
               "version": version()}
    title = (f"Share of GPU-hours wasted by stragglers ({m.id}, {given['stages']} stages, "
             f"{given['step_time_s']:g} s steps" + (f"; preset {preset}" if preset else "")
             + ")")
    write(render(rows, format, title=title, payload=payload), output, force)
