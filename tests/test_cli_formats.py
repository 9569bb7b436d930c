"""Every command in every format: parseable output, data on stdout, exit code 0."""

import csv
import io
import json

import pytest

from planner.cli.main import main

COMMANDS = {
    "checkpoint": ["checkpoint", "--gpus", "4096"],
    "evaluate": ["evaluate", "--model", "llama2-7b", "--gpus", "64", "--tp", "1", "--pp", "1",
                 "--global-batch", "512"],
    "plan": ["plan", "--model", "llama2-7b", "--tokens", "1e12", "--hardware", "h100-sxm",
             "--max-gpus", "256"],
    "sweep": ["sweep", "--model", "llama2-7b", "--tokens", "1e12", "--min-gpus", "64",
              "--max-gpus", "256"],
    "sensitivity": ["sensitivity", "--top", "5"],
    "simulate": ["simulate", "--replicas", "200", "--tokens", "1e11"],
    "stragglers": ["stragglers", "--gpus", "128,1024", "--gc-interval", "600"],
    "validate": ["validate", "-d", "sc21"],
    "catalog list": ["catalog", "list", "sites"],
    "catalog show": ["catalog", "show", "h100-sxm"],
    "formula list": ["formula", "list", "--module", "checkpoint"],
    "formula show": ["formula", "show", "young_interval"],
    "formula eval": ["formula", "eval", "young_interval", "checkpoint_cost_s=60",
                     "mtbf_s=3600"],
}


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_every_format(capsys, name, fmt):
    code = main([*COMMANDS[name], "--format", fmt])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip(), "data goes to stdout"
    if fmt == "json":
        assert isinstance(json.loads(out), dict | list)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)
    elif fmt == "markdown":
        assert "|---" in out or out.lstrip().startswith(("#", "$$", "`"))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_unknown_format_is_one_line(capsys, name):
    code = main([*COMMANDS[name], "--format", "yaml"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_table_cells_are_not_rich_markup():
    from planner.report.output import render

    text = render([{"check [h]": "MTTF [h]", "unit": "[s]"}], "table", title="t [s]")
    assert "check [h]" in text and "MTTF [h]" in text and "[s]" in text and "t [s]" in text


def test_validate_checks_in_every_format(capsys):
    assert main(["validate", "-d", "sc21", "--checks", "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["checks"]) == {"korthikanti", "reliability", "throughput", "energy",
                                   "later_stack", "mttf_curve", "whole_run_energy", "maxtext",
                                   "quantised",
                                   "published_layouts"}
    assert main(["validate", "-d", "sc21", "--checks"]) == 0
    text = capsys.readouterr().out
    assert "Meta RSC job MTTF, 1,024 GPUs [h]" in text and "olmo2-7b GPU energy" in text
    assert "energy_total_mwh" in text


@pytest.mark.parametrize("suffix,check", [
    (".json", lambda text: json.loads(text)["step_time_s"] > 0),
    (".csv", lambda text: text.startswith("quantity,value\n")),
    (".md", lambda text: text.startswith("### ")),
    (".txt", lambda text: "step_time" in text and not text.startswith("{")),
])
def test_output_format_follows_the_file_extension(tmp_path, capsys, suffix, check):
    """Issue 18: ``-o x.json`` without ``-f`` writes JSON, not a table (``-f`` still wins)."""
    target = tmp_path / f"out{suffix}"
    assert main(["evaluate", "-m", "llama3-8b", "--gpus", "8", "-o", str(target)]) == 0
    assert check(target.read_text())
    forced = tmp_path / "forced.json"
    assert main(["evaluate", "-m", "llama3-8b", "--gpus", "8", "-f", "csv", "-o",
                 str(forced)]) == 0
    assert forced.read_text().startswith("quantity,value\n")
