"""xla_inspect: capture every IR stage of a JAX function, normalize HLO, read it into a small data
model, query facts, and diff before/after optimization.

The public names below are loaded lazily: reading and querying HLO text never imports JAX, so the
``xla-inspect`` CLI starts fast; ``capture``, ``primitive_census`` and ``stablehlo_op_census``
import JAX on first use.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "errors": ("InspectError", "HloParseError"),
    "model": ("HloModule", "HloComputation", "HloInstruction", "Shape"),
    "parse": ("parse_hlo",),
    "query": (
        "instructions",
        "opcode_counts",
        "call_graph",
        "fusions",
        "collectives",
        "custom_call_targets",
        "dots",
        "parameter_layouts",
        "root_layout",
        "FusionInfo",
        "CollectiveInfo",
        "DotInfo",
        "ParameterLayout",
    ),
    "normalize": ("normalize_hlo", "RULES", "Rule"),
    "diff": ("diff_hlo", "format_diff", "ModuleDiff", "OpcodeChange", "FusionSummary"),
    "passes": (
        "pass_timeline",
        "pass_files",
        "first_pass_removing",
        "first_pass_adding",
        "PassStep",
        "PassFile",
        "DumpError",
    ),
    "summary": ("summarize", "format_summary", "ModuleSummary"),
    "graph": ("fusion_graph_dot", "render_svg", "save_graph", "GraphvizMissing"),
    "capture": ("capture", "capture_lowered", "Capture", "CaptureError", "dump_options"),
    "jaxpr": ("primitive_census", "iter_eqns", "in_avals", "out_avals", "AvalSummary"),
    "stablehlo": ("stablehlo_op_census", "iter_operations", "StableHloError"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'xla_inspect' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"xla_inspect.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
