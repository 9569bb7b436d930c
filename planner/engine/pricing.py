"""Which $/GPU-hour a run pays: price tier and provider resolved against the price data.

``--pricing`` picks the tier, ``--provider`` the provider:

- ``median`` (default): the median, across the non-marketplace providers that list the
  accelerator, of each provider's median price over its regions and instance sizes
  (one vote per provider, so a provider with 17 regions does not outvote one with 1);
- ``cheapest``: the lowest of those per-provider medians;
- a provider name (``lambda``, ``aws`` ...; marketplaces allowed when named): that
  provider's median.

Tiers: ``on-demand`` and ``spot`` read the data's columns; ``reserved-1y``/``-3y`` apply
the commitment discount of ``hardware_catalog/data/prices/commitment_discounts.csv``
to each provider's on-demand median; ``owned`` prices the run by the TCO cost basis
(capex amortised over the accelerator's life + energy + opex, ``formulas.cost``), the
cloud price staying in ``cost_cloud_usd`` for comparison.

With no row for an accelerator (Gaudi 3, H800, MI250X, MI325X), ``median``/``cheapest``
fall back to the accelerator's catalog ``cloud_price_usd_per_gpu_hour``, labelled as an
estimate with its source; spot and named providers have no fallback.  An accelerator
defined in a user catalog directory (or TOML file) keeps its own price by default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from statistics import median

from formulas.cost import preemption_mtbf
from hardware_catalog.prices import load_discounts, load_interruption_buckets, load_prices
from planner.errors import CapplanError, did_you_mean

TIERS = ("on-demand", "spot", "reserved-1y", "reserved-3y", "owned")
PROVIDER_CHOICES = ("median", "cheapest")
DEFAULT_TIER = "on-demand"
DEFAULT_PROVIDER = "median"
DEFAULT_SPOT_INTERRUPTION = "gt20"
DATA_LABEL = "SkyPilot catalog extract (hardware_catalog/data/prices, commits in SOURCE.md)"


@dataclass(frozen=True)
class PriceQuote:
    """The price a run pays per GPU-hour, where it comes from, and its spread."""

    accelerator: str
    tier: str
    provider: str  # as asked: median | cheapest | a provider name
    usd_per_gpu_hour: float
    chosen_provider: str | None  # the provider priced (None for the median)
    source: str
    estimate: bool  # True: not from price data (catalog estimate, or your own catalog entry)
    providers: int  # non-marketplace providers in the spread
    min_usd_per_gpu_hour: float | None  # spread of per-provider medians (same tier)
    median_usd_per_gpu_hour: float | None
    max_usd_per_gpu_hour: float | None
    discount_fraction: float | None = None  # reserved tiers
    discount_source: str | None = None
    note: str = ""
    #: spot: preemptions added to the failure model (per instance = per node)
    interrupted_fraction_per_month: float | None = None
    preemption_mtbf_s_per_node: float | None = None
    interruption_source: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """One line for reports: '$2.95/GPU-h on-demand, median of 9 providers ...'."""
        who = self.chosen_provider or self.provider
        if self.provider == "median" and not self.estimate:
            # "providers": the non-marketplace ones (--provider help, docs/economics.md); short
            # enough that evaluate's table fits 120 columns without rich
            who = (f"median of {self.providers} providers" if self.providers > 1
                   else f"the only non-marketplace provider listing it: {who}")
        if self.tier == "owned":
            return (f"owned: cost is the TCO cost basis; cloud price for comparison "
                    f"${self.usd_per_gpu_hour:.2f}/GPU-h on-demand, {who}")
        text = f"${self.usd_per_gpu_hour:.2f}/GPU-h {self.tier}, {who}"
        if self.estimate:
            text += f" ({self.source})"
        elif self.providers > 1:
            text += (f" (${self.min_usd_per_gpu_hour:.2f}-"
                     f"${self.max_usd_per_gpu_hour:.2f})")
        return text


def spot_interruption(choice: str | float) -> tuple[float, str]:
    """(fraction of spot instances interrupted per month, its source) for a bucket name
    (lt5, 5-10, 10-15, 15-20, gt20: AWS Spot Instance Advisor) or a fraction in (0, 1)."""
    buckets = load_interruption_buckets()
    text = str(choice).strip().lower()
    if text in buckets:
        b = buckets[text]
        return b["interrupted_fraction_per_month"], f"{b['source']} ({b['note']})"
    try:
        fraction = float(text)
    except ValueError:
        fraction = float("nan")
    if not 0 < fraction < 1:
        raise CapplanError(f"--spot-interruption '{choice}' is neither a bucket "
                           f"({', '.join(buckets)}) nor a monthly fraction in (0, 1)")
    return fraction, "given by the user"


def with_preemptions(node_mtbf_s: float, choice: str | float) -> float:
    """Node MTBF with spot preemptions added (one instance = one node; rates add)."""
    fraction, _ = spot_interruption(choice)
    return 1 / (1 / node_mtbf_s + 1 / float(preemption_mtbf(fraction)))


def check_choice(tier: str, provider: str) -> None:
    """Raise a one-line CapplanError for an unknown tier or an empty provider."""
    if tier not in TIERS:
        raise CapplanError(f"--pricing: {did_you_mean('price tier', tier, TIERS)}")
    if not provider or not provider.strip():
        raise CapplanError("--provider must be median, cheapest or a provider name")


def provider_names(rows) -> list[str]:
    return sorted({r.provider for r in rows})


def _column(tier: str) -> str:
    return "spot_usd_per_gpu_hour" if tier == "spot" else "on_demand_usd_per_gpu_hour"


def provider_medians(rows, accelerator: str, tier: str, *, marketplace: bool | None = False,
                     ) -> dict[str, float]:
    """Per provider, the median $/GPU-h of ``accelerator`` in ``tier`` (reserved: discounted).

    ``marketplace``: False = non-marketplace providers only, True = marketplaces only,
    None = all.
    """
    column = _column(tier)
    prices: dict[str, list[float]] = {}
    for r in rows:
        value = getattr(r, column)
        if r.accelerator != accelerator or value is None:
            continue
        if marketplace is not None and r.marketplace != marketplace:
            continue
        prices.setdefault(r.provider, []).append(value)
    out = {p: float(median(v)) for p, v in sorted(prices.items())}
    if tier.startswith("reserved"):
        out = {p: v * (1 - discount(p, tier).fraction) for p, v in out.items()}
    return out


def discount(provider: str, tier: str):
    """The commitment discount of ``provider`` (or the '*' default) for a reserved tier."""
    entries = [d for d in load_discounts() if d.tier == tier]
    for d in entries:
        if d.provider == provider:
            return d
    return next(d for d in entries if d.provider == "*")


def quote(rows, accelerator: str, tier: str = DEFAULT_TIER, provider: str = DEFAULT_PROVIDER,
          *, fallback: tuple[float, str] | None = None, own_price: bool = False) -> PriceQuote:
    """Resolve the $/GPU-h of ``accelerator`` (see module docstring)."""
    check_choice(tier, provider)
    priced_tier = "on-demand" if tier == "owned" else tier
    spread = provider_medians(rows, accelerator, priced_tier)
    values = sorted(spread.values())
    stats = dict(providers=len(values), min_usd_per_gpu_hour=values[0] if values else None,
                 median_usd_per_gpu_hour=float(median(values)) if values else None,
                 max_usd_per_gpu_hour=values[-1] if values else None)
    extra = {}
    if priced_tier.startswith("reserved"):
        d = discount("*", priced_tier)
        extra = dict(discount_fraction=d.fraction, discount_source=d.source)
    if tier == "owned":
        extra["note"] = ("owned: cost_usd is the TCO cost (capex amortised over the "
                         "accelerator's life + energy + opex); this cloud price only fills "
                         "cost_cloud_usd for comparison")
    if provider in PROVIDER_CHOICES and (own_price or not values):
        if fallback is None or tier == "spot":
            listed = ", ".join(provider_medians(rows, accelerator, "on-demand",
                                                marketplace=None))
            raise CapplanError(
                f"no {tier} price for {accelerator} in the price data"
                + (f" (on-demand prices from: {listed})" if listed else "")
                + ("; use --pricing on-demand" if tier == "spot" else
                   " and no catalog estimate"))
        price, source = fallback
        if priced_tier.startswith("reserved"):
            price *= 1 - extra["discount_fraction"]
        label = "your catalog entry" if own_price else "no price rows; catalog estimate"
        return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                          usd_per_gpu_hour=price, chosen_provider=None,
                          source=f"{label}: {source}", estimate=True, **stats, **extra)
    if provider == "median":
        return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                          usd_per_gpu_hour=stats["median_usd_per_gpu_hour"],
                          chosen_provider=next(iter(spread)) if len(spread) == 1 else None,
                          source=_source(rows, accelerator), estimate=False, **stats, **extra)
    if provider == "cheapest":
        name = min(spread, key=spread.get)
        return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                          usd_per_gpu_hour=spread[name], chosen_provider=name,
                          source=_source(rows, accelerator, name), estimate=False,
                          **stats, **extra)
    return _named(rows, accelerator, tier, priced_tier, provider, stats, extra)


def known_provider(rows, provider: str) -> str:
    """``provider`` as a provider name of the price rows (stripped, lower case); an unknown
    name is one line with the nearest names.  evaluate (through :func:`quote`) and plan
    (:func:`check_provider`, once before the search) refuse it the same way."""
    name = provider.strip().lower()
    known = provider_names(rows)
    if name not in known:
        raise CapplanError(f"--provider: {did_you_mean('provider', provider, [*known, *PROVIDER_CHOICES])}")
    return name


def check_provider(catalog, tier: str, provider: str) -> None:
    """Refuse an unknown tier or provider before a plan prices any accelerator (a plan
    used to skip every accelerator for it and report that no layout exists)."""
    check_choice(tier, provider)
    if provider not in PROVIDER_CHOICES:
        known_provider(load_prices(tuple(getattr(catalog, "dirs", ()) or ())), provider)


def _named(rows, accelerator, tier, priced_tier, provider, stats, extra) -> PriceQuote:
    name = known_provider(rows, provider)
    mine = provider_medians(rows, accelerator, priced_tier, marketplace=None)
    if name not in mine:
        listing = (f"providers that do: {', '.join(mine)}" if mine else
                   "no provider in the price data lists it (plans with --provider median use "
                   "the catalog estimate)")
        raise CapplanError(f"{name} lists no {priced_tier} price for {accelerator}; {listing}")
    if priced_tier.startswith("reserved"):
        d = discount(name, priced_tier)
        extra = {**extra, "discount_fraction": d.fraction, "discount_source": d.source}
    return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                      usd_per_gpu_hour=mine[name], chosen_provider=name,
                      source=_source(rows, accelerator, name), estimate=False, **stats, **extra)


def _source(rows, accelerator: str, provider: str | None = None) -> str:
    """The data files behind a quote: the shipped extract, or the user's files."""
    files = sorted({r.source.rpartition("@")[0] if r.source.endswith("@local") else "shipped"
                    for r in rows if r.accelerator == accelerator
                    and (provider is None or r.provider == provider)})
    user = [f for f in files if f != "shipped"]
    if not user:
        return DATA_LABEL
    return ("user price file(s): " + ", ".join(user)
            + (f"; {DATA_LABEL}" if "shipped" in files else ""))


def price_quote(catalog, accelerator, tier: str = DEFAULT_TIER,
                provider: str = DEFAULT_PROVIDER,
                spot_interruption_choice: str = DEFAULT_SPOT_INTERRUPTION) -> PriceQuote:
    """The :class:`PriceQuote` of a catalog accelerator entry (price data of ``catalog``)."""
    from hardware_catalog.loader import DATA_DIR
    rows = load_prices(tuple(getattr(catalog, "dirs", ()) or ()))
    in_table = catalog.accelerators.get(accelerator.id) is accelerator
    origin = catalog.origin("accelerator", accelerator.id) if in_table else None
    shipped = origin is not None and DATA_DIR in origin.resolve().parents
    q = accelerator.cloud_price_usd_per_gpu_hour
    fallback = (float(q.value), f"{q.source} ({q.as_of})")
    result = quote(rows, accelerator.id, tier, provider, fallback=fallback,
                   own_price=not shipped and provider == DEFAULT_PROVIDER and tier != "spot")
    if tier != "spot":
        return result
    fraction, source = spot_interruption(spot_interruption_choice)
    return replace(result, interrupted_fraction_per_month=fraction,
                   preemption_mtbf_s_per_node=float(preemption_mtbf(fraction)),
                   interruption_source=source)
