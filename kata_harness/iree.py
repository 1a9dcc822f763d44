"""IREE in kata tests: live compiles that skip without the ``iree`` group, and flow listings
recorded from those compiles so that the reading tasks run everywhere.

A phase's ``programs.py`` may define ``FLOWS``: name -> a program with ``what``, ``fn`` and
``args()`` (ShapeDtypeStructs). Each is kept as ``katas/phaseN/recorded/<name>.mlir``: the flow
listing IREE made (``--compile-to=flow``, CPU ``generic``) led by ``//`` lines naming the
compiler, the versions and the program (MLIR's parser skips them). The JAX program is exported
with name-only locations (see xla_inspect.iree_compile), so a recording does not depend on where
the checkout is or which line a program sits on. ``tests/harness/test_iree_recordings.py``
compiles every one again when the group is installed and compares, and writes them with:

    uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from xla_inspect import iree_compile
from xla_inspect.targets import group_missing

from . import recordings

RECORD_COMMAND = (
    "uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update"
)
TARGET = f"IREE llvm-cpu, --iree-llvmcpu-target-cpu={iree_compile.CPU} (any x86-64)"


def missing() -> str | None:
    """Why IREE cannot compile here (what to install), or None."""
    return group_missing("iree")


def require() -> ModuleType:
    """``iree.runtime`` (IREE's compiler is importable too), or skip naming the group."""
    reason = missing()
    if reason is not None:
        pytest.skip(f"needs: {iree_compile.INSTALL} ({reason})")
    return importlib.import_module("iree.runtime")


def recorded_path(phase: str, name: str) -> Path:
    return recordings.recorded_path(phase, name, ".mlir")


def recorded(phase: str, name: str) -> str:
    """The recorded flow listing ``name`` of ``phaseN`` (with its header)."""
    return recordings.read_recorded(recorded_path(phase, name), RECORD_COMMAND)


def compile_flow(program: Any) -> str:
    """The listing of ``program`` (a FLOWS entry) compiled now, as it would be recorded."""
    listing = iree_compile.flow_listing(program.fn, *program.args())
    header = [
        f"// recorded by: {RECORD_COMMAND}",
        f"// target: {TARGET}, --compile-to=flow",
        f"{recordings.VERSIONS_LINE}{iree_compile.versions()}",
        f"// program: {program.what}",
    ]
    return "\n".join(header) + "\n" + listing


def run(vmfb: bytes, *args: Any) -> list[Any]:
    """Every output of the module's ``main`` run by IREE's local-task driver, as NumPy arrays."""
    import numpy as np

    runtime = require()
    context = runtime.SystemContext(config=runtime.Config("local-task"))
    module = runtime.VmModule.copy_buffer(context.instance, vmfb)
    context.add_vm_module(module)
    result = context.modules[module.name]["main"](*(np.asarray(a) for a in args))
    outputs = result if isinstance(result, list | tuple) else [result]
    return [np.asarray(o.to_host()) for o in outputs]


@functools.lru_cache(maxsize=256)
def _compiled(module: str, cpu: str) -> bytes | iree_compile.IreeCompileError:
    """IREE's compile of ``module`` (StableHLO text) for ``cpu``, or the refusal: once per text,
    CPU and process. The census runs a test on many versions of a kata file, each with the same
    expected answers under one ``--kata-seed``; the answers' own compiles are theirs and not
    kept here."""
    try:
        return iree_compile.compile_vmfb(module, cpu=cpu)
    except iree_compile.IreeCompileError as refused:
        return refused


def compiled(module: str, cpu: str = iree_compile.CPU) -> bytes:
    """The ``.vmfb`` of ``module`` (StableHLO text) for ``cpu`` (``generic`` unless told, or
    ``host``: this machine's); raises ``IreeCompileError`` when IREE refuses it."""
    result = _compiled(module, cpu)
    if isinstance(result, iree_compile.IreeCompileError):
        raise result
    return result


def outputs(fn: Any, args: Any, cpu: str = iree_compile.CPU) -> list[Any]:
    """IREE's own outputs of ``fn`` on ``args`` (a pytree of arrays): exported, compiled for
    ``cpu`` (``generic`` unless told) and run by local-task, as NumPy arrays in the order of its
    leaves."""
    import jax

    leaves = jax.tree.leaves(args)
    return run(compiled(iree_compile.export(fn, *args).mlir_module(), cpu), *leaves)


_NO_GUARANTEE = "custom calls whose targets have no compatibility guarantees"
# A Shardy operation: a line whose operation (after `%x = `, if it has a result) is `sdy.<op>`.
# Shardy attributes (`sdy.sharding_rule = #sdy.op_sharding_rule<...>` on a LAPACK custom call)
# sit inside an op's `{...}` and are parsed by IREE; only the operations are refused.
_SHARDY_OP = re.compile(r'^\s*(?:%[^=\n]*=\s*)?"?sdy\.\w+', re.MULTILINE)
_LAPACK_CALL = re.compile(r'custom_call\s*@lapack_|call_target_name\s*=\s*"lapack_')


def _exported(fn: Any, args: tuple[Any, ...]) -> Any:
    """The export of ``fn`` on ``args``; "export" when jax.export refuses it (a host callback, a
    custom call with no compatibility guarantee), "other: <message>" when it fails otherwise."""
    try:
        return iree_compile.export(fn, *args)
    except (NotImplementedError, ValueError) as exc:
        refused = "host_callback" in str(exc) or _NO_GUARANTEE in str(exc)
        return "export" if refused else f"other: {exc}"


def export_verdict(fn: Any, args: tuple[Any, ...]) -> str:
    """IREE's verdict on ``fn`` (see ``verdict``) read from what jax.export writes, without
    IREE: "export" when jax.export refuses it, "sdy" when the module holds a Shardy operation,
    "lapack" when it calls a LAPACK custom call, else "runs". The phase's test checks it
    against ``verdict`` on every case when the group is installed."""
    return _export_verdict(_exported(fn, args))


def _export_verdict(exported: Any) -> str:
    if isinstance(exported, str):
        return exported
    text = exported.mlir_module()
    if _SHARDY_OP.search(text):
        return "sdy"
    return "lapack" if _LAPACK_CALL.search(text) else "runs"


def verdict(fn: Any, args: tuple[Any, ...]) -> str:
    """What jax.export and IREE (llvm-cpu) do with ``fn`` on ``args``: "runs" (compiled and ran),
    "export" (jax.export refused a host callback or a custom call with no compatibility
    guarantee), "sdy" (IREE has no Shardy dialect), "lapack" (a LAPACK custom call IREE cannot
    legalize), or "other: <message>"."""
    return _iree_verdict(_exported(fn, args), args)


def verdicts(fn: Any, args: tuple[Any, ...]) -> tuple[str, str | None]:
    """``(export_verdict(fn, args), verdict(fn, args))`` from one export of ``fn``; the second
    is None when IREE is not installed."""
    exported = _exported(fn, args)
    live = None if missing() is not None else _iree_verdict(exported, args)
    return _export_verdict(exported), live


def _iree_verdict(exported: Any, args: tuple[Any, ...]) -> str:
    import jax
    import numpy as np

    if isinstance(exported, str):
        return exported
    module = exported.mlir_module()
    try:
        vmfb = compiled(module)
    except iree_compile.IreeCompileError as exc:
        message = str(exc)
        if "Dialect `sdy' not found" in message:
            return "sdy"
        # The message names the call's target only when its location is short enough to leave
        # room: the module says which custom calls it makes.
        if "operation 'stablehlo.custom_call'" in message and _LAPACK_CALL.search(module):
            return "lapack"
        return f"other: {message[:200]}"
    run(vmfb, *(np.asarray(a) for a in jax.tree.leaves(args)))
    return "runs"


AGREEMENT_SEEDS = range(64)
AGREEMENT_DTYPES = ("float32", "bfloat16")


def agreement(program: Any, dtype: str, seeds: Iterable[int]) -> float:
    """The worst max |iree - jax| / max |jax| over every output of ``program`` (a FLOWS entry)
    computed in ``dtype``, on standard-normal arguments drawn from each of ``seeds`` (one
    compile serves every draw)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    shapes = [jax.ShapeDtypeStruct(a.shape, dtype) for a in program.args()]
    vmfb = compiled(iree_compile.export(program.fn, *shapes).mlir_module())
    worst = 0.0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        args = [jnp.asarray(rng.standard_normal(a.shape), dtype) for a in shapes]
        want = jax.tree.leaves(program.fn(*args))
        for mine, theirs in zip(run(vmfb, *args), want, strict=True):
            exact = np.asarray(theirs, np.float64)
            error = np.abs(np.asarray(mine, np.float64) - exact).max() / np.abs(exact).max()
            worst = max(worst, float(error))
    return worst


def agreement_table(programs: dict[str, Any]) -> str:
    """The worst agreement of each program and dtype over AGREEMENT_SEEDS, one line each
    (`float32 mlp 6.1e-07`), led by a recording header."""
    lines = [
        f"// recorded by: {RECORD_COMMAND}",
        f"// target: {TARGET}, run by the local-task driver",
        f"{recordings.VERSIONS_LINE}{iree_compile.versions()}",
        "// program: max |iree - jax| / max |jax| over the outputs, worst of seeds "
        f"{AGREEMENT_SEEDS.start}-{AGREEMENT_SEEDS.stop - 1}, standard-normal arguments",
    ]
    for dtype in AGREEMENT_DTYPES:
        for name, program in sorted(programs.items()):
            worst = agreement(program, dtype, AGREEMENT_SEEDS)
            lines.append(f"{dtype} {name} {worst:.3g}")
    return "\n".join(lines) + "\n"


def read_agreement(text: str) -> dict[tuple[str, str], float]:
    """(dtype, program) -> worst agreement, from an agreement_table text."""
    table = {}
    for line in text.splitlines():
        if line and not line.startswith("//"):
            dtype, name, value = line.split()
            table[dtype, name] = float(value)
    return table
