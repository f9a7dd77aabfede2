"""AMD_GPUS against the data sheets and vLLM's FNUZ rule; weights_fit by hand."""
import pytest

import mha_kit as mk


def test_amd_records():
    gb = 10**9
    assert [(g.hbm_bytes // gb, g.hbm_bandwidth / 1e12) for g in mk.AMD_GPUS.values()] == [
        (192, 5.3), (256, 6.0), (288, 8.0)]
    assert mk.AMD_GPUS["mi300x"].fp8 == "float8_e4m3fnuz" == mk.AMD_GPUS["mi325x"].fp8  # gfx942
    assert mk.AMD_GPUS["mi355x"].fp8 == "float8_e4m3fn"  # gfx950: OCP FP8


def test_weights_fit_by_hand():
    assert mk.weights_fit(140 * 10**9, 192 * 10**9) == pytest.approx(0.9 * 192e9 - 140e9)
    assert mk.weights_fit(671 * 10**9, 80 * 10**9, 8) < 0  # an FP8 671B model on 8 x 80 GB
    assert mk.weights_fit(671 * 10**9, 192 * 10**9, 8) > 0


def test_weights_fit_errors():
    with pytest.raises(ValueError, match="need num_gpus >= 1"):
        mk.weights_fit(1, 1, 0)
    with pytest.raises(ValueError, match="0 < utilization <= 1"):
        mk.weights_fit(1, 1, 1, utilization=1.5)


def test_mi300x_peaks_from_rocm_table():
    g = mk.AMD_GPUS["mi300x"]
    clock = 2.1e9  # the clock the table's products imply: 1307.4e12 / (304 * 2048)
    assert g.bf16_flops == pytest.approx(304 * 2048 * clock, rel=1e-4)
    assert g.fp8_flops == 2614.9e12 and g.fp8_flops == pytest.approx(2 * g.bf16_flops, rel=1e-4)
    assert mk.AMD_GPUS["mi355x"].fp8_flops is None  # not read from AMD here
    # The GPU MODE fp8-mm task's first speed-of-light row: 8.63 us for 1024 x 1536 x 7168.
    assert 2 * 1024 * 1536 * 7168 / g.fp8_flops * 1e6 == pytest.approx(8.63, abs=0.01)
