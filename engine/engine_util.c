/*
 * engine_util.c - the engine's leaf helpers (engine_util.h) and the names
 * of engine.h: errors, the clock, tuning settings.  Calls nothing else in
 * engine/ or cuda/.  No PostgreSQL headers here.
 */
#include "engine_util.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* Fill err and return status. */
GiStatus
gi_set_error(GiError *err, GiStatus status, const char *fmt,...)
{
	if (err)
	{
		va_list		ap;

		err->status = status;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return status;
}

/* Reset err to GI_OK with an empty message (NULL is fine). */
void
gi_clear_error(GiError *err)
{
	if (err)
		err->status = GI_OK, err->message[0] = '\0';
}

/* Monotonic clock in milliseconds. */
double
gi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1.0e6;
}

/* Guards every image's last_query against concurrent CPU queries. */
static pthread_mutex_t timings_lock = PTHREAD_MUTEX_INITIALIZER;

/* Copy timings into an image's record under the lock (engine_util.h). */
void
gi_timings_store(GiTimings *dst, const GiTimings *src)
{
	pthread_mutex_lock(&timings_lock);
	*dst = *src;
	pthread_mutex_unlock(&timings_lock);
}

/* Copy an image's timings out under the lock (engine_util.h). */
void
gi_timings_load(GiTimings *dst, const GiTimings *src)
{
	pthread_mutex_lock(&timings_lock);
	*dst = *src;
	pthread_mutex_unlock(&timings_lock);
}

/* A non-negative integer from environment variable name, else dflt. */
static long long
env_count(const char *name, long long dflt)
{
	const char *s = getenv(name);
	char	   *end;
	long long	v;

	if (s == NULL || *s == '\0')
		return dflt;
	v = strtoll(s, &end, 10);
	return (*end == '\0' && v >= 0) ? v : dflt;
}

/* GI_CPU_THREADS, or 0 to let the loop choose (engine_util.h). */
long
gi_setting_cpu_threads(void)
{
	return (long) env_count("GI_CPU_THREADS", 0);
}

/* GI_CPU_SORT_MIN, or dflt (engine_util.h). */
size_t
gi_setting_cpu_sort_min(size_t dflt)
{
	return (size_t) env_count("GI_CPU_SORT_MIN", (long long) dflt);
}

/* A GPU search mode from environment variable name: "off" / "-1" -1,
 * "auto" / "0" 0, "on" / "1" 1, else dflt. */
static int
env_mode(const char *name, int dflt)
{
	const char *s = getenv(name);

	if (s == NULL || *s == '\0')
		return dflt;
	if (strcmp(s, "off") == 0 || strcmp(s, "-1") == 0)
		return -1;
	if (strcmp(s, "auto") == 0 || strcmp(s, "0") == 0)
		return 0;
	if (strcmp(s, "on") == 0 || strcmp(s, "1") == 0)
		return 1;
	return dflt;
}

/*
 * The GPU query settings, read from the environment once and kept (every
 * GPU B+ tree query consults several: a getenv each cost 0.1-0.3 us with a
 * few dozen variables set).  A slot holds the value, GPU_UNSET when the
 * variable is unset or invalid, or GPU_UNREAD until first use and after
 * gi_settings_reload().  Threads that read a slot at once store the same
 * value.
 */
#define GPU_UNREAD	LLONG_MIN
#define GPU_UNSET	(LLONG_MIN + 1)
enum
{
	GS_RUN_SEARCH, GS_CHILD_ARITH, GS_DEDUP, GS_GROUP, GS_GATE_MIN, GS_TILE_MIN_BLOCKS,
	GS_LEAF_WALK, GS_TOP, GS_WIDE, GS_LEAF_GUESS, GS_STREAM, GS_ROW_HINT, GS_ONE_PASS, GS_STREAM_GRIDS, GS_COUNT
};
static _Atomic long long gpu_settings[GS_COUNT] = {
	GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD,
	GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD, GPU_UNREAD
};

/* A mode setting (env_mode) as a slot value. */
static long long
mode_slot(const char *name)
{
	int			m = env_mode(name, INT_MIN);

	return m == INT_MIN ? GPU_UNSET : m;
}

/* Parse GPU setting slot from the environment (GPU_UNSET when unset or
 * not valid). */
static long long
gpu_setting_parse(int slot)
{
	switch (slot)
	{
		case GS_RUN_SEARCH:
			return mode_slot("GI_GPU_RUN_SEARCH");
		case GS_CHILD_ARITH:
			return mode_slot("GI_GPU_CHILD_ARITH");
		case GS_DEDUP:
			return mode_slot("GI_GPU_DEDUP");
		case GS_TOP:
			return mode_slot("GI_GPU_TOP");
		case GS_WIDE:
			return mode_slot("GI_GPU_WIDE");
		case GS_LEAF_GUESS:
			return mode_slot("GI_GPU_LEAF_GUESS");
		case GS_STREAM:
			return mode_slot("GI_GPU_STREAM");
		case GS_ROW_HINT:
			return mode_slot("GI_GPU_ROW_HINT");
		case GS_ONE_PASS:
			return mode_slot("GI_GPU_ONE_PASS");
		case GS_STREAM_GRIDS:
			{
				long long	g = env_count("GI_GPU_STREAM_GRIDS", 0);

				return (g >= 1 && g <= 64) ? g : GPU_UNSET;
			}
		case GS_GROUP:
			{
				long long	g = env_count("GI_GPU_GROUP", 0);

				return (g == 1 || g == 2 || g == 4 || g == 8 || g == 16 || g == 32) ? g : GPU_UNSET;
			}
		case GS_TILE_MIN_BLOCKS:
			{
				long long	b = env_count("GI_GPU_TILE_MIN_BLOCKS", 0);

				return (b >= 2 && b <= 4) ? b : GPU_UNSET;
			}
		case GS_LEAF_WALK:
			return mode_slot("GI_GPU_LEAF_WALK");
		default:
			return env_count("GI_GPU_GATE_MIN", GPU_UNSET);
	}
}

/* GPU setting slot, or dflt when its variable is unset (read once). */
static long long
gpu_setting(int slot, long long dflt)
{
	long long	v = atomic_load_explicit(&gpu_settings[slot], memory_order_relaxed);

	if (v == GPU_UNREAD)
	{
		v = gpu_setting_parse(slot);
		atomic_store_explicit(&gpu_settings[slot], v, memory_order_relaxed);
	}
	return v == GPU_UNSET ? dflt : v;
}

/* Forget the GPU settings read so far (engine_util.h). */
void
gi_settings_reload(void)
{
	int			i;

	for (i = 0; i < GS_COUNT; i++)
		atomic_store_explicit(&gpu_settings[i], GPU_UNREAD, memory_order_relaxed);
}

/* GI_GPU_RUN_SEARCH as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_run_search(int dflt)
{
	return (int) gpu_setting(GS_RUN_SEARCH, dflt);
}

/* GI_GPU_CHILD_ARITH as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_child_arith(int dflt)
{
	return (int) gpu_setting(GS_CHILD_ARITH, dflt);
}

/* GI_GPU_DEDUP as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_dedup(int dflt)
{
	return (int) gpu_setting(GS_DEDUP, dflt);
}

/* GI_GPU_TOP as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_top(int dflt)
{
	return (int) gpu_setting(GS_TOP, dflt);
}

/* GI_GPU_WIDE as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_wide(int dflt)
{
	return (int) gpu_setting(GS_WIDE, dflt);
}

/* GI_GPU_LEAF_GUESS as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_leaf_guess(int dflt)
{
	return (int) gpu_setting(GS_LEAF_GUESS, dflt);
}

/* GI_GPU_STREAM as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_stream(int dflt)
{
	return (int) gpu_setting(GS_STREAM, dflt);
}

/* GI_GPU_ROW_HINT as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_row_hint(int dflt)
{
	return (int) gpu_setting(GS_ROW_HINT, dflt);
}

/* GI_GPU_GROUP when it is a group size the per-probe kernel has (1, 2, 4,
 * 8, 16, 32), else dflt (engine_util.h). */
int
gi_setting_gpu_group(int dflt)
{
	return (int) gpu_setting(GS_GROUP, dflt);
}

/* GI_GPU_TILE_MIN_BLOCKS when it is 2, 3 or 4, else dflt (engine_util.h). */
int
gi_setting_gpu_tile_min_blocks(int dflt)
{
	return (int) gpu_setting(GS_TILE_MIN_BLOCKS, dflt);
}

/* GI_GPU_LEAF_WALK as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_leaf_walk(int dflt)
{
	return (int) gpu_setting(GS_LEAF_WALK, dflt);
}

/* GI_GPU_ONE_PASS as -1 / 0 / 1, or dflt (engine_util.h). */
int
gi_setting_gpu_one_pass(int dflt)
{
	return (int) gpu_setting(GS_ONE_PASS, dflt);
}

/* GI_GPU_STREAM_GRIDS when it is 1 to 64, else dflt (engine_util.h). */
int
gi_setting_gpu_stream_grids(int dflt)
{
	return (int) gpu_setting(GS_STREAM_GRIDS, dflt);
}

/* GI_GPU_GATE_MIN, or dflt (engine_util.h). */
long long
gi_setting_gpu_gate_min(long long dflt)
{
	return gpu_setting(GS_GATE_MIN, dflt);
}

/* Engine name for messages and gpuidx_info. */
const char *
gi_engine_name(GiEngineKind engine)
{
	return engine == GI_ENGINE_GPU ? "gpu" : "cpu";
}

/* Structure name for messages and gpuidx_info. */
const char *
gi_structure_name(GiStructure structure)
{
	return structure == GI_STRUCT_VEB ? "veb" : "btree";
}

/* Advise huge pages for the whole 2 MB pages of [p, p + size) (a hint). */
void
gi_advise_huge_pages(void *p, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	const uintptr_t huge = (uintptr_t) 2 << 20;
	uintptr_t	start = ((uintptr_t) p + huge - 1) & ~(huge - 1);
	uintptr_t	end = ((uintptr_t) p + size) & ~(huge - 1);

	if (p != NULL && size >= 2 * huge && end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#else
	(void) p;
	(void) size;
#endif
}

/* malloc, with huge pages advised for a big array. */
void *
gi_malloc_big(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	gi_advise_huge_pages(p, size);
	return p;
}
