"""notation-widths, the worked shapes: a model width of 5,120 with 64 query heads of 128 and 8 key-value
heads (h * d_h = 8,192 > d_model). Products written out by hand, then compared with mha_kit."""
import mha_kit as mk

D, H, H_KV, D_H = 5120, 64, 8, 128


def test_projection_shapes_and_parameter_count():
    w_q, w_kv, w_o = (D, H * D_H), (D, H_KV * D_H), (H * D_H, D)  # W_K and W_V share one shape
    assert w_q == (5120, 8192) and w_kv == (5120, 1024) and w_o == (8192, 5120)
    by_hand = 5120 * 8192 + 2 * 5120 * 1024 + 8192 * 5120
    assert by_hand == 94_371_840
    cfg = mk.AttentionConfig(d_model=D, num_heads=H, num_kv_heads=H_KV, head_dim=D_H)
    assert mk.projection_params(cfg) == by_hand


def test_the_extra_width_is_inside_the_block():
    # W_Q widens by h * d_h / d_model and W_O maps back, so the residual stream keeps d_model.
    assert H * D_H / D == 1.6
    cfg = mk.AttentionConfig(d_model=D, num_heads=H, num_kv_heads=H_KV, head_dim=D_H)
    assert cfg.num_heads * cfg.head_dim != cfg.d_model
