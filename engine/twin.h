/*
 * twin.h - what makes one source serve both engines: GI_HD marks a function
 * of a twin header (veb_twin.h, veb_query_twin.h, cut_twin.h, agg_twin.h)
 * as callable from the host and, under nvcc, from the device.  Both engines include those headers, so the
 * CPU and the GPU engine compute the same structure with the same code and
 * identical answers are a property of the build.  Plain C, no PostgreSQL.
 */
#ifndef GPUIDX_TWIN_H
#define GPUIDX_TWIN_H

#include <stdint.h>

#ifdef __CUDACC__
#define GI_HD static __host__ __device__ __forceinline__
#else
#define GI_HD static inline
#endif

/*
 * GI_HD, and always inlined on the host too: for a twin's hot loops (the vEB
 * descents), whose compile-time parameters (word length, direction) must
 * fold into each caller so that every instantiation is unrolled and
 * specialized as hand-written code would be.
 */
#ifdef __CUDACC__
#define GI_HD_INLINE GI_HD
#else
#define GI_HD_INLINE static inline __attribute__((always_inline))
#endif

#endif							/* GPUIDX_TWIN_H */
