"""Numbers as people read them in sentences and titles: '15T tokens', '6.52 M USD', '75.8 GB'.

Tables and sentences use these; JSON and CSV keep the raw SI values.

>>> count_text(15e12), count_text(2e12), count_text(1.5e12), count_text(300e9), count_text(4096)
('15T', '2T', '1.5T', '300B', '4,096')
>>> usd_text(6_519_751.0), usd_text(41_730.4)
('6.52 M USD', '41,730 USD')
>>> bytes_text(7.58e10), bytes_text(5.2e12)
('75.8 GB', '5.2 TB')
"""

from __future__ import annotations

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


__all__ = ["bytes_text", "count_text", "usd_text"]
