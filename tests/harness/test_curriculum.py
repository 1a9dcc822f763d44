"""The curriculum checks itself: stubs and references match, every task has a TODO, hints,
tests and at least two decoys, and every decoy names tests that exist."""

import ast
import functools
import inspect
import re
from collections.abc import Iterator

import pytest

from kata_harness import curriculum, guard, loading, source_scan
from kata_harness.decoys import MIN_DECOYS

PHASES = curriculum.phases()


@functools.cache
def _tree(path) -> ast.Module:
    """A course file parsed once per run (several checks read each test file; none changes it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested ones too: a statement sits only in another's
    statement lists, never inside an expression, so expressions need no visit."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        for field in ("body", "orelse", "finalbody"):
            pending.extend(getattr(node, field, ()))
        for handler in getattr(node, "handlers", ()):
            pending.extend(handler.body)
        for case in getattr(node, "cases", ()):
            pending.extend(case.body)


def _functions(path) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in _tree(path).body if isinstance(n, ast.FunctionDef)}


def _test_names(phase) -> set[str]:
    names = set()
    for test_file in (curriculum.KATAS_DIR / phase.name).glob("test_*.py"):
        names |= {n for n in _functions(test_file) if n.startswith("test_")}
    return names


def _task_tests(phase) -> dict[str, set[str]]:
    by_task: dict[str, set[str]] = {}
    for test_file in (curriculum.KATAS_DIR / phase.name).glob("test_*.py"):
        for name, node in _functions(test_file).items():
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and ast.unparse(deco.func) == "pytest.mark.task"
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    by_task.setdefault(str(deco.args[0].value), set()).add(name)
    return by_task


def test_there_are_phases():
    assert [p.number for p in PHASES][:2] == [1, 2]


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_stub_and_reference_expose_the_same_api(phase):
    stub = loading.load_file(phase.kata_path, f"_api_stub_{phase.name}", label=phase.name)
    ref = loading.load_impl(phase, "reference")
    for task in phase.tasks:
        assert hasattr(stub, task.function), f"{task.id}: stub lacks {task.function}"
        assert hasattr(ref, task.function), f"{task.id}: reference lacks {task.function}"
        stub_sig = inspect.signature(getattr(stub, task.function))
        ref_sig = inspect.signature(getattr(ref, task.function))
        assert stub_sig == ref_sig, f"{task.id}: stub {stub_sig} != reference {ref_sig}"
    public = {
        n
        for n, v in vars(stub).items()
        if inspect.isfunction(v) and not n.startswith("_") and v.__module__ == stub.__name__
    }
    ref_public = {
        n
        for n, v in vars(ref).items()
        if inspect.isfunction(v) and not n.startswith("_") and v.__module__ == ref.__name__
    }
    assert public <= ref_public, f"stub functions missing from the reference: {public - ref_public}"


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_every_stub_task_has_a_todo_and_raises(phase):
    source = phase.kata_path.read_text(encoding="utf-8")
    functions = _functions(phase.kata_path)
    for task in phase.tasks:
        node = functions.get(task.function)
        assert node is not None, f"{task.id}: {task.function} missing from {phase.kata_path.name}"
        body = ast.get_source_segment(source, node) or ""
        assert "# TODO" in body, f"{task.id} ({task.function}): the stub has no # TODO"
        marker = f'raise NotImplementedError("phase{phase.number} task {task.number}: '
        assert marker in body, f'{task.id}: the stub must {marker}{task.function}")'


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_every_task_has_hints_tests_and_decoys(phase):
    by_task = _task_tests(phase)
    decoys = loading.phase_decoys(phase)
    for task in phase.tasks:
        assert len(task.hints) >= 2, f"{task.id}: at least two hint levels"
        assert all(h.strip() for h in task.hints), f"{task.id}: an empty hint"
        assert by_task.get(task.function), f"{task.id}: no test carries task('{task.function}')"
        count = sum(d.replaces == task.function for d in decoys)
        assert count >= MIN_DECOYS, f"{task.id}: {count} decoy(s), at least {MIN_DECOYS}"
    assert sum(len(v) for v in by_task.values()) >= 8, f"{phase.name}: at least 8 tests"
    unknown = set(by_task) - {t.function for t in phase.tasks}
    assert not unknown, f"{phase.name}: tests name unknown tasks {unknown}"


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_decoys_name_tests_of_their_task(phase):
    by_task = _task_tests(phase)
    for d in loading.phase_decoys(phase):
        assert d.caught_by, f"{phase.name} decoy {d.name}: names no test"
        stray = set(d.caught_by) - by_task.get(d.replaces, set())
        assert not stray, f"{phase.name} decoy {d.name}: {stray} are not tests of {d.replaces}"


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_accepted_variants_name_tasks(phase):
    functions = {t.function for t in phase.tasks}
    for a in loading.phase_accepted(phase):
        assert a.replaces in functions, f"{phase.name} accepted {a.name}: no task {a.replaces}"
        assert a.why.strip(), f"{phase.name} accepted {a.name}: say why it is correct"


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_stub_and_reference_pass_the_guard(phase):
    """The guard refuses nothing a correct answer needs: the reference is one."""
    for path in (phase.kata_path, phase.reference_path):
        found = source_scan.scan(path.read_text(encoding="utf-8"), str(path))
        assert found is None, f"{path.relative_to(curriculum.ROOT)} {found}: {guard.WHY}"


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_phase_has_a_readme(phase):
    readme = curriculum.KATAS_DIR / phase.name / "README.md"
    assert readme.is_file(), f"{phase.name} needs a README.md"
    text = readme.read_text(encoding="utf-8")
    assert "kata.py" in text and "http" in text, "say what to edit and link the docs"


def _kata_calls_inside_check(test_file) -> list[str]:
    """Calls of kata.<function> inside `with check:` blocks (pytest-check would swallow the
    one-line TODO message and a timeout)."""
    found = []
    for node in _statements(_tree(test_file).body):  # a `with` is a statement
        if not isinstance(node, ast.With):
            continue
        if not any(ast.unparse(item.context_expr) == "check" for item in node.items):
            continue
        for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and isinstance(inner.func.value, ast.Name)
                and inner.func.value.id == "kata"
            ):
                found.append(f"{test_file.name}:{inner.lineno} kata.{inner.func.attr}")
    return found


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_kata_functions_are_called_outside_check_blocks(phase):
    for test_file in (curriculum.KATAS_DIR / phase.name).glob("test_*.py"):
        calls = _kata_calls_inside_check(test_file)
        assert not calls, f"call these before the `with check:` block: {calls}"


_SPACE = re.compile(r"[\s`]+")
_ANSWER_LINE_MIN = 16  # shorter statements (`return x`, `n += 1`) say nothing of the answer


def _answer_lines(function: ast.FunctionDef, given: str) -> set[str]:
    """The reference's statements for a task, without whitespace, that the stub does not give."""
    lines = set()
    for node in ast.walk(function):
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        code = _SPACE.sub("", ast.unparse(node))
        if len(code) >= _ANSWER_LINE_MIN and code not in given:
            lines.add(code)
    return lines


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: p.name)
def test_no_hint_docstring_or_lesson_holds_an_answer_line(phase):
    stub_source = phase.kata_path.read_text(encoding="utf-8")
    stub, reference = _functions(phase.kata_path), _functions(phase.reference_path)
    given = _SPACE.sub("", stub_source)
    lesson = _SPACE.sub("", (phase.kata_path.parent / "README.md").read_text(encoding="utf-8"))
    found = []
    for task in phase.tasks:
        texts = {
            "a hint": _SPACE.sub("", " ".join(task.hints)),
            "the stub's docstring or TODO": _SPACE.sub(
                "", ast.get_source_segment(stub_source, stub[task.function]) or ""
            ),
            "the lesson": lesson,
        }
        for code in _answer_lines(reference[task.function], given):
            found += [
                f"{task.id}: {where} holds `{code}`" for where, t in texts.items() if code in t
            ]
    assert not found, "; ".join(found)
