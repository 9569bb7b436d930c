"""The split kernel (planner.engine.run.kernel.build_split_kernel): the terms that vary only
with the GPU count (the spare pool's Poisson CDFs among them) computed once per distinct
(GPU count, spare count) and spread back give bit-identical outputs."""

from __future__ import annotations

import numpy as np
import pytest
from spaces import space_inputs

from planner.engine.run import kernel_run
from planner.engine.run.kernel import build_split_kernel
from planner.engine.run.kernel_run import evaluate_columns, evaluate_inputs
from planner.engine.run.model import OUTPUTS


@pytest.fixture(autouse=True)
def numpy_kernel(monkeypatch):
    """These are the numpy kernel's own properties (the compiled one: tests/test_native.py)."""
    monkeypatch.setenv("CAPPLAN_KERNEL", "numpy")


def _same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), name
        else:
            assert (x == y).all(), name


def _unsplit(monkeypatch, call):
    """``call()`` with the whole kernel (the split one for no call)."""
    split_min = kernel_run.SPLIT_MIN
    kernel_run.SPLIT_MIN = 1 << 62
    try:
        return call()
    finally:
        kernel_run.SPLIT_MIN = split_min


@pytest.mark.parametrize("model, hardware, options", [
    ("llama3-70b", "h100-sxm", {"max_gpus": 4096}),
    ("mixtral-8x7b", "gb200", {"max_gpus": 2048, "recompute": ("selective",)}),
])
def test_split_kernel_outputs_are_bit_identical(catalog, monkeypatch, model, hardware, options):
    inputs = space_inputs(catalog, model, hardware, **options)
    assert len(inputs["gpus"]) > kernel_run.CHUNK  # several chunks share GPU counts
    split = evaluate_inputs(inputs)
    whole = _unsplit(monkeypatch, lambda: evaluate_inputs(inputs))
    _same(split, whole)
    columns = ("memory_per_gpu_bytes", "wall_time_s", "cost_usd", "energy_facility_j")
    _same(evaluate_columns(inputs, columns),
          _unsplit(monkeypatch, lambda: evaluate_columns(inputs, columns)))


def test_split_groups_by_spare_count_too(catalog, monkeypatch):
    # spare counts that vary independently of the GPU count (an explicit array)
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=1024)
    n = len(inputs["gpus"])
    inputs["spare_nodes"] = np.arange(n, dtype=float) % 7
    _same(evaluate_inputs(inputs), _unsplit(monkeypatch, lambda: evaluate_inputs(inputs)))


def test_nothing_to_split_without_array_gpu_counts():
    assert build_split_kernel(tuple(OUTPUTS), frozenset({"tp", "pp"})) is None
    # failure inputs that vary beyond the group (an uncertainty study) keep the whole kernel
    split = build_split_kernel(tuple(OUTPUTS), frozenset({"gpus", "node_mtbf_s"}))
    assert split is None


def test_split_parts_cover_the_kernel():
    prelude, prelude_args, main, main_args, shared = build_split_kernel(
        tuple(OUTPUTS), frozenset({"gpus", "tp", "dp", "spare_nodes"}))
    assert "gpus" in prelude_args and shared
    assert not set(shared) & set(main_args)


def test_prelude_values_remembered_across_calls_are_each_inputs_own(catalog, monkeypatch):
    # the prelude's values are remembered per (prelude, scalar inputs): a second call with
    # the same inputs reuses them, one with other failure inputs (same GPU counts) must not
    monkeypatch.setattr(kernel_run, "_PRELUDE_VALUES", {})
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=2048)
    other = {**inputs, "node_mtbf_s": inputs["node_mtbf_s"] / 7}
    first = evaluate_inputs(inputs)
    remembered = evaluate_inputs(inputs)
    assert kernel_run._PRELUDE_VALUES  # something was remembered
    _same(first, remembered)
    mixed = evaluate_inputs(other)
    alone = _unsplit(monkeypatch, lambda: evaluate_inputs(other))
    _same(mixed, alone)
    assert not np.array_equal(mixed["wall_time_s"], first["wall_time_s"])
    # a small call (a plan's kept rows) takes the remembered values too
    rows = np.arange(0, len(inputs["gpus"]), 97)
    few = {k: v[rows] if np.ndim(v) else v for k, v in inputs.items()}
    assert kernel_run.SPLIT_MIN <= len(rows) < kernel_run.CHUNK
    _same(evaluate_inputs(few), {k: np.asarray(v)[rows] for k, v in first.items()})


def test_prelude_memory_is_bounded(catalog, monkeypatch):
    monkeypatch.setattr(kernel_run, "_PRELUDE_VALUES", {})
    monkeypatch.setattr(kernel_run, "_PRELUDE_KEYS", 2)
    inputs = space_inputs(catalog, "llama3-8b", "h100-sxm", max_gpus=256)
    for mtbf in (1e7, 2e7, 3e7):
        evaluate_columns({**inputs, "node_mtbf_s": mtbf}, ("wall_time_s",))
    assert len(kernel_run._PRELUDE_VALUES) == 2
