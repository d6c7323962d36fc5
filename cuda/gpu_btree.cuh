/*
 * gpu_btree.cuh - inside the GPU B+ tree, the twin of engine/cpu_btree.h:
 * the image struct, the level geometry and the insertable leaf level that
 * cuda/gpu_btree.cu (the static tree and its search) and cuda/gpu_insert.cu
 * (CUBPT batch insertion) share, and the functions cuda/gpu_engine.cu
 * dispatches B+ tree images to.  Internal to the GPU engine; nothing here
 * has default visibility.
 */
#ifndef GPUIDX_GPU_BTREE_CUH
#define GPUIDX_GPU_BTREE_CUH

#include "gpu_engine.cuh"
#include "gpu_util.cuh"
#include "cut_twin.h"

#include <climits>
#include <cstdio>

#define NODE_BYTES		128			/* one node: a cache line */
#define MAX_INT_LEVELS	40

/* ------------------------------------------------------------------------ */
/* Geometry                                                                  */
/* ------------------------------------------------------------------------ */

/* One level cut per CUBPT formulas 1 and 2 (engine/cut_twin.h). */
typedef GiCut Cut;

/* The whole tree's shape, root level first. */
typedef struct Geo
{
	uint64_t	n;
	int			m;				/* keys per node */
	Cut			leaf;			/* n keys cut into leaves (static form) */
	int			nint;			/* internal levels */
	Cut			lev[MAX_INT_LEVELS];	/* level l's nodes and its children's
										 * cut */
	uint64_t	off[MAX_INT_LEVELS + 1];	/* first global node of a level;
											 * off[nint] = internal nodes */
	uint64_t	inodes;
} Geo;

template <class K> struct KeyLimits;
template <> struct KeyLimits<int32_t>
{
	static constexpr int64_t lo = INT32_MIN;
	static constexpr int64_t hi = INT32_MAX;
	typedef uint32_t SKey;		/* sortable probe key */
};
template <> struct KeyLimits<int64_t>
{
	static constexpr int64_t lo = INT64_MIN;
	static constexpr int64_t hi = INT64_MAX;
	typedef uint64_t SKey;
};

/* ------------------------------------------------------------------------ */
/* Images                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * The insertable leaf level (gpu_insert.cu), made by the first insertion:
 * leaves are nodes of M key slots in a node array of fixed-size segments
 * found through a device list of segment pointers (CUBPT 3.1), payloads in a
 * parallel segmented array of M uint64 a node, and a directory in key order
 * (leaf ordinal -> node id, rank base).
 */
typedef struct GpuDir
{
	uint32_t   *node;			/* leaf ordinal -> node id */
	uint64_t   *base;			/* rank bases; [nleaves] = n */
	void	   *max;			/* each leaf's max key (the inner levels' input) */
	uint64_t	cap;			/* leaves the arrays have room for */
} GpuDir;

/*
 * A static tree's top table (TreeDev.top and the fields after it): a bucket
 * of key values -> where a descent for them may start, and after it (at
 * top_runs_offset) the run table, or none (table NULL).  A bulk-built
 * image and an insertable image's static copy each have one (build_top).
 */
typedef struct GpuTop
{
	uint32_t   *table;			/* (TreeDev.top), or NULL */
	bool		split;			/* 8-byte entries (TreeDev.top_split) */
	uint32_t	n;				/* buckets (TreeDev.top_n) */
	int			shift;			/* (TreeDev.top_shift) */
	int			log;			/* (TreeDev.top_log) */
	uint32_t	runs;			/* run entries after the table (TreeDev.runs_n),
								 * 0: none */
	int64_t		lo,				/* the keys' ends when it was built */
				hi;
} GpuTop;

/*
 * A static copy of an insertable image (GiGpuPolicy.snapshot): its keys in
 * rank order laid out as a bulk build lays them (padded leaves, internal
 * levels, child prefix sums; gi_gpu_btree_static_build), which a query
 * reads instead of the directory: the same positions, the static search's
 * speed.  Built by the first large query after an insertion
 * (gi_gpu_btree_snapshot), dropped by the next insertion.
 */
typedef struct GpuStatic
{
	Geo			geo;
	void	   *leaves;
	void	   *nodes;
	uint32_t   *prefix;
	GpuTop		top;			/* its top table and run table */
	uint64_t	bytes;			/* device bytes of the four */
} GpuStatic;

typedef struct GpuIns
{
	int			seg_shift;		/* a segment holds 2^seg_shift nodes */
	uint32_t	nsegs;			/* segments allocated */
	uint32_t	list_cap;		/* room in the device segment lists */
	void	  **h_kseg;			/* host copies of the lists */
	uint64_t  **h_pseg;
	void	  **d_kseg;			/* device lists: key / payload segments */
	uint64_t  **d_pseg;			/* entries NULL when the image keeps no
								 * payloads */
	uint64_t	nnodes;			/* node ids in use: 0..nnodes-1 */
	uint64_t	nleaves;
	GpuDir		dir;			/* the directory in use */
	GpuDir		spare;			/* the next batch writes its directory here,
								 * then the two swap (no allocation a batch) */
	void	   *inner2;			/* spare internal-level arrays, likewise */
	uint32_t   *prefix2;
	uint64_t	inner_cap;		/* nodes the arrays in use have room for */
	uint64_t	inner_cap2;
	bool		has_pay;
	bool		payloads_stale; /* hdr.device_payloads needs a refresh */
	void	   *rank_keys;		/* the keys in rank order (kw bytes each),
								 * gathered from the leaves for device
								 * aggregation; NULL until then and after
								 * each insertion */
	uint64_t	rank_keys_bytes;
	int			kw;
	uint64_t	seg_bytes;		/* device bytes of the segments */
	GpuStatic  *snap;			/* the static copy; NULL until a query
								 * builds it and after each insertion (read
								 * and published with atomics: queries run
								 * side by side) */
} GpuIns;

typedef struct GpuImage
{
	GiImage		hdr;			/* must be first */
	int			kw;				/* device key width: 4 or 8 */
	Geo			geo;
	void	   *d_leaves;		/* padded leaf slots (static form) */
	void	   *d_nodes;
	uint32_t   *d_prefix;
	GpuTop		top;			/* static form: the top table (where a
								 * probe's descent may start) and run
								 * table; freed when the image turns
								 * insertable (its static copy has its own) */
	cudaStream_t stream;
	int64_t		kmin,
				kmax;
	uint64_t	distinct;
	uint64_t	device_bytes;	/* static form: leaves + internal levels +
								 * top table */
	size_t		mem_limit;		/* GiBuildParams.device_memory_limit */
	char		device_name[64];
	/* Batch insertion (gpu_insert.cu). */
	GpuIns	   *ins;			/* NULL while the image is static */
	bool		broken;			/* an insertion failed: only free it */
	uint64_t	inserted;
	uint64_t	insert_batches;
	GiTimings	last_insert;
	double		convert_ms;		/* the one-time conversion */
	double		inner_ms;		/* last insertion: internal level re-cut */
	double		refresh_ms;		/* last payload refresh for select */
} GpuImage;

/* ------------------------------------------------------------------------ */
/* The B+ tree (cuda/gpu_btree.cu)                                           */
/* ------------------------------------------------------------------------ */

/* Build from n sorted host keys (gi_gpu_build for B+ tree images). */
GiStatus	gi_gpu_btree_build(const GiBuildParams *params, const int64_t *keys,
							   size_t n, GiImage **out, GiError *err);

/* Build from unsorted host pairs (gi_gpu_build_unsorted). */
GiStatus	gi_gpu_btree_build_unsorted(const GiBuildParams *params,
										const int64_t *keys,
										const uint64_t *payloads, size_t n,
										int64_t *sorted_keys_out,
										uint64_t *sorted_payloads_out,
										GiImage **out, GiError *err);

/* Build from device-resident keys (gi_gpu_dev_build). */
GiStatus	gi_gpu_btree_dev_build(const GiBuildParams *params, const void *d_keys,
								   const uint64_t *d_payloads, size_t n, bool sorted,
								   uint64_t *d_payloads_out, GiImage **out,
								   GiError *err);

/* Free an image and its device memory. */
void		gi_gpu_btree_free(GiImage *image);

/*
 * Answer a device-resident batch of nprobes > 0 (gi_gpu_dev_query) on stream
 * st; the call's timings go to *t, the image is only read (threads may query
 * one image at once, each on its own stream with its own scratch).
 */
GiStatus	gi_gpu_btree_dev_query(const GiImage *image, GiOp op, const int64_t *d_probes,
								   const int64_t *d_hi, size_t nprobes,
								   uint64_t *d_first, uint64_t *d_last,
								   GiGpuScratch *scratch, cudaStream_t st,
								   GiTimings *t, GiError *err);

/* Describe an image. */
void		gi_gpu_btree_info(const GiImage *image, GiImageInfo *info);

/* Query scratch of the image's key type (gi_gpu_dev_scratch_create). */
GiStatus	gi_gpu_btree_scratch_create(const GiImage *image, size_t max_probes,
										GiGpuScratch **out, GiError *err);
void		gi_gpu_btree_scratch_free(GiGpuScratch *s);

/* The image's stream: builds and insertions run on it, queries do not. */
cudaStream_t gi_gpu_btree_stream(const GiImage *image);

/*
 * Cut the internal levels over nleaves leaves whose max keys are leaf_max
 * (device, key width kw) into g (g->n and g->leaf are left alone) and build
 * them into *nodes / *prefix: arrays with room for *cap nodes (and *cap + 1
 * prefix sums) that are reused when large enough, else freed and replaced
 * by larger ones (*cap updated).
 */
GiStatus	gi_gpu_btree_build_inner(int kw, cudaStream_t st, const void *leaf_max,
									 uint64_t nleaves, Geo *g, void **nodes,
									 uint32_t **prefix, uint64_t *cap, GiError *err);

/* Free one directory set, and the whole insertable state (NULL is fine). */
void		gi_gpu_btree_dir_free(GpuDir *d);
void		gi_gpu_btree_ins_free(GpuIns *ins);

/*
 * Lay out n keys sorted in rank order (device, key width kw) as a static
 * tree on stream st into *out (allocated here; freed with
 * gi_gpu_btree_static_free).  The stream is synchronized before return.
 */
GiStatus	gi_gpu_btree_static_build(int kw, const void *sorted, uint64_t n,
									  cudaStream_t st, GpuStatic *out, GiError *err);
void		gi_gpu_btree_static_free(GpuStatic *s);

/*
 * The static copy of an insertable image for a query on stream st: *out is
 * the copy (built now, on st, if there is none and no other query is
 * building one), or NULL when the query must read the directory instead
 * (another query is building it, it would pass the device memory limit,
 * or the device is out of memory for it).
 */
GiStatus	gi_gpu_btree_snapshot(const GiImage *image, cudaStream_t st,
								  const GpuStatic **out, GiError *err);

/* Device bytes the insertable state holds beside the internal levels. */
uint64_t	gi_gpu_btree_ins_bytes(const GpuIns *ins);

/* ------------------------------------------------------------------------ */
/* Batch insertion (cuda/gpu_insert.cu; gi_gpu_insert in engine_impl.h)      */
/* ------------------------------------------------------------------------ */

/*
 * After insertions, rebuild hdr.device_payloads (rank order) from the leaves
 * if it is stale; gi_gpu_select calls this before using it (a no-op for
 * images never inserted into).
 */
GiStatus	gi_gpu_btree_refresh_payloads(GiImage *image, GiError *err);

/*
 * How a kernel reads the key at a position (device aggregation): from the
 * rank-ordered array dense, or, when dense is NULL, from the static leaf
 * level (the cut ave / h: leaf node and slot by gi_cut_locate, M slots a
 * node).  kw is 4 (int32) or 8 (int64).
 */
typedef struct GiKeyView
{
	int			kw;
	const void *dense;
	const void *leaves;
	uint64_t	ave;
	uint64_t	h;
} GiKeyView;

/*
 * The key view of a B+ tree image: its static leaves, or (once insertable)
 * the rank-ordered key copy gathered from the leaves (kept with the
 * image until the next insertion, and counted in its device bytes).
 */
GiStatus	gi_gpu_btree_key_view(GiImage *image, GiKeyView *view, GiError *err);

#endif							/* GPUIDX_GPU_BTREE_CUH */
