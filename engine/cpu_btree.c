/*
 * cpu_btree.c - the CPU engine: a B+ tree bulk-built from sorted keys.
 *
 * Layout.  The leaf level is the sorted key array itself (a copy narrowed to
 * int32 for 2- and 4-byte keys), cut into leaves by the CUBPT bulk-build
 * formulas: K items go into node_num = ceil(K / m) nodes, the first h of them
 * holding ave = ceil(K / node_num) items and the rest ave - 1, where
 * h = K - node_num * (ave - 1).  Leaf j therefore starts at
 * j * (ave - 1) + min(j, h), so a position found in a leaf is the global
 * index into the sorted entries and no leaf needs to be stored.  The internal
 * levels are built the same way over the nodes below and are kept in the
 * Harmonia layout: one key region of fixed-size nodes (root first, level by
 * level), each key being the maximum key of a child, plus a child prefix-sum
 * array giving the index of each node's first child.
 *
 * Node order m: 32 int32 keys or 16 int64 keys, i.e. 128 bytes (two cache
 * lines, which the adjacent-line prefetcher fetches together) either way.
 * A node is searched by counting its keys below the probe over the whole
 * node, branch-free; the compiler vectorizes the fixed-length loop.  Unused
 * key slots and the tail of the leaf array are padded with the type's maximum
 * so that fixed-length counts never need the node's fill.
 *
 * Queries.  Everything reduces to lower_bound(p): upper_bound(p) is
 * lower_bound(p + 1), which cannot overflow because it is used only when
 * p < the largest key.  Probes are int64 whatever the key width; a probe
 * outside the stored type's range is answered by comparison (below all keys
 * or above all keys), never narrowed.  Large batches are cut into blocks,
 * each block's probes partially radix-sorted (top bits) with their positions
 * and searched in key order (the descents then walk the tree left to right,
 * so nodes and leaves come from cache); results go to the caller's positions.
 * Batches large enough are split over threads, each owning a slice of probes.
 *
 * Insertable form.  After the first gi_image_insert (engine/cpu_insert.c)
 * the leaves are nodes reached through a leaf directory; the descent over
 * the internal levels is the same, then the leaf's node comes from the
 * directory and a position is its rank base plus the slot.  Those queries
 * run through their own specialized copies of the batch loops (ins_answer),
 * so the static form's code is what it was.
 *
 * No PostgreSQL headers here.
 */
#include "cpu_btree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LEVELS		64		/* far more than 2^64 keys need */
#define RUN_SCAN		8		/* equal keys scanned before descending */

/*
 * Batch tuning, measured on a 2-core EPYC VM, 10^6 probes over 10^7 int32
 * keys: searching sorted blocks takes ~55-70 ns a probe against ~140-220 ns
 * in the caller's order.  Blocks of 2^18 probes were best (2^16 leaves the
 * probes too sparse over the leaves; 2^20 spreads the scattered result
 * writes over more than the caches).  Sorting is cheap (~8 ns a probe), so it
 * is done from a few thousand probes on; a thread pays from some 64k probes.
 * GI_CPU_SORT_MIN and GI_CPU_THREADS override both for tests and experiments.
 */
#define DEFAULT_SORT_MIN	4096
#define PROBES_PER_THREAD	65536
#ifndef SORT_BLOCK
#define SORT_BLOCK			(1 << 18)	/* probes sorted together */
#endif

/* Count of the 32 int32 keys below p (vectorized by the compiler). */
static inline uint32_t
count_below32(const int32_t *node, int32_t p)
{
	uint32_t	c = 0;
	int			i;

	for (i = 0; i < ORDER32; i++)
		c += (node[i] < p);
	return c;
}

/* Count of the 16 int64 keys below p. */
static inline uint32_t
count_below64(const int64_t *node, int64_t p)
{
	uint32_t	c = 0;
	int			i;

	for (i = 0; i < ORDER64; i++)
		c += (node[i] < p);
	return c;
}

/*
 * The leaf (ordinal) whose key range holds lower_bound(p): the first leaf
 * whose largest key >= p, for p within the stored type's range and
 * p <= max_key.
 */
static inline __attribute__((always_inline)) uint64_t
descend_to_leaf(const CpuBtree *t, int64_t p, const int wide)
{
	uint64_t	node = 0;		/* the root, or leaf 0 when n <= m */
	int			l;

	for (l = 0; l < t->inner_levels; l++)
	{
		uint32_t	c;

		if (wide)
			c = count_below64((const int64_t *) t->inner_keys + node * ORDER64, p);
		else
			c = count_below32((const int32_t *) t->inner_keys + node * ORDER32,
							  (int32_t) p);
		node = t->child_start[node] + c;
	}
	return node - t->inner_nodes;
}

/*
 * First position whose key >= p, for p within the stored type's range and
 * p <= max_key (so every node on the path has a key >= p).  Specialized by
 * the constant wide flag at each call site.
 */
static inline __attribute__((always_inline)) uint64_t
descend(const CpuBtree *t, int64_t p, const int wide)
{
	uint64_t	leaf = descend_to_leaf(t, p, wide);
	uint64_t	start;

	start = gi_cut_start(leaf, t->leaf_ave, t->leaf_h);
	if (wide)
		return start + count_below64((const int64_t *) t->leaf_keys + start, p);
	return start + count_below32((const int32_t *) t->leaf_keys + start,
								 (int32_t) p);
}

/* The leaf ordinal descend_to_leaf finds, for callers outside (cpu_engine.h). */
uint64_t
gi_cpu_btree_leaf_of(const CpuBtree *t, int64_t p)
{
	return t->wide ? descend_to_leaf(t, p, 1) : descend_to_leaf(t, p, 0);
}

/* Key at position i, widened. */
static inline __attribute__((always_inline)) int64_t
key_at(const CpuBtree *t, uint64_t i, const int wide)
{
	if (wide)
		return ((const int64_t *) t->leaf_keys)[i];
	return ((const int32_t *) t->leaf_keys)[i];
}

/* lower_bound(p) over the sorted entries: first position with key >= p. */
static inline __attribute__((always_inline)) uint64_t
lower_bound(const CpuBtree *t, int64_t p, const int wide)
{
	if (p <= t->min_key)
		return 0;
	if (p > t->max_key)
		return t->hdr.n;
	return descend(t, p, wide);
}

/* upper_bound(p): first position with key > p. */
static inline __attribute__((always_inline)) uint64_t
upper_bound(const CpuBtree *t, int64_t p, const int wide)
{
	if (p < t->min_key)
		return 0;
	if (p >= t->max_key)
		return t->hdr.n;
	return descend(t, p + 1, wide);
}

/* End of the run of key k that contains position pos. */
static inline __attribute__((always_inline)) uint64_t
run_end(const CpuBtree *t, uint64_t pos, int64_t k, const int wide)
{
	uint64_t	stop = pos + RUN_SCAN < t->hdr.n ? pos + RUN_SCAN : t->hdr.n;
	uint64_t	i;

	/* Runs are mostly short: scan a few neighbours before descending. */
	for (i = pos + 1; i < stop; i++)
		if (key_at(t, i, wide) != k)
			return i;
	return i == t->hdr.n ? i : upper_bound(t, k, wide);
}

/* Start of the run of key k that contains position pos. */
static inline __attribute__((always_inline)) uint64_t
run_start(const CpuBtree *t, uint64_t pos, int64_t k, const int wide)
{
	uint64_t	stop = pos > RUN_SCAN ? pos - RUN_SCAN : 0;
	uint64_t	i;

	for (i = pos; i > stop; i--)
		if (key_at(t, i - 1, wide) != k)
			return i;
	return i == 0 ? 0 : lower_bound(t, k, wide);
}

/* Answer one probe (lo, and hi for ranges) into *first, *last. */
static inline __attribute__((always_inline)) void
answer(const CpuBtree *t, GiOp op, int64_t p, int64_t hi, uint64_t *first,
	   uint64_t *last, const int wide)
{
	uint64_t	n = t->hdr.n;
	uint64_t	a;
	uint64_t	b;

	switch (op)
	{
		case GI_OP_POINT:
			a = lower_bound(t, p, wide);
			if (a < n && key_at(t, a, wide) == p)
				b = run_end(t, a, p, wide);
			else
				b = a;
			break;
		case GI_OP_PRED:
			b = upper_bound(t, p, wide);
			a = b == 0 ? 0 : run_start(t, b - 1, key_at(t, b - 1, wide), wide);
			break;
		case GI_OP_SUCC:
			a = lower_bound(t, p, wide);
			b = a == n ? n : run_end(t, a, key_at(t, a, wide), wide);
			break;
		default:				/* GI_OP_RANGE */
			if (p > hi)
				a = b = 0;
			else
			{
				a = lower_bound(t, p, wide);
				b = upper_bound(t, hi, wide);
			}
			break;
	}
	*first = a;
	*last = b;
}

/*
 * Insertable form.  A position is (leaf ordinal, slot) with rank
 * dir_base[leaf] + slot; past the end is (leaf_count, 0).  Leaves are never
 * empty, so the first leaf whose largest key >= p holds lower_bound(p).
 */
typedef struct InsPos
{
	uint64_t	rank;
	uint64_t	leaf;
	uint32_t	slot;
} InsPos;

/* Entries in leaf ordinal j. */
static inline uint32_t
ins_leaf_fill(const CpuBtree *t, uint64_t j)
{
	return (uint32_t) (t->dir_base[j + 1] - t->dir_base[j]);
}

/* Key in slot s of leaf ordinal j, widened. */
static inline __attribute__((always_inline)) int64_t
ins_key(const CpuBtree *t, uint64_t j, uint32_t s, const int wide)
{
	const void *keys = ins_node_keys(t, t->dir_node[j], wide);

	if (wide)
		return ((const int64_t *) keys)[s];
	return ((const int32_t *) keys)[s];
}

/* lower_bound(p) as a position, for min_key < p <= max_key. */
static inline __attribute__((always_inline)) InsPos
ins_find(const CpuBtree *t, int64_t p, const int wide)
{
	InsPos		r;
	const void *keys;

	r.leaf = descend_to_leaf(t, p, wide);
	keys = ins_node_keys(t, t->dir_node[r.leaf], wide);
	if (wide)
		r.slot = count_below64((const int64_t *) keys, p);
	else
		r.slot = count_below32((const int32_t *) keys, (int32_t) p);
	r.rank = t->dir_base[r.leaf] + r.slot;
	return r;
}

/* The position of rank 0 or of the end. */
static inline InsPos
ins_edge(const CpuBtree *t, int end)
{
	InsPos		r;

	r.rank = end ? t->hdr.n : 0;
	r.leaf = end ? t->leaf_count : 0;
	r.slot = 0;
	return r;
}

/* lower_bound(p) on the insertable form. */
static inline __attribute__((always_inline)) InsPos
ins_lower(const CpuBtree *t, int64_t p, const int wide)
{
	if (p <= t->min_key)
		return ins_edge(t, 0);
	if (p > t->max_key)
		return ins_edge(t, 1);
	return ins_find(t, p, wide);
}

/* upper_bound(p) on the insertable form. */
static inline __attribute__((always_inline)) InsPos
ins_upper(const CpuBtree *t, int64_t p, const int wide)
{
	if (p < t->min_key)
		return ins_edge(t, 0);
	if (p >= t->max_key)
		return ins_edge(t, 1);
	return ins_find(t, p + 1, wide);
}

/* End (rank) of the run of key k holding position a (a.rank < n). */
static inline __attribute__((always_inline)) uint64_t
ins_run_end(const CpuBtree *t, InsPos a, int64_t k, const int wide)
{
	uint32_t	fill = ins_leaf_fill(t, a.leaf);
	uint32_t	s;

	/* The rest of the leaf first: runs are mostly short. */
	for (s = a.slot + 1; s < fill; s++)
		if (ins_key(t, a.leaf, s, wide) != k)
			return t->dir_base[a.leaf] + s;
	if (a.leaf + 1 == t->leaf_count || ins_key(t, a.leaf + 1, 0, wide) != k)
		return t->dir_base[a.leaf + 1];
	return ins_upper(t, k, wide).rank;
}

/* Start (rank) of the run of key k holding slot s of leaf j. */
static inline __attribute__((always_inline)) uint64_t
ins_run_start(const CpuBtree *t, uint64_t j, uint32_t s, int64_t k,
			  const int wide)
{
	for (; s > 0; s--)
		if (ins_key(t, j, s - 1, wide) != k)
			return t->dir_base[j] + s;
	if (j == 0 || ins_key(t, j - 1, ins_leaf_fill(t, j - 1) - 1, wide) != k)
		return t->dir_base[j];
	return ins_lower(t, k, wide).rank;
}

/* answer() for the insertable form: the same ops, leaves via the directory. */
static inline __attribute__((always_inline)) void
ins_answer(const CpuBtree *t, GiOp op, int64_t p, int64_t hi, uint64_t *first,
		   uint64_t *last, const int wide)
{
	uint64_t	n = t->hdr.n;
	InsPos		a;
	InsPos		b;
	uint64_t	ra;
	uint64_t	rb;

	switch (op)
	{
		case GI_OP_POINT:
			a = ins_lower(t, p, wide);
			ra = rb = a.rank;
			if (a.rank < n && ins_key(t, a.leaf, a.slot, wide) == p)
				rb = ins_run_end(t, a, p, wide);
			break;
		case GI_OP_PRED:
			b = ins_upper(t, p, wide);
			rb = b.rank;
			ra = 0;
			if (rb > 0)
			{
				/* The entry just before b: the last of the run wanted. */
				uint64_t	j = b.slot > 0 ? b.leaf : b.leaf - 1;
				uint32_t	s = b.slot > 0 ? b.slot - 1 : ins_leaf_fill(t, j) - 1;

				ra = ins_run_start(t, j, s, ins_key(t, j, s, wide), wide);
			}
			break;
		case GI_OP_SUCC:
			a = ins_lower(t, p, wide);
			ra = a.rank;
			rb = a.rank == n ? n :
				ins_run_end(t, a, ins_key(t, a.leaf, a.slot, wide), wide);
			break;
		default:				/* GI_OP_RANGE */
			if (p > hi)
				ra = rb = 0;
			else
			{
				ra = ins_lower(t, p, wide).rank;
				rb = ins_upper(t, hi, wide).rank;
			}
			break;
	}
	*first = ra;
	*last = rb;
}

/* Answer the caller's probes base .. base + count - 1 in their own order. */
static inline __attribute__((always_inline)) void
answer_many(const CpuBtree *t, GiOp op, const int64_t *probes,
			const int64_t *probes_hi, size_t base, size_t count,
			uint64_t *first, uint64_t *last, const int wide, const int ins)
{
	size_t		i;

	for (i = base; i < base + count; i++)
	{
		if (ins)
			ins_answer(t, op, probes[i], probes_hi ? probes_hi[i] : 0,
					   &first[i], &last[i], wide);
		else
			answer(t, op, probes[i], probes_hi ? probes_hi[i] : 0, &first[i],
				   &last[i], wide);
	}
}

/*
 * Answer a sorted block: probe values min + rebased[s] in search order, for
 * caller position base + pos[s].  Answers are written in search order, over
 * rebased[] (each value is read before its slot is reused) and spare[], and
 * only then scattered to the caller's positions in a tight loop of
 * independent stores: interleaving scattered stores with the descents
 * stalls them.
 */
static inline __attribute__((always_inline)) void
answer_sorted(const CpuBtree *t, GiOp op, uint64_t *rebased, uint64_t *spare,
			  const uint32_t *pos, int64_t min, const int64_t *probes_hi,
			  size_t base, size_t count, uint64_t *first, uint64_t *last,
			  const int wide, const int ins)
{
	size_t		s;

	/* Upper bounds are gathered first, in a loop of independent loads. */
	if (probes_hi)
		for (s = 0; s < count; s++)
			spare[s] = (uint64_t) probes_hi[base + pos[s]];
	for (s = 0; s < count; s++)
	{
		int64_t		p = (int64_t) (rebased[s] + (uint64_t) min);

		if (ins)
			ins_answer(t, op, p, (int64_t) spare[s], &rebased[s], &spare[s],
					   wide);
		else
			answer(t, op, p, (int64_t) spare[s], &rebased[s], &spare[s], wide);
	}
	for (s = 0; s < count; s++)
	{
		first[base + pos[s]] = rebased[s];
		last[base + pos[s]] = spare[s];
	}
}

/*
 * answer_many / answer_sorted specialized for int32 or int64 keys and for
 * the static or the insertable form.
 */
static void
answer_block(const CpuBtree *t, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, uint64_t *rebased, uint64_t *spare,
			 const uint32_t *pos, int64_t min, size_t base, size_t count,
			 uint64_t *first, uint64_t *last)
{
	if (t->hdr.n == 0)
	{
		size_t		i;

		for (i = base; i < base + count; i++)
			first[i] = last[i] = 0;
	}
	else if (t->insertable)
	{
		/* The insertable form: its own copies, so the static ones stay as they were. */
		if (rebased == NULL && t->wide)
			answer_many(t, op, probes, probes_hi, base, count, first, last, 1, 1);
		else if (rebased == NULL)
			answer_many(t, op, probes, probes_hi, base, count, first, last, 0, 1);
		else if (t->wide)
			answer_sorted(t, op, rebased, spare, pos, min, probes_hi, base,
						  count, first, last, 1, 1);
		else
			answer_sorted(t, op, rebased, spare, pos, min, probes_hi, base,
						  count, first, last, 0, 1);
	}
	else if (rebased == NULL && t->wide)
		answer_many(t, op, probes, probes_hi, base, count, first, last, 1, 0);
	else if (rebased == NULL)
		answer_many(t, op, probes, probes_hi, base, count, first, last, 0, 0);
	else if (t->wide)
		answer_sorted(t, op, rebased, spare, pos, min, probes_hi, base, count,
					  first, last, 1, 0);
	else
		answer_sorted(t, op, rebased, spare, pos, min, probes_hi, base, count,
					  first, last, 0, 0);
}

/* One thread's share of a batch, and the scratch it sorts in. */
typedef struct QueryTask
{
	const CpuBtree *t;
	GiOp		op;
	const int64_t *probes;
	const int64_t *probes_hi;
	uint64_t   *first;
	uint64_t   *last;
	size_t		begin;			/* caller positions [begin, end) */
	size_t		end;
	size_t		sort_min;		/* sort blocks at least this large */
	uint64_t   *keys;			/* scratch for the block sort, or NULL */
	uint64_t   *tmp_keys;
	uint32_t   *pos;
	uint32_t   *tmp_pos;
	double		sort_ms;
	double		search_ms;
} QueryTask;

/* Run task i: blocks of probes, each sorted if large enough, searched. */
static void
run_task(void *arg, int i)
{
	QueryTask  *q = &((QueryTask *) arg)[i];
	size_t		at = q->begin;

	while (at < q->end)
	{
		size_t		count = q->end - at;
		uint64_t   *rebased = NULL;
		uint32_t   *pos = NULL;
		int64_t		min = 0;
		double		t0 = gi_now_ms();
		double		t1;

		if (count > SORT_BLOCK)
			count = SORT_BLOCK;
		if (count >= q->sort_min && q->keys != NULL)
			gi_cpu_sort_probe_block(q->probes + at, count, q->keys, q->pos,
									q->tmp_keys, q->tmp_pos, &min, &rebased,
									&pos);
		t1 = gi_now_ms();
		answer_block(q->t, q->op, q->probes, q->probes_hi, rebased,
					 rebased == q->keys ? q->tmp_keys : q->keys, pos, min,
					 at, count, q->first, q->last);
		q->sort_ms += t1 - t0;
		q->search_ms += gi_now_ms() - t1;
		at += count;
	}
}

/* Answer a batch (cpu_engine.h). */
GiStatus
gi_cpu_btree_query(GiImage *image, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			 uint64_t *last, GiError *err)
{
	CpuBtree   *t = (CpuBtree *) image;
	double		t0 = gi_now_ms();
	QueryTask	tasks[GI_CPU_MAX_THREADS];
	GiTimings	timings;
	int			nthreads;
	size_t		sort_min;
	size_t		per;
	size_t		block;
	GiStatus	st = GI_OK;
	int			i;

	/* timings gathered here and stored once: other threads may query too */
	memset(&timings, 0, sizeof(timings));
	if (image->structure != GI_STRUCT_BTREE)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"the CPU engine has no %s structure",
							gi_structure_name(image->structure));
	if (op < GI_OP_POINT || op > GI_OP_RANGE)
		return gi_set_error(err, GI_ERR_INVALID, "unknown query op %d", (int) op);
	if (nprobes == 0)
	{
		gi_timings_store(&image->last_query, &timings);
		return GI_OK;
	}

	/* Threads: one per PROBES_PER_THREAD probes, capped by the cores. */
	nthreads = gi_cpu_threads_for(nprobes, PROBES_PER_THREAD);
	sort_min = gi_setting_cpu_sort_min(DEFAULT_SORT_MIN);
	if (sort_min < 2)
		sort_min = 2;

	/* Slice the batch and allocate every thread's sort scratch up front. */
	per = (nprobes + nthreads - 1) / nthreads;
	block = per < SORT_BLOCK ? per : SORT_BLOCK;
	memset(tasks, 0, sizeof(tasks));
	for (i = 0; i < nthreads; i++)
	{
		QueryTask  *q = &tasks[i];

		q->t = t;
		q->op = op;
		q->probes = probes;
		q->probes_hi = probes_hi;
		q->first = first;
		q->last = last;
		gi_cpu_slice(nprobes, nthreads, i, &q->begin, &q->end);
		q->sort_min = sort_min;
		if (block >= sort_min && t->hdr.n > 0)
		{
			q->keys = gi_malloc_big(block * sizeof(uint64_t));
			q->tmp_keys = gi_malloc_big(block * sizeof(uint64_t));
			q->pos = gi_malloc_big(block * sizeof(uint32_t));
			q->tmp_pos = gi_malloc_big(block * sizeof(uint32_t));
			if (!q->keys || !q->tmp_keys || !q->pos || !q->tmp_pos)
				st = gi_set_error(err, GI_ERR_HOST_OOM,
								  "out of host memory sorting %zu probes", block);
		}
	}

	if (st == GI_OK)
	{
		gi_cpu_run_tasks(nthreads, run_task, tasks);
		for (i = 0; i < nthreads; i++)
		{
			/* Phases overlap across threads: report the slowest thread. */
			if (tasks[i].sort_ms > timings.sort_ms)
				timings.sort_ms = tasks[i].sort_ms;
			if (tasks[i].search_ms > timings.search_ms)
				timings.search_ms = tasks[i].search_ms;
		}
	}
	for (i = 0; i < nthreads; i++)
	{
		free(tasks[i].keys);
		free(tasks[i].tmp_keys);
		free(tasks[i].pos);
		free(tasks[i].tmp_pos);
	}
	timings.total_ms = gi_now_ms() - t0;
	gi_timings_store(&image->last_query, &timings);
	return st;
}

/*
 * Fill one internal level's keys and child prefix sums from the level below.
 * Children are numbered globally as Harmonia does: the internal nodes of the
 * level below follow this level's, and leaf j is number inner_nodes + j, so
 * child_start is one prefix sum over the whole tree.
 */
static void
fill_inner_level(CpuBtree *t, LevelCut cut, uint64_t node_base,
				 uint64_t child_base, int child_is_leaf, LevelCut child_cut)
{
	uint64_t	j;

	for (j = 0; j < cut.nodes; j++)
	{
		uint64_t	first = gi_cut_start(j, cut.ave, cut.h);
		uint64_t	count = j < cut.h ? cut.ave : cut.ave - 1;
		uint64_t	node = node_base + j;
		uint64_t	c;

		t->child_start[node] = child_base + first;
		for (c = 0; c < count; c++)
		{
			uint64_t	child = first + c;
			int64_t		max;

			if (child_is_leaf)
			{
				/* A leaf's max is the key just before the next leaf. */
				uint64_t	end = gi_cut_start(child + 1, child_cut.ave, child_cut.h);

				max = t->wide ? ((int64_t *) t->leaf_keys)[end - 1] :
					((int32_t *) t->leaf_keys)[end - 1];
			}
			else
			{
				/* An internal child's max is its last used key. */
				uint64_t	cnode = child_base + child;
				uint64_t	cfill = child < child_cut.h ? child_cut.ave : child_cut.ave - 1;

				max = t->wide ?
					((int64_t *) t->inner_keys)[cnode * ORDER64 + cfill - 1] :
					((int32_t *) t->inner_keys)[cnode * ORDER32 + cfill - 1];
			}
			if (t->wide)
				((int64_t *) t->inner_keys)[node * ORDER64 + c] = max;
			else
				((int32_t *) t->inner_keys)[node * ORDER32 + c] = (int32_t) max;
		}
	}
}

/* Build an image from sorted keys (cpu_engine.h). */
GiStatus
gi_cpu_btree_build(const GiBuildParams *params, const int64_t *keys,
			 const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	double		t0 = gi_now_ms();
	CpuBtree   *t;
	LevelCut	cuts[MAX_LEVELS];	/* cuts[0] leaves, cuts[k] internal */
	int			ncuts;
	int			m;
	int			k;
	int64_t		type_min;
	int64_t		type_max;
	uint64_t	level_base[MAX_LEVELS];
	uint64_t	total;
	size_t		i;
	size_t		key_size;

	(void) payloads;			/* no query needs them on the host */
	*out = NULL;
	if (params->structure != GI_STRUCT_BTREE)
		return gi_set_error(err, GI_ERR_INVALID, "unknown structure %d",
							(int) params->structure);

	type_max = params->key_bytes == 2 ? INT16_MAX :
		params->key_bytes == 4 ? INT32_MAX : INT64_MAX;
	type_min = -type_max - 1;
	for (i = 0; i < n; i++)
	{
		if (keys[i] < type_min || keys[i] > type_max)
			return gi_set_error(err, GI_ERR_INVALID,
								"key %lld at position %zu does not fit in %d bytes",
								(long long) keys[i], i, params->key_bytes);
		if (i > 0 && keys[i] < keys[i - 1])
			return gi_set_error(err, GI_ERR_INVALID,
								"keys are not sorted at position %zu", i);
	}

	t = calloc(1, sizeof(CpuBtree));
	if (t == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory building an image");
	t->hdr.engine = GI_ENGINE_CPU;
	t->hdr.structure = GI_STRUCT_BTREE;
	t->hdr.key_bytes = params->key_bytes;
	t->hdr.n = n;
	t->wide = params->key_bytes == 8;
	m = t->order = t->wide ? ORDER64 : ORDER32;
	key_size = t->wide ? sizeof(int64_t) : sizeof(int32_t);

	/* Leaves: the sorted keys, padded with the type's max for whole-node counts. */
	t->leaf_keys = gi_malloc_big((n + m) * key_size);
	if (t->leaf_keys == NULL)
		goto oom;
	for (i = 0; i < n; i++)
	{
		if (t->wide)
			((int64_t *) t->leaf_keys)[i] = keys[i];
		else
			((int32_t *) t->leaf_keys)[i] = (int32_t) keys[i];
	}
	for (i = n; i < n + m; i++)
	{
		if (t->wide)
			((int64_t *) t->leaf_keys)[i] = INT64_MAX;
		else
			((int32_t *) t->leaf_keys)[i] = INT32_MAX;
	}
	t->distinct = n > 0;
	for (i = 1; i < n; i++)
		t->distinct += keys[i] != keys[i - 1];
	t->min_key = n ? keys[0] : 0;
	t->max_key = n ? keys[n - 1] : 0;

	/* Cut the levels bottom-up until one node remains. */
	ncuts = 0;
	if (n > 0)
	{
		cuts[ncuts++] = cut_level(n, m);
		while (cuts[ncuts - 1].nodes > 1)
		{
			cuts[ncuts] = cut_level(cuts[ncuts - 1].nodes, m);
			ncuts++;
		}
	}
	t->leaf_count = ncuts ? cuts[0].nodes : 0;
	t->leaf_ave = ncuts ? cuts[0].ave : 1;
	t->leaf_h = ncuts ? cuts[0].h : 0;
	t->inner_levels = ncuts > 0 ? ncuts - 1 : 0;

	/* Harmonia order: the root level first, global node numbers. */
	total = 0;
	for (k = ncuts - 1; k >= 1; k--)
	{
		level_base[k] = total;
		total += cuts[k].nodes;
	}
	t->inner_nodes = total;
	t->inner_keys = gi_malloc_big((total ? total : 1) * m * key_size);
	t->child_start = malloc((total + 1) * sizeof(uint64_t));
	if (t->inner_keys == NULL || t->child_start == NULL)
		goto oom;
	for (i = 0; i < total * m; i++)
	{
		if (t->wide)
			((int64_t *) t->inner_keys)[i] = INT64_MAX;
		else
			((int32_t *) t->inner_keys)[i] = INT32_MAX;
	}

	/* Fill from the bottom internal level up: keys are children's maxima. */
	t->child_start[total] = total + t->leaf_count;
	for (k = 1; k < ncuts; k++)
		fill_inner_level(t, cuts[k], level_base[k],
						 k == 1 ? total : level_base[k - 1], k == 1,
						 cuts[k - 1]);

	t->host_bytes = sizeof(CpuBtree) + (n + m) * key_size +
		(total ? total : 1) * m * key_size + (total + 1) * sizeof(uint64_t);
	t->hdr.build.build_ms = gi_now_ms() - t0;
	t->hdr.build.total_ms = t->hdr.build.build_ms;
	*out = &t->hdr;
	return GI_OK;

oom:
	gi_cpu_btree_free(&t->hdr);
	return gi_set_error(err, GI_ERR_HOST_OOM,
						"out of host memory building an image of %zu keys", n);
}

/* Free the insertable form's segments and directory (cpu_btree.h). */
void
gi_cpu_btree_free_insertable(CpuBtree *t)
{
	uint64_t	s;

	for (s = 0; s < t->seg_count; s++)
		free(t->seg_keys[s]);
	free(t->seg_keys);
	free(t->dir_node);
	free(t->dir_base);
	t->seg_keys = NULL;
	t->seg_count = t->seg_slots = 0;
	t->dir_node = NULL;
	t->dir_base = NULL;
	t->nodes_used = 0;
}

/* Free an image (cpu_engine.h). */
void
gi_cpu_btree_free(GiImage *image)
{
	CpuBtree   *t = (CpuBtree *) image;

	if (t == NULL)
		return;
	free(t->leaf_keys);
	free(t->inner_keys);
	free(t->child_start);
	gi_cpu_btree_free_insertable(t);
	free(t);
}

/* Describe an image (cpu_engine.h). */
void
gi_cpu_btree_info(const GiImage *image, GiImageInfo *info)
{
	const CpuBtree *t = (const CpuBtree *) image;

	info->engine = GI_ENGINE_CPU;
	info->structure = image->structure;
	info->key_bytes = image->key_bytes;
	info->entries = image->n;
	info->distinct_keys = t->distinct;
	info->levels = image->n ? t->inner_levels + 1 : 0;
	info->node_order = t->order;
	info->nodes = t->inner_nodes;
	info->host_bytes = t->host_bytes;
	info->leaves = t->leaf_count;
	info->inserted = t->inserted;
	info->insert_batches = t->insert_batches;
	info->last_insert = t->last_insert;
	info->device_bytes = 0;
	info->build = image->build;
	gi_timings_load(&info->last_query, &image->last_query);
	info->device_name[0] = '\0';
}
