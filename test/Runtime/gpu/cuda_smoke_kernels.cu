// Real CUDA versions of the kernels test/Runtime/fake_cuda_model.c launches
// (the fake driver runs host versions of the same). Parameters are memrefs
// expanded as kiln_rt_launch_device passes them: allocated, aligned, offset,
// sizes[rank], strides[rank]. Reductions run in one thread, in the host's
// order, so results match a sequential reference exactly.
typedef long long i64;

#define MEMREF2(p) float *p##_alloc, float *p, i64 p##_off, i64 p##_n0, \
    i64 p##_n1, i64 p##_s0, i64 p##_s1
#define MEMREF1(p) float *p##_alloc, float *p, i64 p##_off, i64 p##_n0, \
    i64 p##_s0
#define AT2(p, i, j) p[p##_off + (i) * p##_s0 + (j) * p##_s1]

extern "C" __global__ void scale(MEMREF2(x), MEMREF2(t)) {
  i64 n = x_n0 * x_n1;
  for (i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x; k < n;
       k += (i64)gridDim.x * blockDim.x)
    AT2(t, k / x_n1, k % x_n1) = 2.0f * AT2(x, k / x_n1, k % x_n1);
}

extern "C" __global__ void add_weight_sum(MEMREF2(t), MEMREF1(w), MEMREF2(y),
                                          float *a_alloc, float *a,
                                          i64 a_off) {
  if (blockIdx.x != 0 || threadIdx.x != 0)
    return;
  float sum = 0;
  for (i64 i = 0; i < t_n0; ++i)
    for (i64 j = 0; j < t_n1; ++j) {
      float v = AT2(t, i, j) + w[w_off + j * w_s0];
      AT2(y, i, j) = v;
      sum += v;
    }
  a[a_off] = sum;
}

extern "C" __global__ void count_positive(MEMREF2(y), i64 *c_alloc, i64 *c,
                                          i64 c_off) {
  if (blockIdx.x != 0 || threadIdx.x != 0)
    return;
  i64 count = 0;
  for (i64 i = 0; i < y_n0; ++i)
    for (i64 j = 0; j < y_n1; ++j)
      count += AT2(y, i, j) > 0;
  c[c_off] = count;
}

extern "C" __global__ void gather_positive(MEMREF2(y), MEMREF1(p)) {
  if (blockIdx.x != 0 || threadIdx.x != 0)
    return;
  i64 k = 0;
  for (i64 i = 0; i < y_n0; ++i)
    for (i64 j = 0; j < y_n1; ++j)
      if (AT2(y, i, j) > 0 && k < p_n0)
        p[p_off + (k++) * p_s0] = AT2(y, i, j);
}
