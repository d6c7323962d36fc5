/*
 * gpu_btree_tile64_blocks.cu - the tiled kernel (cuda/gpu_btree_tile.cuh)
 * for int64_t keys built for 2 and 3 blocks an SM (GiGpuPolicy.tile_min_blocks),
 * in a unit of its own so that nvcc compiles it beside
 * gpu_btree_tile64.cu, which declares these instances extern.
 */
#include "gpu_btree_tile.cuh"

TILE_BLOCK_INSTANCES(, int64_t)
