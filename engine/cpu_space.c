/*
 * cpu_space.c - SPACE stream compaction and batch selection, CPU twin.
 *
 * The same phases as the GPU version (SPACE, Fett et al.: docs/design.md,
 * References): count the set bits of each chunk of the mask, prefix-sum the
 * counts into output offsets, then write out only the chunks that have a set
 * bit.  gi_cpu_select_hits builds the hit mask from a query batch's ranges
 * (gi_cpu_select in cpu_engine.c runs the query) and compacts the image's
 * payloads through it.
 */
#include "cpu_engine.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_CHUNK_BITS	1024

/* Value i of a 4- or 8-byte array, widened. */
static inline uint64_t
value_at(const void *values, int value_bytes, size_t i)
{
	return value_bytes == 8 ? ((const uint64_t *) values)[i] :
		(uint64_t) ((const uint32_t *) values)[i];
}

/* Store v as element j of a 4- or 8-byte output array. */
static inline void
store_at(void *out, int value_bytes, size_t j, uint64_t v)
{
	if (value_bytes == 8)
		((uint64_t *) out)[j] = v;
	else
		((uint32_t *) out)[j] = (uint32_t) v;
}

/* Stream compaction: values of the set bits of mask, in order. */
GiStatus
gi_cpu_compact(const uint64_t *mask, const void *values, int value_bytes,
			   size_t n, size_t chunk_bits, void *out, size_t *nout,
			   GiError *err)
{
	size_t		words = (n + 63) / 64;
	size_t		chunk_words;
	size_t		nchunks;
	size_t	   *offsets;
	size_t		c,
				total = 0;

	if (chunk_bits == 0)
		chunk_bits = DEFAULT_CHUNK_BITS;
	chunk_words = chunk_bits / 64;
	nchunks = (words + chunk_words - 1) / chunk_words;
	offsets = malloc((nchunks + 1) * sizeof(size_t));
	if (offsets == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for %zu chunk counts", nchunks);

	/* Phases 1 and 2: popcount per chunk, exclusive prefix sum. */
	for (c = 0; c < nchunks; c++)
	{
		size_t		w,
					end = (c + 1) * chunk_words < words ? (c + 1) * chunk_words : words;
		size_t		count = 0;

		for (w = c * chunk_words; w < end; w++)
		{
			uint64_t	bits = mask[w];

			if (w == words - 1 && (n & 63))
				bits &= (UINT64_C(1) << (n & 63)) - 1;
			count += (size_t) __builtin_popcountll(bits);
		}
		offsets[c] = total;
		total += count;
	}
	offsets[nchunks] = total;

	/* Phase 3: write out, skipping chunks with no set bit. */
	for (c = 0; c < nchunks; c++)
	{
		size_t		w,
					end,
					j = offsets[c];

		if (offsets[c + 1] == offsets[c])
			continue;
		end = (c + 1) * chunk_words < words ? (c + 1) * chunk_words : words;
		for (w = c * chunk_words; w < end; w++)
		{
			uint64_t	bits = mask[w];

			if (w == words - 1 && (n & 63))
				bits &= (UINT64_C(1) << (n & 63)) - 1;
			while (bits)
			{
				size_t		i = w * 64 + (size_t) __builtin_ctzll(bits);

				store_at(out, value_bytes, j++, value_at(values, value_bytes, i));
				bits &= bits - 1;
			}
		}
	}
	free(offsets);
	*nout = total;
	return GI_OK;
}

/* Set bits [from, to) of a mask. */
static void
set_bit_range(uint64_t *mask, uint64_t from, uint64_t to)
{
	uint64_t	w;

	if (from >= to)
		return;
	if (from / 64 == (to - 1) / 64)
	{
		uint64_t	len = to - from;
		uint64_t	bits = len == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << len) - 1);

		mask[from / 64] |= bits << (from & 63);
		return;
	}
	mask[from / 64] |= ~UINT64_C(0) << (from & 63);
	for (w = from / 64 + 1; w < (to - 1) / 64; w++)
		mask[w] = ~UINT64_C(0);
	if (to & 63)
		mask[(to - 1) / 64] |= (UINT64_C(1) << (to & 63)) - 1;
	else
		mask[(to - 1) / 64] = ~UINT64_C(0);
}

/* The payloads of every entry the ranges hit (cpu_engine.h). */
GiStatus
gi_cpu_select_hits(const uint64_t *first, const uint64_t *last, size_t nprobes,
				   const uint64_t *payloads, size_t n, GiSelectOrder order,
				   uint64_t **out, size_t *nout, double *compact_ms, GiError *err)
{
	double		t0 = gi_now_ms();
	uint64_t   *mask = NULL,
			   *result = NULL;
	size_t		i,
				count = 0;
	GiStatus	st;

	mask = calloc((n + 63) / 64 + 1, sizeof(uint64_t));
	if (mask == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory selecting from %zu entries", n);
		goto done;
	}
	for (i = 0; i < nprobes; i++)
		if (last[i] > first[i])
			set_bit_range(mask, first[i], last[i]);
	for (i = 0; i < (n + 63) / 64; i++)
		count += (size_t) __builtin_popcountll(mask[i]);
	result = malloc((count ? count : 1) * sizeof(uint64_t));
	if (result == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for %zu hits", count);
		goto done;
	}
	st = gi_cpu_compact(mask, payloads, 8, n, 0, result, &count, err);
	if (st != GI_OK)
		goto done;
	*compact_ms = gi_now_ms() - t0;

	if (order == GI_ORDER_PAYLOAD && count > 1)
	{
		/* Sort unsigned payloads through the signed sort: flip the top bit. */
		int64_t    *k = malloc(count * sizeof(int64_t));
		int64_t    *ks = malloc(count * sizeof(int64_t));

		if (k == NULL || ks == NULL)
		{
			free(k);
			free(ks);
			st = gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory sorting %zu hits", count);
			goto done;
		}
		for (i = 0; i < count; i++)
			k[i] = (int64_t) (result[i] ^ (UINT64_C(1) << 63));
		st = gi_host_sort_pairs(k, NULL, count, ks, NULL, err);
		for (i = 0; st == GI_OK && i < count; i++)
			result[i] = (uint64_t) ks[i] ^ (UINT64_C(1) << 63);
		free(k);
		free(ks);
		if (st != GI_OK)
			goto done;
	}
	*out = result;
	*nout = count;
	result = NULL;
	st = GI_OK;

done:
	free(mask);
	free(result);
	return st;
}
