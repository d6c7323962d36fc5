/*
 * storage.c - the on-disk format: metapage, sorted base run, pending list.
 *
 * Every change is WAL-logged with GenericXLog, as contrib/bloom does, so the
 * index survives crashes and replays on standbys.  Chains of pages are
 * linked through the special area's next pointer.  Readers never hold the
 * metapage lock while reading chains: they check the generation before and
 * after (a seqlock), because a fold or VACUUM writes a new base run and frees
 * the old pages.
 */
#include "gpuidx.h"

#include "access/generic_xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
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

/* Initialize a metapage describing an empty index. */
void
gpuidx_init_metapage(Page page, int key_bytes, GiStructure structure)
{
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
	meta->pending_head = InvalidBlockNumber;
	meta->pending_tail = InvalidBlockNumber;
	meta->null_head = InvalidBlockNumber;
	meta->null_tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower =
		((char *) meta + sizeof(GpuidxMetaPageData)) - (char *) page;
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
	gpuidx_init_metapage(page, key_bytes, structure);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);

	/* GenericXLog does not log the init fork of an unlogged index. */
	if (fork == INIT_FORKNUM)
		log_newpage_range(index, fork, 0,
						  RelationGetNumberOfBlocksInFork(index, fork), true);
}

/* Check that a page is a valid gpuidx metapage and copy its contents. */
static void
copy_meta(Relation index, Page page, GpuidxMetaPageData *meta)
{
	GpuidxMetaPageData *m = GpuidxPageGetMeta(page);

	if (m->magic != GPUIDX_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a valid gpuidx index",
						RelationGetRelationName(index))));
	if (m->version != GPUIDX_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has on-disk format version %u, expected %u",
						RelationGetRelationName(index), m->version, GPUIDX_VERSION),
				 errhint("REINDEX the index.")));
	memcpy(meta, m, sizeof(GpuidxMetaPageData));
}

/* Read a consistent copy of the metapage. */
void
gpuidx_read_meta(Relation index, GpuidxMetaPageData *meta)
{
	Buffer		buf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	copy_meta(index, BufferGetPage(buf), meta);
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

/* Copy entries into a page and set pd_lower past them. */
static void
fill_page(Page page, const int64 *keys, const uint64 *tids, int count)
{
	GpuidxEntry *e = GpuidxPageGetEntries(page);
	int			i;

	for (i = 0; i < count; i++)
	{
		e[i].key = keys[i];
		e[i].block = (uint32) (tids[i] >> 16);
		e[i].offset = (uint16) (tids[i] & 0xFFFF);
		e[i].unused = 0;
	}
	((PageHeader) page)->pd_lower =
		((char *) (e + count)) - (char *) page;
}

/*
 * Write n entries into a new chain of pages of the given kind; returns its
 * first block and sets *tail (if not NULL) to its last (InvalidBlockNumber
 * when n == 0).  One WAL record per page.
 */
BlockNumber
gpuidx_write_chain(Relation index, const int64 *keys, const uint64 *tids,
				   int64 n, uint16 flags, BlockNumber *tail)
{
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
		int			count = (int) Min((int64) GPUIDX_ENTRIES_PER_PAGE, n - done);
		Buffer		nextbuf = InvalidBuffer;
		GenericXLogState *state;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		if (done + count < n)
			nextbuf = new_buffer(index);

		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		gpuidx_init_page(page, flags);
		fill_page(page, keys + done, tids + done, count);
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
				  int64 count, int64 *keys, uint64 *tids)
{
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
		npage = GpuidxPageCount(page);
		e = GpuidxPageGetEntries(page);
		for (i = 0; i < npage && got < count; i++)
		{
			if (skip > 0)
			{
				skip--;
				continue;
			}
			keys[got] = e[i].key;
			tids[got] = gpuidx_tid_pack(e[i].block, e[i].offset);
			got++;
		}
		blkno = opaque->next;
		UnlockReleaseBuffer(buf);
	}
	return true;
}

/* palloc a huge chunk (past 1 GB) in the current memory context. */
void *
gpuidx_alloc_huge(Size size)
{
	return MemoryContextAllocHuge(CurrentMemoryContext, Max(size, 8));
}

/*
 * Read the entries of the index: the whole base run (unless pending_from is
 * >= 0, in which case only pending entries from that position on) followed by
 * the pending entries; and all TIDs of NULL-key rows.  *meta receives the metapage the read agrees with.
 * Arrays are allocated in CurrentMemoryContext.
 */
void
gpuidx_read_entries(Relation index, GpuidxMetaPageData *meta,
					int64 pending_from, int64 **keys, uint64 **tids, int64 *n,
					uint64 **null_tids)
{
	int			attempt;

	for (attempt = 0; attempt < 1000; attempt++)
	{
		GpuidxMetaPageData after;
		int64		nbase;
		int64		npending;
		int64	   *k;
		uint64	   *t;
		int64	   *nk;
		uint64	   *nt;
		bool		ok;

		gpuidx_read_meta(index, meta);
		nbase = pending_from >= 0 ? 0 : (int64) meta->base_count;
		npending = (int64) meta->pending_count - Max(pending_from, 0);
		if (npending < 0)
			npending = 0;
		k = gpuidx_alloc_huge(sizeof(int64) * (nbase + npending));
		t = gpuidx_alloc_huge(sizeof(uint64) * (nbase + npending));
		nk = gpuidx_alloc_huge(sizeof(int64) * meta->null_count);
		nt = gpuidx_alloc_huge(sizeof(uint64) * meta->null_count);

		ok = gpuidx_read_chain(index, meta->base_head, GPUIDX_PAGE_BASE, 0,
							   nbase, k, t) &&
			gpuidx_read_chain(index, meta->pending_head, GPUIDX_PAGE_PENDING,
							  Max(pending_from, 0), npending, k + nbase,
							  t + nbase) &&
			gpuidx_read_chain(index, meta->null_head, GPUIDX_PAGE_NULL, 0,
							  meta->null_count, nk, nt);
		gpuidx_read_meta(index, &after);
		if (ok && after.generation == meta->generation)
		{
			*keys = k;
			*tids = t;
			*n = nbase + npending;
			*null_tids = nt;
			pfree(nk);
			return;
		}
		pfree(k);
		pfree(t);
		pfree(nk);
		pfree(nt);
	}
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not read a consistent copy of index \"%s\"",
					RelationGetRelationName(index)),
			 errdetail("The index was rewritten by concurrent maintenance 1000 times in a row.")));
}

/*
 * Append one entry to the pending list (list = GPUIDX_PAGE_PENDING) or the
 * list of NULL-key TIDs (GPUIDX_PAGE_NULL); *count receives the new length
 * of that list.  Holds the metapage lock for the append only.
 */
void
gpuidx_append(Relation index, uint16 list, int64 key, ItemPointer tid,
			  uint64 *count)
{
	BlockNumber *headp,
			   *tailp;
	uint64	   *countp;
	Buffer		metabuf;
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	GenericXLogState *state;
	Page		metapage;
	GpuidxMetaPageData *meta;
	Page		target = NULL;
	int64		k1 = key;
	uint64		t1 = gpuidx_tid_pack(ItemPointerGetBlockNumber(tid),
									 ItemPointerGetOffsetNumber(tid));

	metabuf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	{
		GpuidxMetaPageData check;

		copy_meta(index, BufferGetPage(metabuf), &check);
	}

	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	meta = GpuidxPageGetMeta(metapage);
	if (list == GPUIDX_PAGE_NULL)
	{
		headp = &meta->null_head;
		tailp = &meta->null_tail;
		countp = &meta->null_count;
	}
	else
	{
		headp = &meta->pending_head;
		tailp = &meta->pending_tail;
		countp = &meta->pending_count;
	}

	if (*tailp != InvalidBlockNumber)
	{
		Page		tailpage;

		tailbuf = ReadBuffer(index, *tailp);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
		if (GpuidxPageCount(tailpage) < GPUIDX_ENTRIES_PER_PAGE)
			target = tailpage;
		else
		{
			newbuf = new_buffer(index);
			target = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
			gpuidx_init_page(target, list);
			GpuidxPageGetOpaque(tailpage)->next = BufferGetBlockNumber(newbuf);
			*tailp = BufferGetBlockNumber(newbuf);
		}
	}
	else
	{
		newbuf = new_buffer(index);
		target = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
		gpuidx_init_page(target, list);
		*headp = *tailp = BufferGetBlockNumber(newbuf);
	}

	{
		int			count = GpuidxPageCount(target);
		GpuidxEntry *e = GpuidxPageGetEntries(target) + count;

		e->key = k1;
		e->block = (uint32) (t1 >> 16);
		e->offset = (uint16) (t1 & 0xFFFF);
		e->unused = 0;
		((PageHeader) target)->pd_lower = ((char *) (e + 1)) - (char *) target;
	}
	(*countp)++;
	*count = *countp;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
}

/* Sort (key, tid) pairs in place through the engine's host sort. */
void
gpuidx_sort_pairs(int64 *keys, uint64 *tids, int64 n)
{
	int64	   *ks;
	uint64	   *ts;
	GiError		err;

	if (n < 2)
		return;
	ks = gpuidx_alloc_huge(sizeof(int64) * n);
	ts = gpuidx_alloc_huge(sizeof(uint64) * n);
	if (gi_sort_pairs((const int64_t *) keys, (const uint64_t *) tids, (size_t) n,
					  (int64_t *) ks, (uint64_t *) ts, &err) != GI_OK)
		gpuidx_raise_engine_error(&err, "sorting index entries");
	memcpy(keys, ks, sizeof(int64) * n);
	memcpy(tids, ts, sizeof(uint64) * n);
	pfree(ks);
	pfree(ts);
}

/*
 * The non-NULL elements of an int2/int4/int8 array as keys, sorted and
 * distinct (palloc'd); *count receives how many.
 */
int64 *
gpuidx_array_keys(Datum arraydatum, int64 *count)
{
	ArrayType  *arr = DatumGetArrayTypeP(arraydatum);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems,
				i;
	int64		n = 0,
				d;
	int64	   *out;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &nelems);
	out = gpuidx_alloc_huge(sizeof(int64) * Max(nelems, 1));
	for (i = 0; i < nelems; i++)
		if (!nulls[i])
			out[n++] = gpuidx_datum_to_key(elems[i], elemtype);
	pfree(elems);
	pfree(nulls);
	if (n > 1)
	{
		uint64	   *none = gpuidx_alloc_huge(sizeof(uint64) * n);

		memset(none, 0, sizeof(uint64) * n);
		gpuidx_sort_pairs(out, none, n);
		pfree(none);
		for (i = 1, d = 1; i < n; i++)
			if (out[i] != out[d - 1])
				out[d++] = out[i];
		n = d;
	}
	*count = n;
	return out;
}

/* Key width of an indexable type, 0 if the type is not supported. */
int
gpuidx_key_bytes_for_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return 2;
		case INT4OID:
			return 4;
		case INT8OID:
			return 8;
		default:
			return 0;
	}
}

/* Convert an int2/int4/int8 datum to a 64-bit key. */
int64
gpuidx_datum_to_key(Datum value, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return (int64) DatumGetInt16(value);
		case INT4OID:
			return (int64) DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
		default:
			elog(ERROR, "gpuidx: unsupported key type %u", typid);
			return 0;			/* keep compiler quiet */
	}
}
