"""Stands in for ``debugpy`` on a sandboxed kernel's path (see :mod:`mha_course.plugins.sandbox`).

ipykernel loads the debugger at start-up when ``debugpy`` imports; a grading kernel never needs
one, and loading it costs about a quarter of the kernel's start-up time. ipykernel treats this
``ImportError`` as "no debugger".
"""
raise ImportError("a grading kernel runs without the debugger")
