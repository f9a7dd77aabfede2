"""Chapter "The KV cache from zero", section kv_cache_basics-wrong-position: what a wrong ``pos`` does in
llama2.c's decode loop.

Independent of the chapter's code: llama2.c's ``forward`` is written out again from run.c (rotate the new
query and key at ``pos``, write slot ``pos`` of a zero-filled cache, softmax over slots ``0..pos``), RoPE as
a rotation of dimension pairs and attention as an explicit softmax; the C offsets from the stories15M
shape in llama2.c's README. The results are compared with the chapter's stored outputs. A two-layer toy
with a residual stream checks which of the equivalences survive in a model with more than one layer.
"""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import chapter_outputs

NB = Path(__file__).resolve().parents[1] / "book" / "kv_cache_basics.ipynb"
S, P, T, D_H = 64, 48, 8, 16  # cache slots, prompt, decode steps, head size (the chapter's setting)
BLANK = P + T


def data():
    q, k, v = np.random.default_rng(21).standard_normal((3, P + T + 1, D_H))  # the chapter's draw
    q[BLANK] = k[BLANK] = v[BLANK] = 0
    return q, k, v


def rotate(x, pos):
    half = D_H // 2
    theta = pos * 10000.0 ** (-np.arange(half) / half)  # pair i turns by pos * base^(-2i/d)
    a, b = x[:half], x[half:]
    return np.concatenate([a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)])


def attend(q, keys, values):
    s = keys @ q / np.sqrt(D_H)
    w = np.exp(s - s.max())  # run.c's softmax: subtract the max, exponentiate, normalise
    return (w / w.sum()) @ values


def run_c(tokens, pos_at=lambda i: i):
    """llama2.c's loop for one head: every slot starts at zero (calloc); returns the last T outputs."""
    q, k, v = data()
    key_cache, value_cache = np.zeros((S, D_H)), np.zeros((S, D_H))
    out = []
    for i, t in enumerate(tokens):
        pos = pos_at(i)
        if not 0 <= pos < S:
            raise IndexError(pos)
        key_cache[pos], value_cache[pos] = rotate(k[t], pos), v[t]
        out.append(attend(rotate(q[t], pos), key_cache[:pos + 1], value_cache[:pos + 1]))
    return np.array(out)[-T:]


def decode_off_by(d):
    return lambda i: i if i < P else (P if d is None else i + d)


SEQ = list(range(P + T))
RIGHT = run_c(SEQ)


def rel(out):
    return np.linalg.norm(out - RIGHT, axis=-1) / np.linalg.norm(RIGHT, axis=-1)


def cell_text(marker):
    return chapter_outputs.printed(json.loads(NB.read_text()), marker)


def glued(key):
    return chapter_outputs.glued(json.loads(NB.read_text()), key)


def section():
    nb = json.loads(NB.read_text())
    return chapter_outputs.section(nb, "kv_cache_basics-wrong-position", kinds=("markdown",))


def test_right_positions_equal_the_full_causal_pass():
    q, k, v = data()
    full = [attend(rotate(q[t], t), np.array([rotate(k[j], j) for j in range(t + 1)]), v[:t + 1])
            for t in range(P + T)]
    assert np.allclose(RIGHT, full[P:])


@pytest.mark.parametrize("d", [-8, -2, -1])
def test_too_small_is_the_prompt_with_its_last_tokens_deleted(d):
    assert np.allclose(run_c(SEQ, decode_off_by(d)), run_c(SEQ[:P + d] + SEQ[P:]))


@pytest.mark.parametrize("d", [1, 2, 8])
def test_too_large_is_the_prompt_with_zero_tokens_inserted(d):
    assert np.allclose(run_c(SEQ, decode_off_by(d)), run_c(SEQ[:P] + [BLANK] * d + SEQ[P:]))


def test_a_stuck_counter_sees_only_the_prompt_and_the_newest_token():
    out = run_c(SEQ, decode_off_by(None))
    for j in range(T):
        assert np.allclose(out[j], run_c(SEQ[:P] + [P + j])[-1])
    assert not np.allclose(out[1:], RIGHT[1:], atol=1e-3)


def test_the_chapters_table():
    rows = []
    for d in (-8, -2, -1, 1, 2, 8, None):
        e = rel(run_c(SEQ, decode_off_by(d)))
        rows.append((f"{e[0]:.2f}", f"{e.mean():.2f}"))
    stored = [tuple(re.findall(r"\s(\d+\.\d\d)\s", line)) for line in cell_text("def generate(").splitlines()
              if re.search(r"\d\.\d\d\s+\d\.\d\d", line)]
    assert stored == rows
    assert cell_text("def generate(").count(": True") == 8  # the full pass and seven twins
    assert ": False" not in cell_text("def generate(")
    assert [glued(f"kb_pos_err_{k}") for k in ("m1", "p1", "m8", "p8")] == [rows[2][0], rows[3][0], rows[0][0], rows[5][0]]
    assert glued("kb_pos_stuck_mean") == rows[6][1]
    assert rows[6][0] == "0.00"  # the first decode step is at the right position


def holes(d):
    """Softmax mass of d zero keys at the first decode step (right rotation), and the output with them."""
    q, k, v = data()
    keys = np.array([rotate(k[j], j) for j in range(P + 1)])
    scores = np.r_[keys[:P] @ rotate(q[P], P), np.zeros(d), keys[P] @ rotate(q[P], P)] / np.sqrt(D_H)
    w = np.exp(scores - scores.max())
    w /= w.sum()
    values = np.r_[v[:P], np.zeros((d, D_H)), v[P:P + 1]]
    return w[P:P + d].sum(), w @ values


@pytest.mark.parametrize("d", [1, 2, 8])
def test_hole_mass_and_the_shrunk_output(d):
    mass, out = holes(d)
    q, k, _ = data()
    real = np.array([rotate(k[j], j) @ rotate(q[P], P) for j in range(P + 1)]) / np.sqrt(D_H)
    assert np.isclose(mass, d / (d + np.exp(real).sum()))  # each hole: exp(0) / Z
    assert np.allclose(out, (1 - mass) * RIGHT[0])
    line = next(s for s in cell_text("hole_mass = {}").splitlines() if s.startswith(f"{d} hole(s)"))
    assert f"softmax mass {mass:.2%}" in line and line.endswith(": True")
    if d in (1, 8):
        assert glued(f"kb_pos_holes_{d}") == f"{mass:.1%}"


@pytest.mark.parametrize("shift", [-4, 4])
def test_the_hole_share_depends_on_the_level_of_the_real_scores(shift):
    """The holes score 0 whatever the real scores do: move them all by `shift` and the share of 8 holes moves."""
    q, k, _ = data()
    real = np.array([rotate(k[j], j) @ rotate(q[P], P) for j in range(P + 1)]) / np.sqrt(D_H) + shift
    w = np.exp(np.r_[real[:P], np.zeros(8), real[P:]])
    mass = w[P:P + 8].sum() / w.sum()
    line = next(s for s in cell_text("hole_mass = {}").splitlines() if s.startswith(f"8 hole(s), real scores {shift:+d}:"))
    assert f"softmax mass {mass:.2%}" in line and line.endswith(": True")
    if shift < 0:
        assert mass > 0.5 and glued("kb_pos_holes_8_low") == f"{mass:.0%}"  # the prose: "dominated"
    else:
        assert mass < 0.01 and glued("kb_pos_holes_8_high") == f"{mass:.2%}"  # "barely notices"


def test_more_holes_take_more_mass_and_one_hole_is_less_than_the_shifted_error():
    masses = [holes(d)[0] for d in (1, 2, 8)]
    assert masses == sorted(masses) and masses[0] > 0
    assert masses[0] < rel(run_c(SEQ, decode_off_by(1)))[0]  # the prose: the rotation costs more than the hole


def test_past_the_end():
    with pytest.raises(IndexError):
        run_c(SEQ, decode_off_by(S - P))
    assert f"IndexError: index {S} is out of bounds for axis 0 with size {S}" in cell_text("hole_mass = {}")


def test_a_negative_position_wraps_in_numpy():
    slots = np.arange(S)
    assert slots[-1] == S - 1  # no IndexError: the last slot
    assert f"pos = -1 in numpy: no error, writes slot {S - 1}" in cell_text("hole_mass = {}")


def test_llama2c_offsets_for_stories15m():
    dim, n_layers, n_heads, n_kv_heads, seq_len = 288, 6, 6, 6, 256  # llama2.c README, the 15M model
    kv_dim = dim * n_kv_heads // n_heads  # run.c: kv_dim = (dim * n_kv_heads) / n_heads
    size = n_layers * seq_len * kv_dim  # calloc(n_layers * seq_len * kv_dim, sizeof(float))
    first = 0 * seq_len * kv_dim + seq_len * kv_dim  # loff + pos * kv_dim, layer 0, pos = seq_len
    last = (n_layers - 1) * seq_len * kv_dim + seq_len * kv_dim
    assert divmod(first, seq_len * kv_dim) == (1, 0)  # layer 1, slot 0
    assert last == size == 442_368
    text = cell_text("hole_mass = {}")
    assert f"layer 0, pos {seq_len}: writes at float {first:,}, layer 1's slot 0" in text
    assert f"layer {n_layers - 1}, pos {seq_len}: writes at float {last:,}, past the end of the {size:,}-float" in text
    below = -1 * kv_dim  # layer 0, pos = -1: loff = 0
    prev = (n_layers - 1) * seq_len * kv_dim - kv_dim  # last layer, pos = -1: the layer before's slot seq_len - 1
    assert divmod(prev, seq_len * kv_dim) == (n_layers - 2, (seq_len - 1) * kv_dim)
    assert f"layer 0, pos -1: writes at float {below:,}, before the start of key_cache" in text
    assert f"layer {n_layers - 1}, pos -1: writes at float {prev:,}, layer {n_layers - 2}'s slot {seq_len - 1}" in text
    att_size = n_heads * seq_len  # calloc(p->n_heads * p->seq_len, sizeof(float))
    last_head = (n_heads - 1) * seq_len + seq_len  # att + h * seq_len, att[t] for t = pos = seq_len
    assert last_head == att_size  # one float past the end
    assert f"the last head writes att[{last_head:,}] of a {att_size:,}-float att" in text


def test_llama2_export_overflows_before_the_trained_context():
    meta_max_seq_len = 2048  # llama2.c export.py, load_meta_model: config.max_seq_len = 2048
    trained = 4096  # Llama 2 paper, App. A.2.1: context window expanded from 2048 to 4096 tokens
    text = cell_text("hole_mass = {}")
    assert (f"the cache ends at token {meta_max_seq_len:,}, {trained - meta_max_seq_len:,} tokens before the "
            f"trained {trained:,}") in text
    prose = " ".join(section().split())
    assert "load_meta_model" in prose and "trained at 4096" in prose and "cache ends at token 2048, 2048 tokens before" in prose


def run_layers(tokens, pos_at=lambda i: i, n_layers=2):
    """A two-layer, one-head decoder with a residual stream: x += attention(x) per layer, caches zeroed.

    Token BLANK has a zero embedding, so its layer-0 key and value are zero; its layer-1 key is not.
    Returns the last T outputs and the key caches, (n_layers, S, D_H)."""
    rng = np.random.default_rng(7)
    emb = rng.standard_normal((P + T + 1, D_H))
    emb[BLANK] = 0
    w = rng.standard_normal((n_layers, 3, D_H, D_H)) / np.sqrt(D_H)  # (layer, q/k/v, d, d)
    key_cache, value_cache = np.zeros((2, n_layers, S, D_H))
    out = []
    for i, t in enumerate(tokens):
        pos, x = pos_at(i), emb[t].copy()
        for layer in range(n_layers):
            q, k, v = w[layer] @ x
            key_cache[layer, pos], value_cache[layer, pos] = rotate(k, pos), v
            x = x + attend(rotate(q, pos), key_cache[layer, :pos + 1], value_cache[layer, :pos + 1])
        out.append(x)
    return np.array(out)[-T:], key_cache


def test_in_a_deeper_model_too_small_and_stuck_stay_exact_and_too_large_does_not():
    """The prose: deleting tokens (too small, stuck) holds in a full model; inserting zero tokens (too large) does not."""
    for d in (-8, -1):
        assert np.allclose(run_layers(SEQ, decode_off_by(d))[0], run_layers(SEQ[:P + d] + SEQ[P:])[0])
    stuck = run_layers(SEQ, decode_off_by(None))[0]
    assert all(np.allclose(stuck[j], run_layers(SEQ[:P] + [P + j])[0][-1]) for j in range(T))
    for d in (1, 8):
        wrong = run_layers(SEQ, decode_off_by(d))[0]
        assert not np.allclose(wrong, run_layers(SEQ[:P] + [BLANK] * d + SEQ[P:])[0], atol=1e-6)
    _, keys = run_layers(SEQ[:P] + [BLANK] + SEQ[P:])
    assert not keys[0, P].any() and np.abs(keys[1, P]).max() > 0.1  # zero at layer 0, not at layer 1
    prose = " ".join(section().split())
    assert "holds only in this one-head toy" in prose and "These two hold in a full model too" in prose


def test_a_one_off_slip_deletes_a_token_and_leaves_a_hole():
    """The follow-up's claim: pos - 1 for one step, then right again."""
    q, k, v = data()
    key_cache = np.zeros((S, D_H))
    for i in range(P + T):
        pos = P - 1 if i == P else i
        key_cache[pos] = rotate(k[i], pos)
    assert not key_cache[P].any()  # never written: a zero key
    assert np.allclose(key_cache[P - 1], rotate(k[P], P - 1))  # token P - 1's key is gone


KEYS = ("qa_handsonllama", "karpathy_llama2c", "touvron2023llama2", "hftf449positions", "hftf53positions",
        "hftf525positions", "vllm034positions", "vllm034rollback")


def test_the_section_cites_its_sources_and_its_rubrics_are_in_the_answers():
    text = section()
    bib = (NB.parents[1] / "references.bib").read_text()
    for key in KEYS:
        assert re.search(rf"[`,]{key}\{{", text), key
        assert f"{{{key}," in bib
    blocks = text.split(":::{admonition}")[1:]
    assert len(blocks) == 3
    assert all(block.split("\n")[1] == ":class: dropdown" for block in blocks)  # dropdowns, not flashcards
    for block in blocks:
        answer = block.split("**Strong answer.**")[1].split("**Listening for.**")[0]
        rubric = block.split("**Listening for.**")[1].split("**Trap.**")[0].strip().splitlines()
        for line in rubric:
            anchor = re.match(r'^- [^"]+: "([^"]+)"$', line).group(1)
            assert " ".join(anchor.split()).casefold() in " ".join(answer.split()).casefold(), anchor


def test_the_engines_are_described_version_by_version():
    """Hugging Face: the angle (position_ids) apart from the slot (cache_position up to 5.3, the static cache's
    cumulative_length from 5.4); vLLM 0.34's kernels, with M-RoPE's own positions; rollback in the [H] answer."""
    prose = " ".join(section().split())
    for phrase in ("From transformers 4.38 to 5.3", "From 5.4, `cache_position` is gone", "`cumulative_length`",
                   "`attention_mask.cumsum(-1) - 1`", "left padding", "`_prepare_pos_seq_lens_kernel`",
                   "M-RoPE models", "no longer ships", "rejected speculative tokens", "preemption"):
        assert phrase in prose, phrase
    for stale in ("keep no separate counter", "nothing to pass", "The text stays fluent and the logits are wrong"):
        assert stale not in prose, stale
    bib = (NB.parents[1] / "references.bib").read_text()
    for version in ("transformers 4.49.0", "transformers 5.3.0", "transformers 5.25.0", "vLLM 0.34.0"):
        assert version in bib
