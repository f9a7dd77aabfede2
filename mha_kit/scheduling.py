"""Batching requests on one engine: a small, deterministic scheduler simulation.

A server runs the model in *steps* (iterations). One step computes some prompt tokens (prefill)
and one new token for every sequence that is already generating (decode); how long it takes is
a function of that work, ``step_seconds(prefill_tokens, decode_seqs, cached_tokens)``. The
scheduler decides who takes part in each step:

* ``policy="static"``, request-level batching: a batch is admitted only into an empty engine and
  runs until its last request has finished, so a request that arrives meanwhile waits.
* ``policy="continuous"``, iteration-level scheduling (Orca): the batch is rebuilt every step; a
  finished request leaves at once and a waiting one joins as soon as the token budget allows.
  Every step first takes one token of each decoding request, then prompt tokens in what is left
  of the budget (decode-first, as vLLM V1 schedules; Sarathi-Serve's stall-free batching).
* ``policy="prefill_first"``, iteration-level too, but a step with prompt tokens to compute
  holds only those, and running requests decode only in steps without any (vLLM V0's default;
  SGLang's unless ``--enable-mixed-chunk``).

A step holds at most ``token_budget`` tokens (vLLM's ``max_num_batched_tokens``) and at most
``max_seqs`` running requests. Prompts already started come before new requests, which are
admitted in arrival order. With ``chunked_prefill=True`` a prompt is cut to the budget that is
left (Sarathi-Serve's chunked prefills); without it, a prompt runs whole in one step.

Times are seconds from the start of the simulation. A request's first output token comes out at
the end of the step that finishes its prompt; every later step it decodes in gives one more.

Book: chapter "Continuous batching and chunked prefill".
"""
from __future__ import annotations

import bisect
import itertools
import math
import numbers
import statistics
from dataclasses import dataclass

from .config import check_positive_int
from .counting import attention_macs, dense_decoder_params, kv_cache_bytes_per_token
from .hardware import Accelerator
from .models import ModelFacts
from .roofline import ridge_point
from .units import elements_to_bytes

POLICIES = ("continuous", "prefill_first", "static")


@dataclass(frozen=True)
class BatchStep:
    """One step of the engine: what it computed and how long it took.

    Book: chapter "Continuous batching and chunked prefill".
    """

    start: float  # seconds since the simulation began
    seconds: float  # duration, from step_seconds
    prefill: tuple  # ((request index, prompt tokens computed in this step), ...)
    decode: tuple  # request indices that each decoded one token
    cached_tokens: int  # tokens already in the KV cache that the step's attention reads

    @property
    def prefill_tokens(self) -> int:
        """Prompt tokens computed in this step, all requests."""
        return sum(tokens for _, tokens in self.prefill)

    @property
    def num_tokens(self) -> int:
        """Tokens the step computes: its prefill tokens plus one per decoding sequence."""
        return self.prefill_tokens + len(self.decode)


@dataclass(frozen=True)
class RequestLatency:
    """What one request saw, in seconds.

    Book: chapter "Continuous batching and chunked prefill".
    """

    ttft: float  # time to first token: first token time - arrival
    tpot: float  # time per output token: mean gap between successive tokens (nan with one token)
    max_itl: float  # longest inter-token gap, the stall a reader notices (nan with one token)
    finish: float  # time the last token came out, from the start of the simulation


@dataclass(frozen=True)
class _Request:
    arrival: float  # seconds
    prompt: int  # prompt tokens
    output: int  # output tokens, the first one included


def _check_request(i, request):
    try:
        arrival, prompt, output = request
    except (TypeError, ValueError):
        raise ValueError(f"request {i} must be (arrival_s, prompt_tokens, output_tokens), got {request!r}") from None
    if isinstance(arrival, bool) or not isinstance(arrival, numbers.Real) or not 0 <= arrival < math.inf:
        raise ValueError(f"arrival_s of request {i} must be a finite number of seconds >= 0, got {arrival!r}")
    return _Request(float(arrival), check_positive_int(f"prompt_tokens of request {i}", prompt),
                    check_positive_int(f"output_tokens of request {i}", output))


def _check_inputs(requests, step_seconds, token_budget, chunked_prefill, policy, max_seqs):
    reqs = [_check_request(i, r) for i, r in enumerate(requests)]
    if not reqs:
        raise ValueError("requests must hold at least one (arrival_s, prompt_tokens, output_tokens), got none")
    if not callable(step_seconds):
        raise ValueError(f"step_seconds must be callable, got {type(step_seconds).__name__}")
    budget = check_positive_int("token_budget", token_budget)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    seqs = budget if max_seqs is None else check_positive_int("max_seqs", max_seqs)
    if seqs > budget:
        raise ValueError(f"max_seqs ({seqs}) must not exceed token_budget ({budget}): "
                         "every running request decodes one token per step")
    longest = max(r.prompt for r in reqs)
    if not chunked_prefill and longest > budget:
        raise ValueError(f"without chunked prefill every prompt must fit the token budget: "
                         f"a prompt of {longest} tokens exceeds token_budget ({budget})")
    return reqs, budget, seqs


class _Engine:
    """The state of the simulated server between steps."""

    def __init__(self, reqs, budget, chunked, policy, max_seqs, records=True):
        self.reqs, self.budget, self.chunked, self.policy, self.max_seqs = reqs, budget, chunked, policy, max_seqs
        self.records = records  # build a BatchStep per step (batching_steps), or not (simulate_batching)
        self.queue = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival, i))  # not yet admitted, FCFS
        self.running = []  # admitted and unfinished, in admission order
        self.prefilling, self.decoding = [], []  # the running requests before and after their prompt's end
        self.rank = [0] * len(reqs)  # order of admission
        self.computed = [0] * len(reqs)  # prompt tokens computed so far
        self.first = [0.0] * len(reqs)  # time of each request's first output token
        self.start = [0] * len(reqs)  # index in decode_times of each request's first decode step
        self.decode_times = []  # end time of every step that decoded: each decoding request's next token
        self.finishing = {}  # len(decode_times) -> requests whose last token that decode step gives
        self.context = 0  # keys the decoding requests read: prompt + tokens out - 1 each
        self.time = 0.0

    def _arrived(self):
        """Index of the first request in the queue if it has arrived by now, else None."""
        return self.queue[0] if self.queue and self.reqs[self.queue[0]].arrival <= self.time else None

    def _take(self, i, budget):
        """Prompt tokens of request ``i`` that fit ``budget``: a chunk, or the whole rest or nothing."""
        rest = self.reqs[i].prompt - self.computed[i]
        if self.chunked:
            return min(rest, budget)
        return rest if rest <= budget else 0

    def _admit(self, prefill, budget):
        """Move arrived requests into the batch while they fit; a static batch forms only when empty."""
        static = self.policy == "static"
        if static and self.running:
            return budget
        while (i := self._arrived()) is not None and len(self.running) < self.max_seqs:
            take = self._take(i, budget)
            if take == 0 and not (static and self.chunked):  # a static batch may wait for its chunks
                break
            self.running.append(self.queue.pop(0))
            self.prefilling.append(i)
            self.rank[i] = len(self.rank) - len(self.queue)  # admissions so far
            if take:
                prefill.append((i, take))
                budget -= take
        return budget

    def _prefill(self, budget):
        """Prompt chunks within ``budget``: prompts already started, then new requests."""
        prefill = []
        for i in self.prefilling:
            if take := self._take(i, budget):
                prefill.append((i, take))
                budget -= take
        self._admit(prefill, budget)
        return prefill

    def plan(self):
        """``(prefill, decode)`` of the next step under the policy."""
        decode = self.decoding
        prefill_first = self.policy == "prefill_first"
        prefill = self._prefill(self.budget if prefill_first else self.budget - len(decode))
        if prefill_first and prefill:
            decode = []  # running requests wait while any prompt is computed
        return tuple(prefill), tuple(decode)

    def step(self, step_seconds):
        """Run one step (after idling until the next arrival if nothing is running) and record it."""
        if not self.running and self._arrived() is None:
            self.time = self.reqs[self.queue[0]].arrival
        prefill, decode = self.plan()
        cached = sum(self.computed[i] for i, _ in prefill) + (self.context if decode else 0)  # the last token is the new one
        seconds = _check_seconds(step_seconds, sum(t for _, t in prefill), len(decode), cached)
        record = BatchStep(self.time, seconds, prefill, decode, cached) if self.records else None
        self.time += seconds
        done = []
        if decode:  # every decoding request gives a token
            self.decode_times.append(self.time)
            self.context += len(decode)
            done += self.finishing.pop(len(self.decode_times), [])
        for i, tokens in prefill:
            self.computed[i] += tokens
            if self.computed[i] == self.reqs[i].prompt:  # the prompt's last position gives the first output token
                self.prefilling.remove(i)
                self.first[i], self.start[i] = self.time, len(self.decode_times)
                if self.reqs[i].output == 1:
                    done.append(i)
                    continue
                self.finishing.setdefault(self.start[i] + self.reqs[i].output - 1, []).append(i)
                bisect.insort(self.decoding, i, key=self.rank.__getitem__)
                self.context += self.reqs[i].prompt
        if done:
            finished = set(done)
            self.running = [i for i in self.running if i not in finished]
            for i in done:
                if self.reqs[i].output > 1:
                    self.decoding.remove(i)
                    self.context -= self.reqs[i].prompt + self.reqs[i].output - 1
        return record

    def latencies(self):
        """One RequestLatency per request; its token gaps are sliced from the gaps between all decode steps.

        Request ``i``'s tokens come out at ``first[i]`` and then at ``output - 1`` consecutive decode
        steps from ``start[i]``, so its gaps after the first are ``between[start[i]:...]``.
        """
        times = self.decode_times
        between = [b - a for a, b in itertools.pairwise(times)]  # between[j] = times[j + 1] - times[j]
        out = []
        for i, r in enumerate(self.reqs):
            s, first = self.start[i], self.first[i]
            gaps = [times[s] - first] + between[s:s + r.output - 2] if r.output > 1 else []
            out.append(_latency(r.arrival, first, times[s + r.output - 2] if gaps else first, gaps))
        return out


def _check_seconds(step_seconds, prefill_tokens, decode_seqs, cached_tokens):
    seconds = step_seconds(prefill_tokens, decode_seqs, cached_tokens)
    if type(seconds) is float and 0 < seconds < math.inf:  # the common case, without the slower ABC checks
        return seconds
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real) or not 0 < seconds < math.inf:
        raise ValueError(f"step_seconds({prefill_tokens}, {decode_seqs}, {cached_tokens}) returned {seconds!r}: "
                         "it must be a positive, finite number of seconds")
    return float(seconds)


def _run(requests, step_seconds, token_budget, chunked_prefill, policy, max_seqs, records=True):
    reqs, budget, seqs = _check_inputs(requests, step_seconds, token_budget, chunked_prefill, policy, max_seqs)
    engine = _Engine(reqs, budget, bool(chunked_prefill), policy, seqs, records)
    steps = []
    while engine.queue or engine.running:
        steps.append(engine.step(step_seconds))
    return reqs, steps, engine


def batching_steps(requests, step_seconds, token_budget, chunked_prefill=True, policy="continuous", max_seqs=None):
    """Every step the scheduler runs for ``requests``, in order.

    Parameters are those of :func:`simulate_batching`.

    Returns
    -------
    list of BatchStep

    Book: chapter "Continuous batching and chunked prefill".
    """
    return _run(requests, step_seconds, token_budget, chunked_prefill, policy, max_seqs)[1]


def simulate_batching(requests, step_seconds, token_budget, chunked_prefill=True, policy="continuous",
                      max_seqs=None):
    """Latencies of ``requests`` served by one engine under a batching policy.

    Parameters
    ----------
    requests : sequence of (float, int, int)
        ``(arrival_s, prompt_tokens, output_tokens)`` per request; ``output_tokens`` counts the
        first token, which the prompt's last step produces.
    step_seconds : callable
        ``step_seconds(prefill_tokens, decode_seqs, cached_tokens) -> seconds`` of one step:
        prompt tokens computed, sequences decoding one token, and tokens already in the KV cache
        that the step's attention reads (:func:`roofline_step` builds one from a GPU and a model).
    token_budget : int
        Most tokens one step may compute, prefill and decode together.
    chunked_prefill : bool
        Cut prompts into chunks that fit the budget left after the decodes; otherwise a prompt
        runs whole in one step and must fit ``token_budget``.
    policy : {"continuous", "prefill_first", "static"}
        Iteration-level scheduling with decodes in every step, iteration-level scheduling that
        pauses decodes while prompts are computed, or request-level batching (admission into an
        empty engine).
    max_seqs : int, optional
        Most requests admitted at once (vLLM's ``max_num_seqs``); at most, and by default,
        ``token_budget``.

    Returns
    -------
    list of RequestLatency
        One record per request, in the order of ``requests``.

    Book: chapter "Continuous batching and chunked prefill".
    """
    return _run(requests, step_seconds, token_budget, chunked_prefill, policy, max_seqs, records=False)[2].latencies()


@dataclass(frozen=True)
class LatencySummary:
    """Latency of a whole workload, in seconds: what a serving dashboard shows.

    Book: chapter "Continuous batching and chunked prefill".
    """

    median_ttft: float  # median over requests of the time to first token
    median_tpot: float  # median over requests (with two or more tokens) of the time per output token
    worst_itl: float  # longest inter-token gap any request saw
    last_finish: float  # when the last token of the workload came out


def summarize_latencies(latencies) -> LatencySummary:
    """Medians of TTFT and TPOT, the worst inter-token gap and the last finish of ``latencies``.

    Requests with one output token have no inter-token gap and are left out of the TPOT median
    and the worst gap; ``nan`` when no request has two tokens.

    Book: chapter "Continuous batching and chunked prefill".
    """
    latencies = list(latencies)
    if not latencies or not all(isinstance(r, RequestLatency) for r in latencies):
        raise ValueError("latencies must be a non-empty sequence of RequestLatency (from mk.simulate_batching)")
    gaps = [r for r in latencies if not math.isnan(r.tpot)]
    return LatencySummary(median_ttft=statistics.median(r.ttft for r in latencies),
                          median_tpot=statistics.median(r.tpot for r in gaps) if gaps else math.nan,
                          worst_itl=max((r.max_itl for r in gaps), default=math.nan),
                          last_finish=max(r.finish for r in latencies))


def _latency(arrival, first, last, gaps):
    tpot = sum(gaps) / len(gaps) if gaps else math.nan  # gaps: between successive output tokens
    return RequestLatency(ttft=first - arrival, tpot=tpot, max_itl=max(gaps, default=math.nan), finish=last)


@dataclass(frozen=True)
class RooflineStep:
    """``step_seconds`` of one model on one GPU from the roofline, a callable.

    A step reads the weights once, reads the ``cached_tokens`` of KV cache and writes the new
    tokens' keys and values; it does 2 FLOPs per weight per new token and the attention
    FLOPs of one query against each cached token. It lasts ``max(bytes / bandwidth, FLOPs /
    peak)``. A prompt chunk's attention among its own tokens is left out: it grows with the
    square of the chunk, and the chapter states how much it is for its longest prompt.

    Book: chapter "Continuous batching and chunked prefill".
    """

    weight_bytes: int  # all weights, read once per step
    kv_bytes_per_token: int  # all layers, keys and values
    flops_per_token: int  # 2 x the weights that multiply a new token
    flops_per_cached_token: int  # attention of one query against one cached token, all layers
    bandwidth: float  # bytes/s
    flop_rate: float  # FLOP/s

    def __call__(self, prefill_tokens, decode_seqs, cached_tokens) -> float:
        counts = (prefill_tokens, decode_seqs, cached_tokens)
        if not all(type(n) is int and n >= 0 for n in counts) and any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0 for n in counts):
            raise ValueError(f"prefill_tokens, decode_seqs and cached_tokens must be integers >= 0, got {counts}")
        new = prefill_tokens + decode_seqs
        nbytes = self.weight_bytes + self.kv_bytes_per_token * (cached_tokens + new)
        flops = self.flops_per_token * new + self.flops_per_cached_token * cached_tokens
        return max(nbytes / self.bandwidth, flops / self.flop_rate)  # mk.roofline_seconds, rates checked once

    def __post_init__(self):
        ridge_point(self.bandwidth, self.flop_rate)  # validates the rates


def roofline_step(facts, gpu) -> RooflineStep:
    """The roofline :class:`RooflineStep` of a dense model in bf16 on a GPU of :data:`mha_kit.GPUS`.

    Weights from :func:`mha_kit.dense_decoder_params` (the embedding table is read by lookup, so
    it adds bytes but no FLOPs); cache bytes from :func:`mha_kit.kv_cache_bytes_per_token`;
    attention FLOPs from :func:`mha_kit.attention_macs`; the GPU's bf16 peak and HBM bandwidth.

    Parameters
    ----------
    facts : ModelFacts
        ``mk.MODEL_FACTS[name]`` of a model :func:`mha_kit.dense_decoder_params` can count.
    gpu : Accelerator
        ``mk.GPUS[name]``.

    Book: chapter "Continuous batching and chunked prefill".
    """
    if not isinstance(facts, ModelFacts) or not isinstance(gpu, Accelerator):
        raise ValueError(f"expected a ModelFacts record and an Accelerator (mk.MODEL_FACTS[...], mk.GPUS[...]), "
                         f"got {type(facts).__name__} and {type(gpu).__name__}")
    params, cfg = dense_decoder_params(facts), facts.config
    return RooflineStep(
        weight_bytes=elements_to_bytes(params, "bf16"),
        kv_bytes_per_token=kv_cache_bytes_per_token(cfg, "bf16"),
        flops_per_token=2 * (params - facts.vocab_size * cfg.d_model),  # norm weights counted too: <0.01%
        flops_per_cached_token=2 * attention_macs(cfg, 1) * cfg.num_layers,
        bandwidth=gpu.hbm_bandwidth, flop_rate=gpu.bf16_flops)
