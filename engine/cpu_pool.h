/*
 * cpu_pool.h - the one way the CPU engine runs work on several threads
 * (engine/cpu_pool.c): a batch of tasks, one thread each, started with
 * every signal blocked (in a PostgreSQL backend the handlers belong to the
 * main thread) and joined before return.  Every parallel CPU path (B+ tree
 * and vEB queries, builds, insertion) goes through it.  No PostgreSQL
 * headers here.
 */
#ifndef GPUIDX_CPU_POOL_H
#define GPUIDX_CPU_POOL_H

#include <stddef.h>

#define GI_CPU_MAX_THREADS	32

/* Task i of a batch, run by one thread. */
typedef void (*GiCpuTaskFn) (void *arg, int task);

/*
 * Run fn(arg, i) for i in [0, ntasks) (ntasks <= GI_CPU_MAX_THREADS), task 0
 * on the caller's thread and each other on a thread of its own; a task whose
 * thread cannot start runs on the caller's thread.  Returns when all are
 * done.
 */
void		gi_cpu_run_tasks(int ntasks, GiCpuTaskFn fn, void *arg);

/* A slice [begin, end) of a data-parallel loop, run by one thread. */
typedef void (*GiCpuSliceFn) (void *arg, size_t begin, size_t end);

/*
 * Threads for count items: one per min_per_thread items, at most the cores
 * (GI_CPU_THREADS overrides, engine_util.h), at most GI_CPU_MAX_THREADS and
 * count, at least 1.
 */
int			gi_cpu_threads_for(size_t count, size_t min_per_thread);

/*
 * Slice i of [0, count) cut into nslices contiguous slices of
 * ceil(count / nslices) items (the last ones may be shorter or empty).
 */
void		gi_cpu_slice(size_t count, int nslices, int i, size_t *begin,
						 size_t *end);

/*
 * Run fn over [0, count) cut into gi_cpu_threads_for(count, min_per_thread)
 * slices (gi_cpu_slice), one task each.
 */
void		gi_cpu_parallel_for(size_t count, size_t min_per_thread,
								GiCpuSliceFn fn, void *arg);

#endif							/* GPUIDX_CPU_POOL_H */
