/*
 * gpu_btree_tile64.cu - the tiled and the stream search
 * (cuda/gpu_btree_tile.cuh, gpu_btree_stream.cuh) for int64_t keys, both
 * forms of the tree; its twin for the other key width compiles beside it.
 */
#include "gpu_btree_stream.cuh"

TILE_BLOCK_INSTANCES(extern, int64_t)	/* in gpu_btree_tile64_blocks.cu */

template GiStatus gi_gpu_btree_tile_search<int64_t, false>(const TreeDev<int64_t> &, cudaStream_t, int,
														   const int64_t *, const int64_t *, uint64_t,
														   uint64_t *, uint64_t *, int, int, int, bool, int, int, int *, bool,
														   GiError *);
template GiStatus gi_gpu_btree_tile_search<int64_t, true>(const TreeDev<int64_t> &, cudaStream_t, int,
														  const int64_t *, const int64_t *, uint64_t,
														  uint64_t *, uint64_t *, int, int, int, bool, int, int, int *, bool,
														  GiError *);
template GiStatus gi_gpu_btree_order_sample<int64_t, false>(const TreeDev<int64_t> &, cudaStream_t, int,
															const int64_t *, const int64_t *, uint64_t, uint64_t, int,
															int *, GiError *);
template GiStatus gi_gpu_btree_order_sample<int64_t, true>(const TreeDev<int64_t> &, cudaStream_t, int,
														   const int64_t *, const int64_t *, uint64_t, uint64_t, int,
														   int *, GiError *);
template GiStatus gi_gpu_btree_stream_search<int64_t, false>(const TreeDev<int64_t> &, cudaStream_t, int,
															 const int64_t *, const int64_t *, uint64_t,
															 uint64_t *, uint64_t *, int, int, int, int *, bool,
															 GiError *);
template GiStatus gi_gpu_btree_stream_search<int64_t, true>(const TreeDev<int64_t> &, cudaStream_t, int,
															 const int64_t *, const int64_t *, uint64_t,
															 uint64_t *, uint64_t *, int, int, int, int *, bool,
															 GiError *);
