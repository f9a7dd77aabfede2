"""Claims of beyond_kv_cache's receptive-field and state-serving sections."""
import numpy as np
import pytest

import mha_kit as mk


@pytest.mark.parametrize("window, layers", [(4, 1), (4, 3), (3, 5)])
def test_stacked_windows_reach_layers_times_window_minus_one(window, layers):
    n = 40
    one = mk.sliding_window_mask(n, window).astype(int)
    reach = np.eye(n, dtype=int)
    for _ in range(layers):
        reach = np.minimum(one @ reach, 1)
    assert reach[-1].sum() == layers * (window - 1) + 1  # the token itself plus L (W - 1) before it


def test_mistral_span():
    facts = mk.MODEL_FACTS["mistral-7b"]
    assert facts.config.num_layers * (facts.sliding_window - 1) == 32 * 4095 == 131_040


def test_mamba_state_per_layer():
    d_inner, n_state, d_conv = 2 * 2560, 16, 4
    assert mk.mamba_state_bytes(2560, 16) == (d_inner * n_state + d_inner * (d_conv - 1)) * 2 == 190 * 1024
