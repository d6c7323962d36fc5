/*
 * customagg_plan.c - GpuIndexAgg, planner side: aggregates over the rows a
 * gpuidx batch selects, answered from the index image.
 *
 * create_upper_paths_hook (UPPERREL_GROUP_AGG) offers a GpuIndexAgg path
 * for a query that aggregates one plain heap table with no GROUP BY, when
 * every qual of the table is answered exactly by a batch on a gpuidx index
 * (batchqual.c: comparisons, BETWEEN, = ANY, ORs of them) and every
 * aggregate is count(*), or count, min, max, sum, avg, bool_and/bool_or of
 * the index's key or one of its INCLUDE columns (customagg.h lists them).
 * The path replaces the scan and the Agg node: the executor
 * (customagg_exec.c) adds up the image's entries on all-visible pages and
 * visits the heap for the others.
 */
#include "gpuidx.h"
#include "customagg.h"
#include "customjoin.h"
#include "batchqual.h"

#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include <math.h>

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

/* One aggregate function GpuIndexAgg computes, by its pg_proc OID. */
typedef struct AggKind
{
	Oid			fnoid;			/* F_* of utils/fmgroids.h: built-in OIDs */
	GpuidxAggFunc func;
	Oid			argtype;		/* InvalidOid: any (count) */
} AggKind;

/*
 * The aggregates pushed down.  Built-in functions have fixed OIDs, so a
 * user's function of the same name in another schema never matches.  Float
 * sum and avg are not here: PostgreSQL's own float sums depend on the order
 * of the rows (a parallel plan may give other low-order bits), so no order
 * of ours would be "the" answer.
 */
static const AggKind agg_kinds[] = {
	{F_COUNT_, GPUIDX_AGG_COUNT_STAR, InvalidOid},
	{F_COUNT_ANY, GPUIDX_AGG_COUNT, InvalidOid},
	{F_SUM_INT2, GPUIDX_AGG_SUM, INT2OID},
	{F_SUM_INT4, GPUIDX_AGG_SUM, INT4OID},
	{F_SUM_INT8, GPUIDX_AGG_SUM, INT8OID},
	{F_AVG_INT2, GPUIDX_AGG_AVG, INT2OID},
	{F_AVG_INT4, GPUIDX_AGG_AVG, INT4OID},
	{F_AVG_INT8, GPUIDX_AGG_AVG, INT8OID},
	{F_MIN_INT2, GPUIDX_AGG_MIN, INT2OID},
	{F_MIN_INT4, GPUIDX_AGG_MIN, INT4OID},
	{F_MIN_INT8, GPUIDX_AGG_MIN, INT8OID},
	{F_MIN_OID, GPUIDX_AGG_MIN, OIDOID},
	{F_MIN_FLOAT4, GPUIDX_AGG_MIN, FLOAT4OID},
	{F_MIN_FLOAT8, GPUIDX_AGG_MIN, FLOAT8OID},
	{F_MIN_DATE, GPUIDX_AGG_MIN, DATEOID},
	{F_MIN_TIMESTAMP, GPUIDX_AGG_MIN, TIMESTAMPOID},
	{F_MIN_TIMESTAMPTZ, GPUIDX_AGG_MIN, TIMESTAMPTZOID},
	{F_MAX_INT2, GPUIDX_AGG_MAX, INT2OID},
	{F_MAX_INT4, GPUIDX_AGG_MAX, INT4OID},
	{F_MAX_INT8, GPUIDX_AGG_MAX, INT8OID},
	{F_MAX_OID, GPUIDX_AGG_MAX, OIDOID},
	{F_MAX_FLOAT4, GPUIDX_AGG_MAX, FLOAT4OID},
	{F_MAX_FLOAT8, GPUIDX_AGG_MAX, FLOAT8OID},
	{F_MAX_DATE, GPUIDX_AGG_MAX, DATEOID},
	{F_MAX_TIMESTAMP, GPUIDX_AGG_MAX, TIMESTAMPOID},
	{F_MAX_TIMESTAMPTZ, GPUIDX_AGG_MAX, TIMESTAMPTZOID},
	{F_BOOL_AND, GPUIDX_AGG_BOOL_AND, BOOLOID},
	{F_EVERY, GPUIDX_AGG_BOOL_AND, BOOLOID},
	{F_BOOL_OR, GPUIDX_AGG_BOOL_OR, BOOLOID},
};

/* The entry of agg_kinds for a function, or NULL. */
static const AggKind *
find_agg_kind(Oid fnoid)
{
	int			i;

	for (i = 0; i < lengthof(agg_kinds); i++)
		if (agg_kinds[i].fnoid == fnoid)
			return &agg_kinds[i];
	return NULL;
}

/* ---------- what the query must look like ---------- */

/*
 * An aggregate SELECT with no GROUP BY, grouping sets, window functions,
 * set-returning functions in the target list or row locks, not one child of
 * a partitionwise aggregate: one output row, whatever its input.
 */
static bool
plain_aggregate_query(PlannerInfo *root, GroupPathExtraData *extra)
{
	Query	   *parse = root->parse;

	return parse->commandType == CMD_SELECT && parse->hasAggs &&
		parse->groupClause == NIL && parse->groupingSets == NIL &&
		!parse->hasWindowFuncs && !parse->hasTargetSRFs &&
		root->rowMarks == NIL &&
		extra->patype == PARTITIONWISE_AGGREGATE_NONE;
}

/*
 * A plain aggregate query (plain_aggregate_query) over one base relation
 * with at least one qual.
 */
static bool
query_shape_ok(PlannerInfo *root, RelOptInfo *input_rel,
			   GroupPathExtraData *extra)
{
	return plain_aggregate_query(root, extra) &&
		input_rel->reloptkind == RELOPT_BASEREL &&
		input_rel->rtekind == RTE_RELATION &&
		bms_is_empty(input_rel->lateral_relids) &&
		!IS_DUMMY_REL(input_rel) && input_rel->baserestrictinfo != NIL;
}

/*
 * A plain heap table (or materialized view) with no row-level security:
 * the node reads the heap itself and applies no policy, so tables with RLS
 * enabled keep PostgreSQL's plans whoever runs the query.
 */
static bool
table_ok(RangeTblEntry *rte)
{
	Relation	rel;
	bool		ok;

	if (rte->rtekind != RTE_RELATION || rte->inh || rte->tablesample ||
		rte->securityQuals != NIL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return false;
	rel = table_open(rte->relid, NoLock);
	ok = rel->rd_rel->relam == HEAP_TABLE_AM_OID && !rel->rd_rel->relrowsecurity;
	table_close(rel, NoLock);
	return ok;
}

/* ---------- the aggregates ---------- */

/* Collecting the query's aggregates (collect_aggs_walker). */
typedef struct AggCollect
{
	List	   *aggs;			/* distinct Aggrefs, in order of appearance */
	bool		ok;
	bool		partial;		/* the partial grouping target's Aggrefs */
} AggCollect;

/*
 * May a worker's partial state of this aggregate be emitted as a plain
 * value (customagg_exec.c's partial_result)?  Not for sum and avg of int8,
 * whose state is internal (a serialized numeric accumulator).
 */
static bool
partial_state_ok(Aggref *agg)
{
	const AggKind *kind = find_agg_kind(agg->aggfnoid);

	return agg->aggsplit == AGGSPLIT_INITIAL_SERIAL && kind != NULL &&
		!((kind->func == GPUIDX_AGG_SUM || kind->func == GPUIDX_AGG_AVG) &&
		  kind->argtype == INT8OID);
}

/* Is an Aggref one whose shape we compute (no DISTINCT, ORDER BY, FILTER)? */
static bool
aggref_shape_ok(Aggref *agg)
{
	return agg->agglevelsup == 0 && agg->aggkind == AGGKIND_NORMAL &&
		agg->aggdistinct == NIL &&
		agg->aggorder == NIL && agg->aggfilter == NULL && !agg->aggvariadic &&
		find_agg_kind(agg->aggfnoid) != NULL &&
		list_length(agg->args) == (agg->aggstar ? 0 : 1);
}

/*
 * Walk the grouped target and HAVING: every Aggref must be one we compute,
 * and nothing may read a table column outside an aggregate.
 */
static bool
collect_aggs_walker(Node *node, AggCollect *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *agg = (Aggref *) node;

		if (!aggref_shape_ok(agg) ||
			!(cxt->partial ? partial_state_ok(agg) : agg->aggsplit == AGGSPLIT_SIMPLE))
			cxt->ok = false;
		else if (!list_member(cxt->aggs, node))
			cxt->aggs = lappend(cxt->aggs, node);
		return false;
	}
	if (IsA(node, Var) || IsA(node, PlaceHolderVar) ||
		IsA(node, GroupingFunc) || IsA(node, WindowFunc))
	{
		cxt->ok = false;
		return false;
	}
	return expression_tree_walker(node, collect_aggs_walker, cxt);
}

/* The Var an aggregate's argument is, under relabelings, or NULL. */
static Var *
agg_arg_var(Aggref *agg, Index relid)
{
	Node	   *arg;

	if (agg->aggstar)
		return NULL;
	arg = (Node *) ((TargetEntry *) linitial(agg->args))->expr;
	while (arg && IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	if (arg && IsA(arg, Var) && ((Var *) arg)->varno == relid &&
		((Var *) arg)->varlevelsup == 0 && ((Var *) arg)->varattno > 0)
		return (Var *) arg;
	return NULL;
}

/* Which column of index table column attno is (an agg spec's src). */
static int
index_column_src(IndexOptInfo *index, AttrNumber attno)
{
	int			i;

	for (i = 0; i < index->ncolumns; i++)
		if (index->indexkeys[i] == attno)
			return i == 0 ? GPUIDX_AGG_SRC_KEY : i - index->nkeycolumns;
	return GPUIDX_AGG_SRC_NONE;
}

/*
 * The spec (IntList: func, src, base type of the argument) of an aggregate
 * over index, or NIL when its argument is neither the index's key nor one
 * of its INCLUDE columns, or not of the type the function takes.
 */
static List *
agg_spec(Aggref *agg, IndexOptInfo *index, Index relid)
{
	const AggKind *kind = find_agg_kind(agg->aggfnoid);
	Var		   *var = agg_arg_var(agg, relid);
	Oid			type;
	int			src = GPUIDX_AGG_SRC_NONE;

	if (kind->func == GPUIDX_AGG_COUNT_STAR)
		return list_make3_int(kind->func, src, InvalidOid);
	if (var == NULL)
		return NIL;
	type = getBaseType(var->vartype);
	src = index_column_src(index, var->varattno);
	if (src == GPUIDX_AGG_SRC_NONE ||
		(OidIsValid(kind->argtype) && kind->argtype != type))
		return NIL;
	return list_make3_int(kind->func, src, type);
}

/* The specs of every aggregate over index, or NIL if one is not ours. */
static List *
agg_specs(List *aggs, IndexOptInfo *index, Index relid)
{
	List	   *specs = NIL;
	ListCell   *lc;

	foreach(lc, aggs)
	{
		List	   *spec = agg_spec(lfirst(lc), index, relid);

		if (spec == NIL)
			return NIL;
		specs = lappend(specs, spec);
	}
	return specs;
}

/*
 * The spec of an aggregate over an as-of join's subquery (relid
 * inner_relid): as agg_spec, its argument an output of the subquery that is
 * a plain column of the subquery's table (range table index 1 there).
 */
static List *
join_agg_spec(Aggref *agg, IndexOptInfo *index, Index inner_relid, Query *subquery)
{
	const AggKind *kind = find_agg_kind(agg->aggfnoid);
	Var		   *var = agg_arg_var(agg, inner_relid);
	TargetEntry *tle;
	Node	   *expr;
	Oid			type;
	int			src;

	if (kind->func == GPUIDX_AGG_COUNT_STAR)
		return list_make3_int(kind->func, GPUIDX_AGG_SRC_NONE, InvalidOid);
	if (var == NULL ||
		(tle = get_tle_by_resno(subquery->targetList, var->varattno)) == NULL)
		return NIL;
	expr = (Node *) tle->expr;
	while (expr && IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (expr == NULL || !IsA(expr, Var) || ((Var *) expr)->varno != 1 ||
		((Var *) expr)->varlevelsup != 0 || ((Var *) expr)->varattno <= 0)
		return NIL;
	type = getBaseType(((Var *) expr)->vartype);
	src = index_column_src(index, ((Var *) expr)->varattno);
	if (src == GPUIDX_AGG_SRC_NONE || type != getBaseType(var->vartype) ||
		(OidIsValid(kind->argtype) && kind->argtype != type))
		return NIL;
	return list_make3_int(kind->func, src, type);
}

/* ---------- cost ---------- */

/*
 * Calibration (CPU engine, 2-core VM shared with other work, 5*10^6-row
 * table of (int8 key, int4 v) with INCLUDE (v) and its btree twin, all
 * pages all-visible, 2026-11-24): over 5*10^5 and 2.5*10^6 entries,
 * count(*) took about 1.2 ns an entry (the pass that tests each entry's
 * page in the visibility map copy), each column read 2..4 ns more (sum(v),
 * then max(k): one more array streamed).  The twin's index-only scan with
 * sum(v) took 88 ms for 5*10^5 rows at a cost of 18994, so one
 * cpu_operator_cost (0.0025) was about 11.5 ns of that plan: an entry is
 * about 0.1 and a column 0.25 of a cpu_operator_cost (rounded up below).
 * An entry on another page is fetched from the heap in block order, as
 * GpuIndexScan fetches its hits (same page terms), plus
 * GPUAGG_FETCH_COST cpu_tuple_costs to find and read the row.
 */
#ifndef GPUAGG_ENTRY_COST
#define GPUAGG_ENTRY_COST 0.1	/* cpu_operator_costs per entry */
#endif
#ifndef GPUAGG_COLUMN_COST
#define GPUAGG_COLUMN_COST 0.3	/* cpu_operator_costs per entry and column */
#endif
#ifndef GPUAGG_FETCH_COST
#define GPUAGG_FETCH_COST 1.0	/* cpu_tuple_costs per heap fetch */
#endif

/*
 * Cost of a GpuIndexAgg path: one engine batch (as GpuIndexScan pays it),
 * a search per interval, per entry a pass over the image's arrays, per
 * entry not on an all-visible page (relallvisible/relpages) a heap fetch in
 * block order, HAVING, and the one output row.  Everything is startup cost:
 * the row comes out at the end.
 */
static void
cost_agg_path(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index,
			  List *batch, int ncolumns, List *having, Path *path)
{
	double		entries = Max(rel->rows, 1.0);
	double		fetches = entries * (1.0 - rel->allvisfrac);
	double		pages = Min(fetches, Max(rel->pages, 1));
	double		nprobes = 0;
	QualCost	having_cost;
	ListCell   *lc;
	Cost		cost;

	foreach(lc, batch)
		nprobes += gpuidx_clause_probes(lfirst(lc));
	cost = random_page_cost + 400.0 * cpu_operator_cost +
		(gpuidx_engine_setting != GPUIDX_ENGINE_CPU ? 2000.0 * cpu_operator_cost : 0.0) +
		nprobes * cpu_operator_cost * (log2(Max(index->tuples, 1.0)) + 1.0) * 0.25;
	cost += entries * cpu_operator_cost *
		(GPUAGG_ENTRY_COST + GPUAGG_COLUMN_COST * ncolumns);
	cost += pages * (pages >= rel->pages * 0.5 ? 0.6 * seq_page_cost : random_page_cost * 0.5) +
		fetches * (GPUAGG_FETCH_COST * cpu_tuple_cost + cpu_operator_cost);
	cost_qual_eval(&having_cost, having, root);
	cost += having_cost.startup + having_cost.per_tuple;
	path->rows = 1;
	path->startup_cost = cost;
	path->total_cost = cost + cpu_tuple_cost;
}

/* Distinct argument columns of the specs (key and INCLUDE columns). */
static int
count_columns(List *specs)
{
	Bitmapset  *cols = NULL;
	ListCell   *lc;

	foreach(lc, specs)
		if (lsecond_int(lfirst(lc)) != GPUIDX_AGG_SRC_NONE)
			cols = bms_add_member(cols, lsecond_int(lfirst(lc)) + 1);
	return bms_num_members(cols);
}

/* ---------- path and plan ---------- */

static Plan *plan_agg_path(PlannerInfo *root, RelOptInfo *rel,
						   CustomPath *best_path, List *tlist,
						   List *clauses, List *custom_plans);

static const CustomPathMethods gpuidx_agg_path_methods = {
	.CustomName = "GpuIndexAgg",
	.PlanCustomPath = plan_agg_path,
};

/*
 * A GpuIndexAgg path of output_rel (its one row): over child (a join path)
 * or over nothing (a table), parallel_workers > 0 for a partial path;
 * custom_private in the order plan_agg_path and plan_join_agg_path read:
 * index, table, the table's range table entry, specs, then extra.
 */
static CustomPath *
new_agg_path(RelOptInfo *output_rel, const CustomPathMethods *methods, Path *child,
			 int parallel_workers, IndexOptInfo *index, RangeTblEntry *rte,
			 List *specs, List *extra)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = output_rel;
	cpath->path.pathtarget = output_rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = parallel_workers > 0;
	cpath->path.parallel_workers = parallel_workers;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = child ? list_make1(child) : NIL;
	cpath->custom_private = list_make5(makeInteger((int) index->indexoid),
									   makeInteger((int) rte->relid),
									   copyObject(rte), specs, extra);
	cpath->methods = methods;
	return cpath;
}

/* Add a GpuIndexAgg path for one index to the grouped rel. */
static void
add_agg_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
			 IndexOptInfo *index, List *batch, List *aggs, List *specs,
			 List *having)
{
	RangeTblEntry *rte = planner_rt_fetch(input_rel->relid, root);

	/* One process reads the image and the heap: not parallel-safe. */
	CustomPath *cpath = new_agg_path(output_rel, &gpuidx_agg_path_methods, NULL, 0,
									 index, rte, specs,
									 list_make5(batch, aggs, having,
												makeInteger(index->indexkeys[0]),
												makeInteger(input_rel->relid)));

	cost_agg_path(root, input_rel, index, batch, count_columns(specs), having,
				  &cpath->path);
	add_path(output_rel, &cpath->path);
}

/*
 * Turn the chosen path into a CustomScan with scanrelid 0 (customagg.h has
 * the layout): setrefs.c points the target list's aggregates and the batch
 * clauses' key at custom_scan_tlist.
 */
static Plan *
plan_agg_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *priv = best_path->custom_private;
	List	   *extra = list_nth(priv, 4);
	List	   *aggs = lsecond(extra);
	Oid			tableoid = (Oid) intVal(list_nth(priv, 1));
	AttrNumber	keyattno = (AttrNumber) intVal(lfourth(extra));
	Index		relid = (Index) intVal(list_nth(extra, 4));
	RangeTblEntry *rte = list_nth(priv, 2);
	List	   *scan_tlist = NIL;
	Oid			keytype,
				keycoll;
	int32		keytypmod;
	ListCell   *lc;

	foreach(lc, aggs)
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(lc)),
											 list_length(scan_tlist) + 1, NULL, false));
	get_atttypetypmodcoll(tableoid, keyattno, &keytype, &keytypmod, &keycoll);
	scan_tlist = lappend(scan_tlist,
						 makeTargetEntry((Expr *) makeVar(relid, keyattno, keytype,
														  keytypmod, keycoll, 0),
										 list_length(scan_tlist) + 1, NULL, true));

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = (List *) copyObject(lthird(extra));
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = copyObject(linitial(extra));
	cscan->custom_scan_tlist = scan_tlist;
	/* In GpuidxAggPrivate order (customagg.h). */
	cscan->custom_private = list_make4(linitial(priv), lsecond(priv), rte,
									   list_nth(priv, 3));
	cscan->methods = &gpuidx_agg_methods;
	return &cscan->scan.plan;
}

/* Offer GpuIndexAgg for each gpuidx index that answers the whole query. */
static void
offer_agg_paths(PlannerInfo *root, RelOptInfo *input_rel,
				RelOptInfo *output_rel, List *aggs, List *having)
{
	ListCell   *lc;

	foreach(lc, input_rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
		List	   *batch,
				   *exact,
				   *specs;

		if (!gpuidx_indexinfo_is_gpuidx(index) || index->indexkeys[0] <= 0 ||
			(index->indpred != NIL && !index->predOK))
			continue;
		gpuidx_restriction_batch(root, input_rel, index, &batch, &exact);
		if (batch == NIL ||
			list_length(exact) != list_length(input_rel->baserestrictinfo))
			continue;			/* a qual the batch does not answer exactly */
		specs = agg_specs(aggs, index, input_rel->relid);
		if (specs != NIL)
			add_agg_path(root, input_rel, output_rel, index, batch, aggs,
						 specs, having);
	}
}

/* ---------- over an as-of GpuIndexJoin ---------- */

static Plan *plan_join_agg_path(PlannerInfo *root, RelOptInfo *rel,
								CustomPath *best_path, List *tlist,
								List *clauses, List *custom_plans);

static const CustomPathMethods gpuidx_join_agg_path_methods = {
	.CustomName = "GpuIndexAgg",
	.PlanCustomPath = plan_join_agg_path,
};

/*
 * A plain aggregate query (plain_aggregate_query) over a join of two
 * relations.
 */
static bool
join_query_shape_ok(PlannerInfo *root, RelOptInfo *input_rel,
					GroupPathExtraData *extra)
{
	return plain_aggregate_query(root, extra) &&
		input_rel->reloptkind == RELOPT_JOINREL &&
		bms_num_members(input_rel->relids) == 2 &&
		bms_is_empty(input_rel->lateral_relids) && !IS_DUMMY_REL(input_rel);
}

/*
 * Cost of GpuIndexAgg over a join path: the join's, less the rows it no
 * longer returns (those on all-visible pages), plus adding up each row's
 * columns from the image, and HAVING.
 */
static void
cost_join_agg_path(PlannerInfo *root, Path *join, double allvisfrac, int ncolumns, List *having, Path *path)
{
	double		rows = Max(join->rows, 1.0);
	QualCost	having_cost;
	Cost		cost;

	cost = join->total_cost - rows * allvisfrac * cpu_tuple_cost +
		rows * cpu_operator_cost * (GPUAGG_ENTRY_COST + GPUAGG_COLUMN_COST * ncolumns);
	cost_qual_eval(&having_cost, having, root);
	cost += having_cost.startup + having_cost.per_tuple;
	path->rows = 1;
	path->startup_cost = cost;
	path->total_cost = cost + cpu_tuple_cost;
}

/*
 * Put PostgreSQL's Gather and Finalize Aggregate over a partial GpuIndexAgg
 * path (of the partially grouped rel) and offer that to the grouped rel.
 * PostgreSQL calls create_upper_paths_hook for the grouped rel only, after
 * it built its own partial aggregation, so this builds what
 * gather_grouping_paths and add_paths_to_grouping_rel would have.
 */
static void
add_finalized_path(PlannerInfo *root, RelOptInfo *grouped_rel,
				   GroupPathExtraData *extra, Path *partial)
{
	double		rows = partial->rows * partial->parallel_workers;
	Path	   *gather;

	gather = (Path *) create_gather_path(root, partial->parent, partial,
										 partial->parent->reltarget, NULL, &rows);
	add_path(grouped_rel, (Path *) create_agg_path(root, grouped_rel, gather,
												   grouped_rel->reltarget, AGG_PLAIN,
												   AGGSPLIT_FINAL_DESERIAL, NIL,
												   (List *) extra->havingQual,
												   &extra->agg_final_costs, 1));
}

/*
 * Offer GpuIndexAgg over each GpuIndexJoin path of the input join rel whose
 * rows may come straight from the image (gpuidx_join_path_direct), when
 * every aggregate reads the subquery's key or INCLUDE columns (or is
 * count(*)).  The join stays the node's child: it adds up the rows the
 * join answers from the image as one batch and the others from the rows
 * the join returns.  With finalize, over the join's partial paths: each
 * process's partial states (output_rel the partially grouped rel), under
 * a Gather and a Finalize Aggregate offered to grouped_rel.
 */
static void
offer_join_agg_paths(PlannerInfo *root, RelOptInfo *input_rel,
					 RelOptInfo *output_rel, List *aggs, List *having,
					 RelOptInfo *grouped_rel, GroupPathExtraData *finalize)
{
	bool		partial = finalize != NULL;
	ListCell   *lc;

	foreach(lc, partial ? input_rel->partial_pathlist : input_rel->pathlist)
	{
		Path	   *join = lfirst(lc);
		IndexOptInfo *index;
		Index		inner_relid;
		Query	   *subquery;
		RangeTblEntry *rte;
		List	   *specs = NIL;
		ListCell   *la;
		CustomPath *cpath;

		/* (the scan/join target may have put a projection on the join) */
		if (IsA(join, ProjectionPath))
			join = ((ProjectionPath *) join)->subpath;
		if (!gpuidx_join_path_direct(join, &index, &inner_relid, &subquery))
			continue;
		foreach(la, aggs)
		{
			List	   *spec = join_agg_spec(lfirst(la), index, inner_relid, subquery);

			if (spec == NIL)
				break;
			specs = lappend(specs, spec);
		}
		if (list_length(specs) != list_length(aggs))
			continue;
		rte = rt_fetch(1, subquery->rtable);
		/* (partial: each process adds up the rows of its share of the join) */
		cpath = new_agg_path(output_rel, &gpuidx_join_agg_path_methods, join,
							 partial ? join->parallel_workers : 0, index, rte, specs,
							 list_make4(aggs, having, makeInteger(inner_relid),
										makeInteger(partial)));
		cost_join_agg_path(root, join, index->rel->allvisfrac,
						   count_columns(specs), having, &cpath->path);
		if (partial)
			add_finalized_path(root, grouped_rel, finalize, &cpath->path);
		else
			add_path(output_rel, &cpath->path);
	}
}

/*
 * The plan of GpuIndexAgg over a join: custom_scan_tlist the aggregates,
 * the join's plan the one custom plan, and each spec gains the join's
 * output column its argument is (0 for count(*)).
 */
static Plan *
plan_join_agg_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *priv = best_path->custom_private;
	List	   *extra = list_nth(priv, 4);
	List	   *aggs = linitial(extra);
	Index		inner_relid = (Index) intVal(lthird(extra));
	Plan	   *join = linitial(custom_plans);
	List	   *scan_tlist = NIL;
	List	   *specs = NIL;
	ListCell   *la,
			   *ls;

	forboth(la, aggs, ls, (List *) list_nth(priv, 3))
	{
		Var		   *var = agg_arg_var(lfirst(la), inner_relid);
		int			resno = 0;
		ListCell   *lt;

		foreach(lt, join->targetlist)
		{
			Var		   *out = (Var *) lfirst_node(TargetEntry, lt)->expr;

			if (var && IsA(out, Var) && out->varno == var->varno &&
				out->varattno == var->varattno && out->varlevelsup == 0)
			{
				resno = lfirst_node(TargetEntry, lt)->resno;
				break;
			}
		}
		if (var && resno == 0)
			elog(ERROR, "gpuidx: aggregate argument not found in the join's output");
		specs = lappend(specs, lappend_int(list_copy(lfirst(ls)), resno));
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(lfirst(la)),
											 list_length(scan_tlist) + 1, NULL, false));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = (List *) copyObject(lsecond(extra));
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = NIL;
	cscan->custom_scan_tlist = scan_tlist;
	/* In GpuidxAggPrivate order (customagg.h). */
	cscan->custom_private = list_make5(linitial(priv), lsecond(priv), lthird(priv), specs,
									   lfourth(extra));
	cscan->methods = &gpuidx_agg_methods;
	return &cscan->scan.plan;
}

/*
 * Offer GpuIndexAgg over an as-of join: the whole aggregate, and where the
 * join has partial paths (parallel plans) each process's partial states
 * under PostgreSQL's Gather and Finalize Aggregate, which applies HAVING.
 * The partial target is the one PostgreSQL built for its own partial
 * aggregation (the same Aggrefs, split), so setrefs.c matches them up.
 */
static void
offer_join_aggs(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
				GroupPathExtraData *extra)
{
	AggCollect	cxt = {NIL, true, false};
	AggCollect	pcxt = {NIL, true, true};
	List	   *having = (List *) extra->havingQual;
	RelOptInfo *partial_rel;

	collect_aggs_walker((Node *) output_rel->reltarget->exprs, &cxt);
	collect_aggs_walker((Node *) having, &cxt);
	if (!cxt.ok || cxt.aggs == NIL)
		return;
	offer_join_agg_paths(root, input_rel, output_rel, cxt.aggs, having, NULL, NULL);

	if (input_rel->partial_pathlist == NIL || !output_rel->consider_parallel ||
		!(extra->flags & GROUPING_CAN_PARTIAL_AGG) || !extra->partial_costs_set)
		return;
	partial_rel = fetch_upper_rel(root, UPPERREL_PARTIAL_GROUP_AGG, output_rel->relids);
	if (partial_rel->reltarget == NULL || partial_rel->reltarget->exprs == NIL)
		return;					/* PostgreSQL planned no partial aggregation */
	collect_aggs_walker((Node *) partial_rel->reltarget->exprs, &pcxt);
	if (pcxt.ok && list_length(pcxt.aggs) == list_length(partial_rel->reltarget->exprs))
		offer_join_agg_paths(root, input_rel, partial_rel, pcxt.aggs, NIL,
							 output_rel, extra);
}

/* create_upper_paths_hook: offer GpuIndexAgg for plain aggregates. */
static void
gpuidx_create_upper_paths(PlannerInfo *root, UpperRelationKind stage,
						  RelOptInfo *input_rel, RelOptInfo *output_rel,
						  void *extra)
{
	AggCollect	cxt = {NIL, true, false};
	List	   *having;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || !gpuidx_enable_customagg)
		return;
	if (join_query_shape_ok(root, input_rel, (GroupPathExtraData *) extra))
	{
		offer_join_aggs(root, input_rel, output_rel, (GroupPathExtraData *) extra);
		return;
	}
	if (!query_shape_ok(root, input_rel, (GroupPathExtraData *) extra) ||
		!table_ok(planner_rt_fetch(input_rel->relid, root)))
		return;
	having = (List *) ((GroupPathExtraData *) extra)->havingQual;
	collect_aggs_walker((Node *) output_rel->reltarget->exprs, &cxt);
	collect_aggs_walker((Node *) having, &cxt);
	if (!cxt.ok || cxt.aggs == NIL)
		return;
	offer_agg_paths(root, input_rel, output_rel, cxt.aggs, having);
}

/* Install the planner hook and register the plan node's methods. */
void
gpuidx_customagg_init(void)
{
	RegisterCustomScanMethods(&gpuidx_agg_methods);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = gpuidx_create_upper_paths;
}
