"""Sphinx extension: repository, issue and launch buttons only for a real repository.

The book's one setting for them is the environment variable ``MHA_REPOSITORY_URL``:

    MHA_REPOSITORY_URL=https://github.com/<owner>/<repo> make learner-book

(``MHA_REPOSITORY_BRANCH`` names the branch, ``main`` by default.) With it, every page gets the
repository and "open an issue" buttons and a Binder launch button for its notebook. Without it
(the default build, CI, a copy handed to a class) the site shows none of them and links to no
repository at all: ``_config.yml`` holds no repository address, so there is no placeholder to
point at, and jupyter-book's own default (its project's repository) is removed here.
"""

import os
from urllib.parse import urlparse

ENV_URL = "MHA_REPOSITORY_URL"
ENV_BRANCH = "MHA_REPOSITORY_BRANCH"
BINDERHUB_URL = "https://mybinder.org"
_REPOSITORY_KEYS = (
    "repository_url", "repository_branch", "path_to_docs",
    "use_repository_button", "use_issues_button", "use_edit_page_button",
    "use_source_button", "launch_buttons",
)  # fmt: skip


def check_repository_url(url):
    """Return ``url`` without a trailing slash, or raise ValueError if it is not an https address."""
    parsed = urlparse(url)
    if parsed.scheme != "https" or not parsed.hostname or parsed.path.strip("/").count("/") < 1:
        raise ValueError(
            f"{ENV_URL} must be an https address of a repository such as "
            f"https://github.com/<owner>/<repo>, got {url!r}"
        )
    return url.rstrip("/")


def button_options(theme_options, url=None, branch="main"):
    """The theme options with the repository buttons set for ``url`` (None: no buttons at all)."""
    options = {key: value for key, value in theme_options.items() if key not in _REPOSITORY_KEYS}
    if not url:
        options.update(use_repository_button=False, use_issues_button=False,
                       use_edit_page_button=False, use_source_button=False, launch_buttons={})
        return options
    options.update(
        repository_url=check_repository_url(url),
        repository_branch=branch or "main",
        path_to_docs="",
        use_repository_button=True,
        use_issues_button=True,
        launch_buttons={"notebook_interface": "jupyterlab", "binderhub_url": BINDERHUB_URL},
    )
    return options


def set_buttons(app, config):
    url = os.environ.get(ENV_URL, "").strip() or None
    branch = os.environ.get(ENV_BRANCH, "").strip() or "main"
    config.html_theme_options = button_options(config.html_theme_options or {}, url, branch)


def setup(app):
    app.connect("config-inited", set_buttons)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
