"""Baseline files: what a stored baseline must hold to be read back."""

import json
from types import SimpleNamespace

import pytest

from pytest_workload._core.errors import CorruptFileError
from pytest_workload._perf.baseline import Baseline, BaselineStore
from pytest_workload._perf.device import DeviceIdentity
from pytest_workload._perf.stopwatch import summarize

IDENTITY = DeviceIdentity("cpu", "Test CPU", "2.14.1", 2)
KEY = ["s" * 64, [{"tensor": [1, 4], "dtype": "float32"}], {"use_cache": True}]
HASH = "ab" * 32
TEST = "t.py::a"


def store_with(tmp_path, edit):
    """A store holding one baseline whose stored JSON ``edit`` changed."""
    store = BaselineStore(tmp_path, IDENTITY)
    timing = summarize([0.01] * 7, "cpu")
    path = store.put(
        Baseline(TEST, HASH, "model", "m.Net", "(float32[1, 4])", KEY, IDENTITY, timing)
    )
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return store, path


def test_a_workload_key_is_read_back_as_written(tmp_path):
    store, _ = store_with(tmp_path, lambda data: None)
    assert store.get(HASH, TEST).key == KEY


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(None, id="null"),
        pytest.param("s" * 64, id="string"),
        pytest.param({"structure": "s"}, id="object"),
        pytest.param([], id="empty"),
        pytest.param(["s" * 64, [], {}, []], id="four-parts"),
        pytest.param([1, [], {}], id="structure-not-a-string"),
        pytest.param(["s" * 64, {"x": 1}, {}], id="args-not-a-list"),
        pytest.param(["s" * 64, [], []], id="kwargs-not-an-object"),
    ],
)
def test_a_malformed_key_is_a_corrupt_file_naming_it(tmp_path, key):
    store, path = store_with(tmp_path, lambda data: data.update(key=key))
    with pytest.raises(CorruptFileError) as raised:
        store.get(HASH, TEST)
    assert raised.value.path == str(path)
    assert "is not a workload baseline: field 'key'" in str(raised.value)
    assert store.all() == []  # left out of lookups, one corrupt file fails no other workload
    assert [e.path for e in store.unreadable] == [str(path)]


def test_a_missing_key_is_a_corrupt_file(tmp_path):
    store, _ = store_with(tmp_path, lambda data: data.pop("key"))
    with pytest.raises(CorruptFileError, match="missing field 'key'"):
        store.get(HASH, TEST)


def test_a_baseline_moved_to_another_test_s_path_is_a_corrupt_file(tmp_path):
    store, path = store_with(tmp_path, lambda data: None)
    moved = store.path(HASH, "t.py::b")
    moved.write_bytes(path.read_bytes())
    with pytest.raises(CorruptFileError, match=r"in test t\.py::a, not of its own path"):
        store.get(HASH, "t.py::b")


def test_a_baseline_of_other_flops_or_operations_is_another_computation(tmp_path):
    timing = summarize([0.01] * 7, "cpu")
    base = Baseline(TEST, HASH, "m", "m.Net", "()", KEY, IDENTITY, timing, 100, "c" * 64)

    def workload(flops, compute_hash):
        return SimpleNamespace(flops=flops, compute_hash=compute_hash)

    assert base.other_computation(workload(100, "c" * 64)) is None
    assert base.other_computation(workload(183, "c" * 64)) == "FLOPs 100, now 183"
    assert base.other_computation(workload(None, "c" * 64)) == "FLOPs 100, now not counted"
    assert "compute hash differs" in base.other_computation(workload(100, "d" * 64))
