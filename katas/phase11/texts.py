"""The modules phase 11's reading tests read: the recordings, the hand-written ones and the
matmul fusions holding every collective kind, each as printed and as its metamorphic variants
(every name relabelled, computations reordered, each confirmed by XLA's parser)."""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from typing import Any

from kata_harness import metamorphic
from kata_harness.targets import recorded
from katas.phase11.programs import HANDWRITTEN, RECORDINGS, fused_collectives_module

PHASE = "phase11"
V5E = "tpu-v5e:2x2"
FUSED_COLLECTIVES = "fused_collectives"
TEXTS = [*sorted(RECORDINGS), *HANDWRITTEN]


def text(name: str) -> str:
    return recorded(PHASE, name)


def any_text(name: str) -> str:
    """A recorded module, a hand-written one (programs.HANDWRITTEN), or the matmul fusions that
    hold every collective kind."""
    if name in HANDWRITTEN:
        return HANDWRITTEN[name]
    if name == FUSED_COLLECTIVES:
        return fused_collectives_module()
    return text(name)


@functools.cache
def variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The module with every name relabelled (%n17) and its computations reordered, each
    confirmed by XLA's parser; seeded by the module's name."""
    found = tuple(metamorphic.variants(any_text(name), seed=zlib.crc32(name.encode())))
    assert any(v.kind == "renamed" for v in found), f"{name}: no renamed variant XLA accepts"
    return found


def forms(name: str):
    """(what, text, variant): the module as printed (variant None), then each variant. An
    answer must follow the module's facts, not its names or the order of its computations."""
    yield name, any_text(name), None
    for variant in variants(name):
        seed = zlib.crc32(name.encode())
        yield f"{name} ({variant.kind}, seed {seed})", variant.text, variant


def renamed(variant, expected):
    """expected with every name renamed as in the variant (keys and list items alike)."""
    return expected if variant is None else variant.rename(expected)


def renamed_keys(variant, expected: dict) -> dict:
    """expected with its keys (instruction names) renamed; values kept (an opcode such as
    "all-gather" or a word such as "copy" may also be some instruction's name)."""
    return expected if variant is None else {variant.rename(k): v for k, v in expected.items()}


def attempt(fn: Callable[[str], Any], text: str) -> tuple[Any, str | None]:
    """(fn(text), None), or (None, what it raised): every text the tests hand over is one XLA's
    parser takes, so a crash is a wrong answer, reported through an assertion naming the input
    (the stub's NotImplementedError passes through)."""
    try:
        return fn(text), None
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (any exception: the input is valid)
        return None, f"{type(error).__name__}: {str(error)[:160]}"
