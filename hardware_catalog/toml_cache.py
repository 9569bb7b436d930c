"""Parsed catalog TOML, kept across runs by the hash of each file's text.

Every command loads the whole catalog (~80 files); ``tomllib`` is pure Python and took
about a third of a one-shot ``capplan evaluate``'s catalog time.  :func:`loads` returns
exactly what ``tomllib.loads`` returns (dates, datetimes and times included; a fresh
object each call), looked up by the SHA-256 of the text in one JSON file under
``$CAPPLAN_CACHE_DIR`` (default ``$XDG_CACHE_HOME/capplan`` or ``~/.cache/capplan``);
``CAPPLAN_CACHE_DIR=off`` disables it.  Validation is never cached: every entry is
validated by the schema on every load.  A cache that cannot be read or written is
ignored (the file is parsed), and it is replaced atomically.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import tomllib
from pathlib import Path

ENV_VAR = "CAPPLAN_CACHE_DIR"
#: Bump when the stored form changes.
FORMAT = 1
#: Most files remembered; beyond, the cache starts afresh.
MAX_ENTRIES = 4096

_TAGS = {"$date": datetime.date.fromisoformat, "$datetime": datetime.datetime.fromisoformat,
         "$time": datetime.time.fromisoformat}

_entries: dict[str, str] | None = None
_changed = False


def cache_dir() -> Path | None:
    """capplan's cache folder (this cache's, and the compiled kernels' of
    :mod:`planner.engine.native`), or ``None`` when disabled."""
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


def _load_entries() -> dict[str, str]:
    global _entries
    if _entries is None:
        _entries = {}
        path = cache_file()
        if path is not None:
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(stored, dict) and all(isinstance(v, str) for v in stored.values()):
                    _entries = stored
            except (OSError, ValueError):
                pass  # missing or unreadable: start afresh
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
        if key in _TAGS and isinstance(value, str):
            return _TAGS[key](value)
    return obj


def _taggable(data) -> bool:
    """False if a table of ``data`` has a key that the stored form reserves (``$...``)."""
    if isinstance(data, dict):
        return all(not k.startswith("$") and _taggable(v) for k, v in data.items())
    if isinstance(data, list):
        return all(_taggable(v) for v in data)
    return True


def loads(text: str) -> dict:
    """``tomllib.loads(text)``, from the cache when this exact text was parsed before.

    Raises ``tomllib.TOMLDecodeError`` as ``tomllib`` does (invalid text is never stored).
    """
    global _changed
    entries = _load_entries()
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    stored = entries.get(key)
    if stored is not None:
        return json.loads(stored, object_hook=_decode)
    data = tomllib.loads(text)
    if cache_file() is not None and _taggable(data):
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
    """Write the entries parsed in this process (atomically; errors are ignored)."""
    global _changed
    path = cache_file()
    if not _changed or path is None or _entries is None:
        return
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".catalog-toml-",
                                         suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(_entries, out, ensure_ascii=False)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        _changed = False
    except OSError:
        pass  # a read-only or full disk: parse again next time
