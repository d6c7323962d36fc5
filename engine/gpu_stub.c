/*
 * gpu_stub.c - the GPU half of the engine when the build host had no nvcc:
 * every call says there is no device, so "auto" falls back to the CPU.
 */
#include "engine_impl.h"

#include <stdio.h>

/* No GPU in this build. */
bool
gi_gpu_probe(char *why, size_t whylen)
{
	if (why && whylen)
		snprintf(why, whylen, "gpuidx was built without CUDA (no nvcc on the build host)");
	return false;
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_build(const GiBuildParams *params, const int64_t *keys,
			 const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	(void) params, (void) keys, (void) payloads, (void) n, (void) out;
	return gi_set_error(err, GI_ERR_NO_DEVICE,
						"gpuidx was built without CUDA (no nvcc on the build host)");
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_build_unsorted(const GiBuildParams *params, const int64_t *keys,
					  const uint64_t *payloads, size_t n,
					  int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
					  GiImage **out, GiError *err)
{
	(void) sorted_keys_out, (void) sorted_payloads_out;
	return gi_gpu_build(params, keys, payloads, n, out, err);
}

/* Nothing to free: no GPU image can exist in this build. */
void
gi_gpu_free(GiImage *image)
{
	(void) image;
}

/* No GPU in this build: nothing to page-lock for. */
bool
gi_gpu_host_pin(void *p, size_t size)
{
	(void) p;
	(void) size;
	return false;
}

/* No GPU in this build. */
void
gi_gpu_host_unpin(void *p)
{
	(void) p;
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_query(GiImage *image, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			 uint64_t *last, GiError *err)
{
	(void) image, (void) op, (void) probes, (void) probes_hi, (void) nprobes;
	(void) first, (void) last;
	return gi_set_error(err, GI_ERR_NO_DEVICE,
						"gpuidx was built without CUDA (no nvcc on the build host)");
}

/* Nothing to describe. */
void
gi_gpu_info(const GiImage *image, GiImageInfo *info)
{
	(void) image, (void) info;
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_select(GiImage *image, GiOp op, const int64_t *probes,
			  const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
			  uint64_t **out, size_t *nout, GiError *err)
{
	(void) image, (void) op, (void) probes, (void) probes_hi, (void) nprobes;
	(void) order, (void) out, (void) nout;
	return gi_set_error(err, GI_ERR_NO_DEVICE,
						"gpuidx was built without CUDA (no nvcc on the build host)");
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_compact(const uint64_t *mask, const void *values, int value_bytes,
			   size_t n, size_t chunk_bits, void *out, size_t *nout,
			   GiError *err)
{
	(void) mask, (void) values, (void) value_bytes, (void) n, (void) chunk_bits;
	(void) out, (void) nout;
	return gi_set_error(err, GI_ERR_NO_DEVICE,
						"gpuidx was built without CUDA (no nvcc on the build host)");
}

/* Nothing to keep: no GPU image can exist in this build. */
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

/* No GPU engine in this build. */
GiStatus
gi_gpu_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
			  size_t n, GiError *err)
{
	(void) image, (void) keys, (void) payloads, (void) n;
	return gi_set_error(err, GI_ERR_NO_DEVICE, "built without CUDA");
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_aggregate(GiImage *image, const uint64_t *first, const uint64_t *last,
				 size_t nranges, const uint8_t *vm, uint64_t vm_blocks, bool vm_full,
				 GiAggColumn *cols, int ncols, int64_t *counted, uint64_t **fetch,
				 size_t *nfetch, GiError *err)
{
	(void) image, (void) first, (void) last, (void) nranges, (void) vm;
	(void) vm_blocks, (void) vm_full, (void) cols, (void) ncols, (void) counted;
	(void) fetch, (void) nfetch;
	return gi_set_error(err, GI_ERR_NO_DEVICE,
						"gpuidx was built without CUDA (no nvcc on the build host)");
}

/* Refuse: no GPU in this build. */
GiStatus
gi_gpu_attach_columns(GiImage *image, const GiIncludeColumns *cols, GiError *err)
{
	(void) image, (void) cols;
	return gi_set_error(err, GI_ERR_NO_DEVICE,
						"gpuidx was built without CUDA (no nvcc on the build host)");
}

/* Nothing to drop: no GPU image can exist in this build. */
void
gi_gpu_detach_columns(GiImage *image)
{
	(void) image;
}

/* No columns: no GPU image can exist in this build. */
void
gi_gpu_columns_info(const GiImage *image, int *ncols, uint64_t *bytes)
{
	(void) image;
	*ncols = 0;
	*bytes = 0;
}
