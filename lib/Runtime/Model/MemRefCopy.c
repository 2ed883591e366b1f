/*===- MemRefCopy.c - Strided copies for generated code -------------------===*
 *
 * MLIR lowers a `memref.copy` between buffers that are not both contiguous
 * (e.g. into a subview) to a call of `memrefCopy`. Kiln's model runtime
 * provides it, so a model.so needs nothing beyond libc.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
#include <string.h>

typedef struct {
  int64_t rank;
  void *descriptor;
} kiln_unranked_memref;

/* Descriptor: { void *allocated; void *aligned; int64_t offset;
 *               int64_t sizes[rank]; int64_t strides[rank]; } */
typedef struct {
  void *allocated;
  char *aligned;
  int64_t offset;
  int64_t shape[];
} kiln_memref_desc;

static void copyDim(int64_t elemSize, int64_t rank, int64_t dim,
                    const int64_t *sizes, const int64_t *srcStrides,
                    const int64_t *dstStrides, const char *src, char *dst) {
  int64_t n = sizes[dim];
  if (dim == rank - 1) {
    if (srcStrides[dim] == 1 && dstStrides[dim] == 1) {
      memcpy(dst, src, (size_t)(n * elemSize));
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      memcpy(dst + i * dstStrides[dim] * elemSize,
             src + i * srcStrides[dim] * elemSize, (size_t)elemSize);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    copyDim(elemSize, rank, dim + 1, sizes, srcStrides, dstStrides,
            src + i * srcStrides[dim] * elemSize,
            dst + i * dstStrides[dim] * elemSize);
}

void memrefCopy(int64_t elemSize, kiln_unranked_memref *srcArg,
                kiln_unranked_memref *dstArg) {
  int64_t rank = srcArg->rank;
  kiln_memref_desc *src = (kiln_memref_desc *)srcArg->descriptor;
  kiln_memref_desc *dst = (kiln_memref_desc *)dstArg->descriptor;
  const char *s = src->aligned + src->offset * elemSize;
  char *d = dst->aligned + dst->offset * elemSize;
  if (rank == 0) {
    memcpy(d, s, (size_t)elemSize);
    return;
  }
  const int64_t *sizes = src->shape;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  copyDim(elemSize, rank, 0, sizes, src->shape + rank, dst->shape + rank, s, d);
}
