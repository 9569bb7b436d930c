"""User price files (``<catalog>/prices/*.csv``) are checked like every other catalog file
(issue 44): each bad cell one line naming file, line and column, exit 2; a UTF-8 BOM is
read; a file over the size limit is refused before parsing; ``prices refresh`` writes no
row the loader would refuse."""

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware_catalog.errors import CatalogError
from hardware_catalog.price_schema import (
    COLUMNS,
    MAX_PRICE_FILE_BYTES,
    USD_PER_GPU_HOUR,
)
from hardware_catalog.prices import (
    SHIPPED_FILE,
    loadable_rows,
    read_price_file,
    rows_from_skypilot,
    write_price_file,
)
from planner.cli.main import main

HEADER = ",".join(COLUMNS)
GOOD = {"provider": "mycloud", "instance_type": "x8", "accelerator": "H100",
        "accelerator_count": "8", "gpu_memory_gib": "80", "region": "r1",
        "on_demand_usd_per_hour": "24", "spot_usd_per_hour": "",
        "on_demand_usd_per_gpu_hour": "3", "spot_usd_per_gpu_hour": "",
        "marketplace": "false", "source_path": "mine", "source_commit": "local"}


def _file(tmp_path, rows, name="x.csv", bom=False) -> str:
    folder = tmp_path / "cat" / "prices"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [HEADER] + [",".join({**GOOD, **row}[c] for c in COLUMNS) for row in rows]
    (folder / name).write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n",
                               encoding="utf-8")
    return str(tmp_path / "cat")


#: (column, cell, words the one line must hold); the per-GPU columns are emptied so the
#: instance price alone is judged.
BAD = [
    ("accelerator_count", "inf", "'inf' is not allowed; expected an integer 1..1024"),
    ("accelerator_count", "1e308", "expected an integer 1..1024"),
    ("accelerator_count", "0", "'0' is not allowed; expected an integer 1..1024"),
    ("accelerator_count", "2000", "'2000' is not allowed"),
    ("accelerator_count", "nan", "'nan' is not allowed"),
    ("accelerator_count", "2.5", "'2.5' is not allowed"),
    ("on_demand_usd_per_hour", "1e-320", "expected 0.01..1000 USD per GPU-hour"),
    ("on_demand_usd_per_hour", "1e308", "is 1.25e+307 USD per GPU-hour; expected 0.01..1000"),
    ("on_demand_usd_per_hour", "-3", "'-3' is not allowed; expected a price"),
    ("on_demand_usd_per_hour", "nan", "'nan' is not allowed"),
    ("on_demand_usd_per_hour", "inf", "'inf' is not allowed"),
    ("on_demand_usd_per_hour", "cheap", "'cheap' is not allowed"),
    ("spot_usd_per_hour", "-0.5", "'-0.5' is not allowed"),
    ("spot_usd_per_hour", "0", "'0' is not allowed"),
    ("gpu_memory_gib", "nan", "'nan' is not allowed"),
    ("marketplace", "maybe", "expected true, false or an empty cell"),
    ("provider", "=HYPERLINK(1)", "expected a provider name"),
    ("region", "=HYPERLINK(1)", "not starting with = + - @"),
    ("accelerator", "", "an empty cell is not allowed"),
]


@pytest.mark.parametrize(("column", "cell", "words"), BAD)
def test_a_bad_cell_is_one_line_naming_file_line_and_column(tmp_path, capsys, column, cell,
                                                            words):
    row = {column: cell, "on_demand_usd_per_gpu_hour": ""}
    catalog = _file(tmp_path, [{}, row])
    code = main(["prices", "show", "h100-sxm", "--catalog", catalog, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"prices/x.csv:3: {column}: " in err and words in err, err


def test_an_infinite_count_no_longer_prices_a_run_at_zero(tmp_path, capsys):
    """Before: cost_usd 0.0 and exit 0 (inf accelerators made the GPU-hour free)."""
    catalog = _file(tmp_path, [{"accelerator_count": "inf", "on_demand_usd_per_gpu_hour": ""}])
    code = main(["evaluate", "-m", "llama3-8b", "-H", "h100-sxm", "--gpus", "64",
                 "--catalog", catalog, "--provider", "cheapest", "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err.strip().endswith("x.csv:2: accelerator_count: 'inf' is not allowed; "
                                "expected an integer 1..1024")


@pytest.mark.parametrize(("row", "words"), [
    ({"on_demand_usd_per_gpu_hour": "1"}, "on_demand_usd_per_gpu_hour: '1' is not allowed; "
                                          "expected 3 (on_demand_usd_per_hour 24 over 8"),
    ({"on_demand_usd_per_hour": "", "spot_usd_per_hour": "9"},
     "on_demand_usd_per_gpu_hour: '3' is given without on_demand_usd_per_hour"),
    ({"on_demand_usd_per_hour": "", "on_demand_usd_per_gpu_hour": ""}, "no price"),
    ({"accelerator": "tpu-v4-0"}, "is a slice of 0 chips"),
])
def test_rows_that_would_be_read_otherwise_than_they_say(tmp_path, row, words):
    catalog = _file(tmp_path, [row])
    with pytest.raises(CatalogError, match="x.csv:2: ") as caught:
        read_price_file(f"{catalog}/prices/x.csv")
    assert words in str(caught.value)


@pytest.mark.parametrize(("header", "words"), [
    (HEADER.replace("region", "regoin"), "unknown column 'regoin'; did you mean region?"),
    (HEADER + ",region", "column region appears 2 times"),
    (HEADER.replace("provider,", ""), "lacks column(s) provider"),
])
def test_a_bad_header_is_one_line(tmp_path, header, words):
    path = tmp_path / "x.csv"
    path.write_text(header + "\n")
    with pytest.raises(CatalogError) as caught:
        read_price_file(path)
    assert words in str(caught.value)


def test_a_row_of_the_wrong_width_is_refused(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(HEADER + "\n" + ",".join(GOOD[c] for c in COLUMNS) + ",extra\n")
    with pytest.raises(CatalogError, match=r"x.csv:2: the row has 14 cells; expected 13"):
        read_price_file(path)


def test_a_byte_order_mark_is_read(tmp_path, capsys):
    """Before: "price file lacks column(s) provider" (the BOM glued to the first name)."""
    catalog = _file(tmp_path, [{}], bom=True)
    (row,) = read_price_file(f"{catalog}/prices/x.csv")
    assert (row.provider, row.accelerator, row.on_demand_usd_per_gpu_hour) == (
        "mycloud", "h100-sxm", 3.0)
    assert main(["evaluate", "-m", "llama3-8b", "-H", "h100-sxm", "--gpus", "64",
                 "--catalog", catalog, "--provider", "mycloud", "-f", "json"]) == 0
    assert '"usd_per_gpu_hour": 3.0' in capsys.readouterr().out


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path, capsys):
    catalog = _file(tmp_path, [{}])
    path = tmp_path / "cat" / "prices" / "x.csv"
    with path.open("a") as handle:
        handle.write("#" * (MAX_PRICE_FILE_BYTES - path.stat().st_size + 1))
    code = main(["prices", "show", "h100-sxm", "--catalog", catalog])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"expected a CSV price file of at most {MAX_PRICE_FILE_BYTES:,} bytes" in err


def test_the_shipped_table_passes_its_own_schema():
    assert len(read_price_file(SHIPPED_FILE)) > 1000


VMS = """InstanceType,AcceleratorName,AcceleratorCount,GpuInfo,Price,SpotPrice,Region
p5.48xlarge,H100,8,,40.0,12.0,us-east-1
huge.x,H100,2000,,40.0,12.0,us-east-1
dear.x,H100,8,,1e308,,us-east-1
free.x,H100,8,,1e-320,,us-east-1
=cmd,H100,8,,40.0,,us-east-1
,tpu-v4-0,1,,40.0,,us-central2
nan.x,H100,nan,"{'SizeInMiB': 1.2.3}",40.0,,us-east-1
"""


def test_refresh_writes_only_rows_the_loader_reads(tmp_path, capsys):
    source = tmp_path / "aws" / "vms.csv"
    source.parent.mkdir()
    source.write_text(VMS)
    into = tmp_path / "cat"
    assert main(["prices", "refresh", str(source), "--into", str(into)]) == 0
    err = capsys.readouterr().err
    assert "left out 6 row(s)" in err and "huge.x" in err
    (row,) = read_price_file(into / "prices" / "aws.csv")
    assert (row.instance_type, row.on_demand_usd_per_gpu_hour) == ("p5.48xlarge", 5.0)


def test_refresh_with_no_usable_row_writes_nothing(tmp_path, capsys):
    source = tmp_path / "aws" / "vms.csv"
    source.parent.mkdir()
    source.write_text(VMS.replace("p5.48xlarge,H100,8,,40.0,12.0,us-east-1\n", ""))
    into = tmp_path / "cat"
    assert main(["prices", "refresh", str(source), "--into", str(into)]) == 2
    assert "no accelerator rows with a usable price" in capsys.readouterr().err
    assert not (into / "prices" / "aws.csv").exists()


def test_write_price_file_refuses_what_read_price_file_would(tmp_path, monkeypatch):
    from hardware_catalog import prices

    monkeypatch.setattr(prices, "MAX_PRICE_FILE_BYTES", 400)
    rows = rows_from_skypilot(_vms(tmp_path, 5), "aws")
    with pytest.raises(CatalogError, match="a price file holds at most 400 bytes"):
        write_price_file(rows, tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


def _vms(tmp_path, n):
    path = tmp_path / "vms.csv"
    path.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                    + "".join(f"p5.{i},H100,8,40.0,,r{i}\n" for i in range(n)))
    return path


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.integers(-10, 5000).map(str),
                    st.sampled_from(["", "abc", "1e308", "1e-320", "-0", "8.0", " 8 "]))


@settings(max_examples=300, deadline=None)
@given(count=NUMBERS, on_demand=NUMBERS, spot=NUMBERS, memory=NUMBERS)
def test_a_row_is_refused_in_one_line_or_priced_inside_the_domain(count, on_demand, spot,
                                                                  memory):
    row = {**GOOD, "accelerator_count": count, "on_demand_usd_per_hour": on_demand,
           "spot_usd_per_hour": spot, "gpu_memory_gib": memory,
           "on_demand_usd_per_gpu_hour": ""}
    kept, refused = loadable_rows([row], "f.csv")
    assert len(kept) + len(refused) == 1
    if refused:
        assert "\n" not in refused[0] and refused[0].startswith("f.csv (")
        return
    low, high = USD_PER_GPU_HOUR
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.csv"
        write_price_file(kept, path)
        (priced,) = read_price_file(path)
    for value in (priced.on_demand_usd_per_gpu_hour, priced.spot_usd_per_gpu_hour):
        assert value is None or (math.isfinite(value) and low <= value <= high)
    assert 1 <= priced.chips <= 1024
