"""Make HLO text deterministic: an ordered list of named, pure rules.

`normalize_hlo(text)` applies `RULES` in order. The output is meant to be identical across runs,
`PYTHONHASHSEED` values, source paths and line numbers, Python function and argument names, and
the number of usable cores; it keeps everything that says what the program computes: opcodes,
shapes, layouts (`{1,0}`), fusion kinds (`kind=kLoop`), dimension attributes, windows, slices,
replica groups, constants' literal values, custom-call targets and the custom fusion kind in
`backend_config`.

Not guaranteed: identical output across jax/jaxlib versions or platforms (XLA makes different
decisions there), and names that mean anything: instruction names become `<opcode>.<n>`.
Works on optimized HLO (`%` sigils, metadata, stack-frame tables) and on the short unoptimized
form (`lowered.as_text(dialect="hlo")`). All rules work line by line with precompiled regexes.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xla_inspect.model import CALL_ATTRIBUTE_KEYS

__all__ = ["RULES", "Rule", "normalize_hlo"]


@dataclass(frozen=True)
class Rule:
    """One normalization step: a pure `str -> str` function with a name."""

    name: str
    apply: Callable[[str], str]

    @property
    def doc(self) -> str:
        """What the rule removes and why (the function's docstring)."""
        return inspect.getdoc(self.apply) or ""

    def __call__(self, text: str) -> str:
        return self.apply(text)


def unify_line_endings(text: str) -> str:
    """Turn `\r\n` and lone `\r` into `\n`, so that every later rule sees one kind of line.

    Line endings depend on the editor or platform that last saved a file, not on the program.
    """
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


_TABLE = re.compile(
    r"\n(?:FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*\n(?:[ \t]*\d+[ \t].*\n?)*"
)


def strip_stack_frame_tables(text: str) -> str:
    """Remove the `FileNames`/`FunctionNames`/`FileLocations`/`StackFrames` tables.

    They hold absolute source paths, Python function names and line/column numbers: they change
    when the code moves, never when the computation does.
    """
    return _TABLE.sub("\n", "\n" + text)[1:]


# `, metadata={...}` with quoted strings (which may hold braces) skipped as a whole. The literal
# start lets the regex engine jump between occurrences.
_METADATA = re.compile(r', metadata=\{[^{}"]*(?:"(?:[^"\\]|\\.)*"[^{}"]*)*\}')
_METADATA_UNSPACED = re.compile(r',metadata=\{[^{}"]*(?:"(?:[^"\\]|\\.)*"[^{}"]*)*\}')


def strip_metadata(text: str) -> str:
    """Remove `metadata={op_name=... source_file=... stack_frame_id=N}` attributes.

    Metadata records where an op came from in Python (names, files, lines, stack frames); it does
    not affect what XLA computes.
    """
    text = _METADATA.sub("", text)
    return _METADATA_UNSPACED.sub("", text) if ",metadata={" in text else text


# A field after another one goes with its leading comma; a first field with its trailing one.
_LATER_PARTITIONS = re.compile(r',"outer_dimension_partitions":\[[^\]]*\]')
_FIRST_PARTITIONS = re.compile(r'"outer_dimension_partitions":\[[^\]]*\],?')
_EMPTY_CONFIG = re.compile(r', ?backend_config=(?:\{\}|"")')


def strip_volatile_backend_config(text: str) -> str:
    """Drop `"outer_dimension_partitions":[...]` from `backend_config` JSON.

    XLA:CPU splits loops by the number of usable cores, so the field changes with the machine.
    Everything else in `backend_config` is kept (for instance the custom fusion kind
    `{"fusion_config":{"kind":"__ynn_fusion"}}` or a while loop's known trip count); a config
    left empty is dropped altogether.
    """
    if "outer_dimension_partitions" not in text:
        return text
    text = _FIRST_PARTITIONS.sub("", _LATER_PARTITIONS.sub("", text))
    return _EMPTY_CONFIG.sub("", text) if "backend_config={}" in text else text


_MODULE_NAME = re.compile(r"^HloModule[ \t]+[^\s,]+", re.MULTILINE)


def canonical_module_name(text: str) -> str:
    """Rename the module to `module`: JAX names it after the Python function (`jit_foo`)."""
    return _MODULE_NAME.sub("HloModule module", text, count=1)


_NAME = r"[A-Za-z_][\w.\-]*"
# Line starts are matched as a literal "\n" rather than `^` with re.MULTILINE: the regex engine
# then jumps from newline to newline instead of trying every character.
_HEADER = re.compile(
    rf"\n(?P<entry>ENTRY[ \t]+)?(?P<sigil>%?)(?P<name>{_NAME})"
    r"(?=[ \t]*(?:\(.*\)[ \t]*->.*)?\{[ \t]*$)",
    re.MULTILINE,
)
_DEFINITION = re.compile(
    rf"\n[ \t]*(?:ROOT[ \t]+)?%?({_NAME})[ \t]*=[ \t]*.*? ([a-z][\w\-]*)\(([^)]*)"
)
# A computation-valued attribute (model.CALL_ATTRIBUTES): one name or a braced list of names.
_CALL = rf"(?P<key>{CALL_ATTRIBUTE_KEYS}=)(?:\{{(?P<list>[^}}]*)\}}|(?P<cname>%?{_NAME}))"
# Careful forms, used only when a computation and an instruction of one block share a name:
# a computation-valued attribute then decides which one a reference means.
_CAREFUL_SIGIL = re.compile(rf"{_CALL}|(?P<tok>%{_NAME})")
_CAREFUL_BARE = re.compile(rf"{_CALL}|(?<![\w.\-%\"'])(?P<tok>{_NAME})(?![\w.\-(\"'])")
_CAREFUL_ANY = re.compile(rf"{_CALL}|(?P<tok>(?<![\w.\-%\"']){_NAME}(?![\w.\-(\"'])|%{_NAME})")
# Fast forms: every name token, renamed through one mapping.
_SIGIL_TOKEN = re.compile(rf"%{_NAME}")
# Without sigils a name is a whole token that is not quoted and not an opcode (followed by "(").
_BARE_TOKEN = re.compile(rf"(?<![\w.\-%\"']){_NAME}(?![\w.\-(\"'])")
# Mixed text (XLA accepts '%' on some names and not on others): every name token, with or
# without its sigil, looked up without it.
_ANY_TOKEN = re.compile(rf"(?<![\w.\-\"']){_NAME}(?![\w.\-(\"'])|%{_NAME}")
# In text whose headers have '%': a definition without it (`name = ...` at a line start) or
# what looks like a bare operand (`(name,` `, name)`); a false alarm only costs the slower form.
_BARE_NAME = re.compile(rf"\n[ \t]*(?:ROOT[ \t]+)?{_NAME}[ \t]*=|[(,] ?{_NAME}(?=[,)#])")
_LIST_ITEM = re.compile(rf"%?{_NAME}")
# A parameter name in a computation signature: `(param_0.1: f32[8], /*index=5*/x.1: f32[])`.
_SIGNATURE_PARAM = re.compile(rf"(?<=[(,/ ]){_NAME}(?=:[ \t])")


def renumber_names(text: str) -> str:
    """Rename computations and instructions canonically, in order of appearance.

    Names come from Python function and argument names (`jit_relu_.1`, `x.1`, `relu.1`) and from
    counters that shift whenever anything else in the process changes. The ENTRY computation
    becomes `main`, the others `comp.<n>` in order of definition; inside each computation a
    parameter becomes `param.<number>` and any other instruction `<opcode>.<n>`, counting each
    opcode from 0 in order of appearance. The `%` sigil is kept where the input had it.
    """
    text = "\n" + text
    headers = list(_HEADER.finditer(text))
    if not headers:
        return text[1:]
    computations: dict[str, str] = {}
    others = 0
    for match in headers:
        if match["entry"]:
            computations[match["name"]] = "main"
        else:
            computations[match["name"]] = f"comp.{others}"
            others += 1
    sigil = "%" if any(match["sigil"] for match in headers) else ""
    global_names = {sigil + old: sigil + new for old, new in computations.items()}
    pieces = [text[1 : headers[0].start()]]
    for i, match in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        block = text[match.end() : end]
        local = _local_names(block)
        split = block.find("\n")
        signature, body = (block, "") if split < 0 else (block[:split], block[split:])
        pieces.append(
            f"\n{match['entry'] or ''}{match['sigil']}{computations[match['name']]}"
            + _SIGNATURE_PARAM.sub(lambda m, names=local: names.get(m[0], m[0]), signature)
        )
        # mixed: '%' in bare text, or a definition without '%' where headers have it
        mixed = ("%" in body) if not sigil else _BARE_NAME.search(body) is not None
        if local.keys().isdisjoint(computations.keys()):  # a dict argument would be O(len)
            if mixed:
                pieces.append(_rename_any(body, local, computations))
            else:
                pieces.append(_rename_tokens(body, local, global_names, sigil))
        else:
            careful = _careful_replacer(local, computations)
            pattern = _CAREFUL_ANY if mixed else _CAREFUL_SIGIL if sigil else _CAREFUL_BARE
            pieces.append(pattern.sub(careful, body))
    joined = "".join(pieces)
    return joined[1:] if headers[0].start() == 0 else joined  # drop the "\n" added above


def _rename_tokens(
    body: str, local: dict[str, str], global_names: dict[str, str], sigil: str
) -> str:
    local_get = {sigil + old: sigil + new for old, new in local.items()}.get
    global_get = global_names.get
    pattern = _SIGIL_TOKEN if sigil else _BARE_TOKEN
    return pattern.sub(lambda m: local_get(m[0]) or global_get(m[0]) or m[0], body)


def _rename_any(body: str, local: dict[str, str], computations: dict[str, str]) -> str:
    """Rename every name token, `%` or not, keeping each token's own sigil."""

    def rename(match: re.Match[str]) -> str:
        token = match[0]
        sigil = "%" if token[0] == "%" else ""
        name = token[len(sigil) :]
        new = local.get(name) or computations.get(name)
        return token if new is None else sigil + new

    return _ANY_TOKEN.sub(rename, body)


def _local_names(body: str) -> dict[str, str]:
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    for name, op, arg in _DEFINITION.findall(body):
        if op == "parameter":
            names[name] = f"param.{arg.strip()}"
        else:
            count = counts.get(op, 0)
            names[name] = f"{op}.{count}"
            counts[op] = count + 1
    return names


def _careful_replacer(
    local: dict[str, str], computations: dict[str, str]
) -> Callable[[re.Match[str]], str]:
    def rename(token: str, first: dict[str, str], second: dict[str, str]) -> str:
        sigil = "%" if token[0] == "%" else ""
        name = token[len(sigil) :]
        new = first.get(name) or second.get(name)
        return token if new is None else sigil + new

    def list_item(match: re.Match[str]) -> str:
        return rename(match[0], computations, local)

    def replace(match: re.Match[str]) -> str:
        token = match["tok"]
        if token is not None:
            return rename(token, local, computations)
        if match["list"] is None:
            return match["key"] + rename(match["cname"], computations, local)
        return match["key"] + "{" + _LIST_ITEM.sub(list_item, match["list"]) + "}"

    return replace


_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
# Indentation other than exactly two spaces (most lines already have two: leave them alone).
_ODD_INDENT = re.compile(r"^(?!  \S)[ \t]+(?=\S)", re.MULTILINE)
# Cheap test for the above: a newline then a tab, one space, or three or more blanks.
_ODD_INDENT_HINT = re.compile(r"\n(?:\t| \t| (?=\S)|  [ \t])")
_BLANK_RUNS = re.compile(r"\n\n\n+")  # a literal start: the engine skips ahead fast


def normalize_whitespace(text: str) -> str:
    """Indent by two spaces, drop trailing spaces, keep at most one blank line in a row.

    Removing tables and attributes leaves uneven blank lines and spacing behind; layout carries
    no meaning in HLO text.
    """
    if " \n" in text or "\t\n" in text or text.endswith((" ", "\t")):
        text = _TRAILING_SPACE.sub("", text)
    if text.startswith((" ", "\t")) or _ODD_INDENT_HINT.search(text):
        text = _ODD_INDENT.sub("  ", text)
    if "\n\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip("\n") + "\n"


RULES: tuple[Rule, ...] = (
    Rule("unify_line_endings", unify_line_endings),
    Rule("strip_stack_frame_tables", strip_stack_frame_tables),
    Rule("strip_metadata", strip_metadata),
    Rule("strip_volatile_backend_config", strip_volatile_backend_config),
    Rule("canonical_module_name", canonical_module_name),
    Rule("renumber_names", renumber_names),
    Rule("normalize_whitespace", normalize_whitespace),
)


def normalize_hlo(text: str, rules: Iterable[Rule] = RULES) -> str:
    """Apply `rules` (by default every rule in `RULES`, in order) to HLO `text`."""
    for rule in rules:
        text = rule(text)
    return text
