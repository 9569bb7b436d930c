"""The checkpointing what-if: schemes x GPU counts x MTBFs, each cell one kernel run.

``capplan checkpoint`` asks what a faster checkpoint scheme is worth: for one model and
token budget, on homogeneous clusters of several sizes, it evaluates every checkpoint
scheme (``sync``, ``async``, ``in-memory``, ``gockpt``) through the same generated
kernel as ``plan`` and ``evaluate`` (no second copy of the scheme arithmetic): wall time,
goodput (ETTR), energy, cost, carbon and the energy spent on fault tolerance itself
(stalls, lost work, restarts, commit waits, idle hot spares), and what each scheme saves
against the asynchronous baseline.

Each GPU count runs its fastest layout that fits in memory (``plan``'s design space for
that many GPUs), found once with the baseline scheme and kept for every scheme and MTBF,
so that the cells differ only in fault tolerance.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

import numpy as np

from hardware_catalog import load_catalog
from planner.engine.inputs.defaults import stack_of
from planner.engine.inputs.domains import MAX_GPUS
from planner.engine.inputs.layout_rules import DEFAULT_RECOMPUTE, layout_arguments
from planner.engine.inputs.scenario import DEFAULTS, native_float16, stack_zero_stage
from planner.engine.layouts.evaluator import evaluate
from planner.engine.layouts.layout_check import best_layout
from planner.engine.layouts.space import RECOMPUTE_CODES, RECOMPUTE_NAMES
from planner.engine.run.readable import count_text
from planner.errors import CapplanError, shown

#: The schemes, in the order of the study; ``async`` is the baseline savings refer to.
SCHEMES = ("sync", "async", "in-memory", "gockpt")
BASELINE = "async"
#: Layout columns each cell carries (the layout is the same for every scheme of a count).
LAYOUT = ("tp", "pp", "cp", "ep", "vp", "dp", "micro_batch", "zero", "recompute")
#: Most cells one study may evaluate (each is one kernel call, ~1-5 ms).
MAX_CELLS = 20_000


@dataclass(frozen=True)
class Study:
    """What to evaluate: the job, the GPU counts, schemes and per-GPU MTBFs (SI units)."""

    model: str = "llama3.1-405b"
    hardware: str = "h100-sxm"
    gpus: tuple[int, ...] = (128, 1024, 4096, 16384)
    schemes: tuple[str, ...] = SCHEMES
    #: per-GPU MTBFs [s]; ``None``: the reliability profile's own
    gpu_mtbf_s: tuple[float | None, ...] = (None,)
    tokens: float | None = None
    reliability: str | None = None
    #: run-model inputs the flags set (planner.engine.run.model.INPUTS names, SI units)
    overrides: dict = field(default_factory=dict)


def parse_gpu_counts(text: str) -> tuple[int, ...]:
    """``128,1024,4096`` (a list) or ``128..16384`` (doubling from the first to the last).

    >>> parse_gpu_counts("128..1024")
    (128, 256, 512, 1024)
    >>> parse_gpu_counts("8, 64")
    (8, 64)
    """
    text = str(text).strip()
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split("..", 1))
            if not 1 <= low <= high:
                raise ValueError
            counts = []
            n = low
            while n <= high:
                counts.append(n)
                n *= 2
        else:
            counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or any(not 1 <= n <= MAX_GPUS for n in counts) or len(counts) > 64:
        raise CapplanError(f"--gpus takes whole GPU counts from 1 to {MAX_GPUS:,} as a list "
                           f"(128,1024,4096) or a doubling range (128..16384), got "
                           f"{shown(text)}")
    return tuple(dict.fromkeys(counts))


def parse_schemes(text: str) -> tuple[str, ...]:
    """``all`` or a comma list of :data:`SCHEMES`."""
    text = str(text).strip()
    if text == "all":
        return SCHEMES
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    for name in names or ("",):
        if name not in SCHEMES:
            close = difflib.get_close_matches(name, SCHEMES, n=1)
            raise CapplanError(f"--schemes {shown(name)} is not one of: {', '.join(SCHEMES)} "
                               f"(or all)" + (f"; did you mean: {close[0]}?" if close else ""))
    return names


#: What the study optimises at each GPU count (the layout every scheme is compared on).
OBJECTIVE = "fastest layout that fits in memory at each GPU count (time)"


def figure_title(study: Study) -> str:
    """Model, accelerator, tokens and objective of ``study``, for its figure's title."""
    tokens = DEFAULTS["tokens"] if study.tokens is None else study.tokens
    return (f"{study.model} on {study.hardware}, {count_text(tokens)} tokens, "
            f"objective: {OBJECTIVE}")


def run_study(study: Study, catalog=None) -> list[dict]:
    """One row per GPU count x MTBF x scheme (in that order), with the savings of each
    scheme against :data:`BASELINE` at the same count and MTBF."""
    cells = len(study.gpus) * len(study.schemes) * len(study.gpu_mtbf_s)
    if cells > MAX_CELLS:
        raise CapplanError(f"the study has {cells:,} cells (GPU counts x schemes x MTBFs); "
                           f"at most {MAX_CELLS:,} are evaluated: give fewer values")
    if catalog is None:
        catalog = load_catalog()
    # the part's own 16-bit recipe: the study has no precision option (V100: fp16)
    precision = native_float16(catalog.get("accelerator", study.hardware))
    common = dict(model=study.model, hardware=study.hardware, catalog=catalog,
                  tokens=DEFAULTS["tokens"] if study.tokens is None else study.tokens,
                  reliability=study.reliability or DEFAULTS["reliability"],
                  precision=precision, as_frame=False)
    rows = []
    for gpus in study.gpus:
        sizes = _fastest_fitting_layout(common, gpus, study.overrides)
        chosen = evaluate(**common, checkpoint=BASELINE,
                          overrides=dict(study.overrides), **sizes)
        layout = {k: chosen[k] for k in LAYOUT}
        for mtbf_s in study.gpu_mtbf_s:
            overrides = dict(study.overrides)
            if mtbf_s is not None:
                overrides["gpu_mtbf_s"] = mtbf_s
            cells = {scheme: evaluate(**common, checkpoint=scheme,
                                      overrides=overrides, return_inputs=True, **sizes)
                     for scheme in study.schemes}
            base = cells[BASELINE][0] if BASELINE in cells else None
            for scheme, (r, x) in cells.items():
                gpu_mtbf_s = float(np.ravel(x["gpu_mtbf_s"])[0])
                rows.append(_row(gpus, gpu_mtbf_s, scheme, layout, r, base))
    return rows


def _fastest_fitting_layout(common: dict, gpus: int, overrides: dict) -> dict:
    """The layout sizes of ``gpus`` GPUs with the shortest wall time among those that fit
    in memory (when none does, among those within the memory model's error; else the
    leanest), by ``plan``'s design-space enumeration (``best_layout``)."""
    _, x = evaluate(**common, gpus=gpus, checkpoint=BASELINE, overrides=dict(overrides),
                    return_inputs=True)
    x = {k: (float(np.ravel(v)[0]) if np.size(v) == 1 else v) for k, v in x.items()}
    catalog = common["catalog"]  # the study runs on the part's default stack for the model
    stack = stack_of(catalog, common["hardware"], None, common["model"])
    chosen = best_layout(x, int(gpus), {}, recompute=RECOMPUTE_CODES[DEFAULT_RECOMPUTE],
                         zero=stack_zero_stage(catalog.stack(stack)), sequence_parallel=None)
    if chosen is None:
        raise CapplanError(f"no layout of {gpus:,} GPUs obeys the rules for this model "
                           "(TP*PP*CP*DP = GPUs, DP*micro-batch dividing the global batch): "
                           "try other --gpus")
    return layout_arguments({**chosen, "recompute": RECOMPUTE_NAMES[int(chosen["recompute"])]})


def _row(gpus: int, mtbf_s, scheme: str, layout: dict, r, base) -> dict:
    for name in ("wall_time_s", "energy_facility_j", "cost_usd", "co2e_kg"):
        if not math.isfinite(r[name]):
            raise CapplanError(
                f"with the {scheme} scheme on {gpus:,} GPUs the run never finishes in "
                f"expectation (system MTBF {r['system_mtbf_s'] / 3600:.3g} h against a "
                f"{r['checkpoint_stall_s']:.3g} s checkpoint stall and a "
                f"{r['restart_s']:.3g} s restart): raise the MTBF or the bandwidths, or "
                "lower the restart time")
    row = {
        "gpus": gpus, "scheme": scheme,
        "gpu_mtbf_hours": mtbf_s / 3600,
        **layout, "fits": bool(r["fits"]),
        "step_time_s": r["step_time_s"],
        "checkpoint_bytes": r["checkpoint_bytes"],
        "stall_s": r["checkpoint_stall_s"],
        "checkpoint_steps": r["checkpoint_steps"],
        "interval_s": r["checkpoint_interval_s"],
        "young_interval_s": r["young_interval_s"],
        "commit_latency_s": r["commit_latency_s"],
        "restart_s": r["restart_s"],
        "system_mtbf_s": r["system_mtbf_s"],
        "expected_failures": r["expected_failures"],
        "wall_days": r["wall_days"],
        "ettr": r["ettr"],
        "energy_mwh": r["energy_mwh"],
        "fault_tolerance_mwh": r["energy_fault_tolerance_j"] / 3.6e9,
        "cost_usd": r["cost_usd"],
        # the cost is proportional to the wall time: its share beyond the failure-free run
        # (the run overheads, evaluations, rollbacks and maintenance, left out)
        "fault_tolerance_usd": r["cost_usd"] * (
            r["wall_time_s"] - r["solve_time_s"] - r["eval_time_s"] - r["rollback_time_s"]
            - r["maintenance_time_s"]) / r["wall_time_s"],
        "co2e_t": r["co2e_t"],
    }
    if base is not None:
        row["days_saved_vs_async"] = base["wall_days"] - r["wall_days"]
        row["mwh_saved_vs_async"] = base["energy_mwh"] - r["energy_mwh"]
        row["usd_saved_vs_async"] = base["cost_usd"] - r["cost_usd"]
        row["co2e_t_saved_vs_async"] = base["co2e_t"] - r["co2e_t"]
    return row
