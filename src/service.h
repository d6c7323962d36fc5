/*
 * service.h - the gpuidx service: one process that holds the engine images
 * of the whole server, and the shared image store that all backends map.
 *
 * With shared_preload_libraries = 'gpuidx' (and gpuidx.service = on):
 *
 *   - an index's sorted entries (keys, TIDs, INCLUDE rows, NULL-key TIDs)
 *     live once in a dynamic shared memory segment, a *shared image*, that
 *     every backend maps read-only.  A backend that finds no shared image
 *     matching the index's metapage loads one from the pages, as in
 *     per-backend mode, and publishes it (shared_images.c);
 *   - the background worker "gpuidx service" (service.c) is the only
 *     process that starts CUDA.  It builds the engine image (GPU or CPU) of
 *     a shared image on the first batch that needs one and answers batches
 *     that backends put in their request slot (service_client.c);
 *   - backends keep doing what needs their snapshot: visibility and heap.
 *
 * Everything a backend answers itself (small batches, walks, key-only
 * rows) reads the mapped arrays.  If the service is not running, a backend
 * answers on the host from the same arrays: slower, never wrong.
 */
#ifndef GPUIDX_SERVICE_H
#define GPUIDX_SERVICE_H

#include "gpuidx.h"

#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/relfilenode.h"

/*
 * One published version of an index's entries (a slot of the store): a
 * base segment (sorted keys, TIDs, INCLUDE rows) that later versions may
 * share, and its own delta segment (entries added since the base, sorted,
 * with their positions; the NULL-key TIDs and rows), as GpuidxImageData
 * splits them.
 */
typedef struct GpuidxSharedImage
{
	uint64		id;				/* unique, never reused; 0: free slot */
	Oid			dbid;
	Oid			indexoid;
	RelFileNode node;
	bool		current;		/* the newest version of its index */
	pg_atomic_uint32 pins;		/* transactions reading it */
	uint64		last_used;		/* store tick of the last pin */
	TimestampTz loaded_at;
	uint64		parent_id;		/* the version whose base and delta this
								 * one extends (0: loaded whole) */
	uint64		base_id;		/* the version that published the base */
	dsm_handle	base_handle;
	Size		base_bytes;
	dsm_handle	delta_handle;
	Size		delta_bytes;

	/* What it holds, as GpuidxImageData says it (identity checks). */
	uint64		generation;
	uint64		base_count;
	uint64		pending_count;
	uint64		lane_count[GPUIDX_LANES];
	int64		n;				/* nbase + ndelta */
	int64		nbase;
	int64		ndelta;
	int64		nnull;
	int			key_bytes;
	int			structure;
	int			row_bytes;
	double		load_ms;

	/* Written by the service: its engine images of this version. */
	uint64		engine_device_bytes;
	uint64		engine_host_bytes;
	int			engines;		/* bit (1 << GiEngineKind) per built image */
} GpuidxSharedImage;

/* States of a request slot. */
#define GPUIDX_REQ_IDLE			0
#define GPUIDX_REQ_SUBMITTED	1	/* the backend wrote it; the service may take it */
#define GPUIDX_REQ_RUNNING		2	/* the service is answering it */
#define GPUIDX_REQ_DONE			3	/* answered (status says how) */

/*
 * One backend's request slot (indexed by pgprocno).  The probes and the
 * answers travel in the backend's transfer segment: probes[n], probes_hi[n]
 * (GI_OP_RANGE only), first[n], last[n].
 */
typedef struct GpuidxServiceRequest
{
	pg_atomic_uint32 state;
	bool		abandoned;		/* the backend stopped waiting (cancel, error) */
	Latch	   *latch;			/* the requester's latch */
	uint64		image_id;
	int			image_slot;
	int			op;				/* GiOp */
	int			engine;			/* GiEngineKind wanted */
	int64		nprobes;
	dsm_handle	transfer;
	Size		transfer_bytes;
	dsm_handle	kept;			/* the slot's transfer segment, pinned so that
								 * it outlives its process: the next process
								 * in the slot (a parallel worker, a new
								 * connection) maps it instead of creating and
								 * faulting in one (service_client.c) */
	Size		kept_bytes;

	/* the answer */
	int			status;			/* GiStatus, or GPUIDX_REQ_ERR_* */
	int			engine_used;	/* GiEngineKind that answered */
	double		engine_ms;		/* time in the engine */
	char		message[256];
} GpuidxServiceRequest;

/*
 * A request's op: a GiOp, or one of these: the engine image's GiImageInfo;
 * adding up position ranges (GpuIndexAgg: GpuidxAggTransfer below); the
 * next part of a fetch list an aggregation left with the service.
 */
#define GPUIDX_REQ_OP_INFO		0
#define GPUIDX_REQ_OP_AGG		10
#define GPUIDX_REQ_OP_AGG_FETCH	11

/* Answers that are not engine statuses. */
#define GPUIDX_REQ_ERR_NO_IMAGE	100 /* the shared image went away */
#define GPUIDX_REQ_ERR_SERVICE	101 /* an error in the service (message) */

/*
 * The transfer segment of a GPUIDX_REQ_OP_AGG request (gi_image_aggregate
 * in the service): this header, then at the offsets gpuidx_agg_layout
 * gives first[nranges], last[nranges] (positions in the image), the
 * columns' totals GiAggColumn[ncols] (added to in place), the visibility
 * map copy ((vm_blocks + 3) / 4 bytes; none when vm_full), and room for
 * fetch_room TIDs of the fetch list.  A longer fetch list stays with the
 * service (nfetch says its length) and is read back by
 * GPUIDX_REQ_OP_AGG_FETCH requests (GpuidxAggFetchTransfer).
 */
typedef struct GpuidxAggTransfer
{
	/* in */
	int64		nranges;
	int64		fetch_room;
	uint64		vm_blocks;
	bool		vm_full;
	int			ncols;
	/* the index's INCLUDE columns (0: the run reads none), all put on the
	 * device at once, as attach_include_columns does per backend */
	int			ninclude;
	int16		width[GPUIDX_MAX_INCLUDE];
	int16		value_offset[GPUIDX_MAX_INCLUDE];
	/* out */
	int64		counted;		/* entries added up from the image */
	int64		nfetch;			/* the fetch list's length */
} GpuidxAggTransfer;

/* Where each part of an aggregation's transfer segment starts. */
typedef struct GpuidxAggLayout
{
	Size		first;
	Size		last;
	Size		cols;
	Size		vm;
	Size		fetch;
	Size		total;
} GpuidxAggLayout;

/*
 * The transfer segment of a GPUIDX_REQ_OP_AGG_FETCH request: the backend
 * asks for up to count TIDs; the service writes how many it copied (the
 * next ones of the list it kept) into count, the TIDs after the header.
 */
typedef struct GpuidxAggFetchTransfer
{
	int64		count;
} GpuidxAggFetchTransfer;

/* The store and the request slots, in the main shared memory. */
typedef struct GpuidxServiceShared
{
	LWLock	   *lock;			/* the store: slots, ids, ticks */
	uint64		next_id;
	pg_atomic_uint64 tick;		/* last-use order of the slots */
	int			max_images;
	int			max_requests;

	/* The service process (0 / NULL while it is not running). */
	pid_t		service_pid;
	Latch	   *service_latch;
	uint32		service_starts; /* times the service started */
	bool		gpu_probed;		/* the service looked for a device */
	bool		gpu_usable;
	char		gpu_reason[256];

	GpuidxSharedImage images[FLEXIBLE_ARRAY_MEMBER];
	/* followed by max_requests GpuidxServiceRequest */
} GpuidxServiceShared;

extern GpuidxServiceShared *gpuidx_service_shared;

static inline GpuidxServiceRequest *
gpuidx_service_request(int i)
{
	GpuidxServiceShared *s = gpuidx_service_shared;

	return (GpuidxServiceRequest *)
		((char *) s + MAXALIGN(offsetof(GpuidxServiceShared, images) +
							   sizeof(GpuidxSharedImage) * s->max_images)) + i;
}

/* Where each array starts in a base or a delta segment. */
typedef struct GpuidxSegmentLayout
{
	Size		keys;			/* base: keys, tids, rows */
	Size		tids;
	Size		rows;
	Size		rank;			/* delta: keys, tids, rank, rows, then */
	Size		null_tids;		/* the NULL-key TIDs and rows */
	Size		null_rows;
	Size		total;
} GpuidxSegmentLayout;

extern void gpuidx_base_layout(int64 nbase, int row_bytes,
							   GpuidxSegmentLayout *layout);
extern void gpuidx_delta_layout(int64 ndelta, int64 nnull, int row_bytes,
								GpuidxSegmentLayout *layout);

/* ---------- GUCs (guc.c) ---------- */
extern bool gpuidx_service_setting;
extern int	gpuidx_service_max_images;
extern int	gpuidx_service_workers;
extern int	gpuidx_service_memory_limit_mb;
extern int	gpuidx_service_test_delay_ms;
extern bool gpuidx_service_test_agg_cpu;
extern double gpuidx_service_spin_ms;
extern double gpuidx_service_gpu_spin_ms;

/* ---------- service.c ---------- */
extern void gpuidx_service_register(void);
extern bool gpuidx_service_mode(void);
extern bool gpuidx_service_running(void);
PGDLLEXPORT void gpuidx_service_main(Datum arg);

/* ---------- shared_images.c ---------- */
extern GpuidxImageData *gpuidx_shared_find(Relation index,
										   const GpuidxMetaPageData *meta,
										   const GpuidxPendingCounts *pending,
										   bool prefix);
extern void gpuidx_shared_publish(Relation index, GpuidxImageData *img);
extern bool gpuidx_shared_publish_delta(Relation index, GpuidxImageData *img,
										GpuidxImageData *prev);
extern bool gpuidx_shared_pin(GpuidxImageData *img);
extern void gpuidx_shared_unpin(GpuidxImageData *img);
extern void gpuidx_shared_detach(GpuidxImageData *img);
extern bool gpuidx_shared_is_current(const GpuidxImageData *img);
extern void gpuidx_shared_follow_fold(GpuidxImageData *img,
									  const GpuidxMetaPageData *meta);
extern void gpuidx_shared_sweep(void);
extern void gpuidx_shared_register_cleanup(void);
extern dsm_segment *gpuidx_map_segment(dsm_handle handle);
extern void gpuidx_unmap_segment(dsm_segment *seg);
extern bool gpuidx_shared_engine_info(const GpuidxImageData *img,
									  uint64 *device_bytes, uint64 *host_bytes,
									  int *engines);

/* ---------- service_agg.c ---------- */
extern void gpuidx_agg_layout(int64 nranges, int ncols, uint64 vm_blocks,
							  bool vm_full, int64 fetch_room,
							  GpuidxAggLayout *layout);

/* ---------- service_client.c ---------- */
extern bool gpuidx_service_query(GpuidxImageData *img, GiEngineKind engine,
								 GiOp op, const int64 *probes,
								 const int64 *probes_hi, int64 nprobes,
								 uint64 *first, uint64 *last);
extern bool gpuidx_service_image_info(GpuidxImageData *img, GiEngineKind engine,
									  GiImageInfo *info);
extern GiEngineKind gpuidx_service_choose_engine(void);
extern bool gpuidx_service_aggregate(GpuidxImageData *img, const GpuidxLayout *layout,
									 const uint64 *first, const uint64 *last,
									 int64 nranges, const uint8 *vm,
									 BlockNumber vm_blocks, bool vm_full,
									 GiAggColumn *cols, int ncols, int64 *counted,
									 uint64 **fetch, int64 *nfetch);

#endif							/* GPUIDX_SERVICE_H */
