"""``python -m planner.codegen [--check]``: regenerate (or check) every
generated file in dependency order; see :mod:`planner.codegen`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.analysis import calibration, estimates
from planner.cli import whole_runs as evaluated_runs  # the rows as the command line runs them
from planner.codegen import cli_docs, column_docs, workbook
from planner.codegen import kernel as kernel_source
from planner.codegen.native_source import MANIFEST, SOURCE, generate
from planner.engine import kernel as generated_kernel
from planner.report import formula_docs, validation, whole_runs, xlsx
from planner.report.output import write_or_check


def _kernel(check: bool) -> int:
    return write_or_check(generated_kernel.GENERATED, kernel_source.generate_source(), check=check,
                          command="python -m planner.codegen")


def _workbook(check: bool) -> int:
    return write_or_check(xlsx.GENERATED, workbook.generate_source(), check=check,
                          command="python -m planner.codegen")


def _native(check: bool) -> int:
    source, manifest = generate()
    changed = not SOURCE.exists() or SOURCE.read_text() != source
    failed = write_or_check(SOURCE, source, check=check, command="python -m planner.codegen")
    failed |= write_or_check(MANIFEST, manifest, check=check, command="python -m planner.codegen")
    if changed and not check:  # the installed extension is now stale: numpy runs until then
        print("codegen: rebuild the compiled extension: pip install -e .", file=sys.stderr)
    return failed


def _formulas(check: bool) -> int:
    return formula_docs.main(["--check"] if check else [])


def _columns(check: bool) -> int:
    return column_docs.main(["--check"] if check else [])


def _cli(check: bool) -> int:
    return cli_docs.main(["--check"] if check else [])


def _validation(check: bool) -> int:
    validated = write_or_check(estimates.PRECOMPUTED, estimates.precomputed_text(),
                               check=check, command="python -m planner.codegen --only validation")
    path = calibration.PRECOMPUTED
    if check:
        failed = validated
        if not calibration.precomputed_is_fresh():
            print(f"{path} is stale; run: python -m planner.codegen --only validation",
                  file=sys.stderr)
            failed = 1
        return failed | validation.write_docs(check=check)
    path.write_text(calibration.precomputed_text())  # ~2 min of refits
    print(f"wrote {path}", file=sys.stderr)
    return validation.write_docs(check=check)


def _whole_runs(check: bool) -> int:
    return whole_runs.write_docs(evaluated_runs.compare(), check=check)


STEPS = {"kernel": _kernel, "workbook": _workbook, "native": _native, "formulas": _formulas,
         "columns": _columns, "cli": _cli, "validation": _validation,
         "whole-runs": _whole_runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planner.codegen",
                                     description="Regenerate every generated file, in order.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any generated file is stale")
    parser.add_argument("--only", action="append", choices=list(STEPS),
                        help="only these steps (repeatable); default all, in order")
    args = parser.parse_args(argv)
    if not (Path(__file__).resolve().parents[2] / "pyproject.toml").exists():
        print("python -m planner.codegen: not a source checkout (no pyproject.toml beside "
              "planner/); refusing to write into an installed package", file=sys.stderr)
        return 2
    failed = 0
    for name, step in STEPS.items():
        if args.only and name not in args.only:
            continue
        print(f"codegen: {name}", file=sys.stderr)
        failed |= step(args.check)
    return failed


if __name__ == "__main__":
    sys.exit(main())
