"""AWQ's fixed scale s on the salient input channels: why the error falls, and why it rises again.

Scaling input channel j of ``w`` by ``s`` before quantizing and dividing its activation by ``s`` changes that
channel's output error by ``(Delta' / Delta) / s`` (Lin et al. 2024, sec. 3.2, Eq. 2-3), where ``Delta`` is
the group's step, set by the group's largest weight. While the scaled weight stays below that maximum,
``Delta' = Delta`` and the salient error falls as ``1 / s``; once it becomes the maximum the step grows and
every other weight of the group is rounded more coarsely (Table 2: OPT-6.7B, s = 1 ... 4).
Book: chapter "Weight quantization for serving", section ``weight_quantization-awq-scale``.
"""
from __future__ import annotations

import numpy as np

from .weight_quant import quantize_weights


def awq_scale_sweep(w, x, channels, scales, bits=3, group_size=128) -> dict:
    """Quantize ``w`` with input ``channels`` scaled by each ``s`` in ``scales``; measure steps and errors.

    Parameters
    ----------
    w : ndarray, shape (d_out, d_in)
    x : ndarray, shape (n_tokens, d_in)
        Calibration activations.
    channels : sequence of int
        The salient input channels that get the scale.
    scales : sequence of float, each >= 1
    bits, group_size
        As :func:`mha_kit.quantize_weights` (symmetric grid).

    Returns
    -------
    dict of ndarray, shape (len(scales),)
        ``"step_grew"``: fraction of groups whose step grew (Delta' > Delta); ``"step_ratio"``: mean Delta'/Delta;
        ``"salient_err"``, ``"other_err"``: RMS output error from the scaled and from the other channels,
        each over its value at s = 1 (nan if that was 0); ``"total_err"``: the layer's RMS output error over the output's RMS.
    """
    w, x = np.asarray(w, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"x must be (n_tokens, d_in) with the d_in of w {w.shape}, got {x.shape}")
    scales = np.asarray(scales, dtype=np.float64)
    if scales.ndim != 1 or scales.size == 0 or not (scales >= 1).all():
        raise ValueError(f"scales must be a non-empty list of numbers >= 1, got {scales.tolist()}")
    salient = np.zeros(w.shape[1], dtype=bool)
    salient[np.asarray(channels, dtype=int)] = True  # IndexError if a channel is out of range
    rows = []
    for s in np.concatenate([[1.0], scales]):
        sv = np.where(salient, s, 1.0)  # (d_in,)
        codes, step, zero = quantize_weights(w * sv, bits, group_size)
        err = (step * (codes - zero)).reshape(w.shape) / sv - w  # (d_out, d_in) effective-weight error
        rows.append((step, [np.sqrt(np.mean((x[:, m] @ err[:, m].T) ** 2)) for m in (salient, ~salient)],
                     np.sqrt(np.mean((x @ err.T) ** 2) / np.mean((x @ w.T) ** 2))))
    base_step, (base_sal, base_oth), _ = rows[0]
    ratio = [step / base_step for step, _, _ in rows[1:]]  # each (d_out, n_groups, 1)
    def rel(e, base):  # nan where plain rounding was exact
        return e / base if base > 0 else np.nan
    return {"step_grew": np.array([np.mean(r > 1 + 1e-12) for r in ratio]),
            "step_ratio": np.array([r.mean() for r in ratio]),
            "salient_err": np.array([rel(e[0], base_sal) for _, e, _ in rows[1:]]),
            "other_err": np.array([rel(e[1], base_oth) for _, e, _ in rows[1:]]),
            "total_err": np.array([t for _, _, t in rows[1:]])}
