"""Parameter count of a GPT-2-style decoder (biases, LayerNorms, a learned position table).

The layout is GPT-2's (Radford et al. 2019, released checkpoints; nanoGPT ``model.py`` builds the
same modules): per layer a fused QKV projection ``c_attn`` (d -> 3d) and an output projection
``c_proj`` (d -> d), an MLP ``c_fc`` (d -> 4d) and ``c_proj`` (4d -> d), every one with a bias, and
two LayerNorms with a gain and a bias; then a token table (V x d), a position table (n_ctx x d),
a final LayerNorm, and an output head that is the token table transposed unless untied.
"""

__all__ = ["gpt2_params"]


def gpt2_params(num_layers, d_model, vocab_size=50257, n_ctx=1024, *, tied=True) -> int:
    """Count the parameters of a GPT-2-style model.

    Parameters
    ----------
    num_layers : int
        Decoder layers L.
    d_model : int
        Width d; the MLP is 4d wide.
    vocab_size : int
        Rows V of the token table (GPT-2: 50,257).
    n_ctx : int
        Rows of the learned position table (GPT-2: 1,024).
    tied : bool
        True: the output head reuses the token table (GPT-2). False: a separate V x d head, no bias.

    Returns
    -------
    int
        ``L (12 d^2 + 13 d) + (V + n_ctx) d + 2 d``, plus ``V d`` when untied.
    """
    for name, value in (("num_layers", num_layers), ("d_model", d_model), ("vocab_size", vocab_size),
                        ("n_ctx", n_ctx)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    d = int(d_model)
    attention = (d * 3 * d + 3 * d) + (d * d + d)  # c_attn (d, 3d) + bias, c_proj (d, d) + bias
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)  # c_fc (d, 4d) + bias, c_proj (4d, d) + bias
    norms = 2 * 2 * d  # ln_1 and ln_2: gain and bias each
    layer = attention + mlp + norms  # = 12 d^2 + 13 d
    total = int(num_layers) * layer + (int(vocab_size) + int(n_ctx)) * d + 2 * d  # + wte, wpe, ln_f
    return total if tied else total + int(vocab_size) * d
