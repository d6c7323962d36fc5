/*
 * cuda_check.cuh - error checking and scoped device buffers shared by the
 * GPU engine's translation units (gpu_btree.cu, gpu_insert.cu, select.cu,
 * gpu_veb.cu).  Internal; nothing here has default visibility.
 */
#ifndef GPUIDX_CUDA_CHECK_CUH
#define GPUIDX_CUDA_CHECK_CUH

#include "engine_impl.h"

#include <cuda_runtime.h>

/* Map a CUDA error from `what` to a GiStatus and a message naming it. */
static inline GiStatus
cuda_fail(GiError *err, cudaError_t e, const char *what)
{
	GiStatus	st = (e == cudaErrorMemoryAllocation) ? GI_ERR_DEVICE_OOM : GI_ERR_DEVICE;

	(void) cudaGetLastError();	/* clear a non-sticky error */
	return gi_set_error(err, st, "CUDA %s failed: %s (%s)", what,
						cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Check a CUDA call; on failure return from the enclosing function. */
#define CK(call) \
	do { cudaError_t e_ = (call); \
		 if (e_ != cudaSuccess) return cuda_fail(err, e_, #call); } while (0)

/* Check the launch just made of kernel `name`. */
#define CKL(name) \
	do { cudaError_t e_ = cudaGetLastError(); \
		 if (e_ != cudaSuccess) return cuda_fail(err, e_, "launch of " name); } while (0)

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
static inline GiStatus
dev_alloc(DevBuf &b, size_t bytes, const char *what, GiError *err)
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

#endif							/* GPUIDX_CUDA_CHECK_CUH */
