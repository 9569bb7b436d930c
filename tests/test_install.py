"""``pip install .`` builds the compiled extension where a C compiler works and installs
pure numpy where none does (it never fails for lack of one); the installed package then
runs on the backend it says.  Slow: each install builds a wheel in a fresh venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _install(tmp_path: Path, env: dict) -> Path:
    """A venv (seeing this interpreter's packages: numpy, pandas, ...) with capplan
    installed from a copy of the source tree; its python."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "*.so", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache",
        "out"))
    venv.create(tmp_path / "venv", system_site_packages=True, with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                             str(source)], capture_output=True, text=True, env=env,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    return python


def _backend(python: Path, tmp_path: Path) -> str:
    """What ``capplan --version`` says of the installed package (run outside the tree)."""
    result = subprocess.run([str(python), "-m", "planner", "--version"], capture_output=True,
                            text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _plan(python: Path, tmp_path: Path) -> str:
    result = subprocess.run([str(python), "-m", "planner", "plan", "--model", "llama3-8b",
                             "--hardware", "h100-sxm", "--max-gpus", "256", "-f", "json"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env={**os.environ, "CAPPLAN_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_install_without_a_compiler_runs_numpy(tmp_path):
    env = {**os.environ, "CC": str(tmp_path / "no-such-cc"), "PIP_NO_CACHE_DIR": "1"}
    python = _install(tmp_path, env)
    site = subprocess.run([str(python), "-c", "import planner, os; "
                           "print(os.path.dirname(planner.__file__))"],
                          capture_output=True, text=True, cwd=tmp_path).stdout.strip()
    assert site.startswith(str(tmp_path / "venv")), site
    assert not list(Path(site, "engine", "run").glob("_native*.so"))
    assert "kernel backend: numpy: the compiled extension is not installed" in \
        _backend(python, tmp_path)
    assert '"best"' in _plan(python, tmp_path)


@pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="no C compiler")
def test_install_with_a_compiler_builds_the_extension(tmp_path):
    python = _install(tmp_path, {**os.environ, "PIP_NO_CACHE_DIR": "1"})
    assert "kernel backend: compiled" in _backend(python, tmp_path)
    assert '"best"' in _plan(python, tmp_path)
    # the version is one constant (planner/version.py) that the build reads into the
    # package metadata: what pip recorded is what capplan prints
    recorded = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                               "print(m.version('capplan'))"], capture_output=True, text=True,
                              cwd=tmp_path).stdout.strip()
    assert _backend(python, tmp_path).splitlines()[0] == f"capplan {recorded}"
