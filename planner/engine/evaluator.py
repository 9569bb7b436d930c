"""Evaluate candidate training runs with the compiled kernel, in bounded chunks.

``evaluate_inputs`` is the array engine (dict of arrays in, dict of arrays out);
``evaluate`` is the notebook API: one or many layouts of a model on an
accelerator, a pandas DataFrame back whose column names carry units.

>>> from planner import evaluate
>>> df = evaluate(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1,
...               global_batch=512, micro_batch=2, tokens=2e12)
>>> bool(df.loc[0, "fits"]), bool(0 < df.loc[0, "mfu"] < 1)
(True, True)
"""

from __future__ import annotations

import math
import threading
from functools import cache

import numpy as np

from planner.engine.columns import conversions, memory_terms
from planner.engine.model import INPUTS, OUTPUTS
from planner.engine.scenario import DEFAULTS, PREFERRED_LAYOUT

#: Candidates per kernel call; bounds memory whatever the size of the space.
CHUNK = 4096

_KERNEL = None


def kernel():
    global _KERNEL
    if _KERNEL is None:
        from planner.engine.kernel import load_kernel

        _KERNEL = load_kernel()
    return _KERNEL


def evaluate_inputs(inputs: dict, chunk: int = CHUNK, *,
                    compiled: bool | None = None) -> dict[str, np.ndarray]:
    """Run the kernel over candidates; every output is an array of the candidates' length
    (``compiled``: see :func:`run_kernel`)."""
    missing = [name for name in INPUTS if name not in inputs]
    if missing:
        raise KeyError(f"missing run-model inputs: {', '.join(missing)}")
    return finish(run_kernel(kernel(), INPUTS, OUTPUTS, inputs, chunk, compiled=compiled),
                  inputs)


def candidate_count(inputs: dict) -> int:
    """The common length of the array inputs (1 when all are scalars)."""
    sizes = {np.size(v) for v in inputs.values() if _is_array(v)}
    if len(sizes) > 1:
        raise ValueError(f"input arrays have different lengths: {sorted(sizes)}")
    return sizes.pop() if sizes else 1


def _is_array(value) -> bool:
    """Whether an input holds one value per candidate (``np.ndim`` is slow on floats)."""
    if type(value) in (float, int, np.float64):
        return False
    return value.ndim > 0 if isinstance(value, np.ndarray) else np.ndim(value) > 0


def evaluate_columns(inputs: dict, columns, chunk: int = CHUNK, *,
                     compiled: bool | None = None) -> dict[str, np.ndarray]:
    """Only ``columns`` (kernel outputs, ``fits`` or the unit columns of :func:`finish`).

    Runs the part of the kernel these columns need (:func:`planner.engine.kernel.partial_kernel`),
    so the values are bit-identical to :func:`evaluate_inputs`' at a fraction of the
    work when few outputs are asked for (memory per GPU alone: ~7x faster).
    ``compiled``: see :func:`run_kernel`.
    """
    from planner.engine.kernel import partial_kernel

    needed = needed_outputs(tuple(columns))
    f, names = partial_kernel(needed)
    out = run_kernel(f, names, needed, inputs, chunk, compiled=compiled)
    for name, source, divisor in conversions():
        if source in out:
            out[name] = out[source] / divisor
    if "fits" in columns:
        out["fits"] = out["memory_per_gpu_bytes"] <= np.asarray(inputs["hbm_bytes"], dtype=float)
    return {name: out[name] for name in columns}


@cache
def needed_outputs(columns: tuple[str, ...]) -> tuple[str, ...]:
    """The kernel outputs :func:`evaluate_columns` computes for ``columns``."""
    derived = {name: source for name, source, _ in conversions()}
    derived["fits"] = "memory_per_gpu_bytes"
    needed: list[str] = []
    for column in columns:
        while column in derived:
            column = derived[column]
        if column not in OUTPUTS:
            raise KeyError(f"not an output column: {column}")
        if column not in needed:
            needed.append(column)
    return tuple(needed)


def run_kernel(f, names, outputs, inputs: dict, chunk: int = CHUNK, *,
               compiled: bool | None = None) -> dict[str, np.ndarray]:
    """``f(*inputs[names])`` over chunks of ``chunk`` candidates into one array per output.

    Calls of :data:`NATIVE_MIN` candidates or more run the compiled kernel where it is
    available (:func:`native_kernel`); smaller ones run numpy (a one-shot query would
    otherwise spend more on building the compiled kernel, ~0.1 s per process and kernel,
    than on its few hundred candidates), unless ``compiled=True``: then any call with
    array inputs runs it, as the rows a search keeps do, so their values are the bits
    that selected them.

    ``spare_nodes = -1`` (``--spares auto``) becomes each candidate's optimal spare count
    first (:func:`planner.engine.spares.resolve_spares`).
    """
    if "spare_nodes" in names:
        from planner.engine.spares import resolve_spares

        inputs = resolve_spares(inputs)
    n = candidate_count(inputs)
    values = [inputs[name] for name in names]
    is_array = [_is_array(v) for v in values]
    wanted = any(is_array) and (n >= NATIVE_MIN if compiled is None else compiled)
    native = native_kernel(tuple(outputs), inputs) if wanted else None
    if native is not None:  # the C kernel: every candidate at once, no temporaries
        split, function = native
        # the kernel's array inputs given as one value are spread over the candidates
        given = {**inputs, **{k: np.broadcast_to(np.asarray(inputs[k], dtype=float), (n,))
                              for k in function.arrays if not _is_array(inputs[k])}}
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            table, inverse = prelude_table(split[0], split[1], given)
            if table.size < TABLE_LIMIT:  # the C index is 32-bit
                every = dict(zip(function.outputs, function(n, given, inverse, table),
                                 strict=True))
                return {name: every[name] for name in outputs}
    if n >= SPLIT_MIN:  # the GPU-count terms once per distinct GPU count of the call
        from planner.engine.kernel import split_kernel

        split = split_kernel(tuple(outputs), frozenset(
            k for k, a in zip(names, is_array, strict=True) if a), build=n >= SPLIT_BUILD_MIN)
        if split:
            f = _SplitCall(split, names)
            f.prepare(*values)
    if n <= chunk:  # one chunk: no copy
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = f(*values)  # a split call: rows = all
        return {name: np.broadcast_to(np.asarray(v, dtype=float), (n,))
                for name, v in zip(outputs, result, strict=True)}
    values = [v if a else float(v) for v, a in zip(values, is_array, strict=True)]
    out, columns = {}, []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            args = [v[start:stop] if a else v for v, a in zip(values, is_array, strict=True)]
            result = f(*args, rows=slice(start, stop)) if isinstance(f, _SplitCall) else f(*args)
            if not columns:  # an output of scalar inputs only is one value: a broadcast view
                for name, v in zip(outputs, result, strict=True):
                    out[name] = (np.empty(n) if np.ndim(v) else
                                 np.broadcast_to(np.asarray(v, dtype=float), (n,)))
                columns = [out[name] if np.ndim(v) else None
                           for name, v in zip(outputs, result, strict=True)]
            for column, v in zip(columns, result, strict=True):
                if column is not None:
                    column[start:stop] = v
            del result, v  # free the chunk's arrays before the next call reuses their memory
    return out


def native_kernel(outputs: tuple[str, ...], inputs: dict):
    """The compiled kernel that computes ``outputs`` for ``inputs``
    (:func:`planner.engine.native.rows_kernel`: every output, for candidates whose array
    inputs are among its own): ``(split kernel, compiled function)``, or ``None`` on the
    numpy backend or where an input it reads as one value varies per candidate.

    The compiled kernel is the split kernel's main part, fed the prelude's values
    (computed by numpy, once per GPU count) through a table.
    """
    from planner.engine import native

    if not native.available():
        return None
    rows = native.manifest.ROWS
    if not set(outputs) <= set(rows["outputs"]):
        return None
    with _NATIVE_LOCK:
        if "rows" not in _NATIVE:
            from planner.engine import kernel as generated

            _NATIVE["rows"] = (generated.split_kernel(rows["outputs"],
                                                      frozenset(rows["array_set"])),
                               native.rows_kernel())
        found = _NATIVE["rows"]
    split, function = found
    one_value = set(function.scalars) | (set(split[1]) - set(rows["array_set"]))
    if any(_is_array(inputs[k]) for k in one_value):
        return None
    return found


_NATIVE: dict = {}
_NATIVE_LOCK = threading.Lock()


#: Candidates from which :func:`run_kernel` runs the compiled kernel unless told.
NATIVE_MIN = CHUNK
#: Values in a split call's table up to which the compiled kernel reads it (its row index
#: is a 32-bit int; beyond, ~10^7 distinct GPU counts in one call, numpy runs).
TABLE_LIMIT = 1 << 31

#: Candidates from which :func:`run_kernel` runs the split kernel (a few distinct GPU
#: counts among many candidates; below this the grouping costs more than it saves) ...
SPLIT_MIN = 64
#: ... and from which it builds it if not built yet (the same values either way: a
#: one-shot query's ~100 candidate layouts do not pay for the build).
SPLIT_BUILD_MIN = 1024


class _SplitCall:
    """``f(*values)`` of :func:`run_kernel` by the split kernel
    (:func:`planner.engine.kernel.build_split_kernel`): the prelude on the distinct
    (GPU count, spare count) pairs of the candidates, spread back, then the main part.

    :meth:`prepare` groups the whole call's candidates by pair once and runs the prelude
    on the pairs not known yet; the values are remembered per prelude and scalar inputs
    (:data:`_PRELUDE_VALUES`), so the blocks of a search compute each GPU count's terms
    once.  A chunk (``rows`` of the call) then only looks its pairs' values up.
    """

    def __init__(self, split, names):
        self.prelude, self.prelude_names, self.main, self.main_names, _ = split
        self.names = list(names)

    def prepare(self, *values) -> None:
        """Group the candidates of ``values`` (the whole call's inputs) by pair: a table of
        the prelude's values per distinct pair, and each candidate's row in it."""
        self.table, self.inverse = prelude_table(self.prelude, self.prelude_names,
                                                 dict(zip(self.names, values, strict=True)))

    def __call__(self, *values, rows=slice(None)):
        """The outputs of the candidates ``rows`` of the prepared call (``values``: theirs)."""
        given = dict(zip(self.names, values, strict=True))
        shared = self.table[self.inverse[rows]].T
        return self.main(*(given[k] for k in self.main_names), *shared)


def prelude_table(prelude, prelude_names, given: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(table, inverse)``: the split kernel's ``prelude`` values (a row per distinct
    (GPU count, spare count) pair of ``given``, the inputs by name) and each candidate's
    row in it.  Values are remembered per prelude and scalar inputs (:func:`_remembered`),
    so the blocks of a search compute each GPU count's terms once."""
    from planner.engine.kernel import SPLIT_GROUP

    columns = [np.asarray(given[k], dtype=float) for k in SPLIT_GROUP
               if k in given and np.ndim(given[k]) > 0]
    n = max(np.size(c) for c in columns)
    first, inverse = _group_pairs(*(np.broadcast_to(c, (n,)) for c in columns))
    keys = [complex(*pair) for pair in zip(*(c[first].tolist() for c in columns), strict=True)]
    known = _remembered(prelude, tuple(
        float(given[k]) for k in prelude_names if np.ndim(given[k]) == 0))
    new = [i for i, key in enumerate(keys) if key not in known or key != key]
    fresh = {}
    if new:
        picked = first[new]
        computed = [np.broadcast_to(np.asarray(v, dtype=float), (len(new),))
                    for v in prelude(*(given[k][picked] if np.ndim(given[k]) > 0
                                       else given[k] for k in prelude_names))]
        for j, i in enumerate(new):
            fresh[i] = [c[j] for c in computed]
            if keys[i] == keys[i]:  # a NaN key is never the same key again
                known[keys[i]] = fresh[i]
    table = np.array([fresh[i] if i in fresh else known[key] for i, key in enumerate(keys)],
                     dtype=float)
    return table, inverse.reshape(-1)


#: Pairs of whole numbers below this are grouped by one float key (exact below 2**53).
_PAIR_SCALE = float(1 << 26)


def _group_pairs(a: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(a, b)`` pairs: the first row of each and every row's pair, as
    :func:`numpy.unique` gives them (a NaN is a pair of its own, as it is a candidate of
    its own).  Whole numbers in ``[0, 2**26)`` (GPU and spare counts) are sorted as one
    float key, several times faster than complex pairs."""
    b = np.zeros_like(a) if b is None else b
    if (np.all((a >= 0) & (a < _PAIR_SCALE) & (b >= 0) & (b < _PAIR_SCALE))
            and np.array_equal(a, np.rint(a)) and np.array_equal(b, np.rint(b))):
        from planner.engine.reductions import unique_runs

        _, first, inverse = unique_runs(a * _PAIR_SCALE + b)
    else:
        pairs = np.empty(len(a), dtype=complex)
        pairs.real, pairs.imag = a, b
        _, first, inverse = np.unique(pairs, return_index=True, return_inverse=True,
                                      equal_nan=False)
    return first, inverse.reshape(-1)


def _remembered(prelude, scalars: tuple) -> dict:
    """The remembered values of ``prelude`` for these scalar inputs (a new dict if none)."""
    key = (prelude, scalars)
    with _PRELUDE_LOCK:  # the threads of a Dask worker share it
        known = _PRELUDE_VALUES.pop(key, None)
        if known is None or len(known) > _PRELUDE_PAIRS:
            known = {}
        _PRELUDE_VALUES[key] = known  # most recently used last
        while len(_PRELUDE_VALUES) > _PRELUDE_KEYS:
            del _PRELUDE_VALUES[next(iter(_PRELUDE_VALUES))]
    return known


#: Prelude values remembered across calls: (prelude, its scalar inputs) -> {pair: values}.
#: At most this many sets of scalar inputs (least recently used dropped) ...
_PRELUDE_KEYS = 64
#: ... and this many pairs per set (a set grown past it starts again).
_PRELUDE_PAIRS = 1 << 16
_PRELUDE_VALUES: dict = {}
_PRELUDE_LOCK = threading.Lock()


def finish(out: dict[str, np.ndarray], inputs: dict) -> dict[str, np.ndarray]:
    """The ``finish`` columns of :mod:`planner.engine.columns`: fits, the largest memory
    term, and the unit conversions at the edge."""
    n = len(out["step_time_s"])
    hbm = np.broadcast_to(np.asarray(inputs["hbm_bytes"], dtype=float), (n,))
    out["hbm_bytes"] = np.array(hbm)
    out["fits"] = out["memory_per_gpu_bytes"] <= hbm
    out["largest_memory_term_index"] = largest_index(out, memory_terms())
    for name, source, divisor in conversions():
        out[name] = out[source] / divisor
    return out


def largest_index(out: dict[str, np.ndarray], terms: tuple[str, ...]) -> np.ndarray:
    """Per candidate, the index into ``terms`` of the largest (the first of equals)."""
    largest = np.zeros(len(out[terms[0]]), dtype=np.int8)
    biggest = out[terms[0]]
    for i, term in enumerate(terms[1:], start=1):
        larger = out[term] > biggest
        largest[larger] = i
        biggest = np.maximum(biggest, out[term])
    return largest


def base_inputs(catalog, *, model, hardware, site=DEFAULTS["site"],
                site_class=DEFAULTS["site_class"], reliability=DEFAULTS["reliability"], precision=DEFAULTS["precision"],
                checkpoint=DEFAULTS["checkpoint"], cost_basis=DEFAULTS["cost_basis"],
                seq_len=None, tokens=DEFAULTS["tokens"], global_batch=None,
                pricing=DEFAULTS["pricing"], provider=DEFAULTS["provider"],
                spot_interruption=DEFAULTS["spot_interruption"],
                stack=DEFAULTS["stack"]) -> dict[str, float]:
    """Scalar run-model inputs for a model on one accelerator at one site (domains checked).

    ``stack`` names the software stack (catalog kind ``stack``: overlaps, fused-attention
    efficiency, launch overhead), or is a stack entry.

    The price per GPU-hour is resolved by :func:`planner.engine.pricing.price_quote`
    (tier ``pricing``, ``provider``); ``pricing="owned"`` selects the TCO cost basis;
    ``pricing="spot"`` adds preemptions (``spot_interruption``: an interruption bucket or
    a monthly fraction) to the node failure rate of the Young/Daly/restart model.
    The catalog part is computed once per catalog and choice of entries (see
    :func:`catalog_inputs`).
    """
    from planner.engine.domains import check
    from planner.engine.scenario import default_global_batch

    check({"tokens": tokens, "global_batch": global_batch, "seq_len": seq_len})
    x = catalog_inputs(catalog, model=model, hardware=hardware, site=site,
                       site_class=site_class, reliability=reliability, precision=precision, checkpoint=checkpoint,
                       cost_basis=cost_basis, seq_len=seq_len, pricing=pricing,
                       provider=provider, spot_interruption=spot_interruption, stack=stack)
    x["tokens"] = float(tokens)
    x["global_batch"] = float(global_batch or default_global_batch(x["seq_len"]))
    check({"global_batch": x["global_batch"]})
    return x


#: catalog_inputs of recent calls: key -> (catalog, inputs); bounded by CACHED_RUNS.
_CATALOG_INPUTS: dict[tuple, tuple[object, dict[str, float]]] = {}
CACHED_RUNS = 256


def catalog_inputs(catalog, *, model, hardware, site, reliability, precision, checkpoint,
                   cost_basis, seq_len, pricing, provider, spot_interruption,
                   stack=DEFAULTS["stack"], site_class=DEFAULTS["site_class"]
                   ) -> dict[str, float]:
    """The run-model inputs that come from catalog entries (a new dict each call).

    Entries given by id are looked up, checked against their domains and priced once per
    catalog object and choice; entries given as objects or TOML paths (a user file may
    change between calls) are read every time.
    """
    from hardware_catalog.loader import looks_like_path

    names = (model, hardware, site, site_class, reliability, stack)
    cacheable = all(isinstance(v, str) and not looks_like_path(v) for v in names)
    key = (id(catalog), *names, precision, checkpoint, cost_basis, seq_len, pricing, provider,
           spot_interruption)
    try:
        hash(key)
    except TypeError:  # e.g. an array seq_len
        cacheable = False
    hit = _CATALOG_INPUTS.get(key) if cacheable else None
    if hit is not None and hit[0] is catalog:
        return dict(hit[1])
    x = _read_catalog_inputs(catalog, model=model, hardware=hardware, site=site,
                             site_class=site_class, reliability=reliability, precision=precision,
                             checkpoint=checkpoint, cost_basis=cost_basis, seq_len=seq_len,
                             pricing=pricing, provider=provider,
                             spot_interruption=spot_interruption, stack=stack)
    if cacheable:
        if len(_CATALOG_INPUTS) >= CACHED_RUNS:
            _CATALOG_INPUTS.clear()
        _CATALOG_INPUTS[key] = (catalog, x)
    return dict(x)


def _read_catalog_inputs(catalog, *, model, hardware, site, site_class, reliability, precision,
                         checkpoint, cost_basis, seq_len, pricing, provider,
                         spot_interruption, stack) -> dict[str, float]:
    from planner.engine.domains import check
    from planner.engine.pricing import price_quote, with_preemptions
    from planner.engine.scenario import (
        execution_defaults,
        hardware_inputs,
        model_inputs,
        reliability_inputs,
        site_inputs,
        stack_inputs,
    )

    m = catalog.model(model) if isinstance(model, str) else model
    acc = catalog.accelerator(hardware) if isinstance(hardware, str) else hardware
    node = catalog.node(acc.node)
    profile = catalog.reliability_profile(reliability)
    software = catalog.stack(stack) if isinstance(stack, str) else stack
    basis = "tco" if pricing == "owned" else cost_basis
    site_entry = catalog.site(site)
    # catalog values and user files too: one table, before any kernel call, naming the entry
    x = {}
    for where, part in ((f"model '{m.id}'", model_inputs(m, seq_len)),
                        (f"accelerator '{acc.id}'", hardware_inputs(acc, node, precision, software)),
                        (f"site '{site}', site class '{site_class}'",
                         site_inputs(site_entry, basis,
                                     catalog.pue_entry(site_class, site_entry))),
                        (f"reliability profile '{reliability}'",
                         reliability_inputs(profile, checkpoint)),
                        ("planner/engine/execution.toml", execution_defaults()),
                        (f"stack '{software.id}'", stack_inputs(software, acc.id))):
        check(part, where=where)
        x.update(part)
    x["price_usd_per_gpu_hour"] = price_quote(catalog, acc, pricing, provider).usd_per_gpu_hour
    if pricing == "spot":
        x["node_mtbf_s"] = with_preemptions(x["node_mtbf_s"], spot_interruption)
    return x


def check_layout(x: dict, *, gpus, tp, pp, cp, ep, vp, micro_batch, dp=None,
                 etp=None) -> None:
    """Raise CapplanError naming the broken rule of an explicit layout.

    Sizes are checked against their domains first and every divisibility before the
    quotient it guards is used, so no rule divides by zero.  ``etp`` None: ``tp``.
    """
    from planner.engine.domains import check
    from planner.errors import CapplanError

    etp = tp if etp is None else etp
    check({"gpus": gpus, "tp": tp, "pp": pp, "cp": cp, "ep": ep, "etp": etp, "vp": vp,
           "micro_batch": micro_batch})
    gpus, tp, pp, cp, ep, etp, vp, micro_batch = (
        int(v) for v in (gpus, tp, pp, cp, ep, etp, vp, micro_batch))
    replica = tp * pp * cp
    if gpus % replica:
        raise CapplanError(f"TP*PP*CP = {tp}*{pp}*{cp} = {replica} does not divide --gpus "
                           f"{gpus}; change --tp/--pp/--cp or --gpus")
    dp = gpus // replica
    batch = int(x["global_batch"])
    rules = [
        (tp <= x["scale_up_domain_gpus"],
         f"--tp {tp} exceeds the scale-up domain of {int(x['scale_up_domain_gpus'])} GPUs"),
        (x["heads"] % tp == 0, f"--tp {tp} does not divide the {int(x['heads'])} heads"),
        (pp <= x["layers"], f"--pp {pp} exceeds the {int(x['layers'])} layers"),
        # the embedding and the loss may be stage units of their own (Megatron-Core's
        # account_for_embedding/loss_in_pipeline_split): L + 2 virtual stages at most
        (pp * vp <= x["layers"] + 2,
         f"--vp {vp}: PP*VP = {pp * vp} virtual stages exceed the {int(x['layers'])} layers "
         "and the embedding and loss stage units"),
        (vp == 1 or pp > 1, "--vp > 1 needs --pp > 1"),
        (batch % (dp * micro_batch) == 0,
         f"global batch {batch} is not divisible by DP*micro-batch = "
         f"{dp}*{micro_batch} = {dp * micro_batch}; change --micro-batch, --global-batch "
         "or the GPU count"),
        ((tp * cp * dp) % (ep * etp) == 0,
         f"EP*ETP = {ep}*{etp} = {ep * etp} must divide TP*CP*DP = {tp}*{cp}*{dp} = "
         f"{tp * cp * dp} (the experts' grid ETP x EP x EDP folds over the attention's "
         "TP x CP x DP); change --ep or --etp"),
        (ep == 1 or x["experts"] % ep == 0,
         f"--ep {ep} does not divide the {int(x['experts'])} experts"),
    ]
    for ok, message in rules:
        if not ok:
            raise CapplanError(message)


def best_layout(x: dict, gpus: int, fixed: dict, *, recompute: int, zero: int,
                sequence_parallel, flash_attention: bool = True,
                objective: str = "wall_time_s") -> dict | None:
    """The layout of ``gpus`` GPUs minimising ``objective`` among those that fit in memory
    (the leanest when none fits), keeping the sizes in ``fixed``; ``None`` if no layout of
    that many GPUs obeys the rules.  Reuses the design-space enumeration of ``plan``.
    """
    from planner.engine.space import (
        RECOMPUTE_NAMES,
        SpaceOptions,
        enumerate_layouts,
        layout_flags,
    )

    def only(name, default):
        return (int(fixed[name]),) if fixed.get(name) is not None else default

    base = SpaceOptions()
    options = SpaceOptions(
        min_gpus=gpus, max_gpus=gpus, tp=only("tp", tuple(2**i for i in range(8))),
        pp=only("pp", None), vp=only("vp", base.vp), cp=only("cp", None),
        ep=only("ep", None), etp=only("etp", None),
        micro_batch=only("micro_batch", base.micro_batch),
        recompute=(RECOMPUTE_NAMES[recompute],), zero=tuple(sorted({0, zero})), hsdp=(0,),
        sequence_parallel=(0, 1) if sequence_parallel is None else (int(sequence_parallel),))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=1,  # any count is allowed here
        scale_up_domain=int(x["scale_up_domain_gpus"]), options=options)
    # the requested ZeRO stage, or ZeRO-0 where there is no data parallelism; sequence
    # parallelism as evaluate() sets it by default (on when tp > 1)
    keep = (layout["zero"] == zero) | ((layout["dp"] == 1) & (layout["zero"] == 0))
    if sequence_parallel is None:
        keep &= layout["sequence_parallel"] == (layout["tp"] > 1)
    layout = {k: v[keep] for k, v in layout.items()}
    if layout["gpus"].size == 0:
        return None
    out = evaluate_inputs({**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                               layers=x["layers"],
                                               flash_attention=flash_attention)})
    fits = out["fits"]
    score = np.where(fits, out[objective], np.inf) if fits.any() else out["memory_per_gpu_bytes"]
    i = int(np.argmin(score))
    return {k: int(v[i]) for k, v in layout.items()}


def resolve_layout(x: dict, gpus, given: dict, *, recompute: int, zero: int,
                   sequence_parallel=None, flash_attention: bool = True) -> dict:
    """The layout sizes to evaluate: the caller's, completed by :data:`PREFERRED_LAYOUT`
    when that is valid for ``gpus``, else the fastest valid layout keeping the given sizes.

    Raises CapplanError naming the broken rule when the given sizes admit no layout.
    """
    from planner.errors import CapplanError

    candidate = {**PREFERRED_LAYOUT, **{k: v for k, v in given.items() if v is not None}}
    candidate["etp"] = _expert_tp(x, candidate["tp"], given.get("etp"))
    try:
        check_layout(x, gpus=gpus, **candidate)
        return candidate
    except CapplanError as broken:
        if all(given.get(k) is not None for k in PREFERRED_LAYOUT):
            raise
        from planner.engine.domains import check

        check({"gpus": gpus, **given})
        chosen = best_layout(x, int(gpus), given, recompute=recompute, zero=zero,
                             sequence_parallel=sequence_parallel,
                             flash_attention=flash_attention)
        if chosen is None:
            typed = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items()
                              if v is not None)
            raise CapplanError(
                f"{broken}; and no other layout of {int(gpus)} GPUs obeys the rules "
                f"{'with ' + typed if typed else '(TP*PP*CP*DP = GPUs, DP*micro-batch dividing'}"
                f"{'' if typed else ' the global batch of ' + str(int(x['global_batch'])) + ')'}"
                ": try another --gpus") from None
        return {k: chosen[k] for k in (*PREFERRED_LAYOUT, "etp")}


def _expert_tp(x: dict, tp, etp):
    """The expert-tensor-parallel size: ``etp`` for an MoE model when given, else ``tp``
    (Megatron-Core's default; a dense model has no experts to split)."""
    if etp is None or x["experts"] <= 1:
        return tp
    return etp


def check_layouts(x: dict, layout: dict[str, np.ndarray]) -> None:
    """Vectorised :func:`check_layout`: the first broken layout raises with its rule."""
    g, tp, pp, cp, ep, etp, vp, mb, dp = (np.asarray(layout[k]) for k in (
        "gpus", "tp", "pp", "cp", "ep", "etp", "vp", "micro_batch", "dp"))
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = ((g >= 1) & (np.minimum.reduce([tp, pp, cp, ep, etp, vp, mb]) >= 1)
              & (g % np.maximum(tp * pp * cp, 1) == 0) & (tp <= x["scale_up_domain_gpus"])
              & (x["heads"] % np.maximum(tp, 1) == 0) & (pp <= x["layers"])
              & (pp * vp <= x["layers"] + 2)
              & ((vp == 1) | (pp > 1)) & (dp >= 1)
              & (x["global_batch"] % np.maximum(dp * mb, 1) == 0)
              & ((tp * cp * dp) % np.maximum(ep * etp, 1) == 0)
              & ((ep == 1) | (x["experts"] % np.maximum(ep, 1) == 0)))
    if not np.all(ok):
        i = int(np.flatnonzero(~np.broadcast_to(ok, g.shape if g.ndim else (1,)))[0])
        pick = {k: int(np.ravel(v)[i] if np.size(v) > 1 else np.ravel(v)[0])
                for k, v in (("gpus", g), ("tp", tp), ("pp", pp), ("cp", cp), ("ep", ep),
                             ("etp", etp), ("vp", vp), ("micro_batch", mb), ("dp", dp))}
        check_layout(x, **pick)


def check_shard_group(dp: int, shard_group: int, zero: int) -> None:
    """Raise CapplanError unless ``shard_group`` DP ranks can hold one copy of the ZeRO state."""
    from planner.errors import CapplanError

    if shard_group == dp:
        return
    if zero < 1:
        raise CapplanError(f"--shard-group {shard_group} needs --zero 1, 2 or 3 (ZeRO-0 "
                           "shards nothing); drop --shard-group or set --zero")
    if shard_group > dp or dp % shard_group:
        raise CapplanError(f"--shard-group {shard_group} must divide the data-parallel size "
                           f"{dp} (the ZeRO state is sharded over groups of that many DP "
                           "ranks and replicated across them)")


def check_shard_groups(layout: dict[str, np.ndarray]) -> None:
    """Vectorised :func:`check_shard_group`: the first broken layout raises."""
    dp, shard, zero = (np.asarray(layout[k]) for k in ("dp", "shard_group", "zero"))
    bad = (shard != dp) & ((zero < 1) | (shard > dp) | (dp % np.maximum(shard, 1) != 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        check_shard_group(int(dp[i]), int(shard[i]), int(zero[i]))


def evaluate(*, model=DEFAULTS["model"], hardware=DEFAULTS["evaluate_hardware"], gpus=DEFAULTS["gpus"],
             tp=None, pp=None, cp=None, ep=None, vp=None, global_batch=None,
             micro_batch=None, seq_len=None, recompute=DEFAULTS["recompute"], etp=None,
             zero=DEFAULTS["zero"], sequence_parallel=None, precision=DEFAULTS["precision"],
             site=DEFAULTS["site"], tokens=DEFAULTS["tokens"], shard_group=None,
             checkpoint=DEFAULTS["checkpoint"], cost_basis=DEFAULTS["cost_basis"],
             site_class=DEFAULTS["site_class"], flash_attention=True, reliability=DEFAULTS["reliability"], catalog=None,
             catalog_dirs=(), overrides=None, return_inputs=False,
             pricing=DEFAULTS["pricing"], provider=DEFAULTS["provider"],
             spot_interruption=DEFAULTS["spot_interruption"], stack=DEFAULTS["stack"],
             as_frame=True):
    """Evaluate layouts of ``model`` on ``hardware``; a pandas DataFrame, one row each.

    Layout arguments (gpus, tp, pp, cp, ep, etp, vp, micro_batch, zero, shard_group,
    sequence_parallel) may be scalars or equally long arrays: arrays evaluate many layouts
    in one call.  ``etp`` (expert tensor parallelism, MoE) defaults to ``tp``; EP x ETP
    folds over TP x CP x DP (Megatron-Core's parallel folding).  ``shard_group`` (ZeRO
    1-3) shards the ZeRO state over that many DP ranks and replicates it across the others
    (HSDP); default: all DP ranks.
    Sizes left out (``None``) are chosen: TP8 x PP4 (``scenario.PREFERRED_LAYOUT``,
    other sizes 1) when that is valid for ``gpus``, else the fastest valid layout for
    ``gpus`` keeping the sizes given.  Defaults come from ``planner.engine.scenario.DEFAULTS``
    (the CLI's); every value is checked against ``planner.engine.domains``.

    ``model``/``hardware`` are catalog ids or TOML paths.  ``overrides`` replaces any
    run-model input (SI units, see ``planner.model.INPUTS``) by a scalar or array;
    ``pricing``/``provider`` choose the price per GPU-hour (``planner.engine.pricing``);
    ``stack`` the software stack (catalog id or entry: overlaps, attention, launches);
    arrays evaluate many variants at once (one row each).  With ``return_inputs`` the
    kernel inputs are returned too: ``(frame, inputs)``.

    ``as_frame=False`` returns a light :class:`planner.engine.result.Evaluation` instead
    (a dict of columns, ``.to_frame()`` for the DataFrame; pandas is not imported): for
    one layout its values are Python scalars computed by the kernel on scalars (thousands
    of calls per second), equal to the DataFrame's to rounding (``tests/test_evaluate_api.py``).

    >>> r = evaluate(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=1, pp=1,
    ...              global_batch=512, micro_batch=2, tokens=2e12, as_frame=False)
    >>> r["fits"], round(r["mfu"], 2) == round(float(r.to_frame().loc[0, "mfu"]), 2)
    (True, True)
    """
    from planner.engine.result import Evaluation

    columns, x = evaluate_run(
        model=model, hardware=hardware, gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, vp=vp,
        etp=etp, global_batch=global_batch, micro_batch=micro_batch, seq_len=seq_len,
        recompute=recompute, zero=zero, sequence_parallel=sequence_parallel,
        precision=precision, site=site, site_class=site_class, tokens=tokens,
        checkpoint=checkpoint, cost_basis=cost_basis, flash_attention=flash_attention,
        reliability=reliability,
        catalog=catalog, catalog_dirs=catalog_dirs, overrides=overrides, pricing=pricing,
        provider=provider, spot_interruption=spot_interruption, stack=stack,
        shard_group=shard_group, scalar=not as_frame)
    result = Evaluation(columns)
    if as_frame:
        result = result.to_frame()
    return (result, x) if return_inputs else result


def evaluate_run(*, model, hardware, gpus, tp, pp, cp, ep, vp, global_batch, micro_batch,
                 seq_len, recompute, zero, sequence_parallel, precision, site, tokens,
                 checkpoint, cost_basis, flash_attention, reliability, catalog, catalog_dirs,
                 overrides, pricing, provider, spot_interruption, stack=DEFAULTS["stack"],
                 etp=None, shard_group=None, scalar: bool = False,
                 site_class=DEFAULTS["site_class"]) -> tuple[dict, dict]:
    """:func:`evaluate` without pandas: ``(columns, kernel inputs)``.

    Columns are arrays of one entry per layout; with ``scalar`` and one layout, Python
    scalars from the kernel run on numpy float64 scalars (:func:`evaluate_scalar`).
    """
    from planner.engine.domains import check
    from planner.engine.scenario import (
        CHECKPOINT_SCHEMES,
        COST_BASES,
        PRECISIONS,
        check_overrides,
    )
    from planner.engine.space import RECOMPUTE_CODES, layout_flags
    from planner.errors import CapplanError, shown

    for name, val, allowed in [("recompute", recompute, tuple(RECOMPUTE_CODES)),
                               ("precision", precision, PRECISIONS),
                               ("checkpoint", checkpoint, CHECKPOINT_SCHEMES),
                               ("cost-basis", cost_basis, COST_BASES)]:
        if not isinstance(val, str) or val not in allowed:
            raise CapplanError(f"--{name} {shown(val)} is not one of: {', '.join(allowed)}")
    sizes = {"tp": tp, "pp": pp, "cp": cp, "ep": ep, "vp": vp, "micro_batch": micro_batch,
             "etp": etp}
    check({"gpus": gpus, **sizes, "zero": zero, "tokens": tokens, "global_batch": global_batch,
           "seq_len": seq_len, "shard_group": shard_group})
    if sequence_parallel is not None:
        check({"sequence_parallel": np.asarray(sequence_parallel, dtype=float)})
    check_overrides(overrides or {})
    if catalog is None:
        from hardware_catalog import load_catalog

        catalog = load_catalog(catalog_dirs)
    x = base_inputs(catalog, model=model, hardware=hardware, site=site,
                    site_class=site_class, reliability=reliability, precision=precision,
                    checkpoint=checkpoint,
                    cost_basis=cost_basis, seq_len=seq_len, tokens=tokens,
                    global_batch=global_batch, pricing=pricing, provider=provider,
                    spot_interruption=spot_interruption, stack=stack)
    one = not any(type(v) not in _SCALARS and np.ndim(v) > 0
                  for v in (gpus, zero, sequence_parallel, shard_group, *sizes.values(),
                            *(overrides or {}).values()))
    if not one:
        sizes = {k: PREFERRED_LAYOUT[k] if v is None else v for k, v in sizes.items()
                 if k != "etp"}
        sizes["etp"] = _expert_tp(x, sizes["tp"], etp)
    else:  # one layout: choose it on the inputs the kernel will see
        sizes = resolve_layout({**x, **(overrides or {})}, gpus, sizes,
                               recompute=RECOMPUTE_CODES[recompute],
                               zero=int(zero), sequence_parallel=sequence_parallel,
                               flash_attention=flash_attention)
    meta = {"model": model if isinstance(model, str) else model.id,
            "hardware": hardware if isinstance(hardware, str) else hardware.id,
            "precision": precision, "stack": stack if isinstance(stack, str) else stack.id,
            "site": site, "site_class": site_class, "checkpoint": checkpoint, "recompute": recompute, "zero": zero}
    if one and scalar:
        return _evaluate_one(x, meta, gpus, sizes, recompute=RECOMPUTE_CODES[recompute],
                             zero=zero, shard_group=shard_group,
                             sequence_parallel=sequence_parallel,
                             flash_attention=flash_attention, overrides=overrides or {}), x
    tp, pp, cp, ep, etp, vp, micro_batch = (sizes[k] for k in ("tp", "pp", "cp", "ep", "etp",
                                                               "vp", "micro_batch"))
    dp = np.asarray(gpus) // np.maximum(np.asarray(tp) * pp * cp, 1)
    if sequence_parallel is None:
        sequence_parallel = np.asarray(tp) > 1
    layout = {"gpus": gpus, "tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "etp": etp,
              "vp": vp, "micro_batch": micro_batch, "recompute": RECOMPUTE_CODES[recompute],
              "zero": zero, "shard_group": dp if shard_group is None else shard_group,
              "sequence_parallel": np.asarray(sequence_parallel, dtype=int)}
    layout = dict(zip(layout, np.broadcast_arrays(*(np.atleast_1d(v) for v in layout.values())),
                      strict=True))
    check_layouts(x, layout)
    check_shard_groups(layout)
    x.update(layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"],
                          flash_attention=flash_attention))
    x.update(overrides or {})
    meta.update({k: x[k] for k in META_INPUTS})
    out = evaluate_inputs(x)
    out["largest_memory_term"] = np.asarray(memory_terms())[out.pop("largest_memory_term_index")]
    shown_layout = {k: v for k, v in layout.items() if k not in ("recompute", "zero")}
    return {**meta, **shown_layout, **out}, x


_SCALARS = frozenset({int, float, bool, type(None)})

#: Kernel inputs shown among the leading columns of :func:`evaluate` (after overrides).
META_INPUTS = ("global_batch", "seq_len", "tokens")


def _evaluate_one(x: dict, meta: dict, gpus, sizes: dict, *, recompute: int, zero,
                  sequence_parallel, flash_attention: bool, overrides: dict,
                  shard_group=None) -> dict:
    """The columns of one layout as Python scalars (updates ``x`` to the kernel inputs)."""
    from planner.engine.space import layout_flags_one

    layout = {"gpus": int(gpus), **{k: int(v) for k, v in sizes.items()}}
    if overrides:  # else resolve_layout checked this layout on these very inputs
        check_layout(x, **layout)
    layout["dp"] = layout["gpus"] // (layout["tp"] * layout["pp"] * layout["cp"])
    layout["shard_group"] = layout["dp"] if shard_group is None else int(shard_group)
    check_shard_group(layout["dp"], layout["shard_group"], int(zero))
    if sequence_parallel is None:
        sequence_parallel = layout["tp"] > 1
    layout["sequence_parallel"] = int(bool(sequence_parallel))
    x.update(layout_flags_one({**layout, "recompute": recompute, "zero": int(zero)},
                              scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"],
                              flash_attention=flash_attention))
    x.update(overrides)
    meta = {**meta, **{k: x[k] for k in META_INPUTS}}
    order = ("gpus", "tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "shard_group",
             "sequence_parallel")
    return {**{k: _plain(v) for k, v in meta.items()}, **{k: layout[k] for k in order},
            **evaluate_scalar(x)}


def _plain(value):
    """A numpy scalar or 0-d array as the Python scalar; anything else unchanged."""
    return value.item() if hasattr(value, "item") and np.ndim(value) == 0 else value


def evaluate_scalar(inputs: dict) -> dict:
    """Every output column of one candidate as Python scalars, in :func:`evaluate_inputs`'
    order.  The kernel runs on Python floats (:func:`planner.engine.kernel.float_kernel`;
    on numpy float64 scalars where floats raise, inf/NaN as with arrays); the values agree
    with the array path to rounding (a few ulp; up to ~1e-8 relative where the model
    subtracts nearly equal numbers).
    """
    missing = [name for name in INPUTS if name not in inputs]
    if missing:
        raise KeyError(f"missing run-model inputs: {', '.join(missing)}")
    from planner.engine.spares import AUTO, resolve_spares

    if np.ravel(inputs["spare_nodes"])[0] == AUTO:  # --spares auto: the optimal count
        resolved = resolve_spares(inputs)["spare_nodes"]
        inputs = {**inputs, "spare_nodes": float(np.ravel(resolved)[0])}
    raw = [inputs[name] for name in INPUTS]
    try:
        values = np.array(raw, dtype=float).tolist()  # Python floats
    except ValueError:  # some input is a 1-element array
        values = [float(np.ravel(v)[0]) for v in raw]
    out = _scalar_outputs(values)
    terms, units = _finish_columns()
    hbm = float(np.ravel(inputs["hbm_bytes"])[0])
    out["hbm_bytes"] = hbm
    out["fits"] = out["memory_per_gpu_bytes"] <= hbm
    largest, biggest = 0, out[terms[0]]
    for i, term in enumerate(terms[1:], start=1):  # as largest_index: first of equals, NaN
        value = out[term]
        if value > biggest:
            largest = i
        biggest = math.nan if math.isnan(biggest) or math.isnan(value) else max(biggest, value)
    for name, source, divisor in units:
        out[name] = out[source] / divisor
    out["largest_memory_term"] = terms[largest]
    return out


def _scalar_outputs(values: list[float]) -> dict[str, float]:
    """The kernel's outputs for one candidate: the float kernel, else (where Python raises
    on a division by zero, a log of 0, an overflow, or meets a complex power) the numpy
    kernel on float64 scalars, which gives inf/NaN as the array path does."""
    from planner.engine.kernel import float_kernel

    try:
        return {name: float(v) for name, v in zip(OUTPUTS, float_kernel()(*values),
                                                  strict=True)}
    except (ArithmeticError, ValueError, TypeError):
        pass
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return {name: float(v) for name, v in zip(OUTPUTS, kernel()(*np.array(values)),
                                                  strict=True)}


@cache
def _finish_columns() -> tuple[tuple[str, ...], tuple[tuple[str, str, float], ...]]:
    """The memory terms and the unit conversions of :func:`finish` (constant)."""
    return memory_terms(), conversions()
