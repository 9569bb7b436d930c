"""Tables, plot and docs page of ``capplan validate --whole-runs``
(:mod:`planner.analysis.whole_runs`)."""

from __future__ import annotations

from planner.analysis import whole_runs as w
from planner.errors import CapplanError
from planner.report.output import render, save_figure, write_or_check

DOCS = w.DATA.parents[3] / "docs"

#: Why a ratio falls outside :data:`planner.analysis.whole_runs.TARGET`: the term of a whole
#: run that capplan does not model yet. Keyed by (run, quantity); a test requires one for
#: every ratio outside the band, so a new miss cannot go unexplained.
MISSING_TERMS = {
    ("bloom-176b", "energy_gpu_mwh"):
        "published energy is GPU-hours x 400 W TDP, not measured; capplan's GPUs draw a "
        "phase-weighted average below TDP and its wall time lacks the batch ramp and eval hangs",
    ("opt-175b", "wall_days"):
        "56 calendar days include the restarts from earlier checkpoints after loss spikes and "
        "divergence (the 12.xx lineage), learning-rate changes and hours-long cloud host "
        "replacement: rollbacks and manual restarts (issue 26 item 3)",
    ("opt-175b", "co2e_operational_t"):
        "the grid is not published (US average used); the published 75 t at 56 days implies "
        "a grid about 4x cleaner than the US average",
    ("opt-175b", "interruptions"):
        "the paper counts manual restarts (>=35); automatic recoveries (8 in one week alone, "
        "~90 restarts over the lineage per the chronicles) are not in that count; capplan's "
        "rate, ~2 per day, is the chronicles' '~2 machines down per day' (row opt-rate)",
    ("llama3-405b", "gpu_hours"):
        "steady steps at 290 TFLOP/s/GPU vs Table 4's 400: the row keeps the default "
        "non-interleaved pipeline (the paper uses an interleaved schedule but does not give V; "
        "--vp 2 gives 1.05x), and one phase at 16,384 GPUs where the run began on 8,192 at "
        "430 TFLOP/s with a smaller batch: phases (item 3)",
    ("olmo1-7b", "energy_gpu_mwh"):
        "measured GPU energy includes evaluations, restarts and idle GPU time outside "
        "training steps (evaluation overhead, item 3); steady-state steps alone are ~half",
    ("olmo2-7b", "energy_gpu_mwh"):
        "as olmo1-7b: evaluation, checkpoint and restart time outside steady steps (item 3)",
    ("olmo2-13b", "energy_gpu_mwh"):
        "as olmo1-7b: evaluation, checkpoint and restart time outside steady steps (item 3)",
}


def table_rows(rows: list[dict], *, inline: bool = True) -> list[dict]:
    """Readable rows: numbers with three significant figures, the ratio with two decimals;
    the missing term inline, or (``inline=False``) as a footnote number (:func:`footnotes`)."""
    out = []
    notes = 0
    for r in rows:
        why = "" if r["in_target"] else MISSING_TERMS.get((r["run"], r["quantity"]), "")
        if why and not inline:
            notes += 1
            why = f"[{notes}]"
        out.append({"run": r["run"], "quantity": f"{r['quantity']} [{r['unit']}]",
                    "published": f"{r['published']:,.3g}", "predicted": f"{r['predicted']:,.3g}",
                    "ratio": f"{r['ratio']:.2f}", "in 0.75-1.33": "yes" if r["in_target"] else "no",
                    "missing term": why})
    return out


def footnotes(rows: list[dict]) -> str:
    """The numbered missing terms of :func:`table_rows` with ``inline=False``."""
    whys = [MISSING_TERMS.get((r["run"], r["quantity"]), "") for r in rows if not r["in_target"]]
    return "".join(f"[{i}] {why}\n" for i, why in enumerate((x for x in whys if x), 1))


def payload(rows: list[dict]) -> dict:
    """The JSON of ``validate --whole-runs``: the rows (with the missing term) and a summary."""
    explained = [r | {"missing_term": None if r["in_target"]
                      else MISSING_TERMS.get((r["run"], r["quantity"]))} for r in rows]
    return {"whole_runs": explained, "summary": w.summary(rows), "phases_per_run": 1}


def plot(rows: list[dict], path: str) -> None:
    """Ratio predicted/published per run and quantity, log axis, the target band shaded."""
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CapplanError("matplotlib is not installed; pip install 'capplan[plot]'") from exc

    quantities = list(w.QUANTITIES)
    markers = dict(zip(quantities, "osD^vPX", strict=True))
    runs = list(dict.fromkeys(r["run"] for r in rows))
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    ax.axhspan(*w.TARGET, color="tab:green", alpha=0.12, label="target 0.75-1.33x")
    ax.axhline(1.0, color="k", lw=0.8)
    for quantity in quantities:
        points = [(runs.index(r["run"]), r["ratio"]) for r in rows if r["quantity"] == quantity]
        if points:
            offset = (quantities.index(quantity) - 3) * 0.06
            ax.scatter([x + offset for x, _ in points], [y for _, y in points], s=36,
                       marker=markers[quantity], label=quantity)
    ax.set_yscale("log")
    ax.set_ylim(0.3, 3.0)
    ax.set_yticks([0.33, 0.5, 0.75, 1.0, 1.33, 2.0, 3.0])
    ax.set_yticklabels(["0.33", "0.5", "0.75", "1", "1.33", "2", "3"])
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(runs, rotation=20)
    ax.set_ylabel("predicted / published")
    ax.set_title("Whole training runs: capplan (one phase, catalog parameters) vs published")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save_figure(fig, path)


INTRO = """# Whole runs: predicted vs published

<!-- generated by `python -m planner.codegen --only whole-runs` (or `capplan validate
--whole-runs --write-docs`) from hardware_catalog/data/validation/whole_runs.csv; edit those,
not this file -->

`capplan validate --whole-runs` predicts published training runs end to end and compares
the totals their authors published. Each run is a row of
`hardware_catalog/data/validation/whole_runs.csv` written with options a user has
(`capplan evaluate --model --hardware --gpus --tp --pp --micro-batch --global-batch
--seq-len --recompute --zero --tokens --reliability --site --site-class --checkpoint`,
`--nic-gbps` for a thinner site network, and a model file's vocabulary). No row has a
correction factor: every parameter is the catalog's, shared by all runs.

**Every run is one phase for now.** The `phases` column is reserved for the phases of a run
(batch ramp, context extension, annealing) and is blank: each run is evaluated as its total
tokens at its final layout and batch. Published totals include time capplan does not model
yet (evaluations, rollbacks after loss spikes, manual restarts, maintenance); the
`missing term` column names it for every ratio outside 0.75-1.33x.

## The quantities

| quantity | predicted as | published as |
|---|---|---|
| `gpu_hours` | GPUs x wall time (the job's GPUs, spares not counted) | GPU-hours of the run (BLOOM README, Llama 3.1 model card) |
| `wall_days` | steady-state steps + checkpoint stalls + expected failures x (restart + lost work), at the Young/Daly interval | calendar days from launch to the last step |
| `energy_gpu_mwh` | GPU energy: step power (compute phases weighted) x step time + idle power through stalls and restarts | BLOOM: GPU-hours x 400 W TDP (an estimate); OLMo: measured GPU power |
| `energy_total_mwh` | facility energy: (GPUs + the rest of the nodes at measured average draw + network) x the site class's PUE | BLOOM: 690 MWh with the idle infrastructure (Luccioni et al. Table 1) |
| `co2e_t` | operational (facility energy x the site's grid intensity) + embodied carbon | BLOOM: 50.5 t incl. idle and embodied |
| `co2e_operational_t` | facility energy x the site's grid intensity | OPT: 75 t; Llama 3.1 405B: 8,930 t location-based |
| `interruptions` | expected failures of the reliability profile over the run (or the window the source counts) | BLOOM: ~1 GPU death a week; OPT: >=35 manual restarts; Llama 3: 419 unexpected in 54 days |

Each run's sources and what it cannot express are in the CSV's `source` and `notes`
columns.
"""


def docs_text(rows: list[dict]) -> str:
    """docs/whole-runs.md."""
    s = w.summary(rows)
    body = render(table_rows(rows), "markdown", title=None, width=400)
    return (INTRO + "\n## Predicted vs published\n\n"
            + f"{s['in_target']} of {s['compared']} published quantities within "
            + f"{s['target'][0]}-{s['target'][1]}x; geometric-mean error "
            + f"{s['geomean_abs_error']:.0%}.\n\n" + body.rstrip() + "\n\n"
            + "![predicted / published per run](whole-runs.png)\n")


def write_docs(*, check: bool = False, rows: list[dict] | None = None) -> int:
    """Write docs/whole-runs.md and docs/whole-runs.png; with ``check`` return 1 if stale."""
    rows = w.compare() if rows is None else rows
    code = write_or_check(DOCS / "whole-runs.md", docs_text(rows), check=check,
                          command="python -m planner.codegen")
    if not check:
        plot(rows, str(DOCS / "whole-runs.png"))
    return code
