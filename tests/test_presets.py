"""Every model record (mk.MODEL_FACTS) against the facts file read from its sources.

``tests/data/model_configs.json`` is a copy, inside the repository, of the project's facts
file: each value with the source it was read from and how far it was verified. These tests
never skip. A new model is one record in ``mha_kit/models.py`` plus one row in ``PRESET_FOR``.
"""
import json
from dataclasses import replace
import re
from pathlib import Path

import pytest

import mha_kit as mk

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO / "tests" / "data" / "model_configs.json"
MODELS = json.loads(FACTS.read_text(encoding="utf-8"))["models"]

# JSON "name" -> preset name, written out by hand so a renamed model fails loudly.
PRESET_FOR = {
    "Transformer base (Vaswani et al. 2017)": "transformer-base",
    "GPT-2 small (124M)": "gpt2",
    "Meta Llama 3 8B": "llama-3-8b",
    "Meta Llama 3 70B": "llama-3-70b",
    "Meta Llama 3.1 405B": "llama-3.1-405b",
    "Mistral 7B v0.1": "mistral-7b",
    "Falcon-7B": "falcon-7b",
    "Falcon-40B": "falcon-40b",
    "DeepSeek LLM 67B": "deepseek-67b",
    "DeepSeek-V2 (236B total / 21B active, MoE)": "deepseek-v2",
    "DeepSeek-V2-Lite (16B total / 2.4B active, MoE)": "deepseek-v2-lite",
    "Qwen2.5-7B": "qwen2.5-7b",
    "Gemma 2 9B": "gemma-2-9b",
    "DeepSeek-V3 (671B total / 37B active, MoE)": "deepseek-v3",
    "Qwen3-30B-A3B (30.5B total / 3.3B active, MoE)": "qwen3-30b-a3b",
    "Meta Llama 3.2 1B": "llama-3.2-1b",
}

MLA_FIELDS = ["kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank"]
IDS = [m["name"] for m in MODELS]


def test_facts_file_is_inside_the_repository():
    # A plain clone has it: nothing here may read ../shared.
    assert FACTS.is_file() and REPO in FACTS.parents
    assert len(MODELS) == 16


def test_every_model_is_mapped_and_every_preset_is_covered():
    assert sorted(m["name"] for m in MODELS) == sorted(PRESET_FOR)
    assert sorted(PRESET_FOR.values()) == sorted(mk.PRESETS) == sorted(mk.MODEL_FACTS)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_preset_shape_matches_facts(model):
    cfg = mk.PRESETS[PRESET_FOR[model["name"]]]
    assert cfg.d_model == model["hidden_size"]
    assert cfg.num_heads == model["num_heads"]
    assert cfg.num_layers == model["num_layers"]
    assert cfg.variant == model["attention"]
    if model["attention"] == "mla":
        assert model["num_kv_heads"] is None  # nothing per head is cached
        assert isinstance(cfg, mk.LatentAttentionConfig)
        for field in MLA_FIELDS:
            assert getattr(cfg, field) == model[field], field
        assert cfg.v_head_dim == model["head_dim"]  # the paper's d_h
    else:
        assert isinstance(cfg, mk.AttentionConfig)
        assert cfg.num_kv_heads == model["num_kv_heads"]
        assert cfg.head_dim == model["head_dim"]


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_record_matches_facts(model):
    facts = mk.MODEL_FACTS[PRESET_FOR[model["name"]]]
    assert facts.context_length == model["max_context"]
    assert facts.sliding_window == model.get("sliding_window")  # absent in the file: full attention
    assert facts.vocab_size == model["vocab_size"]
    assert facts.intermediate_size == model["intermediate_size"]
    assert facts.total_params == model.get("total_params")  # absent in the file: derived or unknown
    assert facts.active_params == model.get("active_params")
    # mixtures of experts: the routed experts, top-k, one expert's width, shared experts, dense layers
    assert facts.num_experts == model.get("num_experts")
    assert facts.experts_per_token == model.get("experts_per_token")
    assert facts.moe_intermediate_size == (model.get("moe_intermediate_size") if facts.is_moe else None)
    assert facts.num_shared_experts == model.get("num_shared_experts", 0)
    assert facts.num_dense_layers == model.get("num_dense_layers", 0)


@pytest.mark.parametrize("name", list(mk.MODEL_FACTS))
def test_record_config_is_the_preset(name):
    facts = mk.MODEL_FACTS[name]
    assert facts.name == name
    assert facts.config is mk.PRESETS[name] is mk.get_preset(name)
    assert facts.config.name == name and facts.config.source == facts.source
    assert mk.get_model_facts(name) is facts


def _bib_keys():
    return set(re.findall(r"^@\w+\{([^,\s]+),", (REPO / "references.bib").read_text(encoding="utf-8"), re.M))


@pytest.mark.parametrize("name", list(mk.MODEL_FACTS))
def test_every_record_cites_a_bibliography_entry_and_a_source(name):
    facts = mk.MODEL_FACTS[name]
    assert facts.cite_keys and set(facts.cite_keys) <= _bib_keys()
    assert facts.source.strip() and facts.title.strip()


def test_cite_keys_split_the_cite_string():
    assert mk.MODEL_FACTS["llama-3-70b"].cite_keys == ("llama3", "llama3config")
    assert mk.MODEL_FACTS["mistral-7b"].cite == "mistral7b"


def test_only_the_window_models_have_a_window():
    windows = {name: f.sliding_window for name, f in mk.MODEL_FACTS.items() if f.sliding_window is not None}
    assert windows == {"mistral-7b": 4096, "gemma-2-9b": 4096}


def test_records_are_read_only():
    with pytest.raises(TypeError):
        mk.MODEL_FACTS["mine"] = mk.MODEL_FACTS["gpt2"]
    with pytest.raises(AttributeError):
        mk.MODEL_FACTS["gpt2"].context_length = 2048


def test_get_model_facts_unknown_name():
    with pytest.raises(ValueError, match=r"^unknown preset 'llama-4'; known presets: transformer-base, .*qwen3-30b-a3b, llama-3\.2-1b$"):
        mk.get_model_facts("llama-4")


# ---------------------------------------------------------------------------------------------
# Validation of a record
# ---------------------------------------------------------------------------------------------

def _record(**overrides):
    fields = dict(name="toy", title="Toy", cite="vaswani2017attention", source="made up",
                  config=mk.AttentionConfig(8, 2), context_length=16)
    return mk.ModelFacts(**{**fields, **overrides})


def test_record_names_its_config():
    facts = _record()
    assert facts.config.name == "toy" and facts.config.source == "made up"
    assert facts.config == mk.AttentionConfig(8, 2, name="toy")


def test_record_is_keyword_only():
    with pytest.raises(TypeError):
        mk.ModelFacts("toy", "Toy", mk.AttentionConfig(8, 2), "key", "src", 16)


@pytest.mark.parametrize("field", ["context_length", "sliding_window", "vocab_size", "intermediate_size"])
@pytest.mark.parametrize("bad", [0, -1, 4.0, True])  # zero, negative, float, bool
def test_record_bad_sizes(field, bad):
    with pytest.raises(ValueError, match=rf"^{field} must be a positive integer, got {bad!r}"):
        _record(**{field: bad})


def test_record_window_longer_than_context():
    with pytest.raises(ValueError, match=r"^sliding_window \(32\) must not exceed context_length \(16\)$"):
        _record(sliding_window=32)


@pytest.mark.parametrize("field", ["title", "cite", "source"])
def test_record_empty_strings(field):
    with pytest.raises(ValueError, match=rf"^{field} must be a non-empty string, got ' '$"):
        _record(**{field: " "})


def test_record_config_type_and_name():
    with pytest.raises(ValueError, match=r"^config must be an AttentionConfig or LatentAttentionConfig, got dict$"):
        _record(config={"d_model": 8})
    with pytest.raises(ValueError, match=r"^config.name \('other'\) must be None or the record's name \('toy'\)$"):
        _record(config=mk.AttentionConfig(8, 2, name="other"))


def test_record_moe_fields_go_together():
    with pytest.raises(ValueError, match=r"^toy: num_experts, experts_per_token and moe_intermediate_size go together"):
        _record(num_experts=8, experts_per_token=2)
    with pytest.raises(ValueError, match=r"^experts_per_token \(9\) must not exceed num_experts \(8\)$"):
        _record(num_experts=8, experts_per_token=9, moe_intermediate_size=4)
    with pytest.raises(ValueError, match=r"^num_dense_layers \(1\) must be below num_layers \(1\)$"):
        _record(num_experts=8, experts_per_token=2, moe_intermediate_size=4, num_dense_layers=1)
    with pytest.raises(ValueError, match=r"^num_shared_experts must be a non-negative integer, got -1$"):
        _record(num_shared_experts=-1)


def test_moe_layers():
    assert mk.MODEL_FACTS["deepseek-v3"].moe_layers == 61 - 3
    assert mk.MODEL_FACTS["qwen3-30b-a3b"].moe_layers == 48
    assert mk.MODEL_FACTS["llama-3-70b"].moe_layers == 0 and not mk.MODEL_FACTS["llama-3-70b"].is_moe


def test_record_unknown_param_layout():
    with pytest.raises(ValueError, match=r"^param_layout must be None or one of \('llama',\), got 'gpt'$"):
        _record(param_layout="gpt")


# ---------------------------------------------------------------------------------------------
# Dense parameter count from a record
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    # V*d*2 (embeddings, untied head) + L*(attention + SwiGLU 3*d*d_ff + 2 norms) + final norm
    ("llama-3-8b", 2 * 128256 * 4096 + 32 * ((2 * 4096 * 32 + 2 * 4096 * 8) * 128 + 3 * 4096 * 14336 + 2 * 4096) + 4096),
    ("mistral-7b", 2 * 32000 * 4096 + 32 * ((2 * 4096 * 32 + 2 * 4096 * 8) * 128 + 3 * 4096 * 14336 + 2 * 4096) + 4096),
    ("llama-3-70b", 2 * 128256 * 8192 + 80 * ((2 * 8192 * 64 + 2 * 8192 * 8) * 128 + 3 * 8192 * 28672 + 2 * 8192) + 8192),
])
def test_dense_decoder_params(name, expected):
    assert mk.dense_decoder_params(mk.MODEL_FACTS[name]) == expected


@pytest.mark.parametrize("name, billions, digits", [("llama-3-8b", 8.03, 2), ("mistral-7b", 7.24, 2), ("llama-3-70b", 70.6, 1)])
def test_dense_decoder_params_near_the_published_totals(name, billions, digits):
    # The totals the checkpoints' model pages give: 8.03B, 7.24B and 70.6B parameters.
    assert round(mk.dense_decoder_params(mk.MODEL_FACTS[name]) / 1e9, digits) == billions


def test_dense_decoder_params_refuses_other_layouts():
    with pytest.raises(ValueError, match=r"^gemma-2-9b: dense_decoder_params needs param_layout 'llama'.*got param_layout=None$"):
        mk.dense_decoder_params(mk.MODEL_FACTS["gemma-2-9b"])
    with pytest.raises(ValueError, match=r"^expected a ModelFacts record \(mk.MODEL_FACTS\[name\]\), got AttentionConfig$"):
        mk.dense_decoder_params(mk.PRESETS["llama-3-8b"])


# ---------------------------------------------------------------------------------------------
# Logit soft-capping (Gemma 2) and the local/global layer layouts
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_softcaps_match_facts(model):
    facts = mk.MODEL_FACTS[PRESET_FOR[model["name"]]]
    assert facts.attn_logit_softcap == model.get("attn_logit_softcapping")  # absent in the file: no cap
    assert facts.final_logit_softcap == model.get("final_logit_softcapping")


def test_only_gemma_2_caps_its_logits():
    caps = {name: (f.attn_logit_softcap, f.final_logit_softcap) for name, f in mk.MODEL_FACTS.items()
            if f.attn_logit_softcap is not None or f.final_logit_softcap is not None}
    assert caps == {"gemma-2-9b": (50.0, 30.0)}


@pytest.mark.parametrize("bad", [0, -30.0, True, "30", float("inf")])
def test_softcap_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match=rf"^final_logit_softcap must be None or a positive number, got {bad!r}$"):
        replace(mk.MODEL_FACTS["gemma-2-9b"], final_logit_softcap=bad)


def test_layer_layouts():
    gemma2, gemma3 = mk.LAYER_LAYOUTS["gemma-2"], mk.LAYER_LAYOUTS["gemma-3"]
    assert (gemma2.local_per_global, gemma2.window) == (1, 4096)
    assert (gemma3.local_per_global, gemma3.window) == (5, 1024)
    assert gemma2.window == mk.MODEL_FACTS["gemma-2-9b"].sliding_window  # one fact, two records that agree
    assert gemma2.global_layers(42) == 21 and gemma3.global_layers(42) == 7 and gemma3.global_layers(62) == 10
    keys = _bib_keys()
    for layout in mk.LAYER_LAYOUTS.values():
        assert {k.strip() for k in layout.cite.split(",")} <= keys and "sec. 2" in layout.source


def test_layer_layout_is_validated():
    with pytest.raises(ValueError, match=r"^window must be a positive integer, got 0$"):
        mk.LayerLayout(name="x", title="X", local_per_global=1, window=0, cite="gemma2", source="made up")
    with pytest.raises(ValueError, match=r"^num_layers must be a positive integer"):
        mk.LAYER_LAYOUTS["gemma-3"].global_layers(0)
