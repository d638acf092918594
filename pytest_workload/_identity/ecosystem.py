"""Descriptions of the ecosystem's own input types: torchvision's ``ImageList`` and Hugging
Face caches (``DynamicCache``, ``StaticCache`` and the other ``Cache`` classes).

Each is looked up only when its library is already imported (a test that passes one has
imported it), so a session without them pays nothing. A value is described by what decides its
computation: an ``ImageList`` by its batch tensor and image sizes, a cache by its layer count,
sequence length and the shapes and dtypes of each layer's keys and values, never their values.
``ModelOutput`` needs nothing here: it is a dataclass, described field by field. The
``pytest_workload_describe`` hook is asked first, so a project can describe these its own way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .._model.canonical import Json
from .._model.signature import qualified_name

#: Describes a nested value at a path (the describer's own ``describe``).
Nested = Callable[[object, str], Json]

_IMAGE_LIST = ("torchvision.models.detection.image_list", "ImageList")
_CACHE = ("transformers.cache_utils", "Cache")


def _loaded(location: tuple[str, str]) -> type | None:
    module = sys.modules.get(location[0])
    found = getattr(module, location[1], None)
    return found if isinstance(found, type) else None


def _image_list(value: Any, nested: Nested, path: str) -> dict[str, Json]:
    return {
        "tensors": nested(value.tensors, f"{path}.tensors"),
        "image_sizes": nested(list(value.image_sizes), f"{path}.image_sizes"),
    }


def _layers(cache: Any) -> list[tuple[Any, Any] | None]:
    """Each layer's (keys, values), None for a layer not filled yet (a fresh static cache).
    Caches before transformers 4.54 keep two lists instead of layer objects."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        return list(
            zip(getattr(cache, "key_cache", ()), getattr(cache, "value_cache", ()), strict=False)
        )
    return [
        (layer.keys, layer.values)
        if getattr(layer, "is_initialized", True) and getattr(layer, "keys", None) is not None
        else None
        for layer in layers
    ]


def _cache(value: Any, nested: Nested, path: str) -> dict[str, Json]:
    layers = _layers(value)
    tensors: list[Json] = [
        None
        if kv is None
        else [
            nested(kv[0], f"{path}.layers[{i}].keys"),
            nested(kv[1], f"{path}.layers[{i}].values"),
        ]
        for i, kv in enumerate(layers)
    ]
    node: dict[str, Json] = {
        "layers": len(layers),
        "seq_length": int(value.get_seq_length()),
        "tensors": tensors,
    }
    max_length = getattr(value, "get_max_cache_shape", None)
    if callable(max_length):
        node["max_cache_len"] = int(max_length())
    return node


_KNOWN: tuple[tuple[tuple[str, str], Callable[[Any, Nested, str], dict[str, Json]]], ...] = (
    (_IMAGE_LIST, _image_list),
    (_CACHE, _cache),
)


def describe_known(value: object, nested: Nested, path: str) -> Json | None:
    """The description of an ecosystem type, tagged with its class; None for other values."""
    for location, describe in _KNOWN:
        cls = _loaded(location)
        if cls is not None and isinstance(value, cls):
            return {"builtin": qualified_name(type(value)), "fields": describe(value, nested, path)}
    return None
