"""xla_inspect: capture every IR stage of a JAX function, normalize HLO, read it into a small data
model, query facts, and diff before/after optimization.

The names below are what a user needs; everything else lives in its submodule
(`xla_inspect.passes`, `xla_inspect.graph`, the record types of `xla_inspect.query`, the joins
of `xla_inspect.profile_query`...).
Importing the package does not import JAX: `capture` imports it when called, and reading or
querying HLO text never does, so the `xla-inspect` CLI starts fast.
"""

from xla_inspect.capture import (
    Capture,
    CaptureError,
    IrCapture,
    capture,
    capture_ir,
    capture_lowered,
)
from xla_inspect.diff import ModuleDiff, diff_hlo, format_diff
from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.facts import HloFacts, hlo_facts
from xla_inspect.jaxpr import primitive_census
from xla_inspect.model import HloComputation, HloInstruction, HloModule
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.profile import Profile, ProfileError, TraceEvent, capture_profile, load_profile
from xla_inspect.query import (
    Fusion,
    call_graph,
    collectives,
    custom_call_targets,
    dots,
    fusions,
    instructions,
    opcode_counts,
    parameter_layouts,
    root_layout,
)
from xla_inspect.stablehlo import stablehlo_op_census
from xla_inspect.summary import ModuleSummary, format_summary, summarize

__all__ = [
    "Capture",
    "CaptureError",
    "Fusion",
    "HloComputation",
    "HloFacts",
    "HloInstruction",
    "HloModule",
    "HloParseError",
    "InspectError",
    "IrCapture",
    "ModuleDiff",
    "ModuleSummary",
    "Profile",
    "ProfileError",
    "TraceEvent",
    "call_graph",
    "capture",
    "capture_ir",
    "capture_lowered",
    "capture_profile",
    "collectives",
    "custom_call_targets",
    "diff_hlo",
    "dots",
    "format_diff",
    "format_summary",
    "fusions",
    "hlo_facts",
    "instructions",
    "load_profile",
    "normalize_hlo",
    "opcode_counts",
    "parameter_layouts",
    "parse_hlo",
    "primitive_census",
    "root_layout",
    "stablehlo_op_census",
    "summarize",
]
