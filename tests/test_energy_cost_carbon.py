"""Energy, cost and carbon formulas: published runs reproduced, properties, input kinds."""

import csv
from pathlib import Path

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import carbon, cost, energy
from formulas.carbon import embodied_co2e, operational_co2e
from formulas.core import Formula
from formulas.cost import cloud_cost, energy_cost, tco_cost
from formulas.energy import (
    cluster_it_power,
    facility_power,
    gpu_power,
    joules_to_kwh,
    network_power,
    node_power,
)
from formulas.energy import energy as energy_j

# the project's copy of shared/validation/published_runs.csv (source columns kept)
RUNS = (Path(__file__).resolve().parents[1] / "hardware_catalog" / "data" / "validation"
        / "published_runs.csv")
HOUR, DAY, YEAR = 3600.0, 86400.0, 365.25 * 86400.0
MWH = 3.6e9  # J


def _run(run_id):
    with RUNS.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["run_id"] == run_id:
                return row
    raise KeyError(run_id)


def _number(text):
    """Leading number of a CSV cell such as '433.196 (= GPU-h x 400 W TDP, not measured)'."""
    return float(text.split()[0].replace(",", ""))


# ---- published numbers -----------------------------------------------------------------------

def test_gpt3_patterson_table4_energy():
    """Patterson et al. 2021 Table 4, GPT-3: 10,000 V100, 14.8 days, 330 W, PUE 1.10 -> 1,287 MWh."""
    row = _run("gpt3-175b-patterson")
    assert _number(row["energy_MWh"]) == 1287.0 and _number(row["wall_days"]) == 14.8
    it_w = 10_000 * 330.0
    e = energy_j(facility_power(it_w, 1.10), 14.8 * DAY)
    assert joules_to_kwh(e) / 1000 == pytest.approx(1287.0, rel=0.01)  # got 1289.5 MWh


def test_gpt3_patterson_table4_co2e():
    """Patterson et al. 2021 Table 4: 1,287 MWh x 0.429 tCO2e/MWh -> 552 tCO2e."""
    row = _run("gpt3-175b-patterson")
    got_t = operational_co2e(_number(row["energy_MWh"]) * MWH, 429.0) / 1000
    assert got_t == pytest.approx(_number(row["tCO2e"]), rel=0.01)  # 552.1 vs 552
    assert got_t == pytest.approx(552.123, rel=1e-12)


def test_bloom_luccioni_dynamic_energy_and_co2e():
    """Luccioni et al. 2022 Table 1: 1,082,990 GPU-h x 400 W = 433 MWh; x 57 g/kWh = 24.7 t."""
    row = _run("bloom-176b")
    gpu_hours = _number(row["gpu_hours"])
    e = energy_j(400.0, gpu_hours * HOUR)
    assert joules_to_kwh(e) / 1000 == pytest.approx(_number(row["energy_MWh"]), rel=1e-6)
    got_t = operational_co2e(e, 57.0) / 1000
    assert got_t == pytest.approx(_number(row["tCO2e"]), rel=0.01)  # 24.69 vs 24.7


def test_bloom_luccioni_embodied():
    """Luccioni et al. 2022 s4.1: 150 kgCO2e per GPU, ~2,500 kgCO2e per 8-GPU server,
    6-year life at 85 % use -> 11.2 tCO2e embodied (= 50.5 total - 24.7 dynamic - 14.6 idle).
    The per-unit figures are as the paper states them (quoted from memory of the paper)."""
    gpu_hours = _number(_run("bloom-176b")["gpu_hours"])
    per_gpu = 150.0 + 2500.0 / 8
    got_t = embodied_co2e(384, per_gpu, gpu_hours / 384 * HOUR, 6 * 8760 * 0.85 * HOUR) / 1000
    assert got_t == pytest.approx(11.2, rel=0.01)  # got 11.21


def test_starcoder_energy():
    """StarCoderBase: 320,256 GPU-h x 280 W = 89.67 MWh (published_runs.csv)."""
    row = _run("starcoderbase-15b")
    e = energy_j(280.0, _number(row["gpu_hours"]) * HOUR)
    assert joules_to_kwh(e) / 1000 == pytest.approx(_number(row["energy_MWh"]), rel=1e-3)


def test_llama2_rows_share_one_grid_intensity():
    """Llama 2 (Touvron et al. 2023 Table 2): 7B/13B/70B at 400 W give 31.22/62.44/291.42 t.

    Linear in energy, so a single intensity must reproduce all three; it is 423.5 g/kWh.
    """
    rows = [_run(r) for r in ("llama2-7b", "llama2-13b", "llama2-70b")]
    energies = [energy_j(400.0, _number(r["gpu_hours"]) * HOUR) for r in rows]
    published = [_number(r["tCO2e"]) for r in rows]
    intensity = published[0] * 1e6 / joules_to_kwh(energies[0])
    assert intensity == pytest.approx(423.5, abs=0.1)
    for e, t in zip(energies, published, strict=True):
        assert operational_co2e(e, intensity) / 1000 == pytest.approx(t, rel=1e-3)


# ---- worked examples -------------------------------------------------------------------------

def test_power_chain_worked_example():
    # H100 node: 8 GPUs between 100 W idle and 700 W, 60 % busy -> 460 W each
    assert gpu_power(100.0, 700.0, 0.6) == pytest.approx(460.0)
    assert gpu_power(100.0, 700.0, 0.0) == 100.0 and gpu_power(100.0, 700.0, 1.0) == 700.0
    node = node_power(8, 460.0, 2000.0)
    assert node == pytest.approx(5680.0)
    net = network_power(2 * 128 * 8, 15.0)  # 2 ports per NIC, 8 NICs per node
    assert net == pytest.approx(30720.0)
    it = cluster_it_power(128, node, net, 50_000.0)
    assert it == pytest.approx(128 * 5680 + 30720 + 50000)
    assert facility_power(it, 1.2) == pytest.approx(1.2 * it)
    assert joules_to_kwh(energy_j(1000.0, 3600.0)) == pytest.approx(1.0)


def test_cost_worked_examples():
    # 1,024 GPUs for 30 days at 2.50 USD/GPU-h = 1,843,200 USD
    assert cloud_cost(1024, 30 * DAY, 2.5) == pytest.approx(1_843_200.0)
    # 1 GWh at 0.08 USD/kWh = 80,000 USD
    assert energy_cost(1e6 * 3.6e6, 0.08) == pytest.approx(80_000.0)
    # 1,024 GPUs x 30,000 USD over 4 years, held 1 year, 5 %/yr opex, 1 GWh at 0.08 USD/kWh:
    # 30.72M/4 + 0.05 x 30.72M + 80k = 7.68M + 1.536M + 0.08M = 9.296M USD
    got = tco_cost(1024, YEAR, 30_000.0, 4 * YEAR, 1e6 * 3.6e6, 0.08, 0.05)
    assert got == pytest.approx(9_296_000.0, rel=1e-12)
    # holding for the whole lifetime with no opex and no energy pays exactly the capex
    assert tco_cost(8, 3 * YEAR, 25_000.0, 3 * YEAR, 0.0, 0.1, 0.0) == pytest.approx(200_000.0)


def test_embodied_whole_lifetime_is_all_of_it():
    assert embodied_co2e(16, 150.0, 5 * YEAR, 5 * YEAR) == pytest.approx(2400.0)
    assert embodied_co2e(16, 150.0, 0.0, 5 * YEAR) == 0.0


# ---- properties ------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.floats(0, 2000), st.floats(0, 2000), st.floats(0, 1), st.floats(0, 1))
def test_gpu_power_between_idle_and_max_and_monotone(idle, peak, u1, u2):
    lo, hi = min(idle, peak), max(idle, peak)
    p1 = gpu_power(idle, peak, u1)
    assert lo - 1e-9 <= p1 <= hi + 1e-9
    if peak >= idle and u2 >= u1:
        assert gpu_power(idle, peak, u2) >= p1 - 1e-9


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e4), st.floats(0, 1e9), st.floats(1, 1e4), st.floats(0, 1e12),
       st.floats(0, 1), st.floats(0, 1), st.floats(1.0, 10.0))
def test_tco_grows_with_time_and_energy(gpus, time_s, capex, energy_in, price, opex, factor):
    base = tco_cost(gpus, time_s, capex, 4 * YEAR, energy_in, price, opex)
    assert base >= 0
    assert tco_cost(gpus, time_s * factor, capex, 4 * YEAR, energy_in, price, opex) >= base * (1 - 1e-12)
    assert tco_cost(gpus, time_s, capex, 4 * YEAR, energy_in * factor, price, opex) >= base * (1 - 1e-12)
    assert tco_cost(gpus, time_s, capex, 4 * YEAR, energy_in, price, opex) == pytest.approx(
        gpus * capex * time_s * (1 / (4 * YEAR) + opex / YEAR) + energy_cost(energy_in, price),
        rel=1e-12, abs=1e-9)


# ---- symbolic vs numeric, input kinds, domain checks ------------------------------------------

ALL = [f for m in (energy, cost, carbon) for f in vars(m).values() if isinstance(f, Formula)]


def test_every_formula_is_documented():
    names = {f.name for f in ALL}
    assert names == {"gpu_power", "node_power", "cluster_it_power", "network_power",
                     "facility_power", "energy", "joules_to_kwh", "cloud_cost", "tco_cost",
                     "energy_cost", "operational_co2e", "embodied_co2e", "preemption_mtbf",
                     "spot_breakeven_mtbf", "non_gpu_it_power", "gpu_hours",
                     "compute_carbon_intensity", "carbon_delay_product",
                     "embodied_per_accelerator", "facility_usd_per_hour",
                     "ownership_usd_per_hour", "owned_job_cost", "breakeven_utilisation",
                     "payback_months", "phase_gpu_power", "act_chip_embodied",
                     "committed_time"}
    for f in ALL:
        assert f.reference and f.result_unit, f.name
        assert all(a.unit for a in f.arguments), f.units
    assert carbon.operational_co2e.units["return"] == "kgCO2e"
    assert energy.joules_to_kwh.units["return"] == "kWh"


def _random_point(f, rng):
    point = {}
    for a in f.arguments:
        if a.domain == ">=1":
            point[a.name] = float(rng.uniform(1, 3))
        elif a.domain == "[0,1]":
            point[a.name] = float(rng.uniform(0, 1))
        elif a.domain in ("(0,1)", "(0,1]", "[0,1)"):
            point[a.name] = float(rng.uniform(0.05, 0.95))
        else:
            point[a.name] = float(10 ** rng.uniform(-2, 9))
    return point


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(13)
    check_symbolic(f, [_random_point(f, rng) for _ in range(20)], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    point = _random_point(f, np.random.default_rng(17))
    check_input_kinds(f, [point] * 3, exact=True)


def test_integers_give_float64():
    assert isinstance(cloud_cost(1024, 86400, 2), float)
    assert energy_j(np.array([700]), np.array([3600])).dtype == np.float64


@pytest.mark.parametrize("call,arg", [
    (lambda: facility_power(1e6, 0.9), "pue"),
    (lambda: gpu_power(100.0, 700.0, 1.2), "busy_fraction"),
    (lambda: gpu_power(-1.0, 700.0, 0.5), "idle_power_w"),
    (lambda: node_power(8, -460.0, 2000.0), "gpu_power_w"),
    (lambda: cluster_it_power(-1, 5000.0, 0.0, 0.0), "nodes"),
    (lambda: network_power(10, np.array([1.0, -2.0])), "switch_power_per_port_w"),
    (lambda: energy_j(100.0, -1.0), "time_s"),
    (lambda: joules_to_kwh(-1.0), "energy_j"),
    (lambda: cloud_cost(8, 3600.0, -2.0), "price_usd_per_gpu_hour"),
    (lambda: tco_cost(8, 3600.0, 3e4, 0.0, 0.0, 0.1, 0.05), "lifetime_s"),
    (lambda: energy_cost(1e9, -0.1), "electricity_usd_per_kwh"),
    (lambda: operational_co2e(1e9, -5.0), "grid_intensity_g_per_kwh"),
    (lambda: embodied_co2e(8, 150.0, 3600.0, 0.0), "lifetime_s"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
