"""Every command's options are in source (issue 40): no signature spliced at run time.

The commands that share option groups are written out, every option a parameter, by
``python -m planner.codegen`` (planner/codegen/command_signatures.py) into
planner/cli/_commands_generated.py; the others are plain functions of their modules.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from planner.cli import app as cli_app
from planner.codegen import command_signatures

ROOT = Path(__file__).resolve().parents[1]


def _commands():
    """(name, the function typer runs) of every command and subcommand of capplan."""
    for name, module, attribute, group in cli_app.COMMANDS:
        target = cli_app._registered(name, module, attribute)
        if group:
            for info in target.registered_commands:
                yield f"{name} {info.name or info.callback.__name__}", info.callback
        else:
            yield name, target


def test_nothing_in_planner_splices_a_signature_or_makes_a_dataclass():
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "planner").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if "__signature__" in line or "make_dataclass" in line]
    assert found == []


@pytest.mark.parametrize("name,function", list(_commands()), ids=lambda v: str(v)[:20])
def test_every_command_signature_is_its_source(name, function):
    """What typer reads (inspect.signature) is what the def in the file says."""
    assert "__signature__" not in vars(function) and "__wrapped__" not in vars(function)
    source = inspect.getsource(function)
    node = ast.parse(source.lstrip()).body[0]
    in_source = [a.arg for a in node.args.args + node.args.kwonlyargs]
    assert list(inspect.signature(function).parameters) == in_source
    assert node.args.kwarg is None, f"{name}: options arrive as **{node.args.kwarg.arg}"


def test_app_registers_the_generated_commands():
    assert cli_app.GENERATED == set(command_signatures.REGISTERED)


def test_a_one_layout_command_lists_every_layout_option():
    from planner.cli._commands_generated import evaluate, export_xlsx, sensitivity, simulate
    from planner.cli.layout_options import LAYOUT_OPTIONS

    for command in (evaluate, sensitivity, simulate, export_xlsx):
        names = list(inspect.signature(command).parameters)
        assert names[:len(LAYOUT_OPTIONS)] == list(LAYOUT_OPTIONS), command.__name__


def test_the_generated_commands_are_fresh():
    """The committed file is what the generator writes from today's holders."""
    assert command_signatures.GENERATED.read_text() == command_signatures.generate_source()


def test_a_generated_command_passes_every_option_to_run(monkeypatch):
    from planner.cli import sensitivity_command
    from planner.cli._commands_generated import sensitivity

    seen = {}
    monkeypatch.setattr(sensitivity_command, "run", lambda **options: seen.update(options))
    values = {p.name: object() for p in inspect.signature(sensitivity).parameters.values()}
    sensitivity(**values)
    assert seen == values


@pytest.mark.parametrize("field,flag,value", [("precision", "precision", "bf17"),
                                              ("checkpoint", "checkpoint", "asink"),
                                              ("cost_basis", "cost-basis", "owned")])
def test_run_choices_are_checked_once_at_construction(field, flag, value):
    """RunChoices checks its word choices when built (scenario.check_choices, also
    Scenario.validate's): evaluate, every command and the library say the same line."""
    from planner.engine.layouts.evaluator import evaluate
    from planner.engine.run.run_inputs import RunChoices
    from planner.errors import CapplanError

    with pytest.raises(CapplanError, match=f"^--{flag} '{value}' is not one of: ") as built:
        RunChoices(**{field: value})
    with pytest.raises(CapplanError) as called:
        evaluate(model="llama2-7b", gpus=8, **{field: value})
    assert str(called.value) == str(built.value)


def test_a_bad_component_age_is_a_choice_error(capsys):
    from planner.cli.main import main

    code = main(["simulate", "--component-age", "neww"])
    err = capsys.readouterr().err
    assert code == 2 and err == ("capplan: error: --component-age 'neww' is not one of: "
                                 "stationary, new; did you mean: new?\n")


def test_scenario_of_copies_fields_by_name_and_converts_the_rest():
    from planner.cli.scenario_options import scenario_of

    s = scenario_of({"model": "llama3-8b", "tokens": 1e12, "hardware": "h100-sxm, b200",
                     "global_batch": (1024, 4096), "deadline_days": float("inf"),
                     "catalog": ["my"], "prices": "p.toml", "ownership": None,
                     "method": "lora", "lora_rank": 8, "every": True, "spares": 2},
                    objective="cost")
    assert (s.model, s.tokens, s.hardware) == ("llama3-8b", 1e12, ("h100-sxm", "b200"))
    assert (s.global_batch, s.global_batch_range, s.deadline_days) == (1024, (1024, 4096), None)
    assert (s.catalog_dirs, s.price_files, s.ownership) == (("my",), ("p.toml",), {})
    assert (s.method, s.lora_rank, s.objective) == ("lora", 8, "cost")
