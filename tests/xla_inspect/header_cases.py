"""The header attributes the header tests run through XLA's parser and the reader: what XLA
accepts (ACCEPTED), what it rejects (REJECTED), several spellings per rule, and layouts it reads
halfway (HALFWAY). A data table, read by test_header.py.
"""

# an entry whose result is a tuple, so output indices {}, {0} and {1} exist
BODY = """

ENTRY main {
  p0 = f32[2,3]{1,0} parameter(0)
  p1 = s32[] parameter(1)
  n = f32[2,3]{1,0} negate(p0)
  ROOT t = (f32[2,3]{1,0}, s32[]) tuple(n, p1)
}
"""
LAYOUT = "entry_computation_layout="

ACCEPTED = [
    # booleans
    "is_scheduled=true",
    "is_scheduled=false",
    "alias_passthrough_params=true",
    "alias_passthrough_params=false",
    # integers (int64; a non-negative one is read as uint64, so 2**64-1 is -1)
    "replica_count=4",
    "replica_count=1",
    "num_partitions=8",
    "num_partitions=0",
    "num_partitions=-2",
    "replica_count=18446744073709551615",
    "replica_count=-9223372036854775808",
    "replica_count=04",
    # bool or bool list
    "allow_spmd_sharding_propagation_to_output={true}",
    "allow_spmd_sharding_propagation_to_output=true",
    "allow_spmd_sharding_propagation_to_output={}",
    "allow_spmd_sharding_propagation_to_parameters={false,false}",
    "allow_spmd_sharding_propagation_to_parameters={ true, false, true }",
    "allow_spmd_sharding_propagation_to_parameters=false",
    # entry_computation_layout
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3], s32[])->(f32[2,3], s32[])}",
    LAYOUT + "{( f32[2, 3]{1, 0}, s32[] ) -> (f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32 [2,3] {1,0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[],)->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{0,1}, s32[])->(f32[2,3]{0,1}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:T(8,128)}, s32[])->(f32[2,3]{1,0:T(8,128)(2,1)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:T(8,128)(2,1)S(1)}, s32[])->(f32[2,3]{1,0:T(8, 128)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:T(8,128)E(32)}, s32[])->(f32[2,3]{1,0:T(2,*)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:L(4)}, s32[])->(f32[2,3]{1,0:D(D,D)SC(1:1,2)M(8)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:#(u32)*(u64)}, s32[])->f32[2,3]{1,0:SC(0:1,2)(1:0)}}",
    LAYOUT + "{(f32[2,3]{1,0:}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[<=2,?]{1,0}, token[])->(f32[2,3]{1,0}, (s32[], pred[4]{0}))}",
    LAYOUT + "{(b(f32[2,3]{1,0}), s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(s4[2,3]{1,0:E(4)}, f8e4m3fn[2]{0}, u1[3]{0}, opaque[])->()}",
    LAYOUT + "{()->f32[]}",
    LAYOUT + "{(token[], (f32[2]{0}, ()))->f32[]{:T(1)}}",
    LAYOUT + "{(f32[<= 2]{0})->b(f32[2,3]{1,0 : T (8,128)})}",
    # XLA asks for an unsigned index type, records the error and reads on
    LAYOUT + "{(f32[2,3]{1,0:#(s32)*(f32)})->f32[2,3]{1,0:D()}}",
    # XLA does not compare the layout with the entry computation's parameters; it validates
    # the layouts of tuple elements only (a permutation, no index types, positive tiles...)
    LAYOUT + "{(f32[7]{0}, f32[7]{0}, f32[7]{0})->f32[5]{0}}",
    LAYOUT + "{(f32[2,3]{1,1}, s32[])->f32[2,3]{1,5}}",
    LAYOUT + "{(f32[2,3]{1,0:T()E(-1)}, s32[])->(f32[2,3]{0,1:T(8,*)S(-1)}, s32[])}",
    # input_output_alias: {output index}: (parameter, parameter index, kind?)
    "input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }",
    "input_output_alias={ {0}: (0, {}, must-alias) }",
    "input_output_alias={ {0}: (0, {}) }",
    "input_output_alias={{0}:(0,{},may-alias),{1}:(1,{})}",
    "input_output_alias={ {0}: (0, {}), }",
    "input_output_alias={ {0}: (0, {0,}) }",
    "input_output_alias={}",
    # buffer_donor: (parameter, parameter index)
    "buffer_donor={ (0, {}) }",
    "buffer_donor={ (0, {}), (1, {}) }",
    "buffer_donor={(0,{}),}",
    "buffer_donor={}",
    # XLA does not compare the two, nor a parameter index with the parameter's shape
    "input_output_alias={ {0}: (0, {-1}) }, buffer_donor={ (0, {}) }",
    # frontend_attributes: name=string or name=JSON dict
    'frontend_attributes={xla.sdy.meshes="{mesh = #sdy.mesh<[\\"x\\"=2]>}"}',
    'frontend_attributes={arg_layout_modes="default;default",out_memory_spaces="0"}',
    'frontend_attributes={a="b", a="c"}',
    'frontend_attributes={a.b-c="1", d="2"}',
    'frontend_attributes={a="\\U0010FFFF\\uE000\\uD7FF\\u0000"}',
    'frontend_attributes={a={"x": {"y": "}"}}}',
    'frontend_attributes={a="\\x41\\101\\u0041\\U00000041\\?\\"\\\\", _b.c-="\\n"}',
    "frontend_attributes={}",
    # backend_config: string or JSON dict (braces balanced, nothing more)
    'backend_config="x"',
    'backend_config=""',
    'backend_config={"a": 1}',
    "backend_config={}",
    "backend_config={a}",
    # debug_attributes: {original array}: attributes, or a list of them
    'debug_attributes={ {"x"}: {op_id=1} }',
    'debug_attributes={ {"x" {0}}: {op_id=1, callback_id=2, partitioned=true, log_mode=default} }',
    'debug_attributes={ {"x"}: ({op_id=1}, {log_mode=fusion_debugger}) }',
    'debug_attributes={ {"x"}: (), {"y"}: {op_id=2} }',
    "debug_attributes={ {}: {partitioned=false} }",
    "debug_attributes={}",
    # origin_recovery_table: entries with no ',' between them; a string holds a whole module
    'origin_recovery_table={ {"a"}: {"b"} }',
    'origin_recovery_table={ {"a"}: {"b"} {"c" {1}}: {"d" {}} }',
    'origin_recovery_table={ {"a"}: {"b"}, "HloModule r\\n\\nENTRY e {\\n  ROOT p = f32[] '
    'parameter(0)\\n}\\n" }',
    "origin_recovery_table={}",
    'origin_recovery_table={ {"a"}: {"b"}, "HloModule r\\n\\nENTRY e {\\n  ROOT p = f32[] '
    'parameter(0), metadata={op_name=\\"\u4e2d\\"}\\n}\\n" }',
    # several at once, as XLA prints them
    "is_scheduled=true, " + LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[])}, "
    "allow_spmd_sharding_propagation_to_parameters={false,false}, "
    "allow_spmd_sharding_propagation_to_output={true,true}, replica_count=2, num_partitions=4",
]

# Rejected headers on which XLA's parser aborts its process (a CHECK) rather than returning an
# error: each costs the helper a new parser process (test_header asks XLA about them in a battery)
XLA_ABORTS = [
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:L(0)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:L(-1)}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->f32[2,3]{1,0:T(8,128)L(0)}}",
    LAYOUT + "{(token[2])->f32[]}",
    LAYOUT + "{(opaque[2])->f32[]}",
]

REJECTED = [
    # names XLA does not list
    "entry_computaton_layout={(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    "is_schedulde=true",
    "calls=main",
    "Is_scheduled=true",
    "frontend_attribute={}",
    # booleans
    "is_scheduled=ttrue",
    "is_scheduled=True",
    "is_scheduled=1",
    "alias_passthrough_params=yes",
    # integers
    "replica_count=4.0",
    "replica_count=0x4",
    "replica_count=true",
    "replica_count=4x4",
    "num_partitions=two",
    "replica_count=18446744073709551616",
    "replica_count=-9223372036854775809",
    "replica_count=+4",
    # bool lists
    "allow_spmd_sharding_propagation_to_output={true,}",
    "allow_spmd_sharding_propagation_to_output={true false}",
    "allow_spmd_sharding_propagation_to_output={1}",
    "allow_spmd_sharding_propagation_to_parameters=yes",
    # entry_computation_layout
    LAYOUT + "true",
    LAYOUT + "{0}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{f32[2,3]{1,0}->f32[2,3]{1,0}}",
    LAYOUT + "{(f23[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s23[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{2,1,0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{0}, s32[])}",
    LAYOUT + "{(f32[2,3]{}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{:T(8,128)}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:X(1)}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:S(1)T(8,128)}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0:E(32)T(8,128)}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0} s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2 3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[],)}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, s32[])->f32[]}",
    LAYOUT + "{(f32[-1]{0}, s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])=>(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])- >(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[< =2]{0})->f32[]}",
    LAYOUT + "{(tuple[])->f32[]}",
    LAYOUT + "{(f32[2,3]{1,0})->f32[]{}}",
    LAYOUT + "{(f32[2,3]{1,0})->f32[2,3]{1,0:P(f32[2]{0})}}",
    LAYOUT + "{(f32[2,3]{1,0})->f32[2,3]{1,0:TT(1)}}",
    LAYOUT + "{(f32[2,3]{1,0})->f32[2,3]{1,0:D(X)}}",
    LAYOUT + "{(f32[2,3]{1,0})->f32[2,3]{1,0:SC(0)}}",
    LAYOUT + "{(b(b(f32[2]{0})))->f32[]}",
    LAYOUT + "{(b(token[]))->f32[]}",
    LAYOUT + "{(f32[2,3]{1,0})->b((f32[2,3]{1,0}))}",
    # the layout of a tuple element is validated
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,1}, s32[])}",
    LAYOUT + "{((f32[2,3]{1,5}), s32[])->(f32[2,3]{1,0}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, (s32[], pred[2]{5}))}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:#(u32)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:*(u64)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:T()}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:T(8,0)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:E(-1)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:SC(0:1,2)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:SC(1:2,1)}, s32[])}",
    LAYOUT + "{(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0:SC(1:1)(1:2)}, s32[])}",
    # XLA aborts the process on these (a CHECK), rather than returning an error
    *XLA_ABORTS,
    # input_output_alias
    "input_output_alias={ {0}: 0 }",
    "input_output_alias={ {0}: (0, {}, maybe-alias) }",
    "input_output_alias={ {0}: (0, {}, ) }",
    "input_output_alias={ {0}: (0, {}) {1}: (1, {}) }",
    "input_output_alias={ {0}: (0) }",
    "input_output_alias={ 0: (0, {}) }",
    "input_output_alias={ {0}: (0, {,}) }",
    "input_output_alias=true",
    "input_output_alias={ {0}: (-1, {}) }",
    "input_output_alias={,}",
    # buffer_donor
    "buffer_donor={ (0) }",
    "buffer_donor={ 0: (0, {}) }",
    "buffer_donor={ (0, {}) (1, {}) }",
    "buffer_donor={ (0, 0) }",
    "buffer_donor={ (-1, {}) }",
    "buffer_donor={,}",
    # frontend_attributes
    'frontend_attributes={a="b",}',
    "frontend_attributes={a=b}",
    "frontend_attributes={a=1}",
    'frontend_attributes={"a"="b"}',
    'frontend_attributes={a="b" c="d"}',
    'frontend_attributes={a ="b"}',
    'frontend_attributes={a={"x": 1}',
    'frontend_attributes={1a="1"}',
    'frontend_attributes={a="\\q"}',
    'frontend_attributes={a="\\x414"}',
    'frontend_attributes={a="\\400"}',
    'frontend_attributes={a="\\u004"}',
    'frontend_attributes={a="\\x"}',
    'frontend_attributes={a="\\U00110000"}',
    'frontend_attributes={a="\\uD800"}',
    'frontend_attributes={a="\\U0000DFFF"}',
    # backend_config
    "backend_config=abc",
    "backend_config=1",
    'backend_config="\\q"',
    # debug_attributes
    'debug_attributes={ {"x"}: {opid=1} }',
    'debug_attributes={ {"x"}: {log_mode=loud} }',
    'debug_attributes={ {"x"}: {} }',
    'debug_attributes={ {"x"}: {op_id=one} }',
    'debug_attributes={ {"x"}: {op_id=1}, }',
    "debug_attributes={ {x}: {op_id=1} }",
    # origin_recovery_table
    'origin_recovery_table={ {"a"}: {"b"}, {"c"}: {"d"} }',
    'origin_recovery_table={ {"a"}: {"b"}, "bogus" }',
    'origin_recovery_table={ {"a"} {"b"} }',
    'origin_recovery_table={ {"a"}: {"b"}, "HloModule r\\n\\nENTRY e {\\n  ROOT p = f32[] '
    'parameter(0), metadata={op_name=\\"\u4e2d\\"\\n}\\n" }',
    'origin_recovery_table={ {"a"}: {"b"}, "HloModule r, is_scheduled=ttrue\\n\\nENTRY e {\\n  '
    'ROOT p = f32[] parameter(0)\\n}\\n" }',
]

# layouts read halfway: XLA ignores how each part of a layout ends and tries the next part from
# there, so some of these unbalanced texts pass; the reader's bracket matching refuses them all
# before the header is checked, so they are checked here as values, against XLA's verdict
HALFWAY = [
    "{(f32[2]{0:T(512})->f32[]}",
    "{(f32[2]{0:T(512S(1)})->f32[]}",
    "{(f32[2]{0:T(8,})->f32[]}",
    "{(f32[2]{0:L)})->f32[]}",
    "{(f32[2]{0:L(4)E(8})->f32[]}",
    "{(f32[2]{0:#)})->f32[]}",
    "{(f32[2]{0:D(D})->f32[]}",
    "{(f32[2]{0:SC(0:1,})->f32[]}",
    "{(f32[2]{0:M(})->f32[]}",
    "{(f32[2]{0:S(1)S(2)})->f32[]}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:T}, s32[])}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:T(}, s32[])}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:T(2}, s32[])}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:#(}, s32[])}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:#}, s32[])}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:SC(0:}, s32[])}",
    "{(f32[2]{0:T(512}, s32[])->(f32[2]{0:L(}, s32[])}",
]
