"""The project's own validation tables (hardware_catalog/data/validation/*.csv, one run a
row) are data files with a source per row, read by one loader."""

import pytest

from planner.analysis import validate as v

TABLES = {"olmo_energy.csv": 3, "olmo_core_throughput.csv": 3, "later_stack_runs.csv": 4}


@pytest.mark.parametrize("name, count", TABLES.items())
def test_every_row_names_its_source(name, count):
    rows = v.data_rows(name)
    assert len(rows) == count
    for run_id, row in rows.items():
        assert row["run_id"] == run_id and len(row["source"]) > 40, run_id


def test_cells_are_typed():
    olmo = v.olmo_runs()["olmo2-13b"]
    assert olmo["gpus"] == 512 and isinstance(olmo["gpus"], int)
    assert olmo["tokens"] == 5.6e12 and olmo["gpu_energy_mwh"] == 257.0
    assert olmo["shard_group"] == 8 and v.olmo_runs()["olmo2-7b"]["shard_group"] is None
    assert v.data_rows("olmo_core_throughput.csv")["olmo-core-7b"]["published_range"] \
        == "9,700-10,000"
