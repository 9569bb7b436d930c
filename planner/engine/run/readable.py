"""Numbers as people read them in sentences and titles: '15T tokens', '6.52 M USD', '75.8 GB'.

Tables and sentences use these; JSON and CSV keep the raw SI values.

>>> count_text(15e12), count_text(2e12), count_text(1.5e12), count_text(300e9), count_text(4096)
('15T', '2T', '1.5T', '300B', '4,096')
>>> usd_text(6_519_751.0), usd_text(41_730.4)
('6.52 M USD', '41,730 USD')
>>> bytes_text(7.58e10), bytes_text(5.2e12)
('75.8 GB', '5.2 TB')
>>> quantity_text(1.86e8, "s"), quantity_text(842_977.0, "kWh"), quantity_text(316_524.0, "kgCO2e")
('2,153 days', '843 MWh', '317 t CO2e')
"""

from __future__ import annotations

from planner.engine.run.columns import COLUMNS

#: Suffixes of large counts (short scale: thousand, million, billion, trillion, quadrillion).
_COUNT_SUFFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"))


def count_text(n: float) -> str:
    """A count with a suffix from a million up, to 3 significant digits ('15T', '1.5T');
    smaller counts with thousands separators."""
    for scale, suffix in _COUNT_SUFFIXES:
        if abs(n) >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.3g}"


def usd_text(usd: float) -> str:
    """'6.52 M USD' from a million up, else '41,730 USD'."""
    return f"{usd / 1e6:,.2f} M USD" if abs(usd) >= 1e6 else f"{usd:,.0f} USD"


def bytes_text(n: float) -> str:
    """Bytes in decimal units to 3 significant digits: '75.8 GB', '5.2 TB', '512 MB'."""
    for scale, unit in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def seconds_text(s: float) -> str:
    """A duration in the unit people count it in: '0.351 s', '206 s', '38 min', '20.5 h',
    '2,158 days'."""
    for limit, scale, unit in ((999.5, 1, "s"), (7_200, 60, "min"), (172_800, 3_600, "h")):
        if abs(s) < limit:
            return f"{s / scale:.3g} {unit}"
    return _number(s / 86_400) + " days"


def _number(v: float) -> str:
    """3 significant digits, whole numbers from 1,000 up with separators."""
    return f"{v:,.0f}" if abs(v) >= 1_000 else f"{v:.3g}"


#: Unit of a stored value -> how a table shows it (SI and the registry's stated exceptions).
_SHOWN = {
    "B": bytes_text,
    "s": seconds_text,
    "d": lambda v: _number(v) + " days",
    "h": lambda v: _number(v) + " h",
    "J": lambda v: quantity_text(v / 3.6e6, "kWh"),
    "kWh": lambda v: _number(v / 1e3) + " MWh" if abs(v) >= 1e3 else _number(v) + " kWh",
    "W": lambda v: (_number(v / 1e6) + " MW" if abs(v) >= 1e6
                    else _number(v / 1e3) + " kW" if abs(v) >= 1e4 else _number(v) + " W"),
    "MW": lambda v: quantity_text(v * 1e6, "W"),
    "USD": usd_text,
    "kgCO2e": lambda v: _number(v / 1e3) + " t CO2e" if abs(v) >= 1e3 else _number(v) + " kg CO2e",
    "1": lambda v: count_text(v) if abs(v) >= 1e6 else _number(v),
    "1/s": lambda v: _number(v) + " /s",
    "USD/h": lambda v: f"{v:.2f} USD/GPU-h",
    "USD/GPU-h": lambda v: f"{v:.2f} USD/GPU-h",
    "MWh": lambda v: _number(v) + " MWh",
    "B/s": lambda v: bytes_text(v) + "/s",
    "FLOP/s": lambda v: f"{v / 1e12:,.0f} TFLOP/s",
}


def quantity_text(value, unit: str) -> str:
    """``value`` (stored in ``unit``) as a table shows it: a human unit ('75.8 GB',
    '2,158 days', '843 MWh', '1.22 M USD'); booleans and text as they are."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "yes" if value is True else "no" if value is False else str(value)
    if value != value:  # NaN
        return "-"
    show = _SHOWN.get(unit)
    return show(float(value)) if show else f"{_number(float(value))} {unit}".strip()


#: Unit suffixes of stored keys ('energy_kwh', 'co2e_kg'): a table showing the value in a
#: human unit ('3,862 MWh') drops them from the label, so label and unit never disagree.
_UNIT_SUFFIXES = ("_usd_per_gpu_hour", "_bytes_per_s", "_kg_co2e", "_kwh", "_mwh", "_kg",
                  "_usd", "_bytes", "_j", "_w", "_mw", "_s", "_t")


def readable_label(key: str) -> str:
    """``key`` without its unit suffix when :func:`quantity_text` shows a unit of its own
    ('energy_kwh' -> 'energy', 'breakdown.compute_s' -> 'breakdown.compute'); other keys
    unchanged."""
    head, dot, name = key.rpartition(".")
    if unit_of(name) in ("1", "1/s"):  # a count, or a rate whose label says 'per s'
        return key
    for suffix in _UNIT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return head + dot + name[: -len(suffix)]
    return key


def table_amount(value: float) -> str:
    """A table cell whose unit is in the column header (MWh, tCO2e, days): whole numbers
    with separators from 100 up, else 3 significant digits, so a small run never reads
    '0' ('0.0412', '7.04', '2,077')."""
    v = float(value)
    if v != v:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 or v == 0 else f"{v:.3g}"


#: Accelerator id prefixes that are not GPUs -> the word for their units.
_DEVICE_WORDS = (("tpu", "chips"), ("trn", "chips"), ("gaudi", "accelerators"))


def device_word(hardware: str | None = None) -> str:
    """What ``hardware``'s units are called: 'GPUs' for GPUs, 'chips' for TPUs and
    Trainium, 'accelerators' for Gaudi (and for several or unknown accelerators: None)."""
    if hardware is None:
        return "accelerators"
    name = str(hardware).lower()
    return next((word for prefix, word in _DEVICE_WORDS if name.startswith(prefix)), "GPUs")


def unit_of(key: str) -> str:
    """The unit of an output key: the column registry's, else its name's suffix."""
    for c in COLUMNS:
        if key in (c.name, c.key):
            return c.unit
    for suffix, unit in (("_usd_per_gpu_hour", "USD/h"), ("_usd", "USD"), ("_s", "s"), ("_bytes", "B"), ("_kwh", "kWh"),
                         ("_j", "J"), ("_w", "W"), ("_months", "months")):
        if key.endswith(suffix):
            return unit
    return "1"


__all__ = ["bytes_text", "count_text", "device_word", "quantity_text", "readable_label",
           "seconds_text",
           "table_amount", "unit_of", "usd_text"]


def readable_rows(rows: list[dict]) -> list[dict]:
    """``{"quantity", "value"}`` rows with each value in a human unit (the evaluate table)."""
    return [{"quantity": readable_label(r["quantity"]),
             "value": quantity_text(r["value"], unit_of(r["quantity"].rpartition(".")[2]))}
            for r in rows]
