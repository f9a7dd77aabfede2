"""common_mistakes-debug-minigpt: a model that copies its input scores near zero on unshifted labels."""
import numpy as np


def _copy_loss(tokens, targets, vocab):
    logits = 10.0 * np.eye(vocab)[tokens]
    log_p = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return -log_p[np.arange(len(targets)), targets].mean()


def test_copy_model_wins_only_on_unshifted_labels():
    rng = np.random.default_rng(0)
    vocab = 50
    tokens = rng.integers(0, vocab, 65)
    assert _copy_loss(tokens[:-1], tokens[:-1], vocab) < 0.01
    assert _copy_loss(tokens[:-1], tokens[1:], vocab) > np.log(vocab)  # worse than a uniform guess
