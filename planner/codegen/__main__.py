"""``python -m planner.codegen [--check] [--only STEP] [--all]``: regenerate (or check)
every generated file in dependency order; see :mod:`planner.codegen`.

Each step is regenerated only when its fingerprint (:mod:`planner.codegen.fingerprint`)
says it is stale, unless ``--all``; ``--check`` writes nothing and compares fingerprints
only (about a second), naming each stale file and the command that regenerates it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from planner.codegen import fingerprint
from planner.codegen.fingerprint import BY_NAME, STEPS, Step


def unpinned(step: Step) -> list[str]:
    """'library installed (pinned: version)' for each of ``step``'s libraries not at its pin."""
    pins = fingerprint.pinned_versions()
    wrong = []
    for library in step.libraries:
        try:
            installed = version(library)
        except PackageNotFoundError:
            installed = "not installed"
        if installed != pins[library]:
            wrong.append(f"{library} {installed} (pinned: {pins[library]})")
    return wrong


def check(steps: list[Step], root: Path = fingerprint.ROOT) -> int:
    """1 if any step's outputs are stale (each named on stderr), else 0."""
    recorded = fingerprint.load(root)
    failed = 0
    for step in steps:
        why = fingerprint.staleness(step, recorded.get(step.name), root)
        if why:
            print(f"codegen: stale: {why}; run: {step.command}", file=sys.stderr)
            failed = 1
    return failed


def generate(steps: list[Step], everything: bool) -> int:
    """Regenerate the stale steps (all of ``steps`` with ``everything``), in order."""
    writers = None
    for i, step in enumerate(steps):
        recorded = fingerprint.load()
        if not everything and not fingerprint.staleness(step, recorded.get(step.name)):
            print(f"codegen: {step.name}: fresh", file=sys.stderr)
            continue
        wrong = unpinned(step)
        if wrong:
            print(f"codegen: {step.name} is generated with pinned libraries, so that its "
                  f"output is reproducible: {'; '.join(wrong)}; run: "
                  f"pip install -e '.[codegen]'", file=sys.stderr)
            return 2
        # the generators are imported only when one runs (seconds): --check never does
        writers = writers or import_module("planner.codegen.generators").WRITERS
        started = time.process_time()
        print(f"codegen: {step.name} ...", file=sys.stderr)
        writers[step.name]()
        recorded[step.name] = fingerprint.fingerprint(step)
        fingerprint.save(recorded)
        print(f"codegen: {step.name}: {time.process_time() - started:.1f} CPU-s",
              file=sys.stderr)
        rest = steps[i + 1:]
        if rest and rewrote_an_imported_module(step):
            # the later steps would read the module this process imported before the step
            # rewrote it (and record it fresh): they run in a process of their own
            return subprocess.call([sys.executable, "-m", "planner.codegen",
                                    *(["--all"] if everything else []),
                                    *(a for s in rest for a in ("--only", s.name))],
                                   cwd=fingerprint.ROOT)
    return 0


def rewrote_an_imported_module(step: Step) -> bool:
    """Whether one of ``step``'s outputs is a module this process has imported."""
    outputs = {(fingerprint.ROOT / out).resolve() for out in step.outputs}
    return any(Path(getattr(module, "__file__", None) or "").resolve() in outputs
               for module in list(sys.modules.values()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planner.codegen",
                                     description="Regenerate the stale generated files, "
                                                 "in order.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming every stale generated file")
    parser.add_argument("--only", action="append", choices=list(BY_NAME),
                        help="only these steps (repeatable); default all, in order")
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="regenerate even the steps whose fingerprints are fresh")
    args = parser.parse_args(argv)
    if not (fingerprint.ROOT / "pyproject.toml").exists():
        print("python -m planner.codegen: not a source checkout (no pyproject.toml beside "
              "planner/); refusing to write into an installed package", file=sys.stderr)
        return 2
    steps = [s for s in STEPS if not args.only or s.name in args.only]
    return check(steps) if args.check else generate(steps, args.everything)


if __name__ == "__main__":
    sys.exit(main())
