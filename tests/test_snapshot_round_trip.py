"""What the recorder writes, its readers read back: a property test over random recordings.

Inputs, describe-hook values, key-hook values and module attributes are drawn at random,
nested up to and past the readers' bounds, with numbers and strings a JSON reader may refuse.
Every recording either refuses a value with one line naming it, or yields a snapshot that
reads back to the same text. So the gate needs no read-back of its own before writing."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from torch import nn

from pytest_workload import WorkloadRecorder
from pytest_workload._core.strict_json import MAX_INPUT_DEPTH, MAX_JSON_DEPTH, load_json
from pytest_workload._snapshot.snapshot_files import snapshot_text
from pytest_workload._workload.workload import TestWorkloads

DEPTHS = (
    0,
    1,
    MAX_INPUT_DEPTH - 1,
    MAX_INPUT_DEPTH,
    MAX_INPUT_DEPTH + 1,
    MAX_JSON_DEPTH - 2,
    MAX_JSON_DEPTH,
)
NUMBERS = (0, -1, 2**63, 10**63, -(10**64), 10**70, 0.5, -0.0, 1e308, float("inf"), float("nan"))
TEXTS = ("", 'é\u2028\x00"\\', "🙂" * 3, "a" * 300)


class Opaque:
    """A value only the describe hook can describe."""

    def __init__(self, description: Any) -> None:
        self.description = description


def _leaf(rng: random.Random) -> Any:
    return rng.choice((*NUMBERS, *TEXTS, True, None))


def _plain(rng: random.Random) -> Any:
    """A leaf every reader takes, so that a deep value is refused for its depth alone."""
    return rng.choice((0, 0.5, "", "é", True, None))


def _value(rng: random.Random, depth: int) -> Any:
    """A random JSON-like value nested ``depth`` levels deep on one branch."""
    if depth == 0:
        return _leaf(rng)
    inner = _value(rng, depth - 1)
    siblings = [_plain(rng) for _ in range(rng.randrange(3))]
    if rng.random() < 0.5:
        return [*siblings, inner]
    return {**{f"k{i}": v for i, v in enumerate(siblings)}, rng.choice(TEXTS): inner}


def _input(rng: random.Random, depth: int) -> Any:
    """A call argument: tensors and scalars in containers, or a value for the hook."""
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(
            (
                torch.zeros(rng.randrange(1, 3), 2),
                torch.zeros(1, dtype=torch.int64),
                rng.choice(NUMBERS),
                rng.choice(TEXTS),
                Opaque(_value(rng, rng.choice(DEPTHS))),
            )
        )
    container = rng.choice((list, tuple, dict))
    items = [_input(rng, depth - 1) for _ in range(rng.randrange(1, 3))]
    return dict(enumerate(items)) if container is dict else container(items)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.lin(torch.zeros(1, 2))


def _describe(value: object) -> Any:
    return value.description if isinstance(value, Opaque) else None


@pytest.mark.parametrize("seed", range(200))
def test_a_recording_either_refuses_a_value_or_reads_back_as_written(seed: int):
    rng = random.Random(seed)
    key = _value(rng, rng.choice(DEPTHS))
    recorder = WorkloadRecorder(
        f"t.py::test[{seed}]", max_depth=1, describe=_describe, keyer=lambda *_: key
    )
    model = Model()
    model.attribute = _value(rng, rng.choice((0, 1, 5)))
    model.lin.other = rng.choice((*NUMBERS, *TEXTS))
    with recorder.recording(all_roots=True), torch.no_grad():
        for _ in range(2):
            model(*(_input(rng, rng.choice((0, 1, 3))) for _ in range(rng.randrange(3))))
    test = recorder.workloads()
    for error in recorder.errors:
        assert "\n" not in error
    text = snapshot_text(test)
    assert snapshot_text(TestWorkloads.from_snapshot(load_json(text))) == text
