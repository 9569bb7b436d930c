"""Which winners rest on a catalog estimate (issue 26 item 4).

A winner is flagged

- ``price``: its price per GPU-hour has no market listing (the catalog's own estimate,
  :class:`planner.engine.pricing.PriceQuote` ``estimate``);
- ``performance``: no published measurement of its accelerator is in ``capplan validate``'s
  datasets, so its step time is the model's extrapolation, never checked on that chip;
- ``spec:<field>``: a datasheet number the run rests on (the peak at the plan's precision,
  HBM size and bandwidth, maximum power) is marked ``estimate = true`` in the catalog.
"""

from __future__ import annotations

from functools import cache

#: Datasheet fields of an accelerator a plan rests on, besides the peak at its precision.
SPEC_FIELDS = ("hbm_bytes", "hbm_bandwidth_bytes_per_s", "max_power_w")

#: Flag -> its footnote text.
FLAG_TEXT = {"price": "price is a catalog estimate (no market listing)",
             "performance": "performance not validated on this accelerator (no measurement "
                            "in `capplan validate`)",
             "spec": "datasheet value marked estimate in the catalog"}


@cache
def validated_accelerators() -> frozenset[str]:
    """Accelerators with at least one published measurement in the validation datasets."""
    from planner.analysis.validate import load_cases

    return frozenset(load_cases()["hardware"].dropna().astype(str))


def estimate_flags(catalog, hardware: str, precision: str, price: dict | None) -> list[str]:
    """The flags of one winner on ``hardware`` at ``precision`` (``price``: its resolved
    price quote as a dict, or None)."""
    flags = []
    if price is not None and price.get("estimate"):
        flags.append("price")
    if hardware not in validated_accelerators():
        flags.append("performance")
    chip = catalog.accelerator(hardware)
    for name in (f"peak_{precision}_flops_per_s", *SPEC_FIELDS):
        value = getattr(chip, name, None)
        if value is not None and getattr(value, "estimate", False):
            flags.append(f"spec:{name}")
    return flags


def attach(result, catalog) -> None:
    """Fill ``result.estimate_flags`` (a :class:`planner.engine.optimize.PlanResult`) for
    every accelerator with a winner."""
    s = result.scenario
    result.estimate_flags = {hw: estimate_flags(catalog, hw, s.precision, result.prices.get(hw))
                             for hw in sorted(result.per_hardware)}


def flag_text(flags: list[str]) -> str:
    """One footnote sentence for ``flags``."""
    spec = [f.split(":", 1)[1] for f in flags if f.startswith("spec:")]
    parts = [FLAG_TEXT[f] for f in flags if f in FLAG_TEXT]
    if spec:
        parts.append(f"{FLAG_TEXT['spec']}: {', '.join(spec)}")
    return "; ".join(parts)
