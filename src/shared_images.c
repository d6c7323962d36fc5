/*
 * shared_images.c - the shared image store of service mode (service.h).
 *
 * A shared image is one version of an index's sorted entries in a dynamic
 * shared memory segment: keys, packed TIDs, INCLUDE rows, then the TIDs and
 * rows of NULL keys (gpuidx_segment_layout).  Segments never change once
 * published; a backend maps them read-only and sees them through a *view*,
 * a GpuidxImageData whose arrays point into the mapping (shared = true), so
 * every reader of GpuidxImageData works unchanged.
 *
 * The store is a fixed array of slots in the main shared memory under one
 * LWLock.  A slot names its index (database, OID, relfilenode) and what the
 * version holds (generation, base and pending counts, NULL count): the same
 * identity a per-backend image is checked by.  At most one slot per index
 * is *current*; publishing a newer version retires the older one, which is
 * freed once no transaction pins it.  Pins are per transaction: a backend
 * pins a slot when a scan first uses the view in a transaction and drops
 * the pin at transaction end, so least-recently-used eviction under
 * gpuidx.service_memory_limit frees only images nobody is reading.
 *
 * A slot's segment is pinned (dsm_pin_segment) while the slot holds it, so
 * it outlives the backend that published it; freeing a slot unpins it, and
 * the memory goes back once every process that still maps it detaches.
 */
#include "gpuidx.h"
#include "service.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* Where each array of a shared image starts, and the segment's size. */
void
gpuidx_segment_layout(int64 n, int64 nnull, int row_bytes,
					  GpuidxSegmentLayout *layout)
{
	Size		off = 0;

	layout->keys = off;
	off += MAXALIGN(sizeof(int64) * Max(n, 1));
	layout->tids = off;
	off += MAXALIGN(sizeof(uint64) * Max(n, 1));
	layout->rows = off;
	off += MAXALIGN((Size) row_bytes * n);
	layout->null_tids = off;
	off += MAXALIGN(sizeof(uint64) * Max(nnull, 1));
	layout->null_rows = off;
	off += MAXALIGN((Size) row_bytes * nnull);
	layout->total = off;
}

/* The service's store, or an error when this is not service mode. */
static GpuidxServiceShared *
store(void)
{
	Assert(gpuidx_service_shared != NULL);
	return gpuidx_service_shared;
}

/* Bytes held by every published slot. */
static Size
store_bytes(void)
{
	GpuidxServiceShared *s = store();
	Size		total = 0;
	int			i;

	for (i = 0; i < s->max_images; i++)
		if (s->images[i].id != 0)
			total += s->images[i].bytes;
	return total;
}

/* Free a slot (the store's lock held exclusively) and unpin its segment. */
static void
free_slot(GpuidxSharedImage *slot)
{
	dsm_handle	h = slot->handle;

	slot->id = 0;
	slot->current = false;
	slot->handle = DSM_HANDLE_INVALID;
	if (h != DSM_HANDLE_INVALID)
		dsm_unpin_segment(h);
}

/* Free every retired slot nobody pins (the lock held exclusively). */
static void
sweep_locked(void)
{
	GpuidxServiceShared *s = store();
	int			i;

	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];

		if (slot->id != 0 && !slot->current &&
			pg_atomic_read_u32(&slot->pins) == 0)
			free_slot(slot);
	}
}

/* Free retired, unpinned shared images (the service calls this often). */
void
gpuidx_shared_sweep(void)
{
	if (gpuidx_service_shared == NULL)
		return;
	LWLockAcquire(store()->lock, LW_EXCLUSIVE);
	sweep_locked();
	LWLockRelease(store()->lock);
}

/*
 * Evict the least recently used slot that no transaction pins (the lock
 * held exclusively); false when there is none.
 */
static bool
evict_lru_locked(void)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *victim = NULL;
	int			i;

	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];

		if (slot->id == 0 || pg_atomic_read_u32(&slot->pins) != 0)
			continue;
		if (victim == NULL || slot->last_used < victim->last_used)
			victim = slot;
	}
	if (victim == NULL)
		return false;
	elog(DEBUG1, "gpuidx: evicting the shared image of index %u (%zu bytes)",
		 victim->indexoid, victim->bytes);
	free_slot(victim);
	return true;
}

/*
 * A free slot for a new image of bytes, evicting what gpuidx.service_
 * memory_limit and the slot count ask for; NULL when the pinned images
 * leave no room (the lock held exclusively).
 */
static GpuidxSharedImage *
claim_slot_locked(Size bytes)
{
	GpuidxServiceShared *s = store();
	Size		limit = (Size) gpuidx_service_memory_limit_mb * 1024 * 1024;
	int			i;

	sweep_locked();
	while (gpuidx_service_memory_limit_mb > 0 && store_bytes() + bytes > limit)
		if (!evict_lru_locked())
			return NULL;
	for (;;)
	{
		for (i = 0; i < s->max_images; i++)
			if (s->images[i].id == 0)
				return &s->images[i];
		if (!evict_lru_locked())
			return NULL;
	}
}

/* The current slot of an index in this database (lock held), or NULL. */
static GpuidxSharedImage *
current_slot_locked(Oid indexoid)
{
	GpuidxServiceShared *s = store();
	int			i;

	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];

		if (slot->id != 0 && slot->current && slot->dbid == MyDatabaseId &&
			slot->indexoid == indexoid)
			return slot;
	}
	return NULL;
}

/* Does slot hold exactly what the metapage says the index holds? */
static bool
slot_matches(const GpuidxSharedImage *slot, Relation index,
			 const GpuidxMetaPageData *meta, const GpuidxPendingCounts *pending)
{
	return RelFileNodeEquals(slot->node, index->rd_node) &&
		slot->generation == meta->generation &&
		slot->base_count == meta->base_count &&
		slot->pending_count == pending->total &&
		slot->nnull == (int64) meta->null_count &&
		slot->key_bytes == meta->key_bytes &&
		slot->row_bytes == gpuidx_layout(index)->row_bytes;
}

/*
 * A fold moved exactly the entries slot holds into a new base run: the
 * slot follows it, as a per-backend image does (cache.c); lock held
 * exclusively.
 */
static void
follow_fold_locked(GpuidxSharedImage *slot, const GpuidxMetaPageData *meta)
{
	if (slot->generation != meta->generation &&
		meta->folded_from == slot->generation &&
		meta->folded_entries == slot->base_count + slot->pending_count &&
		(int64) meta->null_count == slot->nnull)
	{
		slot->generation = meta->generation;
		slot->base_count = meta->base_count;
		slot->pending_count = 0;
		memset(slot->lane_count, 0, sizeof(slot->lane_count));
	}
}

/* Pin a slot for this transaction (the lock held, shared or exclusive). */
static void
pin_locked(GpuidxSharedImage *slot)
{
	pg_atomic_fetch_add_u32(&slot->pins, 1);
	slot->last_used = pg_atomic_add_fetch_u64(&store()->tick, 1);
}

/* Point a view's arrays into its mapped segment. */
static void
point_into(GpuidxImageData *img, dsm_segment *seg)
{
	GpuidxSegmentLayout layout;
	char	   *base = dsm_segment_address(seg);

	gpuidx_segment_layout(img->n, img->nnull, img->row_bytes, &layout);
	img->keys = (int64 *) (base + layout.keys);
	img->tids = (uint64 *) (base + layout.tids);
	img->rows = img->row_bytes > 0 ? base + layout.rows : NULL;
	img->null_tids = (uint64 *) (base + layout.null_tids);
	img->null_rows = img->row_bytes > 0 ? base + layout.null_rows : NULL;
	img->nbase = img->n;
	img->ndelta = 0;
	img->dkeys = NULL;
	img->dtids = NULL;
	img->drank = NULL;
	img->drows = NULL;
	img->seg = seg;
}

/* Copy a slot's identity into a view (the lock held). */
static void
view_from_slot(GpuidxImageData *img, const GpuidxSharedImage *slot, int slotno)
{
	img->indexoid = slot->indexoid;
	img->n = slot->n;
	img->nnull = slot->nnull;
	img->row_bytes = slot->row_bytes;
	img->key_bytes = slot->key_bytes;
	img->structure = (GiStructure) slot->structure;
	img->generation = slot->generation;
	img->base_count = slot->base_count;
	img->pending_count = slot->pending_count;
	memcpy(img->lane_count, slot->lane_count, sizeof(img->lane_count));
	img->load_ms = 0;
	img->image = NULL;
	img->image_deferred = false;
	img->shared = true;
	img->shared_id = slot->id;
	img->shared_slot = slotno;
	img->shared_pinned = true;
}

/*
 * This process's mappings of shared images, counted: PostgreSQL maps a
 * segment once per process, and two views (an old pinned one and a new
 * one) may share a segment.
 */
typedef struct SegmentMapping
{
	dsm_segment *seg;
	int			views;
	struct SegmentMapping *next;
} SegmentMapping;

static SegmentMapping *mappings = NULL;

/* Map a pinned slot's segment (or count one more view of its mapping). */
static dsm_segment *
map_segment(dsm_handle handle)
{
	SegmentMapping *m;
	dsm_segment *seg;

	for (m = mappings; m; m = m->next)
		if (dsm_segment_handle(m->seg) == handle)
		{
			m->views++;
			return m->seg;
		}
	m = MemoryContextAlloc(TopMemoryContext, sizeof(SegmentMapping));
	seg = dsm_attach(handle);
	if (seg == NULL)
	{
		pfree(m);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not map a gpuidx shared image")));
	}
	dsm_pin_mapping(seg);
	m->seg = seg;
	m->views = 1;
	m->next = mappings;
	mappings = m;
	return seg;
}

/* Remember a mapping this process made itself (a published segment). */
static void
add_mapping(dsm_segment *seg)
{
	SegmentMapping *m = MemoryContextAlloc(TopMemoryContext, sizeof(SegmentMapping));

	m->seg = seg;
	m->views = 1;
	m->next = mappings;
	mappings = m;
}

/* One view fewer of seg; unmap it after the last. */
static void
unmap_segment(dsm_segment *seg)
{
	SegmentMapping **p;

	for (p = &mappings; *p; p = &(*p)->next)
	{
		SegmentMapping *m = *p;

		if (m->seg != seg)
			continue;
		if (--m->views > 0)
			return;
		*p = m->next;
		pfree(m);
		break;
	}
	dsm_detach(seg);
}

/*
 * A view of the shared image that holds exactly what the metapage says
 * (meta, pending), pinned for this transaction; NULL when no such image is
 * published.  The view lives in its own context under TopMemoryContext;
 * the caller links it into the cache.
 */
GpuidxImageData *
gpuidx_shared_find(Relation index, const GpuidxMetaPageData *meta,
				   const GpuidxPendingCounts *pending)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot;
	MemoryContext ctx;
	GpuidxImageData *img;
	dsm_handle	handle;
	dsm_segment *seg;

	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	slot = current_slot_locked(RelationGetRelid(index));
	if (slot)
		follow_fold_locked(slot, meta);
	if (slot == NULL || !slot_matches(slot, index, meta, pending))
	{
		LWLockRelease(s->lock);
		return NULL;
	}
	pin_locked(slot);
	ctx = AllocSetContextCreate(TopMemoryContext, "gpuidx shared image view",
								ALLOCSET_SMALL_SIZES);
	img = MemoryContextAllocZero(ctx, sizeof(GpuidxImageData));
	img->context = ctx;
	view_from_slot(img, slot, (int) (slot - s->images));
	handle = slot->handle;
	LWLockRelease(s->lock);

	PG_TRY();
	{
		seg = map_segment(handle);
	}
	PG_CATCH();
	{
		pg_atomic_fetch_sub_u32(&slot->pins, 1);
		MemoryContextDelete(ctx);
		PG_RE_THROW();
	}
	PG_END_TRY();
	point_into(img, seg);
	return img;
}

/* Free a local image's arrays once they live in a segment. */
static void
free_local_arrays(GpuidxImageData *img)
{
	if (img->keys)
		pfree(img->keys);
	if (img->tids)
		pfree(img->tids);
	if (img->rows)
		pfree(img->rows);
	if (img->null_tids)
		pfree(img->null_tids);
	if (img->null_rows)
		pfree(img->null_rows);
}

/* Copy a freshly loaded image's arrays into a new segment. */
static dsm_segment *
copy_to_segment(GpuidxImageData *img, Size *bytes)
{
	GpuidxSegmentLayout layout;
	dsm_segment *seg;
	char	   *base;

	gpuidx_segment_layout(img->n, img->nnull, img->row_bytes, &layout);
	seg = dsm_create(layout.total, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
		return NULL;
	base = dsm_segment_address(seg);
	memcpy(base + layout.keys, img->keys, sizeof(int64) * img->n);
	memcpy(base + layout.tids, img->tids, sizeof(uint64) * img->n);
	if (img->row_bytes > 0)
	{
		memcpy(base + layout.rows, img->rows, (Size) img->row_bytes * img->n);
		memcpy(base + layout.null_rows, img->null_rows,
			   (Size) img->row_bytes * img->nnull);
	}
	memcpy(base + layout.null_tids, img->null_tids, sizeof(uint64) * img->nnull);
	*bytes = layout.total;
	return seg;
}

/*
 * Publish a freshly loaded image (base arrays only, no engine image) as the
 * index's current shared image and turn img into a view of it.  When
 * another backend published the same version first, img becomes a view of
 * theirs.  When the store has no room (every image pinned, or too few
 * segments), img stays a private image of this backend.
 */
void
gpuidx_shared_publish(Relation index, GpuidxImageData *img)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot,
			   *old;
	dsm_segment *seg;
	Size		bytes = 0;

	if (img->ndelta != 0 || img->image != NULL || img->shared)
		return;
	seg = copy_to_segment(img, &bytes);
	if (seg == NULL)
	{
		elog(DEBUG1, "gpuidx: no dynamic shared memory segment left for index %u",
			 img->indexoid);
		return;
	}
	dsm_pin_mapping(seg);

	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	old = current_slot_locked(img->indexoid);
	if (old && RelFileNodeEquals(old->node, index->rd_node) &&
		old->generation == img->generation && old->base_count == img->base_count &&
		old->pending_count == img->pending_count && old->nnull == img->nnull)
	{
		/* Someone published this version meanwhile: use theirs. */
		dsm_handle	theirs = old->handle;

		pin_locked(old);
		view_from_slot(img, old, (int) (old - s->images));
		LWLockRelease(s->lock);
		dsm_detach(seg);
		free_local_arrays(img);
		point_into(img, map_segment(theirs));
		return;
	}
	if (old)
	{
		old->current = false;
		if (pg_atomic_read_u32(&old->pins) == 0)
			free_slot(old);
	}
	slot = claim_slot_locked(bytes);
	if (slot == NULL)
	{
		LWLockRelease(s->lock);
		elog(DEBUG1, "gpuidx: no room in the shared image store for index %u",
			 img->indexoid);
		dsm_detach(seg);
		return;
	}
	dsm_pin_segment(seg);
	slot->id = ++s->next_id;
	slot->dbid = MyDatabaseId;
	slot->indexoid = img->indexoid;
	slot->node = index->rd_node;
	slot->current = true;
	pg_atomic_write_u32(&slot->pins, 0);
	slot->loaded_at = GetCurrentTimestamp();
	slot->handle = dsm_segment_handle(seg);
	slot->bytes = bytes;
	slot->generation = img->generation;
	slot->base_count = img->base_count;
	slot->pending_count = img->pending_count;
	memcpy(slot->lane_count, img->lane_count, sizeof(slot->lane_count));
	slot->n = img->n;
	slot->nnull = img->nnull;
	slot->key_bytes = img->key_bytes;
	slot->structure = img->structure;
	slot->row_bytes = img->row_bytes;
	slot->load_ms = img->load_ms;
	slot->engine_device_bytes = 0;
	slot->engine_host_bytes = 0;
	slot->engines = 0;
	pin_locked(slot);
	view_from_slot(img, slot, (int) (slot - s->images));
	img->load_ms = slot->load_ms;
	LWLockRelease(s->lock);
	free_local_arrays(img);
	add_mapping(seg);
	point_into(img, seg);
}

/*
 * Pin a view's slot for this transaction; false when its image was evicted
 * or freed (the caller loads the index again).
 */
bool
gpuidx_shared_pin(GpuidxImageData *img)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot = &s->images[img->shared_slot];
	bool		ok;

	if (img->shared_pinned)
		return true;
	LWLockAcquire(s->lock, LW_SHARED);
	ok = slot->id == img->shared_id;
	if (ok)
		pin_locked(slot);
	LWLockRelease(s->lock);
	img->shared_pinned = ok;
	return ok;
}

/* Drop this transaction's pin of a view's slot. */
void
gpuidx_shared_unpin(GpuidxImageData *img)
{
	if (!img->shared || !img->shared_pinned)
		return;
	/* A pinned slot is never freed, so it still holds img's image. */
	pg_atomic_fetch_sub_u32(&store()->images[img->shared_slot].pins, 1);
	img->shared_pinned = false;
}

/* Unmap a view's segment (the view is being freed). */
void
gpuidx_shared_detach(GpuidxImageData *img)
{
	gpuidx_shared_unpin(img);
	if (img->seg)
		unmap_segment(img->seg);
	img->seg = NULL;
}

/*
 * Is a view still its index's current shared image?  An unlocked read: a
 * hint for dropping views of replaced images at transaction end.
 */
bool
gpuidx_shared_is_current(const GpuidxImageData *img)
{
	GpuidxSharedImage *slot = &store()->images[img->shared_slot];

	return slot->id == img->shared_id && slot->current;
}

/* A fold moved a view's entries into a new base run: the slot follows. */
void
gpuidx_shared_follow_fold(GpuidxImageData *img, const GpuidxMetaPageData *meta)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot = &s->images[img->shared_slot];

	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	if (slot->id == img->shared_id)
		follow_fold_locked(slot, meta);
	LWLockRelease(s->lock);
}

/* The service's engine images of a view's slot; false if it went away. */
bool
gpuidx_shared_engine_info(const GpuidxImageData *img, uint64 *device_bytes,
						  uint64 *host_bytes, int *engines)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot = &s->images[img->shared_slot];
	bool		ok;

	LWLockAcquire(s->lock, LW_SHARED);
	ok = slot->id == img->shared_id;
	if (ok)
	{
		*device_bytes = slot->engine_device_bytes;
		*host_bytes = slot->engine_host_bytes;
		*engines = slot->engines;
	}
	LWLockRelease(s->lock);
	return ok;
}

PG_FUNCTION_INFO_V1(gpuidx_service_images);

/*
 * gpuidx_service_images(): one row per image the service store holds, in
 * every database: index, database, entries, host and device bytes, engines
 * built, pins, current, load and last-use order.
 */
Datum
gpuidx_service_images(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GpuidxServiceShared *s = gpuidx_service_shared;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (s == NULL)
		PG_RETURN_VOID();
	LWLockAcquire(s->lock, LW_SHARED);
	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];
		Datum		values[12];
		bool		nulls[12] = {0};
		char		engines[16] = "";

		if (slot->id == 0)
			continue;
		if (slot->engines & (1 << GI_ENGINE_GPU))
			strcat(engines, "gpu");
		if (slot->engines & (1 << GI_ENGINE_CPU))
			strcat(engines, engines[0] ? ",cpu" : "cpu");
		values[0] = ObjectIdGetDatum(slot->indexoid);
		values[1] = ObjectIdGetDatum(slot->dbid);
		values[2] = Int64GetDatum(slot->id);
		values[3] = BoolGetDatum(slot->current);
		values[4] = Int64GetDatum(slot->n + slot->nnull);
		values[5] = Int64GetDatum((int64) slot->bytes);
		values[6] = Int64GetDatum((int64) slot->engine_host_bytes);
		values[7] = Int64GetDatum((int64) slot->engine_device_bytes);
		values[8] = CStringGetTextDatum(engines);
		nulls[8] = engines[0] == '\0';
		values[9] = Int32GetDatum((int32) pg_atomic_read_u32(&slot->pins));
		values[10] = TimestampTzGetDatum(slot->loaded_at);
		values[11] = Int64GetDatum((int64) slot->last_used);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(s->lock);
	PG_RETURN_VOID();
}
