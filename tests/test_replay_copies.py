"""End-to-end: an input of the user's own type (a KV-cache class, a dataclass) is copied for
the replay, so its workload is timed; one that cannot be copied is named."""

from __future__ import annotations

import dataclasses
import json

import torch

from pytest_workload._perf.first_call import copy_inputs
from tests.pytester_suite import SUITE_INI

CONFTEST = """
def pytest_workload_describe(value):
    if type(value).__name__ in ("KVCache", "Stream"):
        return {"steps": len(value.keys)}
"""

DECODER = """
import pytest
import torch


class KVCache:
    def __init__(self, keys):
        self.keys = keys


class Stream:
    def __init__(self, keys, source):
        self.keys, self.source = keys, source  # (a generator: no copy of it can be made)


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, cache):
        # (a replay that did not put the cache back would see it grown, and raise)
        assert len(cache.keys) == 1, len(cache.keys)
        cache.keys = [*cache.keys, self.lin(x)]
        return torch.cat(cache.keys).sum(0)


@pytest.mark.workloads
def test_decode():
    Decoder()(torch.rand(1, 4), KVCache([torch.rand(1, 4) * 2]))


@pytest.mark.workloads
def test_stream():
    Decoder()(torch.rand(1, 4), Stream([torch.rand(1, 4)], (x for x in ())))
"""


def test_an_object_of_tensors_is_copied_and_timed_and_one_that_cannot_be_is_named(pytester):
    pytester.makeini(SUITE_INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_decoder=DECODER)
    out = pytester.path / "r.json"
    pytester.runpytest("-p", "no:xdist", f"--workload-json={out}").assert_outcomes(passed=2)
    tests = {t["nodeid"]: t["workloads"][0] for t in json.loads(out.read_text())["tests"]}
    decode = tests["test_decoder.py::test_decode"]
    assert decode["measured"]["timing"] == "replayed" and decode["timing"]["n"] >= 1
    stream = tests["test_decoder.py::test_stream"]
    assert stream["timing"] is None
    assert stream["measured"]["timing"] == "not measured"
    assert stream["measured"]["timing_reason"] == (
        "an input is an object it cannot copy (test_decoder.Stream), and no call was observed "
        "untraced"
    )


@dataclasses.dataclass
class Past:
    keys: list
    step: int


def test_a_dataclass_of_tensors_is_copied_with_its_tensors_cloned():
    key = torch.rand(1, 4, requires_grad=True) * 2  # (not a leaf: deepcopy alone refuses it)
    past = Past([key, key], 3)
    copied, missing = copy_inputs(past)
    assert not missing and type(copied) is Past and copied.step == 3
    assert copied.keys[0] is copied.keys[1] and copied.keys[0] is not key
    assert torch.equal(copied.keys[0], key) and copied.keys[0].is_leaf
