"""The house rules of planner/ (and formulas/, hardware_catalog/): no import cycles, no private name used outside its module,
a small package root (docs/architecture.md)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "planner"


PACKAGES = ("planner", "formulas", "hardware_catalog")


def _modules() -> dict[str, Path]:
    out = {}
    for path in (p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path):
    """(imported module, imported names or None, line) for every planner import in a module,
    at module level or inside functions (lazy imports count: a cycle is a cycle)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([node.module] if node.module else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            names = [a.name for a in node.names]
            yield base, names, node.lineno


def _graph() -> dict[str, set[str]]:
    graph = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for base, names, _ in _imports(name, path):
            targets = [base] if names is None else [
                f"{base}.{n}" if f"{base}.{n}" in MODULES else base for n in names]
            for target in targets:
                if target in MODULES and target != name and MODULES[target].name != "__init__.py":
                    graph[name].add(target)
    return graph


def _cycle(graph):
    colour, stack = {}, []

    def visit(node):
        colour[node] = "grey"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt) == "grey":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in colour and (found := visit(nxt)):
                return found
        colour[node] = "black"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in colour and (found := visit(node)):
            return found
    return None


def test_no_import_cycles():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_private_name_crosses_a_module():
    """``from planner.x import _y`` (a private name) only inside planner.x's own package
    for generated modules, never for functions or constants."""
    offences = []
    for name, path in MODULES.items():
        for base, names, line in _imports(name, path):
            for imported in names or []:
                if not imported.startswith("_"):
                    continue
                target = f"{base}.{imported}"
                same_package = base == name.rpartition(".")[0]
                if target in MODULES and same_package:
                    continue  # a package's private module, used inside the package
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
        tree = ast.parse(path.read_text())
        imported_modules = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
                for a in node.names:
                    if f"{node.module}.{a.name}" in MODULES:
                        imported_modules[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported_modules and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno} uses "
                                f"{imported_modules[node.value.id]}.{node.attr}")
    assert not offences, "private names used outside their module:\n" + "\n".join(offences)


def test_package_root_is_small():
    assert len(list(PACKAGE.glob("*.py"))) <= 8


#: The package layers, lowest first: a module may import its own layer and those below,
#: never one above (docs/architecture.md: cli -> analysis, report -> engine -> formulas,
#: catalog; inside the engine its rooms: search -> layouts -> run -> inputs -> economics).  planner.codegen is a build tool: it reads every layer, and no layer reads it.
LAYERS = (
    ("formulas", "hardware_catalog", "planner.errors", "planner.version"),
    ("planner.engine", "planner.engine.economics"),
    ("planner.engine.inputs",),
    ("planner.engine.run",),
    ("planner.engine.layouts",),
    ("planner.engine.search",),
    ("planner.analysis", "planner.report"),
    ("planner", "planner.cli", "planner.__main__"),
    ("planner.codegen",),
)


def _layer(module: str) -> int:
    """The layer of ``module``: that of the longest package prefix listed in LAYERS."""
    best, found = -1, None
    for level, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and len(package) > best:
                best, found = len(package), level
    assert found is not None, f"{module} is in no layer of LAYERS"
    return found


def test_imports_point_down_the_package_layers():
    """cli -> analysis/report -> engine -> formulas/catalog, lazy imports included (a
    function-level import is still a dependency), and formulas and hardware_catalog do not
    know each other."""
    upward = []
    for name, path in MODULES.items():
        for base, _, line in _imports(name, path):
            if base.split(".")[0] not in PACKAGES:
                continue
            if _layer(base) > _layer(name):
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {base}")
            for a, b in (("formulas", "hardware_catalog"), ("hardware_catalog", "formulas")):
                if name.split(".")[0] == a and base.split(".")[0] == b:
                    upward.append(f"{path.relative_to(ROOT)}:{line} imports {base}")
    assert not upward, "imports against the package layers:\n" + "\n".join(upward)


#: Packages imported lazily (inside functions) because importing them is slow or they are
#: optional extras: the boundaries of docs/architecture.md.
LAZY_PACKAGES = {"pandas", "sympy", "matplotlib", "openpyxl", "dask", "distributed", "scipy",
                 "rich", "pydantic", "hypothesis"}


def _imports_lazy_package_at_top(module: str) -> bool:
    path = MODULES.get(module)
    if path is None:
        return False
    for node in ast.parse(path.read_text()).body:
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                 else [])
        if any(n.split(".")[0] in LAZY_PACKAGES for n in names):
            return True
    return False


def _is_boundary(node, function, inside_import_guard: bool) -> bool:
    """A lazy import that the house rules allow: an optional or slow package, a module of
    ours that imports one at its top, a generated module, a package's lazy ``__getattr__``,
    or an import guarded by ``except ImportError``."""
    if function.name == "__getattr__" or inside_import_guard:
        return True
    if isinstance(node, ast.ImportFrom) and any(a.name.endswith("_generated")
                                                for a in node.names):
        return True  # a generated module, loaded on first use (a stale file is reported)
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    else:
        base = node.module or ""
        modules = [base, *(f"{base}.{a.name}" for a in node.names)]
    return any(m.split(".")[0] in LAZY_PACKAGES or _imports_lazy_package_at_top(m)
               for m in modules)


def _function_imports(path: Path):
    """(function, import node, guarded) for every import inside a function of ``path``."""
    tree = ast.parse(path.read_text())
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        function, guarded, up = None, False, parents.get(node)
        while up is not None:
            if isinstance(up, ast.Try) and any(
                    h.type is not None and "ImportError" in ast.unparse(h.type)
                    for h in up.handlers):
                guarded = True
            if function is None and isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef):
                function = up
            up = parents.get(up)
        if function is not None:
            yield function, node, guarded


def test_imports_are_lazy_only_at_the_boundaries():
    """Outside the command modules (planner/cli, loaded one command at a time by the
    registry), a function imports only what is slow to import or optional; everything else
    is imported at the module's top, where a reader sees a module's dependencies (issue 28:
    at most 60 such imports; there are none)."""
    eager = [f"{path.relative_to(ROOT)}:{node.lineno} ({function.name}) {ast.unparse(node)}"
             for name, path in MODULES.items() if not name.startswith("planner.cli")
             for function, node, guarded in _function_imports(path)
             if not _is_boundary(node, function, guarded)]
    assert not eager, "imports to move to the module's top:\n" + "\n".join(eager)



#: Basenames planner/ may share with formulas/ or hardware_catalog/: each package's public
#: error module (``planner.errors.CapplanError``, ``hardware_catalog.errors.CatalogError``),
#: the one name a user expects in both.
SHARED_WITH_LIBRARIES = {"errors"}


def _basenames(paths) -> dict[str, list[str]]:
    """Module basename -> the modules that have it (package ``__init__``/``__main__`` left out)."""
    out: dict[str, list[str]] = {}
    for path in paths:
        if path.stem not in ("__init__", "__main__"):
            out.setdefault(path.stem, []).append(path.relative_to(ROOT).as_posix())
    return out


def _shared(paths) -> dict[str, list[str]]:
    return {stem: where for stem, where in _basenames(paths).items() if len(where) > 1}


def test_no_two_planner_modules_share_a_name():
    """A newcomer finds a module by its name alone: no two modules under planner/ share one."""
    assert _shared(sorted(PACKAGE.rglob("*.py"))) == {}


def test_planner_module_names_do_not_shadow_the_libraries():
    """No planner/ module takes the name of a formulas/ or hardware_catalog/ module."""
    planner = _basenames(PACKAGE.rglob("*.py"))
    libraries = _basenames(p for pkg in ("formulas", "hardware_catalog")
                           for p in (ROOT / pkg).rglob("*.py"))
    assert sorted(set(planner) & set(libraries) - SHARED_WITH_LIBRARIES) == []


def test_the_name_check_finds_shared_names():
    paths = [ROOT / "planner/cli/x.py", ROOT / "planner/analysis/x.py", ROOT / "planner/y.py",
             ROOT / "planner/cli/__init__.py", ROOT / "planner/analysis/__init__.py"]
    assert _shared(paths) == {"x": ["planner/cli/x.py", "planner/analysis/x.py"]}


def test_command_modules_are_named_after_their_command():
    """planner/cli/<command>_command.py defines ``capplan <command>``; every such module is
    registered, so a command module never shares its name with what it calls."""
    from planner.cli.app import COMMANDS

    assert [module for _, module, *_ in COMMANDS] == [f"{name}_command" for name, *_ in COMMANDS]
    on_disk = {p.stem for p in (PACKAGE / "cli").glob("*_command.py")}
    assert on_disk == {module for _, module, *_ in COMMANDS}


#: The engine's rooms, lowest first (docs/architecture.md): each a sub-package whose
#: ``__init__`` says in a paragraph what job it holds.
ENGINE_ROOMS = ("economics", "inputs", "run", "layouts", "search")


def test_every_engine_module_is_in_a_room_that_says_its_job():
    engine = PACKAGE / "engine"
    loose = [p.name for p in engine.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"planner/engine/ modules outside a room: {loose}"
    rooms = sorted(p.name for p in engine.iterdir() if (p / "__init__.py").is_file())
    assert rooms == sorted(ENGINE_ROOMS)
    for room in ENGINE_ROOMS:
        doc = ast.get_docstring(ast.parse((engine / room / "__init__.py").read_text()))
        assert doc and len(doc.split()) >= 20, f"planner/engine/{room}/__init__.py: no docstring"
    layer_rooms = [p.rpartition(".")[2] for layer in LAYERS for p in layer
                   if p.startswith("planner.engine.")]
    assert layer_rooms == list(ENGINE_ROOMS), "LAYERS lists the rooms in their order"


#: Function-level imports planner/cli may hold (issue 40: 301 on 2026-11-29 before plan,
#: evaluate, simulate, export, sweep, codesign, sensitivity, plot and the RL runs built
#: their reports in planner/report, and the one-layout run in planner/analysis/one_run.py;
#: 134 after).  It only falls.
CLI_FUNCTION_IMPORTS = 134
#: Commands that build their answer in planner/report and only write it: their module
#: imports one thing lazily, the report builder, in the command's body (docs/architecture.md).
REPORT_COMMANDS = ("plan_command", "evaluate_command", "simulate_command", "export_command",
                   "sweep_command", "codesign_command", "sensitivity_command", "plot_command")


def test_planner_cli_function_level_imports_do_not_grow():
    found = sum(1 for path in sorted((PACKAGE / "cli").glob("*.py"))
                for _ in _function_imports(path))
    assert found <= CLI_FUNCTION_IMPORTS, (
        f"{found} function-level imports in planner/cli (at most {CLI_FUNCTION_IMPORTS}): "
        "import at the module's top, or build the answer in planner/report")


def test_a_report_command_imports_its_report_builder_once():
    for module in REPORT_COMMANDS:
        lazy = [(function.name, ast.unparse(node))
                for function, node, _ in _function_imports(PACKAGE / "cli" / f"{module}.py")]
        assert len(lazy) == 1 and lazy[0][0] == "run", (module, lazy)
        assert lazy[0][1].startswith("from planner.report import "), (module, lazy)
