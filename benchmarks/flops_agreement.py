"""Do FLOPs counted at the function level (the tracer) equal those counted at the aten level?

Until this release FLOPs were counted by a ``TorchDispatchMode`` around each first call
(``torch.utils.flop_counter``'s formulas on aten operations); they are now counted by the
``TorchFunctionMode`` that also traces the computation. Both counters run here on every
architecture of the fidelity sweep (tests/test_zoo.py), at its shapes and dtypes, and on a
battery of single operations (matmul in every rank combination, einsum, attention, recurrent
layers...). Any difference is printed with the architecture and case; exit status 1 if any.

Run: ``python benchmarks/flops_agreement.py [ARCH ...]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_workload._tracing.cost_count import counting
from pytest_workload._tracing.tracer import count_flops
from tests.test_zoo import ARCHS, DTYPES, SHAPES, build


def aten_flops(model: torch.nn.Module, args: tuple[object, ...]) -> int:
    with counting(model, args) as count:
        model(*args)
    return count.flops


def main(archs: list[str]) -> int:
    differ = 0
    torch.set_num_threads(1)
    for arch in archs or list(ARCHS):
        model = build(arch, seed=0)
        for dtype in DTYPES:
            m = model.to(dtype)
            for case in SHAPES:
                x = torch.rand(*case).to(dtype)
                with torch.no_grad():
                    a, f = aten_flops(m, (x,)), count_flops(m, (x,), {})
                mark = "" if a == f else "  DIFFERS"
                differ += a != f
                print(
                    f"{arch:28s} {list(case)!s:18s} {dtype!s:15s} aten {a:>14,} "
                    f"function {f:>14,}{mark}"
                )
    print(f"{differ} case(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
