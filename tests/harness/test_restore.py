"""What a refused file replaced in a library is put back: the refusal alone left the patch in
place for every later test of the process (phase 12's probe replaced ``Compiled.as_text`` at
import, was refused, and the census then blamed phase 12's reference for the printed text)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from kata_harness import contract, curriculum, loading


def test_restore_puts_back_what_was_replaced_and_says_what():
    original = jax.stages.Compiled.as_text
    before = contract.fingerprint()
    jax.stages.Compiled.as_text = lambda self: ""  # type: ignore[method-assign]
    try:
        assert contract.restore(before) == ["Compiled.as_text"]
    finally:
        jax.stages.Compiled.as_text = original  # type: ignore[method-assign]
    assert jax.stages.Compiled.as_text is original
    assert contract.restore(contract.fingerprint()) == []


def test_a_file_refused_for_a_patch_leaves_the_library_as_it_was(tmp_path):
    original = jax.stages.Compiled.as_text
    kata = tmp_path / "kata.py"
    kata.write_text("import jax\njax.stages.Compiled.as_text = lambda self, *a, **k: ''\n")
    # unscanned, so the patch runs whatever routes the scan knows: what is judged is the load
    with pytest.raises(loading.KataLoadError):
        loading.load_file(kata, "_restore_probe", label="probe", scan=False)
    assert jax.stages.Compiled.as_text is original


def test_the_phase12_probe_leaves_compiled_as_text_alone():
    original = jax.stages.Compiled.as_text
    probe = curriculum.DECOYS_DIR / "redteam" / "phase12_probes" / "r4_alias_patch_as_text.py"
    with pytest.raises(loading.KataLoadError):
        loading.load_file(probe, "_restore_phase12_probe", label="probe", scan=True)
    assert jax.stages.Compiled.as_text is original


@pytest.mark.parametrize("form", ["replaced", "removed", "renamed", "moved", "added and replaced"])
def test_every_kind_of_change_to_a_library_is_seen_and_put_back(form):
    """A name given another object, removed, renamed to keep its object, or removed and set again
    (the dict moves it to the end), and a replacement beside an added name: each is reported."""
    original = jnp.add
    before = contract.fingerprint()
    if form == "replaced":
        jnp.add = jnp.subtract  # type: ignore[assignment]
    elif form == "removed":
        del jnp.add
    elif form == "renamed":
        del jnp.add
        jnp.add_ = original  # type: ignore[attr-defined]
    elif form == "moved":
        del jnp.add
        jnp.add = original  # type: ignore[assignment]
    else:
        jnp.add_extra = original  # type: ignore[attr-defined]
        jnp.add = jnp.subtract  # type: ignore[assignment]
    try:
        found = contract.restore(before)
    finally:
        jnp.add = original  # type: ignore[assignment]
        for name in ("add_", "add_extra"):
            if hasattr(jnp, name):
                delattr(jnp, name)
    assert found == ([] if form == "moved" else ["jax.numpy.add"])
    assert contract.changed(before) == []
