"""The compiled backend: the optional extension ``planner.engine.run._native``, built when
capplan is installed, loaded with :mod:`ctypes`.

numpy runs the generated kernel one operation at a time over a chunk of candidates, so
each of its ~270 per-candidate statements writes a temporary array and reads it back
(~0.6 us a candidate).  The extension holds the same statements as one C loop that takes
a vector of candidates at a time through all of them in registers (~0.1 us a candidate).

* **Generated, committed, built at install.** ``planner/engine/run/_native_generated.c`` is
  printed from the generated kernel and the layout rules by ``python -m planner.codegen``
  (:mod:`planner.codegen.native_source`) and checked by ``codegen --check``.
  ``pip install`` compiles it where a C compiler works (``setup.py``: portable flags, one
  copy per x86-64 level chosen when it is loaded, glibc's vector math where it links) and
  installs pure numpy where none does.  Nothing is compiled at run time, and nothing is
  loaded from a cache folder: only the extension installed beside this file.
* **One backend per process**, chosen once (:func:`backend`): ``compiled`` where the
  extension is installed, whole (its size and SHA-256 as recorded at build time, checked
  before it is loaded: :func:`damage`) and matches the committed source (its hash), else
  ``numpy`` (a damaged file: with one warning line on stderr);
  ``capplan --version`` says which and why.  ``CAPPLAN_KERNEL=numpy`` turns the extension
  off; ``CAPPLAN_KERNEL=c`` makes its absence an error.  Every ``capplan`` command reads
  it the same way before it starts (:func:`check_setting`), whether or not it runs the
  kernel on arrays: an unknown value or ``c`` without the extension is one line, exit 2.
* **numpy's numbers, to rounding.** Every expression is evaluated in numpy's order in
  IEEE double precision, without fused multiply-adds or fast-math; only ``exp``/``log``/
  ``pow`` may differ in the last bit (libm or libmvec instead of numpy's loops), which the
  waste fraction amplifies to ~2e-11 relative.  :data:`RELATIVE_TOLERANCE` is the one
  documented bound between the backends (``tests/test_native.py``); the search breaks
  near-ties by it (:func:`planner.engine.run.reductions.tie_key`), so both backends choose
  the same layouts.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.engine.run import _native_manifest as manifest
from planner.engine.run.kernel import kernel_hash
from planner.errors import CapplanError, did_you_mean

#: The largest relative difference between an output of the compiled backend and numpy's.
RELATIVE_TOLERANCE = 1e-10

#: The values of ``CAPPLAN_KERNEL``.
MODES = ("auto", "numpy", "c")

#: Rows per call are a multiple of this (a shorter tail runs padded to it): every row
#: then goes through the vectorised loop, whose vector math functions may round
#: differently from the scalar ones of a remainder loop, so a candidate's values never
#: depend on where it stands in a call or how many others it is evaluated with.
LANES = 16

#: The extension's module name (setup.py builds it).
EXTENSION = "planner.engine.run._native"


def mode() -> str:
    """``CAPPLAN_KERNEL``: ``auto`` (default: the extension where installed), ``numpy`` or
    ``c`` (the extension, or an error)."""
    value = os.environ.get("CAPPLAN_KERNEL", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise did_you_mean("CAPPLAN_KERNEL value", value, MODES)
    return value


@dataclass(frozen=True)
class Backend:
    """The kernel backend of this process: ``name`` is ``compiled`` or ``numpy``;
    ``reason`` says why in a few words; ``library`` is the loaded extension (or None)."""

    name: str
    reason: str
    library: ctypes.CDLL | None = None
    path: str = ""


#: The build record ``setup.py`` writes beside the extension: ``"<bytes> <sha256>"``.
RECORD_SUFFIX = ".sha256"


def damage(path: str) -> str | None:
    """Why the extension file at ``path`` is not the library that was built (``None``:
    it is), checked before it is mapped: a truncated library (a full disk, an interrupted
    copy) faults with SIGBUS when loaded, killing even ``capplan --version``.  Checked
    against the build record (size and SHA-256); without one (an older install), the
    ELF header's section table must lie inside the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return f"it cannot be read ({error.strerror})"
    try:
        size_text, digest = Path(path + RECORD_SUFFIX).read_text(encoding="ascii").split()
        size = int(size_text)
    except FileNotFoundError:
        return _elf_damage(data)
    except (OSError, ValueError, UnicodeError):
        return f"its build record {path + RECORD_SUFFIX} is unreadable"
    if len(data) != size:
        return f"it has {len(data):,} bytes, built with {size:,}"
    if hashlib.sha256(data).hexdigest() != digest:
        return "its bytes differ from the build's (SHA-256)"
    return None


def _elf_damage(data: bytes) -> str | None:
    """A truncated ELF file (its section header table, at the end, cut off), or ``None``
    (whole, or not ELF: another platform's loader checks its own format)."""
    if not data.startswith(b"\x7fELF"):
        return None
    if len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return f"it is truncated ({len(data):,} bytes, no whole ELF header)"
    order = "<" if data[5] == 1 else ">"
    if data[4] == 2:  # 64-bit: e_shoff at 0x28, e_shentsize and e_shnum at 0x3A
        (table,), (entry, count) = (struct.unpack_from(order + "Q", data, 0x28),
                                    struct.unpack_from(order + "HH", data, 0x3A))
    else:  # 32-bit: e_shoff at 0x20, e_shentsize and e_shnum at 0x2E
        (table,), (entry, count) = (struct.unpack_from(order + "I", data, 0x20),
                                    struct.unpack_from(order + "HH", data, 0x2E))
    if table + entry * count > len(data):
        return f"it is truncated ({len(data):,} bytes, its ELF header needs " \
               f"{table + entry * count:,})"
    return None


def _find() -> Backend:
    """The backend the installed files allow (``CAPPLAN_KERNEL`` aside)."""
    spec = importlib.util.find_spec(EXTENSION)
    if spec is None or not spec.origin:
        return Backend("numpy", "the compiled extension is not installed (no C compiler "
                       "when capplan was installed)")
    why = damage(spec.origin)
    if why is not None:  # never mapped: one line, numpy
        reason = f"the compiled extension {spec.origin} is damaged: {why}; reinstall capplan"
        print(f"capplan: warning: {reason}; running in numpy", file=sys.stderr)
        return Backend("numpy", reason, path=spec.origin)
    try:
        library = ctypes.CDLL(spec.origin)
        library.capplan_source_hash.restype = ctypes.c_char_p
        built = library.capplan_source_hash().decode()
    except (OSError, AttributeError) as error:
        return Backend("numpy", f"the compiled extension cannot be loaded: {error}")
    if built != manifest.SOURCE_HASH:
        return Backend("numpy", "the compiled extension is stale (built from another "
                       "source; reinstall capplan)", path=spec.origin)
    if manifest.KERNEL_HASH != kernel_hash():
        return Backend("numpy", "the compiled extension was generated from another kernel "
                       "(run python -m planner.codegen, then reinstall)", path=spec.origin)
    return Backend("compiled", "the extension built at install", library, spec.origin)


_BACKEND: Backend | None = None
_LOCK = threading.Lock()


def backend() -> Backend:
    """This process's backend, chosen once (``CAPPLAN_KERNEL`` is read every call)."""
    global _BACKEND
    wanted = mode()
    if wanted == "numpy":
        return Backend("numpy", "CAPPLAN_KERNEL=numpy")
    with _LOCK:
        if _BACKEND is None:
            _BACKEND = _find()
    if wanted == "c" and _BACKEND.name != "compiled":
        raise CapplanError(f"CAPPLAN_KERNEL=c, but {_BACKEND.reason}; reinstall capplan "
                           "where a C compiler (cc) is found, or unset CAPPLAN_KERNEL")
    return _BACKEND


def check_setting() -> None:
    """Refuse a ``CAPPLAN_KERNEL`` that this process cannot honour (an unknown value, or
    ``c`` without the extension) with one CapplanError; nothing when it is unset."""
    if os.environ.get("CAPPLAN_KERNEL") is not None:
        backend()


def available() -> bool:
    """Whether the compiled backend runs in this process."""
    return backend().name == "compiled"


def describe() -> str:
    """One line: which backend runs and why (``capplan --version``)."""
    active = backend()
    where = f" ({active.path})" if active.path and active.name == "compiled" else ""
    return f"kernel backend: {active.name}: {active.reason}{where}"


def function(symbol: str, argtypes, restype=None):
    """The extension's function ``symbol`` (typed), or ``None`` on the numpy backend."""
    active = backend()
    if active.library is None:
        return None
    f = getattr(active.library, symbol)
    f.argtypes, f.restype = argtypes, restype
    return f


class NativeKernel:
    """A compiled kernel function: call it with the whole call's inputs.

    ``scalars``/``arrays``: its inputs in the C function's order; ``outputs``: what it
    returns, in order."""

    def __init__(self, function, scalars: tuple[str, ...], arrays: tuple[str, ...],
                 outputs: tuple[str, ...]):
        self.function, self.scalars, self.arrays = function, scalars, arrays
        self.outputs = outputs

    def __call__(self, n: int, given: dict, index=None, table=None,
                 out: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """The outputs (arrays of ``n``) for the inputs ``given`` (name -> scalar or array
        of ``n``: an array input given as one value is broadcast); ``index``/``table``:
        each candidate's row of the shared-values table."""
        scalars = np.array([given[a] for a in self.scalars], dtype=float)
        arrays = [np.ascontiguousarray(np.broadcast_to(np.asarray(given[a], dtype=float), (n,)))
                  for a in self.arrays]
        if table is not None:
            table = np.ascontiguousarray(table, dtype=float)
            index = np.ascontiguousarray(index, dtype=np.int32)
        if out is None:  # one block: large enough for transparent huge pages, fewer faults
            out = list(np.empty((len(self.outputs), n)))
        body = n - n % LANES
        if body:
            self._run(body, scalars, arrays, index, table, out)
        if body < n:  # the tail, padded with copies of its last row
            rows = np.minimum(np.arange(body, body + LANES), n - 1)
            tail = list(np.empty((len(self.outputs), LANES)))
            self._run(LANES, scalars, [a[rows] for a in arrays],
                      None if index is None else index[rows], table, tail)
            for o, t in zip(out, tail, strict=True):
                o[body:] = t[:n - body]
        return out

    def _run(self, n, scalars, arrays, index, table, out) -> None:
        pointers = np.array([a.ctypes.data for a in arrays] or [0], dtype=np.uintp)
        out_pointers = np.array([o.ctypes.data for o in out] or [0], dtype=np.uintp)
        self.function(n, scalars.ctypes.data, pointers.ctypes.data,
                      None if index is None else index.ctypes.data,
                      None if table is None else table.ctypes.data, out_pointers.ctypes.data)


#: The C signature of a kernel function:
#: ``void f(long n, const double *scalars, const double *const *arrays, const int *index,
#: const double *table, double *const *out)``.
KERNEL_ARGTYPES = [ctypes.c_long] + [ctypes.c_void_p] * 5


def rows_kernel() -> NativeKernel | None:
    """``capplan_rows``: every output for candidates whose arrays are among
    ``manifest.ROWS["array_set"]`` (``None`` on the numpy backend)."""
    f = function("capplan_rows", KERNEL_ARGTYPES)
    if f is None:
        return None
    rows = manifest.ROWS
    return NativeKernel(f, rows["scalars"], rows["arrays"], rows["outputs"])
