/*
 * insert.c - aminsert: append to this backend's pending lane; fold all lanes
 * into the base run once their sum passes gpuidx.pending_limit (the sum, not
 * one lane's count times the lanes, so the limit means what it says however
 * the inserts spread).  Rows with a NULL key go to their own list.
 */
#include "gpuidx.h"

/* Index one new heap tuple. */
bool
gpuidx_insert(Relation index, Datum *values, bool *isnull,
			  ItemPointer heap_tid, Relation heap,
			  IndexUniqueCheck checkUnique, bool indexUnchanged,
			  IndexInfo *indexInfo)
{
	Oid			keytype = TupleDescAttr(RelationGetDescr(index), 0)->atttypid;
	const GpuidxLayout *layout = gpuidx_layout(index);
	char		row[sizeof(uint16) + GPUIDX_MAX_INCLUDE * sizeof(int64)];
	const char *rowp = NULL;
	uint64		pending;

	if (layout->ninclude > 0)
	{
		/* The included columns follow the key in values[]. */
		gpuidx_form_row(layout, values + 1, isnull + 1, row);
		rowp = row;
	}
	if (isnull[0])
	{
		/* Kept apart: only full scans and IS NULL return these. */
		gpuidx_append(index, GPUIDX_PAGE_NULL, 0, heap_tid, rowp, 0, &pending);
		return false;
	}
	gpuidx_append(index, GPUIDX_PAGE_PENDING,
				  gpuidx_datum_to_key(values[0], keytype), heap_tid, rowp,
				  (uint64) gpuidx_pending_limit, &pending);
	if (pending >= (uint64) gpuidx_pending_limit)
		gpuidx_fold_pending(index, gpuidx_pending_limit);
	return false;
}
