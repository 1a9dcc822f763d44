"""The modules phase 12's reading tests read: the recordings (programs.RECORDINGS), the
hand-written ones (programs.HANDWRITTEN) and programs.block compiled for this host's CPU, each
as printed and as its metamorphic variants (every name relabelled, computations reordered, each
accepted by XLA's parser)."""

import re
import zlib
from functools import cache

import jax

from kata_harness import metamorphic
from kata_harness.targets import recorded
from katas.phase12.programs import BLOCK_SHAPES, HANDWRITTEN, block, sds

PHASE = "phase12"
CPU_BLOCK = "block_cpu"


@cache
def text(name: str) -> str:
    """A recorded module, a hand-written one (programs.HANDWRITTEN), or (CPU_BLOCK)
    programs.block compiled for this host's CPU now."""
    if name == CPU_BLOCK:
        compiled = jax.jit(block).lower(*(sds(s, d) for s, d in BLOCK_SHAPES)).compile()
        printed = compiled.as_text()
        assert printed is not None
        return printed
    if name in HANDWRITTEN:
        return HANDWRITTEN[name]
    return recorded(PHASE, name)


@cache
def variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The module renamed (every name a label like %n17) and its computations reordered, each
    confirmed by XLA's parser; seeded by the module's name."""
    found = tuple(metamorphic.variants(text(name), seed=zlib.crc32(name.encode())))
    assert found, f"{name}: no metamorphic variant XLA accepts"
    return found


def forms(name: str):
    """(what, text, variant): the module as XLA printed it (variant None), then each variant.
    An answer must follow the module's facts, not its names or the order of its computations."""
    yield name, text(name), None
    seed = zlib.crc32(name.encode())
    for variant in variants(name):
        yield f"{name} ({variant.kind}, seed {seed})", variant.text, variant


def renamed_keys(variant, expected: dict) -> dict:
    """expected with its keys (instruction names) renamed as in the variant; values kept (an
    opcode such as "fusion" may also be some instruction's name)."""
    return expected if variant is None else {variant.rename(k): v for k, v in expected.items()}


def matched(pattern: str, text: str) -> str:
    """The first group of ``pattern`` in ``text`` (which must hold it)."""
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in {text[:120]!r}"
    return found.group(1)


_MODE = re.compile(r'"activation_mode":"(kNone|kRelu)"')
_DEFAULTS = r'"(?:epilogue":"DEFAULT|activation_mode":"kNone)"'
_DEFAULT_FIELD = re.compile(rf"{_DEFAULTS},|,{_DEFAULTS}(?=\}})")


def modes_swapped(text: str) -> str:
    """Every cuDNN call's activation_mode kNone made kRelu and kRelu kNone (XLA's parser keeps a
    backend_config as written): a `__cudnn$convForward` then records kRelu, so the answer must
    come from the config, not from the target's name."""
    return _MODE.sub(
        lambda m: '"activation_mode":"' + ("kRelu" if m[1] == "kNone" else "kNone") + '"', text
    )


def defaults_left_out(text: str) -> str:
    """Every `"epilogue":"DEFAULT"` and `"activation_mode":"kNone"` field left out of its JSON,
    as proto3 JSON may print a field holding its default: the call keeps that default."""
    return _DEFAULT_FIELD.sub("", text)
