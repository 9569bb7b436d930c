"""Which winners rest on a catalog estimate (issue 26 item 4).

A winner is flagged

- ``price``: its price per GPU-hour has no market listing (the catalog's own estimate,
  :class:`planner.engine.economics.pricing.PriceQuote` ``estimate``);
- ``performance``: no published measurement of its accelerator is in ``capplan validate``'s
  datasets, so its step time is the model's extrapolation, never checked on that chip;
- ``bias:<signed %>:<runs>``: its published runs are predicted more than :data:`BIAS_FLAG`
  off in the median (predicted over published throughput, minus one: positive where the
  planner is too fast), so its step time likely carries that error;
- ``spec:<field>``: a datasheet number the run rests on (the peak at the plan's precision,
  HBM size and bandwidth, maximum power) is marked ``estimate = true`` in the catalog.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

from hardware_catalog.recipes import load_recipes

_HERE = Path(__file__).resolve().parent
#: The validated accelerators of the shipped validation data, written by
#: ``python -m planner.codegen --only validation`` (reading every dataset takes ~0.5 s of a
#: plan); used while :func:`validation_data_key` matches.
PRECOMPUTED = _HERE / "_validated_generated.json"
_DATA = _HERE.parents[1] / "hardware_catalog" / "data" / "validation"

#: Datasheet fields of an accelerator a plan rests on, besides the peak at its precision.
SPEC_FIELDS = ("hbm_bytes", "hbm_bandwidth_bytes_per_s", "max_power_w")

#: Median error of an accelerator's predicted published runs beyond which a winner on it is
#: flagged: twice the 8 % the calibrated generations' held-out rows reach (docs/validation.md,
#: leave-one-family-out), so a flagged chip is off by more than the planner's own scatter.
BIAS_FLAG = 0.16

#: Flag -> its footnote text.
FLAG_TEXT = {"price": "price is a catalog estimate (no market listing)",
             "performance": "performance not validated on this accelerator (no measurement "
                            "in `capplan validate`)",
             "spec": "datasheet value marked estimate in the catalog"}


def validation_data_key() -> str:
    """Hash of the validation data and of the code that maps its rows to accelerators
    (``validate.py``): ~5 ms."""
    digest = hashlib.sha256()
    for path in [*sorted(p for p in _DATA.rglob("*") if p.is_file()), _HERE / "validate.py"]:
        digest.update(f"{path.relative_to(_HERE.parents[1])}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:20]


def computed_validated_accelerators(cases=None) -> frozenset[str]:
    """:func:`validated_accelerators` from the datasets themselves (``cases``: every
    dataset's, loaded when not given; ~0.5 s)."""
    from planner.analysis.validate import load_cases

    cases = load_cases() if cases is None else cases
    return frozenset(cases["hardware"].dropna().astype(str))


def computed_accelerator_errors(cases=None) -> dict[str, dict[str, float]]:
    """Per accelerator, its predicted published runs (``cases``: every dataset of ``capplan
    validate``, loaded when not given; the shipped catalog): ``runs``, ``median_error``
    (predicted over published throughput per GPU, minus one: positive where the planner is
    too fast) and ``mape`` (the mean of its absolute value) (~10 s)."""
    from planner.analysis.crossval import throughput_error
    from planner.analysis.validate import load_cases, predict

    pred = predict(load_cases() if cases is None else cases)
    pred = pred.assign(fast=throughput_error(pred) - 1)[pred["predicted"].notna()]
    return {str(hw): {"runs": int(len(g)), "median_error": round(float(g["fast"].median()), 4),
                      "mape": round(float(g["fast"].abs().mean()), 4)}
            for hw, g in pred.groupby("hardware")}


def precomputed_text() -> str:
    """The text of :data:`PRECOMPUTED` for the validation data as it is now."""
    from planner.analysis.validate import load_cases

    cases = load_cases()
    return json.dumps({"key": validation_data_key(),
                       "accelerators": sorted(computed_validated_accelerators(cases)),
                       "errors": computed_accelerator_errors(cases)},
                      indent=1, sort_keys=True) + "\n"


def _stored() -> dict | None:
    try:
        stored = json.loads(PRECOMPUTED.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != validation_data_key():
        return None
    return stored


def _precomputed() -> frozenset[str] | None:
    stored = _stored()
    return None if stored is None else frozenset(stored.get("accelerators", ()))


@cache
def accelerator_errors() -> dict[str, dict[str, float]]:
    """:func:`computed_accelerator_errors` (the generated table while it matches the data)."""
    stored = _stored()
    return computed_accelerator_errors() if stored is None or "errors" not in stored \
        else stored["errors"]


@cache
def validated_accelerators() -> frozenset[str]:
    """Accelerators with at least one published measurement in the validation datasets
    (the generated list while it matches the data, else read from the datasets)."""
    found = _precomputed()
    return computed_validated_accelerators() if found is None else found


def estimate_flags(catalog, hardware: str, precision: str, price: dict | None) -> list[str]:
    """The flags of one winner on ``hardware`` at ``precision`` (``price``: its resolved
    price quote as a dict, or None)."""
    flags = []
    if price is not None and price.get("estimate"):
        flags.append("price")
    if hardware not in validated_accelerators():
        flags.append("performance")
    else:
        own = accelerator_errors().get(hardware)
        if own is not None and abs(own["median_error"]) > BIAS_FLAG:
            flags.append(f"bias:{100 * own['median_error']:+.0f}:{own['runs']}")
    chip = catalog.accelerator(hardware)
    recipe = load_recipes().get(precision)  # the peak a recipe's GEMMs run at (mxfp8 -> fp8)
    gemm = recipe.gemm_precision if recipe is not None else precision
    for name in (f"peak_{gemm}_flops_per_s", *SPEC_FIELDS):
        value = getattr(chip, name, None)
        if value is not None and getattr(value, "estimate", False):
            flags.append(f"spec:{name}")
    return flags


def attach(result, catalog) -> None:
    """Fill ``result.estimate_flags`` (a :class:`planner.engine.search.optimize.PlanResult`) for
    every accelerator with a winner."""
    s = result.scenario
    result.estimate_flags = {hw: estimate_flags(catalog, hw, s.precision, result.prices.get(hw))
                             for hw in sorted(result.per_hardware)}


def attach_phases(result, catalog) -> None:
    """Fill ``result.estimate_flags`` of a plan of several phases
    (:class:`planner.engine.search.phase_plan.PhasePlan`) for every accelerator with a winner."""
    s = result.scenario
    winners = sorted({row["hardware"] for row in result.best.values() if row is not None})
    result.estimate_flags = {hw: estimate_flags(catalog, hw, s.precision, result.prices.get(hw))
                             for hw in winners}


def flag_text(flags: list[str]) -> str:
    """One footnote sentence for ``flags``."""
    spec = [f.split(":", 1)[1] for f in flags if f.startswith("spec:")]
    parts = [FLAG_TEXT[f] for f in flags if f in FLAG_TEXT]
    for flag in flags:
        if flag.startswith("bias:"):
            _, pct, runs = flag.split(":")
            parts.append(f"its {runs} published runs are predicted {pct.lstrip('+-')} % too "
                         f"{'fast' if pct.startswith('+') else 'slow'} in the median "
                         "(`capplan validate`)")
    if spec:
        parts.append(f"{FLAG_TEXT['spec']}: {', '.join(spec)}")
    return "; ".join(parts)
