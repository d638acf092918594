"""Shared fixtures for the test suite."""

from __future__ import annotations

import pytest
import torch

from tests.models import TinyNet


@pytest.fixture
def tiny() -> TinyNet:
    torch.manual_seed(0)
    return TinyNet().eval()
