/*
 * gpuidx.h - declarations shared by the PostgreSQL-facing code in src/.
 *
 * Only src/ includes PostgreSQL headers.  It talks to the engines through
 * engine/engine.h and nothing else.
 */
#ifndef GPUIDX_H
#define GPUIDX_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "catalog/pg_type_d.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

#include "engine.h"

/* ---------- on-disk format ---------- */

#define GPUIDX_MAGIC			0x47504958	/* "GPIX" */
#define GPUIDX_VERSION			2	/* 2: pending lanes */
#define GPUIDX_VERSION_INCLUDE	3	/* 3: version 2 with INCLUDE columns */
#define GPUIDX_METAPAGE_BLKNO	0
#define GPUIDX_PAGE_ID			0xFF87

/* Page kinds, in the special area's flags. */
#define GPUIDX_PAGE_META		(1 << 0)
#define GPUIDX_PAGE_BASE		(1 << 1)
#define GPUIDX_PAGE_PENDING		(1 << 2)
#define GPUIDX_PAGE_FREE		(1 << 3)
#define GPUIDX_PAGE_NULL		(1 << 4)

/* Special area of every gpuidx page. */
typedef struct GpuidxPageOpaqueData
{
	BlockNumber next;			/* next page of the same chain */
	uint16		flags;
	uint16		page_id;		/* GPUIDX_PAGE_ID, for tools */
} GpuidxPageOpaqueData;

typedef GpuidxPageOpaqueData *GpuidxPageOpaque;

/*
 * One index entry on disk: the key (always 64-bit) and the heap TID.  An
 * index with INCLUDE columns follows each entry with the included values
 * (packed, each in its type's width) and keeps their NULL flags in
 * include_nulls (bit c: included column c is NULL); its entries are
 * GpuidxLayout.entry_bytes apart.  Without included columns an entry is
 * these 16 bytes and include_nulls is 0, the layout of version 2.
 */
typedef struct GpuidxEntry
{
	int64		key;
	uint32		block;
	uint16		offset;
	uint16		include_nulls;
} GpuidxEntry;

/* Most INCLUDE columns an index may have (one NULL bit each). */
#define GPUIDX_MAX_INCLUDE		16

/*
 * Where an index's included columns live.  In memory (build, image, scans)
 * an entry's included columns are one row of row_bytes: the uint16 NULL
 * mask, then the values as on disk (value_offset[c] from the values'
 * start).  Computed from the index's tuple descriptor (gpuidx_layout).
 */
typedef struct GpuidxLayout
{
	int			ninclude;		/* 0: the plain 16-byte entries */
	int			entry_bytes;	/* on-disk stride of entries */
	int			entries_per_page;
	int			value_bytes;	/* sum of the included widths */
	int			row_bytes;		/* in-memory row: mask + values; 0 if none */
	int16		width[GPUIDX_MAX_INCLUDE];
	int16		value_offset[GPUIDX_MAX_INCLUDE];
} GpuidxLayout;

/*
 * Pending entries go to one of GPUIDX_LANES lists ("lanes"), chosen by the
 * inserting backend's process number, so that concurrent inserters append to
 * different pages under a shared metapage lock instead of queueing on it.
 */
#define GPUIDX_LANES			8

/*
 * One pending lane in the metapage.  Only the entries before the tail page
 * are counted here: the tail page takes appends without the metapage being
 * written, so its own entry count (pd_lower) is the rest of the lane.
 */
typedef struct GpuidxLaneData
{
	BlockNumber head;			/* first page, InvalidBlockNumber if empty */
	BlockNumber tail;			/* last page, the one that takes appends */
	uint64		full_count;		/* entries in the pages before tail */
} GpuidxLaneData;

/* Contents of the metapage. */
typedef struct GpuidxMetaPageData
{
	uint32		magic;
	uint32		version;
	int32		key_bytes;		/* 2, 4 or 8 */
	int32		structure;		/* GiStructure */
	uint64		generation;		/* bumped whenever the base run is rewritten */
	BlockNumber base_head;		/* first page of the sorted base run */
	BlockNumber null_head;		/* TIDs of rows whose key is NULL */
	BlockNumber null_tail;
	uint32		unused;
	uint64		base_count;		/* entries in the base run */
	uint64		null_count;

	/*
	 * Set by a rewrite that removed nothing (a fold, or a VACUUM that found
	 * no dead entry): this generation holds exactly the entries generation
	 * folded_from held, folded_entries of them (base + pending then), so an
	 * image of that generation that had them all follows without a reload.
	 * Zero otherwise.
	 */
	uint64		folded_from;
	uint64		folded_entries;
	GpuidxLaneData lanes[GPUIDX_LANES];	/* the pending entries */

	/*
	 * Included columns (version 3 only).  A version 2 metapage ends
	 * (pd_lower) before these fields: gpuidx_copy_meta copies only what
	 * precedes them and fills them in as "none".
	 */
	uint32		include_count;
	uint32		entry_bytes;	/* stride of entries, 16 when none */
	uint8		include_widths[GPUIDX_MAX_INCLUDE];
} GpuidxMetaPageData;

/*
 * How many pending entries each lane holds, as counted under one metapage
 * lock (the metapage's full_count plus the tail page's entries), and their
 * sum.  Within a generation a lane only grows, so equal sums mean equal
 * lanes.
 */
typedef struct GpuidxPendingCounts
{
	uint64		total;
	uint64		lane[GPUIDX_LANES];
} GpuidxPendingCounts;

#define GpuidxPageGetOpaque(page) ((GpuidxPageOpaque) PageGetSpecialPointer(page))
#define GpuidxPageGetMeta(page) ((GpuidxMetaPageData *) PageGetContents(page))
#define GpuidxPageGetEntries(page) ((GpuidxEntry *) PageGetContents(page))
/* Entries on a page whose entries are entry_bytes apart. */
#define GpuidxPageCount(page, entry_bytes) \
	((int) ((((PageHeader) (page))->pd_lower - \
			 (PageGetContents(page) - (char *) (page))) / (entry_bytes)))
/* Entry i of a page whose entries are entry_bytes apart. */
#define GpuidxPageEntry(page, i, entry_bytes) \
	((GpuidxEntry *) (PageGetContents(page) + (Size) (i) * (entry_bytes)))
#define GPUIDX_PAGE_SPACE \
	((int) (BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - \
			MAXALIGN(sizeof(GpuidxPageOpaqueData))))

/* Empty every pending lane of a metapage (a new index, or a rewrite). */
static inline void
gpuidx_meta_clear_lanes(GpuidxMetaPageData *meta)
{
	int			lane;

	for (lane = 0; lane < GPUIDX_LANES; lane++)
	{
		meta->lanes[lane].head = InvalidBlockNumber;
		meta->lanes[lane].tail = InvalidBlockNumber;
		meta->lanes[lane].full_count = 0;
	}
}

/* Pack a heap TID into the 64-bit payload the engines carry (sorts as TIDs). */
static inline uint64
gpuidx_tid_pack(BlockNumber block, OffsetNumber offset)
{
	return ((uint64) block << 16) | (uint64) offset;
}

/* Unpack a payload into a heap TID. */
static inline void
gpuidx_tid_unpack(uint64 payload, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (payload >> 16), (OffsetNumber) (payload & 0xFFFF));
}

/* ---------- options ---------- */

typedef struct GpuidxOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			structure_offset;	/* offset of the "structure" string */
} GpuidxOptions;

/* ---------- GUCs (guc.c) ---------- */

typedef enum GpuidxEngineSetting
{
	GPUIDX_ENGINE_AUTO,
	GPUIDX_ENGINE_GPU,
	GPUIDX_ENGINE_CPU
} GpuidxEngineSetting;

extern int	gpuidx_engine_setting;
extern int	gpuidx_pending_limit;
extern int	gpuidx_device_memory_limit_mb;
extern int	gpuidx_host_memory_limit_mb;
extern int	gpuidx_batch_chunk;
extern int	gpuidx_default_structure;
extern bool gpuidx_enable_customscan;
extern bool gpuidx_enable_customjoin;
extern bool gpuidx_enable_customagg;
extern bool gpuidx_outer_in_place;
extern int	gpuidx_gpu_min_batch;
extern int	gpuidx_gpu_min_agg_entries;
extern bool gpuidx_enable_batch_insert;

extern void gpuidx_define_gucs(void);

/* ---------- build progress ---------- */

/*
 * Sub-phases of CREATE INDEX reported in pg_stat_progress_create_index
 * (PROGRESS_CREATEIDX_SUBPHASE); 1 is PostgreSQL's own "initializing".
 * handler.c names them (amphasename).
 */
typedef enum GpuidxBuildPhase
{
	GPUIDX_PHASE_SCAN_TABLE = 2,	/* reading the heap */
	GPUIDX_PHASE_SORT = 3,		/* sorting (key, TID) pairs */
	GPUIDX_PHASE_WRITE_BASE = 4 /* writing the metapage and base run */
} GpuidxBuildPhase;

/* ---------- customscan_plan.c ---------- */

extern void gpuidx_customscan_init(void);
extern void gpuidx_customjoin_init(void);
extern void gpuidx_customagg_init(void);
struct IndexOptInfo;
extern bool gpuidx_indexinfo_is_gpuidx(struct IndexOptInfo *index);

/* ---------- storage.c ---------- */

extern void gpuidx_init_page(Page page, uint16 flags);
extern void gpuidx_init_metapage(Page page, int key_bytes, GiStructure structure,
								 const GpuidxLayout *layout);
extern void gpuidx_write_empty_metapage(Relation index, ForkNumber fork,
										int key_bytes, GiStructure structure);
extern void gpuidx_copy_meta(Relation index, Page page, GpuidxMetaPageData *meta);
extern void gpuidx_count_pending(Relation index, const GpuidxMetaPageData *meta,
								 GpuidxPendingCounts *pending);
extern void gpuidx_read_meta(Relation index, GpuidxMetaPageData *meta,
							 GpuidxPendingCounts *pending);
extern BlockNumber gpuidx_write_chain(Relation index, const int64 *keys,
									  const uint64 *tids, const char *rows,
									  int64 n, uint16 flags, BlockNumber *tail);
extern bool gpuidx_read_chain(Relation index, BlockNumber head, uint16 flags,
							  int64 skip, int64 count, int64 *keys,
							  uint64 *tids, char *rows);
extern void gpuidx_read_entries(Relation index, GpuidxMetaPageData *meta,
								GpuidxPendingCounts *pending,
								const GpuidxPendingCounts *pending_from,
								int64 **keys, uint64 **tids, char **rows,
								int64 *n, uint64 **null_tids,
								char **null_rows);
extern void gpuidx_append(Relation index, uint16 list, int64 key,
						  ItemPointer tid, const char *row,
						  uint64 count_exact_from, uint64 *count);

/* ---------- scratch.c ---------- */

/* the most memory a backend keeps for one use (scratch.c) */
#define GPUIDX_SCRATCH_MAX		((Size) 64 << 20)
/* what a kept block holds */
typedef enum GpuidxScratchUse
{
	GPUIDX_SCRATCH_JOIN_ROWS,	/* GpuIndexJoin's chunk arrays */
	GPUIDX_SCRATCH_SINK,		/* GpuIndexAgg's sink positions */
	GPUIDX_SCRATCH_USES
} GpuidxScratchUse;
extern void *gpuidx_scratch_take(GpuidxScratchUse use, Size size);
extern void gpuidx_scratch_give(GpuidxScratchUse use, void *block);
extern void gpuidx_scratch_pin(GpuidxScratchUse use, void *block);

/* ---------- utils.c ---------- */

extern void *gpuidx_alloc_huge(Size size);
extern void gpuidx_rows_to_columns(const char *rows, const char *drows,
								   const int64 *drank, int64 n, int64 ndelta,
								   int row_bytes, int ncols, const int16 *width,
								   const int16 *value_offset, GiIncludeColumns *ic);
extern double gpuidx_lap_ms(instr_time *t);
extern void gpuidx_raise_engine_error(const GiError *err, const char *what);
extern void gpuidx_sort_pairs(int64 *keys, uint64 *tids, int64 n);
extern void gpuidx_sort_entries(int64 *keys, uint64 *tids, char *rows,
								int row_bytes, int64 n);
extern const GpuidxLayout *gpuidx_layout(Relation index);
extern int	gpuidx_include_width_for_type(Oid typid);
extern void gpuidx_form_row(const GpuidxLayout *layout, const Datum *values,
							const bool *isnull, char *row);

/*
 * Included column c of a row (gpuidx_form_row's layout: the NULL mask, then
 * the values) as a datum, as fetch_att reads a by-value attribute of a heap
 * tuple (so the datum equals the heap's bit for bit); 0 when NULL.  Inline:
 * joins read one or two columns of a row per outer row.
 */
static inline Datum
gpuidx_row_value(const GpuidxLayout *layout, const char *row, int c, bool *isnull)
{
	uint16		nulls;
	const char *at = row + sizeof(uint16) + layout->value_offset[c];

	memcpy(&nulls, row, sizeof(nulls));
	*isnull = (nulls & (1 << c)) != 0;
	if (*isnull)
		return (Datum) 0;
	switch (layout->width[c])
	{
		case 1:
			return CharGetDatum(*at);
		case 2:
			{
				int16		x;

				memcpy(&x, at, sizeof(x));
				return Int16GetDatum(x);
			}
		case 4:
			{
				int32		x;

				memcpy(&x, at, sizeof(x));
				return Int32GetDatum(x);
			}
		default:
			{
				int64		x;

				memcpy(&x, at, sizeof(x));
				return Int64GetDatum(x);
			}
	}
}

extern void gpuidx_deform_row(const GpuidxLayout *layout, const char *row,
							  Datum *values, bool *isnull);
extern int64 *gpuidx_array_keys(Datum arraydatum, int64 *count);
extern int	gpuidx_key_bytes_for_type(Oid typid);
extern int64 gpuidx_domain_datum_to_key(Datum value, Oid typid);

/*
 * Convert an int2/int4/int8 datum (or a domain over one) to a 64-bit key.
 * Inline: joins convert one probe per outer row.
 */
static inline int64
gpuidx_datum_to_key(Datum value, Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return (int64) DatumGetInt16(value);
		case INT4OID:
			return (int64) DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
		default:
			return gpuidx_domain_datum_to_key(value, typid);
	}
}
extern Datum gpuidx_key_to_datum(int64 key, Oid typid);

/* ---------- vacuum.c ---------- */

typedef bool (*GpuidxKeepCallback) (ItemPointer tid, void *state);
extern void gpuidx_rewrite(Relation index, GpuidxKeepCallback keep, void *state,
						   int64 min_pending, int64 *kept, int64 *removed);
extern void gpuidx_fold_pending(Relation index, int64 min_pending);

/* ---------- cache.c ---------- */

/* One loaded version of an index: host arrays and the engine image. */
typedef struct GpuidxImageData
{
	Oid			indexoid;
	int			refcount;		/* scans and batch calls holding it */
	bool		stale;			/* replaced by a newer version */
	bool		image_deferred; /* engine image not built yet: the first batch
								 * for the engine builds it (host-answered
								 * scans never need it) */
	MemoryContext context;		/* owns keys and tids */
	int64		n;				/* entries: nbase + ndelta */

	/*
	 * The entries sorted by (key, tid), as two sorted parts: the base arrays
	 * and a small delta of entries inserted since (kept apart so that a
	 * refresh after a few inserts does not copy all n entries).  drank[j] is
	 * delta entry j's position among all n, the position the engine answers
	 * with.  Read them through gpuidx_key_at / gpuidx_tid_at /
	 * gpuidx_copy_entries.
	 */
	int64	   *keys;			/* base part, nbase entries */
	uint64	   *tids;			/* packed TIDs, parallel to keys */
	int64		nbase;
	int64		ndelta;
	int64	   *dkeys;
	uint64	   *dtids;
	int64	   *drank;

	/*
	 * Included columns (none when row_bytes is 0): one row per entry (the
	 * NULL mask and the values, GpuidxLayout), parallel to keys/tids in the
	 * base part, dkeys/dtids in the delta, null_tids for NULL keys.  Read
	 * them through gpuidx_row_at.
	 */
	int			row_bytes;
	char	   *rows;
	char	   *drows;
	char	   *null_rows;
	GiImage    *image;
	GiEngineKind engine;		/* engine holding the image */
	GiEngineKind wanted_engine; /* engine gpuidx.engine asked for */
	int			key_bytes;
	GiStructure structure;
	uint64		generation;
	uint64		base_count;
	uint64		pending_count;	/* sum of lane_count */
	uint64		lane_count[GPUIDX_LANES];	/* pending entries held, per lane */
	int64		nnull;			/* TIDs of rows with a NULL key */
	uint64	   *null_tids;
	double		load_ms;		/* reading pages */
	struct GpuidxImageData *next_live;	/* list of all live versions */

	/*
	 * Service mode (service.h): a view of a shared image.  The arrays above
	 * point into the mapped segment, image stays NULL (the service holds
	 * the engine image), and the store slot is pinned for the transaction.
	 */
	bool		shared;
	bool		shared_pinned;	/* pinned in this transaction */
	int			shared_slot;
	uint64		shared_id;
	struct dsm_segment *base_seg;	/* keys, tids, rows */
	struct dsm_segment *delta_seg;	/* the delta and the NULL-key entries */
} GpuidxImageData;

/* Delta entries before position pos (those whose position is lower). */
static inline int64
gpuidx_delta_before(const GpuidxImageData *img, int64 pos)
{
	int64		lo = 0,
				hi = img->ndelta;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (img->drank[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Where position pos of an image's sorted entries lives: index into the
 * delta arrays (*in_delta) or into the base arrays.
 */
static inline int64
gpuidx_locate(const GpuidxImageData *img, int64 pos, bool *in_delta)
{
	int64		j;

	*in_delta = false;
	if (img->ndelta == 0)
		return pos;
	j = gpuidx_delta_before(img, pos);
	if (j < img->ndelta && img->drank[j] == pos)
	{
		*in_delta = true;
		return j;
	}
	return pos - j;
}

/* The key at position pos of an image's sorted entries. */
static inline int64
gpuidx_key_at(const GpuidxImageData *img, int64 pos)
{
	bool		in_delta;
	int64		i = gpuidx_locate(img, pos, &in_delta);

	return in_delta ? img->dkeys[i] : img->keys[i];
}

/* The packed TID at position pos of an image's sorted entries. */
static inline uint64
gpuidx_tid_at(const GpuidxImageData *img, int64 pos)
{
	bool		in_delta;
	int64		i = gpuidx_locate(img, pos, &in_delta);

	return in_delta ? img->dtids[i] : img->tids[i];
}

/*
 * The included-columns row of position pos (a NULL-key entry when pos >= n);
 * NULL when the index has no included columns.
 */
static inline const char *
gpuidx_row_at(const GpuidxImageData *img, int64 pos)
{
	bool		in_delta;
	int64		i;

	if (img->row_bytes == 0)
		return NULL;
	if (pos >= img->n)
		return img->null_rows + (Size) (pos - img->n) * img->row_bytes;
	i = gpuidx_locate(img, pos, &in_delta);
	return (in_delta ? img->drows : img->rows) + (Size) i * img->row_bytes;
}

/*
 * Ask the CPU to start loading what a caller reads of position pos (its key,
 * its TID, its included-columns row): walks that visit
 * positions in probe order (joins) miss the cache on every entry of a large
 * image, and a few loads in flight hide most of that latency.  A row may
 * straddle two cache lines: both are asked.
 */
static inline void
gpuidx_prefetch_entry(const GpuidxImageData *img, int64 pos, bool with_key,
					  bool with_tid, bool with_row)
{
	bool		in_delta;
	int64		i;
	const char *row;

	if (pos < 0 || pos >= img->n)
		return;
	i = gpuidx_locate(img, pos, &in_delta);
	if (with_key)
		__builtin_prefetch(in_delta ? &img->dkeys[i] : &img->keys[i]);
	if (with_tid)
		__builtin_prefetch(in_delta ? &img->dtids[i] : &img->tids[i]);
	if (!with_row || img->row_bytes == 0)
		return;
	row = (in_delta ? img->drows : img->rows) + (Size) i * img->row_bytes;
	__builtin_prefetch(row);
	__builtin_prefetch(row + img->row_bytes - 1);
}

/* gpuidx_prefetch_entry of the key and TID, and the row when with_row. */
static inline void
gpuidx_prefetch_at(const GpuidxImageData *img, int64 pos, bool with_row)
{
	gpuidx_prefetch_entry(img, pos, true, true, with_row);
}

extern void gpuidx_copy_entries(const GpuidxImageData *img, int64 first,
								int64 last, int64 *keys, uint64 *tids);
extern GpuidxImageData *gpuidx_image_acquire(Relation index);
extern void gpuidx_image_release(GpuidxImageData *img);
extern void gpuidx_wait_for_scans(Relation index);
extern bool gpuidx_can_skip_heap(void);
extern void gpuidx_cache_usage(int64 *images, uint64 *host_bytes);
extern GiEngineKind gpuidx_choose_engine(void);
extern void gpuidx_image_build_engine(GpuidxImageData *img);
extern bool gpuidx_query_image(GpuidxImageData *img, GiOp op,
							   const int64 *probes, const int64 *probes_hi,
							   int64 nprobes, uint64 *first, uint64 *last);
extern bool gpuidx_select_image(GpuidxImageData *img, GiOp op,
								const int64 *probes, const int64 *probes_hi,
								int64 nprobes, uint64 **out, int64 *nout);
extern bool gpuidx_aggregate_image(GpuidxImageData *img,
								   const GpuidxLayout *layout,
								   const uint64 *first, const uint64 *last,
								   int64 nranges, const uint8 *vm,
								   BlockNumber vm_blocks, bool vm_full,
								   GiAggColumn *cols, int ncols,
								   int64 *counted, uint64 **fetch, int64 *nfetch);
/* hostsearch.c */
extern int64 gpuidx_lower_bound(const GpuidxImageData *img, int64 key);
extern int64 gpuidx_upper_bound(const GpuidxImageData *img, int64 key);
extern void gpuidx_host_query(const GpuidxImageData *img, GiOp op,
							  const int64 *probes, const int64 *probes_hi,
							  int64 nprobes, uint64 *first, uint64 *last);
extern bool gpuidx_answer_on_host(const GpuidxImageData *img, int64 nprobes);
extern const char *gpuidx_engine_label(GiEngineKind engine, int64 engine_calls,
									   int64 host_calls);
extern int64 gpuidx_run_start(const GpuidxImageData *img, int64 pos);
extern int64 gpuidx_run_end(const GpuidxImageData *img, int64 pos);

/* ---------- handler.c / am callbacks ---------- */

extern void _PG_init(void);
extern Datum gpuidx_handler(PG_FUNCTION_ARGS);
extern IndexBuildResult *gpuidx_build(Relation heap, Relation index,
									  IndexInfo *indexInfo);
extern void gpuidx_buildempty(Relation index);
extern bool gpuidx_insert(Relation index, Datum *values, bool *isnull,
						  ItemPointer heap_tid, Relation heap,
						  IndexUniqueCheck checkUnique, bool indexUnchanged,
						  IndexInfo *indexInfo);
extern IndexBulkDeleteResult *gpuidx_bulkdelete(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats,
												IndexBulkDeleteCallback callback,
												void *callback_state);
extern IndexBulkDeleteResult *gpuidx_vacuumcleanup(IndexVacuumInfo *info,
												   IndexBulkDeleteResult *stats);
extern void gpuidx_costestimate(PlannerInfo *root, IndexPath *path,
								double loop_count, Cost *indexStartupCost,
								Cost *indexTotalCost,
								Selectivity *indexSelectivity,
								double *indexCorrelation, double *indexPages);
extern bytea *gpuidx_options(Datum reloptions, bool validate);
extern bool gpuidx_validate(Oid opclassoid);
extern IndexScanDesc gpuidx_beginscan(Relation index, int nkeys, int norderbys);
extern void gpuidx_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
						  ScanKey orderbys, int norderbys);
extern bool gpuidx_gettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 gpuidx_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void gpuidx_endscan(IndexScanDesc scan);
extern GiStructure gpuidx_relation_structure(Relation index);	/* build.c */
extern bool gpuidx_relation_structure_given(Relation index);	/* build.c */
extern Relation gpuidx_open_checked(Oid indexoid, Relation *heap);
extern bool gpuidx_is_gpuidx_index(Relation index);

#endif							/* GPUIDX_H */
