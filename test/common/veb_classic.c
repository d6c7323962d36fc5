/*
 * veb_classic.c - the classic van Emde Boas insertion build (Algorithm 2 of
 * Mayr et al.), one key at a time with an allocation per cluster: the
 * build-time baseline of engine/cpu_veb.c's parallel build, for the unit
 * tests and bench/veb only (not linked into the module).  The universe's
 * arithmetic is engine/veb_twin.h's.  No PostgreSQL headers here.
 */
#include "veb_classic.h"
#include "engine_util.h"
#include "veb_twin.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------
 * The insertion build (Algorithm 2): the baseline of veb_classic.h
 * --------------------------------------------------------------------- */

typedef struct InsNode InsNode;

/* A child in a node's hash table: a node, or a bitmap when w = 4. */
typedef struct InsEntry
{
	uint64_t	key_plus1;		/* 0 = free slot */
	union
	{
		InsNode    *node;
		uint32_t	bits;
	}			u;
} InsEntry;

/* A cluster of word length >= 8, allocated when first needed. */
struct InsNode
{
	uint64_t	min;
	uint64_t	max;
	bool		empty;
	int			w;
	InsNode    *summary;		/* word length w/2 >= 8 */
	uint32_t	summary_bits;	/* word length w/2 = 4 */
	uint32_t	count;			/* children */
	uint32_t	cap;			/* table slots, a power of two */
	InsEntry   *children;
};

struct GiVebInsertTree
{
	int			universe;
	int64_t		min_key;
	int64_t		max_key;
	InsNode    *root;
	uint64_t	bytes;
	bool		oom;
};

/* A new empty node of word length w, or NULL. */
static InsNode *
ins_new_node(GiVebInsertTree *t, int w)
{
	InsNode    *v = calloc(1, sizeof(InsNode));

	if (v == NULL)
	{
		t->oom = true;
		return NULL;
	}
	v->empty = true;
	v->w = w;
	t->bytes += sizeof(InsNode);
	return v;
}

/* Home slot of a child key in a table of cap slots (cap a power of two). */
static inline uint32_t
ins_home(uint64_t key, uint32_t cap)
{
	return (uint32_t) ((key * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* The entry of child key h, or NULL. */
static InsEntry *
ins_find(const InsNode *v, uint64_t h)
{
	uint32_t	i;

	if (v->cap == 0)
		return NULL;
	for (i = ins_home(h, v->cap);; i = (i + 1) & (v->cap - 1))
	{
		if (v->children[i].key_plus1 == 0)
			return NULL;
		if (v->children[i].key_plus1 == h + 1)
			return &v->children[i];
	}
}

/* The entry of child key h, added (table grown at half full) if missing. */
static InsEntry *
ins_find_or_add(GiVebInsertTree *t, InsNode *v, uint64_t h)
{
	InsEntry   *e = ins_find(v, h);
	uint32_t	i;

	if (e != NULL)
		return e;
	if (2 * (v->count + 1) > v->cap)
	{
		uint32_t	cap = v->cap ? 2 * v->cap : 4;
		InsEntry   *old = v->children;
		InsEntry   *grown = calloc(cap, sizeof(InsEntry));
		uint32_t	k;

		if (grown == NULL)
		{
			t->oom = true;
			return NULL;
		}
		for (k = 0; k < v->cap; k++)
		{
			if (old[k].key_plus1 == 0)
				continue;
			for (i = ins_home(old[k].key_plus1 - 1, cap); grown[i].key_plus1;
				 i = (i + 1) & (cap - 1))
				;
			grown[i] = old[k];
		}
		t->bytes += (uint64_t) (cap - v->cap) * sizeof(InsEntry);
		free(old);
		v->children = grown;
		v->cap = cap;
	}
	for (i = ins_home(h, v->cap); v->children[i].key_plus1; i = (i + 1) & (v->cap - 1))
		;
	v->children[i].key_plus1 = h + 1;
	v->count++;
	return &v->children[i];
}

/* Algorithm 2: insert x (not yet present) into v. */
static void
ins_insert(GiVebInsertTree *t, InsNode *v, uint64_t x)
{
	int			half = v->w / 2;
	uint64_t	h;
	uint64_t	lo;
	InsEntry   *e;

	if (v->empty)
	{
		v->min = v->max = x;
		v->empty = false;
		return;
	}
	if (x == v->min || x == v->max)
		return;
	if (x < v->min)
	{
		uint64_t	swap = x;

		x = v->min;
		v->min = swap;
	}
	if (x > v->max)
		v->max = x;
	h = x >> half;
	lo = x & low_mask(half);
	if ((e = ins_find_or_add(t, v, h)) == NULL)
		return;
	if (half == 4)
	{
		/* Children and summary of a cluster of word length 8 are bitmaps. */
		if (e->u.bits == 0)
			v->summary_bits |= 1u << h;
		e->u.bits |= 1u << lo;
		return;
	}
	if (e->u.node == NULL && (e->u.node = ins_new_node(t, half)) == NULL)
		return;
	if (e->u.node->empty)
	{
		if (v->summary == NULL && (v->summary = ins_new_node(t, half)) == NULL)
			return;
		ins_insert(t, v->summary, h);
	}
	ins_insert(t, e->u.node, lo);
}

/* Algorithm 1: largest value <= y in v (non-empty), or NONE64. */
static uint64_t
ins_pred(const InsNode *v, uint64_t y)
{
	int			half = v->w / 2;
	uint64_t	h = y >> half;
	uint64_t	lo = y & low_mask(half);
	const InsEntry *e;
	uint64_t	hp;

	if (y >= v->max)
		return v->max;
	if (y < v->min)
		return NONE64;
	e = ins_find(v, h);
	if (half == 4)
	{
		uint32_t	bits = e ? e->u.bits & ((2u << lo) - 1) : 0;

		if (bits)
			return (h << 4) | top_bit(bits);
		if ((bits = v->summary_bits & ((1u << h) - 1)) == 0)
			return v->min;
		hp = top_bit(bits);
		return (hp << 4) | top_bit(ins_find(v, hp)->u.bits);
	}
	if (e && lo >= e->u.node->min)
		return (h << half) | ins_pred(e->u.node, lo);
	hp = h == 0 ? NONE64 : ins_pred(v->summary, h - 1);
	if (hp == NONE64)
		return v->min;
	return (hp << half) | ins_find(v, hp)->u.node->max;
}

/* Smallest value >= y in v (non-empty), or NONE64. */
static uint64_t
ins_succ(const InsNode *v, uint64_t y)
{
	int			half = v->w / 2;
	uint64_t	h = y >> half;
	uint64_t	lo = y & low_mask(half);
	const InsEntry *e;
	uint64_t	hn;

	if (y <= v->min)
		return v->min;
	if (y > v->max)
		return NONE64;
	e = ins_find(v, h);
	if (half == 4)
	{
		uint32_t	bits = e ? e->u.bits & ~((1u << lo) - 1) : 0;

		if (bits)
			return (h << 4) | (uint32_t) __builtin_ctz(bits);
		bits = v->summary_bits & 0xFFFF & ~((2u << h) - 1);
		hn = (uint32_t) __builtin_ctz(bits);
		return (hn << 4) | (uint32_t) __builtin_ctz(ins_find(v, hn)->u.bits);
	}
	if (e && lo <= e->u.node->max)
		return (h << half) | ins_succ(e->u.node, lo);
	hn = ins_succ(v->summary, h + 1);
	return (hn << half) | ins_find(v, hn)->u.node->min;
}

/* Is y in v? */
static bool
ins_exists(const InsNode *v, uint64_t y)
{
	int			half = v->w / 2;
	const InsEntry *e;

	if (v->empty)
		return false;
	if (y == v->min || y == v->max)
		return true;
	e = ins_find(v, y >> half);
	if (e == NULL)
		return false;
	if (half == 4)
		return (e->u.bits >> (y & 15)) & 1;
	return ins_exists(e->u.node, y & low_mask(half));
}

/* Free v and everything below it. */
static void
ins_free(InsNode *v)
{
	uint32_t	i;

	if (v == NULL)
		return;
	if (v->w > 8)
		for (i = 0; i < v->cap; i++)
			if (v->children[i].key_plus1)
				ins_free(v->children[i].u.node);
	ins_free(v->summary);
	free(v->children);
	free(v);
}

/* One-at-a-time build (veb_classic.h). */
GiStatus
gi_veb_insert_build(const int64_t *keys, size_t n, int key_bytes,
					GiVebInsertTree **out, GiError *err)
{
	GiVebInsertTree *t;
	size_t		i;

	*out = NULL;
	if (key_bytes != 2 && key_bytes != 4 && key_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "key width %d is not 2, 4 or 8",
							key_bytes);
	t = calloc(1, sizeof(GiVebInsertTree));
	if (t == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory");
	t->universe = key_bytes == 8 ? 64 : 32;
	t->bytes = sizeof(GiVebInsertTree);
	t->root = ins_new_node(t, t->universe);
	for (i = 0; i < n && !t->oom; i++)
	{
		if (i == 0 || keys[i] < t->min_key)
			t->min_key = keys[i];
		if (i == 0 || keys[i] > t->max_key)
			t->max_key = keys[i];
		ins_insert(t, t->root, map_key(keys[i], t->universe));
	}
	if (t->oom)
	{
		gi_veb_insert_free(t);
		return gi_set_error(err, GI_ERR_HOST_OOM,
							"out of host memory inserting %zu keys", n);
	}
	*out = t;
	return GI_OK;
}

/* Map a mapped key back to a signed key. */
static int64_t
unmap_key(uint64_t u, int W)
{
	if (W == 32)
		return (int64_t) (int32_t) (uint32_t) (u ^ 0x80000000u);
	return (int64_t) (u ^ ((uint64_t) 1 << 63));
}

/* Largest key <= p (veb_classic.h). */
bool
gi_veb_insert_pred(const GiVebInsertTree *t, int64_t p, int64_t *key)
{
	if (t->root->empty || p < t->min_key)
		return false;
	if (p >= t->max_key)
		*key = t->max_key;
	else
		*key = unmap_key(ins_pred(t->root, map_key(p, t->universe)), t->universe);
	return true;
}

/* Smallest key >= p (veb_classic.h). */
bool
gi_veb_insert_succ(const GiVebInsertTree *t, int64_t p, int64_t *key)
{
	if (t->root->empty || p > t->max_key)
		return false;
	if (p <= t->min_key)
		*key = t->min_key;
	else
		*key = unmap_key(ins_succ(t->root, map_key(p, t->universe)), t->universe);
	return true;
}

/* Is p a key (veb_classic.h)? */
bool
gi_veb_insert_exists(const GiVebInsertTree *t, int64_t p)
{
	if (t->root->empty || p < t->min_key || p > t->max_key)
		return false;
	return ins_exists(t->root, map_key(p, t->universe));
}

/* Bytes allocated (veb_classic.h). */
uint64_t
gi_veb_insert_bytes(const GiVebInsertTree *t)
{
	return t->bytes;
}

/* Free the tree (veb_classic.h). */
void
gi_veb_insert_free(GiVebInsertTree *t)
{
	if (t == NULL)
		return;
	ins_free(t->root);
	free(t);
}
