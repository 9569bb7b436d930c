"""Options every command shares, declared once: output format, output file, --force.

``FormatOption``/``OutputOption``/``ForceOption`` are ``Annotated`` types a command
uses as parameter annotations; :func:`output_format` is the one format check.
"""

from __future__ import annotations

from enum import Enum
from pathlib import PurePath
from typing import Annotated

import typer

from planner.cli.numbers import si_count, si_float
from planner.errors import CapplanError
from planner.report import output as sink

#: Click context settings of every command and group.
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Format(str, Enum):
    """Output formats of every command."""

    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


FORMATS = tuple(f.value for f in Format)


#: Notices for stderr (e.g. which layout evaluate chose), shown when the command succeeds;
#: an error is then the only line on stderr.  :func:`planner.cli.main.main` flushes them.
pending_notices: list[str] = []


def notice(message: str) -> None:
    """Queue one line for stderr, printed if the command succeeds."""
    pending_notices.append(message)


def flush_notices(show: bool) -> None:
    """Print (``show``) or drop the queued notices."""
    import sys

    if show:
        for message in pending_notices:
            print(f"capplan: {message}", file=sys.stderr)
    pending_notices.clear()


def write_report(report, output: str | None, force: bool) -> None:
    """Write a command's report (:class:`planner.report.output.Report`): its notices
    queued for stderr, its text to ``output`` (stdout: '-' or None) and its figure, both or
    neither; then its ``finish`` (exit 1 when no plan met the constraints)."""
    for line in report.notices:
        notice(line)
    with sink.committed_together(force):  # -o and --plot together or not at all
        if report.written or output in (None, "-"):
            sink.write(report.text, output, force)
        if report.figure is not None:
            report.figure(force)
    report.finish()


def check_output_targets(output: str | None, force: bool, plot: str | None = None) -> None:
    """Fail now, before any work, if ``-o`` or ``--plot`` cannot be written: a command
    never writes one file and then fails on the other."""
    if output not in (None, "-"):
        from planner.report.output import check_target

        check_target(output, force)
    if plot:
        from planner.report.plot import check_target as check_plot_target

        check_plot_target(plot, force)


def command_group(name: str, help: str) -> typer.Typer:
    """A group of subcommands (``capplan catalog list|show`` ...), registered in app.py."""
    return typer.Typer(name=name, help=help, no_args_is_help=True, rich_markup_mode=None,
                       context_settings=CONTEXT)
#: File extensions that choose a format when ``--format`` is not given.
EXTENSION_FORMATS = {".json": "json", ".csv": "csv", ".md": "markdown", ".markdown": "markdown"}
#: Extensions of files that ``-o`` (text: table, JSON, CSV, Markdown) cannot write, and
#: what writes them instead.
_WORKBOOK = "for a live workbook: capplan export xlsx FILE"
_FIGURE = "for a figure: --plot FILE (plan, sweep, checkpoint, sensitivity) or capplan plot"
NOT_TEXT_EXTENSIONS = {
    **dict.fromkeys((".xlsx", ".xlsm", ".xls", ".ods"), _WORKBOOK),
    **dict.fromkeys((".png", ".svg", ".pdf", ".jpg", ".jpeg", ".gif", ".webp", ".tif",
                     ".tiff", ".eps", ".ps"), _FIGURE),
    **dict.fromkeys((".html", ".htm", ".docx", ".pptx", ".parquet", ".feather", ".pkl",
                     ".pickle", ".npy", ".npz", ".h5", ".hdf5", ".zip", ".gz", ".bz2",
                     ".xz"), ""),
}

FormatOption = Annotated[str, typer.Option(
    "--format", "-f", help="table | json | csv | markdown (default: from the -o file's "
    "extension, else table).")]
OutputOption = Annotated[str, typer.Option(
    "--output", "-o", help="Write to FILE ('-' = stdout).")]
ForceOption = Annotated[bool, typer.Option(
    "--force", help="Overwrite an existing output file.")]


# -- run options several commands share (defaults stay with each command) -------------------
ModelOption = Annotated[str, typer.Option("--model", "-m", help="Model id, TOML file or Hugging Face config.json.")]
TokensOption = Annotated[float, typer.Option(
    parser=si_float, help="Training tokens D (15T = 15e12; suffixes k, M, G/B, T, P).")]
GlobalBatchOption = Annotated[int, typer.Option(
    parser=si_count, help="Global batch [sequences] (default ~16M tokens: a power of two, "
    "rounded to whole micro-batches per DP rank where the sizes given fix DP).")]
SiteOption = Annotated[str, typer.Option(help="Site id (electricity price, grid carbon).")]
SiteClassOption = Annotated[str, typer.Option(
    help="Class of data centre, which sets the PUE: hyperscale (1.10) | hpc (1.2) | "
    "colocation (1.4) | enterprise (1.58), `capplan catalog list site_classes`; 'site' for "
    "the site entry's own regional PUE.")]
SitesOption = Annotated[str, typer.Option(
    "--site", help="Site id (electricity price, grid carbon); plan takes several, a,b,c or "
    "all, and ranks them.")]
PrecisionOption = Annotated[str, typer.Option(
    help="GEMM precision recipe (hardware_catalog/data/precisions/recipes.csv): bf16 | fp16 | "
    "fp8 | fp8-cs | fp8-ds | fp8-block | fp8-rowwise | fp8-rowwise-gw-hp | mxfp8 | fp8-mx | fp6 | "
    "mxfp6 | fp4 | nvfp4 | mxfp4 | "
    "nvfp4-bf16-tail | int8 | fp8-hpu | tf32 (each where the accelerator has its peak; int8 "
    "with a stack that trains in int8, e.g. maxtext-xla; fp4 and nvfp4 every layer, as the "
    "frameworks default; nvfp4-bf16-tail keeps the final ~15 % of the layers in BF16; fp8-hpu, "
    "Intel Gaudi's default, the MLP down-projection; fp8-rowwise, torchao's row-wise "
    "scaled FP8 at a lower GEMM rate; fp8-rowwise-gw-hp, the same with the weight "
    "gradients in BF16).")]
GpusPerNodeOption = Annotated[int, typer.Option(
    help="GPUs per node (default: the accelerator's node); NIC bandwidth per GPU is kept.")]
NicGbpsOption = Annotated[float, typer.Option(
    help="Scale-out (NIC) bandwidth per GPU, one direction [Gb/s] (DGX H100: 400).")]
ScaleUpDomainOption = Annotated[int, typer.Option(
    help="GPUs per scale-up (NVLink/xGMI) domain (default: the accelerator's).")]
OversubscriptionOption = Annotated[float, typer.Option(
    help="Scale-out oversubscription R above a pod (1 = non-blocking; Llama 3: 7).")]
NetworkOption = Annotated[str, typer.Option(
    help="Site network from a catalog node id or file (its GPUs per node, NICs, pod and "
    "oversubscription; e.g. llama3-roce-24k); the flags below override it.")]
PodGpusOption = Annotated[int, typer.Option(
    help="GPUs under one non-blocking pod; above it the fabric is 1:R (Llama 3: 3072).")]
StackOption = Annotated[str, typer.Option(
    help="Software stack id (communication overlap, attention kernel, launch overhead; "
    "'capplan catalog list stacks'), e.g. megatron-core-2025, megatron-lm-2021, "
    "torchtitan-fsdp2. Left out: the accelerator's own for the model: maxtext-xla on "
    "TPUs; megatron-core-moe-tuned for an MoE model; megatron-bridge-2025 (whole-iteration "
    "CUDA graphs) for a dense one on Blackwell; else megatron-core-2025.")]
CheckpointOption = Annotated[str, typer.Option(help="sync | async | in-memory | gockpt.")]
CatalogOption = Annotated[list[str], typer.Option(
    "--catalog", help="Extra catalog directory (repeatable); adds or overrides entries by id.")]
PricesOption = Annotated[list[str], typer.Option(
    "--prices", help="A CSV of your own price quotes (repeatable; the columns of "
    "hardware_catalog/data/prices/gpu_cloud_prices.csv): for each accelerator it lists, its "
    "rows replace the market data.")]
PricingOption = Annotated[str, typer.Option(
    help="Price tier: on-demand | spot | reserved-1y | reserved-3y | owned "
    "(owned = TCO cost basis).")]
ProviderOption = Annotated[str, typer.Option(
    help="Cloud provider priced: median (of non-marketplace providers) | cheapest | "
    "a provider name (see `capplan prices list`).")]
SpotInterruptionOption = Annotated[str, typer.Option(
    help="With --pricing spot: preemptions per instance and month, an AWS Spot Advisor "
    "bucket lt5 | 5-10 | 10-15 | 15-20 | gt20, or a fraction in (0, 1).")]

# -- failure domains, hot spares and software stragglers (planner/cli/fault_options.py) -----
SparesOption = Annotated[str, typer.Option(
    help="Hot-spare nodes reserved for the job: a count, or auto (the count that "
    "minimises billed GPU-hours, per candidate).")]
GcIntervalOption = Annotated[float, typer.Option(
    help="Unplanned garbage collection: mean seconds between collections on one rank "
    "(default: none beyond the reliability profile's pauses).")]
GcPauseOption = Annotated[float, typer.Option(help="Length of one garbage collection [s].")]
GcEveryStepsOption = Annotated[int, typer.Option(
    help="Planned GC: every rank collects together every K steps (replaces unplanned GC).")]
StageImbalanceOption = Annotated[float, typer.Option(
    help="Extra work on the slowest pipeline stage, in transformer-layer equivalents "
    "(uneven partitions; the LM head is already counted).")]
SlowNodesOption = Annotated[float, typer.Option(
    help="Share of nodes that are slow, in [0, 1].")]
SlowNodeSlowdownOption = Annotated[float, typer.Option(
    help="Step-time factor of a slow node, >= 1.")]
# -- checkpoint interval and run overheads (formulas.overhead; planner/engine/inputs/execution.toml) --
CheckpointIntervalOption = Annotated[float, typer.Option(
    parser=si_float,
    help="Fix the checkpoint interval [s] (SI suffixes: 3.6k = 3600) instead of Daly's "
    "optimum: 0 (default) is the optimum, else at least 1 s; never shorter than one step.")]
EvalOverheadOption = Annotated[float, typer.Option(
    help="Evaluation time per unit of training time, in [0, 1) (default 0.01, an estimate; "
    "docs/model.md).")]
MaintenanceOption = Annotated[float, typer.Option(
    help="Share of calendar time the cluster is down for planned maintenance, in [0, 1) "
    "(default 0: in the failure rates).")]
LossSpikesOption = Annotated[float, typer.Option(
    parser=si_float,
    help="Loss spikes needing a rollback per million steps (default 78.4, PaLM "
    "arXiv:2204.02311 s5.1; 0 for a stable recipe).")]
RollbackStepsOption = Annotated[float, typer.Option(
    help="Steps redone per loss-spike rollback (default 100, PaLM).")]
OffloadActivationsOption = Annotated[bool, typer.Option(
    "--offload-activations/--no-offload-activations",
    help="Keep each layer's input in host memory between its forward and backward "
    "(activation offloading, as MaxText's decoder_layer_input=offload or Megatron-Core's "
    "--cpu-offloading): device memory holds two layers' inputs, the copies run over the "
    "host link beside the compute (default: off).")]
OptimizerBytesOption = Annotated[float, typer.Option(
    help="Optimizer-state bytes per trained parameter, beside its 16-bit weight and gradient "
    "(default: the stack's; 12: FP32 master weights and two FP32 Adam moments; 8: BF16 "
    "moments, as DeepSeek-V3; 4: BF16 moments and no FP32 copy, as MaxText's weight_dtype "
    "bfloat16; 0: no state, e.g. SGD).")]
CommitmentReuseOption = Annotated[float, typer.Option(
    help="With --pricing reserved-1y/-3y: share of the committed term the job leaves unused "
    "that you resell or reuse, in [0, 1] (default 0: the whole term is paid for).")]


def output_format(fmt: str | None, output: str | None = None, allowed=FORMATS) -> str:
    """The format to write: ``fmt`` if given (checked), else the ``-o`` file's extension.

    An ``-o`` file whose extension names a format no command writes as text (``.xlsx``,
    ``.png`` ...) is refused with what writes it, rather than written as a text table.
    """
    _check_text_extension(output, allowed)
    if fmt is None:
        suffix = PurePath(output).suffix.lower() if output not in (None, "-") else ""
        fmt = EXTENSION_FORMATS.get(suffix, "table")
        return fmt if fmt in allowed else allowed[0]
    if fmt not in allowed:
        import difflib

        close = difflib.get_close_matches(fmt, allowed, n=1)
        hint = f"; did you mean: {close[0]}?" if close else ""
        raise CapplanError(f"unknown format '{fmt}'; allowed: {', '.join(allowed)}{hint}")
    return fmt


def _check_text_extension(output: str | None, allowed) -> None:
    if output in (None, "-"):
        return
    suffix = PurePath(output).suffix.lower()
    if suffix not in NOT_TEXT_EXTENSIONS:
        return
    from planner.errors import shown

    names = {"table": ".txt", "json": ".json", "csv": ".csv", "markdown": ".md"}
    kinds = ", ".join(f"{f} ({names[f]})" if f in names else f for f in allowed)
    hint = NOT_TEXT_EXTENSIONS[suffix]
    raise CapplanError(f"-o {shown(str(output))}: this command cannot write {suffix} files; "
                       f"-o writes text: {kinds}" + (f"; {hint}" if hint else ""))


# -- where a search runs (planner.engine.search.distributed) ----------------------------------------
SchedulerOption = Annotated[str, typer.Option(
    "--scheduler", help="Where the search runs: in-process (default) | processes | threads | "
    "tcp://HOST:PORT (a running Dask scheduler); all but in-process need capplan[dask]. "
    "Results are the same on every scheduler.")]
WorkersOption = Annotated[int, typer.Option(
    "--workers", help="Threads of the in-process search, or worker processes (processes) or "
    "threads (threads) of the local Dask cluster (default: the number of cores; 1: one "
    "thread).")]
