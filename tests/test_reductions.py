"""The O(n log n) reductions pick exactly the rows of the former quadratic / lexsort ones."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_reductions import reference_group_best, reference_pareto_mask

from planner.engine.run.reductions import GroupMinimum, group_argmin, pareto_mask, unique_runs

# few distinct values so that ties, duplicates and runs of equal keys are common
VALUES = st.sampled_from([0.0, -0.0, 1.0, 1.5, 2.0, 3.0, np.inf, -np.inf, np.nan, 1e300])
KEYS = st.sampled_from([8, 16, 24, 64, 1024])


@st.composite
def grouped(draw):
    n = draw(st.integers(0, 60))
    keys = np.array(draw(st.lists(KEYS, min_size=n, max_size=n)), dtype=np.int64)
    if draw(st.booleans()):  # long runs of one key, as the layout enumeration emits
        keys = np.sort(keys) if draw(st.booleans()) else np.repeat(keys[: (n + 3) // 4], 4)[:n]
    values = np.array(draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=float)
    mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return keys, values, mask


@settings(max_examples=400, deadline=None)
@given(grouped())
def test_group_argmin_equals_lexsort_reference(case):
    keys, values, mask = case
    expected = reference_group_best(keys, values, mask)
    got = group_argmin(keys, values, mask)
    assert got.tolist() == expected.tolist()
    # one GroupMinimum serves several columns
    reducer = GroupMinimum(keys, mask)
    assert reducer.argmin(-values).tolist() == reference_group_best(keys, -values, mask).tolist()


def test_group_argmin_random_large():
    rng = np.random.default_rng(17)
    keys = rng.choice([8, 16, 32, 48, 4096], size=50_000)
    values = rng.integers(0, 50, size=50_000).astype(float)  # many ties
    values[rng.random(50_000) < 0.01] = np.nan
    mask = rng.random(50_000) < 0.6
    assert group_argmin(keys, values, mask).tolist() == reference_group_best(keys, values, mask).tolist()
    assert group_argmin(keys, values).tolist() == reference_group_best(
        keys, values, np.ones(50_000, bool)).tolist()


def test_group_argmin_empty_and_all_nan():
    assert group_argmin(np.array([1, 2]), np.array([1.0, 2.0]), np.array([False, False])).size == 0
    keys = np.array([4, 4, 4, 8])
    values = np.array([np.nan, np.nan, np.nan, 2.0])
    assert group_argmin(keys, values).tolist() == [0, 3]


@st.composite
def points(draw):
    n = draw(st.integers(0, 40))
    k = draw(st.integers(1, 4))
    flat = draw(st.lists(VALUES, min_size=n * k, max_size=n * k))
    return np.array(flat, dtype=float).reshape(n, k)


@settings(max_examples=400, deadline=None)
@given(points())
def test_pareto_mask_equals_pairwise_reference(values):
    with np.errstate(invalid="ignore"):
        expected = reference_pareto_mask(values)
    assert pareto_mask(values).tolist() == expected.tolist()


def test_pareto_mask_random_large_3d():
    rng = np.random.default_rng(3)
    values = rng.integers(0, 30, size=(3000, 3)).astype(float)  # many duplicates and ties
    values[:1000] = rng.lognormal(size=(1000, 3))
    assert pareto_mask(values).tolist() == reference_pareto_mask(values).tolist()
    # an anti-correlated cloud: a large front
    t = rng.random(3000)
    front = np.c_[t, 1 - t, rng.random(3000)]
    assert pareto_mask(front).tolist() == reference_pareto_mask(front).tolist()


def test_pareto_front_is_mutually_non_dominated():
    rng = np.random.default_rng(5)
    values = rng.random((2000, 3))
    front = values[pareto_mask(values)]
    le = np.all(front[None] <= front[:, None], axis=2)
    lt = np.any(front[None] < front[:, None], axis=2)
    assert not np.any(le & lt)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([1.0, 2.0, 8.0, 64.0, 0.0, -0.0, np.nan, np.inf]), max_size=60))
def test_unique_runs_equals_numpy_unique(values):
    a = np.array(values, dtype=float)
    got = unique_runs(a)
    want = np.unique(a, return_index=True, return_inverse=True)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w.reshape(g.shape) if w.size else w, equal_nan=True)
