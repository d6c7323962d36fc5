/*
 * twin.h - what makes one source serve both engines: GI_HD marks a function
 * of a twin header (veb_twin.h, cut_twin.h) as callable from the host and,
 * under nvcc, from the device.  Both engines include those headers, so the
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

#endif							/* GPUIDX_TWIN_H */
