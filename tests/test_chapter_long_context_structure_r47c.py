"""Section long_context_structure-chatglm-masks of "Sparse patterns and long-context evaluation".

ChatGLM-6B's get_masks (THUDM/chatglm-6b modeling_chatglm.py: tril, then every column before <sop> set to one)
against ChatGLM2-6B's (THUDM/chatglm2-6b: tril, ones over the cached keys), rebuilt here from their rules
written as index conditions (not through mha_kit or the chapter's helpers), the rows of a first turn that stay
valid when a second turn is appended, and the KV bytes per token from the two config.json files.
"""
import numpy as np
import pytest

import chapter_outputs

LABEL = "long_context_structure-chatglm-masks"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("long_context_structure")


def _rows(mask):
    return "\n".join(("[[" if i == 0 else " [") + " ".join(str(int(x)) for x in row) + "]"
                     for i, row in enumerate(mask)) + "]"


def _glm1(n, sop):  # may read: j <= i, or j before <sop>
    return np.array([[j <= i or j < sop for j in range(n)] for i in range(n)])


def _glm2(n_new, past):  # may read: every cached key, then j <= i among the new ones
    return np.array([[j < past or j - past <= i for j in range(past + n_new)] for i in range(n_new)])


def test_masks_printed(nb):
    out = chapter_outputs.printed(nb, "def chatglm6b_mask(seq")
    glm1, glm2 = _glm1(7, 4), _glm2(7, 0)
    assert glm1[:4, :4].all() and not glm1[:4, 4:].any()  # prompt and [gMASK] bidirectional, nothing after
    assert _rows(glm1) in out and _rows(glm2) in out
    assert "= mk.prefix_lm_mask(7, 4): True" in out and "= mk.causal_mask(7): True" in out
    assert "3 new tokens over 4 cached = mk.causal_mask(3, 7): True" in out
    assert _glm2(3, 4).sum() == 4 * 3 + 6  # ones over the cache plus a 3 x 3 triangle


def test_rows_kept_and_kv_bytes(nb):
    out = chapter_outputs.printed(nb, "turn1, turn2_question = 7, 3")
    t1, t2 = _glm1(7, 4), _glm1(12, 11)  # turn 2: 7 history + 3 question + [gMASK] in the prefix, then <sop>
    kept1 = sum(np.array_equal(t2[i], np.r_[t1[i], np.zeros(5, bool)]) for i in range(7))
    c1, c2 = _glm2(7, 0), _glm2(10, 0)
    kept2 = sum(np.array_equal(c2[i], np.r_[c1[i], np.zeros(3, bool)]) for i in range(7))
    assert (kept1, kept2) == (0, 7)
    assert f"stay valid in turn 2: ChatGLM-6B {kept1}, ChatGLM2-6B {kept2}" in out
    glm1_kv = 2 * 28 * 32 * (4096 // 32) * 2  # K, V; 28 layers; 32 heads of 128; fp16
    glm2_kv = 2 * 28 * 2 * 128 * 2  # 2 multi-query groups of kv_channels 128
    assert (glm1_kv, glm2_kv) == (458_752, 28_672)
    assert f"ChatGLM-6B {glm1_kv:,} B, ChatGLM2-6B {glm2_kv:,} B (16x less)" in out
    expect = {"lcs_glm_kept1": "0", "lcs_glm_kept2": "7", "lcs_glm1_kv": "448", "lcs_glm2_kv": "28",
              "lcs_glm_kv_ratio": "16"}
    for key, value in expect.items():
        assert chapter_outputs.glued(nb, key) == value, key


def test_section_form(nb):
    text = chapter_outputs.section(nb, LABEL, end="long_context_structure-evaluating")
    assert text.startswith(f"({LABEL})=\n### ")
    assert "```{admonition} In the interview\n:class: tip\n**[M]" in text
    assert ":class: dropdown" in text
    for locator in ("chatglm6bmasks{modeling_chatglm.py, ChatGLMModel.get_masks}",
                    "chatglm2masks{modeling_chatglm.py, ChatGLMModel.get_masks", "{ref}`position_encodings-bert-vit-glm`"):
        assert locator in text, locator
