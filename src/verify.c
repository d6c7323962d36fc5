/*
 * verify.c - gpuidx_verify(idx): check the on-disk structure and that the
 * loaded image agrees with it.  Used by the tests; cheap enough for users.
 */
#include "gpuidx.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* Report a verification failure. */
static void
fail(Relation index, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gpuidx index \"%s\" failed verification: %s",
					RelationGetRelationName(index), what)));
}

/*
 * Walk every pending lane under a shared metapage lock (appends go on, pages
 * are not linked or freed meanwhile): each page is a pending page, the chain
 * reaches the lane's tail, and the pages before the tail hold full_count
 * entries.
 */
static void
verify_lanes(Relation index)
{
	Buffer		metabuf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);
	GpuidxMetaPageData meta;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	int			lane;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	gpuidx_copy_meta(index, BufferGetPage(metabuf), &meta);
	for (lane = 0; lane < GPUIDX_LANES; lane++)
	{
		const GpuidxLaneData *l = &meta.lanes[lane];
		BlockNumber blkno = l->head;
		BlockNumber steps = 0;
		uint64		before_tail = 0;

		if ((l->head == InvalidBlockNumber) != (l->tail == InvalidBlockNumber) ||
			(l->head == InvalidBlockNumber && l->full_count != 0))
			fail(index, psprintf("pending lane %d has a bad head, tail or count", lane));
		while (blkno != InvalidBlockNumber)
		{
			Buffer		buf;
			Page		page;
			GpuidxPageOpaque opaque;

			CHECK_FOR_INTERRUPTS();
			if (blkno >= nblocks || ++steps > nblocks)
				fail(index, psprintf("pending lane %d leaves the index", lane));
			buf = ReadBuffer(index, blkno);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			opaque = GpuidxPageGetOpaque(page);
			if (PageIsNew(page) || opaque->page_id != GPUIDX_PAGE_ID ||
				!(opaque->flags & GPUIDX_PAGE_PENDING))
			{
				UnlockReleaseBuffer(buf);
				fail(index, psprintf("pending lane %d reaches a page that is not pending", lane));
			}
			if (blkno == l->tail)
			{
				UnlockReleaseBuffer(buf);
				break;
			}
			before_tail += GpuidxPageCount(page, gpuidx_layout(index)->entry_bytes);
			blkno = opaque->next;
			UnlockReleaseBuffer(buf);
		}
		if (blkno != l->tail)
			fail(index, psprintf("pending lane %d does not reach its tail page", lane));
		if (before_tail != l->full_count)
			fail(index, psprintf("pending lane %d holds " UINT64_FORMAT " entries before its tail page, the metapage says " UINT64_FORMAT,
								 lane, before_tail, l->full_count));
	}
	UnlockReleaseBuffer(metabuf);
}

/* Check every chain's pages and counts against the metapage. */
static void
verify_disk(Relation index, GpuidxMetaPageData *meta,
			GpuidxPendingCounts *pending, int64 **keys, uint64 **tids,
			char **rows, int64 *n, uint64 **null_tids, char **null_rows)
{
	int64		i;
	int64		nbase;

	verify_lanes(index);
	gpuidx_read_entries(index, meta, pending, NULL, keys, tids, rows, n,
						null_tids, null_rows);
	if (meta->key_bytes != 2 && meta->key_bytes != 4 && meta->key_bytes != 8)
		fail(index, psprintf("metapage key width %d", meta->key_bytes));
	if (meta->key_bytes != gpuidx_key_bytes_for_type(
													 TupleDescAttr(RelationGetDescr(index), 0)->atttypid))
		fail(index, "metapage key width does not match the column type");
	nbase = (int64) meta->base_count;
	if (*n != nbase + (int64) pending->total)
		fail(index, "entry count does not match the metapage");
	for (i = 1; i < nbase; i++)
	{
		if ((*keys)[i - 1] > (*keys)[i] ||
			((*keys)[i - 1] == (*keys)[i] && (*tids)[i - 1] >= (*tids)[i]))
			fail(index, psprintf("base run out of order at entry " INT64_FORMAT, i));
	}
	for (i = 0; i < *n; i++)
	{
		int64		k = (*keys)[i];

		if ((meta->key_bytes == 2 && (k < PG_INT16_MIN || k > PG_INT16_MAX)) ||
			(meta->key_bytes == 4 && (k < PG_INT32_MIN || k > PG_INT32_MAX)))
			fail(index, psprintf("key " INT64_FORMAT " outside the key type", k));
		if (((*tids)[i] & 0xFFFF) == 0)
			fail(index, "entry with an invalid heap TID");
	}
}

PG_FUNCTION_INFO_V1(gpuidx_verify);
/* gpuidx_verify(idx): true, or an error saying what is wrong. */
Datum
gpuidx_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	heap,
				index;
	GpuidxMetaPageData meta;
	GpuidxPendingCounts pending;
	int64	   *keys;
	uint64	   *tids;
	uint64	   *null_tids;
	char	   *rows;
	char	   *null_rows;
	int			rb;
	int64		n,
				i,
				ndistinct = 0;
	GpuidxImageData *img;
	int64	   *probes;
	uint64	   *first,
			   *last;
	int64	   *ik;
	uint64	   *it;

	index = gpuidx_open_checked(indexoid, &heap);

	verify_disk(index, &meta, &pending, &keys, &tids, &rows, &n, &null_tids,
				&null_rows);
	rb = gpuidx_layout(index)->row_bytes;
	gpuidx_sort_entries(keys + meta.base_count, tids + meta.base_count,
						rows ? rows + (Size) meta.base_count * rb : NULL, rb,
						(int64) pending.total);

	/* The image must hold exactly the disk's entries, in order. */
	img = gpuidx_image_acquire(index);
	if (img->nbase + img->ndelta != img->n)
		fail(index, "image base and delta counts do not add up");
	for (i = 1; i < img->ndelta; i++)
		if (img->drank[i - 1] >= img->drank[i])
			fail(index, "image delta positions out of order");
	ik = palloc(sizeof(int64) * Max(img->n, 1));
	it = palloc(sizeof(uint64) * Max(img->n, 1));
	gpuidx_copy_entries(img, 0, img->n, ik, it);
	if (img->generation == meta.generation && img->pending_count == pending.total)
	{
		int64	   *mk = palloc(sizeof(int64) * Max(n, 1));
		uint64	   *mt = palloc(sizeof(uint64) * Max(n, 1));
		int64	   *mfrom = palloc(sizeof(int64) * Max(n, 1));
		int64		a = 0,
					b = meta.base_count,
					o = 0;

		/* merge base and sorted pending as the cache does */
		while (a < (int64) meta.base_count || b < n)
		{
			if (b >= n || (a < (int64) meta.base_count &&
						   (keys[a] < keys[b] || (keys[a] == keys[b] && tids[a] < tids[b]))))
			{
				mfrom[o] = a;
				mk[o] = keys[a];
				mt[o++] = tids[a++];
			}
			else
			{
				mfrom[o] = b;
				mk[o] = keys[b];
				mt[o++] = tids[b++];
			}
		}
		if (img->n != n)
			fail(index, "image entry count differs from the disk");
		if (memcmp(img->lane_count, pending.lane, sizeof(pending.lane)) != 0)
			fail(index, "image pending lane counts differ from the disk");
		for (i = 0; i < n; i++)
			if (ik[i] != mk[i] || it[i] != mt[i])
				fail(index, psprintf("image entry " INT64_FORMAT " differs from the disk", i));
		if (img->row_bytes != rb)
			fail(index, "image included-column width differs from the index");
		for (i = 0; rb > 0 && i < n; i++)
			if (memcmp(gpuidx_row_at(img, i), rows + (Size) mfrom[i] * rb, rb) != 0)
				fail(index, psprintf("image included columns of entry " INT64_FORMAT " differ from the disk", i));
		if (rb > 0 && img->nnull == (int64) meta.null_count && meta.null_count > 0 &&
			memcmp(img->null_rows, null_rows, (Size) rb * meta.null_count) != 0)
			fail(index, "image included columns of NULL-key entries differ from the disk");
		if (img->nnull != (int64) meta.null_count ||
			(meta.null_count > 0 &&
			 memcmp(img->null_tids, null_tids, sizeof(uint64) * meta.null_count) != 0))
			fail(index, "image NULL-key TIDs differ from the disk");
	}

	/* The engine must find every distinct key's whole run. */
	probes = palloc(sizeof(int64) * Max(img->n, 1));
	for (i = 0; i < img->n; i++)
		if (i == 0 || ik[i] != ik[i - 1])
			probes[ndistinct++] = ik[i];
	first = palloc(sizeof(uint64) * Max(ndistinct, 1));
	last = palloc(sizeof(uint64) * Max(ndistinct, 1));
	gpuidx_query_image(img, GI_OP_POINT, probes, NULL, ndistinct, first, last);
	for (i = 0; i < ndistinct; i++)
	{
		if (first[i] >= last[i] || last[i] > (uint64) img->n ||
			ik[first[i]] != probes[i] ||
			(first[i] > 0 && ik[first[i] - 1] == probes[i]) ||
			ik[last[i] - 1] != probes[i] ||
			(last[i] < (uint64) img->n && ik[last[i]] == probes[i]))
			fail(index, psprintf("engine answer for key " INT64_FORMAT " is wrong", probes[i]));
	}
	gpuidx_image_release(img);

	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_BOOL(true);
}
