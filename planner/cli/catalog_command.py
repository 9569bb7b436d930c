"""``capplan catalog list|show``: browse accelerators, nodes, sites, models, reliability,
and list the ``--precision`` recipes."""

from __future__ import annotations

import typer

from hardware_catalog.recipes import load_recipes
from planner.cli.common import (
    CatalogOption,
    ForceOption,
    FormatOption,
    OutputOption,
    PricesOption,
    command_group,
    output_format,
)
from planner.errors import CapplanError, did_you_mean

catalog_app = command_group(
    "catalog", "Browse the hardware, model, site and reliability catalog.")

KIND_NAMES = {"accelerators": "accelerator", "nodes": "node", "sites": "site",
              "site_classes": "site_class", "models": "model", "reliability": "reliability",
              "stacks": "stack"}
_FORMAT_HELP = "table | json | csv | markdown (json and csv: SI units)."

# (suffix of a field name, unit shown, scale for the table, unit in the table)
_UNITS = [
    ("_flops_per_s", "FLOP/s", 1e12, "TFLOP/s"),
    ("_bytes_per_s_per_gpu", "B/s per GPU", 1e9, "GB/s per GPU"),
    ("_bytes_per_s", "B/s", 1e9, "GB/s"),
    ("_bits_per_s", "b/s", 1e9, "Gb/s"),
    ("_ops_per_s", "1/s", 1e12, "T/s"),
    ("_bytes", "B", 1e9, "GB"),
    ("_usd_per_gpu_hour", "USD/GPU-h", 1, "USD/GPU-h"),
    ("_usd_per_kwh", "USD/kWh", 1, "USD/kWh"),
    ("_usd", "USD", 1, "USD"),
    ("_g_per_kwh", "gCO2e/kWh", 1, "gCO2e/kWh"),
    ("_kg_co2e", "kgCO2e", 1, "kgCO2e"),
    ("_mtbf_s", "s", 3600, "h"),
    ("_latency_s", "s", 1e-6, "us"),
    ("_s", "s", 1, "s"),
    ("_w", "W", 1, "W"),
    ("_years", "years", 1, "years"),
    ("_gpus", "GPUs", 1, "GPUs"),
    ("_dim", "elements", 1, "elements"),
    ("_efficiency", "fraction", 1, "fraction"),
    ("_probability_per_step", "per step", 1, "per step"),
    ("_cv", "ratio", 1, "ratio"),
    ("pue", "ratio", 1, "ratio"),
]


def unit_of(field: str) -> tuple[str, float, str]:
    """(SI unit, table scale, table unit) of a catalog field, from its name."""
    for suffix, si, scale, shown in _UNITS:
        if field.endswith(suffix):
            return si, scale, shown
    return "", 1.0, ""




def _load(catalog_dirs, prices=None):
    from hardware_catalog import load_catalog

    return load_catalog(tuple(catalog_dirs or ()), tuple(prices or ()))


#: The --precision recipes (hardware_catalog/data/precisions/recipes.csv): listed beside
#: the catalog's kinds, not an entry kind of their own.
PRECISIONS_KIND = "precisions"


def _kind(name: str | None) -> str | None:
    if name is None:
        return None
    key = name.lower()
    if key in KIND_NAMES:
        return KIND_NAMES[key]
    if key in KIND_NAMES.values():
        return key
    if key in (PRECISIONS_KIND, "precision", "recipes"):
        return PRECISIONS_KIND
    raise did_you_mean("kind", name, [*KIND_NAMES, PRECISIONS_KIND])


def recipe_rows(si: bool) -> list[dict]:
    """One row a ``--precision`` recipe: the precision its low-precision GEMMs run at, the
    share of the GEMM FLOPs there, what it caches and casts, the output layer's precision
    (BF16, or the stack's: ``low_precision_output_layer``) and where it runs."""
    rows = []
    for r in load_recipes().values():
        runs = "; ".join(filter(None, (
            f"parts with {r.gemm_precision.upper()} peaks",
            r.vendors and f"{'/'.join(r.vendors)} only",
            r.requires and f"{'/'.join(p.upper() for p in r.requires)} peaks too (block "
            "scaling in hardware)",
            r.stack_flag and f"stacks with {r.stack_flag} = 1")))
        share = r.gemm_flop_share
        rows.append({"recipe": r.name, "gemm_precision": r.gemm_precision,
                     "gemm_flop_share": share if si else f"{100 * share:.0f} %",
                     "gemm_rate_factor": r.gemm_rate_factor,
                     "cached_input_bytes": r.cached_input_bytes,
                     "cast_passes": r.cast_passes,
                     "output_layer": "BF16" if r.output_layer_high_precision
                     else r.gemm_precision.upper() if r.gemm_precision in ("bf16", "tf32")
                     else "the stack's",
                     "runs_on": runs,
                     "estimate": r.estimate, "aliases": ", ".join(r.aliases),
                     "source": r.source})
    return rows


def _q(entry, field: str):
    q = getattr(entry, field, None)
    return None if q is None else float(q.value)


def _scaled(entry, field: str):
    v = _q(entry, field)
    return None if v is None else v / unit_of(field)[1]


def _summary(kind: str, e, si: bool, mttf: dict | None = None,
             prices: dict | None = None) -> dict:
    """One row per entry; ``si``: raw SI fields (csv), else display units (table/markdown);
    ``mttf``: a reliability profile's job MTTF [s] by GPU count; ``prices``: an
    accelerator's quotes by tier (:func:`accelerator_prices`)."""
    get = _q if si else _scaled

    def col(field: str, label: str) -> tuple[str, object]:
        return (field if si else f"{label} ({unit_of(field)[2]})"), get(e, field)

    row: dict = {"id": e.id}
    if si or kind not in ("accelerator", "model", "node"):
        row["name"] = e.name
    if kind == "accelerator":
        fields = [("peak_bf16_flops_per_s", "bf16"), ("peak_fp8_flops_per_s", "fp8"),
                  ("peak_fp4_flops_per_s", "fp4"), ("peak_int8_flops_per_s", "int8"),
                  ("hbm_bytes", "HBM"), ("hbm_bandwidth_bytes_per_s", "HBM bw"),
                  ("max_power_w", "max power"), ("scale_up_domain_gpus", "scale-up"),
                  ("scale_up_bandwidth_bytes_per_s", "scale-up bw")]
        row["vendor"] = e.vendor
        row.update(col(f, label) for f, label in fields)
        if si:
            row["node"] = e.node
        row.update(price_cells(prices or {}, si))
    elif kind == "node":
        row["gpus_per_node"] = e.gpus_per_node
        row["nics_per_node"] = e.nics_per_node
        row.update([col("nic_bandwidth_bits_per_s", "NIC"),
                    col("node_overhead_power_w", "overhead"),
                    col("storage_write_bytes_per_s", "ckpt write")])
    elif kind == "site":
        row.update([col("pue", "PUE"), col("electricity_usd_per_kwh", "price"),
                    col("grid_intensity_g_per_kwh", "grid")])
    elif kind == "site_class":
        row.update([col("pue", "PUE")])
    elif kind == "model":
        row.update(layers=e.layers, hidden=e.hidden, heads=e.heads, kv_heads=e.kv_heads,
                   ffn=e.ffn, vocab=e.vocab, seq_len=e.seq_len, experts=e.experts)
        counts = param_counts_of(e)
        if si:
            row["param_count"] = counts["params"]
            row["active_param_count"] = counts["active_params"]
        else:
            row["params (B)"] = counts["params"] / 1e9
            row["active (B)"] = counts["active_params"] / 1e9
    elif kind == "reliability":
        # the failure domains the kernel charges (per GPU, per node, per job), and the job
        # MTTF they give at three sizes; the all-cause gpu_mtbf_s is in `catalog show`
        domains = e.domain_gpu_mtbf_s is not None
        row["failures"] = ("domain_rates" if si else "per GPU, node, job") if domains else (
            "all_cause_per_gpu" if si else "all causes per GPU")
        row["gpu_mtbf_s" if si else "GPU MTBF (h)"] = get(
            e, "domain_gpu_mtbf_s" if domains else "gpu_mtbf_s")
        row.update([col("domain_node_mtbf_s", "host MTBF"),
                    col("domain_network_mtbf_s", "network MTBF"),
                    col("domain_software_mtbf_s", "software/job MTBF"),
                    col("restart_overhead_s", "restart"), col("step_time_cv", "step cv")])
        for gpus, mttf_s in (mttf or {}).items():
            row[f"job_mttf_s_{gpus}_gpus" if si else f"job MTTF {gpus:,} GPUs (h)"] = (
                mttf_s if si else mttf_s / 3600)
    elif kind == "stack":
        row.update((f, _q(e, f)) for f in ("tp_overlap", "dp_overlap", "ep_overlap",
                                            "attention_efficiency_factor"))
        row.update([col("layer_overhead_s", "layer launch")])
    return row


#: What the catalog's own cloud price is for (`catalog show`): the planner's are price.*.
FALLBACK_NOTE = (" [catalog estimate: used only where the price data has no listing; the "
                 "planner's prices are the price.* rows]")

#: The tiers `catalog list accelerators` shows as columns (JSON: every cloud tier).
LISTED_TIERS = ("on-demand", "spot")


def accelerator_prices(catalog, accelerator) -> dict[str, dict]:
    """Tier -> the price the planner uses (:func:`planner.engine.economics.pricing.price_quote`, the
    one function every screen reads), as a dict; a tier without a price: {"error": why}."""
    from planner.engine.economics.pricing import CLOUD_TIERS, price_quote

    out = {}
    for tier in CLOUD_TIERS:
        try:
            out[tier] = price_quote(catalog, accelerator, tier).as_dict()
        except CapplanError as exc:
            out[tier] = {"error": str(exc)}
    return out


def price_cells(prices: dict[str, dict], si: bool) -> dict:
    """The price columns of an accelerator row: per listed tier the planner's price, its
    listings, providers, quartiles, date and estimate flag."""
    row: dict = {}
    for tier in LISTED_TIERS:
        q = prices.get(tier, {})
        ok = "usd_per_gpu_hour" in q
        key = tier.replace("-", "_")
        if si:
            row.update({f"{key}_usd_per_gpu_hour": q.get("usd_per_gpu_hour"),
                        f"{key}_listings": q.get("listings", 0) if ok else 0,
                        f"{key}_providers": q.get("providers", 0) if ok else 0,
                        f"{key}_p25_usd_per_gpu_hour": q.get("p25_usd_per_gpu_hour"),
                        f"{key}_p75_usd_per_gpu_hour": q.get("p75_usd_per_gpu_hour"),
                        f"{key}_as_of": q.get("as_of", ""), f"{key}_basis": q.get("basis", ""),
                        f"{key}_estimate": q.get("estimate") if ok else None})
            continue
        if not ok:
            row.update({f"{tier} (USD/GPU-h)": "-", f"{tier} basis": "no price",
                        f"{tier} IQR": "", f"{tier} as of": ""})
            continue
        iqr = ("" if q["p25_usd_per_gpu_hour"] is None else
               f"{q['p25_usd_per_gpu_hour']:.2f}-{q['p75_usd_per_gpu_hour']:.2f}")
        row[f"{tier} (USD/GPU-h)"] = f"{q['usd_per_gpu_hour']:.2f}" + (
            " estimate" if q["estimate"] else "")
        row[f"{tier} basis"] = (f"{q['basis']}: {q['listings']} listings, "
                                f"{q['providers']} providers" if q["listings"] else
                                f"{q['basis']}" + (f" ({q['derived_from']})"
                                                   if q["derived_from"] else ""))
        row[f"{tier} IQR"] = iqr
        row[f"{tier} as of"] = q["as_of"]
    return row


def price_rows(prices: dict[str, dict], si: bool) -> list[dict]:
    """`catalog show` rows of an accelerator's prices, one per tier: the price the planner
    uses and where it comes from (a derived price names its base)."""
    from planner.engine.economics.pricing import PriceQuote

    rows = []
    for tier, q in prices.items():
        if "error" in q:
            rows.append({"field": f"price.{tier}", "value": "-", "unit": "",
                         "estimate": False if si else "", "as_of": "", "source": q["error"]})
            continue
        quote = PriceQuote(**q)
        rows.append({"field": f"price.{tier}", "value": quote.usd_per_gpu_hour,
                     "unit": "USD/GPU-h", "estimate": quote.estimate, "as_of": quote.as_of,
                     "source": (f"{quote.accelerator}: {quote.provenance()}"
                                if quote.estimate else quote.provenance()
                                + f"; {quote.source}")})
    return rows


def param_counts_of(model) -> dict[str, float]:
    """Total and active parameters of a catalog model: the run model's own count."""
    from planner.engine.inputs.scenario import model_inputs
    from planner.engine.run.model import param_counts

    return param_counts(model_inputs(model))


def _payload(catalog, kind: str, entry) -> dict:
    data = {"kind": kind, **entry.model_dump(mode="json", exclude_none=True)}
    if kind == "accelerator":  # the prices the planner uses; the catalog field is a fallback
        data["price"] = accelerator_prices(catalog, entry)
    if kind == "model":
        counts = param_counts_of(entry)
        data["derived"] = {"param_count": counts["params"],
                           "active_param_count": counts["active_params"],
                           "mtp_param_count": counts["mtp_params"],
                           "moe_layers": entry.moe_layers}
    origin = catalog.origin(kind, entry.id)
    if origin is not None:
        data["file"] = str(origin)
    return data


@catalog_app.command("list")
def list_(
    kind: str = typer.Argument(None, help="accelerators | nodes | sites | models | reliability | stacks "
                               "| precisions (the --precision recipes) (default: everything, one "
                               "row per entry)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
):
    """List catalog entries (all kinds, or one kind with its key numbers)."""
    from hardware_catalog.schema import KINDS
    from planner.report.output import render, write

    format = output_format(format, output)
    single = _kind(kind)
    if single == PRECISIONS_KIND:
        rows = recipe_rows(si=format in ("csv", "json"))
        if format == "json":
            write(render([], "json", payload={"precisions": rows}), output, force)
        else:  # the table the key numbers (sources and aliases in CSV, JSON, Markdown)
            shown = rows if format != "table" else [
                {k: v for k, v in r.items() if k not in ("source", "aliases")} for r in rows]
            write(render(_escaped(shown, format), format, title=f"{len(rows)} precision "
                         "recipes (--precision)"), output, force)
        return
    cat = _load(catalog, prices)
    kinds = [single] if single else list(KINDS)
    if format == "json":
        payload = {"catalog_version": cat.version,
                   "entries": [_payload(cat, k, e) for k in kinds for e in cat.table(k).values()]}
        write(render([], "json", payload=payload), output, force)
        return
    if single:
        rows = [_summary(single, e, si=format == "csv",
                         mttf=_job_mttfs(cat, e.id) if single == "reliability" else None,
                         prices=accelerator_prices(cat, e) if single == "accelerator"
                         else None)
                for e in cat.table(single).values()]
        title = f"{len(rows)} {kind.lower() if kind.lower() in KIND_NAMES else single + 's'}"
    else:
        rows = [{"kind": k, "id": e.id, "name": e.name} for k in kinds
                for e in cat.table(k).values()]
        title = f"capplan catalog {cat.version}: {len(rows)} entries"
    write(render(_escaped(rows, format), format, title=title), output, force)


#: Job sizes whose MTTF `catalog list reliability` shows (Kokolis et al. arXiv:2410.21680
#: published 8, 1,024 and 16,384 GPUs).
MTTF_GPUS = (8, 1024, 16384)


def _job_mttfs(catalog, profile: str) -> dict[int, float]:
    """The run model's job MTTF [s] under ``profile`` at :data:`MTTF_GPUS` GPUs."""
    from planner.analysis.validate import job_mttf_s

    return {gpus: job_mttf_s(profile, gpus, catalog=catalog) for gpus in MTTF_GPUS}


def _escaped(rows: list[dict], fmt: str) -> list[dict]:
    """Rich reads '[x]' in cells as markup; escape strings for the table format."""
    if fmt != "table":
        return rows
    from rich.markup import escape

    return [{k: escape(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]


@catalog_app.command("show")
def show(
    name: str = typer.Argument(..., help="An id (e.g. h100-sxm, llama3-70b) or a path to a "
                               ".toml file."),
    kind: str = typer.Option(None, "--kind", "-k", help="accelerator | node | site | model | "
                             "reliability (needed when an id exists in several kinds)."),
    format: FormatOption = None,
    output: OutputOption = None,
    force: ForceOption = False,
    catalog: CatalogOption = None,
    prices: PricesOption = None,
):
    """Show every field of one entry with unit, source, date and estimate flag."""
    from hardware_catalog.loader import looks_like_path, parse_file, suggest
    from hardware_catalog.schema import Quantity
    from planner.report.output import render, write

    format = output_format(format, output)
    wanted = _kind(kind)
    cat = _load(catalog, prices)
    if looks_like_path(name):
        entry = parse_file(name, expect_kind=wanted, user=True)
        found_kind = entry.kind
    elif wanted:
        entry, found_kind = cat.get(wanted, name), wanted
    else:
        hits = cat.find(name)
        if not hits:
            raise suggest("name", name, cat.all_ids())
        if len(hits) > 1:
            kinds = " and ".join(k for k, _ in hits)
            raise CapplanError(f"'{name}' is both a {kinds}; pass --kind")
        found_kind, entry = hits[0]

    if format == "json":
        write(render([], "json", payload={"catalog_version": cat.version,
                                          **_payload(cat, found_kind, entry)}), output, force)
        return
    si = format == "csv"
    rows = []
    fields = [(f, getattr(entry, f)) for f in type(entry).model_fields]
    if found_kind == "stack":  # its own values on some accelerators, one row each
        fields = [(f, v) for f, v in fields if f != "on_accelerator"] + [
            (f"on_accelerator.{acc}.{name}", q) for acc, own in entry.on_accelerator.items()
            for name, q in own if q is not None]
    for field, value in fields:
        if value is None or field in ("schema_version",):
            continue
        if isinstance(value, Quantity):
            unit, scale, shown = unit_of(field)
            rows.append({"field": field,
                         "value": value.value if si else value.value / scale,
                         "unit": unit if si else shown,
                         "estimate": value.estimate, "as_of": value.as_of.isoformat(),
                         "source": value.source + (f" (note: {value.note})" if value.note else "")
                         + (FALLBACK_NOTE if field == "cloud_price_usd_per_gpu_hour" else "")})
        else:
            text = ", ".join(value) if isinstance(value, list) else value
            text = text.isoformat() if hasattr(text, "isoformat") else text
            rows.append({"field": field, "value": text, "unit": "",
                         "estimate": False if si else "", "as_of": "", "source": ""})
    if found_kind == "accelerator":
        rows += price_rows(accelerator_prices(cat, entry), si)
    if found_kind == "model":
        counts = param_counts_of(entry)
        for field, count in (("param_count", counts["params"]),
                             ("active_param_count", counts["active_params"]),
                             ("mtp_param_count", counts["mtp_params"])):
            rows.append({"field": field, "value": count if si else count / 1e9,
                         "unit": "parameters" if si else "billion parameters",
                         "estimate": False if si else "", "as_of": "",
                         "source": "derived (planner.engine.run.model.param_counts)"})
    if not si:  # mixed-type value column: format here so the table stays readable
        from planner.report.output import format_cell

        for r in rows:
            r["value"] = format_cell(r["value"])
    write(render(_escaped(rows, format), format, title=f"{found_kind} {entry.id}: {entry.name}"),
          output, force)
