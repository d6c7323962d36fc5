/*
 * select.cu - gi_image_select on the GPU engine: a batch's hit ranges become
 * a hit mask over the image's entries, SPACE compaction (space.cu) turns the
 * mask into the dense list of hit payloads, optionally sorted (CUB) into
 * heap order.  The payloads live on the device beside the image.
 */
#include "gpu_btree_int.cuh"
#include "space.cuh"

#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <stdlib.h>

#define GI_SELECT_EXPORT extern "C" __attribute__((visibility("default")))

/* Turn a CUDA error into a GiError naming the call. */
static GiStatus
select_cuda_error(GiError *err, cudaError_t rc, const char *what)
{
	return gi_set_error(err, rc == cudaErrorMemoryAllocation ? GI_ERR_DEVICE_OOM : GI_ERR_DEVICE,
						"%s: %s", what, cudaGetErrorString(rc));
}

#define SEL_CK(call) \
	do { cudaError_t rc_ = (call); \
		 if (rc_ != cudaSuccess) { st = select_cuda_error(err, rc_, #call); goto done; } } while (0)

/* Set the mask bits of every probe's range [first, last); one warp a probe. */
__global__ void
mark_hit_ranges(const uint64_t *first, const uint64_t *last, size_t nprobes,
				unsigned long long *mask)
{
	size_t		p = ((size_t) blockIdx.x * blockDim.x + threadIdx.x) / 32;
	int			lane = threadIdx.x & 31;

	if (p >= nprobes)
		return;
	uint64_t	f = first[p],
				l = last[p];

	if (f >= l)
		return;
	size_t		wf = f / 64,
				wl = (l - 1) / 64;

	for (size_t w = wf + lane; w <= wl; w += 32)
	{
		unsigned long long bits = ~0ULL;

		if (w == wf)
			bits &= ~0ULL << (f & 63);
		if (w == wl && (l & 63))
			bits &= (1ULL << (l & 63)) - 1;
		atomicOr(&mask[w], bits);
	}
}

/* Upper bound of the hits: the sum of the range lengths, one per probe. */
__global__ void
range_lengths(const uint64_t *first, const uint64_t *last, size_t nprobes,
			  unsigned long long *len)
{
	size_t		p = (size_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (p < nprobes)
		len[p] = last[p] > first[p] ? last[p] - first[p] : 0;
}

/* Keep a device copy of an image's payloads (engine_impl.h). */
GI_SELECT_EXPORT GiStatus
gi_gpu_attach_payloads(GiImage *image, const uint64_t *payloads, size_t n,
					   GiError *err)
{
	GiStatus	st = GI_OK;
	void	   *d = NULL;

	image->device_payloads = NULL;
	/* an empty image keeps a one-entry copy too: that the image has payloads
	 * is told by this pointer (gi_image_insert checks it) */
	SEL_CK(cudaMalloc(&d, (n ? n : 1) * sizeof(uint64_t)));
	if (n)
		SEL_CK(cudaMemcpy(d, payloads, n * sizeof(uint64_t), cudaMemcpyHostToDevice));
	image->device_payloads = d;
	d = NULL;
done:
	cudaFree(d);
	return st;
}

/* Release the device copy of the payloads. */
GI_SELECT_EXPORT void
gi_gpu_detach_payloads(GiImage *image)
{
	if (image && image->device_payloads)
	{
		cudaFree(image->device_payloads);
		image->device_payloads = NULL;
	}
}

/* Select the payloads of every entry the batch hits (engine_impl.h). */
GI_SELECT_EXPORT GiStatus
gi_gpu_select(GiImage *image, GiOp op, const int64_t *probes,
			  const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
			  uint64_t **out, size_t *nout, GiError *err)
{
	GiStatus	st = GI_OK;
	size_t		n = image->n;
	size_t		words = (n + 63) / 64;
	cudaStream_t stream = gpuidx_dev_stream(image);
	int64_t    *d_probes = NULL,
			   *d_hi = NULL;
	uint64_t   *d_first = NULL,
			   *d_last = NULL,
			   *d_out = NULL,
			   *d_sorted = NULL,
			   *host = NULL;
	unsigned long long *d_mask = NULL,
			   *d_len = NULL,
			   *d_bound = NULL;
	void	   *d_temp = NULL;
	size_t		temp_bytes = 0,
				count = 0;
	unsigned long long bound = 0;
	double		t0 = gi_now_ms(),
				t_h2d = 0,
				t_d2h = 0,
				t_search = 0;
	GiTimings	search_timings;

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
	st = gi_gpu_int_refresh_payloads(image, err);
	if (st != GI_OK)
		return st;

	SEL_CK(cudaMalloc(&d_probes, nprobes * sizeof(int64_t)));
	if (probes_hi)
		SEL_CK(cudaMalloc(&d_hi, nprobes * sizeof(int64_t)));
	SEL_CK(cudaMalloc(&d_first, nprobes * sizeof(uint64_t)));
	SEL_CK(cudaMalloc(&d_last, nprobes * sizeof(uint64_t)));
	SEL_CK(cudaMalloc(&d_mask, words * sizeof(unsigned long long)));
	SEL_CK(cudaMemcpyAsync(d_probes, probes, nprobes * sizeof(int64_t),
						   cudaMemcpyHostToDevice, stream));
	if (probes_hi)
		SEL_CK(cudaMemcpyAsync(d_hi, probes_hi, nprobes * sizeof(int64_t),
							   cudaMemcpyHostToDevice, stream));
	SEL_CK(cudaMemsetAsync(d_mask, 0, words * sizeof(unsigned long long), stream));
	SEL_CK(cudaStreamSynchronize(stream));
	t_h2d = gi_now_ms() - t0;

	st = gpuidx_dev_query(image, op, d_probes, d_hi, nprobes, d_first, d_last, NULL, err);
	if (st != GI_OK)
		goto done;
	search_timings = image->last_query;
	t_search = gi_now_ms() - t0 - t_h2d;

	/* The hit count is at most the sum of the range lengths (and n). */
	SEL_CK(cudaMalloc(&d_len, nprobes * sizeof(unsigned long long)));
	SEL_CK(cudaMalloc(&d_bound, sizeof(unsigned long long)));
	range_lengths<<<(unsigned int) ((nprobes + 255) / 256), 256, 0, stream>>>(
		d_first, d_last, nprobes, d_len);
	SEL_CK(cudaGetLastError());
	SEL_CK(cub::DeviceReduce::Sum(NULL, temp_bytes, d_len, d_bound, (int) nprobes, stream));
	SEL_CK(cudaMalloc(&d_temp, temp_bytes));
	SEL_CK(cub::DeviceReduce::Sum(d_temp, temp_bytes, d_len, d_bound, (int) nprobes, stream));
	SEL_CK(cudaMemcpyAsync(&bound, d_bound, sizeof(bound), cudaMemcpyDeviceToHost, stream));
	{
		size_t		threads = nprobes * 32;

		mark_hit_ranges<<<(unsigned int) ((threads + 255) / 256), 256, 0, stream>>>(
			d_first, d_last, nprobes, d_mask);
		SEL_CK(cudaGetLastError());
	}
	SEL_CK(cudaStreamSynchronize(stream));
	if (bound > n)
		bound = n;
	SEL_CK(cudaMalloc(&d_out, (bound ? bound : 1) * sizeof(uint64_t)));
	st = gi_space_compact_device((const uint64_t *) d_mask, image->device_payloads, 8, n, 0,
								 d_out, &count, stream, err);
	if (st != GI_OK)
		goto done;

	if (order == GI_ORDER_PAYLOAD && count > 1)
	{
		cudaFree(d_temp);
		d_temp = NULL;
		temp_bytes = 0;
		SEL_CK(cudaMalloc(&d_sorted, count * sizeof(uint64_t)));
		SEL_CK(cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, d_out, d_sorted,
											  (int) count, 0, 64, stream));
		SEL_CK(cudaMalloc(&d_temp, temp_bytes));
		SEL_CK(cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, d_out, d_sorted,
											  (int) count, 0, 64, stream));
	}
	host = (uint64_t *) malloc((count ? count : 1) * sizeof(uint64_t));
	if (host == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for %zu hits", count);
		goto done;
	}
	t_d2h = gi_now_ms();
	SEL_CK(cudaMemcpyAsync(host, d_sorted ? d_sorted : d_out, count * sizeof(uint64_t),
						   cudaMemcpyDeviceToHost, stream));
	SEL_CK(cudaStreamSynchronize(stream));
	t_d2h = gi_now_ms() - t_d2h;

	image->last_query = search_timings;
	image->last_query.transfer_ms = t_h2d + t_d2h;
	image->last_query.search_ms = t_search;
	image->last_query.total_ms = gi_now_ms() - t0;
	/* mask marking, compaction and the sort into heap order */
	image->last_query.build_ms = image->last_query.total_ms - t_h2d - t_d2h - t_search;
	*out = host;
	*nout = count;
	host = NULL;

done:
	free(host);
	cudaFree(d_probes);
	cudaFree(d_hi);
	cudaFree(d_first);
	cudaFree(d_last);
	cudaFree(d_mask);
	cudaFree(d_len);
	cudaFree(d_bound);
	cudaFree(d_temp);
	cudaFree(d_out);
	cudaFree(d_sorted);
	return st;
}
