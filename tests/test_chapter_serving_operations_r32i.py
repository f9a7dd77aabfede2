"""Section serving_operations-rlhf-pipeline, recomputed from the formulas.

Mistral 7B's shape written out (config.json: 32 layers, width 4096, 32 query heads and 8 KV heads of 128,
FFN 14,336, vocabulary 32,000, untied embeddings); the reward model and critic are the same backbone with a
d x 1 head in place of the LM head; bf16 = 2 bytes. Which models each stage holds: InstructGPT sec. 3.5 (PPO:
policy, SFT reference, RM, value function), DPO sec. 4 (policy and reference), DeepSeekMath sec. 4.1 (GRPO:
no value model; 64 samples per question in sec. 4.2).
"""
import re

import chapter_outputs

L, D, H, H_KV, D_H, D_FF, V = 32, 4096, 32, 8, 128, 14336, 32000
BF16 = 2
ADAM = 16  # mixed-precision Adam per trainable parameter: bf16 weight + bf16 grad + fp32 master, m, v


def policy_params():
    per_layer = D * H * D_H + 2 * D * H_KV * D_H + H * D_H * D + 3 * D * D_FF + 2 * D  # attention, SwiGLU, 2 norms
    return L * per_layer + 2 * V * D + D  # embedding, untied LM head, final norm


def scalar_params():
    return policy_params() - V * D + D


def printed():
    return chapter_outputs.printed(chapter_outputs.notebook("serving_operations"), 'STAGES = {')


def test_parameter_counts():
    assert policy_params() == 7_241_732_096
    assert f"policy {policy_params():,} parameters, reward/critic {scalar_params():,};" in printed()


def test_weight_bytes_per_stage():
    p, s = policy_params(), scalar_params()
    expected = {"SFT": p, "RM training": s, "PPO": 2 * p + 2 * s, "DPO": 2 * p, "GRPO": 2 * p + s}
    text = printed()
    for stage, n in expected.items():
        row = next(line for line in text.splitlines() if line.startswith(stage + " "))
        assert f" {n * BF16 / 1e9:5.1f} GB" in row, row
    assert "rollouts yes" in next(r for r in text.splitlines() if r.startswith("PPO "))
    assert "rollouts no" in next(r for r in text.splitlines() if r.startswith("DPO "))
    assert "64 in DeepSeekMath" in next(r for r in text.splitlines() if r.startswith("GRPO "))


def test_glued_values():
    nb = chapter_outputs.notebook("serving_operations")
    p, s = policy_params(), scalar_params()
    assert chapter_outputs.glued(nb, "so_rlhf_ppo_gb") == f"{(2 * p + 2 * s) * BF16 / 1e9:.0f} GB" == "57 GB"
    assert chapter_outputs.glued(nb, "so_rlhf_grpo_gb") == f"{(2 * p + s) * BF16 / 1e9:.0f} GB" == "43 GB"
    assert chapter_outputs.glued(nb, "so_rlhf_dpo_gb") == f"{2 * p * BF16 / 1e9:.0f} GB" == "29 GB"


def test_critic_is_what_grpo_drops():
    text = printed()
    models = {m: re.split(r"\s{2,}", r)[1] for r in text.splitlines() for m in ("PPO", "GRPO") if r.startswith(m + " ")}
    assert "critic" in models["PPO"] and "critic" not in models["GRPO"]
    assert "reference" in models["GRPO"]  # the KL term still needs it


def test_with_adam_per_stage():
    p, s = policy_params(), scalar_params()
    expected = {"SFT": ADAM * p, "RM training": ADAM * s, "PPO": ADAM * (p + s) + BF16 * (p + s),
                "DPO": ADAM * p + BF16 * p, "GRPO": ADAM * p + BF16 * (p + s)}
    text = printed()
    for stage, n in expected.items():
        row = next(line for line in text.splitlines() if line.startswith(stage + " "))
        assert f"with Adam {n / 1e9:5.1f} GB" in row, row
    nb = chapter_outputs.notebook("serving_operations")
    assert chapter_outputs.glued(nb, "so_rlhf_ppo_adam_gb") == f"{expected['PPO'] / 1e9:.0f} GB" == "258 GB"
    assert chapter_outputs.glued(nb, "so_rlhf_grpo_adam_gb") == f"{expected['GRPO'] / 1e9:.0f} GB" == "145 GB"
    assert chapter_outputs.glued(nb, "so_rlhf_dpo_adam_gb") == f"{expected['DPO'] / 1e9:.0f} GB" == "130 GB"
    assert min(expected.values()) / 1e9 > 80  # no stage trains a 7B policy on one 80 GB GPU unsharded
    assert "1 (InstructGPT)" in next(r for r in text.splitlines() if r.startswith("PPO "))
