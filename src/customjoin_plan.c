/*
 * customjoin_plan.c - GpuIndexJoin, planner side: a join whose inner side
 * is answered from a gpuidx index in batches of outer rows.
 *
 * set_join_pathlist_hook offers a GpuIndexJoin path for two shapes of join:
 *
 *   - a table join: the inner side is a table with a gpuidx index, and join
 *     clauses compare its indexed column with expressions of the outer row
 *     (=, <, <=, >, >=, BETWEEN); inner, left, semi and anti joins;
 *   - an as-of join: the inner side is a LATERAL subquery over one such
 *     table, WHERE k <= x(outer) [AND ...] ORDER BY k DESC LIMIT n, or the
 *     successor mirror (>= or >, ORDER BY k); inner and left joins.
 *
 * The path's only child is the outer side's cheapest path.  The executor is
 * customjoin_exec.c; customjoin.h says how the plan node is laid out.
 */
#include "gpuidx.h"
#include "service.h"
#include "customjoin.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"

#include <math.h>

static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

/* What a recognized join needs to become a path and then a plan. */
typedef struct JoinShape
{
	GpuidxJoinKind kind;
	JoinType	jointype;
	RelOptInfo *innerrel;
	IndexOptInfo *index;		/* the gpuidx index (table join) */
	Oid			tableoid;
	Oid			indexoid;
	AttrNumber	keyattno;
	double		entries;		/* index entries, for costing */
	double		allvisfrac;		/* of the indexed table */
	List	   *strategies;		/* IntList, per probe */
	List	   *probes;			/* Expr over outer columns, per probe */
	List	   *matchquals;		/* RestrictInfo or Expr: decide a pair */
	List	   *filterquals;	/* RestrictInfo: filter joined rows */
	/* as-of only */
	Query	   *subquery;
	List	   *asof_quals;		/* the subquery's other quals (its form) */
	Node	   *asof_limit;
	RangeTblEntry *asof_rte;
} JoinShape;

/* The type an integer expression has underneath domains, or InvalidOid. */
static Oid
integer_type(Node *expr)
{
	Oid			t = getBaseType(exprType(expr));

	return (t == INT2OID || t == INT4OID || t == INT8OID) ? t : InvalidOid;
}

/* Is node (under relabelings) the Var varno.attno at level levelsup? */
static bool
is_column(Node *node, Index varno, AttrNumber attno, int levelsup)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node && IsA(node, Var) && ((Var *) node)->varno == varno &&
		((Var *) node)->varattno == attno &&
		((Var *) node)->varlevelsup == levelsup;
}

/*
 * Split an operator clause "key OP other" (either way round) into the
 * strategy with the key on the left and the other side.  false if it is not
 * a comparison of the key in the index's operator family.
 */
static bool
split_key_clause(Node *clause, Oid opfamily, Index varno, AttrNumber keyattno,
				 int levelsup, int *strategy, Node **other)
{
	OpExpr	   *op;
	Node	   *l,
			   *r;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return false;
	op = (OpExpr *) clause;
	l = linitial(op->args);
	r = lsecond(op->args);
	if (is_column(l, varno, keyattno, levelsup))
	{
		*strategy = get_op_opfamily_strategy(op->opno, opfamily);
		*other = r;
	}
	else if (is_column(r, varno, keyattno, levelsup) &&
			 OidIsValid(get_commutator(op->opno)))
	{
		*strategy = get_op_opfamily_strategy(get_commutator(op->opno), opfamily);
		*other = l;
	}
	else
		return false;
	return *strategy >= BTLessStrategyNumber &&
		*strategy <= BTGreaterStrategyNumber && OidIsValid(integer_type(*other));
}

/*
 * Position (0-based) of a Var or placeholder in a list of expressions, -1
 * if absent.  Vars match on varno and varattno, as setrefs.c matches them.
 */
static int
find_column(List *exprs, Node *node)
{
	ListCell   *lc;

	foreach(lc, exprs)
	{
		Node	   *e = lfirst(lc);

		if (IsA(e, TargetEntry))
			e = (Node *) ((TargetEntry *) e)->expr;
		if (IsA(node, Var) && IsA(e, Var) ?
			((Var *) e)->varno == ((Var *) node)->varno &&
			((Var *) e)->varattno == ((Var *) node)->varattno &&
			((Var *) e)->varlevelsup == 0 :
			equal(e, node))
			return foreach_current_index(lc);
	}
	return -1;
}

/* The Vars and placeholders of a node (aggregates looked into). */
static List *
columns_of(Node *node)
{
	return pull_var_clause(node, PVC_RECURSE_AGGREGATES |
						   PVC_RECURSE_WINDOWFUNCS | PVC_INCLUDE_PLACEHOLDERS);
}

/*
 * Can every Var and placeholder of expr be read from the outer side's
 * output?  (The planner puts what joins above need into a rel's target;
 * this only guards the exceptions.)
 */
static bool
computable_from(Node *expr, RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, columns_of(expr))
		if (find_column(rel->reltarget->exprs, lfirst(lc)) < 0)
			return false;
	return true;
}

/* Is the table a heap (the executor visits its pages directly)? */
static bool
is_heap_table(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	bool		heap = rel->rd_rel->relam == HEAP_TABLE_AM_OID;

	table_close(rel, NoLock);
	return heap;
}

/* ---------- table joins ---------- */

/*
 * Recognize a table join of outerrel with the gpuidx-indexed table
 * innerrel: the join clauses comparing the indexed column with outer
 * expressions become the probes, the rest match or filter quals.
 */
static bool
recognize_table_join(PlannerInfo *root, RelOptInfo *joinrel,
					 RelOptInfo *outerrel, RelOptInfo *innerrel,
					 IndexOptInfo *index, JoinType jointype,
					 JoinPathExtraData *extra, JoinShape *shape)
{
	RangeTblEntry *rte = planner_rt_fetch(innerrel->relid, root);
	ListCell   *lc;

	memset(shape, 0, sizeof(JoinShape));
	shape->kind = GPUIDX_JOIN_TABLE;
	shape->jointype = jointype;
	shape->innerrel = innerrel;
	shape->index = index;
	shape->tableoid = rte->relid;
	shape->indexoid = index->indexoid;
	shape->keyattno = index->indexkeys[0];
	shape->entries = Max(index->tuples, 1.0);
	shape->allvisfrac = innerrel->allvisfrac;
	if (shape->keyattno <= 0 || !is_heap_table(rte->relid))
		return false;			/* expression indexes, other table AMs */

	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		/* as create_nestloop_plan splits them: semi joins are not outer */
		bool		joinqual = !IS_OUTER_JOIN(jointype) ||
			!RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids);
		int			strategy;
		Node	   *other;

		if (rinfo->pseudoconstant)
			return false;
		if (joinqual &&
			split_key_clause((Node *) rinfo->clause, index->opfamily[0],
							 innerrel->relid, shape->keyattno, 0, &strategy, &other) &&
			!bms_is_empty(pull_varnos(root, other)) &&
			bms_is_subset(pull_varnos(root, other), outerrel->relids) &&
			!contain_volatile_functions(other) && computable_from(other, outerrel))
		{
			shape->strategies = lappend_int(shape->strategies, strategy);
			shape->probes = lappend(shape->probes, other);
		}
		else if (joinqual && jointype != JOIN_INNER)
			shape->matchquals = lappend(shape->matchquals, rinfo);
		else
			shape->filterquals = lappend(shape->filterquals, rinfo);
	}
	if (shape->probes == NIL)
		return false;

	/*
	 * The table's own restrictions decide whether a row can join at all.  A
	 * row-level security policy must run before every other qual (no leaky
	 * function may see a hidden row): such tables keep PostgreSQL's plans.
	 */
	if (rte->securityQuals != NIL)
		return false;
	foreach(lc, innerrel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant || rinfo->security_level > 0)
			return false;
		shape->matchquals = lappend(shape->matchquals, rinfo);
	}
	return true;
}

/* ---------- as-of joins ---------- */

/* Does the subquery only read one plain table, with no clause we don't run? */
static bool
asof_query_shape_ok(Query *q)
{
	RangeTblRef *rtr;
	RangeTblEntry *rte;

	if (q->commandType != CMD_SELECT || q->setOperations || q->hasAggs ||
		q->hasWindowFuncs || q->hasTargetSRFs || q->hasSubLinks ||
		q->hasDistinctOn || q->distinctClause || q->groupClause ||
		q->groupingSets || q->havingQual || q->cteList || q->hasRecursive ||
		q->hasModifyingCTE || q->hasForUpdate || q->rowMarks ||
		q->hasRowSecurity || q->limitOffset || q->limitCount == NULL ||
		q->limitOption != LIMIT_OPTION_COUNT || q->sortClause == NIL ||
		list_length(q->rtable) != 1 || q->jointree == NULL ||
		list_length(q->jointree->fromlist) != 1 ||
		!IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return false;
	rtr = linitial(q->jointree->fromlist);
	rte = rt_fetch(rtr->rtindex, q->rtable);
	return rtr->rtindex == 1 && rte->rtekind == RTE_RELATION &&
		rte->relkind == RELKIND_RELATION && rte->tablesample == NULL &&
		rte->securityQuals == NIL && !has_subclass(rte->relid);
}

/*
 * Is there a gpuidx index on column attno of the subquery's table?  Looked
 * up in the subquery's own planner info (it was planned already).
 */
static IndexOptInfo *
asof_index(RelOptInfo *innerrel, AttrNumber attno, double *allvisfrac)
{
	RelOptInfo *trel;
	ListCell   *lc;

	if (innerrel->subroot == NULL || innerrel->subroot->simple_rel_array_size < 2)
		return NULL;
	trel = innerrel->subroot->simple_rel_array[1];
	if (trel == NULL || trel->reloptkind != RELOPT_BASEREL)
		return NULL;
	foreach(lc, trel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);

		if (gpuidx_indexinfo_is_gpuidx(index) && index->indpred == NIL &&
			index->indexkeys[0] == attno)
		{
			*allvisfrac = trel->allvisfrac;
			return index;
		}
	}
	return NULL;
}

/* Does node hold a Var of a query two or more levels up? */
static bool
has_distant_vars(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup >= 2;
	if (IsA(node, PlaceHolderVar))
		return ((PlaceHolderVar *) node)->phlevelsup >= 1;
	return expression_tree_walker(node, has_distant_vars, context);
}

/*
 * Every outer reference (a Var one level up) in node is a plain Var the
 * outer side outputs, and nothing refers further up?  (References to an
 * enclosing query are parameters its planner made; the subquery's parse
 * tree, which this node evaluates, still has them as Vars.)
 */
static bool
outer_refs_ok(Node *node, RelOptInfo *outerrel)
{
	ListCell   *lc;

	if (has_distant_vars(node, NULL))
		return false;
	foreach(lc, pull_vars_of_level(node, 1))
	{
		Var		   *v = lfirst(lc);
		Var		   *v0;

		if (!IsA(v, Var))
			return false;
		v0 = copyObject(v);
		v0->varlevelsup = 0;
		if (find_column(outerrel->reltarget->exprs, (Node *) v0) < 0)
			return false;
	}
	return true;
}

/*
 * Recognize an as-of join: innerrel is a LATERAL subquery
 *   SELECT ... FROM t WHERE t.k <= x [AND quals] ORDER BY t.k DESC LIMIT n
 * (or >= / > with ORDER BY t.k) with x an expression of the outer row and a
 * gpuidx index on t.k.
 */
static bool
recognize_asof_join(PlannerInfo *root, RelOptInfo *joinrel,
					RelOptInfo *outerrel, RelOptInfo *innerrel,
					JoinType jointype, JoinPathExtraData *extra,
					JoinShape *shape)
{
	RangeTblEntry *srte = planner_rt_fetch(innerrel->relid, root);
	Query	   *q;
	SortGroupClause *sgc;
	Node	   *sortexpr;
	Oid			opfamily,
				opcintype;
	int16		sortstrategy;
	ListCell   *lc;
	bool		found_walk_bound = false;

	memset(shape, 0, sizeof(JoinShape));
	if (srte->rtekind != RTE_SUBQUERY || !srte->lateral ||
		(jointype != JOIN_INNER && jointype != JOIN_LEFT) ||
		innerrel->subroot == NULL)
		return false;

	/*
	 * Rows of a subquery are locked or rechecked (EvalPlanQual) through a
	 * whole-row copy this node does not build: leave such queries alone.
	 */
	if (root->parse->commandType != CMD_SELECT || root->rowMarks != NIL)
		return false;
	q = srte->subquery;
	if (!asof_query_shape_ok(q) || list_length(q->sortClause) != 1 ||
		!bms_is_subset(innerrel->lateral_relids, outerrel->relids))
		return false;

	/* ORDER BY the key, descending (predecessor) or ascending (successor) */
	sgc = linitial(q->sortClause);
	sortexpr = (Node *) get_sortgroupclause_expr(sgc, q->targetList);
	while (IsA(sortexpr, RelabelType))
		sortexpr = (Node *) ((RelabelType *) sortexpr)->arg;
	if (!IsA(sortexpr, Var) || ((Var *) sortexpr)->varno != 1 ||
		((Var *) sortexpr)->varlevelsup != 0 || ((Var *) sortexpr)->varattno <= 0 ||
		!get_ordering_op_properties(sgc->sortop, &opfamily, &opcintype, &sortstrategy))
		return false;
	shape->keyattno = ((Var *) sortexpr)->varattno;
	shape->index = asof_index(innerrel, shape->keyattno, &shape->allvisfrac);
	if (shape->index == NULL ||
		get_op_opfamily_strategy(sgc->sortop, shape->index->opfamily[0]) != sortstrategy)
		return false;
	if (sortstrategy == BTGreaterStrategyNumber)
		shape->kind = GPUIDX_JOIN_ASOF_PRED;
	else if (sortstrategy == BTLessStrategyNumber)
		shape->kind = GPUIDX_JOIN_ASOF_SUCC;
	else
		return false;

	/*
	 * WHERE: one bound on the key from the outer row in the walk's direction
	 * (the engine's probe); further comparisons of the key with outer or
	 * constant expressions bound the walk too (the probes' intersection: a
	 * predecessor walk stops below its lower end), and stay subquery quals,
	 * so the rows returned do not depend on them being probes.  Other quals
	 * are kept.
	 */
	foreach(lc, make_ands_implicit((Expr *) q->jointree->quals))
	{
		Node	   *qual = lfirst(lc);
		int			strategy;
		Node	   *other;
		bool		walk_side,
					outer_ref;

		if (!split_key_clause(qual, shape->index->opfamily[0], 1, shape->keyattno,
							  0, &strategy, &other) ||
			contain_vars_of_level(other, 0) || contain_volatile_functions(other) ||
			!outer_refs_ok(other, outerrel))
		{
			shape->asof_quals = lappend(shape->asof_quals, qual);
			continue;
		}
		walk_side = shape->kind == GPUIDX_JOIN_ASOF_PRED ?
			(strategy == BTLessStrategyNumber || strategy == BTLessEqualStrategyNumber) :
			(strategy == BTGreaterStrategyNumber || strategy == BTGreaterEqualStrategyNumber);
		outer_ref = contain_vars_of_level(other, 1);
		other = copyObject(other);
		IncrementVarSublevelsUp(other, -1, 1);
		if (walk_side && !found_walk_bound && outer_ref)
		{
			/* the walk's start goes first: EXPLAIN shows it first */
			found_walk_bound = true;
			shape->strategies = lcons_int(strategy, shape->strategies);
			shape->probes = lcons(other, shape->probes);
			continue;
		}
		shape->strategies = lappend_int(shape->strategies, strategy);
		shape->probes = lappend(shape->probes, other);
		shape->asof_quals = lappend(shape->asof_quals, qual);
	}
	if (!found_walk_bound)
		return false;
	if (shape->probes == NIL ||
		!outer_refs_ok((Node *) shape->asof_quals, outerrel) ||
		!outer_refs_ok((Node *) q->targetList, outerrel) ||
		contain_vars_of_level(q->limitCount, 0) ||
		contain_vars_of_level(q->limitCount, 1) ||
		has_distant_vars(q->limitCount, NULL) ||
		contain_volatile_functions(q->limitCount) ||
		contain_volatile_functions((Node *) q->targetList))
		return false;

	shape->jointype = jointype;
	shape->innerrel = innerrel;
	shape->subquery = q;
	shape->asof_limit = q->limitCount;
	shape->asof_rte = rt_fetch(1, q->rtable);
	shape->tableoid = shape->asof_rte->relid;
	if (!is_heap_table(shape->tableoid))
		return false;
	shape->indexoid = shape->index->indexoid;
	shape->entries = Max(shape->index->tuples, 1.0);

	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			return false;
		if (jointype == JOIN_LEFT && !RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			shape->matchquals = lappend(shape->matchquals, rinfo);
		else
			shape->filterquals = lappend(shape->filterquals, rinfo);
	}
	foreach(lc, innerrel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			return false;
		shape->matchquals = lappend(shape->matchquals, rinfo);
	}
	return true;
}

/* ---------- paths ---------- */

/* The clauses of a list of RestrictInfos (or plain expressions). */
static List *
clauses_of(List *quals)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, quals)
	{
		Node	   *q = lfirst(lc);

		out = lappend(out, IsA(q, RestrictInfo) ? (Node *) ((RestrictInfo *) q)->clause : q);
	}
	return out;
}

/*
 * Are the inner side's columns that the join outputs or tests ones the
 * executor fills: user columns, ctid and tableoid of the table (no
 * whole-row reference), outputs of the subquery?
 */
static bool
inner_columns_ok(RelOptInfo *joinrel, JoinShape *shape)
{
	List	   *nodes = list_make3(joinrel->reltarget->exprs,
								   clauses_of(shape->matchquals),
								   clauses_of(shape->filterquals));
	ListCell   *lc;

	foreach(lc, columns_of((Node *) nodes))
	{
		Var		   *v = lfirst(lc);

		if (IsA(v, PlaceHolderVar))
			return false;		/* evaluated at this join: not supported */
		if (v->varno != shape->innerrel->relid)
			continue;
		if (v->varattno == 0)
			return false;
		if (v->varattno < 0 && (shape->kind != GPUIDX_JOIN_TABLE ||
								(v->varattno != SelfItemPointerAttributeNumber &&
								 v->varattno != TableOidAttributeNumber)))
			return false;
	}
	return true;
}

/*
 * Calibration (CPU engine, 2*10^6-row table, probe tables of 10^3..10^6
 * rows, 2-core VM under load, 2026-11-24): against the plans PostgreSQL
 * picks for a btree twin (nested loops of index scans for small outer
 * sides, parallel hash joins for large ones, nested loops over the LATERAL
 * subquery for as-of joins), one cost unit of those plans took 16..23 us.
 * Measured per outer row: about 0.3 us to gather it and evaluate its
 * probes, 0.6 us for the CPU engine's search of a 10^6-probe batch (the GPU
 * engine's is below 0.01 us), 0.3 us to return a joined row; heap visits in
 * block order per chunk cost what GpuIndexScan's do.  The constants below
 * put those in cpu_tuple_costs.
 */
#ifndef GPUJOIN_ROW_COST
#define GPUJOIN_ROW_COST 0.5	/* cpu_tuple_costs per outer row gathered */
#endif
#ifndef GPUJOIN_HIT_COST
#define GPUJOIN_HIT_COST 0.5	/* cpu_tuple_costs per row joined */
#endif
#ifndef GPUJOIN_FETCH_COST
#define GPUJOIN_FETCH_COST 0.25 /* random_page_costs per heap fetch */
#endif

/*
 * Cost of a GpuIndexJoin: the outer side, one engine batch per chunk, a
 * search per outer row (on the GPU nearly free past the batch's fixed
 * cost), and per hit a heap visit (none on all-visible pages when only the
 * key is read), the match quals and the output row.  Heap visits are in
 * block order per chunk: once the hits cover many of the table's pages, a
 * page costs what GpuIndexScan pays for one.
 */
static void
cost_join_path(PlannerInfo *root, RelOptInfo *joinrel, Path *outer,
			   JoinShape *shape, bool key_only, bool partial, Path *path)
{
	double		nouter = Max(outer->rows, 1.0);
	/* a partial path joins one worker's share of the outer rows */
	double		share = partial ?
		Min(1.0, nouter / Max(outer->parent->rows, 1.0)) : 1.0;
	double		jrows = Max(joinrel->rows * share, 1.0);
	double		chunks = ceil(nouter / gpuidx_batch_chunk);
	bool		gpu = gpuidx_engine_setting != GPUIDX_ENGINE_CPU &&
		gpuidx_choose_engine() == GI_ENGINE_GPU;
	double		hits;
	double		fetches;
	double		pages = Max(shape->innerrel->pages, 1.0);
	double		search;
	QualCost	match_cost,
				filter_cost,
				probe_cost;
	Cost		startup,
				run;

	if (shape->kind == GPUIDX_JOIN_TABLE)
	{
		double		table_pages;

		/* Rows joined before the filter: the join's estimate is the floor. */
		hits = shape->jointype == JOIN_SEMI || shape->jointype == JOIN_ANTI ?
			nouter : jrows;
		fetches = key_only ? hits * (1.0 - shape->allvisfrac) : hits;
		table_pages = Min(fetches, pages);
		run = table_pages * (table_pages >= pages * 0.5 ? 0.6 * seq_page_cost :
							 random_page_cost * GPUJOIN_FETCH_COST);
		run += fetches * cpu_tuple_cost;
	}
	else
	{
		/* As-of: about one row per outer row, fetched in outer order. */
		hits = jrows;
		fetches = key_only ? hits * (1.0 - shape->allvisfrac) : hits;
		run = fetches * (random_page_cost * GPUJOIN_FETCH_COST * Min(1.0, pages / 1000.0) +
						 cpu_tuple_cost * 2.0);
	}

	cost_qual_eval(&probe_cost, shape->probes, root);
	cost_qual_eval(&match_cost, clauses_of(shape->matchquals), root);
	cost_qual_eval(&filter_cost, clauses_of(shape->filterquals), root);

	/* per probe: a search of log2(entries) steps on the CPU */
	search = gpu && nouter >= gpuidx_gpu_min_batch ? cpu_operator_cost * 0.5 :
		cpu_operator_cost * (log2(shape->entries) + 1.0) * 0.25;
	startup = outer->startup_cost + random_page_cost + 400.0 * cpu_operator_cost +
		(gpu ? 2000.0 * cpu_operator_cost : 0.0) +
		probe_cost.startup + match_cost.startup + filter_cost.startup;
	run += (outer->total_cost - outer->startup_cost) +
		(chunks - 1) * 400.0 * cpu_operator_cost +
		nouter * (GPUJOIN_ROW_COST * cpu_tuple_cost + probe_cost.per_tuple + search) +
		hits * (GPUJOIN_HIT_COST * cpu_tuple_cost + match_cost.per_tuple) +
		jrows * (cpu_tuple_cost + filter_cost.per_tuple);

	path->rows = partial ? clamp_row_est(joinrel->rows * share) : joinrel->rows;
	path->startup_cost = startup;
	path->total_cost = startup + run;
}

static Plan *plan_join_path(PlannerInfo *root, RelOptInfo *rel,
							CustomPath *best_path, List *tlist,
							List *clauses, List *custom_plans);

static const CustomPathMethods gpuidx_join_path_methods = {
	.CustomName = "GpuIndexJoin",
	.PlanCustomPath = plan_join_path,
};

/* Is column attno of the table the index's key or one of its INCLUDE columns? */
static bool
index_holds_column(IndexOptInfo *index, AttrNumber attno)
{
	int			i;

	if (attno <= 0)
		return false;
	for (i = 0; i < index->ncolumns; i++)
		if (index->indexkeys[i] == attno)
			return true;
	return false;
}

/*
 * Would the join read only columns the image holds (the key and the
 * index's INCLUDE columns)?  Then rows on all-visible pages come from the
 * image ("key-only").
 */
static bool
reads_key_only(RelOptInfo *joinrel, JoinShape *shape)
{
	List	   *nodes;
	ListCell   *lc;

	if (shape->kind != GPUIDX_JOIN_TABLE)
	{
		/* as-of: the subquery's outputs and quals over t */
		nodes = list_make2(shape->subquery->targetList, shape->asof_quals);
		foreach(lc, pull_vars_of_level((Node *) nodes, 0))
		{
			Var		   *v = lfirst(lc);

			if (!IsA(v, Var) || !index_holds_column(shape->index, v->varattno))
				return false;
		}
		return true;
	}
	nodes = list_make3(joinrel->reltarget->exprs, clauses_of(shape->matchquals),
					   clauses_of(shape->filterquals));
	foreach(lc, columns_of((Node *) nodes))
	{
		Var		   *v = lfirst(lc);

		/*
		 * ctid needs the heap: the image holds a HOT chain's root TID, the
		 * row's ctid is the visible member's.
		 */
		if (IsA(v, Var) && v->varno == shape->innerrel->relid &&
			!index_holds_column(shape->index, v->varattno) &&
			v->varattno != TableOidAttributeNumber)
			return false;
	}
	return true;
}

/*
 * A GpuIndexJoin path over outer (the outer rel's cheapest path, or a
 * partial path: then each parallel worker joins its share of the outer
 * rows, and the path is partial too).
 */
static CustomPath *
make_join_path(PlannerInfo *root, RelOptInfo *joinrel, Path *outer,
			   JoinShape *shape, bool partial)
{
	CustomPath *cpath;
	JoinShape  *saved;

	saved = palloc(sizeof(JoinShape));
	*saved = *shape;
	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	/* Not parallel-aware itself: the outer path splits the rows. */
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = partial;
	cpath->path.parallel_workers = partial ? outer->parallel_workers : 0;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = list_make1(outer);
	cpath->custom_private = list_make2(saved, makeInteger(reads_key_only(joinrel, shape)));
	cpath->methods = &gpuidx_join_path_methods;
	cost_join_path(root, joinrel, outer, shape, reads_key_only(joinrel, shape),
				   partial, &cpath->path);
	return cpath;
}

/*
 * PostgreSQL never lets a join with a LIMIT subquery run in a worker
 * (set_rel_consider_parallel: a worker's run of the subquery could return
 * other rows), so an as-of join rel is not consider_parallel.  GpuIndexJoin
 * never runs the subquery: each outer row's walk over the image gives the
 * same rows in any process under the same snapshot.  So when everything
 * else PostgreSQL checks for a join rel is parallel-safe (the outer rel, the
 * join clauses, the subquery rel's own quals, the join's output), the rel
 * may take parallel paths.  Its other paths stay serial: each reads the
 * subquery rel, whose paths are not parallel-safe.
 */
static bool
asof_rel_parallel_ok(PlannerInfo *root, RelOptInfo *joinrel,
					 RelOptInfo *outerrel, RelOptInfo *innerrel,
					 List *restrictlist)
{
	if (!outerrel->consider_parallel ||
		!is_parallel_safe(root, (Node *) restrictlist) ||
		!is_parallel_safe(root, (Node *) innerrel->baserestrictinfo) ||
		!is_parallel_safe(root, (Node *) joinrel->reltarget->exprs))
		return false;
	joinrel->consider_parallel = true;
	return true;
}

/*
 * May parallel workers each run this join over their share of the outer
 * rows?  Only in service mode, where a worker maps the shared image (per
 * backend, each worker would load its own image per query, which costs
 * more than it saves), for a join whose expressions are parallel-safe and
 * that locks no rows.
 */
static bool
join_parallel_ok(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
				 RelOptInfo *innerrel, JoinShape *shape, List *restrictlist)
{
	if (!gpuidx_service_mode() || outerrel->partial_pathlist == NIL ||
		root->rowMarks != NIL)
		return false;
	if (!is_parallel_safe(root, (Node *) shape->probes) ||
		!is_parallel_safe(root, (Node *) clauses_of(shape->matchquals)) ||
		!is_parallel_safe(root, (Node *) clauses_of(shape->filterquals)))
		return false;
	if (shape->kind != GPUIDX_JOIN_TABLE &&
		(!is_parallel_safe(root, (Node *) shape->subquery->targetList) ||
		 !is_parallel_safe(root, (Node *) shape->asof_quals) ||
		 !is_parallel_safe(root, shape->subquery->limitCount)))
		return false;
	/* last: this may mark an as-of join rel parallel-safe */
	return joinrel->consider_parallel ||
		(shape->kind != GPUIDX_JOIN_TABLE &&
		 asof_rel_parallel_ok(root, joinrel, outerrel, innerrel, restrictlist));
}

/* Add GpuIndexJoin paths (and a partial one where workers may run it). */
static void
add_join_path(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			  RelOptInfo *innerrel, JoinShape *shape, List *restrictlist)
{
	Path	   *outer = outerrel->cheapest_total_path;

	if (outer == NULL || outer->param_info != NULL ||
		!bms_is_empty(joinrel->lateral_relids) || !inner_columns_ok(joinrel, shape))
		return;
	add_path(joinrel, &make_join_path(root, joinrel, outer, shape, false)->path);
	if (join_parallel_ok(root, joinrel, outerrel, innerrel, shape, restrictlist))
	{
		Path	   *partial = linitial(outerrel->partial_pathlist);

		if (partial->param_info == NULL)
			add_partial_path(joinrel,
							 &make_join_path(root, joinrel, partial, shape, true)->path);
	}
}

/* set_join_pathlist_hook: offer GpuIndexJoin where it applies. */
static void
gpuidx_set_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
						 RelOptInfo *outerrel, RelOptInfo *innerrel,
						 JoinType jointype, JoinPathExtraData *extra)
{
	RangeTblEntry *rte;
	JoinShape	shape;

	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel,
									jointype, extra);
	if (!gpuidx_enable_customjoin || innerrel->reloptkind != RELOPT_BASEREL ||
		(jointype != JOIN_INNER && jointype != JOIN_LEFT &&
		 jointype != JOIN_SEMI && jointype != JOIN_ANTI))
		return;
	rte = planner_rt_fetch(innerrel->relid, root);
	if (rte->rtekind == RTE_SUBQUERY)
	{
		if (recognize_asof_join(root, joinrel, outerrel, innerrel, jointype,
								extra, &shape))
			add_join_path(root, joinrel, outerrel, innerrel, &shape, extra->restrictlist);
		return;
	}
	if (rte->rtekind != RTE_RELATION || rte->inh ||
		!bms_is_empty(innerrel->lateral_relids))
		return;
	{
		ListCell   *lc;

		foreach(lc, innerrel->indexlist)
		{
			IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);

			if (!gpuidx_indexinfo_is_gpuidx(index) ||
				(index->indpred != NIL && !index->predOK))
				continue;
			if (recognize_table_join(root, joinrel, outerrel, innerrel, index,
									 jointype, extra, &shape))
				add_join_path(root, joinrel, outerrel, innerrel, &shape, extra->restrictlist);
		}
	}
}

/*
 * Is path a GpuIndexJoin whose every row may come straight from the image,
 * so that GpuIndexAgg may add the rows up there (customjoin.h)?  An as-of
 * join, inner or left, key-only, with LIMIT 1 and no quals but its probe.
 */
bool
gpuidx_join_path_direct(Path *path, IndexOptInfo **index, Index *inner_relid,
						Query **subquery)
{
	CustomPath *cpath = (CustomPath *) path;
	JoinShape  *shape;
	Const	   *limit;

	if (!IsA(path, CustomPath) || cpath->methods != &gpuidx_join_path_methods)
		return false;
	shape = linitial(cpath->custom_private);
	/* (the subquery as written: LIMIT 1 is still int8(1) there) */
	limit = (Const *) (shape->asof_limit ?
					   eval_const_expressions(NULL, copyObject(shape->asof_limit)) : NULL);
	if (shape->kind == GPUIDX_JOIN_TABLE || !intVal(lsecond(cpath->custom_private)) ||
		(shape->jointype != JOIN_INNER && shape->jointype != JOIN_LEFT) ||
		shape->asof_quals != NIL || shape->matchquals != NIL ||
		shape->filterquals != NIL || list_length(shape->probes) != 1 ||
		limit == NULL || !IsA(limit, Const) || limit->constisnull ||
		limit->consttype != INT8OID || DatumGetInt64(limit->constvalue) != 1)
		return false;
	*index = shape->index;
	*inner_relid = shape->innerrel->relid;
	*subquery = shape->subquery;
	return true;
}

/* ---------- plan ---------- */

/* Context of rewrite_subquery_expr: the outer columns of the scan tuple. */
typedef struct SubqueryExprContext
{
	List	   *scan_tlist;		/* the outer part of custom_scan_tlist */
} SubqueryExprContext;

/*
 * Rewrite an expression of the as-of subquery for the executor: columns of
 * its table become INNER_VAR (the fetched row), outer references OUTER_VAR
 * at their position in the scan tuple.  (These expressions never see
 * setrefs.c: the subquery is not part of the plan.)
 */
static Node *
rewrite_subquery_expr(Node *node, SubqueryExprContext *cxt)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) copyObject(node);

		if (v->varlevelsup == 0)
			v->varno = INNER_VAR;
		else
		{
			int			pos;

			v->varlevelsup = 0;
			pos = find_column(cxt->scan_tlist, (Node *) v);
			if (pos < 0)
				elog(ERROR, "gpuidx: outer reference not found in the outer plan's output");
			v->varno = OUTER_VAR;
			v->varattno = pos + 1;
		}
		return (Node *) v;
	}
	return expression_tree_mutator(node, rewrite_subquery_expr, cxt);
}

/*
 * Let a plain seq scan on the outer side return its table's rows as they
 * are (a physical target list): the join reads the columns it needs from
 * the row itself, so the scan's projection of those columns per row is
 * pure overhead (create_scan_plan gives a scan a physical target list
 * where its parent takes any columns; a custom path's child is asked for
 * exactly its columns).  Only when the scan returns plain user columns of
 * its table and, as use_physical_tlist requires, no system column,
 * whole-row reference or placeholder is needed from the table, and its
 * table has no dropped column (build_physical_tlist's rule).
 */
static void
outer_physical_tlist(PlannerInfo *root, Path *path, Plan *plan)
{
	RelOptInfo *rel = path->parent;
	List	   *physical;
	ListCell   *lc;
	int			i;

	if (!IsA(plan, SeqScan) || rel->reloptkind != RELOPT_BASEREL ||
		rel->rtekind != RTE_RELATION)
		return;
	for (i = rel->min_attr; i <= 0; i++)
		if (!bms_is_empty(rel->attr_needed[i - rel->min_attr]))
			return;
	foreach(lc, root->placeholder_list)
	{
		PlaceHolderInfo *phinfo = (PlaceHolderInfo *) lfirst(lc);

		if (bms_nonempty_difference(phinfo->ph_needed, rel->relids) &&
			bms_is_subset(phinfo->ph_eval_at, rel->relids))
			return;
	}
	foreach(lc, plan->targetlist)
	{
		Var		   *var = (Var *) ((TargetEntry *) lfirst(lc))->expr;

		if (!IsA(var, Var) || var->varno != rel->relid || var->varlevelsup != 0 ||
			var->varattno <= 0)
			return;
	}
	/* NIL: a dropped or missing column, no physical list */
	physical = build_physical_tlist(root, rel);
	if (physical != NIL)
		plan->targetlist = physical;
}

/*
 * Turn the chosen path into a CustomScan with the outer plan as its child
 * (customjoin.h has the layout).
 */
static Plan *
plan_join_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	JoinShape  *shape = linitial(best_path->custom_private);
	bool		key_only = intVal(lsecond(best_path->custom_private));
	Plan	   *outer_plan = linitial(custom_plans);
	CustomScan *cscan = makeNode(CustomScan);
	List	   *matchq = clauses_of(shape->matchquals);
	List	   *filterq = clauses_of(shape->filterquals);
	List	   *scan_tlist = NIL;
	List	   *inner_cols = NIL;
	List	   *asof_outputs = NIL;
	List	   *asof_quals = NIL;
	Node	   *asof_limit = NULL;
	Index		inner_relid = shape->innerrel->relid;
	ListCell   *lc;
	int			nouter;
	SubqueryExprContext cxt;

	outer_physical_tlist(root, linitial(best_path->custom_paths), outer_plan);

	/* Outer columns first, as the child outputs them. */
	foreach(lc, outer_plan->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(tle->expr),
											 list_length(scan_tlist) + 1, NULL, false));
	}
	nouter = list_length(scan_tlist);

	/*
	 * Then the inner columns the join reads; a table join always lists its
	 * key column first, whose Var (renumbered by setrefs.c) tells the
	 * executor the table's range table index.
	 */
	if (shape->kind == GPUIDX_JOIN_TABLE)
	{
		Var		   *key = makeVar(inner_relid, shape->keyattno,
								  get_atttype(shape->tableoid, shape->keyattno), -1,
								  InvalidOid, 0);

		scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr *) key,
														 list_length(scan_tlist) + 1,
														 NULL, false));
		inner_cols = lappend_int(inner_cols, shape->keyattno);
	}
	foreach(lc, columns_of((Node *) list_make3(tlist, matchq, filterq)))
	{
		Node	   *col = lfirst(lc);

		if (find_column(scan_tlist, col) >= 0)
			continue;
		if (!IsA(col, Var) || ((Var *) col)->varno != inner_relid)
			elog(ERROR, "gpuidx: join column not found in the outer plan's output");
		scan_tlist = lappend(scan_tlist, makeTargetEntry((Expr *) copyObject(col),
														 list_length(scan_tlist) + 1,
														 NULL, false));
		inner_cols = lappend_int(inner_cols, ((Var *) col)->varattno);
	}

	if (shape->kind != GPUIDX_JOIN_TABLE)
	{
		/* The subquery's expressions, rewritten for the executor. */
		cxt.scan_tlist = list_copy_head(scan_tlist, nouter);
		foreach(lc, inner_cols)
		{
			TargetEntry *tle = get_tle_by_resno(shape->subquery->targetList, lfirst_int(lc));

			if (tle == NULL)
				elog(ERROR, "gpuidx: subquery output %d not found", lfirst_int(lc));
			asof_outputs = lappend(asof_outputs,
								   rewrite_subquery_expr((Node *) tle->expr, &cxt));
		}
		asof_quals = (List *) rewrite_subquery_expr((Node *) shape->asof_quals, &cxt);
		asof_limit = rewrite_subquery_expr(shape->asof_limit, &cxt);
		fix_opfuncids((Node *) asof_outputs);
		fix_opfuncids((Node *) asof_quals);
		fix_opfuncids(asof_limit);

		/*
		 * The table is not in the plan's range table: a change to it must
		 * still invalidate a cached plan.
		 */
		root->glob->relationOids = lappend_oid(root->glob->relationOids,
											   shape->tableoid);
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = filterq;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_concat(copyObject(shape->probes), copyObject(matchq));
	cscan->custom_scan_tlist = scan_tlist;
	/* In GpuidxJoinPrivate order (customjoin.h). */
	cscan->custom_private = list_make5(makeInteger(shape->kind),
									   makeInteger(shape->jointype),
									   makeInteger((int) shape->tableoid),
									   makeInteger((int) shape->indexoid),
									   makeInteger(shape->keyattno));
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(nouter));
	cscan->custom_private = lappend(cscan->custom_private, shape->strategies);
	cscan->custom_private = lappend(cscan->custom_private, inner_cols);
	cscan->custom_private = lappend(cscan->custom_private, makeInteger(key_only));
	cscan->custom_private = lappend(cscan->custom_private, asof_outputs);
	cscan->custom_private = lappend(cscan->custom_private, asof_quals);
	cscan->custom_private = lappend(cscan->custom_private, asof_limit);
	cscan->custom_private = lappend(cscan->custom_private,
									shape->asof_rte ? copyObject(shape->asof_rte) : NULL);
	cscan->methods = &gpuidx_join_methods;
	return &cscan->scan.plan;
}

/* Install the planner hook and register the plan node's methods. */
void
gpuidx_customjoin_init(void)
{
	RegisterCustomScanMethods(&gpuidx_join_methods);
	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = gpuidx_set_join_pathlist;
}
