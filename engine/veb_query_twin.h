/*
 * veb_query_twin.h - the van Emde Boas queries both engines run, one source
 * for engine/cpu_veb.c (a loop over probes on each thread) and
 * cuda/gpu_veb.cu (one thread per probe): the lookups in the child tables,
 * the descents for exists, predecessor and successor, and the answer of one
 * probe for every op.  engine/cpu_veb.c's header describes the layout and
 * the descents.
 *
 * A query reads an image through a VebView, which each engine fills with
 * its own pointers (host or device).  What differs between the two is
 * chosen at compile time: a table slot is read through the read-only data
 * cache on the device (load_slot), and the bit instructions are veb_twin.h's.
 * The word length W and the direction of a search (up: successor, down:
 * predecessor) are constants in every caller and the functions are always
 * inlined, so each use is unrolled to the fixed depth and specialized as
 * separate hand-written functions would be.
 */
#ifndef GPUIDX_VEB_QUERY_TWIN_H
#define GPUIDX_VEB_QUERY_TWIN_H

#include "engine.h"
#include "veb_twin.h"

#define MAX_DEPTH		6		/* pending frames of a summary search */

/*
 * Unroll a descent's loop fully: it is bounded by the fixed depth.  nvcc
 * takes its own pragma in both of its passes (the GCC one is unknown to it).
 */
#ifdef __CUDACC__
#define VEB_UNROLL		_Pragma("unroll")
#else
#define VEB_UNROLL		_Pragma("GCC unroll 6")
#endif

/*
 * What a query reads of an image with at least one key (an empty image is
 * answered by the caller).
 */
typedef struct VebView
{
	const VebCluster *clusters;
	const VebSlot *table;		/* all clusters' hash-table slots */
	const uint64_t *run_start;	/* nd + 1 entry positions */
	uint64_t	hash_a;			/* universal hash: ((a * k + b) >> 32) */
	uint64_t	hash_b;
	uint64_t	nd;				/* distinct keys, > 0 */
	uint64_t	n;				/* entries */
	int64_t		kmin;			/* smallest and largest key */
	int64_t		kmax;
	uint64_t	umin;			/* kmin and kmax mapped */
	uint64_t	umax;
} VebView;

/* One hash-table slot: through the read-only data cache on the device. */
GI_HD VebSlot
load_slot(const VebSlot *p)
{
#ifdef __CUDA_ARCH__
	return __ldg((const unsigned long long *) p);
#else
	return *p;
#endif
}

/*
 * The slot of c's hash table holding key, or 0 (an empty slot) if c has no
 * such child: a child cluster's slot is keyed by its low 32 bits, a child
 * bitmap's (bitmap = 1, the children of a cluster with w = 8) by bits 16-19.
 * Linear probing from the key's hash.
 */
GI_HD_INLINE VebSlot
table_find(const VebSlot *table, uint64_t hash_a, uint64_t hash_b,
		   const VebCluster *c, uint32_t key, const int bitmap)
{
	const VebSlot *tab = table + c->table;
	uint32_t	slots = c->slots;
	uint32_t	i;

	if (slots == 0)
		return 0;
	i = hash_slot(hash_a, hash_b, key, slots);
	for (;;)
	{
		VebSlot		e = load_slot(&tab[i]);

		if (e == 0)
			return 0;
		if ((bitmap ? slot_key(e) : (uint32_t) e) == key)
			return e;
		if (++i == slots)
			i = 0;
	}
}

/*
 * Cluster number of c's child keyed by key, or NONE32: a slot holds the
 * number + 1 in its high half, so an empty slot gives NONE32.  The builds
 * use it on the levels already linked.
 */
GI_HD_INLINE uint32_t
find_child(const VebSlot *table, uint64_t hash_a, uint64_t hash_b,
		   const VebCluster *c, uint32_t key)
{
	return (uint32_t) (table_find(table, hash_a, hash_b, c, key, 0) >> 32) - 1;
}

/* find_child in a query's view. */
GI_HD_INLINE uint32_t
child_of(const VebView *v, const VebCluster *c, uint32_t key)
{
	return find_child(v->table, v->hash_a, v->hash_b, c, key);
}

/* The child bitmap slot of c (w = 8) keyed by key (0..15), or 0. */
GI_HD_INLINE VebSlot
bitmap_of(const VebView *v, const VebCluster *c, uint32_t key)
{
	return table_find(v->table, v->hash_a, v->hash_b, c, key, 1);
}

/*
 * Direction helpers of the searches on 16-bit bitmaps: up is a successor
 * search (toward larger values), down a predecessor search.
 */

/* The nearest set bit of a non-zero bitmap: its lowest going up, else its highest. */
GI_HD uint32_t
nearest_bit(uint32_t bits, const int up)
{
	return up ? low_bit(bits) : top_bit(bits);
}

/* The bits at y and beyond it in the direction of the search, y < 16. */
GI_HD uint32_t
bits_from(uint32_t y, const int up)
{
	return up ? 0xFFFFu & ~((1u << y) - 1) : (2u << y) - 1;
}

/* The bits strictly beyond y in the direction of the search, y < 16. */
GI_HD uint32_t
bits_beyond(uint32_t y, const int up)
{
	return up ? 0xFFFFu & ~((2u << y) - 1) : (1u << y) - 1;
}

/*
 * The nearest value to y among the values of the summary cluster s at level
 * L0 (a bitmap when L0 is the leaf level), as a word of that level: the
 * smallest value >= y going up, the largest <= y going down; NONE64 if none.
 * Descends without recursion: a step either enters a child (its result is
 * prefixed with the child's key) or, when the child cannot hold the answer,
 * searches the cluster's own summary for the nearest child beyond it, a
 * frame resolved on the way back up with that child's minimum (up) or
 * maximum (down) - or, going down with no such child, the cluster's own
 * minimum.  The loop runs over every level so that its bound is a constant.
 */
GI_HD_INLINE uint64_t
summary_near(const VebView *v, uint32_t s, int L0, uint32_t y, const int W,
			 const int up)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	frame_cluster[MAX_DEPTH];
	uint32_t	frame_key[MAX_DEPTH];	/* child key, or NONE32 for summary */
	int			frame_half[MAX_DEPTH];
	int			depth = 0;
	uint32_t	cur = s;
	uint64_t	r = NONE64;
	int			L;

	VEB_UNROLL
	for (L = 1; L <= leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c;
		uint32_t	h;
		uint32_t	lo;
		uint32_t	child;

		if (L < L0)
			continue;
		if (w == 4)
		{
			uint32_t	bits = up && y >= 16 ? 0 : cur & bits_from(y, up);

			r = bits ? nearest_bit(bits, up) : NONE64;
			break;
		}
		c = &v->clusters[cur];
		if (up ? y <= c->min : y >= c->max)
		{
			r = up ? c->min : c->max;
			break;
		}
		if (up ? y > c->max : y < c->min)
			break;
		h = y >> half;
		lo = y & (uint32_t) low_mask(half);
		if (half == 4)
		{
			uint32_t	bits = slot_bits(bitmap_of(v, c, h)) & bits_from(lo, up);

			if (bits)
				r = (h << 4) | nearest_bit(bits, up);
			else if ((bits = c->summary & bits_beyond(h, up)) == 0)
				r = up ? NONE64 : c->min;	/* up: cannot happen, y <= max */
			else
			{
				uint32_t	hn = nearest_bit(bits, up);

				r = (hn << 4) | nearest_bit(slot_bits(bitmap_of(v, c, hn)), up);
			}
			break;
		}
		child = child_of(v, c, h);
		frame_cluster[depth] = cur;
		frame_half[depth] = half;
		if (child != NONE32 &&
			(up ? lo <= v->clusters[child].max : lo >= v->clusters[child].min))
		{
			frame_key[depth++] = h;
			cur = child;
			y = lo;
			continue;
		}
		if (h == (up ? (uint32_t) low_mask(half) : 0))
		{
			r = up ? NONE64 : c->min;	/* up: cannot happen, y <= max */
			break;
		}
		frame_key[depth++] = NONE32;
		cur = c->summary;
		y = up ? h + 1 : h - 1;
	}
	while (depth-- > 0)
	{
		const VebCluster *c = &v->clusters[frame_cluster[depth]];
		int			half = frame_half[depth];

		if (frame_key[depth] != NONE32)
			r = ((uint64_t) frame_key[depth] << half) | r;	/* NONE64 stays */
		else if (r == NONE64)
			r = up ? NONE64 : c->min;
		else
		{
			const VebCluster *cc = &v->clusters[child_of(v, c, (uint32_t) r)];

			r = (r << half) | (up ? cc->min : cc->max);
		}
	}
	return r;
}

/*
 * Distinct index of the nearest key to x: going up the smallest key >= x,
 * for umin < x <= umax; going down the largest key <= x, for umin <= x <
 * umax.  Down the root's chain of children, whose values are whole keys and
 * so carry their distinct indexes (a cluster's minimum is its first, its
 * maximum its last); a summary search where the chain leaves off.
 */
GI_HD_INLINE uint64_t
veb_near(const VebView *v, uint64_t x, const int W, const int up)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	cur = 0;
	uint64_t	y = x;
	int			L;

	VEB_UNROLL
	for (L = 0; L < leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c = &v->clusters[cur];
		uint32_t	h = (uint32_t) (y >> half);
		uint32_t	lo = (uint32_t) (y & low_mask(half));
		uint32_t	child;
		uint64_t	hn;
		VebSlot		e;
		uint32_t	bits;

		/* The caller checked the root's bounds; below, y is inside c. */
		if (L > 0 && (up ? y <= c->min : y >= c->max))
			return up ? c->first : c->last;
		if (half == 4)
		{
			e = bitmap_of(v, c, h);
			bits = slot_bits(e) & bits_from(lo, up);
			if (bits)			/* the index of the nearest bit of e */
				return up ? slot_first(e) +
					popcount32(slot_bits(e) & ((1u << low_bit(bits)) - 1)) :
					slot_first(e) + popcount32(bits) - 1;
			bits = c->summary & bits_beyond(h, up);
			if (!up && bits == 0)
				return c->first;
			/* the nearest bitmap beyond: its first or its last value */
			e = bitmap_of(v, c, nearest_bit(bits, up));
			return up ? slot_first(e) :
				slot_first(e) + popcount32(slot_bits(e)) - 1;
		}
		child = child_of(v, c, h);
		if (child != NONE32 &&
			(up ? lo <= v->clusters[child].max : lo >= v->clusters[child].min))
		{
			cur = child;
			y = lo;
			continue;
		}
		if (!up && h == 0)
			return c->first;
		hn = summary_near(v, c->summary, L + 1, up ? h + 1 : h - 1, W, up);
		if (!up && hn == NONE64)
			return c->first;
		c = &v->clusters[child_of(v, c, (uint32_t) hn)];
		return up ? c->first : c->last;
	}
	return NONE64;				/* not reached */
}

/* Distinct index of key x, or NONE64, for umin <= x <= umax. */
GI_HD_INLINE uint64_t
veb_exists(const VebView *v, uint64_t x, const int W)
{
	const int	leaf_level = W == 64 ? 4 : 3;
	uint32_t	cur = 0;
	uint64_t	y = x;
	int			L;

	if (x == v->umin)
		return 0;
	if (x == v->umax)
		return v->nd - 1;
	VEB_UNROLL
	for (L = 0; L < leaf_level; L++)
	{
		const int	w = W >> L;
		const int	half = w >> 1;
		const VebCluster *c = &v->clusters[cur];
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
			VebSlot		e = bitmap_of(v, c, h);
			uint32_t	bits = slot_bits(e);

			if ((bits >> lo) & 1)
				return slot_first(e) + popcount32(bits & ((1u << lo) - 1));
			return NONE64;
		}
		cur = child_of(v, c, h);
		if (cur == NONE32)
			return NONE64;
		y = lo;
	}
	return NONE64;				/* not reached */
}

/*
 * Answer one probe into *first, *last (engine.h semantics; op a GiOp).
 * Probes outside [kmin, kmax] are answered from the bounds before any
 * mapping, never wrapped; a distinct index i becomes the run
 * [run_start[i], run_start[i + 1]).
 */
GI_HD_INLINE void
veb_answer(const VebView *v, int op, int64_t p, int64_t hi, uint64_t *first,
		   uint64_t *last, const int W)
{
	const uint64_t *rs = v->run_start;
	uint64_t	i;

	switch (op)
	{
		case GI_OP_POINT:
			i = (p < v->kmin || p > v->kmax) ? NONE64 :
				veb_exists(v, map_key(p, W), W);
			if (i == NONE64)
				*first = *last = 0;
			else
				*first = rs[i], *last = rs[i + 1];
			break;
		case GI_OP_PRED:
			if (p < v->kmin)
				*first = *last = 0;
			else
			{
				i = p >= v->kmax ? v->nd - 1 : veb_near(v, map_key(p, W), W, 0);
				*first = rs[i];
				*last = rs[i + 1];
			}
			break;
		case GI_OP_SUCC:
			if (p > v->kmax)
				*first = *last = v->n;
			else
			{
				i = p <= v->kmin ? 0 : veb_near(v, map_key(p, W), W, 1);
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
			*first = p <= v->kmin ? 0 : p > v->kmax ? v->n :
				rs[veb_near(v, map_key(p, W), W, 1)];
			*last = hi >= v->kmax ? v->n : hi < v->kmin ? 0 :
				rs[veb_near(v, map_key(hi, W), W, 0) + 1];
			break;
	}
}

#endif							/* GPUIDX_VEB_QUERY_TWIN_H */
