# RUN: %python %s %kiln_src/lib/Target/GPU/ErfComplement.cpp
"""kiln-erf-complement's polynomial, read from the pass's source, against
1 + erf(y) in double precision.

The device code evaluates u = 2^-(t * P(t)), t = min(|y|, 3.9), with one f32
FMA per coefficient (Horner), then 0 past 3.9 and 2 - u for y >= 0. This
evaluates the same in f32 (each FMA rounded once: the f32 product is exact
in double) on a dense grid of y and checks the largest difference from
1 + erf(y): at most 1.5e-7, about one ulp of a result in [1, 2) (2 - u
rounds there; 1 + erff(y) rounds the same way, after erff's own error); the
exponential instruction's error comes on top on the device. Also the ends: NaN stays NaN, +-inf
give 2 and 0, and |y| past 3.9 gives exactly 2 or 0. Then GeluProduct's
form of c * x * (1 + erf(x / sqrt(2))) against the same in double.
"""
import math
import re
import sys

import numpy as np

src = open(sys.argv[1]).read()
block = re.search(r"kLog2Erfc\[\] = \{(.*?)\};", src, re.S).group(1)
raw = [float(v.rstrip("f")) for v in re.findall(r"[-0-9.e+]+f", block)]
saturation = float(re.search(r"kErfSaturation = ([0-9.]+)f?;", src).group(1))
assert len(raw) == 8, raw


short_block = re.search(r"kLog2ErfcShort\[\] = \{(.*?)\};", src, re.S).group(1)
short = [float(v.rstrip("f")) for v in re.findall(r"[-0-9.e+]+f", short_block)]
short_error = float(re.search(r"kShortError = ([0-9.e+-]+);", src).group(1))
assert len(short) == 5, short


def scaled_erfc(v, scale, log2c=0.0, raw=raw):
    """The pass's exponential of |v|: t = |v|, the bound 3.9 / scale, and
    2^(log2c - g(min(t, bound))) with g's coefficients scaled (Horner, one
    f32 FMA each; the last one adds log2c, 0 for ErfPlusOne)."""
    coeffs = [np.float32(c * scale ** (k + 1)) for k, c in enumerate(raw)]
    bound = np.float32(saturation / scale)
    t = np.abs(np.asarray(v, dtype=np.float32))
    tc = np.where(np.isnan(t), t, np.minimum(t, bound)).astype(np.float32)
    p = np.full_like(tc, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = (p.astype(np.float64) * tc + np.float64(c)).astype(np.float32)
    g = (p.astype(np.float64) * -tc + np.float64(np.float32(log2c))).astype(np.float32)
    return t, bound, np.exp2(g.astype(np.float64)).astype(np.float32)


def one_plus_erf(y, scale=1.0, raw=raw):
    """1 + erf(y * scale) as the pass computes it (scale: the multiplier it
    folds into the coefficients, GELU's 1 / sqrt(2))."""
    y = np.asarray(y, dtype=np.float32)
    t, bound, u = scaled_erfc(y, scale, raw=raw)
    u = np.where(t > bound, np.float32(0), u)
    return np.where(y >= 0, (np.float32(2) - u).astype(np.float32), u)


ys = np.linspace(-6, 6, 1200001).astype(np.float32)
got = one_plus_erf(ys).astype(np.float64)
ref = np.array([1 + math.erf(float(v)) for v in ys])
err = np.abs(got - ref)
worst = int(err.argmax())
print(f"max |(1 + erf) - ref| = {err.max():.3g} at y = {ys[worst]}")
assert err.max() <= 1.5e-7, err.max()
# Where 1 + erf(y) is small (GELU of negative x), relative to the value:
# below 1% down to 1e-6. 1 + erff(y) computed in f32 is worse there (erf
# near -1 has ulps of 6e-8: 4% of erfc(3.5)), as printed.
small = (ref > 1e-6) & (ys < 0)
rel = err[small] / ref[small]
f32 = np.array([np.float32(1) + np.float32(math.erf(float(v))) for v in ys[small]], np.float64)
rel32 = np.abs(f32 - ref[small]) / ref[small]
print(f"max relative error where 1e-6 < 1 + erf(y), y < 0: {rel.max():.3g} "
      f"(1 + erff(y) in f32: {rel32.max():.3g})")
assert rel.max() <= 1e-2, rel.max()
# GELU's argument x / sqrt(2) folded into the polynomial: against
# 1 + erf(x / sqrt(2)) in double, as close as unscaled.
xs = np.linspace(-8, 8, 1200001).astype(np.float32)
gelu = one_plus_erf(xs, 1 / math.sqrt(2)).astype(np.float64)
gref = np.array([1 + math.erf(float(v) / math.sqrt(2)) for v in xs])
gerr = np.abs(gelu - gref)
print(f"scaled by 1/sqrt(2): max |(1 + erf) - ref| = {gerr.max():.3g} at x = {xs[gerr.argmax()]}")
assert gerr.max() <= 1.5e-7, gerr.max()
# The five-term table (quantized GELUs): within the kShortError the pass
# uses for its tolerance, unscaled and scaled by 1/sqrt(2).
for scale, grid in ((1.0, ys), (1 / math.sqrt(2), xs)):
    got5 = one_plus_erf(grid, scale, raw=short).astype(np.float64)
    ref5 = np.array([1 + math.erf(float(v) * scale) for v in grid])
    err5 = np.abs(got5 - ref5).max()
    print(f"five terms, scale {scale:.4f}: max |(1 + erf) - ref| = {err5:.3g}")
    assert err5 <= short_error, (err5, short_error)
ends = one_plus_erf(np.array([np.nan, np.inf, -np.inf, 4.0, -4.0, 0.0], np.float32))
print("ends:", ends)
assert np.isnan(ends[0]) and ends[1] == 2 and ends[2] == 0
assert ends[3] == 2 and ends[4] == 0 and ends[5] == 1


def gelu_product(x, c=0.5, scale=1 / math.sqrt(2)):
    """GeluProduct's c * x * (1 + erf(x * scale)): 2c max(x, 0) - |x| c e,
    c e = 2^(log2 c - g) (log2 c in the last FMA), 2c max(x, 0) past the
    bound."""
    x = np.asarray(x, dtype=np.float32)
    t, bound, ce = scaled_erfc(x, scale, math.log2(c))
    r = np.where(np.isnan(x), x, np.maximum(x, np.float32(0)))
    if 2 * c != 1:
        r = (r * np.float32(2 * c)).astype(np.float32)
    with np.errstate(invalid="ignore"):  # inf * 0 past the bound, not taken
        v = (-t.astype(np.float64) * ce + r).astype(np.float32)
    return np.where(t > bound, r, v)


# GELU (c = 0.5) against 0.5 x (1 + erf(x / sqrt(2))) in double: relative
# to max(|x|, 1) (the error scales with x where x is large), at most 2e-7,
# and against the product form ErfPlusOne leaves (x * (1 + erf) * 0.5,
# rounded three times) no worse.
for c in (0.5, 1.0, 0.25):
    gx = gelu_product(xs, c).astype(np.float64)
    gref = np.array([c * float(v) * (1 + math.erf(float(v) / math.sqrt(2))) for v in xs])
    gerr = np.abs(gx - gref) / np.maximum(np.abs(xs.astype(np.float64)), 1)
    prod = (xs * one_plus_erf(xs, 1 / math.sqrt(2)) * np.float32(c)).astype(np.float64)
    perr = np.abs(prod - gref) / np.maximum(np.abs(xs.astype(np.float64)), 1)
    print(f"GELU c = {c}: max |gelu - ref| / max(|x|, 1) = {gerr.max():.3g} at x = "
          f"{xs[gerr.argmax()]} (the product form: {perr.max():.3g})")
    assert gerr.max() <= 2e-7 and gerr.max() <= perr.max() * 1.01, (gerr.max(), perr.max())
gends = gelu_product(np.array([np.nan, np.inf, -np.inf, 6.0, -6.0, 0.0, -1e30], np.float32))
print("GELU ends:", gends)
assert np.isnan(gends[0]) and gends[1] == np.inf and gends[2] == 0
assert gends[3] == 6 and gends[4] == 0 and gends[5] == 0 and gends[6] == 0
print("ok")
