"""Readable by default: tables in human units, JSON and CSV in the stored SI values, and a
one-shot evaluate says what it assumed (issue 29)."""

import csv
import io
import json

import pytest

from planner.cli.main import main
from planner.engine.run.readable import count_text, quantity_text

EVALUATE = ["evaluate", "--model", "llama3-8b", "--gpus", "8"]


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


@pytest.mark.parametrize(("value", "unit", "text"), [
    (7.58e10, "B", "75.8 GB"), (206.0, "s", "206 s"), (1.86e8, "s", "2,153 days"),
    (842_977.0, "kWh", "843 MWh"), (2.69e10, "J", "7.47 MWh"), (0.0164, "MW", "16.4 kW"),
    (49.39, "MW", "49.4 MW"), (1_222_333.0, "USD", "1.22 M USD"), (316_524.0, "kgCO2e",
                                                                   "317 t CO2e"),
    (8.03e9, "1", "8.03B"), (True, "", "yes"),
])
def test_quantities_in_human_units(value, unit, text):
    assert quantity_text(value, unit) == text


def test_counts_with_suffixes():
    assert [count_text(v) for v in (15e12, 2e12, 1.5e12, 405e9, 16_384)] == \
        ["15T", "2T", "1.5T", "405B", "16,384"]


def test_evaluate_table_is_human_and_json_csv_are_si(capsys):
    table, err = run(capsys, EVALUATE)
    assert "64.5 GB" in table and "6.45e+10" not in table
    assert "2,153 days" in table or "days" in table
    data = json.loads(run(capsys, [*EVALUATE, "-f", "json"])[0])
    assert data["memory_per_gpu_bytes"] == pytest.approx(6.45e10, rel=1e-2)
    rows = {r["quantity"]: r["value"] for r in
            csv.DictReader(io.StringIO(run(capsys, [*EVALUATE, "-f", "csv"])[0]))}
    assert float(rows["memory_per_gpu_bytes"]) == data["memory_per_gpu_bytes"]


def test_evaluate_echoes_its_assumptions_in_one_line(capsys):
    _, err = run(capsys, [*EVALUATE, "-f", "json"])
    lines = [line for line in err.splitlines() if "assumed:" in line]
    assert len(lines) == 1
    line = lines[0]
    for part in ("15T tokens", "global batch 2,048 x 8,192-token sequences", "site us-average",
                 "cost by cloud", "$2.95/GPU-h on-demand"):
        assert part in line, (part, line)
    _, err = run(capsys, [*EVALUATE, "--tokens", "2e12", "--cost-basis", "tco", "-f", "json"])
    assert "2T tokens" in err and "cost by TCO (owned cluster)" in err


def test_codesign_table_is_human_and_csv_is_raw(capsys):
    args = ["codesign", "--model", "llama2-7b", "--tokens", "2e12", "--max-gpus", "64",
            "--deadline-days", "inf", "--vary", "hbm_bytes=1x,2x"]
    table, _ = run(capsys, args)
    assert "80 GB" in table and "160 GB" in table and "M USD" not in table.split("usd")[0]
    assert "2T tokens" in table
    rows = list(csv.DictReader(io.StringIO(run(capsys, [*args, "-f", "csv"])[0])))
    assert float(rows[0]["hbm_bytes"]) == 80e9
