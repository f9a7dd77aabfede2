"""Build the "Try it in the browser" edition into a site: ``python -m website.lite.site SITE``.

Writes ``SITE/lite/``: JupyterLite 0.2 (``jupyterlite-core``) with the xeus-python kernel
(``jupyterlite-xeus-python``), both pinned in ``requirements-lite.txt`` and installed in their own
virtual environment, ``.venv-lite/`` (``make lite-env``), so that they never constrain the project's
JupyterLab. The kernel's prebuilt environment (CPython 3.11, numpy 1.25, IPython 8.14) is used as
it is: ``jupyter lite build --disable-addons jupyterlite-xeus-python`` builds offline.

What it holds (its files, ``lite/files/``; the notebooks a reader opens and changes):

* ``exercises/<assignment>/<assignment>.ipynb``: the released exercises, unchanged, so that a
  notebook downloaded from the page is the one an instructor grades;
* ``chapters/<chapter>.ipynb``: the chapters that can run in a browser, as website/lite/notebooks.py
  copies them (figures as pictures, numbers written into the text);
* ``README.md``: what this is, where work is kept, how to download it.

Its kernel gets, beside the prebuilt packages, ``mha_kit`` and the browser side of ``mha_course``
(website/lite/kernel.py: its folders whole, their imports checked against what the browser has), so a test cell
judges at once as on the desktop. ``lite/index.html`` is a landing page (no script) linking to
every notebook; the book's pages link to theirs (website/lite/buttons.py).

Nothing is loaded from another host: the build is offline, and the site's tests open the notebooks
in Chromium with every other host blocked.
"""

import argparse
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from website.lite import kernel as lite_kernel
from website.lite import notebooks as lite_notebooks
from website.lite import trial as lite_trial

REPO_ROOT = Path(__file__).resolve().parents[2]
LITE_VENV = REPO_ROOT / ".venv-lite"
LITE = "lite"
KERNEL = "@jupyterlite/xeus-python-kernel"
KERNEL_NAME = "xeus-python"
#: Pages of the learner edition that are not chapters to run (the instructor's guide is not in it).
NOT_CHAPTERS = {"book/instructor_guide", "book/solutions", "book/exercises", "book/references"}
#: Timestamps of the contents (reproducible builds): 2026-01-01.
SOURCE_DATE_EPOCH = 1767225600
APP_URL = "lab/index.html"
#: A file the book's Sphinx build writes its :func:`chapter_plan` to when this variable names it (website/build.py
#: sets it), so that the browser edition's build (``--plan``) reads that plan instead of working it out again: the
#: plan runs some chapters' code (website/lite/trial.py), 3.6 CPU-seconds each time (2026-12-07).
PLAN_ENV = "MHA_LITE_PLAN"


def kernel_static(venv=LITE_VENV):
    """The folder of the kernel's prebuilt environment in the lite virtual environment."""
    return Path(venv) / "share" / "jupyter" / "labextensions" / KERNEL / "static"


def jupyter(venv=LITE_VENV):
    return Path(venv) / "bin" / "jupyter"


def page_url(path):
    """The URL, relative to ``lite/``, that opens a file of the browser edition in JupyterLab."""
    return f"{APP_URL}?path={path}"


def toc_chapters(root=REPO_ROOT):
    """Docnames of the book's pages, in reading order, that are notebooks and not in :data:`NOT_CHAPTERS`."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]

    def walk(items):
        for item in items:
            if "file" in item:
                names.append(item["file"])
            walk(item.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    return [n for n in names if n not in NOT_CHAPTERS and (root / f"{n}.ipynb").is_file()]


def browser_modules(static=None):
    """What the browser's kernel can import, once the edition's own packages are packed."""
    return lite_kernel.browser_modules(static or kernel_static()) | {"mha_kit", "mha_course", lite_kernel.HOOK}


def chapter_plan(modules=None, root=REPO_ROOT):
    """``({docname: copy path under files/}, {docname: why it is left out})`` for the book's chapters."""
    modules = browser_modules() if modules is None else modules
    kept, left_out, to_try = {}, {}, {}
    kit_needs = lite_kernel.kit_needs(modules, root)
    for docname in toc_chapters(root):
        nb = lite_notebooks.read(root / f"{docname}.ipynb")
        problem = lite_notebooks.browser_problem(nb, lambda m: lite_kernel.available(m, modules))
        if problem:
            left_out[docname] = problem
        elif lite_notebooks.browser_problem(nb, kit_needs=kit_needs):
            to_try[docname] = nb  # it calls what may need a package the browser lacks: run it to see
        else:
            kept[docname] = f"chapters/{Path(docname).name}.ipynb"
    for docname, error in lite_trial.failures(to_try, modules).items():
        if error:
            left_out[docname] = f"{lite_notebooks.browser_problem(to_try[docname], kit_needs=kit_needs)} ({error})"
        else:
            kept[docname] = f"chapters/{Path(docname).name}.ipynb"
    return {d: kept[d] for d in toc_chapters(root) if d in kept}, left_out


def exercise_files(root=REPO_ROOT):
    """``{path under files/: source}`` of the released exercises (their folders, as released)."""
    files = {}
    for path in sorted((root / "exercises").rglob("*")):
        if path.is_file() and ".ipynb_checkpoints" not in path.parts:
            files[path.relative_to(root).as_posix()] = path
    return files


def exercise_notebooks(root=REPO_ROOT):
    return [p for p in exercise_files(root) if p.endswith(".ipynb") and Path(p).stem == Path(p).parent.name]


# --- the contents ----------------------------------------------------------------------------------


README = """# Try it in the browser

This is JupyterLab running in your browser (JupyterLite): Python 3.11, numpy 1.25 and `mha_kit`,
with no server and no installation. The first run of a notebook takes a few seconds while the
kernel starts.

* `exercises/`: the exercises, as released. Write your answer in place of
  `raise NotImplementedError()` and run the test cell below it: a passing test prints nothing, a
  failing one ends with one line saying what is wrong, the same line as on the desktop. The test
  judges your answers here, in your own browser: it is a self-check. Marks come from your
  instructor's grading, which also runs the hidden tests.
* `chapters/`: the book's chapters. Change a number and run the cells again.

**Where your work is kept.** Everything you change is saved in this browser's storage (IndexedDB)
for this site, on this computer only: it survives reloading the page and closing the browser,
but not clearing the site's data, a private window, or another browser. Nothing is sent anywhere.

**Download your notebook** with **File ▸ Download** (or right-click the file in the file browser,
then **Download**): that saves the `.ipynb` file, which is what you hand in to an instructor.
**File ▸ Reload Notebook from Disk** or deleting your copy brings the released notebook back.
"""


def write_contents(files_dir, chapters, root=REPO_ROOT, citations=None):
    """The notebooks and files a reader opens: exercises as released, chapters as copied for the browser."""
    files_dir = Path(files_dir)
    (files_dir / "README.md").parent.mkdir(parents=True, exist_ok=True)
    (files_dir / "README.md").write_text(README, encoding="utf-8")
    for relative, source in exercise_files(root).items():
        (files_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, files_dir / relative)
    notebooks = {docname: lite_notebooks.read(root / f"{docname}.ipynb") for docname in chapters}
    titles = {Path(d).name: lite_notebooks.title_of(nb) for d, nb in notebooks.items()}
    citations = lite_notebooks.citation_labels(root / "references.bib") if citations is None else citations
    for docname, nb in notebooks.items():
        context = lite_notebooks.Context(citations=citations, titles=titles, copies={Path(d).name for d in chapters})
        lite_notebooks.write(lite_notebooks.browser_copy(nb, context), files_dir / chapters[docname])
    return titles


def _model(path, relative, children=None):
    """A Jupyter contents model of ``path`` (``relative`` to the files' root), without content."""
    stamp = "2026-01-01T00:00:00Z"
    kind = "directory" if path.is_dir() else "notebook" if path.suffix == ".ipynb" else "file"
    model = {"name": path.name if relative else "", "path": relative, "last_modified": stamp, "created": stamp,
             "content": children, "format": "json" if children is not None else None,
             "mimetype": None if kind != "file" else {".md": "text/markdown", ".py": "text/x-python"}.get(
                 path.suffix, "text/plain"),
             "size": None if kind == "directory" else path.stat().st_size, "writable": True, "type": kind}
    return model


def write_contents_index(lite_dir):
    """``api/contents/<folder>/all.json`` for every folder of ``files/``: what JupyterLite lists and opens.

    (jupyterlite-core writes these with jupyter_server, which the pinned build environment does not
    need for anything else; the models are those of its contents API, listings without content.)
    """
    files = Path(lite_dir) / "files"
    for folder in [files, *sorted(p for p in files.rglob("*") if p.is_dir())]:
        relative = "" if folder == files else folder.relative_to(files).as_posix()
        children = [_model(child, child.relative_to(files).as_posix()) for child in sorted(folder.iterdir())]
        out = Path(lite_dir) / "api" / "contents" / relative / "all.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(_model(folder, relative, children), indent=1) + "\n", encoding="utf-8")


# --- the kernel's packages -------------------------------------------------------------------------------


def grading_question_files(root=REPO_ROOT):
    return [(f"_course_{p.parent.name}_grading_questions", p) for p in sorted((root / "solutions").glob("*/grading_questions.py"))]


def reference_rules(root=REPO_ROOT):
    """``rules.json`` of the page's hook: which assignment asks each question, and what each assignment
    switches off (``mha_course.check``'s rules: :func:`mha_course.plugins.graded_kit.refused`)."""
    from mha_course.course import ASSIGNMENTS
    from mha_course.notebook import parse_runs
    from mha_course.plugins.graded_kit import refused

    questions = {}
    for assignment in ASSIGNMENTS:
        nb = lite_notebooks.read(root / "exercises" / assignment / f"{assignment}.ipynb")
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
                questions.update((question, assignment) for question, _ in parse_runs(cell["source"]))
    return {"questions": questions, "refused": {a: refused(a) for a in ASSIGNMENTS}}


IPYTHON_CONFIG = b"""# The browser edition's kernel loads its hook (website/lite/mha_lite) at start.
c.InteractiveShellApp.extensions = ["mha_lite"]
"""


def kernel_packages(modules, root=REPO_ROOT):
    """``{package: {member: bytes}}`` of what the kernel's environment gets: ``mha_kit`` whole, ``mha_course``'s
    browser side (its folders whole: lite_kernel.course_files) with the assignments' questions and the released
    notebooks, and the hook. First, what the browser could not import stops the build (lite_kernel.MissingModuleError):
    ``import mha_kit``, and every import the packed files make (lite_kernel.check_imports)."""
    lite_kernel.check_mha_kit(modules, root)
    hook = lite_kernel.RUNTIME / lite_kernel.HOOK / "__init__.py"
    course = lite_kernel.course_files(root)
    questions = grading_question_files(root)
    lite_kernel.check_imports({**course, **dict(questions), lite_kernel.HOOK: hook}, modules, root)
    site = lite_kernel.SITE_PACKAGES
    course_files = {f"{site}/{path.relative_to(root).as_posix()}": path.read_bytes() for path in course.values()}
    # The course's folders as mha_course.course looks them up where it is installed (beside the package):
    # solutions/<a>/grading_questions.py (the judge's questions) and the released notebooks.
    course_files.update({f"{site}/solutions/{p.parent.name}/grading_questions.py": p.read_bytes() for _, p in questions})
    course_files.update({f"{site}/{p}": (root / p).read_bytes() for p in exercise_notebooks(root)})
    hook_files = {f"{site}/{lite_kernel.HOOK}/__init__.py": hook.read_bytes(),
                  f"{site}/{lite_kernel.HOOK}/rules.json": json.dumps(reference_rules(root), indent=1).encode(),
                  "etc/ipython/ipython_config.py": IPYTHON_CONFIG}
    return {"mha_kit": lite_kernel.package_files(root, ["mha_kit"]), "mha_course": course_files,
            lite_kernel.HOOK: hook_files}


def pack_kernel(static, root=REPO_ROOT):
    """Pack :func:`kernel_packages` into the kernel's environment; return the archive names and the modules of
    ``mha_course`` packed."""
    packages = kernel_packages(browser_modules(static), root)
    archives = [lite_kernel.add_package(static, name, _version(root), files) for name, files in packages.items()]
    return archives, sorted(lite_kernel.course_files(root))


def _version(root):
    import tomllib

    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


# --- the landing page ----------------------------------------------------------------------------------


def landing_page(exercises, chapters, titles):
    """``lite/index.html``: what the browser edition is, where work is kept, and a link to every notebook."""
    def item(path, text):
        return f'<li><a href="{html.escape(page_url(path))}">{html.escape(text)}</a></li>'

    exercise_items = "\n".join(item(p, Path(p).stem.replace("_", " ", 1)) for p in exercises)
    chapter_items = "\n".join(item(path, titles.get(Path(d).name) or Path(d).name) for d, path in chapters.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Try it in the browser</title>
<!-- JupyterLab's pages read their settings from here too (JupyterLite's config-utils.js); no script runs. -->
<script id="jupyter-config-data" type="application/json" data-jupyter-lite-root=".">{{}}</script>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #1a1a1a; }}
a {{ color: #0b5cad; }}
.note {{ background: #f3f6fa; border-left: 4px solid #0b5cad; padding: 0.5rem 1rem; }}
</style>
</head>
<body>
<main>
<h1>Try it in the browser</h1>
<p>The exercises and the chapters of <a href="../index.html">the book</a> run here, in JupyterLab inside
your browser (JupyterLite): Python 3.11, numpy 1.25 and <code>mha_kit</code>, with no server and
nothing to install. The first notebook takes a few seconds to start its kernel.</p>
<div class="note">
<p><strong>Where your work is kept.</strong> What you change is saved in this browser's storage
(IndexedDB) for this site, on this computer only. It survives a reload and closing the browser, but
not clearing the site's data, a private window or another browser. Nothing is sent anywhere.</p>
<p><strong>Download your notebook</strong> with <strong>File &#9656; Download</strong> in JupyterLab (or
right-click it in the file browser, then <strong>Download</strong>): the <code>.ipynb</code> file is what
you hand in to an instructor.</p>
</div>
<p>A test cell judges your answer here, in your own browser, and prints the same one-line message as on
the desktop: it is a self-check. Marks come from the instructor's grading, which runs the hidden tests.</p>
<h2>Exercises</h2>
<ul>
{exercise_items}
</ul>
<h2>Chapters</h2>
<ul>
{chapter_items}
</ul>
<p><a href="{APP_URL}">Open JupyterLab</a> to see every file.</p>
</main>
</body>
</html>
"""


# --- the build -------------------------------------------------------------------------------------------


LITE_CONFIG = {"jupyter-lite-schema-version": 0, "jupyter-config-data": {
    "appName": "Try it in the browser", "defaultKernelName": KERNEL_NAME,
    "disabledExtensions": [
        # no "Would you like to receive news?" prompt, no fetch of the news feed from another host
        "@jupyterlab/apputils-extension:announcements",
        # the notebook's table of contents of JupyterLab 4.0 (JupyterLite 0.2's) throws a script error
        # ("reading 'type'") as the exercises' headings scroll into view
        "@jupyterlab/notebook-extension:toc",
    ],
}}
OVERRIDES = {
    # the exercises name the desktop's kernel (python3): start the browser's Python instead of asking
    "@jupyterlab/notebook-extension:tracker": {"autoStartDefaultKernel": True},
}


def write_plan(path, plan):
    """Write ``plan`` (:func:`chapter_plan`'s ``(chapters, left_out)``) to ``path`` as JSON."""
    chapters, left_out = plan
    Path(path).write_text(json.dumps({"chapters": chapters, "left_out": left_out}, indent=1) + "\n", encoding="utf-8")


def read_plan(path):
    """The ``(chapters, left_out)`` :func:`write_plan` wrote to ``path``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data["chapters"], data["left_out"]


def build(site, venv=LITE_VENV, root=REPO_ROOT, log=print, plan=None):
    """Build the browser edition into ``site/lite``; return a summary dict (also written as ``lite/mha-lite.json``).

    ``plan``: :func:`chapter_plan`'s answer when the caller has it (the book's build wrote it: :data:`PLAN_ENV`);
    by default it is worked out here."""
    site, venv = Path(site).resolve(), Path(venv).resolve()  # jupyter lite runs in a scratch folder
    command = jupyter(venv)
    if not command.exists():
        raise FileNotFoundError(f"{command} not found: run `make lite-env` (installs requirements-lite.txt into {venv})")
    out = site / LITE
    shutil.rmtree(out, ignore_errors=True)
    modules = browser_modules(kernel_static(venv))
    chapters, left_out = chapter_plan(modules, root) if plan is None else plan
    with tempfile.TemporaryDirectory() as scratch:
        stage = Path(scratch)
        titles = write_contents(stage / "files", chapters, root)
        (stage / "jupyter-lite.json").write_text(json.dumps(LITE_CONFIG, indent=1), encoding="utf-8")
        (stage / "overrides.json").write_text(json.dumps(OVERRIDES, indent=1), encoding="utf-8")
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH), "JUPYTER_PLATFORM_DIRS": "1"}
        result = subprocess.run(
            [str(command), "lite", "build", "--disable-addons", "jupyterlite-xeus-python", "--lite-dir", str(stage),
             "--output-dir", str(out), "--apps", "lab", "--no-sourcemaps", "--no-unused-shared-packages",
             "--source-date-epoch", str(SOURCE_DATE_EPOCH)],
            cwd=stage, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"jupyter lite build failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    write_contents_index(out)
    archives, course = pack_kernel(out / "extensions" / KERNEL / "static", root)
    exercises = exercise_notebooks(root)
    (out / "index.html").write_text(landing_page(exercises, chapters, titles), encoding="utf-8")
    summary = {"exercises": exercises, "chapters": chapters, "left_out": left_out, "archives": archives,
               "mha_course_modules": course}
    (out / "mha-lite.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    log(f"website.lite: {len(exercises)} exercises and {len(chapters)} chapters in {out}; mha_course modules packed: "
        f"{', '.join(course)}")
    for docname, why in left_out.items():
        log(f"website.lite: {docname} is not in the browser edition: {why}")
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", help="the built site (the browser edition goes into SITE/lite)")
    parser.add_argument("--venv", default=str(LITE_VENV), help="the virtual environment of requirements-lite.txt")
    parser.add_argument("--plan", help=f"the chapter plan the book's build wrote (its {PLAN_ENV}); default: work it out")
    args = parser.parse_args(argv)
    try:
        build(args.site, args.venv, plan=read_plan(args.plan) if args.plan else None)
    except (lite_kernel.MissingModuleError, FileNotFoundError, RuntimeError) as error:
        print(f"website.lite: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
