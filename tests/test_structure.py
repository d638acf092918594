import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_workload import structure_hash
from pytest_workload._fingerprint.structure import (
    CURRENT_SCHEME,
    NOT_ARCHITECTURE,
    canonical_code,
    child_structure_hashes,
    param_stats,
    structure_node,
)
from pytest_workload._fingerprint.structure import structure_hash as _structure_hash
from pytest_workload._torch_internals import own_children
from pytest_workload._workload.modules import description_hash, hash_without_dtypes
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


def test_extra_repr_text_never_enters_the_hash(monkeypatch):
    # torch 2.12 added "bias=True" to every norm layer's extra_repr: the parameters show it
    before = structure_hash(net())
    reworded = nn.BatchNorm2d.extra_repr
    monkeypatch.setattr(nn.BatchNorm2d, "extra_repr", lambda m: reworded(m) + ", bias=True")
    assert structure_hash(net()) == before


def _block_in(module_path: str) -> type[nn.Module]:
    return type("Block", (nn.Identity,), {"__module__": module_path})


def test_the_class_enters_by_name_and_its_path_is_kept_beside_the_hash():
    moved, kept = _block_in("timm.layers.old_home")(), _block_in("timm.layers.new_home")()
    assert structure_hash(moved) == structure_hash(kept)
    assert structure_node(kept, [])["class_path"] == "timm.layers.new_home.Block"
    assert structure_hash(_block_in("x")()) != structure_hash(nn.Identity())


@pytest.mark.parametrize("name", sorted(NOT_ARCHITECTURE))
def test_attributes_that_choose_a_kernel_or_an_initialisation_are_not_architecture(name):
    chosen = nn.Identity()
    setattr(chosen, name, 7)
    assert structure_hash(chosen) == structure_hash(nn.Identity())


@pytest.mark.parametrize("off", [None, False])
def test_an_attribute_added_with_an_off_value_changes_nothing(off):
    # timm 1.0.31 added gate = None to its Attention
    added = nn.Identity()
    added.gate = off
    assert structure_hash(added) == structure_hash(nn.Identity())
    added.gate = True
    assert structure_hash(added) != structure_hash(nn.Identity())


def test_types_functions_and_enums_enter_by_name():
    a, b = nn.Identity(), nn.Identity()
    a.act, b.act = _block_in("one"), _block_in("two")
    assert structure_hash(a) == structure_hash(b)
    b.act = nn.ReLU
    assert structure_hash(a) != structure_hash(b)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_scripted_modules_keep_their_code_in_the_description():
    class Doubled(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2.0

    node = structure_node(torch.jit.script(Doubled()), [])
    assert node["class"] == "Doubled (scripted)"
    assert "torch.mul(x, 2.)" in str(node["code"])


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_a_scripted_container_without_forward_hashes_without_code():
    """torchvision's scripted segmentation heads hold a ModuleList, which has no code (torch
    2.14 raises AttributeError for it, older releases RuntimeError)."""

    class Branches(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for conv in self.convs:
                x = conv(x)
            return x

    scripted = torch.jit.script(Branches())
    assert structure_node(scripted.convs, [])["code"] is None
    assert structure_hash(scripted) == structure_hash(torch.jit.script(Branches()))


def _upsampler() -> nn.Module:
    class Up(nn.Module):  # (a new class each call: TorchScript mangles the second's names)
        def __init__(self):
            super().__init__()
            self.down = Half()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.interpolate(self.down(x), scale_factor=2.0)

    class Half(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x / 2

    return Up()


def _padded() -> nn.Module:
    class Padded(nn.Module):  # (a new class each call: the second on are mangled)
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.pad(x, [1, 1])

    return Padded()


_SCRIPTED_HASH = """
import sys, torch, warnings
warnings.simplefilter("ignore")
from pytest_workload import structure_hash
from tests.test_structure import _padded, _upsampler
if sys.argv[1] == "after":
    for _ in range(3):
        torch.jit.script(_padded())
scripted = torch.jit.script(_upsampler())
print(str(scripted.code).split("___torch_mangle_")[1][:3], structure_hash(scripted))
"""


def test_scripted_code_hashes_without_the_numbers_torchscript_mangles_names_with():
    """Which number TorchScript mangles a name with follows what the process scripted before
    (torchvision's suite under -n 2 scripted lraspp with ``___torch_mangle_695`` in one worker
    and ``_423`` in the other): two processes, one of which scripted another module first."""
    outputs = [
        subprocess.run(
            [sys.executable, "-c", _SCRIPTED_HASH, history],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        ).stdout.split()
        for history in ("first", "after")
    ]
    assert outputs[0][0] != outputs[1][0]  # (the code's mangled names differ)
    assert outputs[0][1] == outputs[1][1]


class _Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        y = self.b(y) + y
        return torch.relu(y + x)


class _GeluChain(_Chain):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        y = self.b(y) + y
        return torch.nn.functional.gelu(y + x)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_a_scripted_module_saved_and_loaded_hashes_as_it_did():
    """torch.jit.load numbers the values of its code anew (``x0`` became ``x4`` in torchvision's
    regnet): the hash follows the computation, not the numbering."""
    scripted = torch.jit.script(_Chain().eval())
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    assert structure_hash(loaded) == structure_hash(scripted)
    assert structure_hash(torch.jit.script(_GeluChain().eval())) != structure_hash(scripted)


def test_canonical_code_renumbers_values_in_order_of_first_use():
    assert canonical_code("x4 = f(x2, x2)\nreturn g(x4, self.x9)") == (
        "x#0 = f(x#1, x#1)\nreturn g(x#0, self.x9)"
    )
    assert canonical_code("y = a(x0, x1)") != canonical_code("y = a(x0, x0)")
    # a string constant is the computation's, not a numbered value
    assert canonical_code('x0 = d["layer4"]') == 'x#0 = d["layer4"]'
    assert canonical_code("y = f(x0, 'a\\'b2')") == "y = f(x#0, 'a\\'b2')"


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

_VIT = textwrap.dedent(
    """
    import timm
    from pytest_workload import structure_hash
    print(structure_hash(timm.create_model("vit_tiny_patch16_224")))
    """
)


def test_timm_fused_attn_does_not_change_the_structure_hash():
    hashes = {
        subprocess.run(
            [sys.executable, "-c", _VIT],
            capture_output=True,
            text=True,
            env={**os.environ, "TIMM_FUSED_ATTN": fused},
            check=True,
        ).stdout.strip()
        for fused in ("0", "1")
    }
    assert len(hashes) == 1


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


def test_scheme_1_hashes_what_it_always_did():
    # a change to what enters a hash is a new scheme: every stored snapshot would fail
    assert structure_hash(nn.Linear(4, 2)) == (
        "bbdbd3edda6349182d1f72e4ab06491b1eae0018b70f6521ed13110bec54319c"
    )
    assert CURRENT_SCHEME.version == 1


def _walk_without_dtypes(module: nn.Module) -> str:
    """The structure hash taken by walking the tree with dtypes dropped from each node (the
    reference for the hash read from the descriptions)."""

    children = [
        [name, None if child is None else _walk_without_dtypes(child)]
        for name, child in own_children(module).items()
    ]
    described = structure_node(module, children)
    for key in ("parameters", "buffers"):
        described[key] = [e[:2] for e in described[key]]
    return description_hash(described)


@pytest.mark.parametrize(
    "make",
    [
        lambda: net(0),
        lambda: nn.Sequential(nn.Linear(2, 3, bias=False), nn.BatchNorm1d(3), nn.LazyLinear(2)),
        lambda: nn.Sequential(nn.Linear(2, 2), None, nn.Sequential(nn.ReLU())),
    ],
    ids=["tinynet", "no-bias-buffers-lazy", "none-child"],
)
def test_the_hash_without_dtypes_read_from_descriptions_is_that_of_the_tree(make):
    model = make()
    for cast in (lambda m: m, lambda m: m.to(torch.bfloat16)):
        tree = cast(model)
        table: dict = {}
        full = _structure_hash(tree, {}, table)
        assert hash_without_dtypes(table, full, {}) == _walk_without_dtypes(tree)


def test_only_dtypes_are_left_out_of_the_hash_without_dtypes():
    def without(model):
        table: dict = {}
        return hash_without_dtypes(table, _structure_hash(model, {}, table), {})

    assert without(net(0)) == without(net(0).to(torch.bfloat16))
    assert without(net(0)) != without(net(0, channels=8))
    assert structure_hash(net(0)) != structure_hash(net(0).to(torch.bfloat16))


def test_param_stats_count_a_parameter_shared_by_two_children_once():
    shared = nn.Linear(4, 4)
    tied = nn.Sequential(shared, nn.ReLU(), shared)
    two = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    two[1].weight = two[0].weight  # (a tied weight, the biases apart)
    assert param_stats(tied).count == 20
    assert param_stats(two).count == 16 + 4 + 4
    assert param_stats(two).bytes == (16 + 4 + 4) * 4
    memo: dict = {}
    assert param_stats(two[0], memo).count == 20 and param_stats(two, memo).count == 24
