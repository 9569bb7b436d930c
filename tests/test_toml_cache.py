"""hardware_catalog.toml_cache: what it returns is exactly what tomllib returns."""

from __future__ import annotations

import math
import tomllib

import pytest

from hardware_catalog import clear_cache, load_catalog, toml_cache
from hardware_catalog.loader import DATA_DIR

TRICKY = """
kind = "model"
when = 2024-05-01
stamp = 1979-05-27T07:32:00-08:00
local = 1979-05-27T07:32:00
clock = 07:32:00.5
big = 123456789012345678901234
neg_zero = -0.0
inf = inf
nan = nan
text = "caf\\u00e9 \\"quoted\\" \\\\ $date"
[[rows]]
a = [1, 2.5, "x", 2020-01-02]
[nested.table]
"$date" = "not a tag"
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(toml_cache.ENV_VAR, str(tmp_path))
    toml_cache.forget()
    yield tmp_path
    toml_cache.forget()


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):
        return type(b) is float and math.copysign(1, a) == math.copysign(1, b) and a == b
    return type(a) is type(b) and a == b


def test_round_trip_of_every_shipped_file(cache_dir):
    texts = [p.read_text(encoding="utf-8") for p in sorted(DATA_DIR.rglob("*.toml"))]
    assert len(texts) > 50
    first = [toml_cache.loads(t) for t in texts]
    toml_cache.save()
    toml_cache.forget()  # a new process: everything from the file
    again = [toml_cache.loads(t) for t in texts]
    for text, a, b in zip(texts, first, again, strict=True):
        expected = tomllib.loads(text)
        assert _same(expected, a) and _same(expected, b)


def test_round_trip_of_every_toml_type(cache_dir):
    body = TRICKY.replace('[nested.table]\n"$date" = "not a tag"\n', "")
    toml_cache.loads(body)
    toml_cache.save()
    toml_cache.forget()
    assert _same(tomllib.loads(body), toml_cache.loads(body))
    stored = next(cache_dir.iterdir()).read_text(encoding="utf-8")
    assert "$datetime" in stored and "$time" in stored  # served from the file


def test_reserved_keys_are_parsed_every_time(cache_dir):
    data = toml_cache.loads(TRICKY)
    assert data["nested"]["table"] == {"$date": "not a tag"}
    toml_cache.save()
    assert not list(cache_dir.iterdir())  # nothing was stored


def test_each_call_gets_a_fresh_object(cache_dir):
    text = 'kind = "site"\nx = [1]\n'
    toml_cache.loads(text)["x"].append(2)
    assert toml_cache.loads(text) == {"kind": "site", "x": [1]}


def test_invalid_text_raises_and_is_not_stored(cache_dir):
    with pytest.raises(tomllib.TOMLDecodeError):
        toml_cache.loads("kind = ")
    toml_cache.save()
    assert not list(cache_dir.iterdir())


def test_a_corrupt_cache_is_ignored(cache_dir):
    toml_cache.loads('kind = "node"\n')
    toml_cache.save()
    (path,) = cache_dir.iterdir()
    path.write_text("{not json", encoding="utf-8")
    toml_cache.forget()
    assert toml_cache.loads('kind = "node"\n') == {"kind": "node"}


def test_disabled_and_unwritable(tmp_path, monkeypatch):
    monkeypatch.setenv(toml_cache.ENV_VAR, "off")
    toml_cache.forget()
    assert toml_cache.cache_file() is None
    toml_cache.loads('kind = "node"\n')
    toml_cache.save()  # nothing to do
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(toml_cache.ENV_VAR, str(blocker / "sub"))  # cannot be a directory
    toml_cache.forget()
    toml_cache.loads('kind = "site"\n')
    toml_cache.save()  # ignored
    toml_cache.forget()


def test_catalog_is_the_same_with_and_without_the_cache(cache_dir, monkeypatch):
    clear_cache()
    cold = load_catalog()
    clear_cache()
    warm = load_catalog()
    monkeypatch.setenv(toml_cache.ENV_VAR, "off")
    clear_cache()
    off = load_catalog()
    clear_cache()
    assert cold.version == warm.version == off.version
    for kind in ("accelerator", "model", "node", "site", "reliability"):
        assert cold.table(kind) == warm.table(kind) == off.table(kind)


def test_the_cache_never_writes_a_file_larger_than_it_reads_back(cache_dir, monkeypatch, capsys):
    """Issue 44: entries of 4,096 large files made a file above MAX_FILE_BYTES, which the
    next run refused with a warning, every run."""
    from hardware_catalog import private_cache

    limit = 20_000
    monkeypatch.setattr(toml_cache, "MAX_FILE_BYTES", limit)
    private_cache.reset_warning()
    texts = [f'kind = "model"\nid = "m{i}"\nnote = "{"x" * 900}"\n' for i in range(60)]
    for text in texts:
        toml_cache.loads(text)
    toml_cache.save()
    path = toml_cache.cache_file()
    assert 0.9 * limit < path.stat().st_size <= limit  # the newest entries that fit
    toml_cache.forget()
    assert toml_cache.loads(texts[-1]) == tomllib.loads(texts[-1])  # read back: a hit
    assert len(toml_cache._load_entries()) < len(texts)
    assert "warning" not in capsys.readouterr().err
    private_cache.reset_warning()


def test_an_oversized_cache_file_is_replaced_not_warned_about_forever(cache_dir, monkeypatch,
                                                                      capsys):
    from hardware_catalog import private_cache

    limit = 20_000
    monkeypatch.setattr(toml_cache, "MAX_FILE_BYTES", limit)
    path = toml_cache.cache_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(b"{" + b" " * (2 * limit) + b"}")
    path.chmod(0o600)
    private_cache.reset_warning()
    text = 'kind = "model"\nid = "small"\n'
    toml_cache.loads(text)  # the first run warns once and writes what it can read
    toml_cache.save()
    assert capsys.readouterr().err.count("warning") == 1
    assert path.stat().st_size <= limit
    toml_cache.forget()
    private_cache.reset_warning()
    assert toml_cache.loads(text) == tomllib.loads(text)  # the next run: a hit, no warning
    assert "warning" not in capsys.readouterr().err
    private_cache.reset_warning()
