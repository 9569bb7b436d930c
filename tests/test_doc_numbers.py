"""Numbers quoted in prose in README.md and docs/*.md are what the code gives today.

Each test reruns the run a document quotes and compares the quoted, rounded number
with the current output, to the rounding the document shows (stated per test).  When a
model change moves a number, the test names the document and the new value.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli_json(args, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "planner", *args, "-f", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=_env())
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _env():
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_readme_wall_days_is_the_evaluate_result(tmp_path):
    """README: `# wall_days ~N: 15T tokens, as capplan evaluate -m llama3-70b --gpus 1024 says`.

    Tolerance: N is the wall time in whole days (within 1 day), both from the Python
    API and from the command the comment names (no layout given: both search it).
    """
    from planner import evaluate

    text = (ROOT / "README.md").read_text()
    m = re.search(r"wall_days ~([0-9,]+): 15T tokens, as `capplan evaluate -m llama3-70b "
                  r"--gpus 1024` says", text)
    assert m, "README.md no longer quotes wall_days for the evaluate example"
    quoted = float(m.group(1).replace(",", ""))
    df = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024)
    api = float(df.loc[0, "wall_days"])
    assert abs(api - quoted) <= 1.0, f"README.md says wall_days ~{quoted:g}; the API gives {api:.2f}"
    cli = float(_cli_json(["evaluate", "-m", "llama3-70b", "--gpus", "1024"], tmp_path)["wall_days"])
    assert abs(cli - quoted) <= 1.0, f"README.md says wall_days ~{quoted:g}; the CLI gives {cli:.2f}"


def _md_table_after(text, marker):
    """Rows (lists of cells) of the first Markdown table after `marker`."""
    start = text.index(marker)
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("|"):
            rows.append([c.strip().strip("*") for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[0], [r for r in rows[2:]]


def test_distributed_codesign_table_is_the_current_output(tmp_path):
    """docs/distributed.md: the co-design example table and its configuration count.

    Tolerances are the table's rounding: cost to 3 significant figures in M USD, energy
    to the whole MWh, gains to 2 decimals; layouts exactly; the configuration count
    exactly.
    """
    text = (ROOT / "docs" / "distributed.md").read_text()
    cmd = re.search(r"```sh\n(capplan codesign --model llama3-70b[^`]*?)\n```", text).group(1)
    args = cmd.replace("\\\n", " ").split()[1:]
    assert args[args.index("-f") + 1] == "markdown"
    i = args.index("-f")
    del args[i:i + 2]
    out = _cli_json(args, tmp_path)
    header, rows = _md_table_after(text, "| point | HBM |")
    assert header[4:] == ["cheapest run", "least energy", "cost-optimal layout", "cost gain",
                          "energy gain"]
    points = {p["point"]: p for p in out["points"]}
    base_cost = points[0]["best"]["cost"]["cost_usd"]
    base_mwh = points[0]["best"]["energy"]["energy_mwh"]
    assert rows, "no table rows"
    for row in rows:
        p = points[0 if row[0] == "catalog" else int(row[0])]
        cost = p["best"]["cost"]
        mwh = p["best"]["energy"]["energy_mwh"]
        doc_cost = float(row[4].removesuffix(" M USD"))
        assert f"{cost['cost_usd'] / 1e6:.3g}" == f"{doc_cost:.3g}", (row[0], cost["cost_usd"])
        assert round(mwh) == int(row[5].removesuffix(" MWh").replace(",", "")), (row[0], mwh)
        layout = f"TP{cost['tp']} PP{cost['pp']}" + (f" VP{cost['vp']}" if cost["vp"] > 1 else "")
        layout += f" DP{cost['dp']}, ZeRO-{cost['zero']}"
        assert layout == row[6], (row[0], layout)
        assert float(row[7]) == pytest.approx(round(base_cost / cost["cost_usd"], 2)), row[0]
        assert float(row[8]) == pytest.approx(round(base_mwh / mwh, 2)), row[0]
        assert cost["gpus"] == 2048  # "Every point's cheapest run uses 2,048 GPUs"
    n = re.search(r"([0-9,]+) configurations in all", text).group(1)
    assert int(n.replace(",", "")) == out["evaluated"], out["evaluated"]


@pytest.fixture(scope="module")
def economics_example():
    """docs/economics.md's worked example: Llama 3 70B, 15T tokens, 4,096 H100 SXM."""
    from hardware_catalog import load_catalog
    from planner.engine.economics.ownership import rent_vs_buy
    from planner.engine.economics.pricing import price_quote
    from planner.engine.inputs.scenario import Scenario
    from planner.engine.layouts.evaluator import evaluate

    cat = load_catalog()
    q = price_quote(cat, cat.accelerator("h100-sxm"))
    run = dict(model="llama3-70b", hardware="h100-sxm", gpus=4096, tp=4, pp=1,
               recompute="none", zero=3, tokens=15e12, catalog=cat)
    od = evaluate(**run).iloc[0]
    spot = evaluate(**run, pricing="spot").iloc[0]
    rvb = rent_vs_buy(cat, Scenario(), dict(od), q.as_dict())
    sites = {site: evaluate(**run, site=site).iloc[0] for site in ("quebec", "germany")}
    return od, spot, rvb, sites


def _number(pattern, text):
    m = re.search(pattern, text, re.S)
    assert m, f"docs/economics.md no longer says: {pattern}"
    return [float(g.replace(",", "")) for g in m.groups()]


def test_economics_worked_example_prose(economics_example):
    """docs/economics.md's sentences around its doctests (the doctests check the rest).

    Tolerances: the prose's rounding (percentages to 0.1, days to 0.1, $/GPU-h to 0.01,
    tonnes to 1, USD per GPU to 100); spare-node counts exactly.
    """
    od, spot, rvb, sites = economics_example
    text = (ROOT / "docs" / "economics.md").read_text()
    spares_od, = _number(r"\(4,096 GPUs \+ (\d+) hot-spare nodes", text)
    assert spares_od == od.spare_nodes
    spares_spot, again = _number(r"the planner keeps (\d+) spare nodes\s+instead of (\d+)", text)
    assert (spares_spot, again) == (spot.spare_nodes, od.spare_nodes)
    w_od, w_spot = _number(r"waste rises from ([0-9.]+) % to ([0-9.]+) %", text)
    assert round(100 * (od.wall_time_s / od.solve_time_s - 1), 1) == w_od
    assert round(100 * (spot.wall_time_s / spot.solve_time_s - 1), 1) == w_spot
    longer, = _number(r"the run takes ([0-9.]+) days longer", text)
    assert round(float(spot.wall_days - od.wall_days), 1) == longer
    capex, = _number(r"\(183 M USD: ([0-9,]+) USD per GPU", text)
    assert round(rvb["capex_usd_per_gpu"], -2) == capex
    fixed, dep, opex, rent = _number(r"([0-9.]+) \$/GPU-h of fixed cost \(([0-9.]+) depreciation, "
                                     r"([0-9.]+) opex, ([0-9.]+) facility rent\)", text)
    assert round(rvb["ownership_usd_per_gpu_hour"], 2) == fixed
    assert round(rvb["facility_usd_per_gpu_hour"], 2) == rent
    assert dep + opex + rent == pytest.approx(fixed, abs=0.011)
    energy, = _number(r"plus ([0-9.]+) \$/GPU-h of energy", text)
    assert round(rvb["energy_usd_per_gpu_hour"], 2) == energy
    quebec_t, quebec_cci, germany_t = _number(
        r"in Quebec\s+the same run emits ([0-9,]+) t \(([0-9]+) gCO2e/EFLOP\), in Germany "
        r"([0-9,]+) t", text)
    assert round(float(sites["quebec"].co2e_t)) == quebec_t
    assert round(float(sites["quebec"].cci_g_per_eflop)) == quebec_cci
    assert round(float(sites["germany"].co2e_t)) == germany_t


def _plan_line(row):
    days = float(f"{row['wall_days']:.3g}")
    hw = row["hardware"]
    name = f"TPU {hw[4:]}" if hw.startswith("tpu-") else hw.upper()  # as the docs write it
    return f"{row['gpus']:,} {name}, {days:g} days"


@pytest.mark.slow
def test_economics_default_plan_today(tmp_path):
    """docs/economics.md's list of today's `capplan plan` winners, its tCDP sentence and the
    owned-vs-rented example (about 7 s in numpy).

    Tolerances: days to 3 significant figures, M USD to 3 significant figures, MWh, t and
    t d to the whole unit, the break-even utilisation to the whole percent.
    """
    text = (ROOT / "docs" / "economics.md").read_text()
    out = _cli_json(["plan"], tmp_path)
    best = out["best"]
    usd = lambda r: f"{r['cost_usd'] / 1e6:.3g} M USD"  # noqa: E731
    assert f"- cheapest: {_plan_line(best['cost'])}, {usd(best['cost'])};" in text
    assert f"- fastest: {_plan_line(best['time'])}, {usd(best['time'])};" in text
    e = best["energy"]
    assert _plan_line(best["carbon"]) == _plan_line(e) == _plan_line(best["cci"])
    assert (f"- least energy, least carbon and least carbon per FLOP: {_plan_line(e)}, "
            f"{e['energy_mwh']:,.0f} MWh, {e['co2e_t']:,.0f} t;") in text
    t = best["tcdp"]
    assert f"- least carbon x delay: {_plan_line(t)}, {t['co2e_t']:,.0f} t." in text
    m = re.search(r"least-tCDP plan is ([0-9,]+)\s+(TPU v\w+|[A-Z0-9]+) for ([0-9.]+) days "
                  r"\(([0-9,]+) t d at us-average\), not the least-carbon ([0-9,]+) "
                  r"(TPU v\w+|[A-Z0-9]+) for\s+([0-9.]+) days \(([0-9,]+) t d\)", text)
    assert m, "docs/economics.md no longer states the tCDP example"
    t_n, t_hw, days, tcdp, e_n, e_hw, c_days, c_tcdp = m.groups()
    assert _plan_line(t).startswith(f"{t_n} {t_hw},") and _plan_line(e).startswith(f"{e_n} {e_hw},")
    assert (float(f"{t['wall_days']:.3g}"), round(t["tcdp_t_d"])) == (
        float(days), int(tcdp.replace(",", "")))
    assert (float(f"{e['wall_days']:.3g}"), round(best["carbon"]["tcdp_t_d"])) == (
        float(c_days), int(c_tcdp.replace(",", "")))
    rvb = out["rent_vs_buy"]["cost"]
    if rvb["breakeven_utilisation"] is None:  # renting is cheaper at any utilisation
        owned, rented, rent, own = _number(
            r"today the cheapest plan costs\s+([0-9.]+) M USD owned against ([0-9.]+) M USD "
            r"rented, and buying wins at no utilisation: \w+'s\s+([0-9.]+) \$/GPU-h rent is "
            r"below its ([0-9.]+) \$/GPU-h of ownership alone", text)
        assert (round(rvb["cloud_usd_per_gpu_hour"], 2), round(
            rvb["ownership_usd_per_gpu_hour"], 2)) == (rent, own) and rent < own
    else:
        owned, rented, breakeven = _number(
            r"today the cheapest plan costs\s+([0-9.]+) M USD owned against ([0-9.]+) M USD "
            r"rented, with buying winning above ([0-9]+) % utilisation", text)
        assert round(100 * rvb["breakeven_utilisation"]) == breakeven
    assert round(rvb["owned_usd"] / 1e6, 2) == owned
    assert round(rvb["cloud_usd"] / 1e6, 2) == rented


@pytest.mark.slow
def test_economics_sites_paragraph(tmp_path):
    """docs/economics.md, "What changes across sites": `capplan plan --site all` (~15 s).

    Tolerances: MWh and t to the whole unit, days to 0.1, GPU counts and accelerators
    exactly.
    """
    text = (ROOT / "docs" / "economics.md").read_text()
    sites = _cli_json(["plan", "--site", "all"], tmp_path)["sites"]
    best = {site: p["best"] for site, p in sites.items()}
    assert len({(b["cost"]["hardware"], b["cost"]["gpus"]) for b in best.values()}) == 1
    everywhere, = _number(r"\(([0-9,]+) MWh at every site: a site sets the grid", text)
    assert {round(b["energy"]["energy_mwh"]) for b in best.values()} == {everywhere}
    m = re.search(r"On (TPU v\w+|[A-Z0-9]+) it emits ([0-9,]+) t in Norway \(30 g/kWh\)\s+and "
                  r"([0-9,]+) t in Taiwan \(494 g/kWh\), and it is also the least-carbon plan "
                  r"at every site, Quebec's 2 g/kWh\s+included \(([0-9,]+) t\)",
                  " ".join(text.split()))
    assert m, "the sites paragraph no longer names the least-energy plan's emissions"
    name, no_t, tw_t, qc_t = m.groups()
    hw = name.lower().replace("tpu v", "tpu-v")
    assert all(b["energy"]["hardware"] == b["carbon"]["hardware"] == hw
               and b["energy"]["gpus"] == b["carbon"]["gpus"] for b in best.values())
    assert round(best["norway"]["energy"]["co2e_t"]) == int(no_t.replace(",", ""))
    assert round(best["taiwan"]["carbon"]["co2e_t"]) == int(tw_t.replace(",", ""))
    assert round(best["quebec"]["carbon"]["co2e_t"]) == int(qc_t.replace(",", ""))


# ---- docs/whatif-checkpointing.md: its table and prose (the doctest checks its example) ----

@pytest.fixture(scope="module")
def checkpoint_study():
    """The study the page answers (~1 s), and the same with a 0.5 GB/s host link."""
    from planner.analysis.checkpoint_study import Study, run_study

    def by_cell(rows):
        return {(r["gpus"], r["scheme"]): r for r in rows}

    default = by_cell(run_study(Study()))
    slow_host = by_cell(run_study(Study(gpus=(1024, 16384), schemes=("async", "gockpt"),
                                        overrides={"host_copy_bytes_per_s_per_gpu": 0.5e9})))
    return default, slow_host


def _saves(cells, gpus):
    a, g = cells[(gpus, "async")], cells[(gpus, "gockpt")]
    return (a["wall_days"] - g["wall_days"], a["energy_mwh"] - g["energy_mwh"],
            a["cost_usd"] - g["cost_usd"])


def _shows(text_value: str, number: float, value: float) -> bool:
    """Whether ``number`` (written ``text_value``) is ``value`` to the digits shown."""
    decimals = len(text_value.partition(".")[2])
    return abs(number - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9)


def test_whatif_checkpointing_table_and_prose(checkpoint_study):
    """Every number of the page's table and prose, to the digits it shows (each `in`
    below is a phrase of the page, built from the study's rows)."""
    cells, slow = checkpoint_study
    text = " ".join((ROOT / "docs" / "whatif-checkpointing.md").read_text().split())

    def share(r):
        return 100 * r["fault_tolerance_mwh"] / r["energy_mwh"]

    for gpus in (128, 1024, 4096, 16384):
        a = cells[(gpus, "async")]
        m = re.search(rf"\| {gpus:,} \| ([\d.,]+) / ([\d,]+) / ([\d.]+) \| \**(-?[\d.]+) / "
                      rf"(-?[\d.]+) / (-?\d+)k\** \| (\d+), ([\d.]+) % \|", text)
        assert m, f"no table row for {gpus:,} GPUs"
        shown = [float(g.replace(",", "")) for g in m.groups()]
        days, mwh, usd = _saves(cells, gpus)
        values = [a["wall_days"], a["energy_mwh"], a["cost_usd"] / 1e6, days, mwh, usd / 1e3,
                  a["fault_tolerance_mwh"], share(a)]
        for text_value, number, value in zip(m.groups(), shown, values, strict=True):
            assert _shows(text_value, number, value), (gpus, text_value, value)
    big, small = cells[(16384, "async")], cells[(128, "async")]
    days, mwh, usd = _saves(cells, 16384)
    assert (f"{days:.2f} days, {mwh:.0f} MWh and {usd / 1e3:.0f} k USD on a "
            f"{big['cost_usd'] / 1e6:.0f} M USD run") in text
    assert f"The checkpoint ({big['checkpoint_bytes'] / 1e12:.1f} TB)" in text
    assert f"{big['checkpoint_bytes'] / 16384 / 1e6:.0f} MB each" in text
    assert f"takes {big['stall_s'] * 1e3:.0f} ms per checkpoint" in text
    assert (f"({big['fault_tolerance_mwh']:.0f} MWh, {share(big):.1f} % of the energy, "
            f"{100 * (1 - big['ettr']):.1f} % of the wall time)") in text
    failures = round(big["expected_failures"], -1)
    assert (f"~{failures:.0f} failures of a {big['wall_days']:.0f}-day run on a cluster "
            f"with a {big['system_mtbf_s'] / 3600:.1f}-hour system MTBF") in text
    days, mwh, usd = _saves(cells, 128)
    assert f"({-days:.1f} days, {-mwh:.0f} MWh, {-usd / 1e6:.2f} M USD)" in text
    assert f"runs {small['step_time_s']:.0f}-second steps" in text
    assert f"the {small['stall_s']:.1f} s snapshot" in text
    assert (f"({cells[(128, 'gockpt')]['commit_latency_s']:.0f} s against "
            f"{small['commit_latency_s']:.0f} s)") in text
    s16, s1 = slow[(16384, "async")], _saves(slow, 1024)
    days, mwh, usd = _saves(slow, 16384)
    assert (f"stalls {s16['stall_s']:.2f} s of a {s16['step_time_s']:.1f} s step") in text
    assert (f"saves **{days:.2f} days, {mwh:.0f} MWh and {usd / 1e6:.2f} M USD** "
            f"({100 * usd / s16['cost_usd']:.0f} %)") in text
    assert (f"at 1,024 GPUs {s1[0]:.0f} days, {s1[1]:.0f} MWh and {s1[2] / 1e6:.2f} M USD"
            in text)
    ft = {scheme: [share(r) for (g, sc), r in cells.items() if sc == scheme]
          for scheme in ("async", "sync")}
    assert (f"{min(ft['async']):.1f}-{max(ft['async']):.1f} % of the run's energy with "
            f"asynchronous checkpoints and {min(ft['sync']):.1f}-{max(ft['sync']):.1f} % "
            "with synchronous ones") in text


# ---- docs/economics.md: price data, embodied carbon, measured power ----

def _economics_text():
    return " ".join((ROOT / "docs" / "economics.md").read_text().split())


def test_economics_provider_medians_and_row_counts():
    """The H100 SXM per-provider medians, their median and interquartile range, the row
    counts and the all-rows quartiles, from the shipped price data (2 decimals shown)."""
    import numpy as np

    from hardware_catalog.prices import load_prices
    from planner.engine.economics.pricing import provider_medians

    text = _economics_text()
    rows = load_prices()
    assert f"{len(rows):,} rows of on-demand and spot $/hour" in text
    medians = provider_medians(rows, "h100-sxm", "on-demand")
    m = re.search(r"The nine non-marketplace providers' H100 SXM medians are (.*?) \(accelerator "
                  r"only\) \$/GPU-h", text)
    assert m and len(medians) == 9
    shown = dict((name, float(value)) for name, value in
                 re.findall(r"(\w+) ([\d.]+)", m.group(1).replace(" and ", ", ")))
    assert shown.keys() == medians.keys()
    for name, value in medians.items():
        assert shown[name] == pytest.approx(value, abs=0.005), name
    q1, mid, q3 = np.percentile(sorted(medians.values()), [25, 50, 75])
    assert f"the default, {mid:.2f}, is their median; their interquartile range is " \
           f"{q1:.2f}-{q3:.2f}" in text
    every = [r for r in rows if r.accelerator == "h100-sxm" and not r.marketplace
             and r.on_demand_usd_per_gpu_hour is not None]
    a1, a3 = np.percentile([r.on_demand_usd_per_gpu_hour for r in every], [25, 75])
    count = {p: sum(r.provider == p for r in every) for p in ("gcp", "lambda")}
    assert (f"({len(every)} instance x region rows), the quartiles are {a1:.2f}-{a3:.2f} "
            f"because GCP's {count['gcp']} rows and Lambda's {count['lambda']} dominate") in text


def test_economics_embodied_carbon_figures(catalog):
    """The node share (150 + 2,500 / 8 = 462.5 kg) from the catalog, and ACT's 28.7 kg for
    an H100's silicon from formulas.carbon.act_chip_embodied with the inputs the page
    lists (814 mm2, 5 nm-class: ACT's 2.75 kWh/cm2 and GPA97 327.5 g/cm2, 500 g/cm2 of
    materials, 583 g/kWh, yield 0.875, 80 GB at 65 g/GB, six packages)."""
    from formulas.carbon import act_chip_embodied

    text = _economics_text()
    h100 = catalog.accelerator("h100-sxm")
    node = catalog.node(h100.node)
    gpu_kg, node_kg = (float(getattr(x.embodied_kg_co2e, "value", x.embodied_kg_co2e))
                       for x in (h100, node))
    per_node = int(getattr(node.gpus_per_node, "value", node.gpus_per_node))
    assert (f"{gpu_kg:.0f} + {node_kg:,.0f} / {per_node} = "
            f"{gpu_kg + node_kg / per_node:.1f} kgCO2e") in text
    act_kg = act_chip_embodied(8.14, 583.0, 2.75, 327.5, 500.0, 0.875, 80.0, 65.0, 6)
    assert ("(814 mm2 logic die on a 5 nm-class node at Taiwan's 583 g/kWh, GPA97 gas "
            "abatement, yield 0.875, 80 GB at ACT's DDR4 65 g/GB, six packages) it gives "
            f"{act_kg:.1f} kgCO2e for the silicon alone, a fifth of BLOOM's {gpu_kg:.0f} kg "
            "per GPU") in text
    assert round(gpu_kg / act_kg) == 5  # "a fifth"


def test_economics_measured_power_table():
    """The predicted stepping power of the OLMo 2 runs (W, no decimals) beside the
    measured '> 600 W' and the catalog's 100 W idle (OLMo 2's checkpointing draw)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("energy_phases",
                                                  ROOT / "tests" / "test_energy_phases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = _economics_text()
    for run, label in (("olmo2-7b", "OLMo 2 7B, 256 H100"), ("olmo2-13b", "OLMo 2 13B, 512 H100")):
        watts = float(module._olmo(run)["gpu_step_power_w"])
        assert re.search(rf"\| {re.escape(label)}[^|]*\| > 600 W training \| {watts:.0f} W "
                         r"stepping \|", text), (run, watts)
    m = re.search(r"at most \+(\d+) % above 600 W, ([\d.]+) % below TDP", text)
    watts = float(module._olmo("olmo2-7b")["gpu_step_power_w"])
    assert int(m.group(1)) == round(100 * (watts / 600 - 1))
    assert float(m.group(2)) == pytest.approx(100 * (1 - watts / 700), abs=0.05)


def test_economics_spot_and_aws_sentences(economics_example):
    """The worked example's spot sentences (512 instances, one preemption per instance every
    106 days, the 17-minute break-even, every six days, five times a month) and the AWS
    comparison (AWS's 6.88 $/GPU-h list price, an input: 90 % utilisation -> 22 %, 11
    months).  Tolerances: days and months to the whole unit, percent to the whole percent."""
    import math

    from formulas.cost import spot_breakeven_mtbf
    from hardware_catalog import load_catalog
    from planner.engine.economics.ownership import rent_vs_buy
    from planner.engine.economics.pricing import price_quote
    from planner.engine.inputs.scenario import Scenario

    od, spot, _, _ = economics_example
    text = _economics_text()
    instances = round(float(od.gpus) / 8)
    month_days = 365.25 / 12
    every_days = -month_days / math.log(1 - 0.25)
    assert (f"On spot, {instances} instances each reclaimed with probability 0.25 a month (one "
            f"preemption per instance every {every_days:.0f} days)") in text
    w0 = od.wall_time_s / od.solve_time_s - 1
    m_star_min = round(float(spot_breakeven_mtbf(1.75 / 2.95, spot.checkpoint_stall_s,
                                                 spot.restart_s, w0)) / 60)
    per_instance_days = instances * m_star_min / 60 / 24
    words = {5: "five", 6: "six", 7: "seven", 4: "four"}
    assert (f"{m_star_min} minutes for the whole job, i.e. each of the {instances} instances "
            f"preempted about every {words[round(per_instance_days)]} days "
            f"({words[round(month_days / per_instance_days)]} times a month)") in text
    cat = load_catalog()
    q = price_quote(cat, cat.accelerator("h100-sxm")).as_dict()
    q["usd_per_gpu_hour"] = 6.88
    aws = rent_vs_buy(cat, Scenario(ownership={"utilisation": 0.9}), dict(od), q)
    assert (f"6.88 $/GPU-h at 90 % utilisation the break-even falls to "
            f"{100 * aws['breakeven_utilisation']:.0f} % and the payback to "
            f"{aws['payback_months']:.0f} months") in text


@pytest.mark.slow
def test_economics_confidence_paragraph(tmp_path):
    """docs/economics.md, "Planning with a margin": the default plan's least-energy winner
    and its P90 under --uncertainty, the --confidence 0.9 multipliers and winner (~15 s).

    Tolerances: days to 0.1, multipliers to 0.01 (the range over accelerators), GPU counts
    and accelerators exactly.
    """
    text = (ROOT / "docs" / "economics.md").read_text()
    m = re.search(r"least-energy winner \(TPU (v\w+) x ([0-9,]+), ([0-9.]+) days\) has a P90 of "
                  r"([0-9.]+) days under\s+`--uncertainty`; with `--confidence 0.9` the "
                  r"multipliers are ([0-9.]+)-([0-9.]+) on days and\s+([0-9.]+)-([0-9.]+) on "
                  r"cost, the winner is TPU (v\w+) x ([0-9,]+) \(nominal ([0-9.]+) days, shown "
                  r"at its P90 ([0-9.]+)\)",
                  text)
    assert m, "docs/economics.md no longer states the --confidence example"
    gen, n, days, p90, d_lo, d_hi, c_lo, c_hi, gen_c, n_c, days_c, p90_c = m.groups()
    nominal = _cli_json(["plan", "--uncertainty"], tmp_path)
    e = nominal["best"]["energy"]
    assert (e["hardware"], e["gpus"]) == (f"tpu-{gen}", int(n.replace(",", "")))
    assert round(e["wall_days"], 1) == float(days)
    band = nominal["uncertainty"]["nominal_winners"]["energy"]["wall_days"]
    assert round(band["p90"], 1) == float(p90)
    at90 = _cli_json(["plan", "--confidence", "0.9", "--uncertainty"], tmp_path)
    margins = at90["margins"].values()
    assert (round(min(x["wall_days"] for x in margins), 2),
            round(max(x["wall_days"] for x in margins), 2)) == (float(d_lo), float(d_hi))
    assert (round(min(x["cost_usd"] for x in margins), 2),
            round(max(x["cost_usd"] for x in margins), 2)) == (float(c_lo), float(c_hi))
    w = at90["best"]["energy"]
    assert (w["hardware"], w["gpus"]) == (f"tpu-{gen_c}", int(n_c.replace(",", "")))
    assert round(w["nominal"]["wall_days"], 1) == float(days_c)
    assert round(at90["uncertainty"]["nominal_winners"]["energy"]["wall_days"]["p90"], 1) \
        == float(p90_c) == round(w["wall_days"], 1)  # shown at its P90
    assert not any(v["missed_at_quantile"] for risk in at90["uncertainty"]["constraint_risk"]
                   .values() for v in risk.values())


# ---- docs/whatif-stragglers.md: its two tables and the sentences under them ----

def _stragglers_shown(capsys, text, marker):
    """The `capplan stragglers` command the page shows after ``marker``, rerun in process
    with the page's format (markdown), and the table the page shows under it."""
    from planner.cli.main import main

    start = text.index(marker)
    cmd = re.search(r"```console\n\$ capplan (stragglers [^\n]*)\n```", text[start:]).group(1)
    assert main(cmd.split()) == 0
    shown = re.search(r"\n(\|[^\n]*\|\n(?:\|[^\n]*\|\n)+)", text[start:]).group(1)
    return capsys.readouterr().out, shown


def _waste_table(markdown):
    header, rows = _md_table_after(markdown, "| gpus |")
    return [dict(zip(header, (float(c.replace(",", "")) for c in row), strict=True))
            for row in rows]


def test_whatif_stragglers_tables_and_prose(capsys):
    """docs/whatif-stragglers.md: both tables are what their commands print today (cell for
    cell, as printed: 3 significant figures), and the prose quotes them to the rounding it
    shows (percent to 1 decimal, "11-26 %" and "20 %" to whole percent); docs/model.md
    quotes the first job too.  ~3 s: the
    first command's Monte Carlo (50,000 steps per GPU count)."""
    from hardware_catalog import load_catalog
    from planner.analysis.stragglers import PRESETS, WhatIf, whatif_rows, with_model

    text = (ROOT / "docs" / "whatif-stragglers.md").read_text()
    spaced = " ".join(text.split())
    out, shown = _stragglers_shown(capsys, text, "## The published")
    assert _waste_table(out) == _waste_table(shown), "bytedance-osdi25 table"
    first = _waste_table(out)[0]
    assert f"At 128 GPUs the three causes together waste {100 * first['combined_waste']:.1f} %" \
        in spaced
    alone = [first[k] for k in ("gc_waste", "pipeline_waste", "sequence_waste")]
    assert f"(each alone {100 * min(alone):.0f}-{100 * max(alone):.0f} %)" in spaced
    model = _model_text()  # docs/model.md quotes the same job
    assert f"wastes {100 * first['combined_waste']:.1f} % (`capplan stragglers --preset " \
        "bytedance-osdi25`" in model
    assert f"each cause alone wastes {100 * min(alone):.0f}-{100 * max(alone):.0f} %" in model
    last = _waste_table(out)[-1]
    assert f"a full pause per step ({100 * last['gc_waste']:.0f} % of a 4 s step)" in spaced

    out, shown = _stragglers_shown(capsys, text, "## A 405B-class job")
    assert _waste_table(out) == _waste_table(shown), "405B table"
    # "Planned GC every 100 steps ... cuts the GC share to X % and the total to Y % at 128
    # GPUs and Z % at 16,384": the same job with --gc-every-steps 100 instead.
    m = re.search(r"cuts the GC share to ([\d.]+) % and the total to ([\d.]+) % at 128 GPUs "
                  r"and ([\d.]+) % at 16,384", spaced)
    assert m, "docs/whatif-stragglers.md no longer states the planned-GC result"
    model = load_catalog(()).model("llama3.1-405b")
    planned = with_model(WhatIf(step_time_s=5.0, gc_every_steps=100, slow_node_fraction=1e-4,
                                stages=16), model)
    rows = whatif_rows(planned, [128, 16384])
    assert f"{100 * rows[0]['gc_waste']:.1f}" == m.group(1)
    assert f"{100 * rows[0]['combined_waste']:.1f}" == m.group(2)
    assert f"{100 * rows[1]['combined_waste']:.1f}" == m.group(3)
    assert PRESETS["bytedance-osdi25"]["step_time_s"] == 4.0  # "4 s steps"


# ---- docs/model.md: its worked examples ----

def _model_text():
    return " ".join((ROOT / "docs" / "model.md").read_text().split())


def test_model_default_evaluation_overheads(capsys):
    """docs/model.md, run overheads: the default `capplan evaluate` (Llama 3 70B, 15T
    tokens, 1,024 H100) with and without evaluations and rollbacks; days to 1 decimal,
    percent to 1 decimal, rollbacks to the whole one."""
    from planner.cli.main import main

    assert main(["evaluate", "-f", "json"]) == 0
    r = json.loads(capsys.readouterr().out)
    eval_d, rollback_d = r["eval_time_s"] / 86400, r["rollback_time_s"] / 86400
    base = r["wall_days"] - eval_d - rollback_d - r["maintenance_time_s"] / 86400
    said = (f"takes {r['wall_days']:.1f} days instead of {base:.1f} "
            f"(+{100 * (r['wall_days'] / base - 1):.1f} %: {eval_d:.1f} days of evaluations, "
            f"{rollback_d:.1f} days of {r['rollbacks']:.0f} rollbacks)")
    assert said in _model_text(), f"docs/model.md should say: {said}"


def test_model_dualpipe_and_moe_memory_examples():
    """docs/model.md: DeepSeek-V3's DualPipe bubble against 1F1B (tests/test_dualpipe.py's
    published layout; seconds to 2 decimals) and its MoE activation bytes per layer at
    4,096 tokens (MiB, whole)."""
    from test_dualpipe import DEEPSEEK

    from formulas import memory as m
    from planner import evaluate

    dual = evaluate(**DEEPSEEK).iloc[0]["bubble_s"]
    one_f_one_b = evaluate(**DEEPSEEK, overrides={"dualpipe": 0.0}).iloc[0]["bubble_s"]
    text = _model_text()
    assert f"{dual:.2f} s of bubble against {one_f_one_b:.2f} s under 1F1B" in text
    mib = 2 ** 20
    dense = m.mlp_activation_bytes(4096, 1, 18432, 3, 1) / mib
    moe = m.moe_mlp_activation_bytes(4096, 1, 7168, 2048, 8, 1, 3, 1, 1, 0, 2) / mib
    assert f"({moe:.0f} against {dense:.0f} MiB per layer at 4,096 tokens, BF16)" in text
    fp8 = m.moe_mlp_activation_bytes(4096, 1, 7168, 2048, 8, 1, 3, 1, 1, 0, 1) / mib
    saved = m.moe_activation_function_saving_bytes(4096, 1, 2048, 8, 1, 3, 1, 1, 0, 1, 1,
                                                    1) / mib
    assert f"{saved:.0f} of the experts' {fp8:.0f} MiB per layer at 4,096 tokens" in text


def test_model_job_mttf_and_spares_examples():
    """docs/model.md: the default and meta-rsc profiles' job MTTF at 8, 1,024 and 16,384
    GPUs (days to 1 decimal, hours to 3 significant figures), the spare search's
    example (its doctest's call; days whole, percent whole) and the 405B job's automatic
    spares (days whole)."""
    from hardware_catalog.loader import load_catalog
    from planner import evaluate
    from planner.analysis.simulate import failure_domains, optimal_spares
    from planner.analysis.validate import job_mttf_s

    text = _model_text()
    d8, d1k, d16k = (job_mttf_s("default", g) / 3600 for g in (8, 1024, 16384))
    assert f"MTTF: {d8 / 24:.1f} days at 8 GPUs" in text
    assert f"{d1k:.3g} h at 1,024" in text and f"{d16k:.3g} h at 16,384" in text
    r8, r1k, r16k = (job_mttf_s("meta-rsc", g) / 3600 for g in (8, 1024, 16384))
    assert f"`meta-rsc` {r8 / 24:.1f} d / {r1k:.3g} h / {r16k:.3g} h" in text

    doms = failure_domains(load_catalog().reliability_profile("llama3-405b"), gpus=16384,
                           gpus_per_node=8)
    out = optimal_spares(doms, job_nodes=2048, gpus_per_node=8, max_spares=64,
                         repair_time_s=86400.0, solve_time_s=54 * 86400.0,
                         interval_s=1800.0, checkpoint_cost_s=30.0)
    none_d, best_d, n = out["wall_time_s"][0] / 86400, out["best_wall_time_s"] / 86400, \
        out["best_spares"]
    saved = 1 - (2048 + n) * best_d / (2048 * none_d)
    assert (f"{n} spare nodes ({100 * n / 2048:.1f} %) cut the wall time of a 54-day solve "
            f"from {none_d:.0f} to {best_d:.0f} days and the GPU-hours by "
            f"{100 * saved:.0f} %") in text

    auto = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384,
                    reliability="llama3-405b").iloc[0]
    none = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384,
                    reliability="llama3-405b", overrides={"spare_nodes": 0.0}).iloc[0]
    assert (f"it is {auto['spare_nodes']:.0f} spares: wall time {auto['wall_days']:.0f} days "
            f"instead of {none['wall_days']:.0f} with none") in text


def test_model_gb200_guide_predictions_are_validation_mds():
    """docs/model.md quotes the GB200 guide's first and last step's predictions and
    measurements; docs/validation.md (generated) computes them: the same to the three
    significant figures model.md shows."""
    table = (ROOT / "docs" / "validation.md").read_text()

    def row(case):
        cells = [c.strip() for c in re.search(rf"^\| {case} \|.*$", table, re.M).group(0)
                 .strip("|").split("|")]
        return float(cells[7].replace(",", "")), float(cells[8].replace(",", ""))

    (measured_1, predicted_1), (measured_13, predicted_13) = row("MLMGB200-01"), \
        row("MLMGB200-13")

    def shown(x):
        return f"{float(f'{x:.3g}'):,.0f}"

    said = (f"prediction {shown(predicted_1)} -> {shown(predicted_13)} TFLOP/s/GPU against "
            f"{shown(measured_1)} -> {shown(measured_13)}")
    assert said in _model_text(), f"docs/model.md should say: {said}"


def _shown_outputs(text: str):
    """(command, shown lines) for each ```text block of a page that starts with `$ capplan`:
    an example of what a command prints (`...` stands for lines left out)."""
    for block in re.findall(r"```text\n(.*?)```", text, re.S):
        lines = block.splitlines()
        if lines and lines[0].startswith("$ capplan "):
            yield lines[0][2:], [line for line in lines[1:] if line.strip() not in ("", "...")]


def test_readme_example_output_is_what_the_command_prints(tmp_path):
    """README's example output: each line it shows is a line the command prints today
    (exact text, so every number in it is today's)."""
    examples = list(_shown_outputs((ROOT / "README.md").read_text()))
    assert examples, "README.md shows no example output"
    for command, shown in examples:
        proc = subprocess.run([sys.executable, "-m", "planner", *command.split()[1:]],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env=_env())
        assert proc.returncode == 0, proc.stderr
        printed = set(proc.stdout.splitlines())
        missing = [line for line in shown if line not in printed]
        assert not missing, f"README.md `{command}` no longer prints: {missing}"
