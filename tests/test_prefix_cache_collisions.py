"""mk.hash_collision_probability: the birthday bound, checked against the exact product and hand values.

Source: Menezes, van Oorschot and Vanstone, Handbook of Applied Cryptography (1996), §2.1.5: n items
drawn uniformly from N values all differ with probability prod_{i<n} (1 - i/N), about exp(-n(n-1)/(2N)).
"""
import math

import pytest

import mha_kit as mk


def exact_no_collision(n, space):
    p = 1.0
    for i in range(n):
        p *= 1 - i / space
    return p


@pytest.mark.parametrize("n, bits", [(2, 8), (20, 8), (100, 16), (300, 16), (5000, 24)])
def test_matches_the_exact_product_for_small_spaces(n, bits):
    exact = 1 - exact_no_collision(n, 2**bits)
    # The exponential form is the standard approximation; it is within 2% of the exact product here.
    assert mk.hash_collision_probability(n, bits) == pytest.approx(exact, rel=0.02)


def test_hand_values():
    assert mk.hash_collision_probability(1, 64) == 0.0  # one item cannot collide
    assert mk.hash_collision_probability(2, 1) == pytest.approx(1 - math.exp(-0.5))  # 2 items, 2 values
    # n = 2**32 items of a 64-bit hash: n(n-1)/2**65 ~ 1/2, so 1 - e^(-1/2) ~ 0.39.
    assert mk.hash_collision_probability(2**32, 64) == pytest.approx(1 - math.exp(-0.5), rel=1e-9)
    # A billion cached blocks: 1e18 / 2**65 ~ 0.027 with 64 bits; ~4.3e-60 with SHA-256's 256 bits.
    assert mk.hash_collision_probability(10**9, 64) == pytest.approx(-math.expm1(-(10**9 * (10**9 - 1) / 2) / 2**64))
    assert mk.hash_collision_probability(10**9, 256) == pytest.approx(10**18 / 2**257, rel=1e-6)


@pytest.mark.parametrize("n, bits", [(0, 64), (-1, 64), (10, 0), (1.5, 64)])
def test_rejects_bad_arguments(n, bits):
    with pytest.raises(ValueError, match="num_items|hash_bits"):
        mk.hash_collision_probability(n, bits)
