"""Tests for mha_kit.config: validation of AttentionConfig / LatentAttentionConfig and presets."""
import inspect
import re
import warnings
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

import mha_kit as mk
from mha_kit.config import check_positive_int, check_positive_number, renamed_keyword


# ---------------------------------------------------------------------------------------------
# AttentionConfig: derived fields
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "d, h, h_kv, d_h, g, variant",
    [
        (512, 8, None, 64, 1, "mha"),  # Transformer base: h_kv defaults to h
        (512, 8, 8, 64, 1, "mha"),  # h_kv == h given explicitly
        (8192, 64, 8, 128, 8, "gqa"),  # Llama 3 70B: 8 query heads per KV head
        (8192, 64, 1, 128, 64, "mqa"),  # one KV head for all 64 query heads
        (4, 2, 1, 2, 2, "mqa"),  # toy shape, MQA
        (6, 6, 3, 1, 2, "gqa"),  # head size 1
        (7, 1, None, 7, 1, "mha"),  # a single head is MHA, not MQA (h_kv == h wins)
    ],
)
def test_derived_fields(d, h, h_kv, d_h, g, variant):
    cfg = mk.AttentionConfig(d, h, h_kv)
    assert cfg.num_kv_heads == (h if h_kv is None else h_kv)
    assert cfg.head_dim == d_h
    assert cfg.group_size == g
    assert cfg.variant == variant


def test_head_dim_given_explicitly_need_not_divide_d_model():
    # Gemma 2 9B: 3584 / 16 = 224, but the model uses heads of 256.
    cfg = mk.AttentionConfig(3584, 16, 8, head_dim=256)
    assert cfg.head_dim == 256
    assert 3584 % 16 == 0 and 3584 // 16 != 256


def test_numpy_integers_are_stored_as_python_int():
    cfg = mk.AttentionConfig(np.int64(512), np.int32(8), np.int16(2), np.uint8(64), np.int64(6))
    for value in (cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.num_layers):
        assert type(value) is int
    assert (cfg.d_model, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.num_layers) == (512, 8, 2, 64, 6)


def test_source_does_not_take_part_in_equality():
    assert mk.AttentionConfig(512, 8, source="a") == mk.AttentionConfig(512, 8, source="b")
    assert mk.AttentionConfig(512, 8, name="a") != mk.AttentionConfig(512, 8, name="b")


def test_config_is_frozen_and_hashable():
    cfg = mk.AttentionConfig(512, 8)
    with pytest.raises(FrozenInstanceError):
        cfg.num_heads = 4
    latent = mk.PRESETS["deepseek-v2"]
    with pytest.raises(FrozenInstanceError):
        latent.kv_lora_rank = 1
    assert len({cfg, mk.AttentionConfig(512, 8, 8, 64)}) == 1  # same shape, same hash


# ---------------------------------------------------------------------------------------------
# AttentionConfig: every ValueError path
# ---------------------------------------------------------------------------------------------

def test_num_heads_not_divisible_by_num_kv_heads():
    with pytest.raises(ValueError, match=r"^num_heads \(64\) must be divisible by num_kv_heads \(6\)$"):
        mk.AttentionConfig(384, 64, 6)


@pytest.mark.parametrize(
    "d, h",
    [
        (10, 3),  # 10 / 3 is not whole
        (512, 7),  # odd head count
        (3584, 15),  # close to a real width
    ],
)
def test_d_model_not_divisible_without_head_dim(d, h):
    with pytest.raises(ValueError, match=rf"d_model \({d}\) must be divisible by num_heads \({h}\) when head_dim is not given"):
        mk.AttentionConfig(d, h)


@pytest.mark.parametrize("field", ["d_model", "num_heads", "num_kv_heads", "head_dim", "num_layers"])
@pytest.mark.parametrize(
    "bad, message",
    [
        (0, r"must be a positive integer, got 0$"),  # zero
        (-8, r"must be a positive integer, got -8$"),  # negative
        (True, r"must be a positive integer, got True \(bool\)"),  # bool is an int subclass, still refused
        (8.0, r"must be a positive integer, got 8\.0 \(float\)"),  # a float that slipped in from `/`
        ("8", r"must be a positive integer, got '8' \(str\)"),  # a string
        (np.float64(8), r"must be a positive integer, got .*8\.0.* \(float64\)"),  # numpy float
        (np.bool_(True), r"must be a positive integer, got .*True.* \(bool_?\)"),  # numpy bool (named bool_ before numpy 2)
    ],
)
def test_bad_integer_fields(field, bad, message):
    kwargs = dict(d_model=512, num_heads=8, num_kv_heads=8, head_dim=64, num_layers=2)
    kwargs[field] = bad
    with pytest.raises(ValueError, match=rf"^{field} {message}"):
        mk.AttentionConfig(**kwargs)


def test_check_positive_int_returns_int():
    assert type(check_positive_int("x", np.int64(3))) is int
    assert check_positive_int("x", 1) == 1
    with pytest.raises(ValueError, match=r"^x must be a positive integer, got None \(NoneType\)$"):
        check_positive_int("x", None)


# ---------------------------------------------------------------------------------------------
# with_kv_heads
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "h_kv, expected_kv, variant, label",
    [
        (None, 64, "mha", "llama-3-70b (h_kv=64)"),  # back to full multi-head
        (64, 64, "mha", "llama-3-70b (h_kv=64)"),  # the same, given explicitly
        (8, 8, "gqa", "llama-3-70b (h_kv=8)"),  # the model as published
        (1, 1, "mqa", "llama-3-70b (h_kv=1)"),  # multi-query variant
    ],
)
def test_with_kv_heads(h_kv, expected_kv, variant, label):
    base = mk.PRESETS["llama-3-70b"]
    other = base.with_kv_heads(h_kv)
    assert other.num_kv_heads == expected_kv
    assert other.variant == variant
    assert other.name == label
    # everything else is kept
    assert (other.d_model, other.num_heads, other.head_dim, other.num_layers) == (8192, 64, 128, 80)
    assert other.source == base.source
    assert base.num_kv_heads == 8  # the original is untouched


def test_with_kv_heads_without_name_and_validation():
    assert mk.AttentionConfig(16, 4).with_kv_heads(2).name is None
    with pytest.raises(ValueError, match=r"num_heads \(64\) must be divisible by num_kv_heads \(6\)"):
        mk.PRESETS["llama-3-70b"].with_kv_heads(6)
    with pytest.raises(ValueError, match=r"^num_kv_heads must be a positive integer, got 0$"):
        mk.PRESETS["llama-3-70b"].with_kv_heads(0)


def test_with_kv_heads_keeps_explicit_head_dim():
    # Gemma's head size is not d / h; switching to MQA must not recompute it.
    assert mk.PRESETS["gemma-2-9b"].with_kv_heads(1).head_dim == 256


# ---------------------------------------------------------------------------------------------
# LatentAttentionConfig
# ---------------------------------------------------------------------------------------------

def _latent(**changes):
    kwargs = dict(d_model=64, num_heads=4, kv_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=8,
                  v_head_dim=6, q_lora_rank=12, num_layers=3)
    kwargs.update(changes)
    return mk.LatentAttentionConfig(**kwargs)


def test_latent_derived_fields():
    cfg = _latent()
    assert cfg.variant == "mla"
    assert cfg.cache_elements_per_layer == 16 + 4
    assert cfg.qk_head_dim == 8 + 4
    assert _latent(q_lora_rank=None).q_lora_rank is None
    assert type(_latent(q_lora_rank=np.int64(12)).q_lora_rank) is int


@pytest.mark.parametrize("rope", [1, 3, 63])  # odd widths cannot be split into rotated pairs
def test_latent_odd_rope_dim(rope):
    with pytest.raises(ValueError, match=rf"^qk_rope_head_dim \({rope}\) must be even: rotary embedding turns pairs$"):
        _latent(qk_rope_head_dim=rope)


@pytest.mark.parametrize(
    "field", ["d_model", "num_heads", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
              "num_layers", "q_lora_rank"]
)
@pytest.mark.parametrize("bad", [0, -2, 2.0, False])  # zero, negative, float, bool
def test_latent_bad_integer_fields(field, bad):
    with pytest.raises(ValueError, match=rf"^{field} must be a positive integer, got {bad!r}"):
        _latent(**{field: bad})


# ---------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------

EXPECTED_PRESET_NAMES = [
    "transformer-base", "gpt2", "llama-3-8b", "llama-3-70b", "llama-3.1-405b", "mistral-7b", "falcon-7b",
    "falcon-40b", "deepseek-67b", "qwen2.5-7b", "gemma-2-9b", "deepseek-v2", "deepseek-v2-lite",
    "deepseek-v3", "qwen3-30b-a3b", "llama-3.2-1b",
]


def test_preset_names():
    assert list(mk.PRESETS) == EXPECTED_PRESET_NAMES


@pytest.mark.parametrize("name", EXPECTED_PRESET_NAMES)
def test_preset_name_matches_key_and_get_preset(name):
    assert mk.PRESETS[name].name == name
    assert mk.get_preset(name) is mk.PRESETS[name]


def test_presets_are_read_only():
    with pytest.raises(TypeError):
        mk.PRESETS["mine"] = mk.AttentionConfig(4, 2)


def test_get_preset_unknown_name():
    with pytest.raises(ValueError, match=r"^unknown preset 'llama-4'; known presets: transformer-base, gpt2, .*qwen3-30b-a3b, llama-3\.2-1b$"):
        mk.get_preset("llama-4")


# ---------------------------------------------------------------------------------------------
# renamed_keyword: the old number-format keywords, kept as deprecated aliases
# ---------------------------------------------------------------------------------------------

LLAMA_70B = mk.MODEL_FACTS["llama-3-70b"]
PLAN = dict(num_gpus=8, tp=8, context_len=8192, batch_size=32)

# (function, positional arguments, old keyword, new keyword, a value that differs from the default)
ALIASES = [
    (mk.kv_bytes_read, (LLAMA_70B.config, 8192), "dtype", "fmt", "fp8"),  # chapter "Worked example"
    (mk.kv_cache_bytes_per_token, (LLAMA_70B.config,), "dtype", "fmt", 6),  # "Trade-offs": a 6-bit cache
    (mk.kv_cache_bytes, (LLAMA_70B.config, 32768), "dtype", "fmt", "fp8_e4m3"),  # exercise 11
    (mk.max_context_tokens, (LLAMA_70B.config, 40 * 10**9), "dtype", "fmt", "fp8"),  # "Low-precision KV cache"
    (mk.arithmetic_intensity, (LLAMA_70B.config, 8192), "dtype", "fmt", "fp8"),  # "Answering"
    (mk.plan_deployment, ("llama-3-70b", "h100-sxm"), "weight_dtype", "weight_fmt", "fp8"),  # "Plan a deployment"
    (mk.plan_deployment, ("llama-3-70b", "h100-sxm"), "kv_dtype", "kv_fmt", "fp8"),
    (mk.decode_memory_floor, (LLAMA_70B, "h100-sxm", 8, 8192, 32), "weight_bits", "weight_fmt", 8),  # exercise 13
]


def _call(func, args, **kwargs):
    return func(*args, **(PLAN if func is mk.plan_deployment else {}), **kwargs)


@pytest.mark.parametrize("func, args, old, new, value", ALIASES)
def test_old_keyword_warns_and_gives_the_new_keywords_value(func, args, old, new, value):
    with pytest.warns(FutureWarning, match=rf"^{func.__name__}\(\): the keyword {old}= is renamed {new}=") as caught:
        got = _call(func, args, **{old: value})
    assert [w.filename for w in caught] == [__file__]  # the warning points at the caller's line
    assert got == _call(func, args, **{new: value}) != _call(func, args)  # the value reached the function


@pytest.mark.parametrize("func, args, old, new, value", ALIASES)
def test_old_and_new_keyword_together_are_refused(func, args, old, new, value):
    with pytest.raises(TypeError, match=rf"^{func.__name__}\(\) got both {old}= and {new}=; .*pass only {new}=$"):
        _call(func, args, **{old: value, new: value})


@pytest.mark.parametrize("func, args, old, new, value", ALIASES)
def test_signature_shows_only_the_new_keyword(func, args, old, new, value):
    params = inspect.signature(func).parameters
    assert new in params and old not in params


def test_new_keyword_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mk.kv_cache_bytes(LLAMA_70B.config, 10, fmt="fp8") * 2 == mk.kv_cache_bytes(LLAMA_70B.config, 10)


def test_two_old_keywords_of_one_function_warn_once_each():
    """plan_deployment stacks two renames in one wrapper: both warn, at the caller, and both values arrive."""
    with pytest.warns(FutureWarning) as caught:
        old = mk.plan_deployment("llama-3-70b", "h100-sxm", **PLAN, weight_dtype="fp8", kv_dtype="int4")
    assert sorted(str(w.message).split("(): ")[1][:16] for w in caught) == ["the keyword kv_d", "the keyword weig"]
    assert {w.filename for w in caught} == {__file__}
    assert old == mk.plan_deployment("llama-3-70b", "h100-sxm", **PLAN, weight_fmt="fp8", kv_fmt="int4")


def test_plots_cache_vs_context_alias():
    """The calculator chapter passed dtype= to the plot; the figure's label shows the format either way."""
    plt = pytest.importorskip("matplotlib.pyplot")  # the numpy-floor run has no matplotlib
    from mha_kit import plots
    with pytest.warns(FutureWarning, match=r"^cache_vs_context\(\): the keyword dtype= is renamed fmt="):
        fig = plots.cache_vs_context([LLAMA_70B.config], [1024, 2048], dtype="fp8")
    assert "fp8" in fig.axes[0].get_ylabel()
    plt.close(fig)


def test_renamed_keyword_on_a_plain_function():
    @renamed_keyword("old", "new")
    def f(x, new=1):
        """Doc."""
        return x + new

    assert f(1) == 2 and f(1, 5) == 6 and f.__name__ == "f" and f.__doc__ == "Doc."
    with pytest.warns(FutureWarning, match=r"^f\(\): the keyword old= is renamed new=; pass new= instead$"):
        assert f(1, old=5) == 6
    with pytest.raises(TypeError, match=r"^f\(\) got both old= and new="):
        f(1, old=5, new=5)


def _kit_callables():
    """Every public function and method of mha_kit's exports (classes' own methods included)."""
    for name in dir(mk):
        obj = getattr(mk, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj) and obj.__module__.startswith("mha_kit"):
            for attr, member in vars(obj).items():
                if inspect.isfunction(member) and not attr.startswith("_") or attr == "__init__":
                    yield f"{name}.{attr}", member


def test_a_number_format_is_never_called_dtype():
    """dtype is a numpy dtype only (KVCache's np.float64); a format name or bit count is fmt / <what>_fmt."""
    wrong = []
    for name, func in _kit_callables():
        for param in inspect.signature(func).parameters.values():
            if param.name == "dtype" and isinstance(param.default, str):
                wrong.append(f"{name}({param.name}={param.default!r})")
            if param.name.endswith("_dtype"):
                wrong.append(f"{name}({param.name})")
    assert not wrong, wrong
    assert "dtype" in inspect.signature(mk.KVCache).parameters  # a real numpy dtype keeps the name


@pytest.mark.parametrize("bad", [0, -1.5, float("inf"), float("nan"), True, "2", None])
def test_check_positive_number_refuses_what_is_not_a_positive_finite_real(bad):
    with pytest.raises(ValueError, match=rf"^rate must be a positive number, got {re.escape(repr(bad))}$"):
        check_positive_number("rate", bad)


def test_check_positive_number_returns_a_float():
    value = check_positive_number("rate", np.float32(2.5))
    assert value == 2.5 and type(value) is float
    assert check_positive_number("rate", 3) == 3.0
