/*
 * gpu_btree_stream.cuh - the stream search of the GPU B+ tree: the kernel
 * the engine runs where the order sample finds a batch in order or
 * clustered (GATE_TILES).  A warp takes a stretch of consecutive tiles of
 * TILE_PROBES probes, as the tiled search does, and answers a narrow tile
 * from its leaves staged in shared memory (the helpers of
 * gpu_btree_tile.cuh: tile_span, tile_slide / tile_bounds, stage_leaves,
 * window_answer).  Everything else (a wide tile, a probe whose answer
 * lies beyond the window) takes the thread search, one lane a probe from
 * the top table's node, as the per-probe kernel does; equal probes among
 * those descend once.
 *
 * Why a kernel of its own: the tiled kernel holds the run search, the
 * group descents and the row carry in shared memory besides, and at its
 * register cap of 64 it spilled on this path (ncu, H100, 2026-11-26:
 * 431 instructions a row of 32 sorted probes, 5.0 million local-memory
 * requests a chunk).  This one keeps only what a sorted or clustered
 * batch needs.  GiGpuPolicy.stream picks it (the default) or the tiled
 * kernel.
 */
#ifndef GPUIDX_GPU_BTREE_STREAM_CUH
#define GPUIDX_GPU_BTREE_STREAM_CUH

#include "gpu_btree_tile.cuh"

#define STREAM_WARPS		8		/* warps a block */
#define STREAM_MIN_BLOCKS	4		/* blocks an SM: 32 warps, 64 registers */

/*
 * The probes of a row that its window did not answer (need: a bit a lane;
 * mine: this lane's) take the thread search, equal probes once: the lowest
 * pending lane of each set of equal probes (and range ends) descends, and
 * the others read its answer by a shuffle; one equal to the warp's carried
 * probe (*cp, *cph: an earlier row's, answered already) takes the carried
 * answer.  The carry then moves to the row's last pending probe.  A sorted
 * batch inside one key's run of duplicates longer than a window (int32
 * lognormal keys: runs of thousands) thus costs one descent, not one a probe.
 */
template <class K, bool DYN, bool WALK>
__device__ __forceinline__ void
stream_descend(const TreeDev<K> &T, int op, int64_t p, int64_t ph, uint32_t need, bool mine,
			   uint64_t &f, uint64_t &l, int64_t *cp, int64_t *cph, uint64_t *cf, uint64_t *cl,
			   bool *cvalid)
{
	const uint32_t lane = threadIdx.x & 31;
	uint32_t	same = __match_any_sync(0xffffffffu, (unsigned long long) p);

	if (op == GI_OP_RANGE)
		same &= __match_any_sync(0xffffffffu, (unsigned long long) ph);
	same &= need;

	uint32_t	leader = mine ? (uint32_t) __ffs(same) - 1 : lane;
	bool		carried = mine && *cvalid && p == *cp && ph == *cph;

	if (carried)
	{
		f = *cf;
		l = *cl;
	}
	else if (mine && leader == lane)
		answer<K, 1, DYN, WALK>(T, op, p, ph, make_group<1>((int) lane), f, l, top_start<K>(T, op, p));

	uint64_t	lf = __shfl_sync(0xffffffffu, f, leader),
				ll = __shfl_sync(0xffffffffu, l, leader);

	if (mine && leader != lane)
	{
		f = lf;
		l = ll;
	}

	int			tail = 31 - __clz(need);

	*cp = __shfl_sync(0xffffffffu, p, tail);
	*cph = __shfl_sync(0xffffffffu, ph, tail);
	*cf = __shfl_sync(0xffffffffu, f, tail);
	*cl = __shfl_sync(0xffffffffu, l, tail);
	*cvalid = true;
}

/*
 * The stream kernel: warp w takes the w-th of nwarps equal stretches of
 * consecutive tiles.  A narrow tile finds its leaves from the last leaf
 * the warp staged (tile_slide: the next tile of a sorted batch) or by a
 * descent (tile_bounds), stages up to max_leaves of them when they number
 * under 4 windows, and answers its probes row by row from that window
 * (window_answer: exact or declined); the rest take stream_descend.
 * gate: run only when *gate is GATE_TILES (NULL: always).  WALK: the
 * thread search's leaf walk (the key width's default, LEAF_WALK_DEFAULT).
 */
template <class K, bool DYN, bool WALK>
__global__ void __launch_bounds__(STREAM_WARPS * 32, STREAM_MIN_BLOCKS)
btree_stream_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
					uint64_t count, uint64_t *first, uint64_t *last, uint32_t max_leaves,
					const int *gate)
{
	extern __shared__ uint4 stream_smem[];
	constexpr int M = NODE_BYTES / sizeof(K);
	const uint32_t lane = threadIdx.x & 31;
	K		   *w = reinterpret_cast<K *>(stream_smem) + (threadIdx.x >> 5) * (TILE_MAX_LEAVES * M);
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t	nwarps = ((uint64_t) gridDim.x * blockDim.x) >> 5;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint32_t	slide_from = UINT32_MAX;	/* the last leaf staged, and */
	K			slide_key = 0;	/* its first key (tile_slide) */
	int64_t		cp = 0,
				cph = 0;		/* the carried probe (stream_descend) */
	uint64_t	cf = 0,
				cl = 0;
	bool		cvalid = false;

	if (gate && *gate != GATE_TILES)
		return;
	for (uint64_t tile = warp * tiles / nwarps; tile < (warp + 1) * tiles / nwarps; tile++)
	{
		uint64_t	base = tile * TILE_PROBES;
		uint32_t	cnt = (uint32_t) std::min<uint64_t>(count - base, TILE_PROBES);
		K			lo,
					hi;
		uint32_t	li0 = 1,
					li1 = 0;
		Window<K>	W;
		bool		staged = false;

		tile_span<K>(T, op, probes, probes_hi, base, cnt, &lo, &hi);
		if (max_leaves > 0 && tile_narrow<K>(T, lo, hi))
		{
			Start		S;

			if (!(slide_from < T.nleaves && lo > slide_key &&
				  tile_slide<K, DYN>(T, op, slide_from, lo, hi, &li0, &li1)))
				tile_bounds<K, DYN>(T, op, lo, hi, &S, &li0, &li1);
			if (li1 - li0 < 4 * max_leaves)
			{					/* the first max_leaves of the tile's leaves
								 * (none when they would answer few probes) */
				uint32_t	end = std::min(li1, li0 + max_leaves - 1);

				__syncwarp();	/* every lane is done with the last window */
				W = stage_leaves<K, DYN>(T, w, li0, end);
				staged = true;

				uint64_t	at = leaf_start<K, DYN>(T, end) - W.base;

				slide_from = at < W.n ? end : UINT32_MAX;	/* (an empty leaf: none) */
				slide_key = at < W.n ? w[at] : 0;
			}
		}
		for (uint32_t r = 0; r < cnt; r += 32)
		{						/* uniform trip count: stream_descend's shuffles */
			uint64_t	i = base + r + lane;
			bool		valid = r + lane < cnt;
			int64_t		p = valid ? probes[i] : 0;
			int64_t		ph = valid && op == GI_OP_RANGE ? probes_hi[i] : 0;
			uint64_t	f = 0,
						l = 0;
			bool		done = !valid || (staged && window_answer<K>(T, W, op, p, ph, f, l));
			uint32_t	need = __ballot_sync(0xffffffffu, !done);

			if (need)
				stream_descend<K, DYN, WALK>(T, op, p, ph, need, !done, f, l, &cp, &cph, &cf, &cl,
											 &cvalid);
			if (valid)
			{
				first[i] = f;
				last[i] = l;
			}
		}
	}
}

/* Blocks the stream kernel's grid holds at most: those that fit an SM at
 * once, times the SMs (cached). */
template <class K, bool DYN, bool WALK>
int
stream_grid(size_t smem)
{
	static std::atomic<int> cached(0);	/* threads querying at once share it */
	int			blocks = cached.load(std::memory_order_relaxed);

	if (!blocks)
	{
		int			per_sm = 0;

		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, btree_stream_kernel<K, DYN, WALK>,
														  STREAM_WARPS * 32, smem) != cudaSuccess ||
			per_sm < 1)
		{
			(void) cudaGetLastError();
			per_sm = 2;
		}
		blocks = per_sm * gi_gpu_sm_count();
		cached.store(blocks, std::memory_order_relaxed);
	}
	return blocks;
}

/* The stream search of a batch (gpu_btree_search.cuh). */
template <class K, bool DYN>
GiStatus
gi_gpu_btree_stream_search(const TreeDev<K> &T, cudaStream_t st, int op,
						   const int64_t *probes, const int64_t *hi, uint64_t count,
						   uint64_t *first, uint64_t *last, int window, int sample_leaves,
						   int *gate, GiError *err)
{
	constexpr bool WALK = LEAF_WALK_DEFAULT(K);
	uint32_t	max_leaves = window < 0 ? 0 : window == 0 ? TILE_MAX_LEAVES :
		(uint32_t) std::min(window, TILE_MAX_LEAVES);
	size_t		smem = (size_t) STREAM_WARPS * TILE_MAX_LEAVES * NODE_BYTES;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	want = (tiles + STREAM_WARPS - 1) / STREAM_WARPS;
	unsigned	grid = (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1),
													 stream_grid<K, DYN, WALK>(smem));

	if (gate)
		CKS((gi_gpu_btree_order_sample<K, DYN>(T, st, op, probes, hi, count, sample_leaves, gate, err)));
	btree_stream_kernel<K, DYN, WALK><<<grid, STREAM_WARPS * 32, smem, st>>>(
		T, op, probes, hi, count, first, last, max_leaves, gate);
	CKL("btree_stream_kernel");
	return GI_OK;
}

#endif							/* GPUIDX_GPU_BTREE_STREAM_CUH */
