"""Rent or buy: the owned-cluster cost of a plan's winner beside its cloud cost.

An owned accelerator costs its capital (GPU price x (1 + node, network and storage
fractions)) depreciated over the accelerator's catalog lifetime to a residual value,
yearly opex, and the facility rent of its peak IT power (``formulas.cost``); a job pays
its GPU-hours at that fixed cost divided by the cluster's utilisation over its life,
plus its own facility energy at the site's price.  The defaults, with sources, are
``hardware_catalog/data/prices/ownership.csv``; a scenario file's ``[ownership]`` table
overrides any of them.  Computed for the handful of winners after the search (a few
scalar formula calls each), not in the kernel.
"""

from __future__ import annotations

from formulas import cost
from hardware_catalog.prices import load_ownership
from planner.errors import CapplanError, did_you_mean, shown

#: parameter -> allowed range (lower, upper, upper included)
DOMAINS = {"node_capex_fraction": (0.0, 10.0, True), "network_capex_fraction": (0.0, 10.0, True),
           "storage_capex_fraction": (0.0, 10.0, True),
           "residual_value_fraction": (0.0, 1.0, False),
           "facility_usd_per_kw_month": (0.0, 1e5, True), "utilisation": (0.0, 1.0, True),
           "opex_fraction_per_year": (0.0, 10.0, True)}


def ownership_parameters(overrides: dict | None = None) -> dict[str, float]:
    """The owned-cluster parameters: the catalog defaults under the user's overrides."""
    values = {name: row["value"] for name, row in load_ownership().items()}
    for name, value in (overrides or {}).items():
        if name not in values:
            raise did_you_mean("[ownership] parameter", str(name), values)
        low, high, closed = DOMAINS[name]
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              and (low < value if name == "utilisation" else low <= value)
              and (value <= high if closed else value < high))
        if not ok:
            raise CapplanError(f"[ownership] {name} = {shown(value)} is outside its range "
                               f"{'(' if name == 'utilisation' else '['}{low:g}, {high:g}"
                               f"{']' if closed else ')'}")
        values[name] = float(value)
    return values


def sources() -> dict[str, str]:
    """parameter -> the source of its default."""
    return {name: row["source"] for name, row in load_ownership().items()}


def rent_vs_buy(catalog, scenario, row: dict, price: dict) -> dict:
    """Owned-cluster cost of one plan row beside its cloud cost, and the break-evens.

    ``price`` is the row's resolved cloud price (``PriceQuote.as_dict()``: for
    ``--pricing owned`` the on-demand price it is compared with).
    """
    p = ownership_parameters(scenario.ownership)
    acc = catalog.accelerator(row["hardware"])
    site = catalog.site(scenario.site)
    gpus, wall_s = float(row["gpus"]), float(row["wall_time_s"])
    pue = float(catalog.pue_entry(scenario.site_class, site).pue.value)
    usd_per_kwh = float(site.electricity_usd_per_kwh.value)
    capex = float(acc.purchase_price_usd.value) * (
        1 + p["node_capex_fraction"] + p["network_capex_fraction"] + p["storage_capex_fraction"])
    lifetime_s = float(acc.lifetime_years.value) * cost.SECONDS_PER_YEAR
    it_peak_w = float(row["peak_power_mw"]) * 1e6 / pue / gpus  # per GPU, node share included
    facility = cost.facility_usd_per_hour(p["facility_usd_per_kw_month"], it_peak_w)
    fixed = cost.ownership_usd_per_hour(capex, p["residual_value_fraction"], lifetime_s,
                                        p["opex_fraction_per_year"], facility)
    energy_j = float(row["energy_kwh"]) * cost.JOULES_PER_KWH
    gpu_hours = gpus * wall_s / cost.SECONDS_PER_HOUR
    energy_per_gpu_hour = energy_j / cost.JOULES_PER_KWH * usd_per_kwh / gpu_hours
    cloud_price = float(price["usd_per_gpu_hour"])
    owned = cost.owned_job_cost(gpus, wall_s, fixed, p["utilisation"], energy_j, usd_per_kwh)
    cloud = cost.cloud_cost(gpus, wall_s, cloud_price)
    running = fixed - cost.SECONDS_PER_HOUR * capex * (1 - p["residual_value_fraction"]) \
        / lifetime_s  # opex and facility: paid every hour
    breakeven = (cost.breakeven_utilisation(fixed, cloud_price, energy_per_gpu_hour)
                 if cloud_price > energy_per_gpu_hour else None)
    saving = p["utilisation"] * (cloud_price - energy_per_gpu_hour) - running
    payback = (cost.payback_months(capex, cloud_price, energy_per_gpu_hour, running,
                                   p["utilisation"]) if saving > 0 else None)
    return {
        "cloud_usd": cloud, "cloud_usd_per_gpu_hour": cloud_price, "cloud_tier": price["tier"],
        "cloud_provider": price["provider"], "owned_usd": owned,
        "buy_wins": bool(owned < cloud),
        "capex_usd_per_gpu": capex, "cluster_capex_usd": capex * gpus,
        "ownership_usd_per_gpu_hour": fixed, "facility_usd_per_gpu_hour": facility,
        "energy_usd_per_gpu_hour": energy_per_gpu_hour,
        "lifetime_years": float(acc.lifetime_years.value), "site": scenario.site,
        "utilisation": p["utilisation"],
        # above it buying beats renting (None: renting wins at any utilisation)
        "breakeven_utilisation": (None if breakeven is None or breakeven > 1 else breakeven),
        # months of use at the utilisation until the capital is paid back (None: never)
        "payback_months": payback,
        "parameters": p,
    }


__all__ = ["rent_vs_buy", "ownership_parameters", "sources", "DOMAINS"]
