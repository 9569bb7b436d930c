"""benchmarks/calibrate.py --write puts each fitted value where the catalog reads it: a
stack that ``extends`` another and states no line of an entry takes the line of its base,
an owner of the same entry, which is written; fitted alone it has no line (refused)."""

import importlib.util
import shutil
import tomllib
from pathlib import Path

import pytest

from planner.analysis.calibration import GRID

ROOT = Path(__file__).resolve().parents[1]


def _calibrate():
    spec = importlib.util.spec_from_file_location("calibrate_cli", ROOT / "benchmarks" / "calibrate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_top_level_grid_entry_is_written_to_the_file_that_holds_it(tmp_path, monkeypatch):
    # every GRID entry, those of a stack on one accelerator ([on_accelerator.<id>] tables)
    # included: each owner names a table its file states or one of a stack it extends
    calibrate = _calibrate()
    shutil.copytree(ROOT / "hardware_catalog" / "data", tmp_path / "hardware_catalog" / "data")
    inputs = tmp_path / "planner" / "engine" / "inputs"
    inputs.mkdir(parents=True)
    shutil.copy(ROOT / "planner" / "engine" / "inputs" / "execution.toml", inputs)
    monkeypatch.setattr(calibrate, "ROOT", tmp_path)
    stacks = tmp_path / "hardware_catalog" / "data" / "stacks"
    eager_before = (stacks / "torchtitan-fsdp2-eager.toml").read_text()

    values = {key: grid[len(grid) // 2] for key, grid in GRID.items()}
    calibrate.write_values(values)  # each owner's entry found once, else an AssertionError
    # a generation's GEMM efficiency lands in each part times its share of it (GB200: its
    # matmul benchmark's share of peak over Blackwell's, transfer.part_scales)
    accelerators = tmp_path / "hardware_catalog" / "data" / "accelerators"
    blackwell = next(k for k in values if k[1] == "gemm_max_efficiency" and "gb200" in k[0])
    gb200 = tomllib.loads((accelerators / "gb200.toml").read_text())
    assert gb200["gemm_max_efficiency"]["value"] == pytest.approx(
        values[blackwell] * calibrate.gemm_scales()[("gb200", "gemm_max_efficiency")],
        rel=1e-3)
    # the autocast GEMM share on Hopper lands in every stack that states it
    share = next(k for k in values if k[1] == "gemm_efficiency_factor")
    for stack in ("llm-foundry-2023", "torchtitan-fsdp2", "deepspeed-zero"):
        table = tomllib.loads((stacks / f"{stack}.toml").read_text())["on_accelerator"]
        assert table["h100-sxm"]["gemm_efficiency_factor"]["value"] == values[share]

    # torchtitan-fsdp2-eager states none of the fitted entries: they land in the file it
    # extends, which both stacks read
    assert (stacks / "torchtitan-fsdp2-eager.toml").read_text() == eager_before
    base = tomllib.loads((stacks / "torchtitan-fsdp2.toml").read_text())
    owners, name = next(k for k in values if "stack:torchtitan-fsdp2-eager" in k[0])
    assert base[name]["value"] == values[(owners, name)]
    # fitted on its own, the eager stack has no line of its own to take the value
    with pytest.raises(AssertionError):
        calibrate.write_values({(("stack:torchtitan-fsdp2-eager",), name): 0.5})
