"""The graded kit of mha_kit: exactly the helpers an assignment allows, no reference answers.

Each assignment's kit is built into a temporary folder and imported with that folder first on the
path (as the grading kernel sees it), by one fresh Python that imports the kits in turn and forgets
each kit's modules before the next (one interpreter and one matplotlib for all of them): allowed
helpers work, every other public function raises ``NotAvailableError`` naming the rule, and no
module of the kit holds the code of a forbidden function.
"""
import ast
import json
import os
import subprocess
import sys

import pytest

from mha_course.course import BASE_HELPERS, COURSE
from mha_course.plugins.graded_kit import PACKAGE, _exports, build

ASSIGNMENTS = tuple(COURSE)
PROBE = """
import json, sys
names, seen = json.loads(sys.argv[1]), {}
for folder in sys.argv[2:]:
    sys.path.insert(0, folder)
    import mha_kit as mk
    from mha_kit import plots
    import mha_course.kernel.cases as cases
    out = {"mk": mk.__file__, "cases": cases.__file__, "refused": {}, "allowed": sorted(mk.__all__)}
    for name in names:
        try:
            getattr(mk, name)
        except mk.NotAvailableError as error:
            out["refused"][name] = str(error)
    try:
        import mha_course.judge.core
    except ImportError:
        out["judge"] = None
    else:
        out["judge"] = mha_course.judge.core.__file__
    cfg = mk.PRESETS["llama-3-70b"]
    out["toy"] = list(mk.toy_example()[0].shape)
    seen[folder] = out
    sys.path.remove(folder)  # the next kit is imported afresh
    for module in [m for m in sys.modules if m.split(".")[0] in ("mha_kit", "mha_course")]:
        del sys.modules[module]
print(json.dumps(seen))
"""


def exports():
    """The functions, classes and tables the real ``mha_kit/__init__.py`` exports (not its modules)."""
    return sorted(name for name, (_, symbol) in _exports(PACKAGE / "__init__.py").items() if symbol)


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """``{assignment: (its kit's folder, what PROBE saw importing it)}``, for every assignment."""
    folders = {a: build(a, tmp_path_factory.mktemp(a)) for a in ASSIGNMENTS}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(exports()), *map(str, folders.values())],
                          capture_output=True, text=True, env=env, cwd=tmp_path_factory.mktemp("probe"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    return {a: (folder, seen[str(folder)]) for a, folder in folders.items()}


@pytest.fixture(params=ASSIGNMENTS)
def kit(request, probed):
    return (request.param, *probed[request.param])


def test_the_kernel_imports_the_kit_not_the_package(kit):
    _, folder, seen = kit
    assert seen["mk"] == str(folder / "mha_kit" / "__init__.py")
    assert seen["cases"] == str(folder / "mha_course" / "kernel" / "cases.py")
    assert seen["judge"] is None  # no references: the judge lives outside the kernel
    assert seen["toy"] == [3, 4]


def test_exactly_the_allowed_helpers_and_a_rule_for_every_other(kit):
    assignment, _, seen = kit
    allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
    assert set(seen["allowed"]) == allowed
    assert set(seen["refused"]) == set(exports()) - allowed
    assert len(seen["refused"]) > 10
    for name, answer in COURSE[assignment].answers.items():
        verb = "ask" if " and " in answer or " to " in answer else "asks"  # "Q4 and Q7 ask", "Q1 to Q3 and Q6 ask"
        assert seen["refused"][name] == f"mk.{name} is not available in {assignment}: it is what {answer} {verb} you to write"


def test_no_module_of_the_kit_holds_a_forbidden_function(kit):
    assignment, folder, _ = kit
    allowed = set(BASE_HELPERS) | set(COURSE[assignment].helpers)
    forbidden = set(exports()) - allowed
    defined = {node.name for path in (folder / "mha_kit").glob("*.py")
               for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not forbidden & defined
    # only the kernel side of the course tools
    assert sorted(p.relative_to(folder).as_posix() for p in (folder / "mha_course").rglob("*.py")) == [
        "mha_course/__init__.py", "mha_course/judge/__init__.py", "mha_course/kernel/__init__.py",
        "mha_course/kernel/cases.py", "mha_course/kernel/numpy2.py", "mha_course/kernel/watch.py", "mha_course/wire.py"]


def test_a_figure_helper_that_needs_a_forbidden_function_says_which(tmp_path):
    rules = json.loads((build("02_params_compute", tmp_path) / "mha_kit" / "_kit.json").read_text())
    assert rules["messages"]["plots.decode_cost_bars"] == (
        "mha_kit.plots.decode_cost_bars is not available in 02_params_compute: it uses mk.attention_macs, "
        "which Q2 asks you to write")


def test_an_unknown_assignment_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown assignment '07_nope'"):
        build("07_nope", tmp_path)
