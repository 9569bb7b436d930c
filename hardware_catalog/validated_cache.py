"""The shipped catalog's validated entries, kept across runs under a hash of its files and code.

Parsing and validating the shipped catalog (~120 files, some stacks extending others)
took ~0.1 s of every command, as much as the one-shot query's arithmetic.  The shipped
catalog changes only when its files or capplan's code change, so its validated entries
are stored once and served while nothing they depend on has changed.  The key is the
SHA-256 of :data:`FORMAT`, the Python, pydantic and pydantic-core versions, the source
of every module of :mod:`hardware_catalog` (the schema, the loader, the TOML reading),
the data folder's path, and every shipped file's path and bytes (the same bytes the
catalog's version hashes).  Any edit to a catalog file or to the schema is therefore a
miss: the files are parsed and validated as before, and the result stored again.  Only
the shipped layer is stored: a user's ``$CAPPLAN_CATALOG`` or ``--catalog`` directory
and a file given by path are parsed and validated on every load.

Stored form: one file per data folder under the cache folder of
:mod:`hardware_catalog.toml_cache` (``$CAPPLAN_CACHE_DIR``; ``off`` disables both):
a header line, the key, the SHA-256 of the payload, and the payload, a pickle of
``(relative path, entry)`` pairs in the shipped order.  The file is read only if it is
private to this user (:mod:`hardware_catalog.private_cache`); the payload must match its
hash, is unpickled by an unpickler that builds nothing but the schema's classes and
dates (no other global, so no code runs), and must come back as one entry of the right
class per file, with the id and kind the file had.  Anything else - a foreign, truncated,
corrupt or malformed file - is a miss (full validation) with at most one warning line on
stderr; a stale key is a silent miss.  Writes are atomic (``0600``).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import sys
from datetime import date
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
#: The globals a stored payload may name: the schema's models and ``datetime.date``.
_ALLOWED = {("datetime", "date"): date} | {
    (schema.__name__, name): value for name, value in vars(schema).items()
    if isinstance(value, type) and issubclass(value, pydantic.BaseModel)
    and value.__module__ == schema.__name__}
_CODE_DIR = Path(__file__).resolve().parent


class _Refused(pickle.UnpicklingError):
    """A stored payload that names anything but the schema's classes and dates."""


class _SchemaUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise _Refused(f"refers to {module}.{name}") from None


def cache_file(data_dir: Path) -> Path | None:
    """Where the entries of ``data_dir`` are kept, or ``None`` when the cache is off."""
    base = toml_cache.cache_dir()
    if base is None:
        return None
    where = hashlib.sha256(str(data_dir).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return base / (f"catalog-validated-{FORMAT}-py{sys.version_info[0]}{sys.version_info[1]}"
                   f"-{where}.pickle")


def key(files_digest: bytes, data_dir: Path) -> bytes:
    """The key of a shipped catalog: ``files_digest`` (the SHA-256 of its files' paths
    and bytes), the data folder, this code and the versions validation depends on."""
    h = hashlib.sha256(_MAGIC)
    h.update(f"{sys.version}\0{pydantic.VERSION}\0{pydantic_core.__version__}\0".encode())
    for source in sorted(_CODE_DIR.glob("*.py")):
        h.update(f"{source.name}\0".encode() + source.read_bytes() + b"\0")
    h.update(str(data_dir).encode("utf-8", "surrogatepass") + b"\0" + files_digest)
    return h.hexdigest().encode("ascii")


def _ignore(path: Path, reason: str) -> None:
    warn_once(f"ignoring the validated catalog cache {path}: {reason}; validating the "
              f"catalog's files")


def _entries(payload: bytes, files: list[Path], data_dir: Path) -> list[tuple[Path, Entry]]:
    """The stored ``(path, entry)`` pairs; raise ``ValueError`` unless they are one
    entry of a schema class per file of ``files``, in order."""
    stored = _SchemaUnpickler(io.BytesIO(payload)).load()
    if not isinstance(stored, list) or len(stored) != len(files):
        raise ValueError("not one entry per catalog file")
    out = []
    for item, path in zip(stored, files):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and data_dir / item[0] == path):
            raise ValueError("not the catalog's files")
        entry = item[1]
        model = KIND_MODELS.get(getattr(entry, "kind", None))
        if model is None or type(entry) is not model or not isinstance(entry.id, str):
            raise ValueError("not a catalog entry")
        out.append((path, entry))
    return out


def load(cache_key: bytes, files: list[Path], data_dir: Path) -> list[tuple[Path, Entry]] | None:
    """The validated ``(path, entry)`` pairs of ``files`` stored under ``cache_key``, or
    ``None`` (a miss: missing, stale, untrusted or malformed)."""
    path = cache_file(data_dir)
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
        _ignore(path, "not a validated catalog cache of this capplan")
        return None
    if stored_key != cache_key:
        return None  # the catalog or capplan changed: validated again and replaced
    if checksum != hashlib.sha256(payload).hexdigest().encode("ascii"):
        _ignore(path, "truncated or corrupt")
        return None
    try:
        return _entries(payload, files, data_dir)
    except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, EOFError,
            IndexError, KeyError, RecursionError, MemoryError) as exc:
        _ignore(path, f"malformed ({exc})" if isinstance(exc, _Refused | ValueError)
                else "malformed")
        return None


def store(cache_key: bytes, pairs: list[tuple[Path, Entry]], data_dir: Path) -> None:
    """Keep the validated ``(path, entry)`` pairs under ``cache_key`` (errors ignored: a
    read-only or full disk validates again next time)."""
    path = cache_file(data_dir)
    if path is None:
        return
    payload = pickle.dumps([(p.relative_to(data_dir).as_posix(), e) for p, e in pairs],
                           protocol=pickle.HIGHEST_PROTOCOL)
    checksum = hashlib.sha256(payload).hexdigest().encode("ascii")
    try:
        write_private(path, b"".join((_MAGIC, cache_key, b"\n", checksum, b"\n", payload)))
    except (OSError, Untrusted):
        pass
