"""The identity cache: a workload is what its module and inputs are, read afresh when the
module tree or its dtypes change between calls."""

from collections import OrderedDict

import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from tests.recording import record


def test_same_block_in_two_models_has_one_hash():
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model_a = nn.Sequential(nn.Identity(), block)
    model_b = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    x = torch.rand(2, 4)
    table = record(lambda: [model_a(x), model_b(x)], max_depth=1)
    hashes = {w.name: [] for w in table}
    for w in table:
        hashes[w.name].append(w.hash)
    assert len(set(hashes["1"])) == 1 and len(hashes["1"]) == 2


def test_a_dtype_change_between_calls_is_a_new_structure():
    torch.manual_seed(0)
    alone = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval().to(torch.bfloat16)
    expected = record(lambda: alone(torch.rand(1, 4, dtype=torch.bfloat16))).roots()[0]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()

    def calls():
        model(torch.rand(1, 4))
        model.to(torch.bfloat16)
        model(torch.rand(1, 4, dtype=torch.bfloat16))

    fp32, bf16 = record(calls).roots()
    assert bf16.hash == expected.hash
    assert bf16.structure_hash != fp32.structure_hash


def test_a_dtype_change_with_the_same_inputs_is_seen():
    embed = nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])

    def calls():
        embed(ids)
        embed.half()
        embed(ids)

    assert len({w.structure_hash for w in record(calls).roots()}) == 2


def test_a_parameter_replaced_with_another_dtype_is_seen():
    embed = nn.Embedding(10, 4)
    ids = torch.tensor([[1, 2, 3]])

    def calls():
        embed(ids)
        embed.weight = nn.Parameter(embed.weight.detach().double())
        embed(ids)

    assert len({w.structure_hash for w in record(calls).roots()}) == 2


def test_a_submodule_replaced_between_calls_is_seen():
    model = nn.Sequential(OrderedDict(body=nn.Linear(4, 4), head=nn.Linear(4, 2))).eval()
    x = torch.rand(1, 4)

    def calls():
        model(x)
        model.head = nn.Linear(4, 3)
        model(x)

    table = record(calls, max_depth=1)
    first, second = table.roots()
    assert first.structure_hash != second.structure_hash
    heads = [w for w in table if w.name == "head"]
    assert [w.class_name for w in heads] == ["torch.nn.modules.linear.Linear"] * 2
    assert heads[0].structure_hash != heads[1].structure_hash
    assert [table.workloads[h.caller] for h in heads] == [first, second]


def test_an_attribute_set_between_calls_is_seen():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)).eval()
    x = torch.rand(1, 4)

    def calls():
        model(x)
        model[1].p = 0.5
        model(x)
        model[1].p = 0.5  # an equal value again: the same workload
        model(x)

    first, second = record(calls, max_depth=1).roots()
    assert first.hash != second.hash
    assert (first.calls, second.calls) == (1, 2)


def test_an_attribute_added_or_deleted_between_calls_is_seen():
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    x = torch.rand(1, 4)

    def calls():
        model(x)
        model[0].scale = 2
        model(x)
        del model[0].scale
        model(x)

    first, second = record(calls).roots()
    assert first.hash != second.hash and first.calls == 2


def test_custom_descriptions_with_keys_in_another_order_are_one_row():
    class Config:
        def __init__(self, order):
            self.order = order

    def describe(value):
        if isinstance(value, Config):
            return dict.fromkeys(value.order, 1)
        return None

    recorder = WorkloadRecorder("t", timing=False, describe=describe)
    model = Takes().eval()
    with recorder.recording(all_roots=True):
        model(torch.rand(1, 4), Config("ab"))
        model(torch.rand(1, 4), Config("ba"))
    (row,) = recorder.workloads()
    assert row.calls == 2


class Takes(nn.Module):
    def forward(self, x, config):
        return x
