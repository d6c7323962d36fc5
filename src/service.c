/*
 * service.c - the background worker "gpuidx service" (service.h).
 *
 * Registered by _PG_init when gpuidx is in shared_preload_libraries (and
 * gpuidx.service is on).  It is the only process that starts CUDA: the
 * postmaster never calls the engine, and backends in service mode never
 * build an engine image.  The service holds, per shared image and engine,
 * one engine image built from the mapped arrays on the first batch that
 * needs it, answers the batches backends put in their request slots, and
 * keeps the images on the device under gpuidx.device_memory_limit (least
 * recently used first).  It also adds up GpuIndexAgg's runs on a GPU image
 * (GPUIDX_REQ_OP_AGG, service_agg.c), putting the index's INCLUDE columns
 * on the device first.  An engine error fails that request only: the
 * engine image involved is dropped and built again on demand.
 *
 * The main thread takes the requests and does everything that touches
 * PostgreSQL (mapping segments, building and evicting engine images, the
 * store's lock).  With gpuidx.service_workers of 2 or more, the engine
 * query itself runs on a pool of threads (service_pool.c), so several
 * backends' batches run at once: an engine image of either engine takes
 * several queries at once (a GPU query runs on its thread's own stream),
 * different images in parallel.  Each engine image counts its queries in
 * flight; nothing frees, evicts, inserts into or hands over an image while
 * that count is not zero (requests that need it wait in their slots).
 * With 0 or 1 workers the main thread answers one request at a time.  A
 * backend whose service is gone answers on the host instead
 * (service_client.c).
 */
#include "gpuidx.h"
#include "service.h"
#include "service_pool.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "portability/instr_time.h"
#include "postmaster/interrupt.h"
#include "storage/dsm_impl.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/s_lock.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Size of the store and the request slots. */
static Size
service_shmem_size(void)
{
	Size		size;

	size = MAXALIGN(add_size(offsetof(GpuidxServiceShared, images),
							 mul_size(sizeof(GpuidxSharedImage),
									  gpuidx_service_max_images)));
	return add_size(size, mul_size(sizeof(GpuidxServiceRequest), MaxBackends));
}

/* Ask the postmaster for the shared memory and the store's lock. */
static void
service_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(service_shmem_size());
	RequestNamedLWLockTranche("gpuidx service", 1);
}

/* Create (or find) the store and the request slots. */
static void
service_shmem_startup(void)
{
	bool		found;
	GpuidxServiceShared *s;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	s = ShmemInitStruct("gpuidx service", service_shmem_size(), &found);
	if (!found)
	{
		memset(s, 0, service_shmem_size());
		s->lock = &(GetNamedLWLockTranche("gpuidx service"))->lock;
		s->max_images = gpuidx_service_max_images;
		s->max_requests = MaxBackends;
		pg_atomic_init_u64(&s->tick, 0);
		for (i = 0; i < s->max_images; i++)
			pg_atomic_init_u32(&s->images[i].pins, 0);
		gpuidx_service_shared = s;
		for (i = 0; i < s->max_requests; i++)
			pg_atomic_init_u32(&gpuidx_service_request(i)->state, GPUIDX_REQ_IDLE);
	}
	gpuidx_service_shared = s;
	LWLockRelease(AddinShmemInitLock);
}

/*
 * From _PG_init: in shared_preload_libraries, ask for the shared memory and
 * register the service.  Otherwise nothing: per-backend mode.
 */
void
gpuidx_service_register(void)
{
	BackgroundWorker worker;

	if (!process_shared_preload_libraries_in_progress || !gpuidx_service_setting)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = service_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = service_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "gpuidx");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "gpuidx_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "gpuidx service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "gpuidx service");
	RegisterBackgroundWorker(&worker);
}

/* Is this backend in service mode (the store exists)? */
bool
gpuidx_service_mode(void)
{
	return gpuidx_service_shared != NULL;
}

/* Is the service process up and taking requests? */
bool
gpuidx_service_running(void)
{
	GpuidxServiceShared *s = gpuidx_service_shared;

	return s != NULL && s->service_pid != 0 && s->service_latch != NULL;
}

/* ---------- the service's own state ---------- */

/*
 * The service's engine images of one shared image, and what it read of the
 * store slot when it first met it.
 */
typedef struct ServiceImage
{
	uint64		id;				/* the store slot's id */
	int			slotno;
	uint64		parent_id;
	uint64		base_id;
	int64		n;
	int64		nbase;
	int64		ndelta;
	int			structure;
	int			key_bytes;
	int			row_bytes;		/* INCLUDE rows (0: none) */
	dsm_segment *base_seg;
	dsm_segment *delta_seg;
	GiImage    *image[3];		/* by GiEngineKind */
	int			given_away;		/* bit per engine: its image went to a
								 * newer version by batch insertion */

	/*
	 * Per engine: queries the pool runs on the image (it is never freed,
	 * evicted or changed while not zero), its bytes (read when it was
	 * built or changed, so the main thread never describes an image a
	 * worker is querying), and why no new query may start on it: broken (a
	 * device error: dropped once idle) or held (a newer version waits to
	 * take it over by batch insertion).
	 */
	pg_atomic_uint32 inflight[3];
	uint64		device_bytes[3];
	uint64		host_bytes[3];
	bool		broken[3];
	bool		held[3];
	uint64		last_used;
	struct ServiceImage *next;
} ServiceImage;

static ServiceImage *service_images = NULL;
static uint64 service_tick = 0;

/* A backend's transfer segment, mapped by the service. */
typedef struct TransferMapping
{
	dsm_handle	handle;
	dsm_segment *seg;
	bool		pinned;			/* page-locked for the GPU engine */
} TransferMapping;

static TransferMapping *transfers = NULL;	/* one per request slot */
static ServiceJob *jobs = NULL; /* one per request slot, for the pool */

/*
 * GPU traffic, for the idle poll (idle_poll_ms): when the main thread last
 * answered a request on the GPU engine itself or saw the pool go idle after
 * GPU queries, and whether it handed GPU queries to the pool since.
 */
static bool gpu_answered = false;
static instr_time gpu_answered_at;
static bool gpu_dispatched = false;

/* Most probes the main thread answers itself though a pool runs (answer_here). */
#define SERVICE_INLINE_MAX_PROBES	65536

/* What the main thread did with a request it took. */
typedef enum RequestOutcome
{
	REQUEST_ANSWERED,			/* answered here: finish it */
	REQUEST_DISPATCHED,			/* a worker answers it */
	REQUEST_DEFERRED			/* its image is busy: leave it submitted */
} RequestOutcome;

/* Queries the pool runs on si's engine image. */
static uint32
engine_inflight(ServiceImage *si, int engine)
{
	return pg_atomic_read_u32(&si->inflight[engine]);
}

/* Is any of si's engine images being queried? */
static bool
image_busy(ServiceImage *si)
{
	return engine_inflight(si, GI_ENGINE_CPU) > 0 ||
		engine_inflight(si, GI_ENGINE_GPU) > 0;
}

/* Read the bytes of si's (idle) engine image. */
static void
note_engine_bytes(ServiceImage *si, int engine)
{
	GiImageInfo info;

	gi_image_info(si->image[engine], &info);
	si->device_bytes[engine] = info.device_bytes;
	si->host_bytes[engine] = info.host_bytes;
}

/* Free one (idle) engine image and forget what blocked it. */
static void
drop_engine(ServiceImage *si, int engine)
{
	Assert(engine_inflight(si, engine) == 0);
	si->broken[engine] = false;
	si->held[engine] = false;
	if (si->image[engine] == NULL)
		return;
	gi_image_free(si->image[engine]);
	si->image[engine] = NULL;
	si->device_bytes[engine] = 0;
	si->host_bytes[engine] = 0;
}

/* Write si's engine bytes into its store slot (if it still holds si). */
static void
record_engines(ServiceImage *si)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	GpuidxSharedImage *slot = &s->images[si->slotno];
	uint64		dev = 0,
				host = 0;
	int			engines = 0,
				e;

	for (e = GI_ENGINE_CPU; e <= GI_ENGINE_GPU; e++)
	{
		if (si->image[e] == NULL)
			continue;
		dev += si->device_bytes[e];
		host += si->host_bytes[e];
		engines |= 1 << e;
	}
	LWLockAcquire(s->lock, LW_EXCLUSIVE);
	if (slot->id == si->id)
	{
		slot->engine_device_bytes = dev;
		slot->engine_host_bytes = host;
		slot->engines = engines;
	}
	LWLockRelease(s->lock);
}

/* Forget a shared image (none of its images busy): engines and mapping. */
static void
forget_image(ServiceImage *si)
{
	ServiceImage **p;

	for (p = &service_images; *p; p = &(*p)->next)
		if (*p == si)
		{
			*p = si->next;
			break;
		}
	drop_engine(si, GI_ENGINE_CPU);
	drop_engine(si, GI_ENGINE_GPU);
	if (si->delta_seg)
		gpuidx_unmap_segment(si->delta_seg);
	if (si->base_seg)
		gpuidx_unmap_segment(si->base_seg);
	pfree(si);
}

/* Device bytes the service's GPU images hold. */
static uint64
device_bytes_in_use(void)
{
	ServiceImage *si;
	uint64		total = 0;

	for (si = service_images; si; si = si->next)
		if (si->image[GI_ENGINE_GPU])
			total += si->device_bytes[GI_ENGINE_GPU];
	return total;
}

/*
 * Free the least recently used GPU images (never keep's, never one being
 * queried or waited for) until need more bytes fit under the limit; the
 * limit left for the new image.
 */
static size_t
make_device_room(ServiceImage *keep, uint64 need)
{
	uint64		limit = (uint64) gpuidx_device_memory_limit_mb * 1024 * 1024;

	if (gpuidx_device_memory_limit_mb <= 0)
		return 0;
	for (;;)
	{
		ServiceImage *si,
				   *victim = NULL;
		uint64		used = device_bytes_in_use();

		if (used + need <= limit)
			return (size_t) (limit - used);
		for (si = service_images; si; si = si->next)
			if (si != keep && si->image[GI_ENGINE_GPU] &&
				engine_inflight(si, GI_ENGINE_GPU) == 0 && !si->held[GI_ENGINE_GPU] &&
				(victim == NULL || si->last_used < victim->last_used))
				victim = si;
		if (victim == NULL)
			return used >= limit ? 1 : (size_t) (limit - used);
		drop_engine(victim, GI_ENGINE_GPU);
		record_engines(victim);
	}
}

/* Device bytes a GPU image of si is expected to take (make_device_room). */
static uint64
gpu_build_need(ServiceImage *si)
{
	return (uint64) si->n * (si->key_bytes <= 4 ? 4 : 8) * 5 / 4;
}

/*
 * Would building a GPU image of need bytes for keep fit under the limit
 * only once some GPU image that a query is using now can be evicted?  Then
 * the request waits for that query rather than build with too little room.
 */
static bool
gpu_room_waits(ServiceImage *keep, uint64 need)
{
	uint64		limit = (uint64) gpuidx_device_memory_limit_mb * 1024 * 1024;
	uint64		used = device_bytes_in_use();
	uint64		idle = 0,
				busy = 0;
	ServiceImage *si;

	if (gpuidx_device_memory_limit_mb <= 0 || used + need <= limit)
		return false;
	for (si = service_images; si; si = si->next)
	{
		if (si == keep || si->image[GI_ENGINE_GPU] == NULL)
			continue;
		if (engine_inflight(si, GI_ENGINE_GPU) > 0 || si->held[GI_ENGINE_GPU])
			busy += si->device_bytes[GI_ENGINE_GPU];
		else
			idle += si->device_bytes[GI_ENGINE_GPU];
	}
	return used - idle + need > limit && used - idle - busy + need <= limit;
}

/* The service's record of the image with id, if it has one. */
static ServiceImage *
known_image(uint64 id)
{
	ServiceImage *si;

	for (si = service_images; si; si = si->next)
		if (si->id == id)
			return si;
	return NULL;
}

/* The service's record of a store slot, mapped; NULL if the slot moved on. */
static ServiceImage *
find_image(uint64 id, int slotno)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	GpuidxSharedImage *slot;
	ServiceImage *si = known_image(id);
	dsm_handle	base_handle = DSM_HANDLE_INVALID,
				delta_handle = DSM_HANDLE_INVALID;

	if (si)
		return si;
	if (slotno < 0 || slotno >= s->max_images)
		return NULL;
	slot = &s->images[slotno];
	si = MemoryContextAllocZero(TopMemoryContext, sizeof(ServiceImage));
	pg_atomic_init_u32(&si->inflight[GI_ENGINE_CPU], 0);
	pg_atomic_init_u32(&si->inflight[GI_ENGINE_GPU], 0);
	LWLockAcquire(s->lock, LW_SHARED);
	if (slot->id == id)
	{
		base_handle = slot->base_handle;
		delta_handle = slot->delta_handle;
		si->parent_id = slot->parent_id;
		si->base_id = slot->base_id;
		si->n = slot->n;
		si->nbase = slot->nbase;
		si->ndelta = slot->ndelta;
		si->structure = slot->structure;
		si->key_bytes = slot->key_bytes;
		si->row_bytes = slot->row_bytes;
	}
	LWLockRelease(s->lock);
	if (base_handle == DSM_HANDLE_INVALID)
	{
		pfree(si);
		return NULL;
	}
	/* (the requester pins the slot, so its segments are there) */
	si->base_seg = gpuidx_map_segment(base_handle);
	si->delta_seg = gpuidx_map_segment(delta_handle);
	si->id = id;
	si->slotno = slotno;
	si->next = service_images;
	service_images = si;
	return si;
}

/* The delta's keys, TIDs and positions of a service image. */
static void
delta_arrays(ServiceImage *si, int64 **keys, uint64 **tids, int64 **rank)
{
	GpuidxSharedImage *slot = &gpuidx_service_shared->images[si->slotno];
	GpuidxSegmentLayout d;
	char	   *p = dsm_segment_address(si->delta_seg);

	/* the row width and NULL count only move what follows the ranks */
	gpuidx_delta_layout(si->ndelta, 0, slot->row_bytes, &d);
	*keys = (int64 *) (p + d.keys);
	*tids = (uint64 *) (p + d.tids);
	*rank = (int64 *) (p + d.rank);
}

/*
 * All n entries of a service image in order (base and delta merged by the
 * delta's positions), palloc'd; NULL arrays when there is no delta (then
 * the base arrays are the entries).
 */
static void
merged_entries(ServiceImage *si, const int64 **keys, const uint64 **tids,
			   int64 **mkeys, uint64 **mtids)
{
	GpuidxSegmentLayout b;
	char	   *base = dsm_segment_address(si->base_seg);
	const int64 *bk;
	const uint64 *bt;
	int64	   *dk,
			   *dr;
	uint64	   *dt;
	int64		pos,
				i = 0,
				j = 0;

	gpuidx_base_layout(si->nbase, 0, &b);
	bk = (const int64 *) (base + b.keys);
	bt = (const uint64 *) (base + b.tids);
	*mkeys = NULL;
	*mtids = NULL;
	if (si->ndelta == 0)
	{
		*keys = bk;
		*tids = bt;
		return;
	}
	delta_arrays(si, &dk, &dt, &dr);
	*mkeys = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * si->n);
	*mtids = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * si->n);
	for (pos = 0; pos < si->n; pos++)
	{
		bool		from_delta = j < si->ndelta && dr[j] == pos;

		(*mkeys)[pos] = from_delta ? dk[j] : bk[i];
		(*mtids)[pos] = from_delta ? dt[j] : bt[i];
		if (from_delta)
			j++;
		else
			i++;
	}
	*keys = *mkeys;
	*tids = *mtids;
}

/*
 * si's arrays as the CPU twin of gi_image_aggregate reads them: the base
 * and the delta parts of the mapped segments, the delta's positions.
 */
static void
host_entries(ServiceImage *si, GiAggEntries *host)
{
	GpuidxSegmentLayout b,
				d;
	char	   *base = dsm_segment_address(si->base_seg);
	char	   *delta = dsm_segment_address(si->delta_seg);

	gpuidx_base_layout(si->nbase, si->row_bytes, &b);
	/* (the NULL count only moves what follows the delta's rows) */
	gpuidx_delta_layout(si->ndelta, 0, si->row_bytes, &d);
	memset(host, 0, sizeof(*host));
	host->keys = (const int64_t *) (base + b.keys);
	host->tids = (const uint64_t *) (base + b.tids);
	host->rows = si->row_bytes > 0 ? base + b.rows : NULL;
	host->nbase = (size_t) si->nbase;
	host->dkeys = (const int64_t *) (delta + d.keys);
	host->dtids = (const uint64_t *) (delta + d.tids);
	host->drows = si->row_bytes > 0 ? delta + d.rows : NULL;
	host->drank = (const int64_t *) (delta + d.rank);
	host->ndelta = (size_t) si->ndelta;
	host->row_bytes = si->row_bytes;
}

/*
 * Put the index's INCLUDE columns (hdr: their widths and places in a row)
 * on si's GPU image for GpuIndexAgg, unless they are there: the service's
 * side of attach_include_columns (cache.c), from the rows of the mapped
 * segments, base and delta merged by the delta's positions, in host memory
 * as large as their values for the time of the copy.  Under
 * gpuidx.device_memory_limit, least recently used images first: when they
 * still do not fit, or the device has no memory for them,
 * GI_ERR_UNSUPPORTED (the backend adds up on the host).  Only while no
 * query runs on the image (it changes).  Their bytes count in the image's
 * device bytes (gpuidx_info's include_device_bytes, through the INFO op).
 */
static GiStatus
attach_service_columns(ServiceImage *si, const GpuidxAggTransfer *hdr, GiError *err)
{
	GiImage    *image = si->image[GI_ENGINE_GPU];
	GiImageInfo info;
	GiIncludeColumns ic;
	GpuidxSegmentLayout b,
				d;
	int			nc = hdr->ninclude,
				value_bytes = 0,
				c;
	uint64		bytes;
	int64		n = si->n;
	MemoryContext cxt,
				old;
	GiStatus	st = GI_OK;

	Assert(engine_inflight(si, GI_ENGINE_GPU) == 0);
	gi_image_info(image, &info);
	if (info.include_columns == nc)
		return GI_OK;
	for (c = 0; c < nc; c++)
	{
		if ((int) sizeof(uint16) + hdr->value_offset[c] + hdr->width[c] > si->row_bytes)
		{
			err->status = GI_ERR_INVALID;
			snprintf(err->message, sizeof(err->message),
					 "included column %d lies past the shared image's %d-byte rows",
					 c, si->row_bytes);
			return GI_ERR_INVALID;
		}
		value_bytes += hdr->width[c];
	}
	bytes = (uint64) n * value_bytes + (uint64) nc * ((n + 7) / 8);
	if (gpuidx_device_memory_limit_mb > 0)
	{
		uint64		limit = (uint64) gpuidx_device_memory_limit_mb * 1024 * 1024;

		make_device_room(si, bytes);
		if (device_bytes_in_use() + bytes > limit)
		{
			err->status = GI_ERR_UNSUPPORTED;
			snprintf(err->message, sizeof(err->message),
					 "the included columns do not fit gpuidx.device_memory_limit");
			return GI_ERR_UNSUPPORTED;
		}
	}
	gpuidx_base_layout(si->nbase, si->row_bytes, &b);
	gpuidx_delta_layout(si->ndelta, 0, si->row_bytes, &d);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuidx service columns",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		char	   *base = dsm_segment_address(si->base_seg);
		char	   *delta = dsm_segment_address(si->delta_seg);

		gpuidx_rows_to_columns(base + b.rows, delta + d.rows,
							   (const int64 *) (delta + d.rank), si->n, si->ndelta,
							   si->row_bytes, nc, hdr->width, hdr->value_offset, &ic);
		st = gi_image_attach_columns(image, &ic, err);
	}
	PG_FINALLY();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
	}
	PG_END_TRY();
	if (st == GI_ERR_DEVICE_OOM)
		st = err->status = GI_ERR_UNSUPPORTED;	/* the host adds up */
	else if (st == GI_ERR_DEVICE)
		drop_engine(si, GI_ENGINE_GPU); /* build again on demand */
	if (si->image[GI_ENGINE_GPU])
		note_engine_bytes(si, GI_ENGINE_GPU);
	record_engines(si);
	return st;
}

/*
 * The parent version whose engine image si could take over by batch
 * insertion (same base, B+ tree, a usable image), or NULL.
 */
static ServiceImage *
adoptable_parent(ServiceImage *si, int engine)
{
	ServiceImage *parent;

	if (si->ndelta == 0 || si->structure != GI_STRUCT_BTREE ||
		!gpuidx_enable_batch_insert)
		return NULL;
	parent = known_image(si->parent_id);
	if (parent == NULL || parent->image[engine] == NULL ||
		parent->broken[engine] || parent->base_id != si->base_id)
		return NULL;
	return parent;
}

/*
 * Batch insertion: take the parent version's engine image (same base, a
 * delta this one extends) and insert the entries this delta adds, instead
 * of building anew.  The parent's later requests are answered on the host.
 * The caller waits until no query runs on the parent's image.
 */
static bool
adopt_parent_engine(ServiceImage *si, int engine)
{
	ServiceImage *parent = adoptable_parent(si, engine);
	int64	   *dk,
			   *dr,
			   *pk,
			   *pr;
	uint64	   *dt,
			   *pt;
	int64	   *nk;
	uint64	   *nt;
	int64		i = 0,
				j,
				m = 0;
	GiError		err;

	if (parent == NULL || engine_inflight(parent, engine) > 0)
		return false;
	delta_arrays(si, &dk, &dt, &dr);
	delta_arrays(parent, &pk, &pt, &pr);
	nk = palloc(sizeof(int64) * Max(si->ndelta, 1));
	nt = palloc(sizeof(uint64) * Max(si->ndelta, 1));
	/* this delta is the parent's merged with the new entries: take those */
	for (j = 0; j < si->ndelta; j++)
	{
		if (i < parent->ndelta && pk[i] == dk[j] && pt[i] == dt[j])
			i++;
		else
		{
			nk[m] = dk[j];
			nt[m++] = dt[j];
		}
	}
	if (i != parent->ndelta)
	{
		pfree(nk);
		pfree(nt);
		return false;			/* not an extension of the parent */
	}
	if (m > 0 && gi_image_insert(parent->image[engine], (const int64_t *) nk,
								 (const uint64_t *) nt, (size_t) m, &err) != GI_OK)
	{
		elog(DEBUG1, "gpuidx service: batch insertion failed, building anew: %s",
			 err.message);
		drop_engine(parent, engine);
		record_engines(parent);
		pfree(nk);
		pfree(nt);
		return false;
	}
	pfree(nk);
	pfree(nt);
	si->image[engine] = parent->image[engine];
	parent->image[engine] = NULL;
	parent->device_bytes[engine] = parent->host_bytes[engine] = 0;
	parent->held[engine] = false;
	parent->given_away |= 1 << engine;
	note_engine_bytes(si, engine);
	record_engines(parent);
	record_engines(si);
	return true;
}

/* Build si's engine image for engine (batch insertion when it can). */
static GiStatus
build_engine(ServiceImage *si, int engine, GiError *err)
{
	GiBuildParams params;
	const int64 *keys;
	const uint64 *tids;
	int64	   *mkeys;
	uint64	   *mtids;
	GiStatus	st;

	if (si->ndelta > 0 && adopt_parent_engine(si, engine))
		return GI_OK;
	memset(&params, 0, sizeof(params));
	params.engine = engine;
	params.structure = si->structure;
	params.key_bytes = si->key_bytes;
	if (engine == GI_ENGINE_GPU)
		params.device_memory_limit =
			make_device_room(si, gpu_build_need(si));
	merged_entries(si, &keys, &tids, &mkeys, &mtids);
	st = gi_image_build(&params, (const int64_t *) keys, (const uint64_t *) tids,
						(size_t) si->n, &si->image[engine], err);
	if (mkeys)
	{
		pfree(mkeys);
		pfree(mtids);
	}
	if (st == GI_OK)
	{
		note_engine_bytes(si, engine);
		record_engines(si);
	}
	return st;
}

/* The transfer segment of request slot i, mapped. */
static char *
transfer_of(int i, GpuidxServiceRequest *req)
{
	TransferMapping *t = &transfers[i];

	if (t->seg && t->handle != req->transfer)
	{
		if (t->pinned)
			gi_host_unpin(dsm_segment_address(t->seg));
		t->pinned = false;
		dsm_detach(t->seg);
		t->seg = NULL;
	}
	if (t->seg == NULL)
	{
		t->seg = dsm_attach(req->transfer);
		if (t->seg == NULL)
			return NULL;
		dsm_pin_mapping(t->seg);
		t->handle = req->transfer;

		/*
		 * Page-locked, a slot's segment (kept from process to process, so
		 * this happens about once a slot) is copied to and from the device
		 * directly by the GPU engine, not through its staging buffers.
		 */
		if (gpuidx_service_shared->gpu_usable)
			t->pinned = gi_host_pin(dsm_segment_address(t->seg),
									dsm_segment_map_length(t->seg));
	}
	if (dsm_segment_map_length(t->seg) < req->transfer_bytes)
		return NULL;
	return dsm_segment_address(t->seg);
}

/* Time since t0, in milliseconds. */
static double
ms_since(instr_time t0)
{
	instr_time	t1;

	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	return INSTR_TIME_GET_MILLISEC(t1);
}

/*
 * Must a request on si's engine image wait in its slot?  While the image is
 * broken or held, until it is idle.  (Otherwise queries share it, on either
 * engine: engine.h.)  A version that will take its parent's image by batch
 * insertion waits for the parent's queries, and holds the parent meanwhile.
 * A GPU image to be built waits if only evicting images in use would make
 * room for it.
 */
static bool
must_wait(ServiceImage *si, int engine)
{
	ServiceImage *parent;

	if ((si->broken[engine] || si->held[engine]) && si->image[engine] != NULL)
		return true;
	parent = si->image[engine] == NULL ? adoptable_parent(si, engine) : NULL;
	if (parent && engine_inflight(parent, engine) > 0)
	{
		parent->held[engine] = true;
		return true;
	}
	if (engine == GI_ENGINE_GPU && si->image[engine] == NULL && parent == NULL &&
		gpu_room_waits(si, gpu_build_need(si)))
		return true;
	return false;
}

/*
 * Should the main thread run request i's query itself, though a pool runs?
 * Only for one client's small GPU batch: the GPU engine, at most
 * SERVICE_INLINE_MAX_PROBES probes, no query in the pool (so nothing else
 * is in flight on any image, and a device error may drop this one at once,
 * as without a pool), and no other request waiting in its slot.
 *
 * Handing a query to a thread costs a thread wakeup (tens of microseconds
 * on a VM) on each of one client's batches; the GPU answers 10^4 probes in
 * a few hundred.  Answering here removes that wakeup and keeps nothing
 * waiting for the thread.  The other way, a pool thread that polls the
 * queue after its last GPU query, would also spend a core on each idle
 * thread and still leave the main thread's own handoff; this one adds no
 * state.  What it costs: a request that comes in meanwhile waits for this
 * query (a small batch, hence the limit).  Several clients keep the pool
 * busy or leave requests waiting, and then every query goes to the pool as
 * before, so queries on one image still overlap.  The CPU engine never
 * runs here: its query may need every core the query threads have.
 * (The GPU engine runs the query on the main thread's own stream:
 * engine.h.)
 */
static bool
answer_here(int i, ServiceImage *si, int engine, int64 n)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	int			k;

	if (engine != GI_ENGINE_GPU || n > SERVICE_INLINE_MAX_PROBES ||
		!service_pool_idle() || engine_inflight(si, engine) > 0)
		return false;
	for (k = 0; k < s->max_requests; k++)
		if (k != i &&
			pg_atomic_read_u32(&gpuidx_service_request(k)->state) == GPUIDX_REQ_SUBMITTED)
			return false;
	return true;
}

/* Free the fetch list an aggregation on a slot left (service_agg.c). */
static void
forget_kept_fetch(ServiceJob *job)
{
	if (job->kept)
		gi_free(job->kept);
	job->kept = NULL;
	job->nkept = job->kept_next = 0;
}

/*
 * Get an aggregation request (GPUIDX_REQ_OP_AGG) on si's engine image
 * ready: the INCLUDE columns on the GPU image, or the shared arrays for a
 * CPU image (only when the backend asked for the CPU engine:
 * gpuidx.service_test_agg_cpu).  GI_ERR_UNSUPPORTED sends the run back to
 * the backend's host loop (the CPU engine where the GPU was asked for,
 * columns that do not fit); *wait: the columns must be attached but a
 * query runs on the image.
 */
static GiStatus
prepare_aggregation(ServiceImage *si, int engine, GpuidxServiceRequest *req,
					char *buf, ServiceJob *job, bool *wait, GiError *err)
{
	const GpuidxAggTransfer *hdr = (const GpuidxAggTransfer *) buf;
	GiImageInfo info;

	*wait = false;
	job->hostp = NULL;
	if (engine == GI_ENGINE_CPU)
	{
		if (req->engine != GI_ENGINE_CPU)
		{
			/* (a backend adds up faster than a round trip to the CPU engine) */
			err->status = GI_ERR_UNSUPPORTED;
			snprintf(err->message, sizeof(err->message),
					 "the gpuidx service holds this image on the CPU engine");
			return GI_ERR_UNSUPPORTED;
		}
		host_entries(si, &job->host);
		job->hostp = &job->host;
		return GI_OK;
	}
	if (hdr->ninclude == 0)
		return GI_OK;
	gi_image_info(si->image[engine], &info);
	if (info.include_columns == hdr->ninclude)
		return GI_OK;
	if (engine_inflight(si, engine) > 0)
	{
		*wait = true;
		return GI_OK;
	}
	return attach_service_columns(si, hdr, err);
}

/*
 * Answer one request (its state is RUNNING) here, hand its query to the
 * pool, or leave it for later (the caller puts it back).
 */
static RequestOutcome
answer(int i, GpuidxServiceRequest *req)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	ServiceImage *si;
	ServiceJob *job = &jobs[i];
	int			engine;
	char	   *buf;
	int64		n = req->nprobes;
	bool		agg = req->op == GPUIDX_REQ_OP_AGG;
	GiError		err;
	GiStatus	st;
	instr_time	t0;
	double		build_ms;

	req->message[0] = '\0';
	req->engine_ms = 0;
	if (req->op == GPUIDX_REQ_OP_AGG_FETCH)
	{
		/* the next part of the fetch list the slot's aggregation left */
		buf = transfer_of(i, req);
		req->engine_used = req->engine;
		req->status = buf != NULL &&
			service_agg_fetch(buf, req->transfer_bytes, &job->kept, job->nkept,
							  &job->kept_next) ? GI_OK : GPUIDX_REQ_ERR_NO_IMAGE;
		return REQUEST_ANSWERED;
	}
	/* (the slot's earlier aggregation was read, or abandoned) */
	forget_kept_fetch(job);
	si = find_image(req->image_id, req->image_slot);
	buf = transfer_of(i, req);
	if (si == NULL || buf == NULL ||
		(req->op == GPUIDX_REQ_OP_INFO && req->transfer_bytes < sizeof(GiImageInfo)))
	{
		req->status = GPUIDX_REQ_ERR_NO_IMAGE;
		return REQUEST_ANSWERED;
	}
	if (agg && !service_agg_request_ok(buf, req->transfer_bytes))
	{
		req->status = GPUIDX_REQ_ERR_SERVICE;
		strlcpy(req->message, "malformed aggregation request", sizeof(req->message));
		return REQUEST_ANSWERED;
	}
	if (agg)
		n = ((GpuidxAggTransfer *) buf)->nranges;
	engine = req->engine == GI_ENGINE_GPU && s->gpu_usable ? GI_ENGINE_GPU : GI_ENGINE_CPU;
	if (must_wait(si, engine))
		return REQUEST_DEFERRED;
	if (gpuidx_service_test_delay_ms > 0)
		pg_usleep((long) gpuidx_service_test_delay_ms * 1000L);
	si->last_used = ++service_tick;
	if (si->image[engine] == NULL && (si->given_away & (1 << engine)))
	{
		/* a newer version took this one's engine image: the host answers */
		req->status = GPUIDX_REQ_ERR_NO_IMAGE;
		return REQUEST_ANSWERED;
	}
	INSTR_TIME_SET_CURRENT(t0);
	if (si->image[engine] == NULL)
	{
		st = build_engine(si, engine, &err);
		if (st == GI_ERR_UNSUPPORTED && engine == GI_ENGINE_GPU)
		{
			/* a structure the GPU engine lacks: the CPU engine holds it */
			engine = GI_ENGINE_CPU;
			st = si->image[engine] ? GI_OK : build_engine(si, engine, &err);
		}
		if (st != GI_OK)
		{
			req->status = st;
			strlcpy(req->message, err.message, sizeof(req->message));
			return REQUEST_ANSWERED;
		}
	}
	if (req->op == GPUIDX_REQ_OP_INFO)
	{
		GiImageInfo info;

		/* (the image may be queried meanwhile: engine.h allows it) */
		gi_image_info(si->image[engine], &info);
		memcpy(buf, &info, sizeof(info));
		req->engine_used = engine;
		req->status = GI_OK;
		return REQUEST_ANSWERED;
	}
	req->engine_used = engine;
	if (agg)
	{
		bool		wait;

		st = prepare_aggregation(si, engine, req, buf, job, &wait, &err);
		if (wait)
			return REQUEST_DEFERRED;
		if (st != GI_OK)
		{
			req->status = st;
			strlcpy(req->message, err.message, sizeof(req->message));
			return REQUEST_ANSWERED;
		}
	}
	build_ms = ms_since(t0);
	if (service_pool_running() && !answer_here(i, si, engine, n))
	{
		job->req = req;
		job->image = si->image[engine];
		job->inflight = &si->inflight[engine];
		job->owner = si;
		job->engine = engine;
		job->op = req->op;
		job->nprobes = n;
		job->buf = buf;
		job->build_ms = build_ms;
		pg_atomic_fetch_add_u32(job->inflight, 1);
		service_pool_submit(job);
		if (engine == GI_ENGINE_GPU)
			gpu_dispatched = true;
		return REQUEST_DISPATCHED;
	}
	INSTR_TIME_SET_CURRENT(t0);
	if (agg)
		st = service_agg_run(si->image[engine], job->hostp, buf, &job->kept,
							 &job->nkept, &err);
	else
		st = gi_image_query(si->image[engine], (GiOp) req->op,
							(const int64_t *) buf,
							req->op == GI_OP_RANGE ? (const int64_t *) (buf + n * 8) : NULL,
							(size_t) n, (uint64_t *) (buf + 2 * n * 8),
							(uint64_t *) (buf + 3 * n * 8), &err);
	req->engine_ms = build_ms + ms_since(t0);
	req->status = st;
	if (engine == GI_ENGINE_GPU)
	{
		gpu_answered = true;
		INSTR_TIME_SET_CURRENT(gpu_answered_at);
	}
	if (st != GI_OK)
	{
		strlcpy(req->message, err.message, sizeof(req->message));
		if (st == GI_ERR_DEVICE || st == GI_ERR_DEVICE_OOM)
		{
			/* the device state may be unusable: build again on demand */
			drop_engine(si, engine);
			record_engines(si);
		}
	}
	return REQUEST_ANSWERED;
}

/* Mark a request answered and wake its backend. */
static void
finish_request(GpuidxServiceRequest *req)
{
	pg_write_barrier();
	pg_atomic_write_u32(&req->state, GPUIDX_REQ_DONE);
	if (req->latch)
		SetLatch(req->latch);
}

/*
 * Finish the pool's jobs that failed with a device error: their engine
 * image is broken (dropped once no query runs on it, settle_images), and
 * the error goes to the backend.
 */
static void
collect_failed_jobs(void)
{
	ServiceJob *job = service_pool_take_failed();

	while (job)
	{
		ServiceJob *next = job->next;

		((ServiceImage *) job->owner)->broken[job->engine] = true;
		service_job_finish(job);
		job = next;
	}
}

/*
 * Engine images that wait to go idle: drop a broken one; release a held one
 * (if the version that wanted it has not taken it, no one waits any more).
 */
static void
settle_images(void)
{
	ServiceImage *si;
	int			e;

	for (si = service_images; si; si = si->next)
		for (e = GI_ENGINE_CPU; e <= GI_ENGINE_GPU; e++)
		{
			if (!(si->broken[e] || si->held[e]) || engine_inflight(si, e) > 0)
				continue;
			if (si->broken[e])
			{
				drop_engine(si, e);
				record_engines(si);
			}
			si->held[e] = false;
		}
}

/*
 * Take and answer (or hand to the pool) every submitted request, starting
 * one slot further each pass so that waiting requests take turns; true if
 * some request was left waiting for a busy image.
 */
static bool
serve_requests(void)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	static int	start = 0;
	bool		deferred = false;
	int			k;

	collect_failed_jobs();
	for (k = 0; k < s->max_requests; k++)
	{
		int			i = (start + k) % s->max_requests;
		GpuidxServiceRequest *req = gpuidx_service_request(i);
		uint32		expected = GPUIDX_REQ_SUBMITTED;
		MemoryContext oldcxt = CurrentMemoryContext;
		RequestOutcome outcome;

		if (pg_atomic_read_u32(&req->state) != GPUIDX_REQ_SUBMITTED ||
			!pg_atomic_compare_exchange_u32(&req->state, &expected, GPUIDX_REQ_RUNNING))
			continue;
		pg_read_barrier();
		PG_TRY();
		{
			outcome = answer(i, req);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			FlushErrorState();
			LWLockReleaseAll();
			req->status = GPUIDX_REQ_ERR_SERVICE;
			strlcpy(req->message, edata->message, sizeof(req->message));
			FreeErrorData(edata);
			outcome = REQUEST_ANSWERED;
		}
		PG_END_TRY();
		if (outcome == REQUEST_DEFERRED)
		{
			/* back to SUBMITTED: the backend may still withdraw it */
			pg_atomic_write_u32(&req->state, GPUIDX_REQ_SUBMITTED);
			deferred = true;
		}
		else if (outcome == REQUEST_ANSWERED)
			finish_request(req);
	}
	start = (start + 1) % s->max_requests;
	settle_images();
	return deferred;
}

/*
 * Forget the engine images of shared images the store no longer holds
 * (once no query runs on them).
 */
static void
housekeeping(void)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	ServiceImage *si,
			   *next;

	gpuidx_shared_sweep();
	for (si = service_images; si; si = next)
	{
		bool		gone;

		next = si->next;
		LWLockAcquire(s->lock, LW_SHARED);
		gone = s->images[si->slotno].id != si->id;
		LWLockRelease(s->lock);
		if (gone && !image_busy(si))
			forget_image(si);
	}
}

/*
 * Leave the store saying that no service runs.  The pool stops first: the
 * queries it runs complete, the ones no worker took are answered "gone"
 * (their backends answer on the host), and only then are images freed.
 */
static void
service_exit(int code, Datum arg)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	ServiceJob *job = service_pool_stop();

	while (job)
	{
		ServiceJob *next = job->next;

		pg_atomic_fetch_sub_u32(job->inflight, 1);
		job->req->status = GPUIDX_REQ_ERR_NO_IMAGE;
		finish_request(job->req);
		job = next;
	}
	collect_failed_jobs();
	s->service_latch = NULL;
	s->service_pid = 0;
	while (service_images)
		forget_image(service_images);
}

/*
 * Requests a dead service left RUNNING are answered "service restarted" so
 * their backends stop waiting (they answer on the host).
 */
static void
fail_orphaned_requests(void)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	int			i;

	for (i = 0; i < s->max_requests; i++)
	{
		GpuidxServiceRequest *req = gpuidx_service_request(i);

		if (pg_atomic_read_u32(&req->state) != GPUIDX_REQ_RUNNING)
			continue;
		req->status = GPUIDX_REQ_ERR_NO_IMAGE;
		pg_write_barrier();
		pg_atomic_write_u32(&req->state, GPUIDX_REQ_DONE);
		if (req->latch)
			SetLatch(req->latch);
	}
}

/*
 * How long the idle main thread (no query in the pool) polls the request
 * slots before sleeping: gpuidx.service_spin, or, for gpuidx.service_gpu_spin
 * after the last GPU answer, until that has passed.  One client's next batch
 * comes when its backend has done its part of the last one (heap, counting:
 * about 1.5 ms for 10^4 probes and their rows on the H100 host), after
 * service_spin is over; a poll still awake then saves the service's latch
 * wakeup on every batch.  Only after GPU answers: the service's core is
 * then not one that a CPU engine query needs (a poll by the service beside
 * CPU engine queries made a 2-core host slower).
 */
static double
idle_poll_ms(void)
{
	double		ms = gpuidx_service_spin_ms;

	if (gpu_dispatched)
	{
		/* the pool is idle: its GPU queries have been answered */
		gpu_dispatched = false;
		gpu_answered = true;
		INSTR_TIME_SET_CURRENT(gpu_answered_at);
	}
	if (gpu_answered)
	{
		double		left = gpuidx_service_gpu_spin_ms - ms_since(gpu_answered_at);

		if (left > ms)
			ms = left;
		if (left <= 0)
			gpu_answered = false;
	}
	return ms;
}

/*
 * Watch the request slots for up to poll_ms before sleeping: true as soon as
 * one is submitted (or an interrupt or a reload is pending, which the main
 * loop takes).  A backend's next batch often follows within microseconds,
 * sooner than a latch wakeup.
 */
static bool
poll_for_requests(double poll_ms)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	instr_time	start;

	if (poll_ms <= 0)
		return false;
	INSTR_TIME_SET_CURRENT(start);
	do
	{
		int			i;

		for (i = 0; i < s->max_requests; i++)
			if (pg_atomic_read_u32(&gpuidx_service_request(i)->state) == GPUIDX_REQ_SUBMITTED)
				return true;
		if (InterruptPending || ConfigReloadPending)
			return true;
		pg_spin_delay();
	} while (ms_since(start) < poll_ms);
	return false;
}

/*
 * Say once, at start, when the shared images will sit on 4 kB pages: with
 * dynamic_shared_memory_type = posix they are files in /dev/shm, and
 * unless that tmpfs is mounted with huge pages a backend faults in each
 * page it first touches and misses the TLB on every random entry (README,
 * service mode: large images).
 */
static void
hint_shm_pages(void)
{
	FILE	   *f;
	char		line[1024];
	bool		huge = false;

	if (dynamic_shared_memory_type != DSM_IMPL_POSIX ||
		(f = fopen("/proc/mounts", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f))
	{
		char		dev[256],
					dir[256],
					type[64],
					opts[512];

		if (sscanf(line, "%255s %255s %63s %511s", dev, dir, type, opts) == 4 &&
			strcmp(dir, "/dev/shm") == 0)
			huge = strstr(opts, "huge=always") || strstr(opts, "huge=within_size");
	}
	fclose(f);
	if (!huge)
		ereport(LOG,
				(errmsg("gpuidx service: /dev/shm has no huge pages: shared images use 4 kB pages"),
				 errhint("For images of 10^7 entries and more, mount /dev/shm with huge=within_size: a backend's first batch faults in far fewer pages.")));
}

/* The service's main loop. */
void
gpuidx_service_main(Datum arg)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	int			nworkers;
	TimestampTz last_housekeeping = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("gpuidx service");

	transfers = MemoryContextAllocZero(TopMemoryContext,
									   sizeof(TransferMapping) * s->max_requests);
	jobs = MemoryContextAllocZero(TopMemoryContext,
								  sizeof(ServiceJob) * s->max_requests);
	s->gpu_usable = gi_gpu_available(s->gpu_reason, sizeof(s->gpu_reason));
	s->gpu_probed = true;
	fail_orphaned_requests();
	before_shmem_exit(service_exit, 0);
	nworkers = service_pool_start(gpuidx_service_workers, MyLatch);
	s->service_starts++;
	s->service_latch = MyLatch;
	pg_write_barrier();
	s->service_pid = MyProcPid;
	elog(LOG, "gpuidx service started (%s, %s)",
		 s->gpu_usable ? "GPU engine" : "CPU engine: no usable GPU",
		 nworkers > 0 ? psprintf("%d query threads", nworkers) :
		 "one request at a time");
	hint_shm_pages();

	for (;;)
	{
		bool		deferred;
		TimestampTz now;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		deferred = serve_requests();
		now = GetCurrentTimestamp();
		if (TimestampDifferenceExceeds(last_housekeeping, now, 1000))
		{
			housekeeping();
			last_housekeeping = now;
		}

		/*
		 * A backend that sends its next batch at once finds us awake (not
		 * while query threads work: they may need this core), and for a
		 * while longer after GPU answers (idle_poll_ms).
		 */
		if (!deferred && service_pool_idle() && poll_for_requests(idle_poll_ms()))
			continue;

		/*
		 * Requests left waiting go again when a worker finishes (it sets
		 * the latch); the short timeout only guards against a missed wake.
		 */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 deferred ? 10L : 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
