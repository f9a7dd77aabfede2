"""The peer in the same run: PyTorch's ``scaled_dot_product_attention`` on the CPU, where PyTorch is installed.

It runs on the same caches as the other kernels (``torch.from_numpy`` shares their memory, token-major),
with ``enable_gqa=True`` so that query heads share KV heads as in the cache, and on the same number of
threads. PyTorch is never installed by the project's requirements: ``pip install torch`` to add the
peer; without it :data:`MISSING` says why and the report says the peer row was skipped.
"""
from __future__ import annotations

try:
    import torch
except ImportError as error:  # optional: the benchmark runs without it
    torch = None
    MISSING = f"PyTorch is not installed ({error})"
else:
    MISSING = None


def version():
    """PyTorch's version, or None."""
    return None if torch is None else torch.__version__


def sdpa_step(q, k, v, threads):
    """One decode step through ``torch.nn.functional.scaled_dot_product_attention``, as a function.

    ``q`` (h, d_h), ``k`` (h_kv, s, d_h), ``v`` (h_kv, s, d_v) NumPy arrays (views are shared, not
    copied where PyTorch can read them in place); the function returns the (h, d_v) output.
    """
    torch.set_num_threads(threads)
    query = torch.from_numpy(q)[None, :, None, :]  # (1, h, 1, d_h): one new token
    key, value = torch.from_numpy(k)[None], torch.from_numpy(v)[None]  # (1, h_kv, s, d)
    attend = torch.nn.functional.scaled_dot_product_attention

    def step():
        with torch.inference_mode():
            return attend(query, key, value, enable_gqa=True)[0, :, 0]
    return step
