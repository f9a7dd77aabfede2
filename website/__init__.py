"""The book's website: the build, the Sphinx extensions, and the browser edition (see README.md).

* :mod:`website.build` - ``python -m website.build [--learner] OUT``: the site into ``OUT/html``
  (``make learner-book`` and the site tests build through it);
* :mod:`website.ext` - the book's Sphinx extensions (``_config.yml``, ``sphinx: local_extensions``);
* :mod:`website.lite` - the browser edition (JupyterLite), ``lite/`` of the learner edition.

Nothing here runs in a learner's kernel or in grading, except :mod:`website.lite.mha_lite`, which is
packed into the browser's kernel as the top-level package ``mha_lite``.
"""
