/*
 * gpu_btree_tile.cu - the tiled search of the GPU B+ tree: a warp takes a
 * tile of TILE_PROBES consecutive probes of a batch and first asks how far
 * apart they lie.  Sorted, nearly sorted and clustered batches give tiles
 * whose keys are close together; random batches give tiles that span the
 * whole tree.  The order is thus detected on the device, per tile, inside
 * the search itself, with no pass of its own and nothing from the caller.
 *
 * Per tile (min and max of the probes' keys by warp reductions):
 *  1. Wide (more than half of the key span): every probe descends from the
 *     root with a group of G lanes, as the per-probe kernel does.
 *  2. Narrow: two half-warps descend in lockstep for the smallest and the
 *     largest key and note the deepest node both pass (every probe of the
 *     tile passes it as well: a descent is monotone in its key) and the
 *     leaves that bound every answer of the tile (for predecessor and
 *     successor, also the run of the neighbouring key).
 *     a. Those leaves are few (<= window): the warp copies their keys,
 *        compacted, into shared memory, and each lane answers its probes by
 *        binary search there: the leaves are read once per tile, the
 *        internal levels twice, and the rest is shared-memory work (merge
 *        path in effect: the tile's keys walk the leaves forward).
 *     b. Otherwise each probe descends from the shared node, skipping the
 *        levels above it.
 * Every path gives the answer the per-probe kernel gives (the same
 * [first, last), empty answers included); bench/kernel/gpu_check compares
 * them on every policy.
 */
#include "gpu_btree_search.cuh"

#include <algorithm>
#include <atomic>
#include <cstring>

#ifndef TILE_PROBES
#define TILE_PROBES		256			/* probes a warp takes at a time (<= 1024) */
#endif
#define TILE_WARPS		8			/* warps a block */
#define TILE_MAX_LEAVES	32			/* cap on the leaves a tile stages */

/* Clamp a probe into the key type's range. */
template <class K>
__device__ __forceinline__ K
clamp_to_key(int64_t p)
{
	const int64_t KMIN = KeyLimits<K>::lo,
				KMAX = KeyLimits<K>::hi;

	return (K) (p < KMIN ? KMIN : p > KMAX ? KMAX : p);
}

/* Warp-wide minimum (MAX = false) or maximum of v. */
template <class K, bool MAX>
__device__ __forceinline__ K
warp_extreme(K v)
{
#pragma unroll
	for (int d = 16; d > 0; d >>= 1)
	{
		K			o = __shfl_xor_sync(0xffffffffu, v, d);

		v = MAX ? (o > v ? o : v) : (o < v ? o : v);
	}
	return v;
}

/*
 * A tile's leaves in shared memory: the keys of positions base .. base + n - 1,
 * and the keys just outside (before: at base - 1, when base > 0; after: at
 * base + n, when that is < the entry count), so that a bound can tell
 * whether it is exact.
 */
template <class K> struct Window
{
	const K    *w;
	uint64_t	base;
	uint32_t	n;
	bool		open_lo;		/* base == 0 */
	bool		open_hi;		/* base + n == entries */
	K			before,
				after;
};

/*
 * lower_bound (LE = false) / upper_bound (LE = true) of t as a position, by
 * binary search over the window from index `from` on (a bound known to be
 * no smaller, galloping first).  *exact turns false when the bound may lie
 * outside the window.
 */
template <class K, bool LE, bool GALLOP = false>
__device__ __forceinline__ uint64_t
window_bound(const Window<K> &W, K t, bool *exact, uint32_t from = 0)
{
	uint32_t	lo = from,
				len = W.n - from;

	for (uint32_t step = 1; GALLOP && step < len; step <<= 1)
	{							/* gallop: the answer is often close to from */
		K			k = W.w[lo + step - 1];

		if (!(LE ? k <= t : k < t))
		{
			len = step - 1;
			break;
		}
		lo += step;
		len -= step;
	}
	while (len > 0)
	{
		uint32_t	half = len >> 1;
		K			k = W.w[lo + half];

		if (LE ? k <= t : k < t)
		{
			lo += half + 1;
			len -= half + 1;
		}
		else
			len = half;
	}
	if (lo == 0 && !W.open_lo && (LE ? W.before > t : W.before >= t))
		*exact = false;			/* may lie before the window */
	if (lo == W.n && !W.open_hi && (LE ? W.after <= t : W.after < t))
		*exact = false;			/* may lie after it */
	return W.base + lo;
}

/* The key at position pos (*exact turns false when it is not in the window). */
template <class K>
__device__ __forceinline__ K
window_key(const Window<K> &W, uint64_t pos, bool *exact)
{
	if (pos < W.base || pos >= W.base + W.n)
	{
		*exact = false;
		return W.w[0];
	}
	return W.w[pos - W.base];
}

/*
 * Answer one probe from the window: the cases of answer() (gpu_btree_search.cuh)
 * with lower_bound / upper_bound read off the window.  False when an answer
 * may lie outside it (then the probe descends instead); a window holding all
 * of tile_bounds()'s leaves answers every probe of its tile.
 */
template <class K>
__device__ __forceinline__ bool
window_answer(const TreeDev<K> &T, const Window<K> &W, int op, int64_t p, int64_t ph,
			  uint64_t &f, uint64_t &l)
{
	const int64_t KMIN = KeyLimits<K>::lo,
				KMAX = KeyLimits<K>::hi;
	bool		ok = true;

	f = l = 0;
	if (op == GI_OP_POINT || op == GI_OP_SUCC)
	{
		if (p > KMAX || (op == GI_OP_POINT && p < KMIN))
			return true;
		K			t = (K) (p < KMIN ? KMIN : p);

		if (t > T.kmax)
			return true;
		f = window_bound<K, false>(W, t, &ok);
		if (op == GI_OP_SUCC)
			t = window_key(W, f, &ok);
		l = ok ? window_bound<K, true, true>(W, t, &ok, (uint32_t) (f - W.base)) : 0;
	}
	else if (op == GI_OP_PRED)
	{
		if (p < KMIN)
			return true;
		l = window_bound<K, true>(W, clamp_to_key<K>(p), &ok);
		if (l == 0)
			return ok;
		K			k = window_key(W, l - 1, &ok);

		f = ok ? window_bound<K, false>(W, k, &ok) : 0;
	}
	else
	{
		uint64_t	lb,
					ub;

		if (p > ph)
			return true;
		if (p < KMIN)
			lb = 0;
		else if (p > KMAX || (K) p > T.kmax)
			lb = T.n;
		else
			lb = window_bound<K, false>(W, (K) p, &ok);
		if (ph < KMIN)
			ub = 0;
		else if (ph > KMAX || (K) ph >= T.kmax)
			ub = T.n;
		else
			ub = window_bound<K, true>(W, (K) ph, &ok);
		f = lb;
		l = ub > lb ? ub : lb;
	}
	return ok;
}

/*
 * The bounds of a narrow tile whose keys (clamped to [kmin, kmax]) lie in
 * [lo, hi]: lanes 0-15 descend to lower_bound(lo), lanes 16-31 to
 * upper_bound(hi) (= lower_bound(hi + 1); the max key's leaf when hi is
 * the max), in lockstep, noting in *S the deepest node both pass.  Then the
 * leaves li0 .. li1 that hold every position an answer of the tile reads:
 * a predecessor's run may start before lower_bound(lo) (back to the first
 * entry of the largest key below lo), a successor's run may end after
 * upper_bound(hi) (at the end of the smallest key above hi's run).
 */
template <class K, bool DYN>
__device__ __forceinline__ void
tile_bounds(const TreeDev<K> &T, int op, K lo, K hi, Start *S, uint32_t *li0, uint32_t *li1)
{
	constexpr int GB = 16;
	constexpr int KPT = NODE_BYTES / sizeof(K) / GB;
	int			lane = threadIdx.x & 31;
	Group		g = make_group<GB>(lane);
	bool		high = lane >= GB;
	bool		top = !(hi < T.kmax);
	K			t = high ? (top ? T.kmax : (K) (hi + 1)) : lo;
	LeafView<K, KPT> L;
	uint32_t	li;

	*S = Start{0, 0};
	descend<K, GB, false, DYN, true>(T, t, g, L, Start{0, 0}, S);
	li = L.li;
	if (!high && op == GI_OP_PRED)
	{							/* back to the run of the largest key < lo */
		uint32_t	c = leaf_rank<K, GB, KPT, false>(L, lo, g);

		if (c > 0 || li > 0)
		{
			K			below = c ? leaf_key<K, DYN>(T, li, c - 1) :
				leaf_key<K, DYN>(T, li - 1, leaf_size<K, DYN>(T, li - 1) - 1);

			if (c == 0 || leaf_rank<K, GB, KPT, false>(L, below, g) == 0)
			{
				descend<K, GB, false, DYN>(T, below, g, L);
				li = L.li;
			}
		}
	}
	if (high && top)
		li = T.nleaves - 1;
	else if (high && op == GI_OP_SUCC)
	{							/* on to the end of the smallest key > hi */
		uint32_t	c = leaf_rank<K, GB, KPT, false>(L, t, g);
		K			above = leaf_key<K, DYN>(T, li, c);

		if (above == T.kmax)
			li = T.nleaves - 1;
		else if (leaf_rank<K, GB, KPT, true>(L, above, g) >= L.size)
		{
			descend<K, GB, false, DYN>(T, (K) (above + 1), g, L);
			li = L.li;
		}
	}
	__syncwarp();
	*li0 = __shfl_sync(0xffffffffu, li, 0);
	*li1 = __shfl_sync(0xffffffffu, li, GB);
}

/* Copy leaves li0 .. li1 into the warp's shared memory, compacted. */
template <class K, bool DYN>
__device__ __forceinline__ Window<K>
stage_leaves(const TreeDev<K> &T, K *w, uint32_t li0, uint32_t li1)
{
	constexpr int M = NODE_BYTES / sizeof(K);
	int			lane = threadIdx.x & 31;
	Window<K>	W;

	W.w = w;
	W.base = leaf_start<K, DYN>(T, li0);
	W.n = (uint32_t) (leaf_start<K, DYN>(T, li1) + leaf_size<K, DYN>(T, li1) - W.base);
	W.open_lo = li0 == 0;
	W.open_hi = li1 == T.nleaves - 1;
	W.before = W.open_lo ? T.kmin : leaf_key<K, DYN>(T, li0 - 1, leaf_size<K, DYN>(T, li0 - 1) - 1);
	W.after = W.open_hi ? T.kmax : leaf_key<K, DYN>(T, li1 + 1, 0);
	for (uint32_t s = lane; s < (li1 - li0 + 1) * M; s += 32)
	{
		uint32_t	li = li0 + s / M,
					j = s % M;

		if (j < leaf_size<K, DYN>(T, li))
			w[leaf_start<K, DYN>(T, li) - W.base + j] = leaf_key<K, DYN>(T, li, j);
	}
	__syncwarp();
	return W;
}

/*
 * The smallest and largest key (clamped to the type, then to [kmin, kmax])
 * of the cnt probes (and range ends) at base: a warp reduction.
 */
template <class K>
__device__ __forceinline__ void
tile_span(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
		  uint64_t base, uint32_t cnt, K *lo_out, K *hi_out)
{
	K			lo = (K) KeyLimits<K>::hi,
				hi = (K) KeyLimits<K>::lo;

	for (uint32_t i = threadIdx.x & 31; i < cnt; i += 32)
	{
		K			t = clamp_to_key<K>(probes[base + i]);

		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		if (op == GI_OP_RANGE)
		{
			t = clamp_to_key<K>(probes_hi[base + i]);
			lo = t < lo ? t : lo;
			hi = t > hi ? t : hi;
		}
	}
	lo = warp_extreme<K, false>(lo);
	hi = warp_extreme<K, true>(hi);
	*lo_out = lo < T.kmin ? T.kmin : lo > T.kmax ? T.kmax : lo;
	*hi_out = hi < T.kmin ? T.kmin : hi > T.kmax ? T.kmax : hi;
}

/* A tile is narrow when its keys span at most half of the tree's. */
template <class K>
__device__ __forceinline__ bool
tile_narrow(const TreeDev<K> &T, K lo, K hi)
{
	typedef typename KeyLimits<K>::SKey SKey;

	return (SKey) ((SKey) hi - (SKey) lo) <= (SKey) ((SKey) T.kmax - (SKey) T.kmin) / 2;
}

/*
 * The probes of a tile the window could not answer (bit j of pending: the
 * lane's probe lane + 32 j) descend from S, 32 / G at a time: group k of
 * the warp takes the k-th pending lane of the round.
 */
template <class K, int G, bool DYN>
__device__ __forceinline__ void
descend_pending(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
				uint64_t base, uint32_t pending, Start S, uint64_t *first, uint64_t *last)
{
	int			lane = threadIdx.x & 31;
	Group		g = make_group<G>(lane);

	for (int j = 0; j < TILE_PROBES / 32; j++)
	{
		uint32_t	need = __ballot_sync(0xffffffffu, (pending >> j) & 1);

		while (need)
		{
			uint32_t	src = __fns(need, 0, lane / G + 1);

			if (src < 32)
			{
				uint64_t	i = base + src + 32 * j,
							f,
							l;

				answer<K, G, DYN>(T, op, probes[i], op == GI_OP_RANGE ? probes_hi[i] : 0, g, f, l, S);
				if (g.r == 0)
				{
					first[i] = f;
					last[i] = l;
				}
			}
			for (int k = 0; k < 32 / G && need; k++)
				need &= need - 1;
		}
	}
}

/*
 * The tiled search kernel: warp w takes tiles w, w + warps, ...; a tile of
 * the probes (and range ends) at base .. base + TILE_PROBES - 1 is answered
 * by the paths of the file comment.  max_leaves caps what a tile stages (0:
 * never).  gate: run only when *gate is 1 (the sample chose tiles; NULL:
 * always).
 */
template <class K, int G, bool DYN>
__global__ void __launch_bounds__(TILE_WARPS * 32)
btree_tile_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
				  uint64_t count, uint64_t *first, uint64_t *last, uint32_t max_leaves,
				  const int *gate)
{
	extern __shared__ uint4 tile_smem[];
	constexpr int M = NODE_BYTES / sizeof(K);
	int			lane = threadIdx.x & 31;
	K		   *w = reinterpret_cast<K *>(tile_smem) + (threadIdx.x >> 5) * (TILE_MAX_LEAVES * M);
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t	nwarps = ((uint64_t) gridDim.x * blockDim.x) >> 5;

	if (gate && *gate != 1)
		return;
	for (uint64_t base = warp * TILE_PROBES; base < count; base += nwarps * TILE_PROBES)
	{
		uint32_t	cnt = (uint32_t) std::min<uint64_t>(count - base, TILE_PROBES);
		uint32_t	pending = 0;
		K			lo,
					hi;
		Start		S = {0, 0};
		uint32_t	li0 = 1,
					li1 = 0;

		tile_span<K>(T, op, probes, probes_hi, base, cnt, &lo, &hi);
		if (tile_narrow<K>(T, lo, hi))
			tile_bounds<K, DYN>(T, op, lo, hi, &S, &li0, &li1);
		if (li1 >= li0 && max_leaves > 0 && li1 - li0 < 4 * max_leaves)
		{						/* the first max_leaves of the tile's leaves
								 * (none when they would answer few probes) */
			Window<K>	W = stage_leaves<K, DYN>(T, w, li0, std::min(li1, li0 + max_leaves - 1));
			uint32_t	j = 0;

			for (uint32_t i = lane; i < cnt; i += 32, j++)
			{
				uint64_t	f,
							l;

				if (window_answer<K>(T, W, op, probes[base + i],
									 op == GI_OP_RANGE ? probes_hi[base + i] : 0, f, l))
				{
					first[base + i] = f;
					last[base + i] = l;
				}
				else
					pending |= 1u << j;
			}
		}
		else
			for (uint32_t i = lane; i < cnt; i += 32)
				pending |= 1u << (i / 32);
		descend_pending<K, G, DYN>(T, op, probes, probes_hi, base, pending, S, first, last);
		__syncwarp();
	}
}

/*
 * The sample that picks the kernel for a batch: 8 warps look at up to 64
 * tiles spread over it and set *gate to 1 (tiled search) when at least one
 * in eight is narrow, else 0 (per-probe kernel).
 */
template <class K>
__global__ void __launch_bounds__(TILE_WARPS * 32)
tile_sample_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
				   uint64_t count, int *gate)
{
	__shared__ int narrow;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	sampled = std::min<uint64_t>(tiles, 64);

	if (threadIdx.x == 0)
		narrow = 0;
	__syncthreads();
	for (uint64_t k = threadIdx.x >> 5; k < sampled; k += TILE_WARPS)
	{
		uint64_t	base = k * tiles / sampled * TILE_PROBES;
		K			lo,
					hi;

		tile_span<K>(T, op, probes, probes_hi, base,
					 (uint32_t) std::min<uint64_t>(count - base, TILE_PROBES), &lo, &hi);
		if ((threadIdx.x & 31) == 0 && tile_narrow<K>(T, lo, hi))
			atomicAdd(&narrow, 1);
	}
	__syncthreads();
	if (threadIdx.x == 0)
		*gate = narrow * 8 >= (int) sampled ? 1 : 0;
}

/* Blocks per SM for one instantiation (cached). */
template <class K, int G, bool DYN>
static int
tile_grid(size_t smem)
{
	static std::atomic<int> cached(0);	/* threads querying at once share it */
	int			blocks = cached.load(std::memory_order_relaxed);

	if (!blocks)
	{
		int			per_sm = 0;

		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, btree_tile_kernel<K, G, DYN>,
														  TILE_WARPS * 32, smem) != cudaSuccess ||
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

/* Launch the tiled kernel for group size G. */
template <class K, int G, bool DYN>
static GiStatus
launch_tile(const TreeDev<K> &T, cudaStream_t st, int op, const int64_t *probes,
			const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last,
			uint32_t max_leaves, const int *gate, GiError *err)
{
	size_t		smem = (size_t) TILE_WARPS * TILE_MAX_LEAVES * NODE_BYTES;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	want = (tiles + TILE_WARPS - 1) / TILE_WARPS;
	unsigned	grid = (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1),
													 tile_grid<K, G, DYN>(smem));

	btree_tile_kernel<K, G, DYN><<<grid, TILE_WARPS * 32, smem, st>>>(
		T, op, probes, hi, count, first, last, max_leaves, gate);
	CKL("btree_tile_kernel");
	return GI_OK;
}

/* The tiled search of a batch (gpu_btree_search.cuh). */
template <class K, bool DYN>
GiStatus
gi_gpu_btree_tile_search(const TreeDev<K> &T, cudaStream_t st, int op,
						 const int64_t *probes, const int64_t *hi, uint64_t count,
						 uint64_t *first, uint64_t *last, int group, int window,
						 int *gate, GiError *err)
{
	uint32_t	max_leaves = window < 0 ? 0 : window == 0 ? TILE_MAX_LEAVES :
		(uint32_t) std::min(window, TILE_MAX_LEAVES);

	if (gate)
	{
		tile_sample_kernel<K><<<1, TILE_WARPS * 32, 0, st>>>(T, op, probes, hi, count, gate);
		CKL("tile_sample_kernel");
	}
	switch (group)
	{
		case 4:
			return launch_tile<K, 4, DYN>(T, st, op, probes, hi, count, first, last, max_leaves, gate, err);
		case 8:
			return launch_tile<K, 8, DYN>(T, st, op, probes, hi, count, first, last, max_leaves, gate, err);
		default:
			return launch_tile<K, 2, DYN>(T, st, op, probes, hi, count, first, last, max_leaves, gate, err);
	}
}

template GiStatus gi_gpu_btree_tile_search<int32_t, false>(const TreeDev<int32_t> &, cudaStream_t, int,
														   const int64_t *, const int64_t *, uint64_t,
														   uint64_t *, uint64_t *, int, int, int *, GiError *);
template GiStatus gi_gpu_btree_tile_search<int32_t, true>(const TreeDev<int32_t> &, cudaStream_t, int,
														  const int64_t *, const int64_t *, uint64_t,
														  uint64_t *, uint64_t *, int, int, int *, GiError *);
template GiStatus gi_gpu_btree_tile_search<int64_t, false>(const TreeDev<int64_t> &, cudaStream_t, int,
														   const int64_t *, const int64_t *, uint64_t,
														   uint64_t *, uint64_t *, int, int, int *, GiError *);
template GiStatus gi_gpu_btree_tile_search<int64_t, true>(const TreeDev<int64_t> &, cudaStream_t, int,
														  const int64_t *, const int64_t *, uint64_t,
														  uint64_t *, uint64_t *, int, int, int *, GiError *);
