"""One torch-level operation as the tracer sees it: its text, its FLOPs (from shapes, without
a dispatch mode but for :data:`OPAQUE` ones: docs/explanation/timing.md, "FLOPs"), and whether
it follows the values of its tensors: a value read or a value-shaped operation (hashes.md,
"Compute hash" and "Where it stops"; host syncs: timing.md, "Costs")."""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable
from typing import Any

from .._workload.signature import dtype_name
from .cost_count import tensor_list, torch_api

#: A tensor's path in the traced tree (None: not a parameter or buffer of it).
Refer = Callable[[Any], "str | None"]

#: Containers written out in full up to this many items (longer ones: the first, and a count).
_MAX_ITEMS = 64
#: Exact types written as their repr (checked first: most arguments that are not tensors).
_PLAIN: frozenset[type] = frozenset((bool, int, str, type(None), float))


def op_name(func: Any) -> str:
    """``F.gelu`` -> ``gelu``, ``Tensor.__add__`` -> ``add``, ``Tensor.T.__get__`` -> ``T``."""
    name = getattr(func, "__name__", None) or type(func).__name__
    if name in ("__get__", "__set__"):
        owner = getattr(getattr(func, "__self__", None), "__name__", "attribute")
        return owner if name == "__get__" else f"set {owner}"
    if name.startswith("__") and name.endswith("__") and len(name) > 4:
        return name[2:-2]
    return str(name)


@functools.lru_cache(maxsize=8192)  # (a suite's operations repeat a few shapes)
def _tensor_text(dtype: Any, shape: Any, layout: Any) -> str:
    torch = torch_api()[0]
    layout_text = "" if layout == torch.strided else f", {dtype_name(layout)}"
    shape_text = ", ".join(str(int(s)) for s in shape)
    return f"{dtype_name(dtype)}[{shape_text}{layout_text}]"


def describe_value(value: Any, refer: Refer) -> str:
    """One argument as the operation text shows it."""
    if type(value) in _PLAIN:
        return repr(value)
    torch = torch_api()[0]
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor and torch_api()[1](value):  # (a plain one never is)
            text = "uninitialized"
        else:
            text = _tensor_text(value.dtype, value.shape, value.layout)
        path = refer(value)
        return text if path is None else f"{text}@{path}"
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (*_PLAIN, complex)):
        return repr(value)
    if isinstance(value, (tuple, list)):  # (a torch.Size too)
        items = list(value)
        shown = [describe_value(v, refer) for v in items[:_MAX_ITEMS]]
        if len(items) > _MAX_ITEMS:
            shown.append(f"… {len(items)} items")
        opening, closing = "()" if isinstance(value, tuple) else "[]"
        return opening + ", ".join(shown) + closing
    if isinstance(value, dict):
        entries = (f"{k!r}: {describe_value(v, refer)}" for k, v in value.items())
        return "{" + ", ".join(entries) + "}"
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return dtype_name(value)
    if isinstance(value, torch.device):
        return "device"  # (a device never enters a fingerprint: CPU and CUDA share it)
    if isinstance(value, slice):
        return ":".join(
            "" if v is None else describe_value(v, refer)
            for v in (value.start, value.stop, value.step)
        )
    if value is Ellipsis:
        return "..."
    qualname = getattr(value, "__qualname__", None)
    if callable(value) and isinstance(qualname, str):
        return f"{getattr(value, '__module__', '')}.{qualname}"
    return type(value).__qualname__


def call_text(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], refer: Refer) -> str:
    parts = [describe_value(a, refer) for a in args]
    parts += [f"{k}={describe_value(v, refer)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


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
#: Matrix products: where their two operands are, and their names.
_PRODUCTS = {
    "mm": (0, "input", "mat2"), "bmm": (0, "input", "mat2"),
    "addmm": (1, "mat1", "mat2"), "baddbmm": (1, "batch1", "batch2"),
}  # fmt: skip


def _mm(m: int, k: int, n: int, batch: int = 1) -> int:  # (2 FLOPs per multiply-add)
    return 2 * batch * m * k * n


def _shape(value: Any) -> list[int]:
    return [int(s) for s in value.shape]


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
    """The broadcast of two batch shapes (torch has checked that they do)."""
    width = max(len(a), len(b))
    a, b = [1] * (width - len(a)) + list(a), [1] * (width - len(b)) + list(b)
    return [int(y) if int(x) == 1 else int(x) for x, y in zip(a, b, strict=True)]


def _letters(spec: str, dims: int) -> list[str]:
    """An operand's subscripts, with ``...`` expanded to broadcast dimensions numbered from
    the right, as broadcasting aligns them."""
    if "..." not in spec:
        return list(spec)
    head, tail = spec.split("...")
    return [*head, *(f"…{i}" for i in reversed(range(dims - len(head) - len(tail)))), *tail]


def einsum_flops(equation: str, operands: list[Any]) -> int:
    """Two operands: aten sums out what only one has, then runs one bmm (a mul when nothing
    is contracted). Three or more (a contraction order to follow) are counted at the dispatch
    level (:func:`needs_dispatch`); fewer run no product."""
    if len(operands) != 2:
        return 0
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


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, key: str) -> Any:
    return args[i] if len(args) > i else kwargs.get(key)


def _einsum_operands(args: tuple[Any, ...]) -> list[Any]:
    operands = list(args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    return operands


def _sdpa(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``scaled_dot_product_attention``'s FLOPs from its query, key and value, if countable."""
    q, k, v = (_arg(args, kwargs, i, key) for i, key in enumerate(("query", "key", "value")))
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return None
    b, h, s_q, d = _shape(q)
    b2, h2, s_k, d2 = _shape(k)
    b3, h3, s_v, d_v = _shape(v)
    if (b, h, d) != (b2, h2, d2) or (b, h, s_k) != (b3, h3, s_v):
        return None  # (grouped heads, broadcasting: let the dispatch level count them)
    return _mm(s_q, d, s_k, b * h) + _mm(s_q, s_k, d_v, b * h)


def needs_dispatch(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether only a dispatch mode can count the call's FLOPs (asked before it runs, once)."""
    base = name.removesuffix("_")
    if base in OPAQUE:
        return True
    try:
        if base == "einsum":
            return len(_einsum_operands(args)) > 2 or not (args and isinstance(args[0], str))
        if base == "scaled_dot_product_attention":
            return _sdpa(args, kwargs) is None
    except (AttributeError, IndexError, TypeError, ValueError):
        pass  # (an unusual signature: torch raises, or there is nothing to count)
    return False


def op_flops(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    """The FLOPs of an operation that does not :func:`needs_dispatch`."""
    base = name.removesuffix("_")
    try:
        if base in ("matmul", "rmatmul", "imatmul"):
            a, b = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "other")
            return matmul_flops(b, a) if base == "rmatmul" else matmul_flops(a, b)
        if base in _PRODUCTS:
            i, first, second = _PRODUCTS[base]
            a, b = _arg(args, kwargs, i, first), _arg(args, kwargs, i + 1, second)
            batch = a.shape[0] if base.startswith("b") else 1
            return _mm(a.shape[-2], a.shape[-1], b.shape[-1], batch)
        if base == "linear":
            x, w = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
            return _mm(math.prod(x.shape[:-1]), w.shape[-1], w.shape[0] if w.dim() == 2 else 1)
        if base in _CONV:
            x_shape, out_shape = _shape(_arg(args, kwargs, 0, "input")), _shape(out)
            w_shape = _shape(_arg(args, kwargs, 1, "weight"))
            c_out, c_in, *kernel = w_shape
            if len(x_shape) == len(w_shape) - 1:  # unbatched: torch adds a batch of one
                x_shape, out_shape = [1, *x_shape], [1, *out_shape]
            spatial = (x_shape if _CONV[base] else out_shape)[2:]
            return 2 * math.prod(spatial) * math.prod(kernel) * x_shape[0] * c_out * c_in
        if base == "einsum":
            return einsum_flops(args[0], _einsum_operands(args))
        if base == "scaled_dot_product_attention":
            return _sdpa(args, kwargs) or 0
    except (AttributeError, IndexError, TypeError, ValueError, RuntimeError):
        pass  # (a call torch accepted in a form the formulas do not read)
    return 0


#: Value reads by the name of the function torch hands the mode: Python's conversions are
#: dunders (``float(t)`` is ``__float__``), which the operation text strips, while the methods of
#: the same name without them (``t.float()``, ``t.bool()``) are dtype casts that read nothing.
_READ_VALUES = frozenset(
    ("__bool__", "__int__", "__float__", "__index__", "__complex__", "__contains__",
     "__format__", "__repr__", "__str__", "__array__", "item", "tolist", "numpy", "equal",
     "allclose", "is_nonzero")
)  # fmt: skip
_VALUE_SHAPED = frozenset(
    ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount", "nms",
     "batched_nms")
)  # fmt: skip
#: Operations whose output shape is set by their later arguments (a 0-dim tensor there is
#: read as a size), and factories, by any argument.
_SIZED = frozenset(
    ("view", "reshape", "expand", "repeat", "tile", "narrow", "split", "tensor_split",
     "split_with_sizes", "topk", "kthvalue", "new_zeros", "new_ones", "new_empty", "new_full",
     "interpolate", "repeat_interleave")
)  # fmt: skip
_FACTORIES = frozenset(
    ("arange", "range", "linspace", "logspace", "zeros", "ones", "empty", "full", "eye",
     "rand", "randn", "randint", "randperm")
)  # fmt: skip
#: Arguments of those that torch reads in C++ for the values or the offset of the result, never
#: its shape (a tensor there is read by no Python code): ``(position, keyword)``.
_NOT_SIZES = {
    "linspace": ((0, "start"), (1, "end")),
    "logspace": ((0, "start"), (1, "end")),
    "full": ((1, "fill_value"),),
    "new_full": ((2, "fill_value"),),
    "narrow": ((2, "start"),),
}
#: Operations whose values are drawn (or uninitialised): their results carry data.
RANDOM = frozenset(
    ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
     "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "poisson", "uniform_",
     "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "dropout",
     "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu",
     "gumbel_softmax", "empty", "empty_like", "empty_strided", "new_empty",
     "new_empty_strided")
)  # fmt: skip


def follows_data(
    func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], carries: Any
) -> bool:
    """Whether the operation ``name`` (``func``) is a data-dependent event, ``carries`` saying
    whether a tensor may carry data."""
    if name in _VALUE_SHAPED or getattr(func, "__name__", None) in _READ_VALUES:
        return any(carries(t) for t in tensor_list((args, kwargs)))
    if name == "getitem":
        torch = torch_api()[0]
        masks = [t for t in tensor_list(args[1:]) if t.dtype in (torch.bool, torch.uint8)]
        return any(carries(t) for t in masks)
    if name == "where":
        return len(args) + len(kwargs) == 1 and any(carries(t) for t in tensor_list((args,)))
    if name in _NOT_SIZES:
        skipped = _NOT_SIZES[name]
        args = tuple(a for i, a in enumerate(args) if all(i != at for at, _ in skipped))
        kwargs = {k: v for k, v in kwargs.items() if all(k != key for _, key in skipped)}
    if name in _FACTORIES or (name == "repeat_interleave" and len(args) == 1):
        sizes: tuple[Any, ...] = (args, kwargs)
    elif name in _SIZED:
        sizes = (args[1:], kwargs)
    else:
        return False
    return any(carries(t) for t in tensor_list(sizes))
