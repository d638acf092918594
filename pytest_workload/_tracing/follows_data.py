"""Which operations follow the values of the tensors they are given, not only their shapes.

A *value read* hands tensor values to Python (``item``, ``bool(t)``, ``tolist``), where they
can steer control flow or become shapes; a *value-shaped* operation returns a tensor whose
shape the values set (``nonzero``, ``t[mask]``, ``torchvision.ops.nms``). Either is a
data-dependent event when a tensor it reads may carry data: one not computed in the call from
constants alone (inputs, parameters, buffers, random draws and their results all may). What
runs after such an event may follow the data, so a trace stops its computation there.
"""

from __future__ import annotations

from typing import Any

from .flops import tensor_list

_VALUE_READS = frozenset(
    ("item", "tolist", "numpy", "bool", "int", "float", "index", "complex", "contains",
     "format", "repr", "str", "array", "equal", "allclose", "is_nonzero")
)  # fmt: skip
_VALUE_SHAPED = frozenset(
    ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount",
     "nms", "batched_nms")
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
#: Operations whose values are drawn (or uninitialised): their results carry data.
RANDOM = frozenset(
    ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
     "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "poisson", "uniform_",
     "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "dropout",
     "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu",
     "gumbel_softmax", "empty", "empty_like", "empty_strided", "new_empty",
     "new_empty_strided")
)  # fmt: skip


def follows_data(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], carries: Any) -> bool:
    """Whether the operation ``name`` is a data-dependent event; ``carries(tensor)`` says
    whether a tensor may carry data."""
    if name in _VALUE_READS or name in _VALUE_SHAPED:
        return any(carries(t) for t in tensor_list((args, kwargs)))
    if name == "getitem":
        return len(args) > 1 and any(_is_mask(t) and carries(t) for t in tensor_list(args[1:]))
    if name == "where":
        return len(args) + len(kwargs) == 1 and any(carries(t) for t in tensor_list((args,)))
    if name in _FACTORIES or (name == "repeat_interleave" and len(args) == 1):
        sizes: tuple[Any, ...] = (args, kwargs)
    elif name in _SIZED:
        sizes = (args[1:], kwargs)
    else:
        return False
    return any(carries(t) for t in tensor_list(sizes))


def _is_mask(tensor: Any) -> bool:
    import torch

    return tensor.dtype in (torch.bool, torch.uint8)
