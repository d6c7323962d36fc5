/*
 * batchqual.c - a table's quals on a gpuidx key as one batch of key
 * intervals.  The planner half finds the clauses a batch can use
 * (comparisons of the key with values known before the scan, = ANY(array),
 * BETWEEN, ORs of these, the usable conjuncts of an AND) and which of them
 * it answers exactly; the executor half evaluates them into a sorted list of
 * disjoint intervals (keyinterval.c).  GpuIndexScan (customscan_*.c) and
 * GpuIndexAgg (customagg_*.c) both use it, so they agree on every clause.
 */
#include "gpuidx.h"
#include "batchqual.h"

#include "access/stratnum.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

/* ---------- planner ---------- */

/* Does node compute the index's key (its column, or its expression)? */
static bool
is_index_key(Node *node, IndexOptInfo *index, Index relid)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL)
		return false;
	if (index->indexkeys[0] != 0)
		return IsA(node, Var) &&
			((Var *) node)->varno == relid &&
			((Var *) node)->varattno == index->indexkeys[0] &&
			((Var *) node)->varlevelsup == 0;
	return index->indexprs != NIL && equal(node, linitial(index->indexprs));
}

/*
 * Can node be evaluated before scanning relid: no Vars of relid, nothing
 * volatile?  Vars of other relations are allowed; their relids are added to
 * *outer (the path then needs them as parameters from a nested loop).
 */
static bool
is_outer_constant(PlannerInfo *root, Node *node, Index relid, Relids *outer)
{
	Relids		varnos = pull_varnos(root, node);

	if (bms_is_member(relid, varnos) || contain_volatile_functions(node))
		return false;
	*outer = bms_add_members(*outer, varnos);
	return true;
}

/* Strategy of an operator in the index's family, 0 if not there. */
static int
op_strategy(Oid opno, IndexOptInfo *index)
{
	return get_op_opfamily_strategy(opno, index->opfamily[0]);
}

/*
 * The part of clause a batch on this index can use, or NULL: comparisons of
 * the key with values known before the scan, key = ANY(array), ORs whose
 * every arm is usable, and the usable conjuncts of an AND (dropping the
 * others only widens the batch; the full qual is rechecked).
 */
Node *
gpuidx_batch_clause(PlannerInfo *root, Node *clause, IndexOptInfo *index,
			 Index relid, Relids *outer)
{
	if (IsA(clause, RestrictInfo))
		clause = (Node *) ((RestrictInfo *) clause)->clause;
	if (IsA(clause, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) clause;
		Node	   *l,
				   *r;

		if (list_length(op->args) != 2)
			return NULL;
		l = linitial(op->args);
		r = lsecond(op->args);
		if (is_index_key(l, index, relid) && op_strategy(op->opno, index) != 0 &&
			is_outer_constant(root, r, relid, outer))
			return clause;
		if (is_index_key(r, index, relid) && OidIsValid(get_commutator(op->opno)) &&
			op_strategy(get_commutator(op->opno), index) != 0 &&
			is_outer_constant(root, l, relid, outer))
			return clause;
		return NULL;
	}
	if (IsA(clause, ScalarArrayOpExpr))
	{
		ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) clause;

		if (saop->useOr &&
			op_strategy(saop->opno, index) == BTEqualStrategyNumber &&
			is_index_key(linitial(saop->args), index, relid) &&
			is_outer_constant(root, lsecond(saop->args), relid, outer))
			return clause;
		return NULL;
	}
	if (is_orclause(clause) || is_andclause(clause))
	{
		List	   *parts = NIL;
		ListCell   *lc;
		bool		whole = true;

		foreach(lc, ((BoolExpr *) clause)->args)
		{
			Node	   *arg = lfirst(lc);
			Node	   *part = gpuidx_batch_clause(root, arg, index, relid, outer);

			if (IsA(arg, RestrictInfo))
				arg = (Node *) ((RestrictInfo *) arg)->clause;
			if (part)
				parts = lappend(parts, part);
			else if (is_orclause(clause))
				return NULL;	/* an unusable arm: the OR can match anything */
			whole = whole && part == arg;
		}
		if (parts == NIL)
			return NULL;
		if (whole)
			return clause;		/* exact: the caller may skip its recheck */
		if (list_length(parts) == 1)
			return linitial(parts);
		return is_orclause(clause) ? (Node *) make_orclause(parts) :
			(Node *) make_andclause(parts);
	}
	return NULL;
}

/* Rough number of intervals a clause contributes (for costing). */
double
gpuidx_clause_probes(Node *clause)
{
	if (IsA(clause, RestrictInfo))
		clause = (Node *) ((RestrictInfo *) clause)->clause;
	if (IsA(clause, ScalarArrayOpExpr))
		return Max(estimate_array_length(lsecond(((ScalarArrayOpExpr *) clause)->args)), 1);
	if (IsA(clause, BoolExpr))
	{
		double		n = 0;
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) clause)->args)
			n += gpuidx_clause_probes(lfirst(lc));
		return Max(n, 1);
	}
	return 1;
}

/*
 * The restriction clauses of rel a batch on index can use (*batch: the
 * usable parts) and the RestrictInfos it answers exactly (*exact: no
 * recheck needed).  Join clauses and pseudoconstant quals are not looked at.
 */
void
gpuidx_restriction_batch(PlannerInfo *root, RelOptInfo *rel,
						 IndexOptInfo *index, List **batch, List **exact)
{
	ListCell   *lc;

	*batch = NIL;
	*exact = NIL;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Relids		outer = NULL;
		Node	   *part;

		if (rinfo->pseudoconstant)
			continue;
		part = gpuidx_batch_clause(root, (Node *) rinfo->clause, index, rel->relid, &outer);
		if (part && bms_is_empty(outer))
		{
			*batch = lappend(*batch, part);
			if (part == (Node *) rinfo->clause)
				*exact = lappend(*exact, rinfo);
		}
	}
}

/* ---------- executor ---------- */

/* Can node be evaluated once per scan (no Vars, nothing volatile)? */
static bool
is_scan_constant(Node *node)
{
	return !contain_var_clause(node) && !contain_volatile_functions(node);
}

/* Prepare one batch clause (as planned) for evaluation. */
static GpuidxBatchTerm *
prepare_term(Node *clause, PlanState *ps, Oid opfamily)
{
	GpuidxBatchTerm  *term = palloc0(sizeof(GpuidxBatchTerm));

	if (IsA(clause, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) clause;
		Node	   *l = linitial(op->args);
		Node	   *r = lsecond(op->args);

		term->kind = 'c';
		if (is_scan_constant(r))
		{
			term->strategy = get_op_opfamily_strategy(op->opno, opfamily);
			term->value = ExecInitExpr((Expr *) r, ps);
			term->value_type = exprType(r);
		}
		else
		{
			/* Key on the right: use the commutator, which has it on the left. */
			term->strategy = get_op_opfamily_strategy(get_commutator(op->opno), opfamily);
			term->value = ExecInitExpr((Expr *) l, ps);
			term->value_type = exprType(l);
		}
	}
	else if (IsA(clause, ScalarArrayOpExpr))
	{
		Node	   *arr = lsecond(((ScalarArrayOpExpr *) clause)->args);

		term->kind = 'a';
		term->value = ExecInitExpr((Expr *) arr, ps);
		term->value_type = get_element_type(exprType(arr));
	}
	else
	{
		BoolExpr   *b = (BoolExpr *) clause;
		ListCell   *lc;

		term->kind = is_orclause(clause) ? '|' : '&';
		foreach(lc, b->args)
			term->children = lappend(term->children,
									 prepare_term(lfirst(lc), ps, opfamily));
	}
	return term;
}

/* Evaluate a prepared term into the key intervals it admits. */
static GpuidxIntervals
eval_term(GpuidxBatchTerm *term, ExprContext *econtext)
{
	bool		isnull;
	Datum		d;

	if (term->kind == '|' || term->kind == '&')
	{
		ListCell   *lc;
		GpuidxIntervals acc;
		bool		first = true;

		acc = gpuidx_intervals_none();
		foreach(lc, term->children)
		{
			GpuidxIntervals x = eval_term(lfirst(lc), econtext);

			if (first)
				acc = x;
			else
				acc = term->kind == '|' ? gpuidx_intervals_union(acc, x) : gpuidx_intervals_intersect(acc, x);
			first = false;
		}
		return acc;
	}

	d = ExecEvalExprSwitchContext(term->value, econtext, &isnull);
	if (isnull)
		return gpuidx_intervals_none();	/* strict: NULL matches nothing */
	if (term->kind == 'a')
	{
		int64		n;
		int64	   *vals = gpuidx_array_keys(d, &n);

		return gpuidx_intervals_points(vals, n);
	}
	else
	{
		int64		v = gpuidx_datum_to_key(d, term->value_type);
		int64		lo,
					hi;

		if (!gpuidx_strategy_interval(term->strategy, v, &lo, &hi))
			return gpuidx_intervals_none();
		return gpuidx_intervals_single(lo, hi);
	}
}

/* Prepare planned batch clauses (ANDed) for evaluation: a list of terms. */
List *
gpuidx_prepare_batch(List *clauses, PlanState *ps, Oid opfamily)
{
	List	   *terms = NIL;
	ListCell   *lc;

	foreach(lc, clauses)
		terms = lappend(terms, prepare_term(lfirst(lc), ps, opfamily));
	return terms;
}

/* Evaluate prepared terms (ANDed) into the sorted, disjoint key intervals. */
GpuidxIntervals
gpuidx_eval_batch(List *terms, ExprContext *econtext)
{
	GpuidxIntervals iv = gpuidx_intervals_single(PG_INT64_MIN, PG_INT64_MAX);
	ListCell   *lc;

	foreach(lc, terms)
		iv = gpuidx_intervals_intersect(iv, eval_term(lfirst(lc), econtext));
	return iv;
}
