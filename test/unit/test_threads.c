/*
 * test_threads.c - the engine under several threads at once, as engine.h
 * allows it and the gpuidx service's query threads use it: eight threads
 * query one CPU image at once (a bulk-built B+ tree, a B+ tree after batch
 * insertion, a vEB tree), each with its own op and probes, many times over,
 * while the main thread describes the image.  With a device: four threads
 * each query a GPU image of their own at once (the pinned staging slots
 * are shared by the engine), and eight threads query ONE GPU image at once
 * (B+ tree with 4- and 8-byte keys, B+ tree after batch insertion, vEB),
 * each on its own stream, with batch sizes from 1 probe to past the tiled
 * search's sampling gate (2^22), sorted and random probes, and two of them
 * selecting payloads (gi_image_select, the first selection after an
 * insertion refreshing the payload copy) while the main thread describes
 * the image; that case runs on a CPU B+ tree too.  Every answer is checked
 * against brute force.  A small GI_UNIT_MAX (under 10^6, as the sanitizer
 * run sets) shrinks the shared-image cases (shared_cap).
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
#define SHARED_THREADS 8		/* threads on one GPU image */
#define MAX_THREADS	8

static TestRun tr;				/* seed, random stream, counts */

/*
 * The shared-image cases' batch cap and rounds: none and ROUNDS, or, with a
 * small GI_UNIT_MAX (under 10^6: the compute-sanitizer run sets 2000),
 * 4 x GI_UNIT_MAX probes (at least 4096) and 3 rounds.
 */
static size_t shared_cap = SIZE_MAX;
static int	shared_rounds = ROUNDS;

/* One querying thread: its image, batch, expected answers and verdict. */
typedef struct QueryThread
{
	GiImage    *image;
	GiOp		op;
	size_t		nprobes;
	int			rounds;			/* times the batch is asked */
	bool		sorted;			/* probes in ascending order */
	int64_t    *probes;
	int64_t    *hi;				/* GI_OP_RANGE only */
	uint64_t   *want_first;
	uint64_t   *want_last;
	/* gi_image_select instead of gi_image_query (payload order) */
	bool		select;
	uint64_t   *want_payloads;
	size_t		want_count;
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

	for (j = 0; j < q->nprobes; j++)
	{
		bool		want_empty = q->want_first[j] == q->want_last[j];

		if (want_empty ? first[j] != last[j] :
			(first[j] != q->want_first[j] || last[j] != q->want_last[j]))
			return false;
	}
	return true;
}

/* Select the thread's batch ROUNDS times and compare each answer. */
static void
select_rounds(QueryThread *q)
{
	int			r;

	for (r = 0; r < q->rounds && q->status == GI_OK; r++)
	{
		GiError		err;
		GiStatus	st;
		uint64_t   *out = NULL;
		size_t		nout = 0;

		st = gi_image_select(q->image, q->op, q->probes,
							 q->op == GI_OP_RANGE ? q->hi : NULL, q->nprobes,
							 GI_ORDER_PAYLOAD, &out, &nout, &err);
		if (st != GI_OK)
		{
			q->status = st;
			snprintf(q->message, sizeof(q->message), "%s", err.message);
			break;
		}
		if (nout != q->want_count ||
			(nout > 0 && memcmp(out, q->want_payloads, nout * sizeof(uint64_t)) != 0))
			q->wrong_rounds++;
		gi_free(out);
	}
}

/* Query the thread's batch ROUNDS times and compare each answer. */
static void *
query_thread(void *arg)
{
	QueryThread *q = (QueryThread *) arg;
	uint64_t   *first;
	uint64_t   *last;
	int			r;

	if (q->select)
	{
		select_rounds(q);
		return NULL;
	}
	first = test_xmalloc(q->nprobes * sizeof(uint64_t));
	last = test_xmalloc(q->nprobes * sizeof(uint64_t));
	for (r = 0; r < q->rounds && q->status == GI_OK; r++)
	{
		GiError		err;
		GiStatus	st;

		memset(first, 0xff, q->nprobes * sizeof(uint64_t));
		memset(last, 0xfe, q->nprobes * sizeof(uint64_t));
		st = gi_image_query(q->image, q->op, q->probes,
							q->op == GI_OP_RANGE ? q->hi : NULL, q->nprobes,
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

/*
 * Fill a batch of nprobes (sorted: ascending lower bounds) for op and its
 * brute-force answers over keys; a few probes lie far outside the keys
 * (past the int32 range), answered as the mathematical comparison says.
 */
static void
prepare_batch(QueryThread *q, GiImage *image, GiOp op, size_t nprobes, bool sorted,
			  const int64_t *keys, uint64_t n)
{
	size_t		j;

	memset(q, 0, sizeof(*q));
	q->image = image;
	q->op = op;
	q->nprobes = nprobes;
	q->rounds = ROUNDS;
	q->sorted = sorted;
	q->probes = test_xmalloc(nprobes * sizeof(int64_t));
	q->hi = test_xmalloc(nprobes * sizeof(int64_t));
	q->want_first = test_xmalloc(nprobes * sizeof(uint64_t));
	q->want_last = test_xmalloc(nprobes * sizeof(uint64_t));
	for (j = 0; j < nprobes; j++)
	{
		uint64_t	far = test_below(&tr, 1000);

		q->probes[j] = far == 0 ? -((int64_t) 1 << 40) : far == 1 ? (int64_t) 1 << 40 :
			test_between(&tr, -1100000, 1100000);
	}
	if (sorted)
		qsort(q->probes, nprobes, sizeof(int64_t), test_cmp_i64);
	for (j = 0; j < nprobes; j++)
	{
		q->hi[j] = q->probes[j] + (int64_t) test_below(&tr, 200);
		test_expect(keys, n, q->op, q->probes[j], q->hi[j],
					&q->want_first[j], &q->want_last[j]);
	}
}

/* Fill thread i's batch (op i % 4) and its brute-force answers over keys. */
static void
prepare_thread(QueryThread *q, int i, GiImage *image, const int64_t *keys,
			   uint64_t n)
{
	prepare_batch(q, image, (GiOp) (GI_OP_POINT + i % 4), NPROBES, false, keys, n);
}

/*
 * Turn q into a selection: the payloads (in ascending order, each once) of
 * the entries any of its expected ranges covers; payloads[i] is entry i's.
 */
static void
make_select(QueryThread *q, const uint64_t *payloads, uint64_t n)
{
	uint8_t    *hit = calloc(n ? n : 1, 1);
	size_t		j;
	uint64_t	i;

	if (hit == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	q->select = true;
	for (j = 0; j < q->nprobes; j++)
		for (i = q->want_first[j]; i < q->want_last[j]; i++)
			hit[i] = 1;
	q->want_payloads = test_xmalloc(n * sizeof(uint64_t));
	q->want_count = 0;
	for (i = 0; i < n; i++)
		if (hit[i])
			q->want_payloads[q->want_count++] = payloads[i];
	qsort(q->want_payloads, q->want_count, sizeof(uint64_t), test_cmp_u64);
	free(hit);
}

/* Free a thread's arrays. */
static void
release_thread(QueryThread *q)
{
	free(q->probes);
	free(q->hi);
	free(q->want_first);
	free(q->want_last);
	free(q->want_payloads);
}

/* Start nthreads query threads, join them, record one check for each. */
static void
run_threads(QueryThread *qs, int nthreads, const char *what, GiImage *describe)
{
	pthread_t	threads[MAX_THREADS];
	bool		started[MAX_THREADS];
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
		snprintf(msg, sizeof(msg), "%s, thread %d (%s op %d, %zu %s probes): %d wrong rounds of %d%s%s",
				 what, i, qs[i].select ? "select" : "query", (int) qs[i].op,
				 qs[i].nprobes, qs[i].sorted ? "sorted" : "random",
				 qs[i].wrong_rounds, qs[i].rounds,
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

/*
 * n entries in (key, payload) order: random keys (with duplicates) in
 * [-10^6, 10^6], payloads first_payload, first_payload + 1, ... before the
 * sort; keys into keys[], payloads into payloads[].
 */
static void
sorted_entries(uint64_t n, uint64_t first_payload, int64_t *keys, uint64_t *payloads)
{
	TestPair   *pairs = test_xmalloc(n * sizeof(TestPair));
	uint64_t	i;

	for (i = 0; i < n; i++)
	{
		pairs[i].key = test_between(&tr, -1000000, 1000000);
		pairs[i].payload = first_payload + i;
	}
	qsort(pairs, n, sizeof(TestPair), test_cmp_pair);
	for (i = 0; i < n; i++)
	{
		keys[i] = pairs[i].key;
		payloads[i] = pairs[i].payload;
	}
	free(pairs);
}

/*
 * The batches of the threads on one GPU image: every op, sizes from one
 * probe to past the tiled search's sampling gate (2^22, sorted so that the
 * gate picks the tiles), sorted and random orders.
 */
static const struct
{
	GiOp		op;
	size_t		nprobes;
	bool		sorted;
}			shared_batches[SHARED_THREADS] =
{
	{GI_OP_POINT, 1, false},
	{GI_OP_PRED, 37, true},
	{GI_OP_SUCC, 4099, false},
	{GI_OP_RANGE, 70000, true},
	{GI_OP_POINT, 300001, true},
	{GI_OP_PRED, 257, false},
	{GI_OP_SUCC, ((size_t) 1 << 22) + 5, true},
	{GI_OP_RANGE, 100000, false},
};

/*
 * Eight threads query ONE image at once (engine.h): each its own op, batch
 * size and order, ROUNDS times, while the main thread describes the image.
 * The last select_threads threads select payloads instead
 * (gi_image_select); after an insertion (inserted) the first of those
 * selections refreshes the payload copy while the others wait for it.
 * Every answer against brute force.  Written for the GPU engine (a stream
 * per thread); the CPU engine runs it too, which also checks the test.
 */
static void
shared_case(GiEngineKind engine, GiStructure structure, int key_bytes, bool inserted,
			int select_threads)
{
	GiBuildParams params = {engine, structure, key_bytes, 0};
	uint64_t	nmore = inserted ? NKEYS / 4 : 0;
	uint64_t	n = NKEYS + nmore;
	int64_t    *keys = test_xmalloc(n * sizeof(int64_t));
	uint64_t   *payloads = test_xmalloc(n * sizeof(uint64_t));
	GiImage    *image = NULL;
	GiError		err;
	QueryThread qs[SHARED_THREADS];
	char		what[160];
	int			i;

	sorted_entries(NKEYS, 0, keys, payloads);
	if (gi_image_build(&params, keys, payloads, NKEYS, &image, &err) != GI_OK)
	{
		test_record(&tr, false, err.message);
		goto done;
	}
	if (inserted)
	{
		int64_t    *mk = test_xmalloc(nmore * sizeof(int64_t));
		uint64_t   *mp = test_xmalloc(nmore * sizeof(uint64_t));
		TestPair   *all = test_xmalloc(n * sizeof(TestPair));
		uint64_t	j;

		sorted_entries(nmore, NKEYS, mk, mp);
		if (gi_image_insert(image, mk, mp, nmore, &err) != GI_OK)
		{
			test_record(&tr, false, err.message);
			free(mk);
			free(mp);
			free(all);
			goto done;
		}
		/* the image's entries: both sets in (key, payload) order */
		for (j = 0; j < NKEYS; j++)
			all[j].key = keys[j], all[j].payload = payloads[j];
		for (j = 0; j < nmore; j++)
			all[NKEYS + j].key = mk[j], all[NKEYS + j].payload = mp[j];
		qsort(all, n, sizeof(TestPair), test_cmp_pair);
		for (j = 0; j < n; j++)
			keys[j] = all[j].key, payloads[j] = all[j].payload;
		free(mk);
		free(mp);
		free(all);
	}
	for (i = 0; i < SHARED_THREADS; i++)
	{
		size_t		np = shared_batches[i].nprobes;

		prepare_batch(&qs[i], image, shared_batches[i].op, np < shared_cap ? np : shared_cap,
					  shared_batches[i].sorted, keys, n);
		qs[i].rounds = shared_rounds;
		if (i >= SHARED_THREADS - select_threads)
			make_select(&qs[i], payloads, n);
	}
	snprintf(what, sizeof(what), "%s %s image (%d-byte keys%s), %d threads on it at once",
			 gi_engine_name(engine), structure == GI_STRUCT_VEB ? "veb" : "btree", key_bytes,
			 inserted ? ", after insertion" : "", SHARED_THREADS);
	run_threads(qs, SHARED_THREADS, what, image);
	for (i = 0; i < SHARED_THREADS; i++)
		release_thread(&qs[i]);
done:
	gi_image_free(image);
	free(keys);
	free(payloads);
}

/* Run every case; print this file's counts. */
int
gi_test_threads_main(void)
{
	char		why[256];
	const char *max = getenv("GI_UNIT_MAX");

	test_run_start(&tr, "threads", 11);
	if (max && *max && strtoull(max, NULL, 0) < 1000000)
	{
		size_t		m = (size_t) strtoull(max, NULL, 0);

		shared_cap = m * 4 > 4096 ? m * 4 : 4096;
		shared_rounds = 3;
	}
	cpu_case(GI_STRUCT_BTREE, false);
	cpu_case(GI_STRUCT_BTREE, true);
	cpu_case(GI_STRUCT_VEB, false);
	shared_case(GI_ENGINE_CPU, GI_STRUCT_BTREE, 8, true, 2);
	if (gi_gpu_available(why, sizeof(why)))
	{
		gpu_case(GI_STRUCT_BTREE);
		gpu_case(GI_STRUCT_VEB);
		shared_case(GI_ENGINE_GPU, GI_STRUCT_BTREE, 8, false, 1);
		shared_case(GI_ENGINE_GPU, GI_STRUCT_BTREE, 4, false, 0);
		shared_case(GI_ENGINE_GPU, GI_STRUCT_BTREE, 8, true, 2);
		shared_case(GI_ENGINE_GPU, GI_STRUCT_VEB, 8, false, 1);
	}
	else
		printf("test_threads: GPU cases skipped (%s)\n", why);
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
