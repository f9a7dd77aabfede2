"""The browser edition's own part of the kernel: an IPython extension, loaded when the kernel starts.

Packed into the kernel's environment by website/lite/site.py, with ``etc/ipython/ipython_config.py``
(``c.InteractiveShellApp.extensions = ["mha_lite"]``) and ``rules.json`` beside this file.

In the browser, as on the desktop, a test cell's ``run(question, call, *cases)`` judges the
learner's results at once, in the learner's own kernel, against ``mha_kit``'s references
(:mod:`mha_course.kernel.cases`, the inline judge): the same one-line messages. This is a self-check;
marks come from nbgrader, in the instructor's sandboxed grading kernel.

The desktop's ``python -m mha_course.check`` adds one thing Validate cannot see: an answer that
calls an ``mha_kit`` reference that the graded kernel switches off (``mk.split_heads`` in the
assignment that asks for it) passes where the whole ``mha_kit`` is installed, and scores 0 when graded. This extension
wraps ``run`` so that the page says it too: once the judge has passed every case, the functions the
test calls (and the learner's functions they call) are read (their bytecode, so that no source file
is needed) for ``mk.NAME``, ``mha_kit.NAME`` and ``from mha_kit import NAME``; a refused ``NAME``
fails the test with ``NOT ALLOWED: <the graded kernel's rule> (in <function>; it scores 0 when graded)``.
It also prints one line when the answer uses a numpy name that numpy 2 removed (``np.float_``,
``np.Inf``): this page runs numpy 1.25, the grading kernel numpy 2 (:func:`numpy2_warning`).

``rules.json`` is written at build time: ``{"questions": {question id: assignment},
"refused": {assignment: {mk name: rule}}}`` (``mha_course.check``'s rules, from the course manifest).
"""

import dis
import functools
import json
import sys
import types
from pathlib import Path

RULES_FILE = Path(__file__).with_name("rules.json")
_KIT = "mha_kit"


@functools.lru_cache(maxsize=None)
def rules():
    return json.loads(RULES_FILE.read_text(encoding="utf-8"))


def _is_kit(value):
    """Whether ``value`` is ``mha_kit`` or one of its modules."""
    return isinstance(value, types.ModuleType) and (value.__name__ == _KIT or value.__name__.startswith(_KIT + "."))


def _is_learners(value):
    """A function the learner wrote in the notebook (its module is ``__main__``)."""
    return isinstance(value, types.FunctionType) and value.__module__ == "__main__"


def _codes(code):
    """A code object and the code objects nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def kit_names(code, namespace):
    """``(mha_kit names read, learner's functions named)`` by ``code``, whose globals are ``namespace``.

    An ``mha_kit`` name is read as ``mk.NAME`` (``mk`` a global, or a local from ``import mha_kit as
    mk``, bound to ``mha_kit`` or one of its modules: ``mk.attention.NAME`` too), as ``from mha_kit
    import NAME``, or as a global bound to one of ``mha_kit``'s functions.
    """
    names, learners, local_kit = set(), [], {}
    current = None  # the mha_kit module that the instruction before put on the stack
    importing = None  # the mha_kit module an IMPORT_NAME just imported
    previous = None
    for ins in dis.get_instructions(code):
        op, arg = ins.opname, ins.argval
        if op in ("LOAD_GLOBAL", "LOAD_NAME"):
            value = namespace.get(arg)
            current = value if _is_kit(value) else None
            if _is_learners(value):
                learners.append(value)
            elif callable(value) and str(getattr(value, "__module__", "")).startswith(_KIT):
                names.add(getattr(value, "__name__", arg))
        elif op in ("LOAD_FAST", "LOAD_DEREF"):
            current = local_kit.get(arg)
        elif op.startswith(("LOAD_ATTR", "LOAD_METHOD")) and current is not None:
            names.add(arg)
            attribute = getattr(current, arg, None)
            current = attribute if _is_kit(attribute) else None
        elif op == "IMPORT_NAME":
            importing = sys.modules.get(_KIT) if str(arg).split(".")[0] == _KIT else None
            current = None
        elif op == "IMPORT_FROM" and importing is not None:
            names.add(arg)
        elif op.startswith("STORE_") and previous == "IMPORT_NAME" and importing is not None:
            local_kit[arg] = importing  # import mha_kit as mk, inside the function
        elif op not in ("PUSH_NULL", "PRECALL", "CACHE", "NOP"):
            current = None
        previous = op
    return names, learners


def _walk(call, visit):
    """``visit(function, code)`` for ``call`` and each learner's function it reaches, once each, in the
    order met; ``visit`` returns the learner's functions its code calls, to follow next."""
    seen, todo = set(), [call]
    while todo:
        function = todo.pop(0)
        if id(function) in seen or not isinstance(function, types.FunctionType):
            continue
        seen.add(id(function))
        for code in _codes(function.__code__):
            todo += visit(function, code)


def reference_uses(call, refused):
    """``[(function name, mk name)]``: the refused ``mha_kit`` names that ``call`` and the learner's
    functions it calls (directly or through each other) read, in the order met."""
    found = []

    def visit(function, code):
        names, learners = kit_names(code, function.__globals__)
        found.extend((function.__name__, name) for name in sorted(names) if name in refused)
        return learners

    _walk(call, visit)
    return found


def not_allowed(question, call):
    """The one line that ``run`` adds when ``call`` uses a reference its question's assignment refuses, or None."""
    assignment = rules()["questions"].get(question)
    refused = rules()["refused"].get(assignment, {})
    uses = reference_uses(call, refused) if refused else []
    if not uses:
        return None
    function, name = uses[0]
    return f"NOT ALLOWED: {refused[name]} (in {function}; it scores 0 when graded)"


def numpy2_uses(call):
    """``[(function name, numpy name)]``: names numpy 2 removed (``np.float_``, ``np.Inf``) that ``call`` and the
    learner's functions it calls read from numpy, in the order met. This page runs numpy 1.25, where they
    work without a word; the grading kernel runs numpy 2 (:mod:`mha_course.kernel.numpy2`)."""
    from mha_course.kernel.numpy2 import REMOVED

    found = []

    def visit(function, code):
        learners, numpy = [], False  # numpy: the instruction before put the numpy module on the stack
        for ins in dis.get_instructions(code):
            if ins.opname.startswith(("LOAD_ATTR", "LOAD_METHOD")) and numpy and ins.argval in REMOVED:
                found.append((function.__name__, ins.argval))
            value = function.__globals__.get(ins.argval) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") else None
            numpy = getattr(value, "__name__", None) == "numpy" and isinstance(value, types.ModuleType)
            learners += [value] if _is_learners(value) else []
        return learners

    _walk(call, visit)
    return list(dict.fromkeys(found))


def numpy2_warning(call):
    """The one line the page prints when ``call`` uses a name numpy 2 removed, or None."""
    from mha_course.kernel.numpy2 import message

    uses = numpy2_uses(call)
    return f"NUMPY 2: {message(uses[0][1])} (in {uses[0][0]})" if uses else None


def _wrap(run, cases):
    """``run`` (:func:`mha_course.kernel.cases.run`) that also names a switched-off reference."""

    @functools.wraps(run)
    def page_run(question, call, *args):
        __tracebackhide__ = True  # IPython: the learner sees the reason, not this function
        run(question, call, *args)  # the desktop's inline judge: raises on the first failing case
        warning = numpy2_warning(call)
        if warning:  # graded as written (with a note), but the learner should know
            print(warning)
        message = not_allowed(question, call)
        if message:
            getattr(cases, "_show_in_one_line", lambda: None)()
            raise getattr(cases, "AssertionError", AssertionError)(message) from None

    page_run.mha_lite = True
    return page_run


def install():
    """Put the page's ``run`` in place of :func:`mha_course.kernel.cases.run` (once)."""
    from mha_course.kernel import cases

    if not getattr(cases.run, "mha_lite", False):
        cases.run = _wrap(cases.run, cases)


def load_ipython_extension(ipython):
    install()
