/*
 * cpu_engine.c - the CPU engine's entry points (engine_impl.h), dispatched
 * on the image's structure, and the small thread helper its structures
 * share.  No PostgreSQL headers here.
 */
#include "cpu_engine.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS		32

/* Build an image of the requested structure (engine_impl.h). */
GiStatus
gi_cpu_build(const GiBuildParams *params, const int64_t *keys,
			 const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	*out = NULL;
	switch (params->structure)
	{
		case GI_STRUCT_BTREE:
			return gi_cpu_btree_build(params, keys, payloads, n, out, err);
		case GI_STRUCT_VEB:
			return gi_cpu_veb_build(params, keys, payloads, n, out, err);
	}
	return gi_set_error(err, GI_ERR_INVALID, "unknown structure %d",
						(int) params->structure);
}

/* Free an image of either structure (engine_impl.h). */
void
gi_cpu_free(GiImage *image)
{
	if (image == NULL)
		return;
	if (image->structure == GI_STRUCT_VEB)
		gi_cpu_veb_free(image);
	else
		gi_cpu_btree_free(image);
}

/* Answer a batch on an image of either structure (engine_impl.h). */
GiStatus
gi_cpu_query(GiImage *image, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			 uint64_t *last, GiError *err)
{
	if (image->structure == GI_STRUCT_VEB)
		return gi_cpu_veb_query(image, op, probes, probes_hi, nprobes, first,
								last, err);
	return gi_cpu_btree_query(image, op, probes, probes_hi, nprobes, first,
							  last, err);
}

/* Describe an image of either structure (engine_impl.h). */
void
gi_cpu_info(const GiImage *image, GiImageInfo *info)
{
	if (image->structure == GI_STRUCT_VEB)
		gi_cpu_veb_info(image, info);
	else
		gi_cpu_btree_info(image, info);
}

/* GI_CPU_THREADS if set to a positive number, else 0. */
static long
env_threads(void)
{
	const char *s = getenv("GI_CPU_THREADS");
	char	   *end;
	long		v;

	if (s == NULL || *s == '\0')
		return 0;
	v = strtol(s, &end, 10);
	return (*end == '\0' && v > 0) ? v : 0;
}

/* Threads gi_cpu_parallel_for would use for count items. */
int
gi_cpu_threads_for(size_t count, size_t min_per_thread)
{
	long		nthreads = env_threads();

	if (nthreads == 0)
	{
		long		cores = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = (long) (count / (min_per_thread ? min_per_thread : 1));
		if (cores > 0 && nthreads > cores)
			nthreads = cores;
	}
	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;
	if ((size_t) nthreads > count)
		nthreads = (long) count;
	return nthreads < 1 ? 1 : (int) nthreads;
}

typedef struct Slice
{
	GiCpuSliceFn fn;
	void	   *arg;
	size_t		begin;
	size_t		end;
} Slice;

/* Thread body: run one slice. */
static void *
run_slice(void *p)
{
	Slice	   *s = (Slice *) p;

	s->fn(s->arg, s->begin, s->end);
	return NULL;
}

/* Run fn over [0, count) in one slice per thread (cpu_engine.h). */
void
gi_cpu_parallel_for(size_t count, size_t min_per_thread, GiCpuSliceFn fn,
					void *arg)
{
	int			nthreads = gi_cpu_threads_for(count, min_per_thread);
	Slice		slices[MAX_THREADS];
	pthread_t	threads[MAX_THREADS];
	bool		started[MAX_THREADS];
	size_t		per;
	sigset_t	all;
	sigset_t	saved;
	bool		masked = false;
	int			i;

	if (count == 0)
		return;
	if (nthreads == 1)
	{
		fn(arg, 0, count);
		return;
	}
	per = (count + nthreads - 1) / nthreads;
	for (i = 0; i < nthreads; i++)
	{
		slices[i].fn = fn;
		slices[i].arg = arg;
		slices[i].begin = (size_t) i * per < count ? (size_t) i * per : count;
		slices[i].end = slices[i].begin + per < count ? slices[i].begin + per : count;
	}
	sigfillset(&all);
	masked = pthread_sigmask(SIG_SETMASK, &all, &saved) == 0;
	for (i = 1; i < nthreads; i++)
		started[i] = pthread_create(&threads[i], NULL, run_slice, &slices[i]) == 0;
	if (masked)
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
	run_slice(&slices[0]);
	for (i = 1; i < nthreads; i++)
	{
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			run_slice(&slices[i]);
	}
}
