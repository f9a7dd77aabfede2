"""Section cross_and_masked_attention-low-rank-argument of "Self-, cross- and masked attention".

The "low-rank" argument for decoder-only models (Su Jianlin, kexue.fm/archives/9529, section 低秩问题):
a causal attention matrix is lower-triangular with a positive diagonal, so nonsingular. Recomputed here
with a softmax and a mask written out (not mha_kit's), from the same seeded draws: the numerical rank
(singular values above 1e-10 of the largest) of softmax(QK^T / sqrt(d_h)) for n = 64, d_h = 4, with
random and with equal scores, and the determinant of the causal matrix as the product of its diagonal.
"""
import numpy as np
import pytest

import chapter_outputs

N, D_H, TOL = 64, 4, 1e-10


def _softmax(x):
    x = x - x.max(axis=1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


def _rank(m):
    sv = np.linalg.svd(m, compute_uv=False)
    return int((sv > TOL * sv[0]).sum())


def _weights(scores):
    lower = np.tri(N, dtype=bool)  # query i sees keys 0..i
    return _softmax(scores), _softmax(np.where(lower, scores, -np.inf))


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("cross_and_masked_attention")


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((N, D_H)), rng.standard_normal((N, D_H))
    return q @ k.T / np.sqrt(D_H)


def test_random_scores_ranks(nb, scores):
    bi, causal = _weights(scores)
    ranks = (_rank(scores), _rank(bi), _rank(causal))
    assert ranks == (4, 64, 63)  # scores capped at d_h; bidirectional full; causal loses one to rounding
    out = chapter_outputs.printed(nb, "lr_n, lr_dh")
    assert (f"random scores     scores rank {ranks[0]:>2}, softmax weights: bidirectional {ranks[1]:>2}, "
            f"causal {ranks[2]:>2} (of {N}, tolerance 1e-10)") in out
    assert [chapter_outputs.glued(nb, k) for k in ("lr_rank_scores", "lr_rank_bi", "lr_rank_causal")] == [
        str(r) for r in ranks]


def test_equal_scores_ranks(nb):
    bi, causal = _weights(np.zeros((N, N)))
    assert np.allclose(bi, 1 / N)  # every row the same average
    assert np.allclose(np.diag(causal), 1 / np.arange(1, N + 1))  # row i averages i + 1 tokens
    assert (_rank(bi), _rank(causal)) == (1, N)
    assert chapter_outputs.glued(nb, "lr_rank_bi_uniform") == "1"
    assert chapter_outputs.glued(nb, "lr_rank_causal_uniform") == str(N)


def test_determinant_and_conditioning(nb, scores):
    bi, causal = _weights(scores)
    assert np.allclose(np.triu(causal, 1), 0) and (np.diag(causal) > 0).all()
    sign, logdet = np.linalg.slogdet(causal)  # LU determinant, against the diagonal product
    log10_det = np.log10(np.diag(causal)).sum()
    assert sign == 1.0 and logdet / np.log(10) == pytest.approx(log10_det, abs=1e-3)
    assert chapter_outputs.glued(nb, "lr_log_det") == f"{log10_det:.0f}" == "-102"
    sv_bi = np.linalg.svd(bi, compute_uv=False)
    sv_c = np.linalg.svd(causal, compute_uv=False)
    assert sv_c[-1] / sv_c[0] < TOL < sv_bi[-1] / sv_bi[0]  # nonsingular, yet worse conditioned
    assert chapter_outputs.glued(nb, "lr_sv_bi") == f"{sv_bi[-1] / sv_bi[0]:.0e}"


def test_section_cites_and_links(nb):
    text = chapter_outputs.section(nb, "cross_and_masked_attention-low-rank-argument",
                                   end="cross_and_masked_attention-which-family")
    for ref in ("su2023decoderonly{低秩问题}", "dong2021attention{§2, §3}", "transformer_block-residuals",
                "{doc}`why_several_heads`", "cross_and_masked_attention-decoder-only"):
        assert ref in text


def _ranks_at(n, tol, seed=0):
    """Numerical ranks (bidirectional, causal) for n tokens at a relative tolerance, from scratch."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, D_H)), rng.standard_normal((n, D_H))
    s = q @ k.T / np.sqrt(D_H)
    lower = np.tri(n, dtype=bool)
    out = []
    for m in (_softmax(s), _softmax(np.where(lower, s, -np.inf))):
        sv = np.linalg.svd(m, compute_uv=False)
        out.append(int((sv > tol * sv[0]).sum()))
    return tuple(out)


def test_rank_depends_on_n_and_tolerance(nb):
    assert chapter_outputs.glued(nb, "lr_det") == "1e-102"
    for n in (64, 256):
        for tol, tag in ((TOL, "10"), (1e-3, "3")):
            bi, ca = _ranks_at(n, tol)
            assert chapter_outputs.glued(nb, f"lr_sw_bi_{n}_{tag}") == str(bi)
            assert chapter_outputs.glued(nb, f"lr_sw_c_{n}_{tag}") == str(ca)
    assert _ranks_at(64, 1e-3)[0] < _ranks_at(64, 1e-3)[1]  # looser tolerance: causal keeps more
    assert _ranks_at(256, 1e-3)[0] < _ranks_at(256, 1e-3)[1]


def test_n1024_one_off_check(nb):
    """The prose's one-off n = 1024 figures (too heavy for the chapter cell): the order reverses at 1e-10."""
    assert _ranks_at(1024, TOL) == (835, 1015)
    text = chapter_outputs.section(nb, "cross_and_masked_attention-low-rank-argument",
                                   end="cross_and_masked_attention-which-family")
    assert "835 against 1015 of 1024" in text
    for ref in ("wang2020linformer{§3}", "bhojanapalli2020lowrank{§3, Theorem 1}"):
        assert ref in text
