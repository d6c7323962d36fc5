/*
 * cpu_veb.c - the CPU engine's van Emde Boas tree, built in parallel from
 * sorted keys (Mayr et al., "Are van Emde Boas trees viable on the GPU?").
 * The GPU vEB (cuda/gpu_veb.cu) mirrors this file and shares its arithmetic
 * through veb_twin.h; the classic one-at-a-time insertion build (their
 * Algorithm 2), the build-time baseline, is test/common/veb_classic.c.
 *
 * Universe.  Keys are mapped to unsigned words by flipping the sign bit
 * (order preserving): W = 32 bits for 2- and 4-byte keys (depth d = 5),
 * W = 64 bits for 8-byte keys (d = 6).  Only distinct keys enter the tree;
 * run_start[i] is the first entry position of the i-th distinct key
 * (run_start[nd] = n), so a distinct index found by a search becomes the run
 * [run_start[i], run_start[i + 1]) of entries, exactly as the B+ tree
 * returns them.
 *
 * Clusters.  A cluster sits at a slot (s, w): it holds the bits [s, s + w)
 * (counted from the left) of the keys below it.  Its minimum stays in the
 * cluster; the other values go to its children (slot (s + w/2, w/2), keyed
 * by their high half) and their distinct high halves to its summary (slot
 * (s, w/2)).  Slot j of level L (w = W >> L, s = j * w) is a summary slot
 * when j is even and a child slot when j is odd.  Every cluster covers a
 * contiguous range [a, b) of distinct indices: a is its first element
 * (minimum), b the first index whose bits [0, s) differ (Eq. 8), and its
 * values are the distinct bits [s, s + w) in that range.  Clusters with
 * w >= 8 are VebCluster records, with a hash table of their children; the
 * clusters with w = 4 are 16-bit bitmaps, stored inline: a summary as the
 * parent's summary field, a child as a slot of the parent's hash table
 * (with the index of its first element, from which a bit's distinct index
 * is a popcount away).  For the chain of children from the root (s + w = W)
 * the values are whole keys, so a cluster's maximum is at index b - 1.
 *
 * Build (no allocation per node; every step is a loop over keys or clusters
 * whose iterations are independent, run here on gi_cpu_parallel_for and on
 * the GPU as one thread per item):
 *  1. de-duplicate and map the keys;
 *  2. level by level from the top, the first-element bit field of each key
 *     (Fig. 4: bit 2^L - 1 + j for slot j of level L): Eq. 7 marks a child
 *     slot where the prefix [0, s) changes from the previous key, unless an
 *     enclosing slot already starts there; then each cluster found on the
 *     level propagates to the first key after its minimum's run: the first
 *     element of its summary and of its first child;
 *  3. popcount of the bit fields and a prefix sum number the clusters; Eqs.
 *     8-9 size each cluster's hash table (min(b - m, 2^(w/2)) children over
 *     the fill ratio, m the end of the minimum's run); a prefix sum places
 *     the tables; one allocation holds all clusters, one all tables;
 *  4. level by level from the top, each cluster finds its parent through
 *     the levels already linked and enters it (summary field or hash table;
 *     inserts into a shared table use compare-and-swap); the 16-bit leaf
 *     bitmaps are filled from their key ranges as they are entered.
 * Hash tables: linear probing, universal hashing (multiply-add-shift, one
 * random pair per image) reduced to the table size by a multiply-high.
 *
 * Queries.  exists / predecessor / successor walk down without recursion:
 * loops bounded by the fixed depth, and a small array of pending summary
 * frames resolved on the way back; bitmaps are searched with ctz / clz.
 * Probes outside the stored range are answered from the minimum and
 * maximum before any mapping.  Large batches are split over threads and
 * searched in partially sorted blocks, as the B+ tree does.
 *
 * No PostgreSQL headers here.
 */
#include "cpu_engine.h"
#include "veb_twin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH		6		/* levels of clusters, with bitmaps, +1 */
#define BUILD_PER_THREAD	(1 << 16)	/* keys per build thread */
#define PROBES_PER_THREAD	65536	/* probes per query thread */
#define DEFAULT_SORT_MIN	4096	/* sort blocks of at least this many */
#define SORT_BLOCK			(1 << 18)	/* probes sorted together */

/*
 * A hash-table slot, 64 bits, 0 when empty.  A child cluster (w >= 8):
 * the child's high half key in the low 32 bits, cluster number + 1 in the
 * high 32.  A child bitmap (w = 4): the bitmap in bits 0-15, its 4-bit key in
 * bits 16-19, the distinct index of its first value in the high 32 bits.
 */
typedef uint64_t VebSlot;

typedef struct CpuVeb
{
	GiImage		hdr;			/* must be first */
	int			universe;		/* W: 32 or 64 */
	int			leaf_level;		/* level of the 16-bit bitmaps: 3 or 4 */
	uint64_t	nd;				/* distinct keys */
	uint64_t   *run_start;		/* nd + 1 entry positions */
	VebCluster *clusters;
	uint64_t	nclusters;		/* records (w >= 8) */
	uint64_t	nbitmaps;		/* 16-bit leaf clusters */
	VebSlot    *table;
	uint64_t	table_slots;
	uint64_t	hash_a;			/* universal hash: ((a * k + b) >> 32) */
	uint64_t	hash_b;
	int64_t		min_key;
	int64_t		max_key;
	uint64_t	umin;			/* mapped min_key and max_key */
	uint64_t	umax;
	uint64_t	host_bytes;
} CpuVeb;

/* ---------------------------------------------------------------------
 * Words, slots and hashing
 * --------------------------------------------------------------------- */

/* Cluster number of the child keyed by key, or NONE32. */
static inline uint32_t
find_child(const CpuVeb *t, const VebCluster *c, uint32_t key)
{
	const VebSlot *tab = t->table + c->table;
	uint32_t	i;

	if (c->slots == 0)
		return NONE32;
	i = (uint32_t) hash_slot(t->hash_a, t->hash_b, key, c->slots);
	for (;;)
	{
		VebSlot		e = tab[i];

		if (e == 0)
			return NONE32;
		if ((uint32_t) e == key)
			return (uint32_t) (e >> 32) - 1;
		if (++i == c->slots)
			i = 0;
	}
}

/* The child bitmap slot keyed by key (0..15), or 0. */
static inline VebSlot
find_bitmap(const CpuVeb *t, const VebCluster *c, uint32_t key)
{
	const VebSlot *tab = t->table + c->table;
	uint32_t	i;

	if (c->slots == 0)
		return 0;
	i = (uint32_t) hash_slot(t->hash_a, t->hash_b, key, c->slots);
	for (;;)
	{
		VebSlot		e = tab[i];

		if (e == 0)
			return 0;
		if (((e >> 16) & 15) == key)
			return e;
		if (++i == c->slots)
			i = 0;
	}
}

/*
 * Set bits of a 32-bit word.  Portable builds have no popcnt instruction and
 * __builtin_popcount becomes a library call; this is a few inline ops.
 */
static inline int
popcount32(uint32_t v)
{
	v = v - ((v >> 1) & 0x55555555u);
	v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
	v = (v + (v >> 4)) & 0x0F0F0F0Fu;
	return (int) ((v * 0x01010101u) >> 24);
}

/* ---------------------------------------------------------------------
 * Queries
 * --------------------------------------------------------------------- */

/*
 * Predecessor (largest value <= y) among the values of the summary cluster
 * s at level L0 (a bitmap when L0 is the leaf level), as a word of that
 * level; NONE64 if none.  Descends without recursion: a step either enters
 * a child (its result is prefixed with the child's key) or, when the child
 * cannot hold the answer, searches the cluster's own summary for the
 * nearest smaller child, a frame resolved on the way back up.
 */
static inline __attribute__((always_inline)) uint64_t
summary_pred(const CpuVeb *t, uint32_t s, int L0, uint32_t y, const int W)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	frame_cluster[MAX_DEPTH] = {0};
	uint32_t	frame_key[MAX_DEPTH] = {0};	/* child key, or NONE32 for summary */
	int			frame_half[MAX_DEPTH] = {0};
	int			depth = 0;
	uint32_t	cur = s;
	uint64_t	r = NONE64;
	int			L;

#pragma GCC unroll 6
	for (L = L0; L <= leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c;
		uint32_t	h;
		uint32_t	lo;
		uint32_t	child;

		if (w == 4)
		{
			uint32_t	bits = cur & ((2u << y) - 1);

			r = bits ? top_bit(bits) : NONE64;
			break;
		}
		c = &t->clusters[cur];
		if (y >= c->max)
		{
			r = c->max;
			break;
		}
		if (y < c->min)
			break;
		h = y >> half;
		lo = y & (uint32_t) low_mask(half);
		if (half == 4)
		{
			VebSlot		e = find_bitmap(t, c, h);
			uint32_t	bits = slot_bits(e) & ((2u << lo) - 1);

			if (bits)
				r = (h << 4) | top_bit(bits);
			else if ((bits = c->summary & ((1u << h) - 1)) == 0)
				r = c->min;
			else
			{
				uint32_t	hp = top_bit(bits);

				r = (hp << 4) | top_bit(slot_bits(find_bitmap(t, c, hp)));
			}
			break;
		}
		child = find_child(t, c, h);
		frame_cluster[depth] = cur;
		frame_half[depth] = half;
		if (child != NONE32 && lo >= t->clusters[child].min)
		{
			frame_key[depth++] = h;
			cur = child;
			y = lo;
			continue;
		}
		if (h == 0)
		{
			r = c->min;
			break;
		}
		frame_key[depth++] = NONE32;
		cur = c->summary;
		y = h - 1;
	}
	while (depth-- > 0)
	{
		const VebCluster *c = &t->clusters[frame_cluster[depth]];
		int			half = frame_half[depth];

		if (frame_key[depth] != NONE32)
			r = ((uint64_t) frame_key[depth] << half) | r;
		else if (r == NONE64)
			r = c->min;
		else
			r = (r << half) |
				t->clusters[find_child(t, c, (uint32_t) r)].max;
	}
	return r;
}

/* Successor (smallest value >= y) in a summary: summary_pred's mirror. */
static inline __attribute__((always_inline)) uint64_t
summary_succ(const CpuVeb *t, uint32_t s, int L0, uint32_t y, const int W)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	frame_cluster[MAX_DEPTH] = {0};
	uint32_t	frame_key[MAX_DEPTH] = {0};	/* child key, or NONE32 for summary */
	int			frame_half[MAX_DEPTH] = {0};
	int			depth = 0;
	uint32_t	cur = s;
	uint64_t	r = NONE64;
	int			L;

#pragma GCC unroll 6
	for (L = L0; L <= leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c;
		uint32_t	h;
		uint32_t	lo;
		uint32_t	child;

		if (w == 4)
		{
			uint32_t	bits = y < 16 ? cur & ~((1u << y) - 1) & 0xFFFF : 0;

			r = bits ? (uint32_t) __builtin_ctz(bits) : NONE64;
			break;
		}
		c = &t->clusters[cur];
		if (y <= c->min)
		{
			r = c->min;
			break;
		}
		if (y > c->max)
			break;
		h = y >> half;
		lo = y & (uint32_t) low_mask(half);
		if (half == 4)
		{
			VebSlot		e = find_bitmap(t, c, h);
			uint32_t	bits = slot_bits(e) & ~((1u << lo) - 1);

			if (bits)
				r = (h << 4) | (uint32_t) __builtin_ctz(bits);
			else if ((bits = c->summary & 0xFFFF & ~((2u << h) - 1)) == 0)
				r = NONE64;		/* cannot happen: y <= max */
			else
			{
				uint32_t	hn = (uint32_t) __builtin_ctz(bits);

				r = (hn << 4) |
					(uint32_t) __builtin_ctz(slot_bits(find_bitmap(t, c, hn)));
			}
			break;
		}
		child = find_child(t, c, h);
		frame_cluster[depth] = cur;
		frame_half[depth] = half;
		if (child != NONE32 && lo <= t->clusters[child].max)
		{
			frame_key[depth++] = h;
			cur = child;
			y = lo;
			continue;
		}
		if (h == (uint32_t) low_mask(half))
			break;				/* cannot happen: y <= max */
		frame_key[depth++] = NONE32;
		cur = c->summary;
		y = h + 1;
	}
	while (depth-- > 0)
	{
		const VebCluster *c = &t->clusters[frame_cluster[depth]];
		int			half = frame_half[depth];

		if (r == NONE64)
			continue;
		if (frame_key[depth] != NONE32)
			r = ((uint64_t) frame_key[depth] << half) | r;
		else
			r = (r << half) |
				t->clusters[find_child(t, c, (uint32_t) r)].min;
	}
	return r;
}

/*
 * Distinct index of the largest key <= x, for umin <= x < umax: down the
 * root's chain of children, whose values are whole keys and so carry their
 * distinct indexes; a summary search where the chain leaves off.
 */
static inline __attribute__((always_inline)) uint64_t
veb_pred(const CpuVeb *t, uint64_t x, const int W)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	cur = 0;
	uint64_t	y = x;
	int			L;

#pragma GCC unroll 6
	for (L = 0; L < leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c = &t->clusters[cur];
		uint32_t	h = (uint32_t) (y >> half);
		uint32_t	lo = (uint32_t) (y & low_mask(half));
		uint32_t	child;
		uint64_t	hp;

		/* The root's bounds were checked by the caller; y >= min here. */
		if (L > 0 && y >= c->max)
			return c->last;
		if (half == 4)
		{
			VebSlot		e = find_bitmap(t, c, h);
			uint32_t	bits = slot_bits(e) & ((2u << lo) - 1);

			if (bits)
				return slot_first(e) + popcount32(bits) - 1;
			if ((bits = c->summary & ((1u << h) - 1)) == 0)
				return c->first;
			e = find_bitmap(t, c, top_bit(bits));
			return slot_first(e) + popcount32(slot_bits(e)) - 1;
		}
		child = find_child(t, c, h);
		if (child != NONE32 && lo >= t->clusters[child].min)
		{
			cur = child;
			y = lo;
			continue;
		}
		if (h == 0)
			return c->first;
		hp = summary_pred(t, c->summary, L + 1, h - 1, W);
		if (hp == NONE64)
			return c->first;
		return t->clusters[find_child(t, c, (uint32_t) hp)].last;
	}
	return NONE64;				/* not reached */
}

/* Distinct index of the smallest key >= x, for umin < x <= umax. */
static inline __attribute__((always_inline)) uint64_t
veb_succ(const CpuVeb *t, uint64_t x, const int W)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	cur = 0;
	uint64_t	y = x;
	int			L;

#pragma GCC unroll 6
	for (L = 0; L < leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c = &t->clusters[cur];
		uint32_t	h = (uint32_t) (y >> half);
		uint32_t	lo = (uint32_t) (y & low_mask(half));
		uint32_t	child;
		uint64_t	hn;

		/* Here min < y <= max (at the root by the caller's checks). */
		if (half == 4)
		{
			VebSlot		e = find_bitmap(t, c, h);
			uint32_t	bits = slot_bits(e) & ~((1u << lo) - 1);

			if (bits)
				return slot_first(e) +
					popcount32(slot_bits(e) & ((1u << __builtin_ctz(bits)) - 1));
			bits = c->summary & 0xFFFF & ~((2u << h) - 1);
			e = find_bitmap(t, c, (uint32_t) __builtin_ctz(bits));
			return slot_first(e);
		}
		child = find_child(t, c, h);
		if (child != NONE32 && lo <= t->clusters[child].max)
		{
			const VebCluster *cc = &t->clusters[child];

			if (lo <= cc->min)
				return cc->first;
			cur = child;
			y = lo;
			continue;
		}
		hn = summary_succ(t, c->summary, L + 1, h + 1, W);
		return t->clusters[find_child(t, c, (uint32_t) hn)].first;
	}
	return NONE64;				/* not reached */
}

/* Distinct index of key x, or NONE64, for umin <= x <= umax. */
static inline __attribute__((always_inline)) uint64_t
veb_exists(const CpuVeb *t, uint64_t x, const int W)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	cur = 0;
	uint64_t	y = x;
	int			L;

	if (x == t->umin)
		return 0;
	if (x == t->umax)
		return t->nd - 1;
#pragma GCC unroll 6
	for (L = 0; L < leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c = &t->clusters[cur];
		uint32_t	h = (uint32_t) (y >> half);
		uint32_t	lo = (uint32_t) (y & low_mask(half));

		if (L > 0)
		{
			if (y == c->min)
				return c->first;
			if (y == c->max)
				return c->last;
			if (y < c->min || y > c->max)
				return NONE64;
		}
		if (half == 4)
		{
			VebSlot		e = find_bitmap(t, c, h);
			uint32_t	bits = slot_bits(e);

			if ((bits >> lo) & 1)
				return slot_first(e) + popcount32(bits & ((1u << lo) - 1));
			return NONE64;
		}
		cur = find_child(t, c, h);
		if (cur == NONE32)
			return NONE64;
		y = lo;
	}
	return NONE64;				/* not reached */
}

/* Answer one probe into *first, *last (engine.h semantics). */
static inline __attribute__((always_inline)) void
veb_answer(const CpuVeb *t, GiOp op, int64_t p, int64_t hi, uint64_t *first,
		   uint64_t *last, const int W)
{
	const uint64_t *rs = t->run_start;
	uint64_t	n = t->hdr.n;
	uint64_t	i;

	if (t->nd == 0)
	{
		*first = *last = 0;
		return;
	}
	switch (op)
	{
		case GI_OP_POINT:
			i = (p < t->min_key || p > t->max_key) ? NONE64 :
				veb_exists(t, map_key(p, W), W);
			if (i == NONE64)
				*first = *last = 0;
			else
				*first = rs[i], *last = rs[i + 1];
			break;
		case GI_OP_PRED:
			if (p < t->min_key)
				*first = *last = 0;
			else
			{
				i = p >= t->max_key ? t->nd - 1 : veb_pred(t, map_key(p, W), W);
				*first = rs[i];
				*last = rs[i + 1];
			}
			break;
		case GI_OP_SUCC:
			if (p > t->max_key)
				*first = *last = n;
			else
			{
				i = p <= t->min_key ? 0 : veb_succ(t, map_key(p, W), W);
				*first = rs[i];
				*last = rs[i + 1];
			}
			break;
		default:				/* GI_OP_RANGE: [lower_bound(p), upper_bound(hi)) */
			if (p > hi)
			{
				*first = *last = 0;
				break;
			}
			*first = p <= t->min_key ? 0 : p > t->max_key ? n :
				rs[veb_succ(t, map_key(p, W), W)];
			*last = hi >= t->max_key ? n : hi < t->min_key ? 0 :
				rs[veb_pred(t, map_key(hi, W), W) + 1];
			break;
	}
}

typedef struct QueryJob
{
	const CpuVeb *t;
	GiOp		op;
	const int64_t *probes;
	const int64_t *probes_hi;
	uint64_t   *first;
	uint64_t   *last;
	size_t		sort_min;		/* sort blocks at least this large */
} QueryJob;

/* Answer probes [begin, end) in the caller's order. */
static inline __attribute__((always_inline)) void
answer_in_order(const QueryJob *q, size_t begin, size_t end, const int W)
{
	size_t		i;

	for (i = begin; i < end; i++)
		veb_answer(q->t, q->op, q->probes[i],
				   q->probes_hi ? q->probes_hi[i] : 0,
				   &q->first[i], &q->last[i], W);
}

/*
 * Answer a sorted block: probe min + rebased[s] belongs to caller position
 * base + pos[s].  Answers go over rebased[] and spare[] in search order,
 * then are scattered in a loop of independent stores (as the B+ tree does).
 */
static inline __attribute__((always_inline)) void
answer_sorted(const QueryJob *q, uint64_t *rebased, uint64_t *spare,
			  const uint32_t *pos, int64_t min, size_t base, size_t count,
			  const int W)
{
	size_t		s;

	for (s = 0; s < count; s++)
	{
		int64_t		p = (int64_t) (rebased[s] + (uint64_t) min);
		int64_t		hi = q->probes_hi ? q->probes_hi[base + pos[s]] : 0;

		veb_answer(q->t, q->op, p, hi, &rebased[s], &spare[s], W);
	}
	for (s = 0; s < count; s++)
	{
		q->first[base + pos[s]] = rebased[s];
		q->last[base + pos[s]] = spare[s];
	}
}

/*
 * Answer probes [begin, end) of a batch (a gi_cpu_parallel_for slice): in
 * blocks partially sorted by value when large enough, so that neighbouring
 * searches share clusters and table lines; else in the caller's order.
 */
static void
query_slice(void *arg, size_t begin, size_t end)
{
	const QueryJob *q = (const QueryJob *) arg;
	size_t		block = end - begin < SORT_BLOCK ? end - begin : SORT_BLOCK;
	uint64_t   *keys = NULL;
	uint64_t   *tmp_keys = NULL;
	uint32_t   *pos = NULL;
	uint32_t   *tmp_pos = NULL;
	size_t		at;

	if (block >= q->sort_min)
	{
		keys = malloc(block * sizeof(uint64_t));
		tmp_keys = malloc(block * sizeof(uint64_t));
		pos = malloc(block * sizeof(uint32_t));
		tmp_pos = malloc(block * sizeof(uint32_t));
	}
	if (keys == NULL || tmp_keys == NULL || pos == NULL || tmp_pos == NULL)
	{
		/* Small slice, or no memory for sorting: answer in order. */
		if (q->t->universe == 64)
			answer_in_order(q, begin, end, 64);
		else
			answer_in_order(q, begin, end, 32);
	}
	else
		for (at = begin; at < end; at += block)
		{
			size_t		count = end - at < block ? end - at : block;
			uint64_t   *rebased;
			uint32_t   *order;
			int64_t		min;

			gi_cpu_sort_probe_block(q->probes + at, count, keys, pos, tmp_keys,
									tmp_pos, &min, &rebased, &order);
			if (q->t->universe == 64)
				answer_sorted(q, rebased, rebased == keys ? tmp_keys : keys,
							  order, min, at, count, 64);
			else
				answer_sorted(q, rebased, rebased == keys ? tmp_keys : keys,
							  order, min, at, count, 32);
		}
	free(keys);
	free(tmp_keys);
	free(pos);
	free(tmp_pos);
}

/* Answer a batch (cpu_engine.h). */
GiStatus
gi_cpu_veb_query(GiImage *image, GiOp op, const int64_t *probes,
				 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
				 uint64_t *last, GiError *err)
{
	CpuVeb	   *t = (CpuVeb *) image;
	double		t0 = gi_now_ms();
	QueryJob	q;
	GiTimings	timings;

	/* timings gathered here and stored once: other threads may query too */
	memset(&timings, 0, sizeof(timings));
	if (op < GI_OP_POINT || op > GI_OP_RANGE)
		return gi_set_error(err, GI_ERR_INVALID, "unknown query op %d", (int) op);
	q.t = t;
	q.op = op;
	q.probes = probes;
	q.probes_hi = op == GI_OP_RANGE ? probes_hi : NULL;
	q.first = first;
	q.last = last;
	q.sort_min = gi_setting_cpu_sort_min(DEFAULT_SORT_MIN);
	if (q.sort_min < 2)
		q.sort_min = 2;
	gi_cpu_parallel_for(nprobes, PROBES_PER_THREAD, query_slice, &q);
	timings.search_ms = gi_now_ms() - t0;
	timings.total_ms = timings.search_ms;
	gi_timings_store(&image->last_query, &timings);
	return GI_OK;
}

/* ---------------------------------------------------------------------
 * Parallel build
 * --------------------------------------------------------------------- */

typedef struct BuildJob
{
	CpuVeb	   *t;
	const uint64_t *x;			/* nd mapped distinct keys */
	uint32_t   *fe;				/* nd first-element bit fields */
	uint32_t   *base;			/* nd cluster numbers of each key's first */
	uint32_t	ancestors[MAX_BITS];	/* bits of the slots enclosing a slot */
	int			level;			/* the level the current step works on */
} BuildJob;

/* Position from the left of the first bit where a and b differ (W if none). */
static inline int
first_difference(uint64_t a, uint64_t b, int W)
{
	uint64_t	d = a ^ b;

	return d == 0 ? W : __builtin_clzll(d) - (64 - W);
}

/*
 * Eq. 7 on level L for keys [begin, end): child slot j starts at key i when
 * the prefix [0, s) differs from key i - 1's, unless a slot enclosing it
 * already starts at key i (no first element can nest inside another).
 */
static void
mark_level_slice(void *arg, size_t begin, size_t end)
{
	BuildJob   *b = (BuildJob *) arg;
	int			W = b->t->universe;
	int			L = b->level;
	int			w = W >> L;
	size_t		i;

	for (i = begin < 1 ? 1 : begin; i < end; i++)
	{
		int			diff = first_difference(b->x[i - 1], b->x[i], W);
		uint32_t	f = b->fe[i];
		int			j;

		for (j = 1; j < (1 << L); j += 2)
		{
			int			bit = slot_bit(L, j);

			if (diff < j * w && (f & b->ancestors[bit]) == 0)
				f |= 1u << bit;
		}
		b->fe[i] = f;
	}
}

/*
 * Propagation from the clusters of level L starting at keys [begin, end):
 * the first key m after the minimum's run (bits [0, s + w) equal) starts
 * both the summary and the first child, if m is still inside the cluster.
 * Several clusters may propagate into one key: atomic OR.
 */
static void
propagate_slice(void *arg, size_t begin, size_t end)
{
	BuildJob   *b = (BuildJob *) arg;
	int			W = b->t->universe;
	int			L = b->level;
	int			w = W >> L;
	uint64_t	nd = b->t->nd;
	size_t		i;

	for (i = begin; i < end; i++)
	{
		uint32_t	bits = __atomic_load_n(&b->fe[i], __ATOMIC_RELAXED) & level_bits(L);

		while (bits)
		{
			int			bit = __builtin_ctz(bits);
			int			j = bit - ((1 << L) - 1);
			int			s = j * w;
			uint64_t	m = prefix_end(b->x, nd, i, s + w, W);

			bits &= bits - 1;
			if (m < prefix_end(b->x, nd, i, s, W))
				__atomic_fetch_or(&b->fe[m],
								  (1u << slot_bit(L + 1, 2 * j)) |
								  (1u << slot_bit(L + 1, 2 * j + 1)),
								  __ATOMIC_RELAXED);
		}
	}
}

/*
 * Set up the cluster records of keys [begin, end): bounds, first and last
 * index, and the table size of Eq. 9 (children at most min(b - m, 2^(w/2))).
 */
static void
init_clusters_slice(void *arg, size_t begin, size_t end)
{
	BuildJob   *b = (BuildJob *) arg;
	CpuVeb	   *t = b->t;
	int			W = t->universe;
	uint32_t	inner = level_bits(t->leaf_level) - 1;
	size_t		i;

	for (i = begin; i < end; i++)
	{
		uint32_t	bits = b->fe[i] & inner;
		uint32_t	id = b->base[i];

		for (; bits; bits &= bits - 1, id++)
		{
			int			bit = __builtin_ctz(bits);
			int			L = 31 - __builtin_clz((unsigned) bit + 1);
			int			j = bit - ((1 << L) - 1);
			int			w = W >> L;
			int			s = j * w;
			uint64_t	m = prefix_end(b->x, t->nd, i, s + w, W);
			uint64_t	e = prefix_end(b->x, t->nd, i, s, W);
			VebCluster *c = &t->clusters[id];
			uint64_t	bound = (uint64_t) 1 << (w / 2);

			c->min = (uint32_t) word_at(b->x[i], s, w, W);
			c->max = (uint32_t) word_at(b->x[e - 1], s, w, W);
			c->first = (uint32_t) i;
			c->last = (uint32_t) (e - 1);
			c->summary = w == 8 ? 0 : NONE32;
			c->slots = m < e ? table_size(e - m < bound ? e - m : bound) : 0;
			c->table = 0;
		}
	}
}

/*
 * The cluster at slot j of level L whose range holds key x, found from the
 * root through the levels already linked: slot j's bits, from the top,
 * say summary (0) or child (1) at each level.
 */
static uint32_t
locate(const CpuVeb *t, uint64_t x, int L, int j)
{
	int			W = t->universe;
	uint32_t	cur = 0;
	int			l;

	for (l = 1; l <= L; l++)
	{
		const VebCluster *c = &t->clusters[cur];
		int			wp = W >> (l - 1);
		int			sp = (j >> (L - l + 1)) * wp;

		if (((j >> (L - l)) & 1) == 0)
			cur = c->summary;
		else
			cur = find_child(t, c, (uint32_t) (word_at(x, sp, wp, W) >> (wp / 2)));
	}
	return cur;
}

/* Put slot value v into the first free slot from key's home (CAS). */
static void
table_put(CpuVeb *t, const VebCluster *c, uint32_t key, VebSlot v)
{
	VebSlot    *tab = t->table + c->table;
	uint32_t	i = (uint32_t) hash_slot(t->hash_a, t->hash_b, key, c->slots);

	for (;;)
	{
		VebSlot		expected = 0;

		if (__atomic_compare_exchange_n(&tab[i], &expected, v, false,
										__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
		if (++i == c->slots)
			i = 0;
	}
}

/*
 * Link the clusters of level L starting at keys [begin, end) into their
 * parents on level L - 1: the summary field, or the parent's hash table.
 * On the leaf level the 16-bit bitmap is filled first, from the cluster's
 * key range, one binary search per distinct 4-bit value.  Keys come in
 * order, so the parent last found for a slot usually holds the next key
 * too (its range [first, last] says so): only a miss walks from the root.
 */
static void
link_level_slice(void *arg, size_t begin, size_t end)
{
	BuildJob   *b = (BuildJob *) arg;
	CpuVeb	   *t = b->t;
	int			W = t->universe;
	int			L = b->level;
	int			w = W >> L;
	uint32_t	parent_of[MAX_BITS];	/* last parent per parent slot */
	size_t		i;

	for (i = 0; i < MAX_BITS; i++)
		parent_of[i] = NONE32;
	for (i = begin; i < end; i++)
	{
		uint32_t	all = b->fe[i];
		uint32_t	bits = all & level_bits(L);

		while (bits)
		{
			int			bit = __builtin_ctz(bits);
			int			j = bit - ((1 << L) - 1);
			int			s = j * w;
			uint32_t	pid = parent_of[j >> 1];
			VebCluster *p;
			uint32_t	key = (uint32_t) word_at(b->x[i], s - (j & 1 ? w : 0), w, W);

			bits &= bits - 1;
			if (pid == NONE32 || t->clusters[pid].first > i ||
				t->clusters[pid].last < i)
				pid = parent_of[j >> 1] = locate(t, b->x[i], L - 1, j >> 1);
			p = &t->clusters[pid];
			if (L == t->leaf_level)
			{
				uint64_t	e = prefix_end(b->x, t->nd, i, s, W);
				uint64_t	k = i;
				uint32_t	bitmap = 0;

				while (k < e)
				{
					bitmap |= 1u << word_at(b->x[k], s, 4, W);
					k = prefix_end(b->x, t->nd, k, s + 4, W);
				}
				if ((j & 1) == 0)
					p->summary = bitmap;
				else
					table_put(t, p, key, (VebSlot) bitmap |
							  ((VebSlot) key << 16) | ((VebSlot) i << 32));
			}
			else
			{
				uint32_t	id = b->base[i] +
					popcount32(all & ((1u << bit) - 1));

				if ((j & 1) == 0)
					p->summary = id;
				else
					table_put(t, p, key, (VebSlot) key | ((VebSlot) (id + 1) << 32));
			}
		}
	}
}

/* Check that keys are sorted and fit key_bytes. */
static GiStatus
check_keys(const int64_t *keys, size_t n, int key_bytes, GiError *err)
{
	int64_t		type_max = key_bytes == 2 ? INT16_MAX :
		key_bytes == 4 ? INT32_MAX : INT64_MAX;
	int64_t		type_min = -type_max - 1;
	size_t		i;

	for (i = 0; i < n; i++)
	{
		if (keys[i] < type_min || keys[i] > type_max)
			return gi_set_error(err, GI_ERR_INVALID,
								"key %lld at position %zu does not fit in %d bytes",
								(long long) keys[i], i, key_bytes);
		if (i > 0 && keys[i] < keys[i - 1])
			return gi_set_error(err, GI_ERR_INVALID,
								"keys are not sorted at position %zu", i);
	}
	return GI_OK;
}

/* Build an image from sorted keys (cpu_engine.h). */
GiStatus
gi_cpu_veb_build(const GiBuildParams *params, const int64_t *keys,
				 const uint64_t *payloads, size_t n, GiImage **out,
				 GiError *err)
{
	double		t0 = gi_now_ms();
	CpuVeb	   *t;
	BuildJob	b;
	uint64_t   *x = NULL;
	uint64_t	nd;
	uint64_t	total;
	uint64_t	leaves;
	uint64_t	i;
	int			W;
	int			L;
	int			bit;
	uint64_t	seed;
	GiStatus	st;

	(void) payloads;			/* no query needs them on the host */
	*out = NULL;
	if ((st = check_keys(keys, n, params->key_bytes, err)) != GI_OK)
		return st;

	t = calloc(1, sizeof(CpuVeb));
	if (t == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory building an image");
	t->hdr.engine = GI_ENGINE_CPU;
	t->hdr.structure = GI_STRUCT_VEB;
	t->hdr.key_bytes = params->key_bytes;
	t->hdr.n = n;
	W = t->universe = params->key_bytes == 8 ? 64 : 32;
	t->leaf_level = W == 64 ? 4 : 3;
	memset(&b, 0, sizeof(b));

	/* 1. De-duplicate (a flag and a prefix sum on the GPU) and map. */
	nd = n > 0;
	for (i = 1; i < n; i++)
		nd += keys[i] != keys[i - 1];
	if (nd >= NONE32)
	{
		free(t);
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"the veb structure holds fewer than 2^32 - 1 distinct keys, not %llu",
							(unsigned long long) nd);
	}
	t->nd = nd;
	t->run_start = malloc((nd + 1) * sizeof(uint64_t));
	x = malloc((nd ? nd : 1) * sizeof(uint64_t));
	b.fe = calloc(nd ? nd : 1, sizeof(uint32_t));
	b.base = malloc((nd ? nd : 1) * sizeof(uint32_t));
	if (t->run_start == NULL || x == NULL || b.fe == NULL || b.base == NULL)
		goto oom;
	nd = 0;
	for (i = 0; i < n; i++)
	{
		if (i == 0 || keys[i] != keys[i - 1])
		{
			t->run_start[nd] = i;
			x[nd++] = map_key(keys[i], W);
		}
	}
	t->run_start[nd] = n;
	if (n > 0)
	{
		t->min_key = keys[0];
		t->max_key = keys[n - 1];
		t->umin = x[0];
		t->umax = x[nd - 1];
	}
	seed = 0x5EEDF00DULL ^ nd;
	t->hash_a = splitmix(&seed) | 1;
	t->hash_b = splitmix(&seed);
	b.t = t;
	b.x = x;

	/* The slots enclosing each slot: the bits no first element may nest in. */
	for (bit = 0; bit < (1 << (t->leaf_level + 1)) - 1; bit++)
	{
		int			Lb = 31 - __builtin_clz((unsigned) bit + 1);
		int			j = bit - ((1 << Lb) - 1);
		int			l;

		for (l = 0; l < Lb; l++)
			b.ancestors[bit] |= 1u << slot_bit(l, j >> (Lb - l));
	}

	/* 2. First-element bit fields, level by level from the top. */
	if (nd > 0)
		b.fe[0] = 1;			/* the root */
	for (L = 0; L <= t->leaf_level && nd > 0; L++)
	{
		b.level = L;
		if (L > 0)
			gi_cpu_parallel_for(nd, BUILD_PER_THREAD, mark_level_slice, &b);
		if (L < t->leaf_level)
			gi_cpu_parallel_for(nd, BUILD_PER_THREAD, propagate_slice, &b);
	}

	/* 3. Number the clusters (popcount, prefix sum), size their tables. */
	total = 0;
	leaves = 0;
	for (i = 0; i < nd; i++)
	{
		uint32_t	inner = b.fe[i] & (level_bits(t->leaf_level) - 1);

		b.base[i] = (uint32_t) total;
		total += popcount32(inner);
		leaves += popcount32(b.fe[i] & level_bits(t->leaf_level));
		if (total >= NONE32)
		{
			st = gi_set_error(err, GI_ERR_UNSUPPORTED,
							  "the veb structure of %llu distinct keys needs 2^32 clusters or more",
							  (unsigned long long) nd);
			goto fail;
		}
	}
	t->nclusters = total;
	t->nbitmaps = leaves;
	t->clusters = malloc((total ? total : 1) * sizeof(VebCluster));
	if (t->clusters == NULL)
		goto oom;
	gi_cpu_parallel_for(nd, BUILD_PER_THREAD, init_clusters_slice, &b);
	t->table_slots = 0;
	for (i = 0; i < total; i++)
	{
		t->clusters[i].table = t->table_slots;
		t->table_slots += t->clusters[i].slots;
	}
	t->table = calloc(t->table_slots ? t->table_slots : 1, sizeof(VebSlot));
	if (t->table == NULL)
		goto oom;

	/* 4. Link the clusters into their parents, level by level from the top. */
	for (L = 1; L <= t->leaf_level && nd > 0; L++)
	{
		b.level = L;
		gi_cpu_parallel_for(nd, BUILD_PER_THREAD, link_level_slice, &b);
	}

	free(x);
	free(b.fe);
	free(b.base);
	t->host_bytes = sizeof(CpuVeb) + (t->nd + 1) * sizeof(uint64_t) +
		t->nclusters * sizeof(VebCluster) + t->table_slots * sizeof(VebSlot);
	t->hdr.build.build_ms = gi_now_ms() - t0;
	t->hdr.build.total_ms = t->hdr.build.build_ms;
	*out = &t->hdr;
	return GI_OK;

oom:
	st = gi_set_error(err, GI_ERR_HOST_OOM,
					  "out of host memory building a veb image of %zu keys", n);
fail:
	free(x);
	free(b.fe);
	free(b.base);
	gi_cpu_veb_free(&t->hdr);
	return st;
}

/* Free an image (cpu_engine.h). */
void
gi_cpu_veb_free(GiImage *image)
{
	CpuVeb	   *t = (CpuVeb *) image;

	if (t == NULL)
		return;
	free(t->run_start);
	free(t->clusters);
	free(t->table);
	free(t);
}

/* Describe an image (cpu_engine.h). */
void
gi_cpu_veb_info(const GiImage *image, GiImageInfo *info)
{
	const CpuVeb *t = (const CpuVeb *) image;
	uint64_t	structure_bytes = t->nclusters * sizeof(VebCluster) +
		t->table_slots * sizeof(VebSlot);

	info->engine = GI_ENGINE_CPU;
	info->structure = GI_STRUCT_VEB;
	info->key_bytes = image->key_bytes;
	info->entries = image->n;
	info->distinct_keys = t->nd;
	info->levels = t->universe == 64 ? 6 : 5;	/* d: W = 2^d */
	info->node_order = 0;		/* no fixed fan-out: clusters hash their
								 * children */
	info->nodes = t->nclusters;
	info->host_bytes = t->host_bytes;
	info->device_bytes = 0;
	info->build = image->build;
	gi_timings_load(&info->last_query, &image->last_query);
	info->device_name[0] = '\0';
	info->clusters = t->nclusters + t->nbitmaps;
	info->hash_bytes = t->table_slots * sizeof(VebSlot);
	info->space_overhead = t->nd ?
		(double) structure_bytes / ((double) t->nd * image->key_bytes) : 0.0;
}
