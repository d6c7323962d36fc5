/*
 * heapvisit.h - visiting the heap a page at a time for a list of TIDs in
 * heap order (heapvisit.c), as a bitmap heap scan does.
 */
#ifndef GPUIDX_HEAPVISIT_H
#define GPUIDX_HEAPVISIT_H

#include "postgres.h"

#include "access/htup.h"
#include "storage/block.h"
#include "storage/buf.h"
#include "utils/palloc.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * Called for each TID whose HOT chain has a member the snapshot sees: i is
 * the TID's index in the caller's list, tid that member's TID, tuple the
 * member itself (it points into the page, share-locked during the call).
 */
typedef void (*GpuidxHeapVisitFn) (void *arg, int64 i, ItemPointer tid,
								   HeapTuple tuple);

/*
 * The visibility map of one heap relation with every map page read so far
 * kept pinned: hits in random heap order would otherwise trade the one
 * cached map buffer of VM_ALL_VISIBLE for another at nearly every call (a
 * table of 10^8 rows has ~40 map pages).  Release with gpuidx_vismap_release.
 */
typedef struct GpuidxVisMap
{
	Relation	heap;
	MemoryContext cxt;			/* holds bufs */
	int			nbufs;
	Buffer	   *bufs;			/* per map page, InvalidBuffer until read */
} GpuidxVisMap;

extern void gpuidx_vismap_init(GpuidxVisMap *vm, Relation heap);
extern bool gpuidx_vismap_all_visible(GpuidxVisMap *vm, BlockNumber blk);
extern void gpuidx_vismap_release(GpuidxVisMap *vm);

/*
 * A copy of a table's visibility map for its first nblocks heap blocks: the
 * map pages' bytes laid end to end, BITS_PER_HEAPBLOCK bits a block (four
 * blocks a byte), bit 0 of a block's pair all-visible (visibilitymap.c's
 * layout).  all_set: every one of those blocks is all-visible.
 */
typedef struct GpuidxVisMapCopy
{
	uint8	   *bits;
	BlockNumber nblocks;
	bool		all_set;
} GpuidxVisMapCopy;

extern void gpuidx_vismap_copy(Relation heap, BlockNumber nblocks, MemoryContext cxt,
							   GpuidxVisMapCopy *copy);

/* Whether block blk is all-visible in a copy (blocks past it: not). */
static inline bool
gpuidx_vismap_copy_test(const GpuidxVisMapCopy *copy, BlockNumber blk)
{
	if (blk >= copy->nblocks)
		return false;
	return copy->all_set || ((copy->bits[blk / 4] >> ((blk % 4) * 2)) & 1) != 0;
}

extern Buffer gpuidx_heap_visit_page(Relation heap, Snapshot snapshot,
									 const uint64 *tids, int64 ntids,
									 int64 *next, GpuidxHeapVisitFn visit,
									 void *arg);

#endif							/* GPUIDX_HEAPVISIT_H */
