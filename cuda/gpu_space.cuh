/*
 * gpu_space.cuh - SPACE stream compaction on device-resident arrays, for
 * the engine and the benchmarks (bench/space), and the selection of hit
 * payloads built on it (cuda/gpu_space.cu).
 *
 * Three phases (SPACE, Fett et al.: docs/design.md, References): count the
 * set bits of each chunk of the mask, prefix-sum the counts, write out the
 * values of the set bits while skipping chunks that have none.  A plan
 * picks the chunk size, the prefix sum and the write-out;
 * GI_SPACE_PLAN_DEFAULT is what the engine uses.
 */
#ifndef GPUIDX_GPU_SPACE_CUH
#define GPUIDX_GPU_SPACE_CUH

#include "engine_impl.h"

#ifdef __cplusplus
#include <cuda_runtime.h>
extern "C"
{
#endif

/* Prefix sum over the chunk counts. */
typedef enum GiSpaceScan
{
	GI_SPACE_SCAN_CUB = 0,		/* cub::DeviceScan over the chunk counts */
	GI_SPACE_SCAN_TWO_PHASE = 1,	/* tile reduce + local scan, then one
									 * block scans the tile sums */
	GI_SPACE_SCAN_PARTIAL = 2	/* up-sweep only (radix-32 tree); each
								 * write-out warp walks the tree for its
								 * offset */
} GiSpaceScan;

/* Write-out of the non-skipped chunks (both read the mask warp-striding). */
typedef enum GiSpaceWrite
{
	GI_SPACE_WRITE_STAGED = 0,	/* variant 8: a warp stages its set-bit
								 * indices in shared memory, then gathers
								 * and stores them a warp at a time */
	GI_SPACE_WRITE_STRIDED = 1,	/* variant 7: 32-element windows, lane i
								 * takes element i, rank by popcount */
	GI_SPACE_WRITE_HYBRID = 2	/* per pass of 2048 bits: strided when at
								 * least 3/4 of its bits are set, else staged */
} GiSpaceWrite;

typedef struct GiSpacePlan
{
	size_t		chunk_bits;		/* 512, 1024, 2048 or 4096; 0 = default */
	GiSpaceScan scan;
	GiSpaceWrite write;
} GiSpacePlan;

/* The engine's plan, hybrid/twophase/1024 (chosen by bench/space runs). */
extern const GiSpacePlan gi_space_default_plan;

/* Name of a plan for tables, e.g. "staged/cub/1024". */
const char *gi_space_plan_name(const GiSpacePlan *plan, char *buf, size_t len);

/*
 * Same as gi_compact on the GPU with an explicit plan (NULL: default), host
 * arrays in and out (tests).
 */
GiStatus	gi_space_compact_plan_host(const GiSpacePlan *plan,
									   const uint64_t *mask, const void *values,
									   int value_bytes, size_t n, void *out,
									   size_t *nout, GiError *err);

#ifdef __cplusplus
}

/*
 * d_out[j] = d_values[i] for the j-th set bit i of d_mask (n bits); values
 * of value_bytes 4 or 8; chunk_bits 512..4096 (0: default).  *nout receives
 * the count; the stream is synchronized before return.
 */
GiStatus	gi_space_compact_device(const uint64_t *d_mask, const void *d_values,
									int value_bytes, size_t n, size_t chunk_bits,
									void *d_out, size_t *nout, cudaStream_t stream,
									GiError *err);

/* Device scratch bytes gi_space_compact_async needs for n bits under plan. */
size_t		gi_space_scratch_bytes(const GiSpacePlan *plan, size_t n);

/*
 * Enqueue a compaction on stream without synchronizing or allocating: the
 * count of set bits lands in *d_nout (device memory).  d_scratch holds at
 * least gi_space_scratch_bytes(plan, n) bytes, 256-byte aligned.  Launch
 * errors are reported; faults surface at the next synchronization.
 */
GiStatus	gi_space_compact_async(const GiSpacePlan *plan, const uint64_t *d_mask,
								   const void *d_values, int value_bytes, size_t n,
								   void *d_out, unsigned long long *d_nout,
								   void *d_scratch, size_t scratch_bytes,
								   cudaStream_t stream, GiError *err);

/*
 * The payloads of every entry that nprobes device-resident ranges
 * [d_first[i], d_last[i]) hit, among n entries whose rank-ordered payloads
 * are d_payloads: a hit mask, SPACE compaction and, for GI_ORDER_PAYLOAD, a
 * sort.  *out is a host array (malloc; at least one element) of *nout
 * payloads; *d2h_ms receives the time of the copy back.
 */
GiStatus	gi_space_select_hits(const uint64_t *d_first, const uint64_t *d_last,
								 size_t nprobes, const uint64_t *d_payloads, size_t n,
								 GiSelectOrder order, cudaStream_t stream,
								 uint64_t **out, size_t *nout, double *d2h_ms,
								 GiError *err);
#endif

#endif							/* GPUIDX_GPU_SPACE_CUH */
