"""User catalog files survive upgrades (issue 40 item 8): a file written before a key was
added takes the key's declared default, said once on stderr; the shipped catalog stays
strict."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from hardware_catalog import CatalogError, clear_cache, load_catalog, parse_file
from hardware_catalog.schema import ADDED_KEYS, KIND_MODELS
from planner.cli.main import main

#: megatron-core-2025.toml as shipped on 2026-11-25 (git show 9e3167b^:...), renamed: it
#: has none of the three keys stacks gained on 2026-11-26.
OLD_STACK = Path(__file__).parent / "data" / "old_files" / "my-stack-2026-11-25.toml"
ADDED = tuple(ADDED_KEYS["stack"])


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def test_every_added_key_is_a_required_field_with_a_dated_default():
    for kind, keys in ADDED_KEYS.items():
        fields = KIND_MODELS[kind].model_fields
        for key, (_value, added, meaning) in keys.items():
            assert key in fields and fields[key].is_required(), key
            assert date.fromisoformat(added) <= date.today() and len(meaning) > 20


def test_an_old_stack_in_a_catalog_directory_loads_with_the_defaults(tmp_path, capsys):
    text = OLD_STACK.read_text()
    assert not any(f"\n{k} =" in text for k in ADDED)
    (tmp_path / "stacks").mkdir()
    shutil.copy(OLD_STACK, tmp_path / "stacks")
    stack = load_catalog([str(tmp_path)]).stack("my-stack-2026-11-25")
    for key in ADDED:
        q = getattr(stack, key)
        assert q.value == ADDED_KEYS["stack"][key][0] \
            and f"added {ADDED_KEYS['stack'][key][1]}" in q.source
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("capplan: ") and "my-stack-2026-11-25.toml: " in err[0]
    assert "not given, keys added 2026-11-26, 2026-11-29; using the defaults" in err[0]
    assert "recompute_mla_up_proj = 0, recompute_norms = 0, optimizer_bytes_per_param = 12, " \
        "cuda_graphs = 0, graph_launch_s = 1e-05" in err[0]


def test_evaluate_with_an_old_stack_file_says_so_once_and_equals_the_stated_file(
        tmp_path, capsys):
    args = ["evaluate", "-m", "llama2-7b", "-H", "h100-sxm", "-n", "8", "-f", "json"]
    assert main([*args, "--stack", str(OLD_STACK)]) == 0
    out, err = capsys.readouterr()
    told = [line for line in err.splitlines() if "not given, keys added" in line]
    assert len(told) == 1, err
    stated = tmp_path / "stated.toml"
    stated.write_text(OLD_STACK.read_text() + "".join(
        f'{k} = {{ value = {v}, source = "stated", as_of = 2026-11-26 }}\n'
        for k, (v, _, _) in ADDED_KEYS["stack"].items()))
    assert main([*args, "--stack", str(stated)]) == 0
    out_stated, err_stated = capsys.readouterr()
    assert "not given" not in err_stated
    old, new = json.loads(out), json.loads(out_stated)
    for payload in (old, new):  # the stack's file name, and which build answered
        payload["inputs"].pop("stack"), payload["assumptions"].pop("stack")
        payload.pop("version"), payload.pop("catalog_version")
    assert old == new


def test_the_shipped_catalog_still_requires_them():
    with pytest.raises(CatalogError, match="recompute_mla_up_proj: missing required key"):
        parse_file(OLD_STACK)
