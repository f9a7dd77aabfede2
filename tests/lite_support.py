"""Helpers for the browser edition's tests in tests/test_site_lite*.py: JupyterLab driven from the page, and
what the desktop says for the same notebook.

The page exposes JupyterLab's application object only when the test asks for it: the test serves
``lite/jupyter-lite.json`` with ``exposeAppInBrowser`` added (:func:`expose_app`); the published
file is left as built.
"""

import json
import re
import warnings

import nbformat
from booktoc import REPO_ROOT

from mha_course.course import ASSIGNMENTS, COURSE

#: The kernel's first start: a Python compiled to WebAssembly unpacks its packages in the page.
KERNEL_TIMEOUT_MS = 600_000


def expose_app(route):
    """Serve ``jupyter-lite.json`` with ``exposeAppInBrowser``: ``window.jupyterapp`` for the test."""
    response = route.fetch()
    config = response.json()
    config["jupyter-config-data"]["exposeAppInBrowser"] = True
    route.fulfill(response=response, body=json.dumps(config))


# JupyterLab in the page: open a notebook (no kernel of its own unless asked), run a cell, run code.
OPEN = """
async ([path, kernel]) => {
  const app = window.jupyterapp;
  const widget = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  if (!kernel) widget.sessionContext.kernelPreference = {...widget.sessionContext.kernelPreference,
                                                         shouldStart: false, autoStartDefault: false};
  await widget.context.ready;
  await widget.sessionContext.ready;
  await new Promise((resolve) => setTimeout(resolve, 0));
  return {path: widget.context.path, cells: widget.content.model.cells.length, rendered: widget.content.widgets.length};
}
"""
START_KERNEL = """
() => {
  const widget = window.jupyterapp.shell.currentWidget;
  window.mhaKernel = widget.sessionContext.ready.then(async () => {
    const kernel = widget.sessionContext.session.kernel;
    await kernel.requestExecute({code: 'import mha_kit'}).done;  // answered once the kernel has unpacked
    window.mhaKernelName = kernel.name;
  });
}
"""
# Each markdown cell with an attachment (a figure), scrolled into view: its picture, decoded.
FIGURES = """
async ([path]) => {
  const widget = window.jupyterapp.shell.widgets('main').find((w) => w.context && w.context.path === path);
  const found = [];
  for (let i = 0; i < widget.content.widgets.length; i++) {
    const cell = widget.content.widgets[i];
    if (cell.model.type !== 'markdown' || !cell.model.attachments || !cell.model.attachments.keys.length) continue;
    await widget.content.scrollToItem(i);
    for (let t = 0; t < 200 && !cell.node.querySelector('img'); t++) await new Promise((r) => setTimeout(r, 50));
    const img = cell.node.querySelector('img');
    if (img && !img.complete) await new Promise((resolve) => { img.onload = resolve; img.onerror = resolve; });
    found.push(img ? {alt: img.alt, width: img.naturalWidth} : null);
  }
  return found;
}
"""
RUN_CELL = """
async ([path, index, source]) => {
  const app = window.jupyterapp;
  const widget = app.shell.widgets('main').find((w) => w.context && w.context.path === path);
  app.shell.activateById(widget.id);
  const cell = widget.content.widgets[index];
  if (source !== null) cell.model.sharedModel.setSource(source);
  widget.content.activeCellIndex = index;
  await app.commands.execute('notebook:run-cell');
  const errors = cell.model.outputs.toJSON().filter((o) => o.output_type === 'error');
  const shown = cell.node.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
  return {errors: errors.map((o) => ({ename: o.ename, evalue: o.evalue, traceback: o.traceback})),
          shown: shown ? shown.innerText.trim() : null};
}
"""
EXECUTE = """
async ([code]) => {
  const widget = window.jupyterapp.shell.widgets('main').find((w) => w.sessionContext && w.sessionContext.session);
  const future = widget.sessionContext.session.kernel.requestExecute({code, store_history: false});
  const out = {text: '', errors: []};
  future.onIOPub = (msg) => {
    const c = msg.content;
    if (msg.header.msg_type === 'stream') out.text += c.text;
    if (msg.header.msg_type === 'execute_result') out.text += c.data['text/plain'] + '\\n';
    if (msg.header.msg_type === 'error') out.errors.push(c.ename + ': ' + c.evalue);
  };
  await future.done;
  return out;
}
"""


def run_cells_code(sources):
    """Python for one request to the page's kernel that runs ``sources`` (a notebook's code cells, in order)
    through the kernel's own IPython, each as a cell of its own (magics, display and history as when run by
    hand), stops at the first that fails, and prints ``MHA-FIRST-FAILED <index or None>``.

    One request a chapter, not one a cell: a request's round trip through the page costs about 13 ms (JupyterLab,
    the kernel's messages, Playwright), and the book's chapters hold about 1,700 code cells; a cell run inside
    the request costs about 0.4 ms (measured in the browser edition, 2026-12-06). The failed cell's error reaches
    the request's output as it would its own.
    """
    return ("def _mha_run_cells(cells):\n"
            "    shell = get_ipython()\n"
            "    for index, source in enumerate(cells):\n"
            "        if not shell.run_cell(source, store_history=True).success:\n"
            "            return index\n"
            "    return None\n"
            f"print('MHA-FIRST-FAILED', _mha_run_cells(__import__('json').loads({json.dumps(sources)!r})))\n")


#: What :func:`run_cells_code` prints last: the index of the cell that failed, or None.
FIRST_FAILED = re.compile(r"MHA-FIRST-FAILED (\d+|None)\s*$")

def worked_assignment():
    """The assignment the browser test answers: the first whose answers build on earlier ones
    (its messages include the pointer to the earlier answer, read from the released notebooks)."""
    return next(a for a in ASSIGNMENTS if COURSE[a].builds_on)


def release_cells(assignment):
    return nbformat.read(REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4).cells


def solution_answers(assignment):
    """``{answer grade_id: source}`` of the solution notebook."""
    cells = nbformat.read(REPO_ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4).cells
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in cells if c.metadata.get("nbgrader", {}).get("solution")}


def layout(assignment):
    """``(setup index, {answer grade_id: index}, {answer grade_id: [test cell indices]})`` in the release."""
    setup, answers, tests, owner = None, {}, {}, None
    for index, cell in enumerate(release_cells(assignment)):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("solution"):
            owner = meta["grade_id"]
            answers[owner], tests[owner] = index, []
        elif meta.get("grade"):
            tests[owner].append(index)
        elif setup is None:
            setup = index
    return setup, answers, tests


def desktop_lines(assignment, sources, order):
    """What the desktop's inline judge says for each test cell in ``order`` (``(kind, index)`` pairs,
    ``kind`` "answer" or "test"), run in one namespace as a learner runs cells: ``{index: line or None}``.

    ``sources`` maps the answer cells' indices to the source run there. The line is the one IPython
    shows: ``AssertionError: <reason>`` (the judge's) or ``<Error>: <message>`` (the learner's own).
    """
    cells = release_cells(assignment)
    setup, _, _ = layout(assignment)
    namespace = {"__name__": "__main__"}
    exec(compile(cells[setup].source, "<setup>", "exec"), namespace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a kernel prints a learner's warning (tests turn them into errors)
        return _run(cells, sources, order, namespace)


def _run(cells, sources, order, namespace):
    lines = {}
    for kind, index in order:
        source = sources[index] if kind == "answer" else cells[index].source
        try:
            exec(compile(source, f"<cell {index}>", "exec"), namespace)
        except Exception as error:  # the judge's AssertionError, or the learner's own error
            if kind == "test":
                lines[index] = f"{type(error).__name__}: {error}"
            continue
        if kind == "test":
            lines[index] = None
    return lines


def function_name(source):
    """The name of the function an answer's source defines (the last ``def`` at the top level)."""
    return re.findall(r"^def (\w+)\(", source, re.M)[-1]


def reference_rule(assignment, owner, source, tmp_path):
    """``mha_course.check``'s rule for an answer ``source`` in answer cell ``owner`` (the desktop's words)."""
    from mha_course.check import reference_calls

    nb = nbformat.read(REPO_ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == owner:
            cell.source = source
    path = tmp_path / f"{assignment}.ipynb"
    nbformat.write(nb, path)
    ((grade_id, rule),) = reference_calls(path, assignment)
    assert grade_id == owner
    return rule


def stored_text(cell):
    """What a code cell printed when the chapter was run on the desktop (its stored outputs)."""
    text = ""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            text += "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
        elif out.get("output_type") == "execute_result":
            plain = out["data"].get("text/plain", "")
            text += ("".join(plain) if isinstance(plain, list) else plain) + "\n"
    return text
