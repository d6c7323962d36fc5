/*
 * batch.c - the gpuidx_* SQL functions: a whole array of probes answered
 * in one engine batch, each candidate fetched from the heap with the
 * statement's snapshot, its key rechecked, row-level security applied.
 */
#include "gpuidx.h"
#include "service.h"
#include "heapvisit.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

/* Everything one batch call needs. */
typedef struct Batch
{
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	EState	   *estate;
	ExprContext *econtext;
	TupleTableSlot *slot;
	IndexFetchTableData *fetch;
	Snapshot	snapshot;
	Oid			keytype;		/* the key's type (a domain's base type) */
	bool		rls;			/* row-level security applies */
	bool		plain_column;	/* key is a plain column (no expression) */
	bool		heap_page_path; /* heap table, plain column: visible_by_page */
	GpuidxImageData *img;
	GpuidxVisMap vismap;		/* the heap's visibility map pages, pinned */
	bool		skip_heap;		/* may trust the visibility map */
} Batch;

/* One output row before it is emitted. */
typedef struct BatchRow
{
	int64		probe;			/* 0-based probe number */
	int64		pos;			/* position in the image */
	int64		key;			/* its key (copied: the image is not reread) */
	ItemPointerData ctid;		/* the visible tuple's TID */
} BatchRow;

typedef struct RowList
{
	BatchRow   *rows;
	int64		n;
	int64		cap;
} RowList;

/* Append a row to a list. */
static void
rows_push(RowList *list, int64 probe, int64 pos, int64 key, ItemPointer ctid)
{
	if (list->n == list->cap)
	{
		list->cap = Max(1024, list->cap * 2);
		list->rows = list->rows ?
			repalloc_huge(list->rows, sizeof(BatchRow) * list->cap) :
			gpuidx_alloc_huge(sizeof(BatchRow) * list->cap);
	}
	list->rows[list->n].probe = probe;
	list->rows[list->n].pos = pos;
	list->rows[list->n].key = key;
	list->rows[list->n].ctid = *ctid;
	list->n++;
}

/* Open the index and its table, checking kind and privileges. */
static void
batch_open(Batch *b, Oid indexoid)
{
	Oid			heapoid;

	memset(b, 0, sizeof(Batch));
	b->index = gpuidx_open_checked(indexoid, &b->heap);
	heapoid = RelationGetRelid(b->heap);

	b->rls = check_enable_rls(heapoid, InvalidOid, false) == RLS_ENABLED;
	b->indexInfo = BuildIndexInfo(b->index);
	b->keytype = getBaseType(TupleDescAttr(RelationGetDescr(b->index), 0)->atttypid);
	b->plain_column = b->indexInfo->ii_Expressions == NIL;
	b->heap_page_path = b->plain_column && b->heap->rd_rel->relam == HEAP_TABLE_AM_OID;
	b->estate = CreateExecutorState();
	b->econtext = GetPerTupleExprContext(b->estate);
	b->slot = table_slot_create(b->heap, NULL);
	b->econtext->ecxt_scantuple = b->slot;
	b->fetch = table_index_fetch_begin(b->heap);
	b->snapshot = GetActiveSnapshot();
	gpuidx_vismap_init(&b->vismap, b->heap);
	b->skip_heap = gpuidx_can_skip_heap();
	b->img = gpuidx_image_acquire(b->index);
}

/* Release what batch_open took. */
static void
batch_close(Batch *b)
{
	gpuidx_image_release(b->img);
	gpuidx_vismap_release(&b->vismap);
	table_index_fetch_end(b->fetch);
	ExecDropSingleTupleTableSlot(b->slot);
	FreeExecutorState(b->estate);
	index_close(b->index, AccessShareLock);
	table_close(b->heap, AccessShareLock);
}

/*
 * Is the entry at pos visible with the statement's snapshot, and does the
 * visible version still carry the key?  *ctid receives its TID.
 */
static bool
entry_visible(Batch *b, int64 pos, ItemPointer ctid)
{
	ItemPointerData tid;
	bool		call_again = false;
	bool		all_dead = false;
	Datum		value;
	bool		isnull;

	gpuidx_tid_unpack(gpuidx_tid_at(b->img, pos), &tid);
	if (!table_index_fetch_tuple(b->fetch, &tid, b->snapshot, b->slot,
								 &call_again, &all_dead))
		return false;
	if (b->plain_column)
		value = slot_getattr(b->slot, b->indexInfo->ii_IndexAttrNumbers[0], &isnull);
	else
	{
		Datum		values[INDEX_MAX_KEYS];
		bool		isnulls[INDEX_MAX_KEYS];

		ResetExprContext(b->econtext);
		FormIndexDatum(b->indexInfo, b->slot, b->estate, values, isnulls);
		value = values[0];
		isnull = isnulls[0];
	}
	if (isnull ||
		gpuidx_datum_to_key(value, b->keytype)
		!= gpuidx_key_at(b->img, pos))
		return false;
	*ctid = b->slot->tts_tid;
	return true;
}

/* Compare TIDs for qsort/bsearch. */
static int
cmp_tid(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/*
 * Row-level security: drop the rows of list[from..] that the policies hide,
 * by asking the table for the allowed TIDs through SPI (the planner applies
 * the policies to that query).
 */
static void
rls_filter(Batch *b, RowList *list, int64 from)
{
	int64		n = list->n - from;
	Datum	   *elems;
	ArrayType  *arr;
	Datum		arg;
	Oid			argtype = TIDARRAYOID;
	char	   *sql;
	ItemPointerData *allowed;
	int64		nallowed,
				i,
				o;

	if (n <= 0)
		return;
	elems = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
		elems[i] = PointerGetDatum(&list->rows[from + i].ctid);
	arr = construct_array(elems, (int) n, TIDOID, sizeof(ItemPointerData), false, TYPALIGN_SHORT);
	arg = PointerGetDatum(arr);
	sql = psprintf("SELECT ctid FROM ONLY %s WHERE ctid = ANY($1)",
				   quote_qualified_identifier(get_namespace_name(RelationGetNamespace(b->heap)),
											  RelationGetRelationName(b->heap)));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "gpuidx: SPI_connect failed");
	if (SPI_execute_with_args(sql, 1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "gpuidx: row-level security check failed");
	nallowed = SPI_processed;
	allowed = MemoryContextAlloc(TopTransactionContext,
								 sizeof(ItemPointerData) * Max(nallowed, 1));
	for (i = 0; i < nallowed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		allowed[i] = *((ItemPointer) DatumGetPointer(d));
	}
	SPI_finish();

	qsort(allowed, nallowed, sizeof(ItemPointerData), cmp_tid);
	for (i = from, o = from; i < list->n; i++)
		if (bsearch(&list->rows[i].ctid, allowed, nallowed,
					sizeof(ItemPointerData), cmp_tid))
			list->rows[o++] = list->rows[i];
	list->n = o;
	pfree(allowed);
	pfree(elems);
	pfree(arr);
}

/* What visible_by_page's callback needs. */
typedef struct PageVisit
{
	const uint64 *order;		/* candidate number of each sorted TID */
	const int64 *cand_key;		/* each candidate's key */
	bool	   *visible;		/* out: per candidate */
	ItemPointerData *ctids;		/* out: the visible member's TID */
	bool		recheck;		/* compare the tuple's key with the entry's */
	TupleDesc	desc;
	AttrNumber	attnum;
	Oid			keytype;
} PageVisit;

/* A candidate's visible tuple: keep it if its key (when rechecked) agrees. */
static void
visit_candidate(void *arg, int64 i, ItemPointer tid, HeapTuple tuple)
{
	PageVisit  *pv = (PageVisit *) arg;
	int64		c = (int64) pv->order[i];

	if (pv->recheck)
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, pv->attnum, pv->desc, &isnull);

		if (isnull || gpuidx_datum_to_key(value, pv->keytype) != pv->cand_key[c])
			return;
	}
	pv->visible[c] = true;
	pv->ctids[c] = *tid;
}

/*
 * Heap tables: visibility of candidates sorted by TID, one page at a time
 * (heapvisit.c), instead of one table_index_fetch_tuple call per candidate.
 */
static void
visible_by_page(Batch *b, const int64 *sorted_tids, const uint64 *order,
				int64 ncand, const int64 *cand_key, bool *visible,
				ItemPointerData *ctids)
{
	PageVisit	pv;
	int64		i = 0;

	pv.order = order;
	pv.cand_key = cand_key;
	pv.visible = visible;
	pv.ctids = ctids;
	pv.desc = RelationGetDescr(b->heap);
	pv.attnum = b->indexInfo->ii_IndexAttrNumbers[0];
	pv.keytype = b->keytype;

	/*
	 * Under an MVCC snapshot the visible member of a HOT chain carries the
	 * indexed key and the image is current, so the key needs no recheck
	 * (as in an index scan); other snapshots recheck it.
	 */
	pv.recheck = !IsMVCCSnapshot(b->snapshot);
	memset(visible, 0, sizeof(bool) * ncand);
	while (i < ncand)
		ReleaseBuffer(gpuidx_heap_visit_page(b->heap, b->snapshot,
											 (const uint64 *) sorted_tids,
											 ncand, &i, visit_candidate, &pv));
}

/* Above this many candidates a round fetches in position order, unsorted. */
#define MAX_SORTED_FETCH (8 * 1024 * 1024)

/*
 * Fetch every candidate position of the active probes and append the
 * visible ones to out, in (probe, position) order.  Fetches are made in heap
 * TID order so that consecutive ones share a heap page already pinned,
 * which is most of the cost of a batch.
 */
static void
fetch_candidates(Batch *b, const int64 *active, int64 nactive,
				 const uint64 *first, const uint64 *last, int64 probe_base,
				 RowList *out)
{
	int64		ncand = 0,
				i,
				c;
	int64	   *tidkey;
	uint64	   *order;
	int64	   *cand_pos;
	int64	   *cand_probe;
	int64	   *cand_key;
	bool	   *visible;
	ItemPointerData *ctids;

	for (i = 0; i < nactive; i++)
		ncand += (int64) (last[active[i]] - first[active[i]]);
	if (ncand > MAX_SORTED_FETCH)
	{
		for (i = 0; i < nactive; i++)
		{
			int64		p = active[i];
			uint64		pos;

			for (pos = first[p]; pos < last[p]; pos++)
			{
				ItemPointerData ctid;

				if (((pos - first[p]) & 0xFFF) == 0)
					CHECK_FOR_INTERRUPTS();
				if (entry_visible(b, (int64) pos, &ctid))
					rows_push(out, probe_base + p, (int64) pos, gpuidx_key_at(b->img, (int64) pos), &ctid);
			}
		}
		return;
	}

	tidkey = gpuidx_alloc_huge(sizeof(int64) * Max(ncand, 1));
	order = gpuidx_alloc_huge(sizeof(uint64) * Max(ncand, 1));
	cand_pos = gpuidx_alloc_huge(sizeof(int64) * Max(ncand, 1));
	cand_probe = gpuidx_alloc_huge(sizeof(int64) * Max(ncand, 1));
	cand_key = gpuidx_alloc_huge(sizeof(int64) * Max(ncand, 1));
	for (i = 0, c = 0; i < nactive; i++)
	{
		int64		p = active[i];
		uint64		pos;

		/* Runs are contiguous in the image: sequential reads here only. */
		gpuidx_copy_entries(b->img, (int64) first[p], (int64) last[p],
							cand_key + c, (uint64 *) tidkey + c);
		for (pos = first[p]; pos < last[p]; pos++, c++)
		{
			cand_pos[c] = (int64) pos;
			cand_probe[c] = p;
			order[c] = (uint64) c;
		}
	}
	gpuidx_sort_pairs(tidkey, order, ncand);

	visible = gpuidx_alloc_huge(sizeof(bool) * Max(ncand, 1));
	ctids = gpuidx_alloc_huge(sizeof(ItemPointerData) * Max(ncand, 1));
	if (b->heap_page_path)
		visible_by_page(b, tidkey, order, ncand, cand_key, visible, ctids);
	else
	{
		for (i = 0; i < ncand; i++)
		{
			c = (int64) order[i];
			if ((i & 0xFFF) == 0xFFF)
				CHECK_FOR_INTERRUPTS();
			visible[c] = entry_visible(b, cand_pos[c], &ctids[c]);
		}
	}
	for (c = 0; c < ncand; c++)
		if (visible[c])
			rows_push(out, probe_base + cand_probe[c], cand_pos[c], cand_key[c], &ctids[c]);

	pfree(tidkey);
	pfree(order);
	pfree(cand_pos);
	pfree(cand_probe);
	pfree(cand_key);
	pfree(visible);
	pfree(ctids);
}

/* Order rows by (probe, position). */
static int
cmp_row(const void *a, const void *b)
{
	const BatchRow *x = (const BatchRow *) a;
	const BatchRow *y = (const BatchRow *) b;

	if (x->probe != y->probe)
		return x->probe < y->probe ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * Collect the visible rows of every probe's range; for predecessor and
 * successor, probes whose run has no visible row move on to the next run
 * down or up, round after round.  Rows come out sorted by (probe, pos).
 */
static void
collect_rows(Batch *b, GiOp op, int64 nprobes, uint64 *first, uint64 *last,
			 int64 probe_base, RowList *out)
{
	int64	   *active = palloc(sizeof(int64) * Max(nprobes, 1));
	int64		nactive = 0,
				i;
	bool	   *found = palloc0(sizeof(bool) * Max(nprobes, 1));
	int			round = 0;
	int64		start_n = out->n;

	for (i = 0; i < nprobes; i++)
		if (last[i] > first[i])
			active[nactive++] = i;

	while (nactive > 0)
	{
		int64		round_from = out->n;
		int64		still = 0;

		fetch_candidates(b, active, nactive, first, last, probe_base, out);
		if (b->rls)
			rls_filter(b, out, round_from);
		round++;
		if (op != GI_OP_PRED && op != GI_OP_SUCC)
			break;

		for (i = round_from; i < out->n; i++)
			found[out->rows[i].probe - probe_base] = true;
		for (i = 0; i < nactive; i++)
		{
			int64		p = active[i];

			if (found[p])
				continue;
			if (op == GI_OP_PRED && first[p] > 0)
			{
				last[p] = first[p];
				first[p] = gpuidx_run_start(b->img, (int64) first[p] - 1);
				active[still++] = p;
			}
			else if (op == GI_OP_SUCC && last[p] < (uint64) b->img->n)
			{
				first[p] = last[p];
				last[p] = gpuidx_run_end(b->img, (int64) last[p]);
				active[still++] = p;
			}
		}
		nactive = still;
	}

	/* Rows of later rounds interleave with earlier ones: restore order. */
	if (round > 1 && out->n - start_n > 1)
		qsort(out->rows + start_n, out->n - start_n, sizeof(BatchRow), cmp_row);
	pfree(active);
	pfree(found);
}

/* The elements of a one-dimensional bigint[] and their NULL flags. */
static int
read_probes(ArrayType *arr, const char *what, Datum **vals, bool **nulls)
{
	int			n;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, vals, nulls, &n);
	return n;
}

/*
 * The hi bounds (argument 2) of a range call with n lo bounds; an error
 * unless there are as many.
 */
static void
read_hi_probes(FunctionCallInfo fcinfo, int n, Datum **hi, bool **hinull)
{
	int			nhi = read_probes(PG_GETARG_ARRAYTYPE_P(2), "hi", hi, hinull);

	if (nhi != n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lo and hi must have the same number of elements"),
				 errdetail("lo has %d elements, hi has %d.", n, nhi)));
}

/*
 * Buffers for one chunk of at most gpuidx.batch_chunk of n probes: the
 * probe values (hi bounds too when with_hi, else *ph is left alone), each
 * probe's number and the engine's answer.
 */
static void
alloc_chunk(int n, bool with_hi, int64 **pv, int64 **ph, int64 **pidx,
			uint64 **first, uint64 **last)
{
	Size		len = Max(Min(n, gpuidx_batch_chunk), 1);

	*pv = palloc(sizeof(int64) * len);
	if (with_hi)
		*ph = palloc(sizeof(int64) * len);
	*pidx = palloc(sizeof(int64) * len);
	*first = palloc(sizeof(uint64) * len);
	*last = palloc(sizeof(uint64) * len);
}

/* Shared body of gpuidx_lookup / _predecessor / _successor / _range. */
static void
run_batch(FunctionCallInfo fcinfo, GiOp op)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			indexoid = PG_GETARG_OID(0);
	Datum	   *lo,
			   *hi = NULL;
	bool	   *lonull,
			   *hinull = NULL;
	int			n,
				start;
	Batch		b;
	int64	   *pv,
			   *ph = NULL;
	int64	   *pidx;
	uint64	   *first,
			   *last;
	RowList		rows = {0};

	InitMaterializedSRF(fcinfo, 0);
	n = read_probes(PG_GETARG_ARRAYTYPE_P(1), op == GI_OP_RANGE ? "lo" : "keys",
					&lo, &lonull);
	if (op == GI_OP_RANGE)
		read_hi_probes(fcinfo, n, &hi, &hinull);
	batch_open(&b, indexoid);
	alloc_chunk(n, hi != NULL, &pv, &ph, &pidx, &first, &last);

	for (start = 0; start < n; start += gpuidx_batch_chunk)
	{
		int			end = (int) Min((int64) n, (int64) start + gpuidx_batch_chunk);
		int64		m = 0,
					i;

		CHECK_FOR_INTERRUPTS();
		for (i = start; i < end; i++)
		{
			if (lonull[i] || (hinull && hinull[i]))
				continue;		/* a NULL probe yields no row */
			pv[m] = DatumGetInt64(lo[i]);
			if (ph)
				ph[m] = DatumGetInt64(hi[i]);
			pidx[m++] = i;
		}
		gpuidx_query_image(b.img, op, pv, ph, m, first, last);
		rows.n = 0;
		collect_rows(&b, op, m, first, last, 0, &rows);

		for (i = 0; i < rows.n; i++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			values[0] = Int32GetDatum((int32) (pidx[rows.rows[i].probe] + 1));
			values[1] = Int64GetDatum(rows.rows[i].key);
			values[2] = PointerGetDatum(&rows.rows[i].ctid);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	batch_close(&b);
}

/* A batch set-returning function: run_batch with one operation. */
#define GPUIDX_BATCH_SRF(name, op) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	run_batch(fcinfo, op); \
	return (Datum) 0; \
}

/* gpuidx_lookup(idx, keys): the visible tuples whose key equals each probe. */
GPUIDX_BATCH_SRF(gpuidx_lookup, GI_OP_POINT)
/* gpuidx_predecessor(idx, keys): tuples of the largest visible key <= probe. */
GPUIDX_BATCH_SRF(gpuidx_predecessor, GI_OP_PRED)
/* gpuidx_successor(idx, keys): tuples of the smallest visible key >= probe. */
GPUIDX_BATCH_SRF(gpuidx_successor, GI_OP_SUCC)
/* gpuidx_range(idx, lo, hi): visible tuples with lo <= key <= hi. */
GPUIDX_BATCH_SRF(gpuidx_range, GI_OP_RANGE)

/*
 * Visible tuples among positions [first, last): an entry on an all-visible
 * heap page counts without a heap fetch (as an index-only scan does).
 */
static int64
count_visible(Batch *b, uint64 first, uint64 last)
{
	int64		count = 0;
	uint64		pos;

	for (pos = first; pos < last; pos++)
	{
		ItemPointerData ctid;

		if (((pos - first) & 0xFFF) == 0xFFF)
			CHECK_FOR_INTERRUPTS();
		if ((b->skip_heap &&
			 gpuidx_vismap_all_visible(&b->vismap, (BlockNumber) (gpuidx_tid_at(b->img, (int64) pos) >> 16))) ||
			entry_visible(b, (int64) pos, &ctid))
			count++;
	}
	return count;
}

PG_FUNCTION_INFO_V1(gpuidx_range_count);
/* gpuidx_range_count(idx, lo, hi): visible tuples in each inclusive range. */
Datum
gpuidx_range_count(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Datum	   *lo,
			   *hi;
	bool	   *lonull,
			   *hinull;
	int			n,
				start;
	Datum	   *counts;
	bool	   *countnull;
	Batch		b;
	int64	   *pv,
			   *ph,
			   *pidx;
	uint64	   *first,
			   *last;
	int			dims[1],
				lbs[1] = {1};
	RowList		rows = {0};

	n = read_probes(PG_GETARG_ARRAYTYPE_P(1), "lo", &lo, &lonull);
	read_hi_probes(fcinfo, n, &hi, &hinull);
	batch_open(&b, indexoid);

	counts = palloc(sizeof(Datum) * Max(n, 1));
	countnull = palloc(sizeof(bool) * Max(n, 1));
	alloc_chunk(n, true, &pv, &ph, &pidx, &first, &last);

	for (start = 0; start < n; start += gpuidx_batch_chunk)
	{
		int			end = (int) Min((int64) n, (int64) start + gpuidx_batch_chunk);
		int64		m = 0,
					i;

		CHECK_FOR_INTERRUPTS();
		for (i = start; i < end; i++)
		{
			countnull[i] = lonull[i] || hinull[i];
			counts[i] = Int64GetDatum(0);
			if (countnull[i])
				continue;
			pv[m] = DatumGetInt64(lo[i]);
			ph[m] = DatumGetInt64(hi[i]);
			pidx[m++] = i;
		}
		gpuidx_query_image(b.img, GI_OP_RANGE, pv, ph, m, first, last);
		if (b.rls)
		{
			int64	   *tally = palloc0(sizeof(int64) * Max(m, 1));

			rows.n = 0;
			collect_rows(&b, GI_OP_RANGE, m, first, last, 0, &rows);
			for (i = 0; i < rows.n; i++)
				tally[rows.rows[i].probe]++;
			for (i = 0; i < m; i++)
				counts[pidx[i]] = Int64GetDatum(tally[i]);
			pfree(tally);
		}
		else
		{
			for (i = 0; i < m; i++)
				counts[pidx[i]] = Int64GetDatum(last[i] > first[i] ?
												count_visible(&b, first[i], last[i]) : 0);
		}
	}
	batch_close(&b);

	dims[0] = n;
	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	PG_RETURN_ARRAYTYPE_P(construct_md_array(counts, countnull, 1, dims, lbs, INT8OID,
											 sizeof(int64), FLOAT8PASSBYVAL,
											 TYPALIGN_DOUBLE));
}

/* Append "name": {timings} to a JSON text. */
static void
append_timings(StringInfo s, const char *name, const GiTimings *t)
{
	appendStringInfo(s, ", \"%s\": {\"transfer\": %.3f, \"sort\": %.3f, \"build\": %.3f, "
					 "\"search\": %.3f, \"total\": %.3f}",
					 name, t->transfer_ms, t->sort_ms, t->build_ms, t->search_ms,
					 t->total_ms);
}

/*
 * The included columns (name, type, bytes per entry) and the bytes the
 * image's rows of them take on the host, and on the device (device_bytes:
 * the columns a GPU image keeps for GpuIndexAgg, gi_image_attach_columns;
 * 0 until a query added them up there).
 */
static void
append_included(StringInfo s, Relation index, const GpuidxImageData *img,
				uint64 device_bytes)
{
	const GpuidxLayout *layout = gpuidx_layout(index);
	TupleDesc	desc = RelationGetDescr(index);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	int			c;

	appendStringInfoString(s, ", \"included_columns\": [");
	for (c = 0; c < layout->ninclude; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, nkeys + c);

		appendStringInfoString(s, c > 0 ? ", {\"name\": " : "{\"name\": ");
		escape_json(s, NameStr(att->attname));
		appendStringInfoString(s, ", \"type\": ");
		escape_json(s, format_type_be(att->atttypid));
		appendStringInfo(s, ", \"bytes\": %d}", layout->width[c]);
	}
	appendStringInfo(s, "], \"include_host_bytes\": " UINT64_FORMAT
					 ", \"include_device_bytes\": " UINT64_FORMAT,
					 (uint64) (img->n + img->nnull) * img->row_bytes, device_bytes);
}

PG_FUNCTION_INFO_V1(gpuidx_info);
/* gpuidx_info(idx): what the index and its loaded image look like. */
Datum
gpuidx_info(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Batch		b;
	GiImageInfo info;
	StringInfoData s;
	GpuidxImageData *img;

	batch_open(&b, indexoid);
	img = b.img;
	/* what the loaded image looks like: its engine image too */
	gpuidx_image_build_engine(img);
	gi_image_info(img->image, &info);
	/* service mode: the service holds (and builds) the engine image */
	if (img->shared &&
		!gpuidx_service_image_info(img, img->wanted_engine, &info))
		memset(&info, 0, sizeof(info));

	initStringInfo(&s);
	appendStringInfo(&s, "{\"structure\": \"%s\", \"engine\": \"%s\", \"key_bytes\": %d",
					 gi_structure_name(img->structure), gi_engine_name(img->engine),
					 img->key_bytes);
	appendStringInfo(&s, ", \"entries\": " INT64_FORMAT ", \"base_entries\": " UINT64_FORMAT
					 ", \"pending_entries\": " UINT64_FORMAT ", \"null_entries\": " INT64_FORMAT ", \"generation\": " UINT64_FORMAT,
					 img->n, img->base_count, img->pending_count, img->nnull, img->generation);
	{
		int			lane,
					used = 0;

		for (lane = 0; lane < GPUIDX_LANES; lane++)
			if (img->lane_count[lane] > 0)
				used++;
		appendStringInfo(&s, ", \"pending_lanes\": %d", used);
	}
	appendStringInfo(&s, ", \"delta_entries\": " INT64_FORMAT, img->ndelta);
	appendStringInfo(&s, ", \"distinct_keys\": " UINT64_FORMAT ", \"levels\": %d"
					 ", \"node_order\": %d, \"internal_nodes\": " UINT64_FORMAT,
					 (uint64) info.distinct_keys, info.levels, info.node_order,
					 (uint64) info.nodes);
	if (img->structure == GI_STRUCT_VEB)
		appendStringInfo(&s, ", \"clusters\": " UINT64_FORMAT ", \"hash_bytes\": " UINT64_FORMAT
						 ", \"space_overhead\": %.3f",
						 (uint64) info.clusters, (uint64) info.hash_bytes, info.space_overhead);
	appendStringInfo(&s, ", \"host_bytes\": " UINT64_FORMAT ", \"device_bytes\": " UINT64_FORMAT,
					 (uint64) info.host_bytes +
					 (uint64) img->n * (sizeof(int64) + sizeof(uint64) + img->row_bytes) +
					 (uint64) img->nnull * img->row_bytes,
					 (uint64) info.device_bytes);
	appendStringInfo(&s, ", \"service\": %s", img->shared ? "true" : "false");
	append_included(&s, b.index, img, info.include_device_bytes);
	appendStringInfoString(&s, ", \"device\": ");
	escape_json(&s, info.device_name);
	appendStringInfo(&s, ", \"load_ms\": %.3f", img->load_ms);
	append_timings(&s, "build_ms", &info.build);
	append_timings(&s, "last_query_ms", &info.last_query);
	appendStringInfo(&s, ", \"inserted\": " UINT64_FORMAT ", \"insert_batches\": " UINT64_FORMAT,
					 (uint64) info.inserted, (uint64) info.insert_batches);
	append_timings(&s, "last_insert_ms", &info.last_insert);
	{
		int64		images;
		uint64		host_bytes;

		/* What this backend's image cache holds, this image included. */
		gpuidx_cache_usage(&images, &host_bytes);
		appendStringInfo(&s, ", \"cache_images\": " INT64_FORMAT
						 ", \"cache_host_bytes\": " UINT64_FORMAT, images, host_bytes);
	}
	appendStringInfoChar(&s, '}');

	batch_close(&b);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data)));
}
