/*
 * test_space.c - unit tests of SPACE stream compaction and batch selection.
 *
 * gi_compact on the CPU engine (always) and the GPU engine (when a GPU is
 * usable), every GPU plan (chunk size x prefix sum x write-out) through
 * gi_space_compact_plan_host when cuda/gpu_space.cu is linked, all against a
 * plain serial compaction; gi_image_select on the CPU engine (and the GPU
 * engine once it implements it) against brute force over the sorted keys.
 * Masks of every shape, fresh seed per run (GI_SEED repeats one), outputs
 * poisoned before each run and checked for stray writes past the count.
 *
 * The entry point is gi_test_space_main(); main() exists only with
 * -DGI_TEST_SPACE_MAIN (make -C bench/space test), so this file links into
 * test/unit/test_engine too.  GI_UNIT_MAX caps the sizes (default 10^7);
 * GI_UNIT_MIN skips smaller sizes; GI_UNIT_QUICK runs fewer densities and
 * chunk sizes and no select cases (for compute-sanitizer).
 */
#include "engine.h"
#include "../../cuda/gpu_space.cuh"
#include "../common/test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Present only when cuda/gpu_space.cu is linked in. */
#pragma weak gi_space_compact_plan_host
#pragma weak gi_space_plan_name

#define POISON_BYTE 0xA5
#define GUARD 16				/* poisoned elements checked past the count */

static TestRun tr;				/* seed, random stream, counts */
static int	sp_quick;			/* GI_UNIT_QUICK: fewer plans (sanitizer runs) */

/* Mask shapes. */
enum
{
	SHAPE_EMPTY,
	SHAPE_FULL,
	SHAPE_FIRST,				/* only bit 0 */
	SHAPE_LAST,					/* only bit n - 1 */
	SHAPE_UNIFORM,				/* each bit with probability density */
	SHAPE_ONE_CLUSTER,
	SHAPE_32_CLUSTERS,
	SHAPE_WORDS,				/* words all-zero, all-one or random: skipping */
	NSHAPES
};

static const char *const shape_names[] = {
	"empty", "full", "first", "last", "uniform", "1cluster", "32clusters", "words"
};

/* Set bits [from, to) of mask. */
static void
sp_set_range(uint64_t *mask, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		mask[i / 64] |= UINT64_C(1) << (i & 63);
}

/* Fill a mask of n bits (words + 1 words; junk past n must be ignored). */
static void
sp_gen_mask(uint64_t *mask, size_t n, int shape, double density)
{
	size_t		words = (n + 63) / 64;
	size_t		i;

	memset(mask, 0, (words + 1) * sizeof(uint64_t));
	switch (shape)
	{
		case SHAPE_EMPTY:
			break;
		case SHAPE_FULL:
			sp_set_range(mask, 0, n);
			break;
		case SHAPE_FIRST:
			if (n)
				mask[0] = 1;
			break;
		case SHAPE_LAST:
			if (n)
				sp_set_range(mask, n - 1, n);
			break;
		case SHAPE_UNIFORM:
			{
				uint64_t	cut = (uint64_t) (density * 18446744073709551615.0);

				for (i = 0; i < n; i++)
					if (test_rnd(&tr) < cut)
						mask[i / 64] |= UINT64_C(1) << (i & 63);
				break;
			}
		case SHAPE_ONE_CLUSTER:
			if (n)
			{
				size_t		len = (size_t) (density * n);
				size_t		start = test_below(&tr, n - len + 1);

				sp_set_range(mask, start, start + len);
			}
			break;
		case SHAPE_32_CLUSTERS:
			if (n)
			{
				size_t		period = (n + 31) / 32;
				size_t		len = (size_t) (density * period);

				for (i = 0; i < 32; i++)
				{
					size_t		s = i * period;
					size_t		e = s + len < n ? s + len : n;

					if (s < n)
						sp_set_range(mask, s, e);
				}
			}
			break;
		case SHAPE_WORDS:
			for (i = 0; i < words; i++)
			{
				uint64_t	r = test_below(&tr, 8);

				mask[i] = r < 5 ? 0 : (r == 5 ? ~UINT64_C(0) : test_rnd(&tr));
			}
			break;
	}
	/* junk past n, in the last word and the word after it */
	if (n & 63)
		mask[words - 1] |= test_rnd(&tr) & ~((UINT64_C(1) << (n & 63)) - 1);
	mask[words] = test_rnd(&tr);
}

/* Serial reference compaction; returns the count. */
static size_t
sp_reference(const uint64_t *mask, const void *values, int vb, size_t n, void *out)
{
	size_t		j = 0;

	for (size_t i = 0; i < n; i++)
		if ((mask[i / 64] >> (i & 63)) & 1)
		{
			if (vb == 8)
				((uint64_t *) out)[j] = ((const uint64_t *) values)[i];
			else
				((uint32_t *) out)[j] = ((const uint32_t *) values)[i];
			j++;
		}
	return j;
}

/* Compare one compaction output with the reference; poison intact past it. */
static int
sp_same(const void *got, size_t ngot, const void *want, size_t nwant, int vb)
{
	const unsigned char *g = got;

	if (ngot != nwant)
		return 0;
	if (memcmp(got, want, nwant * vb) != 0)
		return 0;
	for (size_t b = nwant * vb; b < (nwant + GUARD) * vb; b++)
		if (g[b] != POISON_BYTE)
			return 0;
	return 1;
}

/* Which compaction to run. */
typedef struct SpRunner
{
	const char *name;
	GiEngineKind engine;		/* gi_compact, when plan_scan < 0 */
	int			plan_scan;		/* >= 0: gi_space_compact_plan_host */
	int			plan_write;
} SpRunner;

/* Run one compaction and check it. */
static void
sp_check(const SpRunner *r, const uint64_t *mask, const void *values, int vb, size_t n,
		 size_t chunk, const void *want, size_t nwant, void *out, const char *label)
{
	GiError		err = {GI_OK, ""};
	GiStatus	st;
	size_t		nout = (size_t) -1;
	char		what[512];

	memset(out, POISON_BYTE, (nwant + GUARD) * vb);
	if (r->plan_scan < 0)
		st = gi_compact(r->engine, mask, values, vb, n, chunk, out, &nout, &err);
	else
	{
		GiSpacePlan plan;

		plan.chunk_bits = chunk;
		plan.scan = (GiSpaceScan) r->plan_scan;
		plan.write = (GiSpaceWrite) r->plan_write;
		st = gi_space_compact_plan_host(&plan, mask, values, vb, n, out, &nout, &err);
	}
	snprintf(what, sizeof(what), "compact %s %s value_bytes=%d n=%zu chunk=%zu: %s%s%s", r->name,
			 label, vb, n, chunk, st == GI_OK ? "" : "error ", st == GI_OK ? "" : err.message,
			 st == GI_OK && nout != nwant ? " (wrong count)" : "");
	test_record(&tr, st == GI_OK && sp_same(out, nout, want, nwant, vb), what);
}

/* Every compaction case of one size. */
static void
sp_compact_size(size_t n, const SpRunner *runners, int nrunners, size_t big)
{
	static const double densities[] = {1e-4, 0.01, 0.1, 0.5, 0.97};
	static const size_t chunks[] = {0, 512, 1024, 2048, 4096};
	size_t		words = (n + 63) / 64;
	uint64_t   *mask = test_xmalloc((words + 1) * sizeof(uint64_t));
	uint64_t   *values = test_xmalloc(n * sizeof(uint64_t));
	uint64_t   *want = test_xmalloc((n + GUARD) * sizeof(uint64_t));
	uint64_t   *out = test_xmalloc((n + GUARD) * sizeof(uint64_t));
	int			vb;

	for (size_t i = 0; i < n; i++)
		values[i] = test_rnd(&tr) | 1;		/* never zero */
	for (vb = 4; vb <= 8; vb += 4)
		for (int shape = 0; shape < NSHAPES; shape++)
		{
			int			nd = (shape == SHAPE_UNIFORM || shape == SHAPE_ONE_CLUSTER ||
							  shape == SHAPE_32_CLUSTERS) ? 5 : 1;

			for (int d = 0; d < nd; d++)
			{
				double		density = nd > 1 ? densities[d] : 0;
				char		label[96];
				size_t		nwant;

				/* big sizes (and GI_UNIT_QUICK): fewer shapes and densities */
				if (n >= big && (shape == SHAPE_FIRST || shape == SHAPE_LAST))
					continue;
				if ((n >= big || sp_quick) && nd > 1 && d != 1 && d != 3)
					continue;
				sp_gen_mask(mask, n, shape, density);
				nwant = sp_reference(mask, values, vb, n, want);
				snprintf(label, sizeof(label), "%s%s%.4g", shape_names[shape],
						 nd > 1 ? " density=" : "", nd > 1 ? density : 0.0);
				if (nd == 1)
					snprintf(label, sizeof(label), "%s", shape_names[shape]);
				for (int r = 0; r < nrunners; r++)
					for (int c = 0; c < 5; c++)
					{
						/* plans: every chunk at small sizes, two at big ones */
						if ((n >= big || sp_quick) && c != 1 && c != 4)
							continue;
						sp_check(&runners[r], mask, values, vb, n, chunks[c], want, nwant,
								 out, label);
					}
			}
		}
	free(mask);
	free(values);
	free(want);
	free(out);
}

/* A probe near the keys, or an extreme. */
static int64_t
sp_probe(const int64_t *keys, size_t n, int64_t tmin, int64_t tmax)
{
	uint64_t	r = test_below(&tr, 16);

	if (r == 0)
		return INT64_MIN;
	if (r == 1)
		return INT64_MAX;
	if (r == 2)
		return tmin;
	if (r == 3)
		return tmax;
	if (r < 8 || n == 0)
	{
		uint64_t	width = (uint64_t) tmax - (uint64_t) tmin + 1;	/* 0: all */

		return (int64_t) ((uint64_t) tmin + (width ? test_below(&tr, width) : test_rnd(&tr)));
	}
	/* a neighbour of a stored key; wraps at the int64 extremes on purpose */
	return (int64_t) ((uint64_t) keys[test_below(&tr, n)] + test_below(&tr, 5) - 2);
}

/* gi_image_select on one engine against brute force, one image. */
static void
sp_select_image(GiEngineKind engine, GiStructure structure, int kb, size_t n,
				const int64_t *keys, const uint64_t *payloads)
{
	GiBuildParams params = {engine, structure, kb, 0};
	GiImage    *image = NULL;
	GiError		err = {GI_OK, ""};
	GiStatus	st;
	int64_t		tmin = kb == 2 ? INT16_MIN : kb == 4 ? INT32_MIN : INT64_MIN;
	int64_t		tmax = kb == 2 ? INT16_MAX : kb == 4 ? INT32_MAX : INT64_MAX;
	static const size_t nprobes_list[] = {0, 1, 7, 300};
	char		what[256];

	st = gi_image_build(&params, keys, payloads, n, &image, &err);
	snprintf(what, sizeof(what), "select %s %s build key_bytes=%d n=%zu: %s",
			 gi_engine_name(engine), gi_structure_name(structure), kb, n, err.message);
	test_record(&tr, st == GI_OK, what);
	if (st != GI_OK)
		return;
	for (int op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
		for (int pi = 0; pi < 4; pi++)
			for (int order = GI_ORDER_KEY; order <= GI_ORDER_PAYLOAD; order++)
			{
				size_t		np = nprobes_list[pi];
				int64_t    *lo = test_xmalloc(np * sizeof(int64_t));
				int64_t    *hi = test_xmalloc(np * sizeof(int64_t));
				unsigned char *hit = calloc(n ? n : 1, 1);
				uint64_t   *want = test_xmalloc(n * sizeof(uint64_t));
				uint64_t   *got = NULL;
				size_t		nwant = 0,
							ngot = (size_t) -1;
				int			ok;

				for (size_t i = 0; i < np; i++)
				{
					lo[i] = sp_probe(keys, n, tmin, tmax);
					hi[i] = sp_probe(keys, n, tmin, tmax);
					if (op == GI_OP_RANGE && test_below(&tr, 4) != 0 && hi[i] < lo[i])
					{
						int64_t		t = lo[i];	/* mostly lo <= hi, some empty */

						lo[i] = hi[i];
						hi[i] = t;
					}
				}
				for (size_t i = 0; i < np; i++)
				{
					uint64_t	f,
								l;

					test_expect(keys, n, (GiOp) op, lo[i], hi[i], &f, &l);
					for (uint64_t j = f; j < l; j++)
						hit[j] = 1;
				}
				for (size_t j = 0; j < n; j++)
					if (hit[j])
						want[nwant++] = payloads[j];
				if (order == GI_ORDER_PAYLOAD)
					qsort(want, nwant, sizeof(uint64_t), test_cmp_u64);
				st = gi_image_select(image, (GiOp) op, lo, op == GI_OP_RANGE ? hi : NULL, np,
									 (GiSelectOrder) order, &got, &ngot, &err);
				if (st == GI_ERR_UNSUPPORTED && engine == GI_ENGINE_GPU)
				{
					tr.skipped++;
					free(lo), free(hi), free(hit), free(want);
					continue;
				}
				ok = st == GI_OK && ngot == nwant &&
					(nwant == 0 || memcmp(got, want, nwant * sizeof(uint64_t)) == 0);
				snprintf(what, sizeof(what),
						 "select %s %s key_bytes=%d n=%zu op=%d probes=%zu order=%s: %s got %zu want %zu",
						 gi_engine_name(engine), gi_structure_name(structure), kb, n, op, np,
						 order == GI_ORDER_KEY ? "key" : "payload",
						 st == GI_OK ? "" : err.message, ngot, nwant);
				test_record(&tr, ok, what);
				gi_free(got);
				free(lo), free(hi), free(hit), free(want);
			}
	gi_image_free(image);
}

/* gi_image_select cases: key widths, sizes, duplicate-heavy keys. */
static void
sp_select_cases(int gpu)
{
	static const size_t sizes[] = {0, 1, 100, 5000, 200000};

	for (int kb = 2; kb <= 8; kb *= 2)
		for (int si = 0; si < 5; si++)
		{
			size_t		n = sizes[si];
			int64_t    *raw = test_xmalloc(n * sizeof(int64_t));
			uint64_t   *pay = test_xmalloc(n * sizeof(uint64_t));
			int64_t    *keys = test_xmalloc(n * sizeof(int64_t));
			uint64_t   *pays = test_xmalloc(n * sizeof(uint64_t));
			int64_t		span = kb == 2 ? 65536 : (int64_t) (n * 3 + 10);
			int64_t		tmin = kb == 2 ? INT16_MIN : kb == 4 ? INT32_MIN : INT64_MIN;
			GiError		err;

			for (size_t i = 0; i < n; i++)
			{
				/* dense keys (duplicates) near the type's minimum, some extremes */
				raw[i] = tmin + (int64_t) test_below(&tr, (uint64_t) span);
				if (test_below(&tr, 50) == 0)
					raw[i] = kb == 2 ? INT16_MAX : kb == 4 ? INT32_MAX : INT64_MAX;
				pay[i] = test_rnd(&tr) >> 16;
			}
			if (gi_sort_pairs(raw, pay, n, keys, pays, &err) != GI_OK)
			{
				test_record(&tr, 0, "select: gi_sort_pairs");
				continue;
			}
			for (int st = GI_STRUCT_BTREE; st <= GI_STRUCT_VEB; st++)
			{
				sp_select_image(GI_ENGINE_CPU, (GiStructure) st, kb, n, keys, pays);
				if (gpu)
					sp_select_image(GI_ENGINE_GPU, (GiStructure) st, kb, n, keys, pays);
			}
			free(raw), free(pay), free(keys), free(pays);
		}
}

/* Bad arguments are refused. */
static void
sp_error_cases(void)
{
	uint64_t	mask[2] = {1, 0};
	uint32_t	values[2] = {7, 8};
	uint32_t	out[2];
	size_t		nout;
	GiError		err;

	test_record(&tr, gi_compact(GI_ENGINE_CPU, mask, values, 2, 2, 0, out, &nout, &err) == GI_ERR_INVALID,
			  "compact: value width 2 refused");
	test_record(&tr, gi_compact(GI_ENGINE_CPU, mask, values, 4, 2, 768, out, &nout, &err) == GI_ERR_INVALID,
			  "compact: chunk 768 refused");
	test_record(&tr, gi_compact(GI_ENGINE_CPU, mask, values, 4, 2, 8192, out, &nout, &err) == GI_ERR_INVALID,
			  "compact: chunk 8192 refused");
	test_record(&tr, gi_compact(GI_ENGINE_CPU, NULL, values, 4, 2, 0, out, &nout, &err) == GI_ERR_INVALID,
			  "compact: missing mask refused");
	nout = 99;
	test_record(&tr, gi_compact(GI_ENGINE_CPU, NULL, NULL, 4, 0, 0, NULL, &nout, &err) == GI_OK && nout == 0,
			  "compact: n = 0 with no arrays");
}

/* Run every SPACE test; returns the number of failures. */
int
gi_test_space_main(void)
{
	static const size_t base_sizes[] = {0, 1, 63, 64, 65, 127, 511, 512, 513, 1000,
	2047, 4095, 4096, 4097, 8193, 65537, 100003, 262145, 1000000, 10000000};
	SpRunner	runners[16];
	int			nrunners = 0;
	size_t		max_size = 10000000;
	size_t		min_size = 0;
	size_t		big = 1000000;
	char		why[256] = "";
	const char *s;
	int			gpu;
	time_t		t0 = time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_run_start(&tr, "space", 0);
	s = getenv("GI_UNIT_MAX");
	if (s && *s)
		max_size = strtoull(s, NULL, 0);
	s = getenv("GI_UNIT_MIN");
	if (s && *s)
		min_size = strtoull(s, NULL, 0);
	s = getenv("GI_UNIT_QUICK");
	sp_quick = s != NULL && *s != '\0';
	gpu = gi_gpu_available(why, sizeof(why));
	printf("test_space: seed=%" PRIu64 " (GI_SEED=%" PRIu64 " to repeat), sizes up to %zu, gpu: %s%s\n",
		   tr.seed, tr.seed, max_size, gpu ? "yes" : why,
		   gpu && !gi_space_compact_plan_host ? " (plans: gpu_space.cu not linked)" : "");

	runners[nrunners++] = (SpRunner) {"cpu", GI_ENGINE_CPU, -1, 0};
	if (gpu)
	{
		runners[nrunners++] = (SpRunner) {"gpu", GI_ENGINE_GPU, -1, 0};
		if (gi_space_compact_plan_host)
		{
			static char names[9][40];

			for (int sc = 0; sc < 3; sc++)
				for (int wr = 0; wr < 3; wr++)
				{
					GiSpacePlan p = {0, (GiSpaceScan) sc, (GiSpaceWrite) wr};
					char	   *nm = names[sc * 3 + wr];

					gi_space_plan_name(&p, nm, sizeof(names[0]));
					*strrchr(nm, '/') = '\0';		/* drop the chunk size */
					runners[nrunners++] = (SpRunner) {nm, GI_ENGINE_GPU, sc, wr};
				}
		}
	}

	sp_error_cases();
	for (size_t i = 0; i < sizeof(base_sizes) / sizeof(base_sizes[0]); i++)
	{
		size_t		n = base_sizes[i];

		if (n > max_size || n < min_size)
			continue;
		sp_compact_size(n, runners, nrunners, big);
		printf("test_space: compaction n=%zu done, %ld passed, %ld failed (%lds)\n", n, tr.passed,
			   tr.failed, (long) (time(NULL) - t0));
	}
	if (!sp_quick)
		sp_select_cases(gpu);
	if (tr.skipped)
		printf("test_space: %ld GPU select checks skipped (gi_image_select unsupported on the GPU engine)\n",
			   tr.skipped);
	printf("test_space: %ld passed, %ld failed\n", tr.passed, tr.failed);
	return (int) (tr.failed > 0);
}

/* The counts of the last gi_test_space_main run (for test_engine's total). */
void
gi_test_space_counts(long *passed, long *failed)
{
	*passed = tr.passed;
	*failed = tr.failed;
}

#ifdef GI_TEST_SPACE_MAIN
/* Standalone test binary (make -C bench/space test). */
int
main(void)
{
	int			rc = gi_test_space_main();

	printf("%ld passed, %ld failed\n", tr.passed, tr.failed);
	return rc;
}
#endif
