"""hardware_catalog.validated_cache: the shipped catalog's validated entries, kept across
runs, give the same catalog as validating the files; any change of the files or of the
catalog's code is a miss; a corrupt, foreign or malformed cache is a miss (full
validation) with at most one warning line."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest

from hardware_catalog import (
    clear_cache,
    load_catalog,
    loader,
    prices,
    private_cache,
    schema,
    toml_cache,
)
from hardware_catalog import validated_cache as vc

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("accelerator", "node", "site", "site_class", "model", "reliability", "stack")
_PARSE = loader.parse_file


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(toml_cache.ENV_VAR, str(folder))
    clear_cache()
    prices.load_prices.cache_clear()
    private_cache.reset_warning()
    yield folder
    clear_cache()
    prices.load_prices.cache_clear()
    private_cache.reset_warning()


def _file() -> Path:
    return vc.cache_file(loader.DATA_DIR)


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("capplan: warning:")]


def _validations(monkeypatch) -> list[str]:
    """Count the files the loader parses and validates (empty: served from the cache)."""
    seen: list[str] = []

    def counting(path, *args, **kwargs):
        seen.append(str(path))
        return _PARSE(path, *args, **kwargs)

    monkeypatch.setattr(loader, "parse_file", counting)
    return seen


def _same_catalog(a, b) -> None:
    assert a.version == b.version
    assert a.origins == b.origins and list(a.origins) == list(b.origins)
    for kind in KINDS:
        ta, tb = a.table(kind), b.table(kind)
        assert list(ta) == list(tb)
        for key in ta:
            ea, eb = ta[key], tb[key]
            assert type(ea) is type(eb) and ea == eb
            assert ea.model_fields_set == eb.model_fields_set
            assert ea.model_dump(mode="json") == eb.model_dump(mode="json")


# ------------------------------------------------------------------------ same answers

def test_a_hit_gives_the_catalog_validation_gives(cache_dir, monkeypatch):
    cold = load_catalog()  # a miss: validated and stored
    assert _file().is_file()
    clear_cache()
    validated = _validations(monkeypatch)
    warm = load_catalog()
    assert validated == []  # served from the cache file
    monkeypatch.setenv(toml_cache.ENV_VAR, "off")
    clear_cache()
    off = load_catalog()
    assert len(validated) > 100  # validated every file
    _same_catalog(cold, warm)
    _same_catalog(cold, off)


def test_a_hit_builds_no_validator(cache_dir):
    load_catalog()
    code = ("import sys\n"
            "from hardware_catalog import load_catalog, schema\n"
            "cat = load_catalog()\n"
            "assert cat.accelerator('h100-sxm').peak_bf16_flops_per_s.value > 0\n"
            "print(sum(m.__pydantic_complete__ for m in schema.KIND_MODELS.values()))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), toml_cache.ENV_VAR: str(cache_dir)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_user_files_are_validated_on_every_load(cache_dir, tmp_path, monkeypatch):
    user = tmp_path / "mine"
    (user / "sites").mkdir(parents=True)
    (user / "sites" / "lab.toml").write_text(
        'pue = { value = 1.2 }\nelectricity_usd_per_kwh = { value = 0.1 }\n'
        'grid_intensity_g_per_kwh = { value = 300 }\n', encoding="utf-8")
    load_catalog([user])
    clear_cache()
    validated = _validations(monkeypatch)
    cat = load_catalog([user])
    assert validated == [str(user / "sites" / "lab.toml")]
    assert cat.site("lab").pue.value == 1.2
    (user / "sites" / "lab.toml").write_text(
        'pue = { value = 9 }\nelectricity_usd_per_kwh = { value = 0.1 }\n'
        'grid_intensity_g_per_kwh = { value = 300 }\n', encoding="utf-8")
    clear_cache()
    with pytest.raises(loader.CatalogError, match="pue.value: expected 1 <= PUE <= 3"):
        load_catalog([user])


# ------------------------------------------------------------------------ invalidation

@pytest.fixture
def own_data(tmp_path, monkeypatch):
    """A copy of the shipped data folder, used as the shipped catalog."""
    data = tmp_path / "data"
    shutil.copytree(loader.DATA_DIR, data)
    monkeypatch.setattr(loader, "DATA_DIR", data)
    return data


def test_an_edited_catalog_file_is_validated_again(cache_dir, own_data, monkeypatch, capsys):
    first = load_catalog()
    before = _file().read_bytes()
    h100 = own_data / "accelerators" / "h100-sxm.toml"
    text = h100.read_text(encoding="utf-8")
    old = first.accelerator("h100-sxm").cloud_price_usd_per_gpu_hour.value
    edited = text.replace(f"cloud_price_usd_per_gpu_hour = {{ value = {old:g},",
                          "cloud_price_usd_per_gpu_hour = { value = 1.23,")
    assert edited != text
    h100.write_text(edited, encoding="utf-8")
    clear_cache()
    validated = _validations(monkeypatch)
    second = load_catalog()
    assert len(validated) > 100  # a miss
    assert second.accelerator("h100-sxm").cloud_price_usd_per_gpu_hour.value == 1.23
    assert second.version != first.version
    assert _file().read_bytes() != before  # stored again under the new key
    assert _warnings(capsys.readouterr().err) == []  # a stale key is no problem


def test_an_invalid_edit_is_reported_whatever_the_cache_holds(cache_dir, own_data):
    load_catalog()
    h100 = own_data / "accelerators" / "h100-sxm.toml"
    h100.write_text(h100.read_text(encoding="utf-8").replace('kind = "accelerator"',
                                                             'kind = "acelerator"'),
                    encoding="utf-8")
    clear_cache()
    with pytest.raises(loader.CatalogError, match="kind"):
        load_catalog()


def test_the_key_covers_the_files_the_code_and_the_versions(tmp_path, monkeypatch):
    digest = hashlib.sha256(b"files").digest()
    base = vc.key(digest, loader.DATA_DIR)
    assert vc.key(digest, loader.DATA_DIR) == base
    assert vc.key(hashlib.sha256(b"other").digest(), loader.DATA_DIR) != base
    assert vc.key(digest, tmp_path) != base
    monkeypatch.setattr(pydantic, "VERSION", "0.0.1")
    assert vc.key(digest, loader.DATA_DIR) != base
    monkeypatch.undo()
    code = tmp_path / "code"
    shutil.copytree(Path(vc.__file__).parent, code, ignore=shutil.ignore_patterns("data"))
    monkeypatch.setattr(vc, "_CODE_DIR", code)
    assert vc.key(digest, loader.DATA_DIR) == base
    source = code / "schema.py"
    source.write_text(source.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    vc._code_digest.cache_clear()  # read once per process: a new process reads it again
    assert vc.key(digest, loader.DATA_DIR) != base


# ---------------------------------------------------------------- a bad cache: a miss

def _reload(monkeypatch, capsys) -> tuple[list[str], list[str]]:
    """Load again in a fresh state: (files validated, warning lines)."""
    clear_cache()
    private_cache.reset_warning()
    capsys.readouterr()
    validated = _validations(monkeypatch)
    load_catalog()
    monkeypatch.setattr(loader, "parse_file", _PARSE)
    return validated, _warnings(capsys.readouterr().err)


def _rewrite(payload: bytes) -> None:
    """Replace the stored payload, keeping the header and key, with a valid checksum."""
    header, key, _, _ = _file().read_bytes().split(b"\n", 3)
    checksum = hashlib.sha256(payload).hexdigest().encode()
    _file().write_bytes(b"\n".join((header, key, checksum, payload)))


def test_a_truncated_cache_is_a_miss_and_replaced(cache_dir, monkeypatch, capsys):
    expected = load_catalog()
    raw = _file().read_bytes()
    _file().write_bytes(raw[: len(raw) // 2])
    validated, warnings = _reload(monkeypatch, capsys)
    assert len(validated) > 100
    assert len(warnings) == 1 and "truncated or corrupt" in warnings[0]
    _same_catalog(expected, load_catalog())
    assert _file().read_bytes() == raw  # stored again
    validated, warnings = _reload(monkeypatch, capsys)
    assert validated == [] and warnings == []


def test_a_flipped_byte_is_a_miss(cache_dir, monkeypatch, capsys):
    load_catalog()
    raw = bytearray(_file().read_bytes())
    raw[-100] ^= 0x01
    _file().write_bytes(bytes(raw))
    validated, warnings = _reload(monkeypatch, capsys)
    assert len(validated) > 100 and len(warnings) == 1


class _Planted:
    """Unpickles as a call of ``os.system`` (what a planted pickle would do)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def test_a_payload_that_would_run_code_is_refused(cache_dir, tmp_path, monkeypatch, capsys):
    load_catalog()
    marker = tmp_path / "ran"
    _rewrite(pickle.dumps(_Planted(f"touch {marker}")))
    validated, warnings = _reload(monkeypatch, capsys)
    assert not marker.exists()  # the unpickler never looked os.system up
    assert len(validated) > 100
    assert len(warnings) == 1 and "refers to posix.system" in warnings[0]


@pytest.mark.parametrize("payload", [
    pickle.dumps([("accelerators/h100-sxm.toml", Path("/"))]),  # a global not allowed
    pickle.dumps([]),  # not one entry per file
    pickle.dumps({"a": 1}),
    b"not a pickle",
])
def test_a_malformed_payload_is_a_miss(cache_dir, monkeypatch, capsys, payload):
    load_catalog()
    _rewrite(payload)
    validated, warnings = _reload(monkeypatch, capsys)
    assert len(validated) > 100
    assert len(warnings) == 1 and "malformed" in warnings[0]


def test_entries_that_do_not_match_the_files_are_a_miss(cache_dir, monkeypatch, capsys):
    load_catalog()
    files = loader.scan_dir(loader.DATA_DIR)
    pairs = vc.load(_file().read_bytes().split(b"\n")[1], files, loader.DATA_DIR)
    assert pairs is not None and [p for p, _ in pairs] == files
    swapped = [(p.relative_to(loader.DATA_DIR).as_posix(), e) for p, e in pairs]
    swapped[0], swapped[1] = (swapped[0][0], swapped[1][1]), (swapped[1][0], swapped[0][1])
    node = next(i for i, (_, e) in enumerate(swapped) if e.kind == "node")
    wrong_class = schema.Site.model_construct(**dict(swapped[node][1]))
    for stored in (swapped[1:], [(rel, wrong_class) if i == node else (rel, e)
                                 for i, (rel, e) in enumerate(swapped)]):
        _rewrite(pickle.dumps(stored))
        validated, warnings = _reload(monkeypatch, capsys)
        assert len(validated) > 100 and len(warnings) == 1, warnings


def test_another_header_is_a_miss(cache_dir, monkeypatch, capsys):
    load_catalog()
    _file().write_bytes(b"something else\n" + _file().read_bytes())
    validated, warnings = _reload(monkeypatch, capsys)
    assert len(validated) > 100 and len(warnings) == 1


def test_a_group_writable_cache_is_not_read(cache_dir, monkeypatch, capsys):
    load_catalog()
    os.chmod(_file(), 0o664)
    validated, warnings = _reload(monkeypatch, capsys)
    assert len(validated) > 100
    assert len(warnings) == 1 and "writable by other users" in warnings[0]


def test_a_cache_of_ours_is_used_as_stored(cache_dir, monkeypatch, capsys):
    """The check that the tests above can fail: a well-formed file of ours is served."""
    load_catalog()
    files = loader.scan_dir(loader.DATA_DIR)
    pairs = vc.load(_file().read_bytes().split(b"\n")[1], files, loader.DATA_DIR)
    stored = []
    for path, entry in pairs:
        if entry.kind == "accelerator" and entry.id == "h100-sxm":
            price = entry.cloud_price_usd_per_gpu_hour.model_copy(update={"value": 0.5})
            entry = entry.model_copy(update={"cloud_price_usd_per_gpu_hour": price})
        stored.append((path.relative_to(loader.DATA_DIR).as_posix(), entry))
    _rewrite(pickle.dumps(stored))
    validated, warnings = _reload(monkeypatch, capsys)
    assert validated == [] and warnings == []
    assert load_catalog().accelerator("h100-sxm").cloud_price_usd_per_gpu_hour.value == 0.5


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(toml_cache.ENV_VAR, "off")
    clear_cache()
    assert vc.cache_file(loader.DATA_DIR) is None
    load_catalog()
    clear_cache()


# ------------------------------------------------------------ the shipped price table

def _price_file() -> Path:
    return vc.cache_file(prices.SHIPPED_FILE, prices.SHIPPED_FILE.stem)


def _price_reads(monkeypatch) -> list[str]:
    seen: list[str] = []
    read = prices.read_price_file

    def counting(path):
        seen.append(str(path))
        return read(path)

    monkeypatch.setattr(prices, "read_price_file", counting)
    return seen


def test_price_rows_are_the_same_from_the_cache(cache_dir, monkeypatch):
    cold = prices.load_prices()
    assert _price_file().is_file()
    prices.load_prices.cache_clear()
    reads = _price_reads(monkeypatch)
    warm = prices.load_prices()
    assert reads == []  # served from the cache file
    monkeypatch.setenv(toml_cache.ENV_VAR, "off")
    prices.load_prices.cache_clear()
    off = prices.load_prices()
    assert reads == [str(prices.SHIPPED_FILE)]
    assert cold == warm == off and len(cold) > 1000
    assert all(type(r) is prices.PriceRow for r in warm)


@pytest.mark.parametrize("stored", [[1, 2], {"rows": []}, [("a", "b")]])
def test_a_malformed_price_cache_is_a_miss(cache_dir, monkeypatch, capsys, stored):
    expected = prices.load_prices()
    header, key, _, _ = _price_file().read_bytes().split(b"\n", 3)
    payload = pickle.dumps(stored)
    _price_file().write_bytes(b"\n".join((header, key, hashlib.sha256(payload).hexdigest()
                                          .encode(), payload)))
    prices.load_prices.cache_clear()
    private_cache.reset_warning()
    capsys.readouterr()
    reads = _price_reads(monkeypatch)
    assert prices.load_prices() == expected
    assert reads == [str(prices.SHIPPED_FILE)]
    assert len(_warnings(capsys.readouterr().err)) == 1


def test_an_edited_price_table_is_read_again(cache_dir, tmp_path, monkeypatch):
    table = tmp_path / "gpu_cloud_prices.csv"
    shutil.copy(prices.SHIPPED_FILE, table)
    monkeypatch.setattr(prices, "SHIPPED_FILE", table)
    first = prices.load_prices()
    lines = table.read_text(encoding="utf-8").splitlines(keepends=True)
    table.write_text("".join(lines[:-1]), encoding="utf-8")  # one row fewer
    prices.load_prices.cache_clear()
    reads = _price_reads(monkeypatch)
    second = prices.load_prices()
    assert reads == [str(table)] and second == first[:-1]


def test_a_validated_cache_larger_than_it_reads_back_is_not_written(cache_dir, monkeypatch):
    """Issue 44: write only what the reader accepts (it refuses files above MAX_FILE_BYTES
    with a warning, every run); an older file there is removed."""
    monkeypatch.setattr(vc, "MAX_FILE_BYTES", 1000)
    path = cache_dir / "big.cache"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(b"old")
    path.chmod(0o600)
    vc._write(path, b"k" * 16, ["x" * 2000])
    assert not path.exists()
    vc._write(path, b"k" * 16, ["x" * 10])
    assert 0 < path.stat().st_size <= 1000
