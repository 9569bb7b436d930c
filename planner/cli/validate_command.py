"""``capplan validate``: predict every published measurement, report the errors."""

from __future__ import annotations

import typer

from planner.cli.common import ForceOption, FormatOption, OutputOption, output_format
from planner.errors import CapplanError
from planner.version import version


def validate(
    dataset: list[str] = typer.Option(None, "--dataset", "-d",
                                      help="Dataset name(s), repeatable or comma list; "
                                      "default all."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    plot_file: str = typer.Option(None, "--plot", help="Draw predicted vs measured to "
                                  "FILE.png or FILE.svg (needs matplotlib)."),
    write_docs: bool = typer.Option(False, "--write-docs",
                                    help="Regenerate docs/validation.md and docs/validation.png."),
    with_checks: bool = typer.Option(False, "--checks",
                                     help="Also report the memory, reliability, throughput and "
                                     "energy checks (a table each; a 'checks' key in JSON)."),
    lofo: bool = typer.Option(False, "--lofo",
                              help="Also the cross-validated errors: the calibration refitted "
                              "without each model family, each source and each accelerator "
                              "generation (precomputed for the shipped catalog; with another "
                              "catalog ~30 s the first time, then cached), and every "
                              "speedup pair; always with --write-docs."),
    whole_runs: bool = typer.Option(False, "--whole-runs",
                                    help="Instead: whole published training runs (BLOOM, OPT, "
                                    "LLaMA, Llama 2, Llama 3, OLMo) predicted from user options vs their "
                                    "published GPU-hours, days, energy, CO2e and interruptions; "
                                    "--plot draws the ratios, --write-docs writes "
                                    "docs/whole-runs.md (not with -d, --lofo, --checks)."),
):
    """Predict every published measurement with the catalog's parameters; report errors."""

    format = output_format(format, output)
    if whole_runs:
        ignored = [flag for flag, given in (("--dataset", bool(dataset)), ("--lofo", lofo),
                                            ("--checks", with_checks)) if given]
        if ignored:
            one = len(ignored) == 1
            raise CapplanError(f"--whole-runs compares whole published runs, not the datasets: "
                               f"{', '.join(ignored)} {'does' if one else 'do'} not apply to "
                               f"it; drop {'it' if one else 'them'}, or drop --whole-runs")
    from planner.analysis import validate as v
    from planner.analysis.crossval import prior_rows, speedup_pairs, speedup_summary
    from planner.report import validation as report
    from planner.report.output import render, write
    from planner.report.validation import (
        checks,
        crossval_rows,
        loao_speedup_pairs,
        modern_group_rows,
        plot,
        run,
        speedup_rows,
        speedup_summary_rows,
        table_rows,
    )

    names = v.resolve_names(dataset)
    if plot_file and not plot_file.lower().endswith((".png", ".svg")):
        raise CapplanError(f"--plot needs a .png or .svg file name, got '{plot_file}'")
    if plot_file:
        from planner.report.output import check_target

        check_target(plot_file, force)
    if write_docs:
        from planner.report.validation import DOCS

        if not (DOCS.parent / "pyproject.toml").is_file():
            raise CapplanError(
                "--write-docs regenerates docs/ of a source checkout; this capplan is installed "
                f"at {DOCS.parent} (no pyproject.toml there): run it from a git clone")
    if whole_runs:
        _whole_runs(format, output, force, plot_file, write_docs)
        return
    pred, summary = run(names, lofo=lofo or write_docs)
    if plot_file:
        plot(pred, plot_file)
    extra = checks() if (write_docs or with_checks) else None
    if write_docs:
        full = set(names) == set(v.DATASETS)
        report.write_docs(pred=pred if full else None, summary=summary if full else None,
                          extra=extra)
    from hardware_catalog import load_catalog

    pairs = speedup_pairs(pred)
    loao_pairs = loao_speedup_pairs(pred)
    speedup = {"summary": speedup_summary(pairs), "pairs": pairs}
    if loao_pairs is not None:
        speedup["generation_left_out_summary"] = speedup_summary(loao_pairs)
    payload = {"datasets": summary, "version": version(),
               "catalog_version": load_catalog().version, "speedup": speedup}
    text = render(table_rows(summary), format, title="capplan validate: predicted vs measured",
                  payload=payload | ({"checks": extra} if with_checks else {}), width=160)
    for name in ("modern-runs", "independent-runs", "moe-runs", "finetune-runs"):
        groups = modern_group_rows(summary, name)
        if groups and format in ("table", "markdown"):
            text += "\n" + render(groups, format, title=f"{name}: MAPE per group", width=160)
    if format in ("table", "markdown"):
        text += "\n" + render(speedup_summary_rows(pairs, loao_pairs), format, width=160, title=(
            "speedup-ratio error: predicted / published throughput ratio - 1 of a workload "
            "on two accelerators" + ("" if lofo else " (--lofo lists the pairs)")))
    if lofo and format != "json":
        for title, rows in (("cross-validation: MAPE with the calibrated catalog and with "
                             "family / source / accelerator generation left out",
                             crossval_rows(summary)),
                            ("leave-one-accelerator-out: each generation's own parameters, "
                             "calibrated and the prior a refit without it starts from",
                             prior_rows()),
                            ("speedup pairs (worst first)",
                             speedup_rows(pairs, cases=format != "table"))):
            text += ("\n" if format != "csv" else "") + render(rows, format, title=title,
                                                                width=160)
    if with_checks and format != "json":
        text += "".join(("\n" if format != "csv" else "") + render(rows, format, title=name,
                                                                    width=160)
                        for name, rows in extra.items())
    write(text, output, force)


def _whole_runs(format: str, output, force: bool, plot_file, write_docs: bool) -> None:
    """``validate --whole-runs``: the table, JSON, plot and docs of the whole-run dataset."""
    from planner.cli.evaluated_runs import compare
    from planner.report import whole_runs_report as report
    from planner.report.output import render, write

    rows = compare()
    if plot_file:
        report.plot(rows, plot_file)
    if write_docs:
        report.write_docs(rows)
    payload = report.payload(rows) | {"version": version()}
    terminal = format == "table"
    shown = report.payload(rows)["whole_runs"] if format == "csv" else \
        report.table_rows(rows, inline=not terminal)  # csv: the numbers unrounded
    text = render(shown, format,
                  title="capplan validate --whole-runs: predicted vs published (runs as phases)",
                  payload=payload, width=160)
    if terminal:
        text += "Missing terms (why a ratio is outside 0.75-1.33x):\n" + report.footnotes(rows)
    write(text, output, force)
