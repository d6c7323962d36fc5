/*
 * cpu_engine.h - inside the CPU engine: one set of functions per structure
 * behind gi_cpu_build / gi_cpu_query / gi_cpu_free / gi_cpu_info /
 * gi_cpu_select (engine_impl.h), which engine/cpu_engine.c dispatches on the
 * structure, and what the structures share (the probe block sort, the
 * thread pool of cpu_pool.h).  The B+ tree's private struct is in
 * cpu_btree.h.  No PostgreSQL headers here.
 */
#ifndef GPUIDX_CPU_ENGINE_H
#define GPUIDX_CPU_ENGINE_H

#include "cpu_pool.h"
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

/*
 * Put hdr.payloads back in rank order after insertions (engine/cpu_insert.c;
 * gi_cpu_select calls it; a no-op unless stale).
 */
GiStatus	gi_cpu_btree_refresh_payloads(GiImage *image, GiError *err);

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
 * bits of p - min, for locality (Harmonia's partial sort); the rebased
 * probes and their positions in the block come back through *out_keys and
 * *out_pos, which point into keys/pos or tmp_keys/tmp_pos (engine/
 * cpu_sort.c; the B+ tree and the vEB tree both use it).
 */
void		gi_cpu_sort_probe_block(const int64_t *probes, size_t count,
									uint64_t *keys, uint32_t *pos,
									uint64_t *tmp_keys, uint32_t *tmp_pos,
									int64_t *min_out, uint64_t **out_keys,
									uint32_t **out_pos);

/*
 * The payloads of every entry the ranges [first[i], last[i]) hit among the
 * n entries whose rank-ordered payloads are payloads: a hit mask, SPACE
 * compaction and, for GI_ORDER_PAYLOAD, a sort (engine/cpu_space.c).  *out
 * is malloc'ed (at least one element); *compact_ms receives the time of
 * the mask and the compaction.
 */
GiStatus	gi_cpu_select_hits(const uint64_t *first, const uint64_t *last,
							   size_t nprobes, const uint64_t *payloads, size_t n,
							   GiSelectOrder order, uint64_t **out, size_t *nout,
							   double *compact_ms, GiError *err);

#endif							/* GPUIDX_CPU_ENGINE_H */
