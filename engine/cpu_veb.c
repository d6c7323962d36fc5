/*
 * cpu_veb.c - the CPU engine's van Emde Boas tree, built in parallel from
 * sorted keys (Mayr et al., "Are van Emde Boas trees viable on the GPU?").
 * The GPU vEB (cuda/gpu_veb.cu) mirrors this file and shares its arithmetic
 * through veb_twin.h and its queries through veb_query_twin.h; the classic one-at-a-time insertion build (their
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
 * Queries (veb_query_twin.h, one source for both engines).  exists /
 * predecessor / successor walk down without recursion: loops bounded by the
 * fixed depth, and a small array of pending summary frames resolved on the
 * way back; bitmaps are searched with ctz / clz; predecessor and successor
 * are one descent with a compile-time direction.  Probes outside the stored
 * range are answered from the minimum and maximum before any mapping.
 * Large batches are split over threads and searched in partially sorted
 * blocks, as the B+ tree does.
 *
 * No PostgreSQL headers here.
 */
#include "cpu_engine.h"
#include "veb_query_twin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUILD_PER_THREAD	(1 << 16)	/* keys per build thread */
#define PROBES_PER_THREAD	65536	/* probes per query thread */
#define DEFAULT_SORT_MIN	4096	/* sort blocks of at least this many */
#define SORT_BLOCK			(1 << 18)	/* probes sorted together */

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
 * Queries (the descents are veb_query_twin.h's, shared with the GPU)
 * --------------------------------------------------------------------- */

/* What the descents read of an image (veb_query_twin.h); t->nd > 0. */
static VebView
veb_view(const CpuVeb *t)
{
	VebView		v;

	v.clusters = t->clusters;
	v.table = t->table;
	v.run_start = t->run_start;
	v.hash_a = t->hash_a;
	v.hash_b = t->hash_b;
	v.nd = t->nd;
	v.n = t->hdr.n;
	v.kmin = t->min_key;
	v.kmax = t->max_key;
	v.umin = t->umin;
	v.umax = t->umax;
	return v;
}

typedef struct QueryJob
{
	const CpuVeb *t;
	VebView		view;			/* what the descents read of t */
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
		veb_answer(&q->view, q->op, q->probes[i],
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

		veb_answer(&q->view, q->op, p, hi, &rebased[s], &spare[s], W);
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
	if (t->nd == 0)
	{
		/* No key: every answer is empty (the descents need one). */
		if (nprobes > 0)
		{
			memset(first, 0, nprobes * sizeof(uint64_t));
			memset(last, 0, nprobes * sizeof(uint64_t));
		}
		timings.search_ms = timings.total_ms = gi_now_ms() - t0;
		gi_timings_store(&image->last_query, &timings);
		return GI_OK;
	}
	q.t = t;
	q.view = veb_view(t);
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
			cur = find_child(t->table, t->hash_a, t->hash_b, c,
							 (uint32_t) (word_at(x, sp, wp, W) >> (wp / 2)));
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
