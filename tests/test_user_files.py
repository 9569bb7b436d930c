"""User model/hardware files need only the physics; catalog directories are walked safely;
files that are not UTF-8 are refused in one line (issue 18, items 4 and 5)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hardware_catalog import CatalogError, clear_cache, load_catalog, loader, parse_file
from hardware_catalog.loader import DATA_DIR, ENV_VAR
from planner.cli.main import main

SHAPE = "layers = 4\nhidden = 256\nheads = 4\nvocab = 1000\nseq_len = 512\n"
#: An accelerator given by bare numbers only: what the engine reads (planner/engine/inputs/scenario.py).
CHIP = """node = "dgx-h100"
peak_bf16_flops_per_s = 1.2e15
hbm_bytes = 141e9
hbm_bandwidth_bytes_per_s = 4.8e12
max_power_w = 700
idle_power_w = 100
scale_up_domain_gpus = 8
scale_up_bandwidth_bytes_per_s = 450e9
gemm_max_efficiency = 0.6
gemm_half_efficiency_dim = 256
hbm_efficiency = 0.9
scale_up_bus_efficiency = 0.8
scale_out_bus_efficiency = 0.85
purchase_price_usd = 30000
cloud_price_usd_per_gpu_hour = 5
embodied_kg_co2e = 150
lifetime_years = 4
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    clear_cache()
    yield
    clear_cache()


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- user model and hardware files: the physics only ----------------------------------------
def test_shape_only_model_file_evaluates(tmp_path, capsys):
    model = _write(tmp_path / "my-model.toml", SHAPE)
    code, out, err = _run(capsys, "evaluate", "-m", str(model), "-n", "8", "--tp", "1",
                          "--pp", "1", "--cp", "1", "--ep", "1", "--vp", "1", "--micro-batch",
                          "1", "--tokens", "1e9", "-f", "json")
    assert code == 0, err
    # no warning: only the lines of the assumptions the query used and the alternatives
    assert [line.split(":")[1] for line in err.splitlines()] == [
        " assumed", " what a typical alternative would change"], err
    data = json.loads(out)
    # 4 layers x (4 h^2 attention + 8 h^2 MLP + 2 h norms) + 2 x 1000 x 256 embeddings,
    # give or take the final norm (h)
    h = 256
    assert data["params"] == pytest.approx(4 * (12 * h * h + 2 * h) + 2 * 1000 * h, abs=h)
    assert data["step_time_s"] > 0


def test_user_file_defaults_are_recorded_honestly(tmp_path):
    path = _write(tmp_path / "my-model.toml", SHAPE)
    entry = parse_file(path, expect_kind="model", user=True)
    assert (entry.kind, entry.id, entry.name, entry.schema_version) == (
        "model", "my-model", "my-model", 1)
    assert entry.source == "user file my-model.toml"
    assert entry.params_published is None
    assert entry.kv_heads == 4 and entry.ffn == 1024


def test_id_from_an_awkward_file_name(tmp_path):
    entry = parse_file(_write(tmp_path / "My Model (v2).toml", SHAPE), "model", user=True)
    assert entry.id == "my-model-v2"


def test_bare_number_accelerator_file_evaluates(tmp_path, capsys):
    chip = _write(tmp_path / "chip.toml", CHIP)
    entry = parse_file(chip, expect_kind="accelerator", user=True)
    assert entry.hbm_bytes.value == 141e9 and entry.hbm_bytes.source == "user file chip.toml"
    assert entry.vendor is None and entry.release_date is None
    code, out, err = _run(capsys, "evaluate", "-m", "llama3-8b", "-H", str(chip), "-n", "64",
                          "--tokens", "1e11", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["hbm_bytes"] == 141e9


def test_shipped_catalog_stays_strict(tmp_path):
    text = (DATA_DIR / "models" / "llama3-8b.toml").read_text()
    start = text.index("params_published")
    stripped = text[:start] + text[text.index("\n", start) + 1:]
    path = _write(tmp_path / "llama3-8b.toml", stripped)
    with pytest.raises(CatalogError, match=r"llama3-8b.toml: params_published: missing required"):
        parse_file(path)
    assert parse_file(path, user=True).params_published is None
    with pytest.raises(CatalogError, match=r"kind: expected one of .*; missing"):
        parse_file(_write(tmp_path / "shape.toml", SHAPE))
    text = (DATA_DIR / "accelerators" / "h100-sxm.toml").read_text()
    path = _write(tmp_path / "h100-sxm.toml", text.replace('vendor = "NVIDIA"\n', ""))
    with pytest.raises(CatalogError, match=r"h100-sxm.toml: vendor: missing required key"):
        parse_file(path)


def test_every_problem_is_listed_with_its_key(tmp_path, capsys):
    path = _write(tmp_path / "bad.toml", 'hidden = -1\nheads = 0\nvocab = "x"\nseq_len = 64\n')
    with pytest.raises(CatalogError) as exc:
        parse_file(path, expect_kind="model", user=True)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.endswith(
        "bad.toml: 4 problems: layers: missing required key; "
        "hidden: input should be greater than or equal to 1, got -1; "
        "heads: input should be greater than or equal to 1, got 0; "
        "vocab: input should be a valid integer, got 'x'")
    code, _, err = _run(capsys, "evaluate", "-m", str(path))
    assert code == 2
    assert _error_line(err).startswith("capplan: error: ") and "4 problems: layers:" in err


def test_model_level_checks_are_all_listed(tmp_path):
    path = _write(tmp_path / "x.toml", "layers = 2\nhidden = 100\nheads = 8\nkv_heads = 3\n"
                  "vocab = 10\nseq_len = 8\nexperts_per_token = 2\n")
    with pytest.raises(CatalogError) as exc:
        parse_file(path, expect_kind="model", user=True)
    msg = str(exc.value)
    assert "3 problems: kv_heads: expected a divisor of heads (8), got 3; " in msg
    assert "; heads: expected a divisor of hidden (100) unless head_dim is given, got 8; " in msg
    assert msg.endswith("; experts_per_token: expected 0 for a dense model (experts = 0)")


def test_newline_in_a_value_stays_on_one_line(tmp_path):
    path = _write(tmp_path / "x.toml", SHAPE + 'kv_heads = "a\\nb"\n')
    with pytest.raises(CatalogError) as exc:
        parse_file(path, expect_kind="model", user=True)
    assert "\n" not in str(exc.value)


def test_catalog_dir_infers_kind_and_id(tmp_path, capsys):
    _write(tmp_path / "models" / "tiny-what-if.toml", SHAPE)
    _write(tmp_path / "accelerators" / "chip-x.toml", CHIP)
    cat = load_catalog([tmp_path])
    assert cat.model("tiny-what-if").layers == 4
    assert cat.accelerator("chip-x").peak_bf16_flops_per_s.value == 1.2e15
    code, out, err = _run(capsys, "evaluate", "-m", "tiny-what-if", "-H", "chip-x", "-n", "8",
                          "--tp", "1", "--pp", "1", "--tokens", "1e9", "-f", "json",
                          "--catalog", str(tmp_path))
    assert code == 0, err
    assert json.loads(out)["tokens_per_s"] > 0


def test_catalog_dir_file_without_kind_outside_a_kind_folder(tmp_path, capsys):
    _write(tmp_path / "loose.toml", SHAPE)
    code, _, err = _run(capsys, "catalog", "list", "--catalog", str(tmp_path))
    assert code == 2
    assert "loose.toml: kind: expected one of accelerator, node, site, site_class, model, " \
        "reliability, stack; missing" in _error_line(err)


# --- catalog directories are walked safely -----------------------------------------------------
def test_catalog_root_is_refused_quickly(capsys):
    code, _, err = _run(capsys, "catalog", "list", "--catalog", "/")
    assert code == 2
    line = _error_line(err)
    assert line.startswith("capplan: error: /") and "catalog directory" in line


def test_symlink_loop_and_special_files_are_not_followed(tmp_path):
    good = _write(tmp_path / "cat" / "models" / "tiny.toml", SHAPE)
    os.symlink(tmp_path / "cat", tmp_path / "cat" / "models" / "loop")  # a directory loop
    os.symlink("/proc", tmp_path / "cat" / "proc")  # a special file system
    os.symlink(tmp_path / "missing.toml", tmp_path / "cat" / "dangling.toml")
    os.mkfifo(tmp_path / "cat" / "pipe.toml")  # reading it would block forever
    _write(tmp_path / "cat" / ".git" / "x.toml", "not toml [")  # hidden folders skipped
    _write(tmp_path / "cat" / "notes.txt", "not a catalog file")
    assert loader.scan_dir(tmp_path / "cat") == [good]
    assert "tiny" in load_catalog([tmp_path / "cat"]).models


def test_walk_is_bounded(tmp_path, monkeypatch):
    deep = tmp_path / "d"
    for level in range(loader.MAX_DEPTH + 1):
        deep = deep / f"l{level}"
    deep.mkdir(parents=True)
    with pytest.raises(CatalogError, match=r"catalog directory has folders deeper than \d+ levels"):
        loader.scan_dir(tmp_path / "d")
    monkeypatch.setattr(loader, "MAX_DIRS", 3)
    for i in range(4):
        (tmp_path / "w" / f"s{i}").mkdir(parents=True)
    with pytest.raises(CatalogError, match=r"more than 3 folders"):
        loader.scan_dir(tmp_path / "w")
    monkeypatch.setattr(loader, "MAX_FILES", 2)
    for i in range(3):
        _write(tmp_path / "f" / f"m{i}.toml", SHAPE)
    with pytest.raises(CatalogError, match=r"more than 2 .toml files"):
        loader.scan_dir(tmp_path / "f")


@pytest.mark.parametrize("target, expected", [
    ("/dev/null", "not a regular file"),
    ("DIR", "is a directory"),
    ("MISSING", "no such file"),
])
def test_model_path_that_is_not_a_file(tmp_path, capsys, target, expected):
    target = {"DIR": str(tmp_path) + "/", "MISSING": str(tmp_path / "no.toml")}.get(target, target)
    code, _, err = _run(capsys, "evaluate", "-m", target)
    assert code == 2
    assert expected in _error_line(err)


# --- encodings ------------------------------------------------------------------------------
ENCODED = {
    "latin-1": (SHAPE + 'name = "café"\n').encode("latin-1"),
    "utf-16": (SHAPE + 'name = "café"\n').encode("utf-16"),
    "utf-32": (SHAPE + 'name = "café"\n').encode("utf-32"),
    "binary": b"layers = 4\n\x00\x00\x00",
}
REFUSAL = {"latin-1": "not UTF-8 text (byte 0xe9 at line 6, column 12",
           "utf-16": "file is UTF-16 text; save it as UTF-8",
           "utf-32": "file is UTF-32 text; save it as UTF-8",
           "binary": "contains NUL characters"}


@pytest.mark.parametrize("encoding", sorted(ENCODED))
def test_model_file_in_another_encoding_is_refused(tmp_path, capsys, encoding):
    path = _write(tmp_path / "m.toml", ENCODED[encoding])
    code, _, err = _run(capsys, "evaluate", "-m", str(path))
    assert code == 2
    assert REFUSAL[encoding] in _error_line(err)


@pytest.mark.parametrize("encoding", sorted(ENCODED))
def test_scenario_file_in_another_encoding_is_refused(tmp_path, capsys, encoding):
    text = 'model = "llama3-8b"\nsite = "café"\n'
    data = {"binary": ENCODED["binary"]}.get(encoding) or text.encode(encoding)
    path = _write(tmp_path / "s.toml", data)
    code, _, err = _run(capsys, "plan", "-s", str(path))
    assert code == 2
    assert REFUSAL[encoding].replace("line 6, column 12", "line 2, column 12") in _error_line(err)


def test_utf8_with_byte_order_mark_is_read(tmp_path):
    path = _write(tmp_path / "m.toml", b"\xef\xbb\xbf" + SHAPE.encode())
    assert parse_file(path, expect_kind="model", user=True).layers == 4
    from planner.cli.scenario_file import load

    scenario = _write(tmp_path / "s.toml", b"\xef\xbb\xbf" + b'model = "llama3-8b"\n')
    assert load(str(scenario)) == {"model": "llama3-8b"}


def test_shipped_data_unchanged_by_copying(tmp_path):
    """A shipped file copied into a user directory still loads (strict files are valid user files)."""
    shutil.copytree(DATA_DIR / "models", tmp_path / "models")
    assert load_catalog([tmp_path]).model("llama3-8b").layers == 32


def test_kind_that_is_not_a_string(tmp_path):
    path = _write(tmp_path / "k.toml", "kind = [1, 2]\n" + SHAPE)
    with pytest.raises(CatalogError, match=r"k.toml: kind: expected one of .*; got \[1, 2\]"):
        parse_file(path, user=True)


def test_file_name_with_a_newline_stays_on_one_line(tmp_path, capsys):
    path = _write(tmp_path / "a\nb.toml", "layers = [\n")
    code, _, err = _run(capsys, "evaluate", "-m", str(path))
    assert code == 2
    assert "a\\nb.toml: invalid TOML" in _error_line(err)
    code, _, err = _run(capsys, "plan", "-s", str(path))
    assert code == 2
    assert "a\\nb.toml: not valid TOML" in _error_line(err)


@pytest.mark.parametrize("argv", [
    ["catalog", "show", "h100-sxm\n"],
    ["evaluate", "--model", "\nllama3-8b"],
    ["evaluate", "--hardware", "h100\nsxm"],
    ["catalog", "list", "--catalog", "\nmy-dir"],
])
def test_names_with_newlines_give_one_line(capsys, argv):
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert "\\n" in _error_line(err)
