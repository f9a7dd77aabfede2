"""Helpers for tests/test_site.py: mha_kit's answers for the page's calculator and drills, and
the lines of the course that the learner edition must never contain."""

import json
import random
import re
from fractions import Fraction
from html import unescape
from pathlib import Path

import mha_kit as mk
from booktoc import REPO_ROOT
from mha_course.judge.expect import expect_float, expect_int, expect_shape

# --- the calculator ----------------------------------------------------------------------------


def page_config(cfg):
    """A config as the page's calculator takes it."""
    if cfg.variant == "mla":
        return {"mla": True, "layers": cfg.num_layers, "heads": cfg.num_heads,
                "latent": cfg.kv_lora_rank, "rope": cfg.qk_rope_head_dim}
    return {"mla": False, "layers": cfg.num_layers, "heads": cfg.num_heads,
            "kv_heads": cfg.num_kv_heads, "head_dim": cfg.head_dim}


def calculator_answers(cfg, context, batch, dtype, memory):
    """What the calculator must show, from mha_kit: exact integers as strings, the intensity as a float."""
    return {
        "elements_per_token_layer": str(mk.kv_elements_per_token(cfg)),
        "bits": str(mk.dtype_bits(dtype)),
        "per_token": str(mk.kv_cache_bytes_per_token(cfg, dtype)),
        "per_sequence": str(mk.kv_cache_bytes(cfg, context, 1, dtype)),
        "batch": str(mk.kv_cache_bytes(cfg, context, batch, dtype)),
        "max_context": str(mk.max_context_tokens(cfg, memory, dtype, batch)),
        "bytes_read": str(mk.kv_bytes_read(cfg, context, dtype)),
        "decode_macs": str(mk.attention_macs(cfg, context)),
        "intensity": mk.arithmetic_intensity(cfg, context, dtype),
        "per_token_text": mk.format_bytes(mk.kv_cache_bytes_per_token(cfg, dtype)),
        "per_sequence_text": mk.format_bytes(mk.kv_cache_bytes(cfg, context, 1, dtype)),
        "batch_text": mk.format_bytes(mk.kv_cache_bytes(cfg, context, batch, dtype)),
        "memory_text": mk.format_bytes(memory),
    }


def random_config(rng):
    """A valid config of any size, MLA one time in four."""
    layers = rng.choice([1, 2, 7, 32, 61, 80, 126, rng.randint(1, 300)])
    heads = rng.choice([1, 3, 8, 12, 28, 64, 71, 128, rng.randint(1, 256)])
    if rng.random() < 0.25:
        rope = 2 * rng.randint(1, 128)
        return mk.LatentAttentionConfig(5120, heads, rng.choice([1, 96, 512, rng.randint(1, 2048)]), rope, 128, 128,
                                        num_layers=layers)
    kv_heads = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
    head_dim = rng.choice([1, 3, 64, 80, 128, 256, rng.randint(1, 1024)])
    return mk.AttentionConfig(4096, heads, kv_heads, head_dim, layers)


def random_case(rng):
    """(cfg, context, batch, dtype, memory): sizes that reach past 2**53 bytes."""
    dtype = rng.choice([*mk.DTYPE_BITS, rng.randint(1, 64)])
    context = rng.choice([1, 4096, 8192, 131072, rng.randint(1, 10**7)])
    batch = rng.choice([1, 8, 64, rng.randint(1, 10**4)])
    memory = rng.choice([0, 80 * 10**9, 141 * 10**9, 16 * 2**30, rng.randint(0, 2**60)])
    return random_config(rng), context, batch, dtype, memory


def random_cases(count, seed):
    rng = random.Random(seed)
    return [random_case(rng) for _ in range(count)]


# --- the drills --------------------------------------------------------------------------------


def drill_config(cfg):
    """The mha_kit config of a drill's configuration."""
    if cfg["mla"]:
        return mk.LatentAttentionConfig(5120, cfg["heads"], cfg["latent"], cfg["rope"], cfg["nope"],
                                        cfg["value_dim"], num_layers=cfg["layers"])
    return mk.AttentionConfig(cfg["d_model"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["layers"])


def drill_shape(what, cfg, b, n):
    """The shape a drill asks for, worked out here from the tensor's name."""
    h, h_kv, d_h = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    return {
        "the queries after splitting into heads": (b, h, n, d_h),
        "the keys after splitting into heads": (b, h_kv, n, d_h),
        "the attention scores": (b, h, n, n),
        "the output after merging the heads (before W_O)": (b, n, h * d_h),
        "the values before splitting into heads": (b, n, h_kv * d_h),
    }[what]


def drill_answer(question):
    """mha_kit's answer to a drill question the page made."""
    p, kind = question["params"], question["kind"]
    cfg = drill_config(p["cfg"])
    if kind == "shape":
        return drill_shape(question["what"], cfg, p["b"], p["n"])
    return {
        "params": lambda: mk.projection_params(cfg),
        "sequence_macs": lambda: mk.sequence_attention_macs(cfg, p["n"]),
        "decode_macs": lambda: mk.attention_macs(cfg, p["s"]),
        "scores": lambda: mk.score_count(cfg, p["n"]),
        "bytes_read": lambda: mk.kv_bytes_read(cfg, p["s"], p.get("dtype")),
        "cache_per_token": lambda: mk.kv_cache_bytes_per_token(cfg, p.get("dtype")),
        "cache_batch": lambda: mk.kv_cache_bytes(cfg, p["s"], p.get("batch"), p.get("dtype")),
        "mla_cache": lambda: mk.kv_cache_bytes_per_token(cfg, p.get("dtype")),
        "max_context": lambda: mk.max_context_tokens(cfg, int(p.get("memory", 0)), p.get("dtype"), p.get("batch")),
        "intensity": lambda: mk.arithmetic_intensity(cfg, 1024, p.get("dtype")),
    }[kind]()


def classic_mistakes(question):
    """The exact values of the mistakes a drill names, computed here with mha_kit."""
    p, kind = question["params"], question["kind"]
    cfg = drill_config(p["cfg"])
    dtype = p.get("dtype")
    if kind == "params" and cfg.variant != "mha":
        return {"as_mha": mk.projection_params(cfg.with_kv_heads(None))}
    if kind == "cache_per_token" and cfg.variant != "mha":
        return {"as_mha": mk.kv_cache_bytes_per_token(cfg.with_kv_heads(None), dtype)}
    if kind == "decode_macs" and cfg.variant != "mha":
        return {"as_kv_heads": 2 * cfg.num_kv_heads * p["s"] * cfg.head_dim}
    if kind == "mla_cache":
        bits = mk.dtype_bits(dtype)
        return {"no_rope": -(-cfg.num_layers * cfg.kv_lora_rank * bits // 8),
                "full_heads": -(-cfg.num_layers * cfg.num_heads * (cfg.qk_head_dim + cfg.v_head_dim) * bits // 8)}
    return {}


def exercise_message(question, got, hints_table):
    """The message mha_course.judge.expect gives for ``got``, with the exercises' hints (None: right)."""
    p, kind = question["params"], question["kind"]
    cfg = drill_config(p["cfg"])
    values = {"L": cfg.num_layers, "B": p.get("batch", 1), "g": getattr(cfg, "group_size", 1)}
    try:
        if kind == "shape":
            expect_shape(got, drill_answer(question), question["what"])
        elif kind == "intensity":
            hints = {_ratio(key, values, float): hint for key, hint in hints_table[kind]["ratios"]}
            expect_float(got, drill_answer(question), question["what"], hints=hints)
        else:
            spec = hints_table.get(kind, {})
            hints = {_ratio(key, values, Fraction): hint for key, hint in spec.get("ratios", [])}
            mistakes = classic_mistakes(question)
            wrong = {mistakes[key]: hint for key, hint in spec.get("wrong", []) if key in mistakes}
            expect_int(got, drill_answer(question), question["what"], hints=hints, wrong=wrong)
    except AssertionError as error:
        return str(error)
    return None


def _ratio(key, values, kind):
    top, _, bottom = key.partition("/")
    number = lambda part: values[part] if part in values else int(part)  # noqa: E731
    if kind is float:
        return number(top) / (number(bottom) if bottom else 1)
    return Fraction(number(top), number(bottom) if bottom else 1)


def wrong_answers(question, answer, rng):
    """Answers a learner might type: the classic mistakes and a few others."""
    if question["kind"] == "shape":
        shape = tuple(answer)
        return [shape[::-1], shape[:-1], shape[:1] + tuple(x + 1 for x in shape[1:]), shape]
    if question["kind"] == "intensity":
        return [answer, answer / 2, answer * 2, answer / 4, answer + 1.5, 0.5 * answer]
    mistakes = list(classic_mistakes(question).values())
    picks = [answer, answer * 2, answer * 8, answer // 2, answer // 8, answer * 3 + 1, 0, -answer, answer - 1]
    config = drill_config(question["params"]["cfg"])
    picks.append(answer // config.num_layers)
    return picks + mistakes + [rng.randint(1, 10**12)]


def typed(got):
    """The text a learner types for ``got``."""
    if isinstance(got, tuple):
        return "(" + ", ".join(str(x) for x in got) + ")"
    return repr(got) if isinstance(got, float) else f"{got:,}"


# --- the learner edition -----------------------------------------------------------------------

SECRET_MARKERS = {
    "### BEGIN SOLUTION": "### END SOLUTION",
    "### BEGIN HIDDEN TESTS": "### END HIDDEN TESTS",
}
MIN_SECRET_LENGTH = 12  # shorter lines ("return x", "pass") say nothing
# A line that only returns or prints one name says nothing either, however long the name:
# "return reused" is also a chapter's "return reused, prompts".
BARE_NAME = re.compile(r"(return|print\()\s*[A-Za-z_]\w*\)?")


def is_secret(line):
    """Whether a stripped solution line gives something away once it appears on the site."""
    return len(line) >= MIN_SECRET_LENGTH and not BARE_NAME.fullmatch(line)


def _normal(text):
    return " ".join(text.split())


def _notebook_lines(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        yield from source.splitlines()


def secret_lines():
    """Every non-trivial line inside a solution region or a hidden-test region of solutions/,
    less those the released exercises show anyway (a signature, a docstring) and those of mha_kit's
    own source (``if mask is not None:``): a learner has mha_kit, and the browser edition runs it."""
    released = {_normal(line) for path in REPO_ROOT.glob("exercises/*/*.ipynb") for line in _notebook_lines(path)}
    released |= {_normal(line) for path in REPO_ROOT.glob("mha_kit/*.py") for line in path.read_text().splitlines()}
    secrets = set()
    for path in sorted(REPO_ROOT.glob("solutions/*/*.ipynb")):
        end = None
        for line in _notebook_lines(path):
            stripped = line.strip()
            if end is None:
                end = next((stop for start, stop in SECRET_MARKERS.items() if stripped.startswith(start)), None)
                continue
            if stripped.startswith(end):
                end = None
            elif is_secret(stripped) and _normal(stripped) not in released:
                secrets.add(_normal(stripped))
    return secrets


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        if value and all(isinstance(item, str) for item in value):
            yield "".join(value)
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _readable(raw, suffix):
    """A file's text as a reader could see it: raw, without tags, and its JSON strings decoded."""
    texts = [raw]
    if suffix in (".html", ".htm", ".js", ".txt"):
        texts.append(unescape(re.sub(r"<[^>]+>", "", raw)))
    if suffix in (".ipynb", ".json"):
        try:
            for text in _strings(json.loads(raw)):
                texts += [text, unescape(re.sub(r"<[^>]+>", "", text))]
        except ValueError:
            pass
    return [_normal(text) for text in texts]


def readable_texts(path):
    """The file as a reader could see it: raw, without tags, and its JSON strings decoded."""
    return _readable(path.read_text(encoding="utf-8", errors="replace"), path.suffix)


BINARY_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".woff", ".woff2", ".ttf", ".eot", ".otf", ".pickle", ".doctree",
                   ".wasm", ".so", ".pyc"}


def archive_members(path):
    """``{member: text}`` of the text files inside a ``.tar.gz`` (the browser edition's kernel packages:
    a file packed there is readable by anyone who opens the archive)."""
    import tarfile

    found = {}
    with tarfile.open(path, "r:gz") as archive:
        for member in archive.getmembers():
            if member.isfile() and Path(member.name).suffix.lower() not in BINARY_SUFFIXES:
                found[member.name] = archive.extractfile(member).read().decode("utf-8", errors="replace")
    return found


def _hits(texts, prepared):
    words = set().union(*(text.split(" ") for text in texts))
    return sorted(line for line, inner in prepared if inner <= words and any(line in text for text in texts))


def _member_hits(member, text, prepared):
    """Python source is read line by line (a line of code is a line); anything else as a reader sees it."""
    if member.endswith(".py"):
        lines = {_normal(line) for line in text.splitlines()}
        return sorted(line for line, _ in prepared if line in lines)
    return _hits(_readable(text, Path(member).suffix), prepared)


def leaks(folder, secrets, skip=()):
    """``{file: [secret lines found in it]}`` for every file under ``folder``, and every text file
    inside a ``.tar.gz`` there (``archive.tar.gz!member``: the browser edition's kernel packages);
    ``skip``: paths relative to ``folder`` of files not to read (packages copied unchanged from a
    pinned third-party wheel).

    Texts and lines are whitespace-normalised, so a text that holds a line holds each of its words
    but the first and the last (which may run on into a neighbour) as a word of its own: a line
    is searched for only in a file that has all of those, which spares most of the searches.
    """
    prepared = [(line, frozenset(line.split(" ")[1:-1])) for line in sorted(secrets)]
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or path.suffix.lower() in BINARY_SUFFIXES or rel in skip:
            continue
        if path.name.endswith(".tar.gz"):
            for member, text in archive_members(path).items():
                hits = _member_hits(member, text, prepared)
                if hits:
                    found[f"{rel}!{member}"] = hits
            continue
        hits = _hits(readable_texts(path), prepared)
        if hits:
            found[rel] = hits
    return found
