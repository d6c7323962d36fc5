/*
 * gpu_veb.cuh - the GPU engine's van Emde Boas structure (cuda/gpu_veb.cu),
 * the twin of engine/cpu_veb.c.  cuda/gpu_engine.cu dispatches its gi_gpu_*
 * and gi_gpu_dev_* entry points here for GI_STRUCT_VEB images; the
 * contracts are theirs.  Internal to the engine: nothing here has default
 * visibility.
 */
#ifndef GPUIDX_GPU_VEB_CUH
#define GPUIDX_GPU_VEB_CUH

#include "gpu_util.cuh"

/* Build from n sorted host keys (gi_gpu_build). */
GiStatus	gi_gpu_veb_build(const GiBuildParams *params, const int64_t *keys,
							 size_t n, GiImage **out, GiError *err);

/* Build from unsorted host pairs (gi_gpu_build_unsorted). */
GiStatus	gi_gpu_veb_build_unsorted(const GiBuildParams *params,
									  const int64_t *keys,
									  const uint64_t *payloads, size_t n,
									  int64_t *sorted_keys_out,
									  uint64_t *sorted_payloads_out,
									  GiImage **out, GiError *err);

/* Build from device-resident keys (gi_gpu_dev_build). */
GiStatus	gi_gpu_veb_dev_build(const GiBuildParams *params, const void *d_keys,
								 const uint64_t *d_payloads, size_t n, bool sorted,
								 uint64_t *d_payloads_out, GiImage **out,
								 GiError *err);

/* Free an image. */
void		gi_gpu_veb_free(GiImage *image);

/*
 * Answer a device-resident batch of nprobes > 0 (gi_gpu_dev_query) on stream
 * st; the call's timings go to *t, the image is only read (threads may query
 * one image at once, each on its own stream).
 */
GiStatus	gi_gpu_veb_dev_query(const GiImage *image, GiOp op, const int64_t *d_probes,
								 const int64_t *d_hi, size_t nprobes,
								 uint64_t *d_first, uint64_t *d_last,
								 cudaStream_t st, GiTimings *t, GiError *err);

/* Describe an image. */
void		gi_gpu_veb_info(const GiImage *image, GiImageInfo *info);

/* The image's stream: builds run on it, queries do not. */
cudaStream_t gi_gpu_veb_stream(const GiImage *image);

#endif							/* GPUIDX_GPU_VEB_CUH */
