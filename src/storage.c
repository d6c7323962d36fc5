/*
 * storage.c - the on-disk format: metapage, sorted base run, pending lanes.
 *
 * Every change is WAL-logged with GenericXLog, as contrib/bloom does, so the
 * index survives crashes and replays on standbys (the common append writes
 * the same generic record with a delta made by hand: append_to_page).
 * Chains of pages are linked through the special area's next pointer.
 * Readers never hold the metapage lock while reading chains: they check the
 * generation before and after (a seqlock), because a fold or VACUUM writes a
 * new base run and frees the old pages.
 *
 * Pending entries go to GPUIDX_LANES lanes, one chosen per backend.  An
 * append into a lane's tail page holds the metapage lock shared (which keeps
 * rewrites out, as they lock it exclusively) and locks and WAL-logs only the
 * tail page; only an append that needs a new page locks the metapage
 * exclusively, to link the page and move the lane's tail.  Lock order is
 * always the metapage first, then one chain page at a time.
 */
#include "gpuidx.h"

#include "access/generic_xlog.h"
#include "access/rmgr.h"
#include "access/xloginsert.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* Initialize an empty gpuidx page of the given kind. */
void
gpuidx_init_page(Page page, uint16 flags)
{
	GpuidxPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(GpuidxPageOpaqueData));
	opaque = GpuidxPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->flags = flags;
	opaque->page_id = GPUIDX_PAGE_ID;
}

/*
 * Initialize a metapage describing an empty index.  An index without
 * included columns gets the version 2 metapage, byte for byte; one with
 * them version 3, which older builds refuse instead of misreading.
 */
void
gpuidx_init_metapage(Page page, int key_bytes, GiStructure structure,
					 const GpuidxLayout *layout)
{
	Size		meta_size;

	GpuidxMetaPageData *meta;

	gpuidx_init_page(page, GPUIDX_PAGE_META);
	meta = GpuidxPageGetMeta(page);
	memset(meta, 0, sizeof(GpuidxMetaPageData));
	meta->magic = GPUIDX_MAGIC;
	meta->version = GPUIDX_VERSION;
	meta->key_bytes = key_bytes;
	meta->structure = (int32) structure;
	meta->generation = 1;
	meta->base_head = InvalidBlockNumber;
	gpuidx_meta_clear_lanes(meta);
	meta->null_head = InvalidBlockNumber;
	meta->null_tail = InvalidBlockNumber;
	meta_size = offsetof(GpuidxMetaPageData, include_count);
	if (layout->ninclude > 0)
	{
		int			c;

		meta->version = GPUIDX_VERSION_INCLUDE;
		meta->include_count = layout->ninclude;
		meta->entry_bytes = layout->entry_bytes;
		for (c = 0; c < layout->ninclude; c++)
			meta->include_widths[c] = (uint8) layout->width[c];
		meta_size = sizeof(GpuidxMetaPageData);
	}
	((PageHeader) page)->pd_lower = ((char *) meta + meta_size) - (char *) page;
}

/* Write the metapage of an empty index into block 0 of the given fork. */
void
gpuidx_write_empty_metapage(Relation index, ForkNumber fork, int key_bytes,
							GiStructure structure)
{
	Buffer		buf;
	GenericXLogState *state;
	Page		page;

	buf = ReadBufferExtended(index, fork, P_NEW, RBM_NORMAL, NULL);
	Assert(BufferGetBlockNumber(buf) == GPUIDX_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
	gpuidx_init_metapage(page, key_bytes, structure, gpuidx_layout(index));
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);

	/* GenericXLog does not log the init fork of an unlogged index. */
	if (fork == INIT_FORKNUM)
		log_newpage_range(index, fork, 0,
						  RelationGetNumberOfBlocksInFork(index, fork), true);
}

/*
 * Check that a page is a valid gpuidx metapage and copy its contents.  The
 * included columns it records must be those of the index's descriptor.
 */
void
gpuidx_copy_meta(Relation index, Page page, GpuidxMetaPageData *meta)
{
	GpuidxMetaPageData *m = GpuidxPageGetMeta(page);
	const GpuidxLayout *layout = gpuidx_layout(index);
	uint32		expected = layout->ninclude > 0 ? GPUIDX_VERSION_INCLUDE : GPUIDX_VERSION;
	bool		layout_ok;
	int			c;

	if (m->magic != GPUIDX_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a valid gpuidx index",
						RelationGetRelationName(index))));
	if (m->version != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has on-disk format version %u, expected %u",
						RelationGetRelationName(index), m->version, expected),
				 errhint("REINDEX the index.")));
	if (m->version == GPUIDX_VERSION)
	{
		/* It ends before the include fields: they are none. */
		memcpy(meta, m, offsetof(GpuidxMetaPageData, include_count));
		meta->include_count = 0;
		meta->entry_bytes = sizeof(GpuidxEntry);
		memset(meta->include_widths, 0, sizeof(meta->include_widths));
		return;
	}
	memcpy(meta, m, sizeof(GpuidxMetaPageData));
	layout_ok = meta->include_count == (uint32) layout->ninclude &&
		meta->entry_bytes == (uint32) layout->entry_bytes;
	for (c = 0; layout_ok && c < layout->ninclude; c++)
		layout_ok = meta->include_widths[c] == layout->width[c];
	if (!layout_ok)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" records included columns that do not match its definition",
						RelationGetRelationName(index)),
				 errhint("REINDEX the index.")));
}

/* Entries on one page of a chain (its pd_lower says how many). */
static int
page_entries(Relation index, BlockNumber blkno)
{
	Buffer		buf = ReadBuffer(index, blkno);
	int			count;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	count = GpuidxPageCount(BufferGetPage(buf), gpuidx_layout(index)->entry_bytes);
	UnlockReleaseBuffer(buf);
	return count;
}

/*
 * Count each lane's pending entries: its full_count plus its tail page's
 * entries.  The caller holds the metapage lock (shared or exclusive) under
 * which meta was copied, so no lane's tail can move meanwhile; an append
 * into a tail page either is counted whole or not at all (page lock).
 */
void
gpuidx_count_pending(Relation index, const GpuidxMetaPageData *meta,
					 GpuidxPendingCounts *pending)
{
	int			lane;

	pending->total = 0;
	for (lane = 0; lane < GPUIDX_LANES; lane++)
	{
		const GpuidxLaneData *l = &meta->lanes[lane];

		pending->lane[lane] = l->full_count;
		if (l->tail != InvalidBlockNumber)
			pending->lane[lane] += page_entries(index, l->tail);
		pending->total += pending->lane[lane];
	}
}

/*
 * Read a consistent copy of the metapage and, when pending is not NULL, the
 * pending entries of every lane as of that copy.
 */
void
gpuidx_read_meta(Relation index, GpuidxMetaPageData *meta,
				 GpuidxPendingCounts *pending)
{
	Buffer		buf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	gpuidx_copy_meta(index, BufferGetPage(buf), meta);
	if (pending)
		gpuidx_count_pending(index, meta, pending);
	UnlockReleaseBuffer(buf);
}

/* Get a page to write: a free one from the FSM, or a new one at the end. */
static Buffer
new_buffer(Relation index)
{
	Buffer		buf;
	bool		needLock;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		buf = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buf))
		{
			Page		page = BufferGetPage(buf);

			if (PageIsNew(page) ||
				(GpuidxPageGetOpaque(page)->flags & GPUIDX_PAGE_FREE))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	needLock = !RELATION_IS_LOCAL(index);
	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/*
 * Write one entry at e: key, TID and, when the index has included columns,
 * the row's NULL mask and values (rows NULL: all zero, as NULL-list entries
 * of a build without them).
 */
static void
write_entry(GpuidxEntry *e, const GpuidxLayout *layout, int64 key,
			uint64 tid, const char *row)
{
	e->key = key;
	e->block = (uint32) (tid >> 16);
	e->offset = (uint16) (tid & 0xFFFF);
	e->include_nulls = 0;
	if (layout->ninclude == 0)
		return;
	memset((char *) (e + 1), 0, layout->entry_bytes - sizeof(GpuidxEntry));
	if (row)
	{
		memcpy(&e->include_nulls, row, sizeof(uint16));
		memcpy((char *) (e + 1), row + sizeof(uint16), layout->value_bytes);
	}
}

/* Read the included-columns row of the entry at e into row. */
static void
read_row(const GpuidxEntry *e, const GpuidxLayout *layout, char *row)
{
	memcpy(row, &e->include_nulls, sizeof(uint16));
	memcpy(row + sizeof(uint16), (const char *) (e + 1), layout->value_bytes);
}

/* Copy entries into a page and set pd_lower past them. */
static void
fill_page(Page page, const GpuidxLayout *layout, const int64 *keys,
		  const uint64 *tids, const char *rows, int count)
{
	int			i;

	for (i = 0; i < count; i++)
		write_entry(GpuidxPageEntry(page, i, layout->entry_bytes), layout,
					keys[i], tids[i],
					rows ? rows + (Size) i * layout->row_bytes : NULL);
	((PageHeader) page)->pd_lower =
		((char *) GpuidxPageEntry(page, count, layout->entry_bytes)) - (char *) page;
}

/*
 * Write n entries into a new chain of pages of the given kind; returns its
 * first block and sets *tail (if not NULL) to its last (InvalidBlockNumber
 * when n == 0).  One WAL record per page.
 */
BlockNumber
gpuidx_write_chain(Relation index, const int64 *keys, const uint64 *tids,
				   const char *rows, int64 n, uint16 flags, BlockNumber *tail)
{
	const GpuidxLayout *layout = gpuidx_layout(index);
	BlockNumber head;
	Buffer		buf;
	int64		done = 0;

	if (tail)
		*tail = InvalidBlockNumber;
	if (n <= 0)
		return InvalidBlockNumber;

	buf = new_buffer(index);
	head = BufferGetBlockNumber(buf);
	while (done < n)
	{
		int			count = (int) Min((int64) layout->entries_per_page, n - done);
		Buffer		nextbuf = InvalidBuffer;
		GenericXLogState *state;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		if (done + count < n)
			nextbuf = new_buffer(index);

		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		gpuidx_init_page(page, flags);
		fill_page(page, layout, keys + done, tids + done,
				  rows ? rows + (Size) done * layout->row_bytes : NULL, count);
		if (BufferIsValid(nextbuf))
			GpuidxPageGetOpaque(page)->next = BufferGetBlockNumber(nextbuf);
		GenericXLogFinish(state);
		if (tail)
			*tail = BufferGetBlockNumber(buf);
		UnlockReleaseBuffer(buf);

		done += count;
		buf = nextbuf;
	}
	return head;
}

/*
 * Read count entries of the chain starting at head, after skipping skip.
 * Returns false if the chain is not what the caller's metapage copy says
 * (it was rewritten meanwhile): the caller retries.
 */
bool
gpuidx_read_chain(Relation index, BlockNumber head, uint16 flags, int64 skip,
				  int64 count, int64 *keys, uint64 *tids, char *rows)
{
	const GpuidxLayout *layout = gpuidx_layout(index);
	BlockNumber blkno = head;
	int64		got = 0;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	while (got < count)
	{
		Buffer		buf;
		Page		page;
		GpuidxPageOpaque opaque;
		GpuidxEntry *e;
		int			npage;
		int			i;

		CHECK_FOR_INTERRUPTS();
		if (blkno == InvalidBlockNumber || blkno >= nblocks)
			return false;
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = GpuidxPageGetOpaque(page);
		if (PageIsNew(page) || opaque->page_id != GPUIDX_PAGE_ID ||
			(opaque->flags & flags) == 0)
		{
			UnlockReleaseBuffer(buf);
			return false;
		}
		npage = GpuidxPageCount(page, layout->entry_bytes);
		for (i = 0; i < npage && got < count; i++)
		{
			if (skip > 0)
			{
				skip--;
				continue;
			}
			e = GpuidxPageEntry(page, i, layout->entry_bytes);
			keys[got] = e->key;
			tids[got] = gpuidx_tid_pack(e->block, e->offset);
			if (rows && layout->row_bytes > 0)
				read_row(e, layout, rows + (Size) got * layout->row_bytes);
			got++;
		}
		blkno = opaque->next;
		UnlockReleaseBuffer(buf);
	}
	return true;
}

/*
 * Read the entries of the index: the whole base run followed by every
 * lane's pending entries, or, when pending_from is not NULL, only each
 * lane's entries past the number pending_from gives for it; and all TIDs of
 * NULL-key rows.  *meta and *pending receive the metapage and lane counts
 * the read agrees with (a lane that pending_from says is longer than it now
 * is yields nothing: the caller sees the rewrite by the generation).  Arrays
 * are allocated in CurrentMemoryContext.
 */
void
gpuidx_read_entries(Relation index, GpuidxMetaPageData *meta,
					GpuidxPendingCounts *pending,
					const GpuidxPendingCounts *pending_from, int64 **keys,
					uint64 **tids, char **rows, int64 *n, uint64 **null_tids,
					char **null_rows)
{
	int			row_bytes = gpuidx_layout(index)->row_bytes;
	int			attempt;

	for (attempt = 0; attempt < 1000; attempt++)
	{
		GpuidxMetaPageData after;
		int64		nbase;
		int64		npending = 0;
		int64		wanted[GPUIDX_LANES];
		int64		done;
		int64	   *k;
		uint64	   *t;
		int64	   *nk;
		uint64	   *nt;
		char	   *r = NULL;
		char	   *nr = NULL;
		bool		ok;
		int			lane;

		gpuidx_read_meta(index, meta, pending);
		nbase = pending_from ? 0 : (int64) meta->base_count;
		for (lane = 0; lane < GPUIDX_LANES; lane++)
		{
			int64		from = pending_from ? (int64) pending_from->lane[lane] : 0;

			wanted[lane] = Max((int64) pending->lane[lane] - from, 0);
			npending += wanted[lane];
		}
		k = gpuidx_alloc_huge(sizeof(int64) * (nbase + npending));
		t = gpuidx_alloc_huge(sizeof(uint64) * (nbase + npending));
		nk = gpuidx_alloc_huge(sizeof(int64) * meta->null_count);
		nt = gpuidx_alloc_huge(sizeof(uint64) * meta->null_count);
		if (row_bytes > 0)
		{
			r = gpuidx_alloc_huge((Size) row_bytes * (nbase + npending));
			nr = gpuidx_alloc_huge((Size) row_bytes * meta->null_count);
		}

		ok = gpuidx_read_chain(index, meta->base_head, GPUIDX_PAGE_BASE, 0,
							   nbase, k, t, r);
		done = nbase;
		for (lane = 0; ok && lane < GPUIDX_LANES; lane++)
		{
			const GpuidxLaneData *l = &meta->lanes[lane];
			BlockNumber start = l->head;
			int64		skip = pending_from ? (int64) pending_from->lane[lane] : 0;

			if (wanted[lane] == 0)
				continue;

			/*
			 * Entries past full_count are all on the tail page (as of this
			 * metapage copy): start there instead of walking the lane.
			 */
			if (skip >= (int64) l->full_count && l->tail != InvalidBlockNumber)
			{
				start = l->tail;
				skip -= (int64) l->full_count;
			}
			ok = gpuidx_read_chain(index, start, GPUIDX_PAGE_PENDING, skip,
								   wanted[lane], k + done, t + done,
								   r ? r + (Size) done * row_bytes : NULL);
			done += wanted[lane];
		}
		ok = ok && gpuidx_read_chain(index, meta->null_head, GPUIDX_PAGE_NULL,
									 0, meta->null_count, nk, nt, nr);
		gpuidx_read_meta(index, &after, NULL);
		if (ok && after.generation == meta->generation)
		{
			*keys = k;
			*tids = t;
			*n = nbase + npending;
			*null_tids = nt;
			*rows = r;
			*null_rows = nr;
			pfree(nk);
			return;
		}
		pfree(k);
		pfree(t);
		pfree(nk);
		pfree(nt);
		if (r)
		{
			pfree(r);
			pfree(nr);
		}
	}
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not read a consistent copy of index \"%s\"",
					RelationGetRelationName(index)),
			 errdetail("The index was rewritten by concurrent maintenance 1000 times in a row.")));
}

/* Write one entry after the last one on a page. */
static void
put_entry(Page page, const GpuidxLayout *layout, int64 key, ItemPointer tid,
		  const char *row)
{
	int			count = GpuidxPageCount(page, layout->entry_bytes);
	GpuidxEntry *e = GpuidxPageEntry(page, count, layout->entry_bytes);

	write_entry(e, layout, key,
				gpuidx_tid_pack(ItemPointerGetBlockNumber(tid),
								ItemPointerGetOffsetNumber(tid)),
				row);
	((PageHeader) page)->pd_lower = ((char *) e + layout->entry_bytes) - (char *) page;
}

/* Write one generic-WAL delta fragment (offset, length, bytes) at d. */
static char *
put_fragment(char *d, OffsetNumber offset, OffsetNumber length,
			 const void *bytes)
{
	memcpy(d, &offset, sizeof(offset));
	d += sizeof(offset);
	memcpy(d, &length, sizeof(length));
	d += sizeof(length);
	memcpy(d, bytes, length);
	return d + length;
}

/*
 * Append one entry to a page with room, locked exclusively in buf, and
 * WAL-log it; returns the entries now on the page.
 *
 * The record is the generic-WAL record GenericXLogFinish would write (same
 * resource manager, same delta format, replayed by generic_redo), but the
 * delta is written here: it is two fragments, the entry and pd_lower.
 * GenericXLogFinish finds the same two by copying the page and comparing
 * every used byte of it, which made an append cost more than a btree
 * insertion (bench/sql/insert).  The TAP tests replay these records with
 * wal_consistency_checking = 'generic'.
 */
static int
append_to_page(Relation index, Buffer buf, int64 key, ItemPointer tid,
			   const char *row)
{
	const GpuidxLayout *layout = gpuidx_layout(index);
	Page		page = BufferGetPage(buf);
	PageHeader	header = (PageHeader) page;
	OffsetNumber entry_at = header->pd_lower;
	char		delta[2 * 2 * sizeof(OffsetNumber) + sizeof(LocationIndex) +
					  MAXALIGN(sizeof(GpuidxEntry) + GPUIDX_MAX_INCLUDE * sizeof(int64))];
	char	   *d = delta;
	XLogRecPtr	lsn;

	Assert(GpuidxPageCount(page, layout->entry_bytes) < layout->entries_per_page);
	if (RelationNeedsWAL(index))
		XLogBeginInsert();
	START_CRIT_SECTION();
	put_entry(page, layout, key, tid, row);
	MarkBufferDirty(buf);
	if (RelationNeedsWAL(index))
	{
		d = put_fragment(d, offsetof(PageHeaderData, pd_lower),
						 sizeof(LocationIndex), &header->pd_lower);
		d = put_fragment(d, entry_at, layout->entry_bytes,
						 (char *) page + entry_at);
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
		XLogRegisterBufData(0, delta, d - delta);
		lsn = XLogInsert(RM_GENERIC_ID, 0);
		PageSetLSN(page, lsn);	/* a macro: its argument is used twice */
	}
	END_CRIT_SECTION();
	return GpuidxPageCount(page, layout->entry_bytes);
}

/* The lane this backend appends to. */
static int
my_lane(void)
{
	return MyProc ? MyProc->pgprocno % GPUIDX_LANES : 0;
}

/*
 * The pending entries after an append into lane own, which now holds
 * own_count.  Counting the other lanes' tail pages costs a page lock each,
 * so unless the total may reach exact_from, return the lower bound that
 * leaves their tail pages out.  meta was copied under the metapage lock the
 * caller still holds.
 */
static uint64
pending_after_append(Relation index, const GpuidxMetaPageData *meta, int own,
					 uint64 own_count, uint64 exact_from)
{
	uint64		lower = own_count;
	uint64		unseen_max = 0;
	int			lane;

	for (lane = 0; lane < GPUIDX_LANES; lane++)
	{
		if (lane == own)
			continue;
		lower += meta->lanes[lane].full_count;
		if (meta->lanes[lane].tail != InvalidBlockNumber)
			unseen_max += gpuidx_layout(index)->entries_per_page;
	}
	if (lower + unseen_max < exact_from)
		return lower;
	for (lane = 0; lane < GPUIDX_LANES; lane++)
		if (lane != own && meta->lanes[lane].tail != InvalidBlockNumber)
			lower += page_entries(index, meta->lanes[lane].tail);
	return lower;
}

/*
 * Append one entry to a list with the metapage locked exclusively in
 * metabuf: the NULL-key list (lane < 0) or a pending lane.  Links a new page
 * when the tail is full, in one WAL record with the metapage and the old
 * tail.  Returns the entries now on the page that took it.
 */
static int
append_exclusive(Relation index, Buffer metabuf, int lane, int64 key,
				 ItemPointer tid, const char *row)
{
	const GpuidxLayout *layout = gpuidx_layout(index);
	uint16		list = lane < 0 ? GPUIDX_PAGE_NULL : GPUIDX_PAGE_PENDING;
	GenericXLogState *state;
	GpuidxMetaPageData *meta;
	BlockNumber *headp,
			   *tailp;
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	Page		target;
	int			count;

	state = GenericXLogStart(index);
	meta = GpuidxPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	headp = lane < 0 ? &meta->null_head : &meta->lanes[lane].head;
	tailp = lane < 0 ? &meta->null_tail : &meta->lanes[lane].tail;

	if (*tailp != InvalidBlockNumber)
	{
		Page		tailpage;

		tailbuf = ReadBuffer(index, *tailp);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
		if (GpuidxPageCount(tailpage, layout->entry_bytes) < layout->entries_per_page)
			target = tailpage;
		else
		{
			newbuf = new_buffer(index);
			target = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
			gpuidx_init_page(target, list);
			GpuidxPageGetOpaque(tailpage)->next = BufferGetBlockNumber(newbuf);
			*tailp = BufferGetBlockNumber(newbuf);
			if (lane >= 0)
				meta->lanes[lane].full_count +=
					GpuidxPageCount(tailpage, layout->entry_bytes);
		}
	}
	else
	{
		newbuf = new_buffer(index);
		target = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
		gpuidx_init_page(target, list);
		*headp = *tailp = BufferGetBlockNumber(newbuf);
	}

	put_entry(target, layout, key, tid, row);
	count = GpuidxPageCount(target, layout->entry_bytes);
	if (lane < 0)
		meta->null_count++;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	return count;
}

/*
 * Append one entry to this backend's pending lane (list =
 * GPUIDX_PAGE_PENDING) or to the list of NULL-key TIDs (GPUIDX_PAGE_NULL).
 * *count receives the new length of the NULL-key list, or the pending
 * entries of all lanes: exact when they may be count_exact_from or more,
 * otherwise possibly less than exact but still below count_exact_from.
 */
void
gpuidx_append(Relation index, uint16 list, int64 key, ItemPointer tid,
			  const char *row, uint64 count_exact_from, uint64 *count)
{
	int			per_page = gpuidx_layout(index)->entries_per_page;
	int			entry_bytes = gpuidx_layout(index)->entry_bytes;
	Buffer		metabuf;
	GpuidxMetaPageData meta;
	int			lane = my_lane();
	int			on_page;

	metabuf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);
	if (list == GPUIDX_PAGE_PENDING)
	{
		BlockNumber tail;

		/*
		 * The common case: room on the lane's tail page.  The shared
		 * metapage lock keeps the tail where it is and rewrites out; the
		 * page lock orders appenders that share the lane.
		 */
		LockBuffer(metabuf, BUFFER_LOCK_SHARE);
		gpuidx_copy_meta(index, BufferGetPage(metabuf), &meta);
		tail = meta.lanes[lane].tail;
		if (tail != InvalidBlockNumber)
		{
			Buffer		tailbuf = ReadBuffer(index, tail);

			LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
			if (GpuidxPageCount(BufferGetPage(tailbuf), entry_bytes) < per_page)
			{
				on_page = append_to_page(index, tailbuf, key, tid, row);
				UnlockReleaseBuffer(tailbuf);
				*count = pending_after_append(index, &meta, lane,
											  meta.lanes[lane].full_count + on_page,
											  count_exact_from);
				UnlockReleaseBuffer(metabuf);
				return;
			}
			UnlockReleaseBuffer(tailbuf);
		}
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	}

	/* A new page to link, or the NULL-key list: the metapage changes. */
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	gpuidx_copy_meta(index, BufferGetPage(metabuf), &meta);
	if (list == GPUIDX_PAGE_NULL)
	{
		append_exclusive(index, metabuf, -1, key, tid, row);
		*count = meta.null_count + 1;
	}
	else
	{
		on_page = append_exclusive(index, metabuf, lane, key, tid, row);
		gpuidx_copy_meta(index, BufferGetPage(metabuf), &meta);
		*count = pending_after_append(index, &meta, lane,
									  meta.lanes[lane].full_count + on_page,
									  count_exact_from);
	}
	UnlockReleaseBuffer(metabuf);
}
