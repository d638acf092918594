"""What re-reading a workload's identity after an attribute change costs every call.

The identity cache checks, on every cached call, that no plain attribute of any module of the
tree was set, added or deleted since the identity was read (``AttributeWatch.unchanged``: one
``len`` and one ``operator.itemgetter`` per module). Measured here on its own, per call, for
models of 4 to about 300 modules, beside a bare Python loop over as many items (the machine's
speed at that moment: on a loaded shared VM both grow together). The recorder runs the check
once per root call (before it, where it decides on tracing; the identity found there serves
after the call) and once per recorded submodule call.

Run: ``python benchmarks/attribute_watch_cost.py``.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

import timm
from _common import markdown_table, print_header
from torch import Tensor, nn

from pytest_workload._recording.identity import AttributeWatch, _subtree


def per_call(fn: Callable[[], object], number: int = 2000) -> float:
    return min(timeit.repeat(fn, number=number, repeat=7)) / number


def main() -> None:
    print_header("Attribute watch: cost per check")
    models: dict[str, nn.Module] = {
        "tiny MLP (2x Linear(32, 32))": nn.Sequential(
            nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32)
        ),
        "13-module model (nn.Linear(8, 8) blocks)": nn.Sequential(
            *[nn.Linear(8, 8) for _ in range(12)]
        ),
        "timm resnet18": timm.create_model("resnet18"),
        "timm mobilenetv2_035": timm.create_model("mobilenetv2_035"),
    }
    rows = []
    for name, model in models.items():
        watch = AttributeWatch(_subtree(model, {}, Tensor))
        items = list(range(len(watch.seen)))

        def bare(items: list[int] = items) -> bool:
            return all(i is not None for i in items)

        check, loop = per_call(watch.unchanged), per_call(bare)
        rows.append(
            [
                name,
                len(watch.seen),
                f"{check * 1e6:.2f} µs",
                f"{check / len(watch.seen) * 1e9:.0f} ns",
                f"{loop * 1e6:.2f} µs",
            ]
        )
    headers = ["model", "modules", "unchanged()", "per module", "bare loop, same length"]
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
