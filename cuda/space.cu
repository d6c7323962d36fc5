/*
 * space.cu - SPACE stream compaction on the GPU (003 in shared/seeds).
 *
 * Phases: (1) popcount of each chunk of the hit mask, (2) exclusive prefix
 * sum of the chunk counts (CUB), (3) write-out by one warp per chunk that
 * skips chunks with no set bit and reads the mask warp-striding.  The
 * device-resident entry point is declared in space.cuh for benchmarks.
 */
#include "space.cuh"

#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define GI_SPACE_EXPORT extern "C" __attribute__((visibility("default")))
#define SPACE_DEFAULT_CHUNK_BITS 1024

/* Turn a CUDA error into a GiError naming the call. */
static GiStatus
space_cuda_error(GiError *err, cudaError_t rc, const char *what)
{
	return gi_set_error(err, rc == cudaErrorMemoryAllocation ? GI_ERR_DEVICE_OOM : GI_ERR_DEVICE,
						"%s: %s", what, cudaGetErrorString(rc));
}

#define SPACE_CK(call) \
	do { cudaError_t rc_ = (call); \
		 if (rc_ != cudaSuccess) { st = space_cuda_error(err, rc_, #call); goto done; } } while (0)

/* Phase 1: set bits per chunk; one thread per mask word, a warp-level sum. */
__global__ void
count_chunk_bits(const uint64_t *mask, size_t words, size_t n, int chunk_words,
				 unsigned int *counts)
{
	size_t		w = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
	unsigned int bits = 0;
	int			group = chunk_words < 32 ? chunk_words : 32;
	int			lane = threadIdx.x & 31;

	if (w < words)
	{
		uint64_t	m = mask[w];

		if (w == words - 1 && (n & 63))
			m &= (1ULL << (n & 63)) - 1;
		bits = __popcll(m);
	}
	/* Sum within groups of `group` lanes (a group never spans two chunks). */
	for (int d = group / 2; d > 0; d /= 2)
		bits += __shfl_down_sync(0xffffffffu, bits, d, group);
	if ((lane % group) == 0 && w < words && bits > 0)
		atomicAdd(&counts[w / chunk_words], bits);
}

/* Phase 3: one warp per chunk writes the values of its set bits. */
template <typename T>
__global__ void
write_chunk_values(const uint64_t *mask, size_t words, size_t n, int chunk_words,
				   const unsigned int *counts, const unsigned long long *offsets,
				   size_t nchunks, const T *values, T *out)
{
	size_t		chunk = ((size_t) blockIdx.x * blockDim.x + threadIdx.x) / 32;
	int			lane = threadIdx.x & 31;

	if (chunk >= nchunks || counts[chunk] == 0)
		return;					/* chunk skipping: no set bit, no reads */
	unsigned long long base = offsets[chunk];
	size_t		first = chunk * (size_t) chunk_words;

	for (int off = 0; off < chunk_words; off += 32)
	{
		size_t		w = first + off + lane;
		uint64_t	m = 0;
		unsigned int mine,
					before;

		if (off + lane < chunk_words && w < words)
		{
			m = mask[w];
			if (w == words - 1 && (n & 63))
				m &= (1ULL << (n & 63)) - 1;
		}
		mine = __popcll(m);
		/* Exclusive scan of the lanes' counts. */
		before = mine;
		for (int d = 1; d < 32; d *= 2)
		{
			unsigned int v = __shfl_up_sync(0xffffffffu, before, d);

			if (lane >= d)
				before += v;
		}
		unsigned int total = __shfl_sync(0xffffffffu, before, 31);

		before -= mine;
		while (m)
		{
			int			bit = __ffsll((long long) m) - 1;

			out[base + before++] = values[w * 64 + bit];
			m &= m - 1;
		}
		base += total;
	}
}

/* Compaction of device arrays (space.cuh). */
GiStatus
gi_space_compact_device(const uint64_t *d_mask, const void *d_values, int value_bytes,
						size_t n, size_t chunk_bits, void *d_out, size_t *nout,
						cudaStream_t stream, GiError *err)
{
	GiStatus	st = GI_OK;
	size_t		words = (n + 63) / 64;
	int			chunk_words;
	size_t		nchunks;
	unsigned int *d_counts = NULL;
	unsigned long long *d_offsets = NULL;
	void	   *d_temp = NULL;
	size_t		temp_bytes = 0;
	unsigned long long last_offset = 0;
	unsigned int last_count = 0;

	*nout = 0;
	if (n == 0)
		return GI_OK;
	if (chunk_bits == 0)
		chunk_bits = SPACE_DEFAULT_CHUNK_BITS;
	chunk_words = (int) (chunk_bits / 64);
	nchunks = (words + chunk_words - 1) / chunk_words;

	SPACE_CK(cudaMalloc(&d_counts, nchunks * sizeof(unsigned int)));
	SPACE_CK(cudaMalloc(&d_offsets, nchunks * sizeof(unsigned long long)));
	SPACE_CK(cudaMemsetAsync(d_counts, 0, nchunks * sizeof(unsigned int), stream));
	count_chunk_bits<<<(unsigned int) ((words + 255) / 256), 256, 0, stream>>>(
		d_mask, words, n, chunk_words, d_counts);
	SPACE_CK(cudaGetLastError());

	SPACE_CK(cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, d_counts, d_offsets,
										   (int) nchunks, stream));
	SPACE_CK(cudaMalloc(&d_temp, temp_bytes));
	SPACE_CK(cub::DeviceScan::ExclusiveSum(d_temp, temp_bytes, d_counts, d_offsets,
										   (int) nchunks, stream));

	{
		size_t		threads = nchunks * 32;
		unsigned int blocks = (unsigned int) ((threads + 255) / 256);

		if (value_bytes == 8)
			write_chunk_values<uint64_t><<<blocks, 256, 0, stream>>>(
				d_mask, words, n, chunk_words, d_counts, d_offsets, nchunks,
				(const uint64_t *) d_values, (uint64_t *) d_out);
		else
			write_chunk_values<uint32_t><<<blocks, 256, 0, stream>>>(
				d_mask, words, n, chunk_words, d_counts, d_offsets, nchunks,
				(const uint32_t *) d_values, (uint32_t *) d_out);
		SPACE_CK(cudaGetLastError());
	}
	SPACE_CK(cudaMemcpyAsync(&last_offset, d_offsets + nchunks - 1, sizeof(last_offset),
							 cudaMemcpyDeviceToHost, stream));
	SPACE_CK(cudaMemcpyAsync(&last_count, d_counts + nchunks - 1, sizeof(last_count),
							 cudaMemcpyDeviceToHost, stream));
	SPACE_CK(cudaStreamSynchronize(stream));
	*nout = (size_t) last_offset + last_count;

done:
	cudaFree(d_counts);
	cudaFree(d_offsets);
	cudaFree(d_temp);
	return st;
}

/* Compaction of host arrays through the device (engine_impl.h). */
GI_SPACE_EXPORT GiStatus
gi_gpu_compact(const uint64_t *mask, const void *values, int value_bytes,
			   size_t n, size_t chunk_bits, void *out, size_t *nout,
			   GiError *err)
{
	GiStatus	st = GI_OK;
	size_t		words = (n + 63) / 64;
	uint64_t   *d_mask = NULL;
	void	   *d_values = NULL;
	void	   *d_out = NULL;

	*nout = 0;
	if (n == 0)
		return GI_OK;
	SPACE_CK(cudaMalloc(&d_mask, words * sizeof(uint64_t)));
	SPACE_CK(cudaMalloc(&d_values, n * (size_t) value_bytes));
	SPACE_CK(cudaMalloc(&d_out, n * (size_t) value_bytes));
	SPACE_CK(cudaMemcpy(d_mask, mask, words * sizeof(uint64_t), cudaMemcpyHostToDevice));
	SPACE_CK(cudaMemcpy(d_values, values, n * (size_t) value_bytes, cudaMemcpyHostToDevice));
	st = gi_space_compact_device(d_mask, d_values, value_bytes, n, chunk_bits, d_out,
								 nout, 0, err);
	if (st != GI_OK)
		goto done;
	SPACE_CK(cudaMemcpy(out, d_out, *nout * (size_t) value_bytes, cudaMemcpyDeviceToHost));

done:
	cudaFree(d_mask);
	cudaFree(d_values);
	cudaFree(d_out);
	return st;
}

/*
 * Selection through the GPU image is not wired to the B+ tree's device
 * arrays yet; callers fall back to gi_image_query (src/ does).
 */
GI_SPACE_EXPORT GiStatus
gi_gpu_select(GiImage *image, GiOp op, const int64_t *probes,
			  const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
			  uint64_t **out, size_t *nout, GiError *err)
{
	(void) image, (void) op, (void) probes, (void) probes_hi, (void) nprobes;
	(void) order, (void) out, (void) nout;
	return gi_set_error(err, GI_ERR_UNSUPPORTED,
						"gi_image_select is not implemented on the GPU engine yet");
}
