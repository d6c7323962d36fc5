/*
 * gpu_btree_top.cu - the top search of the GPU B+ tree, for random probe
 * batches over trees whose upper levels fit in shared memory.
 *
 * A random probe of the per-probe kernel reads one 128-byte node line a
 * level from L2 or memory (4 to 6 of them at 10^6..10^8 keys), while a
 * binary search over the sorted keys finds its first ten or so steps in
 * L1.  Here persistent blocks (one a multiprocessor: 1024 threads) each
 * copy the tree's upper levels (gi_gpu_btree_top_levels: as many whole
 * levels from the root as fit the block's shared memory) from global
 * memory once, then answer many probes each: a group of G lanes descends
 * the staged levels in shared memory and reads only the levels below them
 * and the leaf from global memory (at 10^6 int32 keys every internal level
 * is staged, leaving one leaf line a probe).  The node search is the one
 * every kernel shares (descend / answer with TOP, gpu_btree_search.cuh), so
 * every operation and both forms (static and insertable) answer exactly as
 * the per-probe kernel does.
 *
 * Layout in shared memory: the staged nodes (global node numbers 0 ..
 * off[levels] - 1: the levels are stored root first, so the staged ones are
 * a prefix of the key region) with each 16-byte chunk at a swizzled place
 * (chunk c of node g at c ^ (g % 8)), so that the lanes of a warp that read
 * chunk c of different nodes fall on different banks; then their child
 * prefix sums.  At most 132 bytes a node: 227 KiB hold 1760 nodes (on an
 * H100 every internal level of 10^6 int32 keys: 1009 nodes; the top three
 * of 10^7 int32 or 10^6..10^7 int64 keys).
 */
#include "gpu_btree_search.cuh"

#include <algorithm>
#include <atomic>
#include <mutex>

#define TOP_THREADS		1024		/* threads a block: one block a
									 * multiprocessor (64 registers a
									 * thread at most) */

/* Shared memory bytes that hold `nodes` staged nodes and their prefix sums. */
static size_t
top_bytes(uint64_t nodes)
{
	return (size_t) nodes * (NODE_BYTES + sizeof(uint32_t));
}

/*
 * Copy global nodes 0 .. nodes - 1 (keys, swizzled) and their prefix sums
 * into the block's shared memory; four 16-byte loads in flight a thread.
 */
template <class K>
__device__ __forceinline__ void
stage_top(const TreeDev<K> &T, uint4 *lines, uint32_t nodes)
{
	constexpr int U = 4;
	const uint4 *src = reinterpret_cast<const uint4 *>(T.nodes);
	uint32_t   *prefix = reinterpret_cast<uint32_t *>(lines + (size_t) nodes * TOP_CHUNKS);
	uint32_t	chunks = nodes * TOP_CHUNKS;

	for (uint32_t x0 = threadIdx.x; x0 < chunks; x0 += U * blockDim.x)
	{
		uint4		b[U];

#pragma unroll
		for (int u = 0; u < U; u++)
		{
			uint32_t	x = x0 + u * blockDim.x;

			b[u] = x < chunks ? __ldg(src + x) : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int u = 0; u < U; u++)
		{
			uint32_t	x = x0 + u * blockDim.x;
			uint32_t	node = x / TOP_CHUNKS;

			if (x < chunks)
				lines[node * TOP_CHUNKS + ((x % TOP_CHUNKS) ^ (node % TOP_CHUNKS))] = b[u];
		}
	}
	for (uint32_t x = threadIdx.x; x < nodes; x += blockDim.x)
		prefix[x] = __ldg(T.prefix + x);
	__syncthreads();
}

/*
 * The top search kernel: each block stages the top T.top_levels levels
 * (global nodes 0 .. nodes - 1), then its groups of G lanes answer probes
 * i = group id, + number of groups, ... into first / last[i].  gate: run
 * only when *gate is 0 (the tiled search's sample found the batch random;
 * NULL: always).
 */
template <class K, int G, bool DYN>
__global__ void __launch_bounds__(TOP_THREADS, 1)
btree_top_kernel(TreeDev<K> T, int op, const int64_t *probes, const int64_t *probes_hi,
				 uint64_t count, uint64_t *first, uint64_t *last, uint32_t nodes,
				 const int *gate)
{
	extern __shared__ uint4 top_smem[];
	TreeDev<K>	TS = T;

	if (gate && *gate != 0)
		return;					/* (uniform: every thread reads the same flag) */
	stage_top<K>(T, top_smem, nodes);
	TS.top_lines = top_smem;
	TS.top_prefix = reinterpret_cast<const uint32_t *>(top_smem + (size_t) nodes * TOP_CHUNKS);

	Group		g = make_group<G>(threadIdx.x & 31);
	uint64_t	gid = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) / G;
	uint64_t	ngroups = (uint64_t) gridDim.x * blockDim.x / G;

	for (uint64_t i = gid; i < count; i += ngroups)
	{
		int64_t		p = probes[i],
					ph = op == GI_OP_RANGE ? probes_hi[i] : 0;
		uint64_t	f,
					l;

		answer<K, G, DYN, true>(TS, op, p, ph, g, f, l);
		if (g.r == 0)
		{
			first[i] = f;
			last[i] = l;
		}
	}
}

/* How many top levels to stage (gpu_btree_search.cuh). */
int
gi_gpu_btree_top_levels(const Geo *g, uint64_t count, int mode, int max_levels, int smem_kb)
{
	size_t		budget = gi_gpu_smem_optin_bytes();
	uint64_t	per_block = count / (uint64_t) gi_gpu_sm_count();	/* one block an SM */
	int			levels = 0;

	if (smem_kb > 0)
		budget = std::min(budget, (size_t) smem_kb << 10);
	while (levels < g->nint && (max_levels <= 0 || levels < max_levels) &&
		   top_bytes(g->off[levels + 1]) <= budget &&
		   (mode != 0 || 2 * g->lev[levels].nodes <= per_block))
		levels++;
	return levels;
}

/*
 * Launch the top kernel for group size G: opt in to the device's largest
 * shared memory once, then one block a multiprocessor (as many as fit),
 * fewer for a small batch.
 */
template <class K, int G, bool DYN>
static GiStatus
launch_top(const TreeDev<K> &T, cudaStream_t st, int op, const int64_t *probes,
		   const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last,
		   uint32_t nodes, const int *gate, GiError *err)
{
	static std::once_flag once;
	static cudaError_t opt_in = cudaSuccess;
	size_t		smem = top_bytes(nodes);
	int			per_sm = 0;

	std::call_once(once, [] {
		opt_in = cudaFuncSetAttribute(btree_top_kernel<K, G, DYN>,
									  cudaFuncAttributeMaxDynamicSharedMemorySize,
									  (int) gi_gpu_smem_optin_bytes());
		(void) cudaGetLastError();
	});
	if (opt_in != cudaSuccess)
		return gi_gpu_fail(err, opt_in, "cudaFuncSetAttribute of the top search kernel");
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, btree_top_kernel<K, G, DYN>,
													 TOP_THREADS, smem));
	if (per_sm < 1)
		return gi_set_error(err, GI_ERR_DEVICE,
							"the top search kernel does not fit a multiprocessor with %zu bytes of shared memory",
							smem);

	uint64_t	want = (count * G + TOP_THREADS - 1) / TOP_THREADS;
	unsigned	grid = (unsigned) std::min<uint64_t>(std::max<uint64_t>(want, 1),
													 (uint64_t) per_sm * gi_gpu_sm_count());

	btree_top_kernel<K, G, DYN><<<grid, TOP_THREADS, smem, st>>>(T, op, probes, hi, count, first,
																   last, nodes, gate);
	CKL("btree_top_kernel");
	return GI_OK;
}

/* The top search of a batch (gpu_btree_search.cuh). */
template <class K, bool DYN>
GiStatus
gi_gpu_btree_top_search(const TreeDev<K> &T, cudaStream_t st, int op, const int64_t *probes,
						const int64_t *hi, uint64_t count, uint64_t *first, uint64_t *last,
						int group, int levels, const Geo *g, const int *gate, GiError *err)
{
	TreeDev<K>	TL = T;
	uint32_t	nodes;

	levels = std::max(0, std::min(levels, g->nint));
	nodes = (uint32_t) g->off[levels];
	if (top_bytes(nodes) > gi_gpu_smem_optin_bytes())
		return gi_set_error(err, GI_ERR_INVALID,
							"%d top levels (%u nodes) do not fit the shared memory of a block",
							levels, nodes);
	TL.top_lines = NULL;		/* set by each block to its shared memory */
	TL.top_prefix = NULL;
	TL.top_levels = levels;
	switch (group)
	{
		case 4:
			return launch_top<K, 4, DYN>(TL, st, op, probes, hi, count, first, last, nodes, gate, err);
		case 8:
			return launch_top<K, 8, DYN>(TL, st, op, probes, hi, count, first, last, nodes, gate, err);
		default:
			return launch_top<K, 2, DYN>(TL, st, op, probes, hi, count, first, last, nodes, gate, err);
	}
}

template GiStatus gi_gpu_btree_top_search<int32_t, false>(const TreeDev<int32_t> &, cudaStream_t, int,
														  const int64_t *, const int64_t *, uint64_t,
														  uint64_t *, uint64_t *, int, int, const Geo *,
														  const int *, GiError *);
template GiStatus gi_gpu_btree_top_search<int32_t, true>(const TreeDev<int32_t> &, cudaStream_t, int,
														 const int64_t *, const int64_t *, uint64_t,
														 uint64_t *, uint64_t *, int, int, const Geo *,
														 const int *, GiError *);
template GiStatus gi_gpu_btree_top_search<int64_t, false>(const TreeDev<int64_t> &, cudaStream_t, int,
														  const int64_t *, const int64_t *, uint64_t,
														  uint64_t *, uint64_t *, int, int, const Geo *,
														  const int *, GiError *);
template GiStatus gi_gpu_btree_top_search<int64_t, true>(const TreeDev<int64_t> &, cudaStream_t, int,
														 const int64_t *, const int64_t *, uint64_t,
														 uint64_t *, uint64_t *, int, int, const Geo *,
														 const int *, GiError *);
