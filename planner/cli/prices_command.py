"""``capplan prices list|show|refresh``: cloud $/GPU-hour by accelerator, provider and tier."""

from __future__ import annotations

import sys

import typer

from planner.cli.common import (
    ForceOption,
    FormatOption,
    OutputOption,
    command_group,
    output_format,
)

prices_app = command_group(
    "prices", "Cloud prices per GPU-hour by accelerator, provider and tier (SkyPilot catalog data).")

_CATALOG_HELP = ("Extra catalog directory (repeatable); its prices/*.csv files (from `capplan "
                 "prices refresh`) replace the shipped rows of their providers.")
TIER_COLUMNS = (("on-demand", "on_demand_usd_per_gpu_hour"), ("spot", "spot_usd_per_gpu_hour"))


def _load(catalog_dirs):
    from hardware_catalog import load_catalog
    from hardware_catalog.prices import load_prices

    cat = load_catalog(tuple(catalog_dirs or ()))
    return cat, load_prices(cat.dirs)


def _shown(rows: list[dict], fmt: str) -> list[dict]:
    """Short column labels for the table and markdown formats (json/csv keep SI names)."""
    if fmt in ("json", "csv"):
        return rows
    return [{k.replace("_usd_per_gpu_hour", " $/GPU-h").replace("_", " "): v
             for k, v in r.items()} for r in rows]


def _stats(values: list[float]) -> tuple[float | None, float | None, float | None]:
    from statistics import median

    if not values:
        return None, None, None
    return min(values), float(median(values)), max(values)


@prices_app.command("list")
def list_(
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    catalog: list[str] = typer.Option(None, "--catalog", help=_CATALOG_HELP),  # noqa: B008
):
    """One row per catalog accelerator: the default price and its spread across providers.

    min/median/max are over the per-provider medians of non-marketplace providers
    ($/GPU-h); 'default' is the price `capplan plan` uses (an estimate where no
    provider lists the accelerator).
    """
    from planner.engine.economics.pricing import price_quote, provider_medians
    from planner.report.output import render, write

    format = output_format(format, output)
    cat, rows = _load(catalog)
    table = []
    for acc in cat.accelerators.values():
        quote = price_quote(cat, acc)
        on_demand = provider_medians(rows, acc.id, "on-demand")
        spot = provider_medians(rows, acc.id, "spot")
        market = provider_medians(rows, acc.id, "on-demand", marketplace=True)
        lo, mid, hi = _stats(list(on_demand.values()))
        table.append({
            "accelerator": acc.id, "providers": len(on_demand),
            "min_usd_per_gpu_hour": lo, "median_usd_per_gpu_hour": mid,
            "max_usd_per_gpu_hour": hi,
            "spot_median_usd_per_gpu_hour": _stats(list(spot.values()))[1],
            "marketplace_min_usd_per_gpu_hour": _stats(list(market.values()))[0],
            "default_usd_per_gpu_hour": quote.usd_per_gpu_hour,
            "default_source": (f"estimate ({quote.basis})" if quote.estimate
                               else "price data (market)"),
        })
    payload = {"catalog_version": cat.version, "accelerators": table,
               "providers": sorted({r.provider for r in rows}),
               "marketplaces": sorted({r.provider for r in rows if r.marketplace})}
    write(render(_shown(table, format), format, title="Cloud $/GPU-hour per accelerator (on-demand unless "
                 "named; spread over non-marketplace providers' medians)", payload=payload),
          output, force)


@prices_app.command("show")
def show(
    accelerator: str = typer.Argument(..., help="Catalog accelerator id (e.g. h100-sxm)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    catalog: list[str] = typer.Option(None, "--catalog", help=_CATALOG_HELP),  # noqa: B008
):
    """Prices of one accelerator per provider and tier: rows, regions, min/median/max $/GPU-h."""
    from planner.engine.economics.pricing import TIERS, PriceQuote, price_quote
    from planner.errors import CapplanError
    from planner.report.output import render, write

    format = output_format(format, output)
    cat, rows = _load(catalog)
    acc = cat.accelerator(accelerator)
    mine = [r for r in rows if r.accelerator == acc.id]
    table = []
    for provider in sorted({r.provider for r in mine}):
        of = [r for r in mine if r.provider == provider]
        for tier, column in TIER_COLUMNS:
            values = [getattr(r, column) for r in of if getattr(r, column) is not None]
            if not values:
                continue
            lo, mid, hi = _stats(values)
            table.append({
                "provider": provider, "tier": tier, "marketplace": of[0].marketplace,
                "rows": len(values),
                "regions": len({r.region for r in of if getattr(r, column) is not None}),
                "min_usd_per_gpu_hour": lo, "median_usd_per_gpu_hour": mid,
                "max_usd_per_gpu_hour": hi,
                "note": "accelerator only; host VM extra" if of[0].accelerator_only else "",
            })
    quotes = {}
    for tier in TIERS:
        try:
            quotes[tier] = price_quote(cat, acc, tier).as_dict()
        except CapplanError as exc:  # a tier without data is reported, not fatal
            quotes[tier] = {"error": str(exc)}
    if not mine:
        plan_price = PriceQuote(**quotes["on-demand"]) if "error" not in quotes["on-demand"] \
            else None
        print(f"capplan: no provider in the price data lists {acc.id}; plans use "
              + (f"${plan_price.usd_per_gpu_hour:.2f}/GPU-h, {plan_price.provenance()}"
                 if plan_price else "no on-demand price"), file=sys.stderr)
    payload = {"accelerator": acc.id, "rows": table, "default": quotes, "catalog_version":
               cat.version}
    if format == "table":
        text = render(_shown(table, format), format,
                      title=f"{acc.id}: $/GPU-hour by provider and tier")
        for tier, q in quotes.items():
            line = q["error"] if "error" in q else PriceQuote(**q).label()
            text += f"{tier}: {line}\n"
        write(text, output, force)
        return
    write(render(_shown(table, format), format,
                 title=f"{acc.id}: $/GPU-hour by provider and tier",
                 payload=payload), output, force)


@prices_app.command("refresh")
def refresh(
    path: str = typer.Argument(..., help="A SkyPilot catalog vms.csv "
                               "(~/.sky/catalogs/<version>/<cloud>/vms.csv)."),
    into: str = typer.Option("capplan-catalog", "--into",
                             help="Catalog directory to write <DIR>/prices/<provider>.csv into."),
    provider: str = typer.Option(None, "--provider",
                                 help="Provider name (default: the vms.csv's folder name)."),
    force: ForceOption = False,
):
    """Write a user price file from a SkyPilot vms.csv already on disk (no network).

    Reads the columns AcceleratorName, AcceleratorCount, Price, SpotPrice, Region (and
    InstanceType, GpuInfo if present); zone rows collapse to regions (lowest price per
    region). The file has the shipped file's columns; its per-GPU prices are per chip for
    TPU slices. Use it with `--catalog DIR`: it replaces the shipped rows of that provider.
    Rows a price file may not hold (e.g. a price outside 0.01..1000 $/GPU-h) are left out
    and counted on stderr.
    """
    from pathlib import Path

    from hardware_catalog.prices import loadable_rows, rows_from_skypilot, write_price_file
    from planner.errors import CapplanError

    source = Path(path).expanduser()
    if not source.is_file():
        raise CapplanError(f"{path}: no such file; expected a SkyPilot vms.csv such as "
                           "~/.sky/catalogs/v8/aws/vms.csv")
    name = (provider or source.parent.name).strip().lower()
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise CapplanError(f"provider name '{name}' is not usable as a file name; "
                           "pass --provider NAME (letters, digits, - or _)")
    rows, refused = loadable_rows(rows_from_skypilot(source, name), path)
    if refused:
        print(f"capplan: left out {len(refused)} row(s) capplan's price files refuse; the "
              f"first: {refused[0]}", file=sys.stderr)
    if not rows:
        raise CapplanError(f"{path}: no accelerator rows with a usable price (is it a GPU "
                           "cloud's vms.csv?)")
    target = Path(into).expanduser() / "prices" / f"{name}.csv"
    if target.exists() and not force:
        raise CapplanError(f"{target} exists; pass --force to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    write_price_file(rows, target)
    from hardware_catalog.prices import read_price_file

    mapped = sorted({r.accelerator for r in read_price_file(target) if r.accelerator})
    print(f"capplan: wrote {target} ({len(rows)} rows; catalog accelerators: "
          f"{', '.join(mapped) or 'none'}); use it with --catalog {into}", file=sys.stderr)
