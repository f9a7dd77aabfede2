"""DeepSeek-V4's compressed cache counted against its definition and its configuration.

Sources: the DeepSeek-V4 report, sec. 2.3.1-2.3.2 (CSA pools every m = 4 tokens into one entry
and keeps an indexer key per entry; HCA pools every m' = 128 tokens, no indexer; every layer keeps
a window of 128 recent positions; one entry serves as key and value), as implemented by Hugging
Face transformers ``DeepseekV4CSACache`` / ``DeepseekV4HCACache``; DeepSeek-V4-Flash's
``config.json`` (head_dim 512, index_head_dim 128, sliding_window 128, 43 layers with
``compress_ratios`` [0, 0, then 4 and 128 alternating, 4] before the MTP layer's entry).
"""
import pytest

import mha_kit as mk

FLASH_RATIOS = [0, 0] + [4, 128] * 20 + [4]  # the 43 decoder layers; the config's 44th entry is the MTP layer


def test_flash_schedule_has_2_window_21_csa_20_hca_layers():
    assert len(FLASH_RATIOS) == 43
    assert (FLASH_RATIOS.count(0), FLASH_RATIOS.count(4), FLASH_RATIOS.count(128)) == (2, 21, 20)


def test_hand_count_one_layer_of_each_kind():
    # 1,000 tokens, window 128, entries of 512, indexer keys of 128
    assert mk.compressed_cache_numbers(1000, [0], 512, 128, 128) == (128 * 512, 0)
    assert mk.compressed_cache_numbers(1000, [4], 512, 128, 128) == (128 * 512, 250 * (512 + 128))
    assert mk.compressed_cache_numbers(1000, [128], 512, 128, 128) == (128 * 512, 7 * 512)  # 1000 // 128 = 7


def test_flash_at_one_million_tokens_written_out():
    n = 2**20
    window, compressed = mk.compressed_cache_numbers(n, FLASH_RATIOS, 512, 128, 128)
    assert window == 43 * 128 * 512
    assert compressed == 21 * (n // 4) * (512 + 128) + 20 * (n // 128) * 512


def test_short_context_keeps_only_what_it_has():
    assert mk.compressed_cache_numbers(3, [0, 4, 128], 512, 128, 128) == (3 * 3 * 512, 0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(context_len=0), "context_len"),
    (dict(compress_ratios=[]), "compress_ratios"),
    (dict(compress_ratios=[4, -1]), "compress_ratios"),
    (dict(head_dim=0), "head_dim"),
    (dict(window=0), "window"),
])
def test_errors_name_the_rule(kwargs, match):
    args = dict(context_len=16, compress_ratios=[0, 4], head_dim=8, index_head_dim=4, window=4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        mk.compressed_cache_numbers(**args)
