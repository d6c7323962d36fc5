/*
 * customjoin_exec.c - GpuIndexJoin, executor side (the planner side is
 * customjoin_plan.c; customjoin.h has the plan node's layout).
 *
 * Outer rows are gathered in chunks of gpuidx.batch_chunk.  Each row's
 * probe expressions become one key interval (a table join) or one bound (an
 * as-of join); the chunk's probes go to the engine as one batch (a small
 * one is answered on the host, hostsearch.c).  Then:
 *
 *   - table join: the hits of the whole chunk are sorted by heap TID and
 *     visited a page at a time under the snapshot (heapvisit.c); a row that
 *     needs only the key and the index's INCLUDE columns comes from the
 *     image when its page is all-visible.
 *     Each visible (outer row, table row) pair that passes the match quals
 *     is joined; left joins then add the unmatched outer rows, anti joins
 *     return only those, semi joins return an outer row at its first match;
 *   - as-of join: per outer row, in outer order, the entries are walked from
 *     the answer's run downwards (predecessor) or upwards (successor); each
 *     is fetched with the snapshot and tested against the subquery's other
 *     quals until LIMIT rows are found, exactly the rows the subquery would
 *     return.
 */
#include "gpuidx.h"
#include "customjoin.h"
#include "heapvisit.h"
#include "keyinterval.h"
#include "outerpage.h"
#include "service.h"

#include "access/heapam.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/pg_am.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

/* Where the node is in its work. */
typedef enum JoinPhase
{
	PHASE_GATHER,				/* read the next chunk of outer rows */
	PHASE_PAIRS,				/* return joined pairs (table join) */
	PHASE_ASOF,					/* walk per outer row (as-of join) */
	PHASE_WALK,					/* walk per outer row (key-only table join) */
	PHASE_UNMATCHED,			/* return unmatched outer rows (left, anti) */
	PHASE_DONE
} JoinPhase;

typedef struct GpuidxJoinState
{
	CustomScanState css;
	GpuidxJoinKind kind;
	JoinType	jointype;
	Relation	table;
	Relation	index;
	AttrNumber	keyattno;
	Oid			keytype;
	Index		inner_rti;		/* the table's range table index (EPQ) */
	int			nouter;			/* outer columns of the scan tuple */
	int			ninner;			/* inner columns after them */
	int		   *inner_cols;		/* table attno or subquery resno, each */
	int			inner_max_attno;	/* table join: the highest one */
	bool		key_only;		/* all-visible rows come from the image */
	int			ninclude;		/* the index's INCLUDE columns ... */
	GpuidxLayout layout;		/* ... their layout in the image's rows (a
								 * copy: a relcache rebuild frees the
								 * index's) ... */
	AttrNumber *include_attno;	/* ... and the table column of each */
	int		   *inner_include;	/* table join, per inner column: its INCLUDE
								 * column, -1 if none */
	bool		reads_include;	/* table join: some inner column is one */
	int			nprobes;
	ExprState **probe_exprs;
	int		   *strategies;
	Oid		   *probe_types;
	int		   *probe_cols;		/* per probe: the outer column it is, or -1
								 * (an expression) */
	bool		probes_are_columns; /* every probe is an outer column: read
									 * from the outer row, no evaluation */
	int			probe_natts;	/* probes_are_columns: the outer columns to
								 * deform to read them */
	int			nkept;			/* the outer columns read after the gather
								 * (output, quals, as-of expressions), kept
								 * with each row; the others are NULL in the
								 * scan tuple */
	int		   *kept_cols;		/* each kept column, ascending */
	int			kept_natts;		/* the highest kept column + 1 */
	ExprState  *matchqual;
	/* as-of */
	ExprState **asof_outputs;
	ExprState  *asof_qual;
	ExprState  *asof_limit_expr;
	int64		asof_limit;		/* -1: no limit */
	TupleTableSlot *key_slot;	/* a virtual row: key and INCLUDE columns */
	bool		asof_direct;	/* key-only, inner or left, no subquery or
								 * match quals, every output the key or an
								 * INCLUDE column: with LIMIT 1 a row whose
								 * answer is on an all-visible page takes the
								 * engine's entry itself (asof_direct_row) */
	int		   *direct_src;		/* per inner column: -1 the key, else its
								 * INCLUDE column */
	bool		direct_reads_key;	/* an output is the key (else the key is
									 * read only for a bound) */
	bool		direct_reads_row;	/* an output is an INCLUDE column */
	bool		direct_chunk;	/* this chunk may take direct answers */
	GpuidxVisMapCopy direct_vm; /* the visibility map as the chunk found it
								 * after the image was taken */
	GpuidxJoinSink *sink;		/* GpuIndexAgg above takes the direct
								 * answers (customjoin.h), or NULL */

	PlanState  *outer;
	TupleDesc	outer_desc;		/* the outer plan's output */
	GpuidxOuterPage outer_page; /* its heap pages' rows read in place */
	IndexFetchTableData *fetch;
	TupleTableSlot *table_slot;
	GpuidxVisMap vismap;		/* the table's visibility map pages, pinned */
	GpuidxImageData *img;
	ItemPointerData cur_ctid;	/* the ctid column's value */

	JoinPhase	phase;
	bool		outer_done;
	MemoryContext chunk_cxt;	/* outer rows and hits of one chunk */
	Datum	   *row_values;		/* nkept a row: the gathered outer rows'
								 * kept columns (NULL when none is kept) */
	bool	   *row_nulls;
	bool		walk_rows;		/* key-only table join on a mostly
								 * all-visible table: walk each row's hits
								 * in row order, no sort by TID */
	int64		nrows;
	int64		rows_cap;
	char	   *scratch;		/* the arrays' block, when the backend's
								 * scratch (scratch.c) */
	int64		gather_valid;	/* the chunk's rows with a probe so far ... */
	bool		gather_points;	/* ... and whether each is one key */
	bool	   *matched;		/* per row */
	int64	   *row_lo,			/* per row: its interval or bound ... */
			   *row_hi;
	bool	   *row_valid;		/* ... unless NULL or empty */
	uint64	   *first,			/* per row: the engine's answer */
			   *last;

	/* table join: hits sorted by TID, and the page being returned */
	int64		nhits;
	int64		hit_next;
	uint64	   *hit_tid;
	uint64	   *hit_idx;		/* -> hit_row, hit_pos */
	int64	   *hit_row;
	int64	   *hit_pos;		/* key-only: the hit's image position */
	Buffer		page_buf;
	int64		page_n;
	int64		page_i;
	int64		page_cap;
	int64	   *page_hit;		/* hit of each visible entry of the page */
	OffsetNumber *page_off;		/* its tuple's offset (HOT member) */
	bool		page_from_image;	/* all-visible: no heap tuple */

	/* as-of join: the walk of the current row */
	int64		asof_row;
	int64		asof_pos;
	int64		asof_found;
	bool		asof_started;

	/* unmatched rows */
	int64		emit_row;

	/* EvalPlanQual */
	bool		epq_have_outer;

	/* EXPLAIN ANALYZE */
	GiEngineKind engine;
	int64		stat_batches;
	int64		stat_host_batches;
	int64		stat_probes;
	int64		stat_hits;
	int64		stat_fetches;
	int64		stat_direct;	/* as-of rows asof_direct_row answered */
	int64		stat_sunk;		/* of those, rows handed to the sink */
	double		ms_outer;		/* reading outer rows, taking their probes */
	double		ms_search;
	double		ms_heap;

	/* the output when it is plain columns of the scan tuple and no qual */
	bool		plain_output;
	int			noutput;
	int		   *output_cols;	/* per output column: its scan tuple column */
} GpuidxJoinState;

static void begin_join(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_join(CustomScanState *node);
static void end_join(CustomScanState *node);
static void rescan_join(CustomScanState *node);
static void explain_join(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods gpuidx_join_exec_methods = {
	.CustomName = "GpuIndexJoin",
	.BeginCustomScan = begin_join,
	.ExecCustomScan = exec_join,
	.EndCustomScan = end_join,
	.ReScanCustomScan = rescan_join,
	.ExplainCustomScan = explain_join,
};

/* Create the executor state of a GpuIndexJoin. */
static Node *
create_join_state(CustomScan *cscan)
{
	GpuidxJoinState *state = palloc0(sizeof(GpuidxJoinState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &gpuidx_join_exec_methods;
	return (Node *) state;
}

const CustomScanMethods gpuidx_join_methods = {
	.CustomName = "GpuIndexJoin",
	.CreateCustomScanState = create_join_state,
};

/*
 * Find the table columns of the index's INCLUDE columns, and which of them
 * each inner column of a table join is (key-only rows take those from the
 * image's rows), and the highest table column the join reads.
 */
static void
map_include_columns(GpuidxJoinState *state)
{
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(state->index);
	int			c,
				j;

	state->ninclude = IndexRelationGetNumberOfAttributes(state->index) - nkeys;
	state->layout = *gpuidx_layout(state->index);
	state->include_attno = palloc(sizeof(AttrNumber) * Max(state->ninclude, 1));
	for (c = 0; c < state->ninclude; c++)
		state->include_attno[c] = state->index->rd_index->indkey.values[nkeys + c];
	state->inner_include = palloc(sizeof(int) * Max(state->ninner, 1));
	for (j = 0; j < state->ninner; j++)
	{
		if (state->kind == GPUIDX_JOIN_TABLE)
			state->inner_max_attno = Max(state->inner_max_attno, state->inner_cols[j]);
		state->inner_include[j] = -1;
		if (state->kind != GPUIDX_JOIN_TABLE || state->inner_cols[j] == state->keyattno)
			continue;
		for (c = 0; c < state->ninclude; c++)
			if (state->include_attno[c] == state->inner_cols[j])
				state->inner_include[j] = c;
		if (state->inner_include[j] >= 0)
			state->reads_include = true;
	}
}

/*
 * Decide whether the as-of join may answer rows directly from the engine's
 * entries (asof_direct): key-only, an inner or left join with no quals
 * (no_quals), and every output of the subquery a plain column of the table
 * that the image holds (the key, or an INCLUDE column).
 */
static void
init_asof_direct(GpuidxJoinState *state, List *outputs, bool no_quals)
{
	ListCell   *lc;
	int			j = 0;

	state->asof_direct = state->key_only && no_quals &&
		(state->jointype == JOIN_INNER || state->jointype == JOIN_LEFT) &&
		list_length(outputs) == state->ninner;
	state->direct_src = palloc(sizeof(int) * Max(state->ninner, 1));
	foreach(lc, outputs)
	{
		Var		   *var = (Var *) lfirst(lc);
		int			src = -2,
					c;

		if (IsA(var, Var) && var->varno == INNER_VAR && var->varlevelsup == 0)
		{
			if (var->varattno == state->keyattno)
				src = -1;
			for (c = 0; c < state->ninclude; c++)
				if (state->include_attno[c] == var->varattno)
					src = c;
		}
		if (src == -2)
			state->asof_direct = false;
		else if (src == -1)
			state->direct_reads_key = true;
		else
			state->direct_reads_row = true;
		state->direct_src[j++] = src;
	}
}

/*
 * Which probe expressions are plain outer columns (a Var of the scan tuple
 * within its outer part): those are read from the kept row as they are.
 */
static void
probe_columns(GpuidxJoinState *state, List *exprs)
{
	int			i;

	state->probe_cols = palloc(sizeof(int) * Max(state->nprobes, 1));
	state->probes_are_columns = true;
	for (i = 0; i < state->nprobes; i++)
	{
		Var		   *var = (Var *) list_nth(exprs, i);

		state->probe_cols[i] = -1;
		if (IsA(var, Var) && var->varno == INDEX_VAR && var->varlevelsup == 0 &&
			var->varattno >= 1 && var->varattno <= state->nouter)
		{
			state->probe_cols[i] = var->varattno - 1;
			state->probe_natts = Max(state->probe_natts, var->varattno);
		}
		else
			state->probes_are_columns = false;
	}
}

/* What mark_outer_columns walks for: the kept flags of the outer columns. */
typedef struct OuterColumnsWalk
{
	int			varno;			/* INDEX_VAR or OUTER_VAR: the scan tuple */
	int			nouter;
	bool	   *kept;
} OuterColumnsWalk;

/* Mark the outer columns of the scan tuple that an expression reads. */
static bool
mark_outer_columns(Node *node, OuterColumnsWalk *walk)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;

		if (var->varno == walk->varno && var->varlevelsup == 0)
		{
			if (var->varattno == 0)
				memset(walk->kept, true, sizeof(bool) * walk->nouter);
			else if (var->varattno >= 1 && var->varattno <= walk->nouter)
				walk->kept[var->varattno - 1] = true;
		}
		return false;
	}
	return expression_tree_walker(node, mark_outer_columns, (void *) walk);
}

/*
 * Which outer columns are read after the chunk was gathered: by the plan's
 * target list and quals and the match quals (over the scan tuple,
 * INDEX_VAR), and by an as-of join's subquery outputs, quals and LIMIT
 * (the scan tuple as OUTER_VAR).  Only those are kept with each gathered
 * row: the probes are read from the outer row as it comes, so a join whose
 * output needs no outer column (say an aggregate over the as-of values)
 * keeps nothing per row.
 */
static void
kept_columns(GpuidxJoinState *state, CustomScan *cscan)
{
	List	   *priv = cscan->custom_private;
	OuterColumnsWalk walk;
	int			i;

	walk.nouter = state->nouter;
	walk.kept = palloc0(sizeof(bool) * Max(state->nouter, 1));
	walk.varno = INDEX_VAR;
	mark_outer_columns((Node *) cscan->scan.plan.targetlist, &walk);
	mark_outer_columns((Node *) cscan->scan.plan.qual, &walk);
	mark_outer_columns((Node *) list_copy_tail(cscan->custom_exprs, state->nprobes), &walk);
	if (state->kind != GPUIDX_JOIN_TABLE)
	{
		walk.varno = OUTER_VAR;
		mark_outer_columns((Node *) list_nth(priv, GPUIDX_CJ_ASOF_OUTPUTS), &walk);
		mark_outer_columns((Node *) list_nth(priv, GPUIDX_CJ_ASOF_QUALS), &walk);
		mark_outer_columns((Node *) list_nth(priv, GPUIDX_CJ_ASOF_LIMIT), &walk);
	}
	state->nkept = 0;
	state->kept_cols = palloc(sizeof(int) * Max(state->nouter, 1));
	for (i = 0; i < state->nouter; i++)
		if (walk.kept[i])
			state->kept_cols[state->nkept++] = i;
	state->kept_natts = state->nkept > 0 ? state->kept_cols[state->nkept - 1] + 1 : 0;
}

/*
 * Whether the node's output is plain columns of the scan tuple with no
 * qual (say the as-of value an aggregate above reads): then exec_join
 * copies those columns itself instead of running ExecScan's projection.
 */
static void
plain_output(GpuidxJoinState *state, CustomScan *cscan)
{
	List	   *tlist = cscan->scan.plan.targetlist;
	int			natts = state->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor->natts;
	ListCell   *lc;
	int			i = 0;

	state->plain_output = cscan->scan.plan.qual == NIL;
	state->noutput = list_length(tlist);
	state->output_cols = palloc(sizeof(int) * Max(state->noutput, 1));
	foreach(lc, tlist)
	{
		Var		   *var = (Var *) ((TargetEntry *) lfirst(lc))->expr;

		if (!IsA(var, Var) || var->varno != INDEX_VAR || var->varlevelsup != 0 ||
			var->varattno < 1 || var->varattno > natts)
		{
			state->plain_output = false;
			break;
		}
		state->output_cols[i++] = var->varattno - 1;
	}
}

/* Open the table and index, prepare the expressions, start the outer plan. */
static void
begin_join(CustomScanState *node, EState *estate, int eflags)
{
	GpuidxJoinState *state = (GpuidxJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *strategies = list_nth(priv, GPUIDX_CJ_STRATEGIES);
	List	   *inner_cols = list_nth(priv, GPUIDX_CJ_INNER_COLS);
	RangeTblEntry *asof_rte = list_nth(priv, GPUIDX_CJ_ASOF_RTE);
	TargetEntry *key_tle;
	ListCell   *lc;
	int			i;

	state->kind = (GpuidxJoinKind) intVal(list_nth(priv, GPUIDX_CJ_KIND));
	state->jointype = (JoinType) intVal(list_nth(priv, GPUIDX_CJ_JOINTYPE));
	state->keyattno = (AttrNumber) intVal(list_nth(priv, GPUIDX_CJ_KEY_ATTNO));
	state->nouter = intVal(list_nth(priv, GPUIDX_CJ_NOUTER));
	state->key_only = intVal(list_nth(priv, GPUIDX_CJ_KEY_ONLY)) && gpuidx_can_skip_heap();

	/*
	 * The as-of subquery's table is not in the plan's range table: the
	 * executor neither locked it nor checked the user's right to read it.
	 */
	if (asof_rte)
		ExecCheckRTPerms(list_make1(asof_rte), true);
	state->table = table_open((Oid) intVal(list_nth(priv, GPUIDX_CJ_TABLE)), AccessShareLock);
	state->index = index_open((Oid) intVal(list_nth(priv, GPUIDX_CJ_INDEX)), AccessShareLock);
	state->keytype = TupleDescAttr(RelationGetDescr(state->index), 0)->atttypid;

	/*
	 * A key-only table join on a table whose pages are mostly all-visible
	 * answers nearly every hit from the image: walking the hits row by row
	 * beats sorting them into heap order.
	 */
	state->walk_rows = state->kind == GPUIDX_JOIN_TABLE && state->key_only &&
		state->table->rd_rel->relpages > 0 &&
		state->table->rd_rel->relallvisible >= state->table->rd_rel->relpages / 2;
	key_tle = list_nth(cscan->custom_scan_tlist, state->nouter < list_length(cscan->custom_scan_tlist) ?
					   state->nouter : 0);
	if (state->kind == GPUIDX_JOIN_TABLE && IsA(key_tle->expr, Var))
		state->inner_rti = ((Var *) key_tle->expr)->varno;

	state->ninner = list_length(inner_cols);
	state->inner_cols = palloc(sizeof(int) * Max(state->ninner, 1));
	i = 0;
	foreach(lc, inner_cols)
		state->inner_cols[i++] = lfirst_int(lc);
	map_include_columns(state);

	state->outer = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(state->outer);
	state->outer_desc = ExecGetResultType(state->outer);
	if (gpuidx_outer_in_place)
		gpuidx_outer_page_init(&state->outer_page, state->outer, estate);
	state->table_slot = table_slot_create(state->table, &estate->es_tupleTable);
	state->key_slot = ExecAllocTableSlot(&estate->es_tupleTable,
										 RelationGetDescr(state->table), &TTSOpsVirtual);
	gpuidx_vismap_init(&state->vismap, state->table);
	state->page_buf = InvalidBuffer;
	state->phase = PHASE_GATHER;
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	/* probes, then match quals (custom_exprs, over the scan tuple) */
	state->nprobes = list_length(strategies);
	state->probe_exprs = palloc(sizeof(ExprState *) * state->nprobes);
	state->strategies = palloc(sizeof(int) * state->nprobes);
	state->probe_types = palloc(sizeof(Oid) * state->nprobes);
	for (i = 0; i < state->nprobes; i++)
	{
		Expr	   *e = list_nth(cscan->custom_exprs, i);

		state->probe_exprs[i] = ExecInitExpr(e, &node->ss.ps);
		state->strategies[i] = list_nth_int(strategies, i);
		state->probe_types[i] = getBaseType(exprType((Node *) e));
	}
	probe_columns(state, cscan->custom_exprs);
	kept_columns(state, cscan);
	state->matchqual = ExecInitQual(list_copy_tail(cscan->custom_exprs, state->nprobes),
									&node->ss.ps);
	if (state->kind != GPUIDX_JOIN_TABLE)
	{
		List	   *outputs = list_nth(priv, GPUIDX_CJ_ASOF_OUTPUTS);
		Expr	   *limit = list_nth(priv, GPUIDX_CJ_ASOF_LIMIT);

		state->asof_outputs = palloc(sizeof(ExprState *) * Max(state->ninner, 1));
		i = 0;
		foreach(lc, outputs)
			state->asof_outputs[i++] = ExecInitExpr(lfirst(lc), &node->ss.ps);
		state->asof_qual = ExecInitQual(list_nth(priv, GPUIDX_CJ_ASOF_QUALS), &node->ss.ps);
		state->asof_limit_expr = limit ? ExecInitExpr(limit, &node->ss.ps) : NULL;
		state->asof_limit = -2;	/* evaluated at the first row */
		init_asof_direct(state, outputs, list_nth(priv, GPUIDX_CJ_ASOF_QUALS) == NIL &&
						 list_length(cscan->custom_exprs) == state->nprobes);
	}
	state->fetch = table_index_fetch_begin(state->table);
	plain_output(state, cscan);
	state->chunk_cxt = AllocSetContextCreate(estate->es_query_cxt, "gpuidx join chunk",
											 ALLOCSET_DEFAULT_SIZES);
}

/* Fill the scan tuple's outer columns from an outer row, inner ones NULL. */
static void
store_outer(GpuidxJoinState *state, TupleTableSlot *outer)
{
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	int			natts = scan->tts_tupleDescriptor->natts;

	ExecClearTuple(scan);
	slot_getallattrs(outer);
	memcpy(scan->tts_values, outer->tts_values, sizeof(Datum) * state->nouter);
	memcpy(scan->tts_isnull, outer->tts_isnull, sizeof(bool) * state->nouter);
	memset(scan->tts_isnull + state->nouter, true, sizeof(bool) * (natts - state->nouter));
	ExecStoreVirtualTuple(scan);
}

/* Restore gathered row r into the scan tuple (inner columns NULL). */
static void
restore_row(GpuidxJoinState *state, int64 r)
{
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	int			natts = scan->tts_tupleDescriptor->natts;

	ExecClearTuple(scan);
	memset(scan->tts_isnull, true, sizeof(bool) * natts);
	if (state->row_values)
	{
		const Datum *values = state->row_values + r * state->nkept;
		const bool *nulls = state->row_nulls + r * state->nkept;
		int			i;

		for (i = 0; i < state->nkept; i++)
		{
			scan->tts_values[state->kept_cols[i]] = values[i];
			scan->tts_isnull[state->kept_cols[i]] = nulls[i];
		}
	}
	ExecStoreVirtualTuple(scan);
}

/*
 * Keep outer row n of the chunk: the values of its kept columns
 * (by-reference ones copied into the chunk's memory), so that restoring it
 * is a copy of Datums.  Only called when some column is kept.
 */
static void
keep_row(GpuidxJoinState *state, int64 n, TupleTableSlot *slot)
{
	Datum	   *values = state->row_values + n * state->nkept;
	bool	   *nulls = state->row_nulls + n * state->nkept;
	int			i;

	slot_getsomeattrs(slot, state->kept_natts);
	for (i = 0; i < state->nkept; i++)
	{
		int			c = state->kept_cols[i];
		Form_pg_attribute att = TupleDescAttr(state->outer_desc, c);

		nulls[i] = slot->tts_isnull[c];
		values[i] = nulls[i] || att->attbyval ? slot->tts_values[c] :
			datumCopy(slot->tts_values[c], false, att->attlen);
	}
}

/*
 * The interval (table join) or bound (as-of, in lo) an outer row asks for,
 * from its probes: a probe that is an outer column is read from the row's
 * values / nulls (the outer slot's or the scan tuple's), any other probe
 * expression is evaluated over the scan tuple (which then holds the row);
 * false if it can match nothing (a NULL, or an empty intersection).
 */
static bool
eval_probes(GpuidxJoinState *state, const Datum *values, const bool *nulls,
			int64 *lo, int64 *hi)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	int			i;

	*lo = PG_INT64_MIN;
	*hi = PG_INT64_MAX;
	econtext->ecxt_scantuple = state->css.ss.ss_ScanTupleSlot;
	for (i = 0; i < state->nprobes; i++)
	{
		bool		isnull;
		Datum		d;
		int64		v,
					l,
					h;

		if (state->probe_cols[i] >= 0)
		{
			/* an outer column, as given */
			isnull = nulls[state->probe_cols[i]];
			d = values[state->probe_cols[i]];
		}
		else
			d = ExecEvalExprSwitchContext(state->probe_exprs[i], econtext, &isnull);

		if (isnull)
			return false;		/* strict operators: NULL matches nothing */
		v = gpuidx_datum_to_key(d, state->probe_types[i]);
		if (!gpuidx_strategy_interval(state->strategies[i], v, &l, &h))
			return false;
		*lo = Max(*lo, l);
		*hi = Min(*hi, h);
	}
	/* as-of: the walk starts at hi (predecessor) or lo and stops past the other */
	return *lo <= *hi;
}

/* Bytes a row takes in the chunk's arrays. */
static Size
row_bytes(GpuidxJoinState *state)
{
	return sizeof(int64) * 4 + (sizeof(Datum) + sizeof(bool)) * state->nkept + sizeof(bool) * 2;
}

/*
 * Point the chunk's per-row arrays into block, laid out for cap rows (the
 * 8-byte arrays first, so each is aligned).
 */
static void
carve_rows(GpuidxJoinState *state, char *block, int64 cap)
{
	state->row_lo = (int64 *) block;
	state->row_hi = state->row_lo + cap;
	state->first = (uint64 *) (state->row_hi + cap);
	state->last = state->first + cap;
	block = (char *) (state->last + cap);
	state->row_values = NULL;
	state->row_nulls = NULL;
	if (state->nkept > 0)
	{
		state->row_values = (Datum *) block;
		block += sizeof(Datum) * cap * state->nkept;
	}
	state->matched = (bool *) block;
	state->row_valid = state->matched + cap;
	if (state->nkept > 0)
		state->row_nulls = state->row_valid + cap;
}

/*
 * reserve_rows when the arrays are too small.  The first time, the
 * backend's scratch block (scratch.c: no fresh pages to fault in) for a
 * whole chunk, else memory of the query's for the planner's estimate of
 * the outer rows; more rows move the arrays to a block twice as large.
 */
static pg_noinline void
grow_rows(GpuidxJoinState *state, int64 n)
{
	int64		m = state->rows_cap;
	int64		cap;
	char	   *block;
	char	   *old_block = (char *) state->row_lo;	/* carve_rows's start */
	char	   *old_scratch = state->scratch;
	int64	   *old_lo = state->row_lo,
			   *old_hi = state->row_hi;
	uint64	   *old_first = state->first,
			   *old_last = state->last;
	bool	   *old_matched = state->matched,
			   *old_valid = state->row_valid,
			   *old_nulls = state->row_nulls;
	Datum	   *old_values = state->row_values;
	MemoryContext cxt;

	if (m == 0 && (block = gpuidx_scratch_take(GPUIDX_SCRATCH_JOIN_ROWS, row_bytes(state) * Max(gpuidx_batch_chunk, n))) != NULL)
	{
		state->scratch = block;
		state->rows_cap = Max(gpuidx_batch_chunk, n);
		carve_rows(state, block, state->rows_cap);
		return;
	}

	/*
	 * Start at the planner's estimate of the outer rows: growing by doubling
	 * copies the arrays and touches fresh pages at every step.
	 */
	cap = Max(m * 2, 1024);
	if (m == 0)
		cap = Max(cap, (int64) Min(state->outer->plan->plan_rows * 1.1, 1e12));
	cap = Max(Min(cap, (int64) gpuidx_batch_chunk), n);
	cxt = MemoryContextSwitchTo(state->css.ss.ps.state->es_query_cxt);
	block = gpuidx_alloc_huge(row_bytes(state) * cap);
	MemoryContextSwitchTo(cxt);
	carve_rows(state, block, cap);
	state->scratch = NULL;
	state->rows_cap = cap;
	if (m == 0)
		return;
	memcpy(state->row_lo, old_lo, sizeof(int64) * m);
	memcpy(state->row_hi, old_hi, sizeof(int64) * m);
	memcpy(state->first, old_first, sizeof(uint64) * m);
	memcpy(state->last, old_last, sizeof(uint64) * m);
	memcpy(state->matched, old_matched, sizeof(bool) * m);
	memcpy(state->row_valid, old_valid, sizeof(bool) * m);
	if (state->nkept > 0)
	{
		memcpy(state->row_values, old_values, sizeof(Datum) * m * state->nkept);
		memcpy(state->row_nulls, old_nulls, sizeof(bool) * m * state->nkept);
	}
	if (old_scratch)
		gpuidx_scratch_give(GPUIDX_SCRATCH_JOIN_ROWS, old_scratch);
	else
		pfree(old_block);
}

/* Make the per-row arrays of a chunk hold at least n rows. */
static inline void
reserve_rows(GpuidxJoinState *state, int64 n)
{
	if (n > state->rows_cap)
		grow_rows(state, n);
}

/* Drop the pinned heap page, if any. */
static void
release_page(GpuidxJoinState *state)
{
	if (BufferIsValid(state->page_buf))
		ReleaseBuffer(state->page_buf);
	state->page_buf = InvalidBuffer;
	state->page_n = state->page_i = 0;
}

/*
 * Table join: copy the chunk's hits (positions [first, last) of each row)
 * and sort them by heap TID, so that the heap is visited a page at a time.
 */
static void
collect_hits(GpuidxJoinState *state)
{
	int64		total = 0,
				r,
				h = 0;

	for (r = 0; r < state->nrows; r++)
		if (state->row_valid[r])
			total += (int64) (state->last[r] - state->first[r]);
	state->nhits = total;
	state->hit_next = 0;
	state->hit_tid = gpuidx_alloc_huge(sizeof(uint64) * Max(total, 1));
	state->hit_idx = gpuidx_alloc_huge(sizeof(uint64) * Max(total, 1));
	state->hit_row = gpuidx_alloc_huge(sizeof(int64) * Max(total, 1));
	state->hit_pos = state->key_only ? gpuidx_alloc_huge(sizeof(int64) * Max(total, 1)) : NULL;
	for (r = 0; r < state->nrows; r++)
	{
		int64		n;
		int64		j;

		if (!state->row_valid[r])
			continue;
		n = (int64) (state->last[r] - state->first[r]);
		gpuidx_copy_entries(state->img, (int64) state->first[r], (int64) state->last[r],
							NULL, state->hit_tid + h);
		for (j = 0; j < n; j++)
		{
			state->hit_row[h + j] = r;
			state->hit_idx[h + j] = (uint64) (h + j);
			if (state->hit_pos)
				state->hit_pos[h + j] = (int64) state->first[r] + j;
		}
		h += n;
	}
	gpuidx_sort_pairs((int64 *) state->hit_tid, state->hit_idx, total);
	state->stat_hits += total;
}

/*
 * Column c of an outer row: from the slot's values when deformed that far,
 * else straight from a heap row (heap_getattr: the column's cached offset
 * when no column before it is NULL or variable-width, as the probe table of
 * an as-of join typically is) rather than deforming every column before it.
 */
static inline Datum
outer_column(TupleTableSlot *slot, int c, bool *isnull)
{
	if (slot->tts_nvalid <= c && (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot)))
		return heap_getattr(ExecFetchSlotHeapTuple(slot, false, NULL), c + 1,
							slot->tts_tupleDescriptor, isnull);
	slot_getsomeattrs(slot, c + 1);
	*isnull = slot->tts_isnull[c];
	return slot->tts_values[c];
}

/*
 * Outer row n's bound or interval when its one probe is an outer column
 * (say an as-of join's): eval_probes inline.
 */
static inline void
take_column_probe(GpuidxJoinState *state, int64 n, Datum d, bool isnull)
{
	state->row_lo[n] = PG_INT64_MIN;
	state->row_hi[n] = PG_INT64_MAX;
	state->row_valid[n] = !isnull &&
		gpuidx_strategy_interval(state->strategies[0],
								 gpuidx_datum_to_key(d, state->probe_types[0]),
								 &state->row_lo[n], &state->row_hi[n]);
}

/* Count the chunk's row n, whose probe was just taken. */
static inline void
count_row(GpuidxJoinState *state, int64 n)
{
	/* (first and last are read only for a valid row: the engine sets them) */
	state->matched[n] = false;
	if (state->row_valid[n])
	{
		state->gather_valid++;
		state->gather_points = state->gather_points && state->row_lo[n] == state->row_hi[n];
	}
	state->nrows = n + 1;
}

/* Add an outer row to the chunk: keep its kept columns, take its probes. */
static void
gather_row(GpuidxJoinState *state, TupleTableSlot *slot)
{
	int64		n = state->nrows;

	reserve_rows(state, n + 1);
	if (state->row_values)
	{
		MemoryContext old = MemoryContextSwitchTo(state->chunk_cxt);

		keep_row(state, n, slot);
		MemoryContextSwitchTo(old);
	}
	if (state->probes_are_columns && state->nprobes == 1)
	{
		bool		isnull;
		Datum		d = outer_column(slot, state->probe_cols[0], &isnull);

		take_column_probe(state, n, d, isnull);
	}
	else if (state->probes_are_columns)
	{
		/* the probes read straight from the outer row */
		slot_getsomeattrs(slot, state->probe_natts);
		state->row_valid[n] = eval_probes(state, slot->tts_values, slot->tts_isnull,
										  &state->row_lo[n], &state->row_hi[n]);
	}
	else
	{
		/* probe expressions read the row as the scan tuple */
		TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;

		store_outer(state, slot);
		state->row_valid[n] = eval_probes(state, scan->tts_values, scan->tts_isnull,
										  &state->row_lo[n], &state->row_hi[n]);
		ResetExprContext(state->css.ss.ps.ps_ExprContext);
	}
	count_row(state, n);
}

/*
 * After gather_row took a row of the outer SeqScan: the rest of its heap
 * page, read in place, up to the chunk's end.  One probe that is an outer
 * column and nothing else kept (an as-of join's outer side) is read for
 * the whole page at once; any other row goes through gather_row in a slot.
 */
static void
gather_page_rest(GpuidxJoinState *state)
{
	GpuidxOuterPage *op = &state->outer_page;

	if (state->probes_are_columns && state->nprobes == 1 && !state->row_values)
	{
		Datum		values[MaxHeapTuplesPerPage];
		bool		nulls[MaxHeapTuplesPerPage];
		int			k = gpuidx_outer_page_column(op, state->probe_cols[0] + 1, values, nulls,
												 (int) Min(gpuidx_batch_chunk - state->nrows,
														   MaxHeapTuplesPerPage));
		int			strategy = state->strategies[0];
		Oid			type = state->probe_types[0];
		int64		n0 = state->nrows;
		int64	   *lo,
				   *hi;
		bool	   *valid;
		int64		nvalid = 0;
		bool		points = state->gather_points;
		int			i;

		if (k == 0)
			return;
		/* count_row and take_column_probe, with the arrays held in locals */
		reserve_rows(state, n0 + k);
		lo = state->row_lo + n0;
		hi = state->row_hi + n0;
		valid = state->row_valid + n0;
		memset(state->matched + n0, 0, k);
		for (i = 0; i < k; i++)
		{
			bool		v = !nulls[i] &&
				gpuidx_strategy_interval(strategy, gpuidx_datum_to_key(values[i], type),
										 &lo[i], &hi[i]);

			valid[i] = v;
			nvalid += v;
			points = points && (!v || lo[i] == hi[i]);
		}
		state->gather_valid += nvalid;
		state->gather_points = points;
		state->nrows = n0 + k;
		return;
	}
	while (state->nrows < gpuidx_batch_chunk && gpuidx_outer_page_next(op) != NULL)
		gather_row(state, gpuidx_outer_page_slot(op));
}

/*
 * Read the next chunk of outer rows, evaluate their probes and ask the
 * engine; false when the outer side is exhausted and nothing was read.
 */
static bool
gather_chunk(GpuidxJoinState *state)
{
	MemoryContext old;
	int64		nvalid;
	int64		r;
	bool		points;
	instr_time	t;
	GiOp		op;

	MemoryContextReset(state->chunk_cxt);
	release_page(state);
	state->direct_chunk = false;
	state->nrows = 0;
	state->nhits = 0;
	state->hit_next = 0;
	state->gather_valid = 0;
	state->gather_points = true;
	if (state->outer_done)
		return false;
	INSTR_TIME_SET_CURRENT(t);
	while (state->nrows < gpuidx_batch_chunk)
	{
		TupleTableSlot *slot = ExecProcNode(state->outer);

		if (TupIsNull(slot))
		{
			state->outer_done = true;
			break;
		}
		gather_row(state, slot);
		/* the rest of its heap page, read in place (outerpage.c) */
		if (state->outer_page.scan)
			gather_page_rest(state);
	}
	state->ms_outer += gpuidx_lap_ms(&t);
	/* the scan tuple held outer rows for the probes: empty, restored per row */
	if (!state->probes_are_columns)
		ExecClearTuple(state->css.ss.ss_ScanTupleSlot);
	if (state->nrows == 0)
		return false;
	nvalid = state->gather_valid;
	points = state->gather_points;
	if (nvalid == 0)
		return true;

	/* One engine batch for the chunk's valid rows. */
	INSTR_TIME_SET_CURRENT(t);
	if (state->img == NULL)
		state->img = gpuidx_image_acquire(state->index);
	state->engine = state->img->engine;
	if (state->img->n == 0)
	{
		for (r = 0; r < state->nrows; r++)
			state->row_valid[r] = false;
		return true;
	}
	/*
	 * A GPU image of this backend's own answers the chunk: the scratch block
	 * the row arrays live in is page-locked (once a backend), so that they
	 * go to and from the device without staging copies.
	 */
	if (state->scratch && state->engine == GI_ENGINE_GPU && !state->img->shared && !gpuidx_service_mode())
		gpuidx_scratch_pin(GPUIDX_SCRATCH_JOIN_ROWS, state->scratch);
	old = MemoryContextSwitchTo(state->chunk_cxt);
	op = state->kind == GPUIDX_JOIN_ASOF_PRED ? GI_OP_PRED :
		state->kind == GPUIDX_JOIN_ASOF_SUCC ? GI_OP_SUCC :
		points ? GI_OP_POINT : GI_OP_RANGE;
	if (nvalid == state->nrows)
	{
		/* every row probes: the row arrays are the batch */
		if (gpuidx_query_image(state->img, op,
							   op == GI_OP_PRED ? state->row_hi : state->row_lo,
							   op == GI_OP_RANGE ? state->row_hi : NULL,
							   nvalid, state->first, state->last))
			state->stat_host_batches++;
	}
	else
	{
		/* the valid rows' probes, packed, and their answers spread back */
		int64	   *plo = palloc(sizeof(int64) * nvalid);
		int64	   *phi = op == GI_OP_RANGE ? palloc(sizeof(int64) * nvalid) : NULL;
		uint64	   *f = palloc(sizeof(uint64) * nvalid);
		uint64	   *l = palloc(sizeof(uint64) * nvalid);
		int64		q = 0;

		for (r = 0; r < state->nrows; r++)
			if (state->row_valid[r])
			{
				plo[q] = op == GI_OP_PRED ? state->row_hi[r] : state->row_lo[r];
				if (phi)
					phi[q] = state->row_hi[r];
				q++;
			}
		if (gpuidx_query_image(state->img, op, plo, phi, nvalid, f, l))
			state->stat_host_batches++;
		q = 0;
		for (r = 0; r < state->nrows; r++)
			if (state->row_valid[r])
			{
				state->first[r] = f[q];
				state->last[r] = l[q];
				q++;
			}
	}
	state->stat_batches++;
	state->stat_probes += nvalid;
	state->ms_search += gpuidx_lap_ms(&t);
	if (state->asof_direct)
	{
		/*
		 * The map as it is now, after the image was taken: every entry of the
		 * image points to a page that existed then, and a page whose bit is
		 * set now holds only rows every snapshot sees (a row inserted or
		 * deleted later clears the bit first; VACUUM sets it only when no
		 * running transaction, this one included, could see otherwise), the
		 * rule an index-only scan applies row by row.
		 */
		gpuidx_vismap_copy(state->table, RelationGetNumberOfBlocks(state->table),
						   state->chunk_cxt, &state->direct_vm);
		state->direct_chunk = true;
	}
	if (state->kind == GPUIDX_JOIN_TABLE && !state->walk_rows)
		collect_hits(state);
	MemoryContextSwitchTo(old);
	return true;
}

/* Page visitor: remember a visible hit and its tuple's offset. */
static void
visit_hit(void *arg, int64 i, ItemPointer tid, HeapTuple tuple)
{
	GpuidxJoinState *state = (GpuidxJoinState *) arg;

	if (state->page_n >= state->page_cap)
	{
		int64		cap = Max(state->page_cap * 2, 512);
		MemoryContext old = MemoryContextSwitchTo(state->css.ss.ps.state->es_query_cxt);

		state->page_hit = state->page_hit ? repalloc(state->page_hit, sizeof(int64) * cap) :
			palloc(sizeof(int64) * cap);
		state->page_off = state->page_off ? repalloc(state->page_off, sizeof(OffsetNumber) * cap) :
			palloc(sizeof(OffsetNumber) * cap);
		state->page_cap = cap;
		MemoryContextSwitchTo(old);
	}
	state->page_hit[state->page_n] = i;
	state->page_off[state->page_n] = tid ? ItemPointerGetOffsetNumber(tid) : InvalidOffsetNumber;
	state->page_n++;
}

/*
 * Load the next page of hits: all-visible pages of a key-only join come
 * from the image, others are visited under the snapshot.  false at the end
 * of the chunk's hits.
 */
static bool
next_page(GpuidxJoinState *state)
{
	EState	   *estate = state->css.ss.ps.state;
	BlockNumber blk;

	release_page(state);
	while (state->hit_next < state->nhits)
	{
		blk = (BlockNumber) (state->hit_tid[state->hit_next] >> 16);
		if (state->key_only && gpuidx_vismap_all_visible(&state->vismap, blk))
		{
			state->page_from_image = true;
			while (state->hit_next < state->nhits &&
				   (BlockNumber) (state->hit_tid[state->hit_next] >> 16) == blk)
			{
				visit_hit(state, state->hit_next, NULL, NULL);
				state->hit_next++;
			}
			return true;
		}
		state->page_from_image = false;
		{
			int64		before = state->hit_next;

			state->page_buf = gpuidx_heap_visit_page(state->table, estate->es_snapshot,
													 state->hit_tid, state->nhits,
													 &state->hit_next, visit_hit, state);
			state->stat_fetches += state->hit_next - before;
			if (state->page_n > 0)
				return true;
			release_page(state);
		}
	}
	return false;
}

/* The datum of a table's system column, for a row at tid. */
static Datum
system_column(GpuidxJoinState *state, int attno, ItemPointer tid, bool *isnull)
{
	*isnull = false;
	if (attno == SelfItemPointerAttributeNumber)
	{
		state->cur_ctid = *tid;
		return PointerGetDatum(&state->cur_ctid);
	}
	if (attno == TableOidAttributeNumber)
		return ObjectIdGetDatum(RelationGetRelid(state->table));
	elog(ERROR, "gpuidx: system column %d not supported in a join", attno);
	return (Datum) 0;
}

/*
 * Fill the scan tuple's inner columns from a table row in a slot (all its
 * columns readable); tid is the row's, for ctid.
 */
static void
store_inner_from_slot(GpuidxJoinState *state, TupleTableSlot *slot, ItemPointer tid)
{
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	int			j;

	/* deform only as far as the join reads (a wide row's tail is skipped) */
	if (state->inner_max_attno > 0)
		slot_getsomeattrs(slot, state->inner_max_attno);
	for (j = 0; j < state->ninner; j++)
	{
		int			attno = state->inner_cols[j];
		int			k = state->nouter + j;

		if (attno < 0)
			scan->tts_values[k] = system_column(state, attno, tid, &scan->tts_isnull[k]);
		else
		{
			scan->tts_values[k] = slot->tts_values[attno - 1];
			scan->tts_isnull[k] = slot->tts_isnull[attno - 1];
		}
	}
}

/* Fill the scan tuple's inner columns from the visible tuple at off on the pinned page. */
static void
store_inner_from_page(GpuidxJoinState *state, OffsetNumber off)
{
	Page		page = BufferGetPage(state->page_buf);
	ItemId		lp = PageGetItemId(page, off);
	HeapTupleData tuple;

	tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tuple.t_len = ItemIdGetLength(lp);
	tuple.t_tableOid = RelationGetRelid(state->table);
	ItemPointerSet(&tuple.t_self, BufferGetBlockNumber(state->page_buf), off);
	ExecStoreBufferHeapTuple(&tuple, state->table_slot, state->page_buf);
	store_inner_from_slot(state, state->table_slot, &tuple.t_self);
}

/*
 * Fill the scan tuple's inner columns of a key-only row on an all-visible
 * page from image position pos: the key, and the INCLUDE columns from the
 * entry's row (the planner let only those, and tableoid, be read).
 */
static void
store_inner_from_image(GpuidxJoinState *state, int64 pos, uint64 packed)
{
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	Datum		inc_values[GPUIDX_MAX_INCLUDE];
	bool		inc_nulls[GPUIDX_MAX_INCLUDE];
	/* a row is read only when the join reads an INCLUDE column (not count(*)) */
	const char *row = state->reads_include ? gpuidx_row_at(state->img, pos) : NULL;
	ItemPointerData tid;
	int			j;

	if (row)
		gpuidx_deform_row(&state->layout, row, inc_values, inc_nulls);
	gpuidx_tid_unpack(packed, &tid);
	for (j = 0; j < state->ninner; j++)
	{
		int			attno = state->inner_cols[j];
		int			k = state->nouter + j;
		int			c = state->inner_include[j];

		if (attno < 0)
			scan->tts_values[k] = system_column(state, attno, &tid, &scan->tts_isnull[k]);
		else if (attno == state->keyattno)
		{
			scan->tts_values[k] = gpuidx_key_to_datum(gpuidx_key_at(state->img, pos),
													  state->keytype);
			scan->tts_isnull[k] = false;
		}
		else if (row && c >= 0)
		{
			scan->tts_values[k] = inc_values[c];
			scan->tts_isnull[k] = inc_nulls[c];
		}
		else
			elog(ERROR, "gpuidx: column %d of a key-only join is not in the index", attno);
	}
}

/*
 * Table join: the next (outer row, table row) pair that matches, as a scan
 * tuple; NULL when the chunk's hits are done.  Semi joins return an outer
 * row at its first match; anti joins only mark matches.
 */
static TupleTableSlot *
next_pair(GpuidxJoinState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	bool		semi_or_anti = state->jointype == JOIN_SEMI || state->jointype == JOIN_ANTI;

	for (;;)
	{
		int64		i,
					h,
					r;
		OffsetNumber off;

		if (state->page_i >= state->page_n)
		{
			instr_time	t;

			INSTR_TIME_SET_CURRENT(t);
			if (!next_page(state))
				return NULL;
			state->ms_heap += gpuidx_lap_ms(&t);
			continue;
		}
		i = state->page_hit[state->page_i];
		off = state->page_off[state->page_i];
		state->page_i++;
		h = (int64) state->hit_idx[i];
		r = state->hit_row[h];
		if (semi_or_anti && state->matched[r])
			continue;
		restore_row(state, r);
		if (OffsetNumberIsValid(off))
			store_inner_from_page(state, off);
		else
			store_inner_from_image(state, state->hit_pos[h], state->hit_tid[i]);
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = scan;
		if (state->matchqual && !ExecQual(state->matchqual, econtext))
			continue;
		state->matched[r] = true;
		if (state->jointype == JOIN_ANTI)
			continue;
		return scan;
	}
}

/*
 * Rows ahead of the walk whose first image entry is prefetched: the walk
 * reads entries in outer-row order, a cache miss each on a large image.
 */
#define PREFETCH_ROWS 16

/* Prefetch the image entry where row r's walk starts (from_last: its last). */
static inline void
prefetch_row(GpuidxJoinState *state, int64 r, bool from_last)
{
	if (r < state->nrows && state->row_valid[r] && state->last[r] > state->first[r])
		gpuidx_prefetch_at(state->img, from_last ? (int64) state->last[r] - 1 :
						   (int64) state->first[r],
						   state->kind == GPUIDX_JOIN_TABLE ? state->reads_include :
						   state->ninclude > 0);
}

/*
 * Table join in row order (key-only, mostly all-visible table): the next
 * matching pair of the current row's hits, each hit's row from the image
 * on an all-visible page or fetched with the snapshot; at a row's end, left
 * joins null-extend it and anti joins return it if nothing matched.  NULL
 * when the chunk is done.
 */
static TupleTableSlot *
next_walked_pair(GpuidxJoinState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	Snapshot	snapshot = state->css.ss.ps.state->es_snapshot;
	bool		semi_or_anti = state->jointype == JOIN_SEMI || state->jointype == JOIN_ANTI;

	for (;;)
	{
		int64		r = state->asof_row;

		if (r >= state->nrows)
			return NULL;
		if (!state->asof_started)
		{
			state->asof_started = true;
			prefetch_row(state, r + PREFETCH_ROWS, false);
			state->asof_pos = state->row_valid[r] ? (int64) state->first[r] : 0;
			if (state->row_valid[r])
				state->stat_hits += (int64) (state->last[r] - state->first[r]);
			/* the row's columns once; each hit overwrites the inner ones */
			restore_row(state, r);
		}
		while (state->row_valid[r] && state->asof_pos < (int64) state->last[r] &&
			   !(semi_or_anti && state->matched[r]))
		{
			int64		pos = state->asof_pos++;
			uint64		packed = gpuidx_tid_at(state->img, pos);
			ItemPointerData tid;

			gpuidx_tid_unpack(packed, &tid);
			if (gpuidx_vismap_all_visible(&state->vismap, ItemPointerGetBlockNumber(&tid)))
				store_inner_from_image(state, pos, packed);
			else
			{
				bool		call_again = false;
				bool		all_dead = false;

				state->stat_fetches++;
				if (!table_index_fetch_tuple(state->fetch, &tid, snapshot,
											 state->table_slot, &call_again, &all_dead))
					continue;
				store_inner_from_slot(state, state->table_slot, &state->table_slot->tts_tid);
			}
			ResetExprContext(econtext);
			econtext->ecxt_scantuple = scan;
			if (state->matchqual && !ExecQual(state->matchqual, econtext))
				continue;
			state->matched[r] = true;
			if (state->jointype != JOIN_ANTI)
				return scan;
		}
		/* this outer row is done */
		state->asof_started = false;
		state->asof_row++;
		if ((state->jointype == JOIN_LEFT || state->jointype == JOIN_ANTI) &&
			!state->matched[r])
		{
			restore_row(state, r);
			return scan;
		}
	}
}

/* The subquery's LIMIT, evaluated once per scan (-1: none). */
static int64
asof_limit(GpuidxJoinState *state)
{
	if (state->asof_limit == -2)
	{
		bool		isnull = true;
		Datum		d = (Datum) 0;

		if (state->asof_limit_expr)
			d = ExecEvalExprSwitchContext(state->asof_limit_expr,
										  state->css.ss.ps.ps_ExprContext, &isnull);
		if (isnull)
			state->asof_limit = -1;
		else if (DatumGetInt64(d) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_ROW_COUNT_IN_LIMIT_CLAUSE),
					 errmsg("LIMIT must not be negative")));
		else
			state->asof_limit = DatumGetInt64(d);
	}
	return state->asof_limit;
}

/*
 * As-of join, key-only: the table row at image position pos (on an
 * all-visible page, key its key, read already by the walk) as a virtual row
 * of key_slot holding the key and the INCLUDE columns, other columns NULL
 * (the planner let no other be read).
 */
static TupleTableSlot *
image_row_slot(GpuidxJoinState *state, int64 pos, int64 key)
{
	TupleTableSlot *slot = state->key_slot;
	Datum		inc_values[GPUIDX_MAX_INCLUDE];
	bool		inc_nulls[GPUIDX_MAX_INCLUDE];
	const char *row = state->ninclude > 0 ? gpuidx_row_at(state->img, pos) : NULL;
	int			c;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	if (row)
	{
		gpuidx_deform_row(&state->layout, row, inc_values, inc_nulls);
		for (c = 0; c < state->ninclude; c++)
		{
			AttrNumber	attno = state->include_attno[c];

			slot->tts_values[attno - 1] = inc_values[c];
			slot->tts_isnull[attno - 1] = inc_nulls[c];
		}
	}
	slot->tts_values[state->keyattno - 1] = gpuidx_key_to_datum(key, state->keytype);
	slot->tts_isnull[state->keyattno - 1] = false;
	return ExecStoreVirtualTuple(slot);
}

/* What asof_direct_row did with a row. */
typedef enum DirectAnswer
{
	DIRECT_ROW,					/* the scan tuple holds the row's answer */
	DIRECT_NONE,				/* the row has no answer */
	DIRECT_WALK					/* its answer's page is not all-visible: walk */
} DirectAnswer;

/*
 * As-of join with LIMIT 1, key-only with no quals (asof_direct): outer row
 * r's answer is the engine's entry itself (the last of the run for a
 * predecessor, the first for a successor: the walk's first step) when the
 * entry's page is all-visible in the chunk's copy of the map, and then its
 * key and INCLUDE columns go straight from the image into the scan tuple:
 * no virtual row, no expression evaluation, only the INCLUDE columns the
 * output reads, and on a table that is all all-visible no TID read either.
 * When no outer column is kept the scan tuple's outer columns stay NULL
 * from the last restore and only the inner ones are written.  Prefetches
 * the entry 16 rows ahead.
 */
/*
 * The first half of asof_direct_row, shared with sink_direct: outer row r's
 * answer (DIRECT_ROW, its image position in *pos and, when the bound or
 * reads_key needs it, its key in *key), DIRECT_NONE or DIRECT_WALK.
 * Prefetches the entry 16 rows ahead (its row too when reads_row).
 */
static pg_attribute_always_inline DirectAnswer
direct_answer(GpuidxJoinState *state, int64 r, bool pred, bool reads_key,
			  bool reads_row, int64 *pos, int64 *key)
{
	const GpuidxVisMapCopy *vm = &state->direct_vm;
	const GpuidxImageData *img = state->img;
	int64		ahead = r + PREFETCH_ROWS;
	bool		bounded;

	if (ahead < state->nrows && state->row_valid[ahead] &&
		state->last[ahead] > state->first[ahead] && (reads_key || reads_row || !vm->all_set))
		gpuidx_prefetch_entry(img, pred ? (int64) state->last[ahead] - 1 :
							  (int64) state->first[ahead], reads_key,
							  !vm->all_set, reads_row);
	if (!state->row_valid[r] || state->last[r] <= state->first[r])
		return DIRECT_NONE;
	*pos = pred ? (int64) state->last[r] - 1 : (int64) state->first[r];
	if (!vm->all_set &&
		!gpuidx_vismap_copy_test(vm, (BlockNumber) (gpuidx_tid_at(img, *pos) >> 16)))
		return DIRECT_WALK;

	/*
	 * Past the subquery's other bound no key qualifies (the walk's test);
	 * the key is read only for that bound or as an output.
	 */
	bounded = pred ? state->row_lo[r] > PG_INT64_MIN : state->row_hi[r] < PG_INT64_MAX;
	if (bounded || reads_key)
		*key = gpuidx_key_at(img, *pos);
	if (bounded && (pred ? *key < state->row_lo[r] : *key > state->row_hi[r]))
		return DIRECT_NONE;
	return DIRECT_ROW;
}

static pg_attribute_always_inline DirectAnswer
asof_direct_row(GpuidxJoinState *state, int64 r, bool pred)
{
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	const GpuidxImageData *img = state->img;
	int64		pos = 0;
	int64		key = 0;
	const char *row = NULL;
	DirectAnswer d;
	int			j;

	d = direct_answer(state, r, pred, state->direct_reads_key, state->direct_reads_row,
					  &pos, &key);
	if (d != DIRECT_ROW)
		return d;
	if (state->row_values || TTS_EMPTY(scan))
		restore_row(state, r);
	if (state->direct_reads_row)
		row = gpuidx_row_at(img, pos);
	for (j = 0; j < state->ninner; j++)
	{
		int			k = state->nouter + j;
		int			src = state->direct_src[j];

		if (src < 0)
		{
			scan->tts_values[k] = gpuidx_key_to_datum(key, state->keytype);
			scan->tts_isnull[k] = false;
		}
		else
			scan->tts_values[k] = gpuidx_row_value(&state->layout, row, src,
												   &scan->tts_isnull[k]);
	}
	state->matched[r] = true;
	state->stat_hits++;
	return DIRECT_ROW;
}

/*
 * As-of join, a chunk that takes direct answers with LIMIT 1: the next
 * outer row answered directly (or null-extended, a left join), in a loop
 * of its own (the bulk of such a join's rows); NULL when the chunk is done
 * or row asof_row must walk (next_asof walks it).
 */
static inline TupleTableSlot *
next_direct(GpuidxJoinState *state)
{
	bool		pred = state->kind == GPUIDX_JOIN_ASOF_PRED;

	for (;;)
	{
		int64		r = state->asof_row;
		DirectAnswer d;

		if (r >= state->nrows)
			return NULL;
		d = asof_direct_row(state, r, pred);
		if ((r & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (d == DIRECT_WALK)
			return NULL;
		state->stat_direct++;
		state->asof_row++;
		if (d == DIRECT_ROW)
			return state->css.ss.ss_ScanTupleSlot;
		if (state->jointype == JOIN_LEFT)
		{
			restore_row(state, r);
			return state->css.ss.ss_ScanTupleSlot;
		}
	}
}

/* Hand the sink's positions to its owner, while the image is pinned. */
static void
sink_flush(GpuidxJoinState *state)
{
	if (state->sink->n > 0)
		state->sink->flush(state->sink, state->img);
}

/*
 * sink_direct's loop while every page of the table is all-visible (no row
 * walks): each row's answer, if any and within the subquery's other bound,
 * goes to the sink, with the counters and arrays held in locals, until the
 * chunk's end.
 */
static pg_noinline void
sink_direct_visible(GpuidxJoinState *state, bool pred)
{
	GpuidxJoinSink *sink = state->sink;
	const GpuidxImageData *img = state->img;
	const bool *valid = state->row_valid;
	const uint64 *first = state->first;
	const uint64 *last = state->last;
	const int64 *lo = state->row_lo;
	const int64 *hi = state->row_hi;
	bool	   *matched = state->matched;
	uint64	   *out = sink->pos;
	int64		n = sink->n;
	int64		room = sink->cap;
	int64		nrows = state->nrows;
	int64		r = state->asof_row;
	int64		none = 0;
	int64		start = r;

	while (r < nrows)
	{
		int64		end = Min(nrows, r + 1024);

		CHECK_FOR_INTERRUPTS();
		if (n == room)
		{
			sink->n = n;
			sink_flush(state);
			n = sink->n;
		}
		for (; r < end && n < room; r++)
		{
			int64		pos;
			int64		bound = pred ? lo[r] : hi[r];

			if (!valid[r] || last[r] <= first[r])
			{
				none++;
				continue;
			}
			pos = pred ? (int64) last[r] - 1 : (int64) first[r];
			/* past the subquery's other bound no key qualifies */
			if (bound != (pred ? PG_INT64_MIN : PG_INT64_MAX))
			{
				int64		key = gpuidx_key_at(img, pos);

				if (pred ? key < bound : key > bound)
				{
					none++;
					continue;
				}
			}
			matched[r] = true;
			out[n++] = (uint64) pos;
		}
	}
	state->stat_direct += r - start;
	state->stat_hits += r - start - none;
	state->stat_sunk += r - start - none;
	if (state->jointype == JOIN_LEFT)
		sink->null_rows += none;
	sink->n = n;
	state->asof_row = r;
}

/*
 * As-of join feeding GpuIndexAgg (a sink, LIMIT 1): the chunk's rows
 * answered directly are not returned; their answers' image positions go to
 * the sink, which adds them up from the image (a left join's rows with no
 * answer are counted).  Stops at the chunk's end or at a row that must walk
 * (next_asof walks it and returns its rows).
 */
static void
sink_direct(GpuidxJoinState *state)
{
	GpuidxJoinSink *sink = state->sink;
	bool		pred = state->kind == GPUIDX_JOIN_ASOF_PRED;

	if (state->direct_vm.all_set)
		sink_direct_visible(state, pred);
	for (;;)
	{
		int64		r = state->asof_row;
		int64		pos = 0;
		int64		key = 0;
		DirectAnswer d;

		if (r >= state->nrows)
			return;
		d = direct_answer(state, r, pred, false, false, &pos, &key);
		if ((r & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (d == DIRECT_WALK)
			return;
		state->stat_direct++;
		state->asof_row++;
		if (d == DIRECT_ROW)
		{
			state->matched[r] = true;
			state->stat_hits++;
			state->stat_sunk++;
			sink->pos[sink->n] = (uint64) pos;
			if (++sink->n == sink->cap)
				sink_flush(state);
		}
		else if (state->jointype == JOIN_LEFT)
			sink->null_rows++;
	}
}

/*
 * As-of join: the next row of the current outer row's walk, or the next
 * outer row's; NULL when the chunk is done.  The walk starts at the
 * engine's answer and goes on past rows that are invisible or fail the
 * subquery's quals until LIMIT rows were produced; each produced row is
 * returned if it passes the match quals; a left join null-extends an outer
 * row none of whose rows matched.
 */
static TupleTableSlot *
next_asof(GpuidxJoinState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scan = state->css.ss.ss_ScanTupleSlot;
	Snapshot	snapshot = state->css.ss.ps.state->es_snapshot;
	bool		pred = state->kind == GPUIDX_JOIN_ASOF_PRED;
	int64		limit = asof_limit(state);
	int64		n = state->img ? state->img->n : 0;

	for (;;)
	{
		int64		r = state->asof_row;

		if (r >= state->nrows)
			return NULL;
		if (!state->asof_started && state->direct_chunk && limit == 1)
		{
			TupleTableSlot *slot = NULL;

			if (state->sink)
				sink_direct(state);
			else
				slot = next_direct(state);
			if (slot)
				return slot;
			/* the chunk's end, or a row whose answer must be walked */
			r = state->asof_row;
			if (r >= state->nrows)
				return NULL;
		}
		if (!state->asof_started)
		{
			state->asof_started = true;
			prefetch_row(state, r + PREFETCH_ROWS, pred);
			state->asof_found = 0;
			state->asof_pos = -1;
			if (state->row_valid[r] && state->last[r] > state->first[r])
				state->asof_pos = pred ? (int64) state->last[r] - 1 : (int64) state->first[r];
			restore_row(state, r);
		}
		while (state->asof_pos >= 0 && state->asof_pos < n &&
			   (limit < 0 || state->asof_found < limit))
		{
			int64		pos = state->asof_pos;
			int64		key;
			ItemPointerData tid;
			TupleTableSlot *inner;
			int			j;

			state->asof_pos += pred ? -1 : 1;
			CHECK_FOR_INTERRUPTS();
			/* past the probes' other end no key qualifies: the walk is over */
			key = gpuidx_key_at(state->img, pos);
			if (pred ? key < state->row_lo[r] : key > state->row_hi[r])
			{
				state->asof_pos = -1;
				break;
			}
			gpuidx_tid_unpack(gpuidx_tid_at(state->img, pos), &tid);
			if (state->key_only &&
				gpuidx_vismap_all_visible(&state->vismap, ItemPointerGetBlockNumber(&tid)))
			{
				inner = image_row_slot(state, pos, key);
			}
			else
			{
				bool		call_again = false;
				bool		all_dead = false;

				state->stat_fetches++;
				if (!table_index_fetch_tuple(state->fetch, &tid, snapshot,
											 state->table_slot, &call_again, &all_dead))
					continue;
				inner = state->table_slot;
			}
			ResetExprContext(econtext);
			econtext->ecxt_innertuple = inner;
			econtext->ecxt_outertuple = scan;
			if (state->asof_qual && !ExecQual(state->asof_qual, econtext))
				continue;
			state->asof_found++;
			state->stat_hits++;
			for (j = 0; j < state->ninner; j++)
				scan->tts_values[state->nouter + j] =
					ExecEvalExpr(state->asof_outputs[j], econtext,
								 &scan->tts_isnull[state->nouter + j]);
			econtext->ecxt_scantuple = scan;
			if (state->matchqual && !ExecQual(state->matchqual, econtext))
				continue;
			state->matched[r] = true;
			return scan;
		}
		/* this outer row is done */
		state->asof_started = false;
		state->asof_row++;
		if (state->jointype == JOIN_LEFT && !state->matched[r])
		{
			restore_row(state, r);
			return scan;
		}
	}
}

/* The next scan tuple of the join, past next_join_tuple's direct rows. */
static pg_noinline TupleTableSlot *
next_join_tuple_phases(GpuidxJoinState *state)
{
	ScanState  *ss = &state->css.ss;
	TupleTableSlot *slot;

	for (;;)
	{
		switch (state->phase)
		{
			case PHASE_GATHER:
				if (!gather_chunk(state))
				{
					state->phase = PHASE_DONE;
					break;
				}
				state->asof_row = 0;
				state->asof_started = false;
				state->emit_row = 0;
				state->phase = state->kind != GPUIDX_JOIN_TABLE ? PHASE_ASOF :
					state->walk_rows ? PHASE_WALK : PHASE_PAIRS;
				break;
			case PHASE_WALK:
				if ((slot = next_walked_pair(state)) != NULL)
					return slot;
				state->phase = PHASE_GATHER;
				break;
			case PHASE_PAIRS:
				if ((slot = next_pair(state)) != NULL)
					return slot;
				release_page(state);
				state->phase = state->jointype == JOIN_LEFT ||
					state->jointype == JOIN_ANTI ? PHASE_UNMATCHED : PHASE_GATHER;
				break;
			case PHASE_ASOF:
				if ((slot = next_asof(state)) != NULL)
					return slot;
				if (state->sink)
					sink_flush(state);
				state->phase = PHASE_GATHER;
				break;
			case PHASE_UNMATCHED:
				while (state->emit_row < state->nrows)
				{
					int64		r = state->emit_row++;

					if (!state->matched[r])
					{
						restore_row(state, r);
						return ss->ss_ScanTupleSlot;
					}
				}
				state->phase = PHASE_GATHER;
				break;
			case PHASE_DONE:
				return ExecClearTuple(ss->ss_ScanTupleSlot);
		}
	}
}

/*
 * The next scan tuple of the join (ExecScan's access method): a direct
 * as-of answer in a small function of its own, anything else through the
 * phases.
 */
static TupleTableSlot *
next_join_tuple(ScanState *ss)
{
	GpuidxJoinState *state = (GpuidxJoinState *) ss;

	if (state->phase == PHASE_ASOF && state->direct_chunk && !state->asof_started &&
		state->asof_limit == 1 && state->sink == NULL)
	{
		TupleTableSlot *slot = next_direct(state);

		if (slot)
			return slot;
	}
	return next_join_tuple_phases(state);
}

/*
 * EvalPlanQual (UPDATE/DELETE ... FROM, SELECT FOR UPDATE): join each
 * outer test row with the table's test row, if it has one, as the plan
 * would; called once per result row wanted (the node has scanrelid 0, so
 * ExecScan leaves the whole join to this method).  As-of joins are not
 * planned for such queries.
 */
static bool
recheck_join(ScanState *ss, TupleTableSlot *slot)
{
	GpuidxJoinState *state = (GpuidxJoinState *) ss;
	EPQState   *epq = ss->ps.state->es_epq_active;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	Index		rti = state->inner_rti;

	if (state->kind != GPUIDX_JOIN_TABLE || rti == 0)
		elog(ERROR, "gpuidx: EvalPlanQual through an as-of GpuIndexJoin");
	for (;;)
	{
		TupleTableSlot *outer = ExecProcNode(state->outer);
		TupleTableSlot *inner = NULL;
		bool		match = false;
		int64		lo,
					hi;

		if (TupIsNull(outer))
			return false;
		if (epq->relsubs_slot[rti - 1] != NULL)
			inner = epq->relsubs_slot[rti - 1];
		else if (epq->relsubs_rowmark[rti - 1] != NULL)
		{
			inner = EvalPlanQualSlot(epq, state->table, rti);
			if (!EvalPlanQualFetchRowMark(epq, rti, inner))
				inner = NULL;
		}
		store_outer(state, outer);
		if (inner && !TupIsNull(inner) &&
			eval_probes(state, ss->ss_ScanTupleSlot->tts_values,
						ss->ss_ScanTupleSlot->tts_isnull, &lo, &hi))
		{
			bool		isnull;
			Datum		k = slot_getattr(inner, state->keyattno, &isnull);
			int64		key = isnull ? 0 : gpuidx_datum_to_key(k, state->keytype);
			int			j;

			if (!isnull && key >= lo && key <= hi)
			{
				slot_getallattrs(inner);
				for (j = 0; j < state->ninner; j++)
				{
					int			attno = state->inner_cols[j];
					int			c = state->nouter + j;

					if (attno < 0)
						slot->tts_values[c] = system_column(state, attno, &inner->tts_tid,
															&slot->tts_isnull[c]);
					else
					{
						slot->tts_values[c] = inner->tts_values[attno - 1];
						slot->tts_isnull[c] = inner->tts_isnull[attno - 1];
					}
				}
				econtext->ecxt_scantuple = slot;
				match = state->matchqual == NULL || ExecQual(state->matchqual, econtext);
			}
		}
		if (match ? state->jointype != JOIN_ANTI :
			state->jointype == JOIN_LEFT || state->jointype == JOIN_ANTI)
		{
			if (!match)
				store_outer(state, outer);	/* inner columns NULL */
			return true;
		}
	}
}

/*
 * Return the next joined, filtered, projected row.  A plain output
 * (plain_output) outside EvalPlanQual is ExecScan's work without a qual,
 * its projection a copy of the output columns: done here, a good part of
 * the per-row cost of an as-of join answered from the image.
 */
static TupleTableSlot *
exec_join(CustomScanState *node)
{
	GpuidxJoinState *state = (GpuidxJoinState *) node;
	TupleTableSlot *scan;
	TupleTableSlot *result;
	int			i;

	if (!state->plain_output || node->ss.ps.state->es_epq_active != NULL)
		return ExecScan(&node->ss, (ExecScanAccessMtd) next_join_tuple,
						(ExecScanRecheckMtd) recheck_join);
	CHECK_FOR_INTERRUPTS();		/* as ExecScanFetch, per row */
	ResetExprContext(node->ss.ps.ps_ExprContext);
	scan = next_join_tuple(&node->ss);
	if (node->ss.ps.ps_ProjInfo == NULL)
		return scan;
	result = node->ss.ps.ps_ResultTupleSlot;
	ExecClearTuple(result);
	if (TupIsNull(scan))
		return result;
	for (i = 0; i < state->noutput; i++)
	{
		result->tts_values[i] = scan->tts_values[state->output_cols[i]];
		result->tts_isnull[i] = scan->tts_isnull[state->output_cols[i]];
	}
	return ExecStoreVirtualTuple(result);
}

/*
 * Forget the chunk in hand, and the pinned image unless keep_image (a
 * rescan under an MVCC snapshot: see scan.c's rescan).
 */
static void
reset_join(GpuidxJoinState *state, bool keep_image)
{
	release_page(state);
	if (state->chunk_cxt)
		MemoryContextReset(state->chunk_cxt);
	state->nrows = 0;
	state->nhits = 0;
	state->phase = PHASE_GATHER;
	state->outer_done = false;
	state->asof_limit = -2;
	if (state->img && !keep_image)
	{
		gpuidx_image_release(state->img);
		state->img = NULL;
	}
}

/* Start over: parameters may have changed; rescan the outer side. */
static void
rescan_join(CustomScanState *node)
{
	GpuidxJoinState *state = (GpuidxJoinState *) node;

	reset_join(state, IsMVCCSnapshot(node->ss.ps.state->es_snapshot));
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(state->outer, node->ss.ps.chgParam);
	if (state->outer->chgParam == NULL)
		ExecReScan(state->outer);
	ExecScanReScan(&node->ss);
}

/* Release everything the join holds. */
static void
end_join(CustomScanState *node)
{
	GpuidxJoinState *state = (GpuidxJoinState *) node;

	reset_join(state, false);
	if (state->scratch)
		gpuidx_scratch_give(GPUIDX_SCRATCH_JOIN_ROWS, state->scratch);
	state->scratch = NULL;
	gpuidx_vismap_release(&state->vismap);
	if (state->table_slot)
		ExecClearTuple(state->table_slot);
	if (state->fetch)
		table_index_fetch_end(state->fetch);
	ExecEndNode(state->outer);
	if (state->index)
		index_close(state->index, AccessShareLock);
	if (state->table)
		table_close(state->table, AccessShareLock);
}

/* The comparison a strategy stands for, key on the left. */
static const char *
strategy_operator(int strategy)
{
	static const char *const ops[] = {"?", "<", "<=", "=", ">=", ">"};

	return strategy >= 1 && strategy <= 5 ? ops[strategy] : "?";
}

/* EXPLAIN: index, join type and kind, probes, filter; with ANALYZE counts. */
static void
explain_join(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuidxJoinState *state = (GpuidxJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *strategies = list_nth(priv, GPUIDX_CJ_STRATEGIES);
	int			nprobes = list_length(strategies);
	List	   *context;
	StringInfoData buf;
	const char *jointype;
	const char *keyname;
	bool		equi = true;
	int			i;

	switch (state->jointype)
	{
		case JOIN_LEFT:
			jointype = "Left";
			break;
		case JOIN_SEMI:
			jointype = "Semi";
			break;
		case JOIN_ANTI:
			jointype = "Anti";
			break;
		default:
			jointype = "Inner";
			break;
	}
	ExplainPropertyText("Index", RelationGetRelationName(state->index), es);
	ExplainPropertyText("Join Type", jointype, es);
	for (i = 0; i < nprobes; i++)
		equi = equi && list_nth_int(strategies, i) == BTEqualStrategyNumber;
	ExplainPropertyText("Join Kind", state->kind != GPUIDX_JOIN_TABLE ? "as-of" :
						equi ? "equi" : "range", es);

	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	keyname = quote_identifier(get_attname(RelationGetRelid(state->table), state->keyattno, false));
	initStringInfo(&buf);
	for (i = 0; i < nprobes; i++)
		appendStringInfo(&buf, "%s(%s.%s %s %s)", i > 0 ? " AND " : "",
						 quote_identifier(RelationGetRelationName(state->table)), keyname,
						 strategy_operator(list_nth_int(strategies, i)),
						 deparse_expression(list_nth(cscan->custom_exprs, i), context, true, false));
	ExplainPropertyText("Probe", buf.data, es);
	if (state->kind != GPUIDX_JOIN_TABLE)
	{
		Expr	   *limit = list_nth(priv, GPUIDX_CJ_ASOF_LIMIT);

		ExplainPropertyText("Order", state->kind == GPUIDX_JOIN_ASOF_PRED ?
							"descending" : "ascending", es);
		if (limit && IsA(limit, Const) && !((Const *) limit)->constisnull)
			ExplainPropertyInteger("Limit", NULL, DatumGetInt64(((Const *) limit)->constvalue), es);
		if (list_nth(priv, GPUIDX_CJ_ASOF_QUALS) != NIL)
			ExplainPropertyBool("Subquery Filter", true, es);
	}
	if (list_length(cscan->custom_exprs) > nprobes)
		ExplainPropertyText("Join Filter",
							deparse_expression((Node *) make_ands_explicit(list_copy_tail(cscan->custom_exprs, nprobes)),
											   context, true, false), es);
	if (intVal(list_nth(priv, GPUIDX_CJ_KEY_ONLY)))
		ExplainPropertyBool("Key Only", true, es);
	ExplainPropertyInteger("Chunk", NULL, gpuidx_batch_chunk, es);
	if (es->analyze)
	{
		ExplainPropertyText("Engine", gpuidx_engine_label(state->engine,
														  state->stat_batches - state->stat_host_batches,
														  state->stat_host_batches), es);
		ExplainPropertyInteger("Batches", NULL, state->stat_batches, es);
		ExplainPropertyInteger("Probes", NULL, state->stat_probes, es);
		ExplainPropertyInteger("Hits", NULL, state->stat_hits, es);
		ExplainPropertyInteger("Heap Fetches", NULL, state->stat_fetches, es);
		if (state->kind != GPUIDX_JOIN_TABLE)
			ExplainPropertyInteger("Direct Rows", NULL, state->stat_direct, es);
		if (state->sink)
			ExplainPropertyInteger("Rows Added Up From The Image", NULL, state->stat_sunk, es);
		if (state->outer_page.scan)
			ExplainPropertyInteger("Outer Rows In Place", NULL, state->outer_page.rows_in_place, es);
		if (es->timing)
		{
			ExplainPropertyFloat("Outer Time", "ms", state->ms_outer, 3, es);
			ExplainPropertyFloat("Search Time", "ms", state->ms_search, 3, es);
			ExplainPropertyFloat("Heap Time", "ms", state->ms_heap, 3, es);
		}
	}
}

/*
 * Let GpuIndexAgg take this join's direct answers (customjoin.h): only an
 * as-of join that may answer rows from the image and has no filter of its
 * own (every row it would return reaches the aggregate).
 */
bool
gpuidx_join_set_sink(PlanState *ps, GpuidxJoinSink *sink)
{
	GpuidxJoinState *state = (GpuidxJoinState *) ps;

	if (!IsA(ps, CustomScanState) ||
		((CustomScanState *) ps)->methods != &gpuidx_join_exec_methods ||
		state->kind == GPUIDX_JOIN_TABLE || !state->asof_direct ||
		ps->qual != NULL || ps->plan->qual != NIL)
		return false;
	state->sink = sink;
	return true;
}
