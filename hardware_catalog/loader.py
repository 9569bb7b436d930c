"""Load and validate catalog files; merge shipped data with user directories.

Order (later overrides earlier by ``(kind, id)``): the shipped ``data/`` directory, then
the directories in ``$CAPPLAN_CATALOG`` (``os.pathsep``-separated), then ``extra_dirs``.
Every problem becomes one :class:`CatalogError` line: ``<file>: <key path>: <expected>``.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import os
import re
import stat
import sys
import tomllib
from collections.abc import Iterable, Sequence
from datetime import date
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from . import toml_cache, validated_cache
from .errors import CatalogError
from .hf_config import model_data
from .names import normalised_name
from .schema import (
    ADDED_KEYS,
    KIND_MODELS,
    KINDS,
    PROBLEM_SEP,
    SCHEMA_VERSION,
    Entry,
    Quantity,
    plugins_off,
)
from .textfile import printable, read_utf8

DATA_DIR = Path(__file__).resolve().parent / "data"
ENV_VAR = "CAPPLAN_CATALOG"
PLURAL = {"accelerator": "accelerators", "node": "nodes", "site": "sites",
          "site_class": "site_classes", "model": "models", "reliability": "reliability",
          "stack": "stacks"}
SINGULAR = {v: k for k, v in PLURAL.items()}
#: Site class that takes the PUE the site entry states (``--site-class site``).
SITE_OWN_PUE = "site"
#: Keys the shipped catalog must give that a user's own file may leave out.
SHIPPED_ONLY = {"accelerator": ("vendor", "release_date"), "model": ("params_published",)}
#: Bounds of the walk of a ``--catalog DIR`` (a catalog holds tens of files).
MAX_DEPTH = 6
MAX_DIRS = 500
MAX_FILES = 2000


def _display(path: Path) -> str:
    """The path as the user knows it (relative to the working directory), on one line."""
    try:
        return printable(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (< 3.13)
        return printable(path)


def _fmt_input(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(error: dict, model: type[Entry]) -> list[str]:
    """One pydantic error -> '<key path>: <what was expected>' (several for a model check)."""
    loc = [str(p) for p in error.get("loc", ())]
    etype = error.get("type", "")
    msg = str(error.get("msg", "")).removeprefix("Value error, ")
    key = ".".join(loc)
    if etype == "extra_forbidden":
        if len(loc) >= 2 and loc[0] in model.model_fields:
            allowed = list(Quantity.model_fields)
        else:
            allowed = ["schema_version", "kind"] + [
                k for k in model.model_fields if k not in ("schema_version", "kind")]
        return [f"{key}: unknown key; expected one of: {', '.join(allowed)}"]
    if etype == "missing":
        return [f"{key}: missing required key"]
    if etype in ("model_type", "model_attributes_type", "dict_type"):
        return [f"{key}: expected a table {{ value = <number>, source = \"<document, table>\", "
                f"as_of = YYYY-MM-DD }}, got {_fmt_input(error.get('input'))}"]
    if loc == ["schema_version"]:
        return [f"schema_version: expected {SCHEMA_VERSION} (the version this capplan reads), "
                f"got {_fmt_input(error.get('input'))}"]
    if not loc:  # a model-level check: its problems already name their keys
        return msg.split(PROBLEM_SEP)
    got = f", got {_fmt_input(error['input'])}" if "input" in error and not isinstance(
        error["input"], dict) else ""
    return [f"{key}: {msg[0].lower() + msg[1:] if msg else 'invalid'}{got}"]


def _one_line(shown: str, problems: list[str]) -> CatalogError:
    """``file: key: problem`` or ``file: N problems: key: problem; key: problem; ...``."""
    problems = [" ".join(p.split()) for p in problems]  # a value with a newline stays on one line
    if len(problems) == 1:
        return CatalogError(f"{shown}: {problems[0]}")
    return CatalogError(f"{shown}: {len(problems)} problems: {PROBLEM_SEP.join(problems)}")


def _user_defaults(data: dict, path: Path, kind: str) -> dict:
    """What a user's what-if file may leave out, filled in (the shipped catalog may not).

    ``schema_version`` (this capplan's), ``kind`` (from the flag or folder), ``id`` (the
    file name, lower case, other characters than ``a-z0-9._-`` as ``-``), ``name`` (the
    id); a Quantity may be a bare number, and a missing ``source`` / ``as_of`` become
    "user file <name>" and the file's modification date.
    """
    data = dict(data)
    data.setdefault("schema_version", SCHEMA_VERSION)
    data.setdefault("kind", kind)
    data.setdefault("id", re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-._")
                    or "user-file")
    data.setdefault("name", str(data["id"]))
    try:
        as_of = date.fromtimestamp(path.stat().st_mtime)
    except (OSError, OverflowError, ValueError):
        as_of = date.today()
    source = f"user file {path.name}"
    model = KIND_MODELS[kind]
    if kind == "model":
        data.setdefault("source", source)
        data.setdefault("as_of", as_of)
    for name, field in model.model_fields.items():
        if Quantity not in getattr(field.annotation, "__args__", (field.annotation,)):
            continue
        given = data.get(name)
        if isinstance(given, int | float) and not isinstance(given, bool):
            data[name] = {"value": given, "source": source, "as_of": as_of}
        elif isinstance(given, dict):
            data[name] = {"source": source, "as_of": as_of, **given}
    return data


#: (file, keys) already told about the defaults of keys it leaves out (once per process).
_TOLD: set[tuple[str, tuple[str, ...]]] = set()


def _added_defaults(data: dict, shown: str, kind: str) -> dict:
    """A user file written before some of its kind's keys were added (:data:`ADDED_KEYS`):
    each missing one takes its declared default, said once on stderr."""
    missing = [k for k in ADDED_KEYS.get(kind, {}) if k not in data]
    if not missing:
        return data
    data = dict(data)
    for key in missing:
        value, added, meaning = ADDED_KEYS[kind][key]
        data[key] = {"value": value, "as_of": date.fromisoformat(added), "estimate": False,
                     "source": f"capplan's default for a file without {key} (added {added}): "
                               f"{meaning}"}
    if (shown, tuple(missing)) not in _TOLD:
        _TOLD.add((shown, tuple(missing)))
        given = ", ".join(f"{k} = {ADDED_KEYS[kind][k][0]:g}" for k in missing)
        dates = ", ".join(sorted({ADDED_KEYS[kind][k][1] for k in missing}))
        print(f"capplan: {shown}: not given, keys added {dates}; using the default"
              f"{'s' if len(missing) > 1 else ''} {given} (state them to silence this)",
              file=sys.stderr)
    return data


def _extended(data: dict, path: Path, shown: str, seen: tuple[Path, ...] = ()) -> dict:
    """A stack that ``extends = "<id>"`` another: the stack file ``<id>.toml`` beside it, else
    the shipped stack of that id (itself possibly extending another), with this file's keys
    replacing its keys.

    One software change is then one small file that names what it changes (e.g. one step
    of NVIDIA's DeepSeek-V3 GB200 optimisation guide over the step before it)."""
    base_id = data["extends"]
    if not isinstance(base_id, str) or not base_id:
        raise CatalogError(f"{shown}: extends: expected the id of a stack in the same folder, "
                           f"got {_fmt_input(base_id)}")
    # beside this file, else a shipped stack (a user's file may extend those by id)
    base_path = next((p for p in (path.parent / f"{base_id}.toml",
                                  DATA_DIR / "stacks" / f"{base_id}.toml") if p.is_file()), None)
    if base_path is None:
        known = {q.stem for q in (*path.parent.glob("*.toml"),
                                  *(DATA_DIR / "stacks").glob("*.toml")) if q != path}
        raise CatalogError(f"{shown}: extends: " + str(suggest("stack", base_id, sorted(known))))
    if base_path.resolve() in seen or base_path.resolve() == path.resolve():
        raise CatalogError(f"{shown}: extends: '{base_id}' extends this stack again (a cycle)")
    base_shown = _display(base_path)
    try:
        base = toml_cache.loads(read_utf8(base_path, base_shown))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{base_shown}: invalid TOML: {exc}") from None
    if base.get("kind", "stack") != "stack":
        raise CatalogError(f"{shown}: extends: '{base_id}' is not a stack")
    if "extends" in base:
        base = _extended(base, base_path, base_shown, (*seen, path.resolve()))
    # (an alias names one stack, not every stack built on it)
    merged = {k: v for k, v in base.items() if k not in ("description", "aliases")}
    merged.update({k: v for k, v in data.items() if k != "extends"})
    return merged


def parse_file(path: str | Path, expect_kind: str | None = None, *, user: bool = False,
               folder_kind: str | None = None) -> Entry:
    """Read and validate one catalog TOML file (or, for a user's model, a Hugging Face
    config.json); raise a one-line CatalogError.

    ``user=True`` (a ``--model``/``--hardware`` file or one under ``--catalog DIR``) asks
    only for what the engine needs (see :func:`_user_defaults`); the shipped catalog
    (``user=False``) also needs every provenance key. ``folder_kind`` is the kind a
    user file's folder names (``accelerators/`` ...), used when the file has no ``kind``.
    Every problem of the file is listed, each with its key.
    """
    path = Path(path)
    shown = _display(path)
    text = read_utf8(path, shown)
    if user and path.suffix.lower() == ".json":
        data = _json_model_data(text, path, shown, expect_kind or folder_kind)
    else:
        data = _toml_data(text, shown)
    kind = data.get("kind", (expect_kind or folder_kind) if user else None)
    if not isinstance(kind, str) or kind not in KIND_MODELS:
        got = "missing" if kind is None else f"got {_fmt_input(kind)}"
        raise CatalogError(f"{shown}: kind: expected one of {', '.join(KINDS)}; {got}")
    if expect_kind is not None and kind != expect_kind:
        raise CatalogError(f"{shown}: kind: expected '{expect_kind}', got '{kind}'")
    model = KIND_MODELS[kind]
    if kind == "stack" and "extends" in data:
        data = _extended(data, path, shown)
    problems = []
    if user:
        data = _added_defaults(_user_defaults(data, path, kind), shown, kind)
    else:
        problems = [f"{k}: missing required key" for k in SHIPPED_ONLY.get(kind, ())
                    if k not in data]
    try:
        with plugins_off():  # the first validation builds the models' validators
            entry = model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            problems.extend(_describe(error, model))
    if problems:
        raise _one_line(shown, problems)
    return entry


def _toml_data(text: str, shown: str) -> dict:
    """A catalog TOML file's keys, or one line saying why the text is no TOML."""
    try:
        return toml_cache.loads(text)  # tomllib.loads, cached by the text's hash
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{shown}: invalid TOML: {exc}") from None
    except RecursionError:
        raise CatalogError(f"{shown}: invalid TOML: tables or arrays nested too deeply "
                           "for a catalog entry") from None


def _json_model_data(text: str, path: Path, shown: str, kind: str | None) -> dict:
    """A model entry's keys from a Hugging Face config.json
    (:mod:`hardware_catalog.hf_config`), which :func:`parse_file` then checks as a user's
    model TOML; its id defaults to the config's folder ('Llama-3.1-8B/config.json')."""
    if kind not in (None, "model"):
        raise CatalogError(f"{shown}: a JSON file is read as a Hugging Face model config; "
                           f"give the {kind} as a TOML file")
    stem = path.parent.name if path.stem == "config" and path.parent.name else path.stem
    return model_data(text, shown, stem)


def suggest(kind: str, name: str, choices: Iterable[str],
            names: dict[str, str] | None = None) -> CatalogError:
    """``unknown <kind> 'x'; did you mean: a, b?`` (prefix matches first, then similar);
    ``names`` (normalised id or alias -> id) matches the aliases and ignores case too."""
    choices = sorted(set(choices))
    names = names or {normalised_name(c): c for c in choices}
    typed = normalised_name(name)
    keys = sorted(names)
    ranked = sorted(keys, key=lambda c: -difflib.SequenceMatcher(None, typed, c).ratio())
    close = [c for c in ranked if c.startswith(typed)] if typed else []
    if not close:
        close = difflib.get_close_matches(typed, keys, n=6, cutoff=0.5)
    close = list(dict.fromkeys(names[c] for c in close))[:3]
    name = printable(name)  # a name with a newline stays on one line
    if close:
        return CatalogError(f"unknown {kind} '{name}'; did you mean: {', '.join(close)}?")
    shown = ", ".join(choices[:15]) + (", ..." if len(choices) > 15 else "")
    return CatalogError(f"unknown {kind} '{name}'; known: {shown or '(none)'}")


#: The kinds whose names resolve with their hyphens aside (:meth:`Catalog.get`): models and
#: accelerators, whose names people copy from model cards and datasheets.
HYPHEN_LENIENT = ("model", "accelerator")


#: Product-line words an accelerator's full name puts before the part (AMD Instinct MI300X,
#: NVIDIA Tesla V100, Google Cloud TPU v5p, NVIDIA DGX H100 and HGX H200: the systems
#: built of it), dropped with the vendor's name.
PRODUCT_LINES = ("instinct", "tesla", "cloud", "dgx", "hgx")


#: Words after an accelerator's name that state its memory or a slice of it, not another
#: part: '192gb', 'hbm3e' (AMD Instinct MI300X 192GB HBM3), a TPU slice's chip or core
#: count ('tpu-v6e-256', 'v5p-128'), GKE's 'podslice' / 'slice' / 'device' suffixes.
SPEC_WORD = re.compile(r"\d+(?:gb|gib|g)?|hbm\d*e?|podslice|slice|device")


#: A release after a stack's name: '25.11', '0.13.0', 'v0.2', '2.0rc1' (dotted or with a
#: 'v': a bare number such as '2052' is a mistyped id's year, not a release).
VERSION_WORD = re.compile(r"v\d+(?:\.\d+)*(?:rc\d+)?|\d+(?:\.\d+)+(?:rc\d+)?")


def _shortened(key: str, word: re.Pattern) -> list[str]:
    """A normalised name without each trailing word that ``word`` matches, one more each
    time ('mi300x-192gb-hbm3' with :data:`SPEC_WORD`: 'mi300x-192gb', 'mi300x';
    'megatron-bridge-25.11' with :data:`VERSION_WORD`: 'megatron-bridge'); its first word
    stays."""
    names, words = [], key.split("-")
    while len(words) > 1 and word.fullmatch(words[-1]):
        words = words[:-1]
        names.append("-".join(words))
    return names


def lenient_name(name: str) -> str:
    """A normalised name without its hyphens and dots, as :meth:`Catalog.get` compares
    model and accelerator names when the exact one matches nothing."""
    return re.sub(r"[-.]", "", name)


def _hub_like(kind: str, name) -> bool:
    """Whether ``name`` reads as a Hugging Face repository id ('org/model') that is no
    file: a model name with one slash, no file suffix, and nothing at that path."""
    text = str(name)
    return (SINGULAR.get(kind, kind) == "model" and not isinstance(name, Path)
            and text.count("/") == 1 and not text.startswith(("/", "."))
            and not text.endswith((".toml", ".json")) and not os.path.exists(text))


def looks_like_path(name: str) -> bool:
    return name.endswith((".toml", ".json")) or os.sep in name or "/" in name


class Catalog:
    """Accelerators, nodes, sites, models, reliability profiles and software stacks by id."""

    def __init__(self, entries: dict[str, dict[str, Entry]], origins: dict[tuple[str, str], Path],
                 version: str, dirs: tuple[str, ...]):
        self.accelerators = entries["accelerator"]
        self.nodes = entries["node"]
        self.sites = entries["site"]
        self.site_classes = entries["site_class"]
        self.models = entries["model"]
        self.reliability = entries["reliability"]
        self.stacks = entries["stack"]
        self.origins = origins
        self.version = version
        self.dirs = dirs
        #: the user's own price quote files (``--prices``), read by planner.engine.economics.pricing
        self.price_files: tuple[str, ...] = ()
        #: kind -> normalised id or alias -> id (:meth:`get`)
        self.names = {k: _names(k, table) for k, table in entries.items()}
        #: for the kinds in HYPHEN_LENIENT: name without hyphens and dots -> the ids it is
        #: (:meth:`_named_id`)
        self.lenient_names = {k: _lenient_names(self.names[k]) for k in HYPHEN_LENIENT}
        #: the accelerators' vendors, normalised (:meth:`_unbranded`)
        self.vendors = frozenset(normalised_name(a.vendor) for a in self.accelerators.values()
                                 if a.vendor)

    def table(self, kind: str) -> dict[str, Entry]:
        kind = SINGULAR.get(kind, kind)
        if kind not in KIND_MODELS:
            raise suggest("kind", kind, list(PLURAL.values()))
        return getattr(self, PLURAL[kind] if kind != "reliability" else "reliability")

    def get(self, kind: str, name_or_path: str | Path) -> Entry:
        """An entry by id, or the entry in a TOML file (same schema) given by path."""
        if isinstance(name_or_path, Path) or looks_like_path(str(name_or_path)):
            if _hub_like(kind, name_or_path):
                tail = str(name_or_path).split("/")[1]
                hub_id = self._named_id(kind, tail)
                if hub_id is None:
                    raise CatalogError(
                        f"{printable(str(name_or_path))}: no such file, nor a catalog model "
                        f"named '{printable(tail)}'; for a Hugging Face model give the path "
                        f"of its config.json (--model path/to/config.json)")
                return self.table(kind)[hub_id]
            return parse_file(name_or_path, expect_kind=kind, user=True)
        table = self.table(kind)
        if name_or_path in table:
            return table[name_or_path]
        id_ = self._named_id(kind, name_or_path)
        if id_ is None:
            raise suggest(kind, str(name_or_path), table,
                          self.names.get(SINGULAR.get(kind, kind))) from None
        return table[id_]

    def _named_id(self, kind: str, name: str) -> str | None:
        """The id whose normalised id or alias ``name`` is; else, for a model or an
        accelerator, the one id or alias that ``name`` is without its hyphens and dots
        ('Llama-3.1-8B', 'llama31_8b', 'Grok-1-314B', 'GPT-3 175B' as model cards and
        benchmark tables write them), without a trailing parenthesised qualifier
        ('Llama4-Maverick-400B(E128)') or, for an accelerator, without its vendor and
        product line in front ('AMD Instinct MI300X') and the memory or slice words after
        it (:data:`SPEC_WORD`); else None."""
        kind = SINGULAR.get(kind, kind)
        names = self.names.get(kind, {})
        key = normalised_name(name)
        if kind == "stack" and key not in names:  # 'megatron-bridge-25.11', 'NeMo 2.0'
            key = next((k for k in _shortened(key, VERSION_WORD) if k in names), key)
        if key in names or kind not in HYPHEN_LENIENT:
            return names.get(key)
        unbranded = self._unbranded(kind, key)
        specs = _shortened(unbranded, SPEC_WORD) if kind == "accelerator" else []
        for typed in (key, re.sub(r"\s*\([^()]*\)$", "", key), unbranded, *specs):
            ids = self.lenient_names[kind].get(lenient_name(typed), ())
            if len(ids) == 1:
                return next(iter(ids))
        return None

    def _unbranded(self, kind: str, key: str) -> str:
        """An accelerator's normalised name without its vendor and product line in front
        ('NVIDIA H100 80GB HBM3' as nvidia-smi prints it, 'AMD Instinct MI300X', 'Google
        Cloud TPU v5p'); other kinds' names unchanged."""
        if kind != "accelerator":
            return key
        words = key.split("-")
        while len(words) > 1 and (words[0] in self.vendors or words[0] in PRODUCT_LINES):
            words = words[1:]
        return "-".join(words)

    def _hub_id(self, kind: str, name: str | Path) -> str | None:
        """The catalog id a Hugging Face repository id names ('meta-llama/Llama-3.1-8B',
        'Qwen/Qwen3-235B-A22B'): a model whose name after its organisation resolves, when
        no file of that path exists; else None (a path)."""
        if not _hub_like(kind, name):
            return None
        return self._named_id(kind, str(name).split("/")[1])

    def canonical(self, kind: str, name: str) -> str:
        """The id ``name`` resolves to (:meth:`get`'s rules), else ``name`` unchanged (a
        path, or a name the command will refuse with its did-you-mean line)."""
        if looks_like_path(name):
            return self._hub_id(kind, name) or name
        if name in self.table(kind):
            return name
        return self._named_id(kind, name) or name

    def accelerator(self, name_or_path):
        return self.get("accelerator", name_or_path)

    def node(self, name_or_path):
        return self.get("node", name_or_path)

    def site(self, name_or_path):
        return self.get("site", name_or_path)

    def site_class(self, name_or_path):
        return self.get("site_class", name_or_path)

    def pue_entry(self, site_class: str, site: Entry | None = None) -> Entry:
        """The entry whose PUE applies: the site class ``site_class`` (an id or a TOML
        path), or ``site`` itself for :data:`SITE_OWN_PUE` (its region's stated PUE)."""
        if site_class == SITE_OWN_PUE:
            if site is None:
                raise CatalogError("site class 'site' needs a site")
            return site
        if isinstance(site_class, str) and not looks_like_path(site_class) \
                and site_class not in self.table("site_class"):
            raise suggest("site_class", site_class, [*self.table("site_class"), SITE_OWN_PUE])
        return self.site_class(site_class)

    def model(self, name_or_path):
        return self.get("model", name_or_path)

    def reliability_profile(self, name_or_path="default"):
        return self.get("reliability", name_or_path)

    def stack(self, name_or_path):
        return self.get("stack", name_or_path)

    def find(self, name: str) -> list[tuple[str, Entry]]:
        """All ``(kind, entry)`` with this id, across kinds; else those it names as
        :meth:`get` resolves names (any case, an alias)."""
        found = [(k, self.table(k)[name]) for k in KINDS if name in self.table(k)]
        if found:
            return found
        return [(k, self.table(k)[id_]) for k in KINDS
                if (id_ := self._named_id(k, name)) is not None]

    def all_ids(self) -> list[str]:
        return sorted({i for k in KINDS for i in self.table(k)})

    def origin(self, kind: str, id_: str) -> Path | None:
        return self.origins.get((kind, id_))

    def __repr__(self) -> str:
        counts = ", ".join(f"{len(self.table(k))} {PLURAL[k]}" for k in KINDS)
        return f"<Catalog {self.version}: {counts}>"


def _lenient_names(names: dict[str, str]) -> dict[str, set[str]]:
    """Each normalised name without its hyphens and dots -> the ids it names."""
    out: dict[str, set[str]] = {}
    for known, id_ in names.items():
        out.setdefault(lenient_name(known), set()).add(id_)
    return out


def _names(kind: str, table: dict[str, Entry]) -> dict[str, str]:
    """Every id of one kind and every alias of its entries, normalised, to its id; a name
    two entries claim is an error naming both."""
    names: dict[str, str] = {}
    for id_, entry in table.items():
        for name in (id_, *getattr(entry, "aliases", ())):
            key = normalised_name(name)
            if names.setdefault(key, id_) != id_:
                both = " and ".join(sorted((id_, names[key])))
                raise CatalogError(f"the name '{name}' names two {PLURAL.get(kind, kind)}, "
                                   f"{both}; an id or alias must name one")
    return names


def scan_dir(directory: Path) -> list[Path]:
    """The ``*.toml`` files under ``directory``, sorted; a bounded, safe walk.

    Symbolic links to directories are not followed (no loops), the walk stays on the
    directory's file system (never into /proc, /sys, /dev or other mounts), skips hidden
    folders, and stops with an error past MAX_DEPTH levels, MAX_DIRS folders or MAX_FILES
    files: ``--catalog`` names a folder of catalog files, not a disk.
    """
    shown = _display(directory)
    try:
        root = os.stat(directory)
    except FileNotFoundError:
        raise CatalogError(f"{shown}: catalog directory does not exist") from None
    except OSError as exc:
        raise CatalogError(f"{shown}: cannot read catalog directory: "
                           f"{exc.strerror or exc}") from None
    if not stat.S_ISDIR(root.st_mode):
        return [directory]  # one file: parse_file says what is wrong with it
    if Path(directory).resolve() == Path(Path(directory).resolve().anchor):
        raise CatalogError(f"{shown}: the file system root is not a catalog directory; "
                           f"point --catalog at the folder of your .toml files")
    found: list[Path] = []
    pending = [(directory, 0)]
    dirs_seen = 0
    while pending:
        folder, depth = pending.pop()
        dirs_seen += 1
        if dirs_seen > MAX_DIRS:
            raise CatalogError(f"{shown}: more than {MAX_DIRS} folders under this catalog "
                               f"directory; point --catalog at the folder of your .toml files")
        try:
            with os.scandir(folder) as entries:
                listing = list(entries)
        except OSError as exc:
            raise CatalogError(f"{_display(folder)}: cannot read catalog directory: "
                               f"{exc.strerror or exc}") from None
        for entry in listing:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.stat(follow_symlinks=False).st_dev != root.st_dev:
                        continue  # another file system: /proc, /sys, a network mount ...
                    if depth + 1 > MAX_DEPTH:
                        raise CatalogError(f"{shown}: catalog directory has folders deeper "
                                           f"than {MAX_DEPTH} levels (e.g. "
                                           f"{_display(Path(entry.path))}); point --catalog "
                                           f"at the folder of your .toml files")
                    pending.append((Path(entry.path), depth + 1))
                elif entry.name.endswith(".toml") and entry.is_file(follow_symlinks=True):
                    found.append(Path(entry.path))
            except OSError:
                continue  # vanished or dangling entry: not a catalog file
            if len(found) > MAX_FILES:
                raise CatalogError(f"{shown}: more than {MAX_FILES} .toml files under this "
                                   f"catalog directory; point --catalog at your catalog folder")
    return sorted(found)


def catalog_dirs(extra_dirs: Sequence[str | Path] = ()) -> tuple[str, ...]:
    """The user directories in load order: $CAPPLAN_CATALOG, then ``extra_dirs``."""
    env = [d for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d.strip()]
    return tuple(_absolute(Path(d).expanduser()) for d in [*env, *extra_dirs])


def _absolute(path: Path) -> str:
    """``path`` resolved; only made absolute where it cannot be (a symlink loop: the
    folder listing then says what is wrong)."""
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return os.path.abspath(path)


def load_catalog(extra_dirs: Sequence[str | Path] = (),
                 price_files: Sequence[str | Path] = ()) -> Catalog:
    """Shipped data, then $CAPPLAN_CATALOG dirs, then ``extra_dirs`` (later wins by id);
    ``price_files``: the user's own price quotes (``--prices``), carried by the catalog
    (a copy: the cached catalog stays as shipped)."""
    catalog = _load(catalog_dirs(extra_dirs))
    if not price_files:
        return catalog
    with_quotes = copy.copy(catalog)
    with_quotes.price_files = tuple(_absolute(Path(f).expanduser()) for f in price_files)
    return with_quotes


@lru_cache(maxsize=16)
def _load(dirs: tuple[str, ...]) -> Catalog:
    entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
    origins: dict[tuple[str, str], Path] = {}
    digest = hashlib.sha256()
    for layer, directory in enumerate([DATA_DIR, *map(Path, dirs)]):
        files = scan_dir(directory)
        if layer == 0:
            parsed = _shipped_layer(files, digest)
        else:
            parsed = _parse_layer(files, layer)
            _hash_files(digest, files, layer)
        for path, entry in parsed:
            key = (entry.kind, entry.id)
            entries[entry.kind][entry.id] = entry
            origins[key] = path
    for acc_id, acc in entries["accelerator"].items():
        if acc.node not in entries["node"]:
            err = suggest("node", acc.node, entries["node"])
            raise CatalogError(f"{_display(origins[('accelerator', acc_id)])}: node: {err}")
        for field in ("default_stack", "default_dense_stack"):
            named = getattr(acc, field)
            if named is not None and named not in entries["stack"]:
                err = suggest("stack", named, entries["stack"])
                raise CatalogError(f"{_display(origins[('accelerator', acc_id)])}: {field}: "
                                   f"{err}")
    toml_cache.save()
    version = f"{SCHEMA_VERSION}+{digest.hexdigest()[:12]}"
    return Catalog({k: dict(sorted(v.items())) for k, v in entries.items()}, origins, version,
                   dirs)


def _hash_files(digest, files: list[Path], layer: int) -> None:
    """Add each file's layer, name and bytes to ``digest`` (the catalog's version)."""
    for path in files:
        rel = path.name if layer else str(path.relative_to(DATA_DIR))
        digest.update(f"{layer}:{rel}\0".encode() + path.read_bytes())


def _shipped_layer(files: list[Path], digest) -> list[tuple[Path, Entry]]:
    """The shipped entries: validated once per change of the shipped files or of this
    package's code (:mod:`hardware_catalog.validated_cache`), else parsed and validated."""
    try:
        _hash_files(digest, files, 0)
    except OSError:
        _parse_layer(files, 0)  # names the file that cannot be read
        raise
    if not validated_cache.enabled():
        return _parse_layer(files, 0)
    key = validated_cache.key(digest.digest(), DATA_DIR)
    parsed = validated_cache.load(key, files, DATA_DIR)
    if parsed is None:
        parsed = _parse_layer(files, 0)
        validated_cache.store(key, parsed, DATA_DIR)
    return parsed


def _parse_layer(files: list[Path], layer: int) -> list[tuple[Path, Entry]]:
    """The entry of each file of one layer (the shipped data is layer 0), in order; an id
    defined twice in the layer is an error."""
    seen: dict[tuple[str, str], Path] = {}
    parsed = []
    for path in files:
        entry = parse_file(path, user=layer > 0, folder_kind=SINGULAR.get(path.parent.name))
        key = (entry.kind, entry.id)
        if key in seen:
            raise CatalogError(f"{_display(path)}: id: '{entry.id}' is already defined in "
                               f"{_display(seen[key])}")
        seen[key] = path
        parsed.append((path, entry))
    return parsed


def clear_cache() -> None:
    """Forget loaded catalogs (after editing files in a running process)."""
    _load.cache_clear()
    toml_cache.forget()
    _TOLD.clear()
