"""Claims of tradeoffs recomputed by hand: MLA's cache against MQA's for DeepSeek-V2's shapes
(DeepSeek-V2 §2.1.4, Table 1: MQA 2 d_h l, MLA (d_c + d_h^R) l, about 4.5 d_h l)."""
from fractions import Fraction

import mha_kit as mk


def test_mla_caches_more_than_mqa():
    d_c, d_rope, d_h = 512, 64, 128  # DeepSeek-V2 §3.1.2
    v2 = mk.PRESETS["deepseek-v2"]
    assert (v2.kv_lora_rank, v2.qk_rope_head_dim, v2.v_head_dim) == (d_c, d_rope, d_h)
    mla, mqa = d_c + d_rope, 2 * d_h
    assert mla == 576 == mk.kv_elements_per_token(v2)
    assert mqa == 256 and mla > mqa
    assert Fraction(mla, d_h) == Fraction(9, 2)  # the paper's 9/2 d_h
    assert Fraction(mla, mqa) == Fraction(9, 4)  # GQA with 2.25 groups
