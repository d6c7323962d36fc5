/*
 * gpu_veb.cuh - the GPU engine's van Emde Boas structure (cuda/gpu_veb.cu)
 * and the helpers of cuda/gpu_btree.cu it shares.  Internal to the engine:
 * gpu_btree.cu dispatches its gi_gpu_* and gpuidx_dev_* entry points here
 * for GI_STRUCT_VEB images.  Nothing here has default visibility.
 */
#ifndef GPUIDX_GPU_VEB_CUH
#define GPUIDX_GPU_VEB_CUH

#include "engine_impl.h"

#include <cuda_runtime.h>

/* Shared helpers, defined in gpu_btree.cu. */
GiStatus	gi_gpu_int_need_device(GiError *err);
const char *gi_gpu_int_device_name(void);
int			gi_gpu_int_sm_count(void);
GiStatus	gi_gpu_int_upload(void *dst, const int64_t *src, size_t n, int width,
							  cudaStream_t stream, bool *out_of_range,
							  GiError *err);
GiStatus	gi_gpu_int_download(int64_t *dst, const void *src, size_t n,
								int width, cudaStream_t stream, GiError *err);
GiStatus	gi_gpu_int_sort_pairs(int kw, size_t n, cudaStream_t stream,
								  const void *keys_in, const uint64_t *pay_in,
								  uint64_t *pay_out, void *keys_out,
								  GiError *err);

/* The vEB engine (gpu_veb.cu); same contracts as the gi_gpu_* calls. */
GiStatus	gpu_veb_build(const GiBuildParams *params, const int64_t *keys,
						  size_t n, GiImage **out, GiError *err);
GiStatus	gpu_veb_build_unsorted(const GiBuildParams *params,
								   const int64_t *keys,
								   const uint64_t *payloads, size_t n,
								   int64_t *sorted_keys_out,
								   uint64_t *sorted_payloads_out,
								   GiImage **out, GiError *err);
GiStatus	gpu_veb_dev_build(const GiBuildParams *params, const void *d_keys,
							  const uint64_t *d_payloads, size_t n, bool sorted,
							  uint64_t *d_payloads_out, GiImage **out,
							  GiError *err);
void		gpu_veb_free(GiImage *image);
GiStatus	gpu_veb_query(GiImage *image, GiOp op, const int64_t *probes,
						  const int64_t *probes_hi, size_t nprobes,
						  uint64_t *first, uint64_t *last, GiError *err);
GiStatus	gpu_veb_dev_query(GiImage *image, GiOp op, const int64_t *d_probes,
							  const int64_t *d_hi, size_t nprobes,
							  uint64_t *d_first, uint64_t *d_last,
							  GiError *err);
void		gpu_veb_info(const GiImage *image, GiImageInfo *info);
cudaStream_t gpu_veb_stream(const GiImage *image);

#endif							/* GPUIDX_GPU_VEB_CUH */
