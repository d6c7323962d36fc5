/*
 * outerpage.h - reading the rest of an outer sequential scan's current heap
 * page in place (outerpage.c), so that a join gathering millions of outer
 * rows pays the executor's per-row path once a page instead of once a row.
 */
#ifndef GPUIDX_OUTERPAGE_H
#define GPUIDX_OUTERPAGE_H

#include "postgres.h"

#include "access/htup.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"

/*
 * The outer plan when it is a plain heap SeqScan (no qual, no projection),
 * and a heap-tuple slot that shows the page's rows one at a time.
 */
typedef struct GpuidxOuterPage
{
	SeqScanState *scan;			/* NULL: rows come only through ExecProcNode */
	TupleTableSlot *slot;		/* TTSOpsHeapTuple, over tuple when asked */
	HeapTupleData tuple;		/* the row last read in place (in the page) */
	int64		rows_in_place;	/* rows read in place (EXPLAIN) */
	AttrNumber	fixed_attnum;	/* gpuidx_outer_page_column's column ... */
	int			fixed_off;		/* ... its offset in a row without NULLs when
								 * every column before it is fixed-width, else
								 * -1 */
} GpuidxOuterPage;

extern void gpuidx_outer_page_init(GpuidxOuterPage *op, PlanState *outer, EState *estate);
extern HeapTuple gpuidx_outer_page_next(GpuidxOuterPage *op);
extern int	gpuidx_outer_page_column(GpuidxOuterPage *op, AttrNumber attnum,
									 Datum *values, bool *nulls, int max);

/* The row gpuidx_outer_page_next returned last, in op->slot. */
static inline TupleTableSlot *
gpuidx_outer_page_slot(GpuidxOuterPage *op)
{
	return ExecStoreHeapTuple(&op->tuple, op->slot, false);
}

#endif							/* GPUIDX_OUTERPAGE_H */
