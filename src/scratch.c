/*
 * scratch.c - one block of memory a backend keeps from query to query for
 * the per-row arrays of a join's chunk.
 *
 * GpuIndexJoin gathers up to gpuidx.batch_chunk outer rows a chunk and
 * keeps about 34 bytes of arrays a row (probes, answers, flags): 36 MB at
 * the default chunk.  Freshly allocated every query, that memory comes from
 * the kernel each time, and faulting in and zeroing its pages cost 5-15 ms
 * a query of 10^6 rows (measured on the 2-core VM and the H100 host), as
 * much as the GPU's whole search.  So the block stays with the backend,
 * taken by one join at a time; a second join running at once in the same
 * backend (a nested join, a cursor) gets ordinary memory.  The block is
 * handed back when the join ends, or at the end of the top-level
 * transaction should the join have been abandoned by an error.  A backend
 * keeps at most GPUIDX_SCRATCH_MAX bytes this way.  Where the join runs on
 * a GPU image of the backend's own, the block is page-locked once
 * (gpuidx_scratch_pin), so that probes and answers are copied to and from
 * the device directly.
 */
#include "gpuidx.h"

#include "access/xact.h"
#include "utils/memutils.h"

static char *scratch_raw;		/* as allocated */
static char *scratch_block;		/* 2 MB aligned inside it */
static Size scratch_size;
static bool scratch_busy;
static bool scratch_pinned;		/* page-locked for the GPU (gi_host_pin) */
static bool scratch_callback_registered;

#define SCRATCH_ALIGN	((Size) 2 << 20)

/* A transaction that ends frees the block for the next join. */
static void
scratch_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		scratch_busy = false;
}

/*
 * The backend's scratch block, at least size bytes, for the caller alone
 * until gpuidx_scratch_give; NULL when another join holds it or size is
 * over GPUIDX_SCRATCH_MAX (then the caller allocates for itself).  Its
 * contents are whatever the last user left.
 */
void *
gpuidx_scratch_take(Size size)
{
	if (scratch_busy || size > GPUIDX_SCRATCH_MAX)
		return NULL;
	if (!scratch_callback_registered)
	{
		RegisterXactCallback(scratch_xact_callback, NULL);
		scratch_callback_registered = true;
	}
	if (scratch_size < size)
	{
		if (scratch_pinned)
			gi_host_unpin(scratch_block);
		scratch_pinned = false;
		if (scratch_raw)
			pfree(scratch_raw);
		scratch_raw = scratch_block = NULL;
		scratch_size = 0;
		/* on a 2 MB boundary: huge pages from its start */
		scratch_raw = MemoryContextAllocHuge(TopMemoryContext, size + SCRATCH_ALIGN);
		scratch_block = (char *) TYPEALIGN(SCRATCH_ALIGN, scratch_raw);
		scratch_size = size;
		gi_advise_huge_pages(scratch_block, size);
	}
	scratch_busy = true;
	return scratch_block;
}

/*
 * Page-lock the block for the GPU engine (the join's caller uses the GPU
 * already), once: its probes and answers then go to and from the device
 * without the engine's staging copies.  Nothing happens if it fails.
 */
void
gpuidx_scratch_pin(void *block)
{
	Assert(block == scratch_block);
	if (!scratch_pinned)
		scratch_pinned = gi_host_pin(scratch_block, scratch_size);
}

/* Hand the block gpuidx_scratch_take gave back. */
void
gpuidx_scratch_give(void *block)
{
	Assert(block == scratch_block);
	scratch_busy = false;
}
