/*
 * cpu_insert.c - CUBPT batch insertion (CUBPT 3.1 and 3.2.2) for the CPU
 * engine's B+ tree.
 *
 * Insertable layout.  A bulk-built tree keeps its leaves as one sorted key
 * array cut by formulas 1-2, which cannot take an entry without moving all
 * that follow.  The first insertion converts the image once, in O(n):
 *
 *   - Leaves become nodes of m = order slots (32 int32 keys or 16 int64
 *     keys, the static tree's width and order) in a node array made of
 *     fixed-size segments of 2^seg_shift nodes plus a list of segment
 *     pointers (CUBPT 3.1): growing appends segments and copies only the
 *     pointer list, never a node.  A segment holds its nodes' keys and then,
 *     when the image keeps payloads, their payloads.  Slots past a leaf's
 *     fill hold the type's maximum, so the branch-free whole-node counts of
 *     the static tree still work.
 *   - The sorted entries are cut into leaves by formulas 1-2 with m = fill =
 *     3/4 of the order, so the next insertions find slack instead of
 *     splitting every leaf.
 *   - A leaf directory in key order: dir_node[j] is leaf ordinal j's node id
 *     and dir_base[j] the number of entries in leaves before it
 *     (dir_base[leaves] = n).  Leaf fills are the differences.  A position
 *     answered by a query is dir_base[j] + slot, i.e. still the rank in the
 *     (key, payload) order of all entries, as for a fresh build.
 *   - The internal levels keep the static Harmonia layout (inner_keys,
 *     child_start), cut from the leaves' largest keys; the bottom level's
 *     children are leaf ordinals.
 *
 * Batch insertion, CUBPT's stages on the CPU:
 *   1. sort the batch by (key, payload);
 *   2. search: every entry descends the internal levels to its leaf, the
 *      first whose largest key >= the key (entries above every key go to
 *      the last leaf); an entry whose key ends the leaf and continues in the
 *      next leaves moves right, by binary search over that run of leaves, to
 *      where its (key, payload) belongs, so the order holds across leaves;
 *   3. reduce to touched leaves and their new-entry counts (the batch is
 *      sorted, so each touched leaf's entries are one slice of it);
 *   4. a touched leaf of T = old + new entries stays one node when T <= m,
 *      else splits into ceil(T / fill) nodes (formula 1 with m = fill);
 *      one exclusive prefix sum over the added nodes allocates them
 *      contiguously after growing the segments if needed;
 *   5. every touched leaf merges its old and new entries by (key, payload)
 *      and writes each into its node and slot per formula 2 (threads over
 *      touched leaves; the first node is the leaf's own, refilled in place);
 *   6. the directory is rebuilt: old leaf j moves to ordinal j plus the
 *      nodes added before it, its split nodes follow it, rank bases are a
 *      prefix sum of the fills;
 *   7. the internal levels are re-cut layer by layer from the new leaves'
 *      largest keys with the bulk-build formulas (a new root appears when
 *      the level above the leaves has more than one node).
 *
 * Deviation from CUBPT: step 7 re-cuts the internal levels instead of
 * inserting the split nodes' maxima into their parents and splitting upward.
 * The internal levels have about leaves / m nodes, so re-cutting them costs
 * O(leaves) reads of leaf maxima per batch (some 6-9 ms for 4 * 10^5 leaves
 * on a 2-core VM), and it keeps the static query code and its dense
 * Harmonia arrays as they are.  last_insert.build_ms includes it; inner_ms
 * records it alone.  Everything that can fail is
 * allocated before step 5 changes a node, so an out-of-memory insertion
 * leaves the image as it was.
 *
 * hdr.payloads (the rank-ordered copy gi_image_select compacts) goes stale
 * on insertion; gi_cpu_select calls gi_cpu_btree_refresh_payloads, which
 * flattens the leaves' payloads in directory order once per batch.
 *
 * No PostgreSQL headers here.
 */
#include "cpu_btree.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS		64
#define SEG_MIN_SHIFT	6		/* 64 nodes: small images stay small */
#define SEG_MAX_SHIFT	14		/* 16384 nodes: 2 MiB of int32 keys */
#define SEARCH_PER_THREAD	16384	/* batch entries per search thread */
#define MERGE_PER_THREAD	1024	/* touched leaves per merge thread */
#define CONVERT_PER_THREAD	8192	/* leaves per conversion thread */

/* The internal levels to be cut over a number of leaves, allocated ahead. */
typedef struct InnerPlan
{
	LevelCut	cuts[MAX_LEVELS];	/* cuts[0] leaves, cuts[k] internal */
	int			ncuts;
	uint64_t	level_base[MAX_LEVELS];
	uint64_t	total;			/* internal nodes */
	void	   *keys;
	uint64_t   *child_start;
} InnerPlan;

/* The largest key of the image's key type. */
static int64_t
type_max_of(int key_bytes)
{
	return key_bytes == 2 ? INT16_MAX : key_bytes == 4 ? INT32_MAX : INT64_MAX;
}

/* Bytes of one node segment (keys, then payloads if kept). */
static uint64_t
segment_bytes(const CpuBtree *t)
{
	return (UINT64_C(1) << t->seg_shift) * (uint64_t) t->order *
		((t->wide ? 8 : 4) + (t->has_payloads ? 8 : 0));
}

/* Key in slot s of a node, widened. */
static inline int64_t
node_key(const CpuBtree *t, uint64_t node, uint32_t s)
{
	const void *keys = ins_node_keys(t, node, t->wide);

	return t->wide ? ((const int64_t *) keys)[s] : ((const int32_t *) keys)[s];
}

/* Entries in leaf ordinal j. */
static inline uint32_t
leaf_fill(const CpuBtree *t, uint64_t j)
{
	return (uint32_t) (t->dir_base[j + 1] - t->dir_base[j]);
}

/* Largest key of leaf ordinal j (leaves are never empty once filled). */
static inline int64_t
leaf_max(const CpuBtree *t, uint64_t j)
{
	return node_key(t, t->dir_node[j], leaf_fill(t, j) - 1);
}

/* Write count entries into a node, padding its other key slots. */
static void
write_node(const CpuBtree *t, uint64_t node, const int64_t *keys,
		   const uint64_t *payloads, uint32_t count)
{
	void	   *dst = ins_node_keys(t, node, t->wide);
	uint32_t	s;

	if (t->wide)
	{
		for (s = 0; s < count; s++)
			((int64_t *) dst)[s] = keys[s];
		for (; s < (uint32_t) t->order; s++)
			((int64_t *) dst)[s] = INT64_MAX;
	}
	else
	{
		for (s = 0; s < count; s++)
			((int32_t *) dst)[s] = (int32_t) keys[s];
		for (; s < (uint32_t) t->order; s++)
			((int32_t *) dst)[s] = INT32_MAX;
	}
	if (t->has_payloads && count > 0)
		memcpy(ins_node_payloads(t, node), payloads, count * sizeof(uint64_t));
}

/* Make room for need nodes in all: append segments (CUBPT 3.1). */
static GiStatus
grow_segments(CpuBtree *t, uint64_t need, GiError *err)
{
	uint64_t	want = (need + (UINT64_C(1) << t->seg_shift) - 1) >> t->seg_shift;

	if (want > t->seg_slots)
	{
		/* Only the pointer list is copied when it fills, doubling. */
		uint64_t	slots = t->seg_slots * 2 > want ? t->seg_slots * 2 : want;
		char	  **list = realloc(t->seg_keys, slots * sizeof(char *));

		if (list == NULL)
			return gi_set_error(err, GI_ERR_HOST_OOM,
								"out of host memory growing the node array to %llu segments",
								(unsigned long long) slots);
		t->seg_keys = list;
		t->seg_slots = slots;
	}
	while (t->seg_count < want)
	{
		char	   *seg = malloc(segment_bytes(t));

		if (seg == NULL)
			return gi_set_error(err, GI_ERR_HOST_OOM,
								"out of host memory for a node segment");
		t->seg_keys[t->seg_count++] = seg;
	}
	return GI_OK;
}

/* Cut the internal levels over a number of leaves and allocate them. */
static GiStatus
plan_inner(const CpuBtree *t, uint64_t leaves, InnerPlan *plan, GiError *err)
{
	int			k;
	uint64_t	total = 0;

	plan->ncuts = 0;
	plan->cuts[plan->ncuts++] = cut_level(leaves, t->order);
	plan->cuts[0].nodes = leaves;	/* the leaves are given, not cut */
	while (plan->cuts[plan->ncuts - 1].nodes > 1)
	{
		plan->cuts[plan->ncuts] = cut_level(plan->cuts[plan->ncuts - 1].nodes,
											t->order);
		plan->ncuts++;
	}
	/* Harmonia order: the root level first. */
	for (k = plan->ncuts - 1; k >= 1; k--)
	{
		plan->level_base[k] = total;
		total += plan->cuts[k].nodes;
	}
	plan->total = total;
	plan->keys = malloc((total ? total : 1) * (uint64_t) t->order * (t->wide ? 8 : 4));
	plan->child_start = malloc((total + 1) * sizeof(uint64_t));
	if (plan->keys == NULL || plan->child_start == NULL)
	{
		free(plan->keys);
		free(plan->child_start);
		plan->keys = NULL;
		plan->child_start = NULL;
		return gi_set_error(err, GI_ERR_HOST_OOM,
							"out of host memory for %llu internal nodes",
							(unsigned long long) total);
	}
	return GI_OK;
}

/*
 * Fill a planned set of internal levels from the current directory (the
 * bulk-build formulas, bottom level up) and swap them in for the old ones.
 */
static void
fill_inner(CpuBtree *t, InnerPlan *plan)
{
	int			m = t->order;
	int			k;
	uint64_t	i;

	for (i = 0; i < plan->total * m; i++)
	{
		if (t->wide)
			((int64_t *) plan->keys)[i] = INT64_MAX;
		else
			((int32_t *) plan->keys)[i] = INT32_MAX;
	}
	plan->child_start[plan->total] = plan->total + t->leaf_count;
	for (k = 1; k < plan->ncuts; k++)
	{
		LevelCut	cut = plan->cuts[k];
		LevelCut	below = plan->cuts[k - 1];
		uint64_t	child_base = k == 1 ? plan->total : plan->level_base[k - 1];
		uint64_t	j;

		for (j = 0; j < cut.nodes; j++)
		{
			uint64_t	first = gi_cut_start(j, cut.ave, cut.h);
			uint64_t	count = j < cut.h ? cut.ave : cut.ave - 1;
			uint64_t	node = plan->level_base[k] + j;
			uint64_t	c;

			plan->child_start[node] = child_base + first;
			for (c = 0; c < count; c++)
			{
				uint64_t	child = first + c;
				int64_t		max;

				if (k == 1)
					max = leaf_max(t, child);
				else
				{
					/* An internal child's max is its last used key. */
					uint64_t	cnode = child_base + child;
					uint64_t	cfill = child < below.h ? below.ave : below.ave - 1;

					max = t->wide ?
						((int64_t *) plan->keys)[cnode * m + cfill - 1] :
						((int32_t *) plan->keys)[cnode * m + cfill - 1];
				}
				if (t->wide)
					((int64_t *) plan->keys)[node * m + c] = max;
				else
					((int32_t *) plan->keys)[node * m + c] = (int32_t) max;
			}
		}
	}
	free(t->inner_keys);
	free(t->child_start);
	t->inner_keys = plan->keys;
	t->child_start = plan->child_start;
	t->inner_levels = plan->ncuts - 1;
	t->inner_nodes = plan->total;
	plan->keys = NULL;
	plan->child_start = NULL;
}

/* Recount host_bytes for the insertable form. */
static void
count_host_bytes(CpuBtree *t)
{
	t->host_bytes = sizeof(CpuBtree) +
		t->seg_count * segment_bytes(t) + t->seg_slots * sizeof(char *) +
		t->leaf_count * sizeof(uint64_t) + (t->leaf_count + 1) * sizeof(uint64_t) +
		(t->inner_nodes ? t->inner_nodes : 1) * (uint64_t) t->order * (t->wide ? 8 : 4) +
		(t->inner_nodes + 1) * sizeof(uint64_t);
}

/* What the conversion's threads share. */
typedef struct ConvertTask
{
	CpuBtree   *t;
	LevelCut	cut;
} ConvertTask;

/* Copy leaves [begin, end) of the sorted key array into their nodes. */
static void
convert_slice(void *arg, size_t begin, size_t end)
{
	ConvertTask *c = (ConvertTask *) arg;
	CpuBtree   *t = c->t;
	size_t		j;
	int64_t		keys[ORDER32];

	for (j = begin; j < end; j++)
	{
		uint64_t	first = gi_cut_start(j, c->cut.ave, c->cut.h);
		uint32_t	count = (uint32_t) (j < c->cut.h ? c->cut.ave : c->cut.ave - 1);
		uint32_t	s;

		for (s = 0; s < count; s++)
			keys[s] = t->wide ? ((int64_t *) t->leaf_keys)[first + s] :
				((int32_t *) t->leaf_keys)[first + s];
		write_node(t, j, keys, t->has_payloads ? t->hdr.payloads + first : NULL,
				   count);
		t->dir_node[j] = j;
		t->dir_base[j] = first;
	}
}

/*
 * Turn a bulk-built tree into the insertable form (once, O(n)).  On failure
 * the static form is untouched and still answers.
 */
static GiStatus
make_insertable(CpuBtree *t, GiError *err)
{
	uint64_t	n = t->hdr.n;
	uint64_t	leaves;
	ConvertTask task;
	InnerPlan	plan;
	GiStatus	st;

	t->has_payloads = t->hdr.payloads != NULL;
	t->fill = t->order * 3 / 4;
	/* An empty image gets one empty leaf; the first batch fills it. */
	task.t = t;
	task.cut = n > 0 ? cut_level(n, t->fill) : cut_level(1, t->fill);
	leaves = n > 0 ? task.cut.nodes : 1;
	/* Segments of about an eighth of the first leaves, within bounds. */
	t->seg_shift = SEG_MIN_SHIFT;
	while (t->seg_shift < SEG_MAX_SHIFT &&
		   (UINT64_C(1) << t->seg_shift) < leaves / 8)
		t->seg_shift++;

	st = grow_segments(t, leaves, err);
	if (st == GI_OK)
	{
		t->dir_node = malloc(leaves * sizeof(uint64_t));
		t->dir_base = malloc((leaves + 1) * sizeof(uint64_t));
		if (t->dir_node == NULL || t->dir_base == NULL)
			st = gi_set_error(err, GI_ERR_HOST_OOM,
							  "out of host memory for a directory of %llu leaves",
							  (unsigned long long) leaves);
	}
	plan.keys = NULL;
	plan.child_start = NULL;
	if (st == GI_OK)
		st = plan_inner(t, leaves, &plan, err);
	if (st != GI_OK)
	{
		gi_cpu_btree_free_insertable(t);
		return st;
	}

	t->nodes_used = leaves;
	if (n > 0)
		gi_cpu_parallel_for(leaves, CONVERT_PER_THREAD, convert_slice, &task);
	else
	{
		write_node(t, 0, NULL, NULL, 0);
		t->dir_node[0] = 0;
		t->dir_base[0] = 0;
	}
	t->dir_base[leaves] = n;
	t->leaf_count = leaves;
	free(t->leaf_keys);
	t->leaf_keys = NULL;
	t->insertable = 1;
	fill_inner(t, &plan);		/* one empty leaf: no level, no max read */
	count_host_bytes(t);
	return GI_OK;
}

/* What the batch's search and merge threads share. */
typedef struct InsertBatch
{
	CpuBtree   *t;
	const int64_t *keys;		/* the sorted batch */
	const uint64_t *payloads;	/* its payloads, or NULL */
	uint64_t   *leaf;			/* step 2: leaf ordinal of each entry */
	uint64_t	new_distinct;	/* keys neither in the image nor earlier */
	/* Steps 3-5, per touched leaf. */
	uint64_t	touched;
	uint64_t   *t_leaf;			/* its ordinal */
	uint64_t   *t_begin;		/* its first batch entry; [touched] = n */
	uint64_t   *t_alloc;		/* its first added node, from nodes_used */
	LevelCut   *t_cut;			/* how its T entries are cut */
	uint64_t	first_new_node; /* nodes_used before the batch */
} InsertBatch;

/* (k1, p1) < (k2, p2) in (key, payload) order. */
static inline bool
pair_less(int64_t k1, uint64_t p1, int64_t k2, uint64_t p2)
{
	return k1 < k2 || (k1 == k2 && p1 < p2);
}

/*
 * The first leaf at or after leaf from whose largest key is >= key, for key
 * <= max_key (the last leaf's largest key): a gallop over the directory
 * from from, then a binary search.  A sorted batch's next entry is usually
 * in the same leaf or one of the next few, so this costs a probe or two
 * where a descent from the root costs a probe a level.
 */
static uint64_t
first_leaf_from(const CpuBtree *t, uint64_t from, int64_t key)
{
	uint64_t	lo = from,
				hi,
				step = 1;

	if (leaf_max(t, from) >= key)
		return from;
	for (;;)
	{							/* leaf_max(lo) < key */
		hi = lo + step;
		if (hi >= t->leaf_count - 1)
		{
			hi = t->leaf_count - 1;
			break;
		}
		if (leaf_max(t, hi) >= key)
			break;
		lo = hi;
		step *= 2;
	}
	while (hi - lo > 1)
	{							/* leaf_max(lo) < key <= leaf_max(hi) */
		uint64_t	mid = lo + (hi - lo) / 2;

		if (leaf_max(t, mid) >= key)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/*
 * Step 2 for an entry whose key is <= max_key, given j, the first leaf whose
 * largest key is >= the key: its leaf ordinal.  With payloads, an entry
 * whose key ends that leaf may belong further right, in the run of leaves
 * that start with that key: the first of them whose last (key, payload) is
 * not below the entry's, else the run's last leaf.
 */
static uint64_t
place_in_leaf(const CpuBtree *t, uint64_t j, int64_t key, uint64_t payload, bool *present)
{
	uint64_t	lo;
	uint64_t	hi;
	uint64_t	step;
	uint64_t	node = t->dir_node[j];
	uint32_t	fill = leaf_fill(t, j);
	uint32_t	s;

	for (s = 0; s < fill && node_key(t, node, s) < key; s++)
		;
	*present = s < fill && node_key(t, node, s) == key;
	if (!t->has_payloads || node_key(t, node, fill - 1) != key)
		return j;

	/*
	 * The run of leaves [j, r] whose first key is the key (after j): a
	 * gallop from j bounds r (the run is short unless one key fills many
	 * leaves; a binary search over all the leaves after j cost most of the
	 * search step on keys with a few duplicates each), then a binary search.
	 */
	lo = j;
	hi = t->leaf_count - 1;
	for (step = 1; lo < hi; step *= 2)
	{							/* first key of lo <= key */
		uint64_t	probe = hi - lo > step ? lo + step : hi;

		if (node_key(t, t->dir_node[probe], 0) > key)
		{
			hi = probe - 1;
			break;
		}
		lo = probe;
	}
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo + 1) / 2;

		if (node_key(t, t->dir_node[mid], 0) <= key)
			lo = mid;
		else
			hi = mid - 1;
	}
	/* The first of them whose last entry is >= (key, payload). */
	hi = lo;
	lo = j;
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;
		uint32_t	last = leaf_fill(t, mid) - 1;
		uint64_t	mnode = t->dir_node[mid];

		if (pair_less(node_key(t, mnode, last), ins_node_payloads(t, mnode)[last],
					  key, payload))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Step 2 over entries [begin, end). */
static void
search_slice(void *arg, size_t begin, size_t end)
{
	InsertBatch *b = (InsertBatch *) arg;
	uint64_t	new_distinct = 0;
	const CpuBtree *t = b->t;
	uint64_t	j = UINT64_MAX;	/* first leaf with max >= the last key seen */
	size_t		i;

	for (i = begin; i < end; i++)
	{
		int64_t		key = b->keys[i];
		bool		present = false;

		if (t->hdr.n == 0)
			b->leaf[i] = 0;
		else if (key > t->max_key)
			b->leaf[i] = t->leaf_count - 1;
		else
		{						/* the slice is sorted: keys only grow */
			j = j == UINT64_MAX ? gi_cpu_btree_leaf_of(t, key) : first_leaf_from(t, j, key);
			b->leaf[i] = place_in_leaf(t, j, key, b->payloads ? b->payloads[i] : 0,
									   &present);
		}
		if (!present && (i == 0 || key != b->keys[i - 1]))
			new_distinct++;
	}
	__atomic_fetch_add(&b->new_distinct, new_distinct, __ATOMIC_RELAXED);
}

/* Step 5 over touched leaves [begin, end): merge and write. */
static void
merge_slice(void *arg, size_t begin, size_t end)
{
	InsertBatch *b = (InsertBatch *) arg;
	CpuBtree   *t = b->t;
	size_t		ti;
	int64_t		old_keys[ORDER32];
	uint64_t	old_pl[ORDER32];
	int64_t		out_keys[ORDER32];
	uint64_t	out_pl[ORDER32];

	for (ti = begin; ti < end; ti++)
	{
		uint64_t	j = b->t_leaf[ti];
		uint64_t	own = t->dir_node[j];
		uint32_t	old = leaf_fill(t, j);
		uint64_t	a = b->t_begin[ti];
		uint64_t	a_end = b->t_begin[ti + 1];
		LevelCut	cut = b->t_cut[ti];
		uint64_t	q = 0;		/* node of the cut being filled */
		uint32_t	s = 0;		/* its next slot */
		uint32_t	o = 0;		/* next old entry */
		uint32_t	i;

		/* The leaf's own node is refilled: take its entries out first. */
		for (i = 0; i < old; i++)
		{
			old_keys[i] = node_key(t, own, i);
			old_pl[i] = t->has_payloads ? ins_node_payloads(t, own)[i] : 0;
		}
		while (o < old || a < a_end)
		{
			bool		take_old;
			uint32_t	size = (uint32_t) (q < cut.h ? cut.ave : cut.ave - 1);

			if (o == old)
				take_old = false;
			else if (a == a_end)
				take_old = true;
			else
				take_old = !pair_less(b->keys[a], b->payloads ? b->payloads[a] : 0,
									  old_keys[o], old_pl[o]);
			if (take_old)
			{
				out_keys[s] = old_keys[o];
				out_pl[s] = old_pl[o];
				o++;
			}
			else
			{
				out_keys[s] = b->keys[a];
				out_pl[s] = b->payloads ? b->payloads[a] : 0;
				a++;
			}
			if (++s == size)
			{
				/* Node q is complete: node 0 is the leaf's own, then its new ones. */
				uint64_t	node = q == 0 ? own :
					b->first_new_node + b->t_alloc[ti] + q - 1;

				write_node(t, node, out_keys, out_pl, s);
				q++;
				s = 0;
			}
		}
	}
}

/* Batch insertion into a CPU B+ tree image (engine_impl.h). */
GiStatus
gi_cpu_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
			  size_t n, GiError *err)
{
	CpuBtree   *t = (CpuBtree *) image;
	double		t0 = gi_now_ms();
	double		t_sort;
	double		t_search;
	double		t_inner = 0;
	int64_t		tmax = type_max_of(image->key_bytes);
	int64_t		tmin = -tmax - 1;
	int64_t    *sk = NULL;
	uint64_t   *sp = NULL;
	uint64_t   *new_node = NULL;
	uint64_t   *new_base = NULL;
	InsertBatch b;
	InnerPlan	plan;
	uint64_t	added = 0;
	uint64_t	new_leaves;
	uint64_t	i;
	uint64_t	j;
	uint64_t	out;
	uint64_t	ti;
	GiStatus	st = GI_OK;

	if (image->structure != GI_STRUCT_BTREE)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"batch insertion needs a B+ tree image");
	if (n == 0)
		return GI_OK;
	for (i = 0; i < n; i++)
		if (keys[i] < tmin || keys[i] > tmax)
			return gi_set_error(err, GI_ERR_INVALID,
								"key %lld at position %llu does not fit in %d bytes",
								(long long) keys[i], (unsigned long long) i,
								image->key_bytes);
	memset(&b, 0, sizeof(b));
	plan.keys = NULL;
	plan.child_start = NULL;

	/* Step 1: sort the batch by (key, payload). */
	sk = malloc(n * sizeof(int64_t));
	sp = payloads ? malloc(n * sizeof(uint64_t)) : NULL;
	b.leaf = malloc(n * sizeof(uint64_t));
	if (sk == NULL || (payloads && sp == NULL) || b.leaf == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM,
						  "out of host memory sorting %zu insertions", n);
		goto done;
	}
	st = gi_host_sort_pairs(keys, payloads, n, sk, sp, err);
	if (st != GI_OK)
		goto done;
	t_sort = gi_now_ms() - t0;

	if (!t->insertable)
	{
		double		c0 = gi_now_ms();

		st = make_insertable(t, err);
		if (st != GI_OK)
			goto done;
		t->convert_ms = gi_now_ms() - c0;
	}

	/* Step 2: every entry's leaf, by descents over the old tree. */
	b.t = t;
	b.keys = sk;
	b.payloads = sp;
	{
		double		s0 = gi_now_ms();

		gi_cpu_parallel_for(n, SEARCH_PER_THREAD, search_slice, &b);
		t_search = gi_now_ms() - s0;
	}

	/* Step 3: the batch is sorted, so the touched leaves are runs of it. */
	b.touched = 1;
	for (i = 1; i < n; i++)
		b.touched += b.leaf[i] != b.leaf[i - 1];
	b.t_leaf = malloc(b.touched * sizeof(uint64_t));
	b.t_begin = malloc((b.touched + 1) * sizeof(uint64_t));
	b.t_alloc = malloc(b.touched * sizeof(uint64_t));
	b.t_cut = malloc(b.touched * sizeof(LevelCut));
	if (!b.t_leaf || !b.t_begin || !b.t_alloc || !b.t_cut)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM,
						  "out of host memory for %llu touched leaves",
						  (unsigned long long) b.touched);
		goto done;
	}
	ti = 0;
	for (i = 0; i < n; i++)
		if (i == 0 || b.leaf[i] != b.leaf[i - 1])
		{
			b.t_leaf[ti] = b.leaf[i];
			b.t_begin[ti] = i;
			ti++;
		}
	b.t_begin[b.touched] = n;

	/* Step 4: how each touched leaf splits; one prefix sum allocates. */
	for (ti = 0; ti < b.touched; ti++)
	{
		uint64_t	total = leaf_fill(t, b.t_leaf[ti]) +
			(b.t_begin[ti + 1] - b.t_begin[ti]);

		if (total <= (uint64_t) t->order)
		{
			/* It fits: one node of total entries. */
			b.t_cut[ti].items = total;
			b.t_cut[ti].nodes = 1;
			b.t_cut[ti].ave = total;
			b.t_cut[ti].h = 1;
		}
		else
			b.t_cut[ti] = cut_level(total, t->fill);
		b.t_alloc[ti] = added;
		added += b.t_cut[ti].nodes - 1;
	}
	b.first_new_node = t->nodes_used;

	/*
	 * No leaf splits and no leaf's largest key moves (only the last leaf
	 * takes keys above its own): the directory keeps its nodes, the rank
	 * bases shift, and the internal levels stand as they are.  A small batch
	 * then costs O(batch + leaves) additions instead of a new directory and
	 * a re-cut.
	 */
	if (added == 0 &&
		(b.t_leaf[b.touched - 1] != t->leaf_count - 1 ||
		 (leaf_fill(t, t->leaf_count - 1) > 0 &&
		  sk[n - 1] <= leaf_max(t, t->leaf_count - 1))))
	{
		uint64_t	shift = 0;

		gi_cpu_parallel_for(b.touched, MERGE_PER_THREAD, merge_slice, &b);
		ti = 0;
		for (j = b.t_leaf[0] + 1; j <= t->leaf_count; j++)
		{
			while (ti < b.touched && b.t_leaf[ti] < j)
			{
				shift += b.t_begin[ti + 1] - b.t_begin[ti];
				ti++;
			}
			t->dir_base[j] += shift;
		}
		goto totals;
	}
	new_leaves = t->leaf_count + added;
	st = grow_segments(t, t->nodes_used + added, err);
	if (st != GI_OK)
		goto done;
	new_node = malloc(new_leaves * sizeof(uint64_t));
	new_base = malloc((new_leaves + 1) * sizeof(uint64_t));
	if (new_node == NULL || new_base == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM,
						  "out of host memory for a directory of %llu leaves",
						  (unsigned long long) new_leaves);
		goto done;
	}
	st = plan_inner(t, new_leaves, &plan, err);
	if (st != GI_OK)
		goto done;

	/* Nothing fails from here on.  Step 5: merge and write the leaves. */
	gi_cpu_parallel_for(b.touched, MERGE_PER_THREAD, merge_slice, &b);
	t->nodes_used += added;

	/* Step 6: the new directory; fills first, then their prefix sum. */
	out = 0;
	ti = 0;
	for (j = 0; j < t->leaf_count; j++)
	{
		if (ti < b.touched && b.t_leaf[ti] == j)
		{
			LevelCut	cut = b.t_cut[ti];
			uint64_t	q;

			for (q = 0; q < cut.nodes; q++)
			{
				new_node[out] = q == 0 ? t->dir_node[j] :
					b.first_new_node + b.t_alloc[ti] + q - 1;
				new_base[out] = q < cut.h ? cut.ave : cut.ave - 1;
				out++;
			}
			ti++;
		}
		else
		{
			new_node[out] = t->dir_node[j];
			new_base[out] = leaf_fill(t, j);
			out++;
		}
	}
	{
		uint64_t	sum = 0;

		for (j = 0; j < new_leaves; j++)
		{
			uint64_t	c = new_base[j];

			new_base[j] = sum;
			sum += c;
		}
		new_base[new_leaves] = sum;
	}
	free(t->dir_node);
	free(t->dir_base);
	t->dir_node = new_node;
	t->dir_base = new_base;
	new_node = new_base = NULL;
	t->leaf_count = new_leaves;

totals:
	/* The image's totals. */
	if (t->hdr.n == 0 || sk[0] < t->min_key)
		t->min_key = sk[0];
	if (t->hdr.n == 0 || sk[n - 1] > t->max_key)
		t->max_key = sk[n - 1];
	t->distinct += b.new_distinct;
	t->hdr.n += n;
	t->payloads_stale = t->has_payloads;

	/* Step 7: re-cut the internal levels from the leaves' largest keys. */
	if (plan.keys)
	{
		double		r0 = gi_now_ms();

		fill_inner(t, &plan);
		t_inner = gi_now_ms() - r0;
	}
	count_host_bytes(t);

	t->inserted += n;
	t->insert_batches++;
	t->inner_ms = t_inner;
	memset(&t->last_insert, 0, sizeof(t->last_insert));
	t->last_insert.sort_ms = t_sort;
	t->last_insert.search_ms = t_search;
	t->last_insert.total_ms = gi_now_ms() - t0;
	t->last_insert.build_ms = t->last_insert.total_ms - t_sort - t_search;

done:
	free(sk);
	free(sp);
	free(b.leaf);
	free(b.t_leaf);
	free(b.t_begin);
	free(b.t_alloc);
	free(b.t_cut);
	free(new_node);
	free(new_base);
	free(plan.keys);
	free(plan.child_start);
	return st;
}

/* One lock for every image's refresh: rare (once after insertions). */
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Flatten the leaves' payloads into hdr.payloads in rank order (cpu_engine.h),
 * under the lock: selections may run on one image at once (engine.h), the
 * first rebuilds the copy and the others find it fresh.
 */
GiStatus
gi_cpu_btree_refresh_payloads(GiImage *image, GiError *err)
{
	CpuBtree   *t = (CpuBtree *) image;
	uint64_t   *flat;
	uint64_t	j;

	if (image->structure != GI_STRUCT_BTREE || !t->insertable)
		return GI_OK;
	pthread_mutex_lock(&refresh_lock);
	if (!t->payloads_stale)
	{
		pthread_mutex_unlock(&refresh_lock);
		return GI_OK;
	}
	flat = realloc(image->payloads, (image->n ? image->n : 1) * sizeof(uint64_t));
	if (flat == NULL)
	{
		pthread_mutex_unlock(&refresh_lock);
		return gi_set_error(err, GI_ERR_HOST_OOM,
							"out of host memory refreshing %llu payloads",
							(unsigned long long) image->n);
	}
	image->payloads = flat;
	for (j = 0; j < t->leaf_count; j++)
		memcpy(flat + t->dir_base[j], ins_node_payloads(t, t->dir_node[j]),
			   leaf_fill(t, j) * sizeof(uint64_t));
	t->payloads_stale = 0;
	pthread_mutex_unlock(&refresh_lock);
	return GI_OK;
}
