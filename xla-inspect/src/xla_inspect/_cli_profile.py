"""`xla-inspect profile FILE.py:FN --arg ... --steps N`: where a function's time went.

Runs the function under JAX's profiler (`xla_inspect.profile.capture_profile`) and prints, from
the trace joined to the optimized module that ran: compile versus run time, each step's
instruction time, the share of that time by fusion kind, by name scope and by source line, and
the top instructions. Shares are of the instruction events' self time summed over the steps;
durations are this run's and swing from run to run (see `xla_inspect.profile`).

With `--memory` it prints instead the peak heap of one run and the buffers live at it, by
instruction, from XProf's memory viewer (`xla_inspect.profile_memory`; needs
`uv sync --group profile`); WHAT may then also be an `.xplane.pb` that `jax.profiler.trace(dir)`
wrote, with `--module` naming the module when several ran.

Array arguments (`--arg f32[64,128]`, or ShapeDtypeStructs from `--args-from`) are filled with
seeded normal values (floats), zeros (integers) or False (booleans): profile with real data
through the Python API when values matter (data-dependent loops, gathers).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from typing import Any

from xla_inspect._cli_args import call_args, import_function
from xla_inspect._cli_common import Command, UsageError
from xla_inspect.errors import InspectError

__all__ = ["PROFILE"]

_GROUPS = ("kind", "scope", "source")


def _arguments(profile: argparse.ArgumentParser) -> None:
    profile.add_argument("source", metavar="WHAT", help="MODULE:FUNCTION or path/to/file.py:FN")
    profile.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="SPEC",
        help="one argument, as for capture: f32[8,16] (an array), x=f32[8,16], n=3 (static)",
    )
    profile.add_argument(
        "--args-from",
        metavar="FILE.py:FN",
        help="FN() returns (args, kwargs) of example arrays or ShapeDtypeStructs (pytrees too)",
    )
    profile.add_argument("--steps", type=int, default=5, help="steps to run (default 5)")
    profile.add_argument("--cold", action="store_true", help="compile inside step 0")
    profile.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    profile.add_argument("--json", action="store_true", help="print JSON")
    profile.add_argument(
        "--memory",
        action="store_true",
        help="the peak heap and the buffers live at it, by instruction, from XProf's memory "
        "viewer (uv sync --group profile); WHAT may also be a .xplane.pb jax.profiler wrote",
    )
    profile.add_argument("--module", help="with an .xplane.pb: the module to view (jit_step)")


def _concrete(tree: Any) -> Any:
    """ShapeDtypeStruct leaves made arrays: seeded normal floats, zero integers, False bools."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)

    def fill(leaf: Any) -> Any:
        if not isinstance(leaf, jax.ShapeDtypeStruct):
            return leaf
        dtype = np.dtype(leaf.dtype)
        if np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating):
            return (rng.standard_normal(leaf.shape) * 0.1).astype(dtype)
        return np.zeros(leaf.shape, dtype)

    return jax.tree.map(fill, tree)


def _report(profile: Any, top: int) -> dict[str, Any]:
    from xla_inspect.profile_query import compile_events, instruction_info, shares, steps, time_by

    info = instruction_info(profile.hlo_text)
    found = steps(profile)
    per_step = {s.number: sum(r.self_ns for r in s.runs) for s in found}
    compiles = [e for e in compile_events(profile) if e.name == "backend_compile_and_load"]
    by_instruction = shares(time_by(profile, "instruction", info))
    ranked = sorted(by_instruction.items(), key=lambda kv: -kv[1])[:top]
    return {
        "module": profile.module,
        "steps": len(found),
        "compile_ns": sum(e.duration_ns for e in compiles),
        "step_ns": {str(s.number): s.duration_ns for s in found},
        "instruction_ns": {str(k): v for k, v in per_step.items()},
        "instructions_per_step": {str(s.number): len(s.runs) for s in found},
        **{f"by_{g}": shares(time_by(profile, g, info)) for g in _GROUPS},
        "top": [
            {
                "instruction": name,
                "share": share,
                "kind": info[name].label if name in info else "?",
                "op_name": info[name].op_name if name in info else "",
                "source": info[name].source if name in info else "",
            }
            for name, share in ranked
        ],
    }


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _table(title: str, rows: dict[str, float], top: int) -> list[str]:
    lines = [title]
    ranked = sorted(rows.items(), key=lambda kv: -kv[1])
    for name, share in ranked[:top]:
        lines.append(f"  {share * 100:6.2f}%  {name}")
    if len(ranked) > top:
        rest = sum(share for _, share in ranked[top:])
        lines.append(f"  {rest * 100:6.2f}%  ({len(ranked) - top} more)")
    return lines


def _format(report: dict[str, Any], top: int, cold: bool) -> str:
    steps = report["step_ns"]
    busy = report["instruction_ns"]
    lines = [
        f"{report['module']}: {report['steps']} steps ({'cold' if cold else 'warm'}); "
        f"compile {_ms(report['compile_ns']) if cold else 'not traced (warm; --cold traces it)'}"
        f"; median step {_ms(statistics.median(steps.values()))}"
        f", median instruction time {_ms(statistics.median(busy.values()))}",
        "per step: step event / instruction self time / instruction events",
    ]
    for number, ns in steps.items():
        count = report["instructions_per_step"][number]
        lines.append(f"  step {number}: {_ms(ns)} / {_ms(busy[number])} / {count}")
    for group, title in zip(_GROUPS, ("fusion kind", "name scope", "source line"), strict=True):
        lines += _table(f"share of instruction time by {title}:", report[f"by_{group}"], top)
    lines.append("top instructions:")
    for row in report["top"]:
        lines.append(
            f"  {row['share'] * 100:6.2f}%  {row['instruction']}  {row['kind']}  "
            f"{row['source'] or '-'}  {row['op_name'] or '-'}"
        )
    return "\n".join(lines) + "\n"


def _format_memory(view: Any, top: int) -> str:
    named = view.top(len(view.buffers))
    lines = [
        f"{view.module}: peak heap {view.peak_bytes:,} B ({view.peak_bytes / 2**20:.3f} MiB) of "
        f"{view.allocated_bytes:,} B allocated; {len(named)} buffers of 16 KiB or more live at "
        f"the peak, the {min(top, len(named))} largest:",
        "  bytes  instruction  kind  group  shape  source  op_name",
    ]
    for row in view.top(top):
        lines.append(
            f"  {row.size_bytes:,}  {row.instruction}  {row.kind or row.opcode}  {row.group}  "
            f"{row.shape}  {row.source or '-'}  {row.op_name or '-'}"
        )
    if view.small_bytes:
        lines.append(f"  {view.small_bytes:,}  (buffers under 16 KiB, together)")
    return "\n".join(lines) + "\n"


def _memory(args: argparse.Namespace, fn: Any, positional: Any) -> int:
    from xla_inspect.profile_memory import capture_memory, memory_view

    try:
        if fn is None:
            view = memory_view(args.source, module=args.module)
        else:
            view = capture_memory(fn, *_concrete(positional))
    except InspectError as exc:
        raise UsageError(f"the memory view of {args.source} failed: {exc}", "check WHAT") from exc
    except Exception as exc:  # the user's function may raise anything while it runs
        raise UsageError(
            f"the memory view of {args.source} failed: {type(exc).__name__}: {exc}",
            "check the --arg specs",
        ) from exc
    if args.json:
        sys.stdout.write(json.dumps(view.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(_format_memory(view, args.top))
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.steps < 1 or args.top < 1:
        raise UsageError("--steps and --top must be at least 1", "e.g. --steps 5")
    if args.memory:
        from xla_inspect.profile_memory import INSTALL, xprof_missing

        if xprof_missing() is not None:
            raise UsageError(
                "--memory reads XProf's memory viewer: xprof is not installed", INSTALL
            )
    if args.source.endswith(".xplane.pb"):
        if not args.memory:
            raise UsageError("a trace file is read with --memory", "add --memory")
        return _memory(args, None, ())
    positional, keywords, options = call_args(args.arg, args.args_from)
    function = import_function(args.source)
    import jax

    from xla_inspect.profile import capture_profile

    fn = function
    if keywords:
        fn = functools.partial(fn, **_concrete(keywords))
    if not callable(getattr(function, "lower", None)):
        fn = jax.jit(fn, static_argnums=options.get("static_argnums", ()))
    if args.memory:
        return _memory(args, fn, positional)
    try:
        profile = capture_profile(fn, *_concrete(positional), steps=args.steps, cold=args.cold)
    except InspectError as exc:
        raise UsageError(f"profiling {args.source} failed: {exc}", "check the --arg specs") from exc
    except Exception as exc:  # the user's function may raise anything while it runs
        raise UsageError(
            f"profiling {args.source} failed: {type(exc).__name__}: {exc}", "check the --arg specs"
        ) from exc
    report = _report(profile, args.top)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write(_format(report, args.top, args.cold))
    return 0


PROFILE = Command("profile", "profile MODULE:FUNCTION: time by kind, scope, line", _arguments, _run)
