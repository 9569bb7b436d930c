"""The writers of ``python -m planner.codegen``, one function per step of
:data:`planner.codegen.fingerprint.STEPS` (same names).

Importing this module imports every generator and everything they read (seconds);
``--check`` compares fingerprints and never imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from planner.analysis import calibration, crossval, estimates
from planner.cli import evaluated_runs  # the rows as the command line runs them
from planner.codegen import (
    cli_docs,
    column_docs,
    command_signatures,
    kernel_source,
    layout_types,
    workbook,
)
from planner.codegen.native_source import MANIFEST, SOURCE
from planner.codegen.native_source import generate as native_source
from planner.engine.run import kernel as generated_kernel
from planner.report import formula_docs, validation, whole_runs_report, xlsx


def write(path: Path, text: str) -> None:
    path.write_text(text)
    print(f"wrote {path}", file=sys.stderr)


def layout() -> None:
    write(layout_types.GENERATED, layout_types.generate_source())


def kernel() -> None:
    write(generated_kernel.GENERATED, kernel_source.generate_source())


def workbook_formulas() -> None:
    write(xlsx.GENERATED, workbook.generate_source())


def native() -> None:
    source, manifest = native_source()
    changed = not SOURCE.exists() or SOURCE.read_text() != source
    write(SOURCE, source)
    write(MANIFEST, manifest)
    if changed:  # the installed extension is now stale: numpy runs until it is rebuilt
        print("codegen: rebuild the compiled extension: pip install -e .", file=sys.stderr)


def formulas() -> None:
    formula_docs.main([])


def columns() -> None:
    column_docs.main([])


def commands() -> None:
    write(command_signatures.GENERATED, command_signatures.generate_source())


def cli() -> None:
    cli_docs.main([])


def validation_results() -> None:
    write(estimates.PRECOMPUTED, estimates.precomputed_text())
    if not calibration.precomputed_is_fresh():  # ~5 CPU-s of refits
        write(calibration.PRECOMPUTED, calibration.precomputed_text())
    if not crossval.precomputed_is_fresh():  # ~10 CPU-s of refits
        write(crossval.PRECOMPUTED, crossval.precomputed_text())
    validation.write_docs()


def whole_run_results() -> None:
    whole_runs_report.write_docs(evaluated_runs.compare())


#: Step name -> its writer.
WRITERS = {"layout-types": layout, "kernel": kernel, "workbook": workbook_formulas, "native": native,
           "formulas": formulas, "columns": columns, "commands": commands, "cli": cli,
           "validation": validation_results, "whole-runs": whole_run_results}
