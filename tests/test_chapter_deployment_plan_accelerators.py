"""The accelerator-choice section of "Plan a deployment": replica sizes for Llama 3 70B in bf16, recomputed."""
import math

import mha_kit as mk


def chips(hbm_bytes):
    weights = 2 * 70_553_706_496  # Llama 3 70B parameters (mk.dense_decoder_params), 2 bytes each
    n = math.ceil(weights / (0.7 * hbm_bytes))
    return 2 ** math.ceil(math.log2(n))


def test_replica_sizes():
    assert mk.dense_decoder_params(mk.MODEL_FACTS["llama-3-70b"]) == 70_553_706_496
    assert chips(80e9) == 4  # H100: 141.1 GB / 56 GB = 2.5 -> 3 -> 4
    assert chips(192e9) == 2  # MI300X: 141.1 / 134.4 = 1.05 -> 2
    assert chips(256e9) == 1 and chips(288e9) == 1  # MI325X, MI355X


def test_one_chip_floor_is_slower_than_four():
    weights = 2 * 70_553_706_496
    assert weights / 6.0e12 > weights / (4 * 3.35e12)  # one MI325X against four H100s
