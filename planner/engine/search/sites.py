"""Several sites in one plan: ``--site a,b,c`` or ``--site all``.

A site changes three inputs only (PUE, electricity price, grid carbon intensity), and
they enter only the last two stages of the run model (energy, cost and carbon).  Each
site is planned by the ordinary search (:func:`planner.engine.search.optimize.plan`) in a loop;
measured on the default question (Llama 3 70B, whole catalog, 8-16,384 GPUs) one search
takes ~1 s, so ``--site all`` (10 shipped sites) takes ~10 s.  A site axis inside the
kernel would evaluate the same number of candidate rows (layouts x sites) through the
same monolithic kernel, so it would not be cheaper; the loop keeps the search and its
memory bound unchanged.  The sites are then ranked by their best value of each objective.
"""

from __future__ import annotations

from hardware_catalog import load_catalog
from planner.engine.search.optimize import plan
from planner.errors import CapplanError

#: Objectives compared across sites: objective -> (plan-row column, ranking key).
RANKED = {"cost": ("cost_usd", "best_cost_usd"), "energy": ("energy_mwh", "best_energy_mwh"),
          "carbon": ("co2e_t", "best_co2e_t"), "time": ("wall_days", "best_days"),
          "tcdp": ("tcdp_t_d", "best_tcdp_t_d"), "cci": ("cci_g_per_eflop",
                                                       "best_cci_g_per_eflop")}


def is_several(site: str) -> bool:
    """True when ``site`` names several sites (a comma list or ``all``)."""
    return "," in site or site.strip() == "all"


def site_names(catalog, spec: str) -> list[str]:
    """The sites named by ``spec`` ("all" = every catalog site), each checked (did you mean)."""
    if spec.strip() == "all":
        return sorted(catalog.table("site"))
    names = list(dict.fromkeys(s.strip() for s in spec.split(",") if s.strip()))
    if not names:
        raise CapplanError(f"--site {spec!r} names no site; give ids separated by commas "
                           "or 'all' (`capplan catalog list sites`)")
    for name in names:
        catalog.site(name)  # an unknown id fails here with "did you mean"
    return names


def plan_sites(scenario, *, catalog=None, progress=None, plan_one=None) -> dict:
    """site -> PlanResult for every site ``scenario.site`` names; ``plan_one(scenario,
    catalog=, progress=)`` plans one site (default :func:`planner.engine.search.optimize.plan`; a
    run of several phases passes its own, whose results rank the same way)."""
    catalog = catalog or load_catalog(scenario.catalog_dirs, scenario.price_files)
    plan_one = plan_one or plan
    return {name: plan_one(scenario.with_(site=name), catalog=catalog, progress=progress)
            for name in site_names(catalog, scenario.site)}


def site_ranking(results: dict, catalog) -> list[dict]:
    """One row per site: its inputs and the best value (and accelerator) per objective,
    sorted by the scenario's objective (infeasible sites last)."""
    rows = []
    for name, result in results.items():
        site = catalog.site(name)
        pue = catalog.pue_entry(result.scenario.site_class, site).pue.value
        row = {"site": name, "pue": float(pue),
               "usd_per_kwh": float(site.electricity_usd_per_kwh.value),
               "g_per_kwh": float(site.grid_intensity_g_per_kwh.value)}
        for objective, (column, key) in RANKED.items():
            best = result.best.get(objective)
            row[key] = None if best is None else float(best[column])
            row[f"{objective}_hardware"] = None if best is None else best["hardware"]
        rows.append(row)
    objective = next(iter(results.values())).scenario.objective
    key = RANKED[objective][1]
    return sorted(rows, key=lambda r: (r[key] is None, r[key] or 0.0, r["site"]))


#: Relative difference below which two sites' best values count as a tie (the cloud cost
#: does not depend on the site: every site ties on it).
TIE_RTOL = 1e-9


def site_winners(ranking: list[dict]) -> dict[str, list[str]]:
    """objective -> the sites with the lowest best value, ties included (empty if no site
    has a plan)."""
    out = {}
    for objective, (_, key) in RANKED.items():
        values = [r[key] for r in ranking if r[key] is not None]
        low = min(values, default=None)
        out[objective] = [] if low is None else [
            r["site"] for r in ranking
            if r[key] is not None and r[key] <= low * (1 + TIE_RTOL)]
    return out


__all__ = ["RANKED", "is_several", "site_names", "plan_sites", "site_ranking", "site_winners"]
