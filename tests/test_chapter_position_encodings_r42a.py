"""Section position_encodings-deberta: DeBERTa's disentangled score against T5's bias.

Recomputes the toy from He et al. 2021 (arXiv:2006.03654) sec. 3.1, Eq. 2-4, with plain Python sums and the
piecewise definition of delta (not the chapter's np.clip and take_along_axis), and the parameter counts
from the constants of microsoft/DeBERTa experiments/language_model/deberta_base.json (hidden_size 768,
12 layers, position_buckets 256; v1 k = max_position_embeddings 512) and T5-base (32 buckets, 12 heads), then compares them with the stored
outputs.
"""
import re

import numpy as np
import pytest

import chapter_outputs

N_TOK, D, K = 8, 8, 4  # the toy
SEED = 42
D_MODEL, LAYERS, K_BASE = 768, 12, 256  # deberta_base.json: hidden_size, num_hidden_layers, position_buckets
K_V1 = 512  # v1: max_relative_positions -1 -> max_position_embeddings 512 (bert.py BertEncoder)
T5_BUCKETS, T5_HEADS = 32, 12  # T5-base


def nb():
    return chapter_outputs.notebook("position_encodings")


def out():
    return chapter_outputs.printed(nb(), "np.take_along_axis(p2c_all")


def delta(i, j):
    """He et al. Eq. 3, case by case."""
    if i - j <= -K:
        return 0
    if i - j >= K:
        return 2 * K - 1
    return i - j + K


def dot(a, b):
    return sum(float(x) * float(y) for x, y in zip(a, b))


def matvec(rows, w):
    """rows (m, d) times w (d, d), one entry at a time."""
    return [[dot(r, [w[a][c] for a in range(len(w))]) for c in range(len(w[0]))] for r in rows]


def toy_terms(p2c_index=lambda i, j: delta(j, i)):
    rng = np.random.default_rng(SEED)
    h = rng.standard_normal((N_TOK, D)).tolist()
    p = rng.standard_normal((2 * K, D)).tolist()
    w_q, w_k, w_qr, w_kr = (rng.standard_normal((D, D)).tolist() for _ in range(4))
    q_c, k_c, q_r, k_r = matvec(h, w_q), matvec(h, w_k), matvec(p, w_qr), matvec(p, w_kr)
    terms = [[[0.0] * N_TOK for _ in range(N_TOK)] for _ in range(3)]
    for i in range(N_TOK):
        for j in range(N_TOK):
            terms[0][i][j] = dot(q_c[i], k_c[j])
            terms[1][i][j] = dot(q_c[i], k_r[delta(i, j)])
            terms[2][i][j] = dot(k_c[j], q_r[p2c_index(i, j)])
    return terms


def test_delta_grid_printed():
    lines = out().splitlines()
    start = lines.index("delta(i, j), row i = query, column j = key:") + 1
    grid = [[int(x) for x in re.findall(r"\d+", line)] for line in lines[start:start + N_TOK]]
    assert grid == [[delta(i, j) for j in range(N_TOK)] for i in range(N_TOK)]
    assert grid[6][1] == 2 * K - 1 and grid[1][6] == 0  # the drill's two answers


def test_loop_equals_gather_and_shares():
    text = out()
    assert "loop == gather for all three terms: True" in text
    terms = toy_terms()
    mags = [sum(abs(x) for row in t for x in row) for t in terms]
    for name, m in zip(("content-to-content", "content-to-position", "position-to-content"), mags):
        assert re.search(rf"{name}\s+{100 * m / sum(mags):.1f}% of the summed", text), name


def test_code_index_differs_from_paper_index():
    assert "p2c with delta(i, j) instead of delta(j, i) equal? False" in out()
    paper, code = toy_terms()[2], toy_terms(p2c_index=delta)[2]
    assert not np.allclose(paper, code)
    assert np.allclose(np.diag(paper), np.diag(code))  # they agree only where i == j


def test_parameter_counts():
    text = out()
    per_layer = 2 * D_MODEL * D_MODEL
    table_v1 = 2 * K_V1 * D_MODEL  # first release: rel_embeddings = Embedding(max_relative_positions * 2, hidden)
    v1 = LAYERS * per_layer + table_v1
    v1_bias = v1 + LAYERS * D_MODEL  # pos_q_proj = nn.Linear(hidden, all_head_size), default bias
    table = 2 * K_BASE * D_MODEL
    what_if = LAYERS * per_layer + table
    table_ln = table + 2 * D_MODEL
    assert (per_layer, table_v1, v1, v1_bias) == (1_179_648, 786_432, 14_942_208, 14_951_424)
    assert (table, what_if, table_ln) == (393_216, 14_548_992, 394_752)
    assert f"{per_layer:,} per layer x {LAYERS} + table {table_v1:,} = {v1:,}" in text
    assert f"pos_q_proj bias = {v1_bias:,}" in text
    assert f"hypothetical: own projections with k = {K_BASE}: {LAYERS * per_layer:,} + {table:,} = {what_if:,}" in text
    assert f"table only = {table:,} (+ {2 * D_MODEL:,} LayerNorm = {table_ln:,})" in text
    assert f"= {T5_BUCKETS * T5_HEADS:,} per stack, {2 * T5_BUCKETS * T5_HEADS:,} for encoder + decoder" in text
    assert chapter_outputs.glued(nb(), "pe_deberta_extra") == f"{v1:,}"
    assert chapter_outputs.glued(nb(), "pe_deberta_extra_bias") == f"{v1_bias:,}"
    assert chapter_outputs.glued(nb(), "pe_deberta_whatif") == f"{what_if:,}"
    assert chapter_outputs.glued(nb(), "pe_deberta_table") == f"{table:,}"
    assert chapter_outputs.glued(nb(), "pe_deberta_table_ln") == f"{table_ln:,}"


def test_cost_ratio():
    n_seq = 128
    flops_qk = 2 * n_seq * n_seq * 64  # QK^T per head, head size 64
    flops_pos = 2 * n_seq * (2 * K_BASE) * 64  # n x 2k against the whole table (HEAD att_span = pos_ebd_size)
    ratio = flops_pos // flops_qk
    assert ratio == 4
    assert chapter_outputs.glued(nb(), "pe_deberta_ratio") == str(ratio)
    assert f"each position product is {ratio}x the FLOPs of QK^T" in out()


def test_clip_is_asymmetric():
    rows = {delta(i, 0) for i in range(K - 1, N_TOK)}
    assert rows == {2 * K - 1}  # i - j >= k - 1 already on the last row
    assert delta(0, K - 1) == 1 and delta(0, K) == 0  # but i - j = -(k - 1) is not yet row 0
    text = chapter_outputs.section(nb(), "position_encodings-deberta")
    assert "i - j \\ge k - 1" in text and "four or more tokens away on one side" not in text


@pytest.mark.parametrize("needle", [
    "he2021deberta{§3.1, Eq. 3}", "position-to-position term adds little information",
    "{ref}`position_encodings-t5-buckets`", "\\sqrt{3d}", "debertacode{", ":class: dropdown",
    "admonition} In the interview",
])
def test_section_text(needle):
    text = chapter_outputs.section(nb(), "position_encodings-deberta")
    assert needle in text
    assert "position_encodings-bert-vit-glm" not in text  # the section stops before the next one
