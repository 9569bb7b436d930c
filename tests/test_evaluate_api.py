"""planner.evaluate(..., as_frame=False): the light per-call path against the DataFrame path.

The light path runs the kernel on float64 scalars; the DataFrame path on arrays.  The
values agree to rounding: REL relative, except the terms the model computes by
subtracting nearly equal numbers (``1 - (1 - p)**n`` in the launch and pause terms),
where one ulp of ``pow`` is amplified; those get REL_ILL.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hardware_catalog import load_catalog
from planner import evaluate
from planner.engine.layouts.result import Evaluation
from planner.engine.layouts.space import (
    RECOMPUTE_CODES,
    SpaceOptions,
    enumerate_layouts,
    layout_flags,
    layout_flags_one,
)
from planner.engine.run.run_inputs import RunChoices, base_inputs

REL = 1e-13
REL_ILL = 1e-6
#: The compiled kernel (planner.engine.run.native) takes exp/log/pow from glibc's libmvec,
#: the light path from libm: values chained through several of them (the wall time
#: through the waste fraction) agree to this.
REL_COMPILED = 1e-12

RUNS = [
    dict(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1, global_batch=512,
         micro_batch=2, tokens=2e12),
    dict(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4),
    dict(model="llama3-8b", gpus=8),  # layout chosen by the search
    dict(model="mixtral-8x7b", hardware="h100-sxm", gpus=64, tp=2, pp=2, ep=4, zero=3,
         recompute="full", pricing="spot"),
    dict(model="mixtral-8x7b", gpus=16, tp=1, pp=1, micro_batch=1),
    dict(model="gpt3-175b", hardware="a100-80gb", gpus=1024, tp=8, pp=8, vp=2,
         sequence_parallel=False, checkpoint="async", flash_attention=False),
    dict(model="llama3-70b", gpus=256, tp=8, pp=4, overrides={"step_time_cv": 0.0,
                                                                "tokens": 1e12}),
]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _close(a, b, rel):
    if isinstance(b, str) or isinstance(a, bool | np.bool_):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


@pytest.mark.parametrize("run", RUNS)
def test_light_result_equals_the_frame(catalog, run):
    frame, x_frame = evaluate(catalog=catalog, return_inputs=True, **run)
    light, x_light = evaluate(catalog=catalog, as_frame=False, return_inputs=True, **run)
    assert isinstance(light, Evaluation)
    row = frame.iloc[0].to_dict()
    assert list(light) == list(row)  # same columns, same order
    for name, value in light.items():
        assert type(value) in (str, int, float, bool), (name, type(value))
        assert _close(row[name], value, REL_ILL), (name, row[name], value)
    exact = [n for n in light if not isinstance(light[n], float)]
    assert all(row[n] == light[n] for n in exact)
    # and the inputs the kernel saw are the same numbers
    assert set(x_frame) == set(x_light)
    for name in x_frame:
        assert float(np.ravel(x_frame[name])[0]) == float(x_light[name]), name


@pytest.mark.parametrize("run", RUNS[:3])
def test_light_result_to_frame_is_the_default_frame(catalog, run):
    frame = evaluate(catalog=catalog, **run)
    again = evaluate(catalog=catalog, as_frame=False, **run).to_frame()
    assert list(again.columns) == list(frame.columns)
    assert list(again.dtypes) == list(frame.dtypes)
    assert len(again) == 1


@pytest.mark.parametrize("kernel, rel", [("numpy", REL), ("auto", REL_COMPILED)])
def test_most_values_agree_to_rounding(catalog, monkeypatch, kernel, rel):
    monkeypatch.setenv("CAPPLAN_KERNEL", kernel)
    frame = evaluate(catalog=catalog, **RUNS[1]).iloc[0]
    light = evaluate(catalog=catalog, as_frame=False, **RUNS[1])
    close = [n for n, v in light.items() if isinstance(v, float) and _close(frame[n], v, rel)]
    floats = [n for n, v in light.items() if isinstance(v, float)]
    assert len(close) >= 0.8 * len(floats)


def test_array_inputs_keep_the_vectorised_path(catalog):
    gpus = np.array([64, 128, 256])
    light = evaluate(catalog=catalog, model="llama2-7b", gpus=gpus, tp=1, pp=1, as_frame=False)
    frame = evaluate(catalog=catalog, model="llama2-7b", gpus=gpus, tp=1, pp=1)
    assert light.layouts == 3
    np.testing.assert_array_equal(light["step_time_s"], frame["step_time_s"].to_numpy())
    assert list(light.to_frame()["gpus"]) == [64, 128, 256]


def test_errors_are_the_same(catalog):
    from planner.errors import CapplanError

    for as_frame in (True, False):
        with pytest.raises(CapplanError, match="does not divide --gpus"):
            evaluate(catalog=catalog, model="llama2-7b", gpus=12, tp=8, pp=1, cp=1, ep=1,
                     vp=1, micro_batch=1, as_frame=as_frame)
        with pytest.raises(CapplanError, match="--gpus must be"):
            evaluate(catalog=catalog, model="llama2-7b", gpus=0, as_frame=as_frame)


def test_catalog_inputs_are_cached_per_catalog_and_copied(catalog):
    a = base_inputs(catalog, RunChoices(model="llama2-7b", hardware="h100-sxm", tokens=1e12))
    a["hidden"] = -1.0  # the caller's copy only
    b = base_inputs(catalog, RunChoices(model="llama2-7b", hardware="h100-sxm", tokens=2e12))
    assert b["hidden"] > 0 and b["tokens"] == 2e12
    spot = base_inputs(catalog, RunChoices(model="llama2-7b", hardware="h100-sxm", pricing="spot"))
    assert spot["node_mtbf_s"] < b["node_mtbf_s"]


def test_layout_flags_one_equals_layout_flags(catalog):
    x = base_inputs(catalog, RunChoices(model="mixtral-8x7b", hardware="h100-sxm"))
    options = SpaceOptions(min_gpus=1, max_gpus=512,
                           recompute=tuple(RECOMPUTE_CODES), zero=(0, 1, 2, 3))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=8, scale_up_domain=8,
        options=options)
    n = len(layout["gpus"])
    assert n > 1000
    for flash in (True, False):
        arrays = layout_flags(layout, scale_up_domain=8.0, layers=x["layers"],
                              flash_attention=flash)
        for i in range(0, n, max(1, n // 500)):
            one = layout_flags_one({k: v[i] for k, v in layout.items()}, scale_up_domain=8.0,
                                   layers=x["layers"], flash_attention=flash)
            assert list(one) == list(arrays)
            for name, value in one.items():
                assert type(value) is float and value == arrays[name][i], (name, i)


def test_every_run_option_of_evaluate_is_a_run_choice_or_a_layout_size():
    """`capplan evaluate` hands its options over as RunChoices and a LayoutRequest: an
    option in neither would be dropped silently."""
    from dataclasses import fields

    from planner.cli.fault_options import FAULT_OPTIONS
    from planner.cli.layout_options import LAYOUT_OPTIONS
    from planner.engine.inputs.scenario import NETWORK_FLAGS
    from planner.engine.layouts.evaluator import LayoutRequest
    from planner.engine.run.run_inputs import RunChoices

    handed = {f.name for f in (*fields(RunChoices), *fields(LayoutRequest))}
    # --catalog and --prices go to the catalog (load_catalog), --network and
    # --recompute-modules to the overrides (planner.analysis.one_run.evaluate_one)
    rest = (set(LAYOUT_OPTIONS) - set(FAULT_OPTIONS) - set(NETWORK_FLAGS)
            - {"catalog", "prices", "network", "recompute_modules"})
    assert rest <= handed, rest - handed
