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
    ("opt-175b", "wall_days"):
        "capplan's steps, checkpoints, failures and loss-spike rollbacks take 36 days: "
        "automatic restarts of 1 h, and 35 % of failures restarted by hand after 8 h (the "
        "paper's '>=35 manual restarts' per '>100 hosts cycled'; 8 h is BLOOM's, the only "
        "published manual-restart time). The team's own estimate was '~33 days of continuous "
        "training ... assuming no hardware issues, no numerical instabilities' (final "
        "update). The chronicles' milestones (10 % on Nov 17, 27 % Dec 3, 56 % Dec 16, done "
        "Jan 6) show the run advancing at 35-74 % of that estimate in every period, even "
        "with a buffer pool of spare hosts: hours-long cloud host replacement, blob-store "
        "hangs on restart, the Thanksgiving 'big holes', the cluster deleted on Dec 21, "
        "restarts from earlier checkpoints with lowered learning rates. OPT publishes no "
        "time per restart; a longer one would be fitted to this row's own calendar, so the "
        "opt-175b profile keeps BLOOM's 8 h and its own 1 h estimate",
    ("olmo1-7b", "energy_gpu_mwh"):
        "measured GPU energy is ~1.7x what capplan's steps, evaluations (1 %), checkpoints "
        "and failures draw. Checked: the run's stack (PyTorch FSDP: llm-foundry-2023, MFU "
        "46 %, not the Megatron-Core default's 64 %) and the GPU power: capplan's A100-40GB "
        "draws 288 W during steps (72 % of its 400 W TDP); at TDP the ratio would be ~0.83, "
        "but no per-GPU power is published for this run. Left: what the measured energy "
        "includes beyond training steps (in-loop downstream evaluations, restarts, GPUs "
        "powered while the job is down) is not published",
    ("olmo2-7b", "energy_gpu_mwh"):
        "measured 131 MWh at the >600 W per GPU OLMo 2 logged while training "
        "(reliability.csv olmo-power) means ~36 days on 256 GPUs; capplan's steps at "
        "OLMo-core's published throughput (torchtitan-fsdp2 stack: 9,804 vs 9,850 tokens/s "
        "per GPU, validate --checks) take ~23. But OLMo 2 7B and 13B were trained with the "
        "original OLMo trainer: OLMo-core was written afterwards, for OLMo 2 32B "
        "(allenai.org/blog/olmo2-32B), and the old trainer's throughput on this run is not "
        "published. The config also evaluates 30+ full downstream tasks every 1,000 steps "
        "(configs/official-1124/OLMo2-7B-stage1.yaml) at a cost not published",
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
                    "P10-P90": f"{r['p10']:,.3g}-{r['p90']:,.3g}",
                    "ratio": f"{r['ratio']:.2f}", "in 0.75-1.33": "yes" if r["in_target"] else "no",
                    "in P10-P90": "yes" if r["in_band"] else "no",
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
    phases = {r["run"]: r["phases"] for r in rows}
    return {"whole_runs": explained, "summary": w.summary(rows), "phases_per_run": phases}


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
    markers = dict(zip(quantities, "osD^v<>PX", strict=True))
    runs = list(dict.fromkeys(r["run"] for r in rows))
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    ax.axhspan(*w.TARGET, color="tab:green", alpha=0.12, label="target 0.75-1.33x")
    ax.axhline(1.0, color="k", lw=0.8)
    for quantity in quantities:
        mine = [r for r in rows if r["quantity"] == quantity]
        if mine:
            offset = (quantities.index(quantity) - 4) * 0.05
            x = [runs.index(r["run"]) + offset for r in mine]
            y = [r["ratio"] for r in mine]
            # the P10-P90 band of the prediction, over the published value
            low = [r["ratio"] - r["p10"] / r["published"] for r in mine]
            high = [r["p90"] / r["published"] - r["ratio"] for r in mine]
            colour = f"C{quantities.index(quantity)}"
            ax.errorbar(x, y, yerr=[low, high], fmt="none", lw=0.9, capsize=2, color=colour)
            ax.scatter(x, y, s=36, marker=markers[quantity], label=quantity, color=colour)
    ax.set_yscale("log")
    ax.set_ylim(0.3, 3.0)
    ax.set_yticks([0.33, 0.5, 0.75, 1.0, 1.33, 2.0, 3.0])
    ax.set_yticklabels(["0.33", "0.5", "0.75", "1", "1.33", "2", "3"])
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(runs, rotation=20)
    ax.set_ylabel("predicted / published")
    ax.set_title("Whole training runs: capplan (runs as phases, catalog parameters) vs "
                 "published;\nbars: the prediction's P10-P90 under the default uncertainty "
                 "model", fontsize=10)
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
--seq-len --recompute --zero --stack --tokens --reliability --site --site-class --checkpoint`,
`--nic-gbps` for a thinner site network, and a model file's vocabulary); `--stack` is the
software the run used (Megatron-DeepSpeed and metaseq: `megatron-lm-2021`; OLMo's PyTorch
FSDP: `llm-foundry-2023`, `torchtitan-fsdp2`). No row has a
correction factor: every parameter is the catalog's, shared by all runs.

**Runs as phases.** A row's `phases` column names a scenario file under
`docs/scenarios/whole-runs/` whose `[[phases]]` (batch ramp-up, a first stage on fewer GPUs,
context extension) and `[faults]` (a published checkpoint interval) are the run's, each with
its source; the row is evaluated exactly as `capplan evaluate --scenario FILE` with the row's
options as flags, and its totals are the sums of its phases. A blank `phases` is one phase
of the row's tokens at its layout and batch. Published totals include time capplan does not
model (manual restarts that take hours, restarts from earlier checkpoints after divergence,
evaluations whose cost is not published); the `missing term` column says what, for every
ratio outside 0.75-1.33x.

## The quantities

| quantity | predicted as | published as |
|---|---|---|
| `gpu_hours` | (GPUs + hot-spare GPUs) x wall time (Llama 3's phases keep 10-16 spare nodes, <1 % of its GPUs; no other row has spares) | GPU-hours of the run (BLOOM README, Llama 3.1 and Llama 2 model cards, LLaMA Table 15) |
| `wall_days` | steady-state steps + checkpoint stalls + expected failures x (restart + lost work) + evaluations + loss-spike rollbacks, at the Young/Daly interval or the run's published one (`[faults] checkpoint_interval`) | calendar days from launch to the last step |
| `energy_gpu_mwh` | GPU energy: step power (compute phases weighted) x step time + idle power through stalls and restarts | OLMo: measured GPU power |
| `energy_gpu_tdp_mwh` | GPU-hours x the accelerator's TDP (the authors' estimate, made from capplan's GPU-hours) | BLOOM: 1,082,990 GPU-h x 400 W (Luccioni et al. Table 1) |
| `energy_gpu_tdp_compute_mwh` | failure-free compute GPU-hours (steps only) x TDP | OPT: 324 MWh (Luccioni et al. 2023 Table 4) = 1,024 GPUs x 400 W x the chronicles' '~33 days of continuous training' |
| `energy_total_mwh` | facility energy: (GPUs + the rest of the nodes at measured average draw + network) x the site class's PUE | BLOOM: 690 MWh with the idle infrastructure (Luccioni et al. Table 1) |
| `co2e_t` | operational (facility energy x the site's grid intensity) + embodied carbon | BLOOM: 50.5 t incl. idle and embodied |
| `co2e_operational_t` | facility energy x the site's grid intensity | Llama 3.1 405B: 8,930 t location-based (OPT's 75 t is 324 MWh x a grid of 231 g/kWh that OPT's authors do not publish: not compared, its energy is) |
| `interruptions` | expected failures of the reliability profile over the run (or the window the source counts, at the rate of the phase it counts in) | BLOOM: ~1 GPU death a week; OPT: >100 hosts cycled in ~2 months (35 of each 100 restarted by hand: the opt-175b profile's `manual_restart_fraction`); Llama 3: 419 unexpected in a 54-day snapshot of the 16,384-GPU phase |

Each run's sources and what it cannot express are in the CSV's `source` and `notes`
columns.
"""


BAND_TEXT = """`P10-P90` is the prediction's band under the default uncertainty model
(`planner/analysis/uncertainty.toml`: lognormal factors on efficiencies, bandwidths, failure rates,
power, prices; one set of factors per draw for every phase, the phases summed per draw, as
`capplan evaluate --scenario FILE --uncertainty` draws them). It is the spread of capplan's
inputs, not of what the model leaves out: a published value outside it with a ratio
outside 0.75-1.33x is a missing term, not bad luck.

"""


def docs_text(rows: list[dict]) -> str:
    """docs/whole-runs.md."""
    s = w.summary(rows)
    body = render(table_rows(rows), "markdown", title=None, width=400)
    return (INTRO + "\n## Predicted vs published\n\n"
            + f"{s['in_target']} of {s['compared']} published quantities within "
            + f"{s['target'][0]}-{s['target'][1]}x; geometric-mean error "
            + f"{s['geomean_abs_error']:.0%}. {s['in_p10_p90']} of {s['compared']} "
            + "published values inside the prediction's P10-P90 band (the default "
            + "uncertainty model, 400 draws, seed 0; a calibrated model would hold ~80 %)."
            + "\n\n" + BAND_TEXT + body.rstrip() + "\n\n"
            + "![predicted / published per run](whole-runs.png)\n")


def write_docs(rows: list[dict], *, check: bool = False) -> int:
    """Write docs/whole-runs.md and docs/whole-runs.png from the compared ``rows``
    (:func:`planner.cli.evaluated_runs.compare`); with ``check`` return 1 if stale."""
    code = write_or_check(DOCS / "whole-runs.md", docs_text(rows), check=check,
                          command="python -m planner.codegen")
    if not check:
        plot(rows, str(DOCS / "whole-runs.png"))
    return code
