/*===- fake_cuda_tensor_maps.c - The fake driver's tensor-map encoders ----===*
 *
 * cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col of the fake CUDA
 * driver (fake_cuda_driver.c): each checks its arguments as the real one
 * does (rank, 16-byte strides, boxes of at most 256, im2col channels and
 * pixels, a 64-byte-aligned output), records them in the stats and fills
 * the 128 bytes with 0xA5; FAKE_CUDA_MODE=tilemapfail makes both fail.
 *===----------------------------------------------------------------------===*/
#include "fake_cuda_internal.h"

#include <stdint.h>
#include <string.h>

/* What both encoders record of a map (gLock held). */
static void record_map(int type, unsigned rank, int swizzle,
                       const unsigned long long *dims,
                       const unsigned long long *strides) {
  gStats.last_map_type = type;
  gStats.last_map_rank = rank;
  gStats.last_map_swizzle = swizzle;
  for (unsigned d = 0; d < rank; ++d) {
    gStats.last_map_dims[d] = dims[d];
    if (d > 0)
      gStats.last_map_strides[d - 1] = strides[d - 1];
  }
}

EXPORT CUresult cuTensorMapEncodeTiled(
    void *map, int type, unsigned rank, void *base,
    const unsigned long long *dims, const unsigned long long *strides,
    const unsigned *box, const unsigned *element_strides, int interleave,
    int swizzle, int l2, int oob) {
  if (need_context())
    return INVALID_CONTEXT;
  if (mode("tilemapfail"))
    return INVALID_VALUE;
  if (!map || ((uintptr_t)map % 64) != 0 || rank < 1 || rank > 5 || !base ||
      type < 0 || type > 12 || swizzle < 0 || swizzle > 3 || interleave != 0)
    return INVALID_VALUE;
  for (unsigned d = 0; d < rank; ++d)
    if (!dims[d] || !box[d] || box[d] > 256 || element_strides[d] != 1 ||
        (d > 0 && strides[d - 1] % 16 != 0))
      return INVALID_VALUE;
  pthread_mutex_lock(&gLock);
  ++gStats.tile_maps;
  record_map(type, rank, swizzle, dims, strides);
  for (unsigned d = 0; d < rank; ++d)
    gStats.last_map_box[d] = box[d];
  pthread_mutex_unlock(&gLock);
  (void)l2;
  (void)oob;
  memset(map, 0xA5, 128);
  return OK;
}

EXPORT CUresult cuTensorMapEncodeIm2col(
    void *map, int type, unsigned rank, void *base,
    const unsigned long long *dims, const unsigned long long *strides,
    const int *lower, const int *upper, unsigned channels, unsigned pixels,
    const unsigned *element_strides, int interleave, int swizzle, int l2,
    int oob) {
  if (need_context())
    return INVALID_CONTEXT;
  if (mode("tilemapfail"))
    return INVALID_VALUE;
  if (!map || ((uintptr_t)map % 64) != 0 || rank < 3 || rank > 5 || !base ||
      type < 0 || type > 12 || swizzle < 0 || swizzle > 3 || interleave != 0 ||
      !channels || channels > 256 || !pixels || pixels > 1024)
    return INVALID_VALUE;
  for (unsigned d = 0; d < rank; ++d)
    if (!dims[d] || !element_strides[d] || element_strides[d] > 8 ||
        (d > 0 && strides[d - 1] % 16 != 0))
      return INVALID_VALUE;
  pthread_mutex_lock(&gLock);
  ++gStats.im2col_maps;
  record_map(type, rank, swizzle, dims, strides);
  gStats.last_im2col_channels = channels;
  gStats.last_im2col_pixels = pixels;
  for (unsigned d = 0; d < rank; ++d) {
    gStats.last_im2col_element_strides[d] = element_strides[d];
    if (d + 2 < rank) {
      gStats.last_im2col_lower[d] = lower[d];
      gStats.last_im2col_upper[d] = upper[d];
    }
  }
  pthread_mutex_unlock(&gLock);
  (void)l2;
  (void)oob;
  memset(map, 0xA5, 128);
  return OK;
}
