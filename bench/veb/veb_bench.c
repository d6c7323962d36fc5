/*
 * veb_bench.c - CPU micro-benchmark of the van Emde Boas twin
 * (engine/cpu_veb.c), no PostgreSQL.
 *
 * For each size and each of the paper's distributions (linear, uniform,
 * normal, lognormal, two shifted normals) of int4 keys (32-bit universe):
 *  - build: the parallel-style build from sorted keys (on every core and on
 *    one), the host sort it needs, and the one-at-a-time insertion build
 *    (Algorithm 2) of the same keys in their generated order;
 *  - predecessor queries/s for a batch of random probes drawn from the
 *    same distribution with another seed (uniform over the key range for
 *    linear), against the CPU B+ tree on the same batch, all cores and one;
 *  - space: clusters, hash-table bytes, overhead against the de-duplicated
 *    raw keys.
 * Every vEB answer is checked against the B+ tree's.  Times are the best of
 * REPS runs.  Usage: veb_bench [n ...] (default 1000000 10000000);
 * VEB_BENCH_PROBES sets the batch size (default 10^6).
 */
#include "engine.h"
#include "veb_classic.h"
#include "../../test/common/test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS		3
#define NDISTS		5
#define MAX_SIZES	8

static const char *const dist_names[NDISTS] = {
	"linear", "uniform", "normal", "lognormal", "2normals"
};

static TestRun gen;				/* the random stream (gen.rng) */

/* Uniform double in (0, 1). */
static double
rnd_unit(void)
{
	return ((test_rnd(&gen) >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static double
rnd_normal(void)
{
	return sqrt(-2.0 * log(rnd_unit())) * cos(6.283185307179586 * rnd_unit());
}

/* A double clamped into int32 and truncated. */
static int64_t
clamp32(double v)
{
	if (v < INT32_MIN)
		return INT32_MIN;
	if (v > INT32_MAX)
		return INT32_MAX;
	return (int64_t) floor(v);
}

/* One value of distribution dist; linear counts with *next. */
static int64_t
draw(int dist, int64_t *next)
{
	switch (dist)
	{
		case 0:
			return (*next)++;
		case 1:
			return (int64_t) (int32_t) (uint32_t) test_rnd(&gen);
		case 2:
			return clamp32(rnd_normal() * 268435456.0);	/* sigma 2^28 */
		case 3:
			return clamp32(exp(14.0 + 1.5 * rnd_normal()));
		default:
			return clamp32((test_rnd(&gen) & 1 ? 536870912.0 : -536870912.0) +
						   rnd_normal() * 67108864.0);
	}
}

/* Build an image or die; returns the wall time in ms through *ms. */
static GiImage *
build(GiStructure structure, const int64_t *sorted, size_t n, double *ms)
{
	GiBuildParams params = {GI_ENGINE_CPU, structure, 4, 0};
	GiImage    *image = NULL;
	GiError		err;
	double		t0 = test_now_ms();

	if (gi_image_build(&params, sorted, NULL, n, &image, &err) != GI_OK)
	{
		fprintf(stderr, "veb_bench: build failed: %s\n", err.message);
		exit(2);
	}
	*ms = test_now_ms() - t0;
	return image;
}

/* Best wall time of REPS predecessor batches, in ms. */
static double
time_pred(GiImage *image, const int64_t *probes, size_t np, uint64_t *first,
		  uint64_t *last)
{
	double		best = 1e300;
	int			r;

	for (r = 0; r < REPS; r++)
	{
		GiError		err;
		double		t0 = test_now_ms();

		if (gi_image_query(image, GI_OP_PRED, probes, NULL, np, first, last,
						   &err) != GI_OK)
		{
			fprintf(stderr, "veb_bench: query failed: %s\n", err.message);
			exit(2);
		}
		if (test_now_ms() - t0 < best)
			best = test_now_ms() - t0;
	}
	return best;
}

typedef struct Row
{
	size_t		n;
	int			dist;
	GiImageInfo veb;
	GiImageInfo btree;
	double		sort_ms;
	double		veb_ms;			/* build, all cores */
	double		veb1_ms;		/* build, one thread */
	double		insert_ms;
	uint64_t	insert_bytes;
	double		btree_ms;
	double		q_veb;			/* predecessor queries/s, all cores */
	double		q_btree;
	double		q_veb1;			/* one thread */
	double		q_btree1;
	bool		same;			/* vEB answers == B+ tree answers */
} Row;

/* Measure one size and distribution. */
static void
measure(Row *row, size_t n, int dist, size_t np)
{
	int64_t    *keys = test_xmalloc(n * sizeof(int64_t));
	int64_t    *sorted = test_xmalloc(n * sizeof(int64_t));
	int64_t    *probes = test_xmalloc(np * sizeof(int64_t));
	uint64_t   *vf = test_xmalloc(np * sizeof(uint64_t));
	uint64_t   *vl = test_xmalloc(np * sizeof(uint64_t));
	uint64_t   *bf = test_xmalloc(np * sizeof(uint64_t));
	uint64_t   *bl = test_xmalloc(np * sizeof(uint64_t));
	GiVebInsertTree *tree;
	GiImage    *veb;
	GiImage    *btree;
	GiError		err;
	int64_t		next = 0;
	double		t0;
	double		ms;
	size_t		i;
	int			r;

	memset(row, 0, sizeof(*row));
	row->n = n;
	row->dist = dist;
	gen.rng = 0x1234567ULL * (dist + 1) + n;
	for (i = 0; i < n; i++)
		keys[i] = draw(dist, &next);
	/* Linear data in generated order is sorted; shuffle it for insertion. */
	if (dist == 0)
		for (i = n - 1; i > 0; i--)
		{
			size_t		j = test_rnd(&gen) % (i + 1);
			int64_t		k = keys[i];

			keys[i] = keys[j];
			keys[j] = k;
		}
	gen.rng = 0x7654321ULL * (dist + 1) + n;
	for (i = 0; i < np; i++)
		probes[i] = dist == 0 ? (int64_t) (test_rnd(&gen) % n) : draw(dist, &next);

	row->sort_ms = 1e300;
	for (r = 0; r < REPS; r++)
	{
		t0 = test_now_ms();
		if (gi_sort_pairs(keys, NULL, n, sorted, NULL, &err) != GI_OK)
		{
			fprintf(stderr, "veb_bench: sort failed: %s\n", err.message);
			exit(2);
		}
		if (test_now_ms() - t0 < row->sort_ms)
			row->sort_ms = test_now_ms() - t0;
	}

	/* Builds: best of REPS each (the insertion build once: it is slow). */
	row->veb_ms = row->veb1_ms = row->btree_ms = 1e300;
	for (r = 0; r < REPS; r++)
	{
		veb = build(GI_STRUCT_VEB, sorted, n, &ms);
		if (ms < row->veb_ms)
			row->veb_ms = ms;
		gi_image_free(veb);
		setenv("GI_CPU_THREADS", "1", 1);
		veb = build(GI_STRUCT_VEB, sorted, n, &ms);
		unsetenv("GI_CPU_THREADS");
		if (ms < row->veb1_ms)
			row->veb1_ms = ms;
		gi_image_free(veb);
		btree = build(GI_STRUCT_BTREE, sorted, n, &ms);
		if (ms < row->btree_ms)
			row->btree_ms = ms;
		gi_image_free(btree);
	}
	t0 = test_now_ms();
	if (gi_veb_insert_build(keys, n, 4, &tree, &err) != GI_OK)
	{
		fprintf(stderr, "veb_bench: insertion build failed: %s\n", err.message);
		exit(2);
	}
	row->insert_ms = test_now_ms() - t0;
	row->insert_bytes = gi_veb_insert_bytes(tree);
	gi_veb_insert_free(tree);

	/* Predecessor batches on both structures, all cores and one thread. */
	veb = build(GI_STRUCT_VEB, sorted, n, &ms);
	btree = build(GI_STRUCT_BTREE, sorted, n, &ms);
	gi_image_info(veb, &row->veb);
	gi_image_info(btree, &row->btree);
	row->q_veb = np / (time_pred(veb, probes, np, vf, vl) / 1000.0);
	row->q_btree = np / (time_pred(btree, probes, np, bf, bl) / 1000.0);
	row->same = true;
	for (i = 0; i < np; i++)
		if ((bf[i] == bl[i]) ? (vf[i] != vl[i]) : (vf[i] != bf[i] || vl[i] != bl[i]))
			row->same = false;
	setenv("GI_CPU_THREADS", "1", 1);
	row->q_veb1 = np / (time_pred(veb, probes, np, vf, vl) / 1000.0);
	row->q_btree1 = np / (time_pred(btree, probes, np, bf, bl) / 1000.0);
	unsetenv("GI_CPU_THREADS");
	gi_image_free(veb);
	gi_image_free(btree);

	free(keys);
	free(sorted);
	free(probes);
	free(vf);
	free(vl);
	free(bf);
	free(bl);
}

/* Print the three tables. */
static void
print_tables(const Row *rows, int nrows, size_t np)
{
	int			i;

	printf("\nBuild (ms; best of %d; insertion build once, keys in generated order)\n\n", REPS);
	printf("| n | distribution | distinct | host sort | vEB build, 2 threads | vEB build, 1 thread | sort + vEB (2 thr) | insertion build (Alg. 2) | insertion / (sort + vEB) | insertion / vEB 1 thr | B+ tree build |\n");
	printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < nrows; i++)
	{
		const Row  *r = &rows[i];

		printf("| %zu | %s | %" PRIu64 " | %.1f | %.1f | %.1f | %.1f | %.1f | %.1fx | %.1fx | %.1f |\n",
			   r->n, dist_names[r->dist], r->veb.distinct_keys, r->sort_ms,
			   r->veb_ms, r->veb1_ms, r->sort_ms + r->veb_ms, r->insert_ms,
			   r->insert_ms / (r->sort_ms + r->veb_ms),
			   r->insert_ms / r->veb1_ms, r->btree_ms);
	}
	printf("\nPredecessor queries (%zu random probes a batch, millions/s, best of %d)\n\n", np, REPS);
	printf("| n | distribution | vEB, 2 thr | B+ tree, 2 thr | vEB / B+ tree | vEB, 1 thr | B+ tree, 1 thr | vEB / B+ tree | same answers |\n");
	printf("|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
	for (i = 0; i < nrows; i++)
	{
		const Row  *r = &rows[i];

		printf("| %zu | %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | %s |\n",
			   r->n, dist_names[r->dist], r->q_veb / 1e6, r->q_btree / 1e6,
			   r->q_veb / r->q_btree, r->q_veb1 / 1e6, r->q_btree1 / 1e6,
			   r->q_veb1 / r->q_btree1, r->same ? "yes" : "NO");
	}
	printf("\nSpace (MiB; overhead = (clusters + hash tables) / (distinct keys x 4 bytes))\n\n");
	printf("| n | distribution | clusters (with 16-bit leaves) | records (w >= 8) | hash tables | vEB overhead | vEB host (with run array) | B+ tree host | insertion tree |\n");
	printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < nrows; i++)
	{
		const Row  *r = &rows[i];

		printf("| %zu | %s | %" PRIu64 " | %" PRIu64 " | %.1f | %.2fx | %.1f | %.1f | %.1f |\n",
			   r->n, dist_names[r->dist], r->veb.clusters, r->veb.nodes,
			   r->veb.hash_bytes / 1048576.0, r->veb.space_overhead,
			   r->veb.host_bytes / 1048576.0, r->btree.host_bytes / 1048576.0,
			   r->insert_bytes / 1048576.0);
	}
}

/* Run every size and distribution; print the tables. */
int
main(int argc, char **argv)
{
	size_t		sizes[MAX_SIZES] = {1000000, 10000000};
	int			nsizes = 2;
	size_t		np = 1000000;
	const char *s = getenv("VEB_BENCH_PROBES");
	Row		   *rows;
	int			nrows = 0;
	int			i;
	int			d;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
	{
		nsizes = 0;
		for (i = 1; i < argc && nsizes < MAX_SIZES; i++)
			sizes[nsizes++] = strtoull(argv[i], NULL, 0);
	}
	if (s && *s)
		np = strtoull(s, NULL, 0);
	rows = test_xmalloc(sizeof(Row) * nsizes * NDISTS);
	printf("veb_bench: int4 keys (32-bit universe), %ld cores, batches of %zu probes\n",
		   sysconf(_SC_NPROCESSORS_ONLN), np);
	for (i = 0; i < nsizes; i++)
		for (d = 0; d < NDISTS; d++)
		{
			measure(&rows[nrows], sizes[i], d, np);
			fprintf(stderr, "  n=%zu %s done\n", sizes[i], dist_names[d]);
			nrows++;
		}
	print_tables(rows, nrows, np);
	for (i = 0; i < nrows; i++)
		if (!rows[i].same)
			return 1;
	return 0;
}
