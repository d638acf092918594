"""A weight-based cache key: the classic bug, as users' own key functions still write it."""

import hashlib

import pytest


@pytest.hookimpl(optionalhook=True)  # so that -p no:workload still loads this conftest
def pytest_workload_key(module, args, kwargs):
    if kwargs or len(args) != 1:
        return None
    digest = hashlib.md5()
    for p in module.parameters():
        digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()
