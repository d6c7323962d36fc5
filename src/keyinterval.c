/*
 * keyinterval.c - what a btree comparison admits, as inclusive intervals of
 * 64-bit keys, and the algebra on sorted lists of them.  Both the index scan
 * (scan.c: AND of scan keys, one interval or a point set) and GpuIndexScan
 * (customscan_exec.c: ANDs and ORs of batch clauses, an interval list) turn
 * their quals into intervals here, so the two agree on every strategy and
 * on the edges of the key domain.
 */
#include "gpuidx.h"
#include "keyinterval.h"

#include "access/stratnum.h"

/* An empty list with room for cap intervals (at least one). */
static GpuidxIntervals
intervals_alloc(int64 cap)
{
	GpuidxIntervals r;

	r.lo = palloc(sizeof(int64) * Max(cap, 1));
	r.hi = palloc(sizeof(int64) * Max(cap, 1));
	r.n = 0;
	return r;
}

/* The empty interval list. */
GpuidxIntervals
gpuidx_intervals_none(void)
{
	return gpuidx_intervals_single(1, 0);
}

/* Interval list of sorted distinct points. */
GpuidxIntervals
gpuidx_intervals_points(int64 *vals, int64 n)
{
	GpuidxIntervals r;

	r.lo = vals;
	r.hi = vals;				/* a point is [v, v]; the arrays are shared */
	r.n = n;
	return r;
}

/* Union of two interval lists, coalescing overlaps and neighbours. */
GpuidxIntervals
gpuidx_intervals_union(GpuidxIntervals a, GpuidxIntervals b)
{
	GpuidxIntervals r;
	int64		i = 0,
				j = 0;

	r = intervals_alloc(a.n + b.n);
	while (i < a.n || j < b.n)
	{
		int64		lo,
					hi;

		if (j >= b.n || (i < a.n && a.lo[i] <= b.lo[j]))
		{
			lo = a.lo[i];
			hi = a.hi[i++];
		}
		else
		{
			lo = b.lo[j];
			hi = b.hi[j++];
		}
		if (r.n > 0 && (r.hi[r.n - 1] == PG_INT64_MAX || lo <= r.hi[r.n - 1] + 1))
		{
			if (hi > r.hi[r.n - 1])
				r.hi[r.n - 1] = hi;
		}
		else
		{
			r.lo[r.n] = lo;
			r.hi[r.n] = hi;
			r.n++;
		}
	}
	return r;
}

/* Intersection of two interval lists. */
GpuidxIntervals
gpuidx_intervals_intersect(GpuidxIntervals a, GpuidxIntervals b)
{
	GpuidxIntervals r;
	int64		i = 0,
				j = 0;

	r = intervals_alloc(a.n + b.n);
	while (i < a.n && j < b.n)
	{
		int64		lo = Max(a.lo[i], b.lo[j]);
		int64		hi = Min(a.hi[i], b.hi[j]);

		if (lo <= hi)
		{
			r.lo[r.n] = lo;
			r.hi[r.n] = hi;
			r.n++;
		}
		if (a.hi[i] < b.hi[j])
			i++;
		else
			j++;
	}
	return r;
}

/* One interval (or none when lo > hi). */
GpuidxIntervals
gpuidx_intervals_single(int64 lo, int64 hi)
{
	GpuidxIntervals r;

	r.lo = palloc(sizeof(int64));
	r.hi = palloc(sizeof(int64));
	r.lo[0] = lo;
	r.hi[0] = hi;
	r.n = lo <= hi ? 1 : 0;
	return r;
}

/* Keep the elements of a (sorted, distinct) that are also in b. */
int64
gpuidx_intersect_points(int64 *a, int64 na, const int64 *b, int64 nb)
{
	int64		i = 0,
				j = 0,
				o = 0;

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			a[o++] = a[i++];
			j++;
		}
	}
	return o;
}
