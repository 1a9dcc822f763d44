"""kata_harness.oracles.memory.entry_intermediate_bytes on a module whose count is worked out by
hand: a tuple ROOT before other lines, custom-calls (one tuple-shaped, stating
output_to_operand_aliasing), an in-place-looking update, a slice, views and a constant."""

from kata_harness.oracles import memory

MODULE = """\
HloModule oracle_check

ENTRY %main (x: f32[6]) -> (f32[6], f32[2]) {
  %x = f32[6]{0} parameter(0)
  %k = s32[] constant(1)
  %s = f32[2]{0} slice(%x), slice={[0:2]}
  %u = f32[6]{0} dynamic-update-slice(%x, %s, %k)
  %c = (f32[6]{0}, s32[]) custom-call(%u), custom_call_target="t",
      output_to_operand_aliasing={{0}: (0, {})}
  %g = f32[6]{0} get-tuple-element(%c), index=0
  %b = f32[1,6]{1,0} bitcast(%g)
  %n = f32[6]{0} negate(%g)
  ROOT %out = (f32[6]{0}, f32[2]{0}) tuple(%n, %s)
  %d = f64[3]{0} custom-call(%x), custom_call_target="v"
}
"""


def test_entry_intermediate_bytes_counts_by_xla_opcode():
    # u 24 + c (24 + 4) + d 24; not x, k, g, b, the ROOT tuple nor its operands n and s
    assert memory.entry_intermediate_bytes(MODULE) == 24 + 28 + 24
