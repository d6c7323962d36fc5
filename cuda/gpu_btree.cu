/*
 * gpu_btree.cu - the GPU engine behind engine.h: a B+ tree on the device.
 *
 * Layout (identical in meaning to engine/cpu_btree.c, so answers match).  The
 * leaf level is the sorted key array (int32 on the device for 2- and 4-byte
 * keys, int64 for 8) cut into leaves by the CUBPT bulk-build formulas: K
 * items go into node_num = ceil(K/m) nodes, the first h holding
 * ave = ceil(K/node_num) items and the rest ave-1, h = K - node_num*(ave-1);
 * leaf j holds the entries from position j*(ave-1) + min(j, h) on.  On the
 * device each leaf sits in its own 128-byte slot (padded with the type's
 * max; ave >= m-1 for large n, so this costs next to nothing) so that leaves
 * are read with the same aligned 16-byte loads as internal nodes.  The
 * internal levels are cut the same way and kept in the Harmonia layout: one
 * key region of fixed 128-byte nodes (32 int32 or 16 int64 keys; root
 * first, level by level), each key the MAX key of a child, and one child
 * prefix-sum array (first child of node g is prefix[g]; children are
 * numbered globally, leaves after all internal nodes, with a sentinel, so
 * prefix[g+1] - prefix[g] is g's child count).
 *
 * Build: CUB radix sort of (key, payload) pairs when unsorted, then the
 * levels bottom-up, one thread per key slot (CUBPT).
 *
 * Query: a narrowed group of G threads (1 by default, see below; 2..32
 * selectable) per probe; each thread holds 64 bytes of a node (four 16-byte loads), counts
 * its keys below the probe, and the group
 * finds the first thread not entirely below with __ballot_sync + __ffs; the
 * child position is clamped with one min.u32 (inline PTX).  Group 1 (the
 * thread search) gives each probe one lane that binary-searches a node by
 * loads, log2 M of them in the node's one cache line.  Large batches are
 * partially radix-sorted on their top N bits first (Harmonia,
 * N = B - log2(2^B / T * K) = log2(T / K)), and the results scattered back to
 * the caller's order.  Probes are int64; those outside the stored type's
 * range are answered by comparison, never wrapped.
 */
#include "gpu_btree_search.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#define QCHUNK			(1u << 25)	/* a scratch's room: probes a sorted pass, or a
									 * sampled segment, takes at most (< 2^30) */
#define GATE_SEGMENTS	64			/* segments a batch samples in one launch
									 * (their gates: the scratch's flag) */
#define SORT_MIN_PROBES	(1u << 20)	/* smaller batches are not sorted */
#define SORT_TREE_L2X	64			/* nor are trees under 64x the L2 size */
#define SORT_MAX_BITS	16			/* default cap on the sorted bits */
#define TOP_MAX_BITS	21			/* the top table: at most 2^21 buckets
									 * (8 MB, in L2 beside the upper levels) */
#define TOP_PER_PARENT	4			/* top table buckets a parent of leaves,
									 * where entries stop there (top_bits) */
#define GUESS_TREE_L2X	4			/* GiGpuPolicy.leaf_guess 0: on for trees
									 * over 4x the L2 size (guess_tree) */
#define SNAPSHOT_MIN_PROBES (1u << 16)	/* smaller batches on an insertable
										 * image read its directory
										 * (GiGpuPolicy.snapshot 0) */

/*
 * group 1 (the thread search) for the per-probe kernel: on the H100
 * (2026-11-26, bench/kernel --paths) 1.0-2.2x groups of 2 wherever the
 * per-probe kernel ran (random 10^8 probes over 10^6 int32 keys: 14.96 vs
 * 9.94 x 10^9 q/s point, 19.89 vs 9.03 pred; 10^5-probe batches 1.3-1.6x);
 * the tiled search keeps groups of 2.
 * leaf_walk 0 = on for int32 trees, off for int64 (LEAF_WALK_DEFAULT): the
 * thread search's second rank in a leaf is walked from the first (1-2
 * loads on unique keys instead of log2 M, the same answers).  H100,
 * 2026-11-26 (bench/kernel --paths, column "no leaf walk"): int32 rows
 * 3-4 % faster with it (random batches 5-9 %), int64 rows 0-4 % slower
 * (random 10^8 point probes over 10^8 keys: 6.05 with it, 7.85 without).
 * tile_min_blocks 0 = TILE_MIN_BLOCKS (4): the same run's columns "tile 2
 * blocks" / "tile 3 blocks" (no register spills, 16 / 24 warps an SM) were
 * slower where the sample tiles: sorted 10^8 int32 probes over 10^8 keys
 * 32.02 / 41.10 against 44.58 x 10^9 q/s.
 * stream 0 = on: where the sample tiles, the stream kernel
 * (cuda/gpu_btree_stream.cuh) rather than the tiled kernel; H100,
 * 2026-11-26 (bench/kernel/results-h100-2026-11-26p-*): sorted 10^8 int32
 * point probes over 10^8 keys 62.68 against 44.89, int64 40.27 against
 * 38.51; int64 trees of 10^6 keys 0.81-0.96x on 10^8-probe batches.
 * run -1: the run search stays opt-in
 * (GI_GPU_RUN_SEARCH=auto|on): on the H100 (2026-11-25, bench/kernel
 * --paths) taking it for every sorted tile was slower than the tiled search
 * without it on 60 of 192 rows (dense and lognormal batches) and faster on
 * 26 (sparse uniform ones: 1.5x at 10^8 probes over 10^9 keys).
 */
static GiGpuPolicy g_policy = {-1, 0, 1, 0, 0, -1, 0, 0, 0, 0, 0, 0};

/* ------------------------------------------------------------------------ */
/* Tree geometry                                                             */
/* ------------------------------------------------------------------------ */

/* Cut the internal levels over `items` leaves into g (root level first). */
static void
geo_inner(uint64_t items, int m, Geo *g)
{
	Cut			up[MAX_INT_LEVELS];
	int			L = 0;

	while (items > 1 && L < MAX_INT_LEVELS)
	{
		up[L] = gi_cut(items, m);	/* children = items, nodes = parents */
		items = up[L].nodes;
		L++;
	}
	g->nint = L;
	for (int l = 0; l < L; l++)
		g->lev[l] = up[L - 1 - l];
	g->off[0] = 0;
	for (int l = 0; l < L; l++)
		g->off[l + 1] = g->off[l] + g->lev[l].nodes;
	g->inodes = g->off[L];
}

/* Compute the tree's shape for n keys and node order m. */
static void
geo_compute(uint64_t n, int m, Geo *g)
{
	memset(g, 0, sizeof(*g));
	g->n = n;
	g->m = m;
	if (n == 0)
		return;
	g->leaf = gi_cut(n, m);
	geo_inner(g->leaf.nodes, m, g);
}

/* ------------------------------------------------------------------------ */
/* Search and build kernels (device helpers: gpu_btree_search.cuh)           */
/* ------------------------------------------------------------------------ */

/*
 * Blocks an SM for the int32 thread search with its leaf walk on unsorted
 * batches (the kernel of every int32 batch under GATE_MIN_DEFAULT in a
 * tree that is no guess_tree): ptxas gives it 34 registers (6 blocks)
 * unbounded, 32 and 24 bytes of spills at 8.  H100, 2026-11-27
 * (bench/kernel/results-h100-2026-11-27-split-steps.md): at 8, clustered
 * 10^6-probe batches over 10^7 lognormal keys 15.5-15.9 against 13.7-14.7
 * x 10^9 q/s and sorted ones over 10^6 keys 3 % faster; random ones over
 * 10^6 keys 9 % slower.  0: unbounded.
 */
#ifndef SEARCH_MIN_BLOCKS_32
#define SEARCH_MIN_BLOCKS_32 8
#endif

/*
 * The search kernel: each group of G lanes (G = 1: the thread search)
 * answers probes i = group id, + number of groups, ...  Unsorted:
 * probes[i] -> first/last[i].  Sorted: the i-th sorted probe goes to its
 * caller index (scatter).  gate: run only when *gate is not a tiles gate
 * (the tiled search's sample chose this kernel; NULL: always).  WALK: the thread
 * search's leaf walk; GUESS: its guessed leaf sector (answer()).  With
 * T.guess_sampled the batch has two launches, one of each GUESS: the
 * guessing one runs where the sample found the batch scattered, the other
 * elsewhere (one kernel with both would hold the registers of both).
 * RUNS: a probe whose key has a run table entry (T.runs) takes its answer
 * from there (run_answer); a kernel of its own (the thread search), so
 * that trees without a table keep the kernel without the check
 * (H100, 2026-11-27: the check in every kernel cost sorted 10^6-probe
 * batches over 10^6 uniform int32 keys 9 %, and spilled 16 bytes in the
 * int64 leaf walk's, 6-17 % on int64 lognormal batches).
 */
template <class K, int G, bool SORTED, bool DYN, bool WALK = false, bool GUESS = false, bool RUNS = false>
__global__ void __launch_bounds__(256, (sizeof(K) == 4 && G == 1 && WALK && !GUESS && !SORTED) ? SEARCH_MIN_BLOCKS_32 : 0)
btree_search_kernel(TreeDev<K> T, int op, const int64_t *probes,
					const int64_t *probes_hi,
					const typename KeyLimits<K>::SKey *skeys,
					const uint32_t *sidx, uint64_t count,
					uint64_t *first, uint64_t *last, const int *gate)
{
	/* spans (top_start) where a tree's table may hold them: not in guess
	 * trees (4-byte tables) nor the sorted batches of trees over 64x L2
	 * (guess trees too), whose variants spilled with the span's code
	 * (ptxas, sm_90: up to 24 bytes) */
	constexpr bool SPANS = !GUESS && !SORTED;
	/* a neighbouring key's run from its top table entry (answer) in the
	 * thread search's variants with spans, the kernel of batches under
	 * GATE_MIN_DEFAULT: elsewhere its code cost registers (ptxas, sm_90:
	 * the int64 sorted variant 40 registers -> 32 and 24 bytes of spills) */
	constexpr bool RUN_TOP = SPANS && G == 1;

	Group		g = make_group<G>(threadIdx.x & 31);

	if (gate)
	{
		int			gv = *gate;

		if (GATE_IS_TILES(gv) || (T.guess_sampled && (gv == GATE_SCATTERED) != GUESS))
			return;
	}

	uint64_t	gid = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) / G;
	uint64_t	ngroups = (uint64_t) gridDim.x * blockDim.x / G;

	for (uint64_t i = gid; i < count; i += ngroups)
	{
		int64_t		p,
					ph = 0;
		uint64_t	out,
					f,
					l;

		if constexpr (SORTED)
		{
			uint32_t	idx = sidx[i];

			p = decode_probe(skeys[i], idx);
			out = idx;
		}
		else
		{
			p = probes[i];
			if (op == GI_OP_RANGE)
				ph = probes_hi[i];
			out = i;
		}
		if (!RUNS || !run_answer<K>(T, op, p, f, l))
			answer<K, G, DYN, WALK, true, SPANS, RUN_TOP>(T, op, p, ph, g, f, l, top_start<K, DYN, SPANS>(T, op, p), GUESS);
		if (g.r == 0)
		{
			first[out] = f;
			last[out] = l;
		}
	}
}

/* Make (sortable key, index) pairs of a probe batch (encode_probe). */
template <class K>
__global__ void
probe_pairs_kernel(const int64_t *probes, uint64_t count,
				   typename KeyLimits<K>::SKey *skeys, uint32_t *sidx)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (uint64_t) gridDim.x * blockDim.x)
		encode_probe<K>(probes[i], (uint32_t) i, skeys[i], sidx[i]);
}

/* Lay the sorted keys out in padded leaf slots (one thread per slot). */
template <class K>
__global__ void
scatter_leaves_kernel(const K *sorted, K *leaves, uint64_t nleaves, Cut cut)
{
	constexpr int M = NODE_BYTES / sizeof(K);

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < nleaves * M;
		 t += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	li = t / M;
		uint32_t	j = (uint32_t) (t % M);
		uint64_t	size = li < cut.h ? cut.ave : cut.ave - 1;

		leaves[t] = j < size ? sorted[gi_cut_start(li, cut.ave, cut.h) + j] : (K) KeyLimits<K>::hi;
	}
}

/*
 * Build one internal level (CUBPT, one thread per key slot): slot j of node i
 * holds the max key of child cs+j (a leaf's last key, or the last real key of
 * an internal child node); unused slots hold the type's max.  Slot 0 also
 * writes the node's child prefix sum.
 */
template <class K>
__global__ void
build_level_kernel(K *nodes, uint32_t *prefix, const K *leaves, const K *leaf_max,
				   uint64_t cnt, uint64_t off, Cut cut, uint64_t child_off,
				   bool bottom, Cut child_cut, Cut leaf_cut, uint64_t nleaves)
{
	constexpr int M = NODE_BYTES / sizeof(K);

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < cnt * M;
		 t += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	i = t / M;
		uint32_t	j = (uint32_t) (t % M);
		uint64_t	cs = gi_cut_start(i, cut.ave, cut.h);
		uint64_t	nch = i < cut.h ? cut.ave : cut.ave - 1;
		K			key = (K) KeyLimits<K>::hi;

		if (j < nch)
		{
			uint64_t	c = cs + j;

			if (bottom && leaf_max)
				key = leaf_max[c];	/* insertable form: from the directory */
			else if (bottom)
				key = leaves[c * M + (c < leaf_cut.h ? leaf_cut.ave : leaf_cut.ave - 1) - 1];
			else
			{
				uint64_t	cn = c < child_cut.h ? child_cut.ave : child_cut.ave - 1;

				key = nodes[(child_off + c) * M + cn - 1];
			}
		}
		nodes[(off + i) * M + j] = key;
		if (j == 0)
			prefix[off + i] = (uint32_t) (child_off + cs);
		if (t == 0 && bottom)
			prefix[off + cnt] = (uint32_t) (child_off + nleaves);	/* sentinel */
	}
}

/* A split top table entry: node a and code in the low word, the separator's
 * offset off in its bucket (in [0, 2^width)) cut to its top bits in the high
 * one (top_start). */
template <class K>
__device__ __forceinline__ uint64_t
split_entry(typename KeyLimits<K>::SKey off, int cut, uint32_t code, uint32_t a)
{
	return (uint64_t) (off >> cut) << 32 | (uint64_t) code << TOP_LEVEL_SHIFT | a;
}

/*
 * The top table (TreeDev.top), a thread a bucket: the deepest node that both
 * the lower-bound descent of the bucket's smallest key and the upper-bound
 * descent of its largest key pass (for the bucket holding kmax, the lower
 * bound of kmax: no upper-bound descent is made for kmax, answer() ends
 * those runs at n).  Any other descent for a key of the bucket ends in a
 * leaf between those two, and a node's subtree is a run of consecutive
 * leaves, so it passes that node too.  Where the two descents end in two
 * neighbouring leaves, the entry is split instead: the left one and the
 * separator between them, its largest key (keys: the sorted keys) for
 * top_start to compare with; where they end at most SPAN_MAX leaves
 * apart, a span of those leaves, whose largest keys descend compares (in
 * tables of 8-byte entries that reach the leaves: levels, the tree's
 * internal levels, equals T.nint).  Else, where they part at the node above
 * two neighbouring leaves' parents (a bucket offset of at most 32 bits),
 * a split of the two parents.  T.arith is off: children from the prefix
 * sums.
 */
template <class K>
__global__ void
top_table_kernel(TreeDev<K> T, uint32_t *top, int levels, const K *keys)
{
	typedef typename KeyLimits<K>::SKey U;
	constexpr int M = NODE_BYTES / sizeof(K);

	for (uint64_t b = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; b < T.top_n;
		 b += (uint64_t) gridDim.x * blockDim.x)
	{
		const int	width = top_bucket_width(b, T.top_shift, T.top_log),
					cut = width > SEP_WORD_BITS ? width - SEP_WORD_BITS : 0;
		U			lo = top_bucket_lo<U>(b, T.top_shift, T.top_log);
		U			hi = lo | (((U) 1 << width) - 1);
		bool		last = b == T.top_n - 1;
		K			klo = (K) ((U) T.top_lo + lo);
		K			khi = last ? T.top_hi : (K) ((U) T.top_lo + hi);
		uint32_t	node = 0;
		int			l = 0;
		uint64_t	entry = 0;

		for (; l < T.nint; l++)
		{
			const K    *p = T.nodes + (size_t) node * M;
			uint32_t	c0 = first_child(T, node, l);
			uint32_t	a = c0 + thread_rank<K, false>(p, klo);
			uint32_t	z = c0 + (last ? thread_rank<K, false>(p, khi) : thread_rank<K, true>(p, khi));

			if (a != z)
			{
				bool		parents = T.top_split && l == levels - 2 && cut == 0;

				if (T.top_split && T.nint == levels)
				{
					/*
					 * The two descents on to the leaves (none left where
					 * a and z are leaves): neighbouring leaves make a
					 * split entry, a few more a span, so that no descent
					 * for a key of the bucket starts above the leaves.
					 */
					uint32_t	na = a,
								nz = z;

					for (int m = l + 1; m < T.nint; m++)
					{
						const K    *pa = T.nodes + (size_t) na * M,
								   *pz = T.nodes + (size_t) nz * M;

						na = first_child(T, na, m) + thread_rank<K, false>(pa, klo);
						nz = first_child(T, nz, m) +
							(last ? thread_rank<K, false>(pz, khi) : thread_rank<K, true>(pz, khi));
					}
					if (nz == na + 1)
					{			/* leaf na's largest key separates them */
						uint32_t	li = na - T.inodes;

						entry = split_entry<K>((U) keys[gi_cut_start(li + 1, T.leaf_ave, T.leaf_h) - 1] - (U) klo,
											   cut, TOP_LEVEL_SPLIT, na);
						break;
					}
					if (nz - na <= SPAN_MAX)
					{
						entry = (uint64_t) (nz - na) << 32 |
							(uint64_t) TOP_LEVEL_SPAN << TOP_LEVEL_SHIFT | na;
						break;
					}
				}
				if (z == a + 1 && parents)	/* a's largest key, this node's slot */
					entry = split_entry<K>((U) p[a - c0] - (U) klo, cut, TOP_LEVEL_SPLIT_PARENT, a);
				break;
			}
			node = a;
		}
		if (!entry)
			entry = (uint32_t) l << TOP_LEVEL_SHIFT | node;
		if (T.top_split)
			reinterpret_cast<uint64_t *>(top)[b] = entry;
		else
			top[b] = (uint32_t) entry;
	}
}

/*
 * How well each bucket map of the top table fits the sorted keys: for
 * samples at nsamples evenly spaced ranks, how many neighbouring pairs
 * share a bucket under linear buckets of 2^shift values (shared[0]) and
 * under log-scale ones of log mantissa bits (shared[1]; top_bucket).  A
 * pair sharing one means a bucket spans more keys than the spacing, and
 * the descents of its probes start higher up.
 */
template <class K>
__global__ void
top_sample_kernel(const K *keys, uint64_t n, uint64_t nsamples, K kmin, int shift, int log,
				  unsigned long long *shared)
{
	typedef typename KeyLimits<K>::SKey U;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x + 1; i < nsamples;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		U			a = (U) keys[(i - 1) * (n - 1) / (nsamples - 1)] - (U) kmin,
					c = (U) keys[i * (n - 1) / (nsamples - 1)] - (U) kmin;
		unsigned	mask = __activemask();
		unsigned	lin = __ballot_sync(mask, top_bucket<U>(a, shift, 0) == top_bucket<U>(c, shift, 0)),
					lg = __ballot_sync(mask, top_bucket<U>(a, 0, log) == top_bucket<U>(c, 0, log));

		if ((int) (threadIdx.x & 31) == __ffs(mask) - 1)
		{
			atomicAdd(&shared[0], (unsigned long long) __popc(lin));
			atomicAdd(&shared[1], (unsigned long long) __popc(lg));
		}
	}
}

/*
 * Whether the thread search takes the guessed leaf sector by default
 * (GiGpuPolicy.leaf_guess 0) in a tree of shape g: when its nodes are many
 * times the L2 size, so that a leaf comes from memory, where one sector
 * instead of two or three dependent ones pays.  H100, 2026-11-26 (bench/
 * kernel --paths, column "no leaf guess", results-h100-2026-11-26m.txt):
 * random 10^8 point probes over 10^8 int32 keys 13.95 with it against
 * 12.27 without; over 10^6-10^7 keys (the leaves in L2) 0.81-1.30x in the
 * first run (-26k), mostly slower; sorted and clustered batches slower
 * everywhere (0.81x), hence only behind the sample's GATE_SCATTERED.
 */
static bool
guess_tree(const Geo *g)
{
	return (g->leaf.nodes + g->inodes) * (uint64_t) NODE_BYTES > GUESS_TREE_L2X * gi_gpu_l2_bytes();
}

/*
 * Buckets (as bits) of the top table of a tree of shape g: about two a
 * leaf, at most 2^TOP_MAX_BITS; where its entries stop at the leaves'
 * parent (guess_tree), about TOP_PER_PARENT a parent, since finer buckets
 * would name the same nodes.  That also keeps the table's share of L2
 * small beside the parents.  H100, 2026-11-26, 10^8 int32 uniform keys
 * (bench/kernel at 10^8 keys, four runs in one call): random point probes
 * 13.77 (4 a parent), 13.89 (2), 12.49 / 12.63 (2 a leaf: 8 MB); clustered
 * ones 33.27, 32.78 and 34.03 / 34.29; 2 a parent made the clustered int64
 * batch slower than binary search.  Tables of 8-byte entries (build_top)
 * take half as many buckets.
 */
static int
top_bits(const Geo *g)
{
	int			b = 4;
	uint64_t	units = 2 * g->leaf.nodes;

	if (guess_tree(g) && g->nint > 1)
		units = TOP_PER_PARENT * g->lev[g->nint - 1].nodes;
	while (b < TOP_MAX_BITS && (1ull << b) < units)
		b++;
	return b;
}

/* Device bytes the top table of a tree of shape g may take (0: none, for a
 * single leaf, or node numbers past the entry's 28 bits). */
static uint64_t
top_bytes(const Geo *g)
{
	if (g->n == 0 || g->nint == 0 || g->inodes + g->leaf.nodes > TOP_NODE_MASK)
		return 0;
	return sizeof(uint32_t) << top_bits(g);
}

/* Where the run table starts in the top table's buffer: after its nb
 * entries, 8-byte aligned. */
static inline uint64_t
top_runs_offset(uint64_t nb, bool split)
{
	return (nb * (split ? sizeof(uint64_t) : sizeof(uint32_t)) + 7) & ~(uint64_t) 7;
}

#define RUNS_SHARE		8			/* a run table where one key in this many
									 * lies among its values, at least */

/* The keys <= t among n (< 2^32) sorted keys, into *count (one thread). */
template <class K>
__global__ void
count_below_kernel(const K *keys, uint64_t n, K t, unsigned long long *count)
{
	*count = bound_rank<K, true>(keys, t, 0, (uint32_t) n);
}

/* The run table (TreeDev.runs): entry v = [lower_bound, upper_bound) of key
 * kmin + v in the n (< 2^32) sorted keys (bound_rank). */
template <class K>
__global__ void
top_runs_kernel(const K *keys, uint64_t n, K kmin, uint64_t runs_n, uint2 *runs)
{
	typedef typename KeyLimits<K>::SKey U;

	for (uint64_t v = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; v < runs_n;
		 v += (uint64_t) gridDim.x * blockDim.x)
	{
		K			t = (K) ((U) kmin + (U) v);
		uint32_t	lb = bound_rank<K, false>(keys, t, 0, (uint32_t) n);

		runs[v] = make_uint2(lb, bound_rank<K, true>(keys, t, lb, (uint32_t) n));
	}
}

/*
 * Build the top table of the static tree (nodes, prefix) of shape g whose
 * keys run from kmin to kmax, on stream st, synchronized, into *top (its
 * table NULL when the tree has none: top_bytes 0, or a single distinct
 * key), with a run table of at most runs_bytes where the keys have one.
 * A bucket spans 2^shift key values, so
 * that the key range fills at most 2^top_bits buckets of 4 bytes, or,
 * where entries may split (top->split: trees whose entries reach the
 * leaves, not guess_tree), half as many of 8 bytes: the same bytes.  H100,
 * 2026-11-27 (bench/kernel/results-h100-2026-11-27-split-steps.md):
 * doubling the table instead cost clustered int64 batches over 10^8 keys
 * a fifth (22.5 against 28.2 x 10^9 q/s), and splitting the parents of a
 * guess_tree's leaves at half the buckets cost its lognormal int32 batches
 * 6-13 %.
 */
template <class K>
static GiStatus
build_top(const Geo *g, const K *nodes, const uint32_t *prefix, const K *keys, K kmin, K kmax,
		  cudaStream_t st, uint64_t runs_bytes, GpuTop *top, GiError *err)
{
	typedef typename KeyLimits<K>::SKey U;
	const U		range = (U) kmax - (U) kmin;
	const bool	guess = guess_tree(g) && g->nint > 1;
	int			B = top_bits(g);
	int			bits = 0,
				shift,
				log = 0;
	bool		split;
	uint64_t	nb;
	TreeDev<K>	T;
	DevBuf		buf;

	memset(top, 0, sizeof(*top));
	top->lo = kmin;
	top->hi = kmax;
	if (top_bytes(g) == 0 || range == 0)
		return GI_OK;
	while (bits < (int) sizeof(U) * 8 && (range >> bits) != 0)
		bits++;
	split = !guess;
	if (split)
		B--;
	shift = bits > B ? bits - B : 0;
	nb = (uint64_t) (range >> shift) + 1;	/* <= 2^B */
	if (shift > 0 && top_bucket<U>(range, 0, 1) < ((uint64_t) 1 << B))
	{
		/*
		 * Log-scale buckets, as many as fit, where the keys' sample shares
		 * a fifth fewer of them than linear ones: keys piled up near kmin
		 * (lognormal ones: over 10^6 int32 keys, 56 % in the first of the
		 * linear buckets, whose probes started near the root).
		 */
		DevBuf		cnt;
		unsigned long long shared[2];
		uint64_t	nsamples = g->n < ((uint64_t) 1 << B) ? g->n : (uint64_t) 1 << B;
		int			m = 1;

		while (top_bucket<U>(range, 0, m + 1) < ((uint64_t) 1 << B))
			m++;
		CKS(gi_gpu_alloc(cnt, sizeof(shared), "a counter", err));
		CK(cudaMemsetAsync(cnt.p, 0, sizeof(shared), st));
		top_sample_kernel<K><<<gi_gpu_grid(nsamples, 256), 256, 0, st>>>(keys, g->n, nsamples, kmin, shift, m,
																		 (unsigned long long *) cnt.p);
		CKL("top_sample_kernel");
		CK(cudaMemcpyAsync(shared, cnt.p, sizeof(shared), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		if (shared[1] * 5 < shared[0] * 4)
		{
			log = m;
			shift = 0;
			nb = top_bucket<U>(range, 0, m) + 1;
		}
	}
	/*
	 * The run table: an entry for each of the first key values from kmin,
	 * as many as runs_bytes (the room the caller gives it) holds, where at
	 * least an eighth of the keys lie among them (keys piled up near their
	 * minimum, or spanning few values: not uniform ones), ranks under 2^32.
	 * Whatever the buckets: run_answer indexes it by the key's offset.
	 */
	uint64_t	runs_n = g->n < UINT32_MAX ? runs_bytes / sizeof(uint2) : 0;

	if ((U) runs_n > range)
		runs_n = (uint64_t) range + 1;
	if (runs_n > 0)
	{
		DevBuf		cnt;
		unsigned long long below = 0;

		CKS(gi_gpu_alloc(cnt, sizeof(below), "a counter", err));
		count_below_kernel<K><<<1, 1, 0, st>>>(keys, g->n, (K) ((U) kmin + (U) (runs_n - 1)),
												(unsigned long long *) cnt.p);
		CKL("count_below_kernel");
		CK(cudaMemcpyAsync(&below, cnt.p, sizeof(below), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		if (below * RUNS_SHARE < g->n)
			runs_n = 0;
	}
	CKS(gi_gpu_alloc(buf, top_runs_offset(nb, split) + runs_n * sizeof(uint2), "the top table", err));
	memset(&T, 0, sizeof(T));
	T.nodes = nodes;
	T.prefix = prefix;
	/*
	 * Where the guessed leaf sector is the default, an entry names at most
	 * the leaves' parent: a descent that starts at a leaf has no
	 * separators to guess from (the kernel stops at level T.nint).
	 */
	T.nint = g->nint - (guess ? 1 : 0);
	T.inodes = (uint32_t) g->inodes;
	T.kmin = T.top_lo = kmin;
	T.kmax = T.top_hi = kmax;
	T.arith = false;
	T.top_n = (uint32_t) nb;
	T.top_shift = shift;
	T.top_log = log;
	T.top_split = split;
	T.leaf_ave = g->leaf.ave;
	T.leaf_h = g->leaf.h;
	top_table_kernel<K><<<gi_gpu_grid(nb, 256), 256, 0, st>>>(T, (uint32_t *) buf.p, g->nint, keys);
	CKL("top_table_kernel");
	if (runs_n > 0)
	{
		top_runs_kernel<K><<<gi_gpu_grid(runs_n, 256), 256, 0, st>>>(
			keys, g->n, kmin, runs_n, (uint2 *) ((char *) buf.p + top_runs_offset(nb, split)));
		CKL("top_runs_kernel");
	}
	CK(cudaStreamSynchronize(st));
	top->table = (uint32_t *) buf.release();
	top->split = split;
	top->n = (uint32_t) nb;
	top->shift = shift;
	top->log = log;
	top->runs = (uint32_t) runs_n;
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Images                                                                    */
/* ------------------------------------------------------------------------ */

struct GiGpuScratch
{
	size_t		cap;			/* probes a sorted pass or a sampled segment
								 * takes (query_chunk) */
	int			kw;
	void	   *skeys[2];
	uint32_t   *sidx[2];
	void	   *temp;
	size_t		temp_bytes;
	int		   *flag;			/* GATE_SEGMENTS ints: the order sample's
								 * answers, a segment each */
};

/* Device bytes the image itself will hold. */
static uint64_t
image_bytes(const Geo *g, int kw)
{
	if (g->n == 0)
		return 0;
	return g->leaf.nodes * NODE_BYTES + g->inodes * NODE_BYTES + (g->inodes + 1) * sizeof(uint32_t) +
		top_bytes(g);
}

/* Free an image's device memory and stream. */
static void
image_release(GpuImage *img)
{
	if (!img)
		return;
	if (img->d_leaves)
		cudaFree(img->d_leaves);
	if (img->d_nodes)
		cudaFree(img->d_nodes);
	if (img->d_prefix)
		cudaFree(img->d_prefix);
	if (img->top.table)
		cudaFree(img->top.table);
	gi_gpu_btree_ins_free(img->ins);
	if (img->stream)
		cudaStreamDestroy(img->stream);
	free(img);
}

/* Owns a half-built image; frees it unless released. */
struct ImageGuard
{
	GpuImage   *img = nullptr;
	~ImageGuard() { image_release(img); }
};

/*
 * Validate params, compute the shape, check the memory limit and allocate an
 * image with its key, node and prefix arrays (keys not yet filled).
 */
static GiStatus
image_create(const GiBuildParams *params, size_t n, ImageGuard &guard, GiError *err)
{
	GpuImage   *img;
	int			kw;
	uint64_t	bytes;
	DevBuf		k, nd, pf;

	CKS(gi_gpu_need_device(err));
	if (params->structure == GI_STRUCT_VEB)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"the van Emde Boas structure is not implemented on the GPU yet");
	if (params->structure != GI_STRUCT_BTREE)
		return gi_set_error(err, GI_ERR_INVALID, "unknown structure %d", (int) params->structure);
	if (params->key_bytes != 2 && params->key_bytes != 4 && params->key_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "key width %d is not 2, 4 or 8", params->key_bytes);
	kw = params->key_bytes == 8 ? 8 : 4;
	img = (GpuImage *) calloc(1, sizeof(GpuImage));
	if (!img)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for a GPU image");
	guard.img = img;
	img->kw = kw;
	geo_compute(n, NODE_BYTES / kw, &img->geo);
	if (img->geo.inodes + img->geo.leaf.nodes >= UINT32_MAX)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"%zu entries are more than the GPU B+ tree indexes (2^32 nodes)", n);
	bytes = image_bytes(&img->geo, kw);
	if (params->device_memory_limit && bytes > params->device_memory_limit)
		return gi_set_error(err, GI_ERR_DEVICE_OOM,
							"the GPU image of %zu entries needs %llu bytes of device memory, "
							"over the limit of %zu bytes (gpuidx.device_memory_limit)",
							n, (unsigned long long) bytes, params->device_memory_limit);
	img->hdr.engine = GI_ENGINE_GPU;
	img->hdr.structure = GI_STRUCT_BTREE;
	img->hdr.key_bytes = params->key_bytes;
	img->hdr.n = n;
	img->mem_limit = params->device_memory_limit;
	snprintf(img->device_name, sizeof(img->device_name), "%s", gi_gpu_device_name());
	CK(cudaStreamCreateWithFlags(&img->stream, cudaStreamNonBlocking));
	CKS(gi_gpu_alloc(k, img->geo.leaf.nodes * NODE_BYTES, "the leaves", err));
	CKS(gi_gpu_alloc(nd, img->geo.inodes * NODE_BYTES, "the internal nodes", err));
	CKS(gi_gpu_alloc(pf, n ? (img->geo.inodes + 1) * sizeof(uint32_t) : 0, "the child prefix sums", err));
	img->d_leaves = k.release();
	img->d_nodes = nd.release();
	img->d_prefix = (uint32_t *) pf.release();
	img->device_bytes = bytes;
	return GI_OK;
}

/* Lay n sorted device keys out as a static tree of geometry g: padded leaves,
 * internal levels and their child prefix sums, on stream st. */
template <class K>
static GiStatus
lay_out_static(const Geo *g, const K *keys, K *leaves, K *nodes, uint32_t *prefix,
			   cudaStream_t st, GiError *err)
{
	scatter_leaves_kernel<K><<<gi_gpu_grid(g->leaf.nodes * (NODE_BYTES / sizeof(K)), 256), 256, 0, st>>>(
		keys, leaves, g->leaf.nodes, g->leaf);
	CKL("scatter_leaves_kernel");
	for (int l = g->nint - 1; l >= 0; l--)
	{
		bool		bottom = l == g->nint - 1;
		uint64_t	slots = g->lev[l].nodes * (NODE_BYTES / sizeof(K));

		build_level_kernel<K><<<gi_gpu_grid(slots, 256), 256, 0, st>>>(
			nodes, prefix, leaves, (const K *) NULL, g->lev[l].nodes, g->off[l], g->lev[l],
			g->off[l + 1], bottom, bottom ? Cut{0, 0, 0} : g->lev[l + 1], g->leaf,
			g->leaf.nodes);
		CKL("build_level_kernel");
	}
	if (g->nint == 0)			/* a single leaf: no internal nodes */
		CK(cudaMemsetAsync(prefix, 0, sizeof(uint32_t), st));
	return GI_OK;
}

/* Build leaves and internal levels from sorted device keys; set the distinct count and ends. */
template <class K>
static GiStatus
build_levels(GpuImage *img, const K *keys, GiError *err)
{
	const Geo  *g = &img->geo;
	cudaStream_t st = img->stream;
	DevBuf		cnt;
	unsigned long long changes = 0;
	K			ends[2];

	if (g->n == 0)
		return GI_OK;
	CKS(lay_out_static<K>(g, keys, (K *) img->d_leaves, (K *) img->d_nodes, img->d_prefix, st, err));
	CKS(gi_gpu_alloc(cnt, sizeof(unsigned long long), "a counter", err));
	CK(cudaMemsetAsync(cnt.p, 0, sizeof(unsigned long long), st));
	gi_gpu_count_changes_kernel<K><<<gi_gpu_grid(g->n, 256), 256, 0, st>>>(keys, g->n, (unsigned long long *) cnt.p);
	CKL("gi_gpu_count_changes_kernel");
	CK(cudaMemcpyAsync(&changes, cnt.p, sizeof(changes), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&ends[0], keys, sizeof(K), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&ends[1], keys + g->n - 1, sizeof(K), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	img->distinct = changes + 1;
	img->kmin = ends[0];
	img->kmax = ends[1];
	/* the run table takes at most the table's own bytes, within the limit */
	uint64_t	runs_room = top_bytes(g);

	if (img->mem_limit)
		runs_room = img->device_bytes >= img->mem_limit ? 0 :
			std::min<uint64_t>(runs_room, img->mem_limit - img->device_bytes);
	CKS(build_top<K>(g, (const K *) img->d_nodes, img->d_prefix, keys, ends[0], ends[1], st,
					 runs_room, &img->top, err));
	img->device_bytes += (uint64_t) img->top.runs * sizeof(uint2);
	return GI_OK;
}

/* Fail with GI_ERR_INVALID if the image's keys are not ascending. */
template <class K>
static GiStatus
check_sorted(GpuImage *img, const K *keys, GiError *err)
{
	DevBuf		flag;
	int			h = 0;

	if (img->geo.n < 2)
		return GI_OK;
	CKS(gi_gpu_alloc(flag, sizeof(int), "a flag", err));
	CK(cudaMemsetAsync(flag.p, 0, sizeof(int), img->stream));
	gi_gpu_unsorted_flag_kernel<K><<<gi_gpu_grid(img->geo.n, 256), 256, 0, img->stream>>>(
		keys, img->geo.n, (int *) flag.p);
	CKL("gi_gpu_unsorted_flag_kernel");
	CK(cudaMemcpyAsync(&h, flag.p, sizeof(int), cudaMemcpyDeviceToHost, img->stream));
	CK(cudaStreamSynchronize(img->stream));
	if (h)
		return gi_set_error(err, GI_ERR_INVALID, "keys given to build are not sorted ascending");
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */
/* ------------------------------------------------------------------------ */

/* Allocate query scratch for chunks of up to cap probes. */
template <class K>
static GiStatus
scratch_create(size_t cap, GiGpuScratch **out, GiError *err)
{
	typedef typename KeyLimits<K>::SKey SKey;
	GiGpuScratch *s;
	DevBuf		b[6];
	size_t		tb = 0;

	*out = NULL;
	cap = std::min<size_t>(std::max<size_t>(cap, 1), QCHUNK);
	{
		cub::DoubleBuffer<SKey> dk(nullptr, nullptr);
		cub::DoubleBuffer<uint32_t> dv(nullptr, nullptr);

		CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, dk, dv, (int64_t) cap, 0,
										   (int) sizeof(SKey) * 8));
	}
	CKS(gi_gpu_alloc(b[0], cap * sizeof(SKey), "probe sort keys", err));
	CKS(gi_gpu_alloc(b[1], cap * sizeof(SKey), "probe sort keys", err));
	CKS(gi_gpu_alloc(b[2], cap * sizeof(uint32_t), "probe sort indexes", err));
	CKS(gi_gpu_alloc(b[3], cap * sizeof(uint32_t), "probe sort indexes", err));
	CKS(gi_gpu_alloc(b[4], tb ? tb : 16, "probe sort scratch", err));
	CKS(gi_gpu_alloc(b[5], GATE_SEGMENTS * sizeof(int), "the order sample's gates", err));
	CK(cudaMemset(b[5].p, 0, GATE_SEGMENTS * sizeof(int)));	/* GATE_PER_PROBE until a sample */
	s = (GiGpuScratch *) calloc(1, sizeof(GiGpuScratch));
	if (!s)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory");
	s->cap = cap;
	s->kw = sizeof(K);
	s->skeys[0] = b[0].release();
	s->skeys[1] = b[1].release();
	s->sidx[0] = (uint32_t *) b[2].release();
	s->sidx[1] = (uint32_t *) b[3].release();
	s->temp = b[4].release();
	s->temp_bytes = tb ? tb : 16;
	s->flag = (int *) b[5].release();
	*out = s;
	return GI_OK;
}

/* The top table of a static copy laid out from n sorted keys (its ends
 * read back from them), with its run table where the keys have one (room
 * as a bulk build gives it: gi_gpu_btree_snapshot left the copy's margin
 * under the limit), on stream st, synchronized; on failure the copy is
 * freed. */
template <class K>
static GiStatus
static_top(GpuStatic *s, const K *sorted, uint64_t n, cudaStream_t st, GiError *err)
{
	K			ends[2];
	GiStatus	rc;

	if (cudaMemcpyAsync(&ends[0], sorted, sizeof(K), cudaMemcpyDeviceToHost, st) != cudaSuccess ||
		cudaMemcpyAsync(&ends[1], sorted + n - 1, sizeof(K), cudaMemcpyDeviceToHost, st) != cudaSuccess ||
		cudaStreamSynchronize(st) != cudaSuccess)
		rc = gi_set_error(err, GI_ERR_DEVICE, "reading the static copy's key range: %s",
						  cudaGetErrorString(cudaGetLastError()));
	else
		rc = build_top<K>(&s->geo, (const K *) s->nodes, s->prefix, sorted, ends[0], ends[1], st,
						  top_bytes(&s->geo), &s->top, err);
	if (rc != GI_OK)
		gi_gpu_btree_static_free(s);
	else
		s->bytes += (uint64_t) s->top.runs * sizeof(uint2);
	return rc;
}

/* gi_gpu_btree_static_build (gpu_btree.cuh). */
GiStatus
gi_gpu_btree_static_build(int kw, const void *sorted, uint64_t n, cudaStream_t st,
						  GpuStatic *out, GiError *err)
{
	DevBuf		k,
				nd,
				pf;

	memset(out, 0, sizeof(*out));
	geo_compute(n, NODE_BYTES / kw, &out->geo);
	if (n == 0 || out->geo.inodes + out->geo.leaf.nodes >= UINT32_MAX)
		return gi_set_error(err, GI_ERR_UNSUPPORTED, "no static copy of %llu entries",
							(unsigned long long) n);
	CKS(gi_gpu_alloc(k, out->geo.leaf.nodes * NODE_BYTES, "the static copy's leaves", err));
	CKS(gi_gpu_alloc(nd, out->geo.inodes * NODE_BYTES, "the static copy's internal nodes", err));
	CKS(gi_gpu_alloc(pf, (out->geo.inodes + 1) * sizeof(uint32_t), "the static copy's prefix sums", err));
	if (kw == 4)
		CKS(lay_out_static<int32_t>(&out->geo, (const int32_t *) sorted, (int32_t *) k.p,
									(int32_t *) nd.p, (uint32_t *) pf.p, st, err));
	else
		CKS(lay_out_static<int64_t>(&out->geo, (const int64_t *) sorted, (int64_t *) k.p,
									(int64_t *) nd.p, (uint32_t *) pf.p, st, err));
	out->leaves = k.release();
	out->nodes = nd.release();
	out->prefix = (uint32_t *) pf.release();
	out->bytes = image_bytes(&out->geo, kw);
	if (kw == 4)
		CKS(static_top<int32_t>(out, (const int32_t *) sorted, n, st, err));
	else
		CKS(static_top<int64_t>(out, (const int64_t *) sorted, n, st, err));
	return GI_OK;
}

/* gi_gpu_btree_static_free (gpu_btree.cuh): its arrays (not s itself). */
void
gi_gpu_btree_static_free(GpuStatic *s)
{
	if (!s)
		return;
	cudaFree(s->leaves);
	cudaFree(s->nodes);
	cudaFree(s->prefix);
	if (s->top.table)
		cudaFree(s->top.table);
	memset(s, 0, sizeof(*s));
}

/* Free query scratch. */
static void
scratch_free(GiGpuScratch *s)
{
	if (!s)
		return;
	cudaFree(s->skeys[0]);
	cudaFree(s->skeys[1]);
	cudaFree(s->sidx[0]);
	cudaFree(s->sidx[1]);
	cudaFree(s->temp);
	cudaFree(s->flag);
	free(s);
}

/* Frees scratch allocated for one call. */
struct ScratchGuard
{
	GiGpuScratch *s = nullptr;
	~ScratchGuard() { scratch_free(s); }
};

/* Blocks per SM for a search kernel instantiation (cached). */
template <class K, int G, bool SORTED, bool DYN, bool WALK, bool GUESS, bool RUNS>
static int
search_grid(void)
{
	static std::atomic<int> cached(0);	/* the service's workers share it */
	int			blocks = cached.load(std::memory_order_relaxed);

	if (!blocks)
	{
		int			per_sm = 0;

		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm,
														  btree_search_kernel<K, G, SORTED, DYN, WALK, GUESS, RUNS>, 256, 0) != cudaSuccess || per_sm < 1)
		{
			(void) cudaGetLastError();
			per_sm = 4;
		}
		blocks = per_sm * gi_gpu_sm_count();
		cached.store(blocks, std::memory_order_relaxed);
	}
	return blocks;
}

/* Launch the search kernel for one chunk: the run table's kernel (RUNS)
 * where the tree has one (the thread search, static trees). */
template <class K, int G, bool SORTED, bool DYN, bool WALK = false, bool GUESS = false>
static GiStatus
launch_search(cudaStream_t st, const TreeDev<K> &T, int op, const int64_t *probes,
			  const int64_t *hi, const void *skeys, const uint32_t *sidx,
			  uint64_t count, uint64_t *first, uint64_t *last, const int *gate, GiError *err)
{
	uint64_t	want = (count * G + 255) / 256;

	if constexpr (G == 1 && !DYN)
	{
		if (T.runs && op != GI_OP_RANGE)
		{
			unsigned	grid = (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1),
															 search_grid<K, G, SORTED, DYN, WALK, GUESS, true>());

			btree_search_kernel<K, G, SORTED, DYN, WALK, GUESS, true><<<grid, 256, 0, st>>>(
				T, op, probes, hi, (const typename KeyLimits<K>::SKey *) skeys, sidx, count, first, last, gate);
			CKL("btree_search_kernel");
			return GI_OK;
		}
	}

	unsigned	grid = (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1),
													 search_grid<K, G, SORTED, DYN, WALK, GUESS, false>());

	btree_search_kernel<K, G, SORTED, DYN, WALK, GUESS><<<grid, 256, 0, st>>>(
		T, op, probes, hi, (const typename KeyLimits<K>::SKey *) skeys, sidx, count, first, last, gate);
	CKL("btree_search_kernel");
	return GI_OK;
}

/* Dispatch on the group size (int32: 1..32 lanes, int64: 1..16) and, for
 * the thread search, the leaf walk and the guessed leaf sector: always
 * (T.guess), never, or (T.guess_sampled, behind a sample) the pair of
 * launches btree_search_kernel describes.  The guessing kernels exist for
 * static trees only, each walking as its key width's default
 * (LEAF_WALK_DEFAULT): every combination would cost the build a minute
 * of compiling for kernels no default takes. */
template <class K, bool SORTED, bool DYN>
static GiStatus
launch_search_g(cudaStream_t st, const TreeDev<K> &T, int op, const int64_t *probes,
				const int64_t *hi, const void *skeys, const uint32_t *sidx,
				uint64_t count, uint64_t *first, uint64_t *last, int group, bool walk,
				const int *gate, GiError *err)
{
#define LAUNCH_G(GG) \
	return launch_search<K, GG, SORTED, DYN>(st, T, op, probes, hi, skeys, sidx, count, first, last, gate, err)
	switch (group)
	{
		case 1:
			if constexpr (!DYN)
			{
				constexpr bool W = LEAF_WALK_DEFAULT(K);

				if (T.guess && T.guess_sampled && gate)
					CKS((launch_search<K, 1, SORTED, false, W, true>(st, T, op, probes, hi, skeys, sidx,
																	 count, first, last, gate, err)));
				else if (T.guess && !T.guess_sampled)
					return launch_search<K, 1, SORTED, false, W, true>(st, T, op, probes, hi, skeys, sidx,
																	   count, first, last, gate, err);
			}
			if (walk)
				return launch_search<K, 1, SORTED, DYN, true>(st, T, op, probes, hi, skeys, sidx, count,
															  first, last, gate, err);
			LAUNCH_G(1);
		case 8:
			LAUNCH_G(8);
		case 16:
			LAUNCH_G(16);
		case 32:
			if constexpr (sizeof(K) == 4)
				LAUNCH_G(32);
			LAUNCH_G(16);
		case 4:
			LAUNCH_G(4);
		default:
			LAUNCH_G(2);
	}
#undef LAUNCH_G
}

/*
 * A batch the engine does not sort, in tiles (cuda/gpu_btree_tile.cuh,
 * gpu_btree_stream.cuh): the stream kernel (stream) or the tiled kernel,
 * and behind the order sample (gate) the per-probe kernel for the batches
 * the sample does not tile; sample: the sample runs first (else *gate
 * holds its answer already).  The other arguments as query_chunk passes
 * them: the policy's window and sample rule, and for the tiled kernel its
 * group, run search, dedup and register cap.
 */
template <class K, bool DYN>
static GiStatus
launch_tiles(cudaStream_t st, const TreeDev<K> &T, int op, const int64_t *probes, const int64_t *hi,
			 uint64_t count, uint64_t *first, uint64_t *last, bool stream, int group, bool walk,
			 int run, bool dedup, int min_blocks, int *gate, bool sample, GiError *err)
{
	if (stream)
		CKS((gi_gpu_btree_stream_search<K, DYN>(T, st, op, probes, hi, count, first, last,
												g_policy.window, g_policy.sample_leaves,
												gi_setting_gpu_row_hint(g_policy.row_hint), gate, sample,
												err)));
	else
		CKS((gi_gpu_btree_tile_search<K, DYN>(T, st, op, probes, hi, count, first, last, group,
											  g_policy.window, run, dedup, g_policy.sample_leaves,
											  min_blocks, gate, sample, err)));
	if (gate)
		CKS((launch_search_g<K, false, DYN>(st, T, op, probes, hi, NULL, NULL, count, first, last,
											group, walk, gate, err)));
	return GI_OK;
}

/* The bits a probe batch is sorted on: top N bits below the keys' common prefix. */
template <class K>
static void
sort_bit_range(const GpuImage *img, int *begin, int *end)
{
	typedef typename KeyLimits<K>::SKey SKey;
	const int	B = sizeof(K) * 8;
	SKey		sign = (SKey) 1 << (B - 1);
	SKey		diff = ((SKey) img->kmin ^ sign) ^ ((SKey) img->kmax ^ sign);
	int			hb = -1;
	int			N;

	for (int b = B - 1; b >= 0; b--)
		if ((diff >> b) & 1)
		{
			hb = b;
			break;
		}
	/* Harmonia: N = B - log2(2^B / T * K) = log2(T / K), K keys a line. */
	N = g_policy.sort_bits;
	if (N <= 0)
	{
		double		lines = (double) img->geo.n / (NODE_BYTES / sizeof(K));

		N = 1;
		while (N < B && (double) (1ull << N) < lines)
			N++;
		N = std::min(N, SORT_MAX_BITS);
	}
	*end = hb + 1;
	*begin = std::max(0, *end - N);
}

/*
 * Answer the first of count probes already on the device on stream st, the
 * calling thread's: all of them, unless they may be sorted first (a large
 * batch over a tree many times L2), then as many as the scratch holds (its
 * cap); *done gets how many.  Only the sort needs the scratch's room: a
 * batch answered in its own order is one pass however long, with one wait
 * at its end (H100, 2026-11-27: sorted batches of 10^8 int32 probes over
 * 10^8 keys in chunks of 2^25, each waited for, spent 0.11 of 1.41 ms
 * outside the search kernels).  The image is only read, and every
 * buffer written is the call's own (its scratch and results), so threads
 * may answer batches on one image at once.  *clock:
 * the time (gi_now_ms) the pass starts, on return the time it ended; the
 * caller's reading is reused rather than the clock read again (H100 host,
 * 2026-11-27: each read 60-80 ns, in a call of 15 us at 10^5 probes).
 */
template <class K>
static GiStatus
query_chunk(const GpuImage *img, const GpuStatic *snap, GiOp op, const int64_t *probes,
			const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last, GiGpuScratch *s,
			cudaStream_t st, double *clock, double *sort_ms, double *search_ms, uint64_t *done,
			GiError *err)
{
	typedef typename KeyLimits<K>::SKey SKey;
	const Geo  *g = snap ? &snap->geo : &img->geo;
	bool		dyn = img->ins && !snap;	/* the insertable form's directory */
	TreeDev<K>	T;
	bool		do_sort = false;
	double		t0 = *clock;

	*done = count;
	T.leaves = (const K *) (snap ? snap->leaves : img->d_leaves);
	T.nodes = (const K *) (snap ? snap->nodes : img->d_nodes);
	T.prefix = snap ? snap->prefix : img->d_prefix;
	T.n = g->n;
	T.leaf_ave = g->leaf.ave;
	T.leaf_h = g->leaf.h;
	T.inodes = (uint32_t) g->inodes;
	T.nleaves = (uint32_t) g->leaf.nodes;
	T.nint = g->nint;
	T.kmin = (K) img->kmin;
	T.kmax = (K) img->kmax;
	T.wide = gi_setting_gpu_wide(g_policy.wide == 0 ? -1 : g_policy.wide) > 0;
	{
		int			guess = gi_setting_gpu_leaf_guess(g_policy.leaf_guess);

		/* 0: in trees many times L2, batches the sample finds scattered;
		 * never on the directory (launch_search_g) */
		T.guess = !dyn && (guess > 0 || (guess == 0 && guess_tree(g)));
		T.guess_sampled = guess == 0 && T.guess;	/* a pair of launches where sampled */
	}
	T.top = NULL;
	T.top_n = 0;
	T.top_split = false;
	T.top_shift = 0;
	T.top_log = 0;
	T.top_lo = T.top_hi = 0;
	T.runs = NULL;
	T.runs_n = 0;
	if (!dyn && gi_setting_gpu_top(g_policy.top == 0 ? 1 : g_policy.top) > 0)
	{
		const GpuTop *top = snap ? &snap->top : &img->top;

		T.top = top->table;
		T.top_n = top->n;
		T.top_shift = top->shift;
		T.top_log = top->log;
		T.top_lo = (K) top->lo;
		T.top_hi = (K) top->hi;
		T.top_split = top->split;
		T.runs_n = top->runs;
		if (T.top && T.runs_n > 0)
			T.runs = (const uint2 *) ((const char *) T.top + top_runs_offset(T.top_n, T.top_split));
		else
			T.runs_n = 0;
	}
	T.segs = NULL;
	T.dir_node = NULL;
	T.dir_base = NULL;
	T.seg_shift = 0;
	T.arith = g->nint <= ARITH_LEVELS &&
		gi_setting_gpu_child_arith(g_policy.child_arith == 0 ? 1 : g_policy.child_arith) > 0;
	memset(T.lv_off, 0, sizeof(T.lv_off));
	memset(T.lv_am1, 0, sizeof(T.lv_am1));
	memset(T.lv_h, 0, sizeof(T.lv_h));
	for (int l = 0; T.arith && l < g->nint; l++)
	{							/* (< 2^32 nodes: image_create, recut_inner) */
		T.lv_off[l] = (uint32_t) g->off[l];
		T.lv_off[l + 1] = (uint32_t) g->off[l + 1];
		T.lv_am1[l] = (uint32_t) (g->lev[l].ave - 1);
		T.lv_h[l] = (uint32_t) g->lev[l].h;
	}
	if (dyn)
	{							/* insertable form: leaves via the directory */
		T.segs = (K *const *) img->ins->d_kseg;
		T.dir_node = img->ins->dir.node;
		T.dir_base = img->ins->dir.base;
		T.seg_shift = (uint32_t) img->ins->seg_shift;
		T.nleaves = (uint32_t) img->ins->nleaves;
		T.leaf_ave = T.leaf_h = 0;
	}

	if (op != GI_OP_RANGE && g->n > 0 && img->kmin != img->kmax)
	{
		if (g_policy.sort_mode == 1)
			do_sort = true;
		else if (g_policy.sort_mode < 0)
		{
			uint64_t	tree_bytes = dyn ? gi_gpu_btree_ins_bytes(img->ins) : image_bytes(g, sizeof(K));

			/*
			 * Measured on an H200 (bench/RESULTS.md): with the upper levels
			 * in L2, sorting 10^8 probes costs more than it saves up to
			 * trees of ~1 GB; only trees far larger than L2 pay for it.  On
			 * an H100 (2026-11-24) 10^8 int64 keys (0.86 GB, 17x L2) still
			 * searched faster unsorted (6.4 vs 4.5 x 10^9 q/s), and a sort
			 * would hide a clustered batch from the tiled search.
			 */
			do_sort = count >= SORT_MIN_PROBES && tree_bytes > SORT_TREE_L2X * gi_gpu_l2_bytes();
		}
	}
	if (do_sort)
	{							/* a batch that may be sorted: chunks of the
								 * scratch's room, each checked and sampled
								 * on its own */
		count = std::min<uint64_t>(count, s->cap);
		*done = count;
	}
	if (do_sort && g_policy.sort_mode < 0)
	{							/* already in order? then sorting buys nothing */
		int			h = 0;

		CK(cudaMemsetAsync(s->flag, 0, sizeof(int), st));
		gi_gpu_unsorted_flag_kernel<int64_t><<<gi_gpu_grid(count, 256), 256, 0, st>>>(probes, count, s->flag);
		CKL("gi_gpu_unsorted_flag_kernel");
		CK(cudaMemcpyAsync(&h, s->flag, sizeof(int), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		do_sort = h != 0;
	}
	/* tile 0: batches below gate_min take the per-probe kernel unsampled */
	long long	gate_min = gi_setting_gpu_gate_min(g_policy.gate_min == 0 ? GATE_MIN_DEFAULT :
												   g_policy.gate_min < 0 ? LLONG_MAX :
												   g_policy.gate_min);

	/* the per-probe kernel's group (1: the thread search; the tiled search
	 * takes groups of 2 for it) */
	int			group = gi_setting_gpu_group(g_policy.group);

	/*
	 * The thread search's leaf walk (0: LEAF_WALK_DEFAULT, and for int64
	 * keys also in trees whose top table splits leaves, not guess_tree).
	 * H100, 2026-11-27 (-split-steps.md): with split entries the int64 walk
	 * took clustered 10^6-probe batches over 10^6 keys from 0.86-0.94x to
	 * 1.00-1.06x binary search, random ones 5-9 % faster, sorted ones 0-5 %
	 * slower (still 1.11-1.29x).  Guess trees keep the default measured for
	 * them (0-4 % slower with the walk).
	 */
	int			walk_mode = gi_setting_gpu_leaf_walk(g_policy.leaf_walk);
	bool		walk = walk_mode == 0 ? LEAF_WALK_DEFAULT(K) || T.top_split : walk_mode > 0;

	if (do_sort && g_policy.sort_mode < 0 && !dyn && g_policy.tile == 0 && group <= 8 &&
		(long long) count >= gate_min)
	{
		/*
		 * Out of order, but maybe not scattered: a batch whose tiles share
		 * leaves (runs of nearby keys) is answered in its own order by the
		 * tiled search or the per-probe kernel, as the order sample picks;
		 * only a scattered one is sorted.  H100, 2026-11-26: clustered
		 * batches of 10^8 probes over 10^9 int64 keys took 3.4 ms of
		 * sorting in 8.4-10.5 ms, 0.63-0.73x binary search.
		 */
		int			h = GATE_SCATTERED;

		CKS((gi_gpu_btree_order_sample<K, false>(T, st, op, probes, hi, count, count,
												 g_policy.sample_leaves, s->flag, err)));
		CK(cudaMemcpyAsync(&h, s->flag, sizeof(int), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		do_sort = h == GATE_SCATTERED;
	}

	if (!do_sort && g_policy.tile >= 0 && group <= 8 &&
		!(g_policy.tile == 0 && (long long) count < gate_min))
	{							/* probe order found on the device: a sample of
								 * tiles picks the kernel (tile 0), or tiles */
		int		   *gate = g_policy.tile == 0 ? s->flag : NULL;
		int			run = gi_setting_gpu_run_search(g_policy.run);
		bool		dedup = gi_setting_gpu_dedup(g_policy.dedup == 0 ? 1 : g_policy.dedup) > 0;
		int			min_blocks = gi_setting_gpu_tile_min_blocks(g_policy.tile_min_blocks);
		bool		stream = group == 1 && run < 0 && gi_setting_gpu_stream(g_policy.stream) >= 0;

		uint64_t	nseg = (count + s->cap - 1) / s->cap;
		/* GI_GPU_ONE_PASS -1: a segment at a time (below), for comparison */
		bool		one_pass = gi_setting_gpu_one_pass(0) >= 0;

		/* the tiled kernels over probes [o, o + c), behind gate gt (its
		 * sample run first when smp) */
		auto		tiles_at = [&](uint64_t o, uint64_t c, int *gt, bool smp) -> GiStatus {
			const int64_t *ho = hi ? hi + o : NULL;

			if (dyn)
				return launch_tiles<K, true>(st, T, op, probes + o, ho, c, first + o, last + o, stream,
											 group, walk, run, dedup, min_blocks, gt, smp, err);
			return launch_tiles<K, false>(st, T, op, probes + o, ho, c, first + o, last + o, stream,
										  group, walk, run, dedup, min_blocks, gt, smp, err);
		};

		/*
		 * A batch of several segments of the scratch's room (at most
		 * QCHUNK probes) samples each of them in one launch and reads the
		 * answers back: where they agree it is one pass, else a pass a
		 * segment, each behind its own answer.  H100, 2026-11-27, sorted
		 * batches of 10^8 probes (bench/kernel): in chunks of 2^25, each
		 * sampled and waited for, 0.11 of 1.41 ms (int32 over 10^8 keys)
		 * went outside the search kernels, mostly to each chunk's sample
		 * (one block, the GPU otherwise idle) and kernel tails, and one
		 * pass was 6-9 % faster; but one sample over 10^8 sorted lognormal
		 * int64 probes (dense small keys, then sparse large ones) sent the
		 * whole batch to the per-probe kernel, 17 % slower.  With the stream
		 * kernel's grid over its resident blocks (stream_search_grid), one
		 * pass ran every sorted and clustered 10^8-probe row of the bench over
		 * 10^7 and 10^8 keys 1.01-1.17x faster than a segment at a time
		 * (H100, 2026-11-27).
		 */
		for (uint64_t g0 = 0; one_pass && g0 < nseg; g0 += GATE_SEGMENTS)
		{
			uint64_t	ng = std::min<uint64_t>(nseg - g0, GATE_SEGMENTS),
						o = g0 * s->cap,
						c = std::min<uint64_t>(count - o, ng * s->cap);
			const int64_t *ho = hi ? hi + o : NULL;
			int			h[GATE_SEGMENTS];
			bool		agree = true;

			if (gate && nseg > 1)
			{
				int			rule = stream ? stream_sample_leaves(g_policy.sample_leaves) : g_policy.sample_leaves;

				CKS((dyn ? gi_gpu_btree_order_sample<K, true>(T, st, op, probes + o, ho, c, s->cap, rule, gate, err) :
					 gi_gpu_btree_order_sample<K, false>(T, st, op, probes + o, ho, c, s->cap, rule, gate, err)));
				CK(cudaMemcpyAsync(h, gate, ng * sizeof(int), cudaMemcpyDeviceToHost, st));
				CK(cudaStreamSynchronize(st));
				for (uint64_t i = 1; i < ng; i++)
					agree = agree && h[i] == h[0];
			}
			for (uint64_t i = 0; i < (agree ? 1 : ng); i++)
			{
				uint64_t	oi = o + i * s->cap;

				CKS(tiles_at(oi, agree ? c : std::min<uint64_t>(count - oi, s->cap), gate ? gate + i : NULL,
							 nseg == 1));
			}
		}
		/*
		 * (GI_GPU_ONE_PASS -1) Segments of the scratch's room, each sampled
		 * for its own kernels, one after another on the stream (each
		 * segment's gate is read in stream order), and one wait: the
		 * engine's way until 2026-11-27.
		 */
		for (uint64_t o = 0; !one_pass && o < count; o += s->cap)
			CKS(tiles_at(o, std::min<uint64_t>(count - o, s->cap), gate, true));
		CK(cudaStreamSynchronize(st));
		*clock = gi_now_ms();
		*search_ms += *clock - t0;
		return GI_OK;
	}
	if (!do_sort)
	{
		if (dyn)
			CKS((launch_search_g<K, false, true>(st, T, op, probes, hi, NULL, NULL, count,
												 first, last, group, walk, NULL, err)));
		else
			CKS((launch_search_g<K, false, false>(st, T, op, probes, hi, NULL, NULL, count,
												  first, last, group, walk, NULL, err)));
		CK(cudaStreamSynchronize(st));
		*clock = gi_now_ms();
		*search_ms += *clock - t0;
		return GI_OK;
	}
	int			b0,
				b1;

	sort_bit_range<K>(img, &b0, &b1);
	probe_pairs_kernel<K><<<gi_gpu_grid(count, 256), 256, 0, st>>>(probes, count, (SKey *) s->skeys[0], s->sidx[0]);
	CKL("probe_pairs_kernel");
	cub::DoubleBuffer<SKey> dk((SKey *) s->skeys[0], (SKey *) s->skeys[1]);
	cub::DoubleBuffer<uint32_t> dv(s->sidx[0], s->sidx[1]);
	size_t		tb = s->temp_bytes;

	CK(cub::DeviceRadixSort::SortPairs(s->temp, tb, dk, dv, (int64_t) count, b0, b1, st));
	CK(cudaStreamSynchronize(st));
	double		t1 = gi_now_ms();

	*sort_ms += t1 - t0;
	/* a sorted scattered batch: each probe mostly in a leaf of its own, as
	 * in the random order (the guess where T.guess, not behind a sample) */
	T.guess_sampled = false;
	if (dyn)
		CKS((launch_search_g<K, true, true>(st, T, op, NULL, NULL, dk.Current(), dv.Current(),
											count, first, last, group, walk, NULL, err)));
	else
		CKS((launch_search_g<K, true, false>(st, T, op, NULL, NULL, dk.Current(), dv.Current(),
											 count, first, last, group, walk, NULL, err)));
	CK(cudaStreamSynchronize(st));
	*clock = gi_now_ms();
	*search_ms += *clock - t1;
	return GI_OK;
}

/* Answer a device-resident batch: in one pass, or in chunks of the
 * scratch's capacity where query_chunk sorts them. */
static GiStatus
query_device(const GpuImage *img, const GpuStatic *snap, GiOp op, const int64_t *probes,
			 const int64_t *hi, size_t n, uint64_t *first, uint64_t *last, GiGpuScratch *s,
			 cudaStream_t st, double *clock, double *sort_ms, double *search_ms, GiError *err)
{
	for (size_t off = 0; off < n;)
	{
		uint64_t	done = 0;

		if (img->kw == 4)
			CKS((query_chunk<int32_t>(img, snap, op, probes + off, hi ? hi + off : NULL, n - off,
									  first + off, last + off, s, st, clock, sort_ms, search_ms, &done,
									  err)));
		else
			CKS((query_chunk<int64_t>(img, snap, op, probes + off, hi ? hi + off : NULL, n - off,
									  first + off, last + off, s, st, clock, sort_ms, search_ms, &done,
									  err)));
		off += done;
	}
	return GI_OK;
}

/* Scratch of the image's key type. */
static GiStatus
scratch_for(const GpuImage *img, size_t cap, GiGpuScratch **out, GiError *err)
{
	if (img->kw == 4)
		return scratch_create<int32_t>(cap, out, err);
	return scratch_create<int64_t>(cap, out, err);
}

/* ------------------------------------------------------------------------ */
/* Builds                                                                    */
/* ------------------------------------------------------------------------ */

/* Check sortedness (when asked) and build leaves and levels from the sorted
 * keys on the device, for the key width. */
static GiStatus
finish_build(GpuImage *img, const void *sorted, bool check, GiError *err)
{
	if (img->kw == 4)
	{
		if (check)
			CKS(check_sorted<int32_t>(img, (const int32_t *) sorted, err));
		return build_levels<int32_t>(img, (const int32_t *) sorted, err);
	}
	if (check)
		CKS(check_sorted<int64_t>(img, (const int64_t *) sorted, err));
	return build_levels<int64_t>(img, (const int64_t *) sorted, err);
}

/* The host builds (gi_gpu_build_from_host): the levels, the order checked
 * where the caller promised it. */
static GiStatus
btree_build_from(const GiBuildParams *params, const int64_t *keys, const uint64_t *payloads,
				 size_t n, bool sorted, int64_t *sorted_keys_out,
				 uint64_t *sorted_payloads_out, GiImage **out, GiError *err)
{
	ImageGuard	guard;
	double		t0 = gi_now_ms();

	*out = NULL;
	CKS(image_create(params, n, guard, err));
	GpuImage   *img = guard.img;

	CKS(gi_gpu_build_from_host(img->stream, img->kw, params->key_bytes, keys, payloads, n, sorted,
							   sorted_keys_out, sorted_payloads_out,
							   [img] (const void *k, bool promised, GiError *e) {
								   return finish_build(img, k, promised, e);
							   }, t0, &img->hdr.build, err));
	*out = &img->hdr;
	guard.img = NULL;
	return GI_OK;
}

/* Build from sorted host keys: pinned async upload, then the levels. */
GiStatus
gi_gpu_btree_build(const GiBuildParams *params, const int64_t *keys, size_t n,
				   GiImage **out, GiError *err)
{
	return btree_build_from(params, keys, NULL, n, true, NULL, NULL, out, err);
}

/* Build from unsorted host pairs: upload, CUB sort on the device, levels,
 * and the sorted arrays back to the host when asked. */
GiStatus
gi_gpu_btree_build_unsorted(const GiBuildParams *params, const int64_t *keys,
							const uint64_t *payloads, size_t n,
							int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
							GiImage **out, GiError *err)
{
	return btree_build_from(params, keys, payloads, n, false, sorted_keys_out,
							sorted_payloads_out, out, err);
}

/* Free an image and its device memory. */
void
gi_gpu_btree_free(GiImage *image)
{
	image_release((GpuImage *) image);
}

/* Describe a GPU image. */
void
gi_gpu_btree_info(const GiImage *image, GiImageInfo *info)
{
	const GpuImage *img = (const GpuImage *) image;

	info->engine = GI_ENGINE_GPU;
	info->structure = img->hdr.structure;
	info->key_bytes = img->hdr.key_bytes;
	info->entries = img->hdr.n;
	info->distinct_keys = img->hdr.n ? img->distinct : 0;
	info->levels = img->hdr.n ? img->geo.nint + 1 : 0;
	info->node_order = NODE_BYTES / img->kw;
	info->nodes = img->geo.inodes;
	info->host_bytes = sizeof(GpuImage);
	info->device_bytes = img->device_bytes;
	info->leaves = img->ins ? img->ins->nleaves : (img->hdr.n ? img->geo.leaf.nodes : 0);
	if (img->ins)
	{
		info->device_bytes += gi_gpu_btree_ins_bytes(img->ins);
		info->host_bytes += 2 * img->ins->list_cap * sizeof(void *);
	}
	info->inserted = img->inserted;
	info->insert_batches = img->insert_batches;
	info->last_insert = img->last_insert;
	info->build = img->hdr.build;
	gi_timings_load(&info->last_query, &img->hdr.last_query);
	snprintf(info->device_name, sizeof(info->device_name), "%s", img->device_name);
}

/* ------------------------------------------------------------------------ */
/* Device-resident entry points (gpu_engine.cuh, gpu_btree.cuh)             */
/* ------------------------------------------------------------------------ */

/* Count the top table entries by kind of a static image, or of an
 * insertable one's static copy once a query has built it (gpu_engine.cuh). */
GiStatus
gi_gpu_dev_top_stats(const GiImage *image, uint64_t *entries, uint64_t *split, uint64_t *wide,
					 uint64_t *spans, int *log_bits, uint64_t *runs, GiError *err)
{
	const GpuImage *img = (const GpuImage *) image;
	const GpuStatic *snap = NULL;
	const GpuTop *top;
	size_t		words;

	gi_clear_error(err);
	*entries = *split = *wide = *spans = *runs = 0;
	*log_bits = 0;
	if (image->structure != GI_STRUCT_BTREE)
		return GI_OK;
	if (img->ins && (snap = __atomic_load_n(&img->ins->snap, __ATOMIC_ACQUIRE)) == NULL)
		return GI_OK;
	top = snap ? &snap->top : &img->top;
	if (!top->table)
		return GI_OK;
	*entries = top->n;
	*log_bits = top->log;
	*runs = top->runs;
	if (!top->split)
		return GI_OK;			/* 4-byte entries name nodes only */
	CKS(gi_gpu_need_device(err));
	words = (size_t) top->n * 2;

	uint32_t   *h = (uint32_t *) malloc(words * sizeof(uint32_t));
	cudaError_t e;

	if (!h)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for the top table");
	e = cudaMemcpy(h, top->table, words * sizeof(uint32_t), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
	{
		free(h);
		return gi_gpu_fail(err, e, "reading the top table");
	}
	for (uint32_t b = 0; b < top->n; b++)
		if ((h[2 * b] >> TOP_LEVEL_SHIFT) == TOP_LEVEL_SPAN)
			(*spans)++;
		else if ((h[2 * b] >> TOP_LEVEL_SHIFT) >= TOP_LEVEL_SPLIT_PARENT)
		{
			(*split)++;
			if (top_bucket_width(b, top->shift, top->log) > SEP_WORD_BITS)
				(*wide)++;
		}
	free(h);
	return GI_OK;
}

/* What the order sample of the last query through scratch s picked: the
 * tiled search (GATE_IS_TILES), the stream kernel of runs (GATE_TILES_RUNS).
 * For tests. */
GiStatus
gi_gpu_dev_scratch_gate(const GiGpuScratch *s, bool *tiles, bool *runs, GiError *err)
{
	int			h = 0;

	gi_clear_error(err);
	*tiles = *runs = false;
	CKS(gi_gpu_need_device(err));
	CK(cudaMemcpy(&h, s->flag, sizeof(int), cudaMemcpyDeviceToHost));
	*tiles = GATE_IS_TILES(h);
	*runs = h == GATE_TILES_RUNS;
	return GI_OK;
}

/* Read the query policy. */
void
gi_gpu_dev_get_policy(GiGpuPolicy *p)
{
	*p = g_policy;
}

/* Replace the query policy. */
void
gi_gpu_dev_set_policy(const GiGpuPolicy *p)
{
	g_policy = *p;
	if (g_policy.group != 1 && g_policy.group != 2 && g_policy.group != 4 &&
		g_policy.group != 8 && g_policy.group != 16 && g_policy.group != 32)
		g_policy.group = 1;
	if (g_policy.tile_min_blocks < 2 || g_policy.tile_min_blocks > 4)
		g_policy.tile_min_blocks = 0;
}

/* Build from device-resident keys (and payloads), sorting them if asked. */
GiStatus
gi_gpu_btree_dev_build(const GiBuildParams *params, const void *d_keys,
					   const uint64_t *d_payloads, size_t n, bool sorted,
					   uint64_t *d_payloads_out, GiImage **out, GiError *err)
{
	ImageGuard	guard;
	double		t0 = gi_now_ms();

	*out = NULL;
	CKS(image_create(params, n, guard, err));
	GpuImage   *img = guard.img;

	CKS(gi_gpu_build_from_device(img->stream, img->kw, d_keys, d_payloads, n, sorted, d_payloads_out,
								 [img] (const void *k, bool promised, GiError *e) {
									 return finish_build(img, k, promised, e);
								 }, t0, &img->hdr.build, err));
	*out = &img->hdr;
	guard.img = NULL;
	return GI_OK;
}

/* Allocate reusable query scratch for an image. */
GiStatus
gi_gpu_btree_scratch_create(const GiImage *image, size_t max_probes,
							GiGpuScratch **out, GiError *err)
{
	return scratch_for((const GpuImage *) image, max_probes, out, err);
}

/* Free query scratch. */
void
gi_gpu_btree_scratch_free(GiGpuScratch *s)
{
	scratch_free(s);
}

/* Answer a device-resident batch on stream st; the call's timings into *t. */
GiStatus
gi_gpu_btree_dev_query(const GiImage *image, GiOp op, const int64_t *d_probes,
					   const int64_t *d_hi, size_t nprobes, uint64_t *d_first,
					   uint64_t *d_last, GiGpuScratch *scratch, cudaStream_t st,
					   GiTimings *t, GiError *err)
{
	const GpuImage *img = (const GpuImage *) image;
	ScratchGuard sg;
	double		t0 = gi_now_ms(),
				clock = t0,		/* where the search starts, then ends */
				sort_ms = 0,
				search_ms = 0;

	memset(t, 0, sizeof(*t));
	if (img->geo.n == 0)
	{
		CK(cudaMemsetAsync(d_first, 0, nprobes * 8, st));
		CK(cudaMemsetAsync(d_last, 0, nprobes * 8, st));
		CK(cudaStreamSynchronize(st));
		return GI_OK;
	}
	if (!scratch || scratch->kw != img->kw)
	{
		CKS(scratch_for(img, nprobes, &sg.s, err));
		scratch = sg.s;
		clock = gi_now_ms();
	}
	/*
	 * An insertable image answers from its static copy when the batch is
	 * large enough to pay for building it (once after each insertion:
	 * about 1.5 ms at 10^8 keys on an H100), from its directory otherwise.
	 */
	const GpuStatic *snap = NULL;

	if (img->ins && g_policy.snapshot >= 0 &&
		(g_policy.snapshot == 1 || nprobes >= SNAPSHOT_MIN_PROBES))
	{
		CKS(gi_gpu_btree_snapshot(image, st, &snap, err));
		clock = gi_now_ms();
	}
	CKS(query_device(img, snap, op, d_probes, d_hi, nprobes, d_first, d_last, scratch, st,
					 &clock, &sort_ms, &search_ms, err));
	t->sort_ms = sort_ms;
	t->search_ms = search_ms;
	t->total_ms = clock - t0;	/* the last chunk's end */
	return GI_OK;
}

/* The image's stream (builds and insertions). */
cudaStream_t
gi_gpu_btree_stream(const GiImage *image)
{
	return ((const GpuImage *) image)->stream;
}

/* ------------------------------------------------------------------------ */
/* Shared with gpu_insert.cu (gpu_btree.cuh)                                 */
/* ------------------------------------------------------------------------ */

/* Free one directory set (gpu_btree.cuh). */
void
gi_gpu_btree_dir_free(GpuDir *d)
{
	if (d->node)
		cudaFree(d->node);
	if (d->base)
		cudaFree(d->base);
	if (d->max)
		cudaFree(d->max);
	memset(d, 0, sizeof(*d));
}

/* Free the insertable state and its segments (gpu_btree.cuh). */
void
gi_gpu_btree_ins_free(GpuIns *ins)
{
	if (!ins)
		return;
	for (uint32_t s = 0; s < ins->nsegs; s++)
	{
		if (ins->h_kseg[s])
			cudaFree(ins->h_kseg[s]);
		if (ins->h_pseg[s])
			cudaFree(ins->h_pseg[s]);
	}
	if (ins->d_kseg)
		cudaFree(ins->d_kseg);
	if (ins->d_pseg)
		cudaFree(ins->d_pseg);
	gi_gpu_btree_dir_free(&ins->dir);
	gi_gpu_btree_dir_free(&ins->spare);
	if (ins->inner2)
		cudaFree(ins->inner2);
	if (ins->prefix2)
		cudaFree(ins->prefix2);
	if (ins->rank_keys)
		cudaFree(ins->rank_keys);
	if (ins->snap)
	{
		gi_gpu_btree_static_free(ins->snap);
		free(ins->snap);
	}
	free(ins->h_kseg);
	free(ins->h_pseg);
	free(ins);
}

/* Device bytes of one directory set. */
static uint64_t
dir_bytes(const GpuDir *d, int kw)
{
	return d->cap ? d->cap * (sizeof(uint32_t) + kw) + (d->cap + 1) * sizeof(uint64_t) : 0;
}

/* Device bytes of segments, both directory sets, the spare internal levels,
 * the segment lists, the rank-ordered key copy and the static copy (the
 * internal levels in use are in device_bytes). */
uint64_t
gi_gpu_btree_ins_bytes(const GpuIns *ins)
{
	const GpuStatic *snap;

	if (!ins)
		return 0;
	snap = __atomic_load_n(&ins->snap, __ATOMIC_ACQUIRE);
	return (snap ? snap->bytes : 0) + ins->seg_bytes + dir_bytes(&ins->dir, ins->kw) + dir_bytes(&ins->spare, ins->kw) +
		(ins->inner2 ? ins->inner_cap2 * NODE_BYTES + (ins->inner_cap2 + 1) * sizeof(uint32_t) : 0) +
		2 * ins->list_cap * sizeof(void *) + ins->rank_keys_bytes;
}

/* Build the internal levels over leaf max keys (see gpu_btree_int.cuh). */
template <class K>
static GiStatus
build_inner(cudaStream_t st, const K *leaf_max, uint64_t nleaves, Geo *g,
			void **nodes, uint32_t **prefix, uint64_t *cap, GiError *err)
{
	constexpr int M = NODE_BYTES / sizeof(K);

	geo_inner(nleaves, M, g);
	if (!*nodes || !*prefix || g->inodes + 1 > *cap)
	{							/* room for a quarter more, so that growth is rare */
		uint64_t	want = (g->inodes + 1) * 5 / 4 + 16;
		DevBuf		nd,
					pf;

		CKS(gi_gpu_alloc(nd, want * NODE_BYTES, "the internal nodes", err));
		CKS(gi_gpu_alloc(pf, (want + 1) * sizeof(uint32_t), "the child prefix sums", err));
		if (*nodes)
			cudaFree(*nodes);
		if (*prefix)
			cudaFree(*prefix);
		*nodes = nd.release();
		*prefix = (uint32_t *) pf.release();
		*cap = want;
	}
	for (int l = g->nint - 1; l >= 0; l--)
	{
		bool		bottom = l == g->nint - 1;
		uint64_t	slots = g->lev[l].nodes * M;

		build_level_kernel<K><<<gi_gpu_grid(slots, 256), 256, 0, st>>>(
			(K *) *nodes, *prefix, (const K *) NULL, leaf_max, g->lev[l].nodes,
			g->off[l], g->lev[l], g->off[l + 1], bottom,
			bottom ? Cut{0, 0, 0} : g->lev[l + 1], Cut{0, 0, 0}, nleaves);
		CKL("build_level_kernel");
	}
	if (g->nint == 0)
		CK(cudaMemsetAsync(*prefix, 0, sizeof(uint32_t), st));	/* a single leaf */
	return GI_OK;
}

/* Key-width dispatch of build_inner (gpu_btree.cuh). */
GiStatus
gi_gpu_btree_build_inner(int kw, cudaStream_t st, const void *leaf_max,
						 uint64_t nleaves, Geo *g, void **nodes, uint32_t **prefix,
						 uint64_t *cap, GiError *err)
{
	if (kw == 4)
		return build_inner<int32_t>(st, (const int32_t *) leaf_max, nleaves, g, nodes, prefix,
									cap, err);
	return build_inner<int64_t>(st, (const int64_t *) leaf_max, nleaves, g, nodes, prefix,
								cap, err);
}
