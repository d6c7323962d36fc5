/*
 * gpu_agg.cu - adding up index entries on the device (gi_image_aggregate
 * for GPU images), the twin of gi_cpu_aggregate in engine/cpu_agg.c; the
 * per-entry arithmetic both share is engine/agg_twin.h.
 *
 * What the image holds on the device: the TIDs in rank order
 * (hdr.device_payloads) and, for a B+ tree, the keys (the static leaf
 * level, read through the cut; once insertable, a rank-ordered copy
 * gathered from the leaves: gi_gpu_btree_key_view), and the INCLUDE
 * columns the caller attached (gi_gpu_attach_columns: one array per column
 * in rank order and a NULL bitmap, columnar so that a warp's loads
 * coalesce; dropped by an insertion).  A row column the device does not
 * hold answers GI_ERR_UNSUPPORTED (the caller adds up on the host).
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
 * a mask over the image's entries (the lanes of a warp whose bits fall in
 * one word merge them: one atomicOr), which SPACE compaction (gpu_space.cu)
 * turns into the fetch list: the payloads at the set positions, copied
 * back.  Each INCLUDE column is then one more pass over the same indexes
 * (col_kernel), which takes the entries whose mask bit is clear and adds
 * their non-NULL values: integers as the key's halves, floats with NaNs
 * counted apart and min/max as ordered integer bits (atomics on long
 * long).  A kernel launch adds up at most AGG_PASS entries, so that neither
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

	/*
	 * The loop is uniform over a warp (a lane past t1 takes no entry) so
	 * that the lanes can merge their mask bits: a warp's 32 indexes are
	 * consecutive, so mostly one mask word, set by one atomic.
	 */
	const uint64_t lane = threadIdx.x & 31;

	for (uint64_t tw = t0 + (uint64_t) blockIdx.x * blockDim.x + (threadIdx.x - lane); tw < t1;
		 tw += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	t = tw + lane;
		uint64_t	word = ~0ull;	/* the mask word this lane sets, if any */
		uint32_t	bit = 0;

		if (t < t1)
		{
			if (t >= rend)
			{					/* t increases: search only past r */
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
			{
				word = pos >> 5;
				bit = 1u << (pos & 31);
			}
		}
		/* lanes with the same word OR their bits; the lowest sets them */
		if (__any_sync(0xffffffffu, bit != 0))
		{
			uint32_t	peers = __match_any_sync(0xffffffffu, word);
			uint32_t	bits = __reduce_or_sync(peers, bit);

			if (bit != 0 && lane == (uint64_t) (__ffs(peers) - 1))
				atomicOr(&mask[word], bits);
		}
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

/* ------------------------------------------------------------------------ */
/* INCLUDE columns on the device                                             */
/* ------------------------------------------------------------------------ */

/* The INCLUDE columns an image keeps (GiImage.device_columns). */
typedef struct DevColumns
{
	int			ncols;
	int			width[16];
	void	   *values[16];
	uint8_t    *nulls[16];		/* NULL: the column has no NULLs */
	uint64_t	bytes;
} DevColumns;

/* Free a column set; NULL is fine. */
static void
free_columns(DevColumns *dc)
{
	if (dc == NULL)
		return;
	for (int c = 0; c < dc->ncols; c++)
	{
		if (dc->values[c])
			cudaFree(dc->values[c]);
		if (dc->nulls[c])
			cudaFree(dc->nulls[c]);
	}
	free(dc);
}

/* Owns a half-made column set. */
struct ColumnsGuard
{
	DevColumns *dc = nullptr;
	~ColumnsGuard() { free_columns(dc); }
};

/* Drop the INCLUDE columns an image keeps (engine_impl.h). */
GI_EXPORT void
gi_gpu_detach_columns(GiImage *image)
{
	if (image && image->device_columns)
	{
		free_columns((DevColumns *) image->device_columns);
		image->device_columns = NULL;
	}
}

/* Copy INCLUDE columns to the device for an image (engine_impl.h). */
GI_EXPORT GiStatus
gi_gpu_attach_columns(GiImage *image, const GiIncludeColumns *cols, GiError *err)
{
	ColumnsGuard g;
	uint64_t	n = image->n;

	gi_gpu_detach_columns(image);
	CKS(gi_gpu_need_device(err));
	g.dc = (DevColumns *) calloc(1, sizeof(DevColumns));
	if (g.dc == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for device columns");
	for (int c = 0; c < cols->ncols; c++)
	{
		DevBuf		v,
					nb;
		size_t		vbytes = (size_t) n * cols->width[c],
					nbytes = (size_t) (n + 7) / 8;

		g.dc->ncols = c + 1;
		g.dc->width[c] = cols->width[c];
		CKS(gi_gpu_alloc(v, vbytes ? vbytes : 8, "an included column", err));
		g.dc->values[c] = v.release();
		if (vbytes)
			CK(cudaMemcpy(g.dc->values[c], cols->values[c], vbytes, cudaMemcpyHostToDevice));
		g.dc->bytes += vbytes;
		if (cols->nulls[c] && nbytes)
		{
			CKS(gi_gpu_alloc(nb, nbytes, "an included column's NULL bitmap", err));
			g.dc->nulls[c] = (uint8_t *) nb.release();
			CK(cudaMemcpy(g.dc->nulls[c], cols->nulls[c], nbytes, cudaMemcpyHostToDevice));
			g.dc->bytes += nbytes;
		}
	}
	image->device_columns = g.dc;
	g.dc = nullptr;
	return GI_OK;
}

/* How many INCLUDE columns an image keeps on the device, and their bytes. */
GI_EXPORT void
gi_gpu_columns_info(const GiImage *image, int *ncols, uint64_t *bytes)
{
	const DevColumns *dc = (const DevColumns *) image->device_columns;

	*ncols = dc ? dc->ncols : 0;
	*bytes = dc ? dc->bytes : 0;
}

/* Bytes of a value of a row column kind (0: not a row column). */
static int
kind_width(GiAggKind kind)
{
	switch (kind)
	{
		case GI_AGG_BOOL:
			return 1;
		case GI_AGG_INT16:
			return 2;
		case GI_AGG_INT32:
		case GI_AGG_UINT32:
		case GI_AGG_FLOAT4:
			return 4;
		case GI_AGG_INT64:
		case GI_AGG_FLOAT8:
			return 8;
		default:
			return 0;
	}
}

/* One column's totals of a launch on the device. */
typedef struct ColTotals
{
	unsigned long long nonnull;
	unsigned long long sum_hi;
	unsigned long long sum_lo;
	long long	imin;
	long long	imax;
	unsigned long long nnan;
	long long	fmin;			/* ordered bits (float_order) */
	long long	fmax;
} ColTotals;

/*
 * A double's bits as a signed integer that orders as the double does (a
 * negative's magnitude bits flipped); NaN is never ordered here.
 */
__host__ __device__ __forceinline__ long long
float_order(double x)
{
	long long	b;

	memcpy(&b, &x, sizeof(b));
	return b >= 0 ? b : b ^ 0x7fffffffffffffffLL;
}

/* The double of float_order's bits. */
static double
float_unorder(long long b)
{
	double		x;

	b = b >= 0 ? b : b ^ 0x7fffffffffffffffLL;
	memcpy(&x, &b, sizeof(x));
	return x;
}

/* Value i of a column of kind KIND, as an integer (bool 0/1) or a double. */
template <int KIND>
__device__ __forceinline__ void
column_value(const void *values, uint64_t i, int64_t *iv, double *fv)
{
	if constexpr (KIND == GI_AGG_BOOL)
		*iv = ((const uint8_t *) values)[i] ? 1 : 0;
	else if constexpr (KIND == GI_AGG_INT16)
		*iv = ((const int16_t *) values)[i];
	else if constexpr (KIND == GI_AGG_INT32)
		*iv = ((const int32_t *) values)[i];
	else if constexpr (KIND == GI_AGG_UINT32)
		*iv = ((const uint32_t *) values)[i];
	else if constexpr (KIND == GI_AGG_INT64)
		*iv = ((const int64_t *) values)[i];
	else if constexpr (KIND == GI_AGG_FLOAT4)
		*fv = ((const float *) values)[i];
	else
		*fv = ((const double *) values)[i];
}

/*
 * Add up one INCLUDE column over indexes [t0, t1) of the concatenated
 * ranges (as agg_kernel): an entry whose mask bit agg_kernel left clear is
 * visible; its value counts unless its NULL bit is set.
 */
template <int KIND>
__global__ void __launch_bounds__(AGG_THREADS)
col_kernel(const uint64_t *first, const uint64_t *offs, uint32_t nr, uint64_t t0,
		   uint64_t t1, const uint32_t *mask, const void *values, const uint8_t *nulls,
		   ColTotals *tot)
{
	constexpr bool FLOAT = KIND == GI_AGG_FLOAT4 || KIND == GI_AGG_FLOAT8;
	typedef cub::BlockReduce<long long, AGG_THREADS> Reduce;
	__shared__ typename Reduce::TempStorage temp;
	long long	nonnull = 0,
				hi = 0,
				nnan = 0,
				mn = LLONG_MAX,
				mx = LLONG_MIN;
	unsigned long long lo = 0;
	uint32_t	r = 0;
	uint64_t	rstart = 0,
				rend = 0;

	if constexpr (FLOAT)
	{
		mn = float_order(INFINITY);
		mx = float_order(-INFINITY);
	}
	for (uint64_t t = t0 + (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < t1;
		 t += (uint64_t) gridDim.x * blockDim.x)
	{
		if (t >= rend)
		{
			r = range_of(offs, r, nr, t);
			rstart = offs[r];
			rend = offs[r + 1];
		}

		uint64_t	pos = first[r] + (t - rstart);

		if ((mask[pos >> 5] >> (pos & 31)) & 1)
			continue;			/* not on an all-visible page */
		if (nulls && gi_agg_bit(nulls, pos))
			continue;

		int64_t		iv = 0;
		double		fv = 0;

		column_value<KIND>(values, pos, &iv, &fv);
		nonnull++;
		if constexpr (FLOAT)
		{
			if (isnan(fv))
				nnan++;
			else
			{
				long long	o = float_order(fv);

				mn = o < mn ? o : mn;
				mx = o > mx ? o : mx;
			}
		}
		else
		{
			hi += gi_agg_hi(iv);
			lo += gi_agg_lo(iv);
			mn = iv < mn ? iv : mn;
			mx = iv > mx ? iv : mx;
		}
	}

	long long	b_nonnull = Reduce(temp).Sum(nonnull);

	__syncthreads();
	long long	b_mn = Reduce(temp).Reduce(mn, MinOp());

	__syncthreads();
	long long	b_mx = Reduce(temp).Reduce(mx, MaxOp());

	__syncthreads();
	long long	b_a = Reduce(temp).Sum(FLOAT ? nnan : hi);

	__syncthreads();
	long long	b_b = FLOAT ? 0 : Reduce(temp).Sum((long long) lo);

	if (threadIdx.x == 0 && b_nonnull)
	{
		atomicAdd(&tot->nonnull, (unsigned long long) b_nonnull);
		if constexpr (FLOAT)
		{
			atomicAdd(&tot->nnan, (unsigned long long) b_a);
			atomicMin(&tot->fmin, b_mn);
			atomicMax(&tot->fmax, b_mx);
		}
		else
		{
			atomicAdd(&tot->sum_hi, (unsigned long long) b_a);
			atomicAdd(&tot->sum_lo, (unsigned long long) b_b);
			atomicMin(&tot->imin, b_mn);
			atomicMax(&tot->imax, b_mx);
		}
	}
}

/* Launch col_kernel for a column of kind kind. */
static void
launch_col(GiAggKind kind, unsigned grid, cudaStream_t st, const uint64_t *first,
		   const uint64_t *offs, uint32_t nr, uint64_t t0, uint64_t t1,
		   const uint32_t *mask, const void *values, const uint8_t *nulls, ColTotals *tot)
{
#define LAUNCH_COL(K) col_kernel<K><<<grid, AGG_THREADS, 0, st>>>(first, offs, nr, t0, t1, mask, values, nulls, tot)
	switch (kind)
	{
		case GI_AGG_BOOL:
			LAUNCH_COL(GI_AGG_BOOL);
			break;
		case GI_AGG_INT16:
			LAUNCH_COL(GI_AGG_INT16);
			break;
		case GI_AGG_INT32:
			LAUNCH_COL(GI_AGG_INT32);
			break;
		case GI_AGG_UINT32:
			LAUNCH_COL(GI_AGG_UINT32);
			break;
		case GI_AGG_INT64:
			LAUNCH_COL(GI_AGG_INT64);
			break;
		case GI_AGG_FLOAT4:
			LAUNCH_COL(GI_AGG_FLOAT4);
			break;
		default:
			LAUNCH_COL(GI_AGG_FLOAT8);
			break;
	}
#undef LAUNCH_COL
}

/* One column's totals over every launch, on the host. */
typedef struct HostTotals
{
	int64_t		nonnull;
	__int128	sum;
	int64_t		imin;
	int64_t		imax;
	int64_t		nnan;
	double		fmin;
	double		fmax;
} HostTotals;

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
	const DevColumns *dc = (const DevColumns *) image->device_columns;
	GiKeyView	kv;
	bool		keys = false;
	std::vector<uint64_t> h_first,
				h_offs;
	uint64_t	total = 0,
				vis = 0;
	__int128	key_sum = 0;
	int64_t		kmin = INT64_MAX,
				kmax = INT64_MIN;
	HostTotals	ht[16];
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
		ht[c].nonnull = ht[c].nnan = 0;
		ht[c].sum = 0;
		ht[c].imin = INT64_MAX;
		ht[c].imax = INT64_MIN;
		ht[c].fmin = INFINITY;
		ht[c].fmax = -INFINITY;
		if (cols[c].kind == GI_AGG_KEY)
		{
			keys = true;
			continue;
		}
		if (dc == NULL || cols[c].column < 0 || cols[c].column >= dc->ncols ||
			dc->width[cols[c].column] != kind_width(cols[c].kind))
			return gi_set_error(err, GI_ERR_UNSUPPORTED,
								"INCLUDE column %d is not held on the device", cols[c].column);
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

	/* (a query: the calling thread's own stream, as gi_gpu_query's) */
	CKS(gi_gpu_thread_stream(&st, err));
	words = (image->n + 63) / 64;
	if (total > 0)
	{
		uint32_t	nr = (uint32_t) h_first.size();
		size_t		vm_bytes = vm_full ? 0 : (size_t) ((vm_blocks + 3) / 4);
		unsigned	grid = gi_gpu_grid_resident(total < AGG_PASS ? total : AGG_PASS, AGG_THREADS);
		size_t		tot_bytes = sizeof(AggTotals) + ncols * sizeof(ColTotals);
		alignas(8) char h_tot[sizeof(AggTotals) + 16 * sizeof(ColTotals)];

		CKS(gi_gpu_alloc(d_first, nr * sizeof(uint64_t), "the aggregated ranges", err));
		CKS(gi_gpu_alloc(d_offs, (nr + 1) * sizeof(uint64_t), "the aggregated ranges", err));
		CKS(gi_gpu_alloc(d_vm, vm_bytes, "the visibility map", err));
		CKS(gi_gpu_alloc(d_mask, words * sizeof(uint64_t), "the heap fetch mask", err));
		CKS(gi_gpu_alloc(d_tot, tot_bytes, "the aggregate totals", err));
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
			AggTotals  *a = (AggTotals *) h_tot;
			ColTotals  *ct = (ColTotals *) (h_tot + sizeof(AggTotals));

			*a = AggTotals{0, 0, 0, LLONG_MAX, LLONG_MIN};
			for (int c = 0; c < ncols; c++)
				ct[c] = ColTotals{0, 0, 0, LLONG_MAX, LLONG_MIN, 0,
					float_order(INFINITY), float_order(-INFINITY)};
			CK(cudaMemcpyAsync(d_tot.p, h_tot, tot_bytes, cudaMemcpyHostToDevice, st));
			launch_for(kv, keys, vm_full, grid, st, (const uint64_t *) d_first.p,
					   (const uint64_t *) d_offs.p, nr, t0, t1,
					   (const uint64_t *) image->device_payloads, (const uint8_t *) d_vm.p,
					   vm_blocks, (uint32_t *) d_mask.p, (AggTotals *) d_tot.p);
			CKL("agg_kernel");
			/* then each INCLUDE column over the entries the mask leaves */
			for (int c = 0; c < ncols; c++)
			{
				int			col = cols[c].column;

				if (cols[c].kind == GI_AGG_KEY)
					continue;
				launch_col(cols[c].kind, grid, st, (const uint64_t *) d_first.p,
						   (const uint64_t *) d_offs.p, nr, t0, t1, (const uint32_t *) d_mask.p,
						   dc->values[col], dc->nulls[col],
						   (ColTotals *) ((char *) d_tot.p + sizeof(AggTotals)) + c);
				CKL("col_kernel");
			}
			CK(cudaMemcpyAsync(h_tot, d_tot.p, tot_bytes, cudaMemcpyDeviceToHost, st));
			CK(cudaStreamSynchronize(st));
			vis += a->counted;
			key_sum += gi_agg_join((int64_t) a->sum_hi, a->sum_lo);
			kmin = a->kmin < kmin ? a->kmin : kmin;
			kmax = a->kmax > kmax ? a->kmax : kmax;
			for (int c = 0; c < ncols; c++)
			{
				double		fmn = float_unorder(ct[c].fmin),
							fmx = float_unorder(ct[c].fmax);

				ht[c].nonnull += (int64_t) ct[c].nonnull;
				ht[c].sum += gi_agg_join((int64_t) ct[c].sum_hi, ct[c].sum_lo);
				ht[c].imin = ct[c].imin < ht[c].imin ? ct[c].imin : ht[c].imin;
				ht[c].imax = ct[c].imax > ht[c].imax ? ct[c].imax : ht[c].imax;
				ht[c].nnan += (int64_t) ct[c].nnan;
				ht[c].fmin = fmn < ht[c].fmin ? fmn : ht[c].fmin;
				ht[c].fmax = fmx > ht[c].fmax ? fmx : ht[c].fmax;
			}
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
		GiAggColumn *col = &cols[c];

		if (col->kind == GI_AGG_KEY)
		{						/* keys are never NULL */
			ht[c].nonnull = (int64_t) vis;
			ht[c].sum = key_sum;
			ht[c].imin = kmin;
			ht[c].imax = kmax;
		}
		col->nonnull += ht[c].nonnull;
		col->sum += ht[c].sum;
		col->nnan += ht[c].nnan;
		col->imin = ht[c].imin < col->imin ? ht[c].imin : col->imin;
		col->imax = ht[c].imax > col->imax ? ht[c].imax : col->imax;
		col->fmin = ht[c].fmin < col->fmin ? ht[c].fmin : col->fmin;
		col->fmax = ht[c].fmax > col->fmax ? ht[c].fmax : col->fmax;
	}
	return GI_OK;
}
