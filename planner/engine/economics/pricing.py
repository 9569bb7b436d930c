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

With no row for an accelerator (Gaudi 3, H800, MI250X), ``median``/``cheapest``
fall back to the accelerator's catalog ``cloud_price_usd_per_gpu_hour``, or, where
``hardware_catalog/data/prices/derived_prices.csv`` says so (MI325X, MI355X), to another
accelerator's price times a factor; both labelled as estimates with their source; spot and
named providers have no fallback.  An accelerator defined in a user catalog directory (or
TOML file) keeps its own price by default.

Every quote carries its distribution (:class:`PriceQuote`): the non-marketplace listings
(one per instance type and region) and providers behind it, the median and the quartiles
of the per-provider medians, the date of the data, and ``sigma``, the log-spread
``--uncertainty`` draws the price with.  A price is a *market* price when at least
:data:`MARKET_MIN_LISTINGS` listings from at least :data:`MARKET_MIN_PROVIDERS`
providers back it; anything else (one provider's list price, a catalog estimate, a price
derived from another accelerator) is an *estimate* with the wide :data:`ESTIMATE_SIGMA`;
a market price's sigma is the standard error of its median over the providers.
:func:`price_quote` is the one function every screen (``plan``, ``evaluate``,
``catalog list|show``, ``prices``) reads prices from.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from statistics import median, quantiles

from formulas.cost import preemption_mtbf
from hardware_catalog.prices import (
    SHIPPED_AS_OF,
    load_derived,
    load_discounts,
    load_interruption_buckets,
    load_prices,
)
from planner.errors import CapplanError, did_you_mean

TIERS = ("on-demand", "spot", "reserved-1y", "reserved-3y", "owned")
PROVIDER_CHOICES = ("median", "cheapest")
DEFAULT_TIER = "on-demand"
DEFAULT_PROVIDER = "median"
DEFAULT_SPOT_INTERRUPTION = "gt20"
DATA_LABEL = "SkyPilot catalog extract (hardware_catalog/data/prices, commits in SOURCE.md)"
CLOUD_TIERS = ("on-demand", "spot", "reserved-1y", "reserved-3y")
#: The term a reserved tier commits to [s]: AWS EC2 Reserved Instances documentation, "a
#: one-year term is defined as 31536000 seconds (365 days); a three-year term as 94608000
#: seconds (1,095 days)". The other tiers commit to nothing (0).
COMMITMENT_TERM_S = {"reserved-1y": 31_536_000.0, "reserved-3y": 94_608_000.0}


def commitment_term_s(tier: str) -> float:
    """The committed term of price tier ``tier`` [s]; 0 for pay-as-you-go tiers."""
    return COMMITMENT_TERM_S.get(tier, 0.0)

#: A market price needs this many non-marketplace listings (instance type x region) ...
MARKET_MIN_LISTINGS = 3
#: ... from this many providers: one provider's list price in many regions is still one
#: seller's price, not a market (MI300X: 4 OCI regions at $6.00, nobody else).
MARKET_MIN_PROVIDERS = 2
#: Log-spread of an estimated price [ln units]: how far a catalog estimate sits from the
#: market median where both exist.  On the data of 2026-11-23, over the six accelerators
#: with both a market price and a catalog estimate (a100-40gb, a100-80gb, b200, h100-sxm,
#: h200, l40s): the RMS of ln(catalog estimate / market median) is 0.69 (0.34, 1.00, 0.24,
#: 0.85, 0.56, 0.81).
ESTIMATE_SIGMA = 0.69
#: The standard error of a median in standard deviations times sqrt(n): sqrt(pi / 2), for
#: normally distributed values (Kenney & Keeping, Mathematics of Statistics, 1962).
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
#: Smallest log-spread of a market price: providers quoting the same list price still
#: differ by region, term and host VM (a few per cent).
MIN_MARKET_SIGMA = 0.05
#: The interquartile range of a normal distribution in standard deviations.
IQR_SIGMAS = 1.349


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
    #: the distribution behind the price (module docstring)
    listings: int = 0  # non-marketplace rows (instance type x region) with a price
    p25_usd_per_gpu_hour: float | None = None  # quartiles of the per-provider medians
    p75_usd_per_gpu_hour: float | None = None
    as_of: str = ""  # date of the data (the extract's read date, or the catalog entry's)
    basis: str = ""  # market | single provider | few listings | catalog estimate | derived | ...
    sigma: float = 0.0  # log-spread --uncertainty draws the price with [ln units]
    derived_from: str | None = None  # "mi300x x 1.35" for a derived price

    def as_dict(self) -> dict:
        return asdict(self)

    def provenance(self) -> str:
        """Where the price comes from and how sure it is, in one phrase."""
        spread = (f"IQR ${self.p25_usd_per_gpu_hour:.2f}-${self.p75_usd_per_gpu_hour:.2f}"
                  if self.p25_usd_per_gpu_hour is not None else "no spread")
        if self.derived_from:
            return f"estimated from {self.derived_from}, no market listing; {self.source}"
        if self.basis in ("market", "your quotes"):
            return (f"{self.basis}: {self.listings} listings, {self.providers} providers, "
                    f"{spread}, as of {self.as_of}")
        if self.listings:
            return (f"{self.basis}: {self.listings} listings from {self.providers} "
                    f"provider(s), fewer than a market ({MARKET_MIN_LISTINGS} listings from "
                    f"{MARKET_MIN_PROVIDERS} providers), as of {self.as_of}")
        return f"{self.basis}, no market listing: {self.source}"

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
        if self.estimate:  # short: `capplan catalog show` gives the whole provenance
            text += (f" (estimate: from {self.derived_from})" if self.derived_from else
                     f" (estimate: {self.basis}, {self.listings} listings)" if self.listings
                     else f" (estimate: {self.basis})")
        elif self.providers > 1:
            text += (f" (IQR ${self.p25_usd_per_gpu_hour:.2f}-"
                     f"${self.p75_usd_per_gpu_hour:.2f})")
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
    stats = distribution(rows, accelerator, priced_tier, values)
    by_data = stats.pop("estimate_by_data")
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
        price, source, as_of, derived_from = fallback
        if priced_tier.startswith("reserved"):
            price *= 1 - extra["discount_fraction"]
        basis = ("your catalog entry" if own_price else
                 "derived" if derived_from else "catalog estimate")
        return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                          usd_per_gpu_hour=price, chosen_provider=None,
                          source=f"{basis}: {source}", estimate=True,
                          **{**stats, "as_of": as_of, "basis": basis, "sigma": ESTIMATE_SIGMA,
                             "derived_from": derived_from}, **extra)
    if provider == "median":
        return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                          usd_per_gpu_hour=stats["median_usd_per_gpu_hour"],
                          chosen_provider=next(iter(spread)) if len(spread) == 1 else None,
                          source=_source(rows, accelerator), estimate=by_data, **stats, **extra)
    if provider == "cheapest":
        name = min(spread, key=spread.get)
        return PriceQuote(accelerator=accelerator, tier=tier, provider=provider,
                          usd_per_gpu_hour=spread[name], chosen_provider=name,
                          source=_source(rows, accelerator, name), estimate=by_data,
                          **stats, **extra)
    return _named(rows, accelerator, tier, priced_tier, provider, stats, extra)


def distribution(rows, accelerator: str, tier: str, values: list[float]) -> dict:
    """The :class:`PriceQuote` fields describing the price distribution of ``accelerator``
    in ``tier``: ``values`` are the sorted per-provider medians (non-marketplace)."""
    column = _column(tier)
    mine = [r for r in rows if r.accelerator == accelerator and not r.marketplace
            and getattr(r, column) is not None]
    quoted = bool(mine) and all(r.source.endswith("@quote") for r in mine)
    if len(values) > 1:
        p25, _, p75 = quantiles(values, n=4, method="inclusive")
    else:
        p25 = p75 = values[0] if values else None
    market = len(mine) >= MARKET_MIN_LISTINGS and len(values) >= MARKET_MIN_PROVIDERS
    basis = ("your quotes" if quoted else "market" if market else
             "single provider" if len(values) == 1 else "few listings")
    iqr_sigma = math.log(p75 / p25) / IQR_SIGMAS if values else 0.0
    # the planner prices at the median of the providers' medians: what is uncertain is that
    # median (its standard error), not which provider a buyer ends up with (--provider)
    median_sigma = MEDIAN_SE_FACTOR * iqr_sigma / math.sqrt(len(values)) if values else 0.0
    sigma = (iqr_sigma if quoted else max(MIN_MARKET_SIGMA, median_sigma) if market
             else ESTIMATE_SIGMA)
    return dict(providers=len(values), min_usd_per_gpu_hour=values[0] if values else None,
                median_usd_per_gpu_hour=float(median(values)) if values else None,
                max_usd_per_gpu_hour=values[-1] if values else None,
                listings=len(mine), p25_usd_per_gpu_hour=p25, p75_usd_per_gpu_hour=p75,
                as_of=SHIPPED_AS_OF if not quoted else "your price file", basis=basis,
                sigma=sigma, estimate_by_data=not (market or quoted))


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
        known_provider(catalog_prices(catalog), provider)


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


def catalog_prices(catalog) -> tuple:
    """The price rows of ``catalog``: shipped, its directories' price files, and the
    user's quote files (``price_files``, set by ``--prices``)."""
    return load_prices(tuple(getattr(catalog, "dirs", ()) or ()),
                       tuple(getattr(catalog, "price_files", ()) or ()))


def price_quote(catalog, accelerator, tier: str = DEFAULT_TIER,
                provider: str = DEFAULT_PROVIDER,
                spot_interruption_choice: str = DEFAULT_SPOT_INTERRUPTION) -> PriceQuote:
    """The :class:`PriceQuote` of a catalog accelerator entry (price data of ``catalog``)."""
    from hardware_catalog.loader import DATA_DIR
    rows = catalog_prices(catalog)
    in_table = catalog.accelerators.get(accelerator.id) is accelerator
    origin = catalog.origin("accelerator", accelerator.id) if in_table else None
    shipped = origin is not None and DATA_DIR in origin.resolve().parents
    q = accelerator.cloud_price_usd_per_gpu_hour
    fallback = (float(q.value), f"{q.source}" + (f"; {q.note}" if q.note else ""),
                q.as_of.isoformat(), None)
    derived = load_derived().get(accelerator.id) if shipped else None
    if derived is not None and provider in PROVIDER_CHOICES and tier != "spot":
        base = price_quote(catalog, catalog.accelerator(derived.from_accelerator))
        fallback = (base.usd_per_gpu_hour * derived.factor,
                    f"{derived.source}; {derived.from_accelerator}: "
                    f"${base.usd_per_gpu_hour:.2f}/GPU-h, {base.provenance()}",
                    derived.as_of, f"{derived.from_accelerator} x {derived.factor:g}")
    result = quote(rows, accelerator.id, tier, provider, fallback=fallback,
                   own_price=not shipped and provider == DEFAULT_PROVIDER and tier != "spot")
    if tier != "spot":
        return result
    fraction, source = spot_interruption(spot_interruption_choice)
    return replace(result, interrupted_fraction_per_month=fraction,
                   preemption_mtbf_s_per_node=float(preemption_mtbf(fraction)),
                   interruption_source=source)


def market_priced(catalog, tier: str = DEFAULT_TIER) -> list[str]:
    """The catalog accelerators whose ``tier`` price (median over providers) is a market
    price, not an estimate (``--hardware market``); reserved and owned tiers are judged by
    the on-demand listings they are priced from."""
    listed = "spot" if tier == "spot" else "on-demand"
    out = []
    for name in sorted(catalog.accelerators):
        try:
            q = price_quote(catalog, catalog.accelerators[name], listed)
        except CapplanError:  # no price in this tier at all
            continue
        if not q.estimate:
            out.append(name)
    if not out:
        raise CapplanError(f"--hardware market: no accelerator has a market {listed} price "
                           f"(>= {MARKET_MIN_LISTINGS} listings from >= "
                           f"{MARKET_MIN_PROVIDERS} providers) in the price data")
    return out
