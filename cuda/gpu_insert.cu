/*
 * gpu_insert.cu - CUBPT batch insertion for the GPU engine (gi_image_insert).
 *
 * Storage (CUBPT 3.1).  The first insertion turns a bulk-built image's leaf
 * level into nodes of M key slots (the static tree's M and key type: 32
 * int32 or 16 int64 keys, 128 bytes) held in a node array of fixed-size
 * segments found through a small device list of segment pointers; growth
 * allocates new segments and rewrites the list, never copying a node.  Keys
 * past a leaf's count hold the type's max so that the warp-group search of
 * gpu_btree.cu stays branch-free.  Payloads, when the image keeps them, sit
 * in a parallel segmented array of M uint64 a node.  The sorted entries are
 * cut into leaves by formulas 1-2 with m = the fill target F = 3/4 M, so
 * leaves have room to take entries without splitting.  A directory in key
 * order maps leaf ordinal j to its node id and its rank base (entries
 * before it; entry nleaves holds n): a query position is rank base + slot,
 * still the rank in the (key, payload) order of all entries.
 *
 * Batch insertion (CUBPT 3.2.2), one thread per key where the paper has it:
 *  1. the batch is uploaded and sorted by (key, payload) on the device;
 *  2. search: one thread per entry descends the internal levels to the
 *     first leaf whose max key is >= its key; an entry equal to the last key
 *     of its leaf moves right (binary search over the directory) to the
 *     first leaf whose last (key, payload) is not below its own, so runs of
 *     one key spanning several leaves stay in (key, payload) order; entries
 *     above every key go to the last leaf;
 *  3. run-length encoding of the leaf ordinals gives the touched leaves and
 *     their new entry counts;
 *  4. CountAddNodeNum: a touched leaf of T = old + new entries stays one
 *     node when T <= M, else becomes ceil(T / F) nodes filled by formula 2;
 *     one exclusive prefix sum (of the added count packed with a split
 *     flag) allocates all added nodes contiguously after the last node id
 *     (segments are added first when needed) and numbers the split leaves;
 *  5. the merge writes every touched leaf's node(s) directly, no copy of
 *     the untouched leaves and no gather of the touched ones: a leaf that
 *     stays one node is one warp that holds its old entries and its new
 *     run (at most M each) one a lane in registers, finds each entry's
 *     merged slot by a warp-wide branch-free search of the other run (an
 *     old entry equal to a new one goes first) and rewrites the node in
 *     place; a split leaf's old entries (at most M) are set aside first,
 *     then one warp per resulting node finds each of its slots' entry by
 *     a merge-path search of the two runs; the first node reuses the old
 *     node id;
 *  6. the directory is rebuilt into the spare set: old leaf j moves to
 *     ordinal j + (nodes added before it: one scan over all leaves), the
 *     merge warps write their nodes' entries over the touched ones; rank
 *     bases are one in-place scan of the counts;
 *  7. the internal levels are re-cut from the directory's leaf max keys with
 *     the bulk-build kernel of gpu_btree.cu (a new root appears when
 *     needed).  This deviates from CUBPT, which inserts the split nodes'
 *     max keys into the internal layers level by level: the internal levels
 *     are ~1/M of the leaves, a re-cut is one cheap kernel per level and
 *     keeps them in the dense Harmonia layout the search needs.  Its time is
 *     kept apart (gi_gpu_dev_insert_stats) so that its share can be seen.
 *
 * The rank-ordered payload copy that select.cu reads (hdr.device_payloads)
 * goes stale on insertion and is rebuilt lazily by one gather kernel when a
 * selection needs it (gi_gpu_btree_refresh_payloads).
 *
 * Errors: on any failure after the batch was validated the image is marked
 * broken and can only be freed; all device memory it holds is owned by the
 * image or by scope guards at every point, so nothing leaks.
 */
#include "gpu_btree.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#define BLOCK			256
#define SEG_SHIFT_MIN	10			/* 2^10 nodes: 128 KiB of keys */
#define SEG_SHIFT_MAX	18			/* 2^18 nodes: 32 MiB of keys */

/* Keys a node holds, and the fill target of fresh or split leaves. */
template <class K> struct Node
{
	static constexpr int M = NODE_BYTES / sizeof(K);
	static constexpr int F = M * 3 / 4;
};

/* ------------------------------------------------------------------------ */
/* Device helpers                                                            */
/* ------------------------------------------------------------------------ */

/* Slots (keys or payloads, V) of node nid through a segment list. */
template <class K, class V>
__device__ __forceinline__ V *
node_slots(V *const *seg, int shift, uint64_t nid)
{
	return seg[nid >> shift] + (nid & ((1ull << shift) - 1)) * Node<K>::M;
}

/* Keys of node nid through the key segment list. */
template <class K>
__device__ __forceinline__ K *
node_keys(K *const *kseg, int shift, uint64_t nid)
{
	return node_slots<K, K>(kseg, shift, nid);
}

/* Payloads of node nid through the payload segment list. */
template <class K>
__device__ __forceinline__ uint64_t *
node_pays(uint64_t *const *pseg, int shift, uint64_t nid)
{
	return node_slots<K, uint64_t>(pseg, shift, nid);
}

/* (ka, pa) < (kb, pb); without payloads only the keys compare. */
template <class K>
__device__ __forceinline__ bool
pair_less(K ka, uint64_t pa, K kb, uint64_t pb, bool pay)
{
	return ka < kb || (pay && ka == kb && pa < pb);
}

/*
 * Warp-wide count of the first n entries held one a lane (lane s: (hk, hp),
 * sorted by (key, payload), n <= 32) that go before (xk, xp): strictly below
 * it (strict), or not above it.  A branch-free binary search over the lanes;
 * every lane of the warp must call it.
 */
template <class K>
__device__ __forceinline__ uint32_t
warp_rank(K hk, uint64_t hp, uint32_t n, K xk, uint64_t xp, bool strict, bool pay)
{
	uint32_t	pos = 0;

	for (uint32_t step = 32; step > 0; step >>= 1)
	{
		uint32_t	probe = pos + step - 1;
		K			vk = __shfl_sync(0xffffffffu, hk, (int) (probe & 31));
		uint64_t	vp = __shfl_sync(0xffffffffu, hp, (int) (probe & 31));
		bool		before = strict ? pair_less<K>(vk, vp, xk, xp, pay) :
			!pair_less<K>(xk, xp, vk, vp, pay);

		if (probe < n && before)
			pos += step;
	}
	return pos;
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Lay n sorted entries out as leaves cut with m = F (one thread per slot).
 * The source is a flat sorted array (src_cut.nodes == 0) or the padded
 * leaves of the static form cut by src_cut.  Leaf j takes node id j.
 */
template <class K>
__global__ void
layout_leaves_kernel(const K *src, Cut src_cut, const uint64_t *src_pay, uint64_t n,
					 Cut cut, K *const *kseg, uint64_t *const *pseg, int shift,
					 uint32_t *dir_node, uint64_t *dir_base, K *leaf_max)
{
	constexpr int M = Node<K>::M;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < cut.nodes * M;
		 t += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	j = t / M;
		uint32_t	s = (uint32_t) (t % M);
		uint64_t	size = j < cut.h ? cut.ave : cut.ave - 1;
		uint64_t	start = gi_cut_start(j, cut.ave, cut.h);
		K			key = (K) KeyLimits<K>::hi;
		uint64_t	pay = 0;

		if (s < size)
		{
			uint64_t	r = start + s;

			if (src_cut.nodes == 0)
				key = src[r];
			else
			{
				uint64_t	li;
				uint32_t	sl;

				gi_cut_locate(r, src_cut.ave, src_cut.h, &li, &sl);
				key = src[li * M + sl];
			}
			if (src_pay)
				pay = src_pay[r];
		}
		node_keys<K>(kseg, shift, j)[s] = key;
		if (pseg)
			node_pays<K>(pseg, shift, j)[s] = pay;
		if (s + 1 == size)
			leaf_max[j] = key;
		if (s == 0)
		{
			dir_node[j] = (uint32_t) j;
			dir_base[j] = start;
			if (j == cut.nodes - 1)
				dir_base[j + 1] = n;
		}
	}
}

/*
 * Stage 2, one thread per batch entry: descend the internal levels to the
 * first leaf whose max key is >= the key (the last child when none is),
 * move right past leaves whose last (key, payload) is below the entry's,
 * and count the batch's keys the tree lacks (first of each run only).
 */
template <class K>
__global__ void
find_leaves_kernel(const K *bk, const uint64_t *bp, uint64_t b, const K *nodes,
				   const uint32_t *prefix, int nint, uint32_t inodes,
				   K *const *kseg, uint64_t *const *pseg, int shift,
				   const uint32_t *dir_node, const uint64_t *dir_base, uint32_t nleaves,
				   uint32_t *leaf_of, unsigned long long *fresh)
{
	constexpr int M = Node<K>::M;
	uint32_t	mine = 0;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < b;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		K			k = bk[i];
		uint64_t	p = bp ? bp[i] : 0;
		uint32_t	node = 0;

		for (int l = 0; l < nint; l++)
		{
			const K    *nd = nodes + (size_t) node * M;
			uint32_t	c0 = prefix[node],
						nch = prefix[node + 1] - c0;
			uint32_t	lo = 0,
						len = M;

			while (len > 0)		/* first slot whose max key is >= k */
			{
				uint32_t	half = len >> 1;

				if (nd[lo + half] < k)
					lo += half + 1, len -= half + 1;
				else
					len = half;
			}
			node = c0 + min(lo, nch - 1);
		}
		uint32_t	j = nint ? node - inodes : 0;
		const K    *leaf = node_keys<K>(kseg, shift, dir_node[j]);
		uint32_t	sz = (uint32_t) (dir_base[j + 1] - dir_base[j]);

		if (i == 0 || bk[i - 1] != k)
		{						/* the lower bound of k lies in leaf j if anywhere:
								 * a branch-free search (slots past sz hold the max) */
			uint32_t	pos = 0;

			for (uint32_t step = M; step > 0; step >>= 1)
				if (pos + step <= (uint32_t) M && leaf[pos + step - 1] < k)
					pos += step;
			mine += !(pos < sz && leaf[pos] == k);
		}
		if (bp && j + 1 < nleaves && leaf[sz - 1] == k &&
			node_pays<K>(pseg, shift, dir_node[j])[sz - 1] < p)
		{						/* the run of k goes on: find where (k, p) fits */
			/*
			 * The first leaf after j whose last (key, payload) is not below
			 * (k, p), else the last leaf: a gallop from j + 1 bounds it
			 * (the run of one key is short unless the key fills many
			 * leaves), then a binary search.  Leaves before lo are below.
			 */
			uint32_t	lo = j + 1,
						hi = nleaves - 1,
						bound = lo,
						step = 1;
			auto		last_below = [&](uint32_t m) {
				uint32_t	mn = dir_node[m];
				uint32_t	ms = (uint32_t) (dir_base[m + 1] - dir_base[m]);

				return pair_less<K>(node_keys<K>(kseg, shift, mn)[ms - 1],
									node_pays<K>(pseg, shift, mn)[ms - 1], k, p, true);
			};

			while (bound < hi && last_below(bound))
			{
				lo = bound + 1;
				bound = (uint32_t) min((uint64_t) hi, (uint64_t) bound + step);
				step *= 2;
			}
			hi = bound;
			while (lo < hi)
			{
				uint32_t	mid = lo + (hi - lo) / 2;

				if (last_below(mid))
					lo = mid + 1;
				else
					hi = mid;
			}
			j = lo;
		}
		leaf_of[i] = j;
	}
	mine = __reduce_add_sync(0xffffffffu, mine);
	if ((threadIdx.x & 31) == 0 && mine)
		atomicAdd(fresh, (unsigned long long) mine);
}

/*
 * Stage 4, CountAddNodeNum, one thread per touched leaf: the nodes its old
 * plus new entries need (formula 1 with m = F once they overflow M), as the
 * count of nodes added beside its own, packed with a split flag: (added <<
 * 32) | (added > 0), so that one exclusive scan gives both every leaf's
 * first added node and every split leaf's ordinal among the split ones.
 * cnt[R] = 0 closes the scan.
 */
template <class K>
__global__ void
count_added_kernel(const uint32_t *U, const uint32_t *C, uint32_t R,
				   const uint64_t *dir_base, uint64_t *cnt)
{
	for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t <= R; t += gridDim.x * blockDim.x)
	{
		if (t == R)
		{
			cnt[t] = 0;
			continue;
		}
		uint64_t	T = dir_base[U[t] + 1] - dir_base[U[t]] + C[t];
		uint64_t	added = T <= (uint64_t) Node<K>::M ? 0 : (T + Node<K>::F - 1) / Node<K>::F - 1;

		cnt[t] = (added << 32) | (added > 0);
	}
}

/* Added nodes of touched leaf t, and its first added node's offset, from
 * the scanned counts of count_added_kernel. */
__device__ __forceinline__ uint32_t
added_of(const uint64_t *offs, uint32_t t)
{
	return (uint32_t) ((offs[t + 1] >> 32) - (offs[t] >> 32));
}

/*
 * Stage 6 (first part), one thread per touched leaf: its added node count
 * at its old ordinal (an exclusive scan then gives every old leaf its
 * shift), and the list of split leaves in key order.
 */
__global__ void
scatter_added_kernel(const uint32_t *U, const uint64_t *offs, uint32_t R, uint32_t *shift,
					 uint32_t *split)
{
	for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < R; t += gridDim.x * blockDim.x)
	{
		uint32_t	a = added_of(offs, t);

		if (a)
		{
			shift[U[t]] = a;
			split[(uint32_t) offs[t]] = t;
		}
	}
}

/* Copy the old entries of the split leaves aside (M slots each): their
 * nodes are written by several warps of merge_split_kernel. */
template <class K>
__global__ void
aside_split_kernel(const uint32_t *split, uint32_t S, const uint32_t *U, K *const *kseg,
				   uint64_t *const *pseg, int shift, const uint32_t *dir_node,
				   const uint64_t *dir_base, K *ak, uint64_t *ap)
{
	constexpr int M = Node<K>::M;

	for (uint64_t x = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; x < (uint64_t) S * M;
		 x += (uint64_t) gridDim.x * blockDim.x)
	{
		uint32_t	q = (uint32_t) (x / M),
					s = (uint32_t) (x % M);
		uint32_t	u = U[split[q]];

		if (s < dir_base[u + 1] - dir_base[u])
		{
			ak[x] = node_keys<K>(kseg, shift, dir_node[u])[s];
			if (pseg)
				ap[x] = node_pays<K>(pseg, shift, dir_node[u])[s];
		}
	}
}

/*
 * Stages 5-6 for touched leaves that stay one node, one warp each: lane s
 * holds old entry s and new entry s in registers, each finds its merged
 * slot by a warp-wide search of the other run (an old entry equal to a new
 * one goes first), then the warp writes the node in place (slots past the
 * count get the type's max) and its directory entry.  A warp takes 32
 * leaves at a time: their directory entries are loaded at once (lane i:
 * leaf i), and the next leaf's entries are loaded before the current one
 * is merged, so that a leaf costs about one memory round trip, not four.
 */
template <class K>
__global__ void
merge_small_kernel(const K *bk, const uint64_t *bp, const uint32_t *U, const uint32_t *C,
				   const uint32_t *run_start, const uint64_t *offs, uint32_t R,
				   const uint32_t *dir_node, const uint64_t *dir_base, K *const *kseg,
				   uint64_t *const *pseg, int shift, uint32_t *new_node, uint64_t *new_cnt,
				   K *new_max)
{
	constexpr int M = Node<K>::M;
	constexpr unsigned ALL = 0xffffffffu;
	const uint32_t lane = threadIdx.x & 31;
	const bool	pay = bp != NULL;

	for (uint64_t base = (((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5) * 32; base < R;
		 base += (((uint64_t) gridDim.x * blockDim.x) >> 5) * 32)
	{
		uint64_t	mt = base + lane;
		uint32_t	mold = M + 1,	/* (past R: taken for a split leaf) */
					mc = 0,
					mnid = 0,
					mrs = 0;
		uint64_t	mord = 0;

		if (mt < R)
		{
			uint32_t	u = U[mt];

			mold = (uint32_t) (dir_base[u + 1] - dir_base[u]);
			mc = C[mt];
			mnid = dir_node[u];
			mrs = run_start[mt];
			mord = u + (offs[mt] >> 32);
		}
		uint32_t	n = (uint32_t) min((uint64_t) 32, R - base);
		uint32_t	old = __shfl_sync(ALL, mold, 0),
					c = __shfl_sync(ALL, mc, 0),
					nid = __shfl_sync(ALL, mnid, 0),
					rs = __shfl_sync(ALL, mrs, 0);
		uint64_t	ord = __shfl_sync(ALL, mord, 0);
		K			ok = (K) KeyLimits<K>::hi,
					nk = (K) KeyLimits<K>::hi;
		uint64_t	op = 0,
					np = 0;

		if (old + c <= (uint32_t) M)
		{
			if (lane < old)
			{
				ok = node_keys<K>(kseg, shift, nid)[lane];
				if (pay)
					op = node_pays<K>(pseg, shift, nid)[lane];
			}
			if (lane < c)
			{
				nk = bk[rs + lane];
				if (pay)
					np = bp[rs + lane];
			}
		}
		for (uint32_t k = 0; k < n; k++)
		{
			uint32_t	src = (k + 1) & 31;
			uint32_t	old2 = __shfl_sync(ALL, mold, src),
						c2 = __shfl_sync(ALL, mc, src),
						nid2 = __shfl_sync(ALL, mnid, src),
						rs2 = __shfl_sync(ALL, mrs, src);
			uint64_t	ord2 = __shfl_sync(ALL, mord, src);
			K			ok2 = (K) KeyLimits<K>::hi,
						nk2 = (K) KeyLimits<K>::hi;
			uint64_t	op2 = 0,
						np2 = 0;

			if (k + 1 < n && old2 + c2 <= (uint32_t) M)
			{					/* the next leaf's entries, loaded ahead */
				if (lane < old2)
				{
					ok2 = node_keys<K>(kseg, shift, nid2)[lane];
					if (pay)
						op2 = node_pays<K>(pseg, shift, nid2)[lane];
				}
				if (lane < c2)
				{
					nk2 = bk[rs2 + lane];
					if (pay)
						np2 = bp[rs2 + lane];
				}
			}
			uint32_t	T = old + c;

			if (T <= (uint32_t) M)	/* (warp-uniform) else a split leaf */
			{
				K		   *keys = node_keys<K>(kseg, shift, nid);
				uint64_t   *pays = pay ? node_pays<K>(pseg, shift, nid) : NULL;
				uint32_t	po = lane + warp_rank<K>(nk, np, c, ok, op, true, pay);
				uint32_t	pn = lane + warp_rank<K>(ok, op, old, nk, np, false, pay);

				if (lane < old)
				{
					keys[po] = ok;
					if (pay)
						pays[po] = op;
					if (po == T - 1)
						new_max[ord] = ok;
				}
				if (lane < c)
				{
					keys[pn] = nk;
					if (pay)
						pays[pn] = np;
					if (pn == T - 1)
						new_max[ord] = nk;
				}
				if (lane >= T && lane < (uint32_t) M)
					keys[lane] = (K) KeyLimits<K>::hi;
				if (lane == 0)
				{
					new_node[ord] = nid;
					new_cnt[ord] = T;
				}
			}
			old = old2, c = c2, nid = nid2, rs = rs2, ord = ord2;
			ok = ok2, op = op2, nk = nk2, np = np2;
		}
	}
}

/*
 * Stages 5-6 for the nodes of split leaves, one warp per node (S first
 * nodes reusing the old node ids, A added ones): the leaf's T entries are
 * spread by formula 2 with m = F; lane s finds merged entry start + s by a
 * merge-path search of the old entries (set aside) and the new run, writes
 * it to its slot, and the warp writes the node's directory entry.
 */
template <class K>
__global__ void
merge_split_kernel(const K *bk, const uint64_t *bp, const uint32_t *U, const uint32_t *C,
				   const uint32_t *run_start, const uint64_t *offs, const uint32_t *split,
				   uint32_t S, uint64_t items, const K *ak, const uint64_t *ap,
				   const uint32_t *dir_node, const uint64_t *dir_base, uint64_t first_free,
				   K *const *kseg, uint64_t *const *pseg, int shift, uint32_t *new_node,
				   uint64_t *new_cnt, K *new_max)
{
	constexpr int M = Node<K>::M;
	const uint32_t lane = threadIdx.x & 31;
	const bool	pay = bp != NULL;

	for (uint64_t x = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5; x < items;
		 x += ((uint64_t) gridDim.x * blockDim.x) >> 5)
	{
		uint32_t	lo = 0,
					len = S;

		while (len > 0)			/* the last split leaf q whose first node <= x */
		{
			uint32_t	half = len >> 1;
			uint32_t	m = lo + half;

			if (m + (offs[split[m]] >> 32) <= x)
				lo = m + 1, len -= half + 1;
			else
				len = half;
		}
		uint32_t	q = lo - 1;
		uint32_t	t = split[q];
		uint64_t	aoff = offs[t] >> 32;
		uint64_t	g = x - q - aoff;
		uint32_t	u = U[t];
		uint64_t	old = dir_base[u + 1] - dir_base[u];
		uint64_t	c = C[t];
		Cut			cc = gi_cut(old + c, Node<K>::F);
		uint64_t	start = gi_cut_start(g, cc.ave, cc.h);
		uint32_t	size = (uint32_t) (g < cc.h ? cc.ave : cc.ave - 1);
		uint64_t	nid = g == 0 ? dir_node[u] : first_free + aoff + g - 1;
		uint64_t	ord = u + aoff + g;
		const K    *ok = ak + (uint64_t) q * M;
		const uint64_t *op = pay ? ap + (uint64_t) q * M : NULL;
		const K    *nk = bk + run_start[t];
		const uint64_t *np = pay ? bp + run_start[t] : NULL;
		K			vk = (K) KeyLimits<K>::hi;
		uint64_t	vp = 0;

		if (lane < size)
		{
			uint64_t	d = start + lane;
			uint64_t	ilo = d > c ? d - c : 0,
						ihi = d < old ? d : old;

			while (ilo < ihi)	/* the most old entries among the first d */
			{
				uint64_t	mid = (ilo + ihi + 1) >> 1;

				if (!pair_less<K>(nk[d - mid], pay ? np[d - mid] : 0, ok[mid - 1],
								  pay ? op[mid - 1] : 0, pay))
					ilo = mid;
				else
					ihi = mid - 1;
			}
			uint64_t	j = d - ilo;

			if (ilo < old && (j >= c || !pair_less<K>(nk[j], pay ? np[j] : 0, ok[ilo],
													   pay ? op[ilo] : 0, pay)))
				vk = ok[ilo], vp = pay ? op[ilo] : 0;
			else
				vk = nk[j], vp = pay ? np[j] : 0;
		}
		K		   *keys = node_keys<K>(kseg, shift, nid);

		if (lane < (uint32_t) M)
			keys[lane] = vk;
		if (pay && lane < size)
			node_pays<K>(pseg, shift, nid)[lane] = vp;
		if (lane + 1 == size)
			new_max[ord] = vk;
		if (lane == 0)
		{
			new_node[ord] = (uint32_t) nid;
			new_cnt[ord] = size;
		}
	}
}

/* Stage 6: old leaf j moves to j + shift[j] (nodes added before it).
 * Touched leaves are rewritten after this by the merge kernels. */
template <class K>
__global__ void
move_leaves_kernel(const uint32_t *shift, const uint32_t *dir_node, const uint64_t *dir_base,
				   const K *dir_max, uint64_t nleaves, uint32_t *new_node, uint64_t *new_cnt,
				   K *new_max)
{
	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < nleaves;
		 j += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	nj = j + shift[j];

		new_node[nj] = dir_node[j];
		new_cnt[nj] = dir_base[j + 1] - dir_base[j];
		new_max[nj] = dir_max[j];
	}
}

/*
 * The rank-ordered copy of the leaves' keys (V = K) or payloads (V =
 * uint64_t) through their segment list, one thread per slot.
 */
template <class K, class V>
__global__ void
gather_leaf_slots_kernel(V *const *seg, int shift, const uint32_t *dir_node,
						 const uint64_t *dir_base, uint64_t nleaves, V *out)
{
	constexpr int M = Node<K>::M;

	for (uint64_t x = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; x < nleaves * M;
		 x += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	j = x / M;
		uint32_t	s = (uint32_t) (x % M);
		uint64_t	b0 = dir_base[j];

		if (s < dir_base[j + 1] - b0)
			out[b0 + s] = node_slots<K, V>(seg, shift, dir_node[j])[s];
	}
}

/* flag[0] = 1 if two equal keys of the sorted batch carry payloads out of
 * order (then the batch is sorted again by payload first); flag[1] = the OR
 * of all payloads (the payload sort then covers only the bits in use). */
template <class K>
__global__ void
ties_unordered_kernel(const K *k, const uint64_t *p, uint64_t n, unsigned long long *flag)
{
	unsigned long long bits = 0;
	unsigned	bad = 0;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		bits |= p[i];
		bad |= i > 0 && k[i - 1] == k[i] && p[i - 1] > p[i];
	}
	bad = __reduce_or_sync(0xffffffffu, bad);
	unsigned	lo = __reduce_or_sync(0xffffffffu, (unsigned) bits),
				hi = __reduce_or_sync(0xffffffffu, (unsigned) (bits >> 32));

	if ((threadIdx.x & 31) == 0)
	{
		if (bad)
			flag[0] = 1;
		if (lo | hi)
			atomicOr(&flag[1], ((unsigned long long) hi << 32) | lo);
	}
}

/* ------------------------------------------------------------------------ */
/* The insertable state                                                      */
/* ------------------------------------------------------------------------ */

/* Grid for an elementwise kernel. */
static unsigned
grid(uint64_t n)
{
	return gi_gpu_grid(n, BLOCK);
}

/* Device bytes the image holds in all (for the memory limit). */
static uint64_t
held_bytes(const GpuImage *img)
{
	uint64_t	b = img->device_bytes + gi_gpu_btree_ins_bytes(img->ins);

	if (img->hdr.device_payloads)
		b += img->hdr.n * sizeof(uint64_t);
	return b;
}

/* Fail with GI_ERR_DEVICE_OOM if `more` bytes would pass the image's limit. */
static GiStatus
check_limit(const GpuImage *img, uint64_t more, const char *what, GiError *err)
{
	if (img->mem_limit && held_bytes(img) + more > img->mem_limit)
		return gi_set_error(err, GI_ERR_DEVICE_OOM,
							"%s needs %llu more bytes of device memory, over the limit of "
							"%zu bytes (gpuidx.device_memory_limit)", what,
							(unsigned long long) more, img->mem_limit);
	return GI_OK;
}

/* Give directory set d room for `need` leaves (a quarter more, so that
 * growth is rare); its contents are not kept. */
static GiStatus
dir_reserve(GpuImage *img, GpuDir *d, uint64_t need, GiError *err)
{
	uint64_t	cap = need + need / 4 + 64;
	DevBuf		nb,
				bb,
				mb;

	if (d->cap >= need && d->node)
		return GI_OK;
	CKS(check_limit(img, cap * (sizeof(uint32_t) + sizeof(uint64_t) + img->kw), "the leaf directory", err));
	CKS(gi_gpu_alloc(nb, cap * sizeof(uint32_t), "the leaf directory", err));
	CKS(gi_gpu_alloc(bb, (cap + 1) * sizeof(uint64_t), "the leaf directory", err));
	CKS(gi_gpu_alloc(mb, cap * img->kw, "the leaf max keys", err));
	gi_gpu_btree_dir_free(d);
	d->node = (uint32_t *) nb.release();
	d->base = (uint64_t *) bb.release();
	d->max = mb.release();
	d->cap = cap;
	return GI_OK;
}

/*
 * Make room for node ids below need: new segments (keys, and payloads when
 * kept) are attached to the host lists one by one, so that a failure leaves
 * every allocation owned by the state, then the device lists are rewritten.
 */
static GiStatus
reserve_nodes(GpuImage *img, uint64_t need, GiError *err)
{
	GpuIns	   *ins = img->ins;
	uint64_t	per = 1ull << ins->seg_shift;
	uint64_t	want = (need + per - 1) / per;
	uint64_t	seg_key = per * NODE_BYTES,
				seg_pay = ins->has_pay ? per * (NODE_BYTES / img->kw) * sizeof(uint64_t) : 0;

	if (want <= ins->nsegs)
		return GI_OK;
	if (want >= (1ull << (32 - ins->seg_shift)))
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"%llu leaf nodes are more than the GPU B+ tree indexes (2^32)",
							(unsigned long long) need);
	CKS(check_limit(img, (want - ins->nsegs) * (seg_key + seg_pay), "growing the node segments", err));
	if (want > ins->list_cap)
	{
		uint32_t	cap = (uint32_t) std::max<uint64_t>(want, std::max<uint64_t>(2 * ins->list_cap, 16));
		void	  **hk = (void **) realloc(ins->h_kseg, cap * sizeof(void *));

		if (!hk)
			return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for the segment list");
		ins->h_kseg = hk;
		uint64_t  **hp = (uint64_t **) realloc(ins->h_pseg, cap * sizeof(void *));

		if (!hp)
			return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for the segment list");
		ins->h_pseg = hp;
		for (uint32_t s = ins->list_cap; s < cap; s++)
			ins->h_kseg[s] = NULL, ins->h_pseg[s] = NULL;

		DevBuf		dk,
					dp;

		CKS(gi_gpu_alloc(dk, cap * sizeof(void *), "the segment list", err));
		CKS(gi_gpu_alloc(dp, cap * sizeof(void *), "the payload segment list", err));
		if (ins->d_kseg)
			cudaFree(ins->d_kseg);
		if (ins->d_pseg)
			cudaFree(ins->d_pseg);
		ins->d_kseg = (void **) dk.release();
		ins->d_pseg = (uint64_t **) dp.release();
		ins->list_cap = cap;
	}
	while (ins->nsegs < want)
	{
		DevBuf		k,
					p;
		uint32_t	s = ins->nsegs;

		CKS(gi_gpu_alloc(k, seg_key, "a node segment", err));
		ins->h_kseg[s] = k.release();
		ins->nsegs = s + 1;
		ins->seg_bytes += seg_key;
		if (seg_pay)
		{
			CKS(gi_gpu_alloc(p, seg_pay, "a payload segment", err));
			ins->h_pseg[s] = (uint64_t *) p.release();
			ins->seg_bytes += seg_pay;
		}
	}
	CK(cudaMemcpyAsync(ins->d_kseg, ins->h_kseg, ins->nsegs * sizeof(void *),
					   cudaMemcpyHostToDevice, img->stream));
	CK(cudaMemcpyAsync(ins->d_pseg, ins->h_pseg, ins->nsegs * sizeof(void *),
					   cudaMemcpyHostToDevice, img->stream));
	CK(cudaStreamSynchronize(img->stream));	/* the host lists may change next */
	return GI_OK;
}

/* Re-cut the internal levels from the directory's leaf max keys into the
 * spare arrays and swap them in (stage 7). */
static GiStatus
recut_inner(GpuImage *img, GiError *err)
{
	GpuIns	   *ins = img->ins;
	Geo			g = img->geo;
	uint64_t	cap = ins->inner_cap2;
	double		t0 = gi_now_ms();

	if (!ins->inner2 || ins->inner_cap2 < ins->nleaves / 16 + 2)
		CKS(check_limit(img, (ins->nleaves / 16 + 64) * (NODE_BYTES + 4), "the internal levels", err));
	CKS(gi_gpu_btree_build_inner(img->kw, img->stream, ins->dir.max, ins->nleaves, &g,
							   &ins->inner2, &ins->prefix2, &cap, err));
	ins->inner_cap2 = cap;
	if (g.inodes + ins->nleaves >= UINT32_MAX)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"more nodes than the GPU B+ tree indexes (2^32)");
	CK(cudaStreamSynchronize(img->stream));
	std::swap(img->d_nodes, ins->inner2);
	std::swap(img->d_prefix, ins->prefix2);
	std::swap(ins->inner_cap, ins->inner_cap2);
	g.n = img->hdr.n;
	g.leaf = Cut{ins->nleaves, 0, 0};
	img->geo = g;
	img->device_bytes = ins->inner_cap * NODE_BYTES + (ins->inner_cap + 1) * sizeof(uint32_t);
	img->inner_ms = gi_now_ms() - t0;
	return GI_OK;
}

/*
 * Create the insertable state from n sorted entries: a flat sorted array
 * (src_cut.nodes == 0: a batch into an empty image) or the static leaves
 * (the one-time conversion), with payloads in rank order or NULL.  Both
 * directory sets and both internal-level sets are allocated here, with
 * slack, so that batches allocate only their own scratch.
 */
template <class K>
static GiStatus
layout(GpuImage *img, const K *src, Cut src_cut, const uint64_t *src_pay, uint64_t n,
	   bool has_pay, GiError *err)
{
	GpuIns	   *ins;
	Cut			cut = gi_cut(n, Node<K>::F);
	int			shift = SEG_SHIFT_MIN;

	ins = (GpuIns *) calloc(1, sizeof(GpuIns));
	if (!ins)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for the insertable form");
	img->ins = ins;
	ins->kw = img->kw;
	/* the static internal levels are rebuilt: their arrays are the spare */
	ins->inner2 = img->d_nodes;
	ins->prefix2 = img->d_prefix;
	ins->inner_cap2 = img->d_nodes && img->d_prefix ? img->geo.inodes : 0;
	img->d_nodes = NULL;
	img->d_prefix = NULL;
	img->device_bytes = 0;
	while (shift < SEG_SHIFT_MAX && (1ull << shift) < cut.nodes / 8)
		shift++;				/* about eight segments to start with */
	ins->seg_shift = shift;
	ins->has_pay = has_pay;
	CKS(reserve_nodes(img, cut.nodes, err));
	CKS(dir_reserve(img, &ins->dir, cut.nodes, err));
	CKS(dir_reserve(img, &ins->spare, cut.nodes, err));
	layout_leaves_kernel<K><<<grid(cut.nodes * Node<K>::M), BLOCK, 0, img->stream>>>(
		src, src_cut, src_pay, n, cut, (K *const *) ins->d_kseg,
		has_pay ? ins->d_pseg : NULL, shift, ins->dir.node, ins->dir.base, (K *) ins->dir.max);
	CKL("layout_leaves_kernel");
	ins->nleaves = cut.nodes;
	ins->nnodes = cut.nodes;
	CKS(recut_inner(img, err));
	if (ins->inner_cap2 < ins->inner_cap)
	{							/* the static arrays are too small to be the spare */
		uint64_t	cap = 0;
		Geo			g = img->geo;

		if (ins->inner2)
			cudaFree(ins->inner2);
		if (ins->prefix2)
			cudaFree(ins->prefix2);
		ins->inner2 = NULL;
		ins->prefix2 = NULL;
		ins->inner_cap2 = 0;
		CKS(gi_gpu_btree_build_inner(img->kw, img->stream, ins->dir.max, ins->nleaves, &g,
								   &ins->inner2, &ins->prefix2, &cap, err));
		ins->inner_cap2 = cap;
	}
	CK(cudaStreamSynchronize(img->stream));
	if (img->d_leaves)
	{							/* the static leaves are no longer read */
		cudaFree(img->d_leaves);
		img->d_leaves = NULL;
	}
	if (img->top.table)
	{							/* nor is the static form's top table (nor
								 * its run table, in the same buffer) */
		cudaFree(img->top.table);
		memset(&img->top, 0, sizeof(img->top));
	}
	return GI_OK;
}

/* Rebuild hdr.device_payloads from the leaves (rank order). */
template <class K>
static GiStatus
refresh_payloads(GpuImage *img, GiError *err)
{
	GpuIns	   *ins = img->ins;
	DevBuf		out;
	double		t0 = gi_now_ms();

	if (!ins || !ins->has_pay || (!ins->payloads_stale && img->hdr.device_payloads))
		return GI_OK;
	/* the stale copy stays until the new one exists: a failure here leaves
	 * the image as it was */
	CKS(gi_gpu_alloc(out, img->hdr.n * sizeof(uint64_t), "the payloads in rank order", err));
	gather_leaf_slots_kernel<K, uint64_t><<<grid(ins->nleaves * Node<K>::M), BLOCK, 0, img->stream>>>(
		ins->d_pseg, ins->seg_shift, ins->dir.node, ins->dir.base, ins->nleaves,
		(uint64_t *) out.p);
	CKL("gather_leaf_slots_kernel (payloads)");
	CK(cudaStreamSynchronize(img->stream));
	if (img->hdr.device_payloads)
		cudaFree(img->hdr.device_payloads);
	img->hdr.device_payloads = out.release();
	ins->payloads_stale = false;
	img->refresh_ms = gi_now_ms() - t0;
	return GI_OK;
}

/* Free the rank-ordered key copy and the static copy (an insertion made
 * them stale; no query holds the image then). */
static void
drop_rank_keys(GpuIns *ins)
{
	if (ins->rank_keys)
		cudaFree(ins->rank_keys);
	ins->rank_keys = NULL;
	ins->rank_keys_bytes = 0;
	if (ins->snap)
	{
		gi_gpu_btree_static_free(ins->snap);
		free(ins->snap);
		ins->snap = NULL;
	}
}

/* Gather the keys in rank order from the leaves into out on stream st. */
template <class K>
static GiStatus
gather_keys(const GpuIns *ins, cudaStream_t st, K *out, GiError *err)
{
	gather_leaf_slots_kernel<K, K><<<grid(ins->nleaves * Node<K>::M), BLOCK, 0, st>>>(
		(K *const *) ins->d_kseg, ins->seg_shift, ins->dir.node, ins->dir.base, ins->nleaves, out);
	CKL("gather_leaf_slots_kernel (keys)");
	return GI_OK;
}

/*
 * Gather the keys in rank order from the leaves into ins->rank_keys unless
 * it is there (device aggregation reads keys by position; every insertion
 * drops it).
 */
template <class K>
static GiStatus
refresh_rank_keys(GpuImage *img, GiError *err)
{
	GpuIns	   *ins = img->ins;
	DevBuf		out;

	if (ins->rank_keys)
		return GI_OK;
	if (img->mem_limit &&
		held_bytes(img) + img->hdr.n * sizeof(K) > img->mem_limit)
		return gi_set_error(err, GI_ERR_DEVICE_OOM,
							"the keys in rank order (%llu bytes) would pass the device memory "
							"limit of %zu bytes (gpuidx.device_memory_limit)",
							(unsigned long long) (img->hdr.n * sizeof(K)), img->mem_limit);
	CKS(gi_gpu_alloc(out, (img->hdr.n ? img->hdr.n : 1) * sizeof(K), "the keys in rank order", err));
	CKS(gather_keys<K>(ins, img->stream, (K *) out.p, err));
	CK(cudaStreamSynchronize(img->stream));
	ins->rank_keys = out.release();
	ins->rank_keys_bytes = img->hdr.n * sizeof(K);
	return GI_OK;
}

/*
 * Build the static copy of an insertable image on stream st: the keys
 * gathered in rank order (or the rank-ordered copy, when aggregation made
 * one), laid out by gi_gpu_btree_static_build.  Out of device memory, it
 * gives *out = NULL and GI_OK: the query reads the directory instead.
 */
template <class K>
static GiStatus
build_snapshot(GpuImage *img, cudaStream_t st, GpuStatic **out, GiError *err)
{
	GpuIns	   *ins = img->ins;
	DevBuf		keys;
	const K    *sorted = (const K *) ins->rank_keys;
	GpuStatic  *snap;
	GiStatus	rc;

	*out = NULL;
	if (!sorted)
	{
		if (gi_gpu_alloc(keys, img->hdr.n * sizeof(K), "the keys in rank order", err) != GI_OK)
		{
			if (err->status != GI_ERR_DEVICE_OOM)
				return err->status;
			gi_clear_error(err);
			return GI_OK;
		}
		CKS(gather_keys<K>(ins, st, (K *) keys.p, err));
		sorted = (const K *) keys.p;
	}
	snap = (GpuStatic *) calloc(1, sizeof(GpuStatic));
	if (!snap)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory");
	rc = gi_gpu_btree_static_build(sizeof(K), sorted, img->hdr.n, st, snap, err);
	if (rc != GI_OK)
	{
		free(snap);
		if (rc != GI_ERR_DEVICE_OOM)
			return rc;
		gi_clear_error(err);
		return GI_OK;
	}
	*out = snap;
	return GI_OK;
}

/* gi_gpu_btree_snapshot (gpu_btree.cuh). */
GiStatus
gi_gpu_btree_snapshot(const GiImage *image, cudaStream_t st, const GpuStatic **out,
					  GiError *err)
{
	/* queries share the image read-only; the copy is a cache they fill */
	GpuImage   *img = (GpuImage *) image;
	GpuIns	   *ins = img->ins;
	static std::mutex snap_lock;
	GpuStatic  *snap;

	*out = __atomic_load_n(&ins->snap, __ATOMIC_ACQUIRE);
	if (*out || img->hdr.n == 0 || img->broken)
		return GI_OK;

	/* one query builds it; the others read the directory meanwhile */
	std::unique_lock<std::mutex> guard(snap_lock, std::try_to_lock);

	if (!guard.owns_lock())
		return GI_OK;
	if ((*out = ins->snap) != NULL)
		return GI_OK;
	if (img->mem_limit &&
		held_bytes(img) + img->hdr.n * (uint64_t) img->kw * 3 > img->mem_limit)
		return GI_OK;			/* (the copy, about 1.05x the keys, and the
								 * gathered keys while it is built) */
	if (img->kw == 4)
		CKS(build_snapshot<int32_t>(img, st, &snap, err));
	else
		CKS(build_snapshot<int64_t>(img, st, &snap, err));
	if (snap)
		__atomic_store_n(&ins->snap, snap, __ATOMIC_RELEASE);
	*out = snap;
	return GI_OK;
}

/* Bytes of an arena piece (256-byte aligned, as cudaMalloc's). */
static size_t
span(size_t bytes)
{
	return (bytes + 255) & ~(size_t) 255;
}

/* One device allocation carved into a batch's scratch arrays, so that a
 * batch costs two cudaMalloc calls whatever its stages need. */
struct Arena
{
	DevBuf		buf;
	size_t		used = 0;

	/* The next piece of count Ts. */
	template <class T> T *take(size_t count)
	{
		T		   *p = (T *) ((char *) buf.p + used);

		used += span(count * sizeof(T));
		return p;
	}
};

/*
 * Sort the batch by (key, payload) into bk / bp.  CUB's radix sort is
 * stable: one key sort carrying the payloads is enough unless equal keys
 * came with payloads out of order; then by payload first, then by key.
 */
template <class K>
static GiStatus
sort_batch(GpuImage *img, const K *keys, const uint64_t *pays, uint64_t b, K *bk,
		   uint64_t *bp, void *temp, size_t temp_bytes, unsigned long long *flag, GiError *err)
{
	cudaStream_t st = img->stream;
	size_t		tb = temp_bytes;
	unsigned long long h[2] = {0, 0};
	DevBuf		tk,
				tp;

	if (!pays)
	{
		CK(cub::DeviceRadixSort::SortKeys(temp, tb, keys, bk, (int64_t) b, 0, (int) sizeof(K) * 8, st));
		return GI_OK;
	}
	CK(cub::DeviceRadixSort::SortPairs(temp, tb, keys, bk, pays, bp, (int64_t) b, 0,
									   (int) sizeof(K) * 8, st));
	CK(cudaMemsetAsync(flag, 0, 2 * sizeof(unsigned long long), st));
	ties_unordered_kernel<K><<<grid(b), BLOCK, 0, st>>>(bk, bp, b, flag);
	CKL("ties_unordered_kernel");
	CK(cudaMemcpyAsync(h, flag, sizeof(h), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	if (!h[0])
		return GI_OK;
	CKS(gi_gpu_alloc(tk, b * sizeof(K), "the batch sort", err));
	CKS(gi_gpu_alloc(tp, b * sizeof(uint64_t), "the batch sort", err));
	tb = temp_bytes;
	CK(cub::DeviceRadixSort::SortPairs(temp, tb, pays, (uint64_t *) tp.p, keys, (K *) tk.p,
									   (int64_t) b, 0, h[1] ? 64 - __builtin_clzll(h[1]) : 1, st));
	tb = temp_bytes;
	CK(cub::DeviceRadixSort::SortPairs(temp, tb, (const K *) tk.p, bk, (const uint64_t *) tp.p,
									   bp, (int64_t) b, 0, (int) sizeof(K) * 8, st));
	CK(cudaStreamSynchronize(st));
	return GI_OK;
}

/*
 * The whole insertion of b entries on the device, for one key type: sort
 * (unless sorted), convert a static image once, then stages 2-7 of the
 * header comment.  Timings go to img->last_insert.
 */
template <class K>
static GiStatus
insert_dev(GpuImage *img, const K *keys, const uint64_t *pays, uint64_t b, bool sorted,
		   GiError *err)
{
	constexpr int M = Node<K>::M;
	cudaStream_t st = img->stream;
	Arena		A1,
				A2,
				A3;
	const K    *bk = keys;
	const uint64_t *bp = pays;
	size_t		tb_sort = 0,
				tb_rle = 0,
				tb1,
				tb2 = 0,
				tb3 = 0,
				tb_tmp;
	uint32_t	R = 0,
				A = 0;
	unsigned long long fresh = 0;
	K			ends[2];
	double		t0 = gi_now_ms(),
				t1,
				t2;

	img->last_insert.sort_ms = img->last_insert.search_ms = img->last_insert.build_ms = 0;
	img->inner_ms = 0;

	/* Stage 1 (and the arena for every batch-sized array). */
	if (!sorted && pays)
	{
		CK(cub::DeviceRadixSort::SortPairs(nullptr, tb_tmp, (const K *) NULL, (K *) NULL,
										   (const uint64_t *) NULL, (uint64_t *) NULL,
										   (int64_t) b, 0, (int) sizeof(K) * 8, st));
		tb_sort = tb_tmp;
		CK(cub::DeviceRadixSort::SortPairs(nullptr, tb_tmp, (const uint64_t *) NULL, (uint64_t *) NULL,
										   (const K *) NULL, (K *) NULL, (int64_t) b, 0, 64, st));
		tb_sort = std::max(tb_sort, tb_tmp);
	}
	else if (!sorted)
		CK(cub::DeviceRadixSort::SortKeys(nullptr, tb_sort, (const K *) NULL, (K *) NULL,
										  (int64_t) b, 0, (int) sizeof(K) * 8, st));
	CK(cub::DeviceRunLengthEncode::Encode(nullptr, tb_rle, (const uint32_t *) NULL, (uint32_t *) NULL,
										  (uint32_t *) NULL, (uint32_t *) NULL, (int64_t) b, st));
	tb1 = std::max(tb_sort, tb_rle);
	CKS(gi_gpu_alloc(A1.buf, (sorted ? 0 : span(b * sizeof(K)) + (pays ? span(b * 8) : 0)) +
				  3 * span(b * sizeof(uint32_t)) + 3 * span(8) + span(tb1),
				  "the batch scratch", err));
	K		   *sk = sorted ? NULL : A1.take<K>(b);
	uint64_t   *sp = (sorted || !pays) ? NULL : A1.take<uint64_t>(b);
	uint32_t   *leaf_of = A1.take<uint32_t>(b);
	uint32_t   *U = A1.take<uint32_t>(b);
	uint32_t   *C = A1.take<uint32_t>(b);
	uint32_t   *nruns = A1.take<uint32_t>(1);
	unsigned long long *d_fresh = A1.take<unsigned long long>(1);
	unsigned long long *flag = A1.take<unsigned long long>(2);
	void	   *temp1 = A1.take<char>(tb1);

	if (!sorted)
	{
		CKS(sort_batch<K>(img, keys, pays, b, sk, sp, temp1, tb1, flag, err));
		bk = sk;
		bp = sp;
	}
	CK(cudaStreamSynchronize(st));
	t1 = gi_now_ms();
	img->last_insert.sort_ms = t1 - t0;

	if (!img->ins && img->hdr.n == 0)
	{							/* an empty image: lay the batch out as leaves */
		unsigned long long changes = 0;

		CK(cudaMemsetAsync(d_fresh, 0, sizeof(unsigned long long), st));
		gi_gpu_count_changes_kernel<K><<<grid(b), BLOCK, 0, st>>>(bk, b, d_fresh);
		CKL("gi_gpu_count_changes_kernel");
		CK(cudaMemcpyAsync(&changes, d_fresh, sizeof(changes), cudaMemcpyDeviceToHost, st));
		CK(cudaMemcpyAsync(&ends[0], bk, sizeof(K), cudaMemcpyDeviceToHost, st));
		CK(cudaMemcpyAsync(&ends[1], bk + b - 1, sizeof(K), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		img->hdr.n = b;
		img->geo.n = b;
		CKS(layout<K>(img, bk, Cut{0, 0, 0}, bp, b, bp != NULL, err));
		img->distinct = changes + 1;
		img->kmin = ends[0];
		img->kmax = ends[1];
		drop_rank_keys(img->ins);
		if (bp)
		{						/* engine.c tells payload images by this copy */
			img->ins->payloads_stale = true;
			CKS(refresh_payloads<K>(img, err));
		}
		img->last_insert.build_ms = gi_now_ms() - t1;
		img->last_insert.total_ms = gi_now_ms() - t0;
		return GI_OK;
	}
	if (!img->ins)
	{							/* the one-time conversion of a bulk-built image */
		CKS(layout<K>(img, (const K *) img->d_leaves, img->geo.leaf,
					  (const uint64_t *) img->hdr.device_payloads, img->hdr.n,
					  img->hdr.device_payloads != NULL, err));
		img->convert_ms = gi_now_ms() - t1;
		t1 = gi_now_ms();
	}

	GpuIns	   *ins = img->ins;
	uint64_t	nl = ins->nleaves,
				nl2;

	/* Stage 2: the leaf of every entry. */
	CK(cudaMemsetAsync(d_fresh, 0, sizeof(unsigned long long), st));
	find_leaves_kernel<K><<<grid(b), BLOCK, 0, st>>>(
		bk, bp, b, (const K *) img->d_nodes, img->d_prefix, img->geo.nint,
		(uint32_t) img->geo.inodes, (K *const *) ins->d_kseg, bp ? ins->d_pseg : NULL,
		ins->seg_shift, ins->dir.node, ins->dir.base, (uint32_t) nl, leaf_of, d_fresh);
	CKL("find_leaves_kernel");
	CK(cudaStreamSynchronize(st));
	t2 = gi_now_ms();
	img->last_insert.search_ms = t2 - t1;

	/* Stage 3: touched leaves and their new entry counts. */
	tb_tmp = tb1;
	CK(cub::DeviceRunLengthEncode::Encode(temp1, tb_tmp, (const uint32_t *) leaf_of, U, C, nruns,
										  (int64_t) b, st));
	CK(cudaMemcpyAsync(&R, nruns, sizeof(R), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&fresh, d_fresh, sizeof(fresh), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&ends[0], bk, sizeof(K), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&ends[1], bk + b - 1, sizeof(K), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));

	/* Stage 4: CountAddNodeNum and one scan to allocate the added nodes
	 * (and number the split leaves). */
	CK(cub::DeviceScan::ExclusiveSum(nullptr, tb2, (const uint64_t *) NULL, (uint64_t *) NULL,
									 (int64_t) R + 1, st));
	CK(cub::DeviceScan::ExclusiveSum(nullptr, tb3, (uint64_t *) NULL, (int64_t) (nl + b + 1), st));
	tb2 = std::max(tb2, tb3);
	CK(cub::DeviceScan::ExclusiveSum(nullptr, tb3, (uint32_t *) NULL, (int64_t) (nl + 1), st));
	tb2 = std::max(tb2, tb3);
	CK(cub::DeviceScan::ExclusiveSum(nullptr, tb3, (const uint32_t *) NULL, (uint32_t *) NULL,
									 (int64_t) R, st));
	tb2 = std::max(tb2, tb3);
	CKS(gi_gpu_alloc(A2.buf, 2 * span((R + 1) * sizeof(uint64_t)) + 2 * span((R + 1) * sizeof(uint32_t)) +
				  span((nl + 1) * sizeof(uint32_t)) + span(tb2), "the touched leaves' scratch", err));
	uint64_t   *cnt = A2.take<uint64_t>(R + 1);
	uint64_t   *offs = A2.take<uint64_t>(R + 1);
	uint32_t   *run_start = A2.take<uint32_t>(R + 1);
	uint32_t   *split = A2.take<uint32_t>(R + 1);
	uint32_t   *shift = A2.take<uint32_t>(nl + 1);
	void	   *temp2 = A2.take<char>(tb2);
	uint64_t	tot = 0;
	uint32_t	S;

	count_added_kernel<K><<<grid(R + 1), BLOCK, 0, st>>>(U, C, R, ins->dir.base, cnt);
	CKL("count_added_kernel");
	tb_tmp = tb2;
	CK(cub::DeviceScan::ExclusiveSum(temp2, tb_tmp, (const uint64_t *) cnt, offs,
									 (int64_t) R + 1, st));
	tb_tmp = tb2;
	CK(cub::DeviceScan::ExclusiveSum(temp2, tb_tmp, (const uint32_t *) C, run_start, (int64_t) R, st));
	CK(cudaMemcpyAsync(&tot, offs + R, sizeof(tot), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	A = (uint32_t) (tot >> 32);
	S = (uint32_t) tot;
	nl2 = nl + A;
	if (ins->nnodes + A >= UINT32_MAX || nl2 >= UINT32_MAX)
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"more leaf nodes than the GPU B+ tree indexes (2^32)");
	CKS(reserve_nodes(img, ins->nnodes + A, err));
	CKS(dir_reserve(img, &ins->spare, nl2, err));

	/* Stage 6 first: every old leaf's directory entry moved by its shift
	 * into the spare set (the merge overwrites the touched leaves' ones). */
	CK(cudaMemsetAsync(shift, 0, (nl + 1) * sizeof(uint32_t), st));
	scatter_added_kernel<<<grid(R), BLOCK, 0, st>>>(U, offs, R, shift, split);
	CKL("scatter_added_kernel");
	tb_tmp = tb2;
	CK(cub::DeviceScan::ExclusiveSum(temp2, tb_tmp, shift, (int64_t) nl + 1, st));
	move_leaves_kernel<K><<<grid(nl), BLOCK, 0, st>>>(
		shift, ins->dir.node, ins->dir.base, (const K *) ins->dir.max, nl, ins->spare.node,
		ins->spare.base, (K *) ins->spare.max);
	CKL("move_leaves_kernel");

	/* Stage 5: split leaves' old entries aside, then the merge: a warp per
	 * leaf that stays one node, a warp per node of the split ones. */
	if (S)
	{
		CKS(gi_gpu_alloc(A3.buf, span((uint64_t) S * M * sizeof(K)) + (bp ? span((uint64_t) S * M * 8) : 0),
					  "the split leaves' old entries", err));
		K		   *ak = A3.take<K>((uint64_t) S * M);
		uint64_t   *ap = bp ? A3.take<uint64_t>((uint64_t) S * M) : NULL;

		aside_split_kernel<K><<<grid((uint64_t) S * M), BLOCK, 0, st>>>(
			split, S, U, (K *const *) ins->d_kseg, bp ? ins->d_pseg : NULL, ins->seg_shift,
			ins->dir.node, ins->dir.base, ak, ap);
		CKL("aside_split_kernel");
		merge_split_kernel<K><<<grid(((uint64_t) S + A) * 32), BLOCK, 0, st>>>(
			bk, bp, U, C, run_start, offs, split, S, (uint64_t) S + A, ak, ap, ins->dir.node,
			ins->dir.base, ins->nnodes, (K *const *) ins->d_kseg, bp ? ins->d_pseg : NULL,
			ins->seg_shift, ins->spare.node, ins->spare.base, (K *) ins->spare.max);
		CKL("merge_split_kernel");
	}
	if (S < R)
	{
		merge_small_kernel<K><<<grid((uint64_t) R), BLOCK, 0, st>>>(
			bk, bp, U, C, run_start, offs, R, ins->dir.node, ins->dir.base,
			(K *const *) ins->d_kseg, bp ? ins->d_pseg : NULL, ins->seg_shift, ins->spare.node,
			ins->spare.base, (K *) ins->spare.max);
		CKL("merge_small_kernel");
	}

	/* Stage 6 last: counts to rank bases by one in-place scan. */
	CK(cudaMemsetAsync(ins->spare.base + nl2, 0, sizeof(uint64_t), st));
	tb_tmp = tb2;
	CK(cub::DeviceScan::ExclusiveSum(temp2, tb_tmp, ins->spare.base, (int64_t) nl2 + 1, st));
	CK(cudaStreamSynchronize(st));
	std::swap(ins->dir, ins->spare);
	ins->nleaves = nl2;
	ins->nnodes += A;
	img->hdr.n += b;
	img->geo.n = img->hdr.n;
	img->distinct += fresh;
	img->kmin = std::min<int64_t>(img->kmin, ends[0]);
	img->kmax = std::max<int64_t>(img->kmax, ends[1]);
	drop_rank_keys(ins);
	if (bp)
		ins->payloads_stale = true;

	/* Stage 7: the internal levels. */
	CKS(recut_inner(img, err));
	img->last_insert.build_ms = gi_now_ms() - t2;
	img->last_insert.total_ms = gi_now_ms() - t0;
	return GI_OK;
}

/* Validate, dispatch on the key width, and mark the image broken when an
 * insertion fails half-way. */
static GiStatus
insert_checked(GpuImage *img, const void *d_keys, const uint64_t *d_pays, size_t n,
			   bool sorted, GiError *err)
{
	GiStatus	st;
	bool		keeps;

	if (img->hdr.structure != GI_STRUCT_BTREE)	/* (before reading past hdr) */
		return gi_set_error(err, GI_ERR_UNSUPPORTED,
							"batch insertion into a %s image is not supported; rebuild it",
							gi_structure_name(img->hdr.structure));
	if (img->broken)
		return gi_set_error(err, GI_ERR_INVALID,
							"the image was left unusable by a failed insertion; free it and rebuild");
	keeps = img->ins ? img->ins->has_pay : img->hdr.device_payloads != NULL;
	if ((d_pays != NULL) != keeps)
		return gi_set_error(err, GI_ERR_INVALID,
							"insertion payloads must be given exactly when the image keeps payloads");
	if (n == 0)
		return GI_OK;
	if (n >= (1ull << 31))
		return gi_set_error(err, GI_ERR_UNSUPPORTED, "a batch of %zu entries is too large (2^31)", n);
	if (img->kw == 4)
		st = insert_dev<int32_t>(img, (const int32_t *) d_keys, d_pays, n, sorted, err);
	else
		st = insert_dev<int64_t>(img, (const int64_t *) d_keys, d_pays, n, sorted, err);
	if (st != GI_OK)
		img->broken = true;
	else
	{
		img->inserted += n;
		img->insert_batches++;
	}
	return st;
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

/* Batch insertion into a GPU B+ tree image from host arrays. */
GI_EXPORT GiStatus
gi_gpu_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
			  size_t n, GiError *err)
{
	GpuImage   *img = (GpuImage *) image;
	DevBuf		dk,
				dp;
	bool		bad = false;
	double		t0 = gi_now_ms(),
				xfer;
	GiStatus	st;

	CKS(gi_gpu_need_device(err));
	if (image->structure != GI_STRUCT_BTREE || img->broken || n == 0)
		return insert_checked(img, NULL, payloads, n, false, err);
	CKS(gi_gpu_alloc(dk, n * img->kw, "the batch keys", err));
	if (payloads)
		CKS(gi_gpu_alloc(dp, n * sizeof(uint64_t), "the batch payloads", err));
	CKS(gi_gpu_upload(dk.p, keys, n, img->kw, img->stream, &bad, err));
	if (payloads)
		CKS(gi_gpu_upload(dp.p, (const int64_t *) payloads, n, 8, img->stream, NULL, err));
	CK(cudaStreamSynchronize(img->stream));
	if (bad)					/* nothing changed yet: the image stays usable */
		return gi_set_error(err, GI_ERR_INVALID, "a key does not fit in %d bytes",
							img->hdr.key_bytes);
	xfer = gi_now_ms() - t0;
	st = insert_checked(img, dk.p, (const uint64_t *) dp.p, n, false, err);
	if (st != GI_OK)
		return st;
	img->last_insert.transfer_ms = xfer;
	img->last_insert.total_ms += xfer;
	return GI_OK;
}

/* Batch insertion from device-resident arrays (gpu_engine.cuh). */
GiStatus
gi_gpu_dev_insert(GiImage *image, const void *d_keys, const uint64_t *d_payloads,
				  size_t n, bool sorted, GiError *err)
{
	GiStatus	st;

	gi_clear_error(err);
	CKS(gi_gpu_need_device(err));
	st = insert_checked((GpuImage *) image, d_keys, d_payloads, n, sorted, err);
	if (st == GI_OK)
		((GpuImage *) image)->last_insert.transfer_ms = 0;
	return st;
}

/* Convert a bulk-built image to the insertable form (gpu_engine.cuh). */
GiStatus
gi_gpu_dev_make_insertable(GiImage *image, GiError *err)
{
	GpuImage   *img = (GpuImage *) image;
	GiStatus	st;
	double		t0 = gi_now_ms();

	gi_clear_error(err);
	CKS(gi_gpu_need_device(err));
	if (image->structure != GI_STRUCT_BTREE)
		return gi_set_error(err, GI_ERR_UNSUPPORTED, "only B+ tree images become insertable");
	if (img->broken)
		return gi_set_error(err, GI_ERR_INVALID,
							"the image was left unusable by a failed insertion; free it and rebuild");
	if (img->ins || img->hdr.n == 0)
		return GI_OK;
	if (img->kw == 4)
		st = layout<int32_t>(img, (const int32_t *) img->d_leaves, img->geo.leaf,
							 (const uint64_t *) img->hdr.device_payloads, img->hdr.n,
							 img->hdr.device_payloads != NULL, err);
	else
		st = layout<int64_t>(img, (const int64_t *) img->d_leaves, img->geo.leaf,
							 (const uint64_t *) img->hdr.device_payloads, img->hdr.n,
							 img->hdr.device_payloads != NULL, err);
	if (st != GI_OK)
		img->broken = true;
	else
		img->convert_ms = gi_now_ms() - t0;
	return st;
}

/* Timings of the last insertion's parts (gpu_engine.cuh). */
void
gi_gpu_dev_insert_stats(const GiImage *image, double *inner_ms, double *convert_ms,
						double *refresh_ms)
{
	const GpuImage *img = (const GpuImage *) image;

	*inner_ms = img->inner_ms;
	*convert_ms = img->convert_ms;
	*refresh_ms = img->refresh_ms;
}

/* Refresh the rank-ordered payload copy when insertions made it stale. */
GiStatus
gi_gpu_btree_refresh_payloads(GiImage *image, GiError *err)
{
	/* one lock for every image: a refresh is rare (once after insertions) */
	static std::mutex refresh_lock;
	GpuImage   *img = (GpuImage *) image;

	if (image->structure != GI_STRUCT_BTREE || !img->ins)
		return GI_OK;
	if (img->broken)
		return gi_set_error(err, GI_ERR_INVALID,
							"the image was left unusable by a failed insertion; free it and rebuild");

	/*
	 * Selections may run on one image at once (engine.h): the first to come
	 * rebuilds the copy, the others wait for it and find it fresh.
	 */
	std::lock_guard<std::mutex> guard(refresh_lock);

	if (img->kw == 4)
		return refresh_payloads<int32_t>(img, err);
	return refresh_payloads<int64_t>(img, err);
}

/* How a kernel reads keys by position (gpu_btree.cuh). */
GiStatus
gi_gpu_btree_key_view(GiImage *image, GiKeyView *view, GiError *err)
{
	GpuImage   *img = (GpuImage *) image;

	memset(view, 0, sizeof(*view));
	view->kw = img->kw;
	if (img->broken)
		return gi_set_error(err, GI_ERR_INVALID,
							"the image was left unusable by a failed insertion; free it and rebuild");
	if (!img->ins)
	{							/* the static leaf level, read by the cut */
		view->leaves = img->d_leaves;
		view->ave = img->geo.leaf.ave;
		view->h = img->geo.leaf.h;
		return GI_OK;
	}

	/*
	 * Aggregations may run on one image at once, as selections: the first
	 * to come gathers the copy, the others wait for it and find it there.
	 */
	static std::mutex gather_lock;
	std::lock_guard<std::mutex> guard(gather_lock);

	if (img->kw == 4)
		CKS(refresh_rank_keys<int32_t>(img, err));
	else
		CKS(refresh_rank_keys<int64_t>(img, err));
	view->dense = img->ins->rank_keys;
	return GI_OK;
}

/* gi_gpu_dev_refresh_payloads: the same, for benchmarks. */
GiStatus
gi_gpu_dev_refresh_payloads(GiImage *image, GiError *err)
{
	return gi_gpu_btree_refresh_payloads(image, err);
}
