/*
 * scratch.c - blocks of memory a backend keeps from query to query for a
 * join's per-row arrays and the positions its sink collects.
 *
 * GpuIndexJoin gathers up to gpuidx.batch_chunk outer rows a chunk and
 * keeps about 34 bytes of arrays a row (probes, answers, flags): 36 MB at
 * the default chunk; a GpuIndexAgg over it collects up to 2^20 image
 * positions (8 MB).  Freshly allocated every query, that memory comes from
 * the kernel each time, and faulting in and zeroing its pages cost 5-15 ms
 * a query of 10^6 rows (measured on the 2-core VM and the H100 host), as
 * much as the GPU's whole search.  So each use's block stays with the
 * backend, taken by one node at a time; a second one running at once in
 * the same backend (a nested join, a cursor) gets ordinary memory.  A
 * block is handed back when its node ends, or at the end of the top-level
 * transaction should the node have been abandoned by an error.  A backend
 * keeps at most GPUIDX_SCRATCH_MAX bytes a use this way.  Where the join
 * runs on a GPU image of the backend's own, its row block is page-locked
 * once (gpuidx_scratch_pin), so that probes and answers are copied to and
 * from the device directly.
 */
#include "gpuidx.h"

#include "access/xact.h"
#include "utils/memutils.h"

/* One use's block. */
typedef struct ScratchBlock
{
	char	   *raw;			/* as allocated */
	char	   *block;			/* 2 MB aligned inside it */
	Size		size;
	bool		busy;
	bool		pinned;			/* page-locked for the GPU (gi_host_pin) */
} ScratchBlock;

static ScratchBlock scratch[GPUIDX_SCRATCH_USES];
static bool scratch_callback_registered;

#define SCRATCH_ALIGN	((Size) 2 << 20)

/* A transaction that ends frees the blocks for the next nodes. */
static void
scratch_xact_callback(XactEvent event, void *arg)
{
	int			u;

	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		for (u = 0; u < GPUIDX_SCRATCH_USES; u++)
			scratch[u].busy = false;
}

/*
 * The backend's block for use, at least size bytes, for the caller alone
 * until gpuidx_scratch_give; NULL when another node holds it or size is
 * over GPUIDX_SCRATCH_MAX (then the caller allocates for itself).  Its
 * contents are whatever the last user left.
 */
void *
gpuidx_scratch_take(GpuidxScratchUse use, Size size)
{
	ScratchBlock *sb = &scratch[use];

	if (sb->busy || size > GPUIDX_SCRATCH_MAX)
		return NULL;
	if (!scratch_callback_registered)
	{
		RegisterXactCallback(scratch_xact_callback, NULL);
		scratch_callback_registered = true;
	}
	if (sb->size < size)
	{
		if (sb->pinned)
			gi_host_unpin(sb->block);
		sb->pinned = false;
		if (sb->raw)
			pfree(sb->raw);
		sb->raw = sb->block = NULL;
		sb->size = 0;
		/* on a 2 MB boundary: huge pages from its start */
		sb->raw = MemoryContextAllocHuge(TopMemoryContext, size + SCRATCH_ALIGN);
		sb->block = (char *) TYPEALIGN(SCRATCH_ALIGN, sb->raw);
		sb->size = size;
		gi_advise_huge_pages(sb->block, size);
	}
	sb->busy = true;
	return sb->block;
}

/*
 * Page-lock the block for the GPU engine (the join's caller uses the GPU
 * already), once: its probes and answers then go to and from the device
 * without the engine's staging copies.  Nothing happens if it fails.
 */
void
gpuidx_scratch_pin(GpuidxScratchUse use, void *block)
{
	ScratchBlock *sb = &scratch[use];

	Assert(block == sb->block);
	if (!sb->pinned)
		sb->pinned = gi_host_pin(sb->block, sb->size);
}

/* Hand back the block gpuidx_scratch_take gave for use. */
void
gpuidx_scratch_give(GpuidxScratchUse use, void *block)
{
	Assert(block == scratch[use].block);
	scratch[use].busy = false;
}
