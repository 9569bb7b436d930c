"""Numbers quoted in prose in README.md and docs/*.md are what the code gives today.

Each test reruns the run a document quotes and compares the quoted, rounded number
with the current output, to the rounding the document shows (stated per test).  When a
model change moves a number, the test names the document and the new value.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli_json(args, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "planner", *args, "-f", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=_env())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _env():
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_readme_wall_days_is_the_evaluate_result(tmp_path):
    """README: `# wall_days ~N: 15T tokens, as capplan evaluate -m llama3-70b --gpus 1024 says`.

    Tolerance: N is the wall time in whole days (within 1 day), both from the Python
    API with TP8 x PP4 and from the command the comment names.
    """
    from planner import evaluate

    text = (ROOT / "README.md").read_text()
    m = re.search(r"wall_days ~([0-9,]+): 15T tokens, as `capplan evaluate -m llama3-70b "
                  r"--gpus 1024` says", text)
    assert m, "README.md no longer quotes wall_days for the evaluate example"
    quoted = float(m.group(1).replace(",", ""))
    df = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4)
    api = float(df.loc[0, "wall_days"])
    assert abs(api - quoted) <= 1.0, f"README.md says wall_days ~{quoted:g}; the API gives {api:.2f}"
    cli = float(_cli_json(["evaluate", "-m", "llama3-70b", "--gpus", "1024"], tmp_path)["wall_days"])
    assert abs(cli - quoted) <= 1.0, f"README.md says wall_days ~{quoted:g}; the CLI gives {cli:.2f}"


def _md_table_after(text, marker):
    """Rows (lists of cells) of the first Markdown table after `marker`."""
    start = text.index(marker)
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("|"):
            rows.append([c.strip().strip("*") for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[0], [r for r in rows[2:]]


def test_distributed_codesign_table_is_the_current_output(tmp_path):
    """docs/distributed.md: the co-design example table and its configuration count.

    Tolerances are the table's rounding: cost to 3 significant figures in M USD, energy
    to the whole MWh, gains to 2 decimals; layouts exactly; the configuration count
    exactly.
    """
    text = (ROOT / "docs" / "distributed.md").read_text()
    cmd = re.search(r"```sh\n(capplan codesign --model llama3-70b[^`]*?)\n```", text).group(1)
    args = cmd.replace("\\\n", " ").split()[1:]
    assert args[args.index("-f") + 1] == "markdown"
    i = args.index("-f")
    del args[i:i + 2]
    out = _cli_json(args, tmp_path)
    header, rows = _md_table_after(text, "| point | HBM |")
    assert header[4:] == ["cheapest run", "least energy", "cost-optimal layout", "cost gain",
                          "energy gain"]
    points = {p["point"]: p for p in out["points"]}
    base_cost = points[0]["best"]["cost"]["cost_usd"]
    base_mwh = points[0]["best"]["energy"]["energy_mwh"]
    assert rows, "no table rows"
    for row in rows:
        p = points[0 if row[0] == "catalog" else int(row[0])]
        cost = p["best"]["cost"]
        mwh = p["best"]["energy"]["energy_mwh"]
        doc_cost = float(row[4].removesuffix(" M USD"))
        assert f"{cost['cost_usd'] / 1e6:.3g}" == f"{doc_cost:.3g}", (row[0], cost["cost_usd"])
        assert round(mwh) == int(row[5].removesuffix(" MWh").replace(",", "")), (row[0], mwh)
        layout = f"TP{cost['tp']} PP{cost['pp']}" + (f" VP{cost['vp']}" if cost["vp"] > 1 else "")
        layout += f" DP{cost['dp']}, ZeRO-{cost['zero']}"
        assert layout == row[6], (row[0], layout)
        assert float(row[7]) == pytest.approx(round(base_cost / cost["cost_usd"], 2)), row[0]
        assert float(row[8]) == pytest.approx(round(base_mwh / mwh, 2)), row[0]
        assert cost["gpus"] == 2048  # "Every point's cheapest run uses 2,048 GPUs"
    n = re.search(r"([0-9,]+) configurations in all", text).group(1)
    assert int(n.replace(",", "")) == out["evaluated"], out["evaluated"]
