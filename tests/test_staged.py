"""The kernel and the workbook are generated stage by stage: each named quantity of the
run model one assignment under its own name (planner/codegen/staged.py).  These tests
read the committed files: no sympy."""

import ast

import pytest

from planner.codegen.staged import variable_name
from planner.engine.run.kernel import GENERATED
from planner.engine.run.model import INPUTS, OUTPUTS


def _kernel():
    tree = ast.parse(GENERATED.read_text())
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "kernel")


def _assigned(func) -> list[str]:
    return [s.targets[0].id for s in func.body if isinstance(s, ast.Assign)]


def test_every_output_is_returned_under_its_own_name_or_an_input():
    func = _kernel()
    returned = func.body[-1].value.elts
    assert len(returned) == len(OUTPUTS)
    assigned = set(_assigned(func))
    for name, value in zip(OUTPUTS, returned, strict=True):
        assert isinstance(value, ast.Name), name
        if value.id in INPUTS:  # an output that is an input (spare_nodes, reserve_bytes)
            continue
        assert value.id == variable_name(name) and value.id in assigned, (name, value.id)


@pytest.mark.parametrize("quantity", ["tokens_mb", "microbatches", "stage_params", "t_qkv",
                                      "t_layer_fwd", "compute_mb", "tp_comm_mb",
                                      "failure_restart_s"])
def test_stage_intermediates_are_assigned_by_name(quantity):
    """Quantities later stages read (not outputs) keep their names in the kernel."""
    assert variable_name(quantity) in _assigned(_kernel())


def test_every_assignment_is_read():
    """Backward liveness: nothing is computed that no output needs."""
    func = _kernel()
    *statements, returned = func.body
    assigned = _assigned(func)
    assert len(assigned) == len(set(assigned)), "a name is assigned twice"
    read = {n.id for s in (*statements, returned) if not isinstance(s, ast.Delete)
            for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert [name for name in assigned if name not in read] == []


def test_workbook_names_follow_the_stages():
    """The Model sheet's rows follow the stages; an output's formula is on its own row,
    read by the others as ``out_<name>``."""
    from planner.report.xlsx import model_formulas

    intermediates, outputs = model_formulas()
    names = [name for name, _ in intermediates]
    assert names.index("tokens_mb") < names.index("compute_mb") < names.index("tp_comm_mb") \
        < names.index("failure_restart_s")
    assert not set(names) & set(OUTPUTS)
    assert "out_cost_tco_usd" in dict(outputs)["cost_usd"]
    assert dict(outputs)["reserve_bytes"] == "=memory_reserve_bytes"  # an input
    assert max(len(formula) for _, formula in intermediates + outputs) < 4096  # Excel: 8,192


@pytest.mark.parametrize("quantity,variable", [
    ("step_time_s", "step_time_s"), ("gpus", "gpus_q"), ("sum", "sum_q"),
    ("numpy", "numpy_q"), ("x12", "x12_q"), ("lambda", "lambda_q"), ("x_mb", "x_mb")])
def test_variable_names_never_shadow(quantity, variable):
    assert variable_name(quantity) == variable
