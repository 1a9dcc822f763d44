"""What a sealed prediction may read is judged by the file, not by who opens it: a memo read
through linecache or tokenize (standard-library frames) or imported as a module is refused; an
installed module's files and the kata file's own source are not a memo; and kata code may not
write where a sealed prediction may read."""

from __future__ import annotations

import textwrap

import pytest

from kata_harness import guard, loading, predict
from kata_harness.curriculum import Task

TASK = Task(phase=0, number=1, function="predict_flops", title="t", hints=(), kind="predict")


def _kata_file(tmp_path, monkeypatch, name: str, source: str):
    path = (tmp_path / f"{name}.py").resolve()
    path.write_text(textwrap.dedent(source))
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path))
    return path


@pytest.mark.parametrize(
    "read",
    [
        "import linecache\ndef _read(memo):\n    return linecache.getline(memo, 1)\n",
        "import tokenize\ndef _read(memo):\n    with tokenize.open(memo) as f:\n"
        "        return f.read()\n",
        "import sys\ndef _read(memo):\n    sys.path.insert(0, memo.rsplit('/', 1)[0])\n"
        "    import memo_module\n    return memo_module.TABLE\n",
    ],
    ids=["linecache", "tokenize", "import"],
)
def test_a_memo_read_through_the_standard_library_is_refused(tmp_path, monkeypatch, read):
    memo = tmp_path / "memo_module.py"
    memo.write_text("TABLE = 128\n")
    answer = "def predict_flops(n):\n    return int(str(_read(MEMO)).strip().rsplit(' ', 1)[-1])\n"
    source = f"MEMO = {str(memo)!r}\n{read}{answer}"
    path = _kata_file(tmp_path, monkeypatch, f"memo_{abs(hash(read))}", source)
    module = loading.load_file(path, f"_sealed_reads_{abs(hash(read))}", label="phase0")
    predict.refuse_in(module, [TASK], [])
    try:
        with pytest.raises(pytest.fail.Exception, match=r"predict_flops\) read a file \("):
            module.predict_flops(8)
    finally:
        import sys

        sys.modules.pop("memo_module", None)
        if sys.path and sys.path[0] == str(tmp_path):
            sys.path.pop(0)


def test_installed_sources_and_the_files_own_source_may_be_read(tmp_path, monkeypatch):
    source = """
        import linecache
        import json

        def predict_flops(n):
            import colorsys  # a module imported inside the answer: its source is installed
            own = linecache.getline(__file__, 2)  # the file's own source
            installed = linecache.getline(json.__file__, 1)
            return 2 * n * n if own and installed and colorsys else 0
    """
    path = _kata_file(tmp_path, monkeypatch, "own_source", source)
    module = loading.load_file(path, "_sealed_reads_own", label="phase0", scan=True)
    predict.refuse_in(module, [TASK], loading._compiled_at_load[module.__name__])
    assert module.predict_flops(4) == 32


def test_kata_code_may_not_write_where_a_sealed_prediction_may_read(tmp_path, monkeypatch):
    import json

    target = str(tmp_path / "unused")
    installed = guard.installed_dirs()
    assert any(json.__file__.startswith(d) for d in installed)
    target = json.__file__.rsplit("/", 1)[0] + "/kata_memo_never_written.py"
    path = tmp_path / "writer.py"
    path.write_text(f"def run():\n    open({target!r}, 'w').write('TABLE = 1')\n")
    module = loading.load_file(path, "_sealed_reads_writer", label="phase0")
    guard.install()
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path.resolve()))
    with pytest.raises(guard.KataGuardError, match="opens"):
        module.run()
