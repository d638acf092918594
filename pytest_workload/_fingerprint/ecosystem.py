"""The libraries around torch: their own input types (docs/explanation/hashes.md, "Input
signature": each looked up only once its library is imported, so a session without it pays
nothing), and their versions, recorded beside the hashes, never in them
(docs/how-to/library-upgrade.md)."""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .._core.strict_json import Json
from .._workload.signature import qualified_name

Nested = Callable[[object, str], Json]

_KV = ("keys", "values")


def _loaded(module: str, name: str) -> type | None:
    found = getattr(sys.modules.get(module), name, None)
    return found if isinstance(found, type) else None


def _cache(value: Any, nested: Nested, path: str) -> dict[str, Json]:
    """Each layer's keys and values, None for a layer not filled yet (a fresh static cache).
    Caches before transformers 4.54 keep two lists instead of layer objects."""
    layers: list[tuple[Any, Any] | None]
    if getattr(value, "layers", None) is None:
        keys, values = getattr(value, "key_cache", ()), getattr(value, "value_cache", ())
        layers = list(zip(keys, values, strict=False))
    else:
        layers = [
            (layer.keys, layer.values)
            if getattr(layer, "is_initialized", True) and getattr(layer, "keys", None) is not None
            else None
            for layer in value.layers
        ]
    tensors: list[Json] = [
        None
        if kv is None
        else [nested(t, f"{path}.layers[{i}].{n}") for n, t in zip(_KV, kv, strict=True)]
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


def describe_known(value: object, nested: Nested, path: str) -> Json | None:
    image_list = _loaded("torchvision.models.detection.image_list", "ImageList")
    cache = _loaded("transformers.cache_utils", "Cache")
    fields: dict[str, Json]
    if image_list is not None and isinstance(value, image_list):
        images: Any = value
        fields = {
            "tensors": nested(images.tensors, f"{path}.tensors"),
            "image_sizes": nested(list(images.image_sizes), f"{path}.image_sizes"),
        }
    elif cache is not None and isinstance(value, cache):
        fields = _cache(value, nested, path)
    else:
        return None
    return {"builtin": qualified_name(type(value)), "fields": fields}


_INSTALLED = ("site-packages", "dist-packages")


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """About a second on a large environment: asked only for an installed package whose
    distribution is named otherwise (``PIL``, ``sklearn``)."""
    return importlib.metadata.packages_distributions()


def _provides(dist: importlib.metadata.Distribution, package: str, file: Path) -> bool:
    top_level = dist.read_text("top_level.txt")
    if top_level is not None:
        return package in top_level.split()
    home = Path(dist.locate_file(package))  # type: ignore[arg-type]
    return file.is_relative_to(home) or file == home.with_suffix(".py")


@functools.cache
def _providers(package: str) -> tuple[str, ...]:
    """The distribution of the same name, looked up alone; the whole environment is read only
    for an installed package it does not match. A test's own module (not installed) has none."""
    file = getattr(sys.modules.get(package), "__file__", None)
    if file is None:
        return ()
    path = Path(file)
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        if _provides(dist, package, path):
            return (dist.metadata["Name"],)
    if not any(part in _INSTALLED for part in path.parts):
        return ()
    return tuple(_distributions().get(package, ()))


@functools.cache
def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_versions(packages: Iterable[str]) -> dict[str, str]:
    """torch's version and that of each distribution providing one of ``packages`` (top-level
    import names)."""
    found = {"torch"} | {d for p in packages for d in _providers(p)}
    return {name: v for name in sorted(found) if (v := _version(name)) is not None}
