/*
 * engine_util.h - the leaf helpers every engine file uses (engine/
 * engine_util.c): errors, the clock and the tuning settings read from the
 * environment.  The bottom layer of the engine: it calls nothing else in
 * engine/ or cuda/.  Plain C, no PostgreSQL types.
 */
#ifndef GPUIDX_ENGINE_UTIL_H
#define GPUIDX_ENGINE_UTIL_H

#include "engine.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* Set err to status and a printf-style message; returns status. */
GiStatus	gi_set_error(GiError *err, GiStatus status, const char *fmt,...)
#ifdef __GNUC__
			__attribute__((format(printf, 3, 4)))
#endif
			;

/* Clear err (GI_OK, empty message) at the start of an entry point. */
void		gi_clear_error(GiError *err);

/*
 * malloc for big arrays: where the kernel allows it, backed by transparent
 * huge pages (fewer page faults for scratch touched fresh per call, fewer
 * TLB misses for arrays read at random).  Free with free().
 */
void	   *gi_malloc_big(size_t size);

/* Monotonic wall clock in milliseconds. */
double		gi_now_ms(void);

/*
 * Store or read an image's last-query timings under one engine-wide lock,
 * so that threads querying one CPU image at once (engine.h) never tear them.
 */
void		gi_timings_store(GiTimings *dst, const GiTimings *src);
void		gi_timings_load(GiTimings *dst, const GiTimings *src);

/*
 * Tuning settings, for tests and experiments; this is the one place that
 * reads them from the environment.  The GI_GPU_* ones are read once, at
 * their first use, and kept (a GPU query reads several);
 * gi_settings_reload() makes the next use read them again (tests that
 * change them with setenv call it).  The GI_CPU_* ones are read at each
 * use.
 *   GI_CPU_THREADS   threads of a parallel CPU loop; 0 (unset, not a
 *                    positive number) lets the loop choose from the cores
 *   GI_CPU_SORT_MIN  the smallest probe block the CPU engine sorts for
 *                    locality; dflt when unset or not a non-negative number
 *   GI_GPU_RUN_SEARCH  which tiles of a GPU B+ tree batch take the run
 *                    search (cuda/gpu_btree_tile.cuh): "off" (-1) none,
 *                    "auto" (0) those whose probes are in order, "on" (1)
 *                    every narrow tile; dflt when unset or unknown
 *   GI_GPU_GATE_MIN  the smallest GPU B+ tree batch whose probe order a
 *                    sample decides (tiled search or per-probe kernel);
 *                    smaller ones take the per-probe kernel; dflt when
 *                    unset or not a non-negative number
 *   GI_GPU_CHILD_ARITH  how a GPU B+ tree descent finds a node's first
 *                    child: "off" (-1) from the child prefix sums, "on"
 *                    (1) computed from the level's cut; dflt otherwise
 *   GI_GPU_DEDUP     whether equal probes of a GPU B+ tree tile that
 *                    descend do so once ("on", 1) or each ("off", -1);
 *                    dflt otherwise
 *   GI_GPU_GROUP     lanes a probe of the GPU B+ tree's per-probe kernel:
 *                    1 (the thread search), 2, 4, 8, 16 or 32; dflt
 *                    otherwise
 *   GI_GPU_TILE_MIN_BLOCKS  the blocks an SM must fit of the GPU B+ tree's
 *                    tiled kernel (its register cap): 2, 3 or 4; dflt
 *                    otherwise
 *   GI_GPU_LEAF_WALK  how the GPU B+ tree's thread search finds a probe's
 *                    second rank in its leaf: "on" (1) by a walk from the
 *                    first, "off" (-1) by a binary search of its own,
 *                    "auto" (0) the default; dflt otherwise
 *   GI_GPU_TOP       whether the GPU B+ tree's per-probe descents start at
 *                    the node the top table names ("on", 1) or at the root
 *                    ("off", -1); dflt otherwise
 *   GI_GPU_WIDE      whether the GPU B+ tree's thread search ranks a probe in
 *                    a node by loading the whole node ("on", 1) or by a
 *                    binary search of loads ("off", -1); dflt otherwise
 *   GI_GPU_LEAF_GUESS  whether the GPU B+ tree's thread search ranks a probe
 *                    in a leaf starting from the sector its parent's
 *                    separators point to ("on", 1) or by a binary search
 *                    of loads ("off", -1); dflt otherwise
 *   GI_GPU_STREAM    which kernel answers a GPU B+ tree batch the order
 *                    sample finds in order or clustered, where the
 *                    per-probe kernel's group is 1: the stream kernel
 *                    ("on", 1, or "auto", 0) or the tiled kernel ("off",
 *                    -1); dflt otherwise
 *   GI_GPU_ROW_HINT  whether the GPU B+ tree's stream kernel narrows each
 *                    row's search of its window to where the row before
 *                    hints ("on", 1, or "auto", 0) or searches the whole
 *                    window ("off", -1); dflt otherwise
 *   GI_GPU_ONE_PASS  how the GPU B+ tree answers a tiled batch larger than
 *                    its scratch's room: in one pass where the order
 *                    samples of its segments agree ("on", 1, or "auto",
 *                    0), or a segment at a time, each behind its own
 *                    sample ("off", -1); dflt otherwise
 *   GI_GPU_STREAM_GRIDS  the most blocks the GPU B+ tree's stream kernels
 *                    launch, in multiples (1 to 64) of the blocks the GPU
 *                    holds at once; dflt otherwise
 */
long		gi_setting_cpu_threads(void);
size_t		gi_setting_cpu_sort_min(size_t dflt);
int			gi_setting_gpu_run_search(int dflt);
long long	gi_setting_gpu_gate_min(long long dflt);
int			gi_setting_gpu_child_arith(int dflt);
int			gi_setting_gpu_dedup(int dflt);
int			gi_setting_gpu_group(int dflt);
int			gi_setting_gpu_tile_min_blocks(int dflt);
int			gi_setting_gpu_leaf_walk(int dflt);
int			gi_setting_gpu_one_pass(int dflt);
int			gi_setting_gpu_stream_grids(int dflt);
int			gi_setting_gpu_top(int dflt);
int			gi_setting_gpu_wide(int dflt);
int			gi_setting_gpu_leaf_guess(int dflt);
int			gi_setting_gpu_stream(int dflt);
int			gi_setting_gpu_row_hint(int dflt);
void		gi_settings_reload(void);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIDX_ENGINE_UTIL_H */
