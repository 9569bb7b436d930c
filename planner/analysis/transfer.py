"""GEMM efficiency of an accelerator no training row calibrated, from its matmul benchmark.

The calibration (:mod:`planner.analysis.calibration`) fits a large-GEMM efficiency per
accelerator generation and precision on published training runs: A100, Hopper and
Blackwell at BF16, Hopper and Blackwell at FP8.  An accelerator without such rows (AMD
Instinct, Intel Gaudi) or a precision without them (NVFP4) has only its kernel benchmark:
the maximum achievable matmul rate (MAMF, the best large GEMM of a shape sweep; catalog
fields ``mamf_<precision>_flops_per_s``).  A training stack's GEMMs reach a share of that
benchmark, and the calibrated generations say how large a share:

    eta_max = (MAMF / peak) x mean over calibrated generations at that precision of
              eta_fit / (MAMF / peak)

where a generation's MAMF / peak is the mean over its parts that were measured.  The ratio
is taken per precision because the calibrated pairs group by it: at BF16 0.85-1.00 (A100,
Hopper, Blackwell), at FP8 1.01-1.04 (Hopper, Blackwell), the FP8 GEMMs of training stacks
reaching a larger share of their benchmark than the BF16 ones; a precision no generation
calibrated (FP4) takes the mean over every precision.  In the leave-one-accelerator-out
split the per-precision rule starts the left-out generations' GEMM efficiencies 6.2 % from
their calibrated values on average (one ratio for every precision: 8.7 %; measured
2026-11-30).  The spread left is covered by the GEMM efficiency's uncertainty
(``uncertainty.toml``).  The same rule gives a held-out generation its prior in the
leave-one-accelerator-out split (:func:`planner.analysis.crossval.held_out_prior`), so that
split measures the error of the values the catalog ships for uncalibrated parts.

MAMF: S. Bekman, *Machine Learning Engineering*, "Maximum Achievable Matmul FLOPS comparison
table" (github.com/stas00/ml-engineering, compute/accelerator/README.md), one benchmark
(``mamf-finder.py``) run on every part.
"""

from __future__ import annotations

import numpy as np

#: The kernel input set by each precision's catalog field, and the peak it is a share of.
FIELDS = {"bf16": "gemm_max_efficiency", "fp8": "gemm_max_efficiency_fp8",
          "fp4": "gemm_max_efficiency_fp4"}


def precision_of(field: str) -> str:
    """The precision of a ``gemm_max_efficiency[_<precision>]`` name."""
    return next(p for p, f in FIELDS.items() if f == field)


def measured_efficiency(accelerator, precision: str) -> float | None:
    """MAMF / peak of one part at ``precision`` [1]; None when not measured."""
    mamf = getattr(accelerator, f"mamf_{precision}_flops_per_s", None)
    peak = getattr(accelerator, f"peak_{precision}_flops_per_s", None)
    if mamf is None or peak is None:
        return None
    return float(mamf.value / peak.value)


def generation_efficiency(catalog, ids, precision: str) -> float | None:
    """Mean MAMF / peak of the parts ``ids`` that were measured at ``precision`` [1]."""
    found = [e for i in ids if (e := measured_efficiency(catalog.accelerator(i), precision))
             is not None]
    return float(np.mean(found)) if found else None


def part_scales(catalog, owners, field: str) -> dict[str, float]:
    """The share of its generation's GEMM efficiency each part of ``owners`` reaches [1].

    A generation's calibrated efficiency is a share of its measured MAMF / peak
    (:func:`generation_efficiency`); a part with a benchmark of its own reaches that share of
    its own MAMF / peak, averaged over the generation's measured parts with the same
    datasheet peak (one die at one clock: H100 SXM and H200 differ in memory only), so it
    takes the generation's value times that over the generation's mean.  GB200's datasheet
    peaks are 11 % above B200's (a 2.06 against a 1.86 GHz tensor clock on the same 148
    SMs) while the benchmark measures 4-5 % (BF16 1,822 against 1,745 TFLOP/s, FP8 3,616
    against 3,433): its efficiency is 0.95 of Blackwell's, B200's and B300's 1.02.  A part
    without a benchmark (GB300, H800) takes the generation's value."""
    precision = precision_of(field)
    generation = generation_efficiency(catalog, owners, precision)
    if generation is None:
        return {i: 1.0 for i in owners}
    measured = {i: e for i in owners
                if (e := measured_efficiency(catalog.accelerator(i), precision)) is not None}

    def peak(i):
        return float(getattr(catalog.accelerator(i), f"peak_{precision}_flops_per_s").value)

    return {i: (float(np.mean([e for j, e in measured.items() if peak(j) == peak(i)]))
                / generation if i in measured else 1.0) for i in owners}


def key_scales(catalog, keys) -> dict[tuple[str, str], float]:
    """For every GEMM-efficiency calibration key of ``keys`` its accelerators own, each
    ``(accelerator id, field)``'s :func:`part_scales` (other keys: none, a share of 1)."""
    out = {}
    for owners, name in keys:
        if _owned_gemm_efficiency(owners, name):
            out.update({(i, name): s for i, s in part_scales(catalog, owners, name).items()})
    return out


def _owned_gemm_efficiency(owners, name: str) -> bool:
    """Whether a calibration key is a GEMM efficiency its accelerators own (not a stack's
    factor nor an execution term)."""
    return name in FIELDS.values() and not owners[0].startswith(("stack:", "*"))


def measured_by_key(catalog, keys) -> dict:
    """For each calibration key ``(accelerator ids, gemm_max_efficiency[_precision])``, the
    generation's measured MAMF / peak (keys of other parameters or without a measurement
    are left out)."""
    out = {}
    for owners, name in keys:
        if not _owned_gemm_efficiency(owners, name):
            continue
        measured = generation_efficiency(catalog, owners, precision_of(name))
        if measured is not None:
            out[(owners, name)] = measured
    return out


def transfer_ratio(values: dict, measured: dict, exclude=(), field: str | None = None) -> float:
    """Mean calibrated efficiency over measured efficiency [1] of the keys of ``measured``
    whose accelerators are not in ``exclude``: those of the catalog field ``field`` (one
    precision) where any is left, else those of every precision."""
    kept = {k: m for k, m in measured.items() if not any(i in exclude for i in k[0])}
    same = {k: m for k, m in kept.items() if k[1] == field}
    ratios = [values[k] / m for k, m in (same or kept).items()]
    if not ratios:
        raise ValueError("no calibrated GEMM efficiency has a matmul benchmark to transfer from")
    return float(np.mean(ratios))


def uncalibrated(catalog, values: dict):
    """Each (accelerator id, precision, catalog field) whose GEMM efficiency the rule
    derives: the part was measured at that precision and no calibration key of ``values``
    owns that field for it."""
    owned = {(acc, name) for owners, name in values for acc in owners}
    for acc in catalog.accelerators:
        for precision, field in FIELDS.items():
            if (acc, field) not in owned and measured_efficiency(
                    catalog.accelerator(acc), precision) is not None:
                yield acc, precision, field


def derived_efficiency(catalog, accelerator_id: str, precision: str, values: dict,
                       measured: dict) -> float | None:
    """The GEMM efficiency the rule gives ``accelerator_id`` at ``precision`` [1] from the
    calibrated ``values`` (:func:`planner.analysis.calibration.start_values`) and their
    ``measured`` efficiencies (:func:`measured_by_key`); None without a benchmark."""
    own = measured_efficiency(catalog.accelerator(accelerator_id), precision)
    if own is None:
        return None
    return own * transfer_ratio(values, measured, field=FIELDS[precision])
