"""What the command-line parser guarantees, checked for the Python API.

``capplan``'s options arrive as strings, one number per flag, and a command evaluates
what its search builds; :func:`planner.evaluate` and :func:`planner.plan` take Python
objects.  These checks give such a call the CLI's one-line
:class:`~planner.errors.CapplanError` instead of an ``AttributeError`` or a numpy
message from deep inside: names are strings (or catalog entries), the catalog is one,
switches are booleans, the run's size is one number each, layout sizes are scalars or
one-dimensional arrays of one length, and one call evaluates at most
:data:`MAX_CANDIDATES` layouts (the numbers themselves are checked by
:mod:`planner.engine.inputs.domains`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike

import numpy as np

from hardware_catalog.loader import Catalog
from hardware_catalog.schema import Accelerator, ModelSpec, SoftwareStack
from planner.engine.inputs.domains import check_value, label
from planner.errors import CapplanError, shown

#: The most layouts one :func:`planner.evaluate` call evaluates (rows of its result).
#: The kernel holds ~300 float64 temporaries per row in a chunk and the result ~90
#: columns, ~1 kB a row: a million rows is ~1 GB and ~10 s; evaluate larger sets in
#: slices of at most this many rows and concatenate the frames.
MAX_CANDIDATES = 1_000_000

#: What an entry keyword may hold besides a catalog id or a TOML path.
ENTRY_TYPES = {"model": ModelSpec, "hardware": Accelerator, "stack": SoftwareStack}

#: Choices that are names, not catalog entries.
NAMES = frozenset({"precision", "pricing", "provider"})


def _got(value) -> str:
    return f"{shown(value)[:80]} ({type(value).__name__})"


def check_names(names: dict, entries: dict = ENTRY_TYPES) -> None:
    """Every catalog choice (``model``, ``hardware``, ``site`` ...) is a string, or an
    entry where ``entries`` allows one (``hardware``: one accelerator; ``plan`` takes a
    list, :func:`check_hardware_list`); ``precision``, ``pricing`` and ``provider`` are
    names."""
    for name, value in names.items():
        entry = entries.get(name)
        if isinstance(value, str) or (entry is not None and isinstance(value, entry)):
            continue
        allowed = "a name (str)" if name in NAMES else "a catalog id or a TOML path (str)"
        if entry is not None:
            allowed += f" or an entry (hardware_catalog.schema.{entry.__name__})"
        if name == "hardware":
            allowed += "; evaluate takes one accelerator, plan a list"
        raise CapplanError(f"--{name.replace('_', '-')} must be {allowed}, got {_got(value)}")


def check_hardware_list(hardware) -> None:
    """``plan``'s accelerators: a list (or tuple) of catalog ids or TOML paths."""
    if isinstance(hardware, str) or not isinstance(hardware, list | tuple) or not all(
            isinstance(h, str) for h in hardware):
        raise CapplanError("--hardware must be a list of catalog ids or TOML paths (str), "
                           f"got {_got(hardware)}")


def check_catalog(catalog) -> None:
    """``catalog``: ``None`` (the shipped one) or a loaded :class:`Catalog`."""
    if catalog is not None and not isinstance(catalog, Catalog):
        raise CapplanError("catalog must be None or a loaded catalog "
                           "(hardware_catalog.load_catalog(dirs)); for a folder give "
                           f"catalog_dirs=[path], got {_got(catalog)}")


def check_catalog_dirs(dirs) -> None:
    """``catalog_dirs``: a sequence of folder paths (str or path objects)."""
    if isinstance(dirs, str | PathLike) or not isinstance(dirs, Iterable) or not all(
            isinstance(d, str | PathLike) for d in dirs):
        raise CapplanError(f"catalog_dirs must be a list of folder paths, got {_got(dirs)}")


def check_switch(name: str, value) -> None:
    """A yes/no keyword (``flash_attention``, ``as_frame``): a boolean, not ``"no"``."""
    if not isinstance(value, bool | np.bool_):
        raise CapplanError(f"{name} must be True or False, got {_got(value)}")


def check_flag(name: str, value) -> None:
    """A 0/1 layout flag (``sequence_parallel``): None, a boolean, or integers (one or an
    array); a float such as 0.0 is a typo for a size, not a switch."""
    if value is None or isinstance(value, bool | np.bool_):
        return
    if not isinstance(value, str) and np.asarray(value).dtype.kind in "fc":
        raise CapplanError(f"'{name}' must be an integer in [0, 1] (or True/False), "
                           f"got {_got(value)}")


def check_mapping(name: str, value) -> None:
    """``overrides`` and the like: ``None`` or a dict."""
    if value is not None and not isinstance(value, Mapping):
        raise CapplanError(f"{name} must be a dict of run-model inputs (name -> value), "
                           f"got {_got(value)}")


def check_scalars(values: dict) -> None:
    """The run's size (``tokens``, ``global_batch``, ``seq_len``): one number each (many
    values go through ``overrides``, one row each)."""
    for name, value in values.items():
        if value is not None and not isinstance(value, str) and _ndim(value) != 0:
            raise CapplanError(f"{label(name)} must be one number (many values: evaluate's "
                               f"overrides={{'{name}': array}}), got {_got(value)}")


def _ndim(value) -> int:
    try:
        return np.ndim(value)
    except ValueError:  # a ragged nested list
        return 2


def candidate_count(sizes: dict) -> int:
    """The number of layouts ``sizes`` (name -> ``None``, a scalar or a 1-D array)
    describe: arrays of one length (or of length 1) each, at most
    :data:`MAX_CANDIDATES`; a CapplanError naming the keyword otherwise."""
    count, first = 1, None
    for name, value in sizes.items():
        if value is None or isinstance(value, str | bytes):
            continue  # not given, or a name the domain check will refuse
        try:
            shape = np.shape(value)
        except ValueError:  # a ragged nested list
            shape = (None, None)
        if len(shape) > 1:
            raise CapplanError(f"{label(name)} must be a number or a one-dimensional array "
                               f"(one layout per entry), got an array of shape {shape}")
        if not shape or shape[0] == 1:
            continue
        if first is not None and shape[0] != count:
            raise CapplanError(f"{label(name)} has {shape[0]} entries but {label(first)} "
                               f"has {count}; arrays must be equally long")
        count, first = shape[0], name
    if count > MAX_CANDIDATES:
        raise CapplanError(
            f"{count:,} layouts in one call is more than evaluate takes "
            f"(MAX_CANDIDATES = {MAX_CANDIDATES:,}); evaluate them in slices of at most "
            f"{MAX_CANDIDATES:,} rows (e.g. gpus=g[i:i + {MAX_CANDIDATES}]) and concatenate "
            "the frames (pandas.concat)")
    return count


def check_given(name: str, value) -> None:
    """A size that has no "chosen" meaning (``gpus``, ``zero``): ``None`` is refused
    with its domain's message."""
    if value is None:
        check_value(name, value)
