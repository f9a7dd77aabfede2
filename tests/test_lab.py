"""``make lab``: a learner's JupyterLab on a working copy, Validate with one-line reasons, no instructor panels.

One lab server (``python -m mha_course.lab``, what ``make lab`` runs), one notebook: 01_shapes with
Q1 wrong (``/`` for ``//``), Q2 blank and the rest answered, opened in Debian's Chromium; pressing
Validate must show each failing test's one-line reason, and no nbgrader instructor extension
(formgrader, Create Assignment, the assignment and course lists) may be there.
"""
import os
import socket
import subprocess
import sys
import time

import nbformat
import pytest

import grading_support as gs
from mha_course.lab import LEARNER_CONFIG, lab_environment, working_copy
from site_browser import CHROMIUM, CHROMIUM_ARGS, require_browser

TOKEN = "learner-lab-test"
NOTEBOOK = "01_shapes/01_shapes.ipynb"


def test_working_copy_adds_missing_files_and_keeps_the_learners(tmp_path):
    mine = tmp_path / NOTEBOOK
    mine.parent.mkdir()
    mine.write_text("my answers")
    copied = working_copy(tmp_path)
    assert mine.read_text() == "my answers" and mine not in copied
    released = {p.relative_to(gs.ROOT / "exercises") for p in (gs.ROOT / "exercises").rglob("*") if p.is_file()}
    assert {p.relative_to(tmp_path) for p in copied} == released - {mine.relative_to(tmp_path)}
    assert working_copy(tmp_path) == []  # a second start copies nothing


def test_learner_settings_come_first_on_the_config_path():
    env = lab_environment({"PATH": "/usr/bin", "JUPYTER_CONFIG_PATH": "/elsewhere"})
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(LEARNER_CONFIG), "/elsewhere"]


def _answers(path):
    """Each cell's type, source and nbgrader metadata: what Validate must never change."""
    cells = nbformat.read(path, as_version=4).cells
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in cells]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A partly answered 01_shapes in a working copy, served by the learner's JupyterLab."""
    work = tmp_path_factory.mktemp("work")
    wrong = gs.WRONG_ANSWERS["01_shapes"][0]  # head_dim with / instead of //
    (work / NOTEBOOK).parent.mkdir()
    nbformat.write(gs.submission("01_shapes", {wrong[1]: (wrong[2], wrong[3]), "head_shapes_answer": None}), work / NOTEBOOK)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "mha_course.lab", "--work", str(work), "--port", str(port),
                               "--no-browser", f"--IdentityProvider.token={TOKEN}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the learner's JupyterLab did not start within 60 s")
        yield f"http://127.0.0.1:{port}", work
    finally:
        stop(server)


def stop(server, grace_s=30):
    """Stop the server; one that has not exited ``grace_s`` after SIGTERM is killed (its kernel, which
    watches its parent, goes with it). In a full test run on 2 cores, 2026-12-02, JupyterLab had not
    exited 30 s after SIGTERM; the fixture failed, and the server process it left running broke a
    later test on that worker (a warning from its Popen object, collected there)."""
    server.terminate()
    try:
        server.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def test_validate_shows_one_line_reasons_and_no_instructor_panel(lab):
    require_browser()
    from playwright.sync_api import sync_playwright

    url, work = lab
    before = _answers(work / NOTEBOOK)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{url}/lab/tree/{NOTEBOOK}?token={TOKEN}")
            page.get_by_role("button", name="Validate").first.click()
            dialog = page.locator(".jp-Dialog-content")
            dialog.get_by_text("not answered yet").first.wait_for()
            text = dialog.inner_text()
            menus = page.locator("#jp-menu-panel, .lm-MenuBar").first.inner_text()
            panels = page.locator("#jp-left-stack, .jp-SideBar").all_inner_texts()
        finally:
            browser.close()
    assert "expected head size d_h (d=512, h=8) as an int, got float (64.0): use // or int(...)" in text
    assert text.count("not answered yet") == 2  # Q2's two test cells
    assert "Traceback" not in text and "mha_course" not in text, text
    assert "Nbgrader" not in menus and "Formgrader" not in menus, menus
    assert not any(word in " ".join(panels) for word in ("Assignments", "Create Assignment", "Courses", "Formgrader"))
    # The release and the answers are as they were. (JupyterLab may autosave the open notebook on a
    # slow machine, rewriting its kernel metadata: that is the editor's, not Validate's, so only the
    # cells are compared.)
    assert _answers(work / NOTEBOOK) == before
