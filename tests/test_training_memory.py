"""ZeRO's per-GPU model-state bytes and the 1F1B stage peaks, against their papers (merged from the r11a and
r11c tests): Rajbhandari et al. 2020, sec. 3.1 and Figure 1; Narayanan et al. 2021, sec. 2.2.1."""
import pytest

import mha_kit as mk


def test_sixteen_bytes_per_parameter_without_sharding():
    # sec. 3.1: 2 (fp16 params) + 2 (fp16 grads) + 12 (fp32 params, momentum, variance) = 16 bytes
    assert mk.zero_bytes_per_gpu(1_000, 8, 0) == 16_000
    assert mk.ADAM_STATE_BYTES == 12


def test_zero_figure_1_example():
    # Figure 1: Psi = 7.5B, N_d = 64, K = 12 -> 120, 31.4, 16.6 and 1.9 GB
    expected = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
    for stage, gb in expected.items():
        assert round(mk.zero_bytes_per_gpu(7.5e9, 64, stage) / 1e9, 1) == gb


def test_zero_formulas_written_out():
    psi, n, k = 6_500_000_000, 4, 12
    assert mk.zero_bytes_per_gpu(psi, n, 0) == 16 * psi
    assert mk.zero_bytes_per_gpu(psi, n, 1) == 2 * psi + 2 * psi + k * psi / n
    assert mk.zero_bytes_per_gpu(psi, n, 2) == 2 * psi + (2 + k) * psi / n
    assert mk.zero_bytes_per_gpu(psi, n, 3) == 16 * psi / n
    assert mk.zero_bytes_per_gpu(psi, 1, 3) == mk.zero_bytes_per_gpu(psi, 1, 0)  # one GPU: nothing to shard
    assert mk.zero_bytes_per_gpu(psi, n, 0, state_bytes=6) == 10 * psi  # 8-bit Adam states: K about 6


def test_zero_errors():
    with pytest.raises(ValueError, match="ZeRO stage must be 0, 1, 2 or 3"):
        mk.zero_bytes_per_gpu(1e9, 8, 4)
    with pytest.raises(ValueError, match="num_gpus"):
        mk.zero_bytes_per_gpu(1e9, 0, 1)
    with pytest.raises(ValueError, match="num_params"):
        mk.zero_bytes_per_gpu(-1, 8, 1)
    with pytest.raises(ValueError, match="state_bytes"):
        mk.zero_bytes_per_gpu(1e9, 8, 1, state_bytes=0)


def test_one_f_one_b_in_flight():
    # sec. 2.2.1: at most p micro-batches in flight, the first stage holds p, the last one
    assert [mk.one_f_one_b_in_flight(4, s) for s in range(4)] == [4, 3, 2, 1]
    with pytest.raises(ValueError, match="0 <= stage < stages"):
        mk.one_f_one_b_in_flight(4, 4)
    with pytest.raises(ValueError, match="stages"):
        mk.one_f_one_b_in_flight(0, 0)
