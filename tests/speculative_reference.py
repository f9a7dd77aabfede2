"""Speculative decoding's walltime model, written out for the chapter tests to recompute against.

Leviathan et al. 2023: with k drafts each accepted with probability alpha (independently), a verification step emits
sum_{i=0..k} alpha**i tokens in expectation (Theorem 3.8), and costs k draft runs of c target steps each plus one
target step. Standard library only, like tests/chapter_outputs.py, so the tests that import it still run in
``make test-numpy-floor``; independent of mha_kit, whose ``speculative_speedup`` the chapters call.
"""


def tokens(alpha, k):
    """Expected tokens a verification step emits: the i-th draft survives with probability alpha**i, plus one."""
    return sum(alpha ** i for i in range(k + 1))


def speedup(alpha, k, c):
    """Walltime speed-up over plain decoding: tokens per step over the step's cost in target steps."""
    return tokens(alpha, k) / (k * c + 1)
