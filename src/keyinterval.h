/*
 * keyinterval.h - btree comparisons as inclusive 64-bit key intervals, and
 * sorted disjoint interval lists (keyinterval.c).
 */
#ifndef GPUIDX_KEYINTERVAL_H
#define GPUIDX_KEYINTERVAL_H

#include "postgres.h"
#include "access/stratnum.h"

/* Sorted, disjoint, inclusive key intervals: [lo[i], hi[i]], i < n. */
typedef struct GpuidxIntervals
{
	int64		n;
	int64	   *lo;
	int64	   *hi;
} GpuidxIntervals;

/*
 * The keys k with "k <strategy> value", as [*lo, *hi]; false when there are
 * none (k < INT64_MIN, k > INT64_MAX).  Errors on a strategy that is not a
 * btree comparison.  Inline: a join asks it once per outer row.
 */
static inline bool
gpuidx_strategy_interval(int strategy, int64 value, int64 *lo, int64 *hi)
{
	*lo = PG_INT64_MIN;
	*hi = PG_INT64_MAX;
	switch (strategy)
	{
		case BTLessStrategyNumber:
			if (value == PG_INT64_MIN)
				return false;
			*hi = value - 1;
			return true;
		case BTLessEqualStrategyNumber:
			*hi = value;
			return true;
		case BTEqualStrategyNumber:
			*lo = *hi = value;
			return true;
		case BTGreaterEqualStrategyNumber:
			*lo = value;
			return true;
		case BTGreaterStrategyNumber:
			if (value == PG_INT64_MAX)
				return false;
			*lo = value + 1;
			return true;
		default:
			elog(ERROR, "gpuidx: unexpected strategy %d", strategy);
	}
	return false;				/* keep compiler quiet */
}
extern GpuidxIntervals gpuidx_intervals_none(void);
extern GpuidxIntervals gpuidx_intervals_single(int64 lo, int64 hi);
extern GpuidxIntervals gpuidx_intervals_points(int64 *vals, int64 n);
extern GpuidxIntervals gpuidx_intervals_union(GpuidxIntervals a, GpuidxIntervals b);
extern GpuidxIntervals gpuidx_intervals_intersect(GpuidxIntervals a, GpuidxIntervals b);
extern int64 gpuidx_intersect_points(int64 *a, int64 na, const int64 *b, int64 nb);

#endif							/* GPUIDX_KEYINTERVAL_H */
