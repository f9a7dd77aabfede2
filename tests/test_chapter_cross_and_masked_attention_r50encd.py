"""Section cross_and_masked_attention-encdec-generation-cost: generating n_tgt tokens with an encoder-decoder.

Recomputed from the base model's constants (Vaswani et al. 2017, sec. 3.1 and Table 3: d = 512, 8 heads of
64, d_ff = 2048, 6 + 6 layers) with the four schedules written as plain sums of multiply-adds per step, not
with mha_kit, and compared with the chapter's printed table and glued figures.
"""
import pytest

import chapter_outputs

LABEL = "cross_and_masked_attention-encdec-generation-cost"
D, D_FF, LAYERS, SRC, TGT = 512, 2048, 6, 1024, 128
PER_TOKEN = 4 * D * D + 2 * D * D_FF  # Q, K, V, O and W1, W2: multiply-adds a token a layer


def encoder():
    return LAYERS * (SRC * PER_TOKEN + 2 * SRC * SRC * D)  # bidirectional scores and mixes: 2 n^2 d


def decoder_step(i, reproject):  # position i (1-based): one query against i target keys and all source keys
    own = PER_TOKEN + 2 * i * D + 2 * D * D + 2 * SRC * D  # self block, cross Q and O, cross attention
    return LAYERS * (own + (2 * SRC * D * D if reproject else 0))


def decoder_rerun(m):  # every position 1..m again, the memory projected once in this pass
    return sum(decoder_step(i, False) for i in range(1, m + 1)) + LAYERS * 2 * SRC * D * D


def schedules():
    naive = sum(encoder() + decoder_rerun(i) for i in range(1, TGT + 1))
    once = encoder() + sum(decoder_rerun(i) for i in range(1, TGT + 1))
    self_cache = encoder() + sum(decoder_step(i, True) for i in range(1, TGT + 1))
    incremental = encoder() + LAYERS * 2 * SRC * D * D + sum(decoder_step(i, False) for i in range(1, TGT + 1))
    return naive, once, self_cache, incremental


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("cross_and_masked_attention")


def test_table_and_glue(nb):
    out = chapter_outputs.printed(nb, 'gen_facts = mk.MODEL_FACTS["transformer-base"]')
    naive, once, self_cache, inc = schedules()
    assert inc == encoder() + decoder_rerun(TGT)  # nothing recomputed: one training-style pass
    assert naive > once > self_cache > inc
    names = ("naive: encoder + decoder every step", "encoder once, decoder rerun",
             "+ self K/V cache, cross K/V re-projected", "+ cross K/V projected once (incremental)")
    for name, macs in zip(names, (naive, once, self_cache, inc)):
        assert f"{name:44s}{2 * macs / 1e9:>9,.1f} GFLOP  x{macs / inc:>6.2f}" in out, name
    assert "incremental == encoder + one decoder pass over all 128 positions: True" in out
    for key, macs in zip(("naive", "once", "self", "inc"), (naive, once, self_cache, inc)):
        assert chapter_outputs.glued(nb, f"cma_gen_{key}") == f"{2 * macs / 1e9:,.1f}", key
    hidden = (TGT - 1) * LAYERS * 2 * SRC * D * D
    assert hidden == self_cache - inc
    cross_attn = LAYERS * 2 * TGT * SRC * D
    assert chapter_outputs.glued(nb, "cma_gen_hidden") == f"{2 * hidden / 1e9:.0f}"
    assert chapter_outputs.glued(nb, "cma_gen_hidden_x") == f"{hidden / cross_attn:.0f}" == "508"  # d (T-1)/T
    assert chapter_outputs.glued(nb, "cma_gen_enc") == f"{2 * encoder() / 1e9:.1f}" == "51.5"
    save_enc, save_self, save_cross = naive - once, once - self_cache, self_cache - inc
    assert save_enc > save_cross > save_self  # the encoder-once saving is the largest, in absolute FLOPs
    assert chapter_outputs.glued(nb, "cma_gen_save_enc") == f"{2 * save_enc / 1e9:,.0f}" == "6,546"
    assert chapter_outputs.glued(nb, "cma_gen_save_self") == f"{2 * save_self / 1e9:,.0f}" == "465"
    cross_bytes = 2 * LAYERS * SRC * D * 2  # K and V in every decoder layer, bf16
    assert chapter_outputs.glued(nb, "cma_gen_cross_mb") == f"{cross_bytes / 1e6:.1f}" == "12.6"


def test_asymptotic_orders():
    """Doubling n_tgt with n_src fixed: the naive cost grows faster than the incremental one."""
    global TGT
    keep = TGT
    try:
        base = schedules()
        TGT = 2 * keep
        doubled = schedules()
    finally:
        TGT = keep
    assert doubled[0] / base[0] > doubled[3] / base[3]
    assert doubled[2] - doubled[3] > 2 * (base[2] - base[3])  # the re-projection grows with n_tgt


def test_section_form(nb):
    text = chapter_outputs.section(nb, LABEL, end="cross_and_masked_attention-vlm-cross")
    assert text.startswith(f"({LABEL})=\n### ")
    assert "```{admonition} In the interview\n:class: tip\n**[M]" in text
    assert ":class: dropdown" in text
    assert "The largest single saving is the\ncross-attention cache" not in text
    assert "The largest saving is running the encoder once" in text
    for locator in ("cs182fa23summ2{", "vaswani2017attention{§4, Table 1}", "hft5crosscache{T5Attention.forward}",
                    "{ref}`kv_cache_basics-flops-saved`", "{ref}`cross_and_masked_attention-self-cross`"):
        assert locator in text, locator
