"""What each kata test runs against, and the ``kata`` fixture that hands it over.

With ``--impl=katas`` a test runs once, on the learner's file. In reference mode it runs on the
reference and, for the honest-kata checks, on the shipped stub; with ``--spellings`` also on the
accepted variants of its task, and with ``--decoys`` on those and on every decoy that names it.
The accepted variants check the tests (they must not reject a correct answer), not the course:
the census (``katas dev check``) and CI run them, the README's test command leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from . import catchers, compile_events, curriculum, loading
from .decoys import Accepted, Decoy, Probe, RedTeam

# Run by every test of their task; judged over the task (one failing test catches them).
RED_TEAM = ("redteam", "probe")
GUARD_REFUSED = pytest.StashKey[str]()  # a probe the guard refused to load
# (phase, function, variant id) -> the test that caught that red-team answer or probe in this
# process: the task's later tests skip it, as one catch is the verdict (kata_harness.judging)
CAUGHT: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True, slots=True)
class Variant:
    """What a kata test runs against: the learner's file, the reference, the stub, a decoy, an
    accepted variant, or the red team's wrong answers and probes."""

    kind: str
    spec: Decoy | Accepted | RedTeam | Probe | None = None

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.spec.name}" if self.spec else self.kind

    @property
    def expects_failure(self) -> bool:
        return self.kind in ("stub", "decoy")


def task_of(node: pytest.Item | pytest.Function) -> tuple[curriculum.Phase, curriculum.Task]:
    """The phase and task of a kata test, from its folder and its ``task`` mark."""
    phase = curriculum.phase_of_path(Path(node.path))
    mark = node.get_closest_marker("task")
    if phase is None or mark is None or not mark.args:
        raise pytest.UsageError(f"{node.nodeid}: a kata test needs @pytest.mark.task('<function>')")
    try:
        return phase, phase.task(mark.args[0])
    except KeyError as error:
        raise pytest.UsageError(f"{node.nodeid}: {error.args[0]}") from None


def variant_of(item: pytest.Item) -> Variant | None:
    """The variant a collected test runs against; None for a test that is not a kata test."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and isinstance(callspec.params.get("kata"), Variant):
        return callspec.params["kata"]
    if curriculum.phase_of_path(Path(item.path)) is None:
        return None
    return Variant(str(item.config.getoption("--impl")))


def _variants(
    config: pytest.Config, phase: curriculum.Phase, task: curriculum.Task, test_name: str
) -> list[Variant]:
    if config.getoption("--impl") == "katas":
        return [Variant("katas")]
    variants = [Variant("reference")]
    if config.getoption("--no-honesty"):
        return variants
    variants.append(Variant("stub"))
    if config.getoption("--decoys"):
        variants += [
            Variant("decoy", d) for d in loading.phase_decoys(phase) if test_name in d.caught_by
        ]
        variants += [
            Variant("redteam", r)
            for r in loading.phase_redteam(phase)
            if r.replaces == task.function
        ]
        variants += [
            Variant("probe", p) for p in loading.phase_probes(phase) if p.replaces == task.function
        ]
    if config.getoption("--spellings") or config.getoption("--decoys"):
        variants += [
            Variant("accepted", a)
            for a in loading.phase_accepted(phase)
            if a.replaces == task.function
        ]
    return variants


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kata" not in metafunc.fixturenames:
        return
    phase, task = task_of(metafunc.definition)
    variants = _variants(metafunc.config, phase, task, metafunc.definition.originalname)
    if len(variants) == 1 and variants[0].kind == "katas":
        return
    metafunc.parametrize("kata", variants, indirect=True, ids=[v.id for v in variants])


@pytest.fixture
def kata(request: pytest.FixtureRequest) -> ModuleType:
    """The module under test: learner's kata, reference, shipped stub or a decoy."""
    variant: Variant = getattr(request, "param", Variant("katas"))
    phase, task = task_of(request.node)
    caught_by = CAUGHT.get((phase.name, task.function, variant.id))
    if caught_by is not None:
        pytest.skip(f"{variant.id} is caught already (by {caught_by})")
    try:
        if isinstance(variant.spec, Probe):
            return loading.load_probe(phase, variant.spec)
        if variant.spec is not None:
            return loading.load_variant(phase, variant.spec)
        if variant.kind == "stub":
            return loading.load_stub(phase)
        return loading.load_impl(phase, variant.kind)
    except loading.KataLoadError as error:
        message, refused = str(error), isinstance(error, loading.KataRefused)
    if variant.kind == "probe" and refused:
        request.node.stash[GUARD_REFUSED] = message
        pytest.skip(f"refused by the guard: {message}")
    pytest.fail(message, pytrace=False)  # outside the except: no chained traceback


@pytest.fixture(autouse=True)
def _fresh_jax_caches():
    """Clear JAX's trace and compile caches so trace counting never leaks between tests."""
    compile_events.clear_caches_if_used()
    yield


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test of a phase carries its phase's and task's marks (``-m phase3_task2``), and
    kata tests run in curriculum order: by phase, then by the task's place in ``tasks.toml``
    (tests of one task in file order), so ``-x`` stops at the first unfinished task; with
    ``--decoys`` a red-team answer's run by the test that caught it last time comes first
    (:mod:`.catchers`). Other tests keep their places; ``--random-order`` still shuffles after
    this."""
    slots, ordered = [], []
    for index, item in enumerate(items):
        if curriculum.phase_of_path(Path(item.path)) is None:
            continue
        phase, task = task_of(item)
        item.add_marker(getattr(pytest.mark, phase.name))
        item.add_marker(getattr(pytest.mark, task.mark))
        slots.append(index)
        ordered.append(((phase.number, task.number, index), item))
    ordered.sort(key=lambda entry: entry[0])
    for index, (_, item) in zip(slots, ordered, strict=True):
        items[index] = item
    if config.getoption("--decoys"):
        catchers.catchers_first(items, _red_team_key)


def _red_team_key(item: pytest.Item) -> tuple[str, str, str] | None:
    """(phase name, variant id, test name) of a test run on a red-team answer or probe."""
    variant = variant_of(item)
    if variant is None or variant.kind not in RED_TEAM:
        return None
    phase, _ = task_of(item)
    return phase.name, variant.id, getattr(item, "originalname", item.name)
