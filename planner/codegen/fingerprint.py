"""Fingerprints of generated files: what each was generated from, as SHA-256 hashes.

Regenerating the kernel or the workbook with sympy takes minutes; checking that they are
fresh need not.  ``python -m planner.codegen`` records in :data:`FINGERPRINTS`, for each
step, the SHA-256 of every file the step's generator is made of and reads (its *sources*),
the exact versions of the libraries whose output is committed (:func:`pinned_versions`),
and the SHA-256 of every file it wrote (its *outputs*).  ``--check`` recomputes them and
names the stale file, the sources that changed and the command to run, in about a second.

A step's sources are found statically, so that a check never imports the generators:

* the Python modules reachable by ``import`` statements from the step's entry modules
  (module level and function level alike), within this project's packages;
* a module that imports by name (``importlib.import_module``) reaches every module of its
  package;
* a package's data files (TOML, CSV, JSON templates) when any of its modules is reached;
* not the step's own outputs (they are checked as outputs), nor those of a later step.

Reaching too much only makes a step look stale sooner; what a hash cannot see (a library
other than the pinned ones changing a number) is guarded by the tests that compare
generated code with the model it came from (``tests/test_kernel.py``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Where the fingerprints of every step are kept, relative to the checkout (committed with
#: the generated files).
FINGERPRINTS = Path("planner/codegen/fingerprints.json")

#: The project's own top-level packages: imports of anything else are libraries.
PACKAGES = ("formulas", "hardware_catalog", "planner")

#: Data files a package reads at run time (relative to the package), by pattern.
PACKAGE_DATA = {
    "hardware_catalog": ("data/**/*.toml", "data/**/*.csv", "data/**/*.md"),
    "planner.engine.inputs": ("*.toml",),
    "planner.analysis": ("*.toml", "*.json"),
}

#: The extra in pyproject.toml that pins the libraries whose output is committed.
PIN_EXTRA = "codegen"


@dataclass(frozen=True)
class Step:
    """One generation step: its entry modules, what it writes, which pinned libraries."""

    name: str
    modules: tuple[str, ...]
    outputs: tuple[str, ...]
    libraries: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return f"python -m planner.codegen --only {self.name}"


def module_path(name: str, root: Path = ROOT) -> Path | None:
    """The source file of project module ``name`` (a package's ``__init__.py``), or None."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported_names(tree: ast.AST, package: str) -> set[str]:
    """Module names an AST imports (``from a import b`` gives ``a`` and ``a.b``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _imports_by_name(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.Attribute | ast.Name)
               and getattr(node, "attr", getattr(node, "id", None)) == "import_module"
               for node in ast.walk(tree))


def _imports(path: Path, package: str) -> tuple[frozenset[str], bool]:
    stat = path.stat()
    return _parsed_imports(path, package, stat.st_mtime_ns, stat.st_size)


@cache
def _parsed_imports(path: Path, package: str, mtime_ns: int, size: int
                    ) -> tuple[frozenset[str], bool]:
    """(modules ``path`` imports, whether it imports by name), leaving out a package's lazy
    ``__getattr__``: importing the package does not run it (``planner.evaluate`` would
    otherwise make every step depend on the whole engine)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    tree.body = [node for node in tree.body
                 if not (isinstance(node, ast.FunctionDef) and node.name == "__getattr__")]
    return frozenset(_imported_names(tree, package)), _imports_by_name(tree)


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def reached_modules(entries: tuple[str, ...], root: Path = ROOT) -> dict[str, Path]:
    """Every project module reachable from ``entries`` by import statements."""
    seen: dict[str, Path] = {}
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_path(name, root)
        if path is None:
            continue
        seen[name] = path
        package = _package_of(name, path)
        imported, by_name = _imports(path, package)
        todo.extend(_parents(name))
        todo.extend(imported)
        if by_name:
            folder = path.parent
            todo.extend(f"{package}.{p.stem}" for p in folder.glob("*.py")
                        if p.stem != "__init__")
    return seen


def sources(step: Step, root: Path = ROOT) -> list[Path]:
    """Every file ``step`` is generated from, sorted: modules, data, less its outputs and
    those of the steps after it in :data:`STEPS` (a step may read an earlier step's output,
    never a later one's: the validation step's JSON files in planner/analysis are no source
    of the documentation steps before it, which reach that package's data)."""
    modules = reached_modules(step.modules, root)
    files = set(modules.values())
    packages = {_package_of(name, path) for name, path in modules.items()}
    for package, patterns in PACKAGE_DATA.items():
        if package in packages:
            folder = root.joinpath(*package.split("."))
            for pattern in patterns:
                files.update(p for p in folder.glob(pattern) if p.is_file())
    later = STEPS[STEPS.index(step):] if step in STEPS else (step,)
    files -= {root / output for s in later for output in s.outputs}
    return sorted(files)


def file_hash(path: Path) -> str:
    """SHA-256 of ``path``'s bytes (remembered while its size and time are unchanged)."""
    stat = path.stat()
    return _hash(path, stat.st_mtime_ns, stat.st_size)


@cache
def _hash(path: Path, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned_versions(root: Path = ROOT) -> dict[str, str]:
    """The exact versions pinned in pyproject.toml's ``codegen`` extra: library -> version."""
    with open(root / "pyproject.toml", "rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    pins = {}
    for requirement in extras.get(PIN_EXTRA, ()):
        name, sep, version = requirement.partition("==")
        if not sep:
            raise ValueError(f"pyproject.toml [{PIN_EXTRA}] must pin exactly: {requirement!r}")
        pins[name.strip().lower()] = version.strip()
    return pins


def fingerprint(step: Step, root: Path = ROOT) -> dict:
    """What ``step``'s outputs are generated from today, and what they hold today."""
    pins = pinned_versions(root)
    missing = [lib for lib in step.libraries if lib not in pins]
    if missing:
        raise ValueError(f"step {step.name}: no exact pin for {', '.join(missing)} in "
                         f"pyproject.toml [{PIN_EXTRA}]")
    return {
        "libraries": {lib: pins[lib] for lib in step.libraries},
        "sources": {str(p.relative_to(root)): file_hash(p) for p in sources(step, root)},
        "outputs": {out: file_hash(root / out) if (root / out).is_file() else None
                    for out in step.outputs},
    }


def load(root: Path = ROOT) -> dict:
    """The recorded fingerprints, step name -> fingerprint ({} when none are recorded)."""
    try:
        return json.loads((root / FINGERPRINTS).read_text())
    except FileNotFoundError:
        return {}


def save(recorded: dict, root: Path = ROOT) -> None:
    (root / FINGERPRINTS).write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")


def _listed(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def staleness(step: Step, recorded: dict | None, root: Path = ROOT) -> str | None:
    """Why ``step``'s outputs are stale (one line naming what changed), or None if fresh."""
    if not recorded:
        return f"{step.outputs[0]} has no recorded fingerprint"
    now = fingerprint(step, root)
    if now["libraries"] != recorded.get("libraries"):
        return (f"{_listed(step.outputs)} were generated with {recorded.get('libraries')}, "
                f"and {now['libraries']} is pinned now")
    was = recorded.get("sources", {})
    changed = sorted(set(was) ^ set(now["sources"])
                     | {p for p in was if p in now["sources"] and was[p] != now["sources"][p]})
    if changed:
        return f"{_listed(list(step.outputs))}: changed since generated: {_listed(changed)}"
    edited = [out for out, digest in now["outputs"].items()
              if digest != recorded.get("outputs", {}).get(out)]
    if edited:
        return f"{_listed(edited)}: not what {step.name} generated (edited or missing)"
    return None


#: Every generated file, by the step that writes it, in dependency order (a later step may
#: read an earlier one's output: native reads the kernel, validation the kernel's hash).
STEPS = (
    Step("layout-types", ("planner.codegen.layout_types",),
         ("planner/engine/layouts/_layout_generated.py",)),
    Step("kernel", ("planner.codegen.kernel_source",), ("planner/engine/run/_kernel_generated.py",),
         libraries=("sympy",)),
    Step("workbook", ("planner.codegen.workbook",), ("planner/report/_workbook_generated.py",),
         libraries=("sympy",)),
    Step("native", ("planner.codegen.native_source",),
         ("planner/engine/run/_native_generated.c", "planner/engine/run/_native_manifest.py")),
    Step("formulas", ("planner.report.formula_docs",), ("docs/formulas.md",),
         libraries=("sympy",)),
    Step("columns", ("planner.codegen.column_docs",), ("docs/columns.md",)),
    # the generator parses the holders and the commands' modules (their source is copied)
    Step("commands", ("planner.codegen.command_signatures", "planner.cli.layout_options",
                      "planner.cli.scenario_options", "planner.cli.method_options",
                      "planner.cli.environment_options", "planner.cli.rl_options",
                      *(f"planner.cli.{c}_command" for c in (
                          "evaluate", "plan", "sweep", "codesign", "sensitivity", "simulate",
                          "export", "plot"))),
         ("planner/cli/_commands_generated.py",)),
    Step("cli", ("planner.codegen.cli_docs",), ("docs/cli.md",)),
    Step("validation", ("planner.analysis.estimates", "planner.analysis.calibration",
                        "planner.analysis.crossval", "planner.report.validation"),
         ("planner/analysis/_validated_generated.json", "planner/analysis/_lofo_generated.json",
          "planner/analysis/_crossval_generated.json",
          "docs/validation.md", "docs/validation.png", "docs/reliability_mttf.png"),
         libraries=("matplotlib",)),
    Step("whole-runs", ("planner.cli.evaluated_runs", "planner.report.whole_runs_report"),
         ("docs/whole-runs.md", "docs/whole-runs.png"), libraries=("matplotlib",)),
)

BY_NAME = {step.name: step for step in STEPS}
