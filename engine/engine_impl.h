/*
 * engine_impl.h - what each engine implements behind engine.h.
 *
 * engine.c dispatches on the engine kind.  Every image struct of an engine
 * starts with a GiImage header so that engine.c can route free/query/info.
 * The GPU half (gi_gpu_*) lives in cuda/ when nvcc is found, otherwise in
 * engine/gpu_stub.c which reports GI_ERR_NO_DEVICE.
 */
#ifndef GPUIDX_ENGINE_IMPL_H
#define GPUIDX_ENGINE_IMPL_H

#include "engine.h"
#include "engine_util.h"

#ifdef __cplusplus
extern "C"
{
#endif

struct GiImage
{
	GiEngineKind engine;
	GiStructure structure;
	int			key_bytes;
	uint64_t	n;
	GiTimings	build;
	GiTimings	last_query;
	uint64_t   *payloads;		/* CPU engine: host copy for gi_image_select
								 * (set by engine.c); NULL if built without */
	void	   *device_payloads;	/* GPU engine: device copy, likewise */
	void	   *device_columns; /* GPU engine: INCLUDE columns kept for
								 * aggregation (cuda/gpu_agg.cu); NULL if
								 * none */
};

/* CPU engine (engine/cpu_*.c). */
GiStatus	gi_cpu_build(const GiBuildParams *params, const int64_t *keys,
						 const uint64_t *payloads, size_t n, GiImage **out,
						 GiError *err);
void		gi_cpu_free(GiImage *image);
GiStatus	gi_cpu_query(GiImage *image, GiOp op, const int64_t *probes,
						 const int64_t *probes_hi, size_t nprobes,
						 uint64_t *first, uint64_t *last, GiError *err);
void		gi_cpu_info(const GiImage *image, GiImageInfo *info);

/*
 * Batch insertion (engine/cpu_insert.c, cuda/gpu_insert.cu).  Called by
 * engine.c with validated arguments for B+ tree images only.  On return
 * hdr.n counts the new entries and the payload copy the image keeps for
 * selection (hdr.payloads / hdr.device_payloads) is in rank order again, or
 * the engine's select path refreshes it before use.
 */
GiStatus	gi_cpu_insert(GiImage *image, const int64_t *keys,
						  const uint64_t *payloads, size_t n, GiError *err);
GiStatus	gi_gpu_insert(GiImage *image, const int64_t *keys,
						  const uint64_t *payloads, size_t n, GiError *err);

/* Selection (engine/cpu_engine.c) and SPACE compaction (engine/cpu_space.c). */
GiStatus	gi_cpu_select(GiImage *image, GiOp op, const int64_t *probes,
						  const int64_t *probes_hi, size_t nprobes,
						  GiSelectOrder order, uint64_t **out, size_t *nout,
						  GiError *err);
GiStatus	gi_cpu_compact(const uint64_t *mask, const void *values,
						   int value_bytes, size_t n, size_t chunk_bits,
						   void *out, size_t *nout, GiError *err);

/* GPU engine (cuda/, or engine/gpu_stub.c without nvcc). */
GiStatus	gi_gpu_select(GiImage *image, GiOp op, const int64_t *probes,
						  const int64_t *probes_hi, size_t nprobes,
						  GiSelectOrder order, uint64_t **out, size_t *nout,
						  GiError *err);
GiStatus	gi_gpu_attach_payloads(GiImage *image, const uint64_t *payloads,
								   size_t n, GiError *err);
void		gi_gpu_detach_payloads(GiImage *image);
GiStatus	gi_gpu_compact(const uint64_t *mask, const void *values,
						   int value_bytes, size_t n, size_t chunk_bits,
						   void *out, size_t *nout, GiError *err);
bool		gi_gpu_probe(char *why, size_t whylen);
GiStatus	gi_gpu_build(const GiBuildParams *params, const int64_t *keys,
						 const uint64_t *payloads, size_t n, GiImage **out,
						 GiError *err);
GiStatus	gi_gpu_build_unsorted(const GiBuildParams *params,
								  const int64_t *keys,
								  const uint64_t *payloads, size_t n,
								  int64_t *sorted_keys_out,
								  uint64_t *sorted_payloads_out,
								  GiImage **out, GiError *err);
void		gi_gpu_free(GiImage *image);
bool		gi_gpu_host_pin(void *p, size_t size);
void		gi_gpu_host_unpin(void *p);
GiStatus	gi_gpu_query(GiImage *image, GiOp op, const int64_t *probes,
						 const int64_t *probes_hi, size_t nprobes,
						 uint64_t *first, uint64_t *last, GiError *err);
void		gi_gpu_info(const GiImage *image, GiImageInfo *info);

/*
 * Adding up position ranges (gi_image_aggregate; engine.c checked the
 * ranges against the image and the columns): engine/cpu_agg.c over the
 * host arrays, cuda/gpu_agg.cu on the device.
 */
GiStatus	gi_cpu_aggregate(const GiAggEntries *host, const uint64_t *first,
							 const uint64_t *last, size_t nranges, const uint8_t *vm,
							 uint64_t vm_blocks, bool vm_full, GiAggColumn *cols,
							 int ncols, int64_t *counted, uint64_t **fetch,
							 size_t *nfetch, GiError *err);
GiStatus	gi_gpu_aggregate(GiImage *image, const uint64_t *first,
							 const uint64_t *last, size_t nranges, const uint8_t *vm,
							 uint64_t vm_blocks, bool vm_full, GiAggColumn *cols,
							 int ncols, int64_t *counted, uint64_t **fetch,
							 size_t *nfetch, GiError *err);

/* INCLUDE columns on the device (cuda/gpu_agg.cu): keep, drop, describe. */
GiStatus	gi_gpu_attach_columns(GiImage *image, const GiIncludeColumns *cols,
								  GiError *err);
void		gi_gpu_detach_columns(GiImage *image);
void		gi_gpu_columns_info(const GiImage *image, int *ncols, uint64_t *bytes);

/* Shared by both engines: sort (key, payload) pairs on the host. */
GiStatus	gi_host_sort_pairs(const int64_t *keys, const uint64_t *payloads,
							   size_t n, int64_t *keys_out,
							   uint64_t *payloads_out, GiError *err);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIDX_ENGINE_IMPL_H */
