"""Section context_parallelism-ring-causal-steps: the causal ring's per-step rule (ring-flash-attention,
ring_flash_attn.py: the kernel runs when ``step <= rank``, causal when ``step == 0``; rank i sends to
i + 1, so at step t it holds block (i - t) mod c), the zigzag variant (zigzag_ring_flash_attn.py), and
the kernel calls and query-key pairs per rank, recomputed from the rule and a ring simulated here."""
import json
import pathlib

import numpy as np
import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "context_parallelism.ipynb"
RANKS, TOKENS, D, SEED = 4, 16, 8, 15


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stored():
    cell = next(c for c in _cells() if "def rc_action(" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").splitlines()


def _rule(layout, i, t):
    """ring-flash-attention's choice for rank i at step t (block size TOKENS / RANKS)."""
    b = TOKENS // RANKS
    if t == 0:
        return "causal"
    if layout == "contiguous":
        return f"full {b}x{b}" if t <= i else "skip"
    return f"full {b}x{b // 2}" if t <= i else f"full {b // 2}x{b}"  # k[:, :half] / q[:, half:]


def _pairs(layout, i, t):
    b = TOKENS // RANKS
    action = _rule(layout, i, t)
    if action == "causal":
        return b * (b + 1) // 2
    if action == "skip":
        return 0
    rows, cols = map(int, action.split()[1].split("x"))
    return rows * cols


def _positions(layout):
    b, half = TOKENS // RANKS, TOKENS // (2 * RANKS)
    if layout == "contiguous":
        return [list(range(i * b, (i + 1) * b)) for i in range(RANKS)]
    return [list(range(i * half, (i + 1) * half)) + list(range((2 * RANKS - 1 - i) * half, (2 * RANKS - i) * half))
            for i in range(RANKS)]


def _ring(layout):
    """Independent simulation: running max / sum / accumulator per query row, updated block by block."""
    q, k, v = np.random.default_rng(SEED).standard_normal((3, TOKENS, D))
    out = np.zeros((TOKENS, D))
    pos = _positions(layout)
    for i in range(RANKS):
        m, denom, acc = np.full(len(pos[i]), -np.inf), np.zeros(len(pos[i])), np.zeros((len(pos[i]), D))
        for t in range(RANKS):
            j = (i - t) % RANKS
            s = q[pos[i]] @ k[pos[j]].T / np.sqrt(D)
            s = np.where(np.array(pos[i])[:, None] >= np.array(pos[j])[None, :], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=1))
            safe = np.where(np.isneginf(m_new), 0.0, m_new)
            p = np.exp(s - safe[:, None])
            scale = np.exp(m - safe)
            denom, acc, m = scale * denom + p.sum(axis=1), scale[:, None] * acc + p @ v[pos[j]], m_new
        out[pos[i]] = acc / denom[:, None]
    s = q @ k.T / np.sqrt(D)
    s = np.where(np.tri(TOKENS, dtype=bool), s, -np.inf)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return out, (w / w.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_the_stored_step_table(layout):
    lines = _stored()
    start = lines.index(f"{layout}: step t, rank i holds block (i - t) mod {RANKS}")
    for t in range(RANKS):
        assert lines[start + 1 + t].split(":", 1)[1].split() == " ".join(
            _rule(layout, i, t) for i in range(RANKS)).split()


@pytest.mark.parametrize("layout, calls, pairs", [
    ("contiguous", [1, 2, 3, 4], [10, 26, 42, 58]),  # rank i runs i + 1 kernels
    ("zigzag", [4, 4, 4, 4], [34, 34, 34, 34]),  # every rank, every step, half a block
])
def test_calls_and_pairs(layout, calls, pairs):
    assert [sum(_rule(layout, i, t) != "skip" for t in range(RANKS)) for i in range(RANKS)] == calls
    assert [sum(_pairs(layout, i, t) for t in range(RANKS)) for i in range(RANKS)] == pairs
    assert sum(pairs) == TOKENS * (TOKENS + 1) // 2  # exactly the causal pairs, none wasted
    stored = next(x for x in _stored()[_stored().index(f"{layout}: step t, rank i holds block (i - t) mod {RANKS}"):]
                  if "equal to causal attention" in x)
    assert f"kernel calls per rank {calls}, query-key pairs per rank {pairs}" in stored
    assert "equal to causal attention: True (largest difference below 1e-12)" in stored


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_the_ring_is_exact(layout):
    ring, exact = _ring(layout)
    assert np.abs(ring - exact).max() < 1e-12


def test_rule_mask_agreement():
    """The rule's actions are exactly what the global causal mask says about each block."""
    for layout in ("contiguous", "zigzag"):
        pos = _positions(layout)
        for i in range(RANKS):
            for t in range(RANKS):
                j = (i - t) % RANKS
                visible = np.array(pos[i])[:, None] >= np.array(pos[j])[None, :]
                assert int(visible.sum()) == _pairs(layout, i, t)


def test_section_sits_in_the_ring_section_and_cites_its_sources():
    text = "".join("".join(c["source"]) for c in _cells())
    ring, mine = text.index("(context_parallelism-ring)="), text.index("(context_parallelism-ring-causal-steps)=")
    assert ring < mine < text.index("(context_parallelism-all-gather)=")
    section = text[mine:text.index("(context_parallelism-all-gather)=")]
    for key in ("ringflashattn{ring_flash_attn.py, lines 26–63}", "brandon2023striped{abstract}",
                "ringflashattn{zigzag_ring_flash_attn.py, lines 60–80}"):
        assert key in section
    assert section.count(":class: dropdown") == 3
