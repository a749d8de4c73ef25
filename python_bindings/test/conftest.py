import numpy as np
import pytest


@pytest.fixture
def rng():
    # Fresh random inputs each run; the seed is printed on failure.
    seed = np.random.SeedSequence().entropy % (2**32)
    print(f"random seed {seed}")
    return np.random.default_rng(seed)
