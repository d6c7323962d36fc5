/*
 * cache.c - the per-backend image cache.
 *
 * An image is the engine structure built from an index's pages.  Each
 * backend keeps the newest image of every index it used, keyed by index OID
 * and checked against the relfilenode and the metapage (generation, base and
 * pending counts) on every use.  Pending entries are counted per lane: an
 * image remembers how many of each lane it holds, and a refresh reads only
 * the entries past those (lanes only grow within a generation, so equal
 * sums mean the image is current).  New pending entries are merged into a new
 * version: the sorted host arrays are merged, and a B+ tree image takes the
 * new entries by batch insertion (gi_image_insert) when no scan holds the old
 * version, instead of being rebuilt.  A new generation made by a rewrite
 * that removed nothing (a fold) is followed without a reload when the image
 * held every entry of the generation before; any other new generation
 * (VACUUM that removed entries) or relfilenode (REINDEX, TRUNCATE) means a
 * full reload.
 *
 * A scan pins the version it started with, so a reload in the middle of a
 * statement never frees arrays a scan still reads; versions that are
 * replaced are freed when their last pin goes.  At transaction end every pin
 * is dropped (scans never outlive their transaction).
 */
#include "gpuidx.h"
#include "service.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "portability/instr_time.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "utils/resowner.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

typedef struct CacheEntry
{
	Oid			indexoid;		/* hash key */
	RelFileNode node;
	GpuidxImageData *current;
	uint64		last_used;		/* for least-recently-used eviction */
} CacheEntry;

static HTAB *image_cache = NULL;
static GpuidxImageData *live_versions = NULL;
static uint64 use_tick = 0;
static int	gpu_usable = -1;	/* -1 unknown, 0 no, 1 yes */
static char gpu_unusable_reason[256];

/* Free one version: its engine image and its arrays. */
static void
free_version(GpuidxImageData *img)
{
	GpuidxImageData **p;

	for (p = &live_versions; *p; p = &(*p)->next_live)
	{
		if (*p == img)
		{
			*p = img->next_live;
			break;
		}
	}
	if (img->shared)
		gpuidx_shared_detach(img);
	gi_image_free(img->image);
	img->image = NULL;
	MemoryContextDelete(img->context);
}

/*
 * The scan interlock.
 *
 * A pinned image may hold entries that a concurrent VACUUM removes.  Once
 * VACUUM's bulk delete returns, the heap frees those TIDs and may mark their
 * pages all-visible; an answer that trusts the visibility map (index-only
 * scans, GpuIndexScan's key-only rows, gpuidx_range_count) would then count
 * a removed entry as a live row, and a TID reused by a new row would carry
 * the old key.  btree rules this out with the leaf-page pin that VACUUM's
 * cleanup lock waits for; gpuidx images live outside the buffer pool, so:
 *
 *   every pin of an image holds the index's interlock in share mode, taken
 *   before the metapage is read; a rewrite that removed entries takes it in
 *   exclusive mode after switching the metapage to the new generation, so it
 *   returns to VACUUM only once every scan that could hold an older image
 *   has ended.  Scans that start meanwhile queue behind it and load the new
 *   generation.
 *
 * The interlock is a heavyweight lock (deadlocks are detected, waits can be
 * cancelled), shown in pg_locks as an advisory lock of the index's database
 * with objid = the index's OID and objsubid = GPUIDX_INTERLOCK_ID, a number
 * pg_advisory_lock never uses.  It belongs to the top-level transaction, so
 * a scan opened before a savepoint may end inside it.
 */
#define GPUIDX_INTERLOCK_ID 0x4749

/* The lock tag of an index's scan interlock. */
static void
interlock_tag(LOCKTAG *tag, Oid indexoid)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, indexoid, 0, GPUIDX_INTERLOCK_ID);
}

/* Take (take = true) or drop one share hold of an index's interlock. */
static void
interlock_share(Oid indexoid, bool take)
{
	LOCKTAG		tag;
	ResourceOwner saved = CurrentResourceOwner;

	interlock_tag(&tag, indexoid);
	CurrentResourceOwner = TopTransactionResourceOwner;
	PG_TRY();
	{
		if (take)
			(void) LockAcquire(&tag, ShareLock, false, false);
		else
			LockRelease(&tag, ShareLock, false);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = saved;
	}
	PG_END_TRY();
}

/*
 * Wait until no scan holds an image of the index loaded before the current
 * generation (see the scan interlock above).  Called by a rewrite that
 * removed entries, after the switch, with no buffer lock held.
 */
void
gpuidx_wait_for_scans(Relation index)
{
	LOCKTAG		tag;

	interlock_tag(&tag, RelationGetRelid(index));
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	LockRelease(&tag, ExclusiveLock, false);
}

/*
 * May an answer trust the visibility map instead of visiting the heap?  Not
 * during recovery: replaying a VACUUM does not wait for a standby's scans
 * (the interlock above works between primary backends only), so a standby
 * scan may hold an image older than the all-visible bits it reads.
 */
bool
gpuidx_can_skip_heap(void)
{
	return !RecoveryInProgress();
}

/*
 * Service mode: unmap the views of shared images that were replaced or
 * evicted, so their memory goes back (the next use maps the current one).
 */
static void
drop_replaced_views(void)
{
	HASH_SEQ_STATUS seq;
	CacheEntry *e;

	if (image_cache == NULL || !gpuidx_service_mode())
		return;
	hash_seq_init(&seq, image_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->current && e->current->shared && e->current->refcount == 0 &&
			!gpuidx_shared_is_current(e->current))
		{
			free_version(e->current);
			e->current = NULL;
		}
	}
}

/* Drop every pin at transaction end; free versions nobody uses any more. */
static void
cache_xact_callback(XactEvent event, void *arg)
{
	GpuidxImageData *img,
			   *next;

	if (event == XACT_EVENT_PRE_PREPARE)
	{
		/* A prepared transaction must not keep VACUUM waiting: unpin now. */
		for (img = live_versions; img; img = img->next_live)
		{
			for (; img->refcount > 0; img->refcount--)
				interlock_share(img->indexoid, false);
			gpuidx_shared_unpin(img);
		}
		return;
	}
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	/* The interlocks go with the transaction's locks. */
	for (img = live_versions; img; img = next)
	{
		next = img->next_live;
		img->refcount = 0;
		gpuidx_shared_unpin(img);
		if (img->stale)
			free_version(img);
	}
	drop_replaced_views();
}

/* Free every image before the backend exits (device memory included). */
static void
cache_exit_callback(int code, Datum arg)
{
	while (live_versions)
		free_version(live_versions);
}

/* Create the cache on first use. */
static void
cache_init(void)
{
	HASHCTL		ctl;

	if (image_cache)
		return;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(CacheEntry);
	image_cache = hash_create("gpuidx image cache", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS);
	RegisterXactCallback(cache_xact_callback, NULL);
	before_shmem_exit(cache_exit_callback, 0);
}

/* Which engine to use now, per gpuidx.engine; CUDA starts here, lazily. */
GiEngineKind
gpuidx_choose_engine(void)
{
	if (gpuidx_service_mode())
		return gpuidx_service_choose_engine();	/* never CUDA in a backend */
	if (gpuidx_engine_setting == GPUIDX_ENGINE_CPU)
		return GI_ENGINE_CPU;

	/*
	 * A parallel worker does not probe the device until it must build an
	 * engine image (gpuidx_image_build_engine confirms the choice then):
	 * starting CUDA costs a few hundred milliseconds a process, and a
	 * worker of a nested loop answers its one-probe rescans on the host.
	 * (Its leader has probed, or probes when it runs its share.)
	 */
	if (gpu_usable < 0 && IsParallelWorker())
		return GI_ENGINE_GPU;
	if (gpu_usable < 0)
		gpu_usable = gi_gpu_available(gpu_unusable_reason,
									  sizeof(gpu_unusable_reason)) ? 1 : 0;
	if (gpu_usable)
		return GI_ENGINE_GPU;
	if (gpuidx_engine_setting == GPUIDX_ENGINE_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gpuidx.engine is \"gpu\" but no usable GPU was found"),
				 errdetail("%s", gpu_unusable_reason),
				 errhint("SET gpuidx.engine = auto to fall back to the CPU engine.")));
	return GI_ENGINE_CPU;
}

/* Device bytes held by images other than except. */
static uint64
device_bytes_in_use(GpuidxImageData *except)
{
	GpuidxImageData *img;
	uint64		total = 0;

	for (img = live_versions; img; img = img->next_live)
	{
		if (img != except && img->image && img->engine == GI_ENGINE_GPU)
		{
			GiImageInfo info;

			gi_image_info(img->image, &info);
			total += info.device_bytes;
		}
	}
	return total;
}

/*
 * Free the current image of the least recently used index that no scan
 * holds (never keep's; only GPU images when gpu_only); false when there is
 * none.
 */
static bool
evict_lru(Oid keep, bool gpu_only)
{
	HASH_SEQ_STATUS seq;
	CacheEntry *e,
			   *victim = NULL;

	hash_seq_init(&seq, image_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->indexoid == keep || e->current == NULL ||
			e->current->refcount > 0 ||
			(gpu_only && e->current->engine != GI_ENGINE_GPU))
			continue;
		if (victim == NULL || e->last_used < victim->last_used)
			victim = e;
	}
	if (victim == NULL)
		return false;
	free_version(victim->current);
	victim->current = NULL;
	return true;
}

/*
 * Make room on the device under gpuidx.device_memory_limit: free the images
 * of the least recently used indexes that no scan holds, until need more
 * bytes fit or nothing is left to evict.
 */
static void
evict_for_device(uint64 limit, uint64 need, Oid keep)
{
	for (;;)
	{
		if (device_bytes_in_use(NULL) + need <= limit)
			return;
		if (!evict_lru(keep, true))
			return;
	}
}

/*
 * Host bytes one version holds: its sorted arrays (as gpuidx_info counts
 * them) and the engine image's host memory.
 */
static uint64
version_host_bytes(GpuidxImageData *img)
{
	uint64		total;

	if (img->shared)
		return 0;				/* the service store counts shared images */
	total = (uint64) img->n * (sizeof(int64) + sizeof(uint64) + img->row_bytes) +
		(uint64) img->ndelta * sizeof(int64) +
		(uint64) img->nnull * (sizeof(uint64) + img->row_bytes);

	if (img->image)
	{
		GiImageInfo info;

		gi_image_info(img->image, &info);
		total += info.host_bytes;
	}
	return total;
}

/* Versions this backend holds (current or pinned) and their host bytes. */
void
gpuidx_cache_usage(int64 *images, uint64 *host_bytes)
{
	GpuidxImageData *img;

	*images = 0;
	*host_bytes = 0;
	for (img = live_versions; img; img = img->next_live)
	{
		(*images)++;
		*host_bytes += version_host_bytes(img);
	}
}

/*
 * Keep the images under gpuidx.host_memory_limit: free the current images
 * of the least recently used indexes that no scan holds (never keep's),
 * until the versions fit or nothing is left to evict.  An evicted index is
 * loaded again on its next use.
 */
static void
evict_for_host(Oid keep)
{
	uint64		limit = (uint64) gpuidx_host_memory_limit_mb * 1024 * 1024;

	if (gpuidx_host_memory_limit_mb <= 0)
		return;
	for (;;)
	{
		int64		images;
		uint64		used;

		gpuidx_cache_usage(&images, &used);
		if (used <= limit)
			return;
		if (!evict_lru(keep, false))
			return;
	}
}

/*
 * Merge two (key, tid)-sorted runs into out; their included-columns rows
 * (rb bytes each, the row arrays NULL when rb is 0) move with them.
 */
static void
merge_runs(const int64 *ak, const uint64 *at, const char *ar, int64 na,
		   const int64 *bk, const uint64 *bt, const char *br, int64 nb,
		   int64 *ok, uint64 *ot, char *orows, int rb)
{
	int64		i = 0,
				j = 0,
				o = 0;

	while (i < na || j < nb)
	{
		if (j >= nb || (i < na && (ak[i] < bk[j] || (ak[i] == bk[j] && at[i] < bt[j]))))
		{
			if (rb > 0)
				memcpy(orows + (Size) o * rb, ar + (Size) i * rb, rb);
			ok[o] = ak[i];
			ot[o++] = at[i++];
		}
		else
		{
			if (rb > 0)
				memcpy(orows + (Size) o * rb, br + (Size) j * rb, rb);
			ok[o] = bk[j];
			ot[o++] = bt[j++];
		}
	}
}

/*
 * Can prev's engine image take new entries by batch insertion?  Only a B+
 * tree image on the engine wanted now that no scan holds (a scan reads the
 * image it pinned, which insertion changes).
 */
static bool
can_insert_into(GpuidxImageData *prev, GiEngineKind engine)
{
	return gpuidx_enable_batch_insert && prev->image != NULL &&
		prev->refcount == 0 && prev->structure == GI_STRUCT_BTREE &&
		prev->engine == engine && prev->wanted_engine == engine;
}

/*
 * Insert n sorted entries into *image by batch insertion.  On failure the
 * image is freed and *image set to NULL (the caller reloads or rebuilds).
 */
static bool
insert_or_drop(GiImage **image, const int64 *keys, const uint64 *tids, int64 n)
{
	GiError		err;

	if (gi_image_insert(*image, (const int64_t *) keys, (const uint64_t *) tids,
						(size_t) n, &err) == GI_OK)
		return true;
	elog(DEBUG1, "gpuidx: batch insertion failed, building the image anew: %s",
		 err.message);
	gi_image_free(*image);
	*image = NULL;
	return false;
}

/*
 * Move prev's image to img, inserting the n new sorted entries into it.  On
 * failure img->image stays NULL: the caller builds a new one from img's
 * arrays as before.
 */
static void
insert_into_prev(GpuidxImageData *img, GpuidxImageData *prev,
				 const int64 *keys, const uint64 *tids, int64 n)
{
	GiImage    *image = prev->image;

	prev->image = NULL;
	if (insert_or_drop(&image, keys, tids, n))
		img->image = image;
}

/* Copy the entries at positions [first, last) (keys or tids may be NULL). */
void
gpuidx_copy_entries(const GpuidxImageData *img, int64 first, int64 last,
					int64 *keys, uint64 *tids)
{
	int64		j,
				pos;

	if (last <= first)
		return;
	if (img->ndelta == 0)
	{
		if (keys)
			memcpy(keys, img->keys + first, sizeof(int64) * (last - first));
		if (tids)
			memcpy(tids, img->tids + first, sizeof(uint64) * (last - first));
		return;
	}
	j = gpuidx_delta_before(img, first);
	for (pos = first; pos < last; pos++)
	{
		bool		from_delta = j < img->ndelta && img->drank[j] == pos;
		int64		b = pos - j;

		if (keys)
			*keys++ = from_delta ? img->dkeys[j] : img->keys[b];
		if (tids)
			*tids++ = from_delta ? img->dtids[j] : img->tids[b];
		if (from_delta)
			j++;
	}
}

/* Base entries before (key, tid) in img's base arrays (binary search). */
static int64
base_lower_bound(const GpuidxImageData *img, int64 key, uint64 tid)
{
	int64		lo = 0,
				hi = img->nbase;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (img->keys[mid] < key || (img->keys[mid] == key && img->tids[mid] < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Most entries a delta may hold before a refresh merges everything into new
 * base arrays: placing each delta entry costs a binary search into the
 * base, so past a sixty-fourth of it one linear merge is cheaper.
 */
static int64
delta_limit(int64 nbase)
{
	return Max((int64) 4096, nbase / 64);
}

/*
 * The entries added to an index since prev, merged into a new delta: what
 * update_in_place and a shared delta version (service mode) are made of.
 */
typedef struct DeltaUpdate
{
	GpuidxMetaPageData meta;
	GpuidxPendingCounts pending;
	int64	   *keys;			/* the new entries, sorted (caller's context) */
	uint64	   *tids;
	int64		n;
	int64	   *dk;				/* the merged delta (target context) */
	uint64	   *dt;
	int64	   *dr;
	char	   *drows;
	int64		nd;
	uint64	   *nt;				/* all NULL-key TIDs and rows (target) */
	char	   *nrows;
} DeltaUpdate;

/*
 * Read the entries added since prev (pending lanes past prev's counts, the
 * NULL list) and merge them with prev's delta into new delta arrays
 * allocated in target.  False when a delta does not apply: the index was
 * rewritten, a lane shrank, or the delta would pass delta_limit (the caller
 * then loads a new version).
 */
static bool
read_delta(Relation index, GpuidxImageData *prev, MemoryContext target,
		   DeltaUpdate *d)
{
	GpuidxPendingCounts from;
	uint64	   *null_tids;
	char	   *rows;
	char	   *null_rows;
	int			rb = prev->row_bytes;
	int64		o;
	int			lane;
	MemoryContext old;

	memcpy(from.lane, prev->lane_count, sizeof(from.lane));
	from.total = prev->pending_count;
	gpuidx_read_entries(index, &d->meta, &d->pending, &from, &d->keys, &d->tids,
						&rows, &d->n, &null_tids, &null_rows);
	d->nd = prev->ndelta + d->n;
	if (d->meta.generation != prev->generation ||
		d->meta.base_count != prev->base_count || d->nd > delta_limit(prev->nbase))
		return false;
	for (lane = 0; lane < GPUIDX_LANES; lane++)
		if (d->pending.lane[lane] < prev->lane_count[lane])
			return false;
	gpuidx_sort_entries(d->keys, d->tids, rows, rb, d->n);

	old = MemoryContextSwitchTo(target);
	d->dk = palloc(sizeof(int64) * Max(d->nd, 1));
	d->dt = palloc(sizeof(uint64) * Max(d->nd, 1));
	d->dr = palloc(sizeof(int64) * Max(d->nd, 1));
	d->nt = palloc(sizeof(uint64) * Max((int64) d->meta.null_count, 1));
	d->drows = rb > 0 ? palloc((Size) rb * Max(d->nd, 1)) : NULL;
	d->nrows = rb > 0 ? palloc((Size) rb * Max((int64) d->meta.null_count, 1)) : NULL;
	MemoryContextSwitchTo(old);
	merge_runs(prev->dkeys, prev->dtids, prev->drows, prev->ndelta,
			   d->keys, d->tids, rows, d->n, d->dk, d->dt, d->drows, rb);
	for (o = 0; o < d->nd; o++)
		d->dr[o] = o + base_lower_bound(prev, d->dk[o], d->dt[o]);
	memcpy(d->nt, null_tids, sizeof(uint64) * d->meta.null_count);
	if (rb > 0)
		memcpy(d->nrows, null_rows, (Size) rb * d->meta.null_count);
	return true;
}

/* Free a DeltaUpdate's target arrays (the update was not used). */
static void
free_delta(DeltaUpdate *d)
{
	pfree(d->dk);
	pfree(d->dt);
	pfree(d->dr);
	pfree(d->nt);
	if (d->drows)
		pfree(d->drows);
	if (d->nrows)
		pfree(d->nrows);
}

/*
 * Bring prev up to date in place when only pending entries were added and
 * its image can take them by batch insertion: the new entries join prev's
 * delta (the base arrays are not copied) and go into the engine image.
 * Returns false, with prev unchanged, when that does not apply (the caller
 * then loads a new version); an engine failure frees prev's image, which
 * makes the caller reload.
 */
static bool
update_in_place(Relation index, GpuidxImageData *prev, GiEngineKind engine)
{
	MemoryContext tmp,
				old;
	DeltaUpdate d;
	bool		updated = false;
	instr_time	t0,
				t1;

	if (!can_insert_into(prev, engine))
		return false;
	INSTR_TIME_SET_CURRENT(t0);
	tmp = AllocSetContextCreate(CurrentMemoryContext, "gpuidx refresh",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(tmp);
	if (!read_delta(index, prev, prev->context, &d))
		goto out;
	if (!insert_or_drop(&prev->image, d.keys, d.tids, d.n))
	{
		free_delta(&d);
		goto out;
	}

	/* Nothing below can fail. */
	if (prev->ndelta > 0)
	{
		pfree(prev->dkeys);
		pfree(prev->dtids);
		pfree(prev->drank);
		if (prev->drows)
			pfree(prev->drows);
	}
	if (prev->null_tids)
		pfree(prev->null_tids);
	if (prev->null_rows)
		pfree(prev->null_rows);
	prev->drows = d.drows;
	prev->null_rows = d.nrows;
	prev->dkeys = d.dk;
	prev->dtids = d.dt;
	prev->drank = d.dr;
	prev->ndelta = d.nd;
	prev->n = prev->nbase + d.nd;
	prev->null_tids = d.nt;
	prev->nnull = d.meta.null_count;
	prev->pending_count = d.pending.total;
	memcpy(prev->lane_count, d.pending.lane, sizeof(prev->lane_count));
	updated = true;

out:
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	if (updated)
		prev->load_ms = INSTR_TIME_GET_MILLISEC(t1);
	return updated;
}

/*
 * Service mode: a new version of a shared image when only pending entries
 * (or NULL keys) were added: prev's base, shared, and a new delta holding
 * prev's delta and the new entries, published without copying the base
 * (the service inserts the new entries into prev's engine image).  NULL
 * when a delta does not apply or the store cannot take it.
 */
static GpuidxImageData *
shared_delta_version(Relation index, GpuidxImageData *prev)
{
	MemoryContext ctx,
				tmp,
				old;
	GpuidxImageData *img = NULL;
	DeltaUpdate d;
	bool		published = false;
	instr_time	t0,
				t1;

	INSTR_TIME_SET_CURRENT(t0);
	ctx = AllocSetContextCreate(CurrentMemoryContext, "gpuidx image",
								ALLOCSET_SMALL_SIZES);
	tmp = AllocSetContextCreate(CurrentMemoryContext, "gpuidx refresh",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(tmp);
	if (read_delta(index, prev, ctx, &d))
	{
		img = MemoryContextAllocZero(ctx, sizeof(GpuidxImageData));
		img->context = ctx;
		img->indexoid = prev->indexoid;
		img->row_bytes = prev->row_bytes;
		img->keys = prev->keys;	/* borrowed: the base is shared */
		img->tids = prev->tids;
		img->rows = prev->rows;
		img->nbase = prev->nbase;
		img->dkeys = d.dk;
		img->dtids = d.dt;
		img->drank = d.dr;
		img->drows = d.drows;
		img->ndelta = d.nd;
		img->n = prev->nbase + d.nd;
		img->null_tids = d.nt;
		img->null_rows = d.nrows;
		img->nnull = d.meta.null_count;
		img->key_bytes = prev->key_bytes;
		img->structure = prev->structure;
		img->generation = d.meta.generation;
		img->base_count = d.meta.base_count;
		img->pending_count = d.pending.total;
		memcpy(img->lane_count, d.pending.lane, sizeof(img->lane_count));
		img->engine = prev->engine;
		img->wanted_engine = prev->wanted_engine;
		INSTR_TIME_SET_CURRENT(t1);
		INSTR_TIME_SUBTRACT(t1, t0);
		img->load_ms = INSTR_TIME_GET_MILLISEC(t1);
		published = gpuidx_shared_publish_delta(index, img, prev);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	if (!published)
	{
		MemoryContextDelete(ctx);
		return NULL;
	}
	MemoryContextSetParent(ctx, TopMemoryContext);
	return img;
}

/*
 * Load a new version of the index's image.  prev (may be NULL) is reused
 * when only pending entries were added.  Everything is allocated in a
 * context under the current one, so an error frees it; on success the
 * context moves under TopMemoryContext.
 */
static GpuidxImageData *
load_version(Relation index, GpuidxImageData *prev, GiEngineKind engine)
{
	MemoryContext ctx,
				old;
	GpuidxImageData *img;
	GpuidxMetaPageData meta;
	GpuidxPendingCounts pending;
	int64	   *keys;
	uint64	   *tids;
	char	   *rows;
	int			rb = gpuidx_layout(index)->row_bytes;
	int64		n;
	bool		incremental;
	int			lane;
	instr_time	t0,
				t1;

	INSTR_TIME_SET_CURRENT(t0);

	ctx = AllocSetContextCreate(CurrentMemoryContext, "gpuidx image",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(ctx);
	img = palloc0(sizeof(GpuidxImageData));
	img->context = ctx;
	img->indexoid = RelationGetRelid(index);
	img->row_bytes = rb;

	incremental = prev != NULL;
	if (incremental)
	{
		GpuidxPendingCounts from;

		memcpy(from.lane, prev->lane_count, sizeof(from.lane));
		from.total = prev->pending_count;
		gpuidx_read_entries(index, &meta, &pending, &from, &keys, &tids,
							&rows, &n, &img->null_tids, &img->null_rows);
		if (meta.generation != prev->generation ||
			meta.base_count != prev->base_count)
			incremental = false;
		for (lane = 0; lane < GPUIDX_LANES; lane++)
			if (pending.lane[lane] < prev->lane_count[lane])
				incremental = false;
		if (!incremental)
		{
			/* Rewritten since prev: read everything. */
			pfree(keys);
			pfree(tids);
			pfree(img->null_tids);
			if (rb > 0)
			{
				pfree(rows);
				pfree(img->null_rows);
			}
		}
	}
	if (!incremental)
		gpuidx_read_entries(index, &meta, &pending, NULL, &keys, &tids, &rows,
							&n, &img->null_tids, &img->null_rows);

	if (incremental)
	{
		/*
		 * n new pending entries: sort them, merge them with prev's delta
		 * (small), and that with prev's base in one pass over it.
		 */
		int64	   *rk = keys;
		uint64	   *rt = tids;
		char	   *rr = rows;
		int64		nr = n;

		gpuidx_sort_entries(keys, tids, rows, rb, n);
		if (prev->ndelta > 0)
		{
			nr = prev->ndelta + n;
			rk = gpuidx_alloc_huge(sizeof(int64) * nr);
			rt = gpuidx_alloc_huge(sizeof(uint64) * nr);
			rr = rb > 0 ? gpuidx_alloc_huge((Size) rb * nr) : NULL;
			merge_runs(prev->dkeys, prev->dtids, prev->drows, prev->ndelta,
					   keys, tids, rows, n, rk, rt, rr, rb);
		}
		img->n = prev->nbase + nr;
		img->keys = gpuidx_alloc_huge(sizeof(int64) * img->n);
		img->tids = gpuidx_alloc_huge(sizeof(uint64) * img->n);
		if (rb > 0)
			img->rows = gpuidx_alloc_huge((Size) rb * img->n);
		merge_runs(prev->keys, prev->tids, prev->rows, prev->nbase,
				   rk, rt, rr, nr, img->keys, img->tids, img->rows, rb);
		if (rk != keys)
		{
			pfree(rk);
			pfree(rt);
			if (rr)
				pfree(rr);
		}
		if (can_insert_into(prev, engine))
			insert_into_prev(img, prev, keys, tids, n);
		pfree(keys);
		pfree(tids);
		if (rows)
			pfree(rows);
	}
	else
	{
		/* Sorted base run followed by pending entries in arrival order. */
		int64		nbase = meta.base_count;
		int64		npend = n - nbase;

		img->n = n;
		if (npend > 0)
		{
			char	   *pend_rows = rows ? rows + (Size) nbase * rb : NULL;

			gpuidx_sort_entries(keys + nbase, tids + nbase, pend_rows, rb, npend);
			img->keys = gpuidx_alloc_huge(sizeof(int64) * n);
			img->tids = gpuidx_alloc_huge(sizeof(uint64) * n);
			if (rb > 0)
				img->rows = gpuidx_alloc_huge((Size) rb * n);
			merge_runs(keys, tids, rows, nbase, keys + nbase, tids + nbase,
					   pend_rows, npend, img->keys, img->tids, img->rows, rb);
			pfree(keys);
			pfree(tids);
			if (rows)
				pfree(rows);
		}
		else
		{
			img->keys = keys;
			img->tids = tids;
			img->rows = rows;
		}
	}
	img->nbase = img->n;
	img->key_bytes = meta.key_bytes;
	img->structure = (GiStructure) meta.structure;
	img->generation = meta.generation;
	img->base_count = meta.base_count;
	img->pending_count = pending.total;
	memcpy(img->lane_count, pending.lane, sizeof(img->lane_count));
	img->nnull = meta.null_count;
	img->engine = engine;
	img->wanted_engine = engine;
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	img->load_ms = INSTR_TIME_GET_MILLISEC(t1);

	if (img->image)
	{
		/* prev's image took the new entries by batch insertion. */
		MemoryContextSwitchTo(old);
		MemoryContextSetParent(ctx, TopMemoryContext);
		img->next_live = live_versions;
		live_versions = img;
		return img;
	}

	/*
	 * The engine image waits for the first batch that needs it: scans the
	 * host answers (rescans, single probes, parallel workers of a nested
	 * loop) never start a device context or build a tree.
	 */
	img->image_deferred = true;

	MemoryContextSwitchTo(old);
	MemoryContextSetParent(ctx, TopMemoryContext);
	img->next_live = live_versions;
	live_versions = img;
	return img;
}

/*
 * Build img's engine image if it is still deferred (load_version leaves it
 * to the first batch that needs it).  On an error the image stays deferred,
 * so a later batch tries again.
 */
void
gpuidx_image_build_engine(GpuidxImageData *img)
{
	GiBuildParams params;
	GiError		err;

	if (!img->image_deferred || gpuidx_service_mode())
		return;					/* service mode: the service builds engine images */
	/* a parallel worker's choice was provisional: probe the device now */
	if (img->engine == GI_ENGINE_GPU && gpu_usable < 0)
	{
		gpu_usable = gi_gpu_available(gpu_unusable_reason,
									  sizeof(gpu_unusable_reason)) ? 1 : 0;
		if (!gpu_usable)
			img->engine = gpuidx_choose_engine();	/* CPU, or the error */
	}
	memset(&params, 0, sizeof(params));
	params.engine = img->engine;
	params.structure = img->structure;
	params.key_bytes = img->key_bytes;
	if (img->engine == GI_ENGINE_GPU && gpuidx_device_memory_limit_mb > 0)
	{
		uint64		limit = (uint64) gpuidx_device_memory_limit_mb * 1024 * 1024;
		uint64		used;

		/* Keys on the device plus about a quarter for the inner levels. */
		evict_for_device(limit, (uint64) img->n * (img->key_bytes <= 4 ? 4 : 8) * 5 / 4,
						 img->indexoid);
		used = device_bytes_in_use(img);

		params.device_memory_limit = used >= limit ? 1 : (size_t) (limit - used);
	}
	if (gi_image_build(&params, (const int64_t *) img->keys,
					   (const uint64_t *) img->tids, (size_t) img->n,
					   &img->image, &err) != GI_OK)
	{
		/*
		 * A structure the GPU engine lacks: with gpuidx.engine = auto the
		 * CPU engine holds the image instead.
		 */
		if (err.status == GI_ERR_UNSUPPORTED && img->engine == GI_ENGINE_GPU &&
			gpuidx_engine_setting == GPUIDX_ENGINE_AUTO)
		{
			params.engine = GI_ENGINE_CPU;
			img->engine = GI_ENGINE_CPU;
			if (gi_image_build(&params, (const int64_t *) img->keys,
							   (const uint64_t *) img->tids, (size_t) img->n,
							   &img->image, &err) != GI_OK)
				gpuidx_raise_engine_error(&err, "building the index image");
		}
		else
			gpuidx_raise_engine_error(&err, "building the index image");
	}

	img->image_deferred = false;
	/* the engine image's host memory counts now: keep under the limit */
	evict_for_host(img->indexoid);
}

/* Free the images of indexes that no longer exist (DROP INDEX). */
static void
sweep_dropped(void)
{
	HASH_SEQ_STATUS seq;
	CacheEntry *e;

	hash_seq_init(&seq, image_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(e->indexoid)))
			continue;
		if (e->current)
		{
			e->current->stale = true;
			if (e->current->refcount == 0)
				free_version(e->current);
		}
		hash_search(image_cache, &e->indexoid, HASH_REMOVE, NULL);
	}
}

static GpuidxImageData *acquire_current(Relation index, GiEngineKind engine);

/*
 * Get an up-to-date image of the index, pinned until released (or until
 * the transaction ends).
 */
GpuidxImageData *
gpuidx_image_acquire(Relation index)
{
	Oid			indexoid = RelationGetRelid(index);
	GpuidxImageData *cur;
	GiEngineKind engine;

	cache_init();
	if ((use_tick & 63) == 63)
		sweep_dropped();
	engine = gpuidx_choose_engine();

	/* The interlock first: the image must not predate a VACUUM we miss. */
	interlock_share(indexoid, true);
	PG_TRY();
	{
		cur = acquire_current(index, engine);
	}
	PG_CATCH();
	{
		interlock_share(indexoid, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	cur->refcount++;
	evict_for_host(indexoid);
	return cur;
}

/*
 * The up-to-date image of the index, loaded, refreshed or followed from the
 * cached one as the metapage says (the caller pins it).
 */
static GpuidxImageData *
acquire_current(Relation index, GiEngineKind engine)
{
	Oid			indexoid = RelationGetRelid(index);
	GpuidxMetaPageData meta;
	GpuidxPendingCounts pending;
	CacheEntry *entry;
	bool		found;
	GpuidxImageData *cur;

	gpuidx_read_meta(index, &meta, &pending);

	entry = hash_search(image_cache, &indexoid, HASH_ENTER, &found);
	if (!found)
	{
		entry->current = NULL;
		entry->last_used = 0;
		memset(&entry->node, 0, sizeof(RelFileNode));
	}
	entry->last_used = ++use_tick;
	cur = entry->current;
	if (cur && cur->generation != meta.generation &&
		meta.folded_from == cur->generation &&
		meta.folded_entries == cur->base_count + cur->pending_count &&
		(int64) meta.null_count == cur->nnull &&
		RelFileNodeEquals(entry->node, index->rd_node))
	{
		/*
		 * A fold moved exactly the entries cur holds into the new base run:
		 * same entries, same sorted arrays, same image.  Follow it; the new
		 * pending lanes (if any) are read below.
		 */
		if (cur->shared)
			gpuidx_shared_follow_fold(cur, &meta);
		cur->generation = meta.generation;
		cur->base_count = meta.base_count;
		cur->pending_count = 0;
		memset(cur->lane_count, 0, sizeof(cur->lane_count));
	}
	if (cur && cur->shared)
	{
		/* A view serves every engine: the service builds what is asked. */
		if (cur->wanted_engine != engine)
			cur->engine = cur->wanted_engine = engine;
		/* Evicted from the store meanwhile: load it again. */
		if (!gpuidx_shared_pin(cur))
		{
			cur->stale = true;
			if (cur->refcount == 0)
				free_version(cur);
			entry->current = cur = NULL;
		}
	}
	if (cur && (!RelFileNodeEquals(entry->node, index->rd_node) ||
				cur->generation != meta.generation ||
				cur->base_count != meta.base_count ||
				cur->pending_count > pending.total ||
				cur->nnull > (int64) meta.null_count ||
				cur->wanted_engine != engine ||
				(cur->image == NULL && !cur->image_deferred && !cur->shared)))
	{
		/* Not reusable: retire it and load from scratch. */
		cur->stale = true;
		if (cur->refcount == 0)
			free_version(cur);
		entry->current = cur = NULL;
	}
	if (gpuidx_service_mode() &&
		(cur == NULL || cur->pending_count < pending.total ||
		 cur->nnull < (int64) meta.null_count))
	{
		/* Another backend may have published this version already. */
		GpuidxImageData *view = gpuidx_shared_find(index, &meta, &pending, false);

		/*
		 * Else, without an image of our own, start from the published one
		 * that new entries complete, and publish a delta on its base.
		 */
		if (view == NULL && cur == NULL &&
			(cur = gpuidx_shared_find(index, &meta, &pending, true)) != NULL)
		{
			cur->engine = cur->wanted_engine = engine;
			cur->next_live = live_versions;
			live_versions = cur;
			entry->current = cur;
			entry->node = index->rd_node;
		}
		if (view == NULL && cur && cur->shared)
			view = shared_delta_version(index, cur);
		if (view)
		{
			if (cur)
			{
				cur->stale = true;
				if (cur->refcount == 0)
					free_version(cur);
			}
			view->engine = view->wanted_engine = engine;
			view->next_live = live_versions;
			live_versions = view;
			entry->current = view;
			entry->node = index->rd_node;
			return view;
		}
	}
	if (cur && (cur->pending_count < pending.total ||
				cur->nnull < (int64) meta.null_count) &&
		update_in_place(index, cur, engine))
		entry->node = index->rd_node;
	else if (cur && cur->image == NULL && !cur->image_deferred && !cur->shared)
	{
		/* An engine failure above freed the image: load from scratch. */
		cur->stale = true;
		if (cur->refcount == 0)
			free_version(cur);
		entry->current = cur = NULL;
	}
	if (cur == NULL || cur->pending_count < pending.total ||
		cur->nnull < (int64) meta.null_count)
	{
		GpuidxImageData *img = load_version(index, cur, engine);

		/* Service mode: the new version goes to the store for everyone. */
		if (gpuidx_service_mode())
		{
			PG_TRY();
			{
				gpuidx_shared_publish(index, img);
			}
			PG_CATCH();
			{
				/* (no shared memory left, say): nothing may keep img */
				free_version(img);
				PG_RE_THROW();
			}
			PG_END_TRY();
		}
		/* load_version may have erred out: entry->current is still valid. */
		if (cur)
		{
			cur->stale = true;
			if (cur->refcount == 0)
				free_version(cur);
		}
		entry->current = cur = img;
		entry->node = index->rd_node;
	}
	return cur;
}

/* Unpin an image. */
void
gpuidx_image_release(GpuidxImageData *img)
{
	if (img == NULL)
		return;
	if (img->refcount > 0)
	{
		/* (A pin the transaction's end dropped already has no interlock.) */
		img->refcount--;
		interlock_share(img->indexoid, false);
	}
	if (img->refcount == 0 && img->stale)
		free_version(img);
}

/*
 * Query an image; on a device failure the image is dropped (the device
 * state may be unusable) so the next query rebuilds it.  A batch too small
 * to repay a device call is answered on the host (hostsearch.c); returns
 * true then.
 */
bool
gpuidx_query_image(GpuidxImageData *img, GiOp op, const int64 *probes,
				   const int64 *probes_hi, int64 nprobes, uint64 *first,
				   uint64 *last)
{
	GiError		err;

	if (nprobes <= 0)
		return false;
	/*
	 * Service mode: views go to the service; a private image (the store had
	 * no room) and a service that cannot answer leave it to the host.
	 */
	if (gpuidx_answer_on_host(img, nprobes) ||
		(gpuidx_service_mode() &&
		 !gpuidx_service_query(img, img->wanted_engine, op, probes, probes_hi,
							   nprobes, first, last)))
	{
		gpuidx_host_query(img, op, probes, probes_hi, nprobes, first, last);
		return true;
	}
	if (gpuidx_service_mode())
		return false;			/* the service answered */
	gpuidx_image_build_engine(img);
	if (gi_image_query(img->image, op, (const int64_t *) probes,
					   (const int64_t *) probes_hi, (size_t) nprobes,
					   (uint64_t *) first, (uint64_t *) last, &err) != GI_OK)
	{
		if (err.status == GI_ERR_DEVICE || err.status == GI_ERR_DEVICE_OOM)
		{
			/* Keep the arrays (scans may hold them) but drop the image. */
			gi_image_free(img->image);
			img->image = NULL;
			img->stale = true;
		}
		gpuidx_raise_engine_error(&err, "querying the index image");
	}
	return false;
}

/*
 * Select the hit payloads (TIDs) of a batch through the engine's hit mask
 * and SPACE compaction, in heap order.  Returns false if the engine does
 * not implement selection or the batch is one for the host (the caller
 * then walks the query's ranges).
 * *out is palloc'd in the current context.
 */
bool
gpuidx_select_image(GpuidxImageData *img, GiOp op, const int64 *probes,
					const int64 *probes_hi, int64 nprobes, uint64 **out,
					int64 *nout)
{
	GiError		err;
	uint64_t   *sel = NULL;
	size_t		nsel = 0;

	if (gpuidx_answer_on_host(img, nprobes) || gpuidx_service_mode())
		return false;			/* the caller walks the ranges on the host */
	gpuidx_image_build_engine(img);
	if (gi_image_select(img->image, op, (const int64_t *) probes,
						(const int64_t *) probes_hi, (size_t) nprobes,
						GI_ORDER_PAYLOAD, &sel, &nsel, &err) != GI_OK)
	{
		if (err.status == GI_ERR_UNSUPPORTED)
			return false;
		if (err.status == GI_ERR_DEVICE || err.status == GI_ERR_DEVICE_OOM)
		{
			gi_image_free(img->image);
			img->image = NULL;
			img->stale = true;
		}
		gpuidx_raise_engine_error(&err, "selecting from the index image");
	}
	*out = gpuidx_alloc_huge(sizeof(uint64) * Max(nsel, 1));
	memcpy(*out, sel, sizeof(uint64) * nsel);
	gi_free(sel);
	*nout = (int64) nsel;
	return true;
}

/* Drop img's engine image after a device failure (the arrays stay: scans
 * may hold them); the next query builds it again. */
static void
drop_failed_image(GpuidxImageData *img, const GiError *err)
{
	if (err->status == GI_ERR_DEVICE || err->status == GI_ERR_DEVICE_OOM)
	{
		gi_image_free(img->image);
		img->image = NULL;
		img->stale = true;
	}
}

/*
 * Keep img's INCLUDE columns on the device for GpuIndexAgg (a GPU image),
 * unless they are there already: the host rows turned into one array per
 * column in rank order and a NULL bitmap, attached to the engine image
 * (gi_image_attach_columns; an insertion into the image drops them, so
 * they are attached again after one).  Under gpuidx.device_memory_limit:
 * false, attaching nothing, when they do not fit (the caller adds up on
 * the host).
 */
static bool
attach_include_columns(GpuidxImageData *img, const GpuidxLayout *layout)
{
	GiIncludeColumns ic;
	GiImageInfo info;
	GiError		err;
	uint64		bytes;
	int			nc = layout->ninclude;
	MemoryContext cxt,
				old;

	gi_image_info(img->image, &info);
	if (info.include_columns == nc)
		return true;
	bytes = (uint64) img->n * layout->value_bytes + (uint64) nc * ((img->n + 7) / 8);
	if (gpuidx_device_memory_limit_mb > 0)
	{
		uint64		limit = (uint64) gpuidx_device_memory_limit_mb * 1024 * 1024;

		evict_for_device(limit, bytes, img->indexoid);
		if (device_bytes_in_use(NULL) + bytes > limit)
			return false;
	}
	/* (the column arrays live only for the copy; an error frees them too) */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx included columns",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	gpuidx_rows_to_columns(img->rows, img->drows, img->drank, img->n, img->ndelta,
						   img->row_bytes, nc, layout->width, layout->value_offset, &ic);
	gi_image_attach_columns(img->image, &ic, &err);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	if (err.status != GI_OK && err.status != GI_ERR_DEVICE_OOM)
	{
		drop_failed_image(img, &err);
		gpuidx_raise_engine_error(&err, "copying included columns to the device");
	}
	return err.status == GI_OK;
}

/*
 * Add up the entries at position ranges [first, last) of a GPU image on
 * the device (gi_image_aggregate), with the visibility map
 * copy vm: totals into cols and *counted, the TIDs of entries not on
 * all-visible pages into *fetch (palloc'd in the current context, *nfetch
 * of them).  layout: the index's, when a column is an INCLUDE one (its
 * columns are then put on the device first).  In service mode a view's
 * ranges go to the gpuidx service, which adds them up on its engine image
 * the same way (gpuidx_service_aggregate).  Returns false, having added
 * nothing, where the caller adds up on the host instead: a CPU image (a
 * view the service holds on the CPU engine), a private image in service
 * mode (the service has none of it), no service to answer, columns that
 * do not fit the device memory limit, and columns or structures the device
 * does not add up (GI_ERR_UNSUPPORTED).
 */
bool
gpuidx_aggregate_image(GpuidxImageData *img, const GpuidxLayout *layout,
					   const uint64 *first, const uint64 *last, int64 nranges,
					   const uint8 *vm, BlockNumber vm_blocks, bool vm_full,
					   GiAggColumn *cols, int ncols, int64 *counted, uint64 **fetch,
					   int64 *nfetch)
{
	GiError		err;
	uint64_t   *out = NULL;
	size_t		nout = 0;

	if (img->shared)
	{
		/* (gpuidx.service_test_agg_cpu: a CPU image's runs too, for tests) */
		if (!gpuidx_service_mode() ||
			(img->engine != GI_ENGINE_GPU && !gpuidx_service_test_agg_cpu))
			return false;
		return gpuidx_service_aggregate(img, layout, first, last, nranges, vm,
										vm_blocks, vm_full, cols, ncols, counted,
										fetch, nfetch);
	}
	if (gpuidx_service_mode())
		return false;
	gpuidx_image_build_engine(img);
	/* (the CPU engine's twin is the host loop, which the caller runs with
	 * its interrupt checks and staging) */
	if (img->image == NULL || img->engine != GI_ENGINE_GPU)
		return false;
	if (layout != NULL && layout->ninclude > 0 && !attach_include_columns(img, layout))
		return false;
	/* (the device reads no host arrays) */
	if (gi_image_aggregate(img->image, NULL, (const uint64_t *) first,
						   (const uint64_t *) last, (size_t) nranges, vm,
						   (uint64_t) vm_blocks, vm_full, cols, ncols,
						   (int64_t *) counted, &out, &nout, &err) != GI_OK)
	{
		if (err.status == GI_ERR_UNSUPPORTED)
			return false;
		drop_failed_image(img, &err);
		gpuidx_raise_engine_error(&err, "adding up index entries");
	}
	*fetch = gpuidx_alloc_huge(sizeof(uint64) * Max(nout, 1));
	memcpy(*fetch, out, sizeof(uint64) * nout);
	gi_free(out);
	*nfetch = (int64) nout;
	return true;
}

/* First position of the run of equal keys containing pos. */
int64
gpuidx_run_start(const GpuidxImageData *img, int64 pos)
{
	return gpuidx_lower_bound(img, gpuidx_key_at(img, pos));
}

/* One past the last position of the run of equal keys containing pos. */
int64
gpuidx_run_end(const GpuidxImageData *img, int64 pos)
{
	return gpuidx_upper_bound(img, gpuidx_key_at(img, pos));
}
