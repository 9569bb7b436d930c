"""Rent or buy: the owned-cluster cost of a plan's winner beside its cloud cost, and
the parts of a plan's one cost.

An owned accelerator costs its capital (GPU price x (1 + node, network and storage
fractions)) depreciated over the accelerator's catalog lifetime to a residual value,
yearly opex, and the facility rent of its peak IT power (``formulas.cost``); a job pays
its GPU-hours at that fixed cost divided by the cluster's utilisation over its life,
plus its own facility energy at the site's price.  The defaults, with sources, are
``hardware_catalog/data/prices/ownership.csv``; a scenario file's ``[ownership]`` table
overrides any of them.  The run model computes both costs of every candidate the same
way (``cost_cloud_usd``, ``cost_tco_usd``: the job's GPUs and its hot spares), so the
comparison here reads them from the plan row: the cost on the chosen basis is the
winners table's, to the cent.  The per-hour terms and break-evens are computed for the
handful of winners after the search (a few scalar formula calls each).
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


def ownership_inputs(purchase_price_usd: float, overrides: dict | None = None) -> dict:
    """Kernel inputs of an owned cluster (the TCO cost basis): capital per GPU (its
    purchase price and its share of node, network and storage), opex, resale value,
    facility rent and utilisation, from hardware_catalog/data/prices/ownership.csv under
    a scenario's ``[ownership]`` ``overrides``."""
    p = ownership_parameters(overrides)
    fractions = (p["node_capex_fraction"] + p["network_capex_fraction"]
                 + p["storage_capex_fraction"])
    return {"capex_usd_per_gpu": purchase_price_usd * (1 + fractions),
            "opex_fraction_per_year": p["opex_fraction_per_year"],
            "residual_value_fraction": p["residual_value_fraction"],
            "facility_usd_per_kw_month": p["facility_usd_per_kw_month"],
            "utilisation": p["utilisation"]}


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
    terms = _owned_terms(catalog, scenario, row)
    capex, fixed, facility = terms["capex"], terms["fixed"], terms["facility"]
    lifetime_s = float(acc.lifetime_years.value) * cost.SECONDS_PER_YEAR
    energy_per_gpu_hour = terms["electricity_usd"] / float(row["gpu_hours"])
    cloud_price = float(price["usd_per_gpu_hour"])
    # the plan's two costs as the run model computed them (the job's GPUs and hot spares)
    owned, cloud = float(row["cost_tco_usd"]), float(row["cost_cloud_usd"])
    gpus = float(row["gpus"])
    running = fixed - cost.SECONDS_PER_HOUR * capex * (1 - p["residual_value_fraction"]) \
        / lifetime_s  # opex and facility: paid every hour
    breakeven = (cost.breakeven_utilisation(fixed, cloud_price, energy_per_gpu_hour)
                 if cloud_price > energy_per_gpu_hour else None)
    saving = p["utilisation"] * (cloud_price - energy_per_gpu_hour) - running
    payback = (cost.payback_months(capex, cloud_price, energy_per_gpu_hour, running,
                                   p["utilisation"]) if saving > 0 else None)
    return {
        "basis": cost_basis(scenario),
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


def cost_basis(choices) -> str:
    """'cloud' or 'tco': the basis a run is costed by (``--pricing owned`` costs by TCO).

    ``choices``: anything with ``pricing`` and ``cost_basis`` (a Scenario, RunChoices).
    """
    return "tco" if choices.pricing == "owned" else choices.cost_basis


def _owned_terms(catalog, scenario, row: dict) -> dict:
    """An owned GPU's capital and fixed cost per hour with its facility share, as the run
    model computes them for ``row`` (planner.engine.run.model.cost_and_carbon), and the
    job's electricity [USD]."""
    acc = catalog.accelerator(row["hardware"])
    site = catalog.site(scenario.site)
    x = ownership_inputs(float(acc.purchase_price_usd.value), scenario.ownership)
    lifetime_s = float(acc.lifetime_years.value) * cost.SECONDS_PER_YEAR
    billed = float(row["gpu_hours"]) * cost.SECONDS_PER_HOUR / float(row["wall_time_s"])
    pue = float(catalog.pue_entry(scenario.site_class, site).pue.value)
    it_peak_w = float(row["peak_power_mw"]) * 1e6 / pue / billed  # per GPU
    facility = cost.facility_usd_per_hour(x["facility_usd_per_kw_month"], it_peak_w)
    fixed = cost.ownership_usd_per_hour(x["capex_usd_per_gpu"], x["residual_value_fraction"],
                                        lifetime_s, x["opex_fraction_per_year"], facility)
    capital = cost.SECONDS_PER_HOUR * x["capex_usd_per_gpu"] * (
        1 - x["residual_value_fraction"]) / lifetime_s
    return {"capex": x["capex_usd_per_gpu"], "fixed": fixed, "facility": facility,
            "capital": capital, "opex": fixed - capital - facility,
            "gpu_share": float(acc.purchase_price_usd.value) / x["capex_usd_per_gpu"],
            "billed_gpus": billed, "utilisation": x["utilisation"],
            "electricity_usd": float(row["energy_kwh"])
            * float(site.electricity_usd_per_kwh.value)}


#: The parts of a plan's cost, in order (cloud: rental and spares; TCO: the rest).
COST_PARTS = ("gpu_rental", "capital_gpus", "capital_node_network_storage", "opex",
              "facility", "electricity", "hot_spares")
#: Part -> its label in tables.
COST_PART_LABELS = {"gpu_rental": "GPU rental", "capital_gpus": "capital: accelerators",
                    "capital_node_network_storage": "capital: node, network, storage",
                    "opex": "operations (opex)", "facility": "facility (power, cooling)",
                    "electricity": "electricity", "hot_spares": "hot spares"}


def cost_parts(catalog, scenario, row: dict) -> dict[str, float]:
    """The plan row's cost on its basis split into :data:`COST_PARTS` [USD]; they sum to
    ``row['cost_usd']``.  Cloud: the job's GPUs rented, its hot spares rented.  TCO: the
    job's GPUs' capital (less resale) split into accelerators and node/network/storage,
    opex and facility rent over the cluster's utilisation, the job's electricity, and the
    hot spares' share of the fixed costs.  Storage for checkpoints and data is in the
    capital fraction; network egress is not modelled."""
    parts = dict.fromkeys(COST_PARTS, 0.0)
    total = float(row["cost_usd"])
    job_share = float(row["gpus"]) * float(row["wall_time_s"]) / cost.SECONDS_PER_HOUR \
        / float(row["gpu_hours"])  # the job's GPU-hours among those billed
    if abs(job_share - 1.0) < 1e-12:  # no spares: 1 but for the rounding of the two sums
        job_share = 1.0
    if cost_basis(scenario) == "cloud":
        parts["gpu_rental"] = total * job_share
        parts["hot_spares"] = total - parts["gpu_rental"]
        return parts
    t = _owned_terms(catalog, scenario, row)
    parts["electricity"] = t["electricity_usd"]
    fixed_usd = total - t["electricity_usd"]
    job = fixed_usd * job_share
    parts["capital_gpus"] = job * t["capital"] * t["gpu_share"] / t["fixed"]
    parts["capital_node_network_storage"] = job * t["capital"] * (1 - t["gpu_share"]) / t["fixed"]
    parts["facility"] = job * t["facility"] / t["fixed"]
    parts["opex"] = job - parts["capital_gpus"] - parts["capital_node_network_storage"] \
        - parts["facility"]
    parts["hot_spares"] = fixed_usd - job
    return parts


__all__ = ["rent_vs_buy", "ownership_parameters", "ownership_inputs", "sources", "DOMAINS", "cost_parts",
           "cost_basis", "COST_PARTS", "COST_PART_LABELS"]
