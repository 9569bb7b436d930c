"""Overlap as a mechanism: collectives in buckets behind the compute that produces them.

formulas.communication.bucketed_exposed_comm_time: the compute T_x produces n buckets in
turn, each bucket's collective runs when it is ready; exposed is the last bucket's
collective, or, when communication outlasts compute, everything beyond the compute after
the first bucket.  The run model uses it for the data-parallel gradient reduction (one
bucket per layer, Megatron-Core's overlap_grad_reduce / FSDP units), the distributed
optimizer's parameter all-gather behind the next forward, and the context-parallel ring.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.communication import bucketed_exposed_comm_time
from planner import evaluate

TIMES = st.floats(0, 100)
BUCKETS = st.integers(1, 512)
FRACTION = st.floats(0, 1)


@settings(max_examples=300, deadline=None)
@given(TIMES, TIMES, BUCKETS)
def test_only_the_last_bucket_is_exposed_when_compute_covers_the_rest(comm, extra, n):
    # compute at least as long as the communication: only the last bucket's collective
    compute = comm + extra
    assert bucketed_exposed_comm_time(comm, compute, n, 1.0) \
        == pytest.approx(comm / n, rel=1e-12, abs=1e-300)


@settings(max_examples=300, deadline=None)
@given(TIMES, TIMES, BUCKETS)
def test_exposed_grows_by_what_the_compute_cannot_hide(compute, extra, n):
    # communication beyond the compute: all of it but the compute after the first bucket
    comm = compute + extra
    assert bucketed_exposed_comm_time(comm, compute, n, 1.0) \
        == pytest.approx(comm - (n - 1) / n * compute, rel=1e-9, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(TIMES, TIMES, BUCKETS, FRACTION, st.floats(0, 10))
def test_monotone_and_bounded(comm, compute, n, f, more):
    exposed = bucketed_exposed_comm_time(comm, compute, n, f)
    assert -1e-12 <= exposed <= comm * (1 + 1e-12)
    # more communication exposes more; more compute, more buckets, more overlap, less
    assert bucketed_exposed_comm_time(comm + more, compute, n, f) >= exposed - 1e-12
    assert bucketed_exposed_comm_time(comm, compute + more, n, f) <= exposed + 1e-12
    assert bucketed_exposed_comm_time(comm, compute, n + 1, f) <= exposed + 1e-12
    assert bucketed_exposed_comm_time(comm, compute, n, min(1.0, f + 0.1)) <= exposed + 1e-12


def test_no_overlap_exposes_everything_and_one_bucket_hides_nothing():
    assert bucketed_exposed_comm_time(0.8, 5.0, 16, 0.0) == pytest.approx(0.8)
    assert bucketed_exposed_comm_time(0.8, 5.0, 1, 1.0) == pytest.approx(0.8)
    # 16 layers: 1/16 of a 0.8 s reduction exposed behind a 5 s backward
    assert bucketed_exposed_comm_time(0.8, 5.0, 16, 1.0) == pytest.approx(0.05)


def test_gradient_reduction_behind_backward_in_the_run_model():
    # ZeRO-1 over 64 H100s, one micro-batch an iteration: the reduce-scatter hides behind
    # the backward but its last layer's bucket, the all-gather behind the first forward
    run = dict(model="llama3-8b", hardware="h100-sxm", gpus=64, tp=1, pp=1, cp=1,
               micro_batch=1, global_batch=64, seq_len=8192, tokens=1e12, as_frame=False)
    overlapped = evaluate(**run)  # megatron-core-2025: bucketed overlap
    serial = evaluate(stack="llm-foundry-2023", **run)  # 2023 FSDP-era stack: dp_overlap 0
    assert 0 < overlapped["dp_comm_s"] < 0.25 * serial["dp_comm_s"]
