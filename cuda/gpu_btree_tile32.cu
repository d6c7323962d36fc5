/*
 * gpu_btree_tile32.cu - the tiled and the stream search
 * (cuda/gpu_btree_tile.cuh, gpu_btree_stream.cuh) for int32_t keys, both
 * forms of the tree; its twin for the other key width compiles beside it.
 */
#include "gpu_btree_stream.cuh"

TILE_BLOCK_INSTANCES(extern, int32_t)	/* in gpu_btree_tile32_blocks.cu */

template GiStatus gi_gpu_btree_tile_search<int32_t, false>(const TreeDev<int32_t> &, cudaStream_t, int,
														   const int64_t *, const int64_t *, uint64_t,
														   uint64_t *, uint64_t *, int, int, int, bool, int, int, int *, bool,
														   GiError *);
template GiStatus gi_gpu_btree_tile_search<int32_t, true>(const TreeDev<int32_t> &, cudaStream_t, int,
														  const int64_t *, const int64_t *, uint64_t,
														  uint64_t *, uint64_t *, int, int, int, bool, int, int, int *, bool,
														  GiError *);
template GiStatus gi_gpu_btree_order_sample<int32_t, false>(const TreeDev<int32_t> &, cudaStream_t, int,
															const int64_t *, const int64_t *, uint64_t, uint64_t, int,
															int *, GiError *);
template GiStatus gi_gpu_btree_order_sample<int32_t, true>(const TreeDev<int32_t> &, cudaStream_t, int,
														   const int64_t *, const int64_t *, uint64_t, uint64_t, int,
														   int *, GiError *);
template GiStatus gi_gpu_btree_stream_search<int32_t, false>(const TreeDev<int32_t> &, cudaStream_t, int,
															 const int64_t *, const int64_t *, uint64_t,
															 uint64_t *, uint64_t *, int, int, int, int *, bool,
															 GiError *);
template GiStatus gi_gpu_btree_stream_search<int32_t, true>(const TreeDev<int32_t> &, cudaStream_t, int,
															 const int64_t *, const int64_t *, uint64_t,
															 uint64_t *, uint64_t *, int, int, int, int *, bool,
															 GiError *);
