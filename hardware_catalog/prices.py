"""Cloud price data: $/GPU-hour by accelerator, provider, region and tier.

The shipped table ``data/prices/gpu_cloud_prices.csv`` is an extract of the public
SkyPilot catalog (github.com/skypilot-org/skypilot-catalog, schema v8; provenance,
commits and caveats in ``data/prices/SOURCE.md``).  User price files written by
``capplan prices refresh`` live in ``<catalog dir>/prices/*.csv`` with the same columns;
a user file replaces the shipped rows of every provider it lists.

Each row is mapped here to a catalog accelerator id (:func:`accelerator_id`) and
normalised to USD per accelerator-hour: instance price / accelerators per instance
(:func:`chips_per_instance`; TPU slices are priced per slice and split into chips).
Only the csv module is used: this module is on the one-shot CLI path (the shipped
table's rows are kept across runs by :mod:`hardware_catalog.validated_cache`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from . import price_schema, validated_cache
from .errors import CatalogError
from .price_schema import COLUMNS, MAX_PRICE_FILE_BYTES, PRICE_COLUMNS
from .textfile import read_utf8

PRICES_DIR = Path(__file__).resolve().parent / "data" / "prices"
SHIPPED_FILE = PRICES_DIR / "gpu_cloud_prices.csv"
DISCOUNTS_FILE = PRICES_DIR / "commitment_discounts.csv"
INTERRUPTION_FILE = PRICES_DIR / "spot_interruption.csv"
OWNERSHIP_FILE = PRICES_DIR / "ownership.csv"
DERIVED_FILE = PRICES_DIR / "derived_prices.csv"
#: The day the shipped extract was read (``data/prices/SOURCE.md``; the SkyPilot commits'
#: own dates are unknown).
SHIPPED_AS_OF = "2026-11-23"
#: Providers that sell third parties' capacity at prices the suppliers or an auction set.
#: The shipped CSV marks vast, shadeform and primeintellect; capplan adds two more:
#: hyperbolic ("GPU Marketplace Pricing ... Suppliers set their own price",
#: docs.hyperbolic.xyz/docs/gpu-marketplace-pricing, read 2026-11-23) and mithril
#: (spot capacity "allocated through a real-time auction ... a unified marketplace",
#: mithril.ai/blog/mithril-now-on-skypilot, read 2026-11-23; its file lists A100 and
#: B200 at 0.01 $/GPU-h, an auction floor rather than a price).
MARKETPLACES = frozenset({"vast", "shadeform", "primeintellect", "hyperbolic", "mithril"})

#: Providers whose GPU rows price the accelerator only (host VM billed apart): GCP.
ACCELERATOR_ONLY_PROVIDERS = frozenset({"gcp"})

#: SkyPilot AcceleratorName -> catalog id, where the name alone decides.
_NAMES = {
    "a100-40gb": "a100-40gb", "a100-40gb-320gb": "a100-40gb",
    "a100-80gb": "a100-80gb", "a100-80gb-160gb": "a100-80gb", "a100-80gb-320gb": "a100-80gb",
    "a100-80gb-640gb": "a100-80gb",
    "h100-sxm": "h100-sxm", "h100-mega": "h100-sxm",  # GCP a3-megagpu: H100 SXM, more NICs
    "h200": "h200", "h200-sxm": "h200", "gh200": "gh200", "b200": "b200", "gb200": "gb200",
    "mi300x": "mi300x", "mi355x": "mi355x", "l40s": "l40s", "b300": "b300", "gb300": "gb300",
}
#: Names seen in the data that match no catalog accelerator (kept, shown, never used).
UNMAPPED_REASONS = {
    "h100-nvl": "H100 NVL (94 GB, PCIe pair) is not in the catalog",
    "gaudi hl-205": "Gaudi HL-205 is first-generation Gaudi (AWS dl1), not gaudi3",
    "trainium": "AWS Trainium is not in the catalog",
}
_TPU = re.compile(r"^tpu-(v4|v5p|v5litepod|v6e)-(\d+)$")
#: TPU generations whose slice suffix counts TensorCores (2 per chip), per Google Cloud
#: TPU docs ("v4-8" and "v5p-8" are 4 chips); v5e/v6e suffixes count chips.
_TENSORCORES_PER_CHIP = {"v4": 2, "v5p": 2, "v5litepod": 1, "v6e": 1}


@dataclass(frozen=True)
class PriceRow:
    """One instance type in one region, normalised to USD per accelerator-hour."""

    provider: str
    instance_type: str
    accelerator_name: str  # as written in the source file
    accelerator: str | None  # catalog id, None when no catalog entry matches
    chips: float  # accelerators the instance price covers
    region: str
    on_demand_usd_per_gpu_hour: float | None
    spot_usd_per_gpu_hour: float | None
    marketplace: bool
    accelerator_only: bool  # price excludes the host VM (GCP GPU rows)
    source: str  # "<file>@<commit>"


def _number(text: str | None) -> float | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def accelerator_id(name: str, instance_type: str = "", memory_gib: float | None = None,
                   ) -> str | None:
    """The catalog accelerator id of a SkyPilot ``AcceleratorName`` (None: no match).

    Plain ``A100`` is split by memory (40 vs 80 GiB); plain ``H100`` by instance type
    (``pcie`` -> h100-pcie, ``nvl`` or > 90 GiB -> H100 NVL, unmapped; else SXM, which is
    what AWS p5, GCP a3, Lambda ``*_sxm5``, Nebius, OCI and Verda sell).  PCIe A100
    rows (cudo, vast) are not the SXM4 parts of the catalog and stay unmapped.
    """
    key = name.strip().lower()
    itype = instance_type.lower()
    tpu = _TPU.match(key)
    if tpu:
        return {"v4": "tpu-v4", "v5p": "tpu-v5p", "v5litepod": "tpu-v5e",
                "v6e": "tpu-v6e"}.get(tpu.group(1))
    if key in _NAMES:
        return _NAMES[key]
    if key == "a100":
        if "pci" in itype:
            return None
        if memory_gib is None:
            return None
        return "a100-80gb" if memory_gib > 60 else "a100-40gb"
    if key == "h100":
        if "nvl" in itype or (memory_gib or 0) > 90:
            return None
        return "h100-pcie" if "pcie" in itype else "h100-sxm"
    return None


def chips_per_instance(name: str, accelerator_count: float) -> float:
    """Accelerators an instance price covers (TPU slice names give TensorCores)."""
    tpu = _TPU.match(name.strip().lower())
    if tpu:
        return int(tpu.group(2)) / _TENSORCORES_PER_CHIP[tpu.group(1)]
    return accelerator_count


#: Most accelerators one priced instance may cover (a TPU slice's chips; v5p-12288 is 6,144).
MAX_CHIPS = 65536


def _row(record: dict, where: str, width: int = len(COLUMNS)) -> PriceRow:
    """One row of a price file, every cell checked (:mod:`hardware_catalog.price_schema`);
    ``where``: ``file:line`` for the one-line error."""
    schema = price_schema
    schema.check_cells(record, where, width)
    provider = schema.provider(record, where)
    name = schema.text(record, "accelerator", where, required=True)
    for column in ("instance_type", "region", "source_path", "source_commit"):
        schema.text(record, column, where)
    count = schema.count(record, where)
    chips = chips_per_instance(name, float(count))
    if not 1 <= chips <= MAX_CHIPS:
        raise CatalogError(f"{where}: accelerator: {name!r} is a slice of {chips:g} chips; "
                           f"expected 1..{MAX_CHIPS}")
    memory = schema.memory_gib(record, where)
    per_gpu = {}
    for column, per_gpu_column in PRICE_COLUMNS:
        price = schema.instance_price(record, column, where)
        per_gpu[column] = None if price is None else schema.per_gpu_price(
            record, price, chips, column, where)
        schema.check_per_gpu_column(record, price, chips, count, per_gpu_column, where)
    if all(v is None for v in per_gpu.values()):
        raise CatalogError(f"{where}: no price: on_demand_usd_per_hour and spot_usd_per_hour "
                           "are both empty; expected at least one")
    instance_type = record.get("instance_type") or ""
    return PriceRow(
        provider=provider, instance_type=instance_type, accelerator_name=name,
        accelerator=accelerator_id(name, instance_type, memory), chips=chips,
        region=record.get("region") or "",
        on_demand_usd_per_gpu_hour=per_gpu["on_demand_usd_per_hour"],
        spot_usd_per_gpu_hour=per_gpu["spot_usd_per_hour"],
        marketplace=schema.marketplace(record, where) or provider in MARKETPLACES,
        accelerator_only=(provider in ACCELERATOR_ONLY_PROVIDERS and not instance_type
                          and not _TPU.match(name.strip().lower())),
        source=f"{record.get('source_path') or ''}@{record.get('source_commit') or ''}")


def read_price_file(path: str | Path) -> list[PriceRow]:
    """Rows of one price CSV (the columns of :data:`COLUMNS`, UTF-8 with or without a
    byte-order mark, at most :data:`MAX_PRICE_FILE_BYTES`); a bad cell is one
    :class:`CatalogError` line naming file, line and column."""
    path = Path(path)
    shown = str(path)
    text = read_utf8(path, shown, MAX_PRICE_FILE_BYTES, kind="a CSV price file")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        price_schema.check_header(reader.fieldnames, shown)
        return [_row(r, f"{shown}:{reader.line_num}", len(reader.fieldnames)) for r in reader]
    except csv.Error as exc:
        raise CatalogError(f"{shown}:{reader.line_num}: not a CSV row ({exc})") from None


def loadable_rows(rows: list[dict], shown: str) -> tuple[list[dict], list[str]]:
    """The rows (dicts of :data:`COLUMNS`) :func:`read_price_file` would accept once
    written, and one message for each it would refuse (``shown``: the source file)."""
    kept, refused = [], []
    for row in rows:
        cells = {c: "" if row.get(c) is None else str(row[c]) for c in COLUMNS}
        try:
            _row(cells, f"{shown} ({cells['instance_type'] or cells['accelerator']!r} in "
                        f"{cells['region']!r})")
        except CatalogError as exc:
            refused.append(str(exc))
            continue
        kept.append(row)
    return kept, refused


def user_price_files(dirs: tuple[str, ...]) -> list[Path]:
    """``<dir>/prices/*.csv`` of each user catalog directory, in load order."""
    files = []
    for d in dirs:
        folder = Path(d) / "prices"
        if folder.is_dir():
            files += sorted(folder.glob("*.csv"))
    return files


def _shipped_rows() -> list[PriceRow]:
    """The shipped table's rows: read once per change of the file or of this package's
    code, then kept in capplan's cache folder (:mod:`hardware_catalog.validated_cache`)."""
    if not validated_cache.enabled():
        return read_price_file(SHIPPED_FILE)
    try:
        data = SHIPPED_FILE.read_bytes()
    except OSError:
        return read_price_file(SHIPPED_FILE)  # says what is wrong with it
    key = validated_cache.key(hashlib.sha256(data).digest(), SHIPPED_FILE)
    rows = validated_cache.load_objects(key, SHIPPED_FILE, PriceRow)
    if rows is None:
        rows = read_price_file(SHIPPED_FILE)
        validated_cache.store_objects(key, SHIPPED_FILE, rows)
    return rows


@lru_cache(maxsize=16)
def load_prices(dirs: tuple[str, ...] = (), quotes: tuple[str, ...] = ()
                ) -> tuple[PriceRow, ...]:
    """Shipped price rows, with each user file replacing the rows of its providers.

    ``quotes``: price files of the user's own quotes (``--prices FILE``, same columns):
    for every accelerator a quote file lists, its rows replace all other rows of that
    accelerator (the user's quotes are the price it pays); they are marked as quotes
    (``source`` ends in ``@quote``).
    """
    rows = _shipped_rows()
    for path in user_price_files(dirs):
        extra = read_price_file(path)
        replaced = {r.provider for r in extra}
        rows = [r for r in rows if r.provider not in replaced] + extra
    for path in quotes:
        mine = [replace(r, source=f"{path}@quote") for r in read_price_file(path)]
        quoted = {r.accelerator for r in mine if r.accelerator is not None}
        rows = [r for r in rows if r.accelerator not in quoted] + mine
    return tuple(rows)


@dataclass(frozen=True)
class DerivedPrice:
    """An accelerator priced from another's price times a factor (no market listing)."""

    accelerator: str
    from_accelerator: str
    factor: float
    source: str
    as_of: str


@lru_cache(maxsize=1)
def load_derived() -> dict[str, DerivedPrice]:
    """Derived prices (``data/prices/derived_prices.csv``) by accelerator id."""
    with DERIVED_FILE.open(newline="", encoding="utf-8") as handle:
        return {r["accelerator"]: DerivedPrice(r["accelerator"], r["from_accelerator"],
                                               float(r["factor"]), r["source"], r["as_of"])
                for r in csv.DictReader(handle)}


@dataclass(frozen=True)
class Discount:
    """A commitment discount off the on-demand price, with its provenance."""

    provider: str  # "*" = any provider without its own entry
    tier: str
    fraction: float
    source: str
    as_of: str
    estimate: bool
    note: str


@lru_cache(maxsize=1)
def load_discounts() -> tuple[Discount, ...]:
    """Reserved-tier discounts (``data/prices/commitment_discounts.csv``)."""
    with DISCOUNTS_FILE.open(newline="", encoding="utf-8") as handle:
        return tuple(Discount(provider=r["provider"], tier=r["tier"],
                              fraction=float(r["discount_fraction"]), source=r["source"],
                              as_of=r["as_of"], estimate=r["estimate"] == "true",
                              note=r["note"]) for r in csv.DictReader(handle))


@lru_cache(maxsize=1)
def load_interruption_buckets() -> dict[str, dict]:
    """Spot interruption-frequency buckets (``data/prices/spot_interruption.csv``) by name."""
    with INTERRUPTION_FILE.open(newline="", encoding="utf-8") as handle:
        return {r["bucket"]: {**r, "interrupted_fraction_per_month":
                              float(r["interrupted_fraction_per_month"])}
                for r in csv.DictReader(handle)}


@lru_cache(maxsize=1)
def load_ownership() -> dict[str, dict]:
    """Owned-cluster defaults (``data/prices/ownership.csv``): parameter -> its row, with
    ``value`` as a float (capex fractions, residual value, facility rent, utilisation)."""
    with OWNERSHIP_FILE.open(newline="", encoding="utf-8") as handle:
        return {r["parameter"]: {**r, "value": float(r["value"]),
                                 "estimate": r["estimate"] == "true"}
                for r in csv.DictReader(handle)}


def write_price_file(rows: list[dict], path: Path) -> None:
    """Write rows (dicts with :data:`COLUMNS`) as a price CSV, refused if larger than
    :func:`read_price_file` reads."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    data = buf.getvalue().encode("utf-8")
    if len(data) > MAX_PRICE_FILE_BYTES:
        raise CatalogError(f"{path}: {len(rows)} rows make {len(data)} bytes; a price file "
                           f"holds at most {MAX_PRICE_FILE_BYTES} bytes: split the rows by "
                           "provider")
    path.write_bytes(data)


#: SkyPilot ``vms.csv`` columns ``capplan prices refresh`` reads (schema v8; v5/v6 alike).
SKYPILOT_REQUIRED = ("AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
SKYPILOT_OPTIONAL = ("InstanceType", "GpuInfo")
_MIB = re.compile(r"SizeInMiB['\"]?\s*:\s*([0-9.]+)")


def _memory_gib(gpu_info: str, count: float) -> float | None:
    """Per-accelerator memory from SkyPilot's GpuInfo (MiB per GPU; a few files store
    GB in the MiB field, or the per-instance total: both corrected heuristically)."""
    match = _MIB.search(gpu_info or "")
    if not match:
        return None
    try:
        value = float(match.group(1))
    except ValueError:  # "1.2.3"
        return None
    gib = value / 1024 if value >= 1024 else value  # small values are GB, not MiB
    gib = gib / count if gib > 200 and count > 1 else gib
    low, high = price_schema.GPU_MEMORY_GIB
    return gib if low <= gib <= high else None  # a guess a price file may not hold: unknown


def rows_from_skypilot(path: str | Path, provider: str) -> list[dict]:
    """Rows of :data:`COLUMNS` from a SkyPilot catalog ``vms.csv`` (accelerator rows only).

    Availability-zone rows collapse to one per instance type and region: the lowest
    on-demand and the lowest spot price over the region's zones.  Rows without an
    ``AcceleratorName`` (CPU instances, GCP host VMs) or without any price are dropped.
    """
    path = Path(path)
    provider = provider.strip().lower()
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in SKYPILOT_REQUIRED if c not in (reader.fieldnames or ())]
            if missing:
                raise CatalogError(
                    f"{path}: not a SkyPilot vms.csv: lacks column(s) {', '.join(missing)}; "
                    f"expected {', '.join(SKYPILOT_REQUIRED)} (and {', '.join(SKYPILOT_OPTIONAL)})")
            records = list(reader)
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None
    merged: dict[tuple, dict] = {}
    for r in records:
        name = (r.get("AcceleratorName") or "").strip()
        try:
            count = float(r.get("AcceleratorCount") or 0)
        except ValueError:
            continue
        price, spot = _number(r.get("Price")), _number(r.get("SpotPrice"))
        if not name or count <= 0 or (price is None and spot is None):
            continue
        key = (r.get("InstanceType", ""), name, count, r["Region"])
        row = merged.setdefault(key, {
            "provider": provider, "instance_type": key[0], "accelerator": name,
            "accelerator_count": f"{count:g}",
            "gpu_memory_gib": _memory_gib(r.get("GpuInfo", ""), count) or "",
            "region": key[3], "on_demand_usd_per_hour": None, "spot_usd_per_hour": None,
            "marketplace": "true" if provider in MARKETPLACES else "false",
            "source_path": str(path.resolve()), "source_commit": "local"})
        for column, value in (("on_demand_usd_per_hour", price), ("spot_usd_per_hour", spot)):
            if value is not None and (row[column] is None or value < row[column]):
                row[column] = value
    out = []
    for row in merged.values():
        chips = chips_per_instance(row["accelerator"], float(row["accelerator_count"]))
        for column in ("on_demand", "spot"):
            total = row[f"{column}_usd_per_hour"]
            row[f"{column}_usd_per_gpu_hour"] = ("" if total is None or not chips > 0
                                                 else round(total / chips, 4))
            row[f"{column}_usd_per_hour"] = "" if total is None else total
        out.append(row)
    return out
