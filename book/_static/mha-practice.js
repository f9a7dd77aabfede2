/* The live KV-cache calculator, the drills and the flashcards (website/ext/practice_pages.py).
 *
 * The drills and the flashcards come back by spaced repetition: mha-schedule.js (loaded first)
 * keeps a Leitner schedule of what was answered right and wrong, and the export and import of it.
 *
 * Every formula here is a copy of one in mha_kit (counting.py, units.py) and the messages copy
 * mha_course/judge/expect.py; tests/test_site.py runs this file in Chromium and compares it with them.
 * Counts are exact: BigInt throughout, and a quotient is rounded once, as Python's int / int is.
 * The presets, number formats and units come from window.MHA_DATA, written from mha_kit at build
 * time; the flashcards from window.MHA_FLASHCARDS.
 */
(function () {
  "use strict";
  const DATA = window.MHA_DATA;

  // --- exact arithmetic ---------------------------------------------------------------------

  function positiveInt(name, value) {
    // mha_kit.config.check_positive_int, for numbers typed into the page
    if (typeof value === "string") value = value.trim();
    if (!/^\d+$/.test(String(value))) throw new RangeError(`${name} must be a positive integer, got ${value === "" ? "nothing" : value}`);
    const n = BigInt(value);
    if (n <= 0n) throw new RangeError(`${name} must be a positive integer, got ${value}`);
    return n;
  }

  function ceilDiv(a, b) {
    return (a + b - 1n) / b;
  }

  function bitLength(n) {
    return n === 0n ? 0 : n.toString(2).length;
  }

  // a / b rounded once to the nearest double, as Python's int / int (a >= 0, b > 0)
  function divide(a, b) {
    if (a === 0n) return 0;
    const shift = 66 - (bitLength(a) - bitLength(b));
    let q, r;
    if (shift >= 0) {
      const num = a << BigInt(shift);
      q = num / b;
      r = num % b;
    } else {
      const den = b << BigInt(-shift);
      q = a / den;
      r = a % den;
    }
    if (r !== 0n) q |= 1n; // a sticky bit: a quotient below a tie never rounds as a tie
    return Number(q) * Math.pow(2, -shift);
  }

  // --- mha_kit.units ------------------------------------------------------------------------

  function dtypeBits(dtype) {
    if (typeof dtype === "string" && !/^\d+$/.test(dtype)) {
      const bits = DATA.dtype_bits[dtype.toLowerCase()];
      if (bits === undefined) throw new RangeError(`unknown number format ${dtype}`);
      return BigInt(bits);
    }
    return positiveInt("bits per number", dtype);
  }

  function bytesOf(elements, bits) {
    return ceilDiv(elements * bits, 8n);
  }

  function groupDigits(digits) {
    return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  function formatInt(n) {
    // format_int: 1048576 -> "1,048,576"
    n = BigInt(n);
    return (n < 0n ? "-" : "") + groupDigits((n < 0n ? -n : n).toString());
  }

  // The exact decimal digits of a double (a double has at most ~60 of them in our range).
  function exactDigits(x) {
    const text = Math.abs(x).toExponential(100); // exact: every double below 2^-48 excepted
    const [mantissa, exponent] = text.split("e");
    return { digits: mantissa.replace(".", "").replace(/0+$/, "") || "0", exponent: Number(exponent) };
  }

  // The first `keep` digits of a digit string as an integer, rounded half to even, as Python's
  // formatting rounds (keep >= 0; the string holds at least `keep` digits).
  function roundDigits(digits, keep) {
    const head = digits.slice(0, keep) || "0";
    const rest = digits.slice(keep);
    let up = false;
    if (rest.length && (rest[0] > "5" || (rest[0] === "5" && /[1-9]/.test(rest.slice(1))))) up = true;
    else if (rest[0] === "5") up = Number(head[head.length - 1]) % 2 === 1;
    return BigInt(head) + (up ? 1n : 0n);
  }

  // Python's f"{x:.{p}f}" for x >= 0
  function formatFixed(x, precision) {
    if (x === 0) return precision ? "0." + "0".repeat(precision) : "0";
    const { digits, exponent } = exactDigits(x);
    const keep = exponent + 1 + precision; // digits up to the last decimal shown
    let scaled;
    if (keep <= 0) {
      // below half of the last place shown, or exactly half: half-even rounds to 0
      const half = keep === 0 && (digits[0] > "5" || (digits[0] === "5" && digits.length > 1));
      scaled = half ? 1n : 0n;
    } else {
      const padded = digits.padEnd(keep, "0");
      scaled = roundDigits(padded, keep);
    }
    let text = scaled.toString().padStart(precision + 1, "0");
    const whole = text.slice(0, text.length - precision);
    const fraction = text.slice(text.length - precision);
    return precision ? `${whole}.${fraction}` : whole;
  }

  function formatFixedGrouped(x, precision) {
    const [whole, fraction] = formatFixed(x, precision).split(".");
    return groupDigits(whole) + (fraction === undefined ? "" : "." + fraction);
  }

  // Python's f"{x:.{p}g}" for a finite x
  function formatGeneral(x, precision) {
    if (x === 0) return Object.is(x, -0) ? "-0" : "0";
    const sign = x < 0 ? "-" : "";
    let { digits, exponent } = exactDigits(x);
    let rounded = roundDigits(digits.padEnd(precision, "0"), precision).toString();
    if (rounded.length > precision) {
      rounded = rounded.slice(0, precision);
      exponent += 1;
    }
    let body;
    if (exponent < -4 || exponent >= precision) {
      let mantissa = rounded[0] + (precision > 1 ? "." + rounded.slice(1) : "");
      mantissa = mantissa.includes(".") ? mantissa.replace(/0+$/, "").replace(/\.$/, "") : mantissa;
      const e = Math.abs(exponent).toString().padStart(2, "0");
      body = `${mantissa}e${exponent < 0 ? "-" : "+"}${e}`;
    } else if (exponent >= 0) {
      const whole = rounded.slice(0, exponent + 1).padEnd(exponent + 1, "0");
      const fraction = rounded.slice(exponent + 1).replace(/0+$/, "");
      body = fraction ? `${whole}.${fraction}` : whole;
    } else {
      const fraction = ("0".repeat(-exponent - 1) + rounded).replace(/0+$/, "");
      body = `0.${fraction}`;
    }
    return sign + body;
  }

  function unitsInOrder(table) {
    return Object.entries(table).sort((a, b) => a[1] - b[1]);
  }

  // format_bytes(n, unit=None, precision=1)
  function formatBytes(n, unit, precision) {
    n = BigInt(n);
    precision = precision === undefined ? 1 : precision;
    const binary = unitsInOrder(DATA.binary_units);
    if (!unit) unit = binary.slice().reverse().find(([u, size]) => n >= BigInt(size) || u === "B")[0];
    const size = DATA.binary_units[unit] || DATA.decimal_units[unit];
    const value = divide(n, BigInt(size));
    const text = Number.isInteger(value) ? formatFixedGrouped(value, 0) : formatFixedGrouped(value, precision);
    return `${text} ${unit}`;
  }

  // --- mha_kit.counting ---------------------------------------------------------------------

  // A config as the page holds it: {mla: false, layers, heads, kv_heads, head_dim}
  // or {mla: true, layers, heads, latent, rope}; every field a positive integer.
  function checkConfig(cfg) {
    const c = { mla: Boolean(cfg.mla), layers: positiveInt("layers", cfg.layers), heads: positiveInt("num_heads", cfg.heads) };
    if (c.mla) {
      c.latent = positiveInt("kv_lora_rank (d_c)", cfg.latent);
      c.rope = positiveInt("qk_rope_head_dim", cfg.rope);
      if (c.rope % 2n) throw new RangeError(`qk_rope_head_dim (${c.rope}) must be even: rotary embedding turns pairs`);
    } else {
      c.kvHeads = positiveInt("num_kv_heads", cfg.kv_heads);
      c.headDim = positiveInt("head_dim", cfg.head_dim);
      if (c.heads % c.kvHeads) throw new RangeError(`num_heads (${c.heads}) must be divisible by num_kv_heads (${c.kvHeads})`);
    }
    return c;
  }

  const kvElementsPerToken = (c) => (c.mla ? c.latent + c.rope : 2n * c.kvHeads * c.headDim);
  const cachePerToken = (c, bits) => bytesOf(c.layers * kvElementsPerToken(c), bits);
  const cacheBytes = (c, s, batch, bits) => bytesOf(s * batch * c.layers * kvElementsPerToken(c), bits);
  const kvBytesRead = (c, s, bits) => bytesOf(s * kvElementsPerToken(c), bits);
  const attentionMacs = (c, s, n) => (c.mla ? c.heads * n * s * (2n * c.latent + c.rope) : 2n * c.heads * n * s * c.headDim);
  const intensity = (c, s, bits) => divide(2n * attentionMacs(c, s, 1n), kvBytesRead(c, s, bits));
  const maxContext = (c, memory, bits, batch) => (memory * 8n) / (batch * c.layers * kvElementsPerToken(c) * bits);
  const scoreCount = (heads, n) => heads * n * n;

  // projection_params(cfg) of an AttentionConfig: Q, K, V, O without biases
  function projectionParams(d, h, hKv, dH) {
    return d * h * dH + 2n * d * hKv * dH + h * dH * d;
  }

  // Bytes in a memory typed as a decimal number of a unit ("80", "0.5"), rounded down.
  function memoryBytes(text, unit) {
    text = String(text).trim();
    const m = /^(\d*)(?:\.(\d*))?$/.exec(text);
    if (!m || text === "" || text === ".") throw new RangeError(`memory must be a non-negative number, got ${text || "nothing"}`);
    const fraction = m[2] || "";
    const size = BigInt(DATA.binary_units[unit] || DATA.decimal_units[unit]);
    return (BigInt((m[1] || "0") + fraction) * size) / 10n ** BigInt(fraction.length);
  }

  // Every number the calculator shows; tests/test_site.py compares them with mha_kit.
  function compute(cfg, context, batch, dtype, memory) {
    const c = checkConfig(cfg);
    const s = positiveInt("context length", context);
    const b = positiveInt("batch size", batch);
    const bits = dtypeBits(dtype);
    const mem = BigInt(memory);
    const perToken = cachePerToken(c, bits);
    const perSequence = cacheBytes(c, s, 1n, bits);
    const total = cacheBytes(c, s, b, bits);
    return {
      elements_per_token_layer: kvElementsPerToken(c).toString(),
      bits: bits.toString(),
      per_token: perToken.toString(),
      per_sequence: perSequence.toString(),
      batch: total.toString(),
      max_context: maxContext(c, mem, bits, b).toString(),
      bytes_read: kvBytesRead(c, s, bits).toString(),
      decode_macs: attentionMacs(c, s, 1n).toString(),
      intensity: intensity(c, s, bits),
      per_token_text: formatBytes(perToken),
      per_sequence_text: formatBytes(perSequence),
      batch_text: formatBytes(total),
      memory_text: formatBytes(mem),
    };
  }

  // --- mha_kit.deployment: the deployment planner ----------------------------------------------
  // A copy of plan_deployment and fleet_estimate (mha_kit/deployment.py, parallel.py, moe.py), in the
  // same order of operations, so that the page's floats equal Python's; tests/test_site.py compares them.

  function planModel(name) {
    const m = DATA.deployment.models.find((x) => x.name === name);
    if (!m) throw new RangeError(`unknown model ${name}`);
    return m;
  }

  function expertsTouched(n, e, k) {
    return e * (1.0 - Math.pow(1.0 - k / e, n));
  }

  function paramsReadPerStep(m, n) {
    if (!m.moe) return m.total_params;
    const always = m.total_params - m.moe.routed_params;
    return always + m.moe.moe_layers * expertsTouched(n, m.moe.num_experts, m.moe.top_k) * m.moe.expert_params;
  }

  function kvHeadsPerGpu(hKv, t) {
    if (t <= hKv && hKv % t) throw new RangeError(`tp (${t}) must divide num_kv_heads (${hKv}) when tp <= num_kv_heads`);
    if (t > hKv && t % hKv) throw new RangeError(`tp (${t}) must be a multiple of num_kv_heads (${hKv}) when tp > num_kv_heads: each key-value head is replicated on tp / num_kv_heads GPUs`);
    return Math.max(Math.floor(hKv / t), 1);
  }

  function kvElementsPerGpu(m, t) {
    if (m.num_heads % t) throw new RangeError(`tp (${t}) must divide num_heads (${m.num_heads}): each GPU computes whole heads`);
    return m.mla ? m.kv_lora_rank + m.qk_rope_head_dim : 2 * kvHeadsPerGpu(m.num_kv_heads, t) * m.head_dim;
  }

  function allReduceBytes(n, t) {
    if (n % t) throw new RangeError(`num_elements (${n}) must be divisible by tp (${t}): the ring splits it into tp chunks`);
    return 2 * (2 * (t - 1) * Math.floor(n / t)); // bf16: two bytes a number
  }

  // attention_macs(cfg, context_len, num_queries, form) as a BigInt
  function planAttentionMacs(m, s, n, form) {
    const [S, N, H] = [BigInt(s), BigInt(n), BigInt(m.num_heads)];
    if (!m.mla) return 2n * H * N * S * BigInt(m.head_dim);
    if (form === "absorbed") return H * N * S * (2n * BigInt(m.kv_lora_rank) + BigInt(m.qk_rope_head_dim));
    return H * N * S * BigInt(m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim);
  }

  // _matmul_rate: products on 8-bit operands at EIGHT_BIT_SPEEDUP times the bf16 peak
  const matmulRate = (gpu, bits) => gpu.bf16_flops * (bits === 8n ? DATA.deployment.eight_bit_speedup : 1);

  function stepSeconds(m, gpu, t, tokens, logitTokens, attentionFlops, readBytes, link, bits) {
    const embed = m.vocab_size * m.d_model;
    const layers = paramsReadPerStep(m, 1) - 2 * embed;
    const matmul = 2 * layers * tokens + 2 * embed * logitTokens;
    const computeS = (matmul / matmulRate(gpu, bits[0]) + Number(attentionFlops) / matmulRate(gpu, bits[1])) / t;
    const memoryS = readBytes / gpu.hbm_bandwidth;
    const comm = t === 1 ? 0.0 : (2 * m.num_layers * allReduceBytes(tokens * m.d_model, t)) / link.bytes_per_s;
    return [Math.max(memoryS, computeS) + comm, memoryS >= computeS ? "memory" : "compute"];
  }

  function intOf(name, value) {
    return Number(positiveInt(name, value));
  }

  // plan_deployment(model, gpu, num_gpus=, tp=, context_len=, batch_size=, weight_fmt=, kv_fmt=, link=)
  function plan(name, gpuName, opts) {
    const m = planModel(name);
    const gpu = DATA.deployment.gpus.find((g) => g.name === gpuName);
    if (!gpu) throw new RangeError(`unknown gpu ${gpuName}`);
    const nGpu = intOf("num_gpus", opts.num_gpus), t = intOf("tp", opts.tp);
    const s = intOf("context_len", opts.context_len), b = intOf("batch_size", opts.batch_size);
    if (nGpu % t) throw new RangeError(`num_gpus (${nGpu}) must be a multiple of tp (${t}): each replica has tp GPUs`);
    const link = DATA.deployment.links.find((l) => l.name === (opts.link || "nvlink4"));
    if (!link) throw new RangeError(`unknown link ${opts.link}`);
    const weightBits = dtypeBits(opts.weight_fmt || "bf16");
    const weightBytes = Number(weightBits) / 8;
    const kvBits = dtypeBits(opts.kv_fmt || "bf16");
    const weights = Math.ceil((m.total_params * weightBytes) / t);
    const perSeq = ceilDiv(BigInt(s) * BigInt(m.num_layers) * BigInt(kvElementsPerGpu(m, t)) * kvBits, 8n);
    const free = BigInt(gpu.hbm_bytes) - BigInt(weights);
    const maxSeqBig = free / perSeq;
    const maxSeq = maxSeqBig > 0n ? Number(maxSeqBig) : 0;
    const weightsRead = (tokens) => ((paramsReadPerStep(m, tokens) - m.vocab_size * m.d_model) * weightBytes) / t;
    const decodeRead = weightsRead(b) + b * Number(perSeq);
    const decodeAttention = 2n * BigInt(m.num_layers) * planAttentionMacs(m, s, 1, "absorbed") * BigInt(b);
    const bits = [weightBits, kvBits]; // W8A8 with 8-bit weights; attention at the cache's precision
    const [decodeS, bound] = stepSeconds(m, gpu, t, b, b, decodeAttention, decodeRead, link, bits);
    const prefillRead = weightsRead(s) + Number(perSeq);
    const prefillAttention = (2n * BigInt(m.num_layers) * planAttentionMacs(m, s, s, "naive")) / 2n;
    const [prefillS] = stepSeconds(m, gpu, t, s, 1, prefillAttention, prefillRead, link, bits);
    return {
      model: m.name, gpu: gpu.name, num_gpus: nGpu, tp: t, context_len: s, batch_size: b,
      weight_bytes_per_gpu: weights, kv_bytes_per_sequence_per_gpu: Number(perSeq), max_sequences: maxSeq,
      fits: free > 0n && b <= maxSeq, decode_step_s: decodeS, decode_bound: bound, prefill_s: prefillS,
      tokens_per_s_per_gpu: b / decodeS / t,
    };
  }

  function positiveNumber(name, value) {
    const x = Number(String(value).trim());
    if (String(value).trim() === "" || !Number.isFinite(x) || !(x > 0)) throw new RangeError(`${name} must be a positive number, got ${value === "" ? "nothing" : value}`);
    return x;
  }

  // fleet_estimate(plan, rate=, output_tokens=, price_per_gpu_hour=)
  function fleet(p, rate, outputTokens, price) {
    rate = positiveNumber("rate", rate);
    price = positiveNumber("price_per_gpu_hour", price);
    const out = intOf("output_tokens", outputTokens);
    const inFlight = rate * (p.prefill_s + out * p.decode_step_s);
    const replicas = Math.ceil(inFlight / p.batch_size + rate * p.prefill_s);
    const perSecond = (p.tp * price) / 3600;
    return {
      in_flight: inFlight, replicas, gpus: replicas * p.tp,
      output_cost_per_million: (1e6 * perSecond * p.decode_step_s) / p.batch_size,
      input_cost_per_million: (1e6 * perSecond * p.prefill_s) / p.context_len,
    };
  }

  // --- mha_course.judge.expect: the exercises' messages ---------------------------------------------

  function gcd(a, b) {
    a = a < 0n ? -a : a;
    b = b < 0n ? -b : b;
    while (b) [a, b] = [b, a % b];
    return a;
  }

  function fraction(num, den) {
    // fractions.Fraction(num, den): lowest terms, the sign on the numerator
    if (den < 0n) [num, den] = [-num, -den];
    const g = gcd(num, den) || 1n;
    return [num / g, den / g];
  }

  // A hint's key ("2", "1/2", "1/L") as a fraction, for the question's values
  function hintRatio(key, values) {
    const [top, bottom] = key.split("/");
    const value = (part) => (/^\d+$/.test(part) ? BigInt(part) : BigInt(values[part]));
    return fraction(value(top), bottom === undefined ? 1n : value(bottom));
  }

  // A Python dict built from [key, value] pairs: a repeated key keeps its first place and takes
  // the last value, as {Fraction(1, 2): a, Fraction(1, L): b} does when L is 2.
  function pythonDict(pairs, keyOf) {
    const table = new Map();
    for (const [key, value] of pairs || []) table.set(keyOf(key), value);
    return table;
  }

  // expect_int(got, expected, what, hints, wrong): the message, or null when right
  function intMessage(got, expected, what, hints, wrong, values) {
    if (got === expected) return null;
    let message = `${what}: expected ${formatInt(expected)}, got ${formatInt(got)}`;
    const mistakes = pythonDict(wrong, (value) => BigInt(value).toString());
    if (mistakes.has(got.toString())) return `${message}: ${mistakes.get(got.toString())}`;
    if (expected === 0n || got === 0n) return message;
    const [num, den] = fraction(got, expected);
    let ratio = null;
    if (den === 1n) ratio = `${num}x too large`;
    else if (num === 1n) ratio = `${den}x too small`;
    if (!ratio) return message;
    const table = pythonDict(hints, (key) => hintRatio(key, values || {}).join("/"));
    const hint = table.get(`${num}/${den}`);
    return `${message} (${ratio}${hint ? ": " + hint : ""})`;
  }

  function isClose(a, b, rtol) {
    return a === b || Math.abs(a - b) <= rtol * Math.max(Math.abs(a), Math.abs(b));
  }

  // expect_float(got, expected, what, hints, rtol)
  function floatMessage(got, expected, what, hints, rtol) {
    if (isClose(got, expected, rtol)) return null;
    let message = `${what}: expected ${formatGeneral(expected, 6)}, got ${formatGeneral(got, 6)}`;
    for (const [ratio, hint] of pythonDict(hints, Number)) {
      if (isClose(got, ratio * expected, rtol)) return `${message} (${hint})`;
    }
    return message;
  }

  function tupleText(values) {
    return values.length === 1 ? `(${values[0]},)` : `(${values.join(", ")})`;
  }

  // expect_shape(got, expected, what)
  function shapeMessage(got, expected, what) {
    const g = tupleText(got), e = tupleText(expected);
    if (g === e) return null;
    if (got.length !== expected.length) return `shape of ${what}: expected ${expected.length} axes ${e}, got ${got.length} axes ${g}`;
    const sorted = (xs) => xs.map(BigInt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(",");
    if (sorted(got) === sorted(expected)) return `shape of ${what}: expected ${e}, got ${g}: the right sizes in the wrong order`;
    return `shape of ${what}: expected ${e}, got ${g}`;
  }


  // --- drills: questions from random configurations ---------------------------------------------

  function rngFrom(seed) {
    // mulberry32: a small seeded generator, so that a test can replay a question
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  const pick = (rng, xs) => xs[Math.floor(rng() * xs.length)];
  const fmt = (n) => formatInt(n);

  function randomLayer(rng) {
    const headDim = pick(rng, [64, 80, 96, 128, 256]);
    const kvHeads = pick(rng, [1, 2, 4, 8, 16]);
    const heads = kvHeads * pick(rng, [1, 2, 4, 8]);
    const dModel = rng() < 0.75 ? heads * headDim : pick(rng, [2048, 3072, 4096, 5120]);
    const layers = pick(rng, [12, 24, 28, 32, 40, 48, 60, 80, 95, 126]);
    return { mla: false, d_model: dModel, heads, kv_heads: kvHeads, head_dim: headDim, layers };
  }

  function randomLatent(rng) {
    return { mla: true, heads: pick(rng, [16, 32, 64, 128]), latent: pick(rng, [256, 512]), rope: pick(rng, [32, 64]),
             nope: 128, value_dim: 128, layers: pick(rng, [27, 60, 61]) };
  }

  function layerText(cfg) {
    return `a layer with d = ${fmt(cfg.d_model)}, h = ${cfg.heads} query heads, h_kv = ${cfg.kv_heads} key-value heads and d_h = ${cfg.head_dim}`;
  }

  function modelText(cfg) {
    if (cfg.mla) return `an MLA model with ${cfg.layers} layers, h = ${cfg.heads}, a latent of d_c = ${cfg.latent} and a rotary key of ${cfg.rope} numbers`;
    return `a model with ${cfg.layers} layers of h = ${cfg.heads} query heads, h_kv = ${cfg.kv_heads} key-value heads and d_h = ${cfg.head_dim}`;
  }

  const dtypeNames = () => Object.keys(DATA.dtype_bits);

  function intQuestion(kind, params, prompt, what, expected, working, extra) {
    const hints = (DATA.drill_hints[kind] || {});
    const wrongValues = (extra && extra.wrong) || {};
    const wrong = (hints.wrong || []).filter(([key]) => key in wrongValues).map(([key, hint]) => [wrongValues[key].toString(), hint]);
    return { kind, params, prompt, what, answer: "int", expected: expected.toString(), hints: hints.ratios || [],
             wrong, values: (extra && extra.values) || {}, working };
  }

  const GENERATORS = {
    shape: { tag: "E", topic: "tensor shapes", make(rng) {
      const cfg = randomLayer(rng);
      const b = pick(rng, [1, 2, 4, 8]), n = pick(rng, [16, 128, 512, 1024]);
      const { heads: h, kv_heads: hkv, head_dim: dh } = cfg;
      const tensors = [
        ["the queries after splitting into heads", [b, h, n, dh], `Q = x W_Q is (B, n, h·d_h) = (${b}, ${n}, ${h * dh}); view it as (B, n, h, d_h) and swap the token and head axes: (B, h, n, d_h).`],
        ["the keys after splitting into heads", [b, hkv, n, dh], `K has h_kv heads, not h: (B, n, h_kv·d_h) = (${b}, ${n}, ${hkv * dh}) becomes (B, h_kv, n, d_h).`],
        ["the attention scores", [b, h, n, n], `Every query head scores every key: (B, h, n, d_h) @ (B, h, d_h, n) → (B, h, n, n).`],
        ["the output after merging the heads (before W_O)", [b, n, h * dh], `Swap back to (B, n, h, d_h) and join the last two axes: (B, n, h·d_h) = (${b}, ${n}, ${h * dh}).`],
        ["the values before splitting into heads", [b, n, hkv * dh], `x (B, n, d) @ W_V (d, h_kv·d_h) → (B, n, h_kv·d_h) = (${b}, ${n}, ${hkv * dh}).`],
      ];
      const [what, shape, working] = pick(rng, tensors);
      return { kind: "shape", params: { cfg, b, n }, answer: "shape", expected: shape.map(String), what, working,
        prompt: `A batch of B = ${b} sequences of n = ${n} tokens goes through ${layerText(cfg)}. What is the shape of ${what}? Answer with a tuple such as (2, 8, 16, 64).` };
    } },
    params: { tag: "M", topic: "parameters", make(rng) {
      const cfg = randomLayer(rng);
      const [d, h, hkv, dh] = [cfg.d_model, cfg.heads, cfg.kv_heads, cfg.head_dim].map(BigInt);
      const expected = projectionParams(d, h, hkv, dh);
      const working = `Q: d·h·d_h = ${fmt(d * h * dh)}; K and V: 2·d·h_kv·d_h = ${fmt(2n * d * hkv * dh)}; O: h·d_h·d = ${fmt(h * dh * d)}; total ${fmt(expected)}.`;
      return intQuestion("params", { cfg }, `How many parameters do the Q, K, V and O projections of ${layerText(cfg)} hold (no biases)?`,
        "parameters of one layer", expected, working, { wrong: hkv === h ? {} : { as_mha: projectionParams(d, h, h, dh) } });
    } },
    sequence_macs: { tag: "M", topic: "multiply-adds", make(rng) {
      const cfg = randomLayer(rng);
      const n = pick(rng, [128, 512, 1024, 2048, 4096]);
      const c = checkConfig(cfg);
      const expected = attentionMacs(c, BigInt(n), BigInt(n));
      const half = scoreCount(c.heads, BigInt(n)) * c.headDim;
      return intQuestion("sequence_macs", { cfg, n }, `How many multiply-adds do the score and value-mix steps of ${layerText(cfg)} take for a whole sequence of n = ${fmt(n)} tokens (no causal saving)?`,
        `attention multiply-adds (n=${n}, s=${n})`, expected,
        `Scores: h·n·n·d_h = ${fmt(half)}; value mix: the same again; total 2·h·n²·d_h = ${fmt(expected)}. The key-value heads play no part.`);
    } },
    decode_macs: { tag: "M", topic: "multiply-adds", make(rng) {
      const cfg = randomLayer(rng);
      const s = pick(rng, [1024, 2048, 4096, 8192, 32768]);
      const c = checkConfig(cfg);
      const expected = attentionMacs(c, BigInt(s), 1n);
      return intQuestion("decode_macs", { cfg, s }, `One new token is decoded by ${layerText(cfg)} against s = ${fmt(s)} cached tokens. How many multiply-adds do its scores and value mix take?`,
        `multiply-adds of one decode step (s=${s})`, expected,
        `One query per head: h·s·d_h for the scores and as many for the value mix: 2·${cfg.heads}·${fmt(s)}·${cfg.head_dim} = ${fmt(expected)}.`,
        { wrong: c.kvHeads === c.heads ? {} : { as_kv_heads: 2n * c.kvHeads * BigInt(s) * c.headDim } });
    } },
    scores: { tag: "E", topic: "scores", make(rng) {
      const cfg = randomLayer(rng);
      const n = pick(rng, [128, 512, 1024, 2048, 4096, 8192]);
      const expected = scoreCount(BigInt(cfg.heads), BigInt(n));
      return intQuestion("scores", { cfg, n }, `How many attention scores does ${layerText(cfg)} compute for one sequence of n = ${fmt(n)} tokens?`,
        `scores (n=${n})`, expected, `One n × n table per query head: h·n² = ${cfg.heads}·${fmt(n)}² = ${fmt(expected)}. h_kv does not change it.`);
    } },
    bytes_read: { tag: "E", topic: "KV cache", make(rng) {
      const cfg = randomLayer(rng);
      const s = pick(rng, [1024, 2048, 4096, 8192]);
      const dtype = pick(rng, dtypeNames());
      const c = checkConfig(cfg), bits = dtypeBits(dtype);
      const expected = kvBytesRead(c, BigInt(s), bits);
      return intQuestion("bytes_read", { cfg, s, dtype }, `Decoding one token, how many bytes of keys and values does one layer (h = ${cfg.heads}, h_kv = ${cfg.kv_heads}, d_h = ${cfg.head_dim}) read from a ${dtype} cache of s = ${fmt(s)} tokens?`,
        `bytes read per token by one layer (s=${s}, ${bits}-bit)`, expected,
        `s·2·h_kv·d_h numbers of ${bits} bits: ${fmt(s)}·2·${cfg.kv_heads}·${cfg.head_dim}·${bits}/8 = ${fmt(expected)} bytes.`);
    } },
    cache_per_token: { tag: "M", topic: "KV cache", make(rng) {
      const cfg = randomLayer(rng);
      const dtype = pick(rng, dtypeNames());
      const c = checkConfig(cfg), bits = dtypeBits(dtype);
      const expected = cachePerToken(c, bits);
      const asMha = cachePerToken(checkConfig({ ...cfg, kv_heads: cfg.heads }), bits);
      return intQuestion("cache_per_token", { cfg, dtype }, `How many bytes of KV cache does one token take in ${modelText(cfg)}, stored in ${dtype}, across all layers?`,
        `cache bytes per token (${bits}-bit)`, expected,
        `L·2·h_kv·d_h·b = ${cfg.layers}·2·${cfg.kv_heads}·${cfg.head_dim}·${bits}/8 = ${fmt(expected)} bytes (${formatBytes(expected)}).`,
        { wrong: c.kvHeads === c.heads ? {} : { as_mha: asMha }, values: { L: cfg.layers } });
    } },
    cache_batch: { tag: "M", topic: "KV cache", make(rng) {
      const cfg = randomLayer(rng);
      const s = pick(rng, [2048, 4096, 8192, 32768, 131072]), batch = pick(rng, [2, 4, 8, 16, 32, 64]);
      const dtype = pick(rng, dtypeNames());
      const c = checkConfig(cfg), bits = dtypeBits(dtype);
      const expected = cacheBytes(c, BigInt(s), BigInt(batch), bits);
      return intQuestion("cache_batch", { cfg, s, batch, dtype }, `How many bytes of KV cache does ${modelText(cfg)} hold for a batch of B = ${batch} sequences of s = ${fmt(s)} tokens in ${dtype}?`,
        `cache bytes (s=${s}, batch=${batch}, ${bits}-bit)`, expected,
        `Per token ${fmt(cachePerToken(c, bits))} bytes, times s·B = ${fmt(BigInt(s) * BigInt(batch))} tokens: ${fmt(expected)} bytes (${formatBytes(expected)}).`,
        { values: { L: cfg.layers, B: batch } });
    } },
    mla_cache: { tag: "H", topic: "KV cache", make(rng) {
      const cfg = randomLatent(rng);
      const dtype = pick(rng, dtypeNames());
      const c = checkConfig(cfg), bits = dtypeBits(dtype), L = BigInt(cfg.layers);
      const expected = cachePerToken(c, bits);
      const noRope = bytesOf(L * BigInt(cfg.latent), bits);
      const fullHeads = bytesOf(L * BigInt(cfg.heads) * BigInt(cfg.nope + cfg.rope + cfg.value_dim), bits);
      return intQuestion("mla_cache", { cfg, dtype }, `In ${modelText(cfg)} (per head: ${cfg.nope} + ${cfg.rope} numbers of query and key, ${cfg.value_dim} of value), how many bytes of cache does one token take in ${dtype}, across all layers?`,
        `MLA cache bytes per token (${bits}-bit)`, expected,
        `MLA caches the latent and the shared rotary key: L·(d_c + d_h^R)·b = ${cfg.layers}·(${cfg.latent} + ${cfg.rope})·${bits}/8 = ${fmt(expected)} bytes.`,
        { wrong: { no_rope: noRope, full_heads: fullHeads } });
    } },
    max_context: { tag: "H", topic: "memory", make(rng) {
      const cfg = pick(rng, [randomLayer, randomLayer, randomLatent])(rng);
      const [amount, unit] = pick(rng, [[16, "GiB"], [24, "GiB"], [40, "GB"], [80, "GB"], [141, "GB"]]);
      const batch = pick(rng, [1, 4, 8, 16]), dtype = pick(rng, dtypeNames());
      const c = checkConfig(cfg), bits = dtypeBits(dtype);
      const memory = memoryBytes(String(amount), unit);
      const expected = maxContext(c, memory, bits, BigInt(batch));
      return intQuestion("max_context", { cfg, memory: memory.toString(), batch, dtype }, `${modelText(cfg)[0].toUpperCase() + modelText(cfg).slice(1)} serves a batch of B = ${batch} in ${dtype}. With ${amount} ${unit} for the cache, what is the longest context per sequence that fits (whole tokens)?`,
        `longest context in ${formatBytes(memory)} (${bits}-bit, batch=${batch})`, expected,
        `${fmt(memory)} bytes ÷ (B · ${fmt(cachePerToken(c, bits))} bytes per token) = ${fmt(expected)} tokens, rounded down.`);
    } },
    intensity: { tag: "H", topic: "arithmetic intensity", make(rng) {
      const cfg = randomLayer(rng);
      const dtype = pick(rng, dtypeNames());
      const c = checkConfig(cfg), bits = dtypeBits(dtype), s = 1024n;
      const expected = intensity(c, s, bits);
      const group = Number(c.heads / c.kvHeads);
      const hints = (DATA.drill_hints.intensity.ratios || []).map(([key, hint]) => {
        const [top, bottom] = key.split("/");
        const value = (part) => (part === "g" ? group : Number(part));
        return [value(top) / (bottom === undefined ? 1 : value(bottom)), hint];
      });
      return { kind: "intensity", params: { cfg, dtype }, answer: "float", expected, hints, rtol: DATA.float_rtol,
        what: `FLOPs per byte (${bits}-bit)`,
        prompt: `Decoding one token, ${layerText(cfg)} reads its ${dtype} KV cache and does the score and value-mix arithmetic. How many FLOPs does it do per byte it reads (its arithmetic intensity)?`,
        working: `FLOPs 2·(2·h·s·d_h), bytes s·2·h_kv·d_h·b: the ratio is 2·h/(h_kv·b) = 2·${cfg.heads}/(${cfg.kv_heads}·${bits}/8) = ${formatGeneral(expected, 6)}, whatever s.` };
    } },
  };

  function generate(kind, seed) {
    const generator = GENERATORS[kind];
    if (!generator) throw new RangeError(`unknown drill ${kind}`);
    const question = generator.make(rngFrom(seed));
    question.tag = generator.tag;
    question.topic = generator.topic;
    question.seed = seed;
    return question;
  }

  // The answer typed in the box, checked: {correct, message}
  function check(question, text) {
    text = String(text).trim();
    if (question.answer === "shape") {
      const numbers = text.match(/-?\d+/g);
      if (!numbers) return { correct: false, message: "Type the shape as a tuple of whole numbers, such as (2, 8, 16, 64)." };
      const got = numbers.map((x) => BigInt(x).toString());
      const message = shapeMessage(got, question.expected, question.what);
      return { correct: message === null, message };
    }
    const plain = text.replace(/[\s,_]/g, "");
    if (question.answer === "float") {
      const got = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(plain) ? Number(plain) : NaN;
      if (!Number.isFinite(got)) return { correct: false, message: "Type a number, such as 16 or 2.5." };
      const message = floatMessage(got, question.expected, question.what, question.hints, question.rtol);
      return { correct: message === null, message };
    }
    if (!/^-?\d+$/.test(plain)) return { correct: false, message: "Type a whole number (digits; commas and spaces are fine)." };
    const message = intMessage(BigInt(plain), BigInt(question.expected), question.what, question.hints, question.wrong, question.values);
    return { correct: message === null, message };
  }

  const drills = { kinds: Object.keys(GENERATORS), tags: Object.fromEntries(Object.entries(GENERATORS).map(([k, g]) => [k, g.tag])),
                   topics: Object.fromEntries(Object.entries(GENERATORS).map(([k, g]) => [k, g.topic])), generate, check };

  window.MHA = {
    drills,
    positiveInt, divide, dtypeBits, formatInt, formatFixed, formatGeneral, formatBytes, checkConfig,
    kvElementsPerToken, cachePerToken, cacheBytes, kvBytesRead, attentionMacs, intensity, maxContext,
    scoreCount, projectionParams, memoryBytes, compute, intMessage, floatMessage, shapeMessage, tupleText,
    plan, fleet, expertsTouched,
  };
})();

/* --- the widgets ----------------------------------------------------------------------------- */
(function () {
  "use strict";
  const M = window.MHA;
  const S = window.MHA_SCHEDULE;
  const DATA = window.MHA_DATA;
  let uid = 0;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "html") node.innerHTML = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function field(label, input, hint) {
    const id = input.id || `mha-field-${++uid}`;
    input.id = id;
    return el("div", { class: "mha-field" }, el("label", { for: id, html: label }), input, hint ? el("span", { class: "mha-hint", text: hint }) : null);
  }

  function numberInput(value, name) {
    return el("input", { type: "text", inputmode: "numeric", autocomplete: "off", spellcheck: "false", value: String(value), "data-name": name });
  }

  function store(key, fallback) {
    try {
      return JSON.parse(window.localStorage.getItem(key)) || fallback;
    } catch (error) {
      return fallback; // storage switched off: progress lives as long as the page
    }
  }

  function save(key, value) {
    try {
      window.localStorage.setItem(key, JSON.stringify(value));
    } catch (error) {
      /* storage switched off or full: nothing to keep */
    }
  }

  function typeset(...nodes) {
    // MathJax may still be starting when a widget fills itself in: typeset once it is ready.
    const mj = window.MathJax;
    if (!mj) return;
    const ready = mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
    ready.then(() => mj.typesetPromise && mj.typesetPromise(nodes)).catch(() => {});
  }

  // --- the calculator -------------------------------------------------------------------------

  function calculator(root) {
    const presets = DATA.presets;
    const preset = el("select", { "data-name": "preset" },
      ...presets.map((p) => el("option", { value: p.name, text: `${p.name} (${p.variant.toUpperCase()})` })),
      el("option", { value: "", text: "your own" }));
    const kind = el("select", { "data-name": "kind" },
      el("option", { value: "kv", text: "keys and values per head (MHA, GQA, MQA)" }),
      el("option", { value: "mla", text: "a latent per token (MLA)" }));
    const inputs = {
      layers: numberInput(80, "layers"), heads: numberInput(64, "heads"), kv_heads: numberInput(8, "kv_heads"),
      head_dim: numberInput(128, "head_dim"), latent: numberInput(512, "latent"), rope: numberInput(64, "rope"),
      context: numberInput(8192, "context"), batch: numberInput(1, "batch"), bits: numberInput(6, "bits"),
      memory: el("input", { type: "text", inputmode: "decimal", autocomplete: "off", value: "80", "data-name": "memory" }),
    };
    const dtype = el("select", { "data-name": "dtype" },
      ...Object.entries(DATA.dtype_bits).map(([name, bits]) => el("option", { value: name, text: `${name} (${bits} bits)` })),
      el("option", { value: "", text: "other: bits per number" }));
    dtype.value = "bf16" in DATA.dtype_bits ? "bf16" : dtype.options[0].value;
    const units = [...Object.keys(DATA.decimal_units), ...Object.keys(DATA.binary_units)].filter((u) => u !== "B");
    const memoryUnit = el("select", { "data-name": "memory_unit", "aria-label": "memory unit" }, ...units.map((u) => el("option", { value: u, text: u })));
    memoryUnit.value = "GB";

    const kvFields = el("div", { class: "mha-row" },
      field("Query heads <var>h</var>", inputs.heads), field("Key-value heads <var>h<sub>kv</sub></var>", inputs.kv_heads),
      field("Head size <var>d<sub>h</sub></var>", inputs.head_dim));
    const mlaHeads = numberInput(64, "mla_heads");
    const mlaFields = el("div", { class: "mha-row", hidden: true },
      field("Query heads <var>h</var>", mlaHeads), field("Latent <var>d<sub>c</sub></var>", inputs.latent),
      field("Rotary key <var>d<sub>h</sub><sup>R</sup></var>", inputs.rope));
    const bitsField = field("Bits per number", inputs.bits);
    bitsField.hidden = true;
    const results = el("dl", { class: "mha-results" });
    const status = el("p", { class: "mha-error", role: "alert" });
    const model = el("fieldset", {}, el("legend", { text: "Model" }),
      el("div", { class: "mha-row" }, field("Preset", preset), field("Attention caches", kind), field("Layers <var>L</var>", inputs.layers)),
      kvFields, mlaFields);
    const form = el("form", { class: "mha-calc", "aria-label": "KV-cache calculator", onsubmit: (e) => e.preventDefault() },
      model,
      el("fieldset", {}, el("legend", { text: "Workload" }),
        el("div", { class: "mha-row" }, field("Context <var>s</var> (tokens)", inputs.context), field("Batch <var>B</var>", inputs.batch),
          field("Number format", dtype), bitsField),
        el("div", { class: "mha-row" }, el("div", { class: "mha-field" }, el("label", { for: "mha-calc-memory", text: "Memory for the cache" }),
          el("span", { class: "mha-inline" }, Object.assign(inputs.memory, { id: "mha-calc-memory" }), memoryUnit)))),
      el("output", { class: "mha-output", "aria-live": "polite" }, results, status));

    function load(name) {
      const p = presets.find((x) => x.name === name);
      if (!p) return;
      kind.value = p.mla ? "mla" : "kv";
      inputs.layers.value = p.num_layers;
      inputs.heads.value = mlaHeads.value = p.num_heads;
      if (p.mla) {
        inputs.latent.value = p.kv_lora_rank;
        inputs.rope.value = p.qk_rope_head_dim;
      } else {
        inputs.kv_heads.value = p.num_kv_heads;
        inputs.head_dim.value = p.head_dim;
      }
    }

    function row(term, value, detail) {
      results.append(el("dt", { text: term }), el("dd", {}, el("strong", { text: value }), detail ? el("span", { class: "mha-detail", text: " " + detail }) : null));
    }

    function update() {
      const mla = kind.value === "mla";
      kvFields.hidden = mla;
      mlaFields.hidden = !mla;
      bitsField.hidden = dtype.value !== "";
      results.textContent = "";
      status.textContent = "";
      try {
        const cfg = mla ? { mla, layers: inputs.layers.value, heads: mlaHeads.value, latent: inputs.latent.value, rope: inputs.rope.value }
          : { mla, layers: inputs.layers.value, heads: inputs.heads.value, kv_heads: inputs.kv_heads.value, head_dim: inputs.head_dim.value };
        const memory = M.memoryBytes(inputs.memory.value, memoryUnit.value);
        const r = M.compute(cfg, inputs.context.value, inputs.batch.value, dtype.value || inputs.bits.value, memory);
        const stores = mla ? `d_c + d_h^R = ${cfg.latent} + ${cfg.rope}` : `2 · h_kv · d_h = 2 · ${cfg.kv_heads} · ${cfg.head_dim}`;
        row("Numbers cached per token and layer", M.formatInt(r.elements_per_token_layer), `(${stores})`);
        row("Cache per token, all layers", r.per_token_text, `(${M.formatInt(r.per_token)} bytes at ${r.bits} bits a number)`);
        row(`Cache per sequence of ${M.formatInt(inputs.context.value)} tokens`, r.per_sequence_text, `(${M.formatInt(r.per_sequence)} bytes)`);
        row(`Cache for the batch of ${M.formatInt(inputs.batch.value)}`, r.batch_text, `(${M.formatInt(r.batch)} bytes)`);
        row(`Longest context that fits in ${inputs.memory.value} ${memoryUnit.value}`, `${M.formatInt(r.max_context)} tokens`,
          `per sequence, with a batch of ${M.formatInt(inputs.batch.value)}`);
        row("Decode intensity", `${M.formatGeneral(r.intensity, 4)} FLOPs per byte`,
          `(attention FLOPs of one decoded token per byte of cache read, one layer)`);
      } catch (error) {
        if (!(error instanceof RangeError)) throw error;
        status.textContent = error.message;
      }
    }

    preset.addEventListener("change", () => { load(preset.value); update(); });
    form.addEventListener("input", (event) => {
      if (event.target === mlaHeads) inputs.heads.value = mlaHeads.value;
      if (event.target === inputs.heads) mlaHeads.value = inputs.heads.value;
      // editing the model's shape by hand leaves the preset behind
      if (event.target !== preset && model.contains(event.target)) preset.value = "";
      update();
    });
    form.addEventListener("change", update);
    root.replaceChildren(form);
    preset.value = presets.some((p) => p.name === "llama-3-70b") ? "llama-3-70b" : presets[0].name;
    load(preset.value);
    update();
  }

  // --- the drills -----------------------------------------------------------------------------

  const PROGRESS = "mha-drills-progress";
  const DRILLS = "drills"; // the schedule's deck of drill kinds
  const CARD_DECK = "cards"; // and of flashcards

  function shuffled(xs) {
    const out = xs.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  // Export and import of the progress (schedule and tallies) as a JSON file: a learner's own backup,
  // or a move to another browser. Importing replaces what this browser holds, then reloads the page.
  function progressFile() {
    const status = el("p", { class: "mha-error", role: "alert" });
    const exportButton = el("button", { type: "button", class: "mha-button mha-quiet", text: "Export progress" });
    const input = el("input", { type: "file", accept: "application/json,.json", id: "mha-progress-file", class: "mha-file" });
    exportButton.addEventListener("click", () => {
      const blob = new Blob([S.exportText()], { type: "application/json" });
      const link = el("a", { href: URL.createObjectURL(blob), download: "mha-practice-progress.json" });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 0);
    });
    input.addEventListener("change", async () => {
      const file = input.files && input.files[0];
      if (!file) return;
      try {
        S.importText(await file.text());
        window.location.reload();
      } catch (error) {
        if (!(error instanceof RangeError)) throw error;
        status.textContent = `Not imported: ${error.message}.`;
      }
    });
    return el("div", { class: "mha-row mha-progress-file" }, exportButton,
      el("label", { for: "mha-progress-file", class: "mha-button mha-quiet", text: "Import progress" }), input, status);
  }

  function drillsWidget(root) {
    const kinds = M.drills.kinds;
    const topic = el("select", { "data-name": "topic" }, el("option", { value: "", text: "every topic" }),
      ...[...new Set(Object.values(M.drills.topics))].map((t) => el("option", { value: t, text: t })));
    const level = el("select", { "data-name": "level" }, el("option", { value: "", text: "every level" }),
      el("option", { value: "E", text: "[E] easy" }), el("option", { value: "M", text: "[M] medium" }), el("option", { value: "H", text: "[H] hard" }));
    const prompt = el("p", { class: "mha-prompt", id: "mha-drill-prompt" });
    const tag = el("span", { class: "mha-tag" });
    const answer = el("input", { type: "text", autocomplete: "off", spellcheck: "false", id: "mha-drill-answer", "aria-describedby": "mha-drill-prompt" });
    const feedback = el("p", { class: "mha-feedback", role: "status" });
    const working = el("div", { class: "mha-working-body" });
    const details = el("details", { class: "mha-working" }, el("summary", { text: "Show the working" }), working);
    const progress = el("p", { class: "mha-progress" });
    const next = el("button", { type: "button", class: "mha-button", text: "New question" });
    const reset = el("button", { type: "button", class: "mha-button mha-quiet", text: "Reset progress" });
    const due = el("p", { class: "mha-due", "aria-live": "polite" });
    let question = null;
    let schedule = S.load();

    function pool() {
      return kinds.filter((k) => (!topic.value || M.drills.topics[k] === topic.value) && (!level.value || M.drills.tags[k] === level.value));
    }

    function showDue() {
      const kindsHere = pool();
      const waiting = S.queue(schedule, DRILLS, kindsHere).filter((k) => S.item(schedule, DRILLS, k));
      const sum = S.summary(schedule, DRILLS, kindsHere);
      const topics = [...new Set(waiting.map((k) => M.drills.topics[k]))];
      due.textContent = (waiting.length ? `Due now: ${waiting.length} kind(s) of question you answered before (${topics.join(", ")})` : "Nothing due for review now")
        + `; due later today: ${sum.today - sum.due}; not tried yet: ${sum.fresh}.`;
    }

    function showProgress() {
      const p = store(PROGRESS, {});
      const tried = Object.values(p).reduce((a, x) => a + x.tried, 0);
      const right = Object.values(p).reduce((a, x) => a + x.right, 0);
      const here = question ? p[question.kind] || { tried: 0, right: 0 } : null;
      progress.textContent = `Answered right at the first try: ${right} of ${tried} questions` +
        (here ? `; ${M.drills.topics[question.kind]}: ${here.right} of ${here.tried}.` : ".");
    }

    function newQuestion() {
      // due reviews first, then kinds not tried yet (in random order), else any kind: free practice
      const here = shuffled(pool());
      const waiting = S.queue(schedule, DRILLS, here);
      const kind = waiting[0] || here[Math.floor(Math.random() * here.length)] || kinds[0];
      question = M.drills.generate(kind, Math.floor(Math.random() * 2 ** 32));
      question.tried = false;
      tag.textContent = `[${question.tag}]`;
      tag.title = { E: "easy", M: "medium", H: "hard" }[question.tag];
      prompt.replaceChildren(tag, " ", question.prompt);
      answer.value = "";
      feedback.textContent = "";
      feedback.className = "mha-feedback";
      details.open = false;
      working.textContent = question.working;
      showProgress();
      showDue();
    }

    function submit(event) {
      event.preventDefault();
      if (!question || !answer.value.trim()) return;
      const result = M.drills.check(question, answer.value);
      if (!question.tried && !/^Type /.test(result.message || "")) {
        question.tried = true;
        const p = store(PROGRESS, {});
        const entry = p[question.kind] || { tried: 0, right: 0 };
        entry.tried += 1;
        entry.right += result.correct ? 1 : 0;
        p[question.kind] = entry;
        save(PROGRESS, p);
        schedule = S.record(schedule, DRILLS, question.kind, result.correct);
        S.save(schedule);
        showDue();
      }
      feedback.textContent = result.correct ? "Right." : result.message;
      feedback.className = "mha-feedback " + (result.correct ? "mha-right" : "mha-wrong");
      showProgress();
    }

    next.addEventListener("click", () => { newQuestion(); answer.focus(); });
    reset.addEventListener("click", () => {
      save(PROGRESS, {});
      schedule = { ...schedule, decks: { ...schedule.decks, [DRILLS]: {} } };
      S.save(schedule);
      showProgress();
      showDue();
    });
    topic.addEventListener("change", newQuestion);
    level.addEventListener("change", newQuestion);
    root.replaceChildren(el("section", { class: "mha-drills", "aria-label": "Drills" },
      el("div", { class: "mha-row" }, field("Topic", topic), field("Level", level), el("div", { class: "mha-field mha-end" }, next)),
      prompt,
      el("form", { class: "mha-answer", onsubmit: submit }, el("label", { for: "mha-drill-answer", text: "Your answer" }),
        el("span", { class: "mha-inline" }, answer, el("button", { type: "submit", class: "mha-button", text: "Check" }))),
      feedback, details, due, el("div", { class: "mha-row mha-footer" }, progress, reset), progressFile()));
    newQuestion();
  }

  // --- the flashcards -------------------------------------------------------------------------

  const CARDS = "mha-flashcards-progress";

  function flashcards(root) {
    const cards = window.MHA_FLASHCARDS || [];
    if (!cards.length) {
      root.replaceChildren(el("p", { class: "mha-empty", text: "No flashcards yet: they are made from the follow-up chains at the end of the chapters, and no chapter has one so far." }));
      return;
    }
    const ids = cards.map((c) => c.id);
    let schedule = S.load();
    let index = Math.max(0, ids.indexOf(S.next(schedule, CARD_DECK, ids)));
    const tag = el("span", { class: "mha-tag" });
    const question = el("div", { class: "mha-card-question", id: "mha-card-question" });
    const source = el("p", { class: "mha-card-source" });
    const answer = el("div", { class: "mha-card-answer", id: "mha-card-answer", hidden: true });
    const reveal = el("button", { type: "button", class: "mha-button mha-reveal", "aria-expanded": "false", "aria-controls": "mha-card-answer", text: "Show the answer" });
    const counter = el("p", { class: "mha-progress", "aria-live": "polite" });
    const due = el("p", { class: "mha-due" });
    // "I knew it" is a right answer, "Ask me again" a wrong one: the schedule picks the next card.
    const mark = (value) => () => {
      const p = store(CARDS, {});
      p[cards[index].id] = value;
      save(CARDS, p);
      schedule = S.record(schedule, CARD_DECK, cards[index].id, value === "known");
      S.save(schedule);
      index = Math.max(0, ids.indexOf(S.next(schedule, CARD_DECK, ids)));
      show();
    };
    const known = el("button", { type: "button", class: "mha-button", text: "I knew it", onclick: mark("known") });
    const again = el("button", { type: "button", class: "mha-button mha-quiet", text: "Ask me again", onclick: mark("again") });

    function show() {
      const card = cards[index];
      const p = store(CARDS, {});
      tag.textContent = card.tag ? `[${card.tag}]` : "";
      question.innerHTML = card.question_html;
      question.prepend(tag, " ");
      answer.innerHTML = card.answer_html;
      answer.hidden = true;
      reveal.setAttribute("aria-expanded", "false");
      reveal.textContent = "Show the answer";
      source.replaceChildren("From ", el("a", { href: card.url, text: card.page }));
      const knownCount = cards.filter((c) => p[c.id] === "known").length;
      counter.textContent = `Card ${index + 1} of ${cards.length}; you knew ${knownCount}.`;
      const sum = S.summary(schedule, CARD_DECK, ids);
      due.textContent = `Due now: ${sum.due} card(s) to review; due later today: ${sum.today - sum.due}; not seen yet: ${sum.fresh}.`;
      typeset(question, answer);  // the hidden answer too, so that revealing it shows typeset maths
    }

    function move(step) {
      index = (index + step + cards.length) % cards.length;
      show();
    }

    reveal.addEventListener("click", () => {
      answer.hidden = !answer.hidden;
      reveal.setAttribute("aria-expanded", String(!answer.hidden));
      reveal.textContent = answer.hidden ? "Show the answer" : "Hide the answer";
      if (!answer.hidden) typeset(answer);
    });
    root.replaceChildren(el("section", { class: "mha-cards", "aria-label": "Flashcards" }, question, source, reveal, answer,
      el("div", { class: "mha-row" }, known, again,
        el("button", { type: "button", class: "mha-button mha-quiet", text: "Previous", onclick: () => move(-1) }),
        el("button", { type: "button", class: "mha-button mha-quiet", text: "Next", onclick: () => move(1) })),
      counter, due));
    show();
  }

  // --- the deployment planner -------------------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children) if (child) node.append(child);
    return node;
  }

  // TPOT (ms) and decode tokens/s per GPU against the batch, for the batches that fit
  function batchChart(points) {
    const [W, H, L, R, T, B] = [560, 240, 56, 64, 12, 40];
    const xs = points.map((p) => Math.log2(p.batch));
    const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1;
    const tp = points.map((p) => p.tpot_ms), rate = points.map((p) => p.rate);
    const yMax = (v) => Math.max(...v) * 1.1 || 1;
    const [tMax, rMax] = [yMax(tp), yMax(rate)];
    const X = (x) => L + ((x - x0) / (x1 - x0 || 1)) * (W - L - R);
    const Y = (y, max) => T + (1 - y / max) * (H - T - B);
    const line = (vals, max, cls) => svg("polyline", { class: cls, fill: "none", "stroke-width": "2",
      points: points.map((p, i) => `${X(xs[i]).toFixed(1)},${Y(vals[i], max).toFixed(1)}`).join(" ") });
    const text = (x, y, t, anchor, cls) => { const n = svg("text", { x, y, "text-anchor": anchor || "middle", class: cls || "mha-chart-label" }); n.textContent = t; return n; };
    const last = points[points.length - 1];
    const title = svg("title");
    title.textContent = `Time per output token rises from ${tp[0].toFixed(1)} to ${last.tpot_ms.toFixed(1)} ms and decode tokens per second per GPU from ${rate[0].toFixed(0)} to ${last.rate.toFixed(0)} as the batch grows from ${points[0].batch} to ${last.batch}.`;
    return svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "mha-chart", "aria-labelledby": "mha-planner-chart-title" },
      Object.assign(title, { id: "mha-planner-chart-title" }),
      svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "mha-chart-axis" }),
      svg("line", { x1: L, y1: T, x2: L, y2: H - B, class: "mha-chart-axis" }),
      svg("line", { x1: W - R, y1: T, x2: W - R, y2: H - B, class: "mha-chart-axis" }),
      line(tp, tMax, "mha-chart-tpot"), line(rate, rMax, "mha-chart-rate"),
      text(L - 6, T + 4, tMax.toFixed(1), "end"), text(L - 6, H - B, "0", "end"),
      text(W - R + 6, T + 4, rMax.toFixed(0), "start"), text(W - R + 6, H - B, "0", "start"),
      text(X(x0), H - B + 16, String(points[0].batch)), text(X(x1), H - B + 16, String(last.batch)),
      text((L + W - R) / 2, H - 6, "batch (sequences decoding together, log scale)"),
      text(L, T - 2, "TPOT floor (ms)", "start", "mha-chart-label mha-chart-tpot-label"),
      text(W - R, T - 2, "tokens/s per GPU", "end", "mha-chart-label mha-chart-rate-label"));
  }

  function planner(root) {
    const D = DATA.deployment;
    const model = el("select", { "data-name": "model" }, ...D.models.map((m) => el("option", { value: m.name, text: m.title })));
    const gpu = el("select", { "data-name": "gpu" }, ...D.gpus.map((g) => el("option", { value: g.name, text: g.title })));
    const formats = Object.keys(DATA.dtype_bits);
    const fmt = (name, value) => {
      const select = el("select", { "data-name": name }, ...formats.map((f) => el("option", { value: f, text: f })));
      select.value = value;
      return select;
    };
    const inputs = {
      num_gpus: numberInput(8, "num_gpus"), tp: numberInput(8, "tp"), context: numberInput(8192, "context"),
      batch: numberInput(32, "batch"), output: numberInput(500, "output"),
      rate: el("input", { type: "text", inputmode: "decimal", autocomplete: "off", value: "10", "data-name": "rate" }),
      price: el("input", { type: "text", inputmode: "decimal", autocomplete: "off", value: "2", "data-name": "price" }),
    };
    const weightFmt = fmt("weight_fmt", "bf16"), kvFmt = fmt("kv_fmt", "bf16");
    const results = el("dl", { class: "mha-results" });
    const status = el("p", { class: "mha-error", role: "alert" });
    const chart = el("figure", { class: "mha-figure" });
    const form = el("form", { class: "mha-calc", "aria-label": "Deployment planner", onsubmit: (e) => e.preventDefault() },
      el("fieldset", {}, el("legend", { text: "Model and hardware" }),
        el("div", { class: "mha-row" }, field("Model", model), field("GPU", gpu), field("GPUs in all", inputs.num_gpus),
          field("Tensor parallel <var>t</var> (GPUs per replica)", inputs.tp))),
      el("fieldset", {}, el("legend", { text: "Workload" }),
        el("div", { class: "mha-row" }, field("Context <var>s</var> (tokens)", inputs.context), field("Batch <var>B</var> (sequences)", inputs.batch),
          field("Weights", weightFmt), field("KV cache", kvFmt)),
        el("div", { class: "mha-row" }, field("Requests per second", inputs.rate), field("Output tokens per request", inputs.output),
          field("Dollars per GPU-hour", inputs.price))),
      el("output", { class: "mha-output", "aria-live": "polite" }, results, status), chart);

    function row(term, value, detail) {
      results.append(el("dt", { text: term }), el("dd", {}, el("strong", { text: value }), detail ? el("span", { class: "mha-detail", text: " " + detail }) : null));
    }

    function update() {
      results.textContent = "";
      status.textContent = "";
      chart.replaceChildren();
      try {
        const opts = { num_gpus: inputs.num_gpus.value, tp: inputs.tp.value, context_len: inputs.context.value,
                       batch_size: inputs.batch.value, weight_fmt: weightFmt.value, kv_fmt: kvFmt.value };
        const p = M.plan(model.value, gpu.value, opts);
        const f = M.fleet(p, inputs.rate.value, inputs.output.value, inputs.price.value);
        row("Weights per GPU", M.formatBytes(BigInt(p.weight_bytes_per_gpu), "GB"));
        row("Cache per sequence per GPU", M.formatBytes(BigInt(p.kv_bytes_per_sequence_per_gpu)));
        row("Sequences that fit beside the weights", M.formatInt(p.max_sequences), p.fits ? "(the batch fits)" : "(the batch does NOT fit)");
        row("Decode step floor = time per output token", `${M.formatFixed(1e3 * p.decode_step_s, 2)} ms`, `(${p.decode_bound}-bound)`);
        row("Decode tokens/s per GPU", M.formatFixed(p.tokens_per_s_per_gpu, 0));
        row("Prefill floor for one prompt of the context", `${M.formatFixed(1e3 * p.prefill_s, 1)} ms`, "(time to first token, alone on the replica)");
        row("Requests in flight (Little's law)", M.formatFixed(f.in_flight, 1));
        row("GPUs for the request rate", M.formatInt(f.gpus), `(${f.replicas} replica(s) of ${p.tp})`);
        row("Cost per million output / input tokens", `$${M.formatFixed(f.output_cost_per_million, 3)} / $${M.formatFixed(f.input_cost_per_million, 3)}`);
        const points = [];
        for (let b = 1; b <= Math.min(p.max_sequences, 4096); b *= 2) {
          const q = M.plan(model.value, gpu.value, { ...opts, batch_size: b });
          points.push({ batch: b, tpot_ms: 1e3 * q.decode_step_s, rate: q.tokens_per_s_per_gpu });
        }
        if (points.length > 1) chart.append(batchChart(points), el("figcaption", { text: "Floors at the GPU's peak rates: time per output token (solid) and decode tokens per second per GPU (dashed) against the batch." }));
      } catch (error) {
        if (!(error instanceof RangeError)) throw error;
        status.textContent = error.message;
      }
    }

    model.addEventListener("change", () => {
      const m = D.models.find((x) => x.name === model.value);
      if (m && m.name === "deepseek-v3") weightFmt.value = "fp8";
      update();
    });
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    root.replaceChildren(form);
    model.value = D.models.some((m) => m.name === "llama-3-70b") ? "llama-3-70b" : D.models[0].name;
    gpu.value = D.gpus.some((g) => g.name === "h100-sxm") ? "h100-sxm" : D.gpus[0].name;
    update();
  }

  const WIDGETS = { "kv-calculator": calculator, drills: drillsWidget, flashcards, "deployment-planner": planner };

  function start() {
    document.querySelectorAll("[data-mha-widget]").forEach((root) => WIDGETS[root.dataset.mhaWidget](root));
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
