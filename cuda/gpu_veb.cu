/*
 * gpu_veb.cu - the GPU engine's van Emde Boas tree (Mayr et al., "Are van
 * Emde Boas trees viable on the GPU?"), the device mirror of
 * engine/cpu_veb.c: the same universe, slots, cluster records, hash-table
 * slots, hash constants and build steps, so that both engines hold the same
 * structure and give the same answers (see cpu_veb.c for the layout).
 *
 * Build, from keys sorted by (key, payload) on the device (CUB radix sort
 * when the caller did not sort), with every allocation made before the step
 * that fills it and none during the build proper:
 *  1. de-duplicate: head flags and an inclusive scan give each distinct key
 *     its index; run_start[i] is the first entry of distinct key i;
 *  2. level by level from the top, one thread per distinct key: Eq. 7 marks
 *     child slots (mark_level_kernel), then each cluster of the level
 *     propagates the first elements of its summary and first child to the
 *     first key after its minimum's run (propagate_kernel, atomicOr);
 *  3. popcount of the first-element bit fields and a scan number the
 *     clusters; init_clusters_kernel sizes each table (Eqs. 8-9); a scan
 *     places the tables; one allocation for all clusters, one for all tables;
 *  4. level by level from the top, each cluster enters its parent
 *     (link_level_kernel): the summary field, or the parent's hash table by
 *     atomicCAS; the 16-bit leaf bitmaps are filled as they are entered.
 *
 * Query: one thread per probe running engine/veb_query_twin.h's descents,
 * the CPU engine's own code (exists / predecessor / successor without
 * recursion, loops unrolled to the fixed depth: 5 for 32-bit universes, 6
 * for 64-bit; table slots read through the read-only cache, bitmaps
 * searched with __ffs / __clz / __popc).  A distinct index becomes the entry
 * run [run_start[i], run_start[i + 1]).  Probes are int64; those outside the
 * stored range are answered from the minimum and maximum before any
 * mapping, never wrapped.
 */
#include "gpu_veb.cuh"

#include <atomic>
#include "veb_query_twin.h"

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define BLOCK			256		/* threads per block of the build kernels */

/* What the build kernels work on. */
typedef struct VebBuildDev
{
	VebCluster *cl;
	unsigned long long *tab;
	const uint64_t *x;			/* nd mapped distinct keys */
	uint32_t   *fe;				/* nd first-element bit fields */
	uint32_t   *base;			/* cluster number of each key's first */
	uint64_t	nd;
	uint64_t	hash_a;
	uint64_t	hash_b;
} VebBuildDev;

/* The slots enclosing each slot, by first-element bit. */
typedef struct Ancestors
{
	uint32_t	a[MAX_BITS];
} Ancestors;

typedef struct VebImage
{
	GiImage		hdr;			/* must be first */
	int			universe;		/* W: 32 or 64 */
	int			leaf_level;		/* level of the 16-bit bitmaps: 3 or 4 */
	uint64_t	nd;
	uint64_t   *d_run_start;
	VebCluster *d_clusters;
	unsigned long long *d_table;
	uint64_t	nclusters;
	uint64_t	nbitmaps;
	uint64_t	table_slots;
	uint64_t	hash_a;
	uint64_t	hash_b;
	int64_t		kmin;
	int64_t		kmax;
	uint64_t	umin;
	uint64_t	umax;
	cudaStream_t stream;
	uint64_t	device_bytes;
	char		device_name[64];
} VebImage;

/* ------------------------------------------------------------------------ */
/* Queries (veb_query_twin.h's descents, one thread per probe)              */
/* ------------------------------------------------------------------------ */

/* Answer count probes, one thread each (grid-stride). */
template <int W>
__global__ void
veb_search_kernel(VebView t, int op, const int64_t *probes, const int64_t *hi,
				  uint64_t count, uint64_t *first, uint64_t *last)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	f,
					l;

		veb_answer(&t, op, probes[i], hi ? hi[i] : 0, &f, &l, W);
		first[i] = f;
		last[i] = l;
	}
}

/* ------------------------------------------------------------------------ */
/* Build kernels                                                             */
/* ------------------------------------------------------------------------ */

/* Grid-stride loop over [0, n). */
#define FOR_EACH(i, n) \
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
		 i += (uint64_t) gridDim.x * blockDim.x)

/* Set flag[0] if keys are out of order, flag[1] if one exceeds int16. */
template <class K>
__global__ void
check_keys_kernel(const K *k, uint64_t n, bool narrow16, int *flag)
{
	FOR_EACH(i, n)
	{
		if (i > 0 && k[i - 1] > k[i])
			flag[0] = 1;
		if (narrow16 && (k[i] < INT16_MIN || k[i] > INT16_MAX))
			flag[1] = 1;
	}
}

/* head[i] = 1 where entry i starts a run of equal keys. */
template <class K>
__global__ void
head_flags_kernel(const K *k, uint64_t n, uint32_t *head)
{
	FOR_EACH(i, n)
		head[i] = i == 0 || k[i] != k[i - 1];
}

/*
 * With pos the inclusive scan of the head flags: distinct key pos[i] - 1
 * starts at entry i; record its run start and mapped key.
 */
template <class K>
__global__ void
scatter_distinct_kernel(const K *k, uint64_t n, const uint32_t *pos,
						uint64_t nd, uint64_t *run_start, uint64_t *x, int W)
{
	FOR_EACH(i, n)
	{
		if (i == 0 || k[i] != k[i - 1])
		{
			uint32_t	d = pos[i] - 1;

			run_start[d] = i;
			x[d] = map_key((int64_t) k[i], W);
		}
		if (i == 0)
			run_start[nd] = n;
	}
}

/* The root's first element: distinct key 0. */
__global__ void
mark_root_kernel(uint32_t *fe)
{
	fe[0] = 1;
}

/* Eq. 7 on level L, one thread per key (cpu_veb.c mark_level_slice). */
__global__ void
mark_level_kernel(const uint64_t *x, uint32_t *fe, uint64_t nd, int L, int W,
				  Ancestors anc)
{
	int			w = W >> L;

	FOR_EACH(i, nd)
	{
		if (i == 0)
			continue;
		uint64_t	d = x[i - 1] ^ x[i];
		int			diff = d == 0 ? W : __clzll((long long) d) - (64 - W);
		uint32_t	f = fe[i];

		for (int j = 1; j < (1 << L); j += 2)
		{
			int			bit = slot_bit(L, j);

			if (diff < j * w && (f & anc.a[bit]) == 0)
				f |= 1u << bit;
		}
		fe[i] = f;
	}
}

/*
 * Propagation from the clusters of level L, one thread per key: the first
 * key after the minimum's run starts the summary and the first child, if it
 * is still inside the cluster; several clusters may mark one key: atomicOr.
 */
__global__ void
propagate_kernel(const uint64_t *x, uint32_t *fe, uint64_t nd, int L, int W)
{
	int			w = W >> L;

	FOR_EACH(i, nd)
	{
		uint32_t	bits = atomicOr(&fe[i], 0u) & level_bits(L);

		while (bits)
		{
			int			bit = __ffs((int) bits) - 1;
			int			j = bit - ((1 << L) - 1);
			int			s = j * w;
			uint64_t	m = prefix_end(x, nd, i, s + w, W);

			bits &= bits - 1;
			if (m < prefix_end(x, nd, i, s, W))
				atomicOr(&fe[m], (1u << slot_bit(L + 1, 2 * j)) |
						 (1u << slot_bit(L + 1, 2 * j + 1)));
		}
	}
}

/*
 * base[i] = the clusters (w >= 8) key i starts; totals of those and of the
 * leaf bitmaps into counts[0] and counts[1].
 */
__global__ void
count_clusters_kernel(const uint32_t *fe, uint64_t nd, uint32_t inner,
					  uint32_t leaf, uint32_t *base, unsigned long long *counts)
{
	unsigned long long ci = 0,
				cl = 0;

	FOR_EACH(i, nd)
	{
		uint32_t	f = fe[i];

		base[i] = __popc(f & inner);
		ci += __popc(f & inner);
		cl += __popc(f & leaf);
	}
	for (int o = 16; o > 0; o >>= 1)
	{
		ci += __shfl_down_sync(0xFFFFFFFFu, ci, o);
		cl += __shfl_down_sync(0xFFFFFFFFu, cl, o);
	}
	if ((threadIdx.x & 31) == 0 && (ci || cl))
	{
		atomicAdd(&counts[0], ci);
		atomicAdd(&counts[1], cl);
	}
}

/*
 * The cluster records each key starts: bounds, first and last index, and
 * the table size of Eq. 9 (children at most min(b - m, 2^(w/2))).
 */
__global__ void
init_clusters_kernel(VebBuildDev b, int W, int leaf_level)
{
	uint32_t	inner = level_bits(leaf_level) - 1;

	FOR_EACH(i, b.nd)
	{
		uint32_t	bits = b.fe[i] & inner;
		uint32_t	id = b.base[i];

		for (; bits; bits &= bits - 1, id++)
		{
			int			bit = __ffs((int) bits) - 1;
			int			L = 31 - __clz(bit + 1);
			int			j = bit - ((1 << L) - 1);
			int			w = W >> L;
			int			s = j * w;
			uint64_t	m = prefix_end(b.x, b.nd, i, s + w, W);
			uint64_t	e = prefix_end(b.x, b.nd, i, s, W);
			VebCluster c;
			uint64_t	bound = 1ull << (w / 2);

			c.min = (uint32_t) word_at(b.x[i], s, w, W);
			c.max = (uint32_t) word_at(b.x[e - 1], s, w, W);
			c.first = (uint32_t) i;
			c.last = (uint32_t) (e - 1);
			c.summary = w == 8 ? 0 : NONE32;
			c.slots = m < e ? table_size(e - m < bound ? e - m : bound) : 0;
			c.table = 0;
			b.cl[id] = c;
		}
	}
}

/* off[i] = slots of cluster i (scanned into table offsets next). */
__global__ void
table_slots_kernel(const VebCluster *cl, uint64_t nc, uint64_t *off)
{
	FOR_EACH(i, nc)
		off[i] = cl[i].slots;
}

/* Cluster i's table starts where the inclusive scan says, less its size. */
__global__ void
table_offsets_kernel(VebCluster *cl, uint64_t nc, const uint64_t *incl)
{
	FOR_EACH(i, nc)
		cl[i].table = incl[i] - cl[i].slots;
}

/*
 * The cluster at slot j of level L whose range holds key x, found from the
 * root through the levels already linked.
 */
__device__ uint32_t
locate(const VebBuildDev &b, uint64_t x, int L, int j, int W)
{
	uint32_t	cur = 0;

	for (int l = 1; l <= L; l++)
	{
		const VebCluster *c = &b.cl[cur];
		int			wp = W >> (l - 1);
		int			sp = (j >> (L - l + 1)) * wp;

		if (((j >> (L - l)) & 1) == 0)
			cur = c->summary;
		else
			cur = find_child((const VebSlot *) b.tab, b.hash_a, b.hash_b, c,
							 (uint32_t) (word_at(x, sp, wp, W) >> (wp / 2)));
	}
	return cur;
}

/* Put slot value v into the first free slot from key's home (atomicCAS). */
__device__ void
table_put(const VebBuildDev &b, const VebCluster *c, uint32_t key,
		  unsigned long long v)
{
	unsigned long long *tab = b.tab + c->table;
	uint32_t	slots = c->slots;
	uint32_t	i = hash_slot(b.hash_a, b.hash_b, key, slots);

	for (;;)
	{
		if (atomicCAS(&tab[i], 0ull, v) == 0ull)
			return;
		if (++i == slots)
			i = 0;
	}
}

/*
 * Link the clusters of level L into their parents on level L - 1, one
 * thread per key: the summary field, or the parent's hash table.  On the
 * leaf level the 16-bit bitmap is filled first from the cluster's key range.
 */
__global__ void
link_level_kernel(VebBuildDev b, int L, int W, int leaf_level)
{
	int			w = W >> L;

	FOR_EACH(i, b.nd)
	{
		uint32_t	all = b.fe[i];
		uint32_t	bits = all & level_bits(L);

		while (bits)
		{
			int			bit = __ffs((int) bits) - 1;
			int			j = bit - ((1 << L) - 1);
			int			s = j * w;
			uint32_t	key = (uint32_t) word_at(b.x[i], s - (j & 1 ? w : 0), w, W);
			VebCluster *p = &b.cl[locate(b, b.x[i], L - 1, j >> 1, W)];

			bits &= bits - 1;
			if (L == leaf_level)
			{
				uint64_t	e = prefix_end(b.x, b.nd, i, s, W);
				uint64_t	k = i;
				uint32_t	bitmap = 0;

				while (k < e)
				{
					bitmap |= 1u << word_at(b.x[k], s, 4, W);
					k = prefix_end(b.x, b.nd, k, s + 4, W);
				}
				if ((j & 1) == 0)
					p->summary = bitmap;
				else
					table_put(b, p, key, (unsigned long long) bitmap |
							  ((unsigned long long) key << 16) |
							  ((unsigned long long) i << 32));
			}
			else
			{
				uint32_t	id = b.base[i] + __popc(all & ((1u << bit) - 1));

				if ((j & 1) == 0)
					p->summary = id;
				else
					table_put(b, p, key, (unsigned long long) key |
							  ((unsigned long long) (id + 1) << 32));
			}
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Images                                                                    */
/* ------------------------------------------------------------------------ */

/* Free an image's device memory and stream. */
static void
veb_release(VebImage *img)
{
	if (!img)
		return;
	if (img->d_run_start)
		cudaFree(img->d_run_start);
	if (img->d_clusters)
		cudaFree(img->d_clusters);
	if (img->d_table)
		cudaFree(img->d_table);
	if (img->stream)
		cudaStreamDestroy(img->stream);
	free(img);
}

/* Owns a half-built image; frees it unless released. */
struct VebGuard
{
	VebImage   *img = nullptr;
	~VebGuard() { veb_release(img); }
};

/* Validate params and allocate an empty image with its stream. */
static GiStatus
veb_create(const GiBuildParams *params, size_t n, VebGuard &guard, GiError *err)
{
	VebImage   *img;

	CKS(gi_gpu_need_device(err));
	if (params->key_bytes != 2 && params->key_bytes != 4 && params->key_bytes != 8)
		return gi_set_error(err, GI_ERR_INVALID, "key width %d is not 2, 4 or 8", params->key_bytes);
	if (n >= NONE32)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"the GPU veb structure indexes fewer than 2^32 - 1 entries, not %zu", n);
	img = (VebImage *) calloc(1, sizeof(VebImage));
	if (!img)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for a GPU image");
	guard.img = img;
	img->hdr.engine = GI_ENGINE_GPU;
	img->hdr.structure = GI_STRUCT_VEB;
	img->hdr.key_bytes = params->key_bytes;
	img->hdr.n = n;
	img->universe = params->key_bytes == 8 ? 64 : 32;
	img->leaf_level = img->universe == 64 ? 4 : 3;
	snprintf(img->device_name, sizeof(img->device_name), "%s", gi_gpu_device_name());
	CK(cudaStreamCreateWithFlags(&img->stream, cudaStreamNonBlocking));
	return GI_OK;
}

/* Fail with GI_ERR_DEVICE_OOM if the image would pass the memory limit. */
static GiStatus
veb_limit(size_t limit, uint64_t bytes, size_t n, GiError *err)
{
	if (limit && bytes > limit)
		return gi_set_error(err, GI_ERR_DEVICE_OOM,
							"the GPU veb image of %zu entries needs %llu bytes of device memory, "
							"over the limit of %zu bytes (gpuidx.device_memory_limit)",
							n, (unsigned long long) bytes, limit);
	return GI_OK;
}

/*
 * Build the structure from n sorted keys on the device (int32 for 2- and
 * 4-byte keys, int64 for 8), checking order and width first when asked.
 */
template <class K>
static GiStatus
veb_build_levels(VebImage *img, const K *keys, bool check, size_t limit,
				 GiError *err)
{
	cudaStream_t st = img->stream;
	uint64_t	n = img->hdr.n;
	int			W = img->universe;
	int			leaf = img->leaf_level;
	DevBuf		flag,
				pos,
				rs,
				x,
				fe,
				base,
				counts,
				cl,
				off,
				tab,
				temp;
	size_t		tb = 0;
	uint32_t	nd32 = 0;
	uint64_t	nd;
	unsigned long long cnt[2];
	K			ends[2];
	Ancestors	anc;
	VebBuildDev b;
	uint64_t	seed;

	if (n == 0)
		return GI_OK;
	if (check)
	{
		int			h[2] = {0, 0};

		CKS(gi_gpu_alloc(flag, 2 * sizeof(int), "a flag", err));
		CK(cudaMemsetAsync(flag.p, 0, 2 * sizeof(int), st));
		check_keys_kernel<K><<<gi_gpu_grid_resident(n, BLOCK), BLOCK, 0, st>>>(
			keys, n, img->hdr.key_bytes == 2, (int *) flag.p);
		CKL("check_keys_kernel");
		CK(cudaMemcpyAsync(h, flag.p, sizeof(h), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		if (h[0])
			return gi_set_error(err, GI_ERR_INVALID, "keys given to build are not sorted ascending");
		if (h[1])
			return gi_set_error(err, GI_ERR_INVALID, "a key does not fit in 2 bytes");
	}

	/* 1. De-duplicate: head flags, inclusive scan, scatter. */
	CKS(gi_gpu_alloc(pos, n * sizeof(uint32_t), "the distinct positions", err));
	head_flags_kernel<K><<<gi_gpu_grid_resident(n, BLOCK), BLOCK, 0, st>>>(keys, n, (uint32_t *) pos.p);
	CKL("head_flags_kernel");
	CK(cub::DeviceScan::InclusiveSum(nullptr, tb, (uint32_t *) pos.p, (int64_t) n, st));
	CKS(gi_gpu_alloc(temp, tb, "scan scratch", err));
	CK(cub::DeviceScan::InclusiveSum(temp.p, tb, (uint32_t *) pos.p, (int64_t) n, st));
	temp.drop();
	CK(cudaMemcpyAsync(&nd32, (uint32_t *) pos.p + n - 1, sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&ends[0], keys, sizeof(K), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&ends[1], keys + n - 1, sizeof(K), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	nd = nd32;
	img->nd = nd;
	img->kmin = (int64_t) ends[0];
	img->kmax = (int64_t) ends[1];
	img->umin = map_key(img->kmin, W);
	img->umax = map_key(img->kmax, W);
	CKS(veb_limit(limit, (nd + 1) * 8, n, err));
	CKS(gi_gpu_alloc(rs, (nd + 1) * sizeof(uint64_t), "the run starts", err));
	CKS(gi_gpu_alloc(x, nd * sizeof(uint64_t), "the distinct keys", err));
	scatter_distinct_kernel<K><<<gi_gpu_grid_resident(n, BLOCK), BLOCK, 0, st>>>(
		keys, n, (const uint32_t *) pos.p, nd, (uint64_t *) rs.p, (uint64_t *) x.p, W);
	CKL("scatter_distinct_kernel");
	CK(cudaStreamSynchronize(st));
	pos.drop();

	seed = 0x5EEDF00DULL ^ nd;
	img->hash_a = splitmix(&seed) | 1;
	img->hash_b = splitmix(&seed);
	memset(&anc, 0, sizeof(anc));
	for (int bit = 0; bit < (1 << (leaf + 1)) - 1; bit++)
	{
		int			Lb = 31 - __builtin_clz((unsigned) bit + 1);
		int			j = bit - ((1 << Lb) - 1);

		for (int l = 0; l < Lb; l++)
			anc.a[bit] |= 1u << slot_bit(l, j >> (Lb - l));
	}

	/* 2. First-element bit fields, level by level from the top. */
	CKS(gi_gpu_alloc(fe, nd * sizeof(uint32_t), "the first-element bits", err));
	CK(cudaMemsetAsync(fe.p, 0, nd * sizeof(uint32_t), st));
	mark_root_kernel<<<1, 1, 0, st>>>((uint32_t *) fe.p);
	CKL("mark_root_kernel");
	for (int L = 0; L <= leaf; L++)
	{
		if (L > 0)
		{
			mark_level_kernel<<<gi_gpu_grid_resident(nd, BLOCK), BLOCK, 0, st>>>(
				(const uint64_t *) x.p, (uint32_t *) fe.p, nd, L, W, anc);
			CKL("mark_level_kernel");
		}
		if (L < leaf)
		{
			propagate_kernel<<<gi_gpu_grid_resident(nd, BLOCK), BLOCK, 0, st>>>(
				(const uint64_t *) x.p, (uint32_t *) fe.p, nd, L, W);
			CKL("propagate_kernel");
		}
	}

	/* 3. Number the clusters (popcount, scan), size and place the tables. */
	CKS(gi_gpu_alloc(base, nd * sizeof(uint32_t), "the cluster numbers", err));
	CKS(gi_gpu_alloc(counts, 2 * sizeof(unsigned long long), "the cluster counts", err));
	CK(cudaMemsetAsync(counts.p, 0, 2 * sizeof(unsigned long long), st));
	count_clusters_kernel<<<gi_gpu_grid_resident(nd, BLOCK), BLOCK, 0, st>>>(
		(const uint32_t *) fe.p, nd, level_bits(leaf) - 1, level_bits(leaf),
		(uint32_t *) base.p, (unsigned long long *) counts.p);
	CKL("count_clusters_kernel");
	CK(cudaMemcpyAsync(cnt, counts.p, sizeof(cnt), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	if (cnt[0] >= NONE32)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"the veb structure of %llu distinct keys needs 2^32 clusters or more",
							(unsigned long long) nd);
	img->nclusters = cnt[0];
	img->nbitmaps = cnt[1];
	CKS(veb_limit(limit, (nd + 1) * 8 + cnt[0] * sizeof(VebCluster), n, err));
	tb = 0;
	CK(cub::DeviceScan::ExclusiveSum(nullptr, tb, (uint32_t *) base.p, (int64_t) nd, st));
	CKS(gi_gpu_alloc(temp, tb, "scan scratch", err));
	CK(cub::DeviceScan::ExclusiveSum(temp.p, tb, (uint32_t *) base.p, (int64_t) nd, st));
	temp.drop();
	CKS(gi_gpu_alloc(cl, cnt[0] * sizeof(VebCluster), "the clusters", err));
	b.cl = (VebCluster *) cl.p;
	b.tab = NULL;
	b.x = (const uint64_t *) x.p;
	b.fe = (uint32_t *) fe.p;
	b.base = (uint32_t *) base.p;
	b.nd = nd;
	b.hash_a = img->hash_a;
	b.hash_b = img->hash_b;
	init_clusters_kernel<<<gi_gpu_grid_resident(nd, BLOCK), BLOCK, 0, st>>>(b, W, leaf);
	CKL("init_clusters_kernel");
	img->table_slots = 0;
	if (cnt[0] > 0)
	{
		uint64_t	nc = cnt[0];

		CKS(gi_gpu_alloc(off, nc * sizeof(uint64_t), "the table offsets", err));
		table_slots_kernel<<<gi_gpu_grid_resident(nc, BLOCK), BLOCK, 0, st>>>(b.cl, nc, (uint64_t *) off.p);
		CKL("table_slots_kernel");
		tb = 0;
		CK(cub::DeviceScan::InclusiveSum(nullptr, tb, (uint64_t *) off.p, (int64_t) nc, st));
		CKS(gi_gpu_alloc(temp, tb, "scan scratch", err));
		CK(cub::DeviceScan::InclusiveSum(temp.p, tb, (uint64_t *) off.p, (int64_t) nc, st));
		temp.drop();
		table_offsets_kernel<<<gi_gpu_grid_resident(nc, BLOCK), BLOCK, 0, st>>>(b.cl, nc, (const uint64_t *) off.p);
		CKL("table_offsets_kernel");
		CK(cudaMemcpyAsync(&img->table_slots, (uint64_t *) off.p + nc - 1, sizeof(uint64_t),
							cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		off.drop();
	}
	img->device_bytes = (nd + 1) * 8 + img->nclusters * sizeof(VebCluster) +
		img->table_slots * 8;
	CKS(veb_limit(limit, img->device_bytes, n, err));
	CKS(gi_gpu_alloc(tab, img->table_slots * 8, "the hash tables", err));
	if (img->table_slots)
		CK(cudaMemsetAsync(tab.p, 0, img->table_slots * 8, st));
	b.tab = (unsigned long long *) tab.p;

	/* 4. Link the clusters into their parents, level by level from the top. */
	for (int L = 1; L <= leaf; L++)
	{
		link_level_kernel<<<gi_gpu_grid_resident(nd, BLOCK), BLOCK, 0, st>>>(b, L, W, leaf);
		CKL("link_level_kernel");
	}
	CK(cudaStreamSynchronize(st));
	img->d_run_start = (uint64_t *) rs.release();
	img->d_clusters = (VebCluster *) cl.release();
	img->d_table = (unsigned long long *) tab.release();
	return GI_OK;
}

/* Build from sorted device keys of the image's width. */
static GiStatus
veb_finish(VebImage *img, const void *d_sorted, bool check, size_t limit,
		   GiError *err)
{
	if (img->hdr.key_bytes == 8)
		return veb_build_levels<int64_t>(img, (const int64_t *) d_sorted, check, limit, err);
	return veb_build_levels<int32_t>(img, (const int32_t *) d_sorted, check, limit, err);
}

/* What the search kernel reads of an image (veb_query_twin.h); nd > 0. */
static VebView
veb_view(const VebImage *img)
{
	VebView		t;

	t.clusters = img->d_clusters;
	t.table = (const VebSlot *) img->d_table;
	t.run_start = img->d_run_start;
	t.hash_a = img->hash_a;
	t.hash_b = img->hash_b;
	t.nd = img->nd;
	t.n = img->hdr.n;
	t.kmin = img->kmin;
	t.kmax = img->kmax;
	t.umin = img->umin;
	t.umax = img->umax;
	return t;
}

/* Blocks per SM of a search kernel instantiation, read off the device. */
template <int W>
static int
search_blocks_per_sm(void)
{
	static std::atomic<int> cached(0);	/* the service's workers share it */

	if (cached.load(std::memory_order_relaxed) == 0)
	{
		int			b = 0;

		if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, veb_search_kernel<W>, BLOCK, 0)
			!= cudaSuccess || b <= 0)
		{
			(void) cudaGetLastError();
			b = 4;
		}
		cached.store(b, std::memory_order_relaxed);
	}
	return cached.load(std::memory_order_relaxed);
}

/*
 * Launch the search over count device probes on stream st (the calling
 * thread's; the image is only read) and wait for it.
 */
static GiStatus
veb_search(const VebImage *img, GiOp op, const int64_t *probes, const int64_t *hi,
		   uint64_t count, uint64_t *first, uint64_t *last, cudaStream_t st, GiError *err)
{
	VebView		t = veb_view(img);
	uint64_t	want = (count + BLOCK - 1) / BLOCK;
	uint64_t	cap;

	if (count == 0)
		return GI_OK;
	if (img->nd == 0)
	{
		CK(cudaMemsetAsync(first, 0, count * 8, st));
		CK(cudaMemsetAsync(last, 0, count * 8, st));
		CK(cudaStreamSynchronize(st));
		return GI_OK;
	}
	if (img->universe == 64)
	{
		cap = (uint64_t) search_blocks_per_sm<64>() * gi_gpu_sm_count();
		veb_search_kernel<64><<<(unsigned) std::min(want, cap), BLOCK, 0, st>>>(
			t, (int) op, probes, hi, count, first, last);
		CKL("veb_search_kernel<64>");
	}
	else
	{
		cap = (uint64_t) search_blocks_per_sm<32>() * gi_gpu_sm_count();
		veb_search_kernel<32><<<(unsigned) std::min(want, cap), BLOCK, 0, st>>>(
			t, (int) op, probes, hi, count, first, last);
		CKL("veb_search_kernel<32>");
	}
	CK(cudaStreamSynchronize(st));
	return GI_OK;
}

/* ------------------------------------------------------------------------ */
/* Entry points (gpu_veb.cuh), dispatched to from gpu_engine.cu              */
/* ------------------------------------------------------------------------ */

/* The host builds (gi_gpu_build_from_host): the structure, the order
 * checked where the caller promised it and for 2-byte keys (their width). */
static GiStatus
veb_build_from(const GiBuildParams *params, const int64_t *keys, const uint64_t *payloads,
			   size_t n, bool sorted, int64_t *sorted_keys_out,
			   uint64_t *sorted_payloads_out, GiImage **out, GiError *err)
{
	VebGuard	guard;
	double		t0 = gi_now_ms();
	int			kw = params->key_bytes == 8 ? 8 : 4;

	*out = NULL;
	CKS(veb_create(params, n, guard, err));
	VebImage   *img = guard.img;

	CKS(gi_gpu_build_from_host(img->stream, kw, params->key_bytes, keys, payloads, n, sorted,
							   sorted_keys_out, sorted_payloads_out,
							   [img, params] (const void *k, bool promised, GiError *e) {
								   return veb_finish(img, k, promised || params->key_bytes == 2,
													 params->device_memory_limit, e);
							   }, t0, &img->hdr.build, err));
	*out = &img->hdr;
	guard.img = NULL;
	return GI_OK;
}

/* Build from sorted host keys: pinned upload, then the structure. */
GiStatus
gi_gpu_veb_build(const GiBuildParams *params, const int64_t *keys, size_t n,
			  GiImage **out, GiError *err)
{
	return veb_build_from(params, keys, NULL, n, true, NULL, NULL, out, err);
}

/* Build from unsorted host pairs: upload, CUB sort, structure, and the
 * sorted arrays back to the host when asked. */
GiStatus
gi_gpu_veb_build_unsorted(const GiBuildParams *params, const int64_t *keys,
					   const uint64_t *payloads, size_t n,
					   int64_t *sorted_keys_out, uint64_t *sorted_payloads_out,
					   GiImage **out, GiError *err)
{
	return veb_build_from(params, keys, payloads, n, false, sorted_keys_out,
						  sorted_payloads_out, out, err);
}

/* Build from device-resident keys (and payloads), sorting them if asked. */
GiStatus
gi_gpu_veb_dev_build(const GiBuildParams *params, const void *d_keys,
				  const uint64_t *d_payloads, size_t n, bool sorted,
				  uint64_t *d_payloads_out, GiImage **out, GiError *err)
{
	VebGuard	guard;
	double		t0 = gi_now_ms();
	int			kw = params->key_bytes == 8 ? 8 : 4;

	*out = NULL;
	CKS(veb_create(params, n, guard, err));
	VebImage   *img = guard.img;

	CKS(gi_gpu_build_from_device(img->stream, kw, d_keys, d_payloads, n, sorted, d_payloads_out,
								 [img, params] (const void *k, bool promised, GiError *e) {
									 return veb_finish(img, k, promised || params->key_bytes == 2,
													   params->device_memory_limit, e);
								 }, t0, &img->hdr.build, err));
	*out = &img->hdr;
	guard.img = NULL;
	return GI_OK;
}

/* Free an image and its device memory. */
void
gi_gpu_veb_free(GiImage *image)
{
	veb_release((VebImage *) image);
}

/* Answer a device-resident batch (results on the device) on stream st. */
GiStatus
gi_gpu_veb_dev_query(const GiImage *image, GiOp op, const int64_t *d_probes,
					 const int64_t *d_hi, size_t nprobes, uint64_t *d_first,
					 uint64_t *d_last, cudaStream_t st, GiTimings *t, GiError *err)
{
	const VebImage *img = (const VebImage *) image;
	double		t0 = gi_now_ms();

	memset(t, 0, sizeof(*t));
	CKS(veb_search(img, op, d_probes, d_hi, nprobes, d_first, d_last, st, err));
	t->search_ms = gi_now_ms() - t0;
	t->total_ms = t->search_ms;
	return GI_OK;
}

/* Describe a GPU veb image. */
void
gi_gpu_veb_info(const GiImage *image, GiImageInfo *info)
{
	const VebImage *img = (const VebImage *) image;
	uint64_t	structure_bytes = img->nclusters * sizeof(VebCluster) +
		img->table_slots * 8;

	info->engine = GI_ENGINE_GPU;
	info->structure = GI_STRUCT_VEB;
	info->key_bytes = image->key_bytes;
	info->entries = image->n;
	info->distinct_keys = img->nd;
	info->levels = img->universe == 64 ? 6 : 5;		/* d: W = 2^d */
	info->node_order = 0;
	info->nodes = img->nclusters;
	info->host_bytes = sizeof(VebImage);
	info->device_bytes = img->device_bytes;
	info->build = image->build;
	gi_timings_load(&info->last_query, &image->last_query);
	snprintf(info->device_name, sizeof(info->device_name), "%s", img->device_name);
	info->clusters = img->nclusters + img->nbitmaps;
	info->hash_bytes = img->table_slots * 8;
	info->space_overhead = img->nd ?
		(double) structure_bytes / ((double) img->nd * image->key_bytes) : 0.0;
}

/* The image's stream (builds). */
cudaStream_t
gi_gpu_veb_stream(const GiImage *image)
{
	return ((const VebImage *) image)->stream;
}
