/*
 * gpu_btree_stream.cuh - the stream search of the GPU B+ tree: the kernel
 * the engine runs where the order sample finds a batch in order or
 * clustered (GATE_TILES).  A warp takes a stretch of consecutive tiles of
 * TILE_PROBES probes, as the tiled search does, and answers a narrow tile
 * from its leaves staged in shared memory (the helpers of
 * gpu_btree_tile.cuh: tile_slide / tile_bounds, stage_leaves,
 * window_answer; the tile's span from its first row, stream_span).
 * Everything else (a wide tile, a probe whose answer lies beyond the
 * window) takes the thread search, one lane a probe from the top table's
 * node, as the per-probe kernel does; equal probes among those descend
 * once.
 *
 * Why a kernel of its own: the tiled kernel holds the run search, the
 * group descents and the row carry in shared memory besides, and at its
 * register cap of 64 it spilled on this path (ncu, H100, 2026-11-26:
 * 431 instructions a row of 32 sorted probes, 5.0 million local-memory
 * requests a chunk).  This one keeps only what a sorted or clustered
 * batch needs.  GiGpuPolicy.stream picks it (the default) or the tiled
 * kernel.  3 blocks an SM and staging only a tile's leaves were tried
 * for int64 keys on the H100 and not kept
 * (bench/kernel/results-h100-2026-11-26p-steps.md).  The L2 prefetch of
 * the next tile's probes was dropped on 2026-11-26 with stream_span: the
 * lines were mostly gone from L2 by the time the rows read them (the
 * stream moves ~40 MB through L2 while a warp answers a tile), so they
 * were read twice (ncu, H100, sorted int32 probes: 631 MB against 453 MB
 * from memory a chunk of 2^25 probes; 3.10x against 2.89x the binary
 * search in the same call).
 */
#ifndef GPUIDX_GPU_BTREE_STREAM_CUH
#define GPUIDX_GPU_BTREE_STREAM_CUH

#include "gpu_btree_tile.cuh"

#define STREAM_WARPS		8		/* warps a block */
#define STREAM_MIN_BLOCKS	4		/* blocks an SM: 32 warps, 64 registers */
#define STREAM_GRIDS		4		/* a large batch's grid: this many times
									 * the blocks the GPU holds at once
									 * (stream_search_grid) */
#define STREAM_AHEAD		2		/* a tile in order stages its leaves
									 * times this */

/* A row hint in one register: from (< 2^16: a window holds at most
 * STREAM_MAX_LEAVES * 32 keys) and the length (0: none). */
__device__ __forceinline__ uint32_t
hint_pack(uint32_t from, uint32_t len)
{
	return from | len << 16;
}

/*
 * The next row's hint (window_answer) from this row's first bounds (at,
 * where the window answered: answered): from the smallest, three times
 * their spread and 8 more, rounded up to a power of two, so that a sorted
 * batch's next row, whose bounds start where this row's end, mostly falls
 * inside it; none (len 0) when the window answered no lane.
 */
__device__ __forceinline__ uint32_t
row_hint(uint32_t at, bool answered)
{
	uint32_t	mn = __reduce_min_sync(0xffffffffu, answered ? at : UINT32_MAX),
				mx = __reduce_max_sync(0xffffffffu, answered ? at : 0);
	uint32_t	want = 3 * (mx - mn) + 8;

	return mn <= mx ? hint_pack(mn, 1u << (32 - __clz(want - 1))) : 0;
}

/*
 * The span the stream kernel stages a tile's leaves for (not ranges): the
 * smallest and largest of the first row's probes (p: this lane's) and the
 * tile's last probe, clamped as tile_span clamps.  Exact for a tile in
 * order; in a cluster a probe outside it only costs a descent (the window
 * declines what it cannot answer exactly).  tile_span loads all of the
 * tile's probes, which the rows then load again: on sorted 10^8-probe
 * batches most of those second loads missed L2 (ncu, H100, 2026-11-26: a
 * chunk of 2^25 probes read 654 MB from memory where its probes and
 * leaves are 436 MB).
 */
template <class K>
__device__ __forceinline__ void
stream_span(const TreeDev<K> &T, const int64_t *probes, uint64_t base, uint32_t cnt, int64_t p,
			K *lo_out, K *hi_out)
{
	const uint32_t lane = threadIdx.x & 31;
	K			last = clamp_to_key<K>(probes[base + cnt - 1]),
				t = lane < cnt ? clamp_to_key<K>(p) : last;
	K			lo = warp_extreme<K, false>(t < last ? t : last),
				hi = warp_extreme<K, true>(t > last ? t : last);

	*lo_out = clamp_to_tree<K>(T, lo);
	*hi_out = clamp_to_tree<K>(T, hi);
}

/*
 * What a warp carries from row to row (stream_row_carried,
 * stream_descend): the row before's last probe (and range end) and its
 * answer.  With int64 keys it lives in shared memory, leaving the
 * registers to the window (ptxas, sm_90, when it moved: 84 bytes of spill
 * stores a thread in registers, 32 in shared memory); with int32 keys it
 * fits in registers (12 bytes against 16), and
 * the block's shared memory stays at the 4 x 48 KB that 4 blocks an SM
 * fit in the 196 KB carveout with.
 */
struct StreamCarry
{
	int64_t		p,
				ph;
	uint64_t	f,
				l;
	bool		valid;
};

/* Where the carry of key type K lives (StreamCarry). */
template <class K>
__host__ __device__ constexpr bool
carry_in_shared(void)
{
	return sizeof(K) == 8;
}

/* The stream kernel's dynamic shared memory: the warps' windows of
 * max_leaves leaves, then (carry_in_shared) their carries. */
template <class K>
__host__ __device__ constexpr size_t
stream_smem_bytes(uint32_t max_leaves)
{
	return (size_t) STREAM_WARPS * max_leaves * NODE_BYTES +
		(carry_in_shared<K>() ? STREAM_WARPS * sizeof(StreamCarry) : 0);
}

/*
 * Whether every valid lane's probe (and range end) is the carried one: a
 * row inside a run of equal probes longer than the row before it, which
 * then copies the carried answer instead of searching.  A sorted batch
 * over keys with long runs of duplicates is mostly such rows (int32
 * lognormal keys at 10^8: runs of thousands below the median).
 */
template <bool RANGE, class C>
__device__ __forceinline__ bool
stream_row_carried(int64_t p, int64_t ph, bool valid, const C *c)
{
	return __all_sync(0xffffffffu, !valid || (c->valid && p == c->p && (!RANGE || ph == c->ph)));
}

/*
 * The carry moves to the row's last probe (tail: its lane) with its
 * answer, whichever path answered it.
 */
template <class K, bool RANGE, class C>
__device__ __forceinline__ void
stream_carry(int64_t p, int64_t ph, uint64_t f, uint64_t l, uint32_t tail, C *c)
{
	const uint32_t lane = threadIdx.x & 31;

	if constexpr (carry_in_shared<K>())
	{
		__syncwarp();			/* every lane has read the carry */
		if (lane == tail)
		{
			c->p = p;
			c->ph = ph;
			c->f = f;
			c->l = l;
			c->valid = true;
		}
		__syncwarp();
	}
	else
	{							/* each lane's registers */
		c->p = __shfl_sync(0xffffffffu, p, tail);
		if (RANGE)
			c->ph = __shfl_sync(0xffffffffu, ph, tail);
		c->f = __shfl_sync(0xffffffffu, f, tail);
		c->l = __shfl_sync(0xffffffffu, l, tail);
		c->valid = true;
	}
}

/*
 * The probes of a row that its window did not answer (need: a bit a lane;
 * mine: this lane's) take the thread search, equal probes once: the lowest
 * pending lane of each set of equal probes (and range ends) descends, and
 * the others read its answer by a shuffle; one equal to the warp's carried
 * probe (c: the row before's last, answered already) takes the carried
 * answer.  The carry then moves to the row's last pending probe.
 */
template <class K, bool DYN, bool WALK, bool RANGE, class C>
__device__ __forceinline__ void
stream_descend(const TreeDev<K> &T, int op, int64_t p, int64_t ph, uint32_t need, bool mine,
			   uint64_t &f, uint64_t &l, C *c)
{
	const uint32_t lane = threadIdx.x & 31;
	uint32_t	same = __match_any_sync(0xffffffffu, (unsigned long long) p);

	if (RANGE)
		same &= __match_any_sync(0xffffffffu, (unsigned long long) ph);
	same &= need;

	uint32_t	leader = mine ? (uint32_t) __ffs(same) - 1 : lane;
	bool		carried = mine && c->valid && p == c->p && (!RANGE || ph == c->ph);

	if (carried)
	{
		f = c->f;
		l = c->l;
	}
	else if (mine && leader == lane)
		answer<K, 1, DYN, WALK, false>(T, op, p, ph, make_group<1>((int) lane), f, l, top_start<K, DYN>(T, op, p));

	uint64_t	lf = __shfl_sync(0xffffffffu, f, leader),
				ll = __shfl_sync(0xffffffffu, l, leader);

	if (mine && leader != lane)
	{
		f = lf;
		l = ll;
	}
	stream_carry<K, RANGE>(p, ph, f, l, 31 - __clz(need), c);
}

/*
 * The stream kernel: warp w takes the w-th of nwarps equal stretches of
 * consecutive tiles (nwarps: up to STREAM_GRIDS times the resident warps,
 * stream_search_grid).  A narrow tile whose keys lie inside the warp's
 * window (kept from tile to tile) stages nothing; another finds its
 * leaves from the last leaf the warp staged (tile_slide: the next tile of
 * a sorted batch) or by descents from the top table's nodes (tile_bounds
 * TOP), stages up to max_leaves of them when they number under 4 windows
 * (in order: as many again ahead; else from the leaf before its own to the
 * window's end), and answers its probes row by row from that window
 * (window_answer: exact or declined); the rest take stream_descend.  A
 * row whose probes all equal the carried one copies its answer
 * (stream_row_carried; a tile of such rows stages nothing); the carry
 * moves to a row's last probe where its answer spans a long run.
 * Each row's first bounds hint where the next row's lie (row_hint: three
 * or four of the search's 10-11 steps where a row spans 32 positions),
 * while the window stays and until a hint misses a lane.  max_leaves: the
 * leaves a warp stages (its share of the block's shared memory); hint:
 * use row hints.  gate: run only when *gate is GATE_TILES, or
 * GATE_TILES_RUNS for ROWS (NULL: always).  WALK: the thread search's leaf
 * walk (the key width's default, LEAF_WALK_DEFAULT).  RANGE: op is
 * GI_OP_RANGE (the other operations hold no range ends in registers).
 * ROWS: the kernel of runs (ROW_COPY).
 */
template <class K, bool DYN, bool WALK, bool RANGE, bool ROWS = false>
__global__ void __launch_bounds__(STREAM_WARPS * 32, STREAM_MIN_BLOCKS)
btree_stream_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
					uint64_t count, uint64_t *first, uint64_t *last, uint32_t max_leaves,
					bool hint, const int *gate)
{
	extern __shared__ uint4 stream_smem[];
	typedef typename KeyLimits<K>::SKey U;
	constexpr int M = NODE_BYTES / sizeof(K);
	const uint32_t lane = threadIdx.x & 31;
	K		   *w = reinterpret_cast<K *>(stream_smem) + (threadIdx.x >> 5) * (max_leaves * M);
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t	nwarps = ((uint64_t) gridDim.x * blockDim.x) >> 5;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	tile_end = (warp + 1) * tiles / nwarps;
	Window<K>	W;				/* the staged window, when have */
	bool		have = false;
	uint32_t	slide_from = UINT32_MAX;	/* the last leaf staged, */
	K			slide_key = 0;	/* its first key, and */
	float		slide_reach = 0;	/* how far past it in keys 24 leaves
									 * reach, by the window's density */
	StreamCarry carry_r = {0, 0, 0, 0, false};	/* (int32 keys) */
	typedef typename std::conditional<carry_in_shared<K>(), volatile StreamCarry, StreamCarry>::type C;
	C		   *carry = &carry_r;

	if constexpr (carry_in_shared<K>())	/* after the windows (stream_smem_bytes) */
		carry = reinterpret_cast<StreamCarry *>(reinterpret_cast<char *>(stream_smem) +
												(size_t) STREAM_WARPS * max_leaves * NODE_BYTES) +
			(threadIdx.x >> 5);
	uint32_t	hint_at = 0;	/* the row hint in the window (hint_pack; 0:
								 * none) */
	bool		hinting = false;	/* row hints for this window: until one
									 * misses a lane */
	bool		run = false;	/* (ROW_COPY) the carry holds the row
								 * before's last probe, which the next rows
								 * may repeat */

	/*
	 * Rows copied from the carry: the kernel the sample picks for batches
	 * whose rows repeat one probe (GATE_TILES_RUNS), int32 keys only.  In
	 * the kernel of every sorted batch its checks cost batches without
	 * runs 8 % (H100, sorted int32 probes of 10^8); with int64 keys they
	 * took the kernel from 32 to 98 bytes of spill stores a thread (ptxas,
	 * sm_90).
	 */
	constexpr bool ROW_COPY = ROWS && STREAM_ROWS(K) && !RANGE;

	/* the kernel of runs, or the other (the sample writes GATE_TILES_RUNS
	 * only where the kernel of runs exists) */
	if (gate && *gate != (ROW_COPY ? GATE_TILES_RUNS : GATE_TILES))
		return;
	if (lane == 0 || !carry_in_shared<K>())
		carry->valid = false;
	__syncwarp();
	for (uint64_t tile = warp * tiles / nwarps; tile < tile_end; tile++)
	{
		uint64_t	base = tile * TILE_PROBES;
		uint32_t	cnt = (uint32_t) std::min<uint64_t>(count - base, TILE_PROBES);
		K			lo,
					hi;
		bool		staged = false;

		/* the first row's probes (each row loads the next one's a row
		 * ahead): without ranges loaded here, for the span too */
		int64_t		p_next = 0,
					ph_next = 0;

		if constexpr (RANGE)
			tile_span<K>(T, op, probes, probes_hi, base, cnt, &lo, &hi);
		else
		{
			p_next = lane < cnt ? probes[base + lane] : 0;
			stream_span<K>(T, probes, base, cnt, p_next, &lo, &hi);
		}
		/* a tile in a run of equal probes stages nothing: its rows copy
		 * the carry (a run longer than 4 windows would descend from the
		 * top table a tile) */
		bool		in_run = ROW_COPY && run && lo == hi &&
			stream_row_carried<false>(p_next, 0, lane < cnt, carry);

		if (!in_run && max_leaves > 0 && tile_narrow<K>(T, lo, hi))
		{
			if (have && lo >= W.w[0] && hi <= W.w[W.n - 1])
				staged = true;	/* the window holds the tile's keys already
								 * (the next tile of a run in order, or of
								 * a cluster) */
			else
			{
				uint32_t	li0 = 1,
							li1 = 0,
							start,
							end;
				bool		slid = slide_from < T.nleaves && lo > slide_key &&
					(float) (U) ((U) hi - (U) slide_key) <= slide_reach &&
					tile_slide<K, DYN>(T, op, slide_from, lo, hi, &li0, &li1);

				if (!slid)
				{
					Start		S;

					tile_bounds<K, DYN, true>(T, op, lo, hi, &S, &li0, &li1);
				}
				/*
				 * In order (slid): the tile's leaves and as many again
				 * after them, so that the next tile mostly finds its keys
				 * here.  Else a window from the leaf before the tile's on,
				 * as far as it goes: a cluster's next tiles come back to
				 * these leaves.  Leaves past the window descend.
				 */
				start = slid || li0 == 0 || max_leaves < 4 ? li0 : li0 - 1;
				end = slid ? li0 + STREAM_AHEAD * (li1 - li0 + 1) - 1 : start + max_leaves - 1;
				end = std::min(std::min(end, start + max_leaves - 1), T.nleaves - 1);
				end = std::max(end, std::min(li1, start + max_leaves - 1));
				if (li1 - li0 < 4 * max_leaves)
				{
					__syncwarp();	/* every lane is done with the last window */
					W = stage_leaves<K, DYN>(T, w, start, end);
					have = staged = W.n > 0;
					hint_at = 0;
					hinting = hint;

					uint64_t	at = leaf_start<K, DYN>(T, end) - W.base;

					slide_from = at < W.n ? end : UINT32_MAX;	/* (an empty leaf: none) */
					slide_key = at < W.n ? w[at] : 0;
					slide_reach = W.n > 0 ? 24.0f * (float) (U) ((U) W.w[W.n - 1] - (U) W.w[0]) /
						(float) (end - start + 1) : 0;
				}
			}
		}
		if constexpr (RANGE)
		{
			p_next = lane < cnt ? probes[base + lane] : 0;
			ph_next = lane < cnt ? probes_hi[base + lane] : 0;
		}
		for (uint32_t r = 0; r < cnt; r += 32)
		{						/* uniform trip count: stream_descend's shuffles */
			uint64_t	i = base + r + lane;
			bool		valid = r + lane < cnt;
			int64_t		p = p_next,
						ph = ph_next;

			if (r + 32 + lane < cnt)
			{
				p_next = probes[i + 32];
				if (RANGE)
					ph_next = probes_hi[i + 32];
			}

			uint64_t	f = 0,
						l = 0;

			if (ROW_COPY && run && stream_row_carried<RANGE>(p, ph, valid, carry))
			{					/* the next row after the run searches the
								 * whole window (a hint from before the
								 * run would miss and end the window's
								 * hints) */
				hint_at = 0;
				if (valid)
				{
					first[i] = carry->f;
					last[i] = carry->l;
				}
				continue;
			}

			uint32_t	at = 0;
			bool		held = true;
			bool		answered = valid && staged && window_answer<K>(T, W, op, p, ph, f, l, hint_at & 0xffffu,
																			hint_at >> 16, &at, &held);
			bool		done = !valid || answered;
			uint32_t	need = __ballot_sync(0xffffffffu, !done);

			if (hinting && staged)
			{					/* (a clustered batch's rows hint nothing:
								 * one miss ends the window's hints) */
				hinting = __all_sync(0xffffffffu, held);
				hint_at = hinting ? row_hint(at, answered) : 0;
			}

			if (need)
				stream_descend<K, DYN, WALK, RANGE>(T, op, p, ph, need, !done, f, l, carry);
			if (valid)
			{
				first[i] = f;
				last[i] = l;
			}

			/*
			 * The carry moves to this row's last probe where the row is
			 * that probe throughout, or its answer spans a run of 32 keys
			 * or more, whose probes the next rows may well repeat (int32
			 * lognormal keys, sorted probes of 10^8: 1.16x).  Not where
			 * the next row's last probe is the same: that vote waited for
			 * the next row's probes before the one after them could load
			 * (H100: 8-11 % slower on sorted batches without runs).  (A
			 * range's answer is its keys, not a run: ROW_COPY.)
			 */
			if constexpr (ROW_COPY)
			{
				int64_t		p0 = __shfl_sync(0xffffffffu, p, 0);

				run = __ballot_sync(0xffffffffu, lane == 31 && valid && (p == p0 || l - f >= 32)) != 0;
			}
			if (run && !(need >> 31))	/* (else stream_descend carried lane 31) */
				stream_carry<K, RANGE>(p, ph, f, l, 31, carry);
		}
	}
}

/* Blocks the stream kernel's grid holds at most (resident_grid), sized for
 * the most shared memory a launch may take, which the kernel is allowed
 * (over the 48 KB a launch takes unasked) on first use. */
template <class K, bool DYN, bool WALK, bool RANGE, bool ROWS = false>
int
stream_grid(void)
{
	static std::atomic<int> cached(0);
	const size_t most = stream_smem_bytes<K>(STREAM_MAX_LEAVES);

	if (!cached.load(std::memory_order_relaxed))
		(void) cudaFuncSetAttribute(btree_stream_kernel<K, DYN, WALK, RANGE, ROWS>,
									cudaFuncAttributeMaxDynamicSharedMemorySize, (int) most);
	return resident_grid(btree_stream_kernel<K, DYN, WALK, RANGE, ROWS>, STREAM_WARPS * 32, most, &cached);
}

/*
 * Blocks for a stream kernel over want blocks' worth of tiles (a warp a
 * tile), of which the GPU holds resident at once: at most STREAM_GRIDS
 * (GI_GPU_STREAM_GRIDS) times that, so a large batch's warps take shorter
 * stretches and the block scheduler hands the later ones to the SMs that
 * finish first.  Why: a skewed sorted batch (lognormal keys: dense small
 * keys, then sparse large ones) in one pass of resident warps, each with
 * an equal stretch, left the sparse end's warps working long after the
 * rest.  H100, 2026-11-27, one pass over sorted 10^8-probe batches: 4x the
 * grid took int64 lognormal over 10^8 keys from 0.83 to 1.09-1.11x main's
 * segments of 2^25 probes and int32 lognormal (the kernel of runs) from
 * 0.93-0.94 to 1.04-1.07x; 16x lost 0-25 % of that on the uniform and
 * clustered rows.  Stretches of equal estimated cost (costed from each
 * granule's first and last probe) were tried instead and lost: the cost
 * of a stretch is not its bytes (bench/kernel/results-h100-2026-11-27k-grids.md).
 */
static inline unsigned
stream_search_grid(uint64_t want, int resident)
{
	uint64_t	most = (uint64_t) gi_setting_gpu_stream_grids(STREAM_GRIDS) * (uint64_t) resident;

	return (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1), std::max<uint64_t>(most, 1));
}

/* The stream search of a batch (gpu_btree_search.cuh). */
template <class K, bool DYN>
GiStatus
gi_gpu_btree_stream_search(const TreeDev<K> &T, cudaStream_t st, int op,
						   const int64_t *probes, const int64_t *hi, uint64_t count,
						   uint64_t *first, uint64_t *last, int window, int sample_leaves,
						   int row_hints, int *gate, bool sample, GiError *err)
{
	constexpr bool WALK = LEAF_WALK_DEFAULT(K);
	uint32_t	max_leaves = window < 0 ? 0 : window == 0 ? STREAM_MAX_LEAVES :
		(uint32_t) std::min(window, STREAM_MAX_LEAVES);
	size_t		smem = stream_smem_bytes<K>(max_leaves);
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	want = (tiles + STREAM_WARPS - 1) / STREAM_WARPS;
	bool		range = op == GI_OP_RANGE;
	unsigned	grid = stream_search_grid(want, range ? stream_grid<K, DYN, WALK, true>() :
										  stream_grid<K, DYN, WALK, false>());

	/* the sample's narrow rule at this kernel's window (0: 48 leaves, where
	 * the tiled kernel's is 32): H100, 2026-11-26, clustered 10^8-probe
	 * batches over 10^8 int32 keys (a cluster spans 33 leaves) ran at 52.06
	 * against 34.19 x 10^9 q/s in the per-probe kernel */
	if (gate && sample)
		CKS((gi_gpu_btree_order_sample<K, DYN>(T, st, op, probes, hi, count, count,
												 stream_sample_leaves(sample_leaves), gate, err)));
	if (range)
		btree_stream_kernel<K, DYN, WALK, true><<<grid, STREAM_WARPS * 32, smem, st>>>(
			T, op, probes, hi, count, first, last, max_leaves, row_hints >= 0, gate);
	else
		btree_stream_kernel<K, DYN, WALK, false><<<grid, STREAM_WARPS * 32, smem, st>>>(
			T, op, probes, hi, count, first, last, max_leaves, row_hints >= 0, gate);
	CKL("btree_stream_kernel");
	if constexpr (STREAM_ROWS(K))
	{							/* behind the sample: the kernel of runs
								 * (ROWS), which runs where the other does
								 * not */
		if (gate && !range)
		{
			unsigned	grid_rows = stream_search_grid(want, stream_grid<K, DYN, WALK, false, true>());

			btree_stream_kernel<K, DYN, WALK, false, true><<<grid_rows, STREAM_WARPS * 32, smem, st>>>(
				T, op, probes, hi, count, first, last, max_leaves, row_hints >= 0, gate);
			CKL("btree_stream_kernel (rows)");
		}
	}
	return GI_OK;
}

#endif							/* GPUIDX_GPU_BTREE_STREAM_CUH */
