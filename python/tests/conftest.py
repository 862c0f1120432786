"""Shared fixtures: one clgrad context for the session (PoCL, or whatever
CLGRAD_DEVICE / OCL_ICD_VENDORS select)."""
import numpy as np
import pytest

import clgrad


@pytest.fixture(scope="session")
def ctx():
    return clgrad.Context()


def micro_grads(shapes, seed, n_updates, k, scale=0.1):
    """[update][micro-step] -> {name: float32 gradient}, from a fixed seed."""
    rng = np.random.default_rng(seed)
    return [[{n: (scale * rng.standard_normal(s)).astype(np.float32) for n, s in shapes.items()}
             for _ in range(k)] for _ in range(n_updates)]
