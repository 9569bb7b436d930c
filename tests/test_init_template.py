"""``capplan init``'s example scenario follows the declared defaults and choices (issue 40:
it was a hand copy that lacked the tcdp/cci objectives and the gockpt checkpoint)."""

import re
import tomllib

import pytest

from planner.cli import scenario_file
from planner.cli.fault_options import FAULT_DEFAULTS
from planner.engine.economics.pricing import TIERS
from planner.engine.inputs import defaults


def _comment(text: str, key: str) -> str:
    line = next(x for x in text.splitlines() if x.startswith(f"{key} = "))
    return line.partition("#")[2].strip()


def _listed(text: str, key: str) -> list[str]:
    """The choices a line's comment lists: 'a | b | c (...)' -> [a, b, c]."""
    return [c.strip().split(" ")[0] for c in _comment(text, key).split(" | ")]


def test_every_value_is_the_declared_default(tmp_path):
    text = scenario_file.example("s.toml")
    data = tomllib.loads(text)
    assert set(data) >= {"model", "tokens", "objective", "checkpoint", "pricing"}
    for key, value in data.items():
        assert value == pytest.approx(defaults.DEFAULTS[key]), key
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert scenario_file.load(str(path)) == {k: defaults.DEFAULTS[k] for k in data}


def test_the_faults_section_shows_the_flags_defaults(tmp_path):
    text = scenario_file.example("s.toml")
    block = text[text.index("# [faults]"):].split("\n\n")[0]
    faults = tomllib.loads(re.sub(r"(?m)^# ", "", block))["faults"]
    assert set(faults) == set(scenario_file.FAULT_KEYS)
    for key, value in FAULT_DEFAULTS.items():
        if value is not None:
            assert faults[key] == value, key
    path = tmp_path / "f.toml"
    path.write_text(re.sub(r"(?m)^# ", "", block))
    assert scenario_file.load(str(path))["gc_pause"] == FAULT_DEFAULTS["gc_pause"]


def test_every_list_of_choices_is_the_declared_one():
    text = scenario_file.example("s.toml")
    assert _listed(text, "objective") == list(defaults.OBJECTIVES)
    assert _listed(text, "precision") == list(defaults.PRECISIONS)
    assert _listed(text, "checkpoint") == list(defaults.CHECKPOINT_SCHEMES)
    assert _listed(text, "cost_basis") == list(defaults.COST_BASES)
    assert _listed(text, "pricing") == list(TIERS)
    assert {"tcdp", "cci"} <= set(_listed(text, "objective"))
    assert "gockpt" in _listed(text, "checkpoint")


def test_a_new_choice_and_default_show_up(monkeypatch):
    monkeypatch.setattr(defaults, "OBJECTIVES", (*defaults.OBJECTIVES, "water"))
    monkeypatch.setattr(defaults, "CHECKPOINT_SCHEMES", (*defaults.CHECKPOINT_SCHEMES, "ram"))
    monkeypatch.setitem(defaults.DEFAULTS, "objective", "water")
    monkeypatch.setitem(defaults.DEFAULTS, "max_gpus", 32768)
    text = scenario_file.example("s.toml")
    assert _listed(text, "objective")[-1] == "water"
    assert _listed(text, "checkpoint")[-1] == "ram"
    data = tomllib.loads(text)
    assert data["objective"] == "water" and data["max_gpus"] == 32768
