"""The specialised search kernels (planner.codegen.specialise): the kernel with an optional
mechanism's inputs taken as zero and folded computes what the full kernel computes when
those inputs are zero, and the compiled search keeps the same rows with them."""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.codegen import native_source, specialise
from planner.engine.layouts.space import SpaceOptions, layout_flags
from planner.engine.run import kernel as generated
from planner.engine.run import native
from planner.engine.run.kernel import loaded_names
from planner.engine.run.run_inputs import RunChoices, base_inputs
from planner.engine.run.spares import resolve_spares
from planner.engine.search import native_search
from planner.engine.search.optimize import layout_space

needs_compiler = pytest.mark.skipif(not native.available() and os.environ.get("CI") != "true",
                                    reason="the compiled extension is not installed")


def _function(func: ast.FunctionDef):
    module = ast.fix_missing_locations(ast.Module(body=[func], type_ignores=[]))
    namespace = dict(vars(generated.generated_module()))
    exec(compile(module, "<specialised kernel>", "exec"), namespace)  # noqa: S102
    return namespace[func.name]


def _folded(expression: str, zeros=("z",)) -> str:
    func = ast.parse(f"def k(a, b, z):\n    return ({expression},)").body[0]
    return ast.unparse(specialise.folded(func, zeros).body[-1].value.elts[0])


@pytest.mark.parametrize("expression, expected", [
    ("a + z * b", "a"),
    ("(a - z) * 1", "a"),
    ("z - a", "-a"),
    ("a * (1.0 - numpy.minimum(1.0, z))", "a"),
    ("numpy.where(numpy.greater(z, 0.0), a, b)", "b"),
    ("np_pick(z, a, b)", "b"),
    ("a / (z + 2.0)", "a / 2.0"),
    ("a / z", "a / 0.0"),          # a division by zero is left to C
    ("numpy.exp(z) * a", "numpy.exp(0.0) * a"),  # exp, log, pow: C's own functions
    ("(z < 1.0) * a + b", "a + b"),
])
def test_folding_rules(expression, expected):
    assert _folded(expression) == expected


def test_unread_assignments_are_dropped_and_arguments_kept():
    func = ast.parse("def k(a, z):\n    t = a * z\n    u = a + 1.0\n    return (t + u,)"
                     ).body[0]
    folded = specialise.folded(func, ("z",))
    assert [a.arg for a in folded.args.args] == ["a", "z"]
    assert [s.targets[0].id for s in folded.body[:-1]] == ["u"]
    assert "z" not in set().union(*(loaded_names(s) for s in folded.body))


def test_every_dropped_input_is_a_kernel_input():
    """A renamed input would silently stop being specialised."""
    _, names = generated.partial_kernel(native_source.SEARCH_OUTPUTS)
    for _, zeros in specialise.VARIANTS:
        assert set(zeros) <= set(names), set(zeros) - set(names)


_OUTPUTS = native_source.SEARCH_OUTPUTS
_ARRAYS = frozenset(native_source.ROW_ARRAYS & set(generated.partial_kernel(_OUTPUTS)[1]))
_PRELUDE, _PRELUDE_NAMES, _KERNEL, _KERNEL_NAMES, _SHARED = generated.build_split_kernel(
    _OUTPUTS, _ARRAYS)
_MAIN = generated.split_kernel_trees(_OUTPUTS, _ARRAYS)[1]
_VARIANTS = {suffix: _function(specialise.folded(_MAIN, zeros))
             for suffix, zeros in specialise.VARIANTS}


@pytest.mark.parametrize("model, stack, variant", [
    ("llama3-70b", "megatron-core-2025", "dense"),
    ("llama3-70b", "megatron-core-moe-tuned", "dense"),  # CUDA graphs, MoE stack terms
    ("mixtral-8x7b", "megatron-core-2025", "lean"),
    ("mixtral-8x7b", "megatron-core-moe-tuned", "plain"),
    ("deepseek-v3", "megatron-core-moe-tuned", "transformer")])
@settings(max_examples=8, deadline=None)
@given(scale=st.floats(0.25, 4.0), seed=st.integers(0, 2**31 - 1))
def test_a_variant_computes_the_full_kernel_where_its_inputs_are_zero(catalog, model, stack,
                                                                       variant, scale, seed):
    """Python kernels (no compiler): 256 random rows of a real layout space, the peak rate
    and HBM bandwidth scaled, give the full kernel's outputs bit for bit (a +0.0 where the
    full kernel has -0.0 compares equal)."""
    x = base_inputs(catalog, RunChoices(model=model, hardware="h100-sxm", stack=stack))
    x = {**x, "peak_flops_per_s": x["peak_flops_per_s"] * scale,
         "hbm_bandwidth_bytes_per_s": x["hbm_bandwidth_bytes_per_s"] / scale}
    assert native_search.kernel_variant(x) == variant
    space = layout_space(x, SpaceOptions(max_gpus=2048))
    layout = space.take(np.random.default_rng(seed).integers(0, space.size, 256))
    inputs = resolve_spares({**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                                   layers=x["layers"])})
    shared = _PRELUDE(*(inputs[n] for n in _PRELUDE_NAMES))
    arguments = [*(inputs[n] for n in _KERNEL_NAMES), *shared]
    full, special = _KERNEL(*arguments), _VARIANTS[variant](*arguments)
    for name, a, b in zip(_OUTPUTS, full, special, strict=True):
        assert np.array_equal(np.asarray(a, float), np.asarray(b, float), equal_nan=True), name


def test_the_variant_follows_the_inputs(catalog):
    dense = base_inputs(catalog, RunChoices(model="llama3-8b", hardware="h100-sxm"))
    moe = base_inputs(catalog, RunChoices(model="mixtral-8x7b", hardware="h100-sxm",
                                          stack="megatron-core-2025"))
    assert native_search.kernel_variant(dense) == "dense"
    assert native_search.kernel_variant(moe) == "lean"
    tuned = base_inputs(catalog, RunChoices(model="mixtral-8x7b", hardware="h100-sxm",
                                            stack="megatron-core-moe-tuned"))
    assert native_search.kernel_variant(tuned) == "plain"  # the MoE stack's own terms kept
    # a feature outside the plain kernel: the transformer kernel (no hybrid terms), or the
    # full one for a hybrid model
    assert native_search.kernel_variant({**moe, "lora_rank": 16.0}) == "transformer"
    assert native_search.kernel_variant({**dense, "use_tco": 1.0}) == "transformer"
    mla = base_inputs(catalog, RunChoices(model="deepseek-v3", hardware="h100-sxm"))
    assert native_search.kernel_variant(mla) == "transformer"
    hybrid = base_inputs(catalog, RunChoices(model="nemotron-h-56b", hardware="h100-sxm"))
    assert native_search.kernel_variant(hybrid) is None
    latent = base_inputs(catalog, RunChoices(model="nemotron3-super-120b-a12b",
                                             hardware="h100-sxm"))
    assert native_search.kernel_variant(latent) is None


@needs_compiler
@pytest.mark.parametrize("model, hardware, gpus_limit, stack", [
    ("llama3-70b", "h100-sxm", 4096, "megatron-core-2025"),
    ("mixtral-8x7b", "a100-40gb", 4096, "megatron-core-2025"),
    ("qwen3-30b-a3b", "b200", 2048, "megatron-core-moe-baseline"),
    ("deepseek-v3", "h100-sxm", 1024, "megatron-core-moe-tuned")])
def test_the_compiled_search_keeps_the_same_rows_with_a_variant(catalog, monkeypatch, model,
                                                                hardware, gpus_limit, stack):
    """The whole space searched with the specialised kernel and with the full one: the
    same rows, values, fitting count and leanest memory."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    x = base_inputs(catalog, RunChoices(model=model, hardware=hardware, stack=stack))
    assert native_search.kernel_variant(x) is not None
    space = layout_space(x, SpaceOptions(max_gpus=gpus_limit))
    keywords = {"outputs": _OUTPUTS, "objectives": native_source.SEARCH_OBJECTIVES,
                "constraints": native_source.SEARCH_CONSTRAINTS, "limits": (None, None, None)}
    full, special = (native_search.search(space, x, 0, space.size, specialised=flag, **keywords)
                     for flag in (False, True))
    assert np.array_equal(full.best_rows, special.best_rows)
    assert np.array_equal(full.best_values, special.best_values, equal_nan=True)
    assert (full.fitting, full.min_memory_bytes, full.min_memory_row) == \
        (special.fitting, special.min_memory_bytes, special.min_memory_row)
