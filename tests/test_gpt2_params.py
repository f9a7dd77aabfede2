"""gpt2_params against GPT-2's module shapes written out tensor by tensor (nanoGPT model.py, GPT.__init__)."""
import pytest

from mha_kit import gpt2_params


def _by_tensor(L, d, V=50257, n_ctx=1024):
    # Each layer's tensors: ln_1 w, b; c_attn W, b; attn c_proj W, b; ln_2 w, b; c_fc W, b; mlp c_proj W, b.
    layer = [d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * 4 * d, 4 * d, 4 * d * d, d]
    return L * sum(layer) + V * d + n_ctx * d + d + d  # wte, wpe, ln_f w and b


@pytest.mark.parametrize("L,d", [(12, 768), (24, 1024), (36, 1280), (48, 1600)])
def test_matches_tensor_list(L, d):
    assert gpt2_params(L, d) == _by_tensor(L, d)


def test_gpt2_small_is_124m():
    # The 124M of nanoGPT's from_pretrained comment; 124,439,808 exactly.
    assert gpt2_params(12, 768) == 124_439_808


def test_untied_adds_vocab_by_width():
    assert gpt2_params(24, 1024, tied=False) - gpt2_params(24, 1024) == 50257 * 1024


@pytest.mark.parametrize("kwargs", [dict(num_layers=0, d_model=768), dict(num_layers=12, d_model=7.5),
                                    dict(num_layers=12, d_model=768, vocab_size=-1)])
def test_rejects_bad_sizes(kwargs):
    with pytest.raises(ValueError, match="must be a positive integer"):
        gpt2_params(**kwargs)
