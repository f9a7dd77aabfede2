"""Sections serving_reliability-kubernetes-deploy and serving_reliability-model-servers of "Overload, failures and
rollouts": a Kubernetes walk-through with its cold start and autoscaling lead time, KServe's modes, model servers.

The weights are recounted from Llama 3's published shapes (meta-llama/llama-models: 8B d=4096, 32 layers, FFN
14,336; 70B d=8192, 80 layers, FFN 28,672; both 8 KV heads of 128, vocabulary 128,256, untied embeddings); the
cold start, lead time, spare replicas and startup probe follow from the cell's stated assumptions, and the
per-replica rate (batch, decode step and request rate) is recomputed here from the shapes and the H100 datasheet,
written out, not through mha_kit, and compared with the table, the brownout ladder and the glue.
"""
import math

import chapter_outputs
import pytest

NB = chapter_outputs.notebook("serving_reliability")
TABLE = chapter_outputs.printed(NB, "STORE_BPS = 2 * GB")
STORE, NVME, CAPTURE, METRIC, RAMP, PERIOD, MARGIN = 2e9, 8e9, 60, 30, 10, 10, 2  # the cell's assumptions
OUT, MAX_SEQS, H100_BW = 1000, 256, 3.35e12  # answer tokens; vLLM's default batch cap; H100 SXM HBM3 bytes/s
PROMPT, H100_HBM, H100_PEAK, SHARE = 2000, 80e9, 989e12, 0.9  # prompt; H100 bytes, dense bf16 FLOP/s; vLLM's share
VOCAB, KV_WIDTH = 128_256, 8 * 128
SHAPES = {"8": (4096, 32, 14336, 1), "70": (8192, 80, 28672, 8)}  # d, layers, FFN, GPUs of a replica


def llama3_params(d, layers, ffn, vocab=128_256, kv_width=8 * 128):
    """Dense Llama 3 parameters: q, o (d x d), k, v (d x kv_width), SwiGLU (3 d ffn), two norms a layer, final norm,
    untied embedding and output head."""
    layer = 2 * d * d + 2 * d * kv_width + 3 * d * ffn + 2 * d
    return layers * layer + d + 2 * vocab * d


def replica(key, prompt=PROMPT, out=OUT):
    """(batch, decode step s, requests/s) of one replica, decode-bound: as many sequences of prompt + out tokens as
    the cache beside the weights holds (at most 256), a decode step of that batch with each sequence half-way
    through its answer (weights, the cache read and the new tokens' cache, against the FLOPs), and a request
    costing its prefill at the peak plus out steps shared by the batch. The 70B replica is an ideal TP8: 8x the
    memory, bandwidth and FLOP/s."""
    d, layers, ffn, gpus = SHAPES[key]
    params = llama3_params(d, layers, ffn)
    weights, kv_token = 2 * params, 2 * layers * KV_WIDTH * 2  # bf16 bytes; K and V a layer, bf16
    hbm, bw, peak = gpus * H100_HBM, gpus * H100_BW, gpus * H100_PEAK
    batch = min(MAX_SEQS, (int(SHARE * hbm) - weights) // ((prompt + out) * kv_token))
    cached = batch * (prompt + out // 2)
    nbytes = weights + kv_token * (cached + batch)
    flops = 2 * (params - VOCAB * d) * batch + 4 * d * layers * cached  # weights (no lookup table); QK and PV
    step = max(nbytes / bw, flops / peak)
    proj = 2 * d * d + 2 * d * KV_WIDTH
    prefill = 2 * prompt * layers * (proj + 3 * d * ffn) + 2 * VOCAB * d + layers * 2 * d * prompt * (prompt + 1)
    return batch, step, 1 / (prefill / peak + out * step / batch)


def rows():
    """{"8" | "70": (weights GB, store s, NVMe s, cold s, lead s, req/s, spare, probe)} from the printed table."""
    out = {}
    for line in TABLE.splitlines()[1:]:
        parts = line.split()
        key = parts[2]  # "Llama 3 8B" -> "8B"
        nums = [p.rstrip("sGB") for p in parts[4:]]
        out[key[:-1]] = tuple(float(x) for x in nums[:6]) + (int(nums[6]), int(nums[7]))
    return out


ROWS = rows()


def test_params_are_the_published_counts():
    assert llama3_params(*SHAPES["8"][:3]) == 8_030_261_248
    assert llama3_params(*SHAPES["70"][:3]) == 70_553_706_496


@pytest.mark.parametrize("key", ["8", "70"])
def test_cold_start_lead_time_and_probe(key):
    weights = 2 * llama3_params(*SHAPES[key][:3])
    gb, load, nvme, cold, lead, _, _, probe = ROWS[key]
    assert f"{gb:.1f}" == f"{weights / 1e9:.1f}"
    want_cold = weights / STORE + CAPTURE
    assert (load, nvme, cold, lead) == (round(weights / STORE), round(weights / NVME), round(want_cold),
                                        round(want_cold + METRIC))
    assert probe == math.ceil(MARGIN * want_cold / PERIOD)
    for name, value in (("load", weights / STORE), ("nvme", weights / NVME), ("cold", want_cold),
                        ("lead", want_cold + METRIC), ("probe", probe), ("weights", weights / 1e9)):
        assert chapter_outputs.glued(NB, f"sr_k8s_{name}{key}") == f"{value:.0f}"


@pytest.mark.parametrize("key", ["8", "70"])
def test_spare_replicas_cover_the_ramp(key):
    _, _, _, cold, _, rate, spare, _ = ROWS[key]
    lead = 2 * llama3_params(*SHAPES[key][:3]) / STORE + CAPTURE + METRIC
    for r in (rate - 0.05, rate + 0.05):  # the printed rate is rounded to 0.1
        assert spare == math.ceil(RAMP * lead / 60 / r)
    assert chapter_outputs.glued(NB, f"sr_k8s_spare{key}") == str(spare)
    assert chapter_outputs.glued(NB, f"sr_k8s_spare_gpus{key}") == str(spare * SHAPES[key][3])
    assert chapter_outputs.glued(NB, f"sr_k8s_rate{key}") == f"{rate:.1f}"
    # a replica can never beat its decode floor: every step reads all weights, at most 256 sequences share it
    weights, gpus = 2 * llama3_params(*SHAPES[key][:3]), SHAPES[key][3]
    assert rate < MAX_SEQS / (OUT * weights / (gpus * H100_BW))


@pytest.mark.parametrize("key", ["8", "70"])
def test_rate_is_recomputed(key):
    rate = replica(key)[2]
    assert ROWS[key][5] == float(f"{rate:.1f}")
    assert chapter_outputs.glued(NB, f"sr_k8s_rate{key}") == f"{rate:.1f}"


def test_brownout_ladder_is_recomputed():
    """Every ladder row's batch, TPOT, rate and capacity against the recomputation; its full-service row is the 8B
    table row's rate."""
    ladder = chapter_outputs.printed(NB, "ladder = ((").splitlines()[1:]
    steps = ((2000, 1000), (2000, 500), (2000, 250), (1000, 250))
    assert len(ladder) == len(steps)
    base = replica("8")[2]
    for line, (prompt, out) in zip(ladder, steps):
        *_, p, o, batch, tpot, rate, cap = line.split()
        want_batch, want_step, want_rate = replica("8", prompt, out)
        assert (int(p.replace(",", "")), int(o.replace(",", ""))) == (prompt, out), line
        assert int(batch) == want_batch, line
        assert tpot == f"{1e3 * want_step:.1f}ms", line
        assert (rate, cap) == (f"{want_rate:.1f}", f"{want_rate / base:.1f}x"), line
        assert chapter_outputs.glued(NB, f"sr_brown_{out}_{prompt}") == f"{want_rate / base:.1f}"
    assert float(ladder[0].split()[-2]) == ROWS["8"][5]


def test_kubernetes_section_text():
    text = chapter_outputs.section(NB, "serving_reliability-kubernetes-deploy", end="serving_reliability-model-servers")
    assert f"failureThreshold: {ROWS['70'][7]}" in text  # the manifest's probe is the computed one
    for word in ("nvidia.com/gpu", "/dev/shm", "medium: Memory", "startupProbe", "/health", "vllm:num_requests_waiting",
                 "vllm:kv_cache_usage_perc", "KEDA", "LeaderWorkerSet", "storage initializer", "Standard mode",
                 "RawDeployment", "scale-to-zero", "spec.canary", "assumption", "ReadOnlyMany", "BestEffort",
                 "autoscalerClass: keda", "the larger of 100%", "When do you reach for\nKServe vs a custom Deployment + HPA?"):
        assert word in text, word
    manifest = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    # the one-string command line must go through a shell, as in vLLM's guide; CPU/memory requests avoid BestEffort
    assert manifest.index('command: ["/bin/sh", "-c"]') < manifest.index("args: [\"vllm serve")
    assert "requests: {cpu:" in manifest and "memory:" in manifest.split("requests:", 1)[1].split("\n", 1)[0]
    assert "7 August" not in text
    for ref in ("serving_reliability-rollouts", "serving_reliability-drain", "multi_tenant_serving-cold-start",
                "serving_operations-fleet-frameworks"):
        assert f"{{ref}}`{ref}`" in text
    for key in ("k8sschedulegpus", "vllmk8sguide", "k8shpa", "kservemodes", "kservestorage", "kservekpa", "kserve020",
                "vllmmetrics", "llmdautoscaling", "kservehpa", "k8sqos", "k8spvaccess"):
        assert f"`{key}" in text or f",{key}`" in text, key
    assert text.count(":class: dropdown\n") == 2 and "followup" not in text
    assert text.count("```{admonition} In the interview") == 1


def test_model_servers_section_text():
    text = chapter_outputs.section(NB, "serving_reliability-model-servers", end="serving_reliability-gpu-scheduling")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| | TorchServe | Triton | BentoML |" and len(table) == 7
    assert all(line.count("|") == 5 for line in table)
    for word in ("Limited Maintenance", "max_batch_delay", "max_latency_ms", "vllm serve", "vLLM and TensorRT-LLM",
                 "max_batch_size: 0", "Compare TorchServe, Triton, and BentoML: when does each fit?",
                 "containerise to OCI images"):
        assert word in text, word
    for key in ("torchservereadme", "tritonserver", "bentomlbatching", "bentomlvllm", "tritonvllmconfig"):
        assert f"`{key}" in text or f",{key}`" in text, key
    for ref in ("serving_operations-triton-server", "serving_operations-fleet-frameworks",
                "serving_reliability-kubernetes-deploy"):
        assert f"{{ref}}`{ref}`" in text
    assert text.count(":class: dropdown\n") == 1
    assert "7 August 2025" not in text  # the archive date is GitHub metadata no stored source confirms
