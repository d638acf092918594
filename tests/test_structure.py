import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

from pytest_workload import structure_hash
from pytest_workload._identity.structure import child_structure_hashes, param_stats
from tests.models import TinyNet


def net(seed: int = 0, **kwargs) -> TinyNet:
    torch.manual_seed(seed)
    return TinyNet(**kwargs)


def test_weights_seeds_and_reinit_do_not_change_the_hash():
    a, b = net(0), net(1)
    assert structure_hash(a) == structure_hash(b)
    for p in b.parameters():
        nn.init.normal_(p)
    b.blocks[2].running_mean.fill_(3.0)
    assert structure_hash(a) == structure_hash(b)
    b.load_state_dict(a.state_dict())
    assert structure_hash(a) == structure_hash(b)


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(lambda: net(kernel=5), id="kernel"),
        pytest.param(lambda: net(stride=2), id="stride"),
        pytest.param(lambda: net(channels=8), id="channels"),
        pytest.param(lambda: net().half(), id="param-dtype"),
        pytest.param(lambda: net().train(False), id="eval-mode"),
    ],
)
def test_structural_changes_change_the_hash(changed):
    assert structure_hash(net()) != structure_hash(changed())


def test_tree_changes_change_the_hash():
    base = structure_hash(net())
    added = net()
    added.extra = nn.Identity()
    assert structure_hash(added) != base
    renamed = net()
    renamed.add_module("stem2", renamed.stem)
    del renamed.stem
    assert structure_hash(renamed) != base
    swapped = net()
    swapped.blocks[1] = nn.GELU()
    assert structure_hash(swapped) != base


def test_plain_attributes_count_as_configuration():
    a, b = nn.Dropout(0.1), nn.Dropout(0.2)
    assert structure_hash(a) != structure_hash(b)
    c = nn.Identity()
    c.drop_rate = 0.5
    assert structure_hash(c) != structure_hash(nn.Identity())


def test_memory_addresses_are_scrubbed():
    class WithAddress(nn.Module):
        def __init__(self):
            super().__init__()
            self.marker = object()

        def extra_repr(self):
            return repr(self.marker)

    assert structure_hash(WithAddress()) == structure_hash(WithAddress())


def test_memory_addresses_are_scrubbed_from_string_attributes():
    class Tagged(nn.Module):
        def __init__(self):
            super().__init__()
            self.marker = object()
            self.tag = repr(self.marker)
            self.tags = ("x", (repr(self.marker),))

    assert structure_hash(Tagged()) == structure_hash(Tagged())
    plain, tagged = nn.Identity(), nn.Identity()
    tagged.tag = "0xff"  # still a configuration value, only its digits are scrubbed
    assert structure_hash(plain) != structure_hash(tagged)


def test_wrappers_hash_as_the_wrapped_module():
    m = net()
    assert structure_hash(nn.DataParallel(m)) == structure_hash(m)
    assert structure_hash(torch.compile(m, backend="eager")) == structure_hash(m)


def test_children_hashes_locate_a_change():
    a, b = dict(child_structure_hashes(net())), dict(child_structure_hashes(net(kernel=5)))
    assert [k for k in a if a[k] != b[k]] == ["stem"]


def test_param_stats_use_real_dtype_sizes():
    m = nn.Linear(10, 10)  # 110 parameters
    assert param_stats(m).count == 110
    assert param_stats(m).bytes == 440
    assert param_stats(m.half()).bytes == 220


def test_meta_device_models_hash_without_memory():
    with torch.device("meta"):
        big = nn.Linear(100_000, 10_000)
    assert structure_hash(big) == structure_hash(nn.Linear(100_000, 10_000, device="meta"))


_SUBPROCESS = textwrap.dedent(
    """
    import torch, timm
    from pytest_workload import structure_hash
    from tests.models import TinyNet
    torch.manual_seed(int(__import__("sys").argv[1]))
    print(structure_hash(TinyNet()), structure_hash(timm.create_model("resnet18")))
    """
)


def test_hash_is_identical_across_processes_and_hash_seeds():
    root = os.path.dirname(os.path.dirname(__file__))
    outputs = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", _SUBPROCESS, seed],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            check=True,
        )
        outputs.add(result.stdout.strip())
    assert len(outputs) == 1
