/*
 * customjoin.h - what the two halves of GpuIndexJoin share
 * (customjoin_plan.c builds the plan, customjoin_exec.c runs it); private
 * to them.
 *
 * The plan node is a CustomScan with scanrelid 0 and one child, the outer
 * plan.  Its custom_scan_tlist lists the outer plan's columns first (in its
 * target list's order), then the inner side's: columns of the indexed table
 * (a table join) or outputs of the LATERAL subquery (an as-of join).  The
 * executor fills a virtual tuple of that shape per joined row; the plan's
 * target list and quals refer to it (INDEX_VAR).  custom_exprs holds the
 * probe expressions (one per batch clause, over outer columns), then the
 * match quals (what decides whether a pair joins: other join clauses and the
 * inner side's restrictions).
 */
#ifndef GPUIDX_CUSTOMJOIN_H
#define GPUIDX_CUSTOMJOIN_H

#include "nodes/extensible.h"
#include "nodes/pathnodes.h"

/* What kind of join a GpuIndexJoin runs. */
typedef enum GpuidxJoinKind
{
	GPUIDX_JOIN_TABLE = 'e',	/* inner.k compared with outer expressions */
	GPUIDX_JOIN_ASOF_PRED = 'p',	/* LATERAL ... k <= x ORDER BY k DESC LIMIT n */
	GPUIDX_JOIN_ASOF_SUCC = 's' /* LATERAL ... k >= x ORDER BY k LIMIT n */
} GpuidxJoinKind;

/* The plan node's custom_private list, by position. */
typedef enum GpuidxJoinPrivate
{
	GPUIDX_CJ_KIND = 0,			/* GpuidxJoinKind (Integer) */
	GPUIDX_CJ_JOINTYPE,			/* JoinType (Integer) */
	GPUIDX_CJ_TABLE,			/* the indexed table's OID (Integer) */
	GPUIDX_CJ_INDEX,			/* the gpuidx index's OID (Integer) */
	GPUIDX_CJ_KEY_ATTNO,		/* the indexed column (Integer) */
	GPUIDX_CJ_NOUTER,			/* outer columns in custom_scan_tlist */
	GPUIDX_CJ_STRATEGIES,		/* per probe expression: btree strategy with
								 * the key on the left (IntList) */
	GPUIDX_CJ_INNER_COLS,		/* per inner column of custom_scan_tlist: the
								 * table's attno (table join; system columns
								 * negative) or the subquery's output resno */
	GPUIDX_CJ_KEY_ONLY,			/* only the index's key and INCLUDE columns of
								 * the table are read (Integer): all-visible
								 * rows come from the image */
	GPUIDX_CJ_ASOF_OUTPUTS,		/* as-of: the subquery's output expressions
								 * for INNER_COLS, over INNER_VAR (the table
								 * row) and OUTER_VAR (the scan tuple) */
	GPUIDX_CJ_ASOF_QUALS,		/* as-of: the subquery's other quals, same
								 * form (implicit AND) */
	GPUIDX_CJ_ASOF_LIMIT,		/* as-of: the LIMIT expression */
	GPUIDX_CJ_ASOF_RTE,			/* as-of: the table's RTE, for the permission
								 * check (it is not in the plan's range
								 * table) */
	GPUIDX_CJ_NPRIVATE
} GpuidxJoinPrivate;

/* The plan node's methods: CreateCustomScanState (customjoin_exec.c). */
extern const CustomScanMethods gpuidx_join_methods;

struct GpuidxImageData;

/*
 * Where an as-of join feeding GpuIndexAgg (customagg_exec.c) puts the rows
 * it answers straight from the image (LIMIT 1, key-only, all-visible page)
 * instead of returning them: their image positions pos[0..n), up to cap at
 * a time; flush adds up the n held (from img, the join's pinned image) and
 * sets n to 0.
 * The join flushes when the arrays are full and at each chunk's end, while
 * the image is still pinned.  A left join's row with no answer is counted
 * in null_rows (its inner columns NULL).  Every other row is returned as
 * the join returns it.
 */
typedef struct GpuidxJoinSink
{
	uint64	   *pos;
	int64		n;
	int64		cap;
	int64		null_rows;
	void		(*flush) (struct GpuidxJoinSink *sink, struct GpuidxImageData *img);
	void	   *arg;
} GpuidxJoinSink;

/*
 * Have the GpuIndexJoin state ps put its direct answers into sink (after
 * ExecInitNode); false, changing nothing, when ps is not an as-of join
 * that answers rows directly with no filter of its own.
 */
extern bool gpuidx_join_set_sink(PlanState *ps, GpuidxJoinSink *sink);

/*
 * For GpuIndexAgg over an as-of join path (customagg_plan.c): whether the
 * path is a GpuIndexJoin whose rows may come straight from the image (as-of,
 * inner or left, key-only, LIMIT 1, no subquery, match or filter quals),
 * and then its index, the subquery's range table index and the subquery.
 */
extern bool gpuidx_join_path_direct(Path *path, IndexOptInfo **index,
									Index *inner_relid, Query **subquery);

#endif							/* GPUIDX_CUSTOMJOIN_H */
