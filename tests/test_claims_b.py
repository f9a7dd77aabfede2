"""The corrected claims of the interview chapters and the cheat sheet, checked from the formulas.

Issue 11 fixed claims in answering, common_mistakes, follow_up_questions, notation and the cheat
sheet. Each test below recomputes one checked quantity by hand and fails if `mha_kit` (and so the
chapter that prints it) came to say something else; the last tests keep the chapters' interview
layer (follow-up chains, difficulty tags, hidden build checks) in the shape the tools read.
"""
import re
from fractions import Fraction

import numpy as np
import pytest
from booktoc import REPO_ROOT, cells, markdown

import mha_kit as mk

H100 = (3.35e12, 989e12)  # bytes/s, dense bf16 FLOP/s (NVIDIA H100 SXM datasheet)
H200 = (4.8e12, 989e12)  # the same for the H200 SXM
BF16 = 2  # bytes per number


# ---------------------------------------------------------------------------------------------
# More heads do not cost KV cache: 2 * h_kv * d_h numbers per token and layer, no h in it
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h", [1, 8, 16, 64])  # one head of 512, eight of 64, sixteen of 32, 64 of 8
def test_mha_cache_at_fixed_width_does_not_depend_on_heads(h):
    cfg = mk.AttentionConfig(d_model=512, num_heads=h, num_layers=6)
    assert mk.kv_elements_per_token(cfg) == 2 * 512  # h_kv * d_h = h * (512 / h) = 512
    assert mk.kv_cache_bytes_per_token(cfg) == 2 * 6 * 512 * BF16


@pytest.mark.parametrize("h", [8, 32, 64, 128])  # more or fewer query heads over Llama 3 70B's 8 KV heads
def test_gqa_cache_does_not_depend_on_query_heads(h):
    cfg = mk.AttentionConfig(d_model=8192, num_heads=h, num_kv_heads=8, head_dim=128, num_layers=80)
    assert mk.kv_cache_bytes_per_token(cfg) == 2 * 80 * 8 * 128 * BF16 == 327_680


@pytest.mark.parametrize("h_kv", [1, 8, 64])  # MQA, Llama 3 70B's GQA, MHA
def test_cache_scales_with_kv_heads(h_kv):
    cfg = mk.PRESETS["llama-3-70b"].with_kv_heads(h_kv)
    assert mk.kv_cache_bytes_per_token(cfg) == 2 * 80 * h_kv * 128 * BF16


# ---------------------------------------------------------------------------------------------
# What more heads do cost: h * n^2 exponentials, and a score matrix of rank <= d_h per head
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h, expected", [(1, 16_384), (8, 131_072), (16, 262_144)])  # n = 128
def test_score_count_grows_with_heads(h, expected):
    assert mk.score_count(mk.AttentionConfig(512, h), 128) == h * 128 * 128 == expected


def test_each_head_score_matrix_has_rank_at_most_head_dim():
    cfg = mk.AttentionConfig(d_model=16, num_heads=4)  # d_h = 4
    x = np.random.default_rng(0).standard_normal((12, 16))  # 12 tokens, more than d_h
    w = mk.init_weights(cfg, seed=0)
    q, k = mk.split_heads(x @ w.w_q, 4), mk.split_heads(x @ w.w_k, 4)  # (h, n, d_h)
    ranks = [np.linalg.matrix_rank(qi @ ki.T) for qi, ki in zip(q, k)]  # (n, d_h) @ (d_h, n)
    assert ranks == [4, 4, 4, 4]
    one = mk.init_weights(mk.AttentionConfig(16, 1), seed=0)
    assert np.linalg.matrix_rank((x @ one.w_q) @ (x @ one.w_k).T) == 12  # one wide head: full rank


def _blockwise_attention(q, k, v, block):
    """Online-softmax attention over key blocks; returns the output and the most scores held."""
    m = np.full((q.shape[0], 1), -np.inf)
    total, out, held = np.zeros((q.shape[0], 1)), np.zeros((q.shape[0], v.shape[1])), 0
    for i in range(0, k.shape[0], block):
        s = q @ k[i:i + block].T / np.sqrt(q.shape[1])  # (n, block)
        held = max(held, s.size)
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        p, c = np.exp(s - m_new), np.exp(m - m_new)
        total, out, m = total * c + p.sum(axis=1, keepdims=True), out * c + p @ v[i:i + block], m_new
    return out / total, held


@pytest.mark.parametrize("block", [1, 4, 7])  # a block that does not divide s too
def test_fused_attention_needs_no_score_table(block):
    q, k, v = np.random.default_rng(3).standard_normal((3, 16, 8))
    naive, weights = mk.scaled_dot_product_attention(q, k, v)
    out, held = _blockwise_attention(q, k, v, block)
    np.testing.assert_allclose(out, naive, rtol=1e-12, atol=1e-12)
    assert held == 16 * block < weights.size == 256


# ---------------------------------------------------------------------------------------------
# W_O is no bookkeeping; the scale; the roofline
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["transformer-base", "gpt2"])  # MHA with h * d_h = d
def test_output_projection_holds_a_quarter(name):
    cfg = mk.PRESETS[name]
    d = cfg.d_model
    assert mk.projection_params_by_matrix(cfg)["o"] == d * d
    assert mk.projection_params(cfg) == 4 * d * d


def test_output_projection_share_of_llama_3_70b():
    cfg = mk.PRESETS["llama-3-70b"]
    o, total = 8192 * 64 * 128, 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128
    assert mk.projection_params_by_matrix(cfg)["o"] == o
    assert Fraction(mk.projection_params_by_matrix(cfg)["o"], mk.projection_params(cfg)) == Fraction(o, total) == Fraction(4, 9)


def test_unscaled_scores_saturate_the_softmax_on_the_chapter_sample():
    rng = np.random.default_rng(0)  # common_mistakes, mistake 6: 1,000 queries, 16 keys, d_h = 128
    q, k = rng.standard_normal((1000, 128)), rng.standard_normal((1000, 16, 128))
    scores = np.einsum("nd,nsd->ns", q, k)

    def softmax_stats(z):
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        jac = np.einsum("ns,st->nst", p, np.eye(16)) - np.einsum("ns,nt->nst", p, p)
        return p.max(axis=1).mean(), np.median(np.linalg.norm(jac, axis=(1, 2)))

    top_raw, jac_raw = softmax_stats(scores)
    top_scaled, jac_scaled = softmax_stats(scores / np.sqrt(128))
    assert round(top_raw, 2) == 0.89 and round(top_scaled, 2) == 0.25  # the figures the chapter prints
    assert 0.05 < jac_raw / jac_scaled < 0.15  # "about a tenth"


@pytest.mark.parametrize("name", [n for n, c in mk.PRESETS.items() if c.variant != "mla"])
def test_gqa_decode_intensity_is_the_group_size(name):
    cfg = mk.PRESETS[name]
    flops = 2 * (2 * cfg.num_heads * 8192 * cfg.head_dim)  # score and value mix, one token
    bytes_read = 2 * cfg.num_kv_heads * cfg.head_dim * 8192 * BF16
    assert Fraction(flops, bytes_read) == Fraction(cfg.num_heads, cfg.num_kv_heads)
    assert mk.arithmetic_intensity(cfg, 8192) == cfg.num_heads / cfg.num_kv_heads


def test_llama_3_70b_decode_is_memory_bound_on_both_machines():
    llama = mk.PRESETS["llama-3-70b"]
    assert mk.roofline.limited_by(llama, 8192, *H100) == mk.roofline.limited_by(llama, 8192, *H200) == "memory"


def test_deepseek_v2_decode_is_compute_bound_on_an_h200_only():
    v2 = mk.PRESETS["deepseek-v2"]
    by_hand = Fraction(2 * 128 * (2 * 512 + 64), (512 + 64) * BF16)  # absorbed MLA, FLOPs per byte
    assert mk.arithmetic_intensity(v2, 8192) == pytest.approx(float(by_hand), rel=1e-12)
    assert 989e12 / 4.8e12 < by_hand < 989e12 / 3.35e12  # between the H200 and H100 ridge points
    assert mk.roofline.limited_by(v2, 8192, *H200) == "compute"
    assert mk.roofline.limited_by(v2, 8192, *H100) == "memory"


@pytest.mark.parametrize("batch", [1, 16, 64])
def test_batching_scales_the_cache_linearly(batch):
    llama = mk.PRESETS["llama-3-70b"]  # every sequence keeps and reads its own cache
    assert mk.kv_cache_bytes(llama, 8192, batch_size=batch) == batch * 8192 * 2 * 80 * 8 * 128 * BF16


# ---------------------------------------------------------------------------------------------
# The chapters: wrong lines gone, chains and tags in the shared format, build checks hidden
# ---------------------------------------------------------------------------------------------

MY_CHAPTERS = ["index", "answering", "common_mistakes", "follow_up_questions", "notation",
               "references", "cheat_sheet"]
WRONG_LINES = ["caches keys and values for every head", "every head in the KV cache",
               "where heads get expensive", "memory for scores", "bookkeeping", "Llama 3 70B at 128K",
               "softmax saturates and its\ngradients vanish"]


@pytest.mark.parametrize("chapter", MY_CHAPTERS)
def test_wrong_lines_are_gone(chapter):
    text = "\n".join(markdown(chapter))
    for line in WRONG_LINES:
        assert line not in text, f"book/{chapter}.ipynb still says {line!r}"


def test_common_mistakes_keeps_all_ten():
    headings = re.findall(r"^## (\d+)\. ", "\n".join(markdown("common_mistakes")), flags=re.M)
    assert headings == [str(i) for i in range(1, 11)]


@pytest.mark.parametrize("chapter", MY_CHAPTERS)
def test_every_question_heading_has_a_difficulty_tag(chapter):
    headings = [h for text in markdown(chapter) for h in re.findall(r"^#+ (.*\?)$", text, flags=re.M)]
    for heading in headings:
        assert re.match(r"\[[EMH]\] ", heading), f"book/{chapter}.ipynb: untagged question {heading!r}"


@pytest.mark.parametrize("chapter", MY_CHAPTERS)
def test_build_checks_are_out_of_the_readers_way(chapter):
    code = [c for c in cells(chapter) if c["cell_type"] == "code"]
    for cell in code:
        tags = cell["metadata"].get("tags", [])
        shown = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
        if "article:" in shown and "match:" in shown:
            assert "remove-cell" in tags, f"book/{chapter}.ipynb: an article check is shown: {shown[:60]!r}"
        if "".join(cell["source"]).lstrip().startswith(("import ", "from ")) and "mk." not in "".join(cell["source"]):
            assert {"remove-input", "hide-input"} & set(tags), f"book/{chapter}.ipynb: setup cell shown"


def test_cheat_sheet_answers_link_their_chapters():
    text = "\n".join(markdown("cheat_sheet"))
    section = text.split("## Ten one-line answers", 1)[1]
    answers = re.split(r"^ ?\d+\. ", section, flags=re.M)[1:]
    assert len(answers) == 10
    for answer in answers:
        assert re.match(r"\*\*\[[EMH]\] ", answer), answer[:40]
        linked = re.findall(r"\{doc\}`(\w+)`", answer)
        assert linked and (REPO_ROOT / "book" / f"{linked[-1]}.ipynb").exists(), answer[:40]


@pytest.mark.parametrize("title, most", [("## The 30-second answer", 100), ("## The 2-minute answer", 360)])
def test_answer_scripts_fit_their_time(title, most):
    text = "\n".join(markdown("answering"))
    section = text.split(title, 1)[1].split("\n## ", 1)[0]
    spoken = " ".join(line[1:] for line in section.splitlines() if line.startswith(">"))
    words = [w for w in re.sub(r"\{glue:text\}`\w+`", "N", spoken).split() if re.search(r"\w", w)]
    assert 0 < len(words) <= most, f"{title}: {len(words)} words"
