"""cross_and_masked_attention-no-mask: a look-ahead head copies every target without the mask and fails at generation.

Recomputed without mha_kit: softmax written out, masked scores set to -inf, cross-entropy by hand.
"""

import numpy as np

VOCAB, N, BETA = 16, 32, 20.0


def text():
    t = np.random.default_rng(7).integers(VOCAB, size=N + 1)
    return t[:-1], t[1:]


def head(tokens, allowed):
    m = len(tokens)
    scores = np.where(allowed, BETA * np.eye(m, k=1), -np.inf)  # beta on key i + 1
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    values = np.zeros((m, VOCAB))
    values[np.arange(m), tokens] = 1.0  # one-hot tokens
    return BETA * w @ values


def loss_and_hits(logits, target):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(target)), target].mean(), int((logits.argmax(axis=1) == target).sum())


def tril(m, k=0):
    return np.arange(m)[None, :] <= np.arange(m)[:, None] + k


def test_unmasked_head_copies_all_but_the_last_target():
    inputs, targets = text()
    logits = head(inputs, np.ones((N, N), dtype=bool))
    loss, hits = loss_and_hits(logits, targets)
    assert f"{loss:.2f}" == "0.10" and hits == 31
    assert np.all(logits[:-1].argmax(axis=1) == targets[:-1])  # the only miss is the last position
    assert loss < np.log(VOCAB) and f"{np.log(VOCAB):.2f}" == "2.77"
    off_loss, off_hits = loss_and_hits(head(inputs, tril(N, 1)), targets)  # j <= i + 1 leaks the same
    assert f"{off_loss:.2f}" == "0.10" and off_hits == 31


def test_generation_equals_the_masked_pass_and_is_worse_than_guessing():
    inputs, targets = text()
    masked = head(inputs, tril(N))
    generation = np.stack([head(inputs[:t], tril(t))[-1] for t in range(1, N + 1)])
    assert np.allclose(generation, masked)
    loss, hits = loss_and_hits(generation, targets)
    assert f"{loss:.2f}" == "4.74" and hits == 3
    assert loss > np.log(VOCAB)


def test_edit_test_catches_the_leak():
    inputs, _ = text()
    edited = inputs.copy()
    edited[6] = (edited[6] + 1) % VOCAB
    for allowed, moves in ((np.ones((N, N), dtype=bool), True), (tril(N), False)):
        moved = np.abs(head(edited, allowed)[:6] - head(inputs, allowed)[:6]).max()
        assert (round(moved, 1) == 20.0) if moves else moved == 0.0
