"""gpu_kernels-fa-which-models: FlashAttention is exact attention (a blockwise online softmax written here from the
recurrence, not through mha_kit, equals the plain softmax), and each model's head size and score features against
flash-attn's README (changelog 2.3 sliding window, 2.4 ALiBi, 2.6 softcapping; head dims up to 256), with the shapes
typed from the models' config.json files."""
import numpy as np
import pytest

import chapter_outputs

SINCE = {"causal": (2, 1), "sliding window": (2, 3), "soft-cap": (2, 6)}  # flash-attn README changelog (2.1: causal mask aligned bottom-right)
MODELS = {  # (q.k head size, v head size, sliding window?, softcap?) from each config.json
    "gpt2": (768 // 12, 768 // 12, False, False),  # n_embd 768, n_head 12
    "falcon-7b": (4544 // 71, 4544 // 71, False, False),  # hidden 4544, 71 heads
    "llama-3-8b": (128, 128, False, False),
    "mistral-7b": (128, 128, True, False),  # sliding_window 4096 (v0.1)
    "gemma-2-9b": (256, 256, True, True),  # head_dim 256, sliding_window 4096, attn_logit_softcapping 50
    "deepseek-v3": (128 + 64, 128, False, False),  # qk_nope 128 + qk_rope 64, v_head_dim 128
}


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("gpu_kernels")


def _online_softmax_attention(q, k, v, block):
    n = q.shape[0]
    m, s, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, v.shape[1]))
    for j in range(0, k.shape[0], block):
        sc = q @ k[j:j + block].T / np.sqrt(q.shape[1])
        sc = np.where(np.arange(j, j + sc.shape[1])[None, :] <= np.arange(n)[:, None], sc, -np.inf)  # causal
        m_new = np.maximum(m, sc.max(axis=1))
        scale, p = np.exp(m - m_new), np.exp(sc - m_new[:, None])
        s, acc, m = s * scale + p.sum(axis=1), acc * scale[:, None] + p @ v[j:j + block], m_new
    return acc / s[:, None]


def test_tiled_attention_is_exact(nb):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((40, 16)) for _ in range(3))
    sc = q @ k.T / 4.0 + np.triu(np.full((40, 40), -np.inf), 1)
    p = np.exp(sc - sc.max(axis=1, keepdims=True))
    assert np.allclose(_online_softmax_attention(q, k, v, 16), (p / p.sum(axis=1, keepdims=True)) @ v, rtol=1e-12, atol=1e-12)
    assert "tiled (FlashAttention) equals plain attention to rounding: True" in chapter_outputs.printed(nb, "FEATURE_SINCE")


@pytest.mark.parametrize("name", MODELS)
def test_model_rows(nb, name):
    dqk, dv, window, softcap = MODELS[name]
    needs = ["causal"] + ["sliding window"] * window + ["soft-cap"] * softcap
    since = ".".join(map(str, max(SINCE[f] for f in needs)))
    size = f"{dqk}" if dqk == dv else f"{dqk} / {dv}"
    line = next(s for s in chapter_outputs.printed(nb, "FEATURE_SINCE").splitlines() if s.startswith(name + " "))
    fa2 = dqk == dv and dqk <= 256  # csrc/flash_attn/flash_api.cpp: CHECK_SHAPE(v, ..., head_size)
    fa3 = dqk <= 256 and (dqk == dv or (128 < dqk <= 192 and 96 < dv <= 128))  # hopper/flash_api.cpp
    assert line.split() == [name, *size.split(), *", ".join(needs).split(), ">=", since, str(fa2), str(fa3)]


def test_mla_glue_and_deepseek_fits_only_fa3(nb):
    assert (chapter_outputs.glued(nb, "gk_fa_mla_qk"), chapter_outputs.glued(nb, "gk_fa_mla_v")) == ("192", "128")
    # absorbed MLA decode: key = kv_lora_rank 512 + qk_rope_head_dim 64, value = kv_lora_rank (DeepSeek-V3 config.json)
    assert (chapter_outputs.glued(nb, "gk_fa_mla_decode_k"), chapter_outputs.glued(nb, "gk_fa_mla_decode_v")) == (
        str(512 + 64), "512")
    assert chapter_outputs.glued(nb, "gk_fa_causal_since") == "2.1"
    text = chapter_outputs.section(nb, "gpu_kernels-fa-which-models", end="gpu_kernels-gemv")
    assert "`_supports_flash_attn`" in text and "but DeepSeek-V3 fits FlashAttention-2" in text


def test_glue_section_links_and_citations(nb):
    assert chapter_outputs.glued(nb, "gk_fa_gemma_since") == "2.6"
    text = chapter_outputs.section(nb, "gpu_kernels-fa-which-models", end="gpu_kernels-gemv")
    for ref in ("attention_backends-selection", "attention_backends-pytorch-sdpa", "attention_backends-flexattention",
                "attention_backends-learned-bias", "attention_backends-mixed-masks", "attention_backends-flash-api",
                "rope_scaling-alibi-rope-experiment", "attention_backends-attention-weights", "gpu_kernels-limits"):
        assert "{ref}`" + ref + "`" in text and ref in chapter_outputs.book_labels(), ref
    chapter_outputs.assert_cited(text, ["dao2022flashattention", "flashattnreadme", "hfflashattn2", "hfremotefa2",
                                        "flashattnusage", "flashattnheaddimv", "hftransformers39471"])
    assert 'attn_implementation="flash_attention_2"' in text and "In the interview" in text and "Drill" in text
    assert "0251105a" in text  # the setting: which flash-attn README
