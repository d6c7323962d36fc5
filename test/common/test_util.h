/*
 * test_util.h - what the engine unit tests (test/unit/) and the
 * benchmarks' checks share: a per-file test run (seed, random generator,
 * pass/fail counts), allocation that dies on failure, a wall clock, the key
 * type's range, and the brute-force answer of an engine.h operation over
 * sorted keys.  Plain C, every function static inline, so any file may
 * include it (C or CUDA C++) and keep its own TestRun.
 */
#ifndef GPUIDX_TEST_UTIL_H
#define GPUIDX_TEST_UTIL_H

#include "engine.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* One test file's run: its seed, its random stream and its counts. */
typedef struct TestRun
{
	const char *name;			/* printed before each reported check */
	uint64_t	seed;			/* GI_SEED, or a fresh one */
	uint64_t	rng;			/* splitmix64 state */
	long		passed;
	long		failed;
	long		skipped;		/* neither passed nor failed (unsupported) */
	bool		verbose;		/* GI_UNIT_VERBOSE: print passing checks too */
} TestRun;

/* Wall clock in seconds (monotonic). */
static inline double
test_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wall clock in milliseconds (monotonic). */
static inline double
test_now_ms(void)
{
	return test_now_s() * 1000.0;
}

/*
 * Start a run: the seed from GI_SEED, or a fresh one from the clock and the
 * pid; the random stream is the seed xor stream, so that files given the
 * same GI_SEED still draw different numbers.
 */
static inline void
test_run_start(TestRun *t, const char *name, uint64_t stream)
{
	const char *s = getenv("GI_SEED");

	t->name = name;
	if (s && *s)
		t->seed = strtoull(s, NULL, 0);
	else
		t->seed = (uint64_t) time(NULL) * 1000003ULL ^ (uint64_t) getpid() ^
			(uint64_t) (test_now_s() * 1e9);
	t->rng = t->seed ^ stream;
	t->verbose = getenv("GI_UNIT_VERBOSE") != NULL;
}

/* splitmix64: a small, good, seedable generator. */
static inline uint64_t
test_rnd(TestRun *t)
{
	uint64_t	z = (t->rng += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform integer in [0, bound) (bound > 0; slight bias is harmless here). */
static inline uint64_t
test_below(TestRun *t, uint64_t bound)
{
	return test_rnd(t) % bound;
}

/* Uniform int64 in [lo, hi]. */
static inline int64_t
test_between(TestRun *t, int64_t lo, int64_t hi)
{
	uint64_t	span = (uint64_t) hi - (uint64_t) lo;

	if (span == UINT64_MAX)
		return (int64_t) test_rnd(t);
	return (int64_t) ((uint64_t) lo + test_below(t, span + 1));
}

/* Count one check; print it when verbose, and a failure always. */
static inline void
test_record(TestRun *t, bool ok, const char *what)
{
	if (ok)
	{
		t->passed++;
		if (t->verbose)
			printf("ok   %s: %s\n", t->name, what);
	}
	else
	{
		t->failed++;
		printf("FAIL %s: %s (seed %" PRIu64 ")\n", t->name, what, t->seed);
	}
}

/* a + b clamped to [lo, hi] (no overflow on the way). */
static inline int64_t
test_clamp_add(int64_t a, int64_t b, int64_t lo, int64_t hi)
{
	if (b > 0 && a > hi - b)
		return hi;
	if (b < 0 && a < lo - b)
		return lo;
	return a + b;
}

/* Saturating int64 addition. */
static inline int64_t
test_sat_add(int64_t a, int64_t b)
{
	return test_clamp_add(a, b, INT64_MIN, INT64_MAX);
}

/* Allocate or die: the tests themselves need no graceful OOM. */
static inline void *
test_xmalloc(size_t bytes)
{
	void	   *p = malloc(bytes ? bytes : 1);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
		exit(2);
	}
	return p;
}

/* The key type's range for a key width of 2, 4 or 8 bytes. */
static inline void
test_type_range(int width, int64_t *tmin, int64_t *tmax)
{
	*tmax = width == 2 ? INT16_MAX : width == 4 ? INT32_MAX : INT64_MAX;
	*tmin = -*tmax - 1;
}

/* A (key, payload) entry, sorted by test_cmp_pair. */
typedef struct TestPair
{
	int64_t		key;
	uint64_t	payload;
} TestPair;

/* qsort order of (key, payload). */
static inline int
test_cmp_pair(const void *a, const void *b)
{
	const TestPair *x = (const TestPair *) a;
	const TestPair *y = (const TestPair *) b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->payload != y->payload)
		return x->payload < y->payload ? -1 : 1;
	return 0;
}

/* qsort order of uint64. */
static inline int
test_cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* qsort order of int64. */
static inline int
test_cmp_i64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return x < y ? -1 : x > y;
}

/* First i with keys[i] >= p (or > p when upper); keys sorted. */
static inline uint64_t
test_bound(const int64_t *keys, uint64_t n, int64_t p, bool upper)
{
	uint64_t	lo = 0;
	uint64_t	hi = n;

	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (keys[mid] < p || (upper && keys[mid] == p))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The expected [first, last) of one probe over sorted keys, as engine.h
 * defines the ops: the run of p (point), of the greatest key <= p (pred), of
 * the least key >= p (succ), or of the keys in [p, hi] (range).
 */
static inline void
test_expect(const int64_t *keys, uint64_t n, GiOp op, int64_t p, int64_t hi,
			uint64_t *first, uint64_t *last)
{
	uint64_t	a = 0;
	uint64_t	b = 0;

	switch (op)
	{
		case GI_OP_POINT:
			a = test_bound(keys, n, p, false);
			b = test_bound(keys, n, p, true);
			break;
		case GI_OP_PRED:
			b = test_bound(keys, n, p, true);
			a = b == 0 ? 0 : test_bound(keys, n, keys[b - 1], false);
			break;
		case GI_OP_SUCC:
			a = test_bound(keys, n, p, false);
			b = a == n ? n : test_bound(keys, n, keys[a], true);
			break;
		default:
			if (p <= hi)
			{
				a = test_bound(keys, n, p, false);
				b = test_bound(keys, n, hi, true);
			}
			break;
	}
	*first = a;
	*last = b;
}

#endif							/* GPUIDX_TEST_UTIL_H */
