"""Calibration of the catalog's shared physical parameters, and its cross-validation.

:func:`fit` is the project's calibration (``python benchmarks/calibrate.py`` runs it and,
with ``--write``, records the values in the catalog): a coordinate-descent grid search over
``GRID`` of the mean fit-subset MAPE, each dataset counting once (modern-runs and moe-runs
once per group).  Every parameter is physical and shared: a GEMM efficiency per accelerator
family and precision, a software stack's overlap fractions, attention factor and host launch
time, and two execution terms; nothing belongs to one model, run or release.

:func:`leave_one_family_out` cross-validates it: for each model family (the ``family``
column of a dataset's cases: modern-runs and moe-runs), the parameters of ``LOFO_GRID``
are refitted by the same search on every fit row of every dataset except that family's
rows - wherever they are (Grok-1 and DeepSeek-V3 rows of modern-runs and moe-runs leave
together) - and the family's rows are predicted with the refitted values.  The LOFO error of
a group is the mean absolute error of those predictions.  ``LOFO_GRID`` holds the parameters
the families' rows depend on (Hopper and Blackwell GEMM efficiencies, the Megatron-Core
stacks' overlap, attention and launch terms); the A100-only and eager-2023-stack parameters
no family row touches stay at their catalog values, and the objective is evaluated on the
fit rows those parameters can move (rows on those accelerators or stacks), which is the
same optimum as the full objective at a fraction of the cost.  The search's objective
(:class:`Objective`) builds the cases' kernel inputs once and predicts a group of cases
again only when a trial moves a parameter the group reads, so the refits take a few
CPU-seconds.  The shipped catalog's result is precomputed by the codegen step
``validation`` into ``_lofo_generated.json`` under a hash of everything it depends on
(:func:`lofo_key`; ``codegen --check`` verifies it); ``capplan validate --lofo`` reads it when
the hash matches and otherwise (a user catalog) refits once and caches the result in
capplan's cache folder under the same hash.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from hardware_catalog import load_catalog
from hardware_catalog.private_cache import (
    Untrusted,
    private_folder,
    read_private,
    warn_once,
    write_private,
)
from hardware_catalog.toml_cache import cache_dir
from planner.analysis import transfer
from planner.analysis import validate as v
from planner.engine.inputs.scenario import execution_defaults, stack_factor
from planner.engine.run.kernel import kernel_hash
from planner.engine.run.workload import seconds_text

A100 = ("a100-80gb", "a100-40gb")
HOPPER = ("h100-sxm", "h200", "h800", "gt-h100-96gb", "gh200")  # same GH100 silicon: one value
BLACKWELL = ("b200", "gb200", "b300", "gb300")  # B200/GB200 measured; B300/GB300 share it
#: The PyTorch autocast GEMM path on Hopper relative to Transformer Engine's: one share,
#: fitted on llm-foundry's rows, which the other autocast stacks state they take
#: (torchtitan-fsdp2 and the stacks extending it, deepspeed-zero: "as llm-foundry-2023 on
#: h100-sxm"), so a refit moves, and a leave-one-out split resets, all of them together.
AUTOCAST_HOPPER = (*(f"stack:llm-foundry-2023@{hw}" for hw in ("h100-sxm", "h200", "h800", "gh200")),
                   *(f"stack:{stack}@{hw}" for stack in ("torchtitan-fsdp2",
                                                         "torchtitan-fsdp2-eager",
                                                         "torchtitan-fsdp2-deepep")
                     for hw in HOPPER),
                   "stack:deepspeed-zero@h100-sxm", "stack:deepspeed-zero@h200",
                   "stack:deepspeed-zero@gh200")
#: Stacks by attention kernel and launch path: FlashAttention-2 (eager PyTorch) stacks share
#: one fused-attention factor; every eager stack one launch time.
FA2_STACKS = ("stack:llm-foundry-2023", "stack:torchtitan-fsdp2", "stack:torchtitan-fsdp2-eager",
              "stack:internevo-2023", "stack:megatron-lm-2021")
EAGER_STACKS = (*FA2_STACKS, "stack:megatron-core-2025")
#: torchtitan compiled and eager: one FSDP2 overlap (the same collectives and prefetch)
TORCHTITAN_STACKS = ("stack:torchtitan-fsdp2", "stack:torchtitan-fsdp2-eager")
#: The Megatron-Core stacks share Transformer Engine's kernels and the userbuffers TP overlap:
#: one attention factor and one TP overlap for all of them.
#: The MoE stacks by launch path: eager (NCCL or DeepEP dispatcher, the all-to-all overlap
#: stacks) and CUDA-graphed (DeepEP, NCCL, HybridEP): one set of launch times each; the two
#: all-to-all overlap stacks (DeepEP and NCCL dispatchers) share one ``ep_overlap``.
MOE_A2A_OVERLAP = ("stack:megatron-core-moe-a2a-overlap",
                   "stack:megatron-core-moe-a2a-overlap-alltoall")
MOE_BASELINE = ("stack:megatron-core-moe-baseline", "stack:megatron-core-moe-deepep",
                *MOE_A2A_OVERLAP)
MOE_TUNED = ("stack:megatron-core-moe-tuned", "stack:megatron-core-moe-graphs",
             "stack:megatron-core-moe-hybridep")
MCORE = ("stack:megatron-core-2025", "stack:megatron-bridge-2025", *MOE_BASELINE, *MOE_TUNED)
#: The 2023 eager PyTorch data-parallel stacks (llm-foundry's FSDP, InternLM's ZeRO-1): NCCL
#: reductions on a side stream, competing with backward for SMs and HBM - one overlap.
EAGER_ZERO_2023 = ("stack:llm-foundry-2023", "stack:internevo-2023")
FIT_DATASETS = ("sc21", "vtrain-multi", "vtrain-single", "llm-foundry-a100", "llm-foundry-h100",
                "modern-runs", "moe-runs")
#: Datasets whose objective counts once per group (every group weighs as much as a dataset).
GROUPED = ("modern-runs", "moe-runs")

#: (owners, parameter) -> candidate values.  Owners: accelerator ids, "stack:<id>" (a
#: software stack in hardware_catalog/data/stacks) or "*" (planner/engine/inputs/execution.toml).
#: A ``gemm_max_efficiency_<precision>`` parameter is the kernel's ``gemm_max_efficiency``
#: for the cases of that precision.
GRID: dict[tuple[tuple[str, ...], str], list[float]] = {
    (A100, "gemm_max_efficiency"): [0.74, 0.76, 0.78, 0.79, 0.80, 0.81, 0.82, 0.84, 0.86],
    (HOPPER, "gemm_max_efficiency"): [0.55, 0.575, 0.60, 0.625, 0.65, 0.675, 0.70, 0.725,
                                      0.75, 0.775, 0.80],
    (HOPPER, "gemm_max_efficiency_fp8"): [0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75,
                                          0.80],
    (BLACKWELL, "gemm_max_efficiency"): [0.50, 0.55, 0.575, 0.60, 0.65, 0.70, 0.73, 0.75],
    (BLACKWELL, "gemm_max_efficiency_fp8"): [0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70,
                                             0.75],
    (EAGER_STACKS, "layer_overhead_s"): [3e-4, 5e-4, 7e-4, 8e-4, 8.5e-4, 9e-4, 9.5e-4, 1e-3,
                                         1.2e-3],
    (MOE_BASELINE, "layer_overhead_s"): [5e-4, 8.5e-4, 1.2e-3],
    (MOE_TUNED, "layer_overhead_s"): [1e-4, 2e-4, 4e-4, 6e-4, 8.5e-4],
    (MOE_BASELINE, "moe_layer_overhead_s"): [0.0, 5e-4, 1e-3, 1.5e-3, 2e-3, 3e-3, 4e-3, 6e-3],
    (MOE_TUNED, "moe_layer_overhead_s"): [0.0, 2e-4, 5e-4, 1e-3, 1.5e-3, 2e-3, 3e-3],
    # the experts' GEMMs are outside the partial CUDA graphs (attention, router,
    # preprocess): one per-expert launch time for eager and graphed stacks
    (MOE_BASELINE + MOE_TUNED, "expert_overhead_s"): [0.0, 2e-5, 5e-5, 1e-4, 2e-4, 4e-4],
    (MOE_A2A_OVERLAP, "ep_overlap"): [0.0, 0.25, 0.5, 0.75, 0.9],
    # Grace hosts (GB200/GB300 superchips) launching kernels, relative to x86 hosts
    (("gb200", "gb300"), "host_launch_factor"): [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0],
    # a trained router's spread of the EP ranks' loads (rows not force-balanced)
    (("*",), "expert_load_cv"): [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3],
    (("*",), "host_overlap_exponent"): [2.0, 3.0, 4.0, 6.0],
    (("*",), "attention_fill_keys"): [0.0, 256.0, 512.0, 768.0, 1024.0, 1536.0],
    (("*",), "attention_exp_overlap_exponent"): [2.0, 3.0, 4.0, 6.0, 10.0, 20.0, 50.0],
    (("*",), "collective_overhead_s"): [0.0, 4e-5, 8e-5, 1.2e-4, 1.6e-4, 2e-4],
    (FA2_STACKS, "attention_efficiency_factor"): [0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7,
                                                  0.8],
    # FlashAttention-2 on Hopper (llm-foundry-2023@Hopper attention_efficiency_factor) is not
    # fitted: its value is the published H100 / A100 ratio of FlashAttention-2's fraction of
    # peak (arXiv:2407.08608, arXiv:2307.08691) applied to the FA2 stacks' factor (catalog)
    (AUTOCAST_HOPPER, "gemm_efficiency_factor"): [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95,
                                                  1.0],
    (MCORE, "attention_efficiency_factor"): [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    (MCORE, "tp_overlap"): [0.0, 0.25, 0.5, 0.75, 0.9],
    (EAGER_ZERO_2023, "dp_overlap"): [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
    (TORCHTITAN_STACKS, "dp_overlap"): [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
}
#: The MoE stacks' own parameters (launch times, all-to-all overlap): the 2026-11-26 fit.
#: The joint refit of GRID with moe-runs moved the shared GEMM efficiencies and the
#: Megatron-Core attention factor and TP overlap to absorb MoE terms the run model lacks
#: (dense B200/GB200 5.3 -> 8.9 %, A100 6.2 -> 7.6 %): rejected until they exist.
MOE_STACK_GRID = {key: grid for key, grid in GRID.items()
                  if key[0] in (MOE_BASELINE, MOE_TUNED, MOE_BASELINE + MOE_TUNED)
                  or key[1] in ("ep_overlap", "expert_load_cv", "host_launch_factor")}
#: Blackwell's MoE grouped-GEMM shape terms (formulas.moe.grouped_gemm_efficiency): tile rows
#: along the tokens (2-CTA 256 or 128) and the per-tile costs; Hopper's come from DeepGEMM's
#: H800 tables (catalog), not from the runs.
GROUPED_GEMM_GRID = {
    (BLACKWELL, "grouped_gemm_tile_tokens"): [128.0, 256.0],
    (BLACKWELL, "grouped_gemm_token_half_dim"): [0.0, 55.0, 110.0, 220.0, 330.0, 440.0, 660.0,
                                                   880.0],
    (BLACKWELL, "grouped_gemm_inner_half_dim"): [0.0, 280.0, 560.0, 1120.0, 2240.0],
}
#: The parameters refitted when a family is left out: the shared ones the families' rows
#: depend on (Hopper and Blackwell GEMM efficiencies, the Megatron-Core stacks' attention
#: factor, TP overlap, launch times and all-to-all overlap; Blackwell's grouped-GEMM terms).
LOFO_GRID = {key: grid for key, grid in GRID.items()
             if key[0] in (HOPPER, BLACKWELL, MCORE, MOE_BASELINE, MOE_TUNED,
                           MOE_BASELINE + MOE_TUNED)
             or key[1] == "ep_overlap"} | GROUPED_GEMM_GRID
#: The FP8 GEMM efficiencies with the MoE stacks' own parameters: the 2026-11-27 refit
#: after the attention core moved to the BF16 peak under FP8 (it had run at the FP8 peak,
#: and the FP8 efficiencies had absorbed that); the BF16 and dense-stack values stay.
FP8_GRID = {**MOE_STACK_GRID, **{key: grid for key, grid in GRID.items()
                                 if key[1] == "gemm_max_efficiency_fp8"}}
GRIDS = {"all": GRID, "moe-stacks": MOE_STACK_GRID, "fp8": FP8_GRID,
         "grouped-gemm": GROUPED_GEMM_GRID}
PRECISION_SUFFIX = "gemm_max_efficiency_"


def gemm_scales(catalog=None) -> dict[tuple[str, str], float]:
    """Each accelerator's share of its generation's calibrated GEMM efficiency (its own
    matmul benchmark over the generation's: :func:`planner.analysis.transfer.part_scales`),
    by ``(accelerator id, field)``."""
    return transfer.key_scales(catalog or load_catalog(), GRID)


def start_values(catalog, grid=None) -> dict:
    """The catalog's current value of every parameter of ``grid`` (default ``GRID``); a
    generation's GEMM efficiency is its parts' catalog value over their share of it
    (:func:`gemm_scales`)."""
    execution = execution_defaults()
    scales = gemm_scales(catalog)
    out = {}
    for owners, name in grid or GRID:
        first = owners[0]
        if first == "*":
            out[(owners, name)] = execution[name]
        elif first.startswith("stack:"):
            stack, _, hw = first[6:].partition("@")
            out[(owners, name)] = stack_factor(catalog.stack(stack), name, hw or None).value \
                if name.endswith("_factor") else getattr(catalog.stack(stack), name).value
        else:
            acc = catalog.accelerator(first)
            q = getattr(acc, name, None)
            out[(owners, name)] = (q or acc.gemm_max_efficiency).value \
                / scales.get((first, name), 1.0)
    return out


def to_params(values: dict, scales: dict | None = None) -> dict:
    """``planner.analysis.validate.predict`` params: per accelerator id (``id:precision``
    for one precision), ``stack:<id>`` per software stack, "*" for execution terms; a
    generation's GEMM efficiency times each part's share of it (``scales``, default the
    shipped catalog's :func:`gemm_scales`)."""
    scales = gemm_scales() if scales is None else scales
    params: dict[str, dict] = {}
    for (owners, name), value in values.items():
        for owner in owners:
            key, name_in = owner, name
            if name.startswith(PRECISION_SUFFIX):
                key, name_in = f"{owner}:{name[len(PRECISION_SUFFIX):]}", "gemm_max_efficiency"
            params.setdefault(key, {})[name_in] = float(value) * scales.get((owner, name), 1.0)
    return params


def case_labels(cases):
    """The set each case counts in: its dataset, and for the grouped datasets its group
    (each group counts once, as each dataset does)."""
    group = cases["group"].astype(str) if "group" in cases else ""
    return cases.dataset.where(~cases.dataset.isin(GROUPED), cases.dataset + "/" + group)


def case_errors(pred):
    """Absolute relative errors with the set each counts in (:func:`case_labels`)."""
    return (pred.predicted / pred.measured - 1).abs(), case_labels(pred)


def objective(cases, catalog, values) -> float:
    """Mean over datasets (grouped datasets: over their groups) of the fit-subset MAPE."""
    pred = v.predict(cases, catalog=catalog, params=to_params(values, gemm_scales(catalog)))
    err, label = case_errors(pred)
    return float(err.groupby(label).mean().mean())


class Objective:
    """:func:`objective` of fixed ``cases`` for many ``values``, as a search calls it.

    The cases' kernel inputs are built once (``validate.case_groups``), and a group of cases
    is predicted again only for a set of the parameters it reads that ``memo`` has not seen
    (a trial of one parameter moves the groups on its accelerator or stack only).  ``memo``
    (``{"groups": ..., "predicted": ...}``, filled as it goes) may be shared by objectives
    whose cases come from one frame (the refits of :func:`leave_one_family_out`): a group is
    known by its cases' index labels.  The means are summed as pandas'
    ``groupby().mean().mean()`` sums them, so the values are :func:`objective`'s to the last
    bit (tests/test_validation.py checks it).
    """

    def __init__(self, cases, catalog, memo: dict | None = None):
        memo = {} if memo is None else memo
        cases = v.with_shape_defaults(cases)
        self.groups = v.case_groups(cases, catalog, memo.setdefault("groups", {}))
        self.predictions = memo.setdefault("predicted", {})
        self.measured = cases["measured"].to_numpy(float)
        labels, self.label = np.unique(case_labels(cases).to_numpy(str), return_inverse=True)
        self.sets = len(labels)
        self.scales = gemm_scales(catalog)

    def __call__(self, values: dict) -> float:
        params = to_params(values, self.scales)
        predicted = np.full(len(self.measured), np.nan)
        for at, group in self.groups:
            key = (group.name, group.params_read(params))
            if key not in self.predictions:
                self.predictions[key] = group.predicted_for(params)
            predicted[at] = self.predictions[key]
        return _mean_of_means(np.abs(predicted / self.measured - 1), self.label, self.sets)


def _mean_of_means(values: np.ndarray, label: np.ndarray, sets: int) -> float:
    """``pd.Series(values).groupby(label).mean().mean()`` summed as pandas sums it: each
    set's values in order with Kahan compensation, NaN skipped (pandas' cython group
    mean), then numpy's sum of the set means over the sets that have a value."""
    total, compensation, count = [0.0] * sets, [0.0] * sets, [0] * sets
    for value, i in zip(values.tolist(), label.tolist(), strict=True):
        if value != value:  # NaN
            continue
        count[i] += 1
        y = value - compensation[i]
        t = total[i] + y
        compensation[i] = t - total[i] - y
        if compensation[i] != compensation[i]:  # an infinite value: keep it, not NaN
            compensation[i] = 0.0
        total[i] = t
    means = np.array([t / n if n else np.nan for t, n in zip(total, count, strict=True)])
    finite = ~np.isnan(means)
    return float(np.where(finite, means, 0.0).sum() / finite.sum())


def fit_cases(cases):
    """The rows a calibration sees: fit rows that the planner can express."""
    return cases[cases.fit.astype(bool) & v.predictable(cases)]


def fit(catalog=None, verbose=True, rounds: int = 4, cases=None, grid=None, values=None,
        memo: dict | None = None):
    """Coordinate descent over ``grid`` (default ``GRID``) from ``values`` (default the
    catalog's), on the fit rows of ``cases`` (default every FIT dataset); ``memo``: see
    :class:`Objective`."""
    catalog = catalog or load_catalog()
    grid = grid or GRID
    cases = fit_cases(v.load_cases(FIT_DATASETS) if cases is None else cases)
    values = dict(values or start_values(catalog, {**GRID, **grid}))
    objective_of = Objective(cases, catalog, memo)
    best = objective_of(values)
    evaluations, t = 1, time.perf_counter()
    for _ in range(rounds):
        changed = False
        for key, candidates in grid.items():
            for candidate in candidates:
                if candidate == values[key]:
                    continue
                trial = {**values, key: candidate}
                score = objective_of(trial)
                evaluations += 1
                if score < best - 1e-6:
                    best, values, changed = score, trial, True
        if not changed:
            break
    if verbose:
        print(f"fit: {evaluations} evaluations, {time.perf_counter() - t:.1f} s; "
              f"mean fit-subset MAPE {best:.4f}")
        for (owners, name), value in values.items():
            print(f"  {'/'.join(owners)[:40]:40s} {name:28s} {value:.4g}")
    return values, best


def _touched(cases, grid) -> np.ndarray:
    """Rows whose prediction a parameter of ``grid`` can move (its accelerator or stack)."""
    owners = {o for key in grid for o in key[0]}
    if "*" in owners:
        return np.ones(len(cases), bool)
    hardware = {o for o in owners if not o.startswith("stack:")}
    stacks = {o[6:].partition("@")[0] for o in owners if o.startswith("stack:")}
    return (cases["hardware"].isin(hardware) | cases["stack"].isin(stacks)).to_numpy()


def leave_one_family_out(cases, catalog=None, grid=None, rounds: int = 1,
                         verbose: bool = False, progress=None):
    """Predictions of each family's rows by a calibration fitted without that family.

    ``cases`` are every case of the FIT datasets plus any others to cross-validate (with a
    ``family`` column; rows without one are never left out).  Returns a Series of predicted
    values indexed like ``cases`` (NaN for rows without a family or not expressible).
    ``progress(done, total, family)`` is called before each refit.
    """
    import pandas as pd

    catalog = catalog or load_catalog()
    grid = grid or LOFO_GRID
    cases = v.with_shape_defaults(cases)
    start = start_values(catalog, {**GRID, **grid})
    family = cases.get("family", pd.Series(np.nan, index=cases.index))
    train_all = fit_cases(cases[cases.dataset.isin(FIT_DATASETS)])
    train_all = train_all[_touched(train_all, grid)]
    out = pd.Series(np.nan, index=cases.index)
    memo: dict = {}  # the refits share the groups they have in common, and their predictions
    scales = gemm_scales(catalog)
    names = sorted(family.dropna().unique())
    for done, name in enumerate(names):
        held = cases[(family == name) & v.predictable(cases)]
        if held.empty:
            continue
        if progress is not None:
            progress(done, len(names), name)
        train = train_all[train_all.get("family", pd.Series(index=train_all.index)) != name]
        values, _ = fit(catalog, verbose=False, rounds=rounds, cases=train, grid=grid,
                        values=start, memo=memo)
        if verbose:
            moved = {f"{'/'.join(k[0])[:24]}.{k[1]}": round(x, 5) for k, x in values.items()
                     if x != start[k]}
            print(f"  without {name}: {len(held)} rows held out; moved {moved}")
        pred = v.predict(held, catalog=catalog, params=to_params(values, scales))
        out.loc[held.index] = pred["predicted"].to_numpy()
    return out


#: The shipped catalog's leave-one-family-out predictions, written by the codegen step
#: ``validation`` and checked by ``codegen --check``: ``{"key": lofo_key(), "predictions":
#: {"<dataset>/<case_id>": predicted value}}``.  ``capplan validate --lofo`` reads them when
#: the key matches its catalog and refits only when it does not (user catalog overrides).
PRECOMPUTED = Path(__file__).with_name("_lofo_generated.json")
_ROOT = Path(__file__).resolve().parents[2]


def lofo_key_files() -> list[Path]:
    """The files besides the catalog's TOML whose bytes a LOFO result depends on: the
    validation data, the precision recipes, the execution defaults and the code that turns
    cases and choices into inputs and fits (:func:`lofo_key`)."""
    data = _ROOT / "hardware_catalog" / "data"
    inputs = _ROOT / "planner" / "engine" / "inputs"
    files = sorted(p for folder in (data / "validation", data / "precisions")
                   for p in folder.rglob("*") if p.is_file())
    return files + sorted(inputs.glob("*.py")) + [
        inputs / "execution.toml", _ROOT / "planner" / "engine" / "run" / "run_inputs.py",
        Path(__file__).resolve(), Path(v.__file__).resolve()]


def lofo_key(catalog=None) -> str:
    """Hash of everything a LOFO result depends on.

    The catalog as loaded (its version hashes every shipped and user TOML file), the
    validation data (``hardware_catalog/data/validation``), the precision recipes
    (``hardware_catalog/data/precisions``), ``planner/engine/inputs/execution.toml``, the
    calibration grid and fit datasets, the run model (the generated kernel's hash) and the
    code that maps cases and choices to inputs and fits (this module, ``validate.py``,
    ``planner/engine/inputs`` and ``run_inputs.py``).
    """
    catalog = catalog or load_catalog()
    digest = hashlib.sha256()
    digest.update(f"catalog {catalog.version}\0kernel {kernel_hash()}\0".encode())
    digest.update(repr((sorted(LOFO_GRID.items()), FIT_DATASETS, GROUPED)).encode())
    for path in lofo_key_files():
        digest.update(f"{path.relative_to(_ROOT)}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:20]


def compute_all(catalog=None, progress=None) -> dict[str, float]:
    """LOFO predictions of every case of every dataset, keyed ``"<dataset>/<case_id>"``."""
    cases = v.load_cases(None)
    pred = leave_one_family_out(cases, catalog, progress=progress)
    keys = cases.dataset.astype(str) + "/" + cases.case_id.astype(str)
    return {k: float(p) for k, p in zip(keys, pred, strict=True) if np.isfinite(p)}


def precomputed_text(catalog=None) -> str:
    """The text of :data:`PRECOMPUTED` for ``catalog`` (a fresh computation, ~2 min)."""
    saved = compute_all(catalog)
    return json.dumps({"key": lofo_key(catalog), "predictions": dict(sorted(saved.items()))},
                      indent=0, sort_keys=True) + "\n"


def precomputed_is_fresh() -> bool:
    """Whether :data:`PRECOMPUTED` was computed from the current shipped inputs."""
    try:
        raw = PRECOMPUTED.read_bytes()
    except OSError:
        return False
    return parse_saved(raw, lofo_key()) is not None


#: Largest LOFO cache file read back [B] (the shipped one is ~6 kB).
MAX_CACHE_BYTES = 1 << 22


def parse_saved(raw: bytes, key: str) -> dict | None:
    """The predictions of a saved LOFO file under ``key``; None if malformed or stale."""
    try:
        saved = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(saved, dict) or saved.get("key") != key:
        return None
    pred = saved.get("predictions")
    if not isinstance(pred, dict) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in pred.values()):
        return None
    return pred


def read_saved(path, key: str, *, private: bool) -> dict | None:
    """The predictions saved at ``path`` under ``key``; None if absent, stale, malformed or
    (a ``private`` cache file) not a regular file of this user's (see private_cache)."""
    try:
        if private:
            private_folder(path.parent, create=False)
            raw = read_private(path, max_bytes=MAX_CACHE_BYTES)
        else:
            raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except (Untrusted, OSError) as exc:
        warn_once(f"ignoring the cache file {path}: {getattr(exc, 'strerror', None) or exc}")
        return None
    return parse_saved(raw, key)


#: Seconds one leave-one-family-out refit takes, about: 4.4 CPU-s for the 10 refits of
#: :func:`compute_all` (2026-11-29), doubled for a machine shared with other work
#: (docs/performance.md).
REFIT_S = 1.0


class RefitProgress:
    """``progress(done, total, family)`` of :func:`leave_one_family_out` on stderr, on a
    terminal or not (a refit takes about a second, so one line each is a line a second):
    before the first refit, how many there will be and about how long they take; then one
    line per refit with the time elapsed.  ``stream``, ``clock``: for tests."""

    def __init__(self, stream=None, clock=time.monotonic):
        self.stream, self.clock = stream or sys.stderr, clock
        self.started = None

    def __call__(self, done: int, total: int, family: str) -> None:
        if self.started is None:
            self.started = self.clock()
            self.stream.write(
                f"capplan: validate --lofo: refitting the calibration without each of {total} "
                f"model families ({seconds_text(total * REFIT_S)}; not precomputed for this "
                "catalog, cached once done)\n")
        elapsed = round(self.clock() - self.started)
        self.stream.write(f"capplan: validate: refitting the calibration without {family} "
                          f"({done + 1}/{total}), {elapsed} s elapsed\n")
        self.stream.flush()


def lofo_predictions(cases, catalog=None):
    """:func:`leave_one_family_out` for ``cases`` (a validate run): the committed
    :data:`PRECOMPUTED` values when their key matches, else a result cached on disk under
    the key, else a fresh computation (its estimate and progress lines on stderr:
    :class:`RefitProgress`)."""
    import pandas as pd

    family = cases.get("family", pd.Series(np.nan, index=cases.index))
    if not family.notna().any():  # no family to leave out (sc21, vTrain, llm-foundry, ...)
        return pd.Series(np.nan, index=cases.index, dtype=float)
    catalog = catalog or load_catalog()
    key = lofo_key(catalog)
    keys = cases.dataset.astype(str) + "/" + cases.case_id.astype(str)
    wanted = set(keys[family.notna() & v.predictable(cases)])
    folder = cache_dir()
    path = folder / f"lofo-{key}.json" if folder is not None else None
    for source, private in ((PRECOMPUTED, False), (path, True)):
        saved = read_saved(source, key, private=private) if source is not None else None
        if saved is not None and wanted <= set(saved):
            return pd.Series([saved.get(k, np.nan) for k in keys], index=cases.index,
                             dtype=float)
    saved = compute_all(catalog, progress=RefitProgress())
    if path is not None:
        try:
            write_private(path, json.dumps({"key": key, "predictions": saved}).encode())
        except (Untrusted, OSError):  # a cache that cannot be written is only slower
            pass
    return pd.Series([saved.get(k, np.nan) for k in keys], index=cases.index, dtype=float)
