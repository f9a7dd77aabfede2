"""mk.engine_step_seconds and mk.gpu_busy_fraction: serial sum against overlapped maximum."""
import pytest

import mha_kit as mk


def test_serial_step_is_the_sum_and_overlapped_the_max():
    assert mk.engine_step_seconds(0.005, 0.002) == pytest.approx(0.007)
    assert mk.engine_step_seconds(0.005, 0.002, overlap=True) == 0.005
    assert mk.engine_step_seconds(0.003, 0.004, overlap=True) == 0.004  # CPU-bound: the CPU sets the pace


def test_vllm_060_profile():
    # vLLM blog (5 Sep 2024): API server 33%, scheduling 29%, GPU 38% of the time
    assert mk.gpu_busy_fraction(0.38, 0.62) == pytest.approx(0.38)
    assert mk.gpu_busy_fraction(0.38, 0.29) == pytest.approx(0.38 / 0.67)
    assert mk.gpu_busy_fraction(0.38, 0.29, overlap=True) == 1.0


def test_errors():
    with pytest.raises(ValueError, match="cpu_s must be a number of seconds >= 0"):
        mk.engine_step_seconds(0.01, -1)
    with pytest.raises(ValueError, match="gpu_s must be a number of seconds >= 0"):
        mk.engine_step_seconds(True, 0.0)
    with pytest.raises(ValueError, match="both 0"):
        mk.gpu_busy_fraction(0.0, 0.0)
