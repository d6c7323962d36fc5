/*
 * gpu_rest_stub.c - the GPU engine minus SPACE, for `make SPACE_ONLY=1`:
 * probes the device through the CUDA runtime and refuses images, so the
 * SPACE tests and benchmark link with cuda/gpu_space.cu and gpu_util.cu
 * alone.
 */
#include "engine_impl.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

/* A device is usable when the runtime counts one. */
bool
gi_gpu_probe(char *why, size_t whylen)
{
	int			count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);

	if (rc == cudaSuccess && count > 0)
		return true;
	if (why && whylen)
		snprintf(why, whylen, "no CUDA device (%s)", rc == cudaSuccess ? "none found" :
				 cudaGetErrorString(rc));
	return false;
}

/* Refuse: images are not linked in this build. */
GiStatus
gi_gpu_build(const GiBuildParams *params, const int64_t *keys,
			 const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	(void) params, (void) keys, (void) payloads, (void) n, (void) out;
	return gi_set_error(err, GI_ERR_UNSUPPORTED, "GPU images not linked (SPACE_ONLY build)");
}

/* Refuse: images are not linked in this build. */
GiStatus
gi_gpu_build_unsorted(const GiBuildParams *params, const int64_t *keys,
					  const uint64_t *payloads, size_t n,
					  int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
					  GiImage **out, GiError *err)
{
	(void) sorted_keys_out, (void) sorted_payloads_out;
	return gi_gpu_build(params, keys, payloads, n, out, err);
}

/* No GPU image can exist in this build. */
void
gi_gpu_free(GiImage *image)
{
	(void) image;
}

/* Refuse: images are not linked in this build. */
GiStatus
gi_gpu_query(GiImage *image, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			 uint64_t *last, GiError *err)
{
	(void) image, (void) op, (void) probes, (void) probes_hi, (void) nprobes;
	(void) first, (void) last;
	return gi_set_error(err, GI_ERR_UNSUPPORTED, "GPU images not linked (SPACE_ONLY build)");
}

/* Nothing to describe. */
void
gi_gpu_info(const GiImage *image, GiImageInfo *info)
{
	(void) image, (void) info;
}

/* Refuse: images are not linked in this build. */
GiStatus
gi_gpu_select(GiImage *image, GiOp op, const int64_t *probes,
			  const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
			  uint64_t **out, size_t *nout, GiError *err)
{
	(void) image, (void) op, (void) probes, (void) probes_hi, (void) nprobes;
	(void) order, (void) out, (void) nout;
	return gi_set_error(err, GI_ERR_UNSUPPORTED, "GPU images not linked (SPACE_ONLY build)");
}

/* Refuse: images are not linked in this build. */
GiStatus
gi_gpu_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
			  size_t n, GiError *err)
{
	(void) image, (void) keys, (void) payloads, (void) n;
	return gi_set_error(err, GI_ERR_UNSUPPORTED, "GPU images not linked (SPACE_ONLY build)");
}

/* No GPU image can exist in this build: nothing to keep. */
GiStatus
gi_gpu_attach_payloads(GiImage *image, const uint64_t *payloads, size_t n,
					   GiError *err)
{
	(void) image, (void) payloads, (void) n, (void) err;
	return GI_OK;
}

/* Nothing to release. */
void
gi_gpu_detach_payloads(GiImage *image)
{
	(void) image;
}
