/*
 * heapvisit.h - visiting the heap a page at a time for a list of TIDs in
 * heap order (heapvisit.c), as a bitmap heap scan does.
 */
#ifndef GPUIDX_HEAPVISIT_H
#define GPUIDX_HEAPVISIT_H

#include "postgres.h"

#include "access/htup.h"
#include "storage/buf.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * Called for each TID whose HOT chain has a member the snapshot sees: i is
 * the TID's index in the caller's list, tid that member's TID, tuple the
 * member itself (it points into the page, share-locked during the call).
 */
typedef void (*GpuidxHeapVisitFn) (void *arg, int64 i, ItemPointer tid,
								   HeapTuple tuple);

extern Buffer gpuidx_heap_visit_page(Relation heap, Snapshot snapshot,
									 const uint64 *tids, int64 ntids,
									 int64 *next, GpuidxHeapVisitFn visit,
									 void *arg);

#endif							/* GPUIDX_HEAPVISIT_H */
