"""The Python API checks its inputs as strictly as the CLI (issue 44, item 6).

planner.evaluate and planner.plan raise planner.errors.CapplanError (the CLI's message)
for a wrong value or a wrong kind of value, never an AttributeError, a TypeError or a
numpy message from inside; booleans are no counts; one evaluate call evaluates at most
MAX_CANDIDATES layouts.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import evaluate, plan
from planner.engine.inputs.call_checks import MAX_CANDIDATES
from planner.errors import CapplanError

BASE = dict(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1, global_batch=512,
            micro_batch=2, tokens=2e12, as_frame=False)
PLAN = dict(model="llama2-7b", hardware=["h100-sxm"], max_gpus=64, tokens=2e12)

#: Values of the wrong kind for a count or a number: booleans, None, strings, nested
#: and ragged lists, 2-D arrays, non-finite, negative and huge numbers, objects.
WRONG = st.one_of(
    st.booleans(), st.just(np.bool_(True)), st.none(), st.text(max_size=8),
    st.lists(st.lists(st.integers(1, 64), min_size=1, max_size=3), min_size=1, max_size=3),
    st.just(np.full((2, 2), 64)), st.just(np.ones((1, 1, 1))),
    st.sampled_from([math.nan, math.inf, -math.inf, -1, -64.0, 0.5, 10**30, 2**64, 1e300]),
    st.integers(max_value=-1), st.integers(min_value=10**19), st.just(object()),
    st.just(64 + 0j), st.just([64, "a"]), st.just({"gpus": 64}))

#: Keywords that take a count or a number (a layout size, the run's size).
NUMBERS = ["gpus", "tp", "pp", "cp", "micro_batch", "zero", "tokens", "global_batch",
           "seq_len"]


def _refused(call, **changes) -> str:
    """The CapplanError message of ``call`` with ``changes`` (fails on any other error)."""
    with pytest.raises(CapplanError) as info:
        call(**changes)
    message = str(info.value)
    assert message and "\n" not in message
    return message


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NUMBERS), value=WRONG)
def test_evaluate_refuses_wrong_numbers_with_capplan_error(name, value):
    if name in ("tp", "pp", "cp", "micro_batch", "zero") and value is None:
        value = True  # None: a size the search chooses, the stack's ZeRO stage
    if name in ("global_batch", "seq_len") and value is None:
        value = "x"  # None: the default
    if name == "global_batch" and isinstance(value, int) and not isinstance(value, bool) \
            and 512 <= value:
        value = -value
    message = _refused(lambda **k: evaluate(**{**BASE, **k}), **{name: value})
    assert "--" + name.replace("_", "-") in message


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(["model", "hardware", "site", "site_class", "reliability",
                             "stack", "precision", "pricing", "provider", "checkpoint",
                             "cost_basis", "recompute", "catalog", "catalog_dirs",
                             "overrides", "flash_attention", "as_frame",
                             "sequence_parallel"]),
       value=st.one_of(st.integers(), st.none(), st.booleans(), st.floats(),
                       st.lists(st.integers(), min_size=1, max_size=2),
                       st.just(np.zeros((2, 2))), st.just(object())))
def test_evaluate_refuses_wrong_kinds_with_capplan_error(name, value):
    if value is None and name in ("catalog", "overrides", "sequence_parallel", "recompute",
                                  "stack"):
        return  # None: the shipped catalog, no overrides, sequence parallel where tp > 1,
        # selective recompute (full where selective does not fit), the accelerator's stack
    if isinstance(value, bool | int) and not isinstance(value, bool) and value in (0, 1) \
            and name == "sequence_parallel":
        return  # a switch: 0 and 1 are its values
    if isinstance(value, list) and set(value) <= {0, 1} and name == "sequence_parallel":
        return  # one switch a layout (check_flag: integers, one or an array)
    if isinstance(value, bool) and name in ("flash_attention", "as_frame",
                                            "sequence_parallel"):
        return
    _refused(lambda **k: evaluate(**{**BASE, **k}), **{name: value})


@pytest.mark.parametrize(("changes", "expected"), [
    (dict(model=5), "--model must be a catalog id or a TOML path (str)"),
    (dict(hardware=["h100-sxm", "a100-80gb"]), "evaluate takes one accelerator"),
    (dict(catalog="x"), "catalog must be None or a loaded catalog"),
    (dict(gpus=True), "--gpus must be an integer >= 1 and <= 2**24, got True (bool)"),
    (dict(tp=np.array([True, True])), "--tp must be an integer"),
    (dict(gpus=None), "--gpus must be an integer >= 1 and <= 2**24, got None"),
    (dict(gpus=np.full((2, 2), 64)), "--gpus must be a number or a one-dimensional array"),
    (dict(sequence_parallel="yes"), "sequence_parallel' must be an integer in [0, 1], got 'yes'"),
    (dict(gpus=[64, 64, 64], tp=[1, 1]), "--tp has 2 entries but --gpus has 3"),
    (dict(global_batch=[512, 1024]), "--global-batch must be one number"),
    (dict(overrides=5), "overrides must be a dict"),
    (dict(flash_attention="no"), "flash_attention must be True or False"),
    (dict(provider=5), "--provider must be a name (str)"),
])
def test_evaluate_specific_cases(changes, expected):
    assert expected in _refused(lambda **k: evaluate(**{**BASE, **k}), **changes)


def test_evaluate_caps_candidates_before_any_work():
    started = time.perf_counter()
    message = _refused(lambda **k: evaluate(**{**BASE, **k}),
                       gpus=np.full(10 * MAX_CANDIDATES, 64))
    assert time.perf_counter() - started < 5.0  # was 50 s and 8.7 GB
    assert f"{MAX_CANDIDATES:,}" in message and "slices" in message
    # an override array counts as candidates too
    _refused(lambda **k: evaluate(**{**BASE, **k}),
             overrides={"tokens": np.full(MAX_CANDIDATES + 1, 2e12)})


def test_evaluate_still_takes_arrays_and_switches():
    r = evaluate(**{**BASE, "as_frame": True, "gpus": np.array([64, 128]),
                    "sequence_parallel": np.array([True, False])})
    assert list(r["gpus"]) == [64, 128]
    assert evaluate(**{**BASE, "sequence_parallel": True})["fits"] in (True, False)


@pytest.mark.parametrize(("changes", "expected"), [
    (dict(model=5), "--model must be a catalog id or a TOML path (str)"),
    (dict(hardware=5), "--hardware must be a list"),
    (dict(hardware=[["h100-sxm"]]), "--hardware must be a list"),
    (dict(catalog="x"), "catalog must be None or a loaded catalog"),
    (dict(min_gpus=True), "--min-gpus must be an integer"),
    (dict(tokens=None), "--tokens must be a finite number"),
    (dict(tokens=True), "got True (bool)"),
    (dict(stack=5), "--stack must be"),
    (dict(pricing=5), "--pricing must be a name"),
    (dict(confidence="x"), "--confidence must be a quantile in [0.001, 0.999], got 'x'"),
    (dict(catalog_dirs=5), "catalog_dirs must be a list"),
    (dict(global_batch=np.ones((2, 2))), "--global-batch must be one number"),
    (dict(options=5), "options must be None or a SpaceOptions"),
])
def test_plan_specific_cases(changes, expected):
    assert expected in _refused(lambda **k: plan(**{**PLAN, **k}), **changes)


def test_plan_names_the_nearest_keywords_for_a_misspelt_one():
    """As evaluate() does: Python's TypeError, with the nearest Scenario fields."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_gpu'; did you mean: "
                                        "max_gpus"):
        plan(**PLAN, max_gpu=64)
