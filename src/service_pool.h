/*
 * service_pool.h - the gpuidx service's query threads (service_pool.c).
 *
 * The service's main thread does everything that touches PostgreSQL:
 * taking requests, mapping segments, building engine images, evicting, and
 * the store's lock.  With gpuidx.service_workers of 2 or more it hands the
 * engine query itself (gi_image_query on a built engine image, probes read
 * from and answers written into the mapped transfer segment; or
 * gi_image_aggregate for GpuIndexAgg, service_agg.c) to a pool of threads,
 * so that several backends' batches run at once.
 *
 * A worker calls no PostgreSQL function but SetLatch (which only writes the
 * latch in shared memory and wakes its owner with a signal or a self-pipe
 * byte, as it does from signal handlers) and the pg_atomic operations; it
 * runs with every signal blocked.  It answers a job and marks its request
 * DONE itself, except after a device error: such a job goes back to the
 * main thread (service_pool_take_failed), which drops the engine image
 * before it finishes the request.
 */
#ifndef GPUIDX_SERVICE_POOL_H
#define GPUIDX_SERVICE_POOL_H

#include "gpuidx.h"
#include "service.h"

/* One engine query handed to a worker (one per request slot at most). */
typedef struct ServiceJob
{
	/* set by the main thread */
	GpuidxServiceRequest *req;
	GiImage    *image;			/* built, and kept while inflight counts it */
	pg_atomic_uint32 *inflight; /* the image's count of queries in flight */
	void	   *owner;			/* the main thread's record of the image */
	int			engine;			/* GiEngineKind of image */
	int			op;				/* GiOp */
	int64		nprobes;
	char	   *buf;			/* the mapped transfer segment */
	double		build_ms;		/* the main thread's share of engine_ms */
	GiAggEntries host;			/* GPUIDX_REQ_OP_AGG on a CPU image: the
								 * shared arrays (service_agg_run) */
	const GiAggEntries *hostp;	/* &host, or NULL (a GPU image) */

	/*
	 * The fetch list an aggregation on this slot left for
	 * GPUIDX_REQ_OP_AGG_FETCH (the engine's allocation): written by
	 * whichever thread answered it, read and freed by the main thread when
	 * the slot's next request comes (the slot is not reused before).
	 */
	uint64_t   *kept;
	int64		nkept;
	int64		kept_next;

	/* set by the worker */
	GiStatus	status;
	char		message[256];
	double		engine_ms;
	struct ServiceJob *next;
} ServiceJob;

extern int	service_pool_start(int nworkers, Latch *main_latch);
extern bool service_pool_running(void);
extern bool service_pool_idle(void);
extern void service_pool_submit(ServiceJob *job);
extern ServiceJob *service_pool_take_failed(void);
extern void service_job_finish(ServiceJob *job);
extern ServiceJob *service_pool_stop(void);

/* service_agg.c: GpuIndexAgg's adding up (no PostgreSQL calls) */
extern bool service_agg_request_ok(const char *buf, Size bytes);
extern GiStatus service_agg_run(GiImage *image, const GiAggEntries *host, char *buf,
								uint64_t **kept, int64 *nkept, GiError *err);
extern bool service_agg_fetch(char *buf, Size bytes, uint64_t **kept, int64 nkept,
							  int64 *next);

#endif							/* GPUIDX_SERVICE_POOL_H */
