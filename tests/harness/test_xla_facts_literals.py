"""The constants oracle (kata_harness.xla_facts) reads each literal as the text holds it: a large
literal the text prints in full stays in full, one the text elides (as the compiled stage's
default print does) stays "{...}", not the values XLA's parser makes up for it."""

from collections import Counter

from kata_harness.xla_facts import xla_facts

ELEVEN = "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}"
TEXT = f"""HloModule literals, entry_computation_layout={{(f32[11]{{0}})->f32[11]{{0}}}}

ENTRY %main (x: f32[11]) -> f32[11] {{
  %x = f32[11]{{0}} parameter(0)
  %full = f32[11]{{0}} constant({ELEVEN})
  %elided = f32[11]{{0}} constant({{...}})
  %small = f32[] constant(2)
  %wide = f32[11]{{0}} broadcast(%small), dimensions={{}}
  %sum = f32[11]{{0}} add(%x, %full)
  %more = f32[11]{{0}} add(%sum, %elided)
  ROOT %out = f32[11]{{0}} multiply(%more, %wide)
}}
"""


def test_literals_as_the_text_holds_them():
    assert xla_facts(TEXT).literals == Counter(
        {("f32[11]{0}", ELEVEN): 1, ("f32[11]{0}", "{...}"): 1, ("f32[]", "2"): 1}
    )
