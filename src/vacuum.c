/*
 * vacuum.c - rewriting the base run: VACUUM's bulk delete, folding the
 * pending list, and the cleanup that returns free pages to the FSM.
 *
 * A rewrite writes a complete new base run (old base plus every pending
 * lane) into free or new pages, then switches the metapage to it and empties
 * all lanes in one WAL record and bumps the generation; only then are the
 * old pages marked free.  A crash before the switch leaves
 * the old run intact.  The metapage is locked exclusively for the whole
 * rewrite, so inserts wait for it (documented in README).
 */
#include "gpuidx.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"

/* Mark every page of a chain free and tell the FSM. */
static void
free_chain(Relation index, BlockNumber blkno)
{
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		GenericXLogState *state;
		Page		page;
		BlockNumber next;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		next = GpuidxPageGetOpaque(page)->next;
		gpuidx_init_page(page, GPUIDX_PAGE_FREE);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
		RecordFreeIndexPage(index, blkno);
		blkno = next;
	}
}

/* Is (ka, ta) before (kb, tb) in index order? */
static inline bool
entry_less(int64 ka, uint64 ta, int64 kb, uint64 tb)
{
	return ka < kb || (ka == kb && ta < tb);
}

/*
 * Rewrite the index: keep the entries for which keep() says so (all when
 * keep is NULL), merge every pending lane in, and switch to the new run.
 * Does nothing when keep is NULL and fewer than min_pending entries are
 * pending (in all lanes together).  *kept and *removed (may be NULL) receive the counts.
 */
void
gpuidx_rewrite(Relation index, GpuidxKeepCallback keep, void *state,
			   int64 min_pending, int64 *kept, int64 *removed)
{
	Buffer		metabuf;
	GpuidxMetaPageData meta;
	int64		nbase,
				npending,
				nb = 0,
				np = 0,
				i,
				j,
				o;
	int64	   *keys;
	uint64	   *tids;
	int64	   *out_keys;
	uint64	   *out_tids;
	char	   *rows = NULL;
	char	   *out_rows = NULL;
	int			rb = gpuidx_layout(index)->row_bytes;
	BlockNumber head;
	BlockNumber null_head,
				null_tail;
	int64		nnull,
				null_kept;
	GenericXLogState *xstate;
	GpuidxMetaPageData *m;
	GpuidxPendingCounts pending;
	bool		chains_ok;
	int			lane;

	metabuf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	gpuidx_copy_meta(index, BufferGetPage(metabuf), &meta);
	gpuidx_count_pending(index, &meta, &pending);
	if (keep == NULL && (int64) pending.total < Max(min_pending, 1))
	{
		UnlockReleaseBuffer(metabuf);
		if (kept)
			*kept = meta.base_count + pending.total + meta.null_count;
		if (removed)
			*removed = 0;
		return;
	}

	/* The exclusive lock keeps appenders out: every lane is read whole. */
	nbase = meta.base_count;
	npending = pending.total;
	keys = gpuidx_alloc_huge(sizeof(int64) * (nbase + npending));
	tids = gpuidx_alloc_huge(sizeof(uint64) * (nbase + npending));
	if (rb > 0)
		rows = gpuidx_alloc_huge((Size) rb * (nbase + npending));
	chains_ok = gpuidx_read_chain(index, meta.base_head, GPUIDX_PAGE_BASE, 0,
								  nbase, keys, tids, rows);
	for (lane = 0, i = nbase; chains_ok && lane < GPUIDX_LANES; lane++)
	{
		chains_ok = gpuidx_read_chain(index, meta.lanes[lane].head,
									  GPUIDX_PAGE_PENDING, 0, pending.lane[lane],
									  keys + i, tids + i,
									  rows ? rows + (Size) i * rb : NULL);
		i += pending.lane[lane];
	}
	if (!chains_ok)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has a broken page chain",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));

	/* Filter each part in place, keeping order. */
	for (i = 0; i < nbase + npending; i++)
	{
		ItemPointerData tid;

		if ((i & 0xFFFF) == 0)
			vacuum_delay_point();
		if (keep)
		{
			gpuidx_tid_unpack(tids[i], &tid);
			if (!keep(&tid, state))
				continue;
		}
		o = i < nbase ? nb++ : nbase + np++;
		keys[o] = keys[i];
		tids[o] = tids[i];
		if (rows && o != i)
			memcpy(rows + (Size) o * rb, rows + (Size) i * rb, rb);
	}
	gpuidx_sort_entries(keys + nbase, tids + nbase,
						rows ? rows + (Size) nbase * rb : NULL, rb, np);

	/* Merge the sorted base part and the sorted pending part. */
	out_keys = gpuidx_alloc_huge(sizeof(int64) * (nb + np));
	out_tids = gpuidx_alloc_huge(sizeof(uint64) * (nb + np));
	if (rows)
		out_rows = gpuidx_alloc_huge((Size) rb * (nb + np));
	for (i = 0, j = nbase, o = 0; i < nb || j < nbase + np; o++)
	{
		int64		from;

		if (j >= nbase + np ||
			(i < nb && entry_less(keys[i], tids[i], keys[j], tids[j])))
			from = i++;
		else
			from = j++;
		out_keys[o] = keys[from];
		out_tids[o] = tids[from];
		if (rows)
			memcpy(out_rows + (Size) o * rb, rows + (Size) from * rb, rb);
	}
	pfree(keys);
	pfree(tids);
	if (rows)
		pfree(rows);

	head = gpuidx_write_chain(index, out_keys, out_tids, out_rows, nb + np,
							  GPUIDX_PAGE_BASE, NULL);

	/* The NULL-key TIDs: filtered by VACUUM, left alone by a fold. */
	nnull = meta.null_count;
	null_kept = nnull;
	null_head = meta.null_head;
	null_tail = meta.null_tail;
	if (keep && nnull > 0)
	{
		int64	   *nk = gpuidx_alloc_huge(sizeof(int64) * nnull);
		uint64	   *nt = gpuidx_alloc_huge(sizeof(uint64) * nnull);
		char	   *nr = rb > 0 ? gpuidx_alloc_huge((Size) rb * nnull) : NULL;

		if (!gpuidx_read_chain(index, meta.null_head, GPUIDX_PAGE_NULL, 0,
							   nnull, nk, nt, nr))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" has a broken page chain",
							RelationGetRelationName(index)),
					 errhint("REINDEX the index.")));
		null_kept = 0;
		for (i = 0; i < nnull; i++)
		{
			ItemPointerData tid;

			gpuidx_tid_unpack(nt[i], &tid);
			if (keep(&tid, state))
			{
				if (nr && null_kept != i)
					memcpy(nr + (Size) null_kept * rb, nr + (Size) i * rb, rb);
				nk[null_kept] = 0;
				nt[null_kept++] = nt[i];
			}
		}
		if (null_kept < nnull)
			null_head = gpuidx_write_chain(index, nk, nt, nr, null_kept,
										   GPUIDX_PAGE_NULL, &null_tail);
		pfree(nk);
		pfree(nt);
		if (nr)
			pfree(nr);
	}

	xstate = GenericXLogStart(index);
	m = GpuidxPageGetMeta(GenericXLogRegisterBuffer(xstate, metabuf, 0));
	m->base_head = head;
	m->base_count = nb + np;
	gpuidx_meta_clear_lanes(m);
	m->null_head = null_head;
	m->null_tail = null_tail;
	m->null_count = null_kept;
	if (nb + np == nbase + npending && null_kept == nnull)
	{
		/* Nothing removed: images of the old generation can follow. */
		m->folded_from = meta.generation;
		m->folded_entries = nbase + npending;
	}
	else
	{
		m->folded_from = 0;
		m->folded_entries = 0;
	}
	m->generation++;
	GenericXLogFinish(xstate);

	free_chain(index, meta.base_head);
	for (lane = 0; lane < GPUIDX_LANES; lane++)
		free_chain(index, meta.lanes[lane].head);
	if (null_kept < nnull)
		free_chain(index, meta.null_head);
	UnlockReleaseBuffer(metabuf);

	/*
	 * Entries were removed: VACUUM frees their heap TIDs once we return, so
	 * first let every scan that may still hold an image with them end (the
	 * scan interlock, cache.c).
	 */
	if (nb + np < nbase + npending || null_kept < nnull)
		gpuidx_wait_for_scans(index);

	pfree(out_keys);
	pfree(out_tids);
	if (out_rows)
		pfree(out_rows);
	if (kept)
		*kept = nb + np + null_kept;
	if (removed)
		*removed = (nbase + npending) - (nb + np) + (nnull - null_kept);
}

/* Fold the pending lanes into the base run if at least min_pending wait. */
void
gpuidx_fold_pending(Relation index, int64 min_pending)
{
	gpuidx_rewrite(index, NULL, NULL, min_pending, NULL, NULL);
}

typedef struct BulkDeleteState
{
	IndexBulkDeleteCallback callback;
	void	   *callback_state;
} BulkDeleteState;

/* Keep an entry unless VACUUM says its heap tuple is dead. */
static bool
keep_live(ItemPointer tid, void *state)
{
	BulkDeleteState *bds = (BulkDeleteState *) state;

	return !bds->callback(tid, bds->callback_state);
}

/* VACUUM: remove entries of dead heap tuples (and fold the pending list). */
IndexBulkDeleteResult *
gpuidx_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				  IndexBulkDeleteCallback callback, void *callback_state)
{
	BulkDeleteState bds;
	int64		kept,
				removed;

	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	bds.callback = callback;
	bds.callback_state = callback_state;
	gpuidx_rewrite(info->index, keep_live, &bds, 0, &kept, &removed);
	stats->tuples_removed += removed;
	stats->num_index_tuples = kept;
	return stats;
}

/* Mark each block of a chain reachable. */
static void
mark_chain(Relation index, BlockNumber blkno, bool *reachable, BlockNumber npages)
{
	while (blkno != InvalidBlockNumber && blkno < npages && !reachable[blkno])
	{
		Buffer		buf = ReadBuffer(index, blkno);
		BlockNumber next;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		next = GpuidxPageGetOpaque(BufferGetPage(buf))->next;
		UnlockReleaseBuffer(buf);
		reachable[blkno] = true;
		blkno = next;
	}
}

/*
 * Free the pages no chain reaches: left by a crash between writing a new
 * base run and switching the metapage to it.  The metapage stays locked so
 * that no append or rewrite runs meanwhile.
 */
static void
reclaim_orphans(Relation index, BufferAccessStrategy strategy)
{
	Buffer		metabuf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);
	GpuidxMetaPageData meta;
	BlockNumber npages,
				blkno;
	bool	   *reachable;
	int			lane;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	gpuidx_copy_meta(index, BufferGetPage(metabuf), &meta);
	npages = RelationGetNumberOfBlocks(index);
	reachable = palloc0(sizeof(bool) * Max(npages, 1));
	reachable[GPUIDX_METAPAGE_BLKNO] = true;
	mark_chain(index, meta.base_head, reachable, npages);
	for (lane = 0; lane < GPUIDX_LANES; lane++)
		mark_chain(index, meta.lanes[lane].head, reachable, npages);
	mark_chain(index, meta.null_head, reachable, npages);
	for (blkno = GPUIDX_METAPAGE_BLKNO + 1; blkno < npages; blkno++)
	{
		Buffer		buf;
		Page		page;

		if (reachable[blkno])
			continue;
		vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page) && !(GpuidxPageGetOpaque(page)->flags & GPUIDX_PAGE_FREE))
		{
			GenericXLogState *state = GenericXLogStart(index);

			gpuidx_init_page(GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE),
							 GPUIDX_PAGE_FREE);
			GenericXLogFinish(state);
		}
		UnlockReleaseBuffer(buf);
	}
	UnlockReleaseBuffer(metabuf);
	pfree(reachable);
}

/* VACUUM cleanup: fold pending entries, give free pages back to the FSM. */
IndexBulkDeleteResult *
gpuidx_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	BlockNumber npages,
				blkno;
	GpuidxMetaPageData meta;
	GpuidxPendingCounts pending;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
	{
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
		gpuidx_fold_pending(index, 1);
	}

	reclaim_orphans(index, info->strategy);
	npages = RelationGetNumberOfBlocks(index);
	stats->pages_free = 0;
	for (blkno = GPUIDX_METAPAGE_BLKNO + 1; blkno < npages; blkno++)
	{
		Buffer		buf;
		Page		page;

		vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 info->strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || (GpuidxPageGetOpaque(page)->flags & GPUIDX_PAGE_FREE))
		{
			RecordFreeIndexPage(index, blkno);
			stats->pages_free++;
		}
		UnlockReleaseBuffer(buf);
	}
	IndexFreeSpaceMapVacuum(index);

	gpuidx_read_meta(index, &meta, &pending);
	stats->num_pages = npages;
	stats->num_index_tuples = meta.base_count + pending.total + meta.null_count;
	stats->estimated_count = false;
	return stats;
}
