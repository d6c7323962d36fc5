/*
 * gpu_btree_search.cuh - the device half of the GPU B+ tree search, shared by
 * the per-probe search (cuda/gpu_btree.cu) and the tiled search of probe
 * runs (cuda/gpu_btree_tile.cuh): what a kernel knows of a tree (TreeDev),
 * node loads, the warp-group rank (ballot + __ffs + one min.u32, WCWS), the
 * descent (from the root or from a subtree a tile shares), and the answer of
 * one probe for every operation.  Internal to the GPU engine.
 */
#ifndef GPUIDX_GPU_BTREE_SEARCH_CUH
#define GPUIDX_GPU_BTREE_SEARCH_CUH

#include "gpu_btree.cuh"

#define IDX_BELOW		0x40000000u /* sorted probe was below INT32_MIN */
#define IDX_ABOVE		0x80000000u /* sorted probe was above INT32_MAX */
#define IDX_MASK		0x3fffffffu

/* What the order sample of a batch decided (tile_sample_kernel). */
#define GATE_PER_PROBE	0			/* the per-probe kernel */
#define GATE_TILES		1			/* the tiled search */
#define GATE_SCATTERED	2			/* the per-probe kernel; its probes are
									 * scattered over the leaves */
#define GATE_TILES_RUNS	3			/* the tiled search, its rows mostly
									 * repeating one probe: the stream
									 * kernel that copies them (ROWS) */
#define GATE_IS_TILES(g) ((g) == GATE_TILES || (g) == GATE_TILES_RUNS)
#define STREAM_ROWS(K) (sizeof(K) == 4)	/* the key width with a kernel of
										 * runs (not ranges): int32, whose
										 * carry lives in registers */
#define LEAF_WALK_DEFAULT(K) (sizeof(K) == 4)	/* GiGpuPolicy.leaf_walk 0; the
												 * stream and guessing kernels' */
#define GATE_MIN_DEFAULT (1u << 22)	/* smaller batches take the per-probe
										 * kernel without the sample
										 * (GiGpuPolicy.gate_min).  H100,
										 * 2026-11-26, with the thread
										 * search: at 10^6 probes the
										 * per-probe kernel was as fast as
										 * the sampled default or faster in
										 * all 72 rows of bench/kernel
										 * --paths (sorted and clustered
										 * batches included: up to 1.4x); at
										 * 10^8 the tiled search wins sorted
										 * batches (int32 10^8 keys: 45.8 vs
										 * 33.8 x 10^9 q/s).  Earlier: 2^18
										 * (groups of 2, at 10^5 probes);
										 * before that batches below 2^22 took
										 * the tiled search unsampled. */

/* ------------------------------------------------------------------------ */
/* Device helpers                                                            */
/* ------------------------------------------------------------------------ */

/* min(a, b) on unsigned 32-bit values as a single min.u32 instruction. */
__device__ __forceinline__ uint32_t
umin32(uint32_t a, uint32_t b)
{
	uint32_t	r;

	asm("min.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}

#define ARITH_LEVELS	12			/* internal levels a descent can compute
									 * children for (2^32 nodes of 16 need 9) */

/* What a search kernel needs to know of a tree. */
template <class K> struct TreeDev
{
	const K    *leaves;			/* nleaves * M keys: the padded leaves */
	const K    *nodes;			/* key region: inodes * M keys */
	const uint32_t *prefix;		/* inodes + 1 child prefix sums */
	uint64_t	n;
	uint64_t	leaf_ave;
	uint64_t	leaf_h;
	uint32_t	inodes;
	uint32_t	nleaves;
	int			nint;
	/*
	 * The internal levels' cut (both forms: geo_inner), for descents that
	 * compute a node's first child instead of loading prefix[node]: node g
	 * of level l is the j-th (j = g - lv_off[l]) and its children start at
	 * lv_off[l + 1] + gi_cut_start(j, lv_am1[l] + 1, lv_h[l]), exactly what
	 * build_level_kernel wrote to prefix[g].  arith: use them (nint <=
	 * ARITH_LEVELS).
	 */
	bool		arith;
	uint32_t	lv_off[ARITH_LEVELS + 1];	/* first node of level l */
	uint32_t	lv_am1[ARITH_LEVELS];	/* its cut's ave - 1 */
	uint32_t	lv_h[ARITH_LEVELS];	/* its cut's h */
	K			kmin;			/* the smallest key */
	K			kmax;			/* the largest key */
	bool		wide;			/* the thread search ranks in a leaf with
								 * wide_rank (whole-line loads), else with
								 * thread_leaf_rank (a binary search of
								 * loads); internal nodes always the latter */
	bool		guess;			/* unless wide: the thread search ranks in a
								 * leaf with guess_leaf_rank (a guessed
								 * sector first) where its parent's search
								 * read both separators around it ... */
	bool		guess_sampled;	/* ... and, if set, only in a batch whose
								 * order sample found it scattered
								 * (GATE_SCATTERED; btree_search_kernel) */
	/*
	 * The top table (static trees; NULL: none, or not used): entry b is
	 * the deepest node every descent for a key of bucket b passes, bucket
	 * b holding the keys top_lo + [top_bucket_lo(b), +2^top_bucket_width(b))
	 * (linear buckets of 2^top_shift values, or log-scale ones with
	 * top_log mantissa bits), packed as level << TOP_LEVEL_SHIFT | global
	 * node number in the low word; a split entry (top_start) has its
	 * separator in the high word.
	 */
	const uint32_t *top;
	bool		top_split;		/* 8-byte entries, some split (top_start);
								 * else 4-byte ones, the low word alone */
	uint32_t	top_n;			/* buckets */
	int			top_shift;		/* linear buckets: 2^top_shift values each */
	int			top_log;		/* 0, or log-scale buckets (top_bucket) */
	K			top_lo;			/* the keys' ends when it was built */
	K			top_hi;
	/*
	 * The run table (static trees with a top table; NULL: none): entry v,
	 * for v < runs_n, is [lower_bound, upper_bound) of the key top_lo + v,
	 * the buckets of one key value each (log-scale buckets' first 2^(m+1),
	 * or linear buckets of one value): run_answer.
	 */
	const uint2 *runs;
	uint32_t	runs_n;
	/* Insertable form (DYN searches): leaves through the directory. */
	K *const   *segs;			/* segment list: node id >> seg_shift */
	const uint32_t *dir_node;	/* leaf ordinal -> node id */
	const uint64_t *dir_base;	/* leaf ordinal -> rank base; [nleaves] = n */
	uint32_t	seg_shift;
};

/* Keys of leaf li of the insertable form: its node in its segment. */
template <class K>
__device__ __forceinline__ const K *
dyn_leaf(const TreeDev<K> &T, uint32_t li)
{
	uint32_t	nid = __ldg(T.dir_node + li);

	return T.segs[nid >> T.seg_shift] +
		(size_t) (nid & ((1u << T.seg_shift) - 1)) * (NODE_BYTES / sizeof(K));
}

/* Entries of leaf li (static: from the cut; insertable: the directory). */
template <class K, bool DYN>
__device__ __forceinline__ uint32_t
leaf_size(const TreeDev<K> &T, uint32_t li)
{
	if constexpr (DYN)
		return (uint32_t) (__ldg(T.dir_base + li + 1) - __ldg(T.dir_base + li));
	else
		return (uint32_t) (li < T.leaf_h ? T.leaf_ave : T.leaf_ave - 1);
}

/* Position of leaf li's first entry. */
template <class K, bool DYN>
__device__ __forceinline__ uint64_t
leaf_start(const TreeDev<K> &T, uint32_t li)
{
	if constexpr (DYN)
		return __ldg(T.dir_base + li);
	else
		return gi_cut_start(li, T.leaf_ave, T.leaf_h);
}

/* 16 bytes at p (aligned), through the read-only data cache. */
__device__ __forceinline__ uint4
ld16(const void *p)
{
	return __ldg(reinterpret_cast<const uint4 *>(p));
}

/* 8 bytes at p (aligned), through the read-only data cache. */
__device__ __forceinline__ uint64_t
ld8(const void *p)
{
	return __ldg(reinterpret_cast<const unsigned long long *>(p));
}

/* 4 bytes at p (aligned), through the read-only data cache. */
__device__ __forceinline__ uint32_t
ld4(const void *p)
{
	return __ldg(reinterpret_cast<const unsigned int *>(p));
}

/* One key at p. */
template <class K>
__device__ __forceinline__ K
ld_key(const K *p)
{
	if constexpr (sizeof(K) == 8)
		return (K) ld8(p);
	else
		return (K) ld4(p);
}

/* Load KPT consecutive keys of an aligned node slot (16-byte loads where
 * the slot is 16 bytes or more, else one 8- or 4-byte load). */
template <class K, int KPT>
__device__ __forceinline__ void
load_slot(const K *p, K (&v)[KPT])
{
	constexpr int BYTES = sizeof(K) * KPT;

	if constexpr (BYTES >= 16)
	{
#pragma unroll
		for (int c = 0; c < BYTES / 16; c++)
		{
			uint4		x = ld16(reinterpret_cast<const uint4 *>(p) + c);

			memcpy(&v[c * (16 / sizeof(K))], &x, 16);
		}
	}
	else if constexpr (BYTES == 8)
	{
		uint64_t	x = ld8(p);

		memcpy(v, &x, 8);
	}
	else
	{
		static_assert(BYTES == 4, "slot of 4, 8 or 16+ bytes");
		uint32_t	x = ld4(p);

		memcpy(v, &x, 4);
	}
}

/*
 * The thread search (group 1): min(rank, M - 1) of t in a node of M sorted
 * slots at p (padded slots hold the type's max, so the whole node is
 * sorted), the rank being the number of keys < t (<= t when LE), by a
 * branch-free binary search that loads one key a step (log2 M steps, all
 * in the node's one cache line).  The answer lies in [pos, pos + len - 1],
 * len = M at first; a step halves len.  A rank of M (every key qualifies)
 * ends at M - 1, exactly the clamp a descent wants.
 */
template <class K, bool LE>
__device__ __forceinline__ uint32_t
thread_rank(const K *p, K t)
{
	constexpr uint32_t M = NODE_BYTES / sizeof(K);
	uint32_t	pos = 0;

#pragma unroll
	for (uint32_t half = M / 2; half >= 1; half >>= 1)
	{
		K			k = ld_key<K>(p + pos + half - 1);

		pos += (LE ? k <= t : k < t) ? half : 0;
	}
	return pos;
}

/*
 * thread_rank, also giving the node's keys on both sides of the answer
 * when the search compared them: *lo the last key that qualified (key
 * pos - 1), *hi the last one that did not (key pos, the chosen child's
 * separator).  Both are register copies of keys the steps load anyway;
 * *known is false when either side was never compared (pos 0, or the clamp
 * at M - 1).
 */
template <class K, bool LE>
__device__ __forceinline__ uint32_t
thread_rank_bounds(const K *p, K t, K &lo, K &hi, bool &known)
{
	constexpr uint32_t M = NODE_BYTES / sizeof(K);
	uint32_t	pos = 0;
	bool		has_lo = false,
				has_hi = false;

#pragma unroll
	for (uint32_t half = M / 2; half >= 1; half >>= 1)
	{
		K			k = ld_key<K>(p + pos + half - 1);
		bool		q = LE ? k <= t : k < t;

		pos += q ? half : 0;
		lo = q ? k : lo;
		hi = q ? hi : k;
		has_lo |= q;
		has_hi |= !q;
	}
	known = has_lo && has_hi;
	return pos;
}

/*
 * Rank of t in a leaf of size entries at p (thread search), clamped to
 * size: as thread_rank, plus the last slot when the rank may be M (a full
 * leaf whose every key qualifies; below M slots the clamp to size already
 * gives the answer, since size <= M - 1 then).
 */
template <class K, bool LE>
__device__ __forceinline__ uint32_t
thread_leaf_rank(const K *p, K t, uint32_t size)
{
	constexpr uint32_t M = NODE_BYTES / sizeof(K);
	uint32_t	pos = thread_rank<K, LE>(p, t);

	if (size == M && pos == M - 1)
	{
		K			k = ld_key<K>(p + M - 1);

		pos += (LE ? k <= t : k < t) ? 1 : 0;
	}
	return umin32(pos, size);
}

/*
 * The thread search's wide form: the rank of t (keys < t, <= t when LE)
 * among the M slots of the node at p, by loading the whole line at once (16-
 * byte loads issued together: one round trip to wherever the line is) and
 * counting in registers, instead of log2 M dependent loads.  Padded slots
 * hold the type's max, as thread_rank assumes.  Callers clamp: min(rank,
 * M - 1) in a descent, min(rank, size) in a leaf, which makes it equal to
 * thread_rank / thread_leaf_rank.  Used for leaves (TreeDev.wide): in a
 * tree larger than L2 a leaf comes from memory, where each dependent load
 * of a binary search may wait for another sector; the upper levels, in L1
 * or L2, are searched faster by those few loads (measured: wide internal
 * nodes were 0.6x on 10^8 lognormal keys).
 */
template <class K, bool LE>
__device__ __forceinline__ uint32_t
wide_rank(const K *p, K t)
{
	constexpr int M = NODE_BYTES / sizeof(K);
	K			v[M];
	uint32_t	c = 0;

	load_slot<K, M>(p, v);
#pragma unroll
	for (int j = 0; j < M; j++)
		c += LE ? (v[j] <= t) : (v[j] < t);
	return c;
}

#define SECTOR_BYTES	32			/* what one L2 / memory transaction brings */

/*
 * The first j in [a, b) whose key at p does not qualify (is >= t; > t when
 * LE), or b: a binary search of loads, for a caller that knows every key
 * before a qualifies and none from b on does.
 */
template <class K, bool LE>
__device__ __forceinline__ uint32_t
bound_rank(const K *p, K t, uint32_t a, uint32_t b)
{
	uint32_t	len = b - a;

	while (len > 0)
	{
		uint32_t	half = len >> 1;
		K			k = ld_key<K>(p + a + half);

		if (LE ? k <= t : k < t)
		{
			a += half + 1;
			len -= half + 1;
		}
		else
			len = half;
	}
	return a;
}

/*
 * The guessed-sector form of the thread search (GiGpuPolicy.leaf_guess):
 * the rank of t (keys < t, <= t when LE) among the first size (> 0) keys of
 * the leaf at p, whose keys lie between lo and hi (the separators its
 * parent's search compared: lo < keys <= hi).  Keys a leaf spans are close
 * to evenly spread even when the whole key set is not, so interpolating t
 * between lo and hi names the sector (SECTOR_BYTES of keys) that holds the
 * answer most of the time: one 32-byte load (two 16-byte ones issued
 * together), counted in registers, where a binary search waits for two or
 * three sectors one after the other.  When every key of the sector
 * qualifies (none does) the answer lies after it (before it): the
 * neighbouring sector is counted, and past that (a long run of one key, or
 * keys far from evenly spread) a binary search takes the rest of that
 * side.  Exact whatever lo and hi are: they only pick the first sector.
 * Padded slots hold the type's max; the clamp to size drops them when t
 * is the max itself.
 */
template <class K, bool LE>
__device__ __forceinline__ uint32_t
guess_leaf_rank(const K *p, K t, uint32_t size, K lo, K hi)
{
	typedef typename KeyLimits<K>::SKey U;
	constexpr uint32_t S = SECTOR_BYTES / sizeof(K);
	float		f = (float) (U) ((U) t - (U) lo) / (float) (U) ((U) hi - (U) lo);
	float		g = f * (float) size;	/* NaN or huge: the last sector */
	uint32_t	j = g < (float) (size - 1) ? (uint32_t) g : size - 1;
	uint32_t	s = j / S;
	uint32_t	last = (size - 1) / S;
	K			v[S];
	uint32_t	c;

	auto count = [&](uint32_t sec) {
		uint32_t	n = 0;

		load_slot<K, S>(p + sec * S, v);
#pragma unroll
		for (uint32_t i = 0; i < S; i++)
			n += LE ? (v[i] <= t) : (v[i] < t);
		return n;
	};
	c = count(s);
	if (c == 0 && s > 0)
	{							/* every key here is past t: look before */
		c = count(--s);
		if (c == 0 && s > 0)	/* and there too: a binary search before */
			return bound_rank<K, LE>(p, t, 0, s * S);
	}
	else if (c == S && s < last)
	{							/* every key here qualifies: look after */
		c = count(++s);
		if (c == S && s < last)	/* and there too: a binary search after */
			return bound_rank<K, LE>(p, t, (s + 1) * S, size);
	}
	return umin32(s * S + c, size);
}

/*
 * The leaf walk (GiGpuPolicy.leaf_walk) of the thread search: a probe's
 * second rank in its leaf found from the first, since the two differ by
 * the run of one key, mostly short.  Both gallop from the known end of the
 * run, steps of 1, 1, 2, 4, ... (each step the distance walked so far; the
 * last one cut to end at the leaf's end, so that a run to the end costs
 * no binary search), and finish with a binary search inside the step that
 * overshot: on unique keys one or two loads where a binary search of its
 * own takes log2 M (a run filling a leaf of 32: 6).  Neither reads past
 * the leaf's size (padded slots are never compared).
 */

/*
 * The number of keys <= k among the leaf's first size keys at p, given
 * that the first s of them are <= k: the first j in [s, size) whose key is
 * > k, or size.
 */
template <class K>
__device__ __forceinline__ uint32_t
walk_le(const K *p, K k, uint32_t s, uint32_t size)
{
	uint32_t	lo = s,
				len = size - s,	/* the answer lies in [lo, lo + len] */
				step = 1;

	while (len > 0)
	{
		uint32_t	j = umin32(step, len);	/* the last step ends at the leaf's end */

		if (ld_key<K>(p + lo + j - 1) > k)
		{
			len = j - 1;
			break;
		}
		lo += j;
		len -= j;
		step = lo - s;
	}
	while (len > 0)
	{
		uint32_t	half = len >> 1;

		if (ld_key<K>(p + lo + half) <= k)
		{
			lo += half + 1;
			len -= half + 1;
		}
		else
			len = half;
	}
	return lo;
}

/*
 * The number of keys < k among the leaf's keys at p, given that key e is
 * k and every key before it is <= k: the first j in [0, e] whose key is
 * k (the start of the run of k that ends at e).
 */
template <class K>
__device__ __forceinline__ uint32_t
walk_lt(const K *p, K k, uint32_t e)
{
	uint32_t	hi = e,
				len = e,		/* the answer lies in [hi - len, hi] */
				step = 1;

	while (len > 0)
	{
		uint32_t	j = umin32(step, len);	/* the last step ends at slot 0 */

		if (ld_key<K>(p + hi - j) < k)
		{
			len = j - 1;
			break;
		}
		hi -= j;
		len -= j;
		step = e - hi;
	}
	uint32_t	lo = hi - len;

	while (len > 0)
	{
		uint32_t	half = len >> 1;

		if (ld_key<K>(p + lo + half) < k)
		{
			lo += half + 1;
			len -= half + 1;
		}
		else
			len = half;
	}
	return lo;
}

/* A group of G lanes of one warp that searches for one probe together. */
struct Group
{
	uint32_t	mask;			/* the group's lanes */
	uint32_t	base;			/* its first lane */
	uint32_t	r;				/* this lane's rank in the group */
};

/* The group of G lanes that lane belongs to. */
template <int G>
__device__ __forceinline__ Group
make_group(int lane)
{
	Group		g;

	g.r = lane % G;
	g.base = lane - g.r;
	g.mask = (G == 32 ? 0xffffffffu : ((1u << (G & 31)) - 1)) << g.base;
	return g;
}

/*
 * Rank of t in a sorted node spread over the group (KPT keys a lane): the
 * number of keys < t (<= t when LE).  Each lane counts its own keys; a
 * ballot of "not all of mine qualify" and __ffs give the first such lane,
 * clamped by one min.u32 to the group's last lane when there is none; that
 * lane's count completes the rank.
 */
template <class K, int G, int KPT, bool LE>
__device__ __forceinline__ uint32_t
group_rank(const K (&v)[KPT], K t, const Group &g)
{
	uint32_t	c = 0;

#pragma unroll
	for (int j = 0; j < KPT; j++)
		c += LE ? (v[j] <= t) : (v[j] < t);
	uint32_t	open = __ballot_sync(g.mask, c != KPT) & g.mask;
	uint32_t	src = umin32((uint32_t) __ffs(open) - 1, g.base + G - 1);
	uint32_t	ck = __shfl_sync(g.mask, c, src);

	return (src - g.base) * KPT + ck;
}

/*
 * The leaf a descent ends in, with its keys held by the group's lanes (KPT
 * a lane), or, for the thread search (one lane holds a whole node: KPT = M),
 * where its keys are (the searches load them one at a time).
 */
template <class K, int KPT, bool BY_POINTER = (KPT * sizeof(K) == NODE_BYTES)>
struct LeafView
{
	uint64_t	s;				/* position of its first key */
	uint32_t	size;
	uint32_t	li;				/* leaf number */
	K			v[KPT];
};
template <class K, int KPT> struct LeafView<K, KPT, true>
{
	uint64_t	s;
	uint32_t	size;
	uint32_t	li;
	const K    *keys;			/* its M slots */
	bool		wide;			/* rank them with wide_rank (TreeDev.wide) */
	bool		guess;			/* rank them with guess_leaf_rank, between: */
	K			lo;				/* the parent's key before it (< its keys) */
	K			hi;				/* its separator (>= its keys) */
};

/* Where descents start: the root, or a node every probe of a tile passes. */
struct Start
{
	uint32_t	node;			/* global node number (a leaf: inodes + li) */
	int			level;			/* its level; nint = the leaf level */
};

/* Record node (at level l) in *shared when the other half-warp is there too. */
__device__ __forceinline__ void
track_shared(uint32_t node, int l, Start *shared)
{
	if (__shfl_xor_sync(0xffffffffu, node, 16) == node)
		*shared = Start{node, l};
}

/*
 * First child of node (at level l): computed from the level's cut when
 * T.arith (a multiply-add and a min on values at hand: the node's own load
 * is the only memory access of the level), else loaded from the prefix
 * sums (a second load a level, from a line of its own).
 */
template <class K>
__device__ __forceinline__ uint32_t
first_child(const TreeDev<K> &T, uint32_t node, int l)
{
	if (T.arith)
	{
		uint32_t	j = node - T.lv_off[l];

		return T.lv_off[l + 1] + j * T.lv_am1[l] + umin32(j, T.lv_h[l]);
	}
	return __ldg(T.prefix + node);
}

#define TOP_LEVEL_SHIFT	28		/* a top table entry's low word: level above,
								 * node below */
#define TOP_NODE_MASK	((1u << TOP_LEVEL_SHIFT) - 1)
#define TOP_LEVEL_SPLIT	15u		/* a split entry's level field: leaf a or a + 1 */
#define TOP_LEVEL_SPLIT_PARENT 14u	/* ... leaves' parent a or a + 1 */
#define TOP_LEVEL_SPAN	13u		/* a span entry's level field: leaves a ..
								 * a + s (s, its high word: 2 .. SPAN_MAX) */
#define SPAN_MAX		4		/* boundaries a span entry may hold */
#define SEP_WORD_BITS	32		/* a split entry's high word: its separator's
								 * offset in the bucket (the top 32 bits) */

/*
 * The top table's bucket of v, a key's offset from its top_lo.  Linear
 * buckets (log 0) span 2^shift values each.  Log-scale ones (log = m
 * mantissa bits, for keys piled up near their minimum: build_top picks
 * them where a sample of the keys shares fewer buckets so) are those of a
 * float: the offsets below 2^m a bucket each, then 2^m buckets an octave,
 * of 2^(e - m) values in the octave [2^e, 2^(e + 1)).  Host and device.
 */
template <class U>
__host__ __device__ __forceinline__ uint64_t
top_bucket(U v, int shift, int log)
{
	if (log == 0)
		return (uint64_t) (v >> shift);
#ifdef __CUDA_ARCH__
	int			e = sizeof(U) == 4 ? 31 - __clz((int) v) : 63 - __clzll((long long) v);
#else
	int			e = v == 0 ? -1 : sizeof(U) == 4 ? 31 - __builtin_clz((unsigned) v) :
		63 - __builtin_clzll((unsigned long long) v);
#endif
	int			s = e > log ? e - log : 0;

	return ((uint64_t) s << log) + (uint64_t) (v >> s);
}

/* log2 of the values bucket b spans (top_bucket's inverse). */
__host__ __device__ __forceinline__ int
top_bucket_width(uint64_t b, int shift, int log)
{
	if (log == 0)
		return shift;
	return (b >> log) > 1 ? (int) (b >> log) - 1 : 0;
}

/* The offset of bucket b's first value (top_bucket's inverse). */
template <class U>
__host__ __device__ __forceinline__ U
top_bucket_lo(uint64_t b, int shift, int log)
{
	int			s = top_bucket_width(b, shift, log);

	if (log == 0)
		return (U) b << shift;
	return (U) (b - ((uint64_t) s << log)) << s;
}

/* Start.level of a split entry once top_start has put the probe's key below
 * (side 0), at (1) or above (2) the separator; up: 1 where the entry splits
 * leaves' parents.  descend takes node a or a + 1 from it. */
#define START_SPLIT(side, up) (-(1 + (side) + 3 * (up)))
/* Start.level of a span entry of leaves a .. a + s (descend picks one). */
#define START_SPAN(s)	(-(16 + (s)))

/*
 * Where the descents for probe p's own key may start: the node its bucket's
 * top table entry names (T.top), else the root.  A descent for any key of
 * the bucket, lower or upper bound, passes that node (top_table_kernel), so
 * the levels above it are skipped: one load from the table instead of
 * several dependent node searches.  Not for ranges (the high bound may lie
 * in another bucket).
 *
 * A bucket whose keys straddle two neighbouring leaves (about half of them
 * in a tree whose entries reach the leaves), or two neighbouring parents
 * of leaves, has a split entry: node a, and the separator between a and
 * a + 1 (a's largest key) as its offset in the bucket.  The probe's key (p
 * clamped to the type, the key every descent from here uses) is compared
 * with it now, so that no lane searches the node above a: the descents of
 * a warp start at one level instead of diverging there (ncu, H100,
 * 2026-11-27: 17.9 active lanes of 32 on clustered int64 batches over 10^6
 * keys).  Where the offset was cut to its top 32 bits (buckets over 2^32
 * key values: int64 keys; the table then splits leaves only) and the key's
 * own top bits equal it, a's last key is loaded to decide.  A bucket
 * whose keys span 3 to SPAN_MAX + 1 leaves has a span entry (leaf a and
 * the count s of leaves after it): descend compares the key with the
 * largest keys of leaves a .. a + s - 1, loaded at once, instead of
 * descending from their common ancestor, where the lanes of such buckets
 * (about 8 % of the probes over 10^6 uniform int64 keys) held their warps
 * for one to three levels (ncu, H100, 2026-11-27).  Only the per-probe
 * kernel takes spans (SPAN; descend and answer likewise): in the stream
 * and tiled kernels, at their register caps, the span's code spilled
 * (ptxas, sm_90: the int32 stream kernel 0 -> 12 bytes, the tiled ones up
 * to 154 bytes more), so there a span bucket descends from the root.
 */
template <class K, bool DYN = false, bool SPAN = false>
__device__ __forceinline__ Start
top_start(const TreeDev<K> &T, int op, int64_t p)
{
	typedef typename KeyLimits<K>::SKey U;
	const int64_t KMIN = KeyLimits<K>::lo,
				KMAX = KeyLimits<K>::hi;
	uint64_t	b;

	if constexpr (DYN)			/* (the directory's descents have no table:
								 * fewer registers for those kernels) */
		return Start{0, 0};
	if (T.top == nullptr || op == GI_OP_RANGE)
		return Start{0, 0};
	if (p <= (int64_t) T.top_lo)
		b = 0;
	else if (p >= (int64_t) T.top_hi)
		b = T.top_n - 1;
	else
		b = top_bucket<U>((U) (K) p - (U) T.top_lo, T.top_shift, T.top_log);	/* < top_n */
	uint32_t	w,
				sep_word = 0;

	if (T.top_split)
	{
		uint64_t	e = ld8(T.top + 2 * b);

		w = (uint32_t) e;
		sep_word = (uint32_t) (e >> 32);
	}
	else
		w = ld4(T.top + b);

	uint32_t	node = w & TOP_NODE_MASK,
				code = w >> TOP_LEVEL_SHIFT;

	if (code == TOP_LEVEL_SPAN)	/* (SPAN: a caller whose descents take spans) */
		return SPAN ? Start{node, START_SPAN((int) sep_word)} : Start{0, 0};
	if (code < TOP_LEVEL_SPLIT_PARENT)
		return Start{node, (int) code};

	K			t = (K) (p < KMIN ? KMIN : p > KMAX ? KMAX : p);
	const int	width = top_bucket_width(b, T.top_shift, T.top_log),
				cut = sizeof(K) == 4 || width <= SEP_WORD_BITS ? 0 : width - SEP_WORD_BITS;
	U			sep_lo = (U) T.top_lo + top_bucket_lo<U>(b, T.top_shift, T.top_log) + ((U) sep_word << cut);
	int			side;			/* t below, at, above the separator: 0, 1, 2;
								 * it lies in [sep_lo, sep_lo + 2^cut) */

	if (t < (K) sep_lo)
		side = 0;
	else if (cut == 0)
		side = t == (K) sep_lo ? 1 : 2;
	else if (((U) t - sep_lo) >> cut)
		side = 2;
	else
	{							/* (int64 leaves only: top_table_kernel) */
		constexpr uint32_t M = NODE_BYTES / sizeof(K);
		uint32_t	li = node - T.inodes;
		K			sep = ld_key<K>(T.leaves + (size_t) li * M + leaf_size<K, false>(T, li) - 1);

		side = t < sep ? 0 : t > sep ? 2 : 1;
	}
	return Start{node, START_SPLIT(side, code == TOP_LEVEL_SPLIT_PARENT ? 1 : 0)};
}

/*
 * The answer of probe p from the run table (T.runs), where p's key has a
 * bucket of its own there: a point probe's [first, last) at once, found or
 * not; a predecessor's or successor's where p is a key (else the nearest
 * key lies elsewhere: false, and the descent answers).  One 8-byte load
 * instead of two descents for a key in a run across leaves (random probes
 * over keys in long runs: two descents a probe, where the binary search
 * finds the few distinct keys' paths in L1).
 */
template <class K>
__device__ __forceinline__ bool
run_answer(const TreeDev<K> &T, int op, int64_t p, uint64_t &f, uint64_t &l)
{
	if (op == GI_OP_RANGE || p < (int64_t) T.top_lo)
		return false;

	uint64_t	v = (uint64_t) p - (uint64_t) (int64_t) T.top_lo;

	if (v >= T.runs_n)
		return false;

	uint64_t	e = ld8(T.runs + v);
	uint32_t	lb = (uint32_t) e,
				ub = (uint32_t) (e >> 32);

	if (lb == ub && op != GI_OP_POINT)
		return false;
	f = lb;
	l = ub;
	return true;
}

/* Key j of leaf li. */
template <class K, bool DYN>
__device__ __forceinline__ K
leaf_key(const TreeDev<K> &T, uint32_t li, uint32_t j)
{
	if constexpr (DYN)
		return ld_key<K>(dyn_leaf(T, li) + j);
	else
		return ld_key<K>(T.leaves + (size_t) li * (NODE_BYTES / sizeof(K)) + j);
}

/*
 * Descend from S (the root by default) to the leaf holding lower_bound(t)
 * (LE = false) or upper_bound(t) (LE = true): at each internal node take the
 * first child whose max key is >= t (> t).  Callers guarantee t <= max key
 * (t < max key when LE), so such a child always exists; the min.u32 clamp
 * only keeps the position inside the node.  Child indexes come from
 * first_child().  A group of G >= 2 lanes ranks t in a node together
 * (group_rank) and ends holding the leaf's keys; a single lane (G = 1, the
 * thread search) ranks it by a binary search of loads (thread_rank) and
 * ends with the leaf's address.  TRACK (two groups of 16 lanes descending
 * in lockstep) records in *shared the deepest node both groups pass: every
 * descent whose target lies between the two groups' targets passes it
 * too.
 */
template <class K, int G, bool LE, bool DYN, bool TRACK = false, bool SPAN = false>
__device__ __forceinline__ void
descend(const TreeDev<K> &T, K t, const Group &g,
		LeafView<K, NODE_BYTES / sizeof(K) / G> &L, Start S = Start{0, 0},
		Start *shared = nullptr, bool guess = false)
{
	constexpr int M = NODE_BYTES / sizeof(K);
	constexpr int KPT = M / G;
	const K    *lane_nodes = T.nodes + g.r * KPT;
	uint32_t	node = S.node;
	int			l0 = S.level;

	static_assert(G > 1 || !TRACK, "the thread search does not track");
	if constexpr (G == 1)
		L.guess = false;
	if (SPAN && l0 <= START_SPAN(0))
	{							/* a span entry: leaves a .. a + s; the
								 * bound's leaf is the first whose largest
								 * key is >= t (> t for an upper bound),
								 * their largest keys loaded at once */
		const uint32_t s = (uint32_t) (START_SPAN(0) - l0),
					li = node - T.inodes;
		uint32_t	c = 0;

#pragma unroll
		for (uint32_t j = 0; j < SPAN_MAX; j++)
			if (j < s)
			{
				K			m = leaf_key<K, false>(T, li + j, leaf_size<K, false>(T, li + j) - 1);

				c += (LE ? m <= t : m < t) ? 1 : 0;
			}
		node += c;
		l0 = T.nint;
	}
	else if (l0 < 0)
	{							/* a split top entry: node a, or a + 1 where
								 * the key is above the separator (at it,
								 * for an upper bound) */
		int			side = (-l0 - 1) % 3;

		node += (side == 2 || (LE && side == 1)) ? 1 : 0;
		l0 = T.nint - (-l0 - 1) / 3;
	}
	for (int l = l0; l < T.nint; l++)
	{
		if constexpr (TRACK)
			track_shared(node, l, shared);

		if constexpr (G == 1)
		{
			uint32_t	c0 = first_child(T, node, l);
			const K    *np = T.nodes + (size_t) node * M;

			if (guess && l == T.nint - 1)	/* the leaves' parent: keep the
											 * separators for the leaf */
				node = c0 + thread_rank_bounds<K, LE>(np, t, L.lo, L.hi, L.guess);
			else
				node = c0 + thread_rank<K, LE>(np, t);
		}
		else
		{
			K			v[KPT];

			load_slot<K, KPT>(lane_nodes + (size_t) node * M, v);
			uint32_t	c0 = first_child(T, node, l);
			uint32_t	pos = group_rank<K, G, KPT, LE>(v, t, g);

			node = c0 + umin32(pos, M - 1);
		}
	}
	if constexpr (TRACK)
		track_shared(node, T.nint, shared);
	L.li = node - T.inodes;
	if constexpr (DYN)
	{
		uint64_t	b0 = __ldg(T.dir_base + L.li);

		L.s = b0;
		L.size = (uint32_t) (__ldg(T.dir_base + L.li + 1) - b0);
		if constexpr (G == 1)
		{
			L.keys = dyn_leaf(T, L.li);
			L.wide = T.wide;
		}
		else
			load_slot<K, KPT>(dyn_leaf(T, L.li) + g.r * KPT, L.v);
	}
	else
	{
		L.s = leaf_start<K, false>(T, L.li);
		L.size = leaf_size<K, false>(T, L.li);
		if constexpr (G == 1)
		{
			L.keys = T.leaves + (size_t) L.li * M;
			L.wide = T.wide;
		}
		else
			load_slot<K, KPT>(T.leaves + (size_t) L.li * M + g.r * KPT, L.v);
	}
}

/* Rank of t among a leaf's keys, clamped to the leaf's size: from the
 * group's registers, or (thread search) by loads. */
template <class K, int G, int KPT, bool LE>
__device__ __forceinline__ uint32_t
leaf_rank(const LeafView<K, KPT> &L, K t, const Group &g)
{
	if constexpr (G == 1)
		return L.wide ? umin32(wide_rank<K, LE>(L.keys, t), L.size) :
			(L.guess && L.size > 0) ? guess_leaf_rank<K, LE>(L.keys, t, L.size, L.lo, L.hi) :
			thread_leaf_rank<K, LE>(L.keys, t, L.size);
	else
		return umin32(group_rank<K, G, KPT, LE>(L.v, t, g), L.size);
}

/*
 * Answer one probe of op: [*f, *l) in the sorted entry order.  The descents
 * for the probe's own keys start at S (a node all of them pass, the root by
 * default); those for a neighbouring key (the run of a successor or
 * predecessor) start at the root, or with RUN_TOP at that key's own top
 * table entry (top_start): the per-probe kernel's, where one lane's
 * descent from the root held a whole batch of 10^5 probes (H100, ncu,
 * 2026-11-27: in a sorted predecessor batch over 10^6 int32 keys, 2 lanes
 * whose key's run crossed a leaf boundary searched 4 levels from the root,
 * about 3300 cycles after the other warps had ended; the kernel took
 * 8.3 us against the point batch's 6.8).  G = 1: the thread search; with WALK, its
 * second rank in the leaf is walked from the first (walk_le, walk_lt)
 * rather than searched anew: the same answer, fewer loads; with guess
 * (and T.guess) its leaf ranks start from a guessed sector.  NEXT_LEAF: a
 * point or successor run of one that ends its leaf reads the next leaf's
 * first key instead of descending again (off in the stream kernel, whose
 * rare descents would pay for it in spills: ptxas, sm_90, 12 bytes).
 */
template <class K, int G, bool DYN, bool WALK = false, bool NEXT_LEAF = true, bool SPAN = false,
		  bool RUN_TOP = false>
__device__ __forceinline__ void
answer(const TreeDev<K> &T, int op, int64_t p, int64_t ph, const Group &g,
	   uint64_t &f, uint64_t &l, Start S = Start{0, 0}, bool guess = false)
{
	constexpr int KPT = NODE_BYTES / sizeof(K) / G;
	const int64_t KMIN = KeyLimits<K>::lo,
				KMAX = KeyLimits<K>::hi;
	const uint32_t last_li = T.nleaves - 1;
	const K		kmax = T.kmax;
	LeafView<K, KPT> L;

	f = l = 0;
	if (T.n == 0)
		return;
	if (op == GI_OP_POINT || op == GI_OP_SUCC)
	{
		if (p > KMAX || (op == GI_OP_POINT && p < KMIN))
			return;
		K			t = (K) (p < KMIN ? KMIN : p);

		if (t > kmax)			/* nothing >= p */
			return;
		descend<K, G, false, DYN, false, SPAN>(T, t, g, L, S, nullptr, guess);
		uint32_t	clt = leaf_rank<K, G, KPT, false>(L, t, g);
		K			k = t;

		f = l = L.s + clt;
		if (op == GI_OP_SUCC)
			k = leaf_key<K, DYN>(T, L.li, clt);	/* the smallest key >= p */
		uint32_t	cle;

		if constexpr (G == 1 && WALK)	/* the keys before clt (and k's own
										 * slot, for a successor) are <= k */
			cle = walk_le<K>(L.keys, k, umin32(op == GI_OP_SUCC ? clt + 1 : clt, L.size), L.size);
		else
			cle = leaf_rank<K, G, KPT, true>(L, k, g);

		if (cle < L.size || L.li == last_li)
			l = L.s + cle;
		else if (k == kmax)
			l = T.n;
		else if (!DYN && NEXT_LEAF && cle - clt <= 1 && leaf_size<K, false>(T, L.li + 1) > 0 &&
				 leaf_key<K, false>(T, L.li + 1, 0) > k)
			l = L.s + L.size;	/* k is this leaf's last key, once, and the
								 * next leaf starts above it: one load, not
								 * a descent (a probe of a leaf's last key;
								 * a longer run mostly goes on, and descends
								 * at once) */
		else
		{						/* the run goes on past this leaf */
			descend<K, G, true, DYN, false, SPAN>(T, k, g, L,
												  op == GI_OP_POINT ? S :
												  RUN_TOP ? top_start<K, DYN, SPAN>(T, GI_OP_POINT, (int64_t) k) :
												  Start{0, 0}, nullptr, guess);
			l = L.s + leaf_rank<K, G, KPT, true>(L, k, g);
		}
	}
	else if (op == GI_OP_PRED)
	{
		if (p < KMIN)
			return;
		K			t = (K) (p > KMAX ? KMAX : p);
		K			k;

		if (t >= kmax)
		{						/* every key is <= p: the run of the max */
			k = kmax;
			l = T.n;
		}
		else
		{
			descend<K, G, true, DYN, false, SPAN>(T, t, g, L, S, nullptr, guess);
			uint32_t	cle = leaf_rank<K, G, KPT, true>(L, t, g);

			l = L.s + cle;
			if (l == 0)
				return;
			/* the largest key <= p: in this leaf, or the previous one's last */
			k = cle ? leaf_key<K, DYN>(T, L.li, cle - 1) :
				leaf_key<K, DYN>(T, L.li - 1, leaf_size<K, DYN>(T, L.li - 1) - 1);
			uint32_t	clt;

			if constexpr (G == 1 && WALK)	/* k sits at cle - 1; with cle 0
											 * every key here is > p >= k */
				clt = cle ? walk_lt<K>(L.keys, k, cle - 1) : 0;
			else
				clt = leaf_rank<K, G, KPT, false>(L, k, g);

			if (clt > 0 || L.li == 0)
			{
				f = L.s + clt;
				return;
			}

			/*
			 * k's run starts at this leaf's first entry (cle > 0) or ends
			 * at the previous leaf's last (cle 0): where the key before
			 * that is smaller (unique keys), its start is known without a
			 * second descent (2 probes in M took one from the root).
			 */
			uint32_t	ps = leaf_size<K, DYN>(T, L.li - 1);

			if (cle > 0 && ps > 0 && leaf_key<K, DYN>(T, L.li - 1, ps - 1) < k)
			{
				f = L.s;
				return;
			}
			if (cle == 0 && ps > 1 && leaf_key<K, DYN>(T, L.li - 1, ps - 2) < k)
			{
				f = L.s - 1;
				return;
			}
		}
		/* the run starts before this leaf (or leaves before) */
		descend<K, G, false, DYN, false, SPAN && RUN_TOP>(T, k, g, L,
														  RUN_TOP ? top_start<K, DYN, SPAN>(T, GI_OP_POINT, (int64_t) k) :
														  Start{0, 0}, nullptr, guess);
		f = L.s + leaf_rank<K, G, KPT, false>(L, k, g);
	}
	else
	{							/* GI_OP_RANGE: [lower_bound(lo), upper_bound(hi)) */
		uint64_t	lb,
					ub;

		if (p > ph)
			return;
		if (p < KMIN)
			lb = 0;
		else if (p > KMAX || (K) p > kmax)	/* (K) p only once p fits in K */
			lb = T.n;
		else
		{
			descend<K, G, false, DYN, false, SPAN>(T, (K) p, g, L, S, nullptr, guess);
			lb = L.s + leaf_rank<K, G, KPT, false>(L, (K) p, g);
		}
		if (ph < KMIN)
			ub = 0;
		else if (ph > KMAX || (K) ph >= kmax)
			ub = T.n;
		else
		{
			descend<K, G, true, DYN, false, SPAN>(T, (K) ph, g, L, S, nullptr, guess);
			ub = L.s + leaf_rank<K, G, KPT, true>(L, (K) ph, g);
		}
		f = lb;
		l = ub > lb ? ub : lb;
	}
}

/*
 * The sortable pair of probe p with caller index i (i < 2^30): its key as
 * an unsigned integer in the tree's width, and the index; an int32 tree
 * flags a probe outside int32 in the index's top bits and keeps the bound
 * it passed (decode_probe gives the probe back).
 */
template <class K>
__device__ __forceinline__ void
encode_probe(int64_t p, uint32_t i, typename KeyLimits<K>::SKey &sk, uint32_t &idx)
{
	if constexpr (sizeof(K) == 4)
	{
		uint32_t	flags = 0;
		int32_t		v;

		if (p < INT32_MIN)
			flags = IDX_BELOW, v = INT32_MIN;
		else if (p > INT32_MAX)
			flags = IDX_ABOVE, v = INT32_MAX;
		else
			v = (int32_t) p;
		sk = (uint32_t) v ^ 0x80000000u;
		idx = i | flags;
	}
	else
	{
		sk = (uint64_t) p ^ 0x8000000000000000ull;
		idx = i;
	}
}

/* Decode a sorted probe (int32 trees): value, flags and caller index. */
__device__ __forceinline__ int64_t
decode_probe(uint32_t sk, uint32_t &idx)
{
	uint32_t	flags = idx & ~IDX_MASK;

	idx &= IDX_MASK;
	if (flags & IDX_BELOW)
		return (int64_t) INT32_MIN - 1;
	if (flags & IDX_ABOVE)
		return (int64_t) INT32_MAX + 1;
	return (int32_t) (sk ^ 0x80000000u);
}

/* Decode a sorted probe (int64 trees). */
__device__ __forceinline__ int64_t
decode_probe(uint64_t sk, uint32_t &idx)
{
	return (int64_t) (sk ^ 0x8000000000000000ull);
}

/*
 * The tiled search (cuda/gpu_btree_tile.cuh): answer count probes (hi: range
 * ends) into first / last on stream st, warp tiles of consecutive probes,
 * groups of `group` lanes (2, 4 or 8) where a tile descends per probe, and
 * at most `window` leaves staged a tile (0: the default, -1: never).  run
 * picks the tiles that take the run search (GiGpuPolicy.run: 0 those in
 * order, 1 every narrow one, -1 none).  dedup: of equal probes that
 * descend, one a row does (GiGpuPolicy.dedup).  min_blocks: the tiled
 * kernel's launch bound (GiGpuPolicy.tile_min_blocks; 0 the default).
 * With gate (a device int) a sample
 * of the batch decides first: *gate = GATE_TILES when its tiles are narrow,
 * and the tiled kernel runs only then; the caller launches the per-probe
 * kernel after this call, which runs unless GATE_IS_TILES(*gate).
 */
/* The order sample alone (tile_sample_kernel): of each segment of seg
 * probes (the last may be shorter) into gate[segment], on stream st, for
 * the caller to read or the kernels to take. */
template <class K, bool DYN>
GiStatus	gi_gpu_btree_order_sample(const TreeDev<K> &T, cudaStream_t st, int op,
									  const int64_t *probes, const int64_t *hi, uint64_t count,
									  uint64_t seg, int sample_leaves, int *gate, GiError *err);

template <class K, bool DYN>
GiStatus	gi_gpu_btree_tile_search(const TreeDev<K> &T, cudaStream_t st, int op,
									 const int64_t *probes, const int64_t *hi, uint64_t count,
									 uint64_t *first, uint64_t *last, int group, int window,
									 int run, bool dedup, int sample_leaves, int min_blocks,
									 int *gate, bool sample, GiError *err);

#define STREAM_MAX_LEAVES	48		/* leaves a stream kernel's warp stages at
									 * most: 48 KB a block */

/* The order sample's leaf rule for the stream kernel (sample_leaves 0: its
 * window's STREAM_MAX_LEAVES). */
static inline int
stream_sample_leaves(int sample_leaves)
{
	return sample_leaves == 0 ? (int) STREAM_MAX_LEAVES : sample_leaves;
}

/*
 * The stream search (cuda/gpu_btree_stream.cuh): the tiled search's narrow
 * tiles in a kernel whose other probes take the thread search (the
 * default where the per-probe kernel's group is 1 and the run search
 * off; GiGpuPolicy.stream).  window, sample_leaves and gate as for
 * gi_gpu_btree_tile_search (window and sample_leaves 0: 48 leaves);
 * row_hints >= 0: each row's bounds narrow the next row's search
 * (GiGpuPolicy.row_hint); sample: the sample runs first (else *gate
 * holds its answer already).
 */
template <class K, bool DYN>
GiStatus	gi_gpu_btree_stream_search(const TreeDev<K> &T, cudaStream_t st, int op,
									   const int64_t *probes, const int64_t *hi, uint64_t count,
									   uint64_t *first, uint64_t *last, int window,
									   int sample_leaves, int row_hints, int *gate, bool sample,
									   GiError *err);

#endif							/* GPUIDX_GPU_BTREE_SEARCH_CUH */
