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
 * keeps at most GPUIDX_SCRATCH_MAX bytes this way.
 */
#include "gpuidx.h"

#include "access/xact.h"
#include "utils/memutils.h"

static char *scratch_block;
static Size scratch_size;
static bool scratch_busy;
static bool scratch_callback_registered;

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
		if (scratch_block)
			pfree(scratch_block);
		scratch_block = NULL;
		scratch_size = 0;
		scratch_block = MemoryContextAllocHuge(TopMemoryContext, size);
		scratch_size = size;
		gi_advise_huge_pages(scratch_block, size);
	}
	scratch_busy = true;
	return scratch_block;
}

/* Hand the block gpuidx_scratch_take gave back. */
void
gpuidx_scratch_give(void *block)
{
	Assert(block == scratch_block);
	scratch_busy = false;
}
