"""The layout space built block by block equals the full Cartesian product filtered by each
rule (uneven pipeline splits included), in order."""

import functools

import numpy as np
import pytest

from planner.engine.layouts.space import (
    LAYOUT_COLUMNS,
    RECOMPUTE_CODES,
    SpaceOptions,
    divisors,
    enumerate_layouts,
    layout_blocks,
)


def _cross(table, name, values):
    values = np.asarray(values, dtype=np.int64)
    rows = len(next(iter(table.values()))) if table else 1
    out = {k: np.repeat(v, len(values)) for k, v in table.items()}
    out[name] = np.tile(values, rows)
    return out


def _keep(table, mask):
    return {k: v[mask] for k, v in table.items()}


def reference_layouts(*, layers, heads, kv_heads, seq_len, experts, global_batch, gpus_per_node,
                      scale_up_domain, options):
    """The former enumeration: the full product, then each rule as a filter."""
    tp_values = [t for t in (options.tp or (1, 2, 4, 8, 16, 32, 64, 128))
                 if t <= scale_up_domain and heads % t == 0
                 and (kv_heads % t == 0 or t % kv_heads == 0)]
    # even splits and Megatron-Core's uneven ones (loss, or embedding and loss, as units)
    pp_values = options.pp or [p for p in range(1, min(128, layers) + 1)
                               if any(u % p == 0 for u in (layers, layers + 1, layers + 2))]
    cp_values = options.cp or ([1, 2, 4, 8] if seq_len >= 32768 else [1, 2] if seq_len >= 8192
                               else [1])
    cp_values = [c for c in cp_values if seq_len % (2 * c) == 0 or c == 1]
    ep_values = options.ep or ([e for e in divisors(experts) if e <= 64] if experts > 1 else [1])
    t = _cross({}, "tp", tp_values)
    t = _cross(t, "cp", cp_values)
    t = _cross(t, "pp", [p for p in pp_values if p <= layers])
    t = _cross(t, "vp", options.vp)
    stages = t["pp"] * t["vp"]
    t = _keep(t, ((layers % stages == 0) | ((layers + 1) % stages == 0)
                  | ((layers + 2) % stages == 0)) & (stages <= layers + 2)
              & ((t["vp"] == 1) | (t["pp"] > 1)))
    t = _cross(t, "micro_batch", options.micro_batch)
    t = _cross(t, "global_batch", [global_batch])  # the run's one batch
    t = _cross(t, "dp", divisors(global_batch))
    t["gpus"] = n = t["tp"] * t["pp"] * t["cp"] * t["dp"]
    microbatches = global_batch // np.maximum(t["dp"] * t["micro_batch"], 1)
    t = _keep(t, (n >= options.min_gpus) & (n <= options.max_gpus)
              & ((n % gpus_per_node == 0) | (gpus_per_node % n == 0))
              & (global_batch % (t["dp"] * t["micro_batch"]) == 0)
              & ((t["vp"] == 1) | (microbatches % t["pp"] == 0)))
    t = _cross(t, "ep", ep_values)
    # expert TP: TP (the default) and, for MoE, 1; EP x ETP folds over TP x CP x DP
    t = _cross(t, "etp", sorted(set(tp_values) | ({1} if experts > 1 else set())))
    t = _keep(t, ((t["etp"] == t["tp"]) | ((experts > 1) & (t["etp"] == 1)))
              & ((t["tp"] * t["cp"] * t["dp"]) % (t["ep"] * t["etp"]) == 0))
    # selective only where none is not searched: the same run under flash attention
    t = _cross(t, "recompute", [RECOMPUTE_CODES[r] for r in options.recompute
                                if r != "selective" or "none" not in options.recompute])
    t = _cross(t, "zero", options.zero)
    t = _keep(t, ((t["zero"] == 0) | (t["dp"] > 1)) & ((t["zero"] < 3) | (t["pp"] == 1)))
    # HSDP: under ZeRO-2/3 also shard within the DP ranks of one scale-up domain
    t = _cross(t, "hsdp", options.hsdp)
    domain_dp = np.clip(scale_up_domain // (t["tp"] * t["cp"]), 1, t["dp"])
    t = _keep(t, (t["hsdp"] == 0) | ((t["zero"] >= 2) & (domain_dp < t["dp"])
                                      & (t["dp"] % domain_dp == 0)))
    domain_dp = np.clip(scale_up_domain // (t["tp"] * t["cp"]), 1, t["dp"])
    t["shard_group"] = np.where(t["hsdp"] == 1, domain_dp, t["dp"])
    t = _cross(t, "sequence_parallel", options.sequence_parallel)
    t = _keep(t, (t["sequence_parallel"] == 0) | (t["tp"] > 1))
    return {k: t[k] for k in LAYOUT_COLUMNS}


SPACES = [
    dict(layers=80, heads=64, kv_heads=8, seq_len=8192, experts=1, global_batch=1024,
         gpus_per_node=8, scale_up_domain=8, options=SpaceOptions(min_gpus=8, max_gpus=4096)),
    dict(layers=32, heads=32, kv_heads=8, seq_len=32768, experts=8, global_batch=55440,
         gpus_per_node=8, scale_up_domain=72, options=SpaceOptions(max_gpus=65536)),
    dict(layers=96, heads=96, kv_heads=96, seq_len=2048, experts=1, global_batch=1536,
         gpus_per_node=4, scale_up_domain=4,
         options=SpaceOptions(min_gpus=1, max_gpus=512, zero=(0, 3), recompute=("full",),
                              sequence_parallel=(0,))),
    dict(layers=2, heads=2, kv_heads=2, seq_len=128, experts=4, global_batch=6,
         gpus_per_node=8, scale_up_domain=8, options=SpaceOptions(min_gpus=1, max_gpus=8)),
    dict(layers=32, heads=32, kv_heads=8, seq_len=4096, experts=1, global_batch=7,
         gpus_per_node=8, scale_up_domain=8, options=SpaceOptions(min_gpus=4096)),  # empty
]


#: Blocks of one layout on every space but the 4.4-million-layout MoE one (SPACES[1]: one
#: Python-level block per layout took 270 s), which takes blocks of 4,099 (not a divisor
#: of its size, so the last block is short) instead.
#: The slowest (3-7 s each: SPACES[1] in small blocks, SPACES[0] a layout at a time) run
#: with the slow tests.
#: SPACES[1] runs with the slow tests in all its block sizes: its reference and whole
#: enumerations are computed once per xdist worker for the four (:func:`_enumerations`).
_SLOW_CASES = {(0, 1), (1, 1000), (1, 4099), (1, 65536)}
BLOCK_CASES = [pytest.param(i, b, id=f"space{i}-{b}",
                            marks=[pytest.mark.slow] if (i, b) in _SLOW_CASES else [])
               for i in range(len(SPACES)) for b in (1, 1000, 65536, 4099)
               if (i, b) != (1, 1) and (b != 4099 or i == 1)]


@functools.cache
def _enumerations(index):
    """(the former enumeration, today's whole enumeration) of SPACES[index]."""
    return reference_layouts(**SPACES[index]), enumerate_layouts(**SPACES[index])


@pytest.mark.parametrize(("index", "block"), BLOCK_CASES)
def test_blocks_concatenate_to_the_former_enumeration(index, block):
    space = SPACES[index]
    reference, whole = _enumerations(index)
    blocks = list(layout_blocks(**space, block=block))
    n = len(reference["gpus"])
    assert [len(b["gpus"]) for b in blocks] == [min(block, n - s) for s in range(0, n, block)]
    for column in LAYOUT_COLUMNS:
        joined = (np.concatenate([b[column] for b in blocks]) if blocks
                  else np.empty(0, dtype=np.int64))
        np.testing.assert_array_equal(joined, reference[column], err_msg=column)
        np.testing.assert_array_equal(whole[column], reference[column], err_msg=column)
        assert whole[column].dtype == np.int64


def test_gpu_counts_of_a_slice_are_those_its_blocks_hold():
    from planner.engine.layouts.space import LayoutSpace

    space = LayoutSpace(layers=80, heads=64, kv_heads=8, seq_len=8192, experts=1,
                        global_batch=1024, gpus_per_node=8, scale_up_domain=8,
                        options=SpaceOptions(max_gpus=4096))
    for start, stop in ((0, None), (0, 1), (12345, 40000), (space.size - 3, space.size)):
        held = np.unique(np.concatenate([b["gpus"] for b in space.blocks(5000, start, stop)]))
        np.testing.assert_array_equal(space.gpu_counts(start, stop), held)
    assert space.gpu_counts(10, 10).size == 0


def test_selective_is_searched_only_as_the_same_run_as_none():
    # the search leaves out selective recompute when none is tried: under flash attention
    # (every search's) their run-model inputs are equal, so no winner is lost
    from planner.engine.layouts.space import layout_flags, search_recompute_codes

    assert search_recompute_codes(("none", "selective", "full")) == [0, 2]
    assert search_recompute_codes(("selective", "full")) == [1, 2]
    # a stack whose selective recompute is op-level (torchtitan) keeps them: its layouts
    # recompute matmuls and keep less (selective_option, the only flag that differs)
    assert search_recompute_codes(("none", "selective", "full"), op_selective=1) == [0, 1, 2]
    layout = next(layout_blocks(**SPACES[1], block=5000))
    as_none = layout_flags({**layout, "recompute": np.zeros_like(layout["recompute"])},
                           scale_up_domain=72, layers=32)
    as_selective = layout_flags({**layout, "recompute": np.ones_like(layout["recompute"])},
                                scale_up_domain=72, layers=32)
    assert as_none.keys() == as_selective.keys()
    for name in set(as_none) - {"selective_option"}:
        np.testing.assert_array_equal(as_none[name], as_selective[name], err_msg=name)
    assert not as_none["selective_option"].any() and as_selective["selective_option"].all()
    # without flash attention they differ (and evaluate takes either)
    differ = layout_flags({**layout, "recompute": np.ones_like(layout["recompute"])},
                          scale_up_domain=72, layers=32, flash_attention=False)
    assert not np.array_equal(differ["selective"], as_none["selective"])


def test_a_space_pickles_as_its_arguments():
    # a Dask task carries its space: a few hundred bytes, rebuilt once per worker process
    import pickle

    from planner.engine.layouts.space import LayoutSpace

    space = LayoutSpace(**{**SPACES[1], "options": SpaceOptions(max_gpus=65536)})
    data = pickle.dumps(space)
    assert len(data) < 2000
    again = pickle.loads(data)
    assert again.size == space.size
    for a, b in zip(space.blocks(100000), again.blocks(100000), strict=True):
        for column in LAYOUT_COLUMNS:
            np.testing.assert_array_equal(a[column], b[column])


@pytest.mark.parametrize("space", [SPACES[0], SPACES[2], SPACES[3]])
def test_take_decodes_any_rows_as_the_blocks_do(space):
    from planner.engine.layouts.space import LayoutSpace

    layouts = LayoutSpace(**space)
    whole = enumerate_layouts(**space)
    rows = np.random.default_rng(7).integers(0, layouts.size, 3000)
    rows[:2] = (0, layouts.size - 1)
    taken = layouts.take(rows)
    for column in LAYOUT_COLUMNS:
        np.testing.assert_array_equal(taken[column], whole[column][rows], err_msg=column)
    with pytest.raises(IndexError):
        layouts.take([layouts.size])


def test_shared_layout_space_is_built_once_per_arguments():
    from planner.engine.layouts.space import LayoutSpace, shared_layout_space

    a = shared_layout_space(**SPACES[2])
    assert a is shared_layout_space(**SPACES[2])
    assert a.arguments == LayoutSpace(**SPACES[2]).arguments
    options = SPACES[2]["options"]
    listed = SpaceOptions(**{**options.__dict__, "zero": list(options.zero)})
    assert shared_layout_space(**{**SPACES[2], "options": listed}) is a  # lists as tuples
