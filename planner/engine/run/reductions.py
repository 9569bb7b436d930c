"""Reductions of candidate arrays in O(n log n): best row per group, Pareto front.

The search (:mod:`planner.engine.search.optimize`) reduces every block of evaluated
candidates to the best rows per GPU count and objective, and the kept rows to
their Pareto front.  Both are written here as sorts and segmented ``reduceat``
passes over numpy arrays, so their cost grows as n log n with the number of
candidates (a lexsort per objective, and a pairwise dominance test, grew faster).

>>> import numpy as np
>>> GroupMinimum(np.array([8, 8, 16, 16]), np.array([True, True, True, False])).argmin(
...     np.array([2.0, 1.0, 5.0, 0.5])).tolist()
[1, 2]
>>> pareto_mask(np.array([[1.0, 3.0], [2.0, 2.0], [2.0, 3.0], [3.0, 1.0]])).tolist()
[True, True, False, True]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

#: Significant bits an objective keeps when the search compares candidates: values equal
#: to 1 part in 2**20 (~1e-6) are ties, which go to the earlier row.  The compiled and the
#: numpy backends differ by at most ``planner.engine.run.native.RELATIVE_TOLERANCE`` (1e-10),
#: so they round a value to the same key, and choose the same layout, unless it lies
#: within 1e-10 of a rounding boundary (a chance of ~1e-4 per near-tie).
TIE_BITS = 20
#: The low bits of a double's 52-bit fraction that :func:`tie_key` rounds away.
TIE_DROP = 52 - (TIE_BITS - 1)
_EXPONENT = np.uint64(0x7FF0000000000000)
_LOW = np.uint64((1 << TIE_DROP) - 1)
_HALF_LESS_ONE = np.uint64((1 << (TIE_DROP - 1)) - 1)


def tie_key(values):
    """``values`` rounded to :data:`TIE_BITS` significant bits, half to even, on their
    binary form (NaN and infinities unchanged; the largest doubles round up to infinity;
    subnormals keep their leading fraction bits): what the search compares.  The generated
    C does the same integer operations on the same bits
    (:mod:`planner.codegen.native_source`), so both give the same keys.

    >>> tie_key(np.array([1.0, 1.0 + 2.0**-30, 3.0, -2.5, np.nan, np.inf])).tolist()
    [1.0, 1.0, 3.0, -2.5, nan, inf]
    """
    bits = np.array(values, dtype=float, ndmin=1).view(np.uint64)
    odd = (bits >> np.uint64(TIE_DROP)) & np.uint64(1)
    rounded = (bits + _HALF_LESS_ONE + odd) & ~_LOW
    key = np.where((bits & _EXPONENT) == _EXPONENT, bits, rounded).view(float)
    return key if np.ndim(values) else float(key[0])


def first_least(values) -> int:
    """Index of the first least value by :func:`tie_key` (NaN larger than every number;
    all NaN: 0): how a winner is picked from kept rows, as the search picks them.

    >>> first_least(np.array([3.0, np.nan, 1.0, 1.0 + 2.0**-30]))
    2
    """
    return int(np.argmin(np.nan_to_num(tie_key(values), nan=np.inf)))


class GroupMinimum:
    """Index of the minimum per distinct key, among the rows a mask selects.

    Built once per (keys, mask) and reused for every column: the rows are cut
    into runs of equal consecutive keys (the layout enumeration emits long runs
    of one GPU count) and the runs of each key are grouped once (a stable sort of
    the run keys); a column is then reduced twice with ``np.fmin.reduceat``, over
    the rows of each run and over the runs of each key, and nothing is sorted per
    column.  Ties go to the lowest row index and NaN counts
    as larger than every number, so the winners are those of a stable
    lexicographic sort by (key, value).
    """

    def __init__(self, keys: np.ndarray, mask: np.ndarray | None = None):
        keys = np.asarray(keys)
        self.all_rows = mask is None
        self.rows = np.arange(keys.size) if mask is None else np.flatnonzero(mask)
        run_keys = keys if mask is None else keys.take(self.rows)
        if run_keys.size:
            self.starts = np.flatnonzero(np.r_[True, run_keys[1:] != run_keys[:-1]])
            self.lengths = np.diff(np.r_[self.starts, run_keys.size])
            self.run_keys = run_keys[self.starts]
            # the runs of each key together, in run order: sorted once, for every column
            self.key_order = np.argsort(self.run_keys, kind="stable")
            keys = self.run_keys[self.key_order]
            self.key_starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            self.key_lengths = np.diff(np.r_[self.key_starts, keys.size])
        else:
            self.starts = self.lengths = self.run_keys = np.empty(0, dtype=np.intp)

    def argmin(self, values: np.ndarray) -> np.ndarray:
        """Row indices of the first minimum of ``values`` per key, in increasing key order."""
        if self.rows.size == 0:
            return self.rows
        v = np.asarray(values)
        v = v if self.all_rows and v.size == self.rows.size else v.take(self.rows)
        run_min, run_first = _first_minima(v, self.starts, self.lengths)
        # the runs of one key: the first of those holding the key's minimum
        _, key_first = _first_minima(run_min[self.key_order], self.key_starts,
                                     self.key_lengths)
        return self.rows[run_first[self.key_order[key_first]]]


def _first_minima(v: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
    """Per segment of ``v`` (``starts``, ``lengths``): its minimum (NaN only if all NaN)
    and the index of its first element equal to it (its first element if all NaN)."""
    minima = np.fmin.reduceat(v, starts)
    expanded = np.repeat(minima, lengths)
    hit = v == expanded
    if np.isnan(minima).any():  # an all-NaN segment: its first element
        hit |= np.isnan(expanded)
    hits = np.flatnonzero(hit)
    return minima, hits[np.searchsorted(hits, starts)]


def unique_runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_inverse=True)`` of a 1-D array, sorting
    only the first value of each run of equal consecutive values: a block of layouts holds
    a few hundred runs of one GPU count among 65,536 rows.

    >>> [a.tolist() for a in unique_runs(np.array([8.0, 8.0, 4.0, 4.0, 8.0]))]
    [[4.0, 8.0], [2, 0], [1, 1, 0, 0, 1]]
    """
    values = np.asarray(values)
    if values.size == 0:
        return np.unique(values, return_index=True, return_inverse=True)
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    distinct, first_run, run_inverse = np.unique(values[starts], return_index=True,
                                                 return_inverse=True)
    lengths = np.diff(np.r_[starts, values.size])
    return distinct, starts[first_run], np.repeat(run_inverse.reshape(-1), lengths)


def group_argmin(keys: np.ndarray, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Indices of the minimum of ``values`` per distinct key among rows where ``mask``."""
    return GroupMinimum(keys, mask).argmin(values)


def pareto_mask(values: np.ndarray) -> np.ndarray:
    """True for rows of ``values`` (n x k, minimised) that no other row dominates.

    Row j dominates row i when it is no worse in every column and better in
    one; equal rows do not dominate each other and a row with a NaN neither
    dominates nor is dominated.  One or two columns: a sort and a running
    minimum; three: a sweep in the order of the first column keeping the
    two-dimensional staircase of the rows seen so far (bisection, O(n log n)
    comparisons); more: pairwise, block by block.
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    if values.ndim != 2:
        raise ValueError(f"pareto_mask needs an n x k array, got shape {values.shape}")
    keep = np.ones(n, dtype=bool)
    finite = ~np.isnan(values).any(axis=1)
    if n == 0 or not finite.any():
        return keep
    rows = np.flatnonzero(finite)
    # distinct points in lexicographic order; duplicates share one verdict
    points = values[rows]
    order = np.lexsort(points.T[::-1])
    ordered = points[order]
    group = np.cumsum(np.r_[True, np.any(ordered[1:] != ordered[:-1], axis=1)]) - 1
    unique = ordered[np.r_[True, group[1:] != group[:-1]]]
    inverse = np.empty_like(group)
    inverse[order] = group
    k = unique.shape[1]
    if k == 1:
        dominated = np.arange(len(unique)) > 0
    elif k == 2:
        dominated = _dominated_2d(unique)
    elif k == 3:
        dominated = _dominated_3d(unique)
    else:
        dominated = _dominated_pairwise(unique)
    keep[rows] = ~dominated[inverse]
    return keep


def _dominated_2d(points: np.ndarray) -> np.ndarray:
    """Distinct points sorted lexicographically: dominated iff an earlier one has y <= this y."""
    y = points[:, 1]
    dominated = np.zeros(len(points), dtype=bool)
    dominated[1:] = np.minimum.accumulate(y[:-1]) <= y[1:]
    return dominated


def _dominated_3d(points: np.ndarray) -> np.ndarray:
    """Distinct points sorted lexicographically: dominated iff an earlier one is <= in y and z.

    The earlier points are kept as their 2-D non-dominated staircase (y rising,
    z falling), so one bisection finds the smallest z among those with y' <= y.
    """
    stair_y: list[float] = []
    stair_z: list[float] = []
    dominated = np.zeros(len(points), dtype=bool)
    for i, (y, z) in enumerate(points[:, 1:].tolist()):
        j = bisect_right(stair_y, y)
        if j and stair_z[j - 1] <= z:
            dominated[i] = True
            continue
        # insert (y, z); drop the staircase points it dominates (y' >= y and z' >= z)
        lo = bisect_left(stair_y, y)
        hi = lo
        while hi < len(stair_z) and stair_z[hi] >= z:
            hi += 1
        stair_y[lo:hi] = [y]
        stair_z[lo:hi] = [z]
    return dominated


def _dominated_pairwise(points: np.ndarray, block: int = 1024) -> np.ndarray:
    dominated = np.zeros(len(points), dtype=bool)
    for start in range(0, len(points), block):
        p = points[start:start + block]
        le = np.all(points[None, :, :] <= p[:, None, :], axis=2)
        lt = np.any(points[None, :, :] < p[:, None, :], axis=2)
        dominated[start:start + block] = np.any(le & lt, axis=1)
    return dominated


__all__ = ["TIE_BITS", "TIE_DROP", "GroupMinimum", "first_least", "group_argmin", "pareto_mask",
           "tie_key", "unique_runs"]
