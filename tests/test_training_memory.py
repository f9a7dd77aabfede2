"""zero_model_state_bytes against ZeRO's own accounting (Rajbhandari et al. 2020, Sec. 3.1, Fig. 1)."""
import pytest

import mha_kit as mk


def test_sixteen_bytes_per_parameter_without_sharding():
    # Sec. 3.1: 2 (fp16 params) + 2 (fp16 grads) + 12 (fp32 params, momentum, variance) = 16 bytes
    assert mk.zero_model_state_bytes(1_000, stage=0, n_gpus=8) == 16_000
    assert mk.ADAM_STATE_BYTES == 12


@pytest.mark.parametrize("stage, reported_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure_one(stage, reported_gb):
    # Fig. 1: a 7.5B-parameter model, N = 64 data-parallel GPUs, K = 12
    got = mk.zero_model_state_bytes(7_500_000_000, stage=stage, n_gpus=64) / 1e9
    assert got == pytest.approx(reported_gb, abs=0.05)


def test_stage_formulas_written_out():
    psi, n = 6_500_000_000, 4
    assert mk.zero_model_state_bytes(psi, 1, n) == 2 * psi + 2 * psi + 12 * psi / n
    assert mk.zero_model_state_bytes(psi, 2, n) == 2 * psi + (2 + 12) * psi / n
    assert mk.zero_model_state_bytes(psi, 3, n) == 16 * psi / n


def test_errors_name_the_rule():
    with pytest.raises(ValueError, match="stage must be 0, 1, 2 or 3"):
        mk.zero_model_state_bytes(10, stage=4)
    with pytest.raises(ValueError, match="n_gpus"):
        mk.zero_model_state_bytes(10, stage=1, n_gpus=0)
