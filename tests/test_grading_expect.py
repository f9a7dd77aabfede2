"""The assertion helpers of the exercises say what is wrong in one line."""
from fractions import Fraction

import numpy as np
import pytest

from mha_course.judge.expect import expect_close, expect_equal, expect_float, expect_int, expect_shape


def fails_with(match, func, *args, **kwargs):
    with pytest.raises(AssertionError, match=match) as info:
        func(*args, **kwargs)
    assert "\n" not in str(info.value)  # one line


# Llama 3 70B's bf16 cache per token (80 layers x 2 x 8 KV heads x 128 x 2 bytes), and a number past
# 2**53, where a comparison through float could not tell it from its neighbours.
@pytest.mark.parametrize("expected", [80 * 2 * 8 * 128 * 2, 2**53 + 1])
def test_expect_int_passes_exactly_the_right_int(expected):
    """The right int passes, with hints and known wrong values given; one more or one less fails."""
    assert expect_int(int(str(expected)), expected, "bytes", hints={2: "K and V twice?"},
                      wrong={expected + 2: "off by two"}) is None
    fails_with(rf"bytes: expected {expected:,}, got {expected + 1:,}$", expect_int, expected + 1, expected, "bytes")
    fails_with(rf"bytes: expected {expected:,}, got {expected - 1:,}$", expect_int, expected - 1, expected, "bytes")


@pytest.mark.parametrize("got, match", [
    (327680.0, r"expected bytes as an int, got float \(327680.0\): use // or int"),
    ("327680", r"expected bytes as an int, got builtins.str"),
    (True, r"expected bytes as an int, got builtins.bool"),
])
def test_expect_int_names_the_wrong_type(got, match):
    fails_with(match, expect_int, got, 327680, "bytes")


@pytest.mark.parametrize("got", [np.int64(327680), np.int32(327680), np.uint64(327680)])
def test_expect_int_takes_a_numpy_count(got):
    """The exercises say "return plain Python and numpy values": a numpy integer that holds the count passes."""
    assert expect_int(got, 327680, "bytes") is None
    fails_with(r"bytes: expected 327,681, got 327,680$", expect_int, got, 327681, "bytes")


def test_expect_int_names_a_numpy_count_that_overflowed():
    """A count past the dtype's range, or one that wrapped around (a product in int32), is named as such."""
    wrapped = np.int32(np.int64(100_000 * 100_000).astype(np.int32))  # 10**10 wraps to 1,410,065,408
    fails_with(r"bytes: expected 10,000,000,000, got 1,410,065,408: the count overflowed numpy's int32 "
               r"\(at most 2,147,483,647\): count with Python ints$", expect_int, wrapped, 10**10, "bytes")
    fails_with(r"overflowed numpy's int64", expect_int, np.int64(5), 2**64 + 5, "bytes")


@pytest.mark.parametrize("got, hints, match", [
    (2 * 96, {2: "did you count K and V twice?"}, r"bytes: expected 96, got 192 \(2x too large: did you count K and V twice\?\)"),
    (12, {Fraction(1, 8): "bytes, not bits"}, r"8x too small: bytes, not bits"),
    (97, None, r"bytes: expected 96, got 97$"),
    (3 * 96, {2: "unused"}, r"\(3x too large\)$"),
])
def test_expect_int_gives_the_ratio_and_its_hint(got, hints, match):
    fails_with(match, expect_int, got, 96, "bytes", hints=hints)


def test_expect_int_names_a_known_wrong_value():
    fails_with(r"GQA counted as MHA", expect_int, 1000, 150, "params", wrong={1000: "GQA counted as MHA"})


def test_expect_float_hint():
    expect_float(16.0, 16, "intensity")
    fails_with(r"expected 16, got 8 \(multiply-adds\)", expect_float, 8.0, 16.0, "intensity", hints={0.5: "multiply-adds"})
    fails_with(r"as a number, got str", expect_float, "8", 16.0, "intensity")


def test_expect_float_names_an_int_too_large_for_a_float():
    """10**400 has no float: a one-line verdict, not an OverflowError out of the judge."""
    fails_with(r"expected tokens per step: expected 3.5, got an int of 1329 bits, too large for a float$",
               expect_float, 10**400, 3.5, "expected tokens per step")


def test_expect_shape_messages():
    expect_shape((2, 8, 10, 64), (2, 8, 10, 64), "Q")
    fails_with(r"as a tuple, got list", expect_shape, [2, 8], (2, 8), "Q")
    fails_with(r"the right sizes in the wrong order", expect_shape, (2, 10, 8, 64), (2, 8, 10, 64), "Q")
    fails_with(r"expected 4 axes", expect_shape, (2, 8, 10), (2, 8, 10, 64), "Q")
    fails_with(r"must hold ints", expect_shape, (2, 8.0), (2, 8), "Q")


def test_expect_close_names_a_classic_mistake():
    ref, unscaled = np.array([1.0, 2.0]), np.array([2.0, 4.0])
    expect_close(ref + 1e-12, ref, "out")
    fails_with(r"forgot the scale", expect_close, unscaled, ref, "out", wrong={"forgot the scale": unscaled})
    fails_with(r"largest difference 0.5", expect_close, ref + 0.5, ref, "out")
    fails_with(r"NaN or inf", expect_close, np.array([np.nan, 1.0]), ref, "out")
    fails_with(r"shape of out", expect_close, np.zeros(3), ref, "out")
    fails_with(r"as a numpy array, got list", expect_close, [1.0, 2.0], ref, "out")


def test_expect_equal_for_masks_and_sets():
    mask = np.tril(np.ones((3, 3), dtype=bool))
    expect_equal(mask.copy(), mask, "mask")
    fails_with(r"dtype bool, got float64", expect_equal, mask.astype(float), mask, "mask")
    peeks = mask.copy()
    peeks[0, 1] = True  # token 0 sees token 1
    fails_with(r"mask: 1 of 9 entries are wrong", expect_equal, peeks, mask, "mask")
    fails_with(r"as a set, got list", expect_equal, ["a"], {"a"}, "names")
