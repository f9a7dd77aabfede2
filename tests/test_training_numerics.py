"""mha_kit.training_numerics against GradScaler's documented rule and the log-domain identity."""
import numpy as np
import pytest

import mha_kit as mk


def test_loss_scale_backs_off_skips_and_grows():
    scales, skipped = mk.dynamic_loss_scale([False, True, False, False, False], growth_interval=2)
    # 2**16; overflow at step 1 halves it and skips; two clean steps (2, 3) double it back
    assert scales.tolist() == [65536.0, 65536.0, 32768.0, 32768.0, 65536.0]
    assert skipped.tolist() == [False, True, False, False, False]


def test_loss_scale_defaults_are_gradscalers():
    scales, _ = mk.dynamic_loss_scale([False] * 2001)
    assert scales[0] == 2.0 ** 16 and scales[1999] == 2.0 ** 16 and scales[2000] == 2.0 ** 17


def test_log_softmax_identity_and_underflow():
    x = np.array([2.0, 1.0, -3.0])
    np.testing.assert_allclose(mk.log_softmax(x), np.log(np.exp(x) / np.exp(x).sum()))
    far = np.array([0.0, -120.0], dtype=np.float32)
    assert mk.log_softmax(far).dtype == np.float32
    assert mk.log_softmax(far)[1] == pytest.approx(-120.0)  # exp(-120) ~ 7.7e-53 underflows float32
    with np.errstate(divide="ignore"):
        assert np.isneginf(np.log(np.exp(far - far.max()) / np.exp(far - far.max()).sum())[1])


def test_first_nonfinite_names_the_layer():
    layers = [lambda v: v * 2, lambda v: v * np.float16(1000), lambda v: v - v]
    with np.errstate(over="ignore", invalid="ignore"):
        i, out = mk.first_nonfinite(layers, np.array([40.0], dtype=np.float16))
    assert i == 1 and np.isinf(out[0])  # 80 * 1000 > 65,504
    assert mk.first_nonfinite(layers[:1], np.array([1.0]))[0] is None


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="backoff_factor"):
        mk.dynamic_loss_scale([False], backoff_factor=1.5)
    with pytest.raises(ValueError, match="growth_interval"):
        mk.dynamic_loss_scale([False], growth_interval=0)
    with pytest.raises(ValueError, match="float array"):
        mk.log_softmax(np.array([1, 2]))
    with pytest.raises(ValueError, match="at least one layer"):
        mk.first_nonfinite([], np.zeros(1))
