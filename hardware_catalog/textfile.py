"""Read a small user text file (catalog entry, scenario) as UTF-8, or say why not in one line.

capplan reads TOML, which is UTF-8 by definition (TOML 1.0, "Spec"). A UTF-8 byte-order
mark is accepted and dropped; UTF-16/UTF-32 (with a byte-order mark), Latin-1 and other
encodings are refused with the position of the first offending byte, never guessed.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from .errors import CatalogError

#: Largest file read [B]; catalog entries and scenarios are a few KiB.
MAX_TEXT_BYTES = 1_000_000

_BOMS = [(codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")]
_SAVE_AS = "save it as UTF-8"


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``): a name that stays on one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def decode_utf8(data: bytes, shown: str) -> str:
    """``data`` as text; a one-line :class:`CatalogError` naming ``shown`` if not UTF-8."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    for bom, name in _BOMS:  # UTF-32 LE starts with the UTF-16 LE mark: test it first
        if data.startswith(bom):
            raise CatalogError(f"{shown}: file is {name} text; {_SAVE_AS}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CatalogError(f"{shown}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line "
                           f"{line}, column {column}; Latin-1 or another encoding?); "
                           f"{_SAVE_AS}") from None
    if "\0" in text:
        raise CatalogError(f"{shown}: contains NUL characters (a binary file?); expected text")
    return text


def read_utf8(path: Path, shown: str, max_bytes: int = MAX_TEXT_BYTES,
              kind: str = "a TOML file") -> str:
    """Read a regular file of at most ``max_bytes`` as UTF-8 text; one-line errors
    (``kind``: what the file should have been, for them)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise CatalogError(f"{shown}: no such file") from None
    except OSError as exc:
        raise CatalogError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise CatalogError(f"{shown}: is a directory; expected {kind}")
    if not stat.S_ISREG(info.st_mode):
        raise CatalogError(f"{shown}: not a regular file; expected {kind}")
    if info.st_size > max_bytes:
        raise CatalogError(f"{shown}: {info.st_size:,} bytes; expected {kind} of at most "
                           f"{max_bytes:,} bytes")
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise CatalogError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    return decode_utf8(data, shown)
