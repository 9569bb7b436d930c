"""Comparable carbon: CCI (arXiv:2502.01671), tCDP (CORDOBA, HPCA 2025), embodied node share."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.carbon import (
    carbon_delay_product,
    compute_carbon_intensity,
    embodied_per_accelerator,
)


def test_cci_unit_conversion_to_grams_per_exaflop():
    # 1 tCO2e on 1e24 FLOP = 1e6 g / 1e6 EFLOP = 1 g/EFLOP
    from planner.engine.run.columns import column, conversion_factor

    kg_per_flop = compute_carbon_intensity(1000.0, 1e24)
    assert kg_per_flop / conversion_factor(column("cci_g_per_eflop")) == pytest.approx(1.0)
    assert carbon_delay_product(1000.0, 86400.0) / conversion_factor(
        column("tcdp_t_d")) == pytest.approx(1.0)  # 1 t x 1 day


def test_embodied_node_share_reproduces_bloom_per_gpu_inputs():
    # Luccioni et al. 2022 (arXiv:2211.02001) s4.1: ~150 kg per GPU, ~2,500 kg per 8-GPU node
    assert embodied_per_accelerator(150.0, 2500.0, 8) == pytest.approx(462.5, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e9), st.floats(1e15, 1e27), st.floats(1.0, 100.0))
def test_cci_and_tcdp_scale_linearly(co2e, flops, k):
    assert compute_carbon_intensity(co2e * k, flops) == pytest.approx(
        k * compute_carbon_intensity(co2e, flops), rel=1e-12, abs=1e-300)
    assert compute_carbon_intensity(co2e, flops * k) <= compute_carbon_intensity(co2e, flops)
    assert carbon_delay_product(co2e, 10.0 * k) == pytest.approx(k * carbon_delay_product(
        co2e, 10.0), rel=1e-12)


def test_kernel_cci_and_tcdp_match_the_formulas(catalog):
    from planner.engine.layouts.evaluator import evaluate

    r = evaluate(catalog=catalog, model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8,
                 pp=4, tokens=15e12).iloc[0]
    useful = float(r["model_flops_per_token"]) * 15e12
    assert float(r["cci_kg_per_flop"]) == pytest.approx(float(r["co2e_kg"]) / useful, rel=1e-9)
    assert float(r["tcdp_kg_s"]) == pytest.approx(
        float(r["co2e_kg"]) * float(r["wall_time_s"]), rel=1e-9)
    # the H100 embodied input now carries the DGX node's share: 150 + 2,500 / 8 kg per GPU;
    # the job's GPUs and its hot spares' (8 GPUs a node) are built
    built_gpus = 1024 + 8 * float(r["spare_nodes"])
    embodied = float(r["co2e_embodied_kg"]) * (4 * 365.25 * 86400) / (
        built_gpus * float(r["wall_time_s"]))
    assert embodied == pytest.approx(462.5, rel=1e-9)


@pytest.fixture(scope="module")
def small_plan(catalog):
    from planner.engine.search.optimize import plan

    return plan(model="llama2-7b", tokens=2e12, hardware=["h100-sxm", "a100-80gb"],
                max_gpus=512, catalog=catalog)


def test_tcdp_and_cci_objectives_are_the_minima_of_their_columns(small_plan):
    frontier = small_plan.frontier
    feasible = frontier[frontier["feasible"]]
    for objective, col in (("tcdp", "tcdp_t_d"), ("cci", "cci_g_per_eflop")):
        best = small_plan.best[objective]
        assert best[col] == pytest.approx(float(np.min(feasible[col])), rel=1e-12)
    # the job's useful FLOPs are fixed, so least CCI is least carbon (the same row)
    assert small_plan.best["cci"]["co2e_t"] == pytest.approx(
        small_plan.best["carbon"]["co2e_t"], rel=1e-12)
    # tCDP trades carbon for time: never slower than the least-carbon plan
    assert small_plan.best["tcdp"]["wall_days"] <= small_plan.best["carbon"]["wall_days"]


def test_act_carbon_per_area_matches_the_act_model_inputs():
    from formulas.carbon import act_chip_embodied

    # ACT (facebookresearch/ACT act/models): 7 nm, EPA 2.15 kWh/cm2, GPA97 = (350 + 200) / 2,
    # MPA 500 g/cm2, Taiwan 583 g/kWh, yield 0.875: LogicModel.get_cpa = 2,318.2 g/cm2
    cpa_g = (583.0 * 2.15 + 275.0 + 500.0) / 0.875
    assert cpa_g == pytest.approx(2318.2, abs=0.1)
    assert act_chip_embodied(1.0, 583.0, 2.15, 275.0, 500.0, 0.875, 0.0, 65.0, 0) * 1000 \
        == pytest.approx(cpa_g, rel=1e-12)
    # plus 150 g per IC package and ACT's DDR4 65 g/GB
    assert act_chip_embodied(0.0, 583.0, 2.15, 275.0, 500.0, 0.875, 80.0, 65.0, 6) \
        == pytest.approx((80 * 65 + 6 * 150) / 1000, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.1, 10), st.floats(0, 800), st.floats(1.0, 2.0))
def test_act_grows_with_die_area_and_fab_intensity(area, ci, k):
    from formulas.carbon import act_chip_embodied

    base = act_chip_embodied(area, ci, 2.75, 327.5, 500.0, 0.875, 80.0, 65.0, 6)
    assert act_chip_embodied(area * k, ci, 2.75, 327.5, 500.0, 0.875, 80.0, 65.0, 6) >= base
    assert act_chip_embodied(area, ci * k + 1, 2.75, 327.5, 500.0, 0.875, 80.0, 65.0, 6) > base
