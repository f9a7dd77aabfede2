"""Tests for mha_kit.units: dtype sizes, rounding to whole bytes, and number formatting."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_kit as mk


# ---------------------------------------------------------------------------------------------
# dtype_bits
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, bits",
    [
        ("fp32", 32), ("float32", 32),  # 4 bytes
        ("bf16", 16), ("bfloat16", 16), ("fp16", 16), ("float16", 16),  # 2 bytes
        ("fp8", 8), ("int8", 8),  # 1 byte
        ("int4", 4),  # half a byte
        ("BF16", 16),  # names are case-insensitive
    ],
)
def test_dtype_bits_by_name(name, bits):
    assert mk.dtype_bits(name) == bits
    assert type(mk.dtype_bits(name)) is int


def test_dtype_table_agrees_with_numpy_itemsize():
    # Independent reference: numpy's own sizes for the dtypes it knows.
    for name in ("float32", "float16", "int8"):
        assert mk.DTYPE_BITS[name] == 8 * np.dtype(name).itemsize


@pytest.mark.parametrize("bits", [1, 4, 6, 16, np.int64(6)])  # DeepSeek-V2 stores ~6 bits
def test_dtype_bits_by_number(bits):
    assert mk.dtype_bits(bits) == int(bits)
    assert type(mk.dtype_bits(bits)) is int


def test_dtype_bits_unknown_name():
    with pytest.raises(ValueError, match=r"^unknown number format 'fp12'; use one of \[.*'bf16'.*\] or a number of bits$"):
        mk.dtype_bits("fp12")


@pytest.mark.parametrize("bad", [0, -16, 16.0, True, None, np.float32(8)])  # zero, negative, float, bool, None
def test_dtype_bits_bad_value(bad):
    with pytest.raises(ValueError, match=r"^fmt must be a format name such as 'bf16' or a positive integer number of bits"):
        mk.dtype_bits(bad)


# ---------------------------------------------------------------------------------------------
# elements_to_bytes: rounding up to whole bytes
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "elements, dtype, expected",
    [
        (1, "bf16", 2),  # 16 bits
        (3, "fp32", 12),  # 96 bits
        (1, "int4", 1),  # 4 bits round up to one byte
        (3, "int4", 2),  # 12 bits -> 2 bytes
        (4, 6, 3),  # 24 bits exactly
        (5, 6, 4),  # 30 bits -> 4 bytes
        (1, 1, 1),  # one bit still takes a byte
        (0, "bf16", 0),  # nothing
    ],
)
def test_elements_to_bytes(elements, dtype, expected):
    assert mk.elements_to_bytes(elements, dtype) == expected
    assert type(mk.elements_to_bytes(elements, dtype)) is int


@pytest.mark.parametrize("bad", [-1, 2.5, 2.0, True, "4", None])  # negative, floats, bool, str, None
def test_elements_to_bytes_refuses_non_counts(bad):
    with pytest.raises(ValueError, match=r"^num_elements must be a non-negative integer, got "):
        mk.elements_to_bytes(bad)


def test_elements_to_bytes_accepts_numpy_ints():
    assert mk.elements_to_bytes(np.int64(3), "fp32") == 12
    assert type(mk.elements_to_bytes(np.int64(3), "fp32")) is int


@settings(max_examples=60, deadline=None)
@given(elements=st.integers(0, 10**12), bits=st.integers(1, 64))
def test_elements_to_bytes_is_ceiling(elements, bits):
    result = mk.elements_to_bytes(elements, bits)
    assert type(result) is int
    assert 8 * (result - 1) < elements * bits <= 8 * result  # the smallest whole number of bytes


# ---------------------------------------------------------------------------------------------
# format_int, format_bytes, format_percent
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0"),
        (999, "999"),
        (1000, "1,000"),
        (2**20, "1,048,576"),  # the article's parameter count
        (-12345, "-12,345"),
        (np.int64(268435456), "268,435,456"),  # numpy ints are accepted
    ],
)
def test_format_int(n, text):
    assert mk.format_int(n) == text


@pytest.mark.parametrize("bad", [1.0, True, "12", None, np.float64(3)])  # floats, bool, str, None
def test_format_int_refuses_non_integers(bad):
    with pytest.raises(ValueError, match=r"^format_int expects an integer, got "):
        mk.format_int(bad)


@pytest.mark.parametrize(
    "n, unit, text",
    [
        (327_680, None, "320 KiB"),  # Llama 3 70B cache per token
        (40 * 1024, None, "40 KiB"),  # the same with one KV head
        (0, None, "0 B"),
        (1023, None, "1,023 B"),  # just under 1 KiB
        (1024, None, "1 KiB"),  # exactly 1 KiB
        (1536, None, "1.5 KiB"),  # fractional value, one decimal
        (2**30, None, "1 GiB"),
        (5 * 2**40, None, "5 TiB"),
        (2**50, None, "1,024 TiB"),  # TiB is the largest unit
        (327_680, "KB", "327.7 KB"),  # decimal kilobytes
        (327_680, "B", "327,680 B"),
        (10**9, "GB", "1 GB"),
        (2**20, "MiB", "1 MiB"),
        (2.5, None, "2.5 B"),  # a float byte count is formatted, not refused
    ],
)
def test_format_bytes(n, unit, text):
    assert mk.format_bytes(n, unit) == text


def test_format_bytes_precision():
    assert mk.format_bytes(1000, "KiB", precision=3) == "0.977 KiB"  # 1000 / 1024 = 0.9765625
    assert mk.format_bytes(2048, "KiB", precision=3) == "2 KiB"  # whole numbers drop decimals


@pytest.mark.parametrize("bad", [-1, True, "1", None, float("nan"), float("inf")])
def test_format_bytes_bad_number(bad):
    with pytest.raises(ValueError, match=r"^format_bytes expects a non-negative number of bytes, got "):
        mk.format_bytes(bad)


@pytest.mark.parametrize("unit", ["kb", "Kib", "PiB", "bytes"])  # case matters; unknown units
def test_format_bytes_unknown_unit(unit):
    with pytest.raises(ValueError, match=rf"^unknown unit '{unit}'; use one of \['B', 'KiB', 'MiB', 'GiB', 'TiB'\] or \['KB', 'MB', 'GB', 'TB'\]$"):
        mk.format_bytes(1024, unit)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 2**60))
def test_format_bytes_auto_unit_is_between_1_and_1024(n):
    text = mk.format_bytes(n)
    number, unit = text.split(" ")
    value = float(number.replace(",", ""))
    size = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[unit]
    assert math.isclose(value, n / size, abs_tol=0.05 + 1e-9)  # one decimal
    assert unit == "TiB" or n / size < 1024
    assert unit == "B" or n / size >= 1


@pytest.mark.parametrize(
    "fraction, precision, text",
    [
        (0.822, 1, "82.2%"),
        (0.9334, 1, "93.3%"),
        (1, 1, "100.0%"),
        (0, 0, "0%"),
        (0.12345, 2, "12.35%"),
        (-0.5, 1, "-50.0%"),  # a growth shows as a negative saving
    ],
)
def test_format_percent(fraction, precision, text):
    assert mk.format_percent(fraction, precision) == text


@pytest.mark.parametrize(
    "difference, bound, text",
    [
        (8.9e-16, 1e-12, "below 1e-12"),  # stored by one CPU ...
        (1.0e-15, 1e-12, "below 1e-12"),  # ... and by the next: one text for both
        (0.0, 1e-12, "below 1e-12"),
        (1e-12, 1e-12, "1.0e-12 (above 1e-12)"),  # the bound itself is not rounding
        (0.25, 1e-12, "2.5e-01 (above 1e-12)"),
        (3e-9, 1e-8, "below 1e-08"),
        (np.float32(2e-13), 1e-12, "below 1e-12"),  # numpy scalars are numbers too
    ],
)
def test_format_difference(difference, bound, text):
    assert mk.format_difference(difference, bound) == text


@pytest.mark.parametrize("difference", [-1e-16, float("nan"), "1e-16", None])
def test_format_difference_refuses_what_is_not_a_difference(difference):
    with pytest.raises(ValueError, match=r"^difference must be a non-negative number, got "):
        mk.format_difference(difference)


@pytest.mark.parametrize("bound", [0, -1e-12, float("nan")])
def test_format_difference_refuses_a_bound_that_is_not_positive(bound):
    with pytest.raises(ValueError, match=r"^bound must be a positive number, got "):
        mk.format_difference(1e-16, bound)
