/*
 * build.c - CREATE INDEX: scan the table, sort (key, TID) pairs, write the
 * metapage and the base run.
 */
#include "gpuidx.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

typedef struct GpuidxBuildState
{
	Oid			keytype;
	int64		n;
	int64		capacity;
	int64	   *keys;
	uint64	   *tids;
	int64		nnull;
	int64		null_capacity;
	uint64	   *null_tids;
	GpuidxLayout layout;		/* a copy: relcache rebuilds free rd_amcache */
	char	   *rows;			/* included columns, parallel to keys */
	char	   *null_rows;		/* included columns, parallel to null_tids */
} GpuidxBuildState;

/*
 * The structure to build an index with: its WITH (structure = ...) option,
 * else gpuidx.default_structure.  Once built, the metapage records it, and
 * the build records a default it used as the index's option
 * (record_structure_option).
 */
GiStructure
gpuidx_relation_structure(Relation index)
{
	GpuidxOptions *opts = (GpuidxOptions *) index->rd_options;

	if (opts && opts->structure_offset != 0)
	{
		const char *value = (const char *) opts + opts->structure_offset;

		if (strcmp(value, "veb") == 0)
			return GI_STRUCT_VEB;
		if (strcmp(value, "btree") == 0)
			return GI_STRUCT_BTREE;
	}
	return (GiStructure) gpuidx_default_structure;
}

/* Did the index's reloptions name a structure (WITH (structure = ...))? */
bool
gpuidx_relation_structure_given(Relation index)
{
	GpuidxOptions *opts = (GpuidxOptions *) index->rd_options;

	return opts && opts->structure_offset != 0;
}

/*
 * Collect one heap tuple's key, TID and included columns; NULL keys go to
 * the NULL list (with their included columns, for index-only scans).
 */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	GpuidxBuildState *bs = (GpuidxBuildState *) state;
	int			row_bytes = bs->layout.row_bytes;

	if (isnull[0])
	{
		if (bs->nnull == bs->null_capacity)
		{
			bs->null_capacity = Max(64, bs->null_capacity * 2);
			bs->null_tids = bs->null_tids ?
				repalloc_huge(bs->null_tids, sizeof(uint64) * bs->null_capacity) :
				palloc(sizeof(uint64) * bs->null_capacity);
			if (row_bytes > 0)
				bs->null_rows = bs->null_rows ?
					repalloc_huge(bs->null_rows, (Size) row_bytes * bs->null_capacity) :
					palloc((Size) row_bytes * bs->null_capacity);
		}
		if (row_bytes > 0)
			gpuidx_form_row(&bs->layout, values + 1, isnull + 1,
							bs->null_rows + (Size) bs->nnull * row_bytes);
		bs->null_tids[bs->nnull++] =
			gpuidx_tid_pack(ItemPointerGetBlockNumber(tid),
							ItemPointerGetOffsetNumber(tid));
		return;
	}
	if (bs->n == bs->capacity)
	{
		bs->capacity *= 2;
		bs->keys = repalloc_huge(bs->keys, sizeof(int64) * bs->capacity);
		bs->tids = repalloc_huge(bs->tids, sizeof(uint64) * bs->capacity);
		if (row_bytes > 0)
			bs->rows = repalloc_huge(bs->rows, (Size) row_bytes * bs->capacity);
	}
	if (row_bytes > 0)
		gpuidx_form_row(&bs->layout, values + 1, isnull + 1,
						bs->rows + (Size) bs->n * row_bytes);
	bs->keys[bs->n] = gpuidx_datum_to_key(values[0], bs->keytype);
	bs->tids[bs->n] = gpuidx_tid_pack(ItemPointerGetBlockNumber(tid),
									  ItemPointerGetOffsetNumber(tid));
	bs->n++;
}

/*
 * Record the structure chosen by gpuidx.default_structure as the index's
 * WITH (structure = ...) option, so that every rebuild keeps it: REINDEX
 * builds from the index's reloptions, REINDEX CONCURRENTLY copies them to
 * the new index, and pg_dump writes them into the CREATE INDEX it emits.
 * (The metapage records the structure too, but a rebuild starts from a new,
 * empty relfilenode and a dump does not carry pages.)
 */
static void
record_structure_option(Relation index, GiStructure structure)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tuple,
				newtuple;
	Datum		oldopts;
	bool		isnull;
	Datum		values[Natts_pg_class] = {0};
	bool		nulls[Natts_pg_class] = {0};
	bool		replace[Natts_pg_class] = {0};
	List	   *defs;

	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(RelationGetRelid(index)));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", RelationGetRelid(index));
	oldopts = heap_getattr(tuple, Anum_pg_class_reloptions,
						   RelationGetDescr(pg_class), &isnull);
	defs = list_make1(makeDefElem("structure",
								  (Node *) makeString(structure == GI_STRUCT_VEB ? "veb" : "btree"),
								  -1));
	values[Anum_pg_class_reloptions - 1] =
		transformRelOptions(isnull ? (Datum) 0 : oldopts, defs, NULL, NULL,
							false, false);
	replace[Anum_pg_class_reloptions - 1] = true;
	newtuple = heap_modify_tuple(tuple, RelationGetDescr(pg_class), values,
								 nulls, replace);
	CatalogTupleUpdate(pg_class, &newtuple->t_self, newtuple);
	heap_freetuple(newtuple);
	heap_freetuple(tuple);
	table_close(pg_class, RowExclusiveLock);

	/* index_build updates this row's statistics next: let it see this one. */
	CommandCounterIncrement();
}

/*
 * Check what CREATE INDEX asks for and return the key width; included
 * columns of other types than gpuidx_layout accepts are an error naming
 * the column and its type.
 */
static int
check_index_definition(Relation index, GiStructure *structure)
{
	Oid			keytype = TupleDescAttr(RelationGetDescr(index), 0)->atttypid;
	int			key_bytes = gpuidx_key_bytes_for_type(keytype);

	if (key_bytes == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuidx indexes only int2, int4 and int8 keys")));
	(void) gpuidx_layout(index);
	*structure = gpuidx_relation_structure(index);
	return key_bytes;
}

/* Build a new gpuidx index. */
IndexBuildResult *
gpuidx_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	GpuidxBuildState bs;
	GiStructure structure;
	int			key_bytes;
	double		reltuples;
	BlockNumber head,
				null_head = InvalidBlockNumber,
				null_tail = InvalidBlockNumber;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));
	key_bytes = check_index_definition(index, &structure);
	if (!gpuidx_relation_structure_given(index))
		record_structure_option(index, structure);

	memset(&bs, 0, sizeof(bs));
	/* A domain's base type, looked up once rather than per row. */
	bs.keytype = getBaseType(TupleDescAttr(RelationGetDescr(index), 0)->atttypid);
	bs.capacity = 1024;
	bs.keys = palloc(sizeof(int64) * bs.capacity);
	bs.tids = palloc(sizeof(uint64) * bs.capacity);
	bs.layout = *gpuidx_layout(index);
	if (bs.layout.row_bytes > 0)
		bs.rows = palloc((Size) bs.layout.row_bytes * bs.capacity);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIDX_PHASE_SCAN_TABLE);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIDX_PHASE_SORT);
	gpuidx_sort_entries(bs.keys, bs.tids, bs.rows, bs.layout.row_bytes, bs.n);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIDX_PHASE_WRITE_BASE);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, bs.n);
	gpuidx_write_empty_metapage(index, MAIN_FORKNUM, key_bytes, structure);
	head = gpuidx_write_chain(index, bs.keys, bs.tids, bs.rows, bs.n,
							  GPUIDX_PAGE_BASE, NULL);
	if (bs.nnull > 0)
	{
		/* NULL keys are not searchable; their TIDs serve full ordered scans. */
		int64	   *zeros = palloc0(sizeof(int64) * bs.nnull);

		null_head = gpuidx_write_chain(index, zeros, bs.null_tids, bs.null_rows,
									   bs.nnull, GPUIDX_PAGE_NULL, &null_tail);
		pfree(zeros);
	}
	if (bs.n > 0 || bs.nnull > 0)
	{
		Buffer		metabuf = ReadBuffer(index, GPUIDX_METAPAGE_BLKNO);
		GenericXLogState *state;
		GpuidxMetaPageData *meta;

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		meta = GpuidxPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		meta->base_head = head;
		meta->base_count = bs.n;
		if (bs.nnull > 0)
		{
			meta->null_head = null_head;
			meta->null_tail = null_tail;
			meta->null_count = bs.nnull;
		}
		GenericXLogFinish(state);
		UnlockReleaseBuffer(metabuf);
	}
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs.n);

	result = palloc0(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = (double) bs.n;
	pfree(bs.keys);
	pfree(bs.tids);
	if (bs.null_tids)
		pfree(bs.null_tids);
	if (bs.rows)
		pfree(bs.rows);
	if (bs.null_rows)
		pfree(bs.null_rows);
	return result;
}

/* Build the init fork of an unlogged index: an empty metapage. */
void
gpuidx_buildempty(Relation index)
{
	GiStructure structure;
	int			key_bytes = check_index_definition(index, &structure);

	gpuidx_write_empty_metapage(index, INIT_FORKNUM, key_bytes, structure);
}
