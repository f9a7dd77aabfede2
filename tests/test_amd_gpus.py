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
