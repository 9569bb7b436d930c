"""The former search reductions (a lexsort per call, a pairwise Pareto test), kept as references."""

import numpy as np


def reference_group_best(keys, values, mask):
    """The former implementation (a lexsort per call), kept as the reference."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((values[idx], keys[idx]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    return order[first]


def reference_kept_rows(keys, values, masks) -> np.ndarray:
    """Sorted row indices: per key, the first minimum of each array of ``values`` among the
    rows of each mask of ``masks`` (:func:`reference_group_best` of every pair)."""
    rows = set()
    for column in values:
        for mask in masks:
            rows.update(reference_group_best(keys, column, mask).tolist())
    return np.array(sorted(rows), dtype=int)


def reference_pareto_mask(values):
    """The former implementation (every row against all rows), kept as the reference."""
    n = len(values)
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        dominated = np.all(values <= values[i], axis=1) & np.any(values < values[i], axis=1)
        if dominated.any():
            keep[i] = False
    return keep
