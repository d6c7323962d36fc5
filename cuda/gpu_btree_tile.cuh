/*
 * gpu_btree_tile.cuh - the tiled search of the GPU B+ tree: a warp takes a
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
 *  3. Narrow and in order (or narrow at all, as GiGpuPolicy.run says): the
 *     run search (run_tile) answers the tile in rows of 32 probes from a
 *     window of leaves the warp carries forward from row to row and from
 *     tile to tile (a warp takes one stretch of consecutive tiles), staging
 *     it anew only where the run has moved past it; the order is checked
 *     in tile_span, a shuffle a row.
 * Every path gives the answer the per-probe kernel gives (the same
 * [first, last), empty answers included); bench/kernel/gpu_check compares
 * them on every policy, test/unit/test_sorted.c the run search's modes.
 *
 * The code is all templates; cuda/gpu_btree_tile32.cu and
 * gpu_btree_tile64.cu instantiate it for each key width, two translation
 * units that nvcc compiles side by side (one took most of a build), and
 * gpu_btree_tile{32,64}_blocks.cu the kernel's instances for 2 and 3
 * blocks an SM (TILE_BLOCK_INSTANCES).
 */
#ifndef GPUIDX_GPU_BTREE_TILE_CUH
#define GPUIDX_GPU_BTREE_TILE_CUH

#include "gpu_btree_search.cuh"

#include <algorithm>
#include <atomic>
#include <cstring>

#ifndef TILE_PROBES
#define TILE_PROBES		256			/* probes a warp takes at a time (<= 1024) */
#endif
#define TILE_WARPS		8			/* warps a block */
#define TILE_MIN_BLOCKS	4			/* blocks an SM must fit by default
									 * (GiGpuPolicy.tile_min_blocks 0): caps
									 * registers at 64 a thread, the tiled
									 * kernel's count before the run search;
									 * ptxas (sm_90) then spills in every
									 * instance (16-128 bytes of stores a
									 * thread), where 2 blocks (82-96
									 * registers) spill none.  Groups of 2 also have instances
									 * for 2 and 3 (tile_min_blocks,
									 * TILE_BLOCK_INSTANCES). */
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

/*
 * Clamp a key into the tree's key bounds [kmin, kmax].  The three places
 * that reduce a span of probes (tile_span, the run search's rows, the order
 * sample's sample_narrow) clamp its ends with it, so that tile_narrow
 * compares the span with the tree's own and tile_bounds descends to keys
 * inside the tree.
 */
template <class K>
__device__ __forceinline__ K
clamp_to_tree(const TreeDev<K> &T, K k)
{
	return k < T.kmin ? T.kmin : k > T.kmax ? T.kmax : k;
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
 * The position of window index lo, a bound of t found in the window;
 * *exact turns false when the bound may lie outside it (lo at an end the
 * window does not close, and the key beyond that end qualifies).
 */
template <class K, bool LE>
__device__ __forceinline__ uint64_t
window_place(const Window<K> &W, K t, bool *exact, uint32_t lo)
{
	if (lo == 0 && !W.open_lo && (LE ? W.before > t : W.before >= t))
		*exact = false;			/* may lie before the window */
	if (lo == W.n && !W.open_hi && (LE ? W.after <= t : W.after < t))
		*exact = false;			/* may lie after it */
	return W.base + lo;
}

/*
 * lower_bound (LE = false) / upper_bound (LE = true) of t as a position, by
 * binary search over the window from index `from` on (a bound known to be
 * no smaller, galloping first).  *exact turns false when the bound may lie
 * outside the window.  Without GALLOP the search halves a length that
 * depends on W.n, from and span alone (the answer known to lie in [from,
 * from + span]), so lanes that share them take the same trip count and no
 * branch diverges: on sorted 10^8-probe batches the search with a
 * data-dependent length was 47 % of the tiled kernel's instructions (H100,
 * ncu, 2026-11-26).
 */
template <class K, bool LE, bool GALLOP = false>
__device__ __forceinline__ uint64_t
window_bound(const Window<K> &W, K t, bool *exact, uint32_t from = 0, uint32_t span = UINT32_MAX)
{
	uint32_t	lo = from,
				len = umin32(W.n - from, span);

	if constexpr (GALLOP)
	{							/* on unique keys the answer is from or from +
								 * 1: one or two loads, no loop */
		if (len > 0 && (LE ? W.w[lo] <= t : W.w[lo] < t))
		{
			lo++;
			len--;
			if (len > 0 && (LE ? W.w[lo] <= t : W.w[lo] < t))
			{
				lo++;
				len--;
				for (uint32_t step = 1; step < len; step <<= 1)
				{				/* gallop: the answer is often close */
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
			}
		}
	}
	else if (len > 0)
	{							/* the answer lies in [lo, lo + len]: first a
								 * power of two of it, then halves */
		const K    *w = W.w + from;
		uint32_t	step = 1u << (31 - __clz(len)),
					at = 0;

		if (step < len)
		{
			K			k = w[len - step - 1];

			at = (LE ? k <= t : k < t) ? len - step : 0;
		}
		for (step >>= 1; step > 0; step >>= 1)
		{
			K			k = w[at + step - 1];

			at = (LE ? k <= t : k < t) ? at + step : at;
		}
		{
			K			k = w[at];

			lo = from + at + ((LE ? k <= t : k < t) ? 1 : 0);
		}
	}
	return window_place<K, LE>(W, t, exact, lo);
}

/*
 * window_bound over exactly [from, from + 2^J] (from + 2^J <= W.n), the
 * answer known to lie there: J steps unrolled (an address, a load, a
 * compare and a select each) and a last compare, where the loop of
 * window_bound takes twice the instructions (ncu, H100, 2026-11-26: the
 * stream kernel's row search was 67 of 342 instructions a row of sorted
 * int32 probes, 7 steps of 9).
 */
template <class K, bool LE, int J>
__device__ __forceinline__ uint64_t
window_bound_fixed(const Window<K> &W, K t, bool *exact, uint32_t from)
{
	const K    *w = W.w + from;
	uint32_t	at = 0;

#pragma unroll
	for (uint32_t step = 1u << (J - 1); step > 0; step >>= 1)
	{
		K			k = w[at + step - 1];

		at = (LE ? k <= t : k < t) ? at + step : at;
	}
	{
		K			k = w[at];

		at += (LE ? k <= t : k < t) ? 1 : 0;
	}
	return window_place<K, LE>(W, t, exact, from + at);
}

/*
 * lower_bound of t in the window where it lies at or below index hi and
 * usually just below (a predecessor's run start, hi its last entry):
 * galloping down from hi, then halving the last step, so that a run of L
 * entries takes about 2 log L loads instead of log hi.
 */
template <class K>
__device__ __forceinline__ uint64_t
window_run_start(const Window<K> &W, K t, bool *exact, uint32_t hi)
{
	uint32_t	step = 1;

	for (;;)
	{
		if (step > hi)
			return window_bound<K, false>(W, t, exact, 0, hi);
		if (W.w[hi - step] < t)
			return window_bound<K, false>(W, t, exact, hi - step + 1, step - 1);
		hi -= step;
		step <<= 1;
	}
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
 * Whether the first bound of window_answer (lower_bound of t, or
 * upper_bound with LE) lies in [from, from + len] (a row hint, len > 0):
 * the key before `from` is below t (at most t) and the key at from + len
 * is not, where they are in the window.
 */
template <class K, bool LE>
__device__ __forceinline__ bool
hint_holds(const Window<K> &W, K t, uint32_t from, uint32_t len)
{
	bool		in = len > 0;

	if (in && from > 0)
	{
		K			k = W.w[from - 1];

		in = LE ? k <= t : k < t;
	}
	if (in && from + len < W.n)
	{
		K			k = W.w[from + len];

		in = !(LE ? k <= t : k < t);
	}
	return in;
}

#define HINT_FIXED_BITS	7			/* a row hint's search unrolled: 128
									 * places (a sorted row of 32 probes over
									 * as many keys hints 104) */

/*
 * window_bound over [hfrom, hfrom + hlen] where that hint holds (hlen > 0),
 * else over the whole window (and *held turns false when there was a hint):
 * one search either way.  *at (when not NULL) gets the bound's place in
 * the window.
 */
template <class K, bool LE>
__device__ __forceinline__ uint64_t
hinted_bound(const Window<K> &W, K t, bool *exact, uint32_t hfrom, uint32_t hlen, uint32_t *at,
			 bool *held)
{
	bool		in = hint_holds<K, LE>(W, t, hfrom, hlen);

	if (!in && hlen > 0 && held)
		*held = false;

	/* a hint of up to 2^HINT_FIXED_BITS places: that many, unrolled (the
	 * answer lies in the hint's part of them) */
	uint64_t	b = in && hlen <= (1u << HINT_FIXED_BITS) && hfrom + (1u << HINT_FIXED_BITS) <= W.n ?
		window_bound_fixed<K, LE, HINT_FIXED_BITS>(W, t, exact, hfrom) :
		window_bound<K, LE>(W, t, exact, in ? hfrom : 0, in ? hlen : UINT32_MAX);

	if (at)
		*at = (uint32_t) (b - W.base);
	return b;
}

/*
 * Answer one probe from the window: the cases of answer() (gpu_btree_search.cuh)
 * with lower_bound / upper_bound read off the window.  False when an answer
 * may lie outside it (then the probe descends instead); a window holding all
 * of tile_bounds()'s leaves answers every probe of its tile.  A row hint
 * (hfrom, hlen; hlen 0: none) narrows the first bound's search to [hfrom,
 * hfrom + hlen] where hint_holds (else *held turns false); *at (when not
 * NULL) gets that bound's place in the window (point and successor: of the
 * first entry, predecessor: after the last), for the next row's hint.  A
 * predecessor's first entry is the one its last entry's key starts at:
 * found by one load where the key before differs (unique keys), else by a
 * search bounded by it.
 */
template <class K>
__device__ __forceinline__ bool
window_answer(const TreeDev<K> &T, const Window<K> &W, int op, int64_t p, int64_t ph,
			  uint64_t &f, uint64_t &l, uint32_t hfrom = 0, uint32_t hlen = 0, uint32_t *at = NULL,
			  bool *held = NULL)
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
		f = hinted_bound<K, false>(W, t, &ok, hfrom, hlen, at, held);
		if (op == GI_OP_SUCC)
			t = window_key(W, f, &ok);
		l = ok ? window_bound<K, true, true>(W, t, &ok, (uint32_t) (f - W.base)) : 0;
	}
	else if (op == GI_OP_PRED)
	{
		if (p < KMIN)
			return true;
		K			t = clamp_to_key<K>(p);

		l = hinted_bound<K, true>(W, t, &ok, hfrom, hlen, at, held);
		if (l == 0)
			return ok;
		K			k = window_key(W, l - 1, &ok);

		if (ok)
		{
			uint32_t	r = (uint32_t) (l - 1 - W.base);	/* k's last entry */

			if (r > 0 && W.w[r - 1] < k)
				f = l - 1;		/* k once (the key before differs) */
			else if (r > 0)
				f = window_run_start<K>(W, k, &ok, r - 1);	/* k's run ends at r */
			else
				f = window_bound<K, false>(W, k, &ok, 0, 0);	/* may start before the window */
		}
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
 * upper_bound(hi) (at the end of the smallest key above hi's run).  TOP
 * (for callers that need no *S: it stays the root): every descent starts
 * at the node its key's top table bucket names (top_start), which skips
 * the levels above it.
 */
template <class K, bool DYN, bool TOP = false>
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
	if constexpr (TOP)
		descend<K, GB, false, DYN>(T, t, g, L, top_start<K, DYN>(T, GI_OP_POINT, (int64_t) t));
	else
		descend<K, GB, false, DYN, true>(T, t, g, L, Start{0, 0}, S);
	li = L.li;
	if (!high && op == GI_OP_PRED)
	{							/* back to the run of the largest key < lo,
								 * unless lo is a key: then no probe of the
								 * tile reads before lower_bound(lo) (over
								 * lognormal keys the run before is often
								 * thousands long, and the sample found
								 * such tiles wide) */
		uint32_t	c = leaf_rank<K, GB, KPT, false>(L, lo, g);
		bool		lo_is_key = leaf_rank<K, GB, KPT, true>(L, lo, g) > c;

		if (!lo_is_key && (c > 0 || li > 0))
		{
			K			below = c ? leaf_key<K, DYN>(T, li, c - 1) :
				leaf_key<K, DYN>(T, li - 1, leaf_size<K, DYN>(T, li - 1) - 1);

			if (c == 0 || leaf_rank<K, GB, KPT, false>(L, below, g) == 0)
			{
				descend<K, GB, false, DYN>(T, below, g, L,
										   TOP ? top_start<K, DYN>(T, GI_OP_POINT, (int64_t) below) : Start{0, 0});
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
			descend<K, GB, false, DYN>(T, (K) (above + 1), g, L,
									   TOP ? top_start<K, DYN>(T, GI_OP_POINT, (int64_t) above + 1) : Start{0, 0});
			li = L.li;
		}
	}
	__syncwarp();
	*li0 = __shfl_sync(0xffffffffu, li, 0);
	*li1 = __shfl_sync(0xffffffffu, li, GB);
}

/*
 * Copy leaves li0 .. li1 into the warp's shared memory, compacted: 16
 * bytes a lane at a time (a leaf is NODE_BYTES / 16 lanes' loads), two
 * loads in flight a lane before either is stored.
 */
template <class K, bool DYN>
__device__ __forceinline__ Window<K>
stage_leaves(const TreeDev<K> &T, K *w, uint32_t li0, uint32_t li1)
{
	constexpr int M = NODE_BYTES / sizeof(K);
	constexpr int V = 16 / sizeof(K);	/* keys a load */
	constexpr int LPL = M / V;	/* loads a leaf */
	int			lane = threadIdx.x & 31;
	Window<K>	W;

	W.w = w;
	W.base = leaf_start<K, DYN>(T, li0);
	W.n = (uint32_t) (leaf_start<K, DYN>(T, li1) + leaf_size<K, DYN>(T, li1) - W.base);
	W.open_lo = li0 == 0;
	W.open_hi = li1 == T.nleaves - 1;
	W.before = W.open_lo ? T.kmin : leaf_key<K, DYN>(T, li0 - 1, leaf_size<K, DYN>(T, li0 - 1) - 1);
	W.after = W.open_hi ? T.kmax : leaf_key<K, DYN>(T, li1 + 1, 0);

	uint32_t	total = (li1 - li0 + 1) * LPL;

	for (uint32_t s0 = 0; s0 < total; s0 += 64)
	{
		uint4		v[2];

#pragma unroll
		for (int u = 0; u < 2; u++)
		{
			uint32_t	s = s0 + u * 32 + lane;
			uint32_t	li = li0 + s / LPL;

			if (s < total)
				v[u] = ld16((DYN ? dyn_leaf(T, li) : T.leaves + (size_t) li * M) + (s % LPL) * V);
		}
#pragma unroll
		for (int u = 0; u < 2; u++)
		{
			uint32_t	s = s0 + u * 32 + lane;
			uint32_t	li = li0 + s / LPL,
						j = (s % LPL) * V;

			if (s < total)
			{
				K			k[V];
				uint32_t	size = leaf_size<K, DYN>(T, li);
				K		   *to = w + (leaf_start<K, DYN>(T, li) - W.base) + j;

				memcpy(k, &v[u], sizeof(k));
#pragma unroll
				for (int q = 0; q < V; q++)
					if (j + q < size)
						to[q] = k[q];
			}
		}
	}
	__syncwarp();
	return W;
}

/*
 * The leaves of a narrow tile found from leaf c, the last the warp's
 * previous tile staged, without a descent: lane k reads the first key of
 * leaf c + k; *li0 is the last of them whose first key is below lo (it
 * holds lower_bound(lo) or ends just before it, and the largest key below
 * lo), *li1 the last whose first key is at most hi (it holds
 * upper_bound(hi) or ends just before it), one more for a successor (the
 * run after hi).  A sorted batch's tiles follow one another over the
 * leaves, so this is one load where tile_bounds takes one a level.  False
 * (the caller descends) when lo is not above leaf c's first key or hi lies
 * past the 32 leaves read.  What the window then misses at its edges (a
 * predecessor's run of duplicates reaching back before li0, say),
 * window_answer declines, and those probes descend.
 */
template <class K, bool DYN>
__device__ __forceinline__ bool
tile_slide(const TreeDev<K> &T, int op, uint32_t c, K lo, K hi, uint32_t *li0, uint32_t *li1)
{
	uint32_t	lane = threadIdx.x & 31,
				li = c + lane;
	bool		in = li < T.nleaves;
	K			first = in ? leaf_key<K, DYN>(T, li, 0) : T.kmax;
	uint32_t	below = __popc(__ballot_sync(0xffffffffu, in && first < lo)),
				upto = __popc(__ballot_sync(0xffffffffu, in && first <= hi));

	if (below == 0 || (upto == 32 && c + 32 < T.nleaves))
		return false;
	*li0 = c + below - 1;
	*li1 = c + upto - 1;
	if (op == GI_OP_SUCC && *li1 + 1 < T.nleaves)
		(*li1)++;
	return true;
}

/*
 * The smallest and largest key (clamped to the type, then to [kmin, kmax])
 * of the cnt probes (and range ends) at base: a warp reduction.  With
 * in_order, also whether the probes (not the range ends) are nondecreasing:
 * each lane compares its probe with the one before it (the lane below, or
 * lane 31 of the row before), so the check costs a shuffle a row.  Every
 * row's load is issued before the first is used: the tile's probes come
 * from memory in one latency, not one a row (a loop of loads and uses was
 * a fifth of the stalls of the tiled kernel on sorted batches).
 */
template <class K>
__device__ __forceinline__ void
tile_span(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
		  uint64_t base, uint32_t cnt, K *lo_out, K *hi_out, bool *in_order = nullptr)
{
	constexpr int ROWS = TILE_PROBES / 32;
	const uint32_t lane = threadIdx.x & 31;
	K			lo = (K) KeyLimits<K>::hi,
				hi = (K) KeyLimits<K>::lo;
	int64_t		v[ROWS];
	int64_t		row_last = INT64_MIN;	/* the previous row's last probe */
	bool		ordered = true;

#pragma unroll
	for (int r = 0; r < ROWS; r++)
	{
		uint32_t	i = r * 32 + lane;

		v[r] = i < cnt ? probes[base + i] : INT64_MAX;
	}
#pragma unroll
	for (int r = 0; r < ROWS; r++)
	{							/* uniform trip count: the shuffles need every lane */
		if (in_order)
		{
			int64_t		before = __shfl_up_sync(0xffffffffu, v[r], 1);

			ordered &= (lane == 0 ? row_last : before) <= v[r];
			row_last = __shfl_sync(0xffffffffu, v[r], 31);
		}
		if (r * 32 + lane < cnt)
		{
			K			t = clamp_to_key<K>(v[r]);

			lo = t < lo ? t : lo;
			hi = t > hi ? t : hi;
		}
	}
	if (op == GI_OP_RANGE)
	{
#pragma unroll
		for (int r = 0; r < ROWS; r++)
		{
			uint32_t	i = r * 32 + lane;

			v[r] = i < cnt ? probes_hi[base + i] : 0;
		}
#pragma unroll
		for (int r = 0; r < ROWS; r++)
			if (r * 32 + lane < cnt)
			{
				K			t = clamp_to_key<K>(v[r]);

				lo = t < lo ? t : lo;
				hi = t > hi ? t : hi;
			}
	}
	lo = warp_extreme<K, false>(lo);
	hi = warp_extreme<K, true>(hi);
	*lo_out = clamp_to_tree<K>(T, lo);
	*hi_out = clamp_to_tree<K>(T, hi);
	if (in_order)
		*in_order = __all_sync(0xffffffffu, ordered);
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
 * Which answered probe a row's duplicates may copy: the probe (and range
 * end) of the last pending lane of an earlier row of the tile, and its
 * index, once its answer is written.  One a warp, in shared memory (it
 * would cost the tiled kernel registers it has none of), written by one
 * lane between __syncwarp()s.
 */
struct RowCarry
{
	bool		valid;
	int64_t		p,
				ph;
	uint64_t	at;
};

/* Forget the carried probe (a new tile). */
__device__ __forceinline__ void
carry_reset(RowCarry *carry)
{
	__syncwarp();
	if ((threadIdx.x & 31) == 0)
		carry->valid = false;
	__syncwarp();
}

/*
 * For the pending lanes of a row (need), which copy an answer instead of
 * descending (the result) and, for this lane, where from (*src): a lane
 * whose probe (and range end) equals *carry's copies it, and one equal to
 * a lower pending lane's copies that lane's.  The first pending lane of
 * each set of equal probes copies nothing.
 */
__device__ __forceinline__ uint32_t
row_copies(int op, const int64_t *probes, const int64_t *probes_hi, uint64_t row, uint32_t need,
		   const RowCarry *carry, uint64_t *src, int64_t *p_out, int64_t *ph_out)
{
	const uint32_t lane = threadIdx.x & 31;
	bool		mine = (need >> lane) & 1;
	int64_t		p = mine ? probes[row + lane] : 0;
	int64_t		ph = mine && op == GI_OP_RANGE ? probes_hi[row + lane] : 0;
	uint32_t	same = __match_any_sync(0xffffffffu, (unsigned long long) p);

	if (op == GI_OP_RANGE)
		same &= __match_any_sync(0xffffffffu, (unsigned long long) ph);
	same &= need;

	uint32_t	from = (uint32_t) __ffs(same) - 1;	/* lowest equal pending lane */
	bool		from_carry = mine && carry->valid && p == carry->p && ph == carry->ph;

	*src = from_carry ? carry->at : row + from;
	*p_out = p;
	*ph_out = ph;
	return __ballot_sync(0xffffffffu, mine && (from_carry || from != lane));
}

/*
 * The probes of one row (bit j of need: the probe at row + j) that a window
 * could not answer descend from S, 32 / G at a time: group k of the warp
 * takes the k-th pending lane of the round.  With carry (dedup on), only
 * the first pending lane of each set of equal probes (equal range ends
 * too, for GI_OP_RANGE) descends; the others, and those equal to the probe
 * *carry names, copy its answer once it is written (__syncwarp orders the
 * warp's writes and reads), and *carry moves on to the row's last pending
 * probe.  A sorted tile inside one key's run of duplicates longer than a
 * window (the int32 lognormal keys of bench/kernel: at 10^8 keys most sit
 * in runs of hundreds to thousands) then costs one answer() instead of one
 * a probe.  Which lanes copy is found again after the descents rather than
 * kept through them (registers).
 */
template <class K, int G, bool DYN>
__device__ __forceinline__ void
row_descend(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
			uint64_t row, uint32_t need, Start S, uint64_t *first, uint64_t *last,
			RowCarry *carry)
{
	int			lane = threadIdx.x & 31;
	Group		g = make_group<G>(lane);
	const uint32_t all = need;

	if (carry)
	{
		uint64_t	src;
		int64_t		p,
					ph;

		need &= ~row_copies(op, probes, probes_hi, row, all, carry, &src, &p, &ph);
	}
	while (need)
	{
		uint32_t	src_lane = __fns(need, 0, lane / G + 1);

		if (src_lane < 32)
		{
			uint64_t	i = row + src_lane,
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
	if (carry)
	{
		uint64_t	src;
		int64_t		p,
					ph;
		int			tail = 31 - __clz(all);	/* all != 0: the callers' */

		__syncwarp();			/* the descents' answers are written */
		uint32_t	copy = row_copies(op, probes, probes_hi, row, all, carry, &src, &p, &ph);

		if ((copy >> lane) & 1)
		{
			first[row + lane] = first[src];
			last[row + lane] = last[src];
		}
		__syncwarp();			/* the copies too; every lane has read *carry */
		if (lane == tail)
		{
			carry->valid = true;
			carry->p = p;
			carry->ph = ph;
			carry->at = row + lane;
		}
		__syncwarp();
	}
}

/*
 * The probes of a tile the window could not answer (bit j of pending: the
 * lane's probe lane + 32 j) descend from S, row by row (row_descend;
 * carry: NULL or the warp's, for dedup).
 */
template <class K, int G, bool DYN>
__device__ __forceinline__ void
descend_pending(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
				uint64_t base, uint32_t pending, Start S, uint64_t *first, uint64_t *last,
				RowCarry *carry)
{
	if (carry)
		carry_reset(carry);
	for (int j = 0; j < TILE_PROBES / 32; j++)
	{
		uint32_t	need = __ballot_sync(0xffffffffu, (pending >> j) & 1);

		if (need)
			row_descend<K, G, DYN>(T, op, probes, probes_hi, base + 32 * j, need, S, first, last,
								   carry);
	}
}

/*
 * The run search of a tile: its probes in rows of 32, one a lane, answered
 * from a window of leaves the warp keeps in shared memory (W, valid when
 * *have) from row to row and from tile to tile, so that a run of probes in
 * order streams probes, leaves and answers.  A row first asks the window
 * it inherits.  The lanes it cannot answer (their answer lies outside it)
 * reduce their keys' span; when that span is narrow and its leaves
 * (tile_bounds) number under RUN_SPARSE windows, the warp stages the
 * window anew from the first of them, max_leaves leaves forward (a run in
 * order goes on there), and asks again, up to RUN_RESTAGES times a row.
 * *W lives in shared memory (one a warp), written by lane 0.
 * What is left (a sparse or wide span) descends per probe from the deepest
 * node the span's bounds share (the root when none was found), equal
 * probes once with carry (dedup on; row_descend).  Answers are
 * those of answer() to the letter: window_answer() declines whatever the
 * window cannot prove.
 */
#define RUN_RESTAGES	3			/* window restages a row at most */
#define RUN_SPARSE		2			/* restage only for spans of fewer leaves
									 * than this many windows */
template <class K, int G, bool DYN>
__device__ __forceinline__ void
run_tile(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
		 uint64_t base, uint32_t cnt, K *w, uint32_t max_leaves, Window<K> *W, bool *have,
		 uint64_t *first, uint64_t *last, RowCarry *carry)
{
	const uint32_t lane = threadIdx.x & 31;

	if (carry)
		carry_reset(carry);

	for (uint32_t r = 0; r < cnt; r += 32)
	{
		uint64_t	i = base + r + lane;
		bool		valid = r + lane < cnt;
		int64_t		p = valid ? probes[i] : 0;
		int64_t		ph = valid && op == GI_OP_RANGE ? probes_hi[i] : 0;
		uint64_t	f = 0,
					l = 0;
		bool		done = !valid;
		Start		S = {0, 0};

		if (*have && valid)
			done = window_answer<K>(T, *W, op, p, ph, f, l);
		uint32_t	need = __ballot_sync(0xffffffffu, !done);

		for (int pass = 0; need && pass < RUN_RESTAGES; pass++)
		{
			K			lo = (K) KeyLimits<K>::hi,
						hi = (K) KeyLimits<K>::lo;
			uint32_t	li0,
						li1;

			if (!done)
			{
				K			t = clamp_to_key<K>(p);

				lo = hi = t;
				if (op == GI_OP_RANGE)
				{
					t = clamp_to_key<K>(ph);
					lo = t < lo ? t : lo;
					hi = t > hi ? t : hi;
				}
			}
			lo = warp_extreme<K, false>(lo);
			hi = warp_extreme<K, true>(hi);
			lo = clamp_to_tree<K>(T, lo);
			hi = clamp_to_tree<K>(T, hi);
			if (!tile_narrow<K>(T, lo, hi))
				break;
			tile_bounds<K, DYN>(T, op, lo, hi, &S, &li0, &li1);
			if (li1 - li0 >= RUN_SPARSE * max_leaves)
				break;			/* sparse: a window would answer few */
			__syncwarp();		/* every lane is done with the old window */
			Window<K>	nw = stage_leaves<K, DYN>(T, w, li0, std::min(T.nleaves - 1, li0 + max_leaves - 1));

			if (lane == 0)
				*W = nw;
			__syncwarp();
			*have = true;
			if (!done)
				done = window_answer<K>(T, *W, op, p, ph, f, l);
			need = __ballot_sync(0xffffffffu, !done);
		}
		if (valid && done)
		{
			first[i] = f;
			last[i] = l;
		}
		if (need)
			row_descend<K, G, DYN>(T, op, probes, probes_hi, base + r, need, S, first, last,
								   carry);
	}
}

/*
 * The tiled search kernel: warp w takes the w-th of nwarps equal stretches
 * of consecutive tiles (a run in order stays with one warp, window and
 * all); a tile of the probes (and range ends) at base .. base +
 * TILE_PROBES - 1 is answered by the paths of the file comment, or by the
 * run search (run_tile) when run says so: 0 for narrow tiles whose probes
 * are in order, 1 for every narrow tile, -1 never.  max_leaves caps what a
 * tile stages (0: never, and no run search).  DEDUP: equal probes that
 * descend do so once a row (row_descend; an instantiation of its own, so
 * that the kernel without it keeps its registers).  gate: run only when
 * GATE_IS_TILES(*gate) (the sample chose tiles; NULL: always).  MIN_BLOCKS: the
 * blocks an SM must fit, the launch bound that caps the registers
 * (GiGpuPolicy.tile_min_blocks); the shared memory a block takes (the
 * staging windows) is the same for every value, and the launch sizes the
 * grid from the instance's own occupancy (tile_grid).
 */
template <class K, int G, bool DYN, bool DEDUP, int MIN_BLOCKS>
__global__ void __launch_bounds__(TILE_WARPS * 32, MIN_BLOCKS)
btree_tile_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
				  uint64_t count, uint64_t *first, uint64_t *last, uint32_t max_leaves,
				  int run, const int *gate)
{
	extern __shared__ uint4 tile_smem[];
	constexpr int M = NODE_BYTES / sizeof(K);
	int			lane = threadIdx.x & 31;
	K		   *w = reinterpret_cast<K *>(tile_smem) + (threadIdx.x >> 5) * (TILE_MAX_LEAVES * M);
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t	nwarps = ((uint64_t) gridDim.x * blockDim.x) >> 5;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	__shared__ Window<K> run_windows[TILE_WARPS];	/* (warp-uniform: kept out
														 * of registers) */
	Window<K>  *W = &run_windows[threadIdx.x >> 5];
	__shared__ RowCarry row_carries[TILE_WARPS];
	RowCarry   *carry = DEDUP ? &row_carries[threadIdx.x >> 5] : nullptr;
	bool		have = false;	/* *W holds the run search's window */

	if (gate && !GATE_IS_TILES(*gate))
		return;
	for (uint64_t tile = warp * tiles / nwarps; tile < (warp + 1) * tiles / nwarps; tile++)
	{
		uint64_t	base = tile * TILE_PROBES;
		uint32_t	cnt = (uint32_t) std::min<uint64_t>(count - base, TILE_PROBES);
		uint32_t	pending = 0;
		K			lo,
					hi;
		bool		ordered = false;
		Start		S = {0, 0};
		uint32_t	li0 = 1,
					li1 = 0;

		tile_span<K>(T, op, probes, probes_hi, base, cnt, &lo, &hi, run == 0 ? &ordered : nullptr);
		bool		narrow = tile_narrow<K>(T, lo, hi);

		if (narrow && max_leaves > 0 && (run > 0 || (run == 0 && ordered)))
		{
			run_tile<K, G, DYN>(T, op, probes, probes_hi, base, cnt, w, max_leaves, W, &have,
								first, last, carry);
			__syncwarp();
			continue;
		}
		have = false;			/* the paths below stage over the window */
		if (narrow)
			tile_bounds<K, DYN>(T, op, lo, hi, &S, &li0, &li1);
		if (li1 >= li0 && max_leaves > 0 && li1 - li0 < 4 * max_leaves)
		{						/* the first max_leaves of the tile's leaves
								 * (none when they would answer few probes) */
			Window<K>	TW = stage_leaves<K, DYN>(T, w, li0, std::min(li1, li0 + max_leaves - 1));
			uint32_t	j = 0;

			for (uint32_t i = lane; i < cnt; i += 32, j++)
			{
				uint64_t	f,
							l;

				if (window_answer<K>(T, TW, op, probes[base + i],
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
		descend_pending<K, G, DYN>(T, op, probes, probes_hi, base, pending, S, first, last, carry);
		__syncwarp();
	}
}

#define TILE_NARROW		0			/* sample_class: a tile for the tiled search */
#define TILE_LOCAL		1			/* leaves shared with its neighbours */
#define TILE_SCATTERED	2			/* a leaf a probe, like a random batch */
#define SCATTER_LEAVES	4096		/* tiles over more leaves are scattered */

/*
 * What the tile of cnt probes (and range ends) at base is, for the sample:
 * narrow when its keys span at most half of the tree's key span
 * (tile_narrow) and, unless max_leaves is 0, lie in less than max_leaves
 * leaves (tile_bounds: by rank, so that a skewed key distribution, whose
 * long tail makes every tile look narrow by key span, is judged by where
 * its keys fall), or when every probe of it is one (not ranges); else
 * scattered when they span more than half of the key span or
 * SCATTER_LEAVES leaves or more, else local.  Every load of a lane
 * is issued before the first is used (the sample's time is a few memory
 * latencies, not one a row: it sits in front of every sampled batch).
 */
template <class K, bool DYN>
__device__ __forceinline__ int
sample_class(const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *probes_hi,
			  uint64_t base, uint32_t cnt, uint32_t max_leaves)
{
	constexpr int ROWS = TILE_PROBES / 32;
	const uint32_t lane = threadIdx.x & 31;
	int64_t		v[ROWS],
				vh[ROWS];
	K			lo = (K) KeyLimits<K>::hi,
				hi = (K) KeyLimits<K>::lo;

#pragma unroll
	for (int r = 0; r < ROWS; r++)
	{
		uint32_t	i = r * 32 + lane;

		v[r] = i < cnt ? probes[base + i] : probes[base];
		vh[r] = op == GI_OP_RANGE ? (i < cnt ? probes_hi[base + i] : probes_hi[base]) : v[r];
	}
	if (op != GI_OP_RANGE)
	{							/* one probe throughout: however long its
								 * key's run, the stream kernels answer the
								 * tile's rows from the carry after the
								 * first (int32 lognormal keys at 10^8: the
								 * smallest keys' third of a sorted batch) */
		int64_t		p0 = __shfl_sync(0xffffffffu, v[0], 0);
		bool		one = true;

#pragma unroll
		for (int r = 0; r < ROWS; r++)
			one &= v[r] == p0;
		if (__all_sync(0xffffffffu, one))
			return TILE_NARROW;
	}
#pragma unroll
	for (int r = 0; r < ROWS; r++)
	{
		K			a = clamp_to_key<K>(v[r]),
					b = clamp_to_key<K>(vh[r]);

		lo = a < lo ? a : lo;
		hi = a > hi ? a : hi;
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
	}
	lo = warp_extreme<K, false>(lo);
	hi = warp_extreme<K, true>(hi);
	lo = clamp_to_tree<K>(T, lo);
	hi = clamp_to_tree<K>(T, hi);
	if (!tile_narrow<K>(T, lo, hi))
		return TILE_SCATTERED;
	if (max_leaves == 0)
		return TILE_NARROW;

	Start		S;
	uint32_t	li0,
				li1;

	tile_bounds<K, DYN>(T, op, lo, hi, &S, &li0, &li1);
	return li1 < li0 + max_leaves ? TILE_NARROW :
		li1 < li0 + SCATTER_LEAVES ? TILE_LOCAL : TILE_SCATTERED;
}

/*
 * The sample that picks the kernel for a batch: one block of SAMPLE_WARPS
 * warps looks at up to SAMPLE_TILES tiles spread over it (two a warp) and
 * sets *gate to GATE_TILES (tiled search; GATE_TILES_RUNS where a
 * quarter of the sampled rows of 32 probes repeat one probe), else to
 * GATE_SCATTERED when at least half of the sampled tiles are scattered
 * (the per-probe kernel, whose thread search may then guess leaf sectors:
 * TreeDev.guess_sampled) or GATE_PER_PROBE (the per-probe kernel, without
 * the guess: its leaves are often in cache already).  sample_leaves
 * (GiGpuPolicy.sample_leaves): >= 0, tiles when at least half of the
 * sampled tiles lie in at most that many leaves (0: TILE_MAX_LEAVES, the
 * staging window); -1, the rule measured until 2026-11-26: tiles when one
 * in eight spans at most half of the key span.  On the H100 (2026-11-26)
 * the old rule sent random batches over lognormal keys to the tiled search
 * (0.74x the per-probe kernel) and sparse sorted ones (10^6 probes over
 * 10^7 keys: each tile ~80 leaves) to tiles that descend a probe at a time.
 */
#define SAMPLE_TILES	64
#define SAMPLE_WARPS	32
template <class K, bool DYN>
__global__ void __launch_bounds__(SAMPLE_WARPS * 32)
tile_sample_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
				   uint64_t count, uint64_t seg, int sample_leaves, int *gate)
{
	__shared__ int narrow,
				scattered,
				repeats;
	uint64_t	from = (uint64_t) blockIdx.x * seg;	/* block b: segment b */

	probes += from;
	if (probes_hi)
		probes_hi += from;
	count = std::min<uint64_t>(count - from, seg);
	gate += blockIdx.x;

	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	sampled = std::min<uint64_t>(tiles, SAMPLE_TILES);
	uint32_t	max_leaves = sample_leaves < 0 ? 0 : sample_leaves == 0 ? TILE_MAX_LEAVES :
		(uint32_t) sample_leaves;

	if (threadIdx.x == 0)
		narrow = scattered = repeats = 0;
	__syncthreads();
	for (uint64_t k = threadIdx.x >> 5; k < sampled; k += SAMPLE_WARPS)
	{
		uint64_t	base = k * tiles / sampled * TILE_PROBES;
		uint32_t	cnt = (uint32_t) std::min<uint64_t>(count - base, TILE_PROBES);
		int			c = sample_class<K, DYN>(T, op, probes, probes_hi, base, cnt, max_leaves);
		uint32_t	lane = threadIdx.x & 31,
					row = lane * 32;	/* lanes 0-7: the tile's rows */
		bool		same = lane < TILE_PROBES / 32 && row + 31 < cnt &&
			probes[base + row] == probes[base + row + 31];
		uint32_t	rep = __popc(__ballot_sync(0xffffffffu, same));

		if (lane == 0 && c != TILE_LOCAL)
			atomicAdd(c == TILE_NARROW ? &narrow : &scattered, 1);
		if (lane == 0 && rep)
			atomicAdd(&repeats, (int) rep);
	}
	__syncthreads();
	if (threadIdx.x == 0)
	{
		bool		tiles_on = (sample_leaves < 0 ? narrow * 8 : narrow * 2) >= (int) sampled;

		/* a quarter of the sampled rows one probe 32 times over (int32
		 * keys, not ranges: btree_stream_kernel's ROW_COPY) */
		bool		runs = STREAM_ROWS(K) && op != GI_OP_RANGE &&
			(uint64_t) repeats * 4 >= sampled * (TILE_PROBES / 32);

		*gate = tiles_on ? (runs ? GATE_TILES_RUNS : GATE_TILES) :
			scattered * 2 >= (int) sampled ? GATE_SCATTERED : GATE_PER_PROBE;
	}
}

/* Blocks a grid of kernel holds at most: those that fit an SM at once
 * (registers, shared memory), times the SMs; *cached keeps the count (one
 * a kernel instantiation: threads querying at once share it). */
template <class Kernel>
int
resident_grid(Kernel kernel, int threads, size_t smem, std::atomic<int> *cached)
{
	int			blocks = cached->load(std::memory_order_relaxed);

	if (!blocks)
	{
		int			per_sm = 0;

		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess ||
			per_sm < 1)
		{
			(void) cudaGetLastError();
			per_sm = 2;
		}
		blocks = per_sm * gi_gpu_sm_count();
		cached->store(blocks, std::memory_order_relaxed);
	}
	return blocks;
}

/* Blocks the grid of one instantiation of the tiled kernel holds at most. */
template <class K, int G, bool DYN, bool DEDUP, int MIN_BLOCKS>
int
tile_grid(size_t smem)
{
	static std::atomic<int> cached(0);

	return resident_grid(btree_tile_kernel<K, G, DYN, DEDUP, MIN_BLOCKS>, TILE_WARPS * 32, smem, &cached);
}

/* Launch one instance of the tiled kernel, its grid no larger than what
 * fits the device at once (each warp then takes a stretch of tiles).  Not
 * static: the instances for 2 and 3 blocks an SM are compiled in units of
 * their own (TILE_BLOCK_INSTANCES). */
template <class K, int G, bool DYN, bool DEDUP, int MIN_BLOCKS>
GiStatus
launch_tile_instance(const TreeDev<K> &T, cudaStream_t st, int op, const int64_t *probes,
					 const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last,
					 uint32_t max_leaves, int run, const int *gate, GiError *err)
{
	size_t		smem = (size_t) TILE_WARPS * TILE_MAX_LEAVES * NODE_BYTES;
	uint64_t	tiles = (count + TILE_PROBES - 1) / TILE_PROBES;
	uint64_t	want = (tiles + TILE_WARPS - 1) / TILE_WARPS;
	unsigned	grid = (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1),
													 tile_grid<K, G, DYN, DEDUP, MIN_BLOCKS>(smem));

	btree_tile_kernel<K, G, DYN, DEDUP, MIN_BLOCKS><<<grid, TILE_WARPS * 32, smem, st>>>(
		T, op, probes, hi, count, first, last, max_leaves, run, gate);
	CKL("btree_tile_kernel");
	return GI_OK;
}

/*
 * The tiled kernel's instances for 2 and 3 blocks an SM (groups of 2, both
 * forms, with and without dedup), declared extern (EXT = extern) where the
 * search is instantiated, and instantiated (EXT empty) in a unit of their
 * own, cuda/gpu_btree_tile{32,64}_blocks.cu: each instance costs ptxas
 * about 4-5 s, and nvcc compiles the units side by side.
 */
#define TILE_INSTANCE(EXT, K, DYN, DEDUP, B) \
	EXT template GiStatus launch_tile_instance<K, 2, DYN, DEDUP, B>( \
		const TreeDev<K> &, cudaStream_t, int, const int64_t *, const int64_t *, uint64_t, \
		uint64_t *, uint64_t *, uint32_t, int, const int *, GiError *);
#define TILE_BLOCK_INSTANCES(EXT, K) \
	TILE_INSTANCE(EXT, K, false, false, 2) TILE_INSTANCE(EXT, K, false, true, 2) \
	TILE_INSTANCE(EXT, K, true, false, 2) TILE_INSTANCE(EXT, K, true, true, 2) \
	TILE_INSTANCE(EXT, K, false, false, 3) TILE_INSTANCE(EXT, K, false, true, 3) \
	TILE_INSTANCE(EXT, K, true, false, 3) TILE_INSTANCE(EXT, K, true, true, 3)

/* Launch the tiled kernel with or without dedup, for the register cap
 * min_blocks (2 or 3: groups of 2 only; anything else TILE_MIN_BLOCKS). */
template <class K, int G, bool DYN, bool DEDUP>
static GiStatus
launch_tile_blocks(const TreeDev<K> &T, cudaStream_t st, int op, const int64_t *probes,
				   const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last,
				   uint32_t max_leaves, int run, int min_blocks, const int *gate, GiError *err)
{
	static_assert(TILE_MIN_BLOCKS == 4, "TILE_BLOCK_INSTANCES holds the other values");
	if constexpr (G == 2)
	{
		if (min_blocks == 2)
			return launch_tile_instance<K, G, DYN, DEDUP, 2>(T, st, op, probes, hi, count, first, last,
															 max_leaves, run, gate, err);
		if (min_blocks == 3)
			return launch_tile_instance<K, G, DYN, DEDUP, 3>(T, st, op, probes, hi, count, first, last,
															 max_leaves, run, gate, err);
	}
	return launch_tile_instance<K, G, DYN, DEDUP, TILE_MIN_BLOCKS>(T, st, op, probes, hi, count, first,
																   last, max_leaves, run, gate, err);
}

/* Launch the tiled kernel for group size G, with or without dedup. */
template <class K, int G, bool DYN>
static GiStatus
launch_tile(const TreeDev<K> &T, cudaStream_t st, int op, const int64_t *probes,
			const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last,
			uint32_t max_leaves, int run, bool dedup, int min_blocks, const int *gate, GiError *err)
{
	if (dedup)
		return launch_tile_blocks<K, G, DYN, true>(T, st, op, probes, hi, count, first, last,
												   max_leaves, run, min_blocks, gate, err);
	return launch_tile_blocks<K, G, DYN, false>(T, st, op, probes, hi, count, first, last,
												max_leaves, run, min_blocks, gate, err);
}

/* The order sample of a batch alone (gpu_btree_search.cuh). */
template <class K, bool DYN>
GiStatus
gi_gpu_btree_order_sample(const TreeDev<K> &T, cudaStream_t st, int op,
						  const int64_t *probes, const int64_t *hi, uint64_t count,
						  uint64_t seg, int sample_leaves, int *gate, GiError *err)
{
	uint64_t	blocks = seg > 0 && count > seg ? (count + seg - 1) / seg : 1;

	tile_sample_kernel<K, DYN><<<(unsigned) blocks, SAMPLE_WARPS * 32, 0, st>>>(T, op, probes, hi, count,
																			   blocks > 1 ? seg : count,
																			   sample_leaves, gate);
	CKL("tile_sample_kernel");
	return GI_OK;
}

/* The tiled search of a batch (gpu_btree_search.cuh). */
template <class K, bool DYN>
GiStatus
gi_gpu_btree_tile_search(const TreeDev<K> &T, cudaStream_t st, int op,
						 const int64_t *probes, const int64_t *hi, uint64_t count,
						 uint64_t *first, uint64_t *last, int group, int window,
						 int run, bool dedup, int sample_leaves, int min_blocks, int *gate,
						 bool sample, GiError *err)
{
	uint32_t	max_leaves = window < 0 ? 0 : window == 0 ? TILE_MAX_LEAVES :
		(uint32_t) std::min(window, TILE_MAX_LEAVES);

	if (gate && sample)
		CKS((gi_gpu_btree_order_sample<K, DYN>(T, st, op, probes, hi, count, count, sample_leaves, gate,
												 err)));
	switch (group)
	{
		case 4:
			return launch_tile<K, 4, DYN>(T, st, op, probes, hi, count, first, last, max_leaves, run, dedup, min_blocks, gate, err);
		case 8:
			return launch_tile<K, 8, DYN>(T, st, op, probes, hi, count, first, last, max_leaves, run, dedup, min_blocks, gate, err);
		default:
			return launch_tile<K, 2, DYN>(T, st, op, probes, hi, count, first, last, max_leaves, run, dedup, min_blocks, gate, err);
	}
}

#endif							/* GPUIDX_GPU_BTREE_TILE_CUH */
