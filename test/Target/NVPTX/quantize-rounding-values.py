# RUN: %python %s %kiln_src/lib/Target/NVPTX/QuantizeRounding.cpp
"""kiln-nvptx-quantize-rounding's 8-bit form, with the constants read from
the pass's source, against QuantizeLinear's definition.

The device code computes, for clamp(roundeven(v) + zp, lo, hi) to 8 bits:
c = min(max(v, lo - zp), hi - zp) in f32, s = c + (kMagic + zp) (zp even)
or c + kMagic (zp odd) rounded to nearest even, then the low 8 bits of s's
pattern, plus zp when zp is odd. This evaluates the same in numpy's f32 and
checks it against round-half-to-even, the zero point and the clamp done in
exact integers, for the spellings the importer writes (uint8 with zero
point 0, 128 and an odd one, int8 with 0 and an odd one), on every tie
k + 0.5 in and past the range, the bounds and their neighbouring floats,
random values of several magnitudes, and +-inf. NaN is not checked against
anything (QuantizeLinear leaves it undefined): it must give lo.
"""
import re
import sys

import numpy as np

src = open(sys.argv[1]).read()
magic = int(re.search(r"kMagic = (\d+);", src).group(1))
magic_range = 1 << int(re.search(r"kMagicRange = 1 << (\d+);", src).group(1))
assert magic == 3 << 22, magic


def device(v, lo, hi, zp, fold_odd=False):
    v = v.astype(np.float32)
    c = np.minimum(np.maximum(v, np.float32(lo - zp)), np.float32(hi - zp))
    # max.f32 / min.f32 ignore NaN: it takes the bound.
    c = np.where(np.isnan(v), np.float32(lo - zp), c)
    fold = zp % 2 == 0 or fold_odd
    add = magic + (zp if fold else 0)
    assert float(np.float32(add)) == add
    s = (c + np.float32(add)).astype(np.float32)
    bits = s.view(np.int32).astype(np.int64)
    if not fold:
        bits = bits + zp
    return bits & 0xFF


def reference(v, lo, hi, zp):
    r = np.rint(v.astype(np.float64))  # half to even
    r = np.clip(r + zp, lo, hi).astype(np.int64)
    return r & 0xFF


rng = np.random.default_rng(7)
failures = 0
cases = [(0, 255, 0), (0, 255, 128), (0, 255, 127), (0, 255, 3),
         (-128, 127, 0), (-128, 127, -5), (-128, 127, 1)]
for lo, hi, zp in cases:
    assert max(abs(lo - zp), abs(hi - zp)) <= magic_range
    ties = np.arange(lo - zp - 4, hi - zp + 4) + 0.5
    ints = np.arange(lo - zp - 4, hi - zp + 5, dtype=np.float64)
    edges = []
    for b in (lo - zp, hi - zp):
        f = np.float32(b)
        edges += [np.nextafter(f, np.float32(-np.inf)), f,
                  np.nextafter(f, np.float32(np.inf))]
    rand = np.concatenate([rng.uniform(-s, s, 100000) for s in (1, 300, 1e6, 1e30)])
    v = np.concatenate([ties, ints, np.array(edges, np.float64), rand,
                        np.array([np.inf, -np.inf, 0.0, -0.0])]).astype(np.float32)
    got, want = device(v, lo, hi, zp), reference(v, lo, hi, zp)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        failures += 1
        i = bad[0]
        print(f"FAIL lo={lo} hi={hi} zp={zp}: {len(bad)} values differ, "
              f"e.g. v={float(v[i])!r}: {got[i]} != {want[i]}")
    nan = device(np.array([np.nan], np.float32), lo, hi, zp)[0]
    if nan != lo & 0xFF:
        failures += 1
        print(f"FAIL lo={lo} hi={hi} zp={zp}: NaN gives {nan}, not lo")
    print(f"lo={lo} hi={hi} zp={zp}: {len(v)} values, {len(bad)} differ")
# The check can fail: an odd zero point folded into the addition rounds
# ties of v + zp, not of v, to even (the reason the pass adds it apart).
ties = np.arange(-100, 100, dtype=np.float32) + np.float32(0.5)
folded = device(ties, 0, 255, 127, fold_odd=True)
if not (folded != reference(ties, 0, 255, 127)).any():
    failures += 1
    print("FAIL: an odd zero point folded into the addition went unnoticed")
sys.exit(1 if failures else 0)
