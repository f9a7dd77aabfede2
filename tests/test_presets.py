"""Every model in shared/facts/model_configs.json has a preset with exactly its shape.

In CI the repository is cloned next to a copy of ``shared/``, so the file is looked up at
``<repo root>/../shared/facts/model_configs.json``.
"""
import json
from pathlib import Path

import pytest

import mha_kit as mk

FACTS = Path(__file__).resolve().parents[2] / "shared" / "facts" / "model_configs.json"

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
}

MLA_FIELDS = ["kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank"]


def _models():
    if not FACTS.is_file():
        return []
    return json.loads(FACTS.read_text(encoding="utf-8"))["models"]


MODELS = _models()
needs_facts = pytest.mark.skipif(not MODELS, reason=f"model facts not found at {FACTS} (shared/ is not next to the repo)")


@needs_facts
def test_every_model_is_mapped_and_every_preset_is_covered():
    assert sorted(m["name"] for m in MODELS) == sorted(PRESET_FOR)
    assert sorted(PRESET_FOR.values()) == sorted(mk.PRESETS)


@needs_facts
@pytest.mark.parametrize("model", MODELS, ids=[m["name"] for m in MODELS])
def test_preset_matches_facts(model):
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


@pytest.mark.parametrize("name", list(mk.PRESETS))
def test_every_preset_has_a_source(name):
    source = mk.PRESETS[name].source
    assert isinstance(source, str) and source.strip()


def test_facts_path_is_next_to_the_repo():
    # The lookup is relative to the repository root, never to the working directory.
    repo_root = Path(__file__).resolve().parents[1]
    assert FACTS == repo_root.parent / "shared" / "facts" / "model_configs.json"
    assert (repo_root / "mha_kit" / "config.py").is_file()
