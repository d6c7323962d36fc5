/*
 * gpu_space.cu - SPACE stream compaction on the GPU (Fett et al.:
 * docs/design.md, References), the twin of engine/cpu_space.c, and the
 * hit-mask half of gi_gpu_select.
 *
 * Phases:
 *  1. count_tile_bits: set bits per chunk (512..4096 bits), the mask read
 *     coalesced with several loads in flight per thread; optionally the first
 *     level of an own prefix sum (tile-local offsets, or 32-chunk sums).
 *  2. The prefix sum of the chunk counts: CUB's DeviceScan, an own two-phase
 *     scan (scan_tile_sums), or an own partial scan (sum_upper_levels builds
 *     a radix-32 up-sweep tree; the write-out walks it for its offset).
 *  3. Write-out: one warp per segment of max(chunk, 2048) bits, taken from the
 *     list of segments with a set bit that phase 1 appends to; chunks with no
 *     set bit are skipped without reading their mask words or values.  A
 *     warp reads its mask words warp-striding (a 64-bit word per lane), then
 *     either stages the set-bit indices in shared memory and gathers/stores a
 *     warp at a time (pass_staged, the paper's variant 8) or walks 32-element
 *     windows (pass_strided, variant 7); the hybrid write-out picks per pass
 *     by its density.
 *
 * gi_space_compact_async enqueues a plan without allocating (benchmarks);
 * gi_space_compact_device keeps the simple synchronous contract.
 */
#include "gpu_space.cuh"
#include "gpu_util.cuh"

#include <atomic>
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPACE_WARPS			8	/* warps per block */
#define SPACE_THREADS		(SPACE_WARPS * 32)
#define SPACE_TILE			SPACE_THREADS	/* chunks per count_tile_bits block */
#define SPACE_COUNT_UNROLL	4	/* mask loads in flight per counting thread */
#define SPACE_PASS_WORDS	32	/* mask words a warp reads per pass */
#define SPACE_PASS_BITS		(SPACE_PASS_WORDS * 64)
#define SPACE_GATHER		8	/* value loads in flight per lane */
#define SPACE_DENSE_PASS	(SPACE_PASS_BITS * 3 / 4)	/* hybrid: set bits of a
														 * pass walked strided */
#define SPACE_SCAN_THREADS	1024	/* the one block of the own scans */
#define SPACE_MAX_LEVELS	16
#define FULL_MASK			0xffffffffu

/* The engine's plan: bench/space picks it (bench/RESULTS.md). */
const GiSpacePlan gi_space_default_plan = {1024, GI_SPACE_SCAN_TWO_PHASE, GI_SPACE_WRITE_HYBRID};

#define SPACE_CK(call) \
	do { cudaError_t rc_ = (call); \
		 if (rc_ != cudaSuccess) { st = gi_gpu_fail(err, rc_, #call); goto done; } } while (0)

/* Levels 1.. of the partial scan's up-sweep tree (level 0 is the counts). */
typedef struct SpaceTree
{
	unsigned long long *level[SPACE_MAX_LEVELS];
	size_t		size[SPACE_MAX_LEVELS];
	int			nlevels;		/* including level 0; the top has one entry */
} SpaceTree;

/* Where a write-out warp finds the output offset of a chunk. */
typedef struct SpaceOffsets
{
	const unsigned long long *chunk_offs;	/* CUB: exclusive scan per chunk */
	const uint32_t *local;		/* two-phase: offset inside its tile */
	const unsigned long long *tile_offs;	/* two-phase: offset of the tile */
	SpaceTree	tree;			/* partial */
} SpaceOffsets;

/* What every write-out needs to know about the mask. */
typedef struct SpaceArgs
{
	const uint64_t *mask;
	size_t		words;			/* mask words: (n + 63) / 64 */
	size_t		n;
	int			chunk_words;	/* chunk_bits / 64 */
	int			seg_words;		/* mask words per warp segment */
	size_t		nsegs;
	size_t		nchunks;
	const uint32_t *counts;
	const uint32_t *live_segs;	/* segments with a set bit, any order */
	const uint32_t *nlive;
	unsigned long long *total;
} SpaceArgs;

/* Mask word w with the bits past n cleared. */
static __device__ __forceinline__ uint64_t
mask_word(const uint64_t *mask, size_t w, size_t words, size_t n)
{
	uint64_t	m = mask[w];

	if (w == words - 1 && (n & 63))
		m &= (1ULL << (n & 63)) - 1;
	return m;
}

/* Inclusive scan across the warp. */
template <typename V>
static __device__ __forceinline__ V
warp_inclusive_scan(V v, int lane)
{
#pragma unroll
	for (int d = 1; d < 32; d *= 2)
	{
		V			u = __shfl_up_sync(FULL_MASK, v, d);

		if (lane >= d)
			v += u;
	}
	return v;
}

/* Sum across the warp, 64-bit. */
static __device__ __forceinline__ unsigned long long
warp_sum64(unsigned long long v)
{
#pragma unroll
	for (int d = 16; d > 0; d /= 2)
		v += __shfl_xor_sync(FULL_MASK, v, d);
	return v;
}

/*
 * Phase 1: set bits of each chunk of one tile of SPACE_TILE chunks.  With
 * local/tile_sums: the tile-local exclusive offsets and the tile's sum
 * (two-phase scan).  With group_sums: sums of 32 consecutive chunks (level 1
 * of the partial scan's tree).
 */
__global__ void __launch_bounds__(SPACE_THREADS)
count_tile_bits(const uint64_t *__restrict__ mask, size_t words, size_t n,
				int chunk_words, size_t nchunks, uint32_t *__restrict__ counts,
				int seg_chunks, size_t nsegs, uint32_t *__restrict__ live_segs,
				uint32_t *__restrict__ nlive,
				uint32_t *__restrict__ local, uint32_t *__restrict__ tile_sums,
				unsigned long long *__restrict__ group_sums)
{
	__shared__ uint32_t s_count[SPACE_TILE];
	__shared__ uint32_t s_warp[SPACE_WARPS];
	size_t		tile = blockIdx.x;
	size_t		c0 = tile * SPACE_TILE;
	size_t		w_begin = c0 * (size_t) chunk_words;
	size_t		w_end = min(words, w_begin + (size_t) SPACE_TILE * chunk_words);
	int			group = chunk_words < 32 ? chunk_words : 32;
	int			lane = threadIdx.x & 31;
	int			warp = threadIdx.x >> 5;

	s_count[threadIdx.x] = 0;
	__syncthreads();
	for (size_t base = w_begin; base < w_end; base += SPACE_THREADS * SPACE_COUNT_UNROLL)
	{
		uint64_t	m[SPACE_COUNT_UNROLL];

#pragma unroll
		for (int k = 0; k < SPACE_COUNT_UNROLL; k++)
		{
			size_t		w = base + k * SPACE_THREADS + threadIdx.x;

			m[k] = w < w_end ? mask_word(mask, w, words, n) : 0;
		}
#pragma unroll
		for (int k = 0; k < SPACE_COUNT_UNROLL; k++)
		{
			size_t		w = base + k * SPACE_THREADS + threadIdx.x;
			uint32_t	bits = __popcll(m[k]);

			/* lanes of one group read words of one chunk */
			for (int d = group / 2; d > 0; d /= 2)
				bits += __shfl_xor_sync(FULL_MASK, bits, d);
			if ((lane & (group - 1)) == 0 && w < w_end && bits)
				atomicAdd(&s_count[(w - w_begin) / chunk_words], bits);
		}
	}
	__syncthreads();

	size_t		c = c0 + threadIdx.x;
	uint32_t	cnt = s_count[threadIdx.x];
	uint32_t	incl;

	if (c < nchunks)
		counts[c] = cnt;

	/* Append the tile's segments with a set bit to the write-out's list. */
	{
		size_t		seg = tile * (SPACE_TILE / seg_chunks) + threadIdx.x;
		bool		live = false;
		uint32_t	ballot;

		if (threadIdx.x < SPACE_TILE / seg_chunks && seg < nsegs)
			for (int i = 0; i < seg_chunks; i++)
				live |= s_count[threadIdx.x * seg_chunks + i] != 0;
		ballot = __ballot_sync(FULL_MASK, live);
		if (ballot)
		{
			uint32_t	at = 0;

			if (lane == 0)
				at = atomicAdd(nlive, (uint32_t) __popc(ballot));
			at = __shfl_sync(FULL_MASK, at, 0);
			if (live)
				live_segs[at + __popc(ballot & ((1u << lane) - 1))] = (uint32_t) seg;
		}
	}
	if (local == NULL && group_sums == NULL)
		return;
	incl = warp_inclusive_scan(cnt, lane);
	if (group_sums && lane == 31 && c0 + warp * 32 < nchunks)
		group_sums[(c0 + warp * 32) / 32] = incl;
	if (local)
	{
		uint32_t	before = 0;

		if (lane == 31)
			s_warp[warp] = incl;
		__syncthreads();
		for (int i = 0; i < warp; i++)
			before += s_warp[i];
		if (c < nchunks)
			local[c] = before + incl - cnt;
		if (threadIdx.x == SPACE_THREADS - 1)
			tile_sums[tile] = before + incl;
	}
}

/* Two-phase scan, second phase: one block scans the tile sums; *total. */
__global__ void __launch_bounds__(SPACE_SCAN_THREADS)
scan_tile_sums(const uint32_t *tile_sums, size_t ntiles,
			   unsigned long long *tile_offs, unsigned long long *total)
{
	__shared__ unsigned long long s_warp[SPACE_SCAN_THREADS / 32];
	__shared__ unsigned long long s_carry;
	int			lane = threadIdx.x & 31;
	int			warp = threadIdx.x >> 5;

	if (threadIdx.x == 0)
		s_carry = 0;
	__syncthreads();
	for (size_t b = 0; b < ntiles; b += SPACE_SCAN_THREADS)
	{
		size_t		i = b + threadIdx.x;
		unsigned long long v = i < ntiles ? tile_sums[i] : 0;
		unsigned long long incl = warp_inclusive_scan(v, lane);
		unsigned long long before;

		if (lane == 31)
			s_warp[warp] = incl;
		__syncthreads();
		if (warp == 0)
			s_warp[lane] = warp_inclusive_scan(s_warp[lane], lane);
		__syncthreads();
		before = s_carry + (warp ? s_warp[warp - 1] : 0);
		if (i < ntiles)
			tile_offs[i] = before + incl - v;
		__syncthreads();
		if (threadIdx.x == SPACE_SCAN_THREADS - 1)
			s_carry = before + incl;
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*total = s_carry;
}

/* Partial scan: the rest of the radix-32 up-sweep, by one block; *total. */
__global__ void __launch_bounds__(SPACE_SCAN_THREADS)
sum_upper_levels(SpaceTree tree, unsigned long long *total)
{
	int			lane = threadIdx.x & 31;
	int			warp = threadIdx.x >> 5;

	for (int k = 1; k + 1 < tree.nlevels; k++)
	{
		for (size_t i = warp; i < tree.size[k + 1]; i += SPACE_SCAN_THREADS / 32)
		{
			size_t		j = i * 32 + lane;
			unsigned long long v = j < tree.size[k] ? tree.level[k][j] : 0;

			v = warp_sum64(v);
			if (lane == 0)
				tree.level[k + 1][i] = v;
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*total = tree.level[tree.nlevels - 1][0];
}

/* Partial scan's down-sweep on the fly: exclusive offset of chunk c. */
static __device__ __forceinline__ unsigned long long
tree_prefix(const uint32_t *counts, const SpaceTree &tree, size_t c, int lane)
{
	size_t		g = c & ~(size_t) 31;
	int			r = (int) (c & 31);
	unsigned long long sum = __reduce_add_sync(FULL_MASK, lane < r ? counts[g + lane] : 0u);
	size_t		idx = c >> 5;

	for (int k = 1; k < tree.nlevels && idx; k++)
	{
		g = idx & ~(size_t) 31;
		r = (int) (idx & 31);
		sum += warp_sum64(lane < r ? tree.level[k][g + lane] : 0ULL);
		idx >>= 5;
	}
	return sum;
}

/* Output offset of chunk c under scan SCAN (warp-uniform call). */
template <int SCAN>
static __device__ __forceinline__ unsigned long long
chunk_offset(const SpaceOffsets &o, const uint32_t *counts, size_t c, int lane)
{
	if (SCAN == GI_SPACE_SCAN_CUB)
		return o.chunk_offs[c];
	if (SCAN == GI_SPACE_SCAN_TWO_PHASE)
		return o.tile_offs[c / SPACE_TILE] + o.local[c];
	return tree_prefix(counts, o.tree, c, lane);
}

/* The CUB scan leaves no total: block 0 writes it from the last chunk. */
template <int SCAN>
static __device__ __forceinline__ void
write_total(const SpaceArgs &a, const SpaceOffsets &o)
{
	if (SCAN == GI_SPACE_SCAN_CUB && blockIdx.x == 0 && threadIdx.x == 0)
		*a.total = o.chunk_offs[a.nchunks - 1] + a.counts[a.nchunks - 1];
}

/*
 * Variant 8 for one pass: stage the set-bit indices of the warp's mask words
 * in shared memory (lane order = output order), then gather and store them
 * SPACE_GATHER per lane at a time, so loads and stores go a warp wide.
 */
template <typename T>
static __device__ __forceinline__ void
pass_staged(uint64_t m, uint32_t pos, uint32_t total, int lane, uint16_t *buf,
			const T *__restrict__ src, T *__restrict__ dst)
{
	uint32_t	bit0 = lane * 64;

	while (m)
	{
		buf[pos++] = (uint16_t) (bit0 + __ffsll((long long) m) - 1);
		m &= m - 1;
	}
	__syncwarp();
	for (uint32_t j = lane; j < total; j += 32 * SPACE_GATHER)
	{
		T			v[SPACE_GATHER];

#pragma unroll
		for (int k = 0; k < SPACE_GATHER; k++)
			if (j + 32 * k < total)
				v[k] = src[buf[j + 32 * k]];
#pragma unroll
		for (int k = 0; k < SPACE_GATHER; k++)
			if (j + 32 * k < total)
				dst[j + 32 * k] = v[k];
	}
	__syncwarp();
}

/*
 * Variant 7 for one pass: walk the 32 mask words as 32-element windows; lane
 * i copies element i of a window when its bit is set, ranked by a popcount.
 */
template <typename T>
static __device__ __forceinline__ void
pass_strided(uint64_t m, uint32_t pos, int lane, const T *__restrict__ src,
			 T *__restrict__ dst)
{
	uint32_t	below = (1u << lane) - 1;

	for (int k = 0; k < SPACE_PASS_WORDS; k++)
	{
		uint64_t	mk = __shfl_sync(FULL_MASK, m, k);
		uint32_t	at = __shfl_sync(FULL_MASK, pos, k);
		uint32_t	lo = (uint32_t) mk,
					hi = (uint32_t) (mk >> 32);

		if (mk == 0)
			continue;
		if ((lo >> lane) & 1)
			dst[at + __popc(lo & below)] = src[k * 64 + lane];
		at += __popc(lo);
		if ((hi >> lane) & 1)
			dst[at + __popc(hi & below)] = src[k * 64 + 32 + lane];
	}
}

/*
 * Phase 3: each warp takes segments from the live list; per pass of 32 mask
 * words (a word per lane, words of empty chunks not read) it ranks the set
 * bits with a warp scan, then writes them out staged (variant 8), strided
 * (variant 7), or, for WRITE hybrid, strided when the pass is dense (where
 * staging's per-lane runs of indices collide in shared-memory banks) and
 * staged otherwise.
 */
template <typename T, int SCAN, int WRITE>
__global__ void __launch_bounds__(SPACE_THREADS)
write_chunk_values(SpaceArgs a, SpaceOffsets o, const T *__restrict__ values,
				   T *__restrict__ out)
{
	__shared__ uint16_t stage[WRITE == GI_SPACE_WRITE_STRIDED ? 1 : SPACE_WARPS][SPACE_PASS_BITS];
	int			lane = threadIdx.x & 31;
	int			warp = threadIdx.x >> 5;
	uint16_t   *buf = stage[WRITE == GI_SPACE_WRITE_STRIDED ? 0 : warp];
	size_t		nwarps = (size_t) gridDim.x * SPACE_WARPS;
	uint32_t	nlive = *a.nlive;

	write_total<SCAN>(a, o);
	for (size_t i = (size_t) blockIdx.x * SPACE_WARPS + warp; i < nlive; i += nwarps)
	{
		size_t		w0 = (size_t) a.live_segs[i] * a.seg_words;
		bool		have_base = false;
		unsigned long long base = 0;

		for (int p = 0; p < a.seg_words; p += SPACE_PASS_WORDS)
		{
			size_t		w = w0 + p + lane;
			bool		live = w < a.words && a.counts[w / a.chunk_words] != 0;

			if (__ballot_sync(FULL_MASK, live) == 0)
				continue;		/* chunk skipping: no mask, no values */
			if (!have_base)
			{
				base = chunk_offset<SCAN>(o, a.counts, w0 / a.chunk_words, lane);
				have_base = true;
			}

			uint64_t	m = live ? mask_word(a.mask, w, a.words, a.n) : 0;
			uint32_t	cnt = __popcll(m);
			uint32_t	incl = warp_inclusive_scan(cnt, lane);
			uint32_t	total = __shfl_sync(FULL_MASK, incl, 31);
			const T    *src = values + (w0 + p) * 64;
			T		   *dst = out + base;

			if (WRITE == GI_SPACE_WRITE_STRIDED ||
				(WRITE == GI_SPACE_WRITE_HYBRID && total >= SPACE_DENSE_PASS))
				pass_strided<T>(m, incl - cnt, lane, src, dst);
			else
				pass_staged<T>(m, incl - cnt, total, lane, buf, src, dst);
			base += total;
		}
	}
}

/*
 * Multiprocessors of the current device (cached per device, device and
 * count packed in one atomic word: threads selecting at once share it).
 */
static int
space_sm_count(void)
{
	static std::atomic<uint64_t> cached(0);	/* (device + 1) << 32 | count */
	uint64_t	c = cached.load(std::memory_order_relaxed);
	int			dev = 0;
	int			sms = 0;

	if (cudaGetDevice(&dev) != cudaSuccess)
		return 1;
	if (c >> 32 == (uint64_t) dev + 1)
		return (int) (uint32_t) c;
	if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
		sms < 1)
	{
		(void) cudaGetLastError();
		sms = 1;
	}
	cached.store(((uint64_t) dev + 1) << 32 | (uint32_t) sms, std::memory_order_relaxed);
	return sms;
}

/* Resident blocks per multiprocessor of kernel k (cached per kernel). */
template <typename K>
static int
space_blocks_per_sm(K kernel)
{
	static std::atomic<int> cached(0);	/* threads selecting at once share it */
	int			blocks = cached.load(std::memory_order_relaxed);

	if (blocks == 0)
	{
		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, SPACE_THREADS, 0) != cudaSuccess ||
			blocks < 1)
		{
			(void) cudaGetLastError();
			blocks = 1;
		}
		cached.store(blocks, std::memory_order_relaxed);
	}
	return blocks;
}

/* Launch a write-out: a persistent grid sized off the device. */
template <typename T, int SCAN, int WRITE>
static void
launch_write_as(const SpaceArgs &a, const SpaceOffsets &o, const void *values, void *out,
				cudaStream_t stream)
{
	size_t		want = (a.nsegs + SPACE_WARPS - 1) / SPACE_WARPS;
	size_t		grid = (size_t) space_sm_count() *
		space_blocks_per_sm(write_chunk_values<T, SCAN, WRITE>);

	grid = want < grid ? want : grid;
	write_chunk_values<T, SCAN, WRITE><<<(unsigned int) grid, SPACE_THREADS, 0, stream>>>(
		a, o, (const T *) values, (T *) out);
}

/* Launch the write-out a plan names. */
template <typename T, int SCAN>
static void
launch_write(GiSpaceWrite write, const SpaceArgs &a, const SpaceOffsets &o,
			 const void *values, void *out, cudaStream_t stream)
{
	if (write == GI_SPACE_WRITE_STRIDED)
		launch_write_as<T, SCAN, GI_SPACE_WRITE_STRIDED>(a, o, values, out, stream);
	else if (write == GI_SPACE_WRITE_STAGED)
		launch_write_as<T, SCAN, GI_SPACE_WRITE_STAGED>(a, o, values, out, stream);
	else
		launch_write_as<T, SCAN, GI_SPACE_WRITE_HYBRID>(a, o, values, out, stream);
}

/* Scratch layout of a plan for n bits (offsets in bytes, 256-aligned). */
typedef struct SpaceLayout
{
	size_t		chunk_bits;
	size_t		words;
	size_t		nchunks;
	size_t		ntiles;
	size_t		counts_at;
	size_t		nsegs;
	size_t		live_at;		/* segments to write out, and their number */
	size_t		nlive_at;
	size_t		offs_at;		/* CUB: chunk offsets */
	size_t		temp_at;		/* CUB: temporary storage */
	size_t		temp_bytes;
	size_t		local_at;		/* two-phase */
	size_t		tile_sums_at;
	size_t		tile_offs_at;
	size_t		level_at[SPACE_MAX_LEVELS];	/* partial: tree levels 1.. */
	size_t		level_size[SPACE_MAX_LEVELS];
	int			nlevels;
	size_t		bytes;
} SpaceLayout;

/* Mask words of a write-out warp's segment: a chunk, at least one pass. */
static size_t
space_seg_words(size_t chunk_bits)
{
	return chunk_bits / 64 > SPACE_PASS_WORDS ? chunk_bits / 64 : SPACE_PASS_WORDS;
}

/* Reserve bytes in a layout, 256-aligned; returns the offset. */
static size_t
space_reserve(SpaceLayout *l, size_t bytes)
{
	size_t		at = l->bytes;

	l->bytes += (bytes + 255) & ~(size_t) 255;
	return at;
}

/* Lay out the scratch of plan for n bits (n > 0). */
static GiStatus
space_layout(const GiSpacePlan *plan, size_t n, SpaceLayout *l, GiError *err)
{
	memset(l, 0, sizeof(*l));
	l->chunk_bits = plan->chunk_bits ? plan->chunk_bits : gi_space_default_plan.chunk_bits;
	if (l->chunk_bits < 512 || l->chunk_bits > 4096 || (l->chunk_bits & (l->chunk_bits - 1)))
		return gi_set_error(err, GI_ERR_INVALID, "chunk size %zu is not a power of two in 512..4096",
							l->chunk_bits);
	l->words = (n + 63) / 64;
	l->nchunks = (l->words + l->chunk_bits / 64 - 1) / (l->chunk_bits / 64);
	l->ntiles = (l->nchunks + SPACE_TILE - 1) / SPACE_TILE;
	if (l->nchunks > (size_t) INT32_MAX)
		return gi_set_error(err, GI_ERR_INVALID, "%zu bits are too many to compact in one call", n);
	l->counts_at = space_reserve(l, l->nchunks * sizeof(uint32_t));
	l->nsegs = (l->words + space_seg_words(l->chunk_bits) - 1) / space_seg_words(l->chunk_bits);
	l->live_at = space_reserve(l, l->nsegs * sizeof(uint32_t));
	l->nlive_at = space_reserve(l, sizeof(uint32_t));
	switch (plan->scan)
	{
		case GI_SPACE_SCAN_CUB:
			{
				cudaError_t rc;

				l->offs_at = space_reserve(l, l->nchunks * sizeof(unsigned long long));
				rc = cub::DeviceScan::ExclusiveScan(NULL, l->temp_bytes, (const uint32_t *) NULL,
													(unsigned long long *) NULL,
													::cuda::std::plus<>{}, 0ULL,
													(int) l->nchunks);
				if (rc != cudaSuccess)
					return gi_gpu_fail(err, rc, "cub::DeviceScan::ExclusiveScan (size)");
				l->temp_at = space_reserve(l, l->temp_bytes);
				break;
			}
		case GI_SPACE_SCAN_TWO_PHASE:
			l->local_at = space_reserve(l, l->nchunks * sizeof(uint32_t));
			l->tile_sums_at = space_reserve(l, l->ntiles * sizeof(uint32_t));
			l->tile_offs_at = space_reserve(l, l->ntiles * sizeof(unsigned long long));
			break;
		case GI_SPACE_SCAN_PARTIAL:
			{
				size_t		size = l->nchunks;

				l->nlevels = 1;
				do
				{
					size = (size + 31) / 32;
					if (l->nlevels >= SPACE_MAX_LEVELS)
						return gi_set_error(err, GI_ERR_INVALID, "scan tree too deep");
					l->level_size[l->nlevels] = size;
					l->level_at[l->nlevels] = space_reserve(l, size * sizeof(unsigned long long));
					l->nlevels++;
				} while (size > 1);
				break;
			}
		default:
			return gi_set_error(err, GI_ERR_INVALID, "unknown SPACE scan %d", (int) plan->scan);
	}
	if (plan->write != GI_SPACE_WRITE_STAGED && plan->write != GI_SPACE_WRITE_STRIDED &&
		plan->write != GI_SPACE_WRITE_HYBRID)
		return gi_set_error(err, GI_ERR_INVALID, "unknown SPACE write-out %d", (int) plan->write);
	return GI_OK;
}

/* Scratch bytes for a plan (space.cuh); 0 on a bad plan. */
size_t
gi_space_scratch_bytes(const GiSpacePlan *plan, size_t n)
{
	SpaceLayout l;

	if (n == 0)
		return 0;
	if (space_layout(plan ? plan : &gi_space_default_plan, n, &l, NULL) != GI_OK)
		return 0;
	return l.bytes;
}

/* Enqueue the phases of a plan (space.cuh). */
GiStatus
gi_space_compact_async(const GiSpacePlan *plan, const uint64_t *d_mask,
					   const void *d_values, int value_bytes, size_t n, void *d_out,
					   unsigned long long *d_nout, void *d_scratch, size_t scratch_bytes,
					   cudaStream_t stream, GiError *err)
{
	GiStatus	st = GI_OK;
	SpaceLayout l;
	SpaceArgs	a;
	SpaceOffsets o;
	char	   *s = (char *) d_scratch;
	uint32_t   *counts;

	if (plan == NULL)
		plan = &gi_space_default_plan;
	if (value_bytes != 4 && value_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "value width %d is not 4 or 8", value_bytes);
	if (n == 0)
	{
		SPACE_CK(cudaMemsetAsync(d_nout, 0, sizeof(*d_nout), stream));
		return GI_OK;
	}
	if ((st = space_layout(plan, n, &l, err)) != GI_OK)
		return st;
	if (scratch_bytes < l.bytes)
		return gi_set_error(err, GI_ERR_INVALID, "SPACE scratch of %zu bytes, %zu needed",
							scratch_bytes, l.bytes);
	counts = (uint32_t *) (s + l.counts_at);
	memset(&o, 0, sizeof(o));

	/* Phase 1, and the first level of the own scans. */
	SPACE_CK(cudaMemsetAsync(s + l.nlive_at, 0, sizeof(uint32_t), stream));
	count_tile_bits<<<(unsigned int) l.ntiles, SPACE_THREADS, 0, stream>>>(
		d_mask, l.words, n, (int) (l.chunk_bits / 64), l.nchunks, counts,
		(int) (space_seg_words(l.chunk_bits) / (l.chunk_bits / 64)),
		l.nsegs, (uint32_t *) (s + l.live_at), (uint32_t *) (s + l.nlive_at),
		plan->scan == GI_SPACE_SCAN_TWO_PHASE ? (uint32_t *) (s + l.local_at) : NULL,
		plan->scan == GI_SPACE_SCAN_TWO_PHASE ? (uint32_t *) (s + l.tile_sums_at) : NULL,
		plan->scan == GI_SPACE_SCAN_PARTIAL ? (unsigned long long *) (s + l.level_at[1]) : NULL);
	SPACE_CK(cudaGetLastError());

	/* Phase 2. */
	if (plan->scan == GI_SPACE_SCAN_CUB)
	{
		size_t		temp_bytes = l.temp_bytes;

		o.chunk_offs = (unsigned long long *) (s + l.offs_at);
		SPACE_CK(cub::DeviceScan::ExclusiveScan(s + l.temp_at, temp_bytes, counts,
												(unsigned long long *) o.chunk_offs,
												::cuda::std::plus<>{}, 0ULL,
												(int) l.nchunks, stream));
	}
	else if (plan->scan == GI_SPACE_SCAN_TWO_PHASE)
	{
		o.local = (const uint32_t *) (s + l.local_at);
		o.tile_offs = (unsigned long long *) (s + l.tile_offs_at);
		scan_tile_sums<<<1, SPACE_SCAN_THREADS, 0, stream>>>(
			(const uint32_t *) (s + l.tile_sums_at), l.ntiles,
			(unsigned long long *) o.tile_offs, d_nout);
		SPACE_CK(cudaGetLastError());
	}
	else
	{
		o.tree.nlevels = l.nlevels;
		for (int k = 1; k < l.nlevels; k++)
		{
			o.tree.level[k] = (unsigned long long *) (s + l.level_at[k]);
			o.tree.size[k] = l.level_size[k];
		}
		o.tree.size[0] = l.nchunks;
		sum_upper_levels<<<1, SPACE_SCAN_THREADS, 0, stream>>>(o.tree, d_nout);
		SPACE_CK(cudaGetLastError());
	}

	/* Phase 3. */
	a.mask = d_mask;
	a.words = l.words;
	a.n = n;
	a.chunk_words = (int) (l.chunk_bits / 64);
	a.seg_words = (int) space_seg_words(l.chunk_bits);
	a.nsegs = l.nsegs;
	a.live_segs = (const uint32_t *) (s + l.live_at);
	a.nlive = (const uint32_t *) (s + l.nlive_at);
	a.nchunks = l.nchunks;
	a.counts = counts;
	a.total = d_nout;
	if (value_bytes == 8)
	{
		if (plan->scan == GI_SPACE_SCAN_CUB)
			launch_write<uint64_t, GI_SPACE_SCAN_CUB>(plan->write, a, o, d_values, d_out, stream);
		else if (plan->scan == GI_SPACE_SCAN_TWO_PHASE)
			launch_write<uint64_t, GI_SPACE_SCAN_TWO_PHASE>(plan->write, a, o, d_values, d_out, stream);
		else
			launch_write<uint64_t, GI_SPACE_SCAN_PARTIAL>(plan->write, a, o, d_values, d_out, stream);
	}
	else
	{
		if (plan->scan == GI_SPACE_SCAN_CUB)
			launch_write<uint32_t, GI_SPACE_SCAN_CUB>(plan->write, a, o, d_values, d_out, stream);
		else if (plan->scan == GI_SPACE_SCAN_TWO_PHASE)
			launch_write<uint32_t, GI_SPACE_SCAN_TWO_PHASE>(plan->write, a, o, d_values, d_out, stream);
		else
			launch_write<uint32_t, GI_SPACE_SCAN_PARTIAL>(plan->write, a, o, d_values, d_out, stream);
	}
	SPACE_CK(cudaGetLastError());

done:
	return st;
}

/* Compaction under a plan: allocate scratch, enqueue, wait, read the count. */
static GiStatus
space_compact_device_plan(const GiSpacePlan *plan, const uint64_t *d_mask,
						  const void *d_values, int value_bytes, size_t n,
						  void *d_out, size_t *nout, cudaStream_t stream, GiError *err)
{
	GiStatus	st = GI_OK;
	size_t		bytes;
	char	   *d_scratch = NULL;
	unsigned long long count = 0;
	SpaceLayout l;

	*nout = 0;
	if (n == 0)
		return GI_OK;
	if ((st = space_layout(plan, n, &l, err)) != GI_OK)
		return st;
	bytes = l.bytes + 256;		/* the count goes last */
	SPACE_CK(cudaMalloc(&d_scratch, bytes));
	st = gi_space_compact_async(plan, d_mask, d_values, value_bytes, n, d_out,
								(unsigned long long *) (d_scratch + l.bytes),
								d_scratch, l.bytes, stream, err);
	if (st != GI_OK)
		goto done;
	SPACE_CK(cudaMemcpyAsync(&count, d_scratch + l.bytes, sizeof(count),
							 cudaMemcpyDeviceToHost, stream));
	SPACE_CK(cudaStreamSynchronize(stream));
	*nout = (size_t) count;

done:
	if (st != GI_OK && stream != NULL)
		cudaStreamSynchronize(stream);
	cudaFree(d_scratch);
	return st;
}

/* Compaction of device arrays with the default plan (space.cuh). */
GiStatus
gi_space_compact_device(const uint64_t *d_mask, const void *d_values, int value_bytes,
						size_t n, size_t chunk_bits, void *d_out, size_t *nout,
						cudaStream_t stream, GiError *err)
{
	GiSpacePlan plan = gi_space_default_plan;

	if (chunk_bits)
		plan.chunk_bits = chunk_bits;
	return space_compact_device_plan(&plan, d_mask, d_values, value_bytes, n, d_out,
									 nout, stream, err);
}

/* Plan name for tables: "staged/cub/1024". */
GI_EXPORT const char *
gi_space_plan_name(const GiSpacePlan *plan, char *buf, size_t len)
{
	static const char *const scans[] = {"cub", "twophase", "partial"};
	static const char *const writes[] = {"staged", "strided", "hybrid"};

	if (plan == NULL)
		plan = &gi_space_default_plan;
	snprintf(buf, len, "%s/%s/%zu",
			 (unsigned) plan->write < 3 ? writes[plan->write] : "?",
			 (unsigned) plan->scan < 3 ? scans[plan->scan] : "?",
			 plan->chunk_bits ? plan->chunk_bits : gi_space_default_plan.chunk_bits);
	return buf;
}

/* Compaction of host arrays through the device under a plan (space.cuh). */
GI_EXPORT GiStatus
gi_space_compact_plan_host(const GiSpacePlan *plan, const uint64_t *mask,
						   const void *values, int value_bytes, size_t n, void *out,
						   size_t *nout, GiError *err)
{
	GiStatus	st = GI_OK;
	size_t		words = (n + 63) / 64;
	uint64_t   *d_mask = NULL;
	void	   *d_values = NULL;
	void	   *d_out = NULL;

	*nout = 0;
	if (n == 0)
		return GI_OK;
	if (value_bytes != 4 && value_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "value width %d is not 4 or 8", value_bytes);
	SPACE_CK(cudaMalloc(&d_mask, words * sizeof(uint64_t)));
	SPACE_CK(cudaMalloc(&d_values, n * (size_t) value_bytes));
	SPACE_CK(cudaMalloc(&d_out, n * (size_t) value_bytes));
	SPACE_CK(cudaMemcpy(d_mask, mask, words * sizeof(uint64_t), cudaMemcpyHostToDevice));
	SPACE_CK(cudaMemcpy(d_values, values, n * (size_t) value_bytes, cudaMemcpyHostToDevice));
	st = space_compact_device_plan(plan ? plan : &gi_space_default_plan, d_mask, d_values,
								   value_bytes, n, d_out, nout, 0, err);
	if (st != GI_OK)
		goto done;
	SPACE_CK(cudaMemcpy(out, d_out, *nout * (size_t) value_bytes, cudaMemcpyDeviceToHost));

done:
	cudaFree(d_mask);
	cudaFree(d_values);
	cudaFree(d_out);
	return st;
}

/* Compaction of host arrays through the device (engine_impl.h). */
GI_EXPORT GiStatus
gi_gpu_compact(const uint64_t *mask, const void *values, int value_bytes,
			   size_t n, size_t chunk_bits, void *out, size_t *nout,
			   GiError *err)
{
	GiSpacePlan plan = gi_space_default_plan;

	if (chunk_bits)
		plan.chunk_bits = chunk_bits;
	return gi_space_compact_plan_host(&plan, mask, values, value_bytes, n, out, nout, err);
}


/* ------------------------------------------------------------------------ */
/* Selection (the second half of gi_gpu_select)                              */
/* ------------------------------------------------------------------------ */

/* Set the mask bits of every probe's range [first, last); one warp a probe. */
__global__ void
mark_hit_ranges(const uint64_t *first, const uint64_t *last, size_t nprobes,
				unsigned long long *mask)
{
	size_t		p = ((size_t) blockIdx.x * blockDim.x + threadIdx.x) / 32;
	int			lane = threadIdx.x & 31;

	if (p >= nprobes)
		return;
	uint64_t	f = first[p],
				l = last[p];

	if (f >= l)
		return;
	size_t		wf = f / 64,
				wl = (l - 1) / 64;

	for (size_t w = wf + lane; w <= wl; w += 32)
	{
		unsigned long long bits = ~0ULL;

		if (w == wf)
			bits &= ~0ULL << (f & 63);
		if (w == wl && (l & 63))
			bits &= (1ULL << (l & 63)) - 1;
		atomicOr(&mask[w], bits);
	}
}

/* Upper bound of the hits: the sum of the range lengths, one per probe. */
__global__ void
range_lengths(const uint64_t *first, const uint64_t *last, size_t nprobes,
			  unsigned long long *len)
{
	size_t		p = (size_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (p < nprobes)
		len[p] = last[p] > first[p] ? last[p] - first[p] : 0;
}

/* The payloads of every entry the device-resident ranges hit (gpu_space.cuh). */
GiStatus
gi_space_select_hits(const uint64_t *d_first, const uint64_t *d_last, size_t nprobes,
					 const uint64_t *d_payloads, size_t n, GiSelectOrder order,
					 cudaStream_t stream, uint64_t **out, size_t *nout,
					 double *d2h_ms, GiError *err)
{
	GiStatus	st = GI_OK;
	size_t		words = (n + 63) / 64;
	uint64_t   *d_out = NULL,
			   *d_sorted = NULL,
			   *host = NULL;
	unsigned long long *d_mask = NULL,
			   *d_len = NULL,
			   *d_bound = NULL;
	void	   *d_temp = NULL;
	size_t		temp_bytes = 0,
				count = 0;
	unsigned long long bound = 0;
	double		t0;

	*out = NULL;
	*nout = 0;
	SPACE_CK(cudaMalloc(&d_mask, words * sizeof(unsigned long long)));
	SPACE_CK(cudaMemsetAsync(d_mask, 0, words * sizeof(unsigned long long), stream));
	/* The hit count is at most the sum of the range lengths (and n). */
	SPACE_CK(cudaMalloc(&d_len, nprobes * sizeof(unsigned long long)));
	SPACE_CK(cudaMalloc(&d_bound, sizeof(unsigned long long)));
	range_lengths<<<(unsigned int) ((nprobes + 255) / 256), 256, 0, stream>>>(
		d_first, d_last, nprobes, d_len);
	SPACE_CK(cudaGetLastError());
	SPACE_CK(cub::DeviceReduce::Sum(NULL, temp_bytes, d_len, d_bound, (int) nprobes, stream));
	SPACE_CK(cudaMalloc(&d_temp, temp_bytes));
	SPACE_CK(cub::DeviceReduce::Sum(d_temp, temp_bytes, d_len, d_bound, (int) nprobes, stream));
	SPACE_CK(cudaMemcpyAsync(&bound, d_bound, sizeof(bound), cudaMemcpyDeviceToHost, stream));
	{
		size_t		threads = nprobes * 32;

		mark_hit_ranges<<<(unsigned int) ((threads + 255) / 256), 256, 0, stream>>>(
			d_first, d_last, nprobes, d_mask);
		SPACE_CK(cudaGetLastError());
	}
	SPACE_CK(cudaStreamSynchronize(stream));
	if (bound > n)
		bound = n;
	SPACE_CK(cudaMalloc(&d_out, (bound ? bound : 1) * sizeof(uint64_t)));
	st = gi_space_compact_device((const uint64_t *) d_mask, d_payloads, 8, n, 0,
								 d_out, &count, stream, err);
	if (st != GI_OK)
		goto done;

	if (order == GI_ORDER_PAYLOAD && count > 1)
	{
		cudaFree(d_temp);
		d_temp = NULL;
		temp_bytes = 0;
		SPACE_CK(cudaMalloc(&d_sorted, count * sizeof(uint64_t)));
		SPACE_CK(cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, d_out, d_sorted,
												(int) count, 0, 64, stream));
		SPACE_CK(cudaMalloc(&d_temp, temp_bytes));
		SPACE_CK(cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, d_out, d_sorted,
												(int) count, 0, 64, stream));
	}
	host = (uint64_t *) malloc((count ? count : 1) * sizeof(uint64_t));
	if (host == NULL)
	{
		st = gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for %zu hits", count);
		goto done;
	}
	t0 = gi_now_ms();
	SPACE_CK(cudaMemcpyAsync(host, d_sorted ? d_sorted : d_out, count * sizeof(uint64_t),
							 cudaMemcpyDeviceToHost, stream));
	SPACE_CK(cudaStreamSynchronize(stream));
	*d2h_ms = gi_now_ms() - t0;
	*out = host;
	*nout = count;
	host = NULL;

done:
	free(host);
	cudaFree(d_mask);
	cudaFree(d_len);
	cudaFree(d_bound);
	cudaFree(d_temp);
	cudaFree(d_out);
	cudaFree(d_sorted);
	return st;
}
