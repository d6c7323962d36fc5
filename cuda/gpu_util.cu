/*
 * gpu_util.cu - the GPU engine's device utilities (gpu_util.cuh): the CUDA
 * error mapper, device discovery, each thread's query stream, grid sizes,
 * pinned double-buffered host <-> device copies and the CUB pair sort.
 * Calls nothing else in cuda/.
 */
#include "gpu_util.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <mutex>
#include <vector>
#include <cstdlib>
#include <cstring>

#define STAGE_BYTES		(32u << 20) /* one pinned staging slot */

/* ------------------------------------------------------------------------ */
/* Errors and device buffers                                                 */
/* ------------------------------------------------------------------------ */

/* Map a CUDA error to a GiStatus and a message naming the call. */
GiStatus
gi_gpu_fail(GiError *err, cudaError_t e, const char *what)
{
	GiStatus	st = (e == cudaErrorMemoryAllocation) ? GI_ERR_DEVICE_OOM : GI_ERR_DEVICE;

	(void) cudaGetLastError();	/* clear a non-sticky error */
	return gi_set_error(err, st, "CUDA %s failed: %s (%s)", what,
						cudaGetErrorString(e), cudaGetErrorName(e));
}

/* cudaMalloc into a DevBuf; the message names the size and the purpose. */
GiStatus
gi_gpu_alloc(DevBuf &b, size_t bytes, const char *what, GiError *err)
{
	cudaError_t e;

	if (bytes == 0)
		return GI_OK;
	e = cudaMalloc(&b.p, bytes);
	if (e != cudaSuccess)
	{
		b.p = nullptr;
		(void) cudaGetLastError();
		return gi_set_error(err, e == cudaErrorMemoryAllocation ? GI_ERR_DEVICE_OOM : GI_ERR_DEVICE,
							"CUDA cudaMalloc of %zu bytes for %s failed: %s",
							bytes, what, cudaGetErrorString(e));
	}
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Device discovery                                                          */
/* ------------------------------------------------------------------------ */

typedef struct DevState
{
	bool		probed;
	bool		ok;
	int			device;
	int			sms;
	int			cc_major;
	size_t		l2_bytes;
	size_t		total_mem;
	char		name[64];
	char		why[256];
} DevState;

static DevState g_dev;

static std::mutex g_dev_lock;

/* The probe's settled answer (1 usable, -1 not, 0 not probed yet): every
 * engine call asks, and after the first answer needs no lock. */
static std::atomic<int> g_dev_settled(0);

/*
 * Initialize CUDA lazily and remember what the device offers.  Threads that
 * race to the first probe take turns (dev_probe reads the settled state).
 */
static bool
dev_probe_locked(void)
{
	int			count = 0;
	cudaError_t e;
	cudaDeviceProp prop;
	std::lock_guard<std::mutex> guard(g_dev_lock);

	if (g_dev.probed)
		return g_dev.ok;
	g_dev.probed = true;
	e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess)
	{
		snprintf(g_dev.why, sizeof(g_dev.why), "no usable GPU: cudaGetDeviceCount failed: %s (%s)",
				 cudaGetErrorString(e), cudaGetErrorName(e));
		(void) cudaGetLastError();
		return false;
	}
	if (count <= 0)
	{
		snprintf(g_dev.why, sizeof(g_dev.why), "no GPU found (cudaGetDeviceCount returned 0)");
		return false;
	}
	if ((e = cudaGetDevice(&g_dev.device)) != cudaSuccess ||
		(e = cudaGetDeviceProperties(&prop, g_dev.device)) != cudaSuccess)
	{
		snprintf(g_dev.why, sizeof(g_dev.why), "cudaGetDeviceProperties failed: %s",
				 cudaGetErrorString(e));
		(void) cudaGetLastError();
		return false;
	}
	if (prop.major < 8)
	{
		snprintf(g_dev.why, sizeof(g_dev.why),
				 "GPU %.64s has compute capability %d.%d; gpuidx needs 8.0 or later",
				 prop.name, prop.major, prop.minor);
		return false;
	}
	/* Make sure a context can be created and the kernels load. */
	if ((e = cudaFree(0)) != cudaSuccess)
	{
		snprintf(g_dev.why, sizeof(g_dev.why), "CUDA context creation failed: %s",
				 cudaGetErrorString(e));
		(void) cudaGetLastError();
		return false;
	}
	g_dev.sms = prop.multiProcessorCount;
	g_dev.cc_major = prop.major;
	g_dev.l2_bytes = prop.l2CacheSize;
	g_dev.total_mem = prop.totalGlobalMem;
	snprintf(g_dev.name, sizeof(g_dev.name), "%.*s", (int) sizeof(g_dev.name) - 1, prop.name);
	g_dev.ok = true;
	return true;
}

/* Is a GPU usable?  The first call probes (dev_probe_locked). */
static bool
dev_probe(void)
{
	int			settled = g_dev_settled.load(std::memory_order_acquire);

	if (settled != 0)
		return settled > 0;

	bool		ok = dev_probe_locked();

	g_dev_settled.store(ok ? 1 : -1, std::memory_order_release);
	return ok;
}

/* Fail with GI_ERR_NO_DEVICE unless a GPU is usable. */
static GiStatus
need_device(GiError *err)
{
	if (!dev_probe())
		return gi_set_error(err, GI_ERR_NO_DEVICE, "%s", g_dev.why);
	return GI_OK;
}

/* Is a GPU usable?  Initializes CUDA on the first call. */
bool
gi_gpu_device_probe(char *why, size_t whylen)
{
	bool		ok = dev_probe();

	if (!ok && why && whylen)
		snprintf(why, whylen, "%s", g_dev.why);
	return ok;
}

/* Fail with GI_ERR_NO_DEVICE unless a GPU is usable (gpu_util.cuh). */
GiStatus
gi_gpu_need_device(GiError *err)
{
	return need_device(err);
}

/* A thread's query stream; destroyed with the thread. */
struct ThreadStream
{
	cudaStream_t stream = nullptr;
	~ThreadStream()
	{
		if (stream)
			(void) cudaStreamDestroy(stream);
	}
};

static thread_local ThreadStream t_query_stream;

/* The calling thread's query stream, made on first use (gpu_util.cuh). */
GiStatus
gi_gpu_thread_stream(cudaStream_t *out, GiError *err)
{
	CKS(need_device(err));
	if (t_query_stream.stream == nullptr)
	{
		cudaStream_t s = nullptr;

		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		t_query_stream.stream = s;
	}
	*out = t_query_stream.stream;
	return GI_OK;
}

/* Name of the device (after a successful probe). */
const char *
gi_gpu_device_name(void)
{
	return g_dev.name;
}

/* Multiprocessors of the device (after a successful probe). */
int
gi_gpu_sm_count(void)
{
	return g_dev.sms > 0 ? g_dev.sms : 1;
}

/* L2 cache bytes of the device (after a successful probe). */
size_t
gi_gpu_l2_bytes(void)
{
	return g_dev.l2_bytes;
}

/* Grid size for a grid-stride elementwise kernel over n items. */
unsigned
gi_gpu_grid(uint64_t n, unsigned block)
{
	uint64_t	want = (n + block - 1) / block;
	uint64_t	cap = (uint64_t) g_dev.sms * 32;

	if (want < 1)
		want = 1;
	return (unsigned) (want < cap ? want : cap);
}

/* Grid for a grid-stride kernel over n items: at most what fits at once. */
unsigned
gi_gpu_grid_resident(uint64_t n, unsigned block)
{
	uint64_t	want = (n + block - 1) / block;
	uint64_t	cap = (uint64_t) gi_gpu_sm_count() * (2048 / block);

	if (want < 1)
		want = 1;
	return (unsigned) (want < cap ? want : cap);
}

/* ------------------------------------------------------------------------ */
/* Pinned staging for host <-> device copies                                 */
/* ------------------------------------------------------------------------ */

typedef struct Staging
{
	void	   *buf[2];
	cudaEvent_t ev[2];
} Staging;

/*
 * The pinned slot pairs: a copy takes a free pair for its duration, so
 * threads copying at once (the service's workers, engine.h) each have their
 * own; a pair's events make its next user wait for copies still in flight.
 * Pairs are made on demand (as many as copies ever ran at once) and freed
 * at process exit.
 */
static std::mutex g_stage_lock;
static std::vector<Staging *> g_stage_free;
static std::vector<Staging *> g_stage_all;

/* Free one pair's pinned slots and events. */
static void
staging_destroy(Staging *st)
{
	for (int s = 0; s < 2; s++)
	{
		if (st->buf[s])
			cudaFreeHost(st->buf[s]);
		if (st->ev[s])
			cudaEventDestroy(st->ev[s]);
	}
	delete st;
}

/* Free every pair (at process exit). */
static void
staging_release(void)
{
	std::lock_guard<std::mutex> guard(g_stage_lock);

	for (Staging *st : g_stage_all)
		staging_destroy(st);
	g_stage_all.clear();
	g_stage_free.clear();
}

/* Take a free pair, making one if none is free. */
static GiStatus
staging_take(Staging **out, GiError *err)
{
	static bool registered = false;
	Staging    *st;

	{
		std::lock_guard<std::mutex> guard(g_stage_lock);

		if (!registered)
		{
			atexit(staging_release);	/* runs before the CUDA runtime's own teardown */
			registered = true;
		}
		if (!g_stage_free.empty())
		{
			*out = g_stage_free.back();
			g_stage_free.pop_back();
			return GI_OK;
		}
	}
	st = new (std::nothrow) Staging();
	if (st == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for a staging slot");
	for (int s = 0; s < 2; s++)
	{
		void	   *buf = NULL;
		cudaError_t e = cudaHostAlloc(&buf, STAGE_BYTES, cudaHostAllocDefault);

		st->buf[s] = e == cudaSuccess ? buf : NULL;
		if (e == cudaSuccess)
		{
			cudaEvent_t ev = NULL;

			e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
			st->ev[s] = e == cudaSuccess ? ev : NULL;
		}
		if (e != cudaSuccess)
		{
			staging_destroy(st);
			return gi_gpu_fail(err, e, "allocating a pinned staging slot");
		}
	}
	{
		std::lock_guard<std::mutex> guard(g_stage_lock);

		g_stage_all.push_back(st);
	}
	*out = st;
	return GI_OK;
}

/* Give a pair back (its copies may still be in flight: its events tell). */
static void
staging_give(Staging *st)
{
	std::lock_guard<std::mutex> guard(g_stage_lock);

	g_stage_free.push_back(st);
}

/* Holds a pair for the length of one copy. */
struct StagingGuard
{
	Staging    *st = nullptr;
	~StagingGuard()
	{
		if (st)
			staging_give(st);
	}
};

/*
 * Upload n int64 host values to the device as width-byte integers through
 * the pinned slots, double-buffered: the host fills one slot while the other
 * is in flight.  Narrowing to int32 checks the range (*out_of_range).
 */
GiStatus
gi_gpu_upload(void *dst, const int64_t *src, size_t n, int width,
			  cudaStream_t stream, bool *out_of_range, GiError *err)
{
	size_t		per = STAGE_BYTES / width;
	bool		bad = false;
	StagingGuard sg;
	Staging    *stage;

	CKS(staging_take(&sg.st, err));
	stage = sg.st;
	for (size_t off = 0, c = 0; off < n; off += per, c++)
	{
		int			s = (int) (c & 1);
		size_t		cnt = std::min(per, n - off);

		CK(cudaEventSynchronize(stage->ev[s]));
		if (width == 8)
			memcpy(stage->buf[s], src + off, cnt * 8);
		else
		{
			int32_t    *d = (int32_t *) stage->buf[s];
			const int64_t *p = src + off;
			int64_t		acc = 0;

			for (size_t i = 0; i < cnt; i++)
			{
				d[i] = (int32_t) p[i];
				acc |= p[i] ^ (int64_t) d[i];
			}
			bad |= acc != 0;
		}
		CK(cudaMemcpyAsync((char *) dst + off * width, stage->buf[s], cnt * width,
						   cudaMemcpyHostToDevice, stream));
		CK(cudaEventRecord(stage->ev[s], stream));
	}
	if (out_of_range)
		*out_of_range = bad;
	return GI_OK;
}

/*
 * Download n width-byte integers from the device into int64 host values
 * (sign-extending int32), double-buffered through the pinned slots.
 */
GiStatus
gi_gpu_download(int64_t *dst, const void *src, size_t n, int width,
				cudaStream_t stream, GiError *err)
{
	size_t		per = STAGE_BYTES / 8;	/* widened size must fit too */
	size_t		prev_off = 0,
				prev_cnt = 0;
	int			prev_s = -1;
	StagingGuard sg;
	Staging    *stage;

	CKS(staging_take(&sg.st, err));
	stage = sg.st;
	for (size_t off = 0, c = 0;; off += per, c++)
	{
		int			s = (int) (c & 1);
		size_t		cnt = off < n ? std::min(per, n - off) : 0;

		if (cnt)
		{
			CK(cudaEventSynchronize(stage->ev[s]));
			CK(cudaMemcpyAsync(stage->buf[s], (const char *) src + off * width, cnt * width,
							   cudaMemcpyDeviceToHost, stream));
			CK(cudaEventRecord(stage->ev[s], stream));
		}
		if (prev_s >= 0)
		{
			CK(cudaEventSynchronize(stage->ev[prev_s]));
			if (width == 8)
				memcpy(dst + prev_off, stage->buf[prev_s], prev_cnt * 8);
			else
			{
				const int32_t *q = (const int32_t *) stage->buf[prev_s];

				for (size_t i = 0; i < prev_cnt; i++)
					dst[prev_off + i] = q[i];
			}
		}
		if (!cnt)
			break;
		prev_s = s, prev_off = off, prev_cnt = cnt;
	}
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Sorting pairs                                                             */
/* ------------------------------------------------------------------------ */

/* Set *flag if two equal keys carry payloads out of order. */
template <class K>
__global__ void
tie_order_flag_kernel(const K *k, const uint64_t *pay, uint64_t n, int *flag)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x + 1; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		if (k[i - 1] == k[i] && pay[i - 1] > pay[i])
		{
			*flag = 1;
			return;
		}
}

/*
 * Sort n (key, payload) pairs on the device by (key, payload) into
 * keys_out (and pay_out when not NULL).  CUB's radix sort is
 * stable: pairs whose equal keys already carry ascending payloads (heap
 * order, the usual case) need one key sort; otherwise a payload sort first.
 */
template <class K>
static GiStatus
sort_pairs(uint64_t n, cudaStream_t st, const K *keys_in, const uint64_t *pay_in,
		   uint64_t *pay_out, K *keys_out, GiError *err)
{
	DevBuf		temp,
				flag,
				tk,
				tp;
	size_t		tb = 0,
				tb2 = 0;
	int			h = 0;

	if (n == 0)
		return GI_OK;
	if (!pay_in || !pay_out)
	{
		CK(cub::DeviceRadixSort::SortKeys(nullptr, tb, keys_in, keys_out, (int64_t) n, 0,
										  (int) sizeof(K) * 8, st));
		CKS(gi_gpu_alloc(temp, tb, "radix sort scratch", err));
		CK(cub::DeviceRadixSort::SortKeys(temp.p, tb, keys_in, keys_out, (int64_t) n, 0,
										  (int) sizeof(K) * 8, st));
		return GI_OK;
	}
	CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, keys_in, keys_out, pay_in, pay_out,
									   (int64_t) n, 0, (int) sizeof(K) * 8, st));
	CKS(gi_gpu_alloc(temp, tb, "radix sort scratch", err));
	CK(cub::DeviceRadixSort::SortPairs(temp.p, tb, keys_in, keys_out, pay_in, pay_out,
									   (int64_t) n, 0, (int) sizeof(K) * 8, st));
	CKS(gi_gpu_alloc(flag, sizeof(int), "a flag", err));
	CK(cudaMemsetAsync(flag.p, 0, sizeof(int), st));
	tie_order_flag_kernel<K><<<gi_gpu_grid(n, 256), 256, 0, st>>>(keys_out, pay_out, n, (int *) flag.p);
	CKL("tie_order_flag_kernel");
	CK(cudaMemcpyAsync(&h, flag.p, sizeof(int), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	if (!h)
		return GI_OK;
	/* Equal keys with payloads out of order: sort by payload, then key. */
	CKS(gi_gpu_alloc(tk, n * sizeof(K), "sort scratch keys", err));
	CKS(gi_gpu_alloc(tp, n * sizeof(uint64_t), "sort scratch payloads", err));
	CK(cub::DeviceRadixSort::SortPairs(nullptr, tb2, pay_in, (uint64_t *) tp.p, keys_in,
									   (K *) tk.p, (int64_t) n, 0, 64, st));
	if (tb2 > tb)
	{
		cudaFree(temp.release());
		CKS(gi_gpu_alloc(temp, tb2, "radix sort scratch", err));
		tb = tb2;
	}
	CK(cub::DeviceRadixSort::SortPairs(temp.p, tb, pay_in, (uint64_t *) tp.p, keys_in,
									   (K *) tk.p, (int64_t) n, 0, 64, st));
	CK(cub::DeviceRadixSort::SortPairs(temp.p, tb, (const K *) tk.p, keys_out,
									   (const uint64_t *) tp.p, pay_out, (int64_t) n, 0,
									   (int) sizeof(K) * 8, st));
	CK(cudaStreamSynchronize(st));
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */
/* ------------------------------------------------------------------------ */

/* Sort pairs for the key width (gpu_util.cuh). */
GiStatus
gi_gpu_sort_pairs(int kw, size_t n, cudaStream_t stream, const void *keys_in,
				  const uint64_t *pay_in, uint64_t *pay_out, void *keys_out,
				  GiError *err)
{
	if (kw == 4)
		return sort_pairs<int32_t>(n, stream, (const int32_t *) keys_in, pay_in, pay_out,
								   (int32_t *) keys_out, err);
	return sort_pairs<int64_t>(n, stream, (const int64_t *) keys_in, pay_in, pay_out,
							   (int64_t *) keys_out, err);
}

/* Build from host keys (gpu_util.cuh). */
GiStatus
gi_gpu_build_from_host(cudaStream_t st, int kw, int key_bytes, const int64_t *keys,
					   const uint64_t *payloads, size_t n, bool sorted,
					   int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
					   const GiGpuFinish &finish, double t0, GiTimings *t, GiError *err)
{
	DevBuf		kin,
				ks,
				pin,
				pout;
	double		t1,
				t2,
				t3,
				t4;
	bool		bad = false;
	bool		want_pay = !sorted && payloads && sorted_payloads_out;

	CKS(gi_gpu_alloc(ks, n * kw, "the sorted keys", err));
	if (!sorted)
		CKS(gi_gpu_alloc(kin, n * kw, "the unsorted keys", err));
	if (want_pay)
	{
		CKS(gi_gpu_alloc(pin, n * 8, "the unsorted payloads", err));
		CKS(gi_gpu_alloc(pout, n * 8, "the sorted payloads", err));
	}
	CKS(gi_gpu_upload(sorted ? ks.p : kin.p, keys, n, kw, st, &bad, err));
	if (want_pay)
		CKS(gi_gpu_upload(pin.p, (const int64_t *) payloads, n, 8, st, NULL, err));
	CK(cudaStreamSynchronize(st));
	if (bad)
		return gi_set_error(err, GI_ERR_INVALID, "a key does not fit in %d bytes", key_bytes);
	t1 = gi_now_ms();
	if (!sorted)
	{
		CKS(gi_gpu_sort_pairs(kw, n, st, kin.p, (const uint64_t *) pin.p, (uint64_t *) pout.p,
							  ks.p, err));
		CK(cudaStreamSynchronize(st));
		kin.drop();
		pin.drop();
	}
	t2 = sorted ? t1 : gi_now_ms();
	CKS(finish(ks.p, sorted, err));
	t3 = gi_now_ms();
	if (!sorted && sorted_keys_out)
		CKS(gi_gpu_download(sorted_keys_out, ks.p, n, kw, st, err));
	if (want_pay)				/* (without payloads there are none to return) */
		CKS(gi_gpu_download((int64_t *) sorted_payloads_out, pout.p, n, 8, st, err));
	t4 = gi_now_ms();
	t->transfer_ms = (t1 - t0) + (t4 - t3);
	t->sort_ms = t2 - t1;
	t->build_ms = t3 - t2;
	t->total_ms = t4 - t0;
	return GI_OK;
}

/* Build from device-resident keys (gpu_util.cuh). */
GiStatus
gi_gpu_build_from_device(cudaStream_t st, int kw, const void *d_keys,
						 const uint64_t *d_payloads, size_t n, bool sorted,
						 uint64_t *d_payloads_out, const GiGpuFinish &finish,
						 double t0, GiTimings *t, GiError *err)
{
	DevBuf		ks;
	double		t1;

	if (sorted)
	{
		if (d_payloads && d_payloads_out && n)
			CK(cudaMemcpyAsync(d_payloads_out, d_payloads, n * 8, cudaMemcpyDeviceToDevice, st));
	}
	else
	{
		CKS(gi_gpu_alloc(ks, n * kw, "the sorted keys", err));
		CKS(gi_gpu_sort_pairs(kw, n, st, d_keys, d_payloads, d_payloads_out, ks.p, err));
	}
	CK(cudaStreamSynchronize(st));
	t1 = gi_now_ms();
	CKS(finish(sorted ? d_keys : ks.p, sorted, err));
	t->sort_ms = sorted ? 0 : t1 - t0;
	t->build_ms = gi_now_ms() - t1;
	t->total_ms = gi_now_ms() - t0;
	return GI_OK;
}
