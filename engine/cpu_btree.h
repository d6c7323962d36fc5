/*
 * cpu_btree.h - inside the CPU B+ tree, the twin of cuda/gpu_btree.cuh: the
 * image struct and the helpers that engine/cpu_btree.c (the bulk-built tree
 * and its search) and engine/cpu_insert.c (CUBPT batch insertion) share.
 * Private to those two files.  No PostgreSQL headers here.
 */
#ifndef GPUIDX_CPU_BTREE_H
#define GPUIDX_CPU_BTREE_H

#include "cpu_engine.h"
#include "cut_twin.h"

#define ORDER32			32		/* int32 keys per node: 128 bytes */
#define ORDER64			16		/* int64 keys per node: 128 bytes */

/*
 * A CPU B+ tree image (engine/cpu_btree.c builds and searches it,
 * engine/cpu_insert.c makes it insertable and inserts into it).  Bulk-built,
 * the leaf level is the sorted key array leaf_keys cut by formulas 1-2.
 * Once insertable, leaf_keys is gone and the leaves are nodes of order keys
 * in a node array of fixed-size segments (seg_keys[s]: 2^seg_shift nodes,
 * their keys and then, when the image keeps payloads, their payloads), found
 * in key order through the leaf directory; cpu_insert.c's header says more.
 * The internal levels (inner_keys, child_start) have the same Harmonia
 * layout in both forms; their bottom level's children are leaf ordinals.
 */
typedef struct CpuBtree
{
	GiImage		hdr;			/* must be first */
	int			wide;			/* keys stored as int64 (else int32) */
	int			order;			/* m: keys per node */
	int			inner_levels;	/* internal levels, root first */
	uint64_t	inner_nodes;	/* internal nodes in all */
	void	   *leaf_keys;		/* n sorted keys + order padding (static) */
	void	   *inner_keys;		/* inner_nodes * order keys */
	uint64_t   *child_start;	/* inner_nodes + 1 prefix sums */
	uint64_t	leaf_count;		/* leaves (static cut or directory) */
	uint64_t	leaf_ave;		/* formula 2's ave for the leaf level */
	uint64_t	leaf_h;			/* formula 2's h for the leaf level */
	int64_t		min_key;
	int64_t		max_key;
	uint64_t	distinct;
	uint64_t	host_bytes;		/* everything the image holds but hdr.payloads */

	/* The insertable form (engine/cpu_insert.c); insertable == 0 before. */
	int			insertable;
	int			has_payloads;	/* leaf nodes carry payloads */
	int			fill;			/* split target: entries per new leaf */
	int			seg_shift;		/* log2 of the nodes in a segment */
	uint64_t	seg_count;		/* segments allocated */
	uint64_t	seg_slots;		/* room in seg_keys */
	char	  **seg_keys;		/* segment pointers */
	uint64_t	nodes_used;		/* node ids handed out */
	uint64_t   *dir_node;		/* leaf ordinal -> node id */
	uint64_t   *dir_base;		/* leaf ordinal -> rank base; [leaf_count] = n */
	int			payloads_stale; /* hdr.payloads is not in rank order */
	uint64_t	inserted;
	uint64_t	insert_batches;
	GiTimings	last_insert;
	double		convert_ms;		/* the one-off conversion (first insert) */
	double		inner_ms;		/* last re-cut of the internal levels */
} CpuBtree;

/* One level's cut per formulas 1 and 2 (cut_twin.h), with its item count. */
typedef struct LevelCut
{
	uint64_t	items;			/* K: keys or child nodes to distribute */
	uint64_t	nodes;			/* node_num */
	uint64_t	ave;			/* items in each of the first h nodes */
	uint64_t	h;
} LevelCut;

/* Cut K > 0 items into nodes of at most m items (CUBPT formulas 1 and 2). */
static inline LevelCut
cut_level(uint64_t items, int m)
{
	GiCut		g = gi_cut(items, (uint64_t) m);
	LevelCut	c;

	c.items = items;
	c.nodes = g.nodes;
	c.ave = g.ave;
	c.h = g.h;
	return c;
}

/* Keys of leaf node id of an insertable tree (key width fixed per call). */
static inline __attribute__((always_inline)) void *
ins_node_keys(const CpuBtree *t, uint64_t node, const int wide)
{
	uint64_t	in_seg = node & ((UINT64_C(1) << t->seg_shift) - 1);

	return t->seg_keys[node >> t->seg_shift] +
		in_seg * (uint64_t) t->order * (wide ? 8 : 4);
}

/* Payloads of leaf node id (has_payloads only). */
static inline uint64_t *
ins_node_payloads(const CpuBtree *t, uint64_t node)
{
	uint64_t	seg_nodes = UINT64_C(1) << t->seg_shift;
	uint64_t	in_seg = node & (seg_nodes - 1);
	uint64_t	key_bytes = seg_nodes * (uint64_t) t->order * (t->wide ? 8 : 4);

	return (uint64_t *) (t->seg_keys[node >> t->seg_shift] + key_bytes) +
		in_seg * (uint64_t) t->order;
}

/*
 * The first leaf ordinal whose largest key >= p, for p within the stored
 * type's range and p <= max_key (engine/cpu_btree.c).
 */
uint64_t	gi_cpu_btree_leaf_of(const CpuBtree *t, int64_t p);

/* Free the insertable form's node segments and directory (cpu_btree.c). */
void		gi_cpu_btree_free_insertable(CpuBtree *t);

#endif							/* GPUIDX_CPU_BTREE_H */
