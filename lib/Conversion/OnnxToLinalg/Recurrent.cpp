//===- Recurrent.cpp - LSTM, GRU, RNN → scf.for over linalg ---------------===//
//
// A recurrent op becomes one `scf.for` over the time steps (one kernel) that
// carries the per-step outputs `Ys` [seq, dirs, batch, hidden] (in step
// order), the hidden state H [dirs, batch, hidden] and, for LSTM, the cell
// state C. Each step and direction gathers the batch's input rows (per batch
// row at its own time index, so reverse directions honour sequence_lens),
// computes X·Wᵀ + Wb and H·Rᵀ + Rb as contractions, and one elementwise
// generic the gate equations, the new states and the masked output. Batch
// rows whose sequence has ended keep their state and output 0. After the
// loop, a generic puts Y in time order and layout (only when needed), and
// layout 1 transposes Y_h/Y_c.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

enum class Kind { LSTM, GRU, RNN };

/// One activation function of the op's `activations` list with its alpha and
/// beta.
struct Activation {
  std::string name; // lower case
  double alpha = 0, beta = 0;
};

/// What every step needs to know about the op.
struct Recurrence {
  Kind kind;
  int64_t numGates; // 4, 3, 1
  int64_t dirs;     // 1 or 2
  bool reverseOnly; // direction == "reverse"
  int64_t hidden;   // static
  int64_t layout;   // 0 or 1
  std::optional<double> clip;
  bool inputForget = false;       // LSTM
  bool linearBeforeReset = false; // GRU
  // Per direction: the activations (LSTM f, g, h; GRU f, g; RNN f).
  SmallVector<SmallVector<Activation>> acts;
};

} // namespace

static Value applyActivation(OpBuilder &b, Location loc, const Activation &a,
                             Value x) {
  Type t = x.getType();
  auto alpha = [&] { return cst(b, loc, t, a.alpha); };
  auto beta = [&] { return cst(b, loc, t, a.beta); };
  auto one = [&] { return cst(b, loc, t, 1.0); };
  auto zero = [&] { return cst(b, loc, t, 0.0); };
  const std::string &n = a.name;
  if (n == "sigmoid") {
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, one(),
                                 arith::AddFOp::create(b, loc, one(), e));
  }
  if (n == "tanh")
    return math::TanhOp::create(b, loc, x);
  if (n == "relu")
    return arith::MaximumFOp::create(b, loc, x, zero());
  if (n == "affine")
    return arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, alpha(), x), beta());
  if (n == "leakyrelu") {
    Value neg =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero());
    return arith::SelectOp::create(
        b, loc, neg, arith::MulFOp::create(b, loc, alpha(), x), x);
  }
  if (n == "thresholdedrelu") {
    Value ge =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x, alpha());
    return arith::SelectOp::create(b, loc, ge, x, zero());
  }
  if (n == "scaledtanh")
    return arith::MulFOp::create(
        b, loc, alpha(),
        math::TanhOp::create(b, loc, arith::MulFOp::create(b, loc, beta(), x)));
  if (n == "hardsigmoid") {
    Value v = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, alpha(), x), beta());
    v = arith::MinimumFOp::create(b, loc, v, one());
    return arith::MaximumFOp::create(b, loc, v, zero());
  }
  if (n == "elu") {
    Value neg =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero());
    Value em1 =
        arith::SubFOp::create(b, loc, math::ExpOp::create(b, loc, x), one());
    return arith::SelectOp::create(
        b, loc, neg, arith::MulFOp::create(b, loc, alpha(), em1), x);
  }
  if (n == "softsign")
    return arith::DivFOp::create(
        b, loc, x,
        arith::AddFOp::create(b, loc, one(), math::AbsFOp::create(b, loc, x)));
  assert(n == "softplus" && "activation checked by parseActivations");
  // log(1 + e^x) = max(x, 0) + log1p(e^-|x|), without overflow.
  Value m = arith::MaximumFOp::create(b, loc, x, zero());
  Value e = math::ExpOp::create(
      b, loc, arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x)));
  return arith::AddFOp::create(b, loc, m, math::Log1pOp::create(b, loc, e));
}

/// Reads `activations`, `activation_alpha` and `activation_beta` (alphas and
/// betas are consumed in order by the functions that take them, as
/// onnxruntime does), with the ONNX defaults.
template <typename OpTy>
static LogicalResult parseActivations(OpTy op, Recurrence &rec) {
  int64_t per = rec.kind == Kind::LSTM ? 3 : rec.kind == Kind::GRU ? 2 : 1;
  SmallVector<std::string> names;
  if (ArrayAttr a = op.getActivationsAttr())
    for (Attribute e : a)
      names.push_back(StringRef(cast<StringAttr>(e).getValue()).lower());
  if (names.empty()) {
    for (int64_t d = 0; d < rec.dirs; ++d) {
      if (rec.kind == Kind::LSTM)
        names.append({"sigmoid", "tanh", "tanh"});
      else if (rec.kind == Kind::GRU)
        names.append({"sigmoid", "tanh"});
      else
        names.push_back("tanh");
    }
  } else if ((int64_t)names.size() == per && rec.dirs == 2) {
    names.append(SmallVector<std::string>(names));
  } else if ((int64_t)names.size() == 2 * per && rec.dirs == 1) {
    names.resize(per); // e.g. RNN's schema default {Tanh, Tanh}
  }
  if ((int64_t)names.size() != per * rec.dirs)
    return nodeError(op) << "expects " << per * rec.dirs << " activations, got "
                         << names.size(),
           failure();
  SmallVector<double> alphas, betas;
  if (ArrayAttr a = op.getActivationAlphaAttr())
    for (Attribute e : a)
      alphas.push_back(cast<FloatAttr>(e).getValueAsDouble());
  if (ArrayAttr a = op.getActivationBetaAttr())
    for (Attribute e : a)
      betas.push_back(cast<FloatAttr>(e).getValueAsDouble());
  size_t nextAlpha = 0, nextBeta = 0;
  rec.acts.assign(rec.dirs, {});
  for (auto [i, name] : llvm::enumerate(names)) {
    // {uses alpha, default alpha, uses beta, default beta}
    struct Params {
      bool a;
      double da;
      bool b;
      double db;
    };
    std::optional<Params> p =
        llvm::StringSwitch<std::optional<Params>>(name)
            .Cases({"sigmoid", "tanh", "relu", "softsign", "softplus"},
                   Params{false, 0, false, 0})
            .Case("affine", Params{true, 1.0, true, 0.0})
            .Case("leakyrelu", Params{true, 0.01, false, 0})
            .Case("thresholdedrelu", Params{true, 1.0, false, 0})
            .Case("scaledtanh", Params{true, 1.0, true, 1.0})
            .Case("hardsigmoid", Params{true, 0.2, true, 0.5})
            .Case("elu", Params{true, 1.0, false, 0})
            .Default(std::nullopt);
    if (!p)
      return nodeError(op) << "unknown activation '" << name << "'", failure();
    Activation act{name, p->da, p->db};
    if (p->a && nextAlpha < alphas.size())
      act.alpha = alphas[nextAlpha++];
    if (p->b && nextBeta < betas.size())
      act.beta = betas[nextBeta++];
    rec.acts[i / per].push_back(act);
  }
  return success();
}

static SmallVector<utils::IteratorType> parallel(unsigned n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

/// [batch, n] initialized with bias[d, off + j] (or 0 without a bias).
static Value biasInit(OpBuilder &b, Location loc, Value bias, int64_t d,
                      int64_t off, int64_t n, Value batch, Type et) {
  auto type = RankedTensorType::get({ShapedType::kDynamic, n}, et);
  Value init = emptyTensor(b, loc, type, {batch});
  if (!bias)
    return linalg::FillOp::create(b, loc, cst(b, loc, et, 0.0), init)
        .getResult(0);
  MLIRContext *ctx = b.getContext();
  AffineExpr j = getAffineDimExpr(1, ctx);
  SmallVector<AffineMap> maps{AffineMap::get(2, 0, {j}, ctx),
                              AffineMap::getMultiDimIdentityMap(2, ctx)};
  // bias[d, off : off + n] as its own tensor (an offset map would let linalg
  // size the loop from the whole row).
  Value row = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({n}, et), bias,
      ArrayRef<OpFoldResult>{b.getIndexAttr(d), b.getIndexAttr(off)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(n)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{row}, ValueRange{init}, maps,
             parallel(2),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

/// acc[m, n] += Σ_k a[m, k] · w[d, off + n, k], where `a` is [batch, K] or,
/// with `aDir`, [dirs, batch, K] read at aDir.
static Value contractNT(OpBuilder &b, Location loc, Value a,
                        std::optional<int64_t> aDir, Value w, int64_t d,
                        int64_t off, Value acc) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  AffineMap aMap =
      aDir
          ? AffineMap::get(3, 0, {getAffineConstantExpr(*aDir, ctx), m, k}, ctx)
          : AffineMap::get(3, 0, {m, k}, ctx);
  AffineMap wMap =
      AffineMap::get(3, 0, {getAffineConstantExpr(d, ctx), n + off, k}, ctx);
  AffineMap outMap = AffineMap::get(3, 0, {m, n}, ctx);
  SmallVector<utils::IteratorType> iters{utils::IteratorType::parallel,
                                         utils::IteratorType::parallel,
                                         utils::IteratorType::reduction};
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{a, w},
             ValueRange{acc}, ArrayRef<AffineMap>{aMap, wMap, outMap}, iters,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value p = arith::MulFOp::create(nb, nloc, args[0], args[1]);
               Value sum = arith::AddFOp::create(nb, nloc, args[2], p);
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

/// The sequence length of batch row `bi` clamped to [0, seq] (seq without
/// sequence_lens).
static Value seqLenOf(OpBuilder &b, Location loc, Value seqLens, Value bi,
                      Value seq) {
  if (!seqLens)
    return seq;
  Value l = tensor::ExtractOp::create(b, loc, seqLens, ValueRange{bi});
  l = arith::IndexCastOp::create(b, loc, b.getIndexType(), l);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  l = arith::MaxSIOp::create(b, loc, l, zero);
  return arith::MinSIOp::create(b, loc, l, seq);
}

/// The time index that step `s` of a direction reads/writes for a batch row
/// of length `len`: s forward, len - 1 - s reversed; clamped into [0, seq-1].
static Value timeIndex(OpBuilder &b, Location loc, Value s, Value len,
                       bool reversed, Value seq) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value t = s;
  if (reversed)
    t = arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, len, one),
                              s);
  t = arith::MaxSIOp::create(b, loc, t, zero);
  Value last = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, seq, one), zero);
  return arith::MinSIOp::create(b, loc, t, last);
}

static Value clipValue(OpBuilder &b, Location loc, const Recurrence &rec,
                       Value x) {
  if (!rec.clip)
    return x;
  Type t = x.getType();
  x = arith::MinimumFOp::create(b, loc, x, cst(b, loc, t, *rec.clip));
  return arith::MaximumFOp::create(b, loc, x, cst(b, loc, t, -*rec.clip));
}

template <typename OpTy>
static LogicalResult lowerRecurrent(OpTy op, OpBuilder &b,
                                    SmallVectorImpl<Value> &results,
                                    Kind kind) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  Recurrence rec;
  rec.kind = kind;
  rec.numGates = kind == Kind::LSTM ? 4 : kind == Kind::GRU ? 3 : 1;
  std::string dir = op.getDirection().str();
  rec.dirs = dir == "bidirectional" ? 2 : 1;
  rec.reverseOnly = dir == "reverse";
  rec.layout = asInt(op.getLayout());
  if (std::optional<double> clip = asDouble(op.getClip()))
    rec.clip = *clip;
  if constexpr (std::is_same_v<OpTy, onnxops::LSTMOp>)
    rec.inputForget = asInt(op.getInputForget()) != 0;
  if constexpr (std::is_same_v<OpTy, onnxops::GRUOp>)
    rec.linearBeforeReset = asInt(op.getLinearBeforeReset()) != 0;

  auto xType = rankedOperand(op, 0);
  auto wType = rankedOperand(op, 1);
  auto rType = rankedOperand(op, 2);
  if (failed(xType) || failed(wType) || failed(rType))
    return failure();
  Type et = xType->getElementType();
  if (!isa<FloatType>(et))
    return nodeError(op) << "expects a floating-point X, got " << *xType,
           failure();
  rec.hidden = rType->getDimSize(2);
  if (ShapedType::isDynamic(rec.hidden))
    rec.hidden = asInt(op.getHiddenSize()).value_or(ShapedType::kDynamic);
  if (ShapedType::isDynamic(rec.hidden))
    return nodeError(op) << "the hidden size must be known at compile time",
           failure();
  if (failed(parseActivations(op, rec)))
    return failure();
  int64_t hid = rec.hidden, gates = rec.numGates;

  auto optional = [&](unsigned i) -> Value {
    Value v = op->getOperand(i);
    return isa<NoneType>(v.getType()) ? Value() : v;
  };
  Value x = op->getOperand(0), w = op->getOperand(1), r = op->getOperand(2);
  Value bias = optional(3), seqLens = optional(4), initH = optional(5);
  Value initC = kind == Kind::LSTM ? optional(6) : Value();
  Value peep = kind == Kind::LSTM ? optional(7) : Value();

  int64_t tDim = rec.layout == 0 ? 0 : 1, bDim = rec.layout == 0 ? 1 : 0;
  Value seq = dimValue(b, loc, x, tDim);
  Value batch = dimValue(b, loc, x, bDim);
  Value inSize = dimValue(b, loc, x, 2);
  int64_t seqS = xType->getDimSize(tDim), batchS = xType->getDimSize(bDim);
  SmallVector<Value> dynTB, dynB;
  if (ShapedType::isDynamic(seqS))
    dynTB.push_back(seq);
  if (ShapedType::isDynamic(batchS)) {
    dynTB.push_back(batch);
    dynB.push_back(batch);
  }

  // Initial states [dirs, batch, hidden] (layout 1 gives [batch, dirs, hidden]).
  auto stateType = RankedTensorType::get({rec.dirs, batchS, hid}, et);
  auto initState = [&](Value v) -> Value {
    if (!v)
      return filledTensor(b, loc, stateType, dynB, FloatAttr::get(et, 0.0));
    if (rec.layout == 0)
      return v;
    Value init = emptyTensor(b, loc, stateType, dynB);
    SmallVector<int64_t> perm{1, 0, 2};
    return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
  };
  Value h0 = initState(initH);
  Value c0 = kind == Kind::LSTM ? initState(initC) : Value();
  auto ysType = RankedTensorType::get({seqS, rec.dirs, batchS, hid}, et);
  Value ys0 = emptyTensor(b, loc, ysType, dynTB);

  SmallVector<Value> iterInit{ys0, h0};
  if (c0)
    iterInit.push_back(c0);
  Value zeroIdx = arith::ConstantIndexOp::create(b, loc, 0);
  Value oneIdx = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, zeroIdx, seq, oneIdx, iterInit,
      [&](OpBuilder &lb, Location l, Value s, ValueRange iters) {
        Value ys = iters[0], hs = iters[1];
        Value cs = c0 ? iters[2] : Value();
        for (int64_t d = 0; d < rec.dirs; ++d) {
          bool reversed = rec.reverseOnly || d == 1;
          // X rows of this step: xs[bi, k] = X[t(bi), bi, k].
          auto xsType =
              RankedTensorType::get({batchS, xType->getDimSize(2)}, et);
          SmallVector<Value> xsDyn = dynB;
          if (xsType.isDynamicDim(1))
            xsDyn.push_back(inSize);
          Value xsInit = emptyTensor(lb, l, xsType, xsDyn);
          Value xs =
              linalg::GenericOp::create(
                  lb, l, TypeRange{xsType}, ValueRange{}, ValueRange{xsInit},
                  ArrayRef<AffineMap>{
                      AffineMap::getMultiDimIdentityMap(2, ctx)},
                  parallel(2),
                  [&](OpBuilder &nb, Location nl, ValueRange) {
                    Value bi = linalg::IndexOp::create(nb, nl, 0);
                    Value k = linalg::IndexOp::create(nb, nl, 1);
                    Value len = seqLenOf(nb, nl, seqLens, bi, seq);
                    Value t = timeIndex(nb, nl, s, len, reversed, seq);
                    SmallVector<Value> ix = rec.layout == 0
                                                ? SmallVector<Value>{t, bi, k}
                                                : SmallVector<Value>{bi, t, k};
                    Value v = tensor::ExtractOp::create(nb, nl, x, ix);
                    linalg::YieldOp::create(nb, nl, v);
                  })
                  .getResult(0);
          // xw = X·Wᵀ + Wb, hr = H·Rᵀ + Rb: [batch, gates*hidden].
          Value xw =
              contractNT(lb, l, xs, std::nullopt, w, d, 0,
                         biasInit(lb, l, bias, d, 0, gates * hid, batch, et));
          Value hr = contractNT(
              lb, l, hs, d, r, d, 0,
              biasInit(lb, l, bias, d, gates * hid, gates * hid, batch, et));
          // GRU with linear_before_reset = 0: the candidate's recurrent term
          // is (r ⊙ H)·Rhᵀ + Rbh, which needs r first.
          Value rhr;
          auto bhType = RankedTensorType::get({batchS, hid}, et);
          AffineExpr bi = getAffineDimExpr(0, ctx),
                     j = getAffineDimExpr(1, ctx);
          AffineExpr dC = getAffineConstantExpr(d, ctx);
          // Gate g of a [batch, gates*hidden] tensor as its own [batch,
          // hidden] slice (offset indexing maps would let linalg size the
          // loops from the whole tensor).
          OpFoldResult bSz = ShapedType::isDynamic(batchS)
                                 ? OpFoldResult(batch)
                                 : lb.getIndexAttr(batchS);
          auto gate = [&](Value v, int64_t g) -> Value {
            return tensor::ExtractSliceOp::create(
                lb, l, RankedTensorType::get({batchS, hid}, et), v,
                ArrayRef<OpFoldResult>{lb.getIndexAttr(0),
                                       lb.getIndexAttr(g * hid)},
                ArrayRef<OpFoldResult>{bSz, lb.getIndexAttr(hid)},
                ArrayRef<OpFoldResult>{lb.getIndexAttr(1), lb.getIndexAttr(1)});
          };
          AffineMap stateMap = AffineMap::get(2, 0, {dC, bi, j}, ctx);
          AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, ctx);
          const SmallVector<Activation> &acts = rec.acts[d];
          if (kind == Kind::GRU && !rec.linearBeforeReset) {
            Value rh =
                linalg::GenericOp::create(
                    lb, l, TypeRange{bhType},
                    ValueRange{gate(xw, 1), gate(hr, 1), hs},
                    ValueRange{emptyTensor(lb, l, bhType, dynB)},
                    ArrayRef<AffineMap>{id2, id2, stateMap, id2}, parallel(2),
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      Value pre =
                          clipValue(nb, nl, rec,
                                    arith::AddFOp::create(nb, nl, a[0], a[1]));
                      Value rg = applyActivation(nb, nl, acts[0], pre);
                      Value v = arith::MulFOp::create(nb, nl, rg, a[2]);
                      linalg::YieldOp::create(nb, nl, v);
                    })
                    .getResult(0);
            rhr = contractNT(lb, l, rh, std::nullopt, r, d, 2 * hid,
                             biasInit(lb, l, bias, d, gates * hid + 2 * hid,
                                      hid, batch, et));
          }

          // The gate equations: new H (and C) and the step's output.
          SmallVector<Value> ins;
          SmallVector<AffineMap> maps;
          auto add = [&](Value v, AffineMap m) -> unsigned {
            ins.push_back(v);
            maps.push_back(m);
            return ins.size() - 1;
          };
          SmallVector<unsigned> xg, hg, pg;
          for (int64_t g = 0; g < gates; ++g) {
            xg.push_back(add(gate(xw, g), id2));
            hg.push_back(add(gate(hr, g), id2));
          }
          unsigned hPrev = add(hs, stateMap);
          unsigned cPrev = cs ? add(cs, stateMap) : 0;
          unsigned rhrIdx = rhr ? add(rhr, id2) : 0;
          if (peep)
            for (int64_t g = 0; g < 3; ++g)
              pg.push_back(
                  add(tensor::ExtractSliceOp::create(
                          lb, l, RankedTensorType::get({hid}, et), peep,
                          ArrayRef<OpFoldResult>{lb.getIndexAttr(d),
                                                 lb.getIndexAttr(g * hid)},
                          ArrayRef<OpFoldResult>{lb.getIndexAttr(1),
                                                 lb.getIndexAttr(hid)},
                          ArrayRef<OpFoldResult>{lb.getIndexAttr(1),
                                                 lb.getIndexAttr(1)}),
                      AffineMap::get(2, 0, {j}, ctx)));
          unsigned numOuts = cs ? 3 : 2;
          SmallVector<Type> outTypes(numOuts, bhType);
          SmallVector<Value> outs;
          for (unsigned o = 0; o < numOuts; ++o) {
            outs.push_back(emptyTensor(lb, l, bhType, dynB));
            maps.push_back(id2);
          }
          auto step = linalg::GenericOp::create(
              lb, l, outTypes, ins, outs, maps, parallel(2),
              [&](OpBuilder &nb, Location nl, ValueRange a) {
                auto pre = [&](int64_t g) -> Value {
                  return arith::AddFOp::create(nb, nl, a[xg[g]], a[hg[g]]);
                };
                auto act = [&](unsigned which, Value v) {
                  return applyActivation(nb, nl, acts[which],
                                         clipValue(nb, nl, rec, v));
                };
                auto mul = [&](Value p, Value q) -> Value {
                  return arith::MulFOp::create(nb, nl, p, q);
                };
                auto addf = [&](Value p, Value q) -> Value {
                  return arith::AddFOp::create(nb, nl, p, q);
                };
                Value one = cst(nb, nl, et, 1.0);
                Value hp = a[hPrev];
                Value hNew, cNew;
                if (kind == Kind::RNN) {
                  hNew = act(0, pre(0));
                } else if (kind == Kind::GRU) {
                  Value z = act(0, pre(0));
                  Value cand;
                  if (rec.linearBeforeReset) {
                    Value rg = act(0, pre(1));
                    cand = addf(a[xg[2]], mul(rg, a[hg[2]]));
                  } else {
                    cand = addf(a[xg[2]], a[rhrIdx]);
                  }
                  Value hc = act(1, cand);
                  hNew = addf(mul(arith::SubFOp::create(nb, nl, one, z), hc),
                              mul(z, hp));
                } else {
                  // Gate order i, o, f, c; peepholes i, o, f.
                  Value cp = a[cPrev];
                  Value pi = pre(0), po = pre(1), pf = pre(2);
                  if (peep) {
                    pi = addf(pi, mul(a[pg[0]], cp));
                    pf = addf(pf, mul(a[pg[2]], cp));
                  }
                  Value ig = act(0, pi);
                  Value fg =
                      rec.inputForget
                          ? arith::SubFOp::create(nb, nl, one, ig).getResult()
                          : act(0, pf);
                  Value cg = act(1, pre(3));
                  cNew = addf(mul(fg, cp), mul(ig, cg));
                  if (peep)
                    po = addf(po, mul(a[pg[1]], cNew));
                  Value og = act(0, po);
                  hNew = mul(og, applyActivation(nb, nl, acts[2], cNew));
                }
                // Rows whose sequence has ended keep their state, output 0.
                Value bIdx = linalg::IndexOp::create(nb, nl, 0);
                Value len = seqLenOf(nb, nl, seqLens, bIdx, seq);
                Value valid = arith::CmpIOp::create(
                    nb, nl, arith::CmpIPredicate::slt, s, len);
                Value zero = cst(nb, nl, et, 0.0);
                SmallVector<Value> yields{
                    arith::SelectOp::create(nb, nl, valid, hNew, hp),
                    arith::SelectOp::create(nb, nl, valid, hNew, zero)};
                if (cs)
                  yields.push_back(
                      arith::SelectOp::create(nb, nl, valid, cNew, a[cPrev]));
                linalg::YieldOp::create(nb, nl, yields);
              });
          // Write this direction's new state and output back.
          OpFoldResult o0 = lb.getIndexAttr(0), o1 = lb.getIndexAttr(1);
          OpFoldResult bSize = ShapedType::isDynamic(batchS)
                                   ? OpFoldResult(batch)
                                   : lb.getIndexAttr(batchS);
          OpFoldResult hSize = lb.getIndexAttr(hid);
          OpFoldResult dOff = lb.getIndexAttr(d);
          auto insertState = [&](Value v, Value into) -> Value {
            return tensor::InsertSliceOp::create(
                lb, l, v, into, ArrayRef<OpFoldResult>{dOff, o0, o0},
                ArrayRef<OpFoldResult>{o1, bSize, hSize},
                ArrayRef<OpFoldResult>{o1, o1, o1});
          };
          hs = insertState(step.getResult(0), hs);
          if (cs)
            cs = insertState(step.getResult(2), cs);
          ys = tensor::InsertSliceOp::create(
              lb, l, step.getResult(1), ys,
              ArrayRef<OpFoldResult>{OpFoldResult(s), dOff, o0, o0},
              ArrayRef<OpFoldResult>{o1, o1, bSize, hSize},
              ArrayRef<OpFoldResult>{o1, o1, o1, o1});
        }
        SmallVector<Value> yields{ys, hs};
        if (cs)
          yields.push_back(cs);
        scf::YieldOp::create(lb, l, yields);
      });
  Value ys = loop.getResult(0), hN = loop.getResult(1);
  Value cN = c0 ? loop.getResult(2) : Value();

  // Y in time order and layout: Y[t, d, b] = Ys[t_d(b), d, b] for t < len(b),
  // else 0 (Ys is already in time order for forward directions).
  if (!isa<NoneType>(op->getResult(0).getType())) {
    auto yType = rankedResult(op, 0);
    if (failed(yType))
      return failure();
    bool anyReversed = rec.reverseOnly || rec.dirs == 2;
    Value y = ys;
    if (anyReversed || rec.layout == 1) {
      SmallVector<Value> yDyn;
      for (int64_t i : {0, 1, 2, 3})
        if (yType->isDynamicDim(i))
          yDyn.push_back((rec.layout == 0) == (i == 0) ? seq : batch);
      Value init = emptyTensor(b, loc, *yType, yDyn);
      // Output dims → (t, d, b, h).
      int64_t tI = rec.layout == 0 ? 0 : 1, dI = rec.layout == 0 ? 1 : 2,
              bI = rec.layout == 0 ? 2 : 0;
      y = linalg::GenericOp::create(
              b, loc, TypeRange{*yType}, ValueRange{}, ValueRange{init},
              ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(4, ctx)},
              parallel(4),
              [&](OpBuilder &nb, Location nl, ValueRange) {
                Value t = linalg::IndexOp::create(nb, nl, tI);
                Value dd = linalg::IndexOp::create(nb, nl, dI);
                Value bb = linalg::IndexOp::create(nb, nl, bI);
                Value hh = linalg::IndexOp::create(nb, nl, 3);
                Value len = seqLenOf(nb, nl, seqLens, bb, seq);
                Value fwd = timeIndex(nb, nl, t, len, false, seq);
                Value rev = timeIndex(nb, nl, t, len, true, seq);
                Value src = fwd;
                if (rec.reverseOnly)
                  src = rev;
                else if (rec.dirs == 2)
                  src = arith::SelectOp::create(
                      nb, nl,
                      arith::CmpIOp::create(
                          nb, nl, arith::CmpIPredicate::eq, dd,
                          arith::ConstantIndexOp::create(nb, nl, 1)),
                      rev, fwd);
                Value v = tensor::ExtractOp::create(
                    nb, nl, ys, ValueRange{src, dd, bb, hh});
                Value valid = arith::CmpIOp::create(
                    nb, nl, arith::CmpIPredicate::slt, t, len);
                Value out = arith::SelectOp::create(nb, nl, valid, v,
                                                    cst(nb, nl, et, 0.0));
                linalg::YieldOp::create(nb, nl, out);
              })
              .getResult(0);
    }
    results.push_back(y);
  } else {
    results.push_back(op->getResult(0));
  }
  auto finalState = [&](Value v, unsigned i) -> Value {
    if (isa<NoneType>(op->getResult(i).getType()))
      return op->getResult(i);
    if (rec.layout == 0)
      return v;
    auto type = RankedTensorType::get({batchS, rec.dirs, hid}, et);
    Value init = emptyTensor(b, loc, type, dynB);
    SmallVector<int64_t> perm{1, 0, 2};
    return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
  };
  results.push_back(finalState(hN, 1));
  if (kind == Kind::LSTM)
    results.push_back(finalState(cN, 2));
  return success();
}

void lowering::populateRecurrentLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Recurrent> t(patterns);
  t.add<onnxops::LSTMOp>(
      [](onnxops::LSTMOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerRecurrent(op, b, r, Kind::LSTM);
      });
  t.add<onnxops::GRUOp>(
      [](onnxops::GRUOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerRecurrent(op, b, r, Kind::GRU);
      });
  t.add<onnxops::RNNOp>(
      [](onnxops::RNNOp op, OpBuilder &b, SmallVectorImpl<Value> &r) {
        return lowerRecurrent(op, b, r, Kind::RNN);
      });
}
