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
    API with TP8 x PP4 and from the command the comment names.
    """
    from planner import evaluate

    text = (ROOT / "README.md").read_text()
    m = re.search(r"wall_days ~([0-9,]+): 15T tokens, as `capplan evaluate -m llama3-70b "
                  r"--gpus 1024` says", text)
    assert m, "README.md no longer quotes wall_days for the evaluate example"
    quoted = float(m.group(1).replace(",", ""))
    df = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=1024, tp=8, pp=4)
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
    from planner.engine.evaluator import evaluate
    from planner.engine.ownership import rent_vs_buy
    from planner.engine.pricing import price_quote
    from planner.engine.scenario import Scenario

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
    days, tcdp, c_days, c_tcdp = _number(
        r"least-tCDP plan is 16,384\s+GB200 for ([0-9.]+) days \(([0-9,]+) t d at us-average\), "
        r"not the least-carbon 2,048 TPU v6e for\s+([0-9.]+) days \(([0-9,]+) t d\)", text)
    assert (t["gpus"], t["hardware"], e["gpus"], e["hardware"]) == (16384, "gb200", 2048, "tpu-v6e")
    assert (float(f"{t['wall_days']:.3g}"), round(t["tcdp_t_d"])) == (days, tcdp)
    assert (float(f"{e['wall_days']:.3g}"), round(best["carbon"]["tcdp_t_d"])) == (c_days, c_tcdp)
    owned, rented, breakeven = _number(
        r"today the cheapest plan costs\s+([0-9.]+) M USD owned against ([0-9.]+) M USD "
        r"rented, with buying winning above ([0-9]+) % utilisation", text)
    rvb = out["rent_vs_buy"]["cost"]
    assert round(rvb["owned_usd"] / 1e6, 2) == owned
    assert round(rvb["cloud_usd"] / 1e6, 2) == rented
    assert round(100 * rvb["breakeven_utilisation"]) == breakeven


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
    no_t, tw_t = _number(r"On TPU v6e it emits ([0-9,]+) t in Norway \(30 g/kWh\)\s+and ([0-9,]+) t "
                         r"in Taiwan", text)
    assert best["norway"]["energy"]["hardware"] == best["taiwan"]["carbon"]["hardware"] == "tpu-v6e"
    assert round(best["norway"]["energy"]["co2e_t"]) == no_t
    assert round(best["taiwan"]["carbon"]["co2e_t"]) == tw_t
    m = re.search(r"moves to Blackwell: ([0-9,]+) (\w+) for ([0-9.]+) days \(([0-9,]+) t\) in\s+"
                  r"Norway and ([0-9,]+) (\w+) for ([0-9.]+) days \(([0-9,]+) t\) in Quebec", text)
    assert m, "the sites paragraph no longer names the clean-grid least-carbon plans"
    for site, (n, hw, days, tonnes) in (("norway", m.groups()[:4]), ("quebec", m.groups()[4:])):
        c = best[site]["carbon"]
        assert (c["gpus"], c["hardware"]) == (int(n.replace(",", "")), hw.lower()), site
        assert round(c["wall_days"], 1) == float(days), site
        assert round(c["co2e_t"]) == int(tonnes.replace(",", "")), site
