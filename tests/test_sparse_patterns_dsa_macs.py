"""mk.dsa_query_macs against hand-counted multiply-adds (DeepSeek-V3.2-Exp Indexer.forward)."""
import pytest

import mha_kit as mk


def test_counts_at_128k_absorbed_mla():
    # absorbed MLA per (query, key): 128 heads * (512 + 64 scores + 512 values) = 139,264
    per_key = 128 * (512 + 64 + 512)
    assert per_key == 139_264
    got = mk.dsa_query_macs(131_072, per_key)
    assert got["indexer"] == 131_072 * 64 * 129 == 1_082_130_432
    assert got["attention"] == 139_264 * 2048 == 285_212_672
    assert got["dense"] == 139_264 * 131_072 == 18_253_611_008
    assert got["dsa"] == 1_082_130_432 + 285_212_672


def test_short_context_attends_to_everything():
    got = mk.dsa_query_macs(1000, 10, index_heads=2, index_head_dim=3, top_k=2048)
    assert got["attention"] == got["dense"] == 10_000
    assert got["indexer"] == 1000 * 2 * 4
    assert got["dsa"] > got["dense"]  # below top_k the indexer is pure overhead


@pytest.mark.parametrize("name, value", [("context_len", 0), ("attention_macs_per_key", -1),
                                         ("index_heads", 0), ("top_k", 0)])
def test_rejects_non_positive(name, value):
    args = {"context_len": 10, "attention_macs_per_key": 5, "index_heads": 2, "index_head_dim": 3, "top_k": 4}
    args[name] = value
    with pytest.raises(ValueError, match=name):
        mk.dsa_query_macs(**args)
