/*
 * utils.c - small helpers every other file of src/ uses: memory, the
 * engine's host sort, key conversions and the engine-error mapper.  It
 * calls only the engine and PostgreSQL, so every file of src/ may use it
 * without a cycle (as contrib/bloom's blutils.c).
 */
#include "gpuidx.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
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

/* Convert an int2/int4/int8 datum to a 64-bit key. */
int64
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
			{
				/* A domain: its values are those of its base type. */
				Oid			base = getBaseType(typid);

				if (base != typid)
					return gpuidx_datum_to_key(value, base);
			}
			elog(ERROR, "gpuidx: unsupported key type %u", typid);
			return 0;			/* keep compiler quiet */
	}
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
