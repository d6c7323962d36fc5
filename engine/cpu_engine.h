/*
 * cpu_engine.h - inside the CPU engine: one set of functions per structure
 * behind gi_cpu_build / gi_cpu_query / gi_cpu_free / gi_cpu_info
 * (engine_impl.h), which engine/cpu_engine.c dispatches on the structure.
 * No PostgreSQL headers here.
 */
#ifndef GPUIDX_CPU_ENGINE_H
#define GPUIDX_CPU_ENGINE_H

#include "engine_impl.h"

/* The B+ tree (engine/cpu_btree.c). */
GiStatus	gi_cpu_btree_build(const GiBuildParams *params, const int64_t *keys,
							   const uint64_t *payloads, size_t n, GiImage **out,
							   GiError *err);
void		gi_cpu_btree_free(GiImage *image);
GiStatus	gi_cpu_btree_query(GiImage *image, GiOp op, const int64_t *probes,
							   const int64_t *probes_hi, size_t nprobes,
							   uint64_t *first, uint64_t *last, GiError *err);
void		gi_cpu_btree_info(const GiImage *image, GiImageInfo *info);

/* The van Emde Boas tree (engine/cpu_veb.c). */
GiStatus	gi_cpu_veb_build(const GiBuildParams *params, const int64_t *keys,
							 const uint64_t *payloads, size_t n, GiImage **out,
							 GiError *err);
void		gi_cpu_veb_free(GiImage *image);
GiStatus	gi_cpu_veb_query(GiImage *image, GiOp op, const int64_t *probes,
							 const int64_t *probes_hi, size_t nprobes,
							 uint64_t *first, uint64_t *last, GiError *err);
void		gi_cpu_veb_info(const GiImage *image, GiImageInfo *info);

/*
 * Partially radix-sort a block of count probes (count <= 2^32) on the top
 * bits of p - min, for locality (engine/cpu_btree.c says how); the rebased
 * probes and their positions in the block come back through *out_keys and
 * *out_pos, which point into keys/pos or tmp_keys/tmp_pos.
 */
void		gi_cpu_sort_probe_block(const int64_t *probes, size_t count,
									uint64_t *keys, uint32_t *pos,
									uint64_t *tmp_keys, uint32_t *tmp_pos,
									int64_t *min_out, uint64_t **out_keys,
									uint32_t **out_pos);

/* A slice [begin, end) of a data-parallel loop, run by one thread. */
typedef void (*GiCpuSliceFn) (void *arg, size_t begin, size_t end);

/*
 * Run fn over [0, count) cut into one contiguous slice per thread: one
 * thread per min_per_thread items, at most the cores (GI_CPU_THREADS
 * overrides).  Workers start with every signal blocked (in a backend the
 * handlers belong to the main thread); a worker that cannot start runs on
 * the caller's thread.  Returns when every slice is done.
 */
void		gi_cpu_parallel_for(size_t count, size_t min_per_thread,
								GiCpuSliceFn fn, void *arg);

/* Threads gi_cpu_parallel_for would use for count items. */
int			gi_cpu_threads_for(size_t count, size_t min_per_thread);

#endif							/* GPUIDX_CPU_ENGINE_H */
