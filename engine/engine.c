/*
 * engine.c - dispatch from the engine interface (engine.h) to the CPU or
 * GPU engine, after checking the arguments every engine needs.  The helpers
 * both engines share are in engine_util.c.  No PostgreSQL headers here.
 */
#include "engine_impl.h"

#include <stdlib.h>
#include <string.h>

/* Check the parameters every engine needs. */
static GiStatus
check_params(const GiBuildParams *params, GiError *err)
{
	if (params == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "no build parameters");
	if (params->key_bytes != 2 && params->key_bytes != 4 && params->key_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "key width %d is not 2, 4 or 8",
							params->key_bytes);
	if (params->structure != GI_STRUCT_BTREE && params->structure != GI_STRUCT_VEB)
		return gi_set_error(err, GI_ERR_INVALID, "unknown structure %d",
							(int) params->structure);
	if (params->engine != GI_ENGINE_CPU && params->engine != GI_ENGINE_GPU)
		return gi_set_error(err, GI_ERR_INVALID, "unknown engine %d",
							(int) params->engine);
	return GI_OK;
}

/* Clear err, check what every build needs and clear *out. */
static GiStatus
begin_build(const GiBuildParams *params, const int64_t *keys, size_t n,
			GiImage **out, GiError *err)
{
	GiStatus	st;

	gi_clear_error(err);
	if ((st = check_params(params, err)) != GI_OK)
		return st;
	if (out == NULL || (n > 0 && keys == NULL))
		return gi_set_error(err, GI_ERR_INVALID, "missing build arrays");
	*out = NULL;
	return GI_OK;
}

/* Keep a host copy of the payloads of a CPU image, for gi_image_select. */
static GiStatus
keep_cpu_payloads(GiImage *image, const uint64_t *payloads, size_t n,
				  GiError *err)
{
	image->payloads = NULL;
	image->device_payloads = NULL;
	image->device_columns = NULL;
	if (payloads == NULL)
		return GI_OK;
	image->payloads = malloc((n ? n : 1) * sizeof(uint64_t));
	if (image->payloads == NULL)
	{
		gi_cpu_free(image);
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory keeping %zu payloads", n);
	}
	memcpy(image->payloads, payloads, n * sizeof(uint64_t));
	return GI_OK;
}

/* Keep a device copy of the payloads of a GPU image, for gi_image_select. */
static GiStatus
keep_gpu_payloads(GiImage *image, const uint64_t *payloads, size_t n,
				  GiError *err)
{
	GiStatus	st;

	image->payloads = NULL;
	image->device_payloads = NULL;
	image->device_columns = NULL;
	if (payloads == NULL)
		return GI_OK;
	st = gi_gpu_attach_payloads(image, payloads, n, err);
	if (st != GI_OK)
		gi_gpu_free(image);
	return st;
}

/* Build an image from sorted entries on the requested engine. */
GiStatus
gi_image_build(const GiBuildParams *params, const int64_t *keys,
			   const uint64_t *payloads, size_t n, GiImage **out, GiError *err)
{
	GiStatus	st;

	if ((st = begin_build(params, keys, n, out, err)) != GI_OK)
		return st;
	if (params->engine == GI_ENGINE_GPU)
	{
		st = gi_gpu_build(params, keys, payloads, n, out, err);
		if (st == GI_OK)
			st = keep_gpu_payloads(*out, payloads, n, err);
		if (st != GI_OK)
			*out = NULL;
		return st;
	}
	st = gi_cpu_build(params, keys, payloads, n, out, err);
	if (st == GI_OK)
		st = keep_cpu_payloads(*out, payloads, n, err);
	if (st != GI_OK)
		*out = NULL;
	return st;
}

/* Sort the entries (on the engine's side) and build. */
GiStatus
gi_image_build_unsorted(const GiBuildParams *params, const int64_t *keys,
						const uint64_t *payloads, size_t n,
						int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
						GiImage **out, GiError *err)
{
	GiStatus	st;
	int64_t    *sk;
	uint64_t   *sp;
	double		t0;

	if ((st = begin_build(params, keys, n, out, err)) != GI_OK)
		return st;
	if (params->engine == GI_ENGINE_GPU)
		return gi_gpu_build_unsorted(params, keys, payloads, n,
									 sorted_keys_out, sorted_payloads_out,
									 out, err);

	t0 = gi_now_ms();
	sk = sorted_keys_out ? sorted_keys_out : malloc((n ? n : 1) * sizeof(int64_t));
	sp = sorted_payloads_out ? sorted_payloads_out :
		(payloads ? malloc((n ? n : 1) * sizeof(uint64_t)) : NULL);
	if (sk == NULL || (payloads && sp == NULL))
	{
		if (sk != sorted_keys_out)
			free(sk);
		if (sp != sorted_payloads_out)
			free(sp);
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory sorting %zu entries", n);
	}
	st = gi_host_sort_pairs(keys, payloads, n, sk, payloads ? sp : NULL, err);
	if (st == GI_OK)
	{
		double		sort_ms = gi_now_ms() - t0;

		st = gi_cpu_build(params, sk, payloads ? sp : NULL, n, out, err);
		if (st == GI_OK)
			st = keep_cpu_payloads(*out, payloads ? sp : NULL, n, err);
		if (st != GI_OK)
			*out = NULL;
		if (st == GI_OK)
		{
			(*out)->build.sort_ms = sort_ms;
			(*out)->build.total_ms += sort_ms;
		}
	}
	if (sk != sorted_keys_out)
		free(sk);
	if (sp != sorted_payloads_out)
		free(sp);
	return st;
}

/* Free an image on whichever engine holds it. */
void
gi_image_free(GiImage *image)
{
	if (image == NULL)
		return;
	if (image->engine == GI_ENGINE_GPU)
	{
		gi_gpu_detach_columns(image);
		gi_gpu_detach_payloads(image);
		gi_gpu_free(image);
	}
	else
	{
		free(image->payloads);
		gi_cpu_free(image);
	}
}

/* Insert a batch of entries into an image (CUBPT batch insertion). */
GiStatus
gi_image_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
				size_t n, GiError *err)
{
	gi_clear_error(err);
	if (image == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "no image");
	if (image->structure != GI_STRUCT_BTREE)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"batch insertion into a %s image is not supported; rebuild it",
							gi_structure_name(image->structure));
	if (n == 0)
		return GI_OK;
	if (keys == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "missing insertion keys");
	if ((payloads != NULL) != (image->payloads != NULL || image->device_payloads != NULL))
		return gi_set_error(err, GI_ERR_INVALID,
							"insertion payloads must be given exactly when the image keeps payloads");
	if (image->engine == GI_ENGINE_GPU)
	{
		/* the kept columns would miss the new entries: drop them */
		gi_gpu_detach_columns(image);
		return gi_gpu_insert(image, keys, payloads, n, err);
	}
	return gi_cpu_insert(image, keys, payloads, n, err);
}

/* Answer a query batch. */
GiStatus
gi_image_query(GiImage *image, GiOp op, const int64_t *probes,
			   const int64_t *probes_hi, size_t nprobes, uint64_t *first,
			   uint64_t *last, GiError *err)
{
	gi_clear_error(err);
	if (image == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "no image");
	if (op < GI_OP_POINT || op > GI_OP_RANGE)
		return gi_set_error(err, GI_ERR_INVALID, "unknown query op %d", (int) op);
	if ((op == GI_OP_RANGE) != (probes_hi != NULL))
		return gi_set_error(err, GI_ERR_INVALID, "upper bounds go with range queries only");
	if (nprobes == 0)
		return GI_OK;
	if (probes == NULL || first == NULL || last == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "missing query arrays");
	if (image->engine == GI_ENGINE_GPU)
		return gi_gpu_query(image, op, probes, probes_hi, nprobes, first, last, err);
	return gi_cpu_query(image, op, probes, probes_hi, nprobes, first, last, err);
}

/* Select the payloads of all entries a batch hits (mask + SPACE). */
GiStatus
gi_image_select(GiImage *image, GiOp op, const int64_t *probes,
				const int64_t *probes_hi, size_t nprobes, GiSelectOrder order,
				uint64_t **out, size_t *nout, GiError *err)
{
	gi_clear_error(err);
	if (image == NULL || out == NULL || nout == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "missing select arguments");
	*out = NULL;
	*nout = 0;
	if (op < GI_OP_POINT || op > GI_OP_RANGE)
		return gi_set_error(err, GI_ERR_INVALID, "unknown query op %d", (int) op);
	if ((op == GI_OP_RANGE) != (probes_hi != NULL))
		return gi_set_error(err, GI_ERR_INVALID, "upper bounds go with range queries only");
	if (order != GI_ORDER_KEY && order != GI_ORDER_PAYLOAD)
		return gi_set_error(err, GI_ERR_INVALID, "unknown select order %d", (int) order);
	if (nprobes > 0 && probes == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "missing probes");
	if (image->engine == GI_ENGINE_GPU)
		return gi_gpu_select(image, op, probes, probes_hi, nprobes, order, out, nout, err);
	return gi_cpu_select(image, op, probes, probes_hi, nprobes, order, out, nout, err);
}

/* Stream compaction on its own. */
GiStatus
gi_compact(GiEngineKind engine, const uint64_t *mask, const void *values,
		   int value_bytes, size_t n, size_t chunk_bits, void *out,
		   size_t *nout, GiError *err)
{
	gi_clear_error(err);
	if (nout == NULL || (n > 0 && (mask == NULL || values == NULL || out == NULL)))
		return gi_set_error(err, GI_ERR_INVALID, "missing compaction arrays");
	if (value_bytes != 4 && value_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "value width %d is not 4 or 8", value_bytes);
	if (chunk_bits != 0 && (chunk_bits < 512 || chunk_bits > 4096 ||
							(chunk_bits & (chunk_bits - 1)) != 0))
		return gi_set_error(err, GI_ERR_INVALID,
							"chunk size %zu is not a power of two in 512..4096", chunk_bits);
	if (engine == GI_ENGINE_GPU)
		return gi_gpu_compact(mask, values, value_bytes, n, chunk_bits, out, nout, err);
	return gi_cpu_compact(mask, values, value_bytes, n, chunk_bits, out, nout, err);
}

/* Keep INCLUDE columns with an image for device aggregation. */
GiStatus
gi_image_attach_columns(GiImage *image, const GiIncludeColumns *cols, GiError *err)
{
	int			c;

	gi_clear_error(err);
	if (image == NULL || cols == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "missing column arguments");
	if (cols->ncols < 0 || cols->ncols > 16)
		return gi_set_error(err, GI_ERR_INVALID, "at most 16 included columns");
	for (c = 0; c < cols->ncols; c++)
	{
		int			w = cols->width[c];

		if (w != 1 && w != 2 && w != 4 && w != 8)
			return gi_set_error(err, GI_ERR_INVALID, "column width %d is not 1, 2, 4 or 8", w);
		if (image->n > 0 && cols->values[c] == NULL)
			return gi_set_error(err, GI_ERR_INVALID, "missing column values");
	}
	if (image->engine == GI_ENGINE_GPU)
		return gi_gpu_attach_columns(image, cols, err);
	return GI_OK;				/* the CPU twin reads the host rows */
}

/* Add up the entries of position ranges (GpuIndexAgg). */
GiStatus
gi_image_aggregate(GiImage *image, const GiAggEntries *host, const uint64_t *first,
				   const uint64_t *last, size_t nranges, const uint8_t *vm,
				   uint64_t vm_blocks, bool vm_full, GiAggColumn *cols, int ncols,
				   int64_t *counted, uint64_t **fetch, size_t *nfetch, GiError *err)
{
	size_t		i;

	gi_clear_error(err);
	if (fetch == NULL || nfetch == NULL || counted == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "missing aggregation arguments");
	*fetch = NULL;
	*nfetch = 0;
	if (image == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "no image");
	if (ncols < 0 || ncols > 16 || (ncols > 0 && cols == NULL))
		return gi_set_error(err, GI_ERR_INVALID, "at most 16 aggregated columns");
	if (nranges > 0 && (first == NULL || last == NULL))
		return gi_set_error(err, GI_ERR_INVALID, "missing aggregation ranges");
	if (vm == NULL && vm_blocks > 0 && !vm_full)
		return gi_set_error(err, GI_ERR_INVALID, "missing visibility map");
	for (i = 0; i < nranges; i++)
		if (first[i] > last[i] || last[i] > image->n)
			return gi_set_error(err, GI_ERR_INVALID,
								"range [%llu, %llu) is not within the image's %llu entries",
								(unsigned long long) first[i], (unsigned long long) last[i],
								(unsigned long long) image->n);
	if (image->engine == GI_ENGINE_GPU)
		return gi_gpu_aggregate(image, first, last, nranges, vm, vm_blocks, vm_full,
								cols, ncols, counted, fetch, nfetch, err);
	if (host == NULL || host->nbase + host->ndelta != image->n ||
		(host->ndelta > 0 && host->drank == NULL))
		return gi_set_error(err, GI_ERR_INVALID,
							"the host arrays do not hold the image's entries");
	return gi_cpu_aggregate(host, first, last, nranges, vm, vm_blocks, vm_full, cols,
							ncols, counted, fetch, nfetch, err);
}

/* Release engine-allocated memory. */
void
gi_free(void *p)
{
	free(p);
}

/* Describe an image. */
void
gi_image_info(const GiImage *image, GiImageInfo *info)
{
	memset(info, 0, sizeof(*info));
	if (image == NULL)
		return;
	if (image->engine == GI_ENGINE_GPU)
		gi_gpu_info(image, info);
	else
		gi_cpu_info(image, info);
	/* The payload copies kept for gi_image_select. */
	if (image->payloads)
		info->host_bytes += image->n * sizeof(uint64_t);
	if (image->device_payloads)
		info->device_bytes += image->n * sizeof(uint64_t);
	/* The INCLUDE columns kept for gi_image_aggregate. */
	if (image->engine == GI_ENGINE_GPU)
	{
		gi_gpu_columns_info(image, &info->include_columns, &info->include_device_bytes);
		info->device_bytes += info->include_device_bytes;
	}
}

/* Is there a usable GPU (lazily initializes CUDA)? */
bool
gi_gpu_available(char *why, size_t whylen)
{
	return gi_gpu_probe(why, whylen);
}

/* Page-lock memory the caller reuses for GPU batches (engine.h). */
bool
gi_host_pin(void *p, size_t size)
{
	return p != NULL && size > 0 && gi_gpu_host_pin(p, size);
}

/* Undo gi_host_pin. */
void
gi_host_unpin(void *p)
{
	if (p != NULL)
		gi_gpu_host_unpin(p);
}

/* Sort (key, payload) pairs on the host. */
GiStatus
gi_sort_pairs(const int64_t *keys, const uint64_t *payloads, size_t n,
			  int64_t *keys_out, uint64_t *payloads_out, GiError *err)
{
	gi_clear_error(err);
	if (n > 0 && (keys == NULL || keys_out == NULL || (payloads && payloads_out == NULL)))
		return gi_set_error(err, GI_ERR_INVALID, "missing sort arrays");
	return gi_host_sort_pairs(keys, payloads, n, keys_out, payloads_out, err);
}
