/*
 * cpu_pool.c - the CPU engine's threads (cpu_pool.h): one pthread a task,
 * signals blocked in the workers, the caller's thread running task 0 and
 * any task whose thread could not start.  No PostgreSQL headers here.
 */
#include "cpu_pool.h"
#include "engine_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

/* One task of a batch: what its thread runs. */
typedef struct PoolTask
{
	GiCpuTaskFn fn;
	void	   *arg;
	int			index;
} PoolTask;

/* Thread body: run one task. */
static void *
run_task(void *p)
{
	PoolTask   *t = (PoolTask *) p;

	t->fn(t->arg, t->index);
	return NULL;
}

/* Run ntasks tasks, one thread each (cpu_pool.h). */
void
gi_cpu_run_tasks(int ntasks, GiCpuTaskFn fn, void *arg)
{
	PoolTask	tasks[GI_CPU_MAX_THREADS];
	pthread_t	threads[GI_CPU_MAX_THREADS];
	bool		started[GI_CPU_MAX_THREADS];
	sigset_t	all;
	sigset_t	saved;
	bool		masked = false;
	int			i;

	if (ntasks > GI_CPU_MAX_THREADS)
		ntasks = GI_CPU_MAX_THREADS;
	if (ntasks <= 0)
		return;
	if (ntasks == 1)
	{
		fn(arg, 0);
		return;
	}
	for (i = 0; i < ntasks; i++)
	{
		tasks[i].fn = fn;
		tasks[i].arg = arg;
		tasks[i].index = i;
	}

	/*
	 * Workers must never take the host's signals (in a PostgreSQL backend
	 * the handlers belong to the main thread): block all signals while they
	 * are created so they inherit the full mask.
	 */
	sigfillset(&all);
	masked = pthread_sigmask(SIG_SETMASK, &all, &saved) == 0;
	for (i = 1; i < ntasks; i++)
		started[i] = pthread_create(&threads[i], NULL, run_task, &tasks[i]) == 0;
	if (masked)
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
	run_task(&tasks[0]);
	for (i = 1; i < ntasks; i++)
	{
		/* A thread that could not start runs here instead. */
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			run_task(&tasks[i]);
	}
}

/* Threads gi_cpu_parallel_for would use for count items (cpu_pool.h). */
int
gi_cpu_threads_for(size_t count, size_t min_per_thread)
{
	long		nthreads = gi_setting_cpu_threads();

	if (nthreads == 0)
	{
		long		cores = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = (long) (count / (min_per_thread ? min_per_thread : 1));
		if (cores > 0 && nthreads > cores)
			nthreads = cores;
	}
	if (nthreads > GI_CPU_MAX_THREADS)
		nthreads = GI_CPU_MAX_THREADS;
	if ((size_t) nthreads > count)
		nthreads = (long) count;
	return nthreads < 1 ? 1 : (int) nthreads;
}

/* Slice i of [0, count) in nslices (cpu_pool.h). */
void
gi_cpu_slice(size_t count, int nslices, int i, size_t *begin, size_t *end)
{
	size_t		per = (count + nslices - 1) / nslices;

	*begin = (size_t) i * per < count ? (size_t) i * per : count;
	*end = *begin + per < count ? *begin + per : count;
}

/* What the slices of one parallel loop share. */
typedef struct SliceLoop
{
	GiCpuSliceFn fn;
	void	   *arg;
	size_t		count;
	int			nslices;
} SliceLoop;

/* Task body of gi_cpu_parallel_for: run slice i. */
static void
run_slice(void *p, int i)
{
	SliceLoop  *loop = (SliceLoop *) p;
	size_t		begin,
				end;

	gi_cpu_slice(loop->count, loop->nslices, i, &begin, &end);
	loop->fn(loop->arg, begin, end);
}

/* Run fn over [0, count) in one slice per thread (cpu_pool.h). */
void
gi_cpu_parallel_for(size_t count, size_t min_per_thread, GiCpuSliceFn fn,
					void *arg)
{
	SliceLoop	loop;

	if (count == 0)
		return;
	loop.fn = fn;
	loop.arg = arg;
	loop.count = count;
	loop.nslices = gi_cpu_threads_for(count, min_per_thread);
	gi_cpu_run_tasks(loop.nslices, run_slice, &loop);
}
