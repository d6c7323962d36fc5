/*
 * keyinterval.h - btree comparisons as inclusive 64-bit key intervals, and
 * sorted disjoint interval lists (keyinterval.c).
 */
#ifndef GPUIDX_KEYINTERVAL_H
#define GPUIDX_KEYINTERVAL_H

#include "postgres.h"

/* Sorted, disjoint, inclusive key intervals: [lo[i], hi[i]], i < n. */
typedef struct GpuidxIntervals
{
	int64		n;
	int64	   *lo;
	int64	   *hi;
} GpuidxIntervals;

extern bool gpuidx_strategy_interval(int strategy, int64 value,
									 int64 *lo, int64 *hi);
extern GpuidxIntervals gpuidx_intervals_none(void);
extern GpuidxIntervals gpuidx_intervals_single(int64 lo, int64 hi);
extern GpuidxIntervals gpuidx_intervals_points(int64 *vals, int64 n);
extern GpuidxIntervals gpuidx_intervals_union(GpuidxIntervals a, GpuidxIntervals b);
extern GpuidxIntervals gpuidx_intervals_intersect(GpuidxIntervals a, GpuidxIntervals b);
extern int64 gpuidx_intersect_points(int64 *a, int64 na, const int64 *b, int64 nb);

#endif							/* GPUIDX_KEYINTERVAL_H */
