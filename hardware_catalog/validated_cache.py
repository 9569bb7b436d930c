"""The shipped catalog's validated entries (and price rows), kept across runs under a hash
of their files and code.

Parsing and validating the shipped catalog (~120 files, some stacks extending others)
took ~0.1 s of every command, as much as the one-shot query's arithmetic.  The shipped
catalog changes only when its files or capplan's code change, so its validated entries
are stored once and served while nothing they depend on has changed.  The key is the
SHA-256 of :data:`FORMAT`, the Python, pydantic and pydantic-core versions, the source
of every module of :mod:`hardware_catalog` (the schema, the loader, the TOML and price
reading), the data's path, and every shipped file's path and bytes (the same bytes the
catalog's version hashes).  Any edit to a catalog file or to the schema is therefore a
miss: the files are parsed and validated as before, and the result stored again.  Only
the shipped data is stored: a user's ``$CAPPLAN_CATALOG`` or ``--catalog`` directory, a
file given by path and a user's price files are read and validated on every load.  The
shipped cloud price table (1,354 rows, ~14 ms to read) is kept the same way
(:func:`load_objects`, :func:`store_objects`).

Stored form: one file per data path and kind under the cache folder of
:mod:`hardware_catalog.toml_cache` (``$CAPPLAN_CACHE_DIR``; ``off`` disables both):
a header line, the key, the SHA-256 of the payload, and the payload, a pickle (for the
catalog, of ``(relative path, entry)`` pairs in the shipped order).  The file is read only
if it is private to this user (:mod:`hardware_catalog.private_cache`); the payload must
match its hash, is unpickled by an unpickler that builds nothing but the classes allowed
for it (the schema's models and dates; the price row) - no other global, so no code runs
- and must come back in the expected shape (for the catalog: one entry of its kind's class
per shipped file).  Anything else - a foreign, truncated, corrupt or malformed file - is
a miss (full validation) with at most one warning line on stderr; a stale key is a
silent miss.  Writes are atomic (``0600``).  Like the parsed-TOML cache, a file the user
wrote themselves is trusted as stored.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
from datetime import date
from functools import lru_cache
from pathlib import Path

import pydantic
import pydantic_core

from . import schema, toml_cache
from .private_cache import Untrusted, read_private, warn_once, write_private
from .schema import KIND_MODELS, Entry

#: Bump when the stored form changes.
FORMAT = 1
_MAGIC = b"capplan validated catalog %d\n" % FORMAT
#: Largest cache file read (the shipped catalog pickles to ~0.4 MB).
MAX_FILE_BYTES = 64 << 20
#: The globals a stored catalog may name: the schema's models and ``datetime.date``.
_SCHEMA_GLOBALS = {("datetime", "date"): date} | {
    (schema.__name__, name): value for name, value in vars(schema).items()
    if isinstance(value, type) and issubclass(value, pydantic.BaseModel)
    and value.__module__ == schema.__name__}
_CODE_DIR = Path(__file__).resolve().parent


class _Refused(pickle.UnpicklingError):
    """A stored payload that names a global not allowed for it."""


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, payload: bytes, allowed: dict[tuple[str, str], object]):
        super().__init__(io.BytesIO(payload))
        self.allowed = allowed

    def find_class(self, module: str, name: str):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise _Refused(f"refers to {module}.{name}") from None


def enabled() -> bool:
    """False when ``CAPPLAN_CACHE_DIR=off`` (nothing is read or stored)."""
    return toml_cache.cache_dir() is not None


def cache_file(data: Path, kind: str = "catalog") -> Path | None:
    """Where the validated ``kind`` (``catalog``, ``prices``) read from ``data`` (a folder
    or file) is kept, or ``None`` when the cache is off."""
    base = toml_cache.cache_dir()
    if base is None:
        return None
    where = hashlib.sha256(str(data).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return base / (f"{kind}-validated-{FORMAT}-py{sys.version_info[0]}{sys.version_info[1]}"
                   f"-{where}.pickle")


def key(files_digest: bytes, data_dir: Path) -> bytes:
    """The key of shipped data: ``files_digest`` (the SHA-256 of its files' paths and
    bytes), its path, this package's code and the versions validation depends on."""
    h = hashlib.sha256(_MAGIC)
    h.update(f"{sys.version}\0{pydantic.VERSION}\0{pydantic_core.__version__}\0".encode())
    h.update(_code_digest(_CODE_DIR))
    h.update(str(data_dir).encode("utf-8", "surrogatepass") + b"\0" + files_digest)
    return h.hexdigest().encode("ascii")


@lru_cache(maxsize=4)
def _code_digest(code_dir: Path) -> bytes:
    """The SHA-256 of every module's name and source in ``code_dir`` (read once)."""
    h = hashlib.sha256()
    for source in sorted(code_dir.glob("*.py")):
        h.update(f"{source.name}\0".encode() + source.read_bytes() + b"\0")
    return h.digest()


def _ignore(path: Path, reason: str) -> None:
    warn_once(f"ignoring the cache file {path}: {reason}; reading and validating the "
              f"catalog's files")


def _read(path: Path | None, cache_key: bytes, allowed: dict[tuple[str, str], object],
          check):
    """``check(value)`` of the value stored in ``path`` under ``cache_key``, or ``None``
    (a miss: missing, stale, untrusted or malformed; ``check`` raises ``ValueError``)."""
    if path is None:
        return None
    try:
        raw = read_private(path, max_bytes=MAX_FILE_BYTES)
    except FileNotFoundError:
        return None
    except Untrusted as exc:
        _ignore(path, str(exc))
        return None
    except OSError as exc:
        _ignore(path, exc.strerror or str(exc))
        return None
    header, _, rest = raw.partition(b"\n")
    stored_key, _, rest = rest.partition(b"\n")
    checksum, _, payload = rest.partition(b"\n")
    if header + b"\n" != _MAGIC:
        _ignore(path, "not a validated-data cache of this capplan")
        return None
    if stored_key != cache_key:
        return None  # the data or capplan changed: validated again and replaced
    if checksum != hashlib.sha256(payload).hexdigest().encode("ascii"):
        _ignore(path, "truncated or corrupt")
        return None
    try:
        return check(_RestrictedUnpickler(payload, allowed).load())
    except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, EOFError,
            IndexError, KeyError, RecursionError, MemoryError) as exc:
        _ignore(path, f"malformed ({exc})" if isinstance(exc, _Refused | ValueError)
                else "malformed")
        return None


def _write(path: Path | None, cache_key: bytes, value) -> None:
    """Keep ``value`` under ``cache_key`` (errors ignored: a read-only or full disk
    validates again next time)."""
    if path is None:
        return
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    checksum = hashlib.sha256(payload).hexdigest().encode("ascii")
    try:
        write_private(path, b"".join((_MAGIC, cache_key, b"\n", checksum, b"\n", payload)),
                      max_bytes=MAX_FILE_BYTES)
    except (OSError, Untrusted):
        pass


def load(cache_key: bytes, files: list[Path], data_dir: Path) -> list[tuple[Path, Entry]] | None:
    """The validated ``(path, entry)`` pairs of the shipped ``files`` stored under
    ``cache_key``, or ``None`` (a miss)."""

    def check(stored) -> list[tuple[Path, Entry]]:
        """One entry of a schema class per file of ``files``, in order."""
        if not isinstance(stored, list) or len(stored) != len(files):
            raise ValueError("not one entry per catalog file")
        out = []
        for item, path in zip(stored, files, strict=True):
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                    and data_dir / item[0] == path):
                raise ValueError("not the catalog's files")
            entry = item[1]
            model = KIND_MODELS.get(getattr(entry, "kind", None))
            if model is None or type(entry) is not model or not isinstance(entry.id, str):
                raise ValueError("not a catalog entry")
            out.append((path, entry))
        return out

    return _read(cache_file(data_dir), cache_key, _SCHEMA_GLOBALS, check)


def store(cache_key: bytes, pairs: list[tuple[Path, Entry]], data_dir: Path) -> None:
    """Keep the validated ``(path, entry)`` pairs of the shipped files under ``cache_key``."""
    _write(cache_file(data_dir), cache_key,
           [(p.relative_to(data_dir).as_posix(), e) for p, e in pairs])


def load_objects(cache_key: bytes, source: Path, cls: type) -> list | None:
    """The list of ``cls`` instances (a dataclass of plain values, e.g. price rows) read
    from the file ``source`` and stored under ``cache_key``, or ``None`` (a miss)."""

    def check(stored) -> list:
        if not isinstance(stored, list) or any(type(o) is not cls for o in stored):
            raise ValueError(f"not a list of {cls.__name__}")
        return stored

    return _read(cache_file(source, source.stem), cache_key,
                 {(cls.__module__, cls.__qualname__): cls}, check)


def store_objects(cache_key: bytes, source: Path, objects: list) -> None:
    """Keep ``objects`` read from ``source`` under ``cache_key``."""
    _write(cache_file(source, source.stem), cache_key, list(objects))
