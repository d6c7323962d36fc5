/*
 * cpu_engine.c - the CPU engine's entry points (engine_impl.h), dispatched
 * on the image's structure to the B+ tree (cpu_btree.c) or the vEB tree
 * (cpu_veb.c), and the selection: the query here, the hit mask and SPACE
 * compaction in cpu_space.c; the twin of cuda/gpu_engine.cu.  Insertion
 * (gi_cpu_insert) is the B+ tree's alone and lives in cpu_insert.c.
 * No PostgreSQL headers here.
 */
#include "cpu_engine.h"

#include <stdlib.h>

/* Build an image of the requested structure (engine_impl.h). */
GiStatus
gi_cpu_build(const GiBuildParams *params, const int64_t *keys,
			 const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	*out = NULL;
	switch (params->structure)
	{
		case GI_STRUCT_BTREE:
			return gi_cpu_btree_build(params, keys, payloads, n, out, err);
		case GI_STRUCT_VEB:
			return gi_cpu_veb_build(params, keys, payloads, n, out, err);
	}
	return gi_set_error(err, GI_ERR_INVALID, "unknown structure %d",
						(int) params->structure);
}

/* Free an image of either structure (engine_impl.h). */
void
gi_cpu_free(GiImage *image)
{
	if (image == NULL)
		return;
	if (image->structure == GI_STRUCT_VEB)
		gi_cpu_veb_free(image);
	else
		gi_cpu_btree_free(image);
}

/* Answer a batch on an image of either structure (engine_impl.h). */
GiStatus
gi_cpu_query(GiImage *image, GiOp op, const int64_t *probes,
			 const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			 uint64_t *last, GiError *err)
{
	if (image->structure == GI_STRUCT_VEB)
		return gi_cpu_veb_query(image, op, probes, probes_hi, nprobes, first,
								last, err);
	return gi_cpu_btree_query(image, op, probes, probes_hi, nprobes, first,
							  last, err);
}

/* Describe an image of either structure (engine_impl.h). */
void
gi_cpu_info(const GiImage *image, GiImageInfo *info)
{
	if (image->structure == GI_STRUCT_VEB)
		gi_cpu_veb_info(image, info);
	else
		gi_cpu_btree_info(image, info);
}

/*
 * Select the payloads of every entry the batch hits (engine_impl.h): the
 * structure answers the ranges, cpu_space.c turns them into the payloads.
 */
GiStatus
gi_cpu_select(GiImage *image, GiOp op, const int64_t *probes,
			  const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
			  uint64_t **out, size_t *nout, GiError *err)
{
	double		t0 = gi_now_ms();
	size_t		n = image->n;
	uint64_t   *first = NULL,
			   *last = NULL;
	GiStatus	st;
	double		t_search,
				t_compact = 0;

	if (image->payloads == NULL && n > 0)
		return gi_set_error(err, GI_ERR_INVALID, "image was built without payloads");
	/* After batch insertions the rank-ordered copy is rebuilt once here. */
	st = gi_cpu_btree_refresh_payloads(image, err);
	if (st != GI_OK)
		return st;
	first = gi_malloc_big((nprobes ? nprobes : 1) * sizeof(uint64_t));
	last = gi_malloc_big((nprobes ? nprobes : 1) * sizeof(uint64_t));
	if (first == NULL || last == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory selecting from %zu entries", n);
		goto done;
	}
	if (nprobes > 0)
	{
		st = gi_cpu_query(image, op, probes, probes_hi, nprobes, first, last, err);
		if (st != GI_OK)
			goto done;
	}
	t_search = gi_now_ms() - t0;
	st = gi_cpu_select_hits(first, last, nprobes, image->payloads, n, order, out, nout,
							&t_compact, err);
	if (st != GI_OK)
		goto done;
	{
		GiTimings	timings = {0};

		timings.search_ms = t_search;
		timings.build_ms = t_compact;
		timings.total_ms = gi_now_ms() - t0;
		gi_timings_store(&image->last_query, &timings);
	}

done:
	free(first);
	free(last);
	return st;
}
