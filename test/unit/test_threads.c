/*
 * test_threads.c - the engine under several threads at once, as engine.h
 * allows it and the gpuidx service's query threads use it: eight threads
 * query one CPU image at once (a bulk-built B+ tree, a B+ tree after batch
 * insertion, a vEB tree), each with its own op and probes, many times over,
 * while the main thread describes the image; with a device, four threads
 * each query a GPU image of their own at once (the pinned staging slots
 * are shared by the engine).  Every answer is checked against brute force.
 * gi_test_threads_main(), run by test_engine's main.
 */
#include "engine.h"
#include "test_util.h"

#include <pthread.h>
#include <string.h>

#define NKEYS		200000
#define NPROBES		70000		/* more than one CPU-engine thread's share */
#define ROUNDS		12
#define CPU_THREADS	8
#define GPU_THREADS	4

static TestRun tr;				/* seed, random stream, counts */

/* One querying thread: its image, batch, expected answers and verdict. */
typedef struct QueryThread
{
	GiImage    *image;
	GiOp		op;
	int64_t    *probes;
	int64_t    *hi;				/* GI_OP_RANGE only */
	uint64_t   *want_first;
	uint64_t   *want_last;
	int			wrong_rounds;	/* rounds whose answers differed */
	GiStatus	status;			/* the first error, or GI_OK */
	char		message[256];
} QueryThread;

/*
 * Do first / last equal the expected ranges?  An empty answer's position is
 * the engine's to choose (as test_engine.c checks it): only empty is asked.
 */
static bool
same_answers(const QueryThread *q, const uint64_t *first, const uint64_t *last)
{
	size_t		j;

	for (j = 0; j < NPROBES; j++)
	{
		bool		want_empty = q->want_first[j] == q->want_last[j];

		if (want_empty ? first[j] != last[j] :
			(first[j] != q->want_first[j] || last[j] != q->want_last[j]))
			return false;
	}
	return true;
}

/* Query the thread's batch ROUNDS times and compare each answer. */
static void *
query_thread(void *arg)
{
	QueryThread *q = (QueryThread *) arg;
	uint64_t   *first = test_xmalloc(NPROBES * sizeof(uint64_t));
	uint64_t   *last = test_xmalloc(NPROBES * sizeof(uint64_t));
	int			r;

	for (r = 0; r < ROUNDS && q->status == GI_OK; r++)
	{
		GiError		err;
		GiStatus	st;

		memset(first, 0xff, NPROBES * sizeof(uint64_t));
		st = gi_image_query(q->image, q->op, q->probes,
							q->op == GI_OP_RANGE ? q->hi : NULL, NPROBES,
							first, last, &err);
		if (st != GI_OK)
		{
			q->status = st;
			snprintf(q->message, sizeof(q->message), "%s", err.message);
			break;
		}
		if (!same_answers(q, first, last))
			q->wrong_rounds++;
	}
	free(first);
	free(last);
	return NULL;
}

/* Fill thread i's batch (op i % 4) and its brute-force answers over keys. */
static void
prepare_thread(QueryThread *q, int i, GiImage *image, const int64_t *keys,
			   uint64_t n)
{
	size_t		j;

	memset(q, 0, sizeof(*q));
	q->image = image;
	q->op = (GiOp) (GI_OP_POINT + i % 4);
	q->probes = test_xmalloc(NPROBES * sizeof(int64_t));
	q->hi = test_xmalloc(NPROBES * sizeof(int64_t));
	q->want_first = test_xmalloc(NPROBES * sizeof(uint64_t));
	q->want_last = test_xmalloc(NPROBES * sizeof(uint64_t));
	for (j = 0; j < NPROBES; j++)
	{
		q->probes[j] = test_between(&tr, -1100000, 1100000);
		q->hi[j] = q->probes[j] + (int64_t) test_below(&tr, 200);
		test_expect(keys, n, q->op, q->probes[j], q->hi[j],
					&q->want_first[j], &q->want_last[j]);
	}
}

/* Free a thread's arrays. */
static void
release_thread(QueryThread *q)
{
	free(q->probes);
	free(q->hi);
	free(q->want_first);
	free(q->want_last);
}

/* Start nthreads query threads, join them, record one check for each. */
static void
run_threads(QueryThread *qs, int nthreads, const char *what, GiImage *describe)
{
	pthread_t	threads[CPU_THREADS];
	bool		started[CPU_THREADS];
	int			i;

	for (i = 0; i < nthreads; i++)
		started[i] = pthread_create(&threads[i], NULL, query_thread, &qs[i]) == 0;
	/* describing the image while it is queried (timings under the lock) */
	if (describe)
	{
		int			k;

		for (k = 0; k < 200; k++)
		{
			GiImageInfo info;

			gi_image_info(describe, &info);
		}
	}
	for (i = 0; i < nthreads; i++)
	{
		char		msg[400];

		if (started[i])
			pthread_join(threads[i], NULL);
		else
			query_thread(&qs[i]);
		snprintf(msg, sizeof(msg), "%s, thread %d (op %d): %d wrong rounds of %d%s%s",
				 what, i, (int) qs[i].op, qs[i].wrong_rounds, ROUNDS,
				 qs[i].status == GI_OK ? "" : ", error: ", qs[i].message);
		test_record(&tr, qs[i].status == GI_OK && qs[i].wrong_rounds == 0, msg);
	}
}

/* n sorted random keys (with duplicates) in [-10^6, 10^6]. */
static int64_t *
sorted_keys(uint64_t n)
{
	int64_t    *keys = test_xmalloc(n * sizeof(int64_t));
	TestPair   *pairs = test_xmalloc(n * sizeof(TestPair));
	uint64_t	i;

	for (i = 0; i < n; i++)
	{
		pairs[i].key = test_between(&tr, -1000000, 1000000);
		pairs[i].payload = i;
	}
	qsort(pairs, n, sizeof(TestPair), test_cmp_pair);
	for (i = 0; i < n; i++)
		keys[i] = pairs[i].key;
	free(pairs);
	return keys;
}

/* Merge sorted a[na] and b[nb] into a new sorted array. */
static int64_t *
merge_keys(const int64_t *a, uint64_t na, const int64_t *b, uint64_t nb)
{
	int64_t    *out = test_xmalloc((na + nb) * sizeof(int64_t));
	uint64_t	i = 0,
				j = 0,
				k = 0;

	while (i < na || j < nb)
		out[k++] = (j >= nb || (i < na && a[i] <= b[j])) ? a[i++] : b[j++];
	return out;
}

/* Eight threads on one CPU image of structure (inserted: after insertion). */
static void
cpu_case(GiStructure structure, bool inserted)
{
	GiBuildParams params = {GI_ENGINE_CPU, structure, 8, 0};
	int64_t    *keys = sorted_keys(NKEYS);
	int64_t    *all = keys;
	uint64_t	n = NKEYS;
	GiImage    *image = NULL;
	GiError		err;
	QueryThread qs[CPU_THREADS];
	char		what[128];
	int			i;

	if (gi_image_build(&params, keys, NULL, NKEYS, &image, &err) != GI_OK)
	{
		test_record(&tr, false, err.message);
		free(keys);
		return;
	}
	if (inserted)
	{
		int64_t    *more = sorted_keys(NKEYS / 4);

		if (gi_image_insert(image, more, NULL, NKEYS / 4, &err) != GI_OK)
		{
			test_record(&tr, false, err.message);
			gi_image_free(image);
			free(keys);
			free(more);
			return;
		}
		all = merge_keys(keys, NKEYS, more, NKEYS / 4);
		n = NKEYS + NKEYS / 4;
		free(more);
	}
	for (i = 0; i < CPU_THREADS; i++)
		prepare_thread(&qs[i], i, image, all, n);
	snprintf(what, sizeof(what), "cpu %s%s image, %d threads at once",
			 structure == GI_STRUCT_VEB ? "veb" : "btree",
			 inserted ? " (after insertion)" : "", CPU_THREADS);
	run_threads(qs, CPU_THREADS, what, image);
	for (i = 0; i < CPU_THREADS; i++)
		release_thread(&qs[i]);
	gi_image_free(image);
	if (all != keys)
		free(all);
	free(keys);
}

/* Four threads, each on a GPU image of its own, at once. */
static void
gpu_case(GiStructure structure)
{
	GiBuildParams params = {GI_ENGINE_GPU, structure, 8, 0};
	GiImage    *images[GPU_THREADS] = {NULL};
	int64_t    *keys[GPU_THREADS] = {NULL};
	QueryThread qs[GPU_THREADS];
	char		what[128];
	int			i;

	for (i = 0; i < GPU_THREADS; i++)
	{
		GiError		err;

		keys[i] = sorted_keys(NKEYS);
		if (gi_image_build(&params, keys[i], NULL, NKEYS, &images[i], &err) != GI_OK)
		{
			test_record(&tr, false, err.message);
			goto done;
		}
	}
	for (i = 0; i < GPU_THREADS; i++)
		prepare_thread(&qs[i], i, images[i], keys[i], NKEYS);
	snprintf(what, sizeof(what), "gpu %s images, one per thread, %d at once",
			 structure == GI_STRUCT_VEB ? "veb" : "btree", GPU_THREADS);
	run_threads(qs, GPU_THREADS, what, NULL);
	for (i = 0; i < GPU_THREADS; i++)
		release_thread(&qs[i]);
done:
	for (i = 0; i < GPU_THREADS; i++)
	{
		gi_image_free(images[i]);
		free(keys[i]);
	}
}

/* Run every case; print this file's counts. */
int
gi_test_threads_main(void)
{
	char		why[256];

	test_run_start(&tr, "threads", 11);
	cpu_case(GI_STRUCT_BTREE, false);
	cpu_case(GI_STRUCT_BTREE, true);
	cpu_case(GI_STRUCT_VEB, false);
	if (gi_gpu_available(why, sizeof(why)))
	{
		gpu_case(GI_STRUCT_BTREE);
		gpu_case(GI_STRUCT_VEB);
	}
	printf("test_threads: %ld passed, %ld failed\n", tr.passed, tr.failed);
	return (int) (tr.failed > 0);
}

/* The counts of the last gi_test_threads_main run (for test_engine's total). */
void
gi_test_threads_counts(long *passed, long *failed)
{
	*passed = tr.passed;
	*failed = tr.failed;
}
