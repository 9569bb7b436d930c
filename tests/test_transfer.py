"""GEMM efficiency of uncalibrated parts from their matmul benchmark (planner.analysis.transfer)."""

from __future__ import annotations

import numpy as np
import pytest

from hardware_catalog import CatalogError, load_catalog, parse_file
from hardware_catalog.loader import DATA_DIR
from planner.analysis import calibration, crossval, transfer


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(scope="module")
def calibrated(cat):
    values = calibration.start_values(cat)
    return values, transfer.measured_by_key(cat, values)


#: The MAMF table (stas00/ml-engineering, compute/accelerator/README.md): accelerator,
#: precision, published efficiency where the table's theoretical peak is the catalog's.
PUBLISHED = [("a100-80gb", "bf16", 0.869), ("h100-sxm", "bf16", 0.803),
             ("b200", "bf16", 0.776), ("b300", "bf16", 0.786), ("gb200", "bf16", 0.729),
             ("gaudi2", "bf16", 0.969), ("h100-sxm", "fp8", 0.709), ("h200", "fp8", 0.734),
             ("b200", "fp8", 0.763), ("gb200", "fp8", 0.723), ("gaudi2", "fp8", 0.955)]


@pytest.mark.parametrize("acc, precision, published", PUBLISHED)
def test_measured_efficiency_is_the_published_share_of_peak(cat, acc, precision, published):
    measured = transfer.measured_efficiency(cat.accelerator(acc), precision)
    assert measured == pytest.approx(published, abs=6e-4)


def test_unmeasured_precision_has_no_efficiency(cat):
    assert transfer.measured_efficiency(cat.accelerator("a100-80gb"), "fp8") is None
    assert transfer.measured_efficiency(cat.accelerator("tpu-v5p"), "bf16") is None


def test_ratio_is_the_mean_of_calibrated_over_measured():
    a, b = (("x",), "gemm_max_efficiency"), (("y",), "gemm_max_efficiency_fp8")
    values, measured = {a: 0.8, b: 0.6}, {a: 0.8, b: 0.75}
    assert transfer.transfer_ratio(values, measured) == pytest.approx((1.0 + 0.8) / 2)
    assert transfer.transfer_ratio(values, measured, exclude=("x",)) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="no calibrated GEMM efficiency"):
        transfer.transfer_ratio(values, measured, exclude=("x", "y"))


def test_ratio_of_one_precision_falls_back_to_every_precision():
    """A precision's ratio is that precision's calibrated pairs; one no pair has (FP4, or
    FP8 with its only calibrated generation left out) takes every precision's."""
    a, b, c = ((("x",), "gemm_max_efficiency"), (("y",), "gemm_max_efficiency"),
               (("y",), "gemm_max_efficiency_fp8"))
    values, measured = {a: 0.8, b: 0.9, c: 0.6}, {a: 0.8, b: 1.0, c: 0.75}
    assert transfer.transfer_ratio(values, measured, field=a[1]) == pytest.approx(0.95)
    assert transfer.transfer_ratio(values, measured, field=c[1]) == pytest.approx(0.8)
    assert transfer.transfer_ratio(values, measured, exclude=("x",), field=a[1]) \
        == pytest.approx(0.9)
    assert transfer.transfer_ratio(values, measured, exclude=("y",), field=c[1]) \
        == pytest.approx(1.0)
    every = (1.0 + 0.9 + 0.8) / 3
    assert transfer.transfer_ratio(values, measured, field="gemm_max_efficiency_fp4") \
        == pytest.approx(every)


def test_calibrated_keys_with_a_benchmark(calibrated):
    values, measured = calibrated
    names = {(owners, name) for owners, name in measured}
    assert names == {(calibration.A100, "gemm_max_efficiency"),
                     (calibration.HOPPER, "gemm_max_efficiency"),
                     (calibration.HOPPER, "gemm_max_efficiency_fp8"),
                     (calibration.BLACKWELL, "gemm_max_efficiency"),
                     (calibration.BLACKWELL, "gemm_max_efficiency_fp8")}
    # the calibrated pairs spread around the ratio the rule uses (documented 0.85-1.04)
    ratios = [values[k] / m for k, m in measured.items()]
    assert 0.84 < min(ratios) and max(ratios) < 1.05
    assert transfer.transfer_ratio(values, measured) == pytest.approx(np.mean(ratios))


def test_catalog_values_of_uncalibrated_parts_follow_the_rule(cat, calibrated):
    """Every part measured at a precision no training row calibrated ships the rule's value,
    and its source says so; re-run the rule after a calibration moves a fitted value."""
    values, measured = calibrated
    found = list(transfer.uncalibrated(cat, values))
    assert {(a, p) for a, p, _ in found} >= {("gaudi2", "bf16"), ("gaudi2", "fp8"),
                                              ("gaudi3", "bf16"), ("mi355x", "bf16"),
                                              ("mi300x", "bf16"), ("gb200", "fp4")}
    for acc, precision, field in found:
        q = getattr(cat.accelerator(acc), field)
        rule = transfer.derived_efficiency(cat, acc, precision, values, measured)
        assert q.value == pytest.approx(rule, abs=5e-4), (acc, field)
        assert q.source.startswith("derived by planner.analysis.transfer") and q.estimate


def test_same_silicon_borrows_the_derived_value(cat):
    assert (cat.accelerator("mi350x").gemm_max_efficiency.value
            == cat.accelerator("mi355x").gemm_max_efficiency.value)
    assert (cat.accelerator("b200").gemm_max_efficiency_fp4.value
            == cat.accelerator("gb200").gemm_max_efficiency_fp4.value)


def test_held_out_generation_takes_the_rule_with_the_other_generations(cat, calibrated):
    """Leave-one-accelerator-out: Hopper's GEMM efficiencies start from its benchmark times
    the ratio of A100 and Blackwell alone at the same precision; the parameters it does not
    own keep theirs."""
    values, measured = calibrated
    prior, fixed = crossval.generation_priors("Hopper", values, measured=measured)
    for name in ("gemm_max_efficiency", "gemm_max_efficiency_fp8"):
        others = [values[k] / m for k, m in measured.items()
                  if k[0] != calibration.HOPPER and k[1] == name]
        key = (calibration.HOPPER, name)
        assert prior[key] == pytest.approx(measured[key] * np.mean(others))
        assert key in fixed
    a100 = (calibration.A100, "gemm_max_efficiency")
    assert prior[a100] == values[a100] and a100 not in fixed
    # without benchmarks the earlier rule holds: the other generations' mean
    plain, _ = crossval.generation_priors("Hopper", values)
    key = (calibration.HOPPER, "gemm_max_efficiency")
    assert plain[key] == pytest.approx(np.mean([values[a100],
                                                values[(calibration.BLACKWELL, key[1])]]))


@pytest.mark.parametrize("line, message", [
    ('mamf_fp4_flops_per_s = { value = 1e15, source = "a test sweep", as_of = 2025-01-01, estimate = false }',
     "mamf_fp4_flops_per_s: the part has no FP4 peak"),
    ('mamf_bf16_flops_per_s = { value = 2e15, source = "a test sweep", as_of = 2025-01-01, estimate = false }',
     "mamf_bf16_flops_per_s.value: expected a measured rate above 0 and at most the BF16 peak"),
])
def test_benchmark_fields_are_validated(tmp_path, line, message):
    text = (DATA_DIR / "accelerators" / "h100-sxm.toml").read_text()
    field = line.split(" = ")[0]
    clean = "\n".join(x for x in text.splitlines() if not x.startswith(field))
    path = tmp_path / "h100-sxm.toml"
    path.write_text(clean.replace("gemm_half_efficiency_dim = ",
                                  line + "\ngemm_half_efficiency_dim = ", 1) + "\n")
    with pytest.raises(CatalogError) as exc:
        parse_file(path)
    assert message in str(exc.value) and "\n" not in str(exc.value)


# ---- parts of one generation: their own benchmark's share of the generation's --------------

def test_gb200_takes_its_benchmark_share_of_blackwell(cat):
    # MAMF / peak (stas00/ml-engineering): B200 0.776, B300 0.786 (one rated peak, averaged),
    # GB200 0.729; the generation's mean 0.764: GB200 0.955 and B200/B300 1.023 of its value
    scales = transfer.part_scales(cat, calibration.BLACKWELL, "gemm_max_efficiency")
    mean = (0.7756 + 0.7862 + 0.7288) / 3
    assert scales["gb200"] == pytest.approx(0.7288 / mean, abs=1e-3)
    assert scales["b200"] == scales["b300"] == pytest.approx((0.7756 + 0.7862) / 2 / mean,
                                                             abs=1e-3)
    assert scales["gb300"] == 1.0  # no benchmark: the generation's value
    # the shares average to one over the measured parts: the generation's value is kept
    assert np.mean([scales[a] for a in ("b200", "b300", "gb200")]) == pytest.approx(1.0)
    # the rated peaks say GB200 / B200 = 1.11; with the shares 1.04, the benchmarks' ratio
    # (B200's share averaged with B300's)
    b200, gb200 = cat.accelerator("b200"), cat.accelerator("gb200")
    rated = gb200.peak_bf16_flops_per_s.value / b200.peak_bf16_flops_per_s.value
    assert rated == pytest.approx(1.111, abs=1e-3)
    assert rated * scales["gb200"] / scales["b200"] == pytest.approx(
        1822.0 / ((1745.0 + 1769.0) / 2), abs=1e-3)


def test_one_die_at_one_clock_shares_one_value(cat):
    # H100 SXM and H200 (the same GH100 at the same clock): one rated peak, one share
    for field in ("gemm_max_efficiency", "gemm_max_efficiency_fp8"):
        scales = transfer.part_scales(cat, calibration.HOPPER, field)
        assert set(scales.values()) == {1.0}


@pytest.mark.parametrize("key", [k for k in calibration.GRID if k[1] in transfer.FIELDS.values()
                                 and not k[0][0].startswith(("stack:", "*"))])
def test_shipped_parts_follow_their_share(cat, key):
    """Each part's catalog value is its generation's value times its share (4 significant
    digits as benchmarks/calibrate.py --write stores them), and start_values -> to_params
    gives the catalog's values back."""
    owners, name = key
    value = calibration.start_values(cat, {key: []})[key]
    scales = transfer.part_scales(cat, owners, name)
    params = calibration.to_params({key: value}, calibration.gemm_scales(cat))
    for acc in owners:
        shipped = getattr(cat.accelerator(acc), name).value
        assert shipped == pytest.approx(value * scales[acc], rel=1e-3)
        param_key = acc if name == "gemm_max_efficiency" else \
            f"{acc}:{name[len(calibration.PRECISION_SUFFIX):]}"
        assert params[param_key]["gemm_max_efficiency"] == pytest.approx(shipped, rel=1e-3)
