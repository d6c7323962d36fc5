/*
 * hostsearch.c - small batches answered from the backend's host copy of
 * the sorted entries, without the engine.
 *
 * A GPU image answers a batch in one device call whose fixed cost (launch,
 * two copies, synchronisation: tens of microseconds) a binary search over
 * the host arrays repays only past a few hundred probes.  Below
 * gpuidx.gpu_min_batch probes (an index rescan, k = $1, a nested loop's
 * inner side) gpuidx_query_image answers here, with the engine contract's
 * semantics (engine/engine.h), so callers cannot tell the difference.
 */
#include "gpuidx.h"

#include "miscadmin.h"

/* First position whose key is >= key (n if none). */
int64
gpuidx_lower_bound(const GpuidxImageData *img, int64 key)
{
	int64		lo = 0,
				hi = img->n;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (gpuidx_key_at(img, mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First position whose key is > key (n if none). */
int64
gpuidx_upper_bound(const GpuidxImageData *img, int64 key)
{
	int64		lo = 0,
				hi = img->n;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (gpuidx_key_at(img, mid) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Answer one probe as the engine would: the half-open range of positions
 * for op (engine.h); empty ranges are first == last.
 */
static void
host_answer(const GpuidxImageData *img, GiOp op, int64 p, int64 p_hi,
			uint64 *first, uint64 *last)
{
	int64		a = 0,
				b = 0;

	switch (op)
	{
		case GI_OP_POINT:
			a = gpuidx_lower_bound(img, p);
			b = a < img->n && gpuidx_key_at(img, a) == p ? gpuidx_upper_bound(img, p) : a;
			break;
		case GI_OP_PRED:
			b = gpuidx_upper_bound(img, p);
			a = b > 0 ? gpuidx_lower_bound(img, gpuidx_key_at(img, b - 1)) : b;
			break;
		case GI_OP_SUCC:
			a = gpuidx_lower_bound(img, p);
			b = a < img->n ? gpuidx_upper_bound(img, gpuidx_key_at(img, a)) : a;
			break;
		case GI_OP_RANGE:
			if (p <= p_hi)
			{
				a = gpuidx_lower_bound(img, p);
				b = Max(a, gpuidx_upper_bound(img, p_hi));
			}
			break;
	}
	*first = (uint64) a;
	*last = (uint64) b;
}

/*
 * Answer a batch from the host arrays (probes_hi only for GI_OP_RANGE).
 * Checks for interrupts every 4096 probes: a caller may pass many.
 */
void
gpuidx_host_query(const GpuidxImageData *img, GiOp op, const int64 *probes,
				  const int64 *probes_hi, int64 nprobes, uint64 *first,
				  uint64 *last)
{
	int64		i;

	for (i = 0; i < nprobes; i++)
	{
		if ((i & 4095) == 4095)
			CHECK_FOR_INTERRUPTS();
		host_answer(img, op, probes[i], probes_hi ? probes_hi[i] : 0,
					&first[i], &last[i]);
	}
}

/*
 * Should a batch of nprobes on img be answered on the host?  Only GPU
 * images: the CPU engine's search already runs in this process and beats a
 * binary search (its tree levels are cache-resident).
 */
bool
gpuidx_answer_on_host(const GpuidxImageData *img, int64 nprobes)
{
	return nprobes < (img->engine == GI_ENGINE_GPU ? gpuidx_gpu_min_batch : 8);
}

/*
 * What EXPLAIN ANALYZE says answered a node's batches: the engine's name,
 * "host" when every batch was small enough for the host, or both.
 */
const char *
gpuidx_engine_label(GiEngineKind engine, int64 engine_calls, int64 host_calls)
{
	if (host_calls == 0 || engine == GI_ENGINE_CPU)
		return gi_engine_name(engine);
	if (engine_calls == 0)
		return "host";
	return engine == GI_ENGINE_GPU ? "gpu and host" : "cpu and host";
}
