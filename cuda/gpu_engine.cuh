/*
 * gpu_engine.cuh - the GPU engine's entry points beyond engine_impl.h, for
 * the benchmarks and device checks (bench/): builds, queries and insertions
 * on arrays already resident on the device.  cuda/gpu_engine.cu dispatches
 * them on the structure; the B+ tree's own knobs and insertion entry points
 * are defined by cuda/gpu_btree.cu and cuda/gpu_insert.cu.  Not part of
 * engine.h: src/ never uses these.  They return only once the device work
 * is finished.
 */
#ifndef GPUIDX_GPU_ENGINE_CUH
#define GPUIDX_GPU_ENGINE_CUH

#include "engine_impl.h"

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Query tuning knobs (process-wide; the defaults are what the engine uses). */
typedef struct GiGpuPolicy
{
	int			sort_mode;		/* -1 auto (Harmonia partial sort when it
								 * pays), 0 never sort, 1 always sort */
	int			sort_bits;		/* top bits sorted on; 0 = from the formula */
	int			group;			/* lanes per probe of the per-probe kernel: 2,
								 * 4, 8, 16 or 32 (int64: up to 16), or 1
								 * (the default): the thread search (a lane a
								 * probe, a binary search of loads in each
								 * node; the tiled search then takes groups
								 * of 2); GI_GPU_GROUP overrides it */
	int			tile;			/* batches not sorted by the engine (groups of
								 * 2..8): 0 a sample of the batch picks the
								 * tiled search (cuda/gpu_btree_tile.cuh) or
								 * the per-probe kernel, 1 always tiles, -1
								 * always per probe */
	int			window;			/* leaves a tile stages in shared memory: 0
								 * default (the tiled kernel 32, the stream
								 * kernel 48), -1 never, else the cap (the
								 * stream kernel: at most 48) */
	int			run;			/* the run search of the tiled kernel
								 * (cuda/gpu_btree_tile.cuh): 0 for tiles whose
								 * probes are in order, 1 for every narrow
								 * tile, -1 never (the default, as measured);
								 * GI_GPU_RUN_SEARCH overrides it
								 * (engine_util.h) */
	int			gate_min;		/* tile 0: the smallest batch whose order the
								 * sample decides (smaller ones take the
								 * per-probe kernel unsampled); 0 the default
								 * (2^22), -1 never sample (every batch
								 * per-probe); GI_GPU_GATE_MIN overrides it */
	int			child_arith;	/* how a descent finds a node's first child:
								 * 0 default (computed), 1 computed from the
								 * level's cut (every internal level of both
								 * forms is cut evenly), -1 loaded from the
								 * child prefix sums; GI_GPU_CHILD_ARITH
								 * overrides it */
	int			dedup;			/* the tiled search: of equal probes in a row
								 * of a tile that descend, only the first
								 * does and the others copy its answer (as
								 * do those equal to the previous row's
								 * last); 0 default (on), 1 on, -1 off;
								 * GI_GPU_DEDUP overrides it */
	int			sample_leaves;	/* tile 0: what the order sample calls a
								 * narrow tile: 0 default, one whose keys lie
								 * in at most the staging window's leaves
								 * (the tiled kernel's 32, the stream
								 * kernel's 48), the tiled search taken when at least
								 * half of the sampled tiles are; > 0 that
								 * many leaves; -1 the rule until 2026-11-26:
								 * keys spanning at most half of the tree's
								 * key span, tiles when one in eight is */
	int			snapshot;		/* an insertable image's queries: 0 default,
								 * batches of 2^16 probes or more read its
								 * static copy (built by the first of them
								 * after an insertion, cuda/gpu_btree.cuh
								 * GpuStatic), smaller ones the directory; 1
								 * every batch the copy, -1 never */
	int			tile_min_blocks;	/* the tiled kernel's launch bound:
									 * blocks of 8 warps an SM must fit,
									 * which caps its registers (4: 64 a
									 * thread, with spills; 2: none
									 * spill); 0 default (4), else 2, 3 or
									 * 4, for the groups of 2 the tiled
									 * search takes by default (groups of 4
									 * and 8 keep 4); GI_GPU_TILE_MIN_BLOCKS
									 * overrides it */
	int			leaf_walk;		/* the thread search (group 1): a probe's
								 * second rank in its leaf (point and
								 * successor: of keys <= the key; predecessor:
								 * of keys < it) walked from the first one,
								 * a galloping search bounded by the leaf (1-2
								 * loads on unique keys), rather than a
								 * binary search of its own (log2 M loads); 0
								 * default (on for int32 trees, off for
								 * int64, as measured), 1 on, -1 off;
								 * GI_GPU_LEAF_WALK overrides it */
	int			top;			/* the per-probe kernel's point, predecessor
								 * and successor descents start at the node
								 * the probe's bucket of the top table names
								 * (static trees and static copies): 0
								 * default (on), 1 on, -1 off (from the
								 * root); GI_GPU_TOP overrides it */
	int			wide;			/* how the thread search ranks a probe in a
								 * leaf: 1 wide (the whole leaf loaded at
								 * once, counted in registers), -1 or 0 (the
								 * default) a binary search of loads, as
								 * measured (H100, 2026-11-26: wide leaves
								 * 0.82x over the 216 rows of bench/kernel
								 * --paths, no faster at 10^8 keys);
								 * GI_GPU_WIDE overrides it */
	int			leaf_guess;		/* how the thread search ranks a probe in a
								 * leaf (when wide is off): 1 from a
								 * guessed sector (interpolated between
								 * the separators the parent's search read:
								 * one 32-byte load, then the neighbouring
								 * sector, then a binary search of the
								 * rest), -1 a binary search of loads over
								 * the whole line; 0 default: the guess in
								 * static trees over 4x the L2 size, for
								 * batches whose order sample finds them
								 * scattered over the leaves (random
								 * batches of 2^22 probes or more; as
								 * measured, cuda/gpu_btree.cu guess_tree);
								 * static trees and static copies only (not
								 * an insertable image's directory), and
								 * with the guess the leaf walk is the key
								 * width's default (leaf_walk ignored);
								 * GI_GPU_LEAF_GUESS overrides it */
	int			stream;			/* where the tiled search runs and the
								 * per-probe kernel's group is 1 (the
								 * default) with the run search off: 0
								 * default or 1, the stream kernel
								 * (cuda/gpu_btree_stream.cuh: narrow tiles
								 * from staged leaves, everything else the
								 * thread search), -1 the tiled kernel
								 * (groups of 2); GI_GPU_STREAM overrides it */
	int			row_hint;		/* the stream kernel: each row's window
								 * bounds narrow the next row's binary
								 * search to where they hint (checked by
								 * each lane; a lane the hint misses
								 * searches the whole window): 0 default
								 * or 1 on, -1 off; GI_GPU_ROW_HINT
								 * overrides it */
} GiGpuPolicy;

/* Read / replace the B+ tree query policy (cuda/gpu_btree.cu). */
void		gi_gpu_dev_get_policy(GiGpuPolicy *p);
void		gi_gpu_dev_set_policy(const GiGpuPolicy *p);

/*
 * Build an image from n keys already on the device.  d_keys holds int32 when
 * params->key_bytes is 2 or 4 and int64 when it is 8.  With sorted=false the
 * pairs are sorted on the device by (key, payload); d_payloads (may be NULL)
 * are then sorted along into d_payloads_out when that is not NULL.  The input
 * arrays are left untouched.
 */
GiStatus	gi_gpu_dev_build(const GiBuildParams *params, const void *d_keys,
							 const uint64_t *d_payloads, size_t n, bool sorted,
							 uint64_t *d_payloads_out, GiImage **out,
							 GiError *err);

/* Device scratch for queries of up to max_probes probes per call chunk. */
typedef struct GiGpuScratch GiGpuScratch;
GiStatus	gi_gpu_dev_scratch_create(const GiImage *image, size_t max_probes,
									  GiGpuScratch **out, GiError *err);
void		gi_gpu_dev_scratch_free(GiGpuScratch *s);

/*
 * Answer a batch whose probes (and d_hi for ranges) are on the device; the
 * results go to d_first / d_last on the device.  scratch may be NULL
 * (allocated and freed inside; a scratch given is the caller's, one call at
 * a time).  The work runs on the calling thread's stream, so threads may
 * query one image at once; the timings land in image->last_query (stored
 * under the engine-wide lock, read through gi_image_info).
 */
GiStatus	gi_gpu_dev_query(GiImage *image, GiOp op, const int64_t *d_probes,
							 const int64_t *d_hi, size_t nprobes,
							 uint64_t *d_first, uint64_t *d_last,
							 GiGpuScratch *scratch, GiError *err);

/*
 * Batch insertion (gi_image_insert) of n entries already on the device:
 * d_keys as in gi_gpu_dev_build (int32 for 2- and 4-byte keys, int64 for 8),
 * d_payloads given exactly when the image keeps payloads
 * (hdr.device_payloads).  sorted=true promises the batch is sorted by (key,
 * payload) and skips the device sort.  The input arrays are left untouched.
 * Timings land in gi_image_info's last_insert.
 */
GiStatus	gi_gpu_dev_insert(GiImage *image, const void *d_keys,
							  const uint64_t *d_payloads, size_t n, bool sorted,
							  GiError *err);

/*
 * Turn a bulk-built image into the insertable form now (what the first
 * insertion does anyway), so that benchmarks can time it apart.  A no-op
 * for an image already insertable or empty.
 */
GiStatus	gi_gpu_dev_make_insertable(GiImage *image, GiError *err);

/*
 * Milliseconds of the last insertion's internal-level re-cut (part of
 * last_insert.build_ms), of the one-time conversion to the insertable form,
 * and of the last refresh of the rank-ordered payload copy for select.
 */
void		gi_gpu_dev_insert_stats(const GiImage *image, double *inner_ms,
									double *convert_ms, double *refresh_ms);

/* Rebuild the rank-ordered device payload copy now if insertions made it
 * stale (gi_image_select does this itself when needed). */
GiStatus	gi_gpu_dev_refresh_payloads(GiImage *image, GiError *err);

/*
 * The top table of a static B+ tree image, or of an insertable one's
 * static copy once a query has built it (gpu_btree.cu): *entries buckets
 * (0: none), of which *split are split (a leaf, or a parent of leaves, or
 * the next one by a separator), *wide the number of those whose
 * separator was cut to its top 32 bits, *spans the span entries (leaves
 * a .. a + s, 3 to 5 of them), *log_bits the mantissa bits of its
 * log-scale buckets (0: linear ones), and *runs the entries of its run
 * table (TreeDev.runs; 0: none).  For tests.
 */
GiStatus	gi_gpu_dev_top_stats(const GiImage *image, uint64_t *entries, uint64_t *split,
								 uint64_t *wide, uint64_t *spans, int *log_bits, uint64_t *runs,
								 GiError *err);

/*
 * What the order sample of the last query through scratch picked: the
 * tiled search (*tiles), and in it the stream kernel for rows that repeat
 * one probe (*runs; int32 keys; gpu_btree.cu).  For tests.
 */
GiStatus	gi_gpu_dev_scratch_gate(const GiGpuScratch *scratch, bool *tiles, bool *runs,
									GiError *err);

/*
 * The stream the image's builds and insertions run on.  Queries run on the
 * calling thread's own stream instead (made on its first query, destroyed
 * when the thread exits), and return only once their work is finished.
 */
cudaStream_t gi_gpu_dev_stream(const GiImage *image);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIDX_GPU_ENGINE_CUH */
