"""The host a benchmark ran on: CPU, caches, load, NumPy's BLAS as loaded, and the variables that steer it.

A BLAS library picks its kernels for the CPU it finds, unless a variable tells it otherwise:
``OPENBLAS_CORETYPE=Haswell`` on a CPU with AVX-512, or ``MKL_ENABLE_INSTRUCTIONS=AVX`` on one with
AVX2, makes every product run an older, slower kernel. Some hosts set such variables for all their
programs, so the record says which were in force, and :func:`blas_warnings` says when one holds the
BLAS below this CPU. Nothing here changes a variable.
"""
from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

BLAS_VARIABLE_PREFIXES = ("OPENBLAS_", "GOTO_", "OMP_", "MKL_", "BLIS_")

# The vector instructions a core type's kernels use, as a level: 1 AVX, 2 AVX2, 3 AVX-512.
# OpenBLAS core names (OPENBLAS_CORETYPE) and MKL's instruction sets (MKL_ENABLE_INSTRUCTIONS).
_OPENBLAS_LEVELS = {"PRESCOTT": 0, "CORE2": 0, "PENRYN": 0, "DUNNINGTON": 0, "NEHALEM": 0, "ATOM": 0,
                    "BARCELONA": 0, "BOBCAT": 0, "BULLDOZER": 1, "PILEDRIVER": 1, "STEAMROLLER": 1,
                    "EXCAVATOR": 1, "SANDYBRIDGE": 1, "HASWELL": 2, "ZEN": 2, "SKYLAKEX": 3, "COOPERLAKE": 3,
                    "SAPPHIRERAPIDS": 3}
_MKL_LEVELS = {"SSE4_2": 0, "AVX": 1, "AVX2": 2, "AVX512": 3, "AVX512_E1": 3, "AVX512_E4": 3}
_LEVEL_NAMES = ("SSE", "AVX", "AVX2", "AVX-512")


def describe(threads):
    """CPU, cores, Python, NumPy, the threads used, the caches, the date and the load at the start."""
    import numpy as np

    cpu = next((line.split(":", 1)[1].strip() for line in _read_lines("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor() or platform.machine())
    return {"cpu": cpu, "cpu_vector_level": _LEVEL_NAMES[cpu_vector_level()], "cores": os.cpu_count(),
            "threads": threads, "python": platform.python_version(), "numpy": np.__version__,
            "l2_cache": _cache_size(2), "l3_cache": _cache_size(3),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load_average_start": load_average()}


def blas_record(environ=None):
    """NumPy's BLAS as loaded (threadpoolctl): library, version, core type, threads; and the variables.

    ``blas_libraries``: one entry per library threadpoolctl finds (``None`` without threadpoolctl);
    ``blas_variables``: every ``OPENBLAS_*``, ``GOTO_*``, ``OMP_*``, ``MKL_*`` and ``BLIS_*``
    variable in ``environ`` (default: this process's environment) with its value.
    """
    import numpy  # noqa: F401  (threadpoolctl finds only the libraries already loaded)

    environ = os.environ if environ is None else environ
    variables = {name: value for name, value in sorted(environ.items()) if name.startswith(BLAS_VARIABLE_PREFIXES)}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {"blas_libraries": None, "blas_variables": variables}
    libraries = [{key: info.get(key) for key in ("internal_api", "version", "architecture", "num_threads",
                                                  "threading_layer")}
                 for info in threadpool_info() if info.get("user_api") == "blas"]
    return {"blas_libraries": libraries, "blas_variables": variables}


def blas_warnings(variables, cpu_level):
    """One line per variable that forces a BLAS kernel older than the CPU supports (``cpu_level`` 0-3)."""
    lines = []
    for name, table in (("OPENBLAS_CORETYPE", _OPENBLAS_LEVELS), ("MKL_ENABLE_INSTRUCTIONS", _MKL_LEVELS)):
        value = variables.get(name, "").strip().upper()
        if value in table and table[value] < cpu_level:
            lines.append(f"WARNING  {name}={variables[name]} forces {_LEVEL_NAMES[table[value]]} kernels on a CPU "
                         f"with {_LEVEL_NAMES[cpu_level]}: every BLAS product runs below what this CPU supports; "
                         f"unset it to measure this machine")
    return lines


def cpu_vector_level(flags=None):
    """The widest vector instructions the CPU has: 0 SSE, 1 AVX, 2 AVX2 (with FMA), 3 AVX-512."""
    if flags is None:
        flags = next((set(line.split(":", 1)[1].split()) for line in _read_lines("/proc/cpuinfo")
                      if line.startswith("flags")), set())
    return 3 if "avx512f" in flags else 2 if {"avx2", "fma"} <= flags else 1 if "avx" in flags else 0


def load_average():
    """The 1-minute load average (runnable processes), or None where the OS does not tell."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _cache_size(index):
    """The size of CPU cache level 2 or 3 as the kernel reports it (``"1024K"``), or ``"?"``."""
    for entry in range(6):
        folder = f"/sys/devices/system/cpu/cpu0/cache/index{entry}"
        if (_read_lines(f"{folder}/level") or [""])[0].strip() == str(index):
            return (_read_lines(f"{folder}/size") or ["?"])[0].strip()
    return "?"


def _read_lines(path):
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []
