"""FLOPs of one torch-level operation, from its arguments' shapes.

The counts are those ``torch.utils.flop_counter`` gives the aten operations each call runs
(matrix products and convolutions, 2 per multiply-add; attention as its two products), so
counting at this level reports what counting at the dispatch level did, without a dispatch
mode. Where torch runs a product as ``dot`` or ``mv`` (which that counter does not count),
this counts 0 too. Operations that hide matrix products inside one C++ kernel (recurrent
layers, ``bilinear``, ``tensordot``, einsum over three operands...) are in :data:`OPAQUE`:
their count is taken by a dispatch mode around that one call (see :mod:`.flops`).
"""

from __future__ import annotations

import math
from typing import Any

#: Operations whose products only a dispatch mode sees.
OPAQUE = frozenset(
    {
        "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell",
        "rnn_relu_cell", "bilinear", "tensordot", "chain_matmul", "multi_dot", "inner",
        "addbmm", "cdist", "convolution", "_convolution", "conv_tbc",
        # a Python function of torch whose own has_torch_function check sends every call
        # made inside a TorchFunctionMode back to the mode: it is traced as one operation
        "multi_head_attention_forward",
    }
)  # fmt: skip

_CONV = {
    "conv1d": False, "conv2d": False, "conv3d": False,
    "conv_transpose1d": True, "conv_transpose2d": True, "conv_transpose3d": True,
}  # fmt: skip


def _mm(m: int, k: int, n: int, batch: int = 1) -> int:
    return 2 * batch * m * k * n


def _shape(value: Any) -> list[int]:
    return [int(s) for s in value.shape]


def _conv(x: Any, w: Any, out: Any, transposed: bool) -> int:
    x_shape, out_shape, w_shape = _shape(x), _shape(out), _shape(w)
    if len(x_shape) == len(w_shape) - 1:  # unbatched: torch adds a batch of one
        x_shape, out_shape = [1, *x_shape], [1, *out_shape]
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *kernel = w_shape
    return 2 * math.prod(spatial) * math.prod(kernel) * x_shape[0] * c_out * c_in


def _folds(a: Any, b: Any) -> bool:
    """Whether aten's matmul folds the larger operand into a matrix (mm or mv), not bmm."""
    larger, smaller = (a, b) if a.dim() >= b.dim() else (b.mT, a)
    if not (larger.dim() >= 3 and smaller.dim() <= 2):
        return False
    if smaller.requires_grad:
        return True
    if a.dim() == 2:
        return False
    if larger.numel() == 0:
        return True
    sizes, strides = larger.shape, larger.stride()
    return all(strides[i] == strides[i + 1] * sizes[i + 1] for i in range(larger.dim() - 2))


def matmul_flops(a: Any, b: Any) -> int:
    """``torch.matmul(a, b)`` as aten runs it: dot and mv count 0, mm and bmm their product."""
    da, db = a.dim(), b.dim()
    if db == 1 and da <= 2:
        return 0  # dot, mv
    if da == 1 and db == 2:
        return _mm(1, a.shape[0], b.shape[1])
    if da == 2 and db == 2:
        return _mm(a.shape[0], a.shape[1], b.shape[1])
    if _folds(a, b):
        if a.dim() >= b.dim():
            return 0 if db == 1 else _mm(math.prod(a.shape[:-1]), a.shape[-1], b.shape[-1])
        return 0 if da == 1 else _mm(math.prod(b.shape[:-2]) * b.shape[-1], b.shape[-2], a.shape[0])
    n = a.shape[-2] if da > 1 else 1
    p = b.shape[-1] if db > 1 else 1
    return _mm(
        n, a.shape[-1], p, math.prod(_broadcast(a.shape[:-2], b.shape[:-2] if db > 1 else ()))
    )


def _broadcast(a: Any, b: Any) -> list[int]:
    """The broadcast of two batch shapes (torch has checked they broadcast)."""
    width = max(len(a), len(b))
    a, b = [1] * (width - len(a)) + list(a), [1] * (width - len(b)) + list(b)
    return [int(y) if int(x) == 1 else int(x) for x, y in zip(a, b, strict=True)]


def _linear(x: Any, w: Any) -> int:
    return _mm(math.prod(x.shape[:-1]), w.shape[-1], w.shape[0] if w.dim() == 2 else 1)


def _letters(spec: str, dims: int) -> list[str]:
    """An operand's subscripts, with ``...`` expanded to numbered broadcast dimensions."""
    if "..." not in spec:
        return list(spec)
    head, tail = spec.split("...")
    return [*head, *(f"…{i}" for i in range(dims - len(head) - len(tail))), *tail]


def einsum_flops(equation: str, operands: list[Any]) -> int | None:
    """Two operands: aten sums out what only one has, then runs one bmm (a mul when nothing
    is contracted). None for three or more (a contraction order to follow)."""
    if len(operands) == 1:
        return 0
    if len(operands) != 2:
        return None
    spec = equation.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    left, right = inputs.split(",")
    a = _letters(left, operands[0].dim())
    b = _letters(right, operands[1].dim())
    if arrow:
        out = set(_letters(output, max(len(a), len(b)))) if "..." in output else set(output)
        out |= {x for x in (*a, *b) if x.startswith("…")} if "..." in output else set()
    else:
        out = {x for x in (*a, *b) if (a + b).count(x) == 1 or x.startswith("…")}
    sizes: dict[str, int] = {}
    for letters, operand in ((a, operands[0]), (b, operands[1])):
        for letter, size in zip(letters, operand.shape, strict=True):
            sizes[letter] = max(sizes.get(letter, 1), int(size))
    contracted = [x for x in set(a) & set(b) if x not in out]
    if not contracted:
        return 0
    kept = [x for x in set(a) | set(b) if x in out or (x in a and x in b)]
    return 2 * math.prod(sizes[x] for x in kept)


def _attention(q: Any, k: Any, v: Any) -> int | None:
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return None
    b, h, s_q, d = _shape(q)
    b2, h2, s_k, d2 = _shape(k)
    b3, h3, s_v, d_v = _shape(v)
    if (b, h, d) != (b2, h2, d2) or (b, h, s_k) != (b3, h3, s_v):
        return None  # (grouped heads, broadcasting: let the dispatch level count them)
    return _mm(s_q, d, s_k, b * h) + _mm(s_q, s_k, d_v, b * h)


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, key: str) -> Any:
    return args[i] if len(args) > i else kwargs.get(key)


def _einsum_operands(args: tuple[Any, ...]) -> list[Any]:
    operands = list(args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    return operands


def _sdpa(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``scaled_dot_product_attention``'s FLOPs from its query, key and value, if countable."""
    return _attention(
        _arg(args, kwargs, 0, "query"), _arg(args, kwargs, 1, "key"), _arg(args, kwargs, 2, "value")
    )


def needs_dispatch(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether only a dispatch mode around the call can count its FLOPs (decided before it
    runs, so that it runs once)."""
    base = name.removesuffix("_")
    if base in OPAQUE:
        return True
    if base == "einsum":
        return len(_einsum_operands(args)) > 2 or not (args and isinstance(args[0], str))
    if base == "scaled_dot_product_attention":
        return _sdpa(args, kwargs) is None
    return False


def op_flops(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    """The FLOPs of one operation that does not need the dispatch level (see
    :func:`needs_dispatch`)."""
    base = name.removesuffix("_")
    if base in ("matmul", "rmatmul", "imatmul"):
        a, b = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "other")
        return matmul_flops(b, a) if base == "rmatmul" else matmul_flops(a, b)
    if base == "mm":
        a, b = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "mat2")
        return _mm(a.shape[0], a.shape[1], b.shape[1])
    if base in ("addmm", "baddbmm"):
        a, b = (
            _arg(args, kwargs, 1, "mat1" if base == "addmm" else "batch1"),
            _arg(args, kwargs, 2, "mat2" if base == "addmm" else "batch2"),
        )
        batch = 1 if base == "addmm" else a.shape[0]
        return _mm(a.shape[-2], a.shape[-1], b.shape[-1], batch)
    if base == "bmm":
        a, b = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "mat2")
        return _mm(a.shape[1], a.shape[2], b.shape[2], a.shape[0])
    if base == "linear":
        return _linear(_arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight"))
    if base in _CONV:
        return _conv(
            _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight"), out, _CONV[base]
        )
    if base == "einsum":
        return einsum_flops(args[0], _einsum_operands(args)) or 0
    if base == "scaled_dot_product_attention":
        return _sdpa(args, kwargs) or 0
    return 0
