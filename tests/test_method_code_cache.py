"""method_code_cache: dataclasses made with the kept code behave as without it, a later run compiles nothing it kept,
and a cache file another user could have written is not read."""

import dataclasses
import marshal
import os

import pytest

from trainsizer import method_code_cache


def _point_class():  # a class as trainsizer writes them: frozen, slotted, keyword-only, a default
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Point:
        x: float
        y: float = 0.5
        tags: tuple[str, ...] = ()

    return Point


def _behaviour(cls):
    a, b = cls(x=1.0, tags=("a",)), cls(x=1.0, tags=("a",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 2.0
    with pytest.raises(TypeError):
        cls(1.0)  # keyword-only
    return (a == b, hash(a) == hash(b), repr(a), a != cls(x=2.0), [f.name for f in dataclasses.fields(cls)],
            dataclasses.replace(a, y=3.0).y, cls.__slots__)


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """A cache folder of its own and the module's state reset; dataclasses' ``exec`` restored afterwards."""
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(dataclasses, "exec", exec, raising=False)
    _reset_state(monkeypatch)
    return tmp_path


def _reset_state(monkeypatch):
    monkeypatch.setattr(method_code_cache, "_codes", {})
    monkeypatch.setattr(method_code_cache, "_used", set())
    monkeypatch.setattr(method_code_cache, "_compiled", [])


def test_kept_code_makes_the_same_classes_and_a_second_run_compiles_nothing(fresh_cache, monkeypatch):
    plain = _behaviour(_point_class())
    method_code_cache.install()
    first = _behaviour(_point_class())
    assert method_code_cache._compiled  # the first run compiled the methods ...
    method_code_cache.save()
    assert method_code_cache._cache_file().exists()
    _reset_state(monkeypatch)  # ... a later run reads them back
    method_code_cache.install()
    again = _behaviour(_point_class())
    assert method_code_cache._compiled == []
    assert method_code_cache._used
    assert plain == first == again


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file ownership is checked on POSIX only")
def test_a_cache_file_others_may_write_is_not_read(fresh_cache, monkeypatch):
    method_code_cache.install()
    _point_class()
    method_code_cache.save()
    path = method_code_cache._cache_file()
    path.chmod(0o666)
    _reset_state(monkeypatch)
    method_code_cache.install()
    assert method_code_cache._codes == {}
    _point_class()
    assert method_code_cache._compiled  # compiled again, as without a cache


def test_a_cache_file_that_holds_anything_but_code_is_not_read(fresh_cache, monkeypatch):
    path = method_code_cache._cache_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(marshal.dumps({"def f(): pass": "not code"}))
    path.chmod(0o600)
    method_code_cache.install()
    assert method_code_cache._codes == {}
    assert _behaviour(_point_class()) == _behaviour(_point_class())
