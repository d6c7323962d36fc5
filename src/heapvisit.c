/*
 * heapvisit.c - the one place that reads heap pages for a sorted list of
 * hit TIDs: one pin and one share lock per page find every visible tuple of
 * that page (following HOT chains), as a bitmap heap scan does, instead of
 * one table_index_fetch_tuple call (pin, lock, unlock) per hit.  Used by the
 * batch functions (batch.c) and GpuIndexScan (customscan_exec.c) on heap
 * tables; what a caller does with a visible tuple (recheck its key, return
 * it later from the pinned page) is its callback's business.
 */
#include "gpuidx.h"
#include "heapvisit.h"

#include "access/heapam.h"
#include "access/visibilitymap.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"

/*
 * Heap blocks one visibility map page covers, as visibilitymap.c computes
 * it (two bits a block).  Only the caching depends on it: each call still
 * goes through visibilitymap_get_status, which reads the right map page.
 */
#define HEAPBLOCKS_PER_VM_PAGE \
	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * (BITS_PER_BYTE / BITS_PER_HEAPBLOCK))

/*
 * Start a visibility map cache for heap (nothing pinned yet); it lives in
 * the current memory context.
 */
void
gpuidx_vismap_init(GpuidxVisMap *vm, Relation heap)
{
	vm->heap = heap;
	vm->cxt = CurrentMemoryContext;
	vm->nbufs = 0;
	vm->bufs = NULL;
}

/*
 * Is heap block blk all-visible?  The map page's buffer stays pinned in the
 * cache for the next block it covers.
 */
bool
gpuidx_vismap_all_visible(GpuidxVisMap *vm, BlockNumber blk)
{
	int			m = (int) (blk / HEAPBLOCKS_PER_VM_PAGE);

	if (m >= vm->nbufs)
	{
		int			n = Max(m + 1, vm->nbufs * 2);
		int			i;

		vm->bufs = vm->bufs ? repalloc(vm->bufs, sizeof(Buffer) * n) :
			MemoryContextAlloc(vm->cxt, sizeof(Buffer) * n);
		for (i = vm->nbufs; i < n; i++)
			vm->bufs[i] = InvalidBuffer;
		vm->nbufs = n;
	}
	return VM_ALL_VISIBLE(vm->heap, blk, &vm->bufs[m]);
}

/* Unpin every map page the cache holds. */
void
gpuidx_vismap_release(GpuidxVisMap *vm)
{
	int			i;

	for (i = 0; i < vm->nbufs; i++)
	{
		if (BufferIsValid(vm->bufs[i]))
			ReleaseBuffer(vm->bufs[i]);
		vm->bufs[i] = InvalidBuffer;
	}
}

/*
 * Visit the heap page of tids[*next] (packed TIDs, sorted so that a page's
 * TIDs are adjacent): every TID of that page from *next on is looked up
 * under one share lock, visit is called for those the snapshot sees, and
 * *next moves past them.  The page comes back pinned and unlocked, so that
 * the caller may return tuples from it; the caller releases it.
 */
Buffer
gpuidx_heap_visit_page(Relation heap, Snapshot snapshot, const uint64 *tids,
					   int64 ntids, int64 *next, GpuidxHeapVisitFn visit,
					   void *arg)
{
	BlockNumber blk = (BlockNumber) (tids[*next] >> 16);
	Buffer		buf;
	OffsetNumber maxoff;

	CHECK_FOR_INTERRUPTS();
	buf = ReadBuffer(heap, blk);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	maxoff = PageGetMaxOffsetNumber(BufferGetPage(buf));
	for (; *next < ntids && (BlockNumber) (tids[*next] >> 16) == blk; (*next)++)
	{
		ItemPointerData tid;
		HeapTupleData tuple;
		bool		all_dead = false;

		gpuidx_tid_unpack(tids[*next], &tid);
		if (ItemPointerGetOffsetNumber(&tid) <= maxoff &&
			heap_hot_search_buffer(&tid, heap, buf, snapshot, &tuple,
								   &all_dead, true))
			visit(arg, *next, &tid, &tuple);
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return buf;
}

/*
 * The visibility map's on-disk layout (visibilitymap.c): after the page
 * header, BITS_PER_HEAPBLOCK bits per heap block, four blocks a byte, bit 0
 * of a block's pair all-visible.  The bytes of consecutive map pages laid
 * end to end are therefore one array indexed by heap block.
 */
#define VM_MAPSIZE			(BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define VM_BLOCKS_PER_BYTE	(BITS_PER_BYTE / BITS_PER_HEAPBLOCK)
#define VM_BLOCKS_PER_PAGE	(VM_MAPSIZE * VM_BLOCKS_PER_BYTE)

/*
 * Is the all-visible bit of every one of the first nblocks blocks set in a
 * copy of the map?  (Then the host loop tests an entry's block against the
 * table's length instead of reading the bitmap.)
 */
static bool
vismap_all_set(const uint8 *vm, BlockNumber nblocks)
{
	/* bit 0 of each block's pair: the even bits of a byte */
	const uint8 all = 0x55;
	Size		full = nblocks / VM_BLOCKS_PER_BYTE;
	Size		i;
	int			b;

	for (i = 0; i < full; i++)
		if ((vm[i] & all) != all)
			return false;
	for (b = 0; b < (int) (nblocks % VM_BLOCKS_PER_BYTE); b++)
		if (((vm[full] >> (b * BITS_PER_HEAPBLOCK)) & 1) == 0)
			return false;
	return true;
}

/*
 * Copy the visibility map of the table's first nblocks blocks (one read of
 * each map page, under a share lock); a map page that does not exist yet
 * reads as zeros (nothing all-visible).
 */
void
gpuidx_vismap_copy(Relation heap, BlockNumber nblocks, MemoryContext cxt,
				   GpuidxVisMapCopy *copy)
{
	Size		bytes = ((Size) nblocks + VM_BLOCKS_PER_BYTE - 1) / VM_BLOCKS_PER_BYTE;
	Buffer		buf = InvalidBuffer;
	BlockNumber first;

	copy->bits = MemoryContextAllocHuge(cxt, Max(bytes, 1));
	memset(copy->bits, 0, Max(bytes, 1));
	copy->nblocks = nblocks;
	for (first = 0; first < nblocks; first += VM_BLOCKS_PER_PAGE)
	{
		Size		at = first / VM_BLOCKS_PER_BYTE;
		Size		n = Min((Size) VM_MAPSIZE, bytes - at);

		/* (pins the map page that covers first, if it exists) */
		visibilitymap_get_status(heap, first, &buf);
		if (!BufferIsValid(buf) ||
			BufferGetBlockNumber(buf) != first / VM_BLOCKS_PER_PAGE)
			continue;
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(copy->bits + at, PageGetContents(BufferGetPage(buf)), n);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	copy->all_set = vismap_all_set(copy->bits, nblocks);
}
