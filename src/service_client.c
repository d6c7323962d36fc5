/*
 * service_client.c - a backend's side of the gpuidx service (service.h).
 *
 * A backend sends a batch through its request slot (one per PGPROC): the
 * probes go into its transfer segment, a dynamic shared memory segment it
 * owns and grows as batches need, and the service writes the answers
 * (first, last per probe) back into it.  Batches larger than a chunk are
 * sent a chunk at a time.  The backend waits on its latch; a cancel or a
 * statement timeout interrupts the wait (the slot is abandoned: a request
 * the service has not taken is withdrawn, one it is answering is waited for
 * before the slot is used again).  If the service is not running, or stops
 * while answering, the caller answers on the host (never a wrong answer).
 * GpuIndexAgg's runs go the same way (gpuidx_service_aggregate): ranges,
 * the visibility map copy and totals in, totals and the fetch list out.
 */
#include "gpuidx.h"
#include "service.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/proc.h"
#include "portability/instr_time.h"
#include "storage/s_lock.h"
#include "utils/memutils.h"

/* Most probes sent in one request (32 bytes each in the transfer segment). */
#define SERVICE_CHUNK_PROBES	(1 << 20)

/* The largest transfer segment a request slot keeps for its next process. */
#define SERVICE_KEPT_BYTES		((Size) SERVICE_CHUNK_PROBES * 32)

/*
 * GpuIndexAgg through the service: most position ranges sent in one request
 * (16 bytes each), the room for the fetch list an aggregation request
 * leaves (TIDs: a longer list stays with the service), and most TIDs of it
 * read back in one GPUIDX_REQ_OP_AGG_FETCH request.
 */
#define SERVICE_AGG_RANGES		(1 << 20)
#define SERVICE_AGG_FETCH_ROOM	(1 << 16)
#define SERVICE_AGG_FETCH_CHUNK	(1 << 22)

static dsm_segment *transfer_seg = NULL;
static Size transfer_bytes = 0;

/* This backend's request slot. */
static GpuidxServiceRequest *
my_request(void)
{
	int			i = MyProc->pgprocno;

	if (i < 0 || i >= gpuidx_service_shared->max_requests)
		return NULL;
	return gpuidx_service_request(i);
}

/*
 * A transfer segment of at least bytes, mapped for the backend's life.  The
 * request slot keeps it (pinned) for the next process that has the slot,
 * up to SERVICE_KEPT_BYTES: a parallel worker lives for one query, and a
 * fresh segment of a chunk's 32 MB is created, zeroed and faulted in by
 * the worker and the service each time (in service mode 1-3 ms of a
 * 333333-probe as-of batch that the GPU answers in a fraction of that).
 */
static char *
transfer_buffer(Size bytes)
{
	GpuidxServiceRequest *req;
	Size		want;
	dsm_segment *seg;

	if (transfer_seg != NULL && transfer_bytes >= bytes)
		return dsm_segment_address(transfer_seg);
	req = my_request();
	if (transfer_seg == NULL && req != NULL && req->kept != DSM_HANDLE_INVALID &&
		req->kept_bytes >= bytes && (seg = dsm_attach(req->kept)) != NULL)
	{
		/* the segment the slot's last process left */
		dsm_pin_mapping(seg);
		transfer_seg = seg;
		transfer_bytes = req->kept_bytes;
		return dsm_segment_address(transfer_seg);
	}
	want = Max(bytes, (Size) 1 << 20);
	if (want < SERVICE_KEPT_BYTES && bytes > ((Size) 1 << 20))
		want = Min(Max(want, transfer_bytes * 2), SERVICE_KEPT_BYTES);
	seg = dsm_create(want, 0);
	dsm_pin_mapping(seg);
	if (req != NULL && want <= SERVICE_KEPT_BYTES)
	{
		dsm_handle	old = req->kept;

		dsm_pin_segment(seg);
		req->kept = dsm_segment_handle(seg);
		req->kept_bytes = want;
		if (old != DSM_HANDLE_INVALID)
			dsm_unpin_segment(old);
	}
	if (transfer_seg)
		dsm_detach(transfer_seg);
	transfer_seg = seg;
	transfer_bytes = want;
	return dsm_segment_address(transfer_seg);
}

/*
 * Wait until the slot is free: a request abandoned earlier may still be
 * running in the service (it writes into our transfer segment).  Returns
 * false if the service went away meanwhile.
 */
static bool
wait_slot_free(GpuidxServiceRequest *req)
{
	for (;;)
	{
		uint32		state = pg_atomic_read_u32(&req->state);
		uint32		expected = GPUIDX_REQ_SUBMITTED;

		if (state == GPUIDX_REQ_IDLE)
			return true;
		if (state == GPUIDX_REQ_DONE)
		{
			pg_atomic_write_u32(&req->state, GPUIDX_REQ_IDLE);
			return true;
		}
		if (state == GPUIDX_REQ_SUBMITTED &&
			pg_atomic_compare_exchange_u32(&req->state, &expected, GPUIDX_REQ_IDLE))
			return true;
		if (!gpuidx_service_running())
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * What the GPU engine took per probe on the last batch the service answered
 * on it for one image (the one this backend used last): a backend polls for
 * about that long on its next batch of that image (answer_spin_ms).
 */
static uint64 gpu_pace_image_id = 0;
static double gpu_pace_ms_per_probe = 0;

/*
 * Longest, in milliseconds, a backend polls for a batch of n probes on img
 * with engine: gpuidx.service_spin, or, when the service answered this
 * image's last batch on the GPU and the GPU is asked for again, up to 1.5
 * times the engine time that answer suggests plus 0.1 ms for the way there
 * and back, at most gpuidx.service_gpu_spin.  Spinning longer is only safe
 * for the GPU: the service's thread then waits for the device, so this
 * backend's core is not one that an engine query needs (on the CPU engine
 * the query threads do; a long poll there made a 2-core host slower).
 */
static double
answer_spin_ms(const GpuidxImageData *img, GiEngineKind engine, int64 n)
{
	double		ms = gpuidx_service_spin_ms;

	if (engine == GI_ENGINE_GPU && gpuidx_service_gpu_spin_ms > 0 &&
		gpu_pace_image_id == img->shared_id && gpu_pace_ms_per_probe > 0)
	{
		double		expect = 1.5 * gpu_pace_ms_per_probe * (double) n + 0.1;

		ms = Max(ms, Min(expect, gpuidx_service_gpu_spin_ms));
	}
	return ms;
}

/* Note how fast the engine answered a batch of n probes on img. */
static void
note_answer_pace(const GpuidxImageData *img, GiEngineKind engine_used,
				 double engine_ms, int64 n)
{
	if (engine_used == GI_ENGINE_GPU && n > 0)
	{
		gpu_pace_image_id = img->shared_id;
		gpu_pace_ms_per_probe = engine_ms / (double) n;
	}
	else if (gpu_pace_image_id == img->shared_id)
		gpu_pace_image_id = 0;	/* the CPU answered it: no long poll */
}

/*
 * Poll for the answer for up to spin_ms before sleeping on the latch: a
 * small batch comes back in tens of microseconds, less than the two process
 * wakeups a latch round trip costs.  True if it came.  A pending interrupt
 * ends the poll (the latch loop after it takes the interrupt).
 */
static bool
spin_for_answer(GpuidxServiceRequest *req, double spin_ms)
{
	instr_time	start,
				now;
	int			i;

	if (spin_ms <= 0)
		return false;
	INSTR_TIME_SET_CURRENT(start);
	for (i = 1;; i++)
	{
		if (pg_atomic_read_u32(&req->state) == GPUIDX_REQ_DONE)
			return true;
		pg_spin_delay();
		if (i % 64 == 0)
		{
			if (InterruptPending)
				return false;
			INSTR_TIME_SET_CURRENT(now);
			INSTR_TIME_SUBTRACT(now, start);
			if (INSTR_TIME_GET_MILLISEC(now) >= spin_ms)
				return false;
		}
	}
}

/*
 * Wait for the service's answer; false if the service stopped before
 * giving one.  An interrupt abandons the request and propagates.
 */
static bool
wait_answer(GpuidxServiceRequest *req, uint32 starts, double spin_ms)
{
	bool		answered = false;

	PG_TRY();
	{
		answered = spin_for_answer(req, spin_ms);
		for (; !answered;)
		{
			if (pg_atomic_read_u32(&req->state) == GPUIDX_REQ_DONE)
			{
				answered = true;
				break;
			}
			if (!gpuidx_service_running() ||
				gpuidx_service_shared->service_starts != starts)
			{
				req->abandoned = true;
				break;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 100L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		uint32		expected = GPUIDX_REQ_SUBMITTED;

		/* Withdraw it if the service has not taken it yet. */
		req->abandoned = true;
		(void) pg_atomic_compare_exchange_u32(&req->state, &expected, GPUIDX_REQ_IDLE);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pg_read_barrier();
	return answered;
}

/* Raise the error a failed request reports. */
static void
raise_request_error(GpuidxServiceRequest *req)
{
	GiError		err;

	if (req->status == GPUIDX_REQ_ERR_SERVICE)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuidx service failed to answer a batch: %s", req->message)));
	err.status = (GiStatus) req->status;
	strlcpy(err.message, req->message, sizeof(err.message));
	gpuidx_raise_engine_error(&err, "querying the index image in the gpuidx service");
}

/*
 * Hand the filled-in request to the service and wait for its answer,
 * polling for up to spin_ms first; false when the service cannot answer
 * (gone, or the image went away), or, with host_if_unsupported, answers
 * GI_ERR_UNSUPPORTED (the caller does the work on the host).  Any other
 * engine error is raised.
 */
static bool
submit_and_wait(GpuidxServiceRequest *req, uint32 starts, double spin_ms,
				bool host_if_unsupported)
{
	bool		answered;

	pg_write_barrier();
	pg_atomic_write_u32(&req->state, GPUIDX_REQ_SUBMITTED);
	if (gpuidx_service_shared->service_latch)
		SetLatch(gpuidx_service_shared->service_latch);
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	answered = wait_answer(req, starts, spin_ms);
	pgstat_report_wait_end();
	if (!answered)
		return false;
	pg_atomic_write_u32(&req->state, GPUIDX_REQ_IDLE);
	if (req->status == GPUIDX_REQ_ERR_NO_IMAGE ||
		(host_if_unsupported && req->status == GI_ERR_UNSUPPORTED))
		return false;
	if (req->status != GI_OK)
		raise_request_error(req);
	return true;
}

/* Point a request at img's shared image. */
static void
request_for(GpuidxServiceRequest *req, GpuidxImageData *img, int op,
			GiEngineKind engine, int64 n, Size bytes)
{
	req->abandoned = false;
	req->latch = MyLatch;
	req->image_id = img->shared_id;
	req->image_slot = img->shared_slot;
	req->op = op;
	req->engine = engine;
	req->nprobes = n;
	req->transfer = dsm_segment_handle(transfer_seg);
	req->transfer_bytes = bytes;
}

/*
 * Send one chunk of a batch; false if the service is not there to answer
 * (the caller answers on the host).
 */
static bool
query_chunk(GpuidxServiceRequest *req, GpuidxImageData *img, GiEngineKind engine,
			GiOp op, const int64 *probes, const int64 *probes_hi, int64 n,
			uint64 *first, uint64 *last, uint32 starts)
{
	char	   *buf = transfer_buffer((Size) n * 32);

	memcpy(buf, probes, sizeof(int64) * n);
	if (op == GI_OP_RANGE)
		memcpy(buf + n * 8, probes_hi, sizeof(int64) * n);
	request_for(req, img, op, engine, n, (Size) n * 32);
	if (!submit_and_wait(req, starts, answer_spin_ms(img, engine, n), false))
		return false;
	memcpy(first, buf + 2 * n * 8, sizeof(uint64) * n);
	memcpy(last, buf + 3 * n * 8, sizeof(uint64) * n);
	img->engine = (GiEngineKind) req->engine_used;
	note_answer_pace(img, img->engine, req->engine_ms, n);
	return true;
}

/*
 * Answer a batch on a shared image through the service, a chunk at a
 * time; false (nothing answered) when the service cannot: the caller
 * answers on the host.
 */
bool
gpuidx_service_query(GpuidxImageData *img, GiEngineKind engine, GiOp op,
					 const int64 *probes, const int64 *probes_hi, int64 nprobes,
					 uint64 *first, uint64 *last)
{
	GpuidxServiceRequest *req = my_request();
	uint32		starts;
	int64		done;
	double		engine_ms = 0;
	instr_time	t0,
				t1;

	if (req == NULL || !img->shared || !gpuidx_service_running())
		return false;
	INSTR_TIME_SET_CURRENT(t0);
	starts = gpuidx_service_shared->service_starts;
	if (!wait_slot_free(req))
		return false;
	for (done = 0; done < nprobes; done += SERVICE_CHUNK_PROBES)
	{
		int64		n = Min((int64) SERVICE_CHUNK_PROBES, nprobes - done);

		if (!query_chunk(req, img, engine, op, probes + done,
						 probes_hi ? probes_hi + done : NULL, n,
						 first + done, last + done, starts))
			return false;
		engine_ms += req->engine_ms;
		CHECK_FOR_INTERRUPTS();
	}
	/* where a batch's time goes: the service's engine, or the way there and back */
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	elog(DEBUG2, "gpuidx service: %lld probes answered by the %s engine in %.3f ms of a %.3f ms round trip",
		 (long long) nprobes, gi_engine_name((GiEngineKind) req->engine_used), engine_ms,
		 INSTR_TIME_GET_MILLISEC(t1));
	return true;
}

/*
 * The service's engine image of a shared image, built if need be, as
 * gi_image_info describes it; false when the service cannot say.
 */
bool
gpuidx_service_image_info(GpuidxImageData *img, GiEngineKind engine,
						  GiImageInfo *info)
{
	GpuidxServiceRequest *req = my_request();
	uint32		starts;
	char	   *buf;

	if (req == NULL || !img->shared || !gpuidx_service_running())
		return false;
	starts = gpuidx_service_shared->service_starts;
	if (!wait_slot_free(req))
		return false;
	buf = transfer_buffer(sizeof(GiImageInfo));
	request_for(req, img, GPUIDX_REQ_OP_INFO, engine, 0, sizeof(GiImageInfo));
	if (!submit_and_wait(req, starts, gpuidx_service_spin_ms, false))
		return false;
	memcpy(info, buf, sizeof(GiImageInfo));
	img->engine = (GiEngineKind) req->engine_used;
	return true;
}

/*
 * Read back the n TIDs of the fetch list the service kept from the last
 * aggregation request into out, SERVICE_AGG_FETCH_CHUNK at a time; false
 * when the service cannot give them (the caller adds up on the host).
 */
static bool
read_kept_fetch(GpuidxServiceRequest *req, GpuidxImageData *img,
				GiEngineKind engine, uint32 starts, uint64 *out, int64 n)
{
	Size		off = MAXALIGN(sizeof(GpuidxAggFetchTransfer));
	int64		got = 0;

	while (got < n)
	{
		int64		want = Min(n - got, (int64) SERVICE_AGG_FETCH_CHUNK);
		char	   *buf = transfer_buffer(off + sizeof(uint64) * want);
		GpuidxAggFetchTransfer *hdr = (GpuidxAggFetchTransfer *) buf;

		hdr->count = want;
		request_for(req, img, GPUIDX_REQ_OP_AGG_FETCH, engine, 0,
					off + sizeof(uint64) * want);
		if (!submit_and_wait(req, starts, gpuidx_service_spin_ms, false))
			return false;
		if (hdr->count <= 0 || hdr->count > want)
			return false;
		memcpy(out + got, buf + off, sizeof(uint64) * hdr->count);
		got += hdr->count;
	}
	return true;
}

/*
 * Add up the position ranges [first, last) of a shared image in the gpuidx
 * service (GpuIndexAgg: gi_image_aggregate on its engine image, as
 * gpuidx_aggregate_image does on a backend's own GPU image), with the
 * visibility map copy vm: totals into cols and *counted, the TIDs of
 * entries not on all-visible pages into *fetch (palloc'd, *nfetch of
 * them).  layout: the index's, when a column is an INCLUDE one (the
 * service puts them on the device first).  The ranges go
 * SERVICE_AGG_RANGES a request; a request's fetch list past the room left
 * for it is read back after.  Returns false, having added nothing, where
 * the caller adds up on the host: no service, the image gone or given to a
 * newer version, or the service's answer GI_ERR_UNSUPPORTED (its image on
 * the CPU engine, a veb image's key, columns that do not fit the device).
 * Engine errors are raised; a cancel abandons the request.
 */
bool
gpuidx_service_aggregate(GpuidxImageData *img, const GpuidxLayout *layout,
						 const uint64 *first, const uint64 *last, int64 nranges,
						 const uint8 *vm, BlockNumber vm_blocks, bool vm_full,
						 GiAggColumn *cols, int ncols, int64 *counted,
						 uint64 **fetch, int64 *nfetch)
{
	GpuidxServiceRequest *req = my_request();
	GiEngineKind engine = img->engine == GI_ENGINE_GPU ? GI_ENGINE_GPU : GI_ENGINE_CPU;
	double		spin_ms = engine == GI_ENGINE_GPU ?
		Max(gpuidx_service_spin_ms, gpuidx_service_gpu_spin_ms) : gpuidx_service_spin_ms;
	GiAggColumn *totals;
	uint64	   *list;
	int64		nlist = 0,
				cap = 1024,
				added = 0,
				done;
	double		engine_ms = 0;
	uint32		starts;
	instr_time	t0,
				t1;

	if (req == NULL || !img->shared || !gpuidx_service_running() || nranges <= 0)
		return false;
	INSTR_TIME_SET_CURRENT(t0);
	starts = gpuidx_service_shared->service_starts;
	if (!wait_slot_free(req))
		return false;
	/* (the caller's totals change only once every request succeeded) */
	totals = palloc(sizeof(GiAggColumn) * Max(ncols, 1));
	memcpy(totals, cols, sizeof(GiAggColumn) * ncols);
	list = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * cap);
	for (done = 0; done < nranges; done += SERVICE_AGG_RANGES)
	{
		int64		m = Min((int64) SERVICE_AGG_RANGES, nranges - done);
		int64		entries = 0,
					room,
					nf,
					i;
		GpuidxAggLayout l;
		GpuidxAggTransfer *hdr;
		char	   *buf;

		for (i = done; i < done + m; i++)
			entries += (int64) (last[i] - first[i]);
		room = Min(entries, (int64) SERVICE_AGG_FETCH_ROOM);
		gpuidx_agg_layout(m, ncols, vm_blocks, vm_full, room, &l);
		buf = transfer_buffer(l.total);
		hdr = (GpuidxAggTransfer *) buf;
		memset(hdr, 0, sizeof(*hdr));
		hdr->nranges = m;
		hdr->fetch_room = room;
		hdr->vm_blocks = vm_blocks;
		hdr->vm_full = vm_full;
		hdr->ncols = ncols;
		if (layout != NULL)
		{
			hdr->ninclude = layout->ninclude;
			memcpy(hdr->width, layout->width, sizeof(hdr->width));
			memcpy(hdr->value_offset, layout->value_offset, sizeof(hdr->value_offset));
		}
		memcpy(buf + l.first, first + done, sizeof(uint64) * m);
		memcpy(buf + l.last, last + done, sizeof(uint64) * m);
		memcpy(buf + l.cols, totals, sizeof(GiAggColumn) * ncols);
		if (!vm_full && vm_blocks > 0)
		{
			if (vm != NULL)
				memcpy(buf + l.vm, vm, (vm_blocks + 3) / 4);
			else
				memset(buf + l.vm, 0, (vm_blocks + 3) / 4);
		}
		request_for(req, img, GPUIDX_REQ_OP_AGG, engine, m, l.total);
		if (!submit_and_wait(req, starts, spin_ms, true))
		{
			/* (an engine that cannot add this up: the CPU one, say) */
			if (req->status == GI_ERR_UNSUPPORTED)
				img->engine = (GiEngineKind) req->engine_used;
			pfree(totals);
			pfree(list);
			return false;
		}
		img->engine = (GiEngineKind) req->engine_used;
		engine_ms += req->engine_ms;
		memcpy(totals, buf + l.cols, sizeof(GiAggColumn) * ncols);
		added += hdr->counted;
		nf = hdr->nfetch;
		if (nlist + nf > cap)
		{
			cap = Max(cap * 2, nlist + nf);
			list = repalloc_huge(list, sizeof(uint64) * cap);
		}
		if (nf <= room)
			memcpy(list + nlist, buf + l.fetch, sizeof(uint64) * nf);
		else if (!read_kept_fetch(req, img, engine, starts, list + nlist, nf))
		{
			pfree(totals);
			pfree(list);
			return false;
		}
		nlist += nf;
		CHECK_FOR_INTERRUPTS();
	}
	memcpy(cols, totals, sizeof(GiAggColumn) * ncols);
	pfree(totals);
	*counted += added;
	*fetch = list;
	*nfetch = nlist;
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	elog(DEBUG2, "gpuidx service: %lld ranges added up by the %s engine in %.3f ms of a %.3f ms round trip, %lld heap fetches",
		 (long long) nranges, gi_engine_name(img->engine), engine_ms,
		 INSTR_TIME_GET_MILLISEC(t1), (long long) nlist);
	return true;
}

/*
 * The engine a batch asks the service for, per gpuidx.engine and what the
 * service found: a backend in service mode never probes the device itself.
 */
GiEngineKind
gpuidx_service_choose_engine(void)
{
	GpuidxServiceShared *s = gpuidx_service_shared;
	int			waited;

	if (gpuidx_engine_setting == GPUIDX_ENGINE_CPU)
		return GI_ENGINE_CPU;
	/* The service looks for a device as it starts: give it a few seconds. */
	for (waited = 0; !s->gpu_probed && waited < 5000; waited += 10)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (s->gpu_probed && s->gpu_usable)
		return GI_ENGINE_GPU;
	if (gpuidx_engine_setting == GPUIDX_ENGINE_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gpuidx.engine is \"gpu\" but the gpuidx service has no usable GPU"),
				 s->gpu_probed ? errdetail("%s", s->gpu_reason) :
				 errdetail("The gpuidx service has not started."),
				 errhint("SET gpuidx.engine = auto to fall back to the CPU engine.")));
	return GI_ENGINE_CPU;
}
