"""What each column of a price file may hold (the shipped table and ``<catalog>/prices/*.csv``).

A price file is checked like every other catalog file: each cell against its domain, and a
bad value is one line naming the file, the row and the column::

    prices/x.csv:3: accelerator_count: 'inf' is not allowed; expected an integer 1..1024

The domains are wide enough for any instance sold today and narrow enough that no typo
reaches the cost model as 0, inf or a denormal (``accelerator_count = inf`` used to price
a GPU-hour at 0 USD).  Only the standard library is used: this module is on the one-shot
CLI path.
"""

from __future__ import annotations

import difflib
import math
import re

from .errors import CatalogError
from .textfile import printable

#: Columns of a price file, in the order written (shipped and user files alike).
COLUMNS = ("provider", "instance_type", "accelerator", "accelerator_count", "gpu_memory_gib",
           "region", "on_demand_usd_per_hour", "spot_usd_per_hour",
           "on_demand_usd_per_gpu_hour", "spot_usd_per_gpu_hour", "marketplace",
           "source_path", "source_commit")
#: Columns a price file must have; the others may be left out.
REQUIRED = ("provider", "accelerator", "accelerator_count", "on_demand_usd_per_hour",
            "spot_usd_per_hour")
#: Largest price file read [B], 30,000-45,000 rows: 20x the shipped table of every cloud
#: (1,354 rows, 0.2 MB); 42,787 rows read in 10.8 s and 75 MB on the shared 2-core machine
#: (load 10).  A bigger file is refused before it is parsed (105 MB took 47 s and 1.2 GB).
MAX_PRICE_FILE_BYTES = 4 * 2**20
#: Accelerators one instance holds (``accelerator_count``): a whole number [1].
ACCELERATOR_COUNT = (1, 1024)
#: Price of one accelerator for one hour (the instance price over its accelerators) [USD];
#: the shipped table spans 0.01 (a marketplace's auction floor) to 18.
USD_PER_GPU_HOUR = (0.01, 1000.0)
#: Memory of one accelerator (``gpu_memory_gib``), when given [GiB].
GPU_MEMORY_GIB = (1.0, 16384.0)
#: Longest text cell (provider, accelerator, region, instance type, source) [characters].
MAX_TEXT = 200
#: A per-GPU-hour column agrees with its instance price when within this fraction (the
#: files round it to 4 decimals; SkyPilot's TPU rows give the slice price, see below).
PER_GPU_TOLERANCE = 0.01
#: First characters that would make a spreadsheet read a text cell as a formula (OWASP).
_FORMULA_STARTS = ("=", "+", "-", "@")
_PROVIDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_TRUTH = {"": False, "false": False, "true": True}
#: Instance-price columns and the per-GPU-hour column beside each.
PRICE_COLUMNS = (("on_demand_usd_per_hour", "on_demand_usd_per_gpu_hour"),
                 ("spot_usd_per_hour", "spot_usd_per_gpu_hour"))


def _cell(text: str | None) -> str:
    """The cell as shown in a message: quoted, one line, at most 40 characters."""
    text = printable(text or "")
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _refuse(where: str, column: str, text: str | None, expected: str) -> CatalogError:
    shown = _cell(text) if (text or "").strip() else "an empty cell"
    return CatalogError(f"{where}: {column}: {shown} is not allowed; expected {expected}")


def _float(text: str | None) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def check_header(columns: list[str] | None, shown: str) -> None:
    """Every required column, no unknown or repeated one (a misspelt column would be read
    as empty)."""
    columns = list(columns or ())
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise CatalogError(f"{shown}: price file lacks column(s) {', '.join(missing)}; "
                           f"expected the columns: {', '.join(COLUMNS)}")
    for column in columns:
        if column not in COLUMNS:
            close = difflib.get_close_matches(column, COLUMNS, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else f"expected: {', '.join(COLUMNS)}"
            raise CatalogError(f"{shown}:1: unknown column {_cell(column)}; {hint}")
        if columns.count(column) > 1:
            raise CatalogError(f"{shown}:1: column {column} appears {columns.count(column)} "
                               "times; expected it once")


def check_cells(record: dict, where: str, width: int) -> None:
    """As many cells as the header names (csv.DictReader keeps extra cells under None and
    fills missing ones with None)."""
    if None in record or any(v is None for v in record.values()):
        cells = len(record) - (None in record) + len(record.get(None) or ()) - sum(
            v is None for v in record.values())
        raise CatalogError(f"{where}: the row has {cells} cells; expected {width}, one per "
                           "column of the header")


def count(record: dict, where: str) -> int:
    """``accelerator_count``: an integer 1..1024 (``8`` or ``8.0``)."""
    text = record.get("accelerator_count")
    value = _float(text)
    low, high = ACCELERATOR_COUNT
    if value is None or not math.isfinite(value) or not value.is_integer() or not (
            low <= value <= high):
        raise _refuse(where, "accelerator_count", text, f"an integer {low}..{high}")
    return int(value)


def instance_price(record: dict, column: str, where: str) -> float | None:
    """An instance price [USD/h]: empty (not sold in this tier) or a finite number > 0."""
    text = (record.get(column) or "").strip()
    if not text:
        return None
    value = _float(text)
    if value is None or not math.isfinite(value) or value <= 0:
        raise _refuse(where, column, text, "a price in USD per instance-hour > 0, or an "
                      "empty cell (not sold in this tier)")
    return value


def per_gpu_price(record: dict, price: float, chips: float, column: str, where: str,
                  ) -> float:
    """``price`` [USD/h] (``record[column]``) over ``chips`` accelerators [USD/GPU-h],
    refused outside :data:`USD_PER_GPU_HOUR`."""
    value = price / chips
    low, high = USD_PER_GPU_HOUR
    if not low <= value <= high:
        raise CatalogError(
            f"{where}: {column}: {_cell(record[column])} USD per hour for {chips:g} "
            "accelerator(s) is "
            f"{value:.3g} USD per GPU-hour; expected {low:g}..{high:g} USD per GPU-hour")
    return value


def check_per_gpu_column(record: dict, price: float | None, chips: float, count_: int,
                         column: str, where: str) -> None:
    """A per-GPU-hour column, when filled in, agrees with its instance price: the price
    over the accelerators it covers, or (SkyPilot's TPU slice rows) over
    ``accelerator_count``.  capplan prices from the instance price; a per-GPU figure that
    says otherwise, or stands without an instance price, would be silently ignored."""
    text = (record.get(column) or "").strip()
    if not text:
        return
    instance = column.replace("_usd_per_gpu_hour", "_usd_per_hour")
    if price is None:
        raise CatalogError(f"{where}: {column}: {_cell(text)} is given without {instance} "
                           f"(the price capplan reads); fill in {instance}, the instance's "
                           "price per hour")
    value = _float(text)
    if value is None or not math.isfinite(value) or not any(
            abs(value - price / n) <= PER_GPU_TOLERANCE * price / n + 1e-4
            for n in (chips, count_)):
        raise _refuse(where, column, text, f"{price / chips:.4g} ({instance} {price:g} over "
                      f"{chips:g} accelerator(s)), or an empty cell")


def text(record: dict, column: str, where: str, *, required: bool = False) -> str:
    """A text cell: printable, at most :data:`MAX_TEXT` characters, not starting like a
    spreadsheet formula (``= + - @``: the file may be opened in one); ``required``: not
    empty."""
    value = record.get(column) or ""
    if required and not value.strip():
        raise _refuse(where, column, value, "a name")
    if value and (not value.isprintable() or len(value) > MAX_TEXT
                  or value.startswith(_FORMULA_STARTS)):
        raise _refuse(where, column, value, f"printable text of at most {MAX_TEXT} "
                      "characters not starting with = + - @")
    return value


def provider(record: dict, where: str) -> str:
    """``provider``: letters, digits, ``-`` and ``_`` (it names a file and --provider)."""
    value = (record.get("provider") or "").strip()
    if not _PROVIDER.match(value) or len(value) > 64:
        raise _refuse(where, "provider", record.get("provider"),
                      "a provider name of letters, digits, - or _ (e.g. aws)")
    return value.lower()


def memory_gib(record: dict, where: str) -> float | None:
    """``gpu_memory_gib``: empty, or 1..16384 GiB per accelerator."""
    text_ = (record.get("gpu_memory_gib") or "").strip()
    if not text_:
        return None
    value = _float(text_)
    low, high = GPU_MEMORY_GIB
    if value is None or not low <= value <= high:  # nan fails both comparisons
        raise _refuse(where, "gpu_memory_gib", text_,
                      f"{low:g}..{high:g} GiB per accelerator, or an empty cell")
    return value


def marketplace(record: dict, where: str) -> bool:
    """``marketplace``: ``true``, ``false`` or empty (false)."""
    value = (record.get("marketplace") or "").strip().lower()
    if value not in _TRUTH:
        raise _refuse(where, "marketplace", record.get("marketplace"),
                      "true, false or an empty cell")
    return _TRUTH[value]
