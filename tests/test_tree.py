"""Tree masks, path compaction and cascade attention (mha_kit/tree.py) against direct formulas."""
import numpy as np
import pytest

import mha_kit as mk

# A draft tree: two top candidates (0, 1); node 0 has children 2 and 3; 4 under 1; 5 under 2.
PARENTS = [-1, -1, 0, 0, 1, 2]


def test_chain_gives_the_causal_mask():
    mask, pos = mk.tree_attention_mask([-1, 0, 1, 2, 3])
    np.testing.assert_array_equal(mask, mk.causal_mask(5))
    np.testing.assert_array_equal(pos, np.arange(5))


def test_each_node_sees_exactly_its_ancestors_and_itself():
    mask, _ = mk.tree_attention_mask(PARENTS)
    for i in range(len(PARENTS)):
        expected, node = set(), i
        while node >= 0:  # walk up by hand
            expected.add(node)
            node = PARENTS[node]
        assert set(np.flatnonzero(mask[i]).tolist()) == expected


def test_positions_are_prefix_plus_depth_and_prefix_is_visible():
    mask, pos = mk.tree_attention_mask(PARENTS, prefix_len=7)
    assert mask.shape == (6, 13)
    assert mask[:, :7].all()
    assert pos.tolist() == [7, 7, 8, 8, 8, 9]  # depths 0, 0, 1, 1, 1, 2, worked by hand


def test_paths_by_hand():
    assert mk.tree_paths(PARENTS) == [[0, 3], [1, 4], [0, 2, 5]]


def test_tree_attention_equals_each_path_alone():
    rng = np.random.default_rng(0)
    prefix, t, d_h = 5, len(PARENTS), 16
    q = rng.normal(size=(t, d_h))
    k, v = rng.normal(size=(2, prefix + t, d_h))  # prefix keys, then one slot per tree node
    mask, _ = mk.tree_attention_mask(PARENTS, prefix)
    tree_out, _ = mk.scaled_dot_product_attention(q, k, v, mask)
    for path in mk.tree_paths(PARENTS):
        rows = np.r_[np.arange(prefix), prefix + np.asarray(path)]  # the sequence this path spells
        alone, _ = mk.scaled_dot_product_attention(q[path], k[rows], v[rows], mk.causal_mask(len(path), len(rows)))
        np.testing.assert_allclose(tree_out[path], alone, rtol=0, atol=1e-12)


def test_accepted_path_slots_compact_the_cache():
    src, dst = mk.accepted_path_slots(PARENTS, [0, 2, 5], prefix_len=10)
    assert src.tolist() == [10, 12, 15] and dst.tolist() == [10, 11, 12]
    cache = np.arange(16) * 1.0
    cache[dst] = cache[src]
    assert cache[10:13].tolist() == [10.0, 12.0, 15.0]


def test_cascade_equals_full_attention():
    rng = np.random.default_rng(1)
    b, h, n, p, s, d_h = 3, 2, 2, 11, 4, 8
    q = rng.normal(size=(b, h, n, d_h))
    kp, vp = rng.normal(size=(2, h, p, d_h))
    ks, vs = rng.normal(size=(2, b, h, s, d_h))
    suffix_mask = mk.causal_mask(n, s)
    got = mk.cascade_attention(q, kp, vp, ks, vs, suffix_mask)
    for i in range(b):
        k_full = np.concatenate([kp, ks[i]], axis=1)
        v_full = np.concatenate([vp, vs[i]], axis=1)
        ref, _ = mk.scaled_dot_product_attention(q[i], k_full, v_full, mk.causal_mask(n, p + s))
        np.testing.assert_allclose(got[i], ref, rtol=0, atol=1e-12)


def test_attention_with_lse_matches_logsumexp():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 4, 8))
    out, lse = mk.attention_with_lse(q, k, v)
    scores = q @ k.T / np.sqrt(8)
    np.testing.assert_allclose(lse, np.log(np.exp(scores).sum(axis=1)), rtol=1e-13)
    np.testing.assert_allclose(out, mk.softmax(scores) @ v, rtol=0, atol=1e-13)


def test_shared_prefix_bytes_llama3_8b():
    cfg = mk.PRESETS["llama-3-8b"]
    per_seq, once = mk.shared_prefix_read_bytes(cfg, 4096, 64)
    per_token = 32 * 2 * 8 * 128 * 2  # layers * (K, V) * h_kv * d_h * bf16 bytes
    assert once == 4096 * per_token == 536_870_912
    assert per_seq == 64 * once


@pytest.mark.parametrize("parents, match", [
    ([0], r"parents\[0\] \(0\) must be -1 or an earlier node"),
    ([-1, 2, 0], r"parents\[1\] \(2\) must be -1 or an earlier node"),
    ([-1, -2], r"parents\[1\] \(-2\)"),
    ([], "non-empty 1-D list of ints"),
])
def test_bad_parents(parents, match):
    with pytest.raises(ValueError, match=match):
        mk.tree_attention_mask(parents)


def test_bad_prefix_and_paths():
    with pytest.raises(ValueError, match="prefix_len must be a non-negative int"):
        mk.tree_attention_mask([-1], prefix_len=-1)
    with pytest.raises(ValueError, match="must be a path down the tree: node 2 is not a child of -1"):
        mk.accepted_path_slots(PARENTS, [2], prefix_len=0)
    with pytest.raises(ValueError, match="node 4 is not a child of 0"):
        mk.accepted_path_slots(PARENTS, [0, 4], prefix_len=0)


@pytest.mark.parametrize("alpha, k", [(0.7, 4), (0.9, 6), (0.5, 1)])
def test_chain_expected_length_is_the_geometric_formula(alpha, k):
    got = mk.tree_expected_length([-1] + list(range(k - 1)), [alpha] * k)
    assert got == pytest.approx((1 - alpha ** (k + 1)) / (1 - alpha), rel=1e-12)
    assert got == pytest.approx(mk.speculative_expected_tokens(alpha, k), rel=1e-12)


def test_tree_expected_length_by_hand():
    # two top candidates (0.6, 0.3); node 0 has a child accepted with 0.5
    got = mk.tree_expected_length([-1, -1, 0], [0.6, 0.3, 0.5])
    assert got == pytest.approx(1 + 0.6 + 0.3 + 0.6 * 0.5)


def test_tree_expected_length_errors():
    with pytest.raises(ValueError, match="siblings' accept_probs must sum to at most 1"):
        mk.tree_expected_length([-1, -1], [0.7, 0.5])
    with pytest.raises(ValueError, match=r"accept_probs must be 2 probabilities in \[0, 1\]"):
        mk.tree_expected_length([-1, 0], [0.7])
