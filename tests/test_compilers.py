"""mha_kit.compilers against get_token_paddings in vLLM's TPU runner (its comment lists the default ladder)."""
import pytest

import mha_kit as mk


def test_power_of_two_ladder_matches_the_source_comment():
    # tpu runner: "# [16, 32, 64, 128, 256, 512, 1024, 2048]" for max_num_batched_tokens 2048
    assert mk.tpu_token_paddings(16, 2048) == [16, 32, 64, 128, 256, 512, 1024, 2048]
    assert mk.tpu_token_paddings(16, 3000)[-1] == 4096  # the last bucket covers the maximum


def test_gap_ladder_doubles_then_steps():
    assert mk.tpu_token_paddings(16, 300, 64) == [16, 32, 64, 128, 192, 256, 320]
    assert mk.tpu_token_paddings(16, 300, 100) == [16, 32, 64, 164, 264, 364]  # back to 64, then +100


def test_padded_tokens_takes_the_smallest_bucket():
    ladder = mk.tpu_token_paddings(16, 2048)
    assert mk.padded_tokens(300, ladder) == 512
    assert mk.padded_tokens(16, ladder) == 16
    with pytest.raises(ValueError, match="exceeds the largest bucket"):
        mk.padded_tokens(4000, ladder)


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="power of two"):
        mk.tpu_token_paddings(24, 2048)
    with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
        mk.tpu_token_paddings(16, 0)
    with pytest.raises(ValueError, match="gap must be a positive integer"):
        mk.tpu_token_paddings(16, 2048, -8)
