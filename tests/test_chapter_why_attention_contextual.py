"""why_attention-contextual and why_attention-scaled: the static lookup, and the two matmuls' intensity."""

import numpy as np

import mha_kit as mk


def test_lookup_is_static_and_attention_makes_it_contextual():
    x_toy, w_toy, cfg = mk.toy_example()
    table = np.random.default_rng(7).standard_normal((4, cfg.d_model))
    e1, e2 = table[[0, 1, 2]], table[[0, 3, 2]]
    assert np.array_equal(e1[2], e2[2])
    o1 = mk.multi_head_attention(e1, *w_toy, cfg.num_heads)[0]
    o2 = mk.multi_head_attention(e2, *w_toy, cfg.num_heads)[0]
    assert not np.allclose(o1[2], o2[2])


def test_rnn_step_memory_bound_transformer_layer_compute_bound():
    d, b, n = 768, 8, 1024  # GPT-2 width and context
    rnn = 2 * b * d * d / (2 * (2 * b * d + d * d))
    tfm = 2 * b * n * d * d / (2 * (2 * b * n * d + d * d))
    ridge = mk.GPUS["h100-sxm"].ridge_point
    assert f"{rnn:.1f}" == "7.8" and f"{tfm:.1f}" == "366.8"
    assert rnn < ridge < tfm
    assert 2 * 12 * 12 * 64 * 2 == 36864 == mk.kv_cache_bytes_per_token(mk.MODEL_FACTS["gpt2"].config)
