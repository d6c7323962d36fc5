/*
 * gpu_engine.cu - the GPU engine's entry points (engine_impl.h and
 * gpu_engine.cuh), dispatched on the image's structure to the B+ tree
 * (gpu_btree.cu) or the van Emde Boas tree (gpu_veb.cu); the twin of
 * engine/cpu_engine.c.  Also the payload copy kept for gi_image_select and
 * the selection itself: the query here, the hit mask and SPACE compaction
 * in gpu_space.cu.  Insertion (gi_gpu_insert, gi_gpu_dev_insert...) is the
 * B+ tree's alone and lives in gpu_insert.cu, as gi_cpu_insert does in
 * engine/cpu_insert.c.
 *
 * The arrows go one way: this file calls the structure files and
 * gpu_util.cu; none of them calls back.
 */
#include "gpu_btree.cuh"
#include "gpu_space.cuh"
#include "gpu_veb.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#define HOST_QCHUNK		(1u << 24)	/* probes per host round trip */

/* ------------------------------------------------------------------------ */
/* engine_impl.h                                                             */
/* ------------------------------------------------------------------------ */

/* Is a GPU usable?  Initializes CUDA on the first call. */
GI_EXPORT bool
gi_gpu_probe(char *why, size_t whylen)
{
	return gi_gpu_device_probe(why, whylen);
}

/* Page-lock host memory the caller reuses for batches (engine.h). */
GI_EXPORT bool
gi_gpu_host_pin(void *p, size_t size)
{
	if (cudaHostRegister(p, size, cudaHostRegisterDefault) == cudaSuccess)
		return true;
	(void) cudaGetLastError();	/* not sticky: forget it */
	return false;
}

/* Undo gi_gpu_host_pin. */
GI_EXPORT void
gi_gpu_host_unpin(void *p)
{
	if (cudaHostUnregister(p) != cudaSuccess)
		(void) cudaGetLastError();
}

/*
 * Whether n bytes at host address p are page-locked (gi_gpu_host_pin, or
 * cudaHostAlloc'd): the DMA engine can copy them directly, without the
 * staging buffers.
 */
static bool
host_pinned(const void *p, size_t n)
{
	cudaPointerAttributes a;

	if (p == NULL || n == 0)
		return false;
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	if (a.type != cudaMemoryTypeHost)
		return false;
	/* the range's last byte too: a registration may end inside the array */
	if (cudaPointerGetAttributes(&a, (const char *) p + n - 1) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return a.type == cudaMemoryTypeHost;
}

/* Build from sorted host keys (payloads are kept by engine.c, not here). */
GI_EXPORT GiStatus
gi_gpu_build(const GiBuildParams *params, const int64_t *keys,
			 const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	(void) payloads;			/* not needed by any query op on the device */
	*out = NULL;
	if (params->structure == GI_STRUCT_VEB)
		return gi_gpu_veb_build(params, keys, n, out, err);
	return gi_gpu_btree_build(params, keys, n, out, err);
}

/* Build from unsorted host pairs: the sort runs on the device. */
GI_EXPORT GiStatus
gi_gpu_build_unsorted(const GiBuildParams *params, const int64_t *keys,
					  const uint64_t *payloads, size_t n,
					  int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
					  GiImage **out, GiError *err)
{
	*out = NULL;
	if (params->structure == GI_STRUCT_VEB)
		return gi_gpu_veb_build_unsorted(params, keys, payloads, n, sorted_keys_out,
										 sorted_payloads_out, out, err);
	return gi_gpu_btree_build_unsorted(params, keys, payloads, n, sorted_keys_out,
									   sorted_payloads_out, out, err);
}

/* Free an image of either structure; NULL is fine. */
GI_EXPORT void
gi_gpu_free(GiImage *image)
{
	if (image && image->structure == GI_STRUCT_VEB)
		gi_gpu_veb_free(image);
	else
		gi_gpu_btree_free(image);
}

/* Device room for a batch of count probes (and upper bounds when hi) and
 * their first / last results. */
static GiStatus
alloc_batch(size_t count, bool hi, DevBuf &dp, DevBuf &dh, DevBuf &df, DevBuf &dl,
			GiError *err)
{
	CKS(gi_gpu_alloc(dp, count * sizeof(int64_t), "the probes", err));
	if (hi)
		CKS(gi_gpu_alloc(dh, count * sizeof(int64_t), "the upper bounds", err));
	CKS(gi_gpu_alloc(df, count * sizeof(uint64_t), "the results", err));
	CKS(gi_gpu_alloc(dl, count * sizeof(uint64_t), "the results", err));
	return GI_OK;
}

/* Frees query scratch made for one call. */
struct ScratchGuard
{
	GiGpuScratch *s = nullptr;
	~ScratchGuard() { gi_gpu_dev_scratch_free(s); }
};

/*
 * A thread's query buffers, kept from one gi_gpu_query to the next: the
 * probes, upper bounds and results of a chunk and the B+ tree's scratch
 * (for one key width), grown when a batch needs more.  cudaFree waits for
 * the whole device, so allocating and freeing ten buffers a query made
 * every query wait for the other threads' (the service's query threads)
 * and added their cost to each small batch.  Batches of more than
 * ARENA_MAX_PROBES use buffers of their own, freed after the call, so a
 * thread keeps at most a few MB.  Freed when the thread exits (a
 * thread_local, as the thread's stream).
 */
#define ARENA_MAX_PROBES	(1u << 18)

struct QueryArena
{
	DevBuf		dp,
				dh,
				df,
				dl;
	size_t		cap = 0;		/* probes dp, dh, df, dl hold */
	GiGpuScratch *scratch = nullptr;
	size_t		scratch_cap = 0;
	int			scratch_kw = 0; /* key width the scratch is for */
	~QueryArena() { gi_gpu_dev_scratch_free(scratch); }
};

static thread_local QueryArena t_arena;

/*
 * Point *dp.. *dl and *scratch at room for chunks of cap probes: the
 * thread's arena when cap is small, else the call's own buffers (owned by
 * the caller's DevBufs and ScratchGuard).
 */
static GiStatus
query_buffers(const GiImage *image, size_t cap, bool hi, DevBuf &own_p, DevBuf &own_h,
			  DevBuf &own_f, DevBuf &own_l, ScratchGuard &own_s, void **dp, void **dh,
			  void **df, void **dl, GiGpuScratch **scratch, GiError *err)
{
	QueryArena *a = &t_arena;
	int			kw = image->key_bytes <= 4 ? 4 : 8;

	if (cap > ARENA_MAX_PROBES)
	{
		CKS(gi_gpu_dev_scratch_create(image, cap, &own_s.s, err));
		CKS(alloc_batch(cap, hi, own_p, own_h, own_f, own_l, err));
		*dp = own_p.p;
		*dh = own_h.p;
		*df = own_f.p;
		*dl = own_l.p;
		*scratch = own_s.s;
		return GI_OK;
	}
	if (a->cap < cap)
	{							/* the arena always holds range ends (dh) too */
		size_t		want = std::max<size_t>(cap, 4096);

		a->dp.drop();
		a->dh.drop();
		a->df.drop();
		a->dl.drop();
		a->cap = 0;
		CKS(alloc_batch(want, true, a->dp, a->dh, a->df, a->dl, err));
		a->cap = want;
	}
	if (image->structure != GI_STRUCT_VEB &&
		(a->scratch == NULL || a->scratch_cap < cap || a->scratch_kw != kw))
	{
		size_t		want = std::max<size_t>(cap, 4096);

		gi_gpu_dev_scratch_free(a->scratch);
		a->scratch = NULL;
		a->scratch_cap = 0;
		CKS(gi_gpu_dev_scratch_create(image, want, &a->scratch, err));
		a->scratch_cap = want;
		a->scratch_kw = kw;
	}
	*dp = a->dp.p;
	*dh = a->dh.p;
	*df = a->df.p;
	*dl = a->dl.p;
	*scratch = image->structure == GI_STRUCT_VEB ? NULL : a->scratch;
	return GI_OK;
}

/*
 * Answer a device-resident batch of nprobes > 0 on stream st, the call's
 * timings into *t: the one query path of both structures.  It only reads
 * the image; the stream, scratch, results and timings are the caller's, so
 * threads may run it on one image at once (engine.h).
 */
static GiStatus
dev_query(const GiImage *image, GiOp op, const int64_t *d_probes, const int64_t *d_hi,
		  size_t nprobes, uint64_t *d_first, uint64_t *d_last, GiGpuScratch *scratch,
		  cudaStream_t st, GiTimings *t, GiError *err)
{
	if (image->structure == GI_STRUCT_VEB)
		return gi_gpu_veb_dev_query(image, op, d_probes, d_hi, nprobes, d_first, d_last,
									st, t, err);
	return gi_gpu_btree_dev_query(image, op, d_probes, d_hi, nprobes, d_first, d_last,
								  scratch, st, t, err);
}

/*
 * Answer a host batch on an image of either structure: chunks of up to
 * HOST_QCHUNK probes go up through the pinned slots, are answered on the
 * device (dev_query) and come back in the caller's order.  Everything runs
 * on the calling thread's stream with the call's own device buffers, and the
 * timings are added up here and stored once under the engine-wide lock, as
 * the CPU engine does: threads may query one image at once.
 */
GI_EXPORT GiStatus
gi_gpu_query(GiImage *image, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			 uint64_t *last, GiError *err)
{
	cudaStream_t stream;
	ScratchGuard own_s;
	DevBuf		own_p,
				own_h,
				own_f,
				own_l;
	void	   *dp,
			   *dh,
			   *df,
			   *dl;
	GiGpuScratch *scratch;
	GiTimings	timings = {0},
				chunk;
	double		t0 = gi_now_ms();
	size_t		cap;
	bool		direct;

	CKS(gi_gpu_need_device(err));
	if (image->n == 0)
	{
		memset(first, 0, nprobes * sizeof(uint64_t));
		memset(last, 0, nprobes * sizeof(uint64_t));
		timings.total_ms = gi_now_ms() - t0;
		gi_timings_store(&image->last_query, &timings);
		return GI_OK;
	}
	CKS(gi_gpu_thread_stream(&stream, err));
	cap = std::min<size_t>(nprobes, HOST_QCHUNK);
	CKS(query_buffers(image, cap, probes_hi != NULL, own_p, own_h, own_f, own_l, own_s,
					  &dp, &dh, &df, &dl, &scratch, err));
	/* page-locked arrays (gi_host_pin) are copied directly, not staged */
	direct = host_pinned(probes, nprobes * 8) &&
		(probes_hi == NULL || host_pinned(probes_hi, nprobes * 8)) &&
		host_pinned(first, nprobes * 8) && host_pinned(last, nprobes * 8);
	for (size_t off = 0; off < nprobes; off += cap)
	{
		size_t		cnt = std::min(cap, nprobes - off);
		double		a = gi_now_ms();

		if (direct)
		{
			CK(cudaMemcpyAsync(dp, probes + off, cnt * 8, cudaMemcpyHostToDevice, stream));
			if (probes_hi)
				CK(cudaMemcpyAsync(dh, probes_hi + off, cnt * 8, cudaMemcpyHostToDevice, stream));
		}
		else
		{
			CKS(gi_gpu_upload(dp, probes + off, cnt, 8, stream, NULL, err));
			if (probes_hi)
				CKS(gi_gpu_upload(dh, probes_hi + off, cnt, 8, stream, NULL, err));
		}
		CK(cudaStreamSynchronize(stream));
		timings.transfer_ms += gi_now_ms() - a;
		CKS(dev_query(image, op, (const int64_t *) dp, probes_hi ? (const int64_t *) dh : NULL,
					  cnt, (uint64_t *) df, (uint64_t *) dl, scratch, stream, &chunk, err));
		timings.sort_ms += chunk.sort_ms;
		timings.search_ms += chunk.search_ms;
		a = gi_now_ms();
		if (direct)
		{
			CK(cudaMemcpyAsync(first + off, df, cnt * 8, cudaMemcpyDeviceToHost, stream));
			CK(cudaMemcpyAsync(last + off, dl, cnt * 8, cudaMemcpyDeviceToHost, stream));
			CK(cudaStreamSynchronize(stream));
		}
		else
		{
			CKS(gi_gpu_download((int64_t *) first + off, df, cnt, 8, stream, err));
			CKS(gi_gpu_download((int64_t *) last + off, dl, cnt, 8, stream, err));
		}
		timings.transfer_ms += gi_now_ms() - a;
	}
	timings.total_ms = gi_now_ms() - t0;
	gi_timings_store(&image->last_query, &timings);
	return GI_OK;
}

/* Describe an image of either structure. */
GI_EXPORT void
gi_gpu_info(const GiImage *image, GiImageInfo *info)
{
	if (image->structure == GI_STRUCT_VEB)
		gi_gpu_veb_info(image, info);
	else
		gi_gpu_btree_info(image, info);
}

/* Keep a device copy of an image's payloads (engine_impl.h). */
GI_EXPORT GiStatus
gi_gpu_attach_payloads(GiImage *image, const uint64_t *payloads, size_t n,
					   GiError *err)
{
	DevBuf		d;

	image->device_payloads = NULL;
	/* an empty image keeps a one-entry copy too: that the image has payloads
	 * is told by this pointer (gi_image_insert checks it) */
	CKS(gi_gpu_alloc(d, (n ? n : 1) * sizeof(uint64_t), "the payloads", err));
	if (n)
		CK(cudaMemcpy(d.p, payloads, n * sizeof(uint64_t), cudaMemcpyHostToDevice));
	image->device_payloads = d.release();
	return GI_OK;
}

/* Release the device copy of the payloads. */
GI_EXPORT void
gi_gpu_detach_payloads(GiImage *image)
{
	if (image && image->device_payloads)
	{
		cudaFree(image->device_payloads);
		image->device_payloads = NULL;
	}
}

/*
 * Select the payloads of every entry the batch hits (engine_impl.h): the
 * probes go up, the structure answers their ranges on the device, and
 * gpu_space.cu turns the ranges into the hit payloads.  As gi_gpu_query:
 * the calling thread's stream, the call's own buffers and timings; the
 * payload copy a B+ tree refreshes after insertions is refreshed once,
 * under a lock (gi_gpu_btree_refresh_payloads).
 */
GI_EXPORT GiStatus
gi_gpu_select(GiImage *image, GiOp op, const int64_t *probes,
			  const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
			  uint64_t **out, size_t *nout, GiError *err)
{
	size_t		n = image->n;
	cudaStream_t stream;
	ScratchGuard own_s;
	DevBuf		own_p,
				own_h,
				own_f,
				own_l;
	void	   *dp,
			   *dh,
			   *df,
			   *dl;
	GiGpuScratch *scratch;
	double		t0 = gi_now_ms(),
				t_h2d,
				t_search,
				t_d2h = 0;
	GiTimings	timings;

	*out = NULL;
	*nout = 0;
	if (n == 0 || nprobes == 0)
	{
		*out = (uint64_t *) malloc(sizeof(uint64_t));
		return *out ? GI_OK : gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory");
	}
	if (image->device_payloads == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "image was built without payloads");
	/* after insertions: the rank-ordered copy, rebuilt from the leaves */
	if (image->structure == GI_STRUCT_BTREE)
		CKS(gi_gpu_btree_refresh_payloads(image, err));

	CKS(gi_gpu_thread_stream(&stream, err));
	/* the thread's arena for small batches: no allocation per call */
	CKS(query_buffers(image, nprobes, probes_hi != NULL, own_p, own_h, own_f, own_l, own_s,
					  &dp, &dh, &df, &dl, &scratch, err));
	CK(cudaMemcpyAsync(dp, probes, nprobes * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
	if (probes_hi)
		CK(cudaMemcpyAsync(dh, probes_hi, nprobes * sizeof(int64_t),
						   cudaMemcpyHostToDevice, stream));
	CK(cudaStreamSynchronize(stream));
	t_h2d = gi_now_ms() - t0;

	CKS(dev_query(image, op, (const int64_t *) dp, probes_hi ? (const int64_t *) dh : NULL,
				  nprobes, (uint64_t *) df, (uint64_t *) dl, scratch, stream, &timings, err));
	t_search = gi_now_ms() - t0 - t_h2d;

	CKS(gi_space_select_hits((const uint64_t *) df, (const uint64_t *) dl, nprobes,
							 (const uint64_t *) image->device_payloads, n, order, stream,
							 out, nout, &t_d2h, err));
	timings.transfer_ms = t_h2d + t_d2h;
	timings.search_ms = t_search;
	timings.total_ms = gi_now_ms() - t0;
	/* mask marking, compaction and the sort into heap order */
	timings.build_ms = timings.total_ms - t_h2d - t_d2h - t_search;
	gi_timings_store(&image->last_query, &timings);
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Device-resident entry points (gpu_engine.cuh)                             */
/* ------------------------------------------------------------------------ */

/* Build from device-resident keys (and payloads), sorting them if asked. */
GiStatus
gi_gpu_dev_build(const GiBuildParams *params, const void *d_keys,
				 const uint64_t *d_payloads, size_t n, bool sorted,
				 uint64_t *d_payloads_out, GiImage **out, GiError *err)
{
	*out = NULL;
	if (params->structure == GI_STRUCT_VEB)
		return gi_gpu_veb_dev_build(params, d_keys, d_payloads, n, sorted, d_payloads_out,
									out, err);
	return gi_gpu_btree_dev_build(params, d_keys, d_payloads, n, sorted, d_payloads_out,
								  out, err);
}

/* Allocate reusable query scratch for an image (the vEB needs none). */
GiStatus
gi_gpu_dev_scratch_create(const GiImage *image, size_t max_probes,
						  GiGpuScratch **out, GiError *err)
{
	CKS(gi_gpu_need_device(err));
	if (image->structure == GI_STRUCT_VEB)
	{
		*out = NULL;
		return GI_OK;
	}
	return gi_gpu_btree_scratch_create(image, max_probes, out, err);
}

/* Free query scratch; NULL is fine. */
void
gi_gpu_dev_scratch_free(GiGpuScratch *s)
{
	gi_gpu_btree_scratch_free(s);
}

/*
 * Answer a device-resident batch on an image of either structure, on the
 * calling thread's stream; the timings are stored under the engine-wide lock.
 */
GiStatus
gi_gpu_dev_query(GiImage *image, GiOp op, const int64_t *d_probes,
				 const int64_t *d_hi, size_t nprobes, uint64_t *d_first,
				 uint64_t *d_last, GiGpuScratch *scratch, GiError *err)
{
	cudaStream_t stream;
	GiTimings	timings;

	gi_clear_error(err);
	CKS(gi_gpu_need_device(err));
	if ((op == GI_OP_RANGE) != (d_hi != NULL))
		return gi_set_error(err, GI_ERR_INVALID, "upper bounds go with range queries only");
	if (nprobes == 0)
		return GI_OK;
	CKS(gi_gpu_thread_stream(&stream, err));
	CKS(dev_query(image, op, d_probes, d_hi, nprobes, d_first, d_last, scratch, stream,
				  &timings, err));
	gi_timings_store(&image->last_query, &timings);
	return GI_OK;
}

/* The stream an image's builds and insertions run on (not its queries). */
cudaStream_t
gi_gpu_dev_stream(const GiImage *image)
{
	if (image->structure == GI_STRUCT_VEB)
		return gi_gpu_veb_stream(image);
	return gi_gpu_btree_stream(image);
}
