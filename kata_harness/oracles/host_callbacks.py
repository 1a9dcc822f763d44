"""Host callbacks in the programs JAX hands to XLA: work a "compiled" program gives back to Python.

``jax.pure_callback``, ``jax.experimental.io_callback`` and ``jax.debug.callback`` lower to a
custom-call whose target names a Python callback (``xla_ffi_python_cpu_callback`` on CPU today,
``xla_python_cpu_callback`` and the ``gpu`` twins on others); host transfers lower to send, recv,
infeed and outfeed. A test that demands a result be computed by the compiled program reads the
modules JAX compiled while the learner's code ran (:func:`modules_compiled`) and fails on any
of these (:func:`host_calls`). The modules are JAX's own dumps (``jax_dump_ir_to``), written
for every module JAX compiles or looks up in its compilation cache: the learner's program as
XLA receives it, whatever Python object holds it.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jax

_DUMP_TO = "jax_dump_ir_to"

# `stablehlo.custom_call @target(...)` (pretty form) or `call_target_name = "target"` (generic).
_CUSTOM_CALL = re.compile(r'custom_call\s+@([\w.$-]+)|call_target_name\s*=\s*"([^"]+)"')
_HOST_TRANSFER = re.compile(r"\b(?:stablehlo|mhlo)\.(send|recv|infeed|outfeed)\b")


def host_calls(module_text: str) -> list[str]:
    """What in one StableHLO module hands work to the host, in text order: each custom-call
    target naming a Python callback, and each send, recv, infeed or outfeed op."""
    found = []
    for match in _CUSTOM_CALL.finditer(module_text):
        target = match.group(1) or match.group(2)
        if "callback" in target or "python" in target:
            found.append(f"custom_call @{target}")
    found += [f"stablehlo.{op}" for op in _HOST_TRANSFER.findall(module_text)]
    return found


@contextmanager
def modules_compiled() -> Iterator[dict[str, str]]:
    """{module name: StableHLO text} of every module JAX compiled inside the block (filled when
    the block ends; an in-memory cache hit compiles nothing and adds nothing)."""
    before = jax.config.read(_DUMP_TO)
    modules: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kata-modules-") as directory:
        jax.config.update(_DUMP_TO, directory)
        try:
            yield modules
        finally:
            jax.config.update(_DUMP_TO, before)
            for path in sorted(Path(directory).glob("*.mlir")):
                modules[path.stem] = path.read_text()


def host_calls_compiled(modules: dict[str, str]) -> dict[str, list[str]]:
    """{module name: its host calls} for the modules of :func:`modules_compiled` that have any."""
    return {name: calls for name, text in modules.items() if (calls := host_calls(text))}
