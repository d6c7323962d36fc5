/*
 * customscan_plan.c - GpuIndexScan, planner side: a custom scan that
 * answers all of a table's quals on a gpuidx-indexed column as one batch.
 *
 * set_rel_pathlist_hook adds a GpuIndexScan path for a base table with a
 * gpuidx index when its quals on the indexed column are comparisons with
 * constants, parameters or stable expressions, = ANY(array), BETWEEN, or
 * ORs of these.  Quals the batch answers exactly leave the plan's qual list
 * (the engine's answer is exact, as a btree's is); the others, and those it
 * only narrows (an AND with an unusable conjunct), are rechecked.  The
 * executor is customscan_exec.c.
 */
#include "gpuidx.h"
#include "customscan.h"
#include "batchqual.h"

#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include <math.h>

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* ---------- planner ---------- */

static Plan *plan_gpuidx_path(PlannerInfo *root, RelOptInfo *rel,
							  CustomPath *best_path, List *tlist,
							  List *clauses, List *custom_plans);

static const CustomPathMethods gpuidx_path_methods = {
	.CustomName = "GpuIndexScan",
	.PlanCustomPath = plan_gpuidx_path,
};

/*
 * Calibration (CPU engine, 10^7-row table on a 2-core VM, medians of 3,
 * 2026-11-22): GpuIndexScan against the bitmap heap scan over the same
 * index, on ORs of ranges (1..50 % of the table) and = ANY (10^3..10^6
 * probes).  Fitted as time = pages part + hits part, GpuIndexScan spends
 * about 0.6 of the bitmap scan's time per page read (one visit per page in
 * block order, no TID bitmap) and about 120 ns per hit against the bitmap
 * scan's 90 ns with a 20-comparison qual: so it wins at low selectivity and
 * loses at high, crossing near 15 % for those ORs.  These two constants
 * reproduce that choice in every measured case but = ANY with 10^5 probes
 * (planned as a bitmap scan, 7 % slower).  The exact quals are not charged
 * per hit: the plan does not evaluate them.
 */
#ifndef GPUSCAN_PAGE_SHARE
#define GPUSCAN_PAGE_SHARE 0.6	/* of seq_page_cost, when most pages are read */
#endif
#ifndef GPUSCAN_HIT_COST
#define GPUSCAN_HIT_COST 10.0	/* cpu_tuple_costs a hit */
#endif

/*
 * Cost: the fixed cost of one engine batch (as the index AM charges it),
 * per-probe search, and a heap visit in block order per hit, as a bitmap
 * heap scan would pay.
 */
static void
cost_gpuidx_path(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index,
				 List *batch_clauses, List *exact, Path *path)
{
	Selectivity sel = clauselist_selectivity(root, batch_clauses, rel->relid,
											 JOIN_INNER, NULL);
	double		hits = clamp_row_est(sel * rel->tuples);
	double		nprobes = 0;
	double		pages;
	double		entries = Max(index->tuples, 1.0);
	QualCost	qual_cost;
	List	   *recheck = NIL;
	ListCell   *lc;
	Cost		startup,
				run;

	foreach(lc, batch_clauses)
		nprobes += gpuidx_clause_probes(lfirst(lc));
	pages = Min(hits, Max(rel->pages, 1));

	startup = random_page_cost + 400.0 * cpu_operator_cost +
		(gpuidx_engine_setting != GPUIDX_ENGINE_CPU ? 2000.0 * cpu_operator_cost : 0.0) +
		nprobes * cpu_operator_cost * (log2(entries) + 1.0) * 0.25 +
		hits * cpu_operator_cost;	/* compaction and the sort by block */

	/* Pages in block order: sequential when most are read, else random. */
	run = pages * (pages >= rel->pages * 0.5 ? GPUSCAN_PAGE_SHARE * seq_page_cost :
				   random_page_cost * 0.5);

	/* Only the quals the plan keeps are evaluated per hit (as in create_plan). */
	foreach(lc, rel->baserestrictinfo)
		if (!list_member_ptr(exact, lfirst(lc)))
			recheck = lappend(recheck, lfirst(lc));
	cost_qual_eval(&qual_cost, recheck, root);

	/*
	 * Per hit: the tuple, the quals the plan keeps, and what a bitmap heap
	 * scan does not pay (sorting the hit list, storing each tuple into the
	 * virtual slot PostgreSQL 15 gives custom scans); see the calibration.
	 */
	run += hits * (GPUSCAN_HIT_COST * cpu_tuple_cost + qual_cost.per_tuple);
	startup += qual_cost.startup;

	path->rows = rel->rows;
	path->startup_cost = startup;
	path->total_cost = startup + run;
}

/* The table columns of an index's INCLUDE columns (IntList). */
static List *
include_columns(IndexOptInfo *index)
{
	List	   *cols = NIL;
	int			i;

	for (i = index->nkeycolumns; i < index->ncolumns; i++)
		cols = lappend_int(cols, index->indexkeys[i]);
	return cols;
}

/*
 * Add one GpuIndexScan path, parameterized by required_outer if not NULL.
 * exact lists the RestrictInfos the batch answers exactly: the plan does
 * not recheck them (as an index scan does not recheck its index quals).
 */
static void
add_gpuidx_path(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index,
				List *batch, List *exact, Relids required_outer)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = get_baserel_parampathinfo(root, rel, required_outer);
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = rel->consider_parallel;
	cpath->path.parallel_workers = 0;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = NIL;
	cpath->custom_private = list_make5(makeInteger((int) index->indexoid), batch,
									   exact, makeInteger(index->indexkeys[0]),
									   include_columns(index));
	cpath->methods = &gpuidx_path_methods;
	cost_gpuidx_path(root, rel, index, batch, exact, &cpath->path);
	if (cpath->path.param_info)
		cpath->path.rows = cpath->path.param_info->ppi_rows;
	add_path(rel, &cpath->path);
}

/*
 * Is this planner index a gpuidx index?  Recognized by the cost function
 * its handler gave, not by the access method's OID: a cached OID goes stale
 * when the extension is dropped and created again (a new OID), and looking
 * the name up per relation costs a catalog lookup each time.
 */
bool
gpuidx_indexinfo_is_gpuidx(IndexOptInfo *index)
{
	return index->amcostestimate == (void (*) ()) gpuidx_costestimate;
}

/* Add GpuIndexScan paths for a base relation with gpuidx indexes. */
static void
gpuidx_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
						RangeTblEntry *rte)
{
	ListCell   *lc;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (!gpuidx_enable_customscan || rel->reloptkind != RELOPT_BASEREL ||
		rte->rtekind != RTE_RELATION || rte->inh ||
		(rel->baserestrictinfo == NIL && rel->joininfo == NIL))
		return;
	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
		List	   *batch = NIL;
		List	   *exact = NIL;
		List	   *join_batch = NIL;
		List	   *join_exact = NIL;
		Relids		required_outer = NULL;
		ListCell   *lc2;

		if (!gpuidx_indexinfo_is_gpuidx(index) || (index->indpred != NIL && !index->predOK))
			continue;
		gpuidx_restriction_batch(root, rel, index, &batch, &exact);
		if (batch != NIL)
			add_gpuidx_path(root, rel, index, batch, exact, NULL);

		/* Join clauses whose other side a nested loop can pass as parameters. */
		foreach(lc2, rel->joininfo)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			Relids		outer = NULL;
			Node	   *part;

			if (rinfo->pseudoconstant || rinfo->outerjoin_delayed)
				continue;
			part = gpuidx_batch_clause(root, (Node *) rinfo->clause, index, rel->relid, &outer);
			if (part && !bms_is_empty(outer))
			{
				join_batch = lappend(join_batch, part);
				if (part == (Node *) rinfo->clause)
					join_exact = lappend(join_exact, rinfo);
				required_outer = bms_add_members(required_outer, outer);
			}
		}
		if (join_batch != NIL && !bms_overlap(required_outer, rel->relids))
			add_gpuidx_path(root, rel, index, list_concat(join_batch, batch),
							list_concat(join_exact, exact), required_outer);
	}
}

/* Turn the chosen path into a CustomScan plan node. */
static Plan *
plan_gpuidx_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				 List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *batch = lsecond(best_path->custom_private);
	List	   *exact = lthird(best_path->custom_private);
	List	   *recheck = NIL;
	ListCell   *lc;

	/* Quals the batch answers exactly need no recheck; the rest stay. */
	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (!list_member_ptr(exact, rinfo))
			recheck = lappend(recheck, rinfo);
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(recheck, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = copyObject(batch);
	/*
	 * Key-only: when the query needs no column of the table but the indexed
	 * one and the index's INCLUDE columns (as an index-only scan decides),
	 * tuples on all-visible pages come back from the image without a heap
	 * fetch.
	 */
	{
		int			keyattno = intVal(lfourth(best_path->custom_private));
		Bitmapset  *attrs = NULL;
		Bitmapset  *held = NULL;
		int			maxattno = 0;
		int			a = -1;

		pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attrs);
		pull_varattnos((Node *) cscan->scan.plan.qual, rel->relid, &attrs);

		held = bms_make_singleton(keyattno - FirstLowInvalidHeapAttributeNumber);
		foreach(lc, (List *) list_nth(best_path->custom_private, 4))
			if (lfirst_int(lc) > 0)
				held = bms_add_member(held, lfirst_int(lc) - FirstLowInvalidHeapAttributeNumber);
		if (keyattno <= 0 || !bms_is_subset(attrs, held))
			keyattno = 0;

		/*
		 * The highest column the plan reads: tuples are deformed that far
		 * only (a whole-row reference or a projection of the physical tlist
		 * needs them all).
		 */
		pull_varattnos((Node *) tlist, rel->relid, &attrs);
		while ((a = bms_next_member(attrs, a)) >= 0)
		{
			int			attno = a + FirstLowInvalidHeapAttributeNumber;

			if (attno == 0)
				maxattno = -1;	/* whole row */
			else if (attno > 0 && maxattno >= 0 && attno > maxattno)
				maxattno = attno;
		}
		/* In GpuidxCustomPrivate order (customscan.h). */
		cscan->custom_private = list_make3(linitial(best_path->custom_private),
										   makeInteger(keyattno),
										   makeInteger(maxattno));
	}
	cscan->custom_scan_tlist = NIL;
	cscan->methods = &gpuidx_scan_methods;
	return &cscan->scan.plan;
}

/* Install the planner hook and register the scan methods. */
void
gpuidx_customscan_init(void)
{
	RegisterCustomScanMethods(&gpuidx_scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = gpuidx_set_rel_pathlist;
}
