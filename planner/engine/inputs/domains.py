"""Input domains: one table of what every input may be, checked once before the kernel.

Every run-model input has its :class:`~planner.engine.inputs.glossary.Domain` in the glossary
(:data:`planner.engine.inputs.glossary.GLOSSARY`, beside its unit and meaning), and every other
user-facing number (a command-line flag, a scenario-file key, a Python API argument) has
one here (:data:`OPTION_DOMAINS`): finite always; positive, non-negative or a fraction where physics says so; an
integer for counts; and an upper bound for GPU counts, parallel sizes and batch sizes
(what a cluster can be).  :func:`check` raises one :class:`~planner.errors.CapplanError`
naming the flag (``--tokens must be a finite number > 0, got -5``), so the CLI, scenario
files and the Python API give the same message.  The engine calls it in
:func:`planner.engine.layouts.evaluator.evaluate` and :func:`planner.engine.search.optimize.plan`
before any kernel call; the domain specs are those of :mod:`formulas.core`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from planner.engine.inputs.glossary import (  # noqa: F401  (the kinds, used by callers)
    BANDWIDTH_GBPS,
    CHECKPOINT_INTERVAL_S,
    COUNT,
    COUNT0,
    EFFICIENCY,
    FLAG,
    FRACTION,
    GPU_COUNT,
    INPUT_DOMAINS,
    MAX_DIM,
    MAX_DRAWS,
    MAX_GLOBAL_BATCH,
    MAX_GPUS,
    MAX_REPLICAS,
    MAX_TOKENS,
    NON_NEGATIVE,
    POSITIVE,
    SHARDS,
    Domain,
    dimension_domain,
    number_text,
)
from planner.engine.inputs.layout_rules import DIMENSIONS
from planner.errors import CapplanError, did_you_mean, shown, suggestion

#: Domains of user-facing numbers that are not run-model inputs (flag name, underscores).
OPTION_DOMAINS: dict[str, Domain] = {
    # plan / plot / sweep scenario
    "min_gpus": GPU_COUNT, "max_gpus": GPU_COUNT, "deadline_days": POSITIVE,
    "budget_usd": POSITIVE, "max_power_mw": POSITIVE, "knee_threshold": Domain("(0,1)"),
    # evaluate / simulate / uncertainty
    "top": COUNT,
    "replicas": Domain(">=1", integer=True, maximum=MAX_REPLICAS),
    # Weibull shape of per-GPU failure times: published fits are 0.5-0.8 (Schroeder &
    # Gibson 2006, DOI 10.1109/DSN.2006.5); below 0.2 a component fails in bursts of
    # millions of near-zero gaps and the renewal simulation cannot finish.
    "weibull_shape": Domain(">0", minimum=0.2, maximum=20),
    "draws": Domain(">=1", integer=True, maximum=MAX_DRAWS),
    "seed": Domain(">=0", integer=True, maximum=2**63 - 1),
    # checkpoint: bounds keep every unit conversion and Daly term finite
    # (an MTBF below 3.6 ms, e.g. 5e-324 h, makes the failure rate overflow to inf)
    "gpu_mtbf_hours": Domain(">0", minimum=1e-6, maximum=1e12),
    "node_mtbf_hours": Domain(">0", minimum=1e-6, maximum=1e12),
    "gpus_per_node": GPU_COUNT, "params": Domain(">0", maximum=1e16),
    "bytes_per_param": Domain(">0", maximum=1e3),
    "storage_write_gbps": BANDWIDTH_GBPS, "storage_read_gbps": BANDWIDTH_GBPS,
    "host_copy_gbps": BANDWIDTH_GBPS, "peer_copy_gbps": BANDWIDTH_GBPS,
    "restart_minutes": Domain(">=0", maximum=1e7), "train_days": Domain(">0", maximum=1e6),
    # software stragglers (planner/cli/fault_options.py), seconds
    "gc_interval": Domain(">0", maximum=1e12), "gc_pause": Domain(">=0", maximum=1e7),
    "gc_every_steps": Domain(">=1", integer=True, maximum=MAX_DIM),
    "stage_imbalance": Domain(">=0", maximum=1e6), "slow_nodes": FRACTION,
    "slow_node_slowdown": Domain(">=1", maximum=1e6),
    # site network (capplan evaluate / plan): per-GPU NIC bandwidth, scale-up domain
    "nic_gbps": BANDWIDTH_GBPS, "scale_up_domain": GPU_COUNT,
    # run overheads and a fixed checkpoint interval (planner/cli/fault_options.py)
    "checkpoint_interval": CHECKPOINT_INTERVAL_S,
    "eval_overhead": Domain("[0,1)", maximum=0.99),
    "maintenance": Domain("[0,1)", maximum=0.99),
    "loss_spikes": Domain(">=0", maximum=1e6),
    "rollback_steps": Domain(">=0", maximum=1e9),
    "commitment_reuse": FRACTION,
    # optimizer-state bytes per parameter (--optimizer-bytes): at most FP64 master + moments
    "optimizer_bytes": Domain(">=0", maximum=24),
    # the layout's sizes the run model does not read (its inputs are in the glossary)
    **{d.name: dimension_domain(d) for d in DIMENSIONS if not d.kernel and d.dtype != "str"},
}

DOMAINS: dict[str, Domain] = {**INPUT_DOMAINS, **OPTION_DOMAINS}

#: Run-model inputs a user sets directly with a flag of the same name: the layout's sizes
#: with an option (:data:`~planner.engine.inputs.layout_rules.DIMENSIONS`) and these.
FLAG_INPUTS = frozenset({"gockpt_steps", "tokens", "gpus", "global_batch", "seq_len",
                         "gpus_per_node", "oversubscription", "pod_gpus",
                         *(d.name for d in DIMENSIONS if d.option and d.dtype == "int")})


def label(name: str) -> str:
    """How an input is named in messages: its flag (``--micro-batch``) or ``input 'x'``."""
    if name in OPTION_DOMAINS or name in FLAG_INPUTS:
        return "--" + name.replace("_", "-")
    return f"run-model input '{name}'"


def _takes_booleans(domain: Domain) -> bool:
    """Whether ``domain`` is a switch (0 or 1), the only kind a boolean may stand for:
    ``gpus=True`` is a mistake, not one GPU."""
    return domain.integer and domain.maximum is None and domain.spec == "[0,1]"


def _first_bad(domain: Domain, value):
    """The first value outside ``domain`` (``None`` when all are inside); a boolean (or a
    boolean array) is outside every domain but a switch's."""
    if type(value) is float:  # the common cases, without the abc checks below
        return None if domain.ok_number(value) else value
    if isinstance(value, bool | np.bool_) and not _takes_booleans(domain):
        return value
    if type(value) is int and (domain.maximum is None or value <= domain.maximum) \
            and abs(value) < 2**53:
        return None if domain.ok_number(float(value)) else value
    if isinstance(value, str | bytes) or value is None:
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, np.generic):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range is never a finite input
            return value
        if isinstance(value, numbers.Integral) and domain.maximum is not None and \
                value > domain.maximum:  # exact, also beyond 2**53
            return value
        return None if domain.ok_number(number) else value
    try:
        array = np.asarray(value)
    except ValueError:  # a ragged nested list
        return value
    if array.dtype.kind not in "biuf" or (array.dtype.kind == "b"
                                         and not _takes_booleans(domain)):
        return value
    ok = domain.ok(array)
    if np.all(ok):
        return None
    return np.ravel(array)[int(np.flatnonzero(~np.ravel(ok))[0])].item()


def check_value(name: str, value, domain: Domain | None = None, where: str = "") -> None:
    """Raise CapplanError unless ``value`` (number or array) lies in ``name``'s domain;
    ``where`` (e.g. ``"accelerator 'x'"``) prefixes the message."""
    domain = domain or DOMAINS[name]
    bad = _first_bad(domain, value)
    if bad is None and value is not None:
        return
    if isinstance(bad, str | bytes | bool | np.bool_) or bad is None or not isinstance(
            bad, numbers.Real):
        got = f"{shown(bad)} ({'bool' if isinstance(bad, np.bool_) else type(bad).__name__})"
    elif isinstance(bad, float) and not math.isfinite(bad):
        got = str(bad)
    else:
        got = (str(bad) if len(str(bad)) <= 24 else number_text(bad)) if isinstance(bad, int) \
            else f"{bad:g}"
    what = f"{where}: {name}" if where else label(name)  # a catalog/file value, or a flag
    raise CapplanError(f"{what} must be {domain.text}, got {got}")


def check(values: dict, where: str = "") -> None:
    """Check every value whose name has a domain (``None`` = not given, skipped)."""
    for name, value in values.items():
        if value is not None and name in DOMAINS:
            check_value(name, value, where=where)


# ---- input uncertainty ([uncertainty] tables, planner/analysis/uncertainty.toml) --------

#: Largest log-standard deviation of an uncertainty factor (``[uncertainty] <input> =
#: {sigma = ...}``).  A lognormal factor of log-sd sigma puts P10-P90 at exp(-+1.28 sigma):
#: x0.08-x13 at 2.0, an input unknown to more than an order of magnitude either way, where a
#: planning margin means nothing; the widest default is 0.69 (a factor 2 between
#: releases).  The bound also keeps every drawn factor finite: exp(2.0 x 6) ~ 1.6e5 at six
#: standard deviations (beyond any of --draws' 100,000 draws), where a sigma of 1e6 makes
#: exp() overflow to inf and the margins NaN.
MAX_SIGMA = 2.0
SIGMA = Domain(">=0", maximum=MAX_SIGMA)
#: How a factor is drawn: one per accelerator, one for all of them, or one per accelerator
#: with that accelerator's own sigma from the price data (the price only; issue 41).
SPREAD_SCOPES = ("hardware", "shared", "price")
#: Keys an uncertainty entry may hold (source, as_of, estimate: provenance, not read).
SPREAD_KEYS = ("sigma", "scope", "source", "as_of", "estimate")


def check_spread(name: str, spec, where: str = "[uncertainty]") -> tuple[float, str]:
    """(sigma, scope) of one uncertainty entry ``name = {sigma = .., scope = ..}``, or one
    :class:`CapplanError` naming ``where`` (e.g. ``"scenario.toml: [uncertainty]"``), the
    key and the allowed values: a run-model input, a finite sigma in
    ``[0, MAX_SIGMA]``, scope ``hardware``, ``shared`` (default) or ``price``."""
    if not isinstance(name, str) or name not in INPUT_DOMAINS:
        raise CapplanError(f"{where}: {did_you_mean('uncertain input', str(name), INPUT_DOMAINS)}")
    key = f"{where} {name}"
    if not isinstance(spec, dict) or "sigma" not in spec:
        raise CapplanError(f"{key} must be a table {{sigma = <number in [0, {MAX_SIGMA:g}]>, "
                           f"scope = \"hardware\" or \"shared\"}}, got {shown(spec)}")
    for k in spec:
        if k not in SPREAD_KEYS:
            raise CapplanError(f"{key}: unknown key {shown(k)}; {suggestion(str(k), SPREAD_KEYS)}")
    sigma = spec["sigma"]
    if isinstance(sigma, bool) or not isinstance(sigma, int | float):
        raise CapplanError(f"{key}: sigma must be {SIGMA.text}, got {shown(sigma)} "
                           f"({type(sigma).__name__})")
    check_value("sigma", float(sigma), SIGMA, where=key)
    scope = spec.get("scope", "shared")
    if scope not in SPREAD_SCOPES:
        raise CapplanError(f"{key}: scope must be \"hardware\" (one factor per accelerator), "
                           f"\"shared\" (one for all) or \"price\" (per accelerator, its "
                           f"price data's sigma), got {shown(scope)}; "
                           f"{suggestion(str(scope), SPREAD_SCOPES)}")
    return float(sigma), scope


def check_spreads(table, where: str = "[uncertainty]") -> dict[str, tuple[float, str]]:
    """Every entry of an ``[uncertainty]`` table checked by :func:`check_spread`."""
    if not isinstance(table, dict):
        raise CapplanError(f"{where} must be a table of <input> = {{sigma = .., scope = ..}}, "
                           f"got {shown(table)}")
    return {name: check_spread(name, spec, where) for name, spec in table.items()}


# ---- --confidence Q: the quantile the margin's Monte Carlo can resolve --------------------

#: Draws of the margin Monte Carlo (planner.analysis.confidence) at quantiles near the
#: middle: fixed, so the same plan every time.
MARGIN_DRAWS = 200
#: Draws the Monte Carlo keeps beyond the quantile, in its tail: the empirical Q-quantile of
#: N draws moves with Q only while N min(Q, 1-Q) >= ~1 (below, it is the extreme draw
#: whatever Q: ``--confidence 1e-300`` and 0.999 planned alike at 200 draws); 10 draws
#: beyond it keep its Monte Carlo error to a few of the spread's tail percent.
TAIL_DRAWS = 10
#: Most margin draws: 10,000, so Q in [0.001, 0.999] (the draws of one accelerator's
#: frontier are evaluated in blocks; 10,000 draws of a few hundred rows take seconds).
MAX_MARGIN_DRAWS = 10_000
#: The quantiles --confidence takes: TAIL_DRAWS of MAX_MARGIN_DRAWS draws beyond each.
CONFIDENCE_RANGE = (TAIL_DRAWS / MAX_MARGIN_DRAWS, 1 - TAIL_DRAWS / MAX_MARGIN_DRAWS)


def margin_draws(quantile: float) -> int:
    """Draws of the margin Monte Carlo at ``quantile``: :data:`MARGIN_DRAWS`, raised so that
    at least :data:`TAIL_DRAWS` lie beyond the quantile (ceil(10 / min(Q, 1 - Q)), exact
    in rational arithmetic: 0.999 -> 10,000 draws)."""
    q = Fraction(quantile)
    tail = min(q, 1 - q)
    return max(MARGIN_DRAWS, math.ceil(Fraction(TAIL_DRAWS) / tail))


def check_confidence(quantile) -> None:
    """One line unless ``quantile`` (``--confidence``) is a number whose margin the Monte
    Carlo resolves: in :data:`CONFIDENCE_RANGE`."""
    low, high = CONFIDENCE_RANGE
    if isinstance(quantile, bool) or not isinstance(quantile, numbers.Real) or \
            not low <= float(quantile) <= high:
        raise CapplanError(
            f"--confidence must be a quantile in [{low:g}, {high:g}], got {shown(quantile)}: "
            f"its margin is the quantile of at most {MAX_MARGIN_DRAWS:,} Monte Carlo draws, "
            f"with at least {TAIL_DRAWS} beyond it; e.g. 0.9 plans so that deadline, budget "
            "and power hold at P90")
