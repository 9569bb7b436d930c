"""Cross-validation by source and by accelerator, and the error of predicted speedups.

Besides leave-one-family-out (:mod:`planner.analysis.calibration`), two splits ask whether
the calibration predicts data it never saw from *another publisher* or *another chip*:

* **leave-one-source-out** (LOSO): for each source (:func:`source_of`: the repository, paper
  or documentation site a row's ``source`` cell cites), every parameter of the calibration
  ``GRID`` is refitted on the fit rows of every other source and that source's rows are
  predicted with the refitted values;
* **leave-one-accelerator-out** (LOAO): for each accelerator generation whose parameters the
  calibration shares (:data:`GENERATIONS`: A100, Hopper, Blackwell), the generation's rows
  leave the fit, its own parameters (those only its accelerators own) are set to a prior
  that no row of it informed (:func:`held_out_prior`), the rest of ``GRID`` is refitted on
  the other generations' rows, and the generation's rows are predicted.

The refits are :func:`planner.analysis.calibration.fit` (one round of its coordinate
descent from the catalog's values, sharing one memo of built case groups and predictions),
~15 CPU-s for every source and generation.  The shipped catalog's result is precomputed by
the codegen step ``validation`` into ``_crossval_generated.json`` under
:func:`crossval_key` (``codegen --check`` verifies it); another catalog refits once and
caches the result in capplan's cache folder.

**Speedup-ratio error** (:func:`speedup_pairs`): every workload - the same model shape,
sequence length and precision (the layout, GPU count and batch are the publisher's choice
for each accelerator and are normalised away by comparing throughput per GPU) - published
on two accelerators gives a pair; its error is predicted ratio / published ratio - 1 of the
throughput per GPU of the newer accelerator over the older (:data:`ACCELERATOR_ORDER`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from hardware_catalog import load_catalog
from hardware_catalog.private_cache import Untrusted, write_private
from hardware_catalog.toml_cache import cache_dir
from planner.analysis import calibration as c
from planner.analysis import transfer
from planner.analysis import validate as v

# ---- sources ---------------------------------------------------------------------------

#: A GitHub repository cited first in a source cell ("owner/name@commit", "owner/name README").
_REPO = re.compile(r"^([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@|\s)")
_URL = re.compile(r"https?://([\w.-]+)/([\w.-]+)")
_ARXIV = re.compile(r"arXiv[: ]\s*(\d{4}\.\d{4,5})", re.I)
#: Publications that appear under two names: NVIDIA's NeMo performance-summary page on
#: docs.nvidia.com is the Megatron-Bridge repository's docs/performance-summary.md, published.
#: The NeMo-Framework-Launcher README held the NeMo performance tables of 24.03 and 24.05,
#: before they moved into the NVIDIA/NeMo repository's docs (24.07).
SOURCE_ALIASES = {"docs.nvidia.com/nemo-framework": "NVIDIA-NeMo/Megatron-Bridge",
                  "NVIDIA/NeMo-Framework-Launcher": "NVIDIA/NeMo"}


def source_of(text: str) -> str:
    """The source (unit of leave-one-source-out) of a ``source`` cell, by the first rule
    that applies: the GitHub repository the cell starts with (``owner/name``); else the
    documentation site of a URL (host and first path part); else the arXiv paper
    (``arXiv:NNNN.NNNNN``); else the cell's first 40 characters.  :data:`SOURCE_ALIASES`
    merges two names of one publication."""
    text = str(text or "").strip()
    if m := _REPO.match(text):
        name = m.group(1)
    elif m := _URL.search(text):
        name = f"{m.group(1)}/{m.group(2)}"
    elif m := _ARXIV.search(text):
        name = f"arXiv:{m.group(1)}"
    else:
        name = text[:40]
    return SOURCE_ALIASES.get(name, name)


#: The commit a source cell's first clause pins ("owner/name@<hex> path, table ...").
_COMMIT = re.compile(r"@([0-9a-f]{7,40})\b")


def publication_of(text: str) -> str:
    """The publication a ``source`` cell cites: its source (:func:`source_of`) at the
    commit the cell's first clause pins, if any - one release of a repository's tables,
    measured with one release of its software; a page or a paper is one version."""
    text = str(text or "")
    commit = _COMMIT.search(text.split(",")[0])
    return source_of(text) + (f"@{commit.group(1)[:7]}" if commit else "")


# ---- accelerators ----------------------------------------------------------------------

#: Accelerator generations whose calibrated parameters are shared (calibration.py's owner
#: tuples): the units of leave-one-accelerator-out.
GENERATIONS = {"A100": c.A100, "Hopper": c.HOPPER, "Blackwell": c.BLACKWELL}
#: Older to newer: a speedup is the later accelerator's throughput over the earlier one's.
ACCELERATOR_ORDER = ("v100-32gb", "a100-40gb", "a100-80gb", "gt-h100-96gb", "h800", "h100-sxm", "h200", "gh200",
                     "b200", "gb200", "b300", "gb300")


def generation_of(hardware: str) -> str:
    """The generation (:data:`GENERATIONS`) of an accelerator id, else the id itself."""
    return next((g for g, ids in GENERATIONS.items() if hardware in ids), hardware)


def _owned_by(key, ids) -> bool:
    """Whether a GRID key's owners are only the accelerators ``ids`` or a stack on them
    (``stack:S@hw``); a stack in general or ``*`` belongs to every accelerator."""
    accelerators = [o.partition("@")[2] if o.startswith("stack:") else o for o in key[0]]
    return all(a in ids for a in accelerators)


#: Priors from published measurements of other systems, for an accelerator parameter no
#: other generation has (``held_out_prior``).  ``host_launch_factor``, the Grace host's
#: kernel-launch time over an x86 host's: Vellaisamy et al. 2025 (ISPASS,
#: arXiv:2504.11750, abstract) find GH200 (Grace + H100) CPU-bound up to a 4x larger batch
#: than x86 PCIe A100/H100 systems, and its GPU 1.9-2.7x faster at large batch (prefill).
#: At the crossing the host's time per step equals the GPU's, which grows with the batch,
#: so the Grace host takes 4 / (1.9..2.7) = 1.5-2.1 times as long: the geometric middle,
#: 4 / sqrt(1.9 x 2.7) = 1.77.  (The catalog's 2.5 is fitted on the GB200/GB300 rows the
#: leave-one-accelerator-out split holds out.)
EXTERNAL_PRIORS = {"host_launch_factor": 4 / np.sqrt(1.9 * 2.7)}


def held_out_prior(values: dict, ids, measured: dict | None = None) -> dict:
    """``values`` with the parameters only the accelerators ``ids`` own replaced by a prior
    no row on them informed: a GEMM efficiency with a matmul benchmark in ``measured``
    (:func:`planner.analysis.transfer.measured_by_key`) takes the benchmark rule of
    :mod:`planner.analysis.transfer` with the ratio of the other generations - the rule the
    catalog's uncalibrated parts get; another accelerator parameter takes the mean of the
    same parameter of the other accelerators of ``GRID`` (none: the published prior of
    :data:`EXTERNAL_PRIORS`, else 1.0); a stack's value on one of them (``stack:S@hw``) takes
    the stack's general value of ``GRID`` (none: 1.0, the neutral share of a GEMM efficiency
    factor)."""
    out = dict(values)
    measured = measured or {}
    for key in values:
        if not _owned_by(key, ids):
            continue
        owners, name = key
        if key in measured:
            out[key] = measured[key] * transfer.transfer_ratio(values, measured, exclude=ids,
                                                                field=name)
            continue
        if owners[0].startswith("stack:"):
            stack = owners[0].partition("@")[0]
            same = [x for k, x in values.items() if k[1] == name and stack in k[0]]
        else:
            same = [x for k, x in values.items() if k[1] == name and not _owned_by(k, ids)
                    and not k[0][0].startswith(("stack:", "*"))]
        out[key] = float(np.mean(same)) if same else float(EXTERNAL_PRIORS.get(name, 1.0))
    return out


# ---- the refits --------------------------------------------------------------------------

def leave_one_out(cases, units: pd.Series, catalog=None, priors=None, memo=None):
    """Predictions of each unit's rows by a calibration (``GRID``) fitted without them.

    ``units``: each case's unit (NaN: never left out); ``priors(unit, values)``: the
    start values of a refit without ``unit`` and the GRID keys it keeps fixed (default:
    the catalog's values, none fixed).  Returns a Series indexed like ``cases`` (NaN for
    rows not predicted) and the fitted rows' count per unit left out.
    """
    catalog = catalog or load_catalog()
    cases = v.with_shape_defaults(cases)
    start = c.start_values(catalog)
    train_all = c.fit_cases(cases[cases.dataset.isin(c.FIT_DATASETS)])
    out = pd.Series(np.nan, index=cases.index)
    memo = {} if memo is None else memo
    scales = c.gemm_scales(catalog)
    trained = {}
    for name in sorted(units.dropna().unique()):
        held = cases[(units == name) & v.predictable(cases)]
        if held.empty:
            continue
        train = train_all[units.loc[train_all.index] != name]
        values, fixed = (start, ()) if priors is None else priors(name, start)
        grid = {k: g for k, g in c.GRID.items() if k not in fixed}
        values, _ = c.fit(catalog, verbose=False, rounds=1, cases=train, grid=grid,
                          values=values, memo=memo)
        trained[name] = len(train)
        out.loc[held.index] = v.predict(held, catalog=catalog, params=c.to_params(
            values, scales))["predicted"].to_numpy()
    return out, trained


#: Terms outside ``calibration.GRID`` that one generation's rows were fitted on: Blackwell's
#: grouped-GEMM per-tile costs (``calibration.GROUPED_GEMM_GRID``'s half dimensions, fitted
#: on the Blackwell MoE rows; its tile rows are the tcgen05 instruction's, an architectural
#: fact kept).  A refit without Blackwell takes them from the other generation that has
#: them, Hopper (the accelerator named here), whose come from DeepGEMM's H800
#: micro-benchmark tables rather than from rows - the other-generations rule of
#: :func:`held_out_prior`.
SHAPE_TERMS = {"Blackwell": ("h100-sxm", tuple(k for k in c.GROUPED_GEMM_GRID
                                               if k[1].endswith("_half_dim")))}


def shape_term_priors(catalog) -> dict[str, dict]:
    """Per generation of :data:`SHAPE_TERMS`: its shape-term keys and their prior values."""
    out = {}
    for generation, (reference, keys) in SHAPE_TERMS.items():
        accelerator = catalog.accelerator(reference)
        out[generation] = {k: float(getattr(accelerator, k[1]).value) for k in keys}
    return out


def generation_priors(name: str, start: dict, shape_priors: dict | None = None,
                      measured: dict | None = None) -> tuple[dict, tuple]:
    """Start values and fixed keys of a refit without generation ``name``; ``shape_priors``
    (:func:`shape_term_priors`) adds the generation's terms fitted outside ``GRID``,
    ``measured`` the generations' matmul benchmarks (:func:`held_out_prior`)."""
    ids = GENERATIONS.get(name, (name,))
    values = held_out_prior(start, ids, measured)
    extra = (shape_priors or {}).get(name, {})
    return {**values, **extra}, tuple(k for k in start if _owned_by(k, ids)) + tuple(extra)


def prior_rows(catalog=None) -> list[dict]:
    """For each generation of :data:`GENERATIONS`, every parameter a refit without it keeps
    at a prior (:func:`generation_priors`): the calibrated value, the prior and how far
    apart they are - the error the leave-one-accelerator-out split starts from.  A GEMM
    efficiency also shows its generation's matmul benchmark (MAMF / peak) and the ratio
    of the calibrated value to it, the ratio the transfer rule averages over the other
    generations (:mod:`planner.analysis.transfer`)."""
    catalog = catalog or load_catalog()
    start = c.start_values(catalog)
    # the shape terms a generation was fitted on outside GRID, at their catalog values
    calibrated_values = {**c.start_values(catalog, c.GROUPED_GEMM_GRID), **start}
    measured = transfer.measured_by_key(catalog, c.GRID)
    shape = shape_term_priors(catalog)
    rows = []
    for name in GENERATIONS:
        values, fixed = generation_priors(name, start, shape, measured)
        for key in fixed:
            calibrated, prior = calibrated_values[key], values[key]
            benchmark = measured.get(key)
            owner = key[0][0]
            rows.append({
                "generation": name, "parameter": key[1],
                # a stack's value on this generation's parts, or the parts' own
                "of": owner.partition("@")[0] if owner.startswith("stack:") else "parts",
                "calibrated": calibrated,
                "prior": prior,
                "prior_vs_calibrated_%": 100 * (prior / calibrated - 1) if calibrated
                else float("nan"),
                "mamf_over_peak": benchmark if benchmark is not None else float("nan"),
                "calibrated_over_mamf": calibrated / benchmark if benchmark else float("nan")})
    return rows


def units_of(cases) -> dict[str, pd.Series]:
    """Each case's source and accelerator generation: the units of LOSO and LOAO."""
    return {"loso": cases["source"].map(source_of),
            "loao": cases["hardware"].map(generation_of)}


def split_priors(catalog) -> tuple[tuple[str, object], ...]:
    """Each split with the ``priors`` of its refits (:func:`leave_one_out`): LOSO from the
    catalog's values, LOAO from the held-out generation's priors (:func:`generation_priors`
    with the catalog's shape terms and matmul benchmarks)."""
    loao = partial(generation_priors, shape_priors=shape_term_priors(catalog),
                   measured=transfer.measured_by_key(catalog, c.GRID))
    return (("loso", None), ("loao", loao))


def compute_all(catalog=None) -> dict[str, float]:
    """LOSO and LOAO predictions of every case, keyed ``"<split>/<dataset>/<case_id>"``."""
    cases = v.load_cases(None)
    keys = cases.dataset.astype(str) + "/" + cases.case_id.astype(str)
    units = units_of(cases)
    memo: dict = {}
    out = {}
    catalog = catalog or load_catalog()
    for split, priors in split_priors(catalog):
        pred, _ = leave_one_out(cases, units[split], catalog, priors=priors, memo=memo)
        out.update({f"{split}/{k}": float(p) for k, p in zip(keys, pred, strict=True)
                    if np.isfinite(p)})
    return out


#: The shipped catalog's LOSO and LOAO predictions (codegen step ``validation``).
PRECOMPUTED = Path(__file__).with_name("_crossval_generated.json")


def crossval_key(catalog=None) -> str:
    """Hash of everything the result depends on: the LOFO key's inputs, ``GRID``, this
    module and the benchmark rule of the held-out generations' priors."""
    digest = hashlib.sha256(c.lofo_key(catalog).encode())
    digest.update(repr(sorted(c.GRID.items())).encode())
    digest.update(Path(__file__).read_bytes())
    digest.update(Path(transfer.__file__).read_bytes())
    return digest.hexdigest()[:20]


def precomputed_text(catalog=None) -> str:
    """The text of :data:`PRECOMPUTED` for ``catalog`` (a fresh computation)."""
    return json.dumps({"key": crossval_key(catalog),
                       "predictions": dict(sorted(compute_all(catalog).items()))},
                      indent=0, sort_keys=True) + "\n"


def precomputed_is_fresh() -> bool:
    """Whether :data:`PRECOMPUTED` was computed from the current shipped inputs."""
    try:
        raw = PRECOMPUTED.read_bytes()
    except OSError:
        return False
    return c.parse_saved(raw, crossval_key()) is not None


def predictions(cases, catalog=None) -> dict[str, pd.Series]:
    """LOSO and LOAO predictions of ``cases`` (a validate run): the committed values when
    their key matches, else a result cached under the key, else a fresh computation
    (one line on stderr says so)."""
    catalog = catalog or load_catalog()
    key = crossval_key(catalog)
    keys = (cases.dataset.astype(str) + "/" + cases.case_id.astype(str)).tolist()
    folder = cache_dir()
    path = folder / f"crossval-{key}.json" if folder is not None else None
    saved = None
    for where, private in ((PRECOMPUTED, False), (path, True)):
        if where is not None and (saved := c.read_saved(where, key, private=private)):
            break
    if saved is None:
        sys.stderr.write("capplan: validate --lofo: refitting the calibration without each "
                         "source and accelerator generation (~15 s; not precomputed for "
                         "this catalog, cached once done)\n")
        saved = compute_all(catalog)
        if path is not None:
            try:
                write_private(path, json.dumps({"key": key, "predictions": saved}).encode())
            except (Untrusted, OSError):  # a cache that cannot be written is only slower
                pass
    return {split: pd.Series([saved.get(f"{split}/{k}", np.nan) for k in keys],
                             index=cases.index, dtype=float) for split in ("loso", "loao")}


# ---- speedups between accelerators ------------------------------------------------------

#: The columns that make two rows the same workload (with their shape defaults), and the
#: MoE routing a row states (token dropping; forced balance: ``expert_load_cv`` = 0).
WORKLOAD = ("layers", "hidden", "heads", "kv_heads", "ffn", "mlp_matrices", "vocab",
            "experts", "experts_per_token", "moe_ffn", "moe_layers", "seq_len", "precision",
            "token_drop", "forced_balance")


def _rank(hardware: str) -> int:
    return ACCELERATOR_ORDER.index(hardware) if hardware in ACCELERATOR_ORDER else \
        len(ACCELERATOR_ORDER)


def throughput_error(pred, column: str = "predicted") -> pd.Series:
    """Predicted (``column``) / published throughput per GPU of each row (its metric's
    error turned into a throughput ratio: step times invert)."""
    ratio = pred[column] / pred["measured"]
    return ratio.where(pred["metric"] != "step_time_s", 1 / ratio)


def speedup_pairs(pred, column: str = "predicted") -> list[dict]:
    """Every workload (:data:`WORKLOAD`) published on two accelerators, as pairs.

    For each workload and pair of accelerators, each row on the accelerator with fewer
    rows is paired with a row on the other from the same publication
    (:func:`publication_of`) where there is one - the publisher's own comparison, with one
    release of its software on both - then with the nearest GPU count, then the same stack,
    then the first case id: a row is paired at most once per pair of accelerators on its
    side, and a layout sweep on one accelerator does not multiply the pairs.
    ``error`` = predicted ratio / published ratio - 1 of the later accelerator's
    throughput per GPU over the earlier one's; ``published_ratio`` from the rows' measured
    throughput per GPU (tokens/s from the predicted step time and the row's error).
    ``column``: the predictions whose ratios are compared (``loao_predicted``: each
    generation's rows predicted by a calibration that never saw that generation).
    """
    ok = pred[np.isfinite(pred["predicted"]) & np.isfinite(pred["measured"])
              & (pred["measured"] > 0) & np.isfinite(pred[column])].copy()
    if ok.empty:
        return []
    ok["tput_error"] = throughput_error(ok, column)
    ok["published_tokens_per_s"] = (ok.global_batch * ok.seq_len / (ok.step_time_s * ok.gpus)
                                    / throughput_error(ok))
    ok["token_drop"] = ok.get("token_drop", pd.Series(0.0, index=ok.index)).fillna(0.0)
    ok["forced_balance"] = ok.get("expert_load_cv", pd.Series(np.nan, index=ok.index)) == 0
    ok["workload_key"] = list(zip(*(ok[k].tolist() for k in WORKLOAD), strict=True))
    ok["model"] = ok.get("model", pd.Series("", index=ok.index))
    ok["publication"] = ok.get("source", pd.Series("", index=ok.index)).map(publication_of)
    # the columns read below only
    ok = ok[["workload_key", "dataset", "case_id", "hardware", "gpus", "stack", "precision",
             "experts", "model", "layers", "hidden", "seq_len", "published_tokens_per_s",
             "tput_error", "publication"]]
    workloads: dict[tuple, list] = {}
    for r in ok.to_dict("records"):
        workloads.setdefault(r["workload_key"], []).append(SimpleNamespace(**r))
    rows = []
    for w in workloads.values():
        accs = sorted({r.hardware for r in w}, key=lambda h: (_rank(h), h))
        for i, old in enumerate(accs):
            for new in accs[i + 1:]:
                a = [r for r in w if r.hardware == old]
                b = [r for r in w if r.hardware == new]
                few, many = (a, b) if len(a) <= len(b) else (b, a)
                for r in few:
                    m = min(many, key=lambda s, r=r: (
                        s.publication != r.publication, abs(np.log2(s.gpus / r.gpus)),
                        s.stack != r.stack, s.case_id))
                    o, n = (r, m) if r.hardware == old else (m, r)
                    published = n.published_tokens_per_s / o.published_tokens_per_s
                    error = n.tput_error / o.tput_error - 1
                    rows.append({
                        "workload": _workload_name(n), "precision": n.precision,
                        "moe": bool(n.experts > 1), "older": old, "newer": new,
                        "older_case": f"{o.dataset}/{o.case_id}",
                        "newer_case": f"{n.dataset}/{n.case_id}",
                        "same_publication": o.publication == n.publication,
                        "published_ratio": float(published),
                        "predicted_ratio": float(published * (1 + error)),
                        "error": float(error)})
    return rows


def _workload_name(r) -> str:
    """A short name of a workload: the row's model when it has one, else its shape."""
    model = getattr(r, "model", None)
    if isinstance(model, str) and model:
        return f"{model} s={int(r.seq_len)}"
    return f"L{int(r.layers)} h{int(r.hidden)} s={int(r.seq_len)}"


def speedup_summary(pairs: list[dict]) -> dict:
    """Mean |error| over the pairs (all, dense, MoE; those within one publication and
    those across two), bias and the extremes."""
    def stats(rows):
        e = np.array([p["error"] for p in rows], float)
        if not len(e):
            return {"pairs": 0, "mean_abs_error": float("nan"), "bias": float("nan"),
                    "max_error": float("nan")}
        return {"pairs": int(len(e)), "mean_abs_error": float(np.abs(e).mean()),
                "bias": float(e.mean()), "max_error": float(e[np.argmax(np.abs(e))])}

    return {"all": stats(pairs), "dense": stats([p for p in pairs if not p["moe"]]),
            "moe": stats([p for p in pairs if p["moe"]]),
            "one publication": stats([p for p in pairs if p["same_publication"]]),
            "two publications": stats([p for p in pairs if not p["same_publication"]])}
