"""Hot spares chosen per candidate: ``spare_nodes = -1`` (``--spares auto``) before the kernel.

Daly's wall time is proportional to e^{R/M} (:func:`formulas.checkpoint.daly_wall_time`)
and the effective restart cost of a swap-or-re-queue is
R = t_d - M ln S(N_s), S = p_s e^{-R_s/M} + (1 - p_s) e^{-R_q/M}
(:func:`formulas.reliability.effective_restart_cost`).  Neither the solve time, the
checkpoint interval (a function of M only) nor the stall depends on the spares, so the
billed GPU-hours (N_n + N_s) g T_w of :func:`planner.analysis.simulate.optimal_spares`
are minimised by the N_s that minimises (N_n + N_s) / S(N_s): a search over whole spare
counts that needs no kernel output.  It runs once per distinct set of failure inputs
(in a plan, once per GPU count; cached across blocks, accelerators with the same failure
profile and co-design points), over that set's own range of spare counts.

>>> x = {"gpus": 16384.0, "gpus_per_node": 8.0, "gpu_mtbf_s": 285228322.0,
...      "node_mtbf_s": 180285826.0, "network_mtbf_s": 273004251.0, "rack_mtbf_s": 1e18,
...      "software_mtbf_s": 5.973e6, "software_internode_mtbf_s": 7.387e5,
...      "software_node_exponent": 0.3, "rack_nodes": 1.0, "restart_overhead_s": 600.0,
...      "requeue_restart_s": 7200.0, "node_repair_s": 86400.0, "spare_nodes": -1.0,
...      "manual_restart_fraction": 0.00716, "manual_restart_s": 28800.0}
>>> int(resolve_spares(x)["spare_nodes"])  # the Llama 3 job (formulas in docs/model.md)
16
"""

from __future__ import annotations

import threading

import numpy as np

from formulas import reliability as rel
from formulas.ops import exp
from formulas.reliability import RACK_TERMS
from formulas.special import poisson_cdf
from planner.engine.run.reductions import unique_runs

#: ``spare_nodes`` value that asks for the optimal count.
AUTO = -1.0

#: Inputs the optimal count depends on (the failure domains and restart costs).
SPARE_INPUTS = ("gpus", "gpus_per_node", "gpu_mtbf_s", "node_mtbf_s", "network_mtbf_s",
                "rack_mtbf_s", "software_mtbf_s", "software_internode_mtbf_s",
                "software_node_exponent", "rack_nodes", "restart_overhead_s",
                "requeue_restart_s", "node_repair_s", "manual_restart_fraction",
                "manual_restart_s")

#: Largest spare count searched (a bound on memory; far above any optimum seen).
MAX_SPARES = 4096


def optimal_spare_nodes(**x) -> np.ndarray:
    """Spare nodes minimising (nodes + spares) / S(spares), per row of the inputs.

    ``x`` holds the :data:`SPARE_INPUTS` as numbers or equal-length arrays (SI units).
    Each row is searched over its own range of spare counts (0 to its reach), so a row's
    count is the same alone and in a batch: the first minimum over that range (the first
    NaN, if any, as ``numpy.argmin``).  The range is walked in windows of
    :data:`SPARE_WINDOW` counts, and a row stops at the first window where
    (nodes + spares) / max(e^{-R_s/M}, e^{-R_q/M}) - a lower bound of every later
    value, as the swap probability is at most 1 - exceeds its minimum so far: the same
    count as the whole range gives (``tests/test_stage_formulas.py``), at a fraction of
    the Poisson CDFs where the reach is far above the optimum (a TPU pod as the rack).
    """
    terms = pool_terms(**x)
    # S <= max(swapped, requeued), so (nodes + s) / that bounds every value from s on
    ceiling = ((1 - terms["manual_share"]) * np.maximum(terms["swapped"], terms["requeued"])
               + terms["manual_share"] * terms["manual"])[:, 0] * (1 + _BOUND_SLACK)
    nodes, top = terms["nodes"][:, 0], terms["top"][:, 0]
    best, chosen = np.full(nodes.size, np.inf), np.zeros(nodes.size)
    active, first = np.arange(nodes.size), 0
    while active.size:
        last = int(np.nanmax(top[active], initial=0.0))
        spares = np.arange(first, min(first + SPARE_WINDOW, last + 1), dtype=float)[None, :]
        billed = billed_nodes({k: v[active] for k, v in terms.items()}, spares)
        at = np.argmin(billed, axis=1)
        low = billed[np.arange(active.size), at]
        nan = np.isnan(low)  # argmin's first NaN: that row's answer, as over the whole range
        better = nan | (low < best[active])
        best[active[better]] = low[better]
        chosen[active[better]] = spares[0, at[better]]
        first += spares.shape[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            beyond = (nodes[active] + first) / ceiling[active] > best[active]
        active = active[~(nan | beyond | (first > top[active]) | (spares.shape[1] == 0))]
    return chosen


def pool_terms(**x) -> dict[str, np.ndarray]:
    """The per-row terms of the spare-count search (columns of shape rows x 1): nodes,
    failure rates, MTBF, nodes in repair, the range's top and the survivals of a swap
    and of a re-queue (``x``: the :data:`SPARE_INPUTS`, SI units)."""
    def col(name):
        return np.atleast_1d(np.asarray(x[name], dtype=float))[:, None]

    nodes = col("gpus") / col("gpus_per_node")
    single = (rel.domain_failure_rate(col("gpus"), col("gpu_mtbf_s"))
              + rel.domain_failure_rate(nodes, col("node_mtbf_s"))
              + rel.domain_failure_rate(nodes, col("network_mtbf_s")))
    rack = rel.domain_failure_rate(nodes / col("rack_nodes"), col("rack_mtbf_s"))
    software = rel.software_failure_rate(nodes, col("software_mtbf_s"),
                                         col("software_internode_mtbf_s"),
                                         col("software_node_exponent"))
    mtbf = 1 / (single + rack + software)
    mu1 = rel.nodes_in_repair(single, col("node_repair_s"))
    mu_r = rel.nodes_in_repair(rack, col("node_repair_s"))
    m = col("rack_nodes")
    reach = mu1 + m * mu_r + 10 * np.sqrt(mu1 + m * m * mu_r) + 2 * m + 2
    return {"nodes": nodes, "single": single, "rack": rack, "software": software,
            "mtbf": mtbf, "mu1": mu1, "mu_r": mu_r, "rack_nodes": m,
            "top": np.minimum(np.ceil(reach), MAX_SPARES),  # each row's range: 0 .. top
            "swapped": np.exp(-col("restart_overhead_s") / mtbf),
            "requeued": np.exp(-col("requeue_restart_s") / mtbf),
            # a share of failures restarts by hand whatever the spares
            "manual_share": col("manual_restart_fraction"),
            "manual": np.exp(-col("manual_restart_s") / mtbf)}


def billed_nodes(terms: dict[str, np.ndarray], spares: np.ndarray) -> np.ndarray:
    """(nodes + spares) / S(spares) of each row of :func:`pool_terms` for the spare counts
    ``spares`` (a 1 x k row); +inf past the row's range."""
    t, m = terms, terms["rack_nodes"]
    single, rack = pool_swap_probabilities(spares, (1, m), t["mu1"], t["mu_r"], m)
    swap = t["mtbf"] * (t["single"] * single + t["rack"] * rack + t["software"])
    survival = ((1 - t["manual_share"]) * (swap * t["swapped"] + (1 - swap) * t["requeued"])
                + t["manual_share"] * t["manual"])
    with np.errstate(divide="ignore", invalid="ignore"):
        billed = (t["nodes"] + spares) / survival
    return np.where(spares <= t["top"], billed, np.inf)


def pool_swap_probabilities(spares, nodes_lost: tuple, single_in_repair, rack_in_repair,
                            rack_nodes) -> list[np.ndarray]:
    """:func:`formulas.reliability.pool_swap_probability` for each of ``nodes_lost`` [1],
    the same values bit for bit, with all their Poisson CDFs in one call.

    Each probability sums ``RACK_TERMS`` CDFs at N_s - n_l - m y, which overlap from one
    rack count y to the next and between the single-node (n_l = 1) and rack (n_l = m)
    losses; :func:`formulas.special.poisson_cdf` computes and looks up each distinct
    (count, mean) pair once per call, so one call over all of them does a tenth of the
    lookups of 24 calls.  The sum runs in the formula's order.
    """
    counts = [spares - lost - rack_nodes * y for lost in nodes_lost for y in range(RACK_TERMS)]
    shape = np.broadcast_shapes(*(np.shape(k) for k in counts), np.shape(single_in_repair))
    cdfs = poisson_cdf(np.stack([np.broadcast_to(k, shape) for k in counts]),
                       np.broadcast_to(single_in_repair, shape)[None])
    probabilities = []
    for first in range(0, len(counts), RACK_TERMS):
        total, factorial = 0, 1
        for y in range(RACK_TERMS):
            factorial = factorial * max(y, 1)
            weight = exp(-rack_in_repair) * rack_in_repair ** y / factorial
            total = total + weight * cdfs[first + y]
        probabilities.append(total)
    return probabilities


#: Spare counts evaluated at a time by :func:`optimal_spare_nodes`.
SPARE_WINDOW = 64
#: Relative slack of its stopping bound, far above the rounding of the survival.
_BOUND_SLACK = 1e-9


def resolve_spares(inputs: dict) -> dict:
    """``inputs`` with every ``spare_nodes`` of :data:`AUTO` replaced by the optimal count."""
    spares = inputs.get("spare_nodes", 0.0)
    auto = np.asarray(spares) == AUTO
    if not auto.any():
        return inputs
    sizes = [np.size(inputs[k]) for k in (*SPARE_INPUTS, "spare_nodes") if np.ndim(inputs[k])]
    n = sizes[0] if sizes else 1
    if n == 0:  # no candidates
        return {**inputs, "spare_nodes": np.zeros(0)}
    if n == 1:  # one candidate (evaluate's per-call path): its failure inputs are cached
        key = tuple(float(np.ravel(inputs[k])[0]) for k in SPARE_INPUTS)
        chosen = np.where(auto, _optimal_one(key), spares)
        return {**inputs, "spare_nodes": float(np.ravel(chosen)[0]) if np.ndim(spares) == 0
                else chosen}
    # one cached search per distinct set of failure inputs (in a plan, per GPU count: the
    # blocks of one accelerator, and the points of a co-design grid, share them); only the
    # inputs that vary are sorted (a plan's: the GPU count)
    varying = [k for k in SPARE_INPUTS if np.ndim(inputs[k])]
    fixed = {k: float(inputs[k]) for k in SPARE_INPUTS if k not in varying}
    if not varying:
        rows, inverse = [()], np.zeros(n, dtype=int)
    elif len(varying) == 1:
        distinct, _, inverse = unique_runs(np.broadcast_to(
            np.asarray(inputs[varying[0]], dtype=float), (n,)))
        rows = distinct[:, None].tolist()
    else:
        table = np.stack([np.broadcast_to(np.asarray(inputs[k], dtype=float), (n,))
                          for k in varying], axis=1)
        rows, inverse = np.unique(table, axis=0, return_inverse=True)
        rows = rows.tolist()

    # each row's key: the fixed values with the varying ones put in their places
    template = [fixed.get(k) for k in SPARE_INPUTS]
    places = [SPARE_INPUTS.index(k) for k in varying]

    def failure_inputs(row) -> tuple[float, ...]:
        for place, value in zip(places, row, strict=True):
            template[place] = float(value)
        return tuple(template)

    best = np.array(_optimal_many([failure_inputs(row) for row in rows]))[inverse.reshape(-1)]
    chosen = np.where(auto, best, spares)
    return {**inputs, "spare_nodes": float(chosen[0]) if n == 1 and np.ndim(spares) == 0
            else chosen}


#: Optimal spare counts found, by their failure inputs (at most _CACHE_SIZE, oldest first out).
_CACHE: dict[tuple[float, ...], float] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 4096
#: Failure-input sets searched in one batch (rows x a window of spare counts: small arrays).
_BATCH_ROWS = 256


def _optimal_one(key: tuple[float, ...]) -> float:
    """:func:`optimal_spare_nodes` of one set of :data:`SPARE_INPUTS` values (cached: a
    loop of ``evaluate()`` calls on one cluster searches the spare count once)."""
    return _optimal_many([key])[0]


def _optimal_many(keys: list[tuple[float, ...]]) -> list[float]:
    """:func:`_optimal_one` of each key; the ones not cached searched together, in batches
    (one vectorised search instead of one per GPU count: the same counts, each row over its
    own range).  One thread at a time: the threads of a Dask worker share the cache."""
    with _CACHE_LOCK:
        # by GPU count, so a batch's rows have similar ranges of spare counts
        missing = sorted((k for k in dict.fromkeys(keys) if k not in _CACHE),
                         key=lambda k: k[SPARE_INPUTS.index("gpus")])
        for start in range(0, len(missing), _BATCH_ROWS):
            batch = missing[start:start + _BATCH_ROWS]
            columns = np.array(batch, dtype=float).T
            found = optimal_spare_nodes(**dict(zip(SPARE_INPUTS, columns, strict=True)))
            _CACHE.update(zip(batch, found.tolist(), strict=True))
        values = [_CACHE[k] for k in keys]
        while len(_CACHE) > _CACHE_SIZE:  # the oldest first
            del _CACHE[next(iter(_CACHE))]
    return values
