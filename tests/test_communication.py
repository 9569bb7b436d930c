"""Collective communication formulas: explicit step counting, limits, properties, input kinds."""

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import communication as c
from formulas.communication import (
    allgather_bus_bandwidth,
    allgather_time,
    allreduce_bus_bandwidth,
    alltoall_time,
    exposed_comm_time,
    hierarchical_allgather_time,
    hierarchical_allreduce_time,
    p2p_time,
    reduce_scatter_time,
    ring_allreduce_time,
    tree_allreduce_time,
)
from formulas.core import Formula

COLLECTIVES = [ring_allreduce_time, tree_allreduce_time, allgather_time, reduce_scatter_time,
               alltoall_time]


# ---- closed form vs explicit step-by-step calculation ---------------------------------------

def _ring_steps(size, n, bw, lat, steps):
    """Sum, step by step, the time of `steps` ring steps each moving one S/n chunk."""
    total = 0.0
    for _ in range(steps):
        total += lat + (size / n) / bw
    return total


@pytest.mark.parametrize("n", [2, 3, 4, 8, 17, 64])
def test_ring_collectives_equal_explicit_step_sums(n):
    size, bw, lat = 1.5e9, 40e9, 7e-6
    assert ring_allreduce_time(size, n, bw, lat) == pytest.approx(
        _ring_steps(size, n, bw, lat, 2 * (n - 1)), rel=1e-12)
    assert allgather_time(size, n, bw, lat) == pytest.approx(
        _ring_steps(size, n, bw, lat, n - 1), rel=1e-12)
    assert reduce_scatter_time(size, n, bw, lat) == pytest.approx(
        _ring_steps(size, n, bw, lat, n - 1), rel=1e-12)
    # pairwise all-to-all: n-1 rounds, each one message of S/n to one peer
    assert alltoall_time(size, n, bw, lat) == pytest.approx(
        sum(p2p_time(size / n, bw, lat) for _ in range(n - 1)), rel=1e-12)
    # all-reduce = reduce-scatter + all-gather
    assert ring_allreduce_time(size, n, bw, lat) == pytest.approx(
        reduce_scatter_time(size, n, bw, lat) + allgather_time(size, n, bw, lat), rel=1e-12)


def test_ring_allreduce_worked_example():
    # 1 GB over 8 ranks at 100 GB/s, alpha 10 us: 14 x 10 us + 14/8 x 10 ms = 17.64 ms
    assert ring_allreduce_time(1e9, 8, 100e9, 10e-6) == pytest.approx(0.01764, rel=1e-12)


def test_tree_matches_nccl_model():
    """NCCL tuning.cc: tree algbw = busbw/2, latency 2 log2(n) alpha (n a power of two)."""
    size, bw, lat = 256e6, 20e9, 5e-6
    for n in [2, 4, 16, 1024]:
        expected = 2 * np.log2(n) * lat + size / (bw * 0.5)
        assert tree_allreduce_time(size, n, bw, lat) == pytest.approx(expected, rel=1e-12)
    # large messages: ring's 2(n-1)/n beats the tree's 2; small ones: the tree's log2(n) wins
    assert ring_allreduce_time(1e9, 8, bw, lat) < tree_allreduce_time(1e9, 8, bw, lat)
    assert tree_allreduce_time(1e3, 1024, bw, lat) < ring_allreduce_time(1e3, 1024, bw, lat)


def test_p2p():
    assert p2p_time(1e6, 1e9, 2e-6) == pytest.approx(1.002e-3, rel=1e-12)
    assert p2p_time(0.0, 1e9, 2e-6) == pytest.approx(2e-6)


def _hier_explicit(size, na, ne, ba, be, la, le):
    rs = (na - 1) * (la + size / na / ba)  # intra-node reduce-scatter: n_a-1 steps of S/n_a
    shard = size / na
    ar = 2 * (ne - 1) * (le + shard / ne / be)  # inter-node ring on the shard
    ag = (na - 1) * (la + size / na / ba)
    return rs + ar + ag


@pytest.mark.parametrize("na,ne", [(8, 1), (8, 2), (8, 16), (4, 128), (1, 32), (2, 3)])
def test_hierarchical_explicit(na, ne):
    args = (3.5e9, na, ne, 150e9, 25e9, 3e-6, 12e-6)
    assert hierarchical_allreduce_time(*args) == pytest.approx(_hier_explicit(*args), rel=1e-12)


@pytest.mark.parametrize("na", [1, 2, 8, 72])
def test_hierarchical_one_node_is_flat_ring(na):
    size, ba, la = 2e9, 300e9, 2e-6
    assert hierarchical_allreduce_time(size, na, 1, ba, 1.0, la, 1.0) == pytest.approx(
        ring_allreduce_time(size, na, ba, la), rel=1e-14)


def test_hierarchical_one_rank_per_node_is_flat_ring_across_nodes():
    assert hierarchical_allreduce_time(2e9, 1, 64, 1.0, 50e9, 1.0, 8e-6) == pytest.approx(
        ring_allreduce_time(2e9, 64, 50e9, 8e-6), rel=1e-14)


@pytest.mark.parametrize("f", COLLECTIVES)
def test_one_rank_costs_nothing(f):
    assert f(1e9, 1, 1e9, 1e-5) == 0.0
    arr = f(np.array([1e9, 0.0]), np.array([1, 1]), 1e9, 1e-5)
    assert np.all(arr == 0.0) and not np.any(np.isnan(arr))
    assert hierarchical_allreduce_time(1e9, 1, 1, 1e9, 1e9, 1e-5, 1e-5) == 0.0


def test_bus_bandwidth_nccl_tests():
    """nccl-tests PERFORMANCE.md: busbw = algbw 2(n-1)/n (all-reduce), (n-1)/n (all-gather)."""
    # 8 ranks, 1 GB all-reduced in 7.5 ms: algbw 133.3 GB/s -> busbw 233.3 GB/s
    algbw = 1e9 / 7.5e-3
    assert allreduce_bus_bandwidth(algbw, 8) == pytest.approx(233.333e9, rel=1e-5)
    assert allgather_bus_bandwidth(algbw, 8) == pytest.approx(116.667e9, rel=1e-5)
    # consistency: busbw of the modelled ring with zero latency equals the link bandwidth
    for n in [2, 8, 1000]:
        t = ring_allreduce_time(1e9, n, 50e9, 0.0)
        assert allreduce_bus_bandwidth(1e9 / t, n) == pytest.approx(50e9, rel=1e-12)
        t = allgather_time(1e9, n, 50e9, 0.0)
        assert allgather_bus_bandwidth(1e9 / t, n) == pytest.approx(50e9, rel=1e-12)


def test_exposed_comm_time():
    assert exposed_comm_time(10.0, 4.0, 1.0) == pytest.approx(6.0)
    assert exposed_comm_time(10.0, 40.0, 1.0) == pytest.approx(0.0)
    assert exposed_comm_time(10.0, 40.0, 0.0) == pytest.approx(10.0)
    assert exposed_comm_time(10.0, 40.0, 0.25) == pytest.approx(7.5)


# ---- properties ------------------------------------------------------------------------------

sizes = st.floats(0.0, 1e12)
ranks = st.integers(1, 100_000)
bws = st.floats(1e6, 1e13)
lats = st.floats(0.0, 1e-3)


@settings(max_examples=200, deadline=None)
@given(sizes, ranks, bws, st.floats(1.0, 100.0), lats)
def test_more_bandwidth_never_slows_a_collective(size, n, bw, factor, lat):
    for f in COLLECTIVES:
        assert f(size, n, bw * factor, lat) <= f(size, n, bw, lat) * (1 + 1e-12)
    assert p2p_time(size, bw * factor, lat) <= p2p_time(size, bw, lat) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(sizes, st.integers(1, 512), st.integers(1, 512), bws, bws, st.floats(1.0, 100.0),
       lats, lats)
def test_more_bandwidth_never_slows_hierarchical(size, na, ne, ba, be, factor, la, le):
    base = hierarchical_allreduce_time(size, na, ne, ba, be, la, le)
    assert hierarchical_allreduce_time(size, na, ne, ba * factor, be, la, le) <= base * (1 + 1e-12)
    assert hierarchical_allreduce_time(size, na, ne, ba, be * factor, la, le) <= base * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(1.0, 1e12), ranks, bws, lats, st.integers(1, 1000))
def test_more_ranks_never_make_a_ring_faster(size, n, bw, lat, extra):
    """For fixed S, the bandwidth term 2(n-1)/n S/B and the latency term grow with n."""
    for f in (ring_allreduce_time, allgather_time, reduce_scatter_time, alltoall_time,
              tree_allreduce_time):
        assert f(size, n + extra, bw, lat) >= f(size, n, bw, lat) * (1 - 1e-12)
    assert ring_allreduce_time(size, n, bw, lat) <= 2 * size / bw + 2 * (n - 1) * lat + 1e-15


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1e4), st.floats(0.0, 1e4), st.floats(0.0, 1.0))
def test_exposed_between_zero_and_comm(comm, compute, f):
    exposed = exposed_comm_time(comm, compute, f)
    assert 0.0 <= exposed <= comm
    assert exposed >= comm - compute - 1e-9


# ---- symbolic vs numeric, input kinds, domain checks ------------------------------------------

ALL = [f for f in vars(c).values() if isinstance(f, Formula)]


def test_every_formula_is_documented():
    assert len(ALL) == 33
    for f in ALL:
        assert f.reference and f.result_unit == f.units["return"] and f.result_unit, f.name
        assert all(a.unit for a in f.arguments), f.units


def _random_point(f, rng):
    point = {}
    for a in f.arguments:
        if a.domain == ">=1":
            point[a.name] = float(rng.integers(1, 5000))
        elif a.domain == "[0,1]":
            point[a.name] = float(rng.uniform(0, 1))
        elif a.domain == "(0,1]":
            point[a.name] = float(rng.uniform(0.05, 1))
        else:
            point[a.name] = float(10 ** rng.uniform(-6, 12))
    return point


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(7)
    check_symbolic(f, [_random_point(f, rng) for _ in range(20)], rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    point = _random_point(f, np.random.default_rng(3))
    check_input_kinds(f, [point] * 3, exact=True)


@pytest.mark.parametrize("call,arg", [
    (lambda: ring_allreduce_time(1e9, 8, 0.0, 1e-6), "bandwidth_bytes_per_s"),
    (lambda: tree_allreduce_time(1e9, 8, -1.0, 1e-6), "bandwidth_bytes_per_s"),
    (lambda: allgather_time(1e9, 0, 1e9, 1e-6), "ranks"),
    (lambda: reduce_scatter_time(1e9, 0.5, 1e9, 1e-6), "ranks"),
    (lambda: alltoall_time(-1.0, 8, 1e9, 1e-6), "size_bytes"),
    (lambda: p2p_time(1e6, 1e9, -1e-6), "latency_s"),
    (lambda: hierarchical_allreduce_time(1e9, 8, 0, 1e9, 1e9, 0, 0), "ranks_inter"),
    (lambda: hierarchical_allreduce_time(1e9, 8, 2, 1e9, 0.0, 0, 0),
     "bandwidth_inter_bytes_per_s"),
    (lambda: exposed_comm_time(1.0, 1.0, 1.5), "overlap_fraction"),
    (lambda: allreduce_bus_bandwidth(1e9, np.array([8, 0])), "ranks"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_hierarchical_allgather_reduces_to_flat_rings():
    # one node: the ring inside it; one rank per node: the ring across nodes
    assert hierarchical_allgather_time(26e9, 8, 1, 240e9, 40e9, 3e-6, 8e-6) == pytest.approx(
        allgather_time(26e9, 8, 240e9, 3e-6), rel=1e-12)
    assert hierarchical_allgather_time(26e9, 1, 64, 240e9, 40e9, 3e-6, 8e-6) == pytest.approx(
        allgather_time(26e9, 64, 40e9, 8e-6), rel=1e-12)
    # twice (gather + mirrored reduce-scatter) is the hierarchical all-reduce with the
    # inter-node all-reduce split into its reduce-scatter and all-gather halves
    assert 2 * hierarchical_allgather_time(26e9, 8, 8, 240e9, 40e9, 0, 0) == pytest.approx(
        hierarchical_allreduce_time(26e9, 8, 8, 240e9, 40e9, 0, 0), rel=1e-12)


@given(st.floats(1e6, 1e11), st.integers(1, 8), st.integers(1, 256),
       st.floats(1e10, 1e12), st.floats(1e9, 1e11))
def test_hierarchical_allgather_never_slower_than_nic_ring(size, na, ne, ba, be):
    """With NVLink at least as fast as a NIC, using every NIC of a node beats one ring on
    the per-rank NIC bandwidth (latency-free)."""
    ba = max(ba, be)
    hier = hierarchical_allgather_time(size, na, ne, ba, be, 0.0, 0.0)
    assert hier <= allgather_time(size, na * ne, be, 0.0) * (1 + 1e-12)
