/*
 * engine.h - the gpuidx engine interface.
 *
 * Plain C, no PostgreSQL types: src/ (the PostgreSQL-facing code) calls this;
 * the CPU engine (engine/cpu_*.c) and the GPU engine (cuda/) implement it and
 * must give identical answers.  The interface is request-shaped (arrays in,
 * arrays out) so that it can later move into a device service process.
 *
 * Model.  An image is built from n entries already sorted by (key, payload).
 * Entry i has key keys[i] and, optionally, a 64-bit payload (src/ packs a heap
 * TID into it).  A query batch maps each probe to a half-open range
 * [first, last) of entry positions in that sorted order:
 *
 *   GI_OP_POINT  [lower_bound(p), upper_bound(p))         keys == p
 *   GI_OP_PRED   the run of the largest key <= p           (empty if none)
 *   GI_OP_SUCC   the run of the smallest key >= p          (empty if none)
 *   GI_OP_RANGE  [lower_bound(lo), upper_bound(hi))        lo <= key <= hi
 *                (empty when lo > hi)
 *
 * where lower_bound(p) is the first position whose key >= p and
 * upper_bound(p) the first whose key > p.  Empty results are first == last
 * (any value; callers look only at last - first).  Probes are int64 whatever
 * the key width; a probe outside the key type's range is answered as the
 * mathematical comparison says (e.g. POINT of 2^40 on 32-bit keys is empty,
 * PRED of 2^40 is the largest key), never wrapped.
 *
 * Errors: every call returns GI_OK or an error code and fills *err.  After an
 * error the image (if any) is still valid or has been freed by the engine as
 * documented per call; no device memory leaks.
 */
#ifndef GPUIDX_ENGINE_H
#define GPUIDX_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef enum GiEngineKind
{
	GI_ENGINE_CPU = 1,
	GI_ENGINE_GPU = 2
} GiEngineKind;

typedef enum GiStructure
{
	GI_STRUCT_BTREE = 1,
	GI_STRUCT_VEB = 2
} GiStructure;

typedef enum GiOp
{
	GI_OP_POINT = 1,
	GI_OP_PRED = 2,
	GI_OP_SUCC = 3,
	GI_OP_RANGE = 4
} GiOp;

typedef enum GiStatus
{
	GI_OK = 0,
	GI_ERR_INVALID = 1,			/* bad argument (caller bug or bad input) */
	GI_ERR_HOST_OOM = 2,		/* host allocation failed */
	GI_ERR_DEVICE_OOM = 3,		/* device allocation failed */
	GI_ERR_NO_DEVICE = 4,		/* no usable GPU, no driver, or built
								 * without CUDA */
	GI_ERR_DEVICE = 5,			/* launch failure or other CUDA error */
	GI_ERR_UNSUPPORTED = 6		/* structure/operation not implemented */
} GiStatus;

typedef struct GiError
{
	GiStatus	status;
	char		message[256];	/* names the cause, e.g. the CUDA call */
} GiError;

/* Milliseconds spent in each phase of the last build or query batch. */
typedef struct GiTimings
{
	double		transfer_ms;	/* host <-> device copies */
	double		sort_ms;		/* sorting input pairs or probes */
	double		build_ms;		/* building levels */
	double		search_ms;		/* descending the structure */
	double		total_ms;		/* wall clock of the whole call */
} GiTimings;

typedef struct GiBuildParams
{
	GiEngineKind engine;
	GiStructure structure;
	int			key_bytes;		/* 2, 4 or 8: width of the indexed type */
	size_t		device_memory_limit;	/* bytes; 0 = no limit (GPU only) */
} GiBuildParams;

typedef struct GiImageInfo
{
	GiEngineKind engine;
	GiStructure structure;
	int			key_bytes;
	uint64_t	entries;		/* n */
	uint64_t	distinct_keys;
	int			levels;			/* tree height including the leaf level */
	int			node_order;		/* max children of an internal node */
	uint64_t	nodes;			/* internal nodes */
	uint64_t	host_bytes;		/* memory the engine holds on the host */
	uint64_t	device_bytes;	/* memory the engine holds on the device */
	GiTimings	build;			/* timings of the build */
	GiTimings	last_query;		/* timings of the last query batch */
	char		device_name[64];	/* "" for the CPU engine */
	/* Added for the van Emde Boas structure; 0 for the B+ tree. */
	uint64_t	clusters;		/* veb: all clusters, 16-bit leaf bitmaps
								 * included (nodes counts those with hash
								 * tables) */
	uint64_t	hash_bytes;		/* veb: bytes of the per-cluster hash tables */
	double		space_overhead; /* veb: (clusters + hash tables) bytes over
								 * distinct_keys * key_bytes */
	/* Added for batch insertion (gi_image_insert); 0 until the first one. */
	uint64_t	inserted;		/* entries added by insertion since the build */
	uint64_t	insert_batches; /* gi_image_insert calls that added entries */
	uint64_t	leaves;			/* B+ tree leaves (node-array leaves once
								 * insertable) */
	GiTimings	last_insert;	/* sort_ms: sorting the batch; search_ms:
								 * finding leaves; build_ms: merge, split and
								 * write leaves plus the internal levels;
								 * transfer_ms: copies */
	/* Added for device aggregation (gi_image_attach_columns). */
	int			include_columns;	/* INCLUDE columns kept on the device */
	uint64_t	include_device_bytes;	/* their bytes (in device_bytes too) */
} GiImageInfo;

typedef struct GiImage GiImage;

/*
 * Build an image from n entries sorted ascending by key (ties allowed).
 * payloads may be NULL; when given, the engine may keep a copy for device-side
 * materialization (not needed by any query op here).  Both arrays are
 * borrowed for the duration of the call only.  On success *out is set.
 */
GiStatus	gi_image_build(const GiBuildParams *params,
						   const int64_t *keys, const uint64_t *payloads,
						   size_t n, GiImage **out, GiError *err);

/*
 * Build an image from n entries in any order: the engine sorts (key,
 * payload) pairs itself (on the device for the GPU engine).  sorted_keys_out
 * and sorted_payloads_out, if not NULL, receive the sorted arrays (n each).
 */
GiStatus	gi_image_build_unsorted(const GiBuildParams *params,
									const int64_t *keys,
									const uint64_t *payloads, size_t n,
									int64_t *sorted_keys_out,
									uint64_t *sorted_payloads_out,
									GiImage **out, GiError *err);

/*
 * Insert n entries, in any order, into an image by CUBPT batch insertion:
 * the batch is sorted by (key, payload), each entry's leaf is found by a
 * descent, every touched leaf merges its old and new entries and splits
 * into as many nodes as formula 1 asks (allocated with one prefix sum from a
 * node array that grows by segments, never copying the tree), and the
 * internal levels follow.  Afterwards the image answers exactly as an image
 * built from the old entries plus these would: positions are ranks in the
 * (key, payload) order of the union.  payloads must be given when the image
 * was built with payloads and must be NULL otherwise.  n == 0 changes
 * nothing.  The first insertion into a bulk-built image turns its leaf level
 * into node-array leaves with slack (once, O(n), on the engine's side).
 *
 * B+ tree images only: a vEB image answers GI_ERR_UNSUPPORTED (it is rebuilt
 * by the caller).  On any other error the image must not be used again;
 * free it (gi_image_free) and build a new one.
 */
GiStatus	gi_image_insert(GiImage *image, const int64_t *keys,
							const uint64_t *payloads, size_t n, GiError *err);

/* Free an image and everything it holds (host and device).  NULL is fine. */
void		gi_image_free(GiImage *image);

/*
 * Answer a batch of nprobes probes.  For GI_OP_RANGE, probes are the lower
 * bounds and probes_hi the upper bounds (inclusive); otherwise probes_hi must
 * be NULL.  first[i] and last[i] receive the range of probe i, in the
 * caller's probe order whatever order the engine searches in.
 *
 * Threads: several threads may query one image at once, of either engine,
 * and different images.  A query only reads the structure; its scratch is
 * its own; the GPU engine runs it on the calling thread's own stream (a
 * non-blocking stream made on the thread's first query and destroyed when
 * the thread exits) through pinned staging slots taken from a pool; each
 * query's timings are added up in the call and stored as last_query under
 * one engine-wide lock, which gi_image_info reads under too (so an image
 * may be described while it is queried).  Nothing that changes an image may
 * run while it is queried: insert and free wait until no query holds it.
 */
GiStatus	gi_image_query(GiImage *image, GiOp op,
						   const int64_t *probes, const int64_t *probes_hi,
						   size_t nprobes, uint64_t *first, uint64_t *last,
						   GiError *err);

/* Order of the payloads gi_image_select returns. */
typedef enum GiSelectOrder
{
	GI_ORDER_KEY = 1,			/* (key, payload) order of the entries */
	GI_ORDER_PAYLOAD = 2		/* ascending payload (heap order for TIDs) */
} GiSelectOrder;

/*
 * Select the payloads of every entry any probe hits.  The batch runs as in
 * gi_image_query; each hit range sets bits of a hit mask over the image's
 * entries (so an entry hit by several probes appears once), and SPACE stream
 * compaction turns the mask into the dense list of hit payloads.  The image
 * must have been built with payloads.  *out is allocated by the engine
 * (malloc; release with gi_free) and *nout receives the count.  Threads as
 * for gi_image_query: after insertions the first selection rebuilds the
 * rank-ordered payload copy under a lock, the others wait for it.
 */
GiStatus	gi_image_select(GiImage *image, GiOp op, const int64_t *probes,
							const int64_t *probes_hi, size_t nprobes,
							GiSelectOrder order, uint64_t **out,
							size_t *nout, GiError *err);

/*
 * SPACE stream compaction on its own (tests and benchmarks): out receives
 * values[i] for every set bit i of mask (bit i of word i / 64), in order;
 * value_bytes is 4 or 8; chunk_bits is the chunk size (512..4096, 0 for
 * the engine's choice).  *nout receives the count; out must have room for
 * the number of set bits.
 */
GiStatus	gi_compact(GiEngineKind engine, const uint64_t *mask,
					   const void *values, int value_bytes, size_t n,
					   size_t chunk_bits, void *out, size_t *nout,
					   GiError *err);

/* Release memory the engine allocated for a caller (gi_image_select). */
void		gi_free(void *p);

/* Describe an image. */
void		gi_image_info(const GiImage *image, GiImageInfo *info);

/*
 * Is a GPU usable?  Initializes the CUDA runtime lazily on first call (never
 * call this in the postmaster).  On false, why (if not NULL) says why.
 */
bool		gi_gpu_available(char *why, size_t whylen);

/*
 * Page-lock size bytes of host memory at p that the caller keeps and reuses
 * for batches (a join's chunk arrays), so that a GPU image's queries copy
 * their probes and answers straight to and from it instead of through the
 * engine's staging buffers.  Call it only in a process that already uses
 * the GPU (it would start CUDA otherwise).  False, and nothing changed,
 * where there is no GPU engine or the registration fails; the memory works
 * as before either way.  gi_host_unpin(p) before the memory is freed.
 */
bool		gi_host_pin(void *p, size_t size);
void		gi_host_unpin(void *p);

/*
 * Sort n (key, payload) pairs ascending by (key, payload) on the host.
 * payloads and payloads_out may be NULL (keys only).  Outputs may not alias
 * inputs.
 */
GiStatus	gi_sort_pairs(const int64_t *keys, const uint64_t *payloads, size_t n,
						  int64_t *keys_out, uint64_t *payloads_out,
						  GiError *err);

/*
 * Adding up index entries (GpuIndexAgg).  A column's values are the key
 * array's, or one value of each entry's row: rows are row_bytes apart, start
 * with a uint16 NULL mask (bit nullbit set: NULL) and hold the value at byte
 * offset.  Totals are added to what the column holds: non-NULL values, their
 * 128-bit sum and min/max (integer kinds; bool as 0/1, uint32 unsigned), or
 * min/max of the non-NaN values and a count of NaNs (float kinds).  The
 * caller starts them at 0, INT64_MAX/INT64_MIN and +inf/-inf.
 */
typedef enum GiAggKind
{
	GI_AGG_KEY,					/* the key array */
	GI_AGG_BOOL,
	GI_AGG_INT16,
	GI_AGG_INT32,
	GI_AGG_UINT32,
	GI_AGG_INT64,
	GI_AGG_FLOAT4,
	GI_AGG_FLOAT8
} GiAggKind;

/*
 * A 128-bit sum aligned to 8 bytes only (as PostgreSQL's int128), so that
 * the struct may live in memory palloc aligns to 8.
 */
typedef __int128 gi_int128 __attribute__((aligned(8)));

typedef struct GiAggColumn
{
	GiAggKind	kind;
	int			offset;			/* the value's byte offset in a row */
	uint16_t	nullbit;		/* its NULL bit in the row's mask */
	int			column;			/* its INCLUDE column number, for the
								 * columns an image keeps on the device
								 * (gi_image_attach_columns) */
	int64_t		nonnull;
	gi_int128	sum;
	int64_t		imin;
	int64_t		imax;
	double		fmin;
	double		fmax;
	int64_t		nnan;
} GiAggColumn;

/*
 * Add up n entries (keys, packed TIDs block << 16 | offset, rows) whose
 * heap block is set in vm: 2 bits a block, block b's bit 0 at bit
 * 2 * (b % 4) of byte b / 4, blocks vm_blocks and past unset (the layout of
 * PostgreSQL's visibility map).  vm_full says that every block below
 * vm_blocks is set (the caller found it so when it copied the map): the
 * bitmap is then not read (vm may be NULL) and an entry is taken when its
 * block is below vm_blocks.  Those entries are counted into *counted
 * and their values added to cols; the TIDs of the others are written to
 * fetch (room for n; order unspecified) and counted into *nfetch.  On the
 * host, on the CPU engine's threads for large n, for either engine.
 */
GiStatus	gi_host_aggregate(const int64_t *keys, const uint64_t *tids,
							  const char *rows, int row_bytes, size_t n,
							  const uint8_t *vm, uint64_t vm_blocks,
							  bool vm_full, GiAggColumn *cols, int ncols, int64_t *counted,
							  uint64_t *fetch, size_t *nfetch, GiError *err);

/*
 * The host arrays of an image's entries, as the CPU twin of
 * gi_image_aggregate reads them: rank order held as a sorted base part and
 * a sorted delta part, drank[j] (ascending) the position of delta entry j
 * among all nbase + ndelta entries (src/'s image arrays; ndelta may be 0).
 * Rows as for gi_host_aggregate (rows / drows may be NULL when no column
 * is a row column, keys / dkeys when none is the key).
 */
typedef struct GiAggEntries
{
	const int64_t *keys;
	const uint64_t *tids;
	const char *rows;
	size_t		nbase;
	const int64_t *dkeys;
	const uint64_t *dtids;
	const char *drows;
	const int64_t *drank;
	size_t		ndelta;
	int			row_bytes;
} GiAggEntries;

/*
 * Add up the entries at n positions of the host arrays h, one entry each,
 * every one counted (the caller tested their heap pages: GpuIndexAgg over
 * an as-of join's direct answers), into cols and *counted, on the CPU
 * engine's threads.  The host twin of gi_image_aggregate over one-entry
 * ranges with a full map.  On an error cols and *counted are unchanged.
 */
GiStatus	gi_host_aggregate_positions(const GiAggEntries *h, const uint64_t *pos,
										size_t n, GiAggColumn *cols, int ncols,
										int64_t *counted, GiError *err);

/*
 * INCLUDE columns in the columnar form the device adds up: ncols columns
 * (at most 16) of an image's n entries in rank order, column c's values
 * width[c] bytes each (1, 2, 4 or 8; bool as 0/1) at values[c], its NULLs
 * as a bitmap nulls[c] (bit i % 8 of byte i / 8 set: entry i is NULL; a
 * NULL pointer: no NULLs).
 */
typedef struct GiIncludeColumns
{
	int			ncols;
	int			width[16];
	const void *values[16];
	const uint8_t *nulls[16];
} GiIncludeColumns;

/*
 * Keep INCLUDE columns with an image for gi_image_aggregate, replacing any
 * kept before.  The GPU engine copies them to the device (gi_image_info:
 * include_columns, include_device_bytes, counted in device_bytes too; the
 * caller keeps them under its device memory limit); the CPU engine keeps
 * nothing (its twin reads the host rows).  An insertion into the image
 * drops them (attach them again for the new entries).  On an error the
 * image keeps no columns.  This changes the image: not while it is queried
 * or aggregated.
 */
GiStatus	gi_image_attach_columns(GiImage *image, const GiIncludeColumns *cols,
									GiError *err);

/*
 * Add up the entries at the positions of nranges disjoint ranges
 * [first[i], last[i]) of an image (GpuIndexAgg): as gi_host_aggregate, the
 * entries whose heap block is set in the visibility map copy (vm,
 * vm_blocks, vm_full as there) are counted into *counted and their values
 * added to cols; the TIDs of the others go to *fetch (allocated by the
 * engine with malloc, at least one element; release with gi_free), their
 * count to *nfetch, in no particular order.
 *
 * The GPU engine adds up on the device from what the image holds there:
 * the payloads in rank order (the image must keep payloads), for a B+
 * tree the keys, and the INCLUDE columns attached (gi_image_attach_columns;
 * a row column is read from column `column`, whose width must be its
 * kind's).  A row column the device does not hold, or a key column of a
 * vEB image, answers GI_ERR_UNSUPPORTED before anything is added (the
 * caller adds up on the host instead); host is not read.  The CPU engine adds up the host arrays host describes
 * (gi_host_aggregate's loop, on its threads), whose nbase + ndelta must be
 * the image's entry count.  On an error cols, *counted are unchanged and
 * *fetch is NULL.  Threads as for gi_image_query (the GPU engine runs on
 * the calling thread's stream; after insertions the first call gathers the
 * rank-ordered key and payload copies under a lock, the others wait for
 * it).
 */
GiStatus	gi_image_aggregate(GiImage *image, const GiAggEntries *host,
							   const uint64_t *first, const uint64_t *last,
							   size_t nranges, const uint8_t *vm, uint64_t vm_blocks,
							   bool vm_full, GiAggColumn *cols, int ncols,
							   int64_t *counted, uint64_t **fetch, size_t *nfetch,
							   GiError *err);

/*
 * Hint that host memory [p, p + size) be backed by transparent huge pages
 * where the kernel allows it (only the whole 2 MB pages inside; ignored
 * elsewhere).  Big arrays read at random or touched fresh per call: fewer
 * TLB misses and page faults.  Best given before the memory is touched.
 */
void		gi_advise_huge_pages(void *p, size_t size);

/* Name of the engine, "cpu" or "gpu". */
const char *gi_engine_name(GiEngineKind engine);

/* Name of the structure, "btree" or "veb". */
const char *gi_structure_name(GiStructure structure);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIDX_ENGINE_H */
