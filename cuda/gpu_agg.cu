/*
 * gpu_agg.cu - adding up index entries on the device (gi_image_aggregate
 * for GPU images), the twin of gi_cpu_aggregate in engine/cpu_agg.c; the
 * per-entry arithmetic both share is engine/agg_twin.h.
 *
 * What the image holds on the device: the TIDs in rank order
 * (hdr.device_payloads) and, for a B+ tree, the keys (the static leaf
 * level, read through the cut; once insertable, a rank-ordered copy
 * gathered from the leaves: gi_gpu_btree_key_view).  So count(*) and
 * aggregates of the key are added up here; INCLUDE columns are host rows
 * only (GI_ERR_UNSUPPORTED: the caller adds up on the host).
 *
 * A call: the non-empty ranges and the prefix sum of their lengths (on the
 * host: one pass over the ranges, which are uploaded anyway) and the
 * visibility map copy go up; one grid-stride kernel maps index t of the
 * concatenated ranges to its range (binary search of the prefix sums, only
 * when t leaves the range of the thread's last entry) and position; the
 * entry's heap block (payload >> 16) is tested in the map; a visible entry
 * adds into the thread's totals (count, the key's half sums, min, max),
 * which the block reduces (cub::BlockReduce) and adds with one 64-bit
 * atomic per field; an entry that is not visible sets its position's bit in
 * a mask over the image's entries, which SPACE compaction (gpu_space.cu)
 * turns into the fetch list: the payloads at the set positions, copied
 * back.  A kernel launch adds up at most AGG_PASS entries, so that neither
 * half sum can overflow; the host joins each pass's halves into the 128-bit
 * total.
 */
#include "gpu_btree.cuh"
#include "gpu_space.cuh"
#include "agg_twin.h"

#include <cub/block/block_reduce.cuh>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#define AGG_THREADS		256
#define AGG_PASS		(1ull << 31)	/* entries a launch adds up */

/* Where the kernel reads keys: not at all, the static leaves, or a dense
 * rank-ordered array. */
enum AggKeys
{
	KEYS_NONE = 0,
	KEYS_LEAVES = 1,
	KEYS_DENSE = 2
};

/* One launch's totals on the device (the sums' halves as two's complement). */
typedef struct AggTotals
{
	unsigned long long counted;
	unsigned long long sum_hi;
	unsigned long long sum_lo;
	long long	kmin;
	long long	kmax;
} AggTotals;

/* Reduction operators for cub::BlockReduce. */
struct MinOp
{
	__device__ __forceinline__ long long operator() (long long a, long long b) const
	{
		return b < a ? b : a;
	}
};
struct MaxOp
{
	__device__ __forceinline__ long long operator() (long long a, long long b) const
	{
		return b > a ? b : a;
	}
};

/* The key at position pos. */
template <class K, int KEYS>
__device__ __forceinline__ int64_t
key_at(const GiKeyView &kv, uint64_t pos)
{
	if constexpr (KEYS == KEYS_DENSE)
		return (int64_t) ((const K *) kv.dense)[pos];
	else
	{
		constexpr int M = NODE_BYTES / sizeof(K);
		uint64_t	node;
		uint32_t	slot;

		gi_cut_locate(pos, kv.ave, kv.h, &node, &slot);
		return (int64_t) ((const K *) kv.leaves)[node * M + slot];
	}
}

/* The last range r (of nr) whose start offs[r] is <= t, searching [lo, nr). */
__device__ __forceinline__ uint32_t
range_of(const uint64_t *offs, uint32_t lo, uint32_t nr, uint64_t t)
{
	uint32_t	hi = nr;		/* offs[lo] <= t < offs[hi] */

	while (hi - lo > 1)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (offs[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Add up indexes [t0, t1) of the concatenated ranges (range r: positions
 * first[r] + [0, offs[r + 1] - offs[r])): visible entries into *tot, the
 * others' positions into mask (bit pos of 32-bit word pos / 32).
 */
template <class K, int KEYS, bool FULL>
__global__ void __launch_bounds__(AGG_THREADS)
agg_kernel(const uint64_t *first, const uint64_t *offs, uint32_t nr, uint64_t t0,
		   uint64_t t1, const uint64_t *pay, GiKeyView kv, const uint8_t *vm,
		   uint64_t vm_blocks, uint32_t *mask, AggTotals *tot)
{
	typedef cub::BlockReduce<long long, AGG_THREADS> Reduce;
	__shared__ typename Reduce::TempStorage temp;
	long long	counted = 0,
				hi = 0,
				mn = LLONG_MAX,
				mx = LLONG_MIN;
	unsigned long long lo = 0;
	uint32_t	r = 0;
	uint64_t	rstart = 0,
				rend = 0;

	for (uint64_t t = t0 + (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < t1;
		 t += (uint64_t) gridDim.x * blockDim.x)
	{
		if (t >= rend)
		{						/* t increases: search only past r */
			r = range_of(offs, r, nr, t);
			rstart = offs[r];
			rend = offs[r + 1];
		}

		uint64_t	pos = first[r] + (t - rstart);
		uint64_t	tid = pay[pos];

		if (gi_agg_block_visible(vm, vm_blocks, FULL, gi_agg_tid_block(tid)))
		{
			counted++;
			if constexpr (KEYS != KEYS_NONE)
			{
				int64_t		x = key_at<K, KEYS>(kv, pos);

				hi += gi_agg_hi(x);
				lo += gi_agg_lo(x);
				mn = x < mn ? x : mn;
				mx = x > mx ? x : mx;
			}
		}
		else
			atomicOr(&mask[pos >> 5], 1u << (pos & 31));
	}

	/* one atomic per field and block (the reductions share the storage) */
	long long	b_counted = Reduce(temp).Sum(counted);

	__syncthreads();
	if (threadIdx.x == 0 && b_counted)
		atomicAdd(&tot->counted, (unsigned long long) b_counted);
	if constexpr (KEYS != KEYS_NONE)
	{
		long long	b_hi = Reduce(temp).Sum(hi);

		__syncthreads();
		long long	b_lo = Reduce(temp).Sum((long long) lo);

		__syncthreads();
		long long	b_mn = Reduce(temp).Reduce(mn, MinOp());

		__syncthreads();
		long long	b_mx = Reduce(temp).Reduce(mx, MaxOp());

		if (threadIdx.x == 0 && b_counted)
		{
			atomicAdd(&tot->sum_hi, (unsigned long long) b_hi);
			atomicAdd(&tot->sum_lo, (unsigned long long) b_lo);
			atomicMin(&tot->kmin, b_mn);
			atomicMax(&tot->kmax, b_mx);
		}
	}
}

/* Launch agg_kernel specialized for the key width, key source and map. */
template <class K, int KEYS>
static void
launch_agg(bool full, unsigned grid, cudaStream_t st, const uint64_t *first,
		   const uint64_t *offs, uint32_t nr, uint64_t t0, uint64_t t1,
		   const uint64_t *pay, const GiKeyView &kv, const uint8_t *vm,
		   uint64_t vm_blocks, uint32_t *mask, AggTotals *tot)
{
	if (full)
		agg_kernel<K, KEYS, true><<<grid, AGG_THREADS, 0, st>>>(
			first, offs, nr, t0, t1, pay, kv, vm, vm_blocks, mask, tot);
	else
		agg_kernel<K, KEYS, false><<<grid, AGG_THREADS, 0, st>>>(
			first, offs, nr, t0, t1, pay, kv, vm, vm_blocks, mask, tot);
}

/* The kernel for the key width and key source of kv (keys: whether read). */
static void
launch_for(const GiKeyView &kv, bool keys, bool full, unsigned grid, cudaStream_t st,
		   const uint64_t *first, const uint64_t *offs, uint32_t nr, uint64_t t0,
		   uint64_t t1, const uint64_t *pay, const uint8_t *vm, uint64_t vm_blocks,
		   uint32_t *mask, AggTotals *tot)
{
	int			src = !keys ? KEYS_NONE : kv.dense ? KEYS_DENSE : KEYS_LEAVES;

	if (src == KEYS_NONE)
		launch_agg<int64_t, KEYS_NONE>(full, grid, st, first, offs, nr, t0, t1, pay, kv, vm,
									   vm_blocks, mask, tot);
	else if (kv.kw == 4 && src == KEYS_DENSE)
		launch_agg<int32_t, KEYS_DENSE>(full, grid, st, first, offs, nr, t0, t1, pay, kv, vm,
										vm_blocks, mask, tot);
	else if (kv.kw == 4)
		launch_agg<int32_t, KEYS_LEAVES>(full, grid, st, first, offs, nr, t0, t1, pay, kv, vm,
										 vm_blocks, mask, tot);
	else if (src == KEYS_DENSE)
		launch_agg<int64_t, KEYS_DENSE>(full, grid, st, first, offs, nr, t0, t1, pay, kv, vm,
										vm_blocks, mask, tot);
	else
		launch_agg<int64_t, KEYS_LEAVES>(full, grid, st, first, offs, nr, t0, t1, pay, kv, vm,
										 vm_blocks, mask, tot);
}

/*
 * Add up the entries of position ranges on the device (engine_impl.h;
 * engine.c checked the ranges against the image and the columns).
 */
GI_EXPORT GiStatus
gi_gpu_aggregate(GiImage *image, const uint64_t *first, const uint64_t *last,
				 size_t nranges, const uint8_t *vm, uint64_t vm_blocks, bool vm_full,
				 GiAggColumn *cols, int ncols, int64_t *counted, uint64_t **fetch,
				 size_t *nfetch, GiError *err)
{
	GiKeyView	kv;
	bool		keys = false;
	std::vector<uint64_t> h_first,
				h_offs;
	uint64_t	total = 0,
				vis = 0;
	__int128	sum = 0;
	int64_t		kmin = INT64_MAX,
				kmax = INT64_MIN;
	cudaStream_t st;
	DevBuf		d_first,
				d_offs,
				d_vm,
				d_mask,
				d_tot,
				d_out;
	size_t		words;

	CKS(gi_gpu_need_device(err));
	memset(&kv, 0, sizeof(kv));
	for (int c = 0; c < ncols; c++)
	{
		if (cols[c].kind != GI_AGG_KEY)
			return gi_set_error(err, GI_ERR_UNSUPPORTED,
								"INCLUDE columns are not held on the device");
		keys = true;
	}
	if (image->device_payloads == NULL)
		return gi_set_error(err, GI_ERR_INVALID, "image was built without payloads");
	if (image->structure == GI_STRUCT_BTREE)
	{
		CKS(gi_gpu_btree_refresh_payloads(image, err));
		if (keys)
			CKS(gi_gpu_btree_key_view(image, &kv, err));
	}
	else if (keys)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"the %s image holds no keys by position on the device",
							gi_structure_name(image->structure));

	/* the non-empty ranges and the prefix sum of their lengths */
	for (size_t i = 0; i < nranges; i++)
		if (last[i] > first[i])
		{
			h_first.push_back(first[i]);
			h_offs.push_back(total);
			total += last[i] - first[i];
		}
	h_offs.push_back(total);
	if (h_first.size() >= UINT32_MAX)
		return gi_set_error(err, GI_ERR_UNSUPPORTED, "more than 2^32 ranges in one call");

	st = gi_gpu_dev_stream(image);
	words = (image->n + 63) / 64;
	if (total > 0)
	{
		uint32_t	nr = (uint32_t) h_first.size();
		size_t		vm_bytes = vm_full ? 0 : (size_t) ((vm_blocks + 3) / 4);
		unsigned	grid = gi_gpu_grid_resident(total < AGG_PASS ? total : AGG_PASS, AGG_THREADS);

		CKS(gi_gpu_alloc(d_first, nr * sizeof(uint64_t), "the aggregated ranges", err));
		CKS(gi_gpu_alloc(d_offs, (nr + 1) * sizeof(uint64_t), "the aggregated ranges", err));
		CKS(gi_gpu_alloc(d_vm, vm_bytes, "the visibility map", err));
		CKS(gi_gpu_alloc(d_mask, words * sizeof(uint64_t), "the heap fetch mask", err));
		CKS(gi_gpu_alloc(d_tot, sizeof(AggTotals), "the aggregate totals", err));
		CK(cudaMemcpyAsync(d_first.p, h_first.data(), nr * sizeof(uint64_t),
						   cudaMemcpyHostToDevice, st));
		CK(cudaMemcpyAsync(d_offs.p, h_offs.data(), (nr + 1) * sizeof(uint64_t),
						   cudaMemcpyHostToDevice, st));
		if (vm_bytes)
			CK(cudaMemcpyAsync(d_vm.p, vm, vm_bytes, cudaMemcpyHostToDevice, st));
		CK(cudaMemsetAsync(d_mask.p, 0, words * sizeof(uint64_t), st));
		for (uint64_t t0 = 0; t0 < total; t0 += AGG_PASS)
		{
			uint64_t	t1 = total - t0 < AGG_PASS ? total : t0 + AGG_PASS;
			AggTotals	h = {0, 0, 0, LLONG_MAX, LLONG_MIN};

			CK(cudaMemcpyAsync(d_tot.p, &h, sizeof(h), cudaMemcpyHostToDevice, st));
			launch_for(kv, keys, vm_full, grid, st, (const uint64_t *) d_first.p,
					   (const uint64_t *) d_offs.p, nr, t0, t1,
					   (const uint64_t *) image->device_payloads, (const uint8_t *) d_vm.p,
					   vm_blocks, (uint32_t *) d_mask.p, (AggTotals *) d_tot.p);
			CKL("agg_kernel");
			CK(cudaMemcpyAsync(&h, d_tot.p, sizeof(h), cudaMemcpyDeviceToHost, st));
			CK(cudaStreamSynchronize(st));
			vis += h.counted;
			sum += gi_agg_join((int64_t) h.sum_hi, h.sum_lo);
			kmin = h.kmin < kmin ? h.kmin : kmin;
			kmax = h.kmax > kmax ? h.kmax : kmax;
		}
	}

	/* the entries not on all-visible pages: their payloads, compacted */
	*nfetch = (size_t) (total - vis);
	*fetch = (uint64_t *) malloc((*nfetch ? *nfetch : 1) * sizeof(uint64_t));
	if (*fetch == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for %zu heap fetches",
							*nfetch);
	if (*nfetch > 0)
	{
		size_t		nout = 0;
		GiStatus	s;

		s = gi_gpu_alloc(d_out, *nfetch * sizeof(uint64_t), "the heap fetch list", err);
		if (s == GI_OK)
			s = gi_space_compact_device((const uint64_t *) d_mask.p, image->device_payloads, 8,
										image->n, 0, d_out.p, &nout, st, err);
		if (s == GI_OK && nout != *nfetch)
			s = gi_set_error(err, GI_ERR_DEVICE,
							 "heap fetch mask holds %zu entries, %zu expected", nout, *nfetch);
		if (s == GI_OK)
		{
			cudaError_t e = cudaMemcpy(*fetch, d_out.p, nout * sizeof(uint64_t),
									   cudaMemcpyDeviceToHost);

			if (e != cudaSuccess)
				s = gi_gpu_fail(err, e, "cudaMemcpy of the heap fetch list");
		}
		if (s != GI_OK)
		{
			free(*fetch);
			*fetch = NULL;
			*nfetch = 0;
			return s;
		}
	}

	*counted += (int64_t) vis;
	for (int c = 0; c < ncols; c++)
	{
		cols[c].nonnull += (int64_t) vis;	/* keys are never NULL */
		cols[c].sum += sum;
		cols[c].imin = kmin < cols[c].imin ? kmin : cols[c].imin;
		cols[c].imax = kmax > cols[c].imax ? kmax : cols[c].imax;
	}
	return GI_OK;
}
