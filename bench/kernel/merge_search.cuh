/*
 * merge_search.cuh - a merge-path search of a sorted probe batch over the
 * sorted keys (kernel_bench --merge): the ceiling of what a search of dense
 * sorted batches can reach, measured beside the tree and the binary search.
 * Not the engine's: it reads the dense sorted key array the binary search
 * reads, not the tree's image.
 *
 * Each block takes a tile of TILE consecutive probes and the window of
 * keys their answers lie in (merge_partition_kernel: from the run start of
 * the key before the first probe's upper bound to the last probe's upper
 * bound), stages both in shared memory and merges them, a key before a
 * probe when key <= probe: each thread takes an equal share of the merged
 * sequence (its start found by a merge-path search), so every thread does
 * the same work however the probes fall.  A probe's answer follows from
 * what the merge consumed before it: last = the keys consumed (the upper
 * bound), and the run start of the last key consumed gives first (point: if
 * that key equals the probe; predecessor: always).  A tile whose window is
 * wider than WINDOW keys (sparse probes, long runs of equal keys)
 * answers probe by probe with the binary search.
 *
 * Include after bsearch_bound (kernel_bench.cu).
 */
#ifndef GPUIDX_MERGE_SEARCH_CUH
#define GPUIDX_MERGE_SEARCH_CUH

/*
 * The shape (kernel_bench --merge times several): TILE probes a block of
 * THREADS threads, windows of at most WINDOW keys, staged in dynamic shared
 * memory (merge_smem_bytes).
 */
template <int TILE_, int WINDOW_, int THREADS_>
struct MergeShape
{
	static const int TILE = TILE_;
	static const int WINDOW = WINDOW_;
	static const int THREADS = THREADS_;
};

/* Shared memory a block of shape S takes for keys K. */
template <class K, class S>
static inline size_t
merge_smem_bytes(void)
{
	return (size_t) S::TILE * (8 + 8 + 8) + (size_t) S::WINDOW * sizeof(K);
}

/* Each tile's window [lo, hi) of keys (one thread a tile). */
template <class K, class S>
__global__ void
merge_partition_kernel(const K *keys, uint64_t n, const int64_t *probes, uint64_t q,
					   uint64_t *lo, uint64_t *hi)
{
	uint64_t	tiles = (q + S::TILE - 1) / S::TILE;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < tiles;
		 t += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	a = t * S::TILE,
					b = (a + S::TILE < q ? a + S::TILE : q) - 1,
					u = bsearch_bound(keys, n, probes[a], true);

		lo[t] = u > 0 ? bsearch_bound(keys, n, (int64_t) keys[u - 1], false) : 0;
		hi[t] = bsearch_bound(keys, n, probes[b], true);
	}
}

/* The answer of one probe by binary search (the wide windows' way). */
template <class K>
__device__ static inline void
merge_answer_by_search(const K *keys, uint64_t n, int op, int64_t p, uint64_t *f, uint64_t *l)
{
	uint64_t	u = bsearch_bound(keys, n, p, true),
				s = u > 0 ? bsearch_bound(keys, n, (int64_t) keys[u - 1], false) : 0;

	*l = u;
	if (op == GI_OP_POINT)
		*f = u > 0 && (int64_t) keys[u - 1] == p ? s : u;
	else
		*f = s;
}

/* Merge each tile's probes with its window of keys (see the file's head). */
template <class K, class S>
__global__ void __launch_bounds__(S::THREADS)
merge_search_kernel(const K *keys, uint64_t n, int op, const int64_t *probes, uint64_t q,
					const uint64_t *tlo, const uint64_t *thi, uint64_t *first, uint64_t *last,
					unsigned long long *wide_tiles)
{
	extern __shared__ int64_t merge_smem[];
	int64_t    *sp = merge_smem;
	uint64_t   *sf = (uint64_t *) (sp + S::TILE),
			   *sl = sf + S::TILE;
	K		   *sk = (K *) (sl + S::TILE);
	uint64_t	tiles = (q + S::TILE - 1) / S::TILE;

	for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x)
	{
		uint64_t	a = t * S::TILE,
					lo = tlo[t];
		int			np = (int) (q - a < S::TILE ? q - a : S::TILE);
		uint64_t	w64 = thi[t] - lo;

		if (w64 > S::WINDOW)
		{						/* the same for the whole block */
			if (threadIdx.x == 0)
				atomicAdd(wide_tiles, 1ull);
			for (int i = threadIdx.x; i < np; i += S::THREADS)
				merge_answer_by_search(keys, n, op, probes[a + i], &first[a + i], &last[a + i]);
			continue;
		}
		int			w = (int) w64;

		for (int i = threadIdx.x; i < np; i += S::THREADS)
			sp[i] = probes[a + i];
		for (int j = threadIdx.x; j < w; j += S::THREADS)
			sk[j] = keys[lo + j];
		__syncthreads();

		/* this thread's share [d, d_end) of the np + w merged items */
		int			total = np + w,
					share = (total + S::THREADS - 1) / S::THREADS,
					d = min((int) threadIdx.x * share, total),
					d_end = min(d + share, total);

		/* merge path: ka keys and d - ka probes come before item d */
		int			ka_lo = max(0, d - np),
					ka_hi = min(d, w);

		while (ka_lo < ka_hi)
		{
			int			mid = (ka_lo + ka_hi) >> 1;

			if ((int64_t) sk[mid] <= sp[d - mid - 1])
				ka_lo = mid + 1;
			else
				ka_hi = mid;
		}
		int			ka = ka_lo,
					pb = d - ka;
		K			prev = ka > 0 ? sk[ka - 1] : (K) 0;
		int			rs = -1;	/* run start of sk[ka - 1]: found when needed */

		for (; d < d_end; d++)
		{
			if (pb >= np || (ka < w && (int64_t) sk[ka] <= sp[pb]))
			{					/* a key */
				K			k = sk[ka];

				if (ka == 0 || k != prev)
					rs = ka;
				prev = k;
				ka++;
			}
			else
			{					/* a probe: answered by what came before */
				int64_t		p = sp[pb];
				uint64_t	l = lo + ka,
							f = l;

				if (ka > 0)
				{
					if (rs < 0)
					{			/* lower bound of prev in sk[0, ka) */
						int			x = 0,
									y = ka - 1;

						while (x < y)
						{
							int			m = (x + y) >> 1;

							if (sk[m] < prev)
								x = m + 1;
							else
								y = m;
						}
						rs = x;
					}
					if (op != GI_OP_POINT || (int64_t) prev == p)
						f = lo + rs;
				}
				else if (op != GI_OP_POINT)
					f = 0;		/* no key <= p: then lo = 0 */
				sf[pb] = f;
				sl[pb] = l;
				pb++;
			}
		}
		__syncthreads();
		for (int i = threadIdx.x; i < np; i += S::THREADS)
		{
			first[a + i] = sf[i];
			last[a + i] = sl[i];
		}
		__syncthreads();
	}
}

/*
 * The floor under any search of a dense sorted batch: read every probe and
 * every key once, write 16 bytes a probe, search nothing.  Its answers mean
 * nothing; the write a key alone would make (never, for these keys) keeps
 * the key reads beyond the probes.
 */
template <class K>
__global__ void
stream_floor_kernel(const K *keys, uint64_t n, const int64_t *probes, uint64_t q,
					uint64_t *first, uint64_t *last)
{
	uint64_t	m = q > n ? q : n;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < m;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	x = i < n ? (uint64_t) keys[i] : 0;

		if (i < q)
		{
			first[i] = (uint64_t) probes[i] + x;
			last[i] = x;
		}
		else if (x == 0x8000000000000001ull)
			first[0] = x;
	}
}

#endif							/* GPUIDX_MERGE_SEARCH_CUH */
