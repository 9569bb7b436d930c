"""Parsed catalog TOML, kept across runs by the hash of each file's text.

Every command loads the whole catalog (~80 files); ``tomllib`` is pure Python and took
about a third of a one-shot ``capplan evaluate``'s catalog time.  :func:`loads` returns
exactly what ``tomllib.loads`` returns (dates, datetimes and times included; a fresh
object each call), looked up by the SHA-256 of the text's bytes in one JSON file under
``$CAPPLAN_CACHE_DIR`` (default ``$XDG_CACHE_HOME/capplan`` or ``~/.cache/capplan``);
``CAPPLAN_CACHE_DIR=off`` disables it.  This cache holds parsed text, never validated
entries: whatever it returns is validated by the schema.  Only the shipped catalog's
validated entries are kept, by :mod:`hardware_catalog.validated_cache`, under a key that
covers every shipped file and this package's code (a hit reads no TOML at all); a
user's files are parsed (through this cache) and validated on every load.

The cache cannot be turned against the user (:mod:`hardware_catalog.private_cache`):
the folder is created ``0700``, the file is read only if it is a regular file of this
user that nobody else can write (opened without following links or blocking), and each
entry is used only if it decodes to TOML's types (tables, arrays, strings, numbers,
booleans, valid dates and times, at most :data:`MAX_DEPTH` deep).  Anything else - a
planted, truncated, foreign, symlinked, FIFO or malformed cache - is a cache miss (the
file is parsed) with at most one warning line on stderr; writes are atomic (``0600``)
and never larger than :data:`MAX_FILE_BYTES`, the most a read accepts (the newest entries
that fit are kept).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import tomllib
from pathlib import Path

from .private_cache import Untrusted, private_folder, read_private, warn_once, write_private

ENV_VAR = "CAPPLAN_CACHE_DIR"
#: Bump when the stored form changes.
FORMAT = 1
#: Most files remembered; beyond, the cache starts afresh.
MAX_ENTRIES = 4096
#: Largest cache file read (the shipped catalog takes ~0.3 MB).
MAX_FILE_BYTES = 64 << 20
#: Deepest nesting of tables and arrays stored or accepted from the cache.
MAX_DEPTH = 64

_TAGS = {"$date": datetime.date.fromisoformat, "$datetime": datetime.datetime.fromisoformat,
         "$time": datetime.time.fromisoformat}

_entries: dict[str, str] | None = None
_changed = False


class _Malformed(ValueError):
    """A cache entry that does not decode to TOML's types."""


def cache_dir() -> Path | None:
    """capplan's cache folder (this cache's, and the compiled kernels' of
    :mod:`planner.engine.run.native`), or ``None`` when disabled."""
    setting = os.environ.get(ENV_VAR)
    if setting is not None and setting.strip().lower() in ("off", "0", "none", ""):
        return None
    return Path(setting).expanduser() if setting else (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "capplan")


def cache_file() -> Path | None:
    """Where the cache lives, or ``None`` when disabled."""
    base = cache_dir()
    if base is None:
        return None
    return base / f"catalog-toml-{FORMAT}-py{sys.version_info[0]}{sys.version_info[1]}.json"


def _ignore(path: Path, reason: str) -> None:
    warn_once(f"ignoring the catalog cache {path}: {reason}; reading the catalog's files")


def _read_stored(path: Path) -> dict[str, str]:
    """The entries of the cache file; ``{}`` when missing, untrusted or malformed."""
    try:
        private_folder(path.parent, create=False)
        raw = read_private(path, max_bytes=MAX_FILE_BYTES)
    except FileNotFoundError:
        return {}
    except Untrusted as exc:
        _ignore(path, str(exc))
        return {}
    except OSError as exc:
        _ignore(path, exc.strerror or str(exc))
        return {}
    try:
        stored = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # invalid UTF-8 or JSON, truncated, too deep
        _ignore(path, "not a valid cache file")
        return {}
    if not isinstance(stored, dict):
        _ignore(path, "not a valid cache file")
        return {}
    entries = {k: v for k, v in stored.items() if _is_digest(k) and isinstance(v, str)}
    if len(entries) != len(stored):
        _ignore(path, f"{len(stored) - len(entries)} malformed entries")
    return entries


def _is_digest(key: str) -> bool:
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key)


def _load_entries() -> dict[str, str]:
    global _entries
    if _entries is None:
        path = cache_file()
        _entries = {} if path is None else _read_stored(path)
    return _entries


def _encode(value):
    for tag, kind in (("$datetime", datetime.datetime), ("$date", datetime.date),
                      ("$time", datetime.time)):
        if isinstance(value, kind):
            return {tag: value.isoformat()}
    raise TypeError(f"not a TOML value: {type(value).__name__}")


def _decode(obj: dict):
    if len(obj) == 1:
        (key, value), = obj.items()
        if key in _TAGS:
            if not isinstance(value, str):
                raise _Malformed(f"{key} is not a string")
            return _TAGS[key](value)  # ValueError on a bad date
    return obj


def _check_toml_types(value, depth: int = 0) -> None:
    """Raise :class:`_Malformed` unless ``value`` is made of TOML's types only."""
    if depth > MAX_DEPTH:
        raise _Malformed("nested too deep")
    if isinstance(value, dict):
        for key, item in value.items():
            if key.startswith("$"):
                raise _Malformed(f"reserved key {key!r}")
            _check_toml_types(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_toml_types(item, depth + 1)
    elif not isinstance(value, (str, bool, int, float, datetime.date, datetime.time)):
        raise _Malformed(f"not a TOML value: {type(value).__name__}")


def _storable(data) -> bool:
    """False if ``data`` has a key the stored form reserves (``$...``) or is too deep."""
    try:
        _check_toml_types(data)
    except _Malformed:
        return False
    return True


def _from_cache(key: str, stored: str) -> dict | None:
    """The table stored under ``key``, or ``None`` (and the entry dropped) if malformed."""
    try:
        data = json.loads(stored, object_hook=_decode)
        if not isinstance(data, dict):
            raise _Malformed("not a table")
        _check_toml_types(data)
        return data
    except (ValueError, RecursionError):  # _Malformed, bad JSON or date, too deep
        global _changed
        del _entries[key]
        _changed = True  # rewritten without it
        path = cache_file()
        if path is not None:
            _ignore(path, "a malformed entry")
        return None


def loads(text: str) -> dict:
    """``tomllib.loads(text)``, from the cache when this exact text was parsed before.

    Raises ``tomllib.TOMLDecodeError`` as ``tomllib`` does (invalid text is never stored).
    """
    global _changed
    entries = _load_entries()
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    stored = entries.get(key)
    if stored is not None:
        data = _from_cache(key, stored)
        if data is not None:
            return data
    data = tomllib.loads(text)
    if cache_file() is not None and _storable(data):
        if len(entries) >= MAX_ENTRIES:
            entries.clear()
        entries[key] = json.dumps(data, default=_encode, ensure_ascii=False)
        _changed = True
    return data


def forget() -> None:
    """Drop the entries held in memory (the next :func:`loads` reads the cache file again)."""
    global _entries, _changed
    _entries, _changed = None, False


def save() -> None:
    """Write the entries parsed in this process (atomically, ``0600`` in a ``0700``
    folder; errors are ignored: a read-only or full disk parses again next time)."""
    global _changed
    path = cache_file()
    if not _changed or path is None or _entries is None:
        return
    try:
        write_private(path, _fitting(_entries), max_bytes=MAX_FILE_BYTES)
        _changed = False
    except (OSError, Untrusted):
        pass


def _fitting(entries: dict[str, str]) -> bytes:
    """The cache file of ``entries``, at most :data:`MAX_FILE_BYTES` (what
    :func:`_read_stored` reads back): the newest entries that fit when all do not."""
    data = json.dumps(entries, ensure_ascii=False).encode("utf-8")
    if len(data) <= MAX_FILE_BYTES:
        return data
    kept, size = {}, 2  # "{}"
    for key in reversed(entries):  # newest first (dicts keep insertion order)
        item = len(json.dumps({key: entries[key]}, ensure_ascii=False).encode("utf-8")) - 2
        if size + item + 2 > MAX_FILE_BYTES:  # + ", "
            break
        kept[key] = entries[key]
        size += item + 2
    return json.dumps(dict(reversed(kept.items())), ensure_ascii=False).encode("utf-8")
