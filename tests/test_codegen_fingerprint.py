"""Generated files are checked by fingerprint (planner/codegen/fingerprint.py), in seconds."""

import shutil
import subprocess
import sys

import pytest

from planner.codegen import __main__ as codegen
from planner.codegen import fingerprint
from planner.codegen.fingerprint import BY_NAME, ROOT, load, staleness


def test_every_generated_file_is_fresh(capsys):
    """The CI guard: every generated file's sources, pins and contents are as recorded."""
    assert codegen.main(["--check"]) == 0, capsys.readouterr().err


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the checkout's sources, data, docs and fingerprints."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for folder in ("formulas", "hardware_catalog", "planner", "docs"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _stale(root, name):
    recorded = load(root)
    return staleness(BY_NAME[name], recorded.get(name), root)


def _edited(root, relative, text="\n# edited\n"):
    path = root / relative
    before = path.read_bytes()
    path.write_bytes(before + text.encode())
    return path, before


@pytest.mark.parametrize("source,stale,fresh", [
    ("formulas/compute.py", ["kernel", "workbook", "native", "formulas", "columns"], []),
    ("planner/engine/run/model.py", ["kernel", "workbook", "columns"], []),
    # planner.cli.app imports the command modules by name: the CLI docs depend on each one
    ("planner/cli/sweep_command.py", ["cli"], ["kernel", "workbook", "columns"]),
    ("hardware_catalog/data/validation/moe_runs.csv", ["validation", "whole-runs"],
     ["kernel", "workbook", "columns"]),
])
def test_a_changed_source_makes_exactly_its_steps_stale(tree, source, stale, fresh):
    assert all(_stale(tree, name) is None for name in stale + fresh)
    path, before = _edited(tree, source)
    try:
        for name in stale:
            why = _stale(tree, name)
            assert why is not None and source in why, (name, why)
        assert all(_stale(tree, name) is None for name in fresh)
    finally:
        path.write_bytes(before)


def test_an_edited_output_is_stale(tree):
    path, before = _edited(tree, "docs/cli.md", "\nhand-written\n")
    try:
        why = _stale(tree, "cli")
        assert why is not None and "docs/cli.md" in why and "edited or missing" in why
    finally:
        path.write_bytes(before)


def test_a_new_pin_makes_its_steps_stale(tree):
    path = tree / "pyproject.toml"
    before = path.read_text()
    pin = f"sympy=={fingerprint.pinned_versions()['sympy']}"
    path.write_text(before.replace(pin, "sympy==0.0.1"))
    try:
        assert "sympy" in _stale(tree, "kernel")
        assert _stale(tree, "columns") is None
    finally:
        path.write_text(before)


def test_the_check_names_the_file_and_the_command(tree, capsys):
    path, before = _edited(tree, "planner/engine/inputs/layout_rules.py")
    try:
        assert codegen.check([BY_NAME["kernel"]], tree) == 1
        err = capsys.readouterr().err
        assert "planner/engine/run/_kernel_generated.py" in err
        assert "planner/engine/inputs/layout_rules.py" in err
        assert "run: python -m planner.codegen --only kernel" in err
    finally:
        path.write_bytes(before)


def test_the_kernel_is_generated_from_the_model_not_the_whole_engine():
    sources = {str(p.relative_to(ROOT)) for p in fingerprint.sources(BY_NAME["kernel"])}
    assert {"planner/engine/run/model.py", "formulas/compute.py", "planner/codegen/kernel_source.py",
            "planner/engine/inputs/layout_rules.py"} <= sources
    assert "planner/engine/run/_kernel_generated.py" not in sources  # its own output
    assert "planner/engine/layouts/evaluator.py" not in sources  # only planner's lazy __getattr__


def test_generation_refuses_unpinned_libraries(monkeypatch):
    monkeypatch.setattr(codegen, "version", lambda library: "0.0.1")
    assert codegen.unpinned(BY_NAME["kernel"]) == [
        f"sympy 0.0.1 (pinned: {fingerprint.pinned_versions()['sympy']})"]
    assert codegen.unpinned(BY_NAME["columns"]) == []


def test_the_check_imports_no_generator():
    """``python -m planner.codegen --check`` compares hashes: it never imports sympy or the
    generators (which import the whole house)."""
    code = ("import sys; from planner.codegen.__main__ import main; rc = main(['--check']); "
            "print(rc, 'sympy' in sys.modules, 'planner.codegen.generators' in sys.modules, "
            "'planner.engine.run.model' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.stdout.split() == ["0", "False", "False", "False"], result.stderr
    assert result.stderr == ""
