/*
 * gpu_util.cuh - the GPU engine's device utilities (cuda/gpu_util.cu): the
 * one CUDA error mapper and its check macros, scoped device buffers, device
 * discovery, each thread's query stream, grid sizes, pinned host <-> device
 * copies, the device pair sort and the small kernels several structures
 * share.  The bottom layer of cuda/: every other cuda file may include
 * this, it includes none of them.
 * Internal; nothing here has default visibility but what GI_EXPORT marks.
 */
#ifndef GPUIDX_GPU_UTIL_CUH
#define GPUIDX_GPU_UTIL_CUH

#include "engine_impl.h"

#include <cuda_runtime.h>

#include <functional>

/* The one way a function of the GPU engine is exported from the module. */
#define GI_EXPORT extern "C" __attribute__((visibility("default")))

/*
 * Map a CUDA error from `what` to a GiStatus (GI_ERR_DEVICE_OOM for an
 * allocation failure, else GI_ERR_DEVICE) and a message naming it; clears a
 * non-sticky error so that the next call starts clean.
 */
GiStatus	gi_gpu_fail(GiError *err, cudaError_t e, const char *what);

/* Check a CUDA call; on failure return from the enclosing function. */
#define CK(call) \
	do { cudaError_t e_ = (call); \
		 if (e_ != cudaSuccess) return gi_gpu_fail(err, e_, #call); } while (0)

/* Check the launch just made of kernel `name`. */
#define CKL(name) \
	do { cudaError_t e_ = cudaGetLastError(); \
		 if (e_ != cudaSuccess) return gi_gpu_fail(err, e_, "launch of " name); } while (0)

/* Check a GiStatus-returning call. */
#define CKS(call) \
	do { GiStatus s_ = (call); if (s_ != GI_OK) return s_; } while (0)

/* Device buffer freed when it goes out of scope unless released. */
struct DevBuf
{
	void	   *p = nullptr;
	~DevBuf() { if (p) cudaFree(p); }
	void	   *release() { void *q = p; p = nullptr; return q; }
	void		drop() { if (p) cudaFree(p); p = nullptr; }
};

/* cudaMalloc into a DevBuf (a zero size allocates nothing). */
GiStatus	gi_gpu_alloc(DevBuf &b, size_t bytes, const char *what, GiError *err);

/* ------------------------------------------------------------------------ */
/* The device                                                                */
/* ------------------------------------------------------------------------ */

/* Initialize CUDA lazily; false (and why) when no usable GPU. */
bool		gi_gpu_device_probe(char *why, size_t whylen);

/* Fail with GI_ERR_NO_DEVICE unless a GPU is usable. */
GiStatus	gi_gpu_need_device(GiError *err);

/*
 * The calling thread's query stream (non-blocking), created on the thread's
 * first query and destroyed when the thread exits (a thread_local with a
 * destructor: the service's query threads at pool stop, a backend's main
 * thread at process exit, before the CUDA runtime's own teardown).  Queries
 * run here, not on the image's stream, so that threads querying one image
 * at once never share a stream (engine.h).
 */
GiStatus	gi_gpu_thread_stream(cudaStream_t *out, GiError *err);

/* Name, multiprocessors (at least 1) and L2 bytes of the device (after a
 * successful probe). */
const char *gi_gpu_device_name(void);
int			gi_gpu_sm_count(void);
size_t		gi_gpu_l2_bytes(void);

/* Grid for a grid-stride elementwise kernel over n items (at most 32 blocks
 * a multiprocessor). */
unsigned	gi_gpu_grid(uint64_t n, unsigned block);

/* Grid for a grid-stride kernel over n items: at most the blocks that are
 * resident at once (2048 threads a multiprocessor). */
unsigned	gi_gpu_grid_resident(uint64_t n, unsigned block);

/* ------------------------------------------------------------------------ */
/* Copies and sorting                                                        */
/* ------------------------------------------------------------------------ */

/*
 * Upload n int64 host values to the device as width-byte integers through
 * pinned slots, double-buffered.  Narrowing to int32 checks the range
 * (*out_of_range, when not NULL).
 */
GiStatus	gi_gpu_upload(void *dst, const int64_t *src, size_t n, int width,
						  cudaStream_t stream, bool *out_of_range, GiError *err);

/* Download n width-byte integers into int64 host values (sign-extending). */
GiStatus	gi_gpu_download(int64_t *dst, const void *src, size_t n, int width,
							cudaStream_t stream, GiError *err);

/*
 * Sort n (key, payload) pairs on the device by (key, payload): keys of kw
 * bytes (4: int32, 8: int64) into keys_out, payloads into pay_out when both
 * pay_in and pay_out are given (else keys alone).
 */
GiStatus	gi_gpu_sort_pairs(int kw, size_t n, cudaStream_t stream,
							  const void *keys_in, const uint64_t *pay_in,
							  uint64_t *pay_out, void *keys_out, GiError *err);

/* ------------------------------------------------------------------------ */
/* The build steps both structures share                                     */
/* ------------------------------------------------------------------------ */

/*
 * A structure's own step of a build (gpu_btree.cu, gpu_veb.cu): make the
 * structure on its stream from n keys sorted on the device; promised: the
 * caller sorted them (the structure checks the order then).
 */
typedef std::function<GiStatus(const void *sorted, bool promised, GiError *err)> GiGpuFinish;

/*
 * Build from host keys (and payloads) on stream st, the timings from t0
 * into *t: the keys uploaded as kw-byte integers (a key that does not fit
 * key_bytes is an error), sorted with their payloads on the device unless
 * the caller sorted them (then without payloads), finish, and the sorted
 * keys and payloads back to the host where asked.
 */
GiStatus	gi_gpu_build_from_host(cudaStream_t st, int kw, int key_bytes,
								   const int64_t *keys, const uint64_t *payloads,
								   size_t n, bool sorted, int64_t *sorted_keys_out,
								   uint64_t *sorted_payloads_out, const GiGpuFinish &finish,
								   double t0, GiTimings *t, GiError *err);

/*
 * Build from device-resident kw-byte keys (and payloads) on stream st, the
 * timings from t0 into *t: sorted on the device unless the caller sorted
 * them (payloads then copied to d_payloads_out as they are), then finish.
 */
GiStatus	gi_gpu_build_from_device(cudaStream_t st, int kw, const void *d_keys,
									 const uint64_t *d_payloads, size_t n, bool sorted,
									 uint64_t *d_payloads_out, const GiGpuFinish &finish,
									 double t0, GiTimings *t, GiError *err);

/* ------------------------------------------------------------------------ */
/* Shared kernels                                                            */
/* ------------------------------------------------------------------------ */

/* Set *flag if a[i-1] > a[i] for some i (is the array unsorted?). */
template <class T>
__global__ void
gi_gpu_unsorted_flag_kernel(const T *a, uint64_t n, int *flag)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x + 1; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		if (a[i - 1] > a[i])
		{
			*flag = 1;
			return;
		}
}

/* Add to *count the positions i > 0 whose key differs from key i-1 (the
 * distinct keys of a sorted array, less one); one atomic a warp. */
template <class K>
__global__ void
gi_gpu_count_changes_kernel(const K *k, uint64_t n, unsigned long long *count)
{
	uint32_t	mine = 0;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x + 1; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		mine += k[i - 1] != k[i];
	mine = __reduce_add_sync(0xffffffffu, mine);
	if ((threadIdx.x & 31) == 0 && mine)
		atomicAdd(count, (unsigned long long) mine);
}

#endif							/* GPUIDX_GPU_UTIL_CUH */
