"""Scheduling and cache policy: small, exact models of what a serving engine decides.

* :func:`preemption_costs`: a preempted request's cache swapped over a link against recomputed.
* :func:`static_batches`: request-level batching that flushes at a size or after a wait.
* :func:`queue_finish_times`: one server and its queue, first come first served, by priority,
  or shortest job first; :func:`vtc_finish_times` the same queue with a virtual token counter
  per client (Sheng et al., "Fairness in Serving Large Language Models", 2024).
* :func:`block_cache_hits`: prefix reuse under LRU or LFU eviction of hashed blocks.
* :func:`stampede_prefill`: many requests with the same new prefix at once, prefilled in chunks.
* :func:`time_average_in_system`: the left side of Little's law, measured on a simulated run.
* :func:`token_bucket_waits`: a per-client token rate limit, admitted or rejected with a retry-after.

Book: chapter "Scheduling and cache policy".
"""
from __future__ import annotations

import heapq
import math
import numbers
from dataclasses import dataclass

from .config import check_positive_int
from .counting import kv_cache_bytes, kv_cache_bytes_per_token, dense_decoder_params
from .disaggregation import prefill_flops
from .hardware import Accelerator, Link
from .roofline import roofline_seconds
from .units import elements_to_bytes

QUEUE_POLICIES = ("fcfs", "priority", "sjf")
STAMPEDE_POLICIES = ("on_schedule", "after_step", "hold_duplicates")
EVICTION_POLICIES = ("lru", "lfu")


def _check_nonneg(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


# --- Preemption: swap against recompute -------------------------------------------------------

@dataclass(frozen=True)
class PreemptionCost:
    """Bytes and seconds of the two ways back for a preempted request.

    Book: chapter "Scheduling and cache policy".
    """

    cache_bytes: int  # the request's keys and values, all layers
    swap_out_s: float  # GPU -> host over the link, at its peak rate one way
    swap_in_s: float  # host -> GPU, the same bytes back
    recompute_s: float  # a prefill of all its tokens, at the roofline of the GPU


def preemption_costs(facts, context_tokens, gpu, link, fmt="bf16") -> PreemptionCost:
    """Swap against recompute for a request holding ``context_tokens`` tokens of cache.

    Swapping moves :func:`mha_kit.kv_cache_bytes` out and back over ``link`` (one direction each,
    at the link's peak). Recomputing runs a prefill of all the tokens (:func:`mha_kit.prefill_flops`)
    at the roofline ``max(bytes / bandwidth, FLOPs / peak)``, reading the weights once and writing
    the cache. Both are lower bounds: real copies and prefills run below peak.

    Parameters
    ----------
    facts : ModelFacts
        A dense Llama-layout record (``mk.MODEL_FACTS["llama-3-8b"]``).
    context_tokens : int
        Prompt and output tokens the request holds when it is preempted.
    gpu : Accelerator
    link : Link
        GPU to host memory, e.g. ``mk.LINKS["pcie5-x16"]``.

    Book: chapter "Scheduling and cache policy".
    """
    if not isinstance(gpu, Accelerator) or not isinstance(link, Link):
        raise ValueError(f"expected an Accelerator and a Link (mk.GPUS[...], mk.LINKS[...]), got "
                         f"{type(gpu).__name__} and {type(link).__name__}")
    n = check_positive_int("context_tokens", context_tokens)
    cache = kv_cache_bytes(facts.config, n, fmt=fmt)
    weights = elements_to_bytes(dense_decoder_params(facts), fmt)
    recompute = roofline_seconds(weights + cache, prefill_flops(facts, n), gpu.hbm_bandwidth, gpu.bf16_flops)
    return PreemptionCost(cache_bytes=cache, swap_out_s=cache / link.bytes_per_s,
                          swap_in_s=cache / link.bytes_per_s, recompute_s=recompute)


# --- Request-level batching --------------------------------------------------------------------

def static_batches(arrivals, max_batch, max_wait_s, batch_seconds):
    """Request-level batching: a batch closes when full or when its oldest request has waited.

    The first waiting request opens a batch. It is ready at ``min(arrival of its max_batch-th
    request, its own arrival + max_wait_s)`` and starts when it is ready and the server is free,
    with every request that arrived by the start (at most ``max_batch``): requests queued behind a
    busy server join the next batch, as in Triton's dynamic batcher. It takes
    ``batch_seconds(size)``.

    Parameters
    ----------
    arrivals : sequence of float
        Arrival times in seconds, non-decreasing.
    max_batch : int
    max_wait_s : float
    batch_seconds : callable
        ``batch_seconds(size) -> seconds`` to serve a batch of ``size`` requests.

    Returns
    -------
    (list of float, list of int)
        Each request's latency (arrival to the end of its batch), and the size of each batch.

    Book: chapter "Scheduling and cache policy".
    """
    times = [_check_nonneg("arrival", a) for a in arrivals]
    if any(b < a for a, b in zip(times, times[1:])):
        raise ValueError("arrivals must be non-decreasing")
    size, wait = check_positive_int("max_batch", max_batch), _check_nonneg("max_wait_s", max_wait_s)
    latencies, sizes, free_at, i = [], [], 0.0, 0
    while i < len(times):
        full = times[i + size - 1] if i + size <= len(times) else math.inf
        start = max(min(full, times[i] + wait), free_at)  # closes when full or timed out, runs when free
        j = i
        while j < len(times) and j - i < size and times[j] <= start:  # late arrivals join while it waits
            j += 1
        free_at = start + batch_seconds(j - i)
        latencies += [free_at - a for a in times[i:j]]
        sizes.append(j - i)
        i = j
    return latencies, sizes


# --- One server and its queue ------------------------------------------------------------------

def _check_jobs(jobs, width):
    jobs = [tuple(j) for j in jobs]
    if not jobs or any(len(j) != width for j in jobs):
        raise ValueError(f"jobs must be a non-empty sequence of {width}-tuples, got {jobs[:1]!r}...")
    for j in jobs:
        _check_nonneg("arrival", j[0])
        _check_nonneg("service time", j[-1])
    return jobs


def _serve(arrivals, services, choose):
    """Non-preemptive single server: ``choose(waiting, now)`` picks the next job index."""
    order = sorted(range(len(arrivals)), key=lambda k: (arrivals[k], k))
    finish, waiting, now, nxt = [0.0] * len(arrivals), [], 0.0, 0
    while nxt < len(order) or waiting:
        while nxt < len(order) and arrivals[order[nxt]] <= now:
            waiting.append(order[nxt])
            nxt += 1
        if not waiting:
            now = arrivals[order[nxt]]
            continue
        k = choose(waiting, now)
        waiting.remove(k)
        now += services[k]
        finish[k] = now
    return finish


def queue_finish_times(jobs, policy="fcfs"):
    """Finish times of ``jobs`` on one non-preemptive server under a queue policy.

    Parameters
    ----------
    jobs : sequence of (float, int, float)
        ``(arrival_s, priority, service_s)`` per job; a lower priority value runs first, as in
        vLLM's ``--scheduling-policy priority``.
    policy : {"fcfs", "priority", "sjf"}
        First come first served; lowest priority value first (ties by arrival); shortest service
        first (ties by arrival). Shortest-first needs the service time, which a server can only
        predict (the output length is unknown until the request ends).

    Returns
    -------
    list of float
        Finish time of each job, in the order of ``jobs``.

    Book: chapter "Scheduling and cache policy".
    """
    jobs = _check_jobs(jobs, 3)
    if policy not in QUEUE_POLICIES:
        raise ValueError(f"policy must be one of {QUEUE_POLICIES}, got {policy!r}")
    column = {"fcfs": None, "priority": 1, "sjf": 2}[policy]
    arrivals, services = [j[0] for j in jobs], [j[2] for j in jobs]

    def choose(waiting, now):
        return min(waiting, key=lambda k: (0 if column is None else jobs[k][column], arrivals[k], k))

    return _serve(arrivals, services, choose)


def vtc_finish_times(jobs, input_weight=1.0, output_weight=2.0):
    """Finish times under a virtual token counter per client (VTC, Sheng et al. 2024, sec. 4).

    Each client has a counter of the service it has received, ``input_weight * prompt tokens +
    output_weight * output tokens`` of its served requests. The server picks the waiting request
    of the client with the smallest counter (ties by arrival). A client that had nothing waiting
    and sends a request has its counter lifted to the smallest counter among clients with waiting
    requests, so idle time earns no credit. Simplified to one request at a time, charged in full
    when it starts (the paper charges output tokens as they are generated, in a batch).

    Parameters
    ----------
    jobs : sequence of (float, hashable, int, int, float)
        ``(arrival_s, client, prompt_tokens, output_tokens, service_s)``.

    Returns
    -------
    list of float
        Finish time of each job, in the order of ``jobs``.

    Book: chapter "Scheduling and cache policy".
    """
    jobs = _check_jobs(jobs, 5)
    counter, seen = {}, set()

    def choose(waiting, now):
        active = {jobs[k][1] for k in waiting if k in seen}
        for k in waiting:
            if k not in seen:  # arrived since the last choice: lift an idle client's counter
                client, floor = jobs[k][1], min((counter[c] for c in active), default=None)
                if client not in active and floor is not None:
                    counter[client] = max(counter.get(client, 0.0), floor)
                counter.setdefault(client, 0.0)
                seen.add(k)
                active.add(client)
        k = min(waiting, key=lambda w: (counter[jobs[w][1]], jobs[w][0], w))
        counter[jobs[k][1]] += input_weight * jobs[k][2] + output_weight * jobs[k][3]
        return k

    return _serve([j[0] for j in jobs], [j[4] for j in jobs], choose)


def token_bucket_waits(requests, tokens_per_minute, capacity=None):
    """Admit requests against a token bucket; for each, the wait before it may be sent (0 = admitted).

    The bucket holds up to ``capacity`` tokens (a minute's worth by default) and refills
    continuously at ``tokens_per_minute / 60`` a second. A request is charged its tokens when it
    arrives: admitted if the bucket holds that many, otherwise rejected (HTTP 429) with the time
    the bucket needs to refill the difference, the ``retry-after`` a client should honour. A
    rejected request takes nothing from the bucket. This is how hosted APIs meter input and output
    tokens per minute (the output charge estimated from ``max_tokens`` at admission).

    Parameters
    ----------
    requests : sequence of (float, int)
        ``(arrival_s, tokens)``, in order of arrival.
    tokens_per_minute : float
    capacity : float, optional

    Returns
    -------
    list of float
        Seconds to wait: 0.0 for an admitted request.
    """
    rate = float(tokens_per_minute) / 60.0
    capacity = float(tokens_per_minute if capacity is None else capacity)
    if not (rate > 0 and capacity > 0):
        raise ValueError(f"tokens_per_minute and capacity must be positive, got {tokens_per_minute!r} and {capacity!r}")
    level, last, waits = capacity, None, []
    for arrival, tokens in requests:
        if last is not None and arrival < last:
            raise ValueError(f"requests must be in order of arrival: {arrival} after {last}")
        level = min(capacity, level + (0.0 if last is None else (arrival - last) * rate))  # refill since the last
        last = arrival
        if tokens > capacity:
            raise ValueError(f"a request of {tokens} tokens can never fit a bucket of {capacity:g}")
        waits.append(0.0 if tokens <= level else (tokens - level) / rate)
        level -= tokens if tokens <= level else 0
    return waits


# --- Eviction: least recently against least frequently used ----------------------------------

def block_cache_hits(requests, capacity_blocks, block_size, policy="lru"):
    """Prompt tokens each request reuses from a cache of hashed blocks under LRU or LFU eviction.

    A block is named by its whole prefix (as vLLM's chained hashes do). A request reuses the
    longest run of cached leading full blocks, then all its full blocks are used: their last use
    becomes now and their use count grows by one. While the cache holds more than
    ``capacity_blocks``, the block with the smallest key goes, never one of the current request:
    ``(last use, -depth)`` for ``"lru"`` (the deepest block of the least recent request first, as
    vLLM frees a request's blocks tail first), ``(use count, last use, -depth)`` for ``"lfu"``.

    Parameters
    ----------
    requests : sequence of sequence of int
        Prompt token ids, in arrival order.
    capacity_blocks, block_size : int
    policy : {"lru", "lfu"}

    Returns
    -------
    list of int
        Tokens reused by each request.

    Book: chapter "Scheduling and cache policy".
    """
    capacity, size = check_positive_int("capacity_blocks", capacity_blocks), check_positive_int("block_size", block_size)
    if policy not in EVICTION_POLICIES:
        raise ValueError(f"policy must be one of {EVICTION_POLICIES}, got {policy!r}")
    rank = (lambda e: (e[0], -e[2])) if policy == "lru" else (lambda e: (e[1], e[0], -e[2]))
    cache, reused, heap = {}, [], []  # prefix id -> [last use, use count, depth]; heap of (rank, prefix id)
    ids = {}  # (id of the prefix before the block, the block's tokens) -> id of the prefix through it
    for now, tokens in enumerate(requests):
        keys, prefix = [], -1  # one key per full block: an id for its whole prefix, built block by block
        for i in range(len(tokens) // size):
            prefix = ids.setdefault((prefix, tuple(tokens[i * size:(i + 1) * size])), len(ids))
            keys.append(prefix)
        hits = next((i for i, k in enumerate(keys) if k not in cache), len(keys))
        reused.append(hits * size)
        for depth, k in enumerate(keys):
            entry = cache.setdefault(k, [now, 0, depth])
            entry[0], entry[1] = now, entry[1] + 1
            heapq.heappush(heap, (rank(entry), k))  # ranks are unique: one block per (request, depth)
        mine, kept = set(keys), []
        while len(cache) > capacity and len(cache) > len(mine):  # pop the smallest rank still current
            r, k = heapq.heappop(heap)
            if k in mine and rank(cache[k]) == r:
                kept.append((r, k))
            elif k in cache and rank(cache[k]) == r:
                del cache[k]
        for item in kept:
            heapq.heappush(heap, item)
    return reused


# --- A stampede: many requests with the same new prefix at once ------------------------------

def _stampede_step(progress, hits, cached, state, policy):
    """One engine step of :func:`stampede_prefill`; returns the cached shared tokens after it."""
    total, prefix, block, budget = state
    for r in range(len(progress)):
        if budget == 0:
            break
        if progress[r] == total:
            continue
        if progress[r] is None:  # admission: look the prefix up once, as vLLM and SGLang do
            leader = any(p is not None for p in progress) and cached < prefix // block * block
            if policy == "hold_duplicates" and leader:  # someone is computing the prefix: wait
                continue
            progress[r] = hits[r] = cached
        take = min(total - progress[r], budget)
        progress[r], budget = progress[r] + take, budget - take
        if policy == "on_schedule":  # hashes registered when the blocks are scheduled
            cached = max(cached, min(progress[r], prefix) // block * block)
    computed = [min(p, prefix) // block * block for p in progress if p is not None]
    return max([cached] + computed)  # after the step, every computed full block is findable


def stampede_prefill(num_requests, prefix_len, suffix_len, block_size, token_budget, policy="on_schedule"):
    """Prefill tokens computed when ``num_requests`` requests with one new prefix arrive together.

    Every request is ``prefix_len`` shared tokens (in no cache yet) and ``suffix_len`` of its own.
    The engine runs steps of at most ``token_budget`` prompt tokens, requests in arrival order,
    chunked; a request looks the cache up once, when it is admitted, and reuses the full blocks
    of the prefix found there. What it finds depends on ``policy``:

    * ``"on_schedule"``: a block is findable as soon as a step is scheduled to compute it, so a
      request admitted later in the same step reuses it (vLLM V1 registers block hashes in
      ``allocate_slots``, before the forward pass).
    * ``"after_step"``: a block is findable only after the step that computed it.
    * ``"hold_duplicates"``: ``"after_step"``, and no request is admitted while an earlier one is
      still computing the prefix (SGLang's in-batch prefix caching pushes such requests to the
      back of the queue; here they wait).

    Returns
    -------
    (int, list of int)
        Prompt tokens computed over all requests, and the step (from 1) in which each request
        finished its prefill.

    Book: chapter "Scheduling and cache policy".
    """
    n = check_positive_int("num_requests", num_requests)
    prefix, suffix = check_positive_int("prefix_len", prefix_len), check_positive_int("suffix_len", suffix_len)
    if policy not in STAMPEDE_POLICIES:
        raise ValueError(f"policy must be one of {STAMPEDE_POLICIES}, got {policy!r}")
    state = (prefix + suffix, prefix, check_positive_int("block_size", block_size),
             check_positive_int("token_budget", token_budget))
    progress, hits, finish, cached, step = [None] * n, [0] * n, [0] * n, 0, 0
    while any(p != state[0] for p in progress):
        step += 1
        cached = _stampede_step(progress, hits, cached, state, policy)
        finish = [step if p == state[0] and not f else f for p, f in zip(progress, finish)]
    return sum(state[0] - h for h in hits), finish


# --- Little's law and the concurrency that fits ------------------------------------------------

def time_average_in_system(arrivals, finishes) -> float:
    """Mean number of requests in the system over ``[first arrival, last finish]``, by event sweep.

    The integral of the count of requests present, divided by the span: the ``L`` of Little's law
    ``L = lambda W``, measured without using any latency (for a finite run it equals
    ``(n / span) * mean(finish - arrival)`` exactly, which is what makes it a check).

    Book: chapter "Scheduling and cache policy".
    """
    arrivals, finishes = [float(a) for a in arrivals], [float(f) for f in finishes]
    if not arrivals or len(arrivals) != len(finishes) or any(f < a for a, f in zip(arrivals, finishes)):
        raise ValueError("arrivals and finishes must be non-empty, of equal length, with finish >= arrival")
    events = sorted([(a, 1) for a in arrivals] + [(f, -1) for f in finishes])
    area, count, last = 0.0, 0, events[0][0]
    for t, change in events:
        area += count * (t - last)
        count, last = count + change, t
    return area / (max(finishes) - min(arrivals))


def max_concurrent_sequences(facts, gpu, tokens_per_sequence, memory_fraction=0.9, fmt="bf16") -> int:
    """Sequences of ``tokens_per_sequence`` tokens whose cache fits next to the weights on ``gpu``.

    ``floor((memory_fraction * HBM - weight bytes) / (tokens * cache bytes per token))``, the way
    vLLM sizes its block pool from ``gpu_memory_utilization`` (activations and CUDA graphs, which
    also take a share, are left out, so this is an upper bound).

    Book: chapter "Scheduling and cache policy".
    """
    if not isinstance(gpu, Accelerator) or not 0 < memory_fraction <= 1:
        raise ValueError(f"expected an Accelerator and 0 < memory_fraction <= 1, got "
                         f"{type(gpu).__name__} and {memory_fraction!r}")
    tokens = check_positive_int("tokens_per_sequence", tokens_per_sequence)
    free = int(memory_fraction * gpu.hbm_bytes) - elements_to_bytes(dense_decoder_params(facts), fmt)
    if free <= 0:
        raise ValueError(f"{facts.name}'s weights do not fit in {memory_fraction} of {gpu.title}'s memory")
    return free // (tokens * kv_cache_bytes_per_token(facts.config, fmt))
