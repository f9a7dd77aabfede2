"""Integer-only requantization of an int32 accumulator to the next layer's 8-bit codes.

Jacob et al. (2018), "Quantization and Training of Neural Networks for Efficient
Integer-Arithmetic-Only Inference": the multiplier M = s_x s_w / s_y (Eq. 5) written as
M = 2^-n M0 with M0 in [0.5, 1) (Eq. 6), M0 held as the int32 nearest 2^31 M0 (Sec. 2.2),
applied as a fixed-point multiply and a rounding right shift, then the output zero point and a
saturating clamp (Sec. 2.4). The rounding follows gemmlowp's fixedpoint.h. Chapter:
weight_quantization, section weight_quantization-requantize.
"""
import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def quantize_multiplier(multiplier):
    """Split a real multiplier ``M`` in (0, 1) into ``(m0, shift)`` with ``M ~= m0 * 2**-31 * 2**-shift``.

    Jacob et al. (2018) Sec. 2.2, Eq. (6): ``M = 2^-n M0`` with ``M0`` in [0.5, 1) and ``n >= 0``;
    ``m0`` is the int32 nearest ``2^31 M0``, so it lies in [2^30, 2^31) and keeps 30 or more bits.

    Parameters
    ----------
    multiplier : float
        ``M = s_x s_w / s_y``, the three scales' ratio, computed offline.

    Returns
    -------
    m0 : int
        The fixed-point mantissa, in [2**30, 2**31).
    shift : int
        ``n``, the right shift, >= 0.
    """
    if not 0.0 < multiplier < 1.0:
        raise ValueError(f"multiplier M must lie in (0, 1) (Jacob et al. Sec. 2.2), got {multiplier}")
    mantissa, exponent = np.frexp(multiplier)  # M = mantissa * 2^exponent, mantissa in [0.5, 1), exponent <= 0
    m0, shift = int(np.floor(mantissa * 2.0**31 + 0.5)), -int(exponent)
    if m0 == 2**31:  # M0 rounded up to 1.0: use 0.5 and one shift less
        m0, shift = 2**30, shift - 1
    if shift < 0:
        raise ValueError(f"multiplier M = {multiplier} rounds to 1 at 31 bits; need M < 1 - 2**-32")
    return m0, shift


def requantize(acc, m0, shift, zero_point, qmin=-128, qmax=127):
    """Integer-only output stage: ``clamp(zero_point + round(acc * m0 / 2^31 / 2^shift), qmin, qmax)``.

    The multiply is gemmlowp's SaturatingRoundingDoublingHighMul (ARM's SQRDMULH: the high half of
    ``2 acc m0``, ties upward); the shift is its RoundingDivideByPOT, round to nearest with ties away
    from zero (Jacob et al. App. B: a shift that breaks ties upward biases every output).

    Parameters
    ----------
    acc : int array, shape (...)
        int32 accumulators, bias already added (``sum q_x q_w + Q_bias``).
    m0, shift : int
        From :func:`quantize_multiplier` (one pair per tensor).
    zero_point : int
        The output's zero point ``z_y``.
    qmin, qmax : int
        The output code range: (-128, 127) for int8, (0, 255) for uint8; a fused ReLU raises qmin.

    Returns
    -------
    int64 array, shape (...)
        Output codes in [qmin, qmax].
    """
    acc = np.asarray(acc, dtype=np.int64)
    if acc.size and (acc.min() < INT32_MIN or acc.max() > INT32_MAX):
        raise ValueError(f"accumulators must fit int32, got range [{acc.min()}, {acc.max()}]")
    if not 2**30 <= m0 < 2**31 or not 0 <= shift <= 31:
        raise ValueError(f"need m0 in [2**30, 2**31) and shift in [0, 31], got m0={m0}, shift={shift}")
    if not qmin <= zero_point <= qmax:
        raise ValueError(f"zero_point ({zero_point}) must lie in [qmin, qmax] = [{qmin}, {qmax}]")
    high = (acc * m0 + 2**30) >> 31  # |acc * m0| < 2^62: exact in int64; >> floors, so ties go up
    if shift:
        high = np.sign(high) * ((np.abs(high) + (1 << (shift - 1))) >> shift)  # ties away from zero
    return np.clip(high + zero_point, qmin, qmax)
