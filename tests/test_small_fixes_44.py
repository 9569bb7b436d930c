"""The smaller items of issue 44 ("Why" item 7): each was a wrong exit code, a silent
answer or a multi-line error; each is now one stderr line (exit 2) or a sensible answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_bad_files_and_values import one_line_usage_error, run_cli  # one copy of each

from hardware_catalog import clear_cache
from hardware_catalog.loader import ENV_VAR
from planner.errors import USAGE

ROOT = Path(__file__).resolve().parents[1]
SMALL_PLAN = ["plan", "-m", "llama2-7b", "-H", "h100-sxm", "--tokens", "1e11",
              "--max-gpus", "64"]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("CAPPLAN_KERNEL", raising=False)
    clear_cache()
    yield
    clear_cache()


def test_plan_refuses_an_unknown_provider_as_evaluate_does(capsys):
    """Was exit 1, "No layout ... exists" (every accelerator skipped for the provider)."""
    code, _, plan_err = run_cli(capsys, *SMALL_PLAN, "--provider", "bogus")
    one_line_usage_error(code, plan_err, "unknown provider 'bogus'", "did you mean: nebius?")
    code, _, evaluate_err = run_cli(capsys, "evaluate", "-m", "llama2-7b", "-H", "h100-sxm",
                                 "--gpus", "64", "--provider", "bogus")
    assert code == USAGE and evaluate_err == plan_err


#: A stand-in for a command whose numbers overflow (numpy warns), then fails or not, run
#: in a fresh interpreter (pytest records warnings instead of printing them).
WARNING_COMMAND = """
import sys
import numpy as np
import planner.cli.main as cli_main
from hardware_catalog.errors import CatalogError
from planner.errors import CapplanError

ERRORS = {"none": None, "capplan": CapplanError("no finite wall_time_s for this run"),
          "catalog": CatalogError("m.toml: layers: too large")}

def command(args, prog_name, standalone_mode):
    np.float64(1e308) * np.float64(10)  # RuntimeWarning: overflow
    if ERRORS[sys.argv[1]] is not None:
        raise ERRORS[sys.argv[1]]
    return 0

cli_main.app_for = lambda args: command
sys.exit(cli_main.main(["evaluate"]))
"""


def _warning_command(error: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-W", "default", "-c", WARNING_COMMAND, error],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    return done.returncode, done.stderr


@pytest.mark.parametrize(("error", "line"), [
    ("capplan", "no finite wall_time_s for this run"), ("catalog", "m.toml: layers: too large")])
def test_a_numpy_warning_does_not_lengthen_a_one_line_error(error, line):
    """Was 'RuntimeWarning: overflow ...' and its source line before the error line."""
    code, err = _warning_command(error)
    one_line_usage_error(code, err, line)


def test_a_numpy_warning_of_a_correct_run_is_one_line():
    code, err = _warning_command("none")
    assert code == 0
    assert err.startswith("capplan: warning: overflow") and err.count("\n") == 1, err
    assert "RuntimeWarning" in err


def test_a_phase_layout_error_names_the_file_the_phase_and_its_keys(capsys, tmp_path):
    """Was 'TP*PP*CP = 3*4*1 = 12 does not divide --gpus 64; change --tp/--pp/--cp or
    --gpus' naming neither the phase nor the file, and flags the user never gave."""
    path = tmp_path / "phases.toml"
    path.write_text('model = "llama2-7b"\nhardware = "h100-sxm"\n\n'
                    '[[phases]]\nname = "pretrain"\ntokens = 1e12\n\n'
                    '[[phases]]\nname = "long-context"\ntokens = 1e11\ntp = 3\n')
    code, _, err = run_cli(capsys, "evaluate", "--scenario", str(path), "--gpus", "64")
    one_line_usage_error(code, err, "phases.toml: phase 2 (long-context): ",
                          "change tp/pp/cp", "with tp = 3")
    assert "--tp" not in err and "--pp" not in err


def test_a_phase_of_its_own_gpus_names_that_key(capsys, tmp_path):
    path = tmp_path / "phases.toml"
    path.write_text('model = "llama2-7b"\nhardware = "h100-sxm"\n\n'
                    '[[phases]]\nname = "big"\ntokens = 1e12\ngpus = 60\ntp = 8\npp = 1\n')
    code, _, err = run_cli(capsys, "evaluate", "--scenario", str(path), "--gpus", "64")
    one_line_usage_error(code, err, "phase 1 (big): ", "gpus = 60")
    assert "--" not in err.removeprefix("capplan: error: ")


@pytest.mark.parametrize(("flags", "named"), [
    (["-d", "mlperf"], "--dataset does not apply"), (["--lofo"], "--lofo does not apply"),
    (["--checks"], "--checks does not apply"),
    (["--lofo", "--checks"], "--lofo, --checks do not apply")])
def test_validate_whole_runs_refuses_the_dataset_flags(capsys, flags, named):
    """Was silently ignored: the whole-run table, exit 0."""
    code, out, err = run_cli(capsys, "validate", "--whole-runs", *flags)
    one_line_usage_error(code, err, named, "drop --whole-runs")
    assert out == ""


def _price(capsys, *args: str) -> dict:
    code, out, err = run_cli(capsys, "evaluate", "--gpus", "64", "-f", "json", *args)
    assert code == 0, err
    return json.loads(out)["price"]


def test_the_scenario_key_spot_interruption_takes_a_fraction_like_its_flag(capsys, tmp_path):
    """Was 'spot_interruption must be a str, got 0.07' though init and the flag take it."""
    path = tmp_path / "spot.toml"
    path.write_text('model = "llama2-7b"\nhardware = "h100-sxm"\npricing = "spot"\n'
                    "spot_interruption = 0.07\n")
    from_file = _price(capsys, "--scenario", str(path))
    from_flag = _price(capsys, "-m", "llama2-7b", "-H", "h100-sxm", "--pricing", "spot",
                       "--spot-interruption", "0.07")
    assert from_file == from_flag
    assert from_file["interrupted_fraction_per_month"] == 0.07
    path.write_text(path.read_text().replace("0.07", "1.5"))
    code, _, err = run_cli(capsys, "evaluate", "--gpus", "64", "--scenario", str(path))
    one_line_usage_error(code, err, "'1.5' is neither a bucket", "monthly fraction in (0, 1)")


EVALUATE = ["evaluate", "-m", "llama2-7b", "-H", "h100-sxm", "--gpus", "64", "-f", "json"]


@pytest.mark.parametrize("interval", ["1e-300", "0.5", "-1"])
def test_a_fixed_checkpoint_interval_is_zero_or_at_least_a_second(capsys, interval):
    """1e-300 meant 'every step' while 0 meant Daly's optimum."""
    code, _, err = run_cli(capsys, *EVALUATE, "--checkpoint-interval", interval)
    one_line_usage_error(code, err, "--checkpoint-interval must be 0 (Daly's optimum) or a "
                          "finite number >= 1")


def test_checkpoint_interval_zero_is_the_optimum_and_one_second_a_step(capsys):
    def row(*args):
        code, out, err = run_cli(capsys, *EVALUATE, *args)
        assert code == 0, err
        return json.loads(out)

    optimum, zero, second = row(), row("--checkpoint-interval", "0"), \
        row("--checkpoint-interval", "1")
    assert zero["checkpoint_interval_s"] == optimum["checkpoint_interval_s"]
    assert second["checkpoint_interval_s"] == pytest.approx(second["step_time_s"], rel=1e-12)


def test_the_scenario_key_checkpoint_interval_has_the_flag_domain(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[faults]\ncheckpoint_interval = 1e-300\n")
    code, _, err = run_cli(capsys, *EVALUATE, "--scenario", str(path))
    one_line_usage_error(code, err, "--checkpoint-interval", "0 (Daly's optimum)")


def test_a_phase_smaller_than_one_step_is_refused(capsys, tmp_path):
    """Was 'steps 5.96e-08' for tokens = 1: a fraction of a step and its cost."""
    path = tmp_path / "tiny.toml"
    path.write_text('model = "llama2-7b"\nhardware = "h100-sxm"\nglobal_batch = 512\n'
                    'seq_len = 4096\n\n[[phases]]\nname = "main"\ntokens = 1e12\n\n'
                    '[[phases]]\nname = "tiny"\ntokens = 1\n')
    code, _, err = run_cli(capsys, "evaluate", "--scenario", str(path), "--gpus", "64")
    one_line_usage_error(code, err, "tiny.toml: phase 2 (tiny): tokens = 1 is less than one "
                          "step", "512 x 4,096 tokens = 2,097,152 tokens")
    # exactly one step is a phase
    path.write_text(path.read_text().replace("tokens = 1\n", "tokens = 2097152\n"))
    code, out, err = run_cli(capsys, "evaluate", "--scenario", str(path), "--gpus", "64",
                          "-f", "json")
    assert code == 0, err
    assert json.loads(out)["phases"][1]["steps"] == pytest.approx(1.0, rel=1e-12)


KERNEL_COMMANDS = [
    ["evaluate", "-m", "llama2-7b", "-H", "h100-sxm", "--gpus", "64"],
    ["checkpoint", "-m", "llama2-7b", "-H", "h100-sxm", "--gpus", "64"],
    ["simulate", "-m", "llama2-7b", "-H", "h100-sxm", "--gpus", "64"],
    ["plan", "-m", "llama2-7b", "-H", "h100-sxm", "--max-gpus", "64", "--tokens", "1e11"],
    ["catalog", "list"],
]


@pytest.mark.parametrize("command", KERNEL_COMMANDS, ids=lambda c: c[0])
def test_every_command_reads_capplan_kernel_the_same_way(capsys, monkeypatch, command):
    """CAPPLAN_KERNEL=cc was ignored by evaluate, checkpoint and simulate (plan refused it)."""
    from planner.engine.run import native
    monkeypatch.setattr(native, "_BACKEND", None)
    monkeypatch.setenv("CAPPLAN_KERNEL", "cc")
    code, out, err = run_cli(capsys, *command)
    one_line_usage_error(code, err, "unknown CAPPLAN_KERNEL value 'cc'; did you mean: c?")
    assert out == ""
    monkeypatch.setenv("CAPPLAN_KERNEL", "c")
    code, out, err = run_cli(capsys, *command)
    if native._find().name == "compiled":  # an installed extension: the command runs on it
        assert code == 0, err
    else:
        one_line_usage_error(code, err, "CAPPLAN_KERNEL=c, but ")


#: Load a copy of a real shared library cut to ``sys.argv[2]`` bytes as if it were the
#: installed extension, in a fresh interpreter (before the check it died of SIGBUS).
DAMAGED_EXTENSION = """
import importlib.util, shutil, sys, types
from planner.engine.run import native
source, size, record = sys.argv[1], int(sys.argv[2]), sys.argv[3]
path = sys.argv[4]
data = open(source, "rb").read()
open(path, "wb").write(data[:size])
if record:
    open(path + ".sha256", "w").write(record)
real = importlib.util.find_spec
importlib.util.find_spec = lambda name: (types.SimpleNamespace(origin=path)
                                         if name == native.EXTENSION else real(name))
print(native.describe())
"""


def _shared_library() -> str:
    import _ctypes

    return _ctypes.__file__  # an ELF shared library every CPython on Linux has


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared libraries")
@pytest.mark.parametrize(("cut", "record", "why"), [
    (0.1, "", "it is truncated"),  # an older install: no build record, the ELF header
    (1.0, "123 00", "built with 123"),  # the record's size
    (1.0, "SIZE " + "0" * 64, "differ from the build's (SHA-256)"),
])
def test_a_damaged_extension_is_never_loaded(tmp_path, cut, record, why):
    source = _shared_library()
    size = int(Path(source).stat().st_size * cut)
    record = record.replace("SIZE", str(size))
    done = subprocess.run(
        [sys.executable, "-c", DAMAGED_EXTENSION, source, str(size), record,
         str(tmp_path / "_native.so")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)  # -7: SIGBUS
    assert done.stdout.startswith("kernel backend: numpy: the compiled extension ")
    assert why in done.stdout
    assert done.stderr.startswith("capplan: warning: ") and done.stderr.count("\n") == 1
    assert "running in numpy" in done.stderr


def test_a_whole_library_passes_the_check(tmp_path):
    from planner.engine.run import native
    source = _shared_library()
    data = Path(source).read_bytes()
    copy = tmp_path / "_native.so"
    copy.write_bytes(data)
    assert native.damage(str(copy)) is None  # no record: the ELF check
    import hashlib

    Path(str(copy) + native.RECORD_SUFFIX).write_text(
        f"{len(data)} {hashlib.sha256(data).hexdigest()}\n")
    assert native.damage(str(copy)) is None


def test_setup_records_the_built_library_as_the_loader_checks_it(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("capplan_setup", ROOT / "setup.py")
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)  # defines, builds nothing (__name__ is not __main__)
    from planner.engine.run import native
    copy = tmp_path / "_native.so"
    copy.write_bytes(Path(_shared_library()).read_bytes())
    setup.record_build(str(copy))
    assert native.damage(str(copy)) is None
    copy.write_bytes(copy.read_bytes()[:-1])
    assert "built with" in native.damage(str(copy))


def test_the_split_kernel_prelude_overflows_to_inf_without_a_warning():
    """The prelude of the compiled search (native_search._prepare) ran without numpy's
    errstate: a user model with layers = 2**31 printed 'RuntimeWarning: overflow
    encountered in exp' and its source line before the one-line error."""
    import warnings

    import numpy as np

    from planner.engine.run.kernel_run import prelude_table

    def prelude(gpus, scale):
        return (np.exp(gpus * scale), gpus / (gpus - gpus))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table, inverse = prelude_table(prelude, ("gpus", "scale"),
                                       {"gpus": np.array([64.0, 128.0, 64.0]), "scale": 1e6})
    assert np.isinf(table).all() and list(inverse) == [0, 1, 0]
