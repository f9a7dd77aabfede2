"""Claims of the feed-forward and decoder-layer sections of "The block around attention", recomputed."""
import mha_kit as mk


def test_swiglu_at_eight_thirds_matches_the_4d_network():
    d = 4096
    relu = 2 * d * (4 * d)  # two d x 4d matrices
    swiglu = 3 * d * (8 * d // 3)  # three d x (8/3)d matrices, width rounded down
    assert abs(swiglu - relu) / relu < 1e-4


def test_llama3_8b_ffn_is_wider_than_the_matched_width():
    facts = mk.MODEL_FACTS["llama-3-8b"]
    d, d_ff = facts.config.d_model, facts.intermediate_size
    assert (d, d_ff) == (4096, 14336)
    assert round(3 * d * d_ff / (8 * d * d), 2) == 1.31  # 10.5 d^2 against 8 d^2


def test_decoder_layer_shapes():
    cfg = mk.MODEL_FACTS["llama-3-8b"].config
    assert (cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim == 6144  # fused QKV width
    assert cfg.num_heads // cfg.num_kv_heads == 4  # query heads per KV head
