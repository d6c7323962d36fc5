/*
 * service_agg.c - GpuIndexAgg's adding up in the gpuidx service (service.h:
 * GPUIDX_REQ_OP_AGG).
 *
 * A backend whose shared image the service holds on the GPU sends a run's
 * position ranges, the visibility map copy it took after pinning the image
 * and the columns' totals through its transfer segment; the service adds
 * the ranges up with gi_image_aggregate on its engine image (the same call
 * a backend makes on its own GPU image) and writes back the totals, the
 * count and the fetch list (the TIDs of entries not on all-visible pages).
 * A fetch list longer than the room the backend left stays with the
 * service and is read back a part at a time (GPUIDX_REQ_OP_AGG_FETCH): the
 * room is sized for the common case (few fetches), not for the worst one
 * (every entry), which would make every backend's transfer segment as large
 * as its largest run.
 *
 * What runs here runs on the service's main thread or on a query thread
 * (service_pool.c): no PostgreSQL function is called, only the engine.
 * The main thread (service.c) checks the request's shape, builds the engine
 * image and puts the INCLUDE columns on the device before.
 */
#include "gpuidx.h"
#include "service.h"
#include "service_pool.h"

/*
 * Where the parts of an aggregation's transfer segment start (service.h,
 * GpuidxAggTransfer): the backend and the service both lay it out here.
 */
void
gpuidx_agg_layout(int64 nranges, int ncols, uint64 vm_blocks, bool vm_full,
				  int64 fetch_room, GpuidxAggLayout *layout)
{
	Size		off = MAXALIGN(sizeof(GpuidxAggTransfer));

	layout->first = off;
	off += MAXALIGN(sizeof(uint64) * nranges);
	layout->last = off;
	off += MAXALIGN(sizeof(uint64) * nranges);
	layout->cols = off;
	off += MAXALIGN(sizeof(GiAggColumn) * ncols);
	layout->vm = off;
	off += vm_full ? 0 : MAXALIGN((vm_blocks + 3) / 4);
	layout->fetch = off;
	off += sizeof(uint64) * fetch_room;
	layout->total = off;
}

/*
 * Is the aggregation request in buf (bytes long) well formed: its parts
 * inside the segment, its counts sane?  (The backend wrote it; the service
 * trusts nothing it would read past.)
 */
bool
service_agg_request_ok(const char *buf, Size bytes)
{
	const GpuidxAggTransfer *hdr = (const GpuidxAggTransfer *) buf;
	GpuidxAggLayout l;
	int			c;

	if (bytes < sizeof(GpuidxAggTransfer) || hdr->nranges < 0 ||
		hdr->nranges > ((int64) 1 << 32) || hdr->fetch_room < 0 ||
		hdr->fetch_room > ((int64) 1 << 32) || hdr->ncols < 0 ||
		hdr->ncols > 64 || hdr->vm_blocks > ((uint64) 1 << 32) ||
		hdr->ninclude < 0 || hdr->ninclude > GPUIDX_MAX_INCLUDE)
		return false;
	for (c = 0; c < hdr->ninclude; c++)
		if (hdr->value_offset[c] < 0 ||
			!(hdr->width[c] == 1 || hdr->width[c] == 2 ||
			  hdr->width[c] == 4 || hdr->width[c] == 8))
			return false;
	gpuidx_agg_layout(hdr->nranges, hdr->ncols, hdr->vm_blocks, hdr->vm_full,
					  hdr->fetch_room, &l);
	return l.total <= bytes;
}

/*
 * Add up the request in buf on image (host: the shared arrays, for a CPU
 * image): the totals in place, counted and nfetch into the header, the
 * fetch list into the room after it, or, when longer, into *kept (the
 * engine's allocation, released with gi_free; *nkept TIDs) for
 * GPUIDX_REQ_OP_AGG_FETCH.  On an error nothing is written.
 */
GiStatus
service_agg_run(GiImage *image, const GiAggEntries *host, char *buf,
				uint64_t **kept, int64 *nkept, GiError *err)
{
	GpuidxAggTransfer *hdr = (GpuidxAggTransfer *) buf;
	GpuidxAggLayout l;
	int64_t		counted = 0;
	uint64_t   *out = NULL;
	size_t		nout = 0;
	GiStatus	st;

	gpuidx_agg_layout(hdr->nranges, hdr->ncols, hdr->vm_blocks, hdr->vm_full,
					  hdr->fetch_room, &l);
	st = gi_image_aggregate(image, host,
							(const uint64_t *) (buf + l.first),
							(const uint64_t *) (buf + l.last),
							(size_t) hdr->nranges,
							hdr->vm_full ? NULL : (const uint8_t *) (buf + l.vm),
							hdr->vm_blocks, hdr->vm_full,
							(GiAggColumn *) (buf + l.cols), hdr->ncols,
							&counted, &out, &nout, err);
	if (st != GI_OK)
		return st;
	hdr->counted = counted;
	hdr->nfetch = (int64) nout;
	if ((int64) nout <= hdr->fetch_room)
	{
		memcpy(buf + l.fetch, out, sizeof(uint64) * nout);
		gi_free(out);
	}
	else
	{
		*kept = out;
		*nkept = (int64) nout;
	}
	return GI_OK;
}

/*
 * Answer a GPUIDX_REQ_OP_AGG_FETCH request in buf (bytes long): the next
 * TIDs of the kept list (*next of nkept read so far) after the header, as
 * many as asked and left; the list is freed once read to its end.  False
 * when there is no list or the request does not fit its segment.
 */
bool
service_agg_fetch(char *buf, Size bytes, uint64_t **kept, int64 nkept, int64 *next)
{
	GpuidxAggFetchTransfer *hdr = (GpuidxAggFetchTransfer *) buf;
	Size		off = MAXALIGN(sizeof(GpuidxAggFetchTransfer));
	int64		n;

	if (*kept == NULL || bytes < off || hdr->count < 0 ||
		(Size) hdr->count > (bytes - off) / sizeof(uint64))
		return false;
	n = Min(hdr->count, nkept - *next);
	memcpy(buf + off, *kept + *next, sizeof(uint64) * n);
	*next += n;
	hdr->count = n;
	if (*next >= nkept)
	{
		gi_free(*kept);
		*kept = NULL;
	}
	return true;
}
