/*
 * utils.c - small helpers every other file of src/ uses: memory, the
 * engine's host sort, key conversions and the engine-error mapper.  It
 * calls only the engine and PostgreSQL, so every file of src/ may use it
 * without a cycle (as contrib/bloom's blutils.c).
 */
#include "gpuidx.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* palloc a huge chunk (past 1 GB) in the current memory context. */
void *
gpuidx_alloc_huge(Size size)
{
	void	   *p = MemoryContextAllocHuge(CurrentMemoryContext, Max(size, 8));

	/* big arrays: read at random, or touched fresh per query */
	gi_advise_huge_pages(p, size);
	return p;
}

/*
 * An image's INCLUDE columns in rank order, one value array and one NULL
 * bitmap a column, into ic (for gi_image_attach_columns): rows holds the
 * base part's n - ndelta rows, drows the delta's ndelta, which go to
 * positions drank; a row is a uint16 NULL mask, then the values (width and
 * value_offset a column).  The arrays are palloc'd in the current memory
 * context; a column with no NULL gets no bitmap in ic.  Shared by a
 * backend's own image (cache.c) and the service's (service.c).
 */
void
gpuidx_rows_to_columns(const char *rows, const char *drows, const int64 *drank,
					   int64 n, int64 ndelta, int row_bytes, int ncols,
					   const int16 *width, const int16 *value_offset,
					   GiIncludeColumns *ic)
{
	char	   *values[GPUIDX_MAX_INCLUDE];
	uint8	   *nulls[GPUIDX_MAX_INCLUDE];
	bool		any_null[GPUIDX_MAX_INCLUDE];
	int64		pos,
				b = 0,
				d = 0;
	int			c;

	for (c = 0; c < ncols; c++)
	{
		values[c] = gpuidx_alloc_huge((Size) n * width[c]);
		nulls[c] = gpuidx_alloc_huge((Size) (n + 7) / 8);
		memset(nulls[c], 0, (Size) (n + 7) / 8);
		any_null[c] = false;
	}
	for (pos = 0; pos < n; pos++)
	{
		const char *row;
		uint16		mask;

		if (d < ndelta && drank[d] == pos)
			row = drows + (Size) (d++) * row_bytes;
		else
			row = rows + (Size) (b++) * row_bytes;
		memcpy(&mask, row, sizeof(uint16));
		for (c = 0; c < ncols; c++)
		{
			memcpy(values[c] + (Size) pos * width[c],
				   row + sizeof(uint16) + value_offset[c], width[c]);
			if (mask & (1 << c))
			{
				nulls[c][pos / 8] |= (uint8) (1 << (pos % 8));
				any_null[c] = true;
			}
		}
	}
	memset(ic, 0, sizeof(*ic));
	ic->ncols = ncols;
	for (c = 0; c < ncols; c++)
	{
		ic->width[c] = width[c];
		ic->values[c] = values[c];
		ic->nulls[c] = any_null[c] ? nulls[c] : NULL;
	}
}

/* Raise an engine error as a PostgreSQL error with a fitting SQLSTATE. */
void
gpuidx_raise_engine_error(const GiError *err, const char *what)
{
	int			code;

	switch (err->status)
	{
		case GI_ERR_HOST_OOM:
		case GI_ERR_DEVICE_OOM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case GI_ERR_NO_DEVICE:
			code = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
			break;
		case GI_ERR_DEVICE:
			code = ERRCODE_SYSTEM_ERROR;
			break;
		case GI_ERR_UNSUPPORTED:
			code = ERRCODE_FEATURE_NOT_SUPPORTED;
			break;
		default:
			code = ERRCODE_INTERNAL_ERROR;
			break;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("gpuidx: %s failed: %s", what, err->message)));
}

/* Sort (key, tid) pairs in place through the engine's host sort. */
void
gpuidx_sort_pairs(int64 *keys, uint64 *tids, int64 n)
{
	int64	   *ks;
	uint64	   *ts;
	GiError		err;

	if (n < 2)
		return;
	ks = gpuidx_alloc_huge(sizeof(int64) * n);
	ts = gpuidx_alloc_huge(sizeof(uint64) * n);
	if (gi_sort_pairs((const int64_t *) keys, (const uint64_t *) tids, (size_t) n,
					  (int64_t *) ks, (uint64_t *) ts, &err) != GI_OK)
		gpuidx_raise_engine_error(&err, "sorting index entries");
	memcpy(keys, ks, sizeof(int64) * n);
	memcpy(tids, ts, sizeof(uint64) * n);
	pfree(ks);
	pfree(ts);
}

/*
 * The non-NULL elements of an int2/int4/int8 array as keys, sorted and
 * distinct (palloc'd); *count receives how many.
 */
int64 *
gpuidx_array_keys(Datum arraydatum, int64 *count)
{
	ArrayType  *arr = DatumGetArrayTypeP(arraydatum);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems,
				i;
	int64		n = 0,
				d;
	int64	   *out;
	Oid			keytype = getBaseType(elemtype);	/* once, not per element */

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &nelems);
	out = gpuidx_alloc_huge(sizeof(int64) * Max(nelems, 1));
	for (i = 0; i < nelems; i++)
		if (!nulls[i])
			out[n++] = gpuidx_datum_to_key(elems[i], keytype);
	pfree(elems);
	pfree(nulls);
	if (n > 1)
	{
		uint64	   *none = gpuidx_alloc_huge(sizeof(uint64) * n);

		memset(none, 0, sizeof(uint64) * n);
		gpuidx_sort_pairs(out, none, n);
		pfree(none);
		for (i = 1, d = 1; i < n; i++)
			if (out[i] != out[d - 1])
				out[d++] = out[i];
		n = d;
	}
	*count = n;
	return out;
}

/*
 * Key width of an indexable type, 0 if the type is not supported.  A domain
 * counts as its base type (an index on a domain column has the domain as its
 * attribute type).
 */
int
gpuidx_key_bytes_for_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return 2;
		case INT4OID:
			return 4;
		case INT8OID:
			return 8;
		default:
			{
				Oid			base = getBaseType(typid);

				return base != typid ? gpuidx_key_bytes_for_type(base) : 0;
			}
	}
}

/* gpuidx_datum_to_key of a domain over int2/int4/int8 (gpuidx.h). */
int64
gpuidx_domain_datum_to_key(Datum value, Oid typid)
{
	/* A domain: its values are those of its base type. */
	Oid			base = getBaseType(typid);

	if (base == typid)
		elog(ERROR, "gpuidx: unsupported key type %u", typid);
	return gpuidx_datum_to_key(value, base);
}

/* A 64-bit key as a datum of the index's key type (int2, int4 or int8). */
Datum
gpuidx_key_to_datum(int64 key, Oid typid)
{
	return typid == INT2OID ? Int16GetDatum((int16) key) :
		typid == INT4OID ? Int32GetDatum((int32) key) : Int64GetDatum(key);
}

/* Milliseconds since *t, and reset *t to now. */
double
gpuidx_lap_ms(instr_time *t)
{
	instr_time	now;
	double		ms;

	INSTR_TIME_SET_CURRENT(now);
	ms = INSTR_TIME_GET_MILLISEC(now) - INSTR_TIME_GET_MILLISEC(*t);
	*t = now;
	return ms;
}

/*
 * Sort n entries by (key, tid) in place, their included-columns rows
 * (row_bytes each; rows may be NULL) moving with them.  Two passes of the
 * engine's pair sort find the permutation: the positions ordered by TID,
 * then those ordered by key with the TID rank breaking ties.
 */
void
gpuidx_sort_entries(int64 *keys, uint64 *tids, char *rows, int row_bytes,
					int64 n)
{
	int64	   *in_keys;
	uint64	   *in_rank;
	int64	   *sorted_keys;
	uint64	   *by_tid;			/* position of the i-th entry in TID order */
	uint64	   *tid_rank;		/* TID rank of the i-th entry in index order */
	char	   *moved;
	int64		i;
	GiError		err;

	if (rows == NULL || row_bytes == 0)
	{
		gpuidx_sort_pairs(keys, tids, n);
		return;
	}
	if (n < 2)
		return;
	in_keys = gpuidx_alloc_huge(sizeof(int64) * n);
	in_rank = gpuidx_alloc_huge(sizeof(uint64) * n);
	sorted_keys = gpuidx_alloc_huge(sizeof(int64) * n);
	by_tid = gpuidx_alloc_huge(sizeof(uint64) * n);
	tid_rank = gpuidx_alloc_huge(sizeof(uint64) * n);

	/* Packed TIDs are below 2^48: as int64 keys they sort as TIDs. */
	for (i = 0; i < n; i++)
	{
		in_keys[i] = (int64) tids[i];
		in_rank[i] = (uint64) i;
	}
	if (gi_sort_pairs((const int64_t *) in_keys, (const uint64_t *) in_rank,
					  (size_t) n, (int64_t *) sorted_keys, (uint64_t *) by_tid,
					  &err) != GI_OK)
		gpuidx_raise_engine_error(&err, "sorting index entries");
	for (i = 0; i < n; i++)
	{
		in_keys[i] = keys[by_tid[i]];
		in_rank[i] = (uint64) i;
	}
	if (gi_sort_pairs((const int64_t *) in_keys, (const uint64_t *) in_rank,
					  (size_t) n, (int64_t *) sorted_keys, (uint64_t *) tid_rank,
					  &err) != GI_OK)
		gpuidx_raise_engine_error(&err, "sorting index entries");

	moved = gpuidx_alloc_huge((Size) row_bytes * n);
	for (i = 0; i < n; i++)
	{
		uint64		from = by_tid[tid_rank[i]];

		in_rank[i] = tids[from];
		memcpy(moved + (Size) i * row_bytes, rows + (Size) from * row_bytes,
			   row_bytes);
	}
	memcpy(keys, sorted_keys, sizeof(int64) * n);
	memcpy(tids, in_rank, sizeof(uint64) * n);
	memcpy(rows, moved, (Size) row_bytes * n);
	pfree(in_keys);
	pfree(in_rank);
	pfree(sorted_keys);
	pfree(by_tid);
	pfree(tid_rank);
	pfree(moved);
}

/*
 * Width of a type an index may INCLUDE: the fixed-width by-value types
 * listed in the README (a domain counts as its base type); 0 for others.
 */
int
gpuidx_include_width_for_type(Oid typid)
{
	switch (typid)
	{
		case BOOLOID:
			return 1;
		case INT2OID:
			return 2;
		case INT4OID:
		case FLOAT4OID:
		case DATEOID:
		case OIDOID:
			return 4;
		case INT8OID:
		case FLOAT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return 8;
		default:
			{
				Oid			base = getBaseType(typid);

				return base != typid ? gpuidx_include_width_for_type(base) : 0;
			}
	}
}

/*
 * The index's layout of included columns, computed from its tuple
 * descriptor once per relcache entry (kept in rd_amcache, which a relcache
 * rebuild frees).
 */
const GpuidxLayout *
gpuidx_layout(Relation index)
{
	GpuidxLayout *layout = (GpuidxLayout *) index->rd_amcache;
	TupleDesc	desc = RelationGetDescr(index);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	int			c;

	if (layout)
		return layout;
	layout = MemoryContextAllocZero(index->rd_indexcxt, sizeof(GpuidxLayout));
	layout->ninclude = desc->natts - nkeys;
	if (layout->ninclude > GPUIDX_MAX_INCLUDE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuidx indexes include at most %d columns",
						GPUIDX_MAX_INCLUDE)));
	for (c = 0; c < layout->ninclude; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, nkeys + c);
		int			width = gpuidx_include_width_for_type(att->atttypid);

		if (width == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gpuidx cannot include column \"%s\" of type %s",
							NameStr(att->attname), format_type_be(att->atttypid)),
					 errdetail("Included columns must be of type int2, int4, int8, float4, float8, date, timestamp, timestamptz, bool or oid.")));
		layout->width[c] = width;
		layout->value_offset[c] = layout->value_bytes;
		layout->value_bytes += width;
	}
	if (layout->ninclude == 0)
		layout->entry_bytes = sizeof(GpuidxEntry);
	else
	{
		layout->entry_bytes = MAXALIGN(sizeof(GpuidxEntry) + layout->value_bytes);
		layout->row_bytes = sizeof(uint16) + layout->value_bytes;
	}
	layout->entries_per_page = GPUIDX_PAGE_SPACE / layout->entry_bytes;
	index->rd_amcache = layout;
	return layout;
}

/*
 * Pack the included columns' datums and NULL flags into one row; a NULL's
 * bytes are zero, so equal rows have equal bytes.
 */
void
gpuidx_form_row(const GpuidxLayout *layout, const Datum *values,
				const bool *isnull, char *row)
{
	uint16		nulls = 0;
	char	   *v = row + sizeof(uint16);
	int			c;

	memset(row, 0, layout->row_bytes);
	for (c = 0; c < layout->ninclude; c++)
	{
		char	   *at = v + layout->value_offset[c];

		if (isnull[c])
		{
			nulls |= (uint16) (1 << c);
			continue;
		}
		switch (layout->width[c])
		{
			case 1:
				*at = DatumGetChar(values[c]);
				break;
			case 2:
				{
					int16		x = DatumGetInt16(values[c]);

					memcpy(at, &x, sizeof(x));
					break;
				}
			case 4:
				{
					int32		x = DatumGetInt32(values[c]);

					memcpy(at, &x, sizeof(x));
					break;
				}
			default:
				{
					int64		x = DatumGetInt64(values[c]);

					memcpy(at, &x, sizeof(x));
					break;
				}
		}
	}
	memcpy(row, &nulls, sizeof(nulls));
}

/*
 * Unpack a row into datums and NULL flags, as fetch_att reads by-value
 * attributes of a heap tuple (so the datums equal the heap's bit for bit).
 */
void
gpuidx_deform_row(const GpuidxLayout *layout, const char *row, Datum *values,
				  bool *isnull)
{
	int			c;

	for (c = 0; c < layout->ninclude; c++)
		values[c] = gpuidx_row_value(layout, row, c, &isnull[c]);
}
