/*
 * shared_images.c - the shared image store of service mode (service.h).
 *
 * A shared image is one version of an index's sorted entries in dynamic
 * shared memory, split as GpuidxImageData splits them: a base segment
 * (keys, packed TIDs, INCLUDE rows) and a delta segment (entries added
 * since, sorted, with their positions among all entries; then the TIDs and
 * rows of NULL keys).  A version made by inserts shares its predecessor's
 * base and publishes only a new delta, so a refresh after a few inserts
 * copies a few entries, not the index.  Segments never change once
 * published; a backend maps them read-only and sees them through a *view*,
 * a GpuidxImageData whose arrays point into the mappings (shared = true),
 * so every reader of GpuidxImageData works unchanged.
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
 * A segment is pinned (dsm_pin_segment) while a slot uses it, so it
 * outlives the backend that published it: a delta by its slot, a base until
 * the last slot sharing it is freed.  The memory goes back once every
 * process that still maps it detaches.
 */
#include "gpuidx.h"
#include "service.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/*
 * The service's shared state (the store's slots, the request slots); set up
 * by service.c's shared-memory hooks, NULL without shared_preload_libraries.
 * Defined here, at the bottom of the service's files, so that the store
 * needs nothing from the service.
 */
GpuidxServiceShared *gpuidx_service_shared = NULL;

/* Where the arrays of a base segment of nbase entries start. */
void
gpuidx_base_layout(int64 nbase, int row_bytes, GpuidxSegmentLayout *layout)
{
	Size		off = 0;

	memset(layout, 0, sizeof(*layout));
	layout->keys = off;
	off += MAXALIGN(sizeof(int64) * Max(nbase, 1));
	layout->tids = off;
	off += MAXALIGN(sizeof(uint64) * Max(nbase, 1));
	layout->rows = off;
	off += MAXALIGN((Size) row_bytes * nbase);
	layout->total = off;
}

/* Where the arrays of a delta segment start. */
void
gpuidx_delta_layout(int64 ndelta, int64 nnull, int row_bytes,
					GpuidxSegmentLayout *layout)
{
	Size		off = 0;

	memset(layout, 0, sizeof(*layout));
	layout->keys = off;
	off += MAXALIGN(sizeof(int64) * Max(ndelta, 1));
	layout->tids = off;
	off += MAXALIGN(sizeof(uint64) * Max(ndelta, 1));
	layout->rank = off;
	off += MAXALIGN(sizeof(int64) * Max(ndelta, 1));
	layout->rows = off;
	off += MAXALIGN((Size) row_bytes * ndelta);
	layout->null_tids = off;
	off += MAXALIGN(sizeof(uint64) * Max(nnull, 1));
	layout->null_rows = off;
	off += MAXALIGN((Size) row_bytes * nnull);
	layout->total = off;
}

/* The service's store (service mode only). */
static GpuidxServiceShared *
store(void)
{
	Assert(gpuidx_service_shared != NULL);
	return gpuidx_service_shared;
}

/* Does a used slot other than skip share base_id's base (lock held)? */
static bool
base_shared(uint64 base_id, const GpuidxSharedImage *skip)
{
	GpuidxServiceShared *s = store();
	int			i;

	for (i = 0; i < s->max_images; i++)
		if (&s->images[i] != skip && s->images[i].id != 0 &&
			s->images[i].base_id == base_id)
			return true;
	return false;
}

/* Bytes held by every published slot, each shared base counted once. */
static Size
store_bytes(void)
{
	GpuidxServiceShared *s = store();
	Size		total = 0;
	int			i,
				j;

	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];
		bool		counted = false;

		if (slot->id == 0)
			continue;
		total += slot->delta_bytes;
		for (j = 0; j < i && !counted; j++)
			counted = s->images[j].id != 0 && s->images[j].base_id == slot->base_id;
		if (!counted)
			total += slot->base_bytes;
	}
	return total;
}

/*
 * Free a slot (the store's lock held exclusively): unpin its delta, and
 * its base when no other slot shares it.
 */
static void
free_slot(GpuidxSharedImage *slot)
{
	bool		last = !base_shared(slot->base_id, slot);

	slot->id = 0;
	slot->current = false;
	if (slot->delta_handle != DSM_HANDLE_INVALID)
		dsm_unpin_segment(slot->delta_handle);
	if (last && slot->base_handle != DSM_HANDLE_INVALID)
		dsm_unpin_segment(slot->base_handle);
	slot->delta_handle = DSM_HANDLE_INVALID;
	slot->base_handle = DSM_HANDLE_INVALID;
}

/*
 * Free every retired slot nobody pins, but none sharing keep_base (a base
 * a new version is about to share; 0: none) (the lock held exclusively).
 */
static void
sweep_locked(uint64 keep_base)
{
	GpuidxServiceShared *s = store();
	int			i;

	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];

		if (slot->id != 0 && !slot->current &&
			pg_atomic_read_u32(&slot->pins) == 0 &&
			(keep_base == 0 || slot->base_id != keep_base))
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
	sweep_locked(0);
	LWLockRelease(store()->lock);
}

/*
 * Evict the least recently used slot that no transaction pins, never
 * keep's base (the lock held exclusively); false when there is none.
 */
static bool
evict_lru_locked(uint64 keep_base)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *victim = NULL;
	int			i;

	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];

		if (slot->id == 0 || pg_atomic_read_u32(&slot->pins) != 0 ||
			(keep_base != 0 && slot->base_id == keep_base))
			continue;
		if (victim == NULL || slot->last_used < victim->last_used)
			victim = slot;
	}
	if (victim == NULL)
		return false;
	elog(DEBUG1, "gpuidx: evicting the shared image of index %u", victim->indexoid);
	free_slot(victim);
	return true;
}

/*
 * A free slot for a new image of bytes more, evicting what gpuidx.service_
 * memory_limit and the slot count ask for (never a slot sharing keep_base,
 * the base the new image uses); NULL when the pinned images leave no room
 * (the lock held exclusively).
 */
static GpuidxSharedImage *
claim_slot_locked(Size bytes, uint64 keep_base)
{
	GpuidxServiceShared *s = store();
	Size		limit = (Size) gpuidx_service_memory_limit_mb * 1024 * 1024;
	int			i;

	sweep_locked(keep_base);
	while (gpuidx_service_memory_limit_mb > 0 && store_bytes() + bytes > limit)
		if (!evict_lru_locked(keep_base))
			return NULL;
	for (;;)
	{
		for (i = 0; i < s->max_images; i++)
			if (s->images[i].id == 0)
				return &s->images[i];
		if (!evict_lru_locked(keep_base))
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

/* Does slot hold the same entries as img (the same version)? */
static bool
slot_holds(const GpuidxSharedImage *slot, Relation index,
		   const GpuidxImageData *img)
{
	return RelFileNodeEquals(slot->node, index->rd_node) &&
		slot->generation == img->generation &&
		slot->base_count == img->base_count &&
		slot->pending_count == img->pending_count &&
		slot->nnull == img->nnull;
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

/* Point a view's arrays into its mapped base and delta segments. */
static void
point_into(GpuidxImageData *img, dsm_segment *base_seg, dsm_segment *delta_seg)
{
	GpuidxSegmentLayout b,
				d;
	char	   *base = dsm_segment_address(base_seg);
	char	   *delta = dsm_segment_address(delta_seg);
	int			rb = img->row_bytes;

	gpuidx_base_layout(img->nbase, rb, &b);
	gpuidx_delta_layout(img->ndelta, img->nnull, rb, &d);
	img->keys = (int64 *) (base + b.keys);
	img->tids = (uint64 *) (base + b.tids);
	img->rows = rb > 0 ? base + b.rows : NULL;
	img->dkeys = (int64 *) (delta + d.keys);
	img->dtids = (uint64 *) (delta + d.tids);
	img->drank = (int64 *) (delta + d.rank);
	img->drows = rb > 0 ? delta + d.rows : NULL;
	img->null_tids = (uint64 *) (delta + d.null_tids);
	img->null_rows = rb > 0 ? delta + d.null_rows : NULL;
	img->base_seg = base_seg;
	img->delta_seg = delta_seg;
}

/* Copy a slot's identity into a view (the lock held). */
static void
view_from_slot(GpuidxImageData *img, const GpuidxSharedImage *slot, int slotno)
{
	img->indexoid = slot->indexoid;
	img->n = slot->n;
	img->nbase = slot->nbase;
	img->ndelta = slot->ndelta;
	img->nnull = slot->nnull;
	img->row_bytes = slot->row_bytes;
	img->key_bytes = slot->key_bytes;
	img->structure = (GiStructure) slot->structure;
	img->generation = slot->generation;
	img->base_count = slot->base_count;
	img->pending_count = slot->pending_count;
	memcpy(img->lane_count, slot->lane_count, sizeof(img->lane_count));
	img->image = NULL;
	img->image_deferred = false;
	img->shared = true;
	img->shared_id = slot->id;
	img->shared_slot = slotno;
	img->shared_pinned = true;
}

/*
 * This process's mappings of shared segments, counted: PostgreSQL maps a
 * segment once per process, and several views share a base (and an old
 * pinned view and a new one may share both).
 */
typedef struct SegmentMapping
{
	dsm_segment *seg;
	int			views;
	struct SegmentMapping *next;
} SegmentMapping;

static SegmentMapping *mappings = NULL;

/* Count one more view of a mapping this process already has, or add it. */
static void
add_mapping(dsm_segment *seg)
{
	SegmentMapping *m;

	for (m = mappings; m; m = m->next)
		if (m->seg == seg)
		{
			m->views++;
			return;
		}
	m = MemoryContextAlloc(TopMemoryContext, sizeof(SegmentMapping));
	m->seg = seg;
	m->views = 1;
	m->next = mappings;
	mappings = m;
}

/*
 * Map a pinned slot's segment (or count one more view of its mapping); the
 * service maps segments through this too.
 */
dsm_segment *
gpuidx_map_segment(dsm_handle handle)
{
	SegmentMapping *m;
	dsm_segment *seg;

	for (m = mappings; m; m = m->next)
		if (dsm_segment_handle(m->seg) == handle)
		{
			m->views++;
			return m->seg;
		}
	seg = dsm_attach(handle);
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not map a gpuidx shared image")));
	dsm_pin_mapping(seg);
	PG_TRY();
	{
		add_mapping(seg);
	}
	PG_CATCH();
	{
		dsm_detach(seg);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return seg;
}

/* One view fewer of seg; unmap it after the last. */
void
gpuidx_unmap_segment(dsm_segment *seg)
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
 * Map a pinned slot's two segments into img (a view).  On an error the pin
 * is dropped and img maps nothing (the caller frees it).
 */
static void
map_view(GpuidxImageData *img, GpuidxSharedImage *slot,
		 dsm_handle base_handle, dsm_handle delta_handle)
{
	dsm_segment *base_seg = NULL;
	dsm_segment *delta_seg;

	PG_TRY();
	{
		base_seg = gpuidx_map_segment(base_handle);
		delta_seg = gpuidx_map_segment(delta_handle);
	}
	PG_CATCH();
	{
		if (base_seg)
			gpuidx_unmap_segment(base_seg);
		pg_atomic_fetch_sub_u32(&slot->pins, 1);
		img->shared_pinned = false;
		img->base_seg = img->delta_seg = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	point_into(img, base_seg, delta_seg);
}

/*
 * Could slot be brought up to what the metapage says by reading only new
 * entries (same relfilenode, generation and base run, fewer pending and
 * NULL entries)?
 */
static bool
slot_is_prefix(const GpuidxSharedImage *slot, Relation index,
			   const GpuidxMetaPageData *meta, const GpuidxPendingCounts *pending)
{
	return RelFileNodeEquals(slot->node, index->rd_node) &&
		slot->generation == meta->generation &&
		slot->base_count == meta->base_count &&
		slot->pending_count <= pending->total &&
		slot->nnull <= (int64) meta->null_count &&
		slot->key_bytes == meta->key_bytes &&
		slot->row_bytes == gpuidx_layout(index)->row_bytes;
}

/*
 * A view of the shared image that holds exactly what the metapage says
 * (meta, pending), pinned for this transaction; or, with prefix, of one
 * that holds a part of it that new entries complete (a backend without an
 * image of its own extends it rather than reading the index whole); NULL
 * when no such image is published.  The view lives in its own context
 * under TopMemoryContext; the caller links it into the cache.
 */
GpuidxImageData *
gpuidx_shared_find(Relation index, const GpuidxMetaPageData *meta,
				   const GpuidxPendingCounts *pending, bool prefix)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot;
	MemoryContext ctx;
	GpuidxImageData *img;
	dsm_handle	base_handle,
				delta_handle;

	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	slot = current_slot_locked(RelationGetRelid(index));
	if (slot)
		follow_fold_locked(slot, meta);
	if (slot == NULL ||
		!(prefix ? slot_is_prefix(slot, index, meta, pending) :
		  slot_matches(slot, index, meta, pending)))
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
	img->load_ms = 0;
	base_handle = slot->base_handle;
	delta_handle = slot->delta_handle;
	LWLockRelease(s->lock);

	PG_TRY();
	{
		map_view(img, slot, base_handle, delta_handle);
	}
	PG_CATCH();
	{
		MemoryContextDelete(ctx);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return img;
}

/* Create a segment of bytes (NULL when no segment slot is left). */
static dsm_segment *
new_segment(Size bytes)
{
	return dsm_create(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
}

/* A new delta segment holding img's delta and NULL-key entries. */
static dsm_segment *
copy_delta(GpuidxImageData *img, Size *bytes)
{
	GpuidxSegmentLayout d;
	dsm_segment *seg;
	char	   *p;
	int			rb = img->row_bytes;

	gpuidx_delta_layout(img->ndelta, img->nnull, rb, &d);
	seg = new_segment(d.total);
	if (seg == NULL)
		return NULL;
	p = dsm_segment_address(seg);
	memcpy(p + d.keys, img->dkeys, sizeof(int64) * img->ndelta);
	memcpy(p + d.tids, img->dtids, sizeof(uint64) * img->ndelta);
	memcpy(p + d.rank, img->drank, sizeof(int64) * img->ndelta);
	memcpy(p + d.null_tids, img->null_tids, sizeof(uint64) * img->nnull);
	if (rb > 0)
	{
		memcpy(p + d.rows, img->drows, (Size) rb * img->ndelta);
		memcpy(p + d.null_rows, img->null_rows, (Size) rb * img->nnull);
	}
	*bytes = d.total;
	return seg;
}

/* A new base segment holding img's base arrays. */
static dsm_segment *
copy_base(GpuidxImageData *img, Size *bytes)
{
	GpuidxSegmentLayout b;
	dsm_segment *seg;
	char	   *p;
	int			rb = img->row_bytes;

	gpuidx_base_layout(img->nbase, rb, &b);
	seg = new_segment(b.total);
	if (seg == NULL)
		return NULL;
	p = dsm_segment_address(seg);
	memcpy(p + b.keys, img->keys, sizeof(int64) * img->nbase);
	memcpy(p + b.tids, img->tids, sizeof(uint64) * img->nbase);
	if (rb > 0)
		memcpy(p + b.rows, img->rows, (Size) rb * img->nbase);
	*bytes = b.total;
	return seg;
}

/* Free what a private image owns once its arrays live in segments. */
static void
free_local_arrays(GpuidxImageData *img, bool base_too)
{
	void	   *arrays[] = {img->dkeys, img->dtids, img->drank, img->drows,
	img->null_tids, img->null_rows};
	int			i;

	if (base_too)
	{
		if (img->keys)
			pfree(img->keys);
		if (img->tids)
			pfree(img->tids);
		if (img->rows)
			pfree(img->rows);
	}
	for (i = 0; i < lengthof(arrays); i++)
		if (arrays[i])
			pfree(arrays[i]);
}

/*
 * Register a new version (the lock held exclusively, segments made and
 * mapped): the index's current slot, retiring the older one.  NULL when the
 * store has no room.
 */
static GpuidxSharedImage *
register_locked(Relation index, GpuidxImageData *img, uint64 parent_id,
				uint64 base_id, dsm_segment *base_seg, Size base_bytes,
				dsm_segment *delta_seg, Size delta_bytes)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *old = current_slot_locked(img->indexoid);
	GpuidxSharedImage *slot;
	uint64		id;

	if (old)
	{
		old->current = false;
		if (pg_atomic_read_u32(&old->pins) == 0 &&
			(base_id == 0 || old->base_id != base_id))
			free_slot(old);
	}
	slot = claim_slot_locked(delta_bytes + (base_id == 0 ? base_bytes : 0), base_id);
	if (slot == NULL)
		return NULL;
	id = ++s->next_id;
	slot->id = id;
	slot->dbid = MyDatabaseId;
	slot->indexoid = img->indexoid;
	slot->node = index->rd_node;
	slot->current = true;
	pg_atomic_write_u32(&slot->pins, 0);
	slot->loaded_at = GetCurrentTimestamp();
	slot->parent_id = parent_id;
	slot->base_id = base_id != 0 ? base_id : id;
	slot->base_handle = dsm_segment_handle(base_seg);
	slot->base_bytes = base_bytes;
	slot->delta_handle = dsm_segment_handle(delta_seg);
	slot->delta_bytes = delta_bytes;
	slot->generation = img->generation;
	slot->base_count = img->base_count;
	slot->pending_count = img->pending_count;
	memcpy(slot->lane_count, img->lane_count, sizeof(slot->lane_count));
	slot->n = img->n;
	slot->nbase = img->nbase;
	slot->ndelta = img->ndelta;
	slot->nnull = img->nnull;
	slot->key_bytes = img->key_bytes;
	slot->structure = img->structure;
	slot->row_bytes = img->row_bytes;
	slot->load_ms = img->load_ms;
	slot->engine_device_bytes = 0;
	slot->engine_host_bytes = 0;
	slot->engines = 0;
	pin_locked(slot);
	return slot;
}

/*
 * Another backend published img's version first (the lock held, released
 * here): img becomes a view of theirs.  The caller frees its own segments.
 */
static void
use_theirs(GpuidxImageData *img, GpuidxSharedImage *theirs, bool base_too)
{
	GpuidxServiceShared *s = store();
	dsm_handle	base_handle = theirs->base_handle;
	dsm_handle	delta_handle = theirs->delta_handle;
	double		load_ms = img->load_ms;

	pin_locked(theirs);
	free_local_arrays(img, base_too);
	view_from_slot(img, theirs, (int) (theirs - s->images));
	LWLockRelease(s->lock);
	img->load_ms = load_ms;
	map_view(img, theirs, base_handle, delta_handle);
}

/*
 * Publish a freshly loaded image (no engine image; its own base arrays and
 * delta) as the index's current shared image and turn img into a view of
 * it.  When another backend published the same version first, img becomes
 * a view of theirs.  When the store has no room (every image pinned, or no
 * segment left), img stays a private image of this backend.
 */
void
gpuidx_shared_publish(Relation index, GpuidxImageData *img)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *slot,
			   *old;
	dsm_segment *base_seg,
			   *delta_seg;
	Size		base_bytes = 0,
				delta_bytes = 0;

	if (img->image != NULL || img->shared)
		return;
	base_seg = copy_base(img, &base_bytes);
	delta_seg = base_seg ? copy_delta(img, &delta_bytes) : NULL;
	if (delta_seg == NULL)
	{
		if (base_seg)
			dsm_detach(base_seg);
		elog(DEBUG1, "gpuidx: no dynamic shared memory segment left for index %u",
			 img->indexoid);
		return;
	}

	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	old = current_slot_locked(img->indexoid);
	if (old && slot_holds(old, index, img))
	{
		dsm_detach(base_seg);
		dsm_detach(delta_seg);
		use_theirs(img, old, true);
		return;
	}
	slot = register_locked(index, img, 0, 0, base_seg, base_bytes,
						   delta_seg, delta_bytes);
	if (slot == NULL)
	{
		LWLockRelease(s->lock);
		elog(DEBUG1, "gpuidx: no room in the shared image store for index %u",
			 img->indexoid);
		dsm_detach(base_seg);
		dsm_detach(delta_seg);
		return;
	}
	dsm_pin_segment(base_seg);
	dsm_pin_segment(delta_seg);
	view_from_slot(img, slot, (int) (slot - s->images));
	LWLockRelease(s->lock);
	free_local_arrays(img, true);
	dsm_pin_mapping(base_seg);
	dsm_pin_mapping(delta_seg);
	add_mapping(base_seg);
	add_mapping(delta_seg);
	point_into(img, base_seg, delta_seg);
}

/*
 * Publish img, made of prev's base (a view's, borrowed) and a new delta of
 * its own, as the index's current shared image sharing prev's base
 * segment, and turn img into a view of it.  False, img untouched, when that
 * cannot be done (prev's image is gone from the store, no room, no segment
 * left): the caller loads a whole new version instead.
 */
bool
gpuidx_shared_publish_delta(Relation index, GpuidxImageData *img,
							GpuidxImageData *prev)
{
	GpuidxServiceShared *s = store();
	GpuidxSharedImage *pslot = &s->images[prev->shared_slot];
	GpuidxSharedImage *slot,
			   *old;
	dsm_segment *delta_seg;
	Size		delta_bytes = 0;
	uint64		base_id;

	Assert(prev->shared && img->keys == prev->keys);
	delta_seg = copy_delta(img, &delta_bytes);
	if (delta_seg == NULL)
		return false;
	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	if (pslot->id != prev->shared_id)
	{
		/* prev was evicted: its base is no longer the store's to share */
		LWLockRelease(s->lock);
		dsm_detach(delta_seg);
		return false;
	}
	base_id = pslot->base_id;
	old = current_slot_locked(img->indexoid);
	if (old && slot_holds(old, index, img))
	{
		dsm_detach(delta_seg);
		use_theirs(img, old, false);
		return true;
	}
	slot = register_locked(index, img, prev->shared_id, base_id,
						   prev->base_seg, pslot->base_bytes, delta_seg, delta_bytes);
	if (slot == NULL)
	{
		LWLockRelease(s->lock);
		dsm_detach(delta_seg);
		return false;
	}
	dsm_pin_segment(delta_seg);
	view_from_slot(img, slot, (int) (slot - s->images));
	LWLockRelease(s->lock);
	free_local_arrays(img, false);
	dsm_pin_mapping(delta_seg);
	add_mapping(prev->base_seg);
	add_mapping(delta_seg);
	point_into(img, prev->base_seg, delta_seg);
	return true;
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

/* Unmap a view's segments (the view is being freed). */
void
gpuidx_shared_detach(GpuidxImageData *img)
{
	gpuidx_shared_unpin(img);
	if (img->delta_seg)
		gpuidx_unmap_segment(img->delta_seg);
	if (img->base_seg)
		gpuidx_unmap_segment(img->base_seg);
	img->delta_seg = NULL;
	img->base_seg = NULL;
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

/* ---------- dropped and replaced indexes ---------- */

/*
 * A transaction that drops an index (DROP INDEX, DROP TABLE, DROP SCHEMA
 * ... CASCADE) or gives it a new relfilenode (REINDEX, TRUNCATE, ALTER
 * INDEX SET TABLESPACE) retires the index's shared images when it commits,
 * so that they are freed once no transaction pins them rather than staying
 * until LRU eviction.  Nothing happens on abort.
 *
 * While the transaction runs, the relations it touches are noted: every
 * such change updates or deletes the relation's pg_class row, which makes a
 * relcache invalidation this backend processes at the next command counter
 * increment (the relcache callback), and a drop also passes the object
 * access hook.  Before commit (catalog access still allowed) each noted
 * relation is looked up: gone, or its relfilenode now.  At commit, the
 * store's slots of those indexes in this database whose relfilenode is not
 * that one are retired, the unpinned ones freed at once, and the service
 * woken to drop its engine images of them.  DROP DATABASE (noted by the
 * object access hook) retires every slot of that database at commit.
 */

#define CLEANUP_MAX_NOTED	64

static Oid	cleanup_noted[CLEANUP_MAX_NOTED];
static int	cleanup_nnoted = 0;
static bool cleanup_overflow = false;	/* more than CLEANUP_MAX_NOTED: check
										 * every index of this database */

/* A noted relation as it stands at pre-commit. */
typedef struct CleanupTarget
{
	Oid			indexoid;
	Oid			relfilenode;	/* InvalidOid: the relation is gone */
} CleanupTarget;

static CleanupTarget *cleanup_targets = NULL;	/* in TopTransactionContext */
static int	cleanup_ntargets = 0;

/* A database this transaction drops (DROP DATABASE is one per transaction). */
static Oid	cleanup_dropped_db = InvalidOid;

static object_access_hook_type prev_object_access_hook = NULL;

/* Note a relation this transaction changed (no allocation, no error). */
static void
cleanup_note(Oid relid)
{
	int			i;

	if (gpuidx_service_shared == NULL || !OidIsValid(relid) ||
		!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return;
	for (i = 0; i < cleanup_nnoted; i++)
		if (cleanup_noted[i] == relid)
			return;
	if (cleanup_nnoted < CLEANUP_MAX_NOTED)
		cleanup_noted[cleanup_nnoted++] = relid;
	else
		cleanup_overflow = true;
}

/* Relcache callback: a relation's pg_class row changed (or any other inval). */
static void
cleanup_relcache_callback(Datum arg, Oid relid)
{
	cleanup_note(relid);
}

/* Object access hook: a relation (maybe a gpuidx index) is being dropped. */
static void
cleanup_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0)
		cleanup_note(objectId);
	if (access == OAT_DROP && classId == DatabaseRelationId &&
		gpuidx_service_shared != NULL)
		cleanup_dropped_db = objectId;
}

/*
 * Pre-commit: the noted relations that have slots in this database, each
 * with its relfilenode now (InvalidOid: dropped), into cleanup_targets.
 */
static void
cleanup_resolve(void)
{
	GpuidxServiceShared *s = store();
	Oid		   *candidates;
	int			ncandidates = 0;
	int			i,
				j;

	candidates = MemoryContextAlloc(TopTransactionContext,
									sizeof(Oid) * s->max_images);
	LWLockAcquire(s->lock, LW_SHARED);
	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];
		bool		noted = cleanup_overflow;

		if (slot->id == 0 || slot->dbid != MyDatabaseId)
			continue;
		for (j = 0; j < cleanup_nnoted && !noted; j++)
			noted = cleanup_noted[j] == slot->indexoid;
		for (j = 0; j < ncandidates && noted; j++)
			if (candidates[j] == slot->indexoid)
				noted = false;	/* already listed */
		if (noted)
			candidates[ncandidates++] = slot->indexoid;
	}
	LWLockRelease(s->lock);

	cleanup_targets = MemoryContextAlloc(TopTransactionContext,
										 sizeof(CleanupTarget) * Max(ncandidates, 1));
	cleanup_ntargets = 0;
	for (i = 0; i < ncandidates; i++)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(candidates[i]));
		CleanupTarget *t = &cleanup_targets[cleanup_ntargets++];

		t->indexoid = candidates[i];
		t->relfilenode = InvalidOid;
		if (HeapTupleIsValid(tup))
		{
			t->relfilenode = ((Form_pg_class) GETSTRUCT(tup))->relfilenode;
			ReleaseSysCache(tup);
		}
	}
}

/*
 * Commit: retire the slots of the resolved indexes that hold a relfilenode
 * the index no longer has, free the unpinned ones and wake the service
 * (must not fail: the transaction has committed).
 */
static void
cleanup_retire(void)
{
	GpuidxServiceShared *s = store();
	int			retired = 0;
	int			i,
				j;

	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	for (i = 0; i < s->max_images; i++)
	{
		GpuidxSharedImage *slot = &s->images[i];

		if (slot->id == 0)
			continue;
		if (OidIsValid(cleanup_dropped_db) && slot->dbid == cleanup_dropped_db)
		{
			slot->current = false;
			retired++;
			continue;
		}
		if (slot->dbid != MyDatabaseId)
			continue;
		for (j = 0; j < cleanup_ntargets; j++)
		{
			CleanupTarget *t = &cleanup_targets[j];

			if (t->indexoid == slot->indexoid &&
				(t->relfilenode == InvalidOid || t->relfilenode != slot->node.relNode))
			{
				slot->current = false;
				retired++;
				break;
			}
		}
	}
	if (retired > 0)
		sweep_locked(0);
	LWLockRelease(s->lock);
	if (retired > 0)
	{
		Latch	   *latch = s->service_latch;

		if (latch)
			SetLatch(latch);
		elog(DEBUG1, "gpuidx: retired %d shared images of dropped or replaced indexes",
			 retired);
	}
}

/* Forget what this transaction noted. */
static void
cleanup_reset(void)
{
	cleanup_nnoted = 0;
	cleanup_overflow = false;
	cleanup_targets = NULL;
	cleanup_ntargets = 0;
	cleanup_dropped_db = InvalidOid;
}

/* Transaction callback: resolve before commit, retire at commit. */
static void
cleanup_xact_callback(XactEvent event, void *arg)
{
	if (gpuidx_service_shared == NULL)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (cleanup_nnoted > 0 || cleanup_overflow)
				cleanup_resolve();
			break;
		case XACT_EVENT_COMMIT:
			if (cleanup_ntargets > 0 || OidIsValid(cleanup_dropped_db))
				cleanup_retire();
			cleanup_reset();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_ABORT:
			/* a prepared drop leaves its images to LRU eviction */
			cleanup_reset();
			break;
		default:
			break;
	}
}

/*
 * From _PG_init in shared_preload_libraries (service mode): the hooks that
 * retire the shared images of dropped and replaced indexes at commit.
 */
void
gpuidx_shared_register_cleanup(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = cleanup_object_access;
	CacheRegisterRelcacheCallback(cleanup_relcache_callback, (Datum) 0);
	RegisterXactCallback(cleanup_xact_callback, NULL);
}

PG_FUNCTION_INFO_V1(gpuidx_service_images);

/*
 * gpuidx_service_images(): one row per image the service store holds, in
 * every database: index, database, entries, shared bytes (a base shared
 * with other versions counted in each), engine host and device bytes,
 * engines built, pins, current, load time and last-use order.
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
		values[5] = Int64GetDatum((int64) (slot->base_bytes + slot->delta_bytes));
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
