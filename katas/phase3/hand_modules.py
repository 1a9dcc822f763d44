"""Two more hand-written modules of phase 3's bank (each checked against XLA's parser), for the
places the bank's compiled programs never put a fusion or a constant.

HAND_NESTED: fusions nested three deep (a kLoop fusion whose computation holds a kLoop fusion
whose computation holds a kInput fusion, whose reduce calls a reducer); a kOutput fusion holding a
select-and-scatter, which calls its computations by select= and scatter=; one fused computation
called by two kLoop fusions (counted once per call).

HAND_CONSTANTS: a constant named %zero in two fused computations (XLA's parser renames the second
%zero.1, the text keeps both names); constants of the element types the compiled programs never
print (f8e4m3fn, f8e5m2, c64 and c128, u8, bf16) and a tuple-shaped one, each written as XLA
prints it; every ENTRY constant is dead (nothing uses it) and printed before ENTRY's ROOT.
"""

HAND_NESTED = """HloModule hand_nested

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

%ge (x: f32[], y: f32[]) -> pred[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %cmp = pred[] compare(%x, %y), direction=GE
}

%pl (u: f32[], v: f32[]) -> f32[] {
  %u = f32[] parameter(0)
  %v = f32[] parameter(1)
  ROOT %uv = f32[] add(%u, %v)
}

%deepest (d: f32[8]) -> f32[] {
  %d = f32[8]{0} parameter(0)
  %lowest = f32[] constant(-inf)
  ROOT %top = f32[] reduce(%d, %lowest), dimensions={0}, to_apply=%max
}

%middle (c: f32[8]) -> f32[8] {
  %c = f32[8]{0} parameter(0)
  %peak = f32[] fusion(%c), kind=kInput, calls=%deepest
  %peaks = f32[8]{0} broadcast(%peak), dimensions={}
  ROOT %gap = f32[8]{0} subtract(%c, %peaks)
}

%outermost (o: f32[8]) -> f32[8] {
  %o = f32[8]{0} parameter(0)
  %centred = f32[8]{0} fusion(%o), kind=kLoop, calls=%middle
  ROOT %e = f32[8]{0} exponential(%centred)
}

%pool_grad (g: f32[8], s: f32[4]) -> f32[8] {
  %g = f32[8]{0} parameter(0)
  %s = f32[4]{0} parameter(1)
  %z = f32[] constant(0)
  ROOT %r = f32[8] select-and-scatter(%g, %s, %z), window={size=2 stride=2}, select=%ge, scatter=%pl
}

%shared (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}

ENTRY %main (x: f32[8], s: f32[4]) -> (f32[8], f32[8], f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %s = f32[4]{0} parameter(1)
  %soft = f32[8]{0} fusion(%x), kind=kLoop, calls=%outermost
  %grad = f32[8]{0} fusion(%x, %s), kind=kOutput, calls=%pool_grad
  %neg1 = f32[8]{0} fusion(%x), kind=kLoop, calls=%shared
  %neg2 = f32[8]{0} fusion(%soft), kind=kLoop, calls=%shared
  ROOT %all = (f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}) tuple(%soft, %grad, %neg1, %neg2)
}
"""

HAND_CONSTANTS = """HloModule hand_constants

%left (a: f32[3]) -> f32[3] {
  %a = f32[3]{0} parameter(0)
  %zero = f32[] constant(0)
  %zeros = f32[3]{0} broadcast(%zero), dimensions={}
  ROOT %hi = f32[3]{0} maximum(%a, %zeros)
}

%right (b: f32[3]) -> f32[3] {
  %b = f32[3]{0} parameter(0)
  %zero = f32[] constant(0)
  %zeros = f32[3]{0} broadcast(%zero), dimensions={}
  ROOT %lo = f32[3]{0} minimum(%b, %zeros)
}

ENTRY %main (x: f32[3]) -> (f32[3], f32[3]) {
  %x = f32[3]{0} parameter(0)
  %f8 = f8e4m3fn[] constant(1.5)
  %f8b = f8e5m2[2]{0} constant({0.5, -2})
  %cplx = c64[2]{0} constant({(1, 2), (3, 4)})
  %cplx2 = c128[] constant((0.5, -1))
  %pair = (f32[], s32[]) constant(( 1.5, 2 ))
  %bits = u8[3]{0} constant({1, 2, 255})
  %half = bf16[2]{0} constant({0.5, 1})
  %pos = f32[3]{0} fusion(%x), kind=kLoop, calls=%left
  %neg = f32[3]{0} fusion(%x), kind=kLoop, calls=%right
  ROOT %both = (f32[3]{0}, f32[3]{0}) tuple(%pos, %neg)
}
"""
