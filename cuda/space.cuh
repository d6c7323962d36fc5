/*
 * space.cuh - SPACE stream compaction on device-resident arrays, for the
 * engine and the benchmarks (bench/space).
 */
#ifndef GPUIDX_SPACE_CUH
#define GPUIDX_SPACE_CUH

#include <cuda_runtime.h>

#include "engine_impl.h"

/*
 * d_out[j] = d_values[i] for the j-th set bit i of d_mask (n bits); values
 * of value_bytes 4 or 8; chunk_bits 512..4096 (0: default).  *nout receives
 * the count; the stream is synchronized before return.
 */
GiStatus	gi_space_compact_device(const uint64_t *d_mask, const void *d_values,
									int value_bytes, size_t n, size_t chunk_bits,
									void *d_out, size_t *nout, cudaStream_t stream,
									GiError *err);

#endif							/* GPUIDX_SPACE_CUH */
