/*
 * cpu_sort.c - host sort of (int64 key, uint64 payload) pairs.
 *
 * LSD radix sort on 8-bit digits: measured 1.6x faster here than 11-bit
 * ones (256 write streams per pass stay within what the caches combine;
 * 2048 do not).  Keys are first rebased to key - min (in unsigned
 * arithmetic), which keeps their order, turns signed keys into unsigned ones, and lets every digit above the span max - min be skipped: a
 * batch of probes that all fit in 32 bits sorts in 4 passes, not 8.  Digits
 * whose histogram puts every element in one bucket are skipped as well.  The
 * key passes are stable, so payloads that arrive ascending within equal keys
 * (row order, probe indexes) stay that way; a final pass sorts the payloads
 * of any run of equal keys that is not already in order.
 *
 * No PostgreSQL headers here.
 */
#include "cpu_engine.h"

#include <stdlib.h>
#include <string.h>

/* Top bits of a probe block's span that gi_cpu_sort_probe_block sorts on. */
#ifndef SORT_BITS
#define SORT_BITS			16
#endif

#define RADIX_BITS		8
#define RADIX_BUCKETS	(1 << RADIX_BITS)
#define RADIX_MASK		(RADIX_BUCKETS - 1)
#define RADIX_DIGITS	8		/* 64 / 8 */
#define SMALL_SORT		48		/* insertion sort below this */

/* Insertion sort of rebased keys (and payloads) for tiny inputs. */
static void
insertion_sort_u64(uint64_t *keys, uint64_t *payloads, size_t n)
{
	size_t		i;

	for (i = 1; i < n; i++)
	{
		uint64_t	k = keys[i];
		uint64_t	v = payloads ? payloads[i] : 0;
		size_t		j = i;

		while (j > 0 && keys[j - 1] > k)
		{
			keys[j] = keys[j - 1];
			if (payloads)
				payloads[j] = payloads[j - 1];
			j--;
		}
		keys[j] = k;
		if (payloads)
			payloads[j] = v;
	}
}

/*
 * Stable LSD radix sort of unsigned keys (payloads carried, may be NULL).
 * src/src_v are read only on the first pass; the sorted result lands in
 * out/out_v, using tmp/tmp_v as the other buffer.  src may equal out.
 * hist must hold RADIX_DIGITS * RADIX_BUCKETS counters.
 */
static void
radix_sort_u64(const uint64_t *src, const uint64_t *src_v, size_t n,
			   uint64_t *out, uint64_t *out_v, uint64_t *tmp, uint64_t *tmp_v,
			   size_t *hist)
{
	uint64_t	span = 0;
	int			digits;
	int			pass_digit[RADIX_DIGITS];
	int			npasses = 0;
	int			d;
	size_t		i;
	const uint64_t *cur;
	const uint64_t *cur_v;
	uint64_t   *dst;
	uint64_t   *dst_v;

	for (i = 0; i < n; i++)
		span |= src[i];
	digits = 0;
	while (digits < RADIX_DIGITS && (span >> (digits * RADIX_BITS)) != 0)
		digits++;

	/* One read pass fills the histograms of every digit that matters. */
	memset(hist, 0, sizeof(size_t) * RADIX_DIGITS * RADIX_BUCKETS);
	for (i = 0; i < n; i++)
	{
		uint64_t	k = src[i];

		for (d = 0; d < digits; d++)
			hist[d * RADIX_BUCKETS + ((k >> (d * RADIX_BITS)) & RADIX_MASK)]++;
	}
	for (d = 0; d < digits; d++)
	{
		size_t	   *h = hist + d * RADIX_BUCKETS;
		size_t		sum = 0;
		int			b;
		bool		trivial = false;

		for (b = 0; b < RADIX_BUCKETS; b++)
		{
			size_t		c = h[b];

			if (c == n)
				trivial = true;
			h[b] = sum;
			sum += c;
		}
		if (!trivial)
			pass_digit[npasses++] = d;
	}

	/*
	 * Ping-pong so that the last pass writes into out.  The first pass must
	 * not write where it reads, so when src is out and the parity would put
	 * it there, start in tmp and copy back at the end.
	 */
	cur = src;
	cur_v = src_v;
	dst = (npasses % 2 == 1) ? out : tmp;
	dst_v = (npasses % 2 == 1) ? out_v : tmp_v;
	if (src == out && dst == out)
	{
		dst = tmp;
		dst_v = tmp_v;
	}
	for (d = 0; d < npasses; d++)
	{
		int			shift = pass_digit[d] * RADIX_BITS;
		size_t	   *h = hist + pass_digit[d] * RADIX_BUCKETS;

		if (cur_v)
		{
			for (i = 0; i < n; i++)
			{
				uint64_t	k = cur[i];
				size_t		at = h[(k >> shift) & RADIX_MASK]++;

				dst[at] = k;
				dst_v[at] = cur_v[i];
			}
		}
		else
		{
			for (i = 0; i < n; i++)
			{
				uint64_t	k = cur[i];

				dst[h[(k >> shift) & RADIX_MASK]++] = k;
			}
		}
		cur = dst;
		cur_v = dst_v;
		dst = (dst == out) ? tmp : out;
		dst_v = (dst == out) ? out_v : tmp_v;
	}
	if (cur != out)
	{
		memmove(out, cur, n * sizeof(uint64_t));
		if (cur_v)
			memmove(out_v, cur_v, n * sizeof(uint64_t));
	}
}

/* Sort the payloads of every run of equal keys that is out of order. */
static void
sort_payload_runs(const int64_t *keys, uint64_t *payloads, size_t n,
				  uint64_t *tmp, size_t *hist)
{
	size_t		start = 0;

	while (start < n)
	{
		size_t		end = start + 1;
		bool		ordered = true;

		while (end < n && keys[end] == keys[start])
		{
			if (payloads[end] < payloads[end - 1])
				ordered = false;
			end++;
		}
		if (!ordered)
		{
			size_t		len = end - start;

			if (len < SMALL_SORT)
				insertion_sort_u64(payloads + start, NULL, len);
			else
				radix_sort_u64(payloads + start, NULL, len, payloads + start,
							   NULL, tmp, NULL, hist);
		}
		start = end;
	}
}

/* Sort (key, payload) pairs by (key, payload); payloads may be NULL. */
GiStatus
gi_host_sort_pairs(const int64_t *keys, const uint64_t *payloads, size_t n,
				   int64_t *keys_out, uint64_t *payloads_out, GiError *err)
{
	int64_t		min_key;
	size_t		i;
	uint64_t   *ukeys = (uint64_t *) keys_out;
	uint64_t   *tmp = NULL;
	uint64_t   *tmp_v = NULL;
	size_t	   *hist = NULL;
	bool		sorted = true;

	if (n == 0)
		return GI_OK;
	if (keys == NULL || keys_out == NULL || (payloads != NULL && payloads_out == NULL))
		return gi_set_error(err, GI_ERR_INVALID, "missing sort arrays");
	if (payloads == NULL)
		payloads_out = NULL;

	/* Rebase to key - min, checking on the way whether it is sorted already. */
	min_key = keys[0];
	for (i = 1; i < n; i++)
	{
		if (keys[i] < min_key)
			min_key = keys[i];
		if (keys[i] < keys[i - 1] ||
			(payloads && keys[i] == keys[i - 1] && payloads[i] < payloads[i - 1]))
			sorted = false;
	}
	if (sorted)
	{
		if (keys_out != keys)
			memmove(keys_out, keys, n * sizeof(int64_t));
		if (payloads && payloads_out != payloads)
			memmove(payloads_out, payloads, n * sizeof(uint64_t));
		return GI_OK;
	}
	for (i = 0; i < n; i++)
		ukeys[i] = (uint64_t) keys[i] - (uint64_t) min_key;
	if (payloads && payloads_out != payloads)
		memmove(payloads_out, payloads, n * sizeof(uint64_t));

	if (n < SMALL_SORT)
		insertion_sort_u64(ukeys, payloads_out, n);
	else
	{
		tmp = gi_malloc_big(n * sizeof(uint64_t));
		tmp_v = payloads ? gi_malloc_big(n * sizeof(uint64_t)) : NULL;
		hist = malloc(sizeof(size_t) * RADIX_DIGITS * RADIX_BUCKETS);
		if (tmp == NULL || (payloads && tmp_v == NULL) || hist == NULL)
		{
			free(tmp);
			free(tmp_v);
			free(hist);
			return gi_set_error(err, GI_ERR_HOST_OOM,
								"out of host memory sorting %zu pairs", n);
		}
		radix_sort_u64(ukeys, payloads_out, n, ukeys, payloads_out, tmp, tmp_v,
					   hist);
	}
	for (i = 0; i < n; i++)
		ukeys[i] += (uint64_t) min_key;
	if (payloads)
		sort_payload_runs(keys_out, payloads_out, n, tmp, hist);
	free(tmp);
	free(tmp_v);
	free(hist);
	return GI_OK;
}

/*
 * Order a block of probes for locality (Harmonia's partial sort): an LSD
 * radix sort of the rebased probes p - min on their top SORT_BITS bits only.
 * Probes that share those bits are close in value, so they fall into the
 * same or neighbouring leaves whatever their order among themselves; the
 * order only affects speed, never answers.  Returns the arrays holding the
 * result (keys/pos or tmp_keys/tmp_pos) through *out_keys and *out_pos.
 * Shared by the B+ tree and the vEB tree (cpu_engine.h).
 */
void
gi_cpu_sort_probe_block(const int64_t *probes, size_t count, uint64_t *keys,
						uint32_t *pos, uint64_t *tmp_keys, uint32_t *tmp_pos,
						int64_t *min_out, uint64_t **out_keys,
						uint32_t **out_pos)
{
	int64_t		min = probes[0];
	int64_t		max = probes[0];
	uint64_t	span;
	int			bits;
	int			shift;
	size_t		i;

	for (i = 1; i < count; i++)
	{
		if (probes[i] < min)
			min = probes[i];
		if (probes[i] > max)
			max = probes[i];
	}
	for (i = 0; i < count; i++)
	{
		keys[i] = (uint64_t) probes[i] - (uint64_t) min;
		pos[i] = (uint32_t) i;
	}
	span = (uint64_t) max - (uint64_t) min;
	bits = span ? 64 - __builtin_clzll(span) : 0;
	shift = bits > SORT_BITS ? bits - SORT_BITS : 0;
	for (; shift < bits; shift += 8)
	{
		size_t		offset[256];
		size_t		sum = 0;
		uint64_t   *swap_keys;
		uint32_t   *swap_pos;
		int			b;

		memset(offset, 0, sizeof(offset));
		for (i = 0; i < count; i++)
			offset[(keys[i] >> shift) & 255]++;
		for (b = 0; b < 256; b++)
		{
			size_t		c = offset[b];

			offset[b] = sum;
			sum += c;
		}
		for (i = 0; i < count; i++)
		{
			size_t		at = offset[(keys[i] >> shift) & 255]++;

			tmp_keys[at] = keys[i];
			tmp_pos[at] = pos[i];
		}
		swap_keys = keys, keys = tmp_keys, tmp_keys = swap_keys;
		swap_pos = pos, pos = tmp_pos, tmp_pos = swap_pos;
	}
	*min_out = min;
	*out_keys = keys;
	*out_pos = pos;
}
