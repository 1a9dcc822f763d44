"""Shardings and replica groups: the `{devices=[...]...}`, `{replicated}`, mesh and named
forms XLA's sharding parser takes, checked piece by piece.
"""

from __future__ import annotations

import functools
import re

from xla_inspect.hlo.lexical import split_top_level
from xla_inspect.hlo.strings import strings_ok
from xla_inspect.hlo.values import (
    BRACED_INTS,
    END_OF_WORD,
    INT,
    INT_LIST,
    IOTA_PARTS,
    STRING,
    ints,
    iota_ok,
    metadata_ints_ok,
    product,
)

# replica_groups ::= '{' ('{' ints '}' (',' '{' ints '}')*)? '}' | iota device list of two dims
#                  | mesh[...] (', device_ids=(...)')? '{' axes '}'  (XLA before jax 0.11)
MESH_GROUPS = (
    r"mesh\s*\[[^\[\]]*\](?:\s*,\s*device_ids=\s*\((?:[^()]|\([^()]*\))*+\))?\s*\{[^{}]*\}"
)


def replica_groups_ok(text: str) -> bool:
    if text[0] == "m":
        return _mesh_groups_ok(text)
    if text[0] != "[":
        return True
    dims, reshape, transpose = IOTA_PARTS.fullmatch(text).groups()  # pyright: ignore[reportOptionalMemberAccess]
    return len(ints(dims)) == 2 and iota_ok(dims, reshape, transpose, full_permutation=False)


# sharding ::= '{' single '}' | '{' ('{' single '}' (',' '{' single '}')*)? '}'  (a tuple)
# single   ::= (keyword | 'device=' int | 'devices=' '[' dims ']' (iota | ints)
#               | 'last_tile_dims={' types '}' | 'metadata=' {...} | ('shard_as'|'shard_like') int)*
#            | named sharding (mesh[...] ...: not checked)
# metadata ::= '{' ','? (field ','?)* '}' (a ',' first only before a field), each field a name
# XLA knows with a value of its type (as in an instruction's own metadata; a sharding carries
# one too)
_METADATA_FIELD = (
    r"(?:(?:op_type|op_name|source_file|deduplicated_name|scheduling_name|metadata_payload)"
    rf"=\s*(?:{STRING}|'(?:[^'\\]|\\.)*+')"
    r"|(?:source_line|source_end_line|source_column|source_end_column|stack_frame_id)"
    rf"=\s*{INT}{END_OF_WORD}"
    rf"|profile_type=\s*{BRACED_INTS})"
)


_METADATA = rf"\{{\s*(?:,?\s*{_METADATA_FIELD}(?:\s*,?\s*{_METADATA_FIELD})*+)?\s*\}}"


_SHARDING_TOKEN = re.compile(
    r"\s*(?:"
    rf"(maximal|replicated|manual|unknown|unreduced|last_tile_dim_replicate){END_OF_WORD}"
    rf"|device=\s*({INT})"
    rf"|devices=\s*\[\s*({INT_LIST})\s*\]\s*(?:<=\s*\[\s*({INT_LIST})\s*\]"
    rf"(?:\s*T\s*\(\s*({INT_LIST})\s*\))?|({INT_LIST}))"
    r"|(last_tile_dims)=\s*\{\s*(?:(?:maximal|replicated|manual|unreduced)"
    rf"(?:\s*,\s*(?:maximal|replicated|manual|unreduced))*+{END_OF_WORD})?\s*\}}"
    rf"|metadata=\s*{_METADATA}"
    rf"|(?:shard_as|shard_like){END_OF_WORD}\s*{INT}"
    r")\s*"
)


_NAMED_SHARDING = re.compile(r"\s*(?:(?:maximal_)?mesh|single_device)\s*\[")


# a mesh and what refers to its axes: mesh['a'=2,'b'=4] (axes named by quoted strings), an axis
# as written where a sharding or replica groups name it: 'a' or 'a':(pre)size
_QUOTED_NAME = r"(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"


_MESH = re.compile(
    rf"\s*mesh\s*\[\s*((?:{_QUOTED_NAME}\s*=\s*[0-9]+(?:\s*,\s*{_QUOTED_NAME}\s*=\s*[0-9]+)*+)?)"
    r"\s*\](?:\s*,\s*device_ids=\s*\((?:[^()]|\([^()]*\))*+\))?\s*"
)


_MESH_AXIS = re.compile(rf"({_QUOTED_NAME})\s*=\s*([0-9]+)")


_AXIS_REF = re.compile(rf"\s*({_QUOTED_NAME})(\s*:\s*\(\s*[0-9]+\s*\)\s*[0-9]+)?\s*|\s*\?\s*")


# one device: maximal_mesh[device_id=N], which XLA of jax 0.12 also reads (and prints, on a host
# callback) as single_device[device_id=N]
_MAXIMAL_MESH = re.compile(rf"\s*(?:maximal_mesh|single_device)\s*\[\s*device_id=\s*{INT}\s*\]\s*")


_SHARDED_AS = re.compile(r"\s*,\s*(replicated|unreduced|manual)(?![\w.\-])\s*(=)?\s*")


_SHARDING_METADATA = re.compile(rf"\s*,\s*metadata=\s*{_METADATA}\s*")


def _axis_names(text: str) -> list[str]:
    """The axis names of a mesh's `'a'=2,'b'=4` list, without their quotes."""
    return [name[1:-1] for name, _ in _MESH_AXIS.findall(text)]


def _axes_ok(text: str, pos: int, axes: list[str], used: set[str]) -> int:
    """The offset after a braced list of axes of the mesh (`{'a', 'b':(1)2, ?}`) at `pos`,
    each an axis of `axes` not used before (`used` gains them), or -1 when it is not one."""
    if not text.startswith("{", pos):
        return -1
    pos += 1
    if text.startswith("}", skip := len(text) - len(text[pos:].lstrip())):
        return skip + 1
    while True:
        ref = _AXIS_REF.match(text, pos)
        if ref is None:
            return -1
        if ref[1] is not None:
            name = ref[1][1:-1]
            written = name + "".join((ref[2] or "").split())  # a sub-axis: 'a':(1)2
            if name not in axes or written in used:
                return -1
            used.add(written)
        pos = ref.end()
        if text.startswith(",", pos):
            pos += 1
        elif text.startswith("}", pos):
            return pos + 1
        else:
            return -1


def _named_sharding_ok(body: str) -> bool:
    """The inside of a named sharding as XLA reads it: `maximal_mesh[device_id=N]`, or a mesh,
    then the axes each dimension is sharded over (`[{'a'}, {}]`), then `replicated`,
    `unreduced` or `manual`, alone or with the axes (`replicated={'b'}`) (one of the two at
    least), then its metadata; every axis named is one of the mesh's, and none twice."""
    maximal = _MAXIMAL_MESH.match(body)
    if maximal is not None:
        end = maximal.end()
        metadata = _SHARDING_METADATA.match(body, end)
        return (metadata.end() if metadata is not None else end) == len(body)
    mesh = _MESH.match(body)
    if mesh is None:
        return False
    axes, used = _axis_names(mesh[1]), set[str]()
    if len(set(axes)) != len(axes):
        return False
    pos = mesh.end()
    if body.startswith(",", pos) and body[pos + 1 :].lstrip().startswith("["):
        sharded = True
        pos = body.index("[", pos) + 1
        while not body.startswith("]", pos := len(body) - len(body[pos:].lstrip())):
            pos = _axes_ok(body, pos, axes, used)
            if pos < 0:
                return False
            pos = len(body) - len(body[pos:].lstrip())
            if body.startswith(",", pos):
                pos += 1
            elif not body.startswith("]", pos):
                return False
        pos += 1
    else:
        sharded = False
    while pos < len(body):
        kind = _SHARDED_AS.match(body, pos)
        if kind is None:
            metadata = _SHARDING_METADATA.match(body, pos)
            return sharded and metadata is not None and metadata.end() == len(body)
        sharded = True
        pos = kind.end()
        if kind[2] is not None:
            pos = _axes_ok(body, pos, axes, used)
            if pos < 0:
                return False
    return sharded


def _mesh_groups_ok(text: str) -> bool:
    """`replica_groups=mesh[...] {axes}`: each axis one of the mesh's, none twice."""
    mesh = _MESH.match(text)
    if mesh is None:
        return False
    axes = _axis_names(mesh[1])
    end = _axes_ok(text, mesh.end(), axes, set())
    return len(set(axes)) == len(axes) and end == len(text)


def _single_sharding_ok(body: str) -> bool:
    """The inside of one '{...}' sharding, as ParseSingleSharding reads and checks it."""
    if _NAMED_SHARDING.match(body) is not None:
        return _named_sharding_ok(body)
    keywords: set[str] = set()
    devices: list[int] = []
    dims: list[int] = []
    iota: tuple[str, str, str | None] | None = None
    subgroups = 0  # the types last_tile_dims lists
    pos = 0
    while pos < len(body):
        token = _SHARDING_TOKEN.match(body, pos)
        if token is None or token.end() == pos:
            return False
        pos = token.end()
        keyword, device, tile, reshape, transpose, listed, tile_dims = token.groups()
        if keyword is not None or tile_dims is not None:
            keywords.add(keyword or tile_dims)
            if tile_dims is not None:
                types = token.group().partition("{")[2]
                subgroups = types.count(",") + 1 if types.strip(" \t\r\n}") else 0
        elif device is not None:
            devices = [int(device)]
        elif tile is not None:
            dims += ints(tile)
            if reshape is not None:
                iota = (tile, reshape, transpose)
            else:
                devices += ints(listed)
    if "replicated" in keywords:
        return not devices
    if "maximal" in keywords:
        return len(devices) == 1
    if keywords & {"manual", "unknown", "unreduced"}:
        return not devices
    if not dims or {"last_tile_dim_replicate", "last_tile_dims"} <= keywords:
        return False
    if subgroups > len(dims):  # (XLA fails: it sizes the data's dimensions by the difference)
        return False
    if iota is not None:
        return not devices and iota_ok(*iota, full_permutation=True)
    return len(devices) > 1 and len(devices) == product(dims)


@functools.lru_cache(maxsize=1024)
def sharding_ok(text: str) -> bool:
    if "metadata=" in text and not metadata_ints_ok(text):
        return False
    if not strings_ok(text):
        return False
    body = text[1:-1].strip()
    if not body:
        return True  # an empty tuple
    if not body.startswith("{"):
        return _single_sharding_ok(body)
    for piece in split_top_level(body):
        element = piece.strip()
        if not (element.startswith("{") and element.endswith("}")):
            return False
        if not _single_sharding_ok(element[1:-1]):
            return False
    return True
