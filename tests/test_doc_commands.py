"""Every shell command shown in README.md and docs/quickstart.md runs and succeeds.

The commands are taken from the fenced ``bash``/``sh`` blocks and, in the quickstart, from
the command column of its table.  Each runs as ``python -m planner ...`` from this checkout
(PYTHONPATH), in a temporary working directory, so files the commands write (``--plot
ckpt.png``, ``init run.toml``, any ``-o FILE``) land there and nothing is written into the
tree; each has a time limit.

Not run, and asserted to be exactly these:
- install commands (``pip install ...``, ``pipx install ...``): they change the environment;
- ``python -m pytest`` (the README's test command): it is this test suite;
- ``--scheduler processes`` when Dask (an optional extra) is not installed.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "quickstart.md"]
TIME_LIMIT_S = 300


def shown_commands(path):
    """(line, command) for each shell command the document shows."""
    text = path.read_text()
    found = []
    for block in re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].split(" # ")[0].strip()
            if line:
                for part in line.split("&&"):
                    found.append(part.strip())
    if path.name == "quickstart.md":
        for row in re.findall(r"^\|.*\|$", text, re.M):
            for cmd in re.findall(r"`(capplan [^`]+)`", row):
                found.append(cmd)
    return found


def _skip_reason(cmd):
    words = shlex.split(cmd)
    if words[:2] in (["pip", "install"], ["pipx", "install"]):
        return "install command"
    if words[:3] == ["python", "-m", "pytest"]:
        return "the test suite itself"
    if "--scheduler" in words and words[words.index("--scheduler") + 1] == "processes":
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            return "needs the optional dask extra"
    return None


ALL = [(p.relative_to(ROOT).as_posix(), c) for p in DOCS for c in shown_commands(p)]


def test_the_documents_show_the_commands_this_test_runs():
    readme = [c for d, c in ALL if d == "README.md"]
    quick = [c for d, c in ALL if d == "docs/quickstart.md"]
    assert "capplan plan --model llama3-8b --tokens 2e12 --hardware h100-sxm,mi300x --budget-usd 5e6" in readme
    assert "capplan sensitivity --plot tornado.png" in quick
    assert len(readme) >= 10 and len(quick) >= 12
    skipped = {c for _, c in ALL if _skip_reason(c) == "install command" or _skip_reason(c) == "the test suite itself"}
    assert skipped == {"pip install .", "pip install -e '.[test]'", "python -m pytest"}
    for _, cmd in ALL:
        assert cmd.startswith("capplan") or _skip_reason(cmd), cmd


@pytest.mark.slow
@pytest.mark.parametrize("doc,cmd", ALL, ids=[f"{d}:{c}" for d, c in ALL])
def test_shown_command_runs(doc, cmd, tmp_path):
    reason = _skip_reason(cmd)
    if reason:
        pytest.skip(reason)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["MPLBACKEND"] = "Agg"
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    if "--scenario run.toml" in cmd:  # the README: `capplan init run.toml` writes it
        subprocess.run([sys.executable, "-m", "planner", "init", "run.toml"], cwd=tmp_path,
                       env=env, check=True, capture_output=True, timeout=TIME_LIMIT_S)
    argv = [sys.executable, "-m", "planner", *shlex.split(cmd)[1:]]
    before = set(os.listdir(ROOT))
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIME_LIMIT_S)
    assert proc.returncode == 0, f"{doc}: `{cmd}` exited {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.strip() or any(tmp_path.iterdir()), f"{doc}: `{cmd}` printed nothing"
    for word in shlex.split(cmd):
        if word.endswith((".png", ".toml", ".json", ".csv", ".xlsx")) and word != "run.toml":
            assert (tmp_path / word).stat().st_size > 0, f"{doc}: `{cmd}` did not write {word}"
    assert set(os.listdir(ROOT)) == before, f"{doc}: `{cmd}` wrote into the checkout"
