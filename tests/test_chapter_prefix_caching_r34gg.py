"""Section prefix_caching-cascade-merge: the prefix/suffix log-sum-exp merge equals full causal attention, recomputed
here with an independent merge (each pass its own sums of exponentials, no max shift) on the chapter's seeded shapes, and the drill."""
import math

import numpy as np

import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")


def _state(q, k, v, causal):
    """(output, log-sum-exp) of one pass, from plain sums of exponentials (no max shift)."""
    s = q @ k.T / math.sqrt(q.shape[1])
    n, m = s.shape
    allowed = np.arange(m)[None, :] <= (m - n + np.arange(n))[:, None] if causal else np.ones((n, m), bool)
    e = np.where(allowed, np.exp(s), 0.0)
    return e @ v / e.sum(1, keepdims=True), np.log(e.sum(1))


def _full_and_split(q, k, v, n_shared):
    full, _ = _state(q, k, v, causal=True)
    (o_a, l_a), (o_b, l_b) = _state(q, k[:n_shared], v[:n_shared], False), _state(q, k[n_shared:], v[n_shared:], True)
    lse = np.logaddexp(l_a, l_b)  # each pass's own state, merged by its weight e^{L} / e^{L_a + L_b}
    return full, np.exp(l_a - lse)[:, None] * o_a + np.exp(l_b - lse)[:, None] * o_b


def test_merge_is_exact_on_the_chapter_shapes():
    rng = np.random.default_rng(34)
    root = rng.normal(size=(2, 6, 8))
    branch = rng.normal(size=(2, 4, 8))
    suffix = [rng.normal(size=(3, n, 8)) for n in (3, 5, 2)]
    for i, (q, k_s, v_s) in enumerate(suffix):
        shared = [root, branch] if i < 2 else [root]
        k = np.concatenate([x[0] for x in shared] + [k_s])
        v = np.concatenate([x[1] for x in shared] + [v_s])
        full, split = _full_and_split(q, k, v, k.shape[0] - len(k_s))
        assert np.abs(full - split).max() < 1e-12
    assert chapter_outputs.glued(NB, "pc_merge_worst") == "below 1e-12"  # the chapter's own worst error, all orders


def test_stored_lines():
    lines = chapter_outputs.printed(NB, "def attn_state(").splitlines()
    assert len(lines) == 3 and all(line.endswith("equals full causal attention to 1e-12: True") for line in lines)


def test_drill():
    w = math.exp(2) / (math.exp(2) + 1)
    assert f"{w:.3f}" == "0.881" and f"{w + 3 * (1 - w):.2f}" == "1.24" and f"{math.log(math.exp(2) + 1):.2f}" == "2.13"
    text = chapter_outputs.section(NB, "prefix_caching-cascade-merge", end="prefix_caching-sglang-frontend")
    assert "0.881" in text and "1.24" in text and "2.13" in text
    assert "flash_decoding-split-keys" in text and "flashinferrecursive" in text


def test_caveats():
    """The no-mask prefix pass holds only for full causal attention (vLLM's use_cascade_attention refuses
    sliding-window, local and ALiBi models); RadixAttention's reuse argument is given inline."""
    text = " ".join(chapter_outputs.section(NB, "prefix_caching-cascade-merge",
                                            end="prefix_caching-sglang-frontend").split())
    assert "vllmusecascade{use_cascade_attention}" in text and "ALiBi" in text
    assert "at the absolute position $i$ before they are cached" in text
    assert "two-level split only" in text
