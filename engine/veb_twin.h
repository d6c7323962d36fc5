/*
 * veb_twin.h - the van Emde Boas arithmetic both engines share, one source
 * for engine/cpu_veb.c and cuda/gpu_veb.cu: the universe's words and slots,
 * the cluster record, the hash of the child tables, their size and the
 * prefix search of the build.  engine/cpu_veb.c's header describes the
 * layout (Mayr et al.).
 */
#ifndef GPUIDX_VEB_TWIN_H
#define GPUIDX_VEB_TWIN_H

#include "twin.h"

#define NONE32			0xFFFFFFFFu
#define NONE64			0xFFFFFFFFFFFFFFFFull
#define MAX_BITS		31		/* first-element bits for W = 64 */
#define LINEAR_STEPS	8		/* keys compared before a binary search */

/*
 * Hash-table fill ratio, in percent of the slots: 50 keeps a miss at about
 * 2.5 probes under linear probing; the bound of Eq. 9 already overestimates
 * small clusters.
 */
#ifndef VEB_FILL_PERCENT
#define VEB_FILL_PERCENT	50
#endif

/* One cluster of word length >= 8 (32 bytes). */
typedef struct VebCluster
{
	uint32_t	min;			/* word of the minimum (bits [s, s + w)) */
	uint32_t	max;			/* word of the maximum */
	uint32_t	first;			/* distinct index of the minimum (a) */
	uint32_t	last;			/* b - 1: the maximum's index on the root's
								 * chain of children */
	uint32_t	summary;		/* summary cluster, or its bitmap when w = 8;
								 * NONE32 (0 for w = 8) when single-valued */
	uint32_t	slots;			/* hash-table slots; 0 = no children */
	uint64_t	table;			/* index of the first slot */
} VebCluster;

/* Mask of the low w bits, w <= 64. */
GI_HD uint64_t
low_mask(int w)
{
	return w >= 64 ? NONE64 : ((1ull << w) - 1);
}

/* Bits [s, s + w) of the W-bit word x, counted from the left. */
GI_HD uint64_t
word_at(uint64_t x, int s, int w, int W)
{
	return (x >> (W - s - w)) & low_mask(w);
}

/* Order-preserving map of a signed key to the W-bit universe. */
GI_HD uint64_t
map_key(int64_t k, int W)
{
	if (W == 32)
		return (uint64_t) ((uint32_t) (int32_t) k ^ 0x80000000u);
	return (uint64_t) k ^ (1ull << 63);
}

/* First-element bit of slot j on level L (Fig. 4). */
GI_HD int
slot_bit(int L, int j)
{
	return (1 << L) - 1 + j;
}

/* All first-element bits of level L. */
GI_HD uint32_t
level_bits(int L)
{
	return (uint32_t) ((1ull << (1 << L)) - 1) << ((1 << L) - 1);
}

/* Highest set bit of a non-zero 32-bit word. */
GI_HD uint32_t
top_bit(uint32_t bits)
{
#ifdef __CUDA_ARCH__
	return 31 - (uint32_t) __clz((int) bits);
#else
	return 31 - (uint32_t) __builtin_clz(bits);
#endif
}

/* Lowest set bit of a non-zero 32-bit word. */
GI_HD uint32_t
low_bit(uint32_t bits)
{
#ifdef __CUDA_ARCH__
	return (uint32_t) __ffs((int) bits) - 1;
#else
	return (uint32_t) __builtin_ctz(bits);
#endif
}

/*
 * Set bits of a 32-bit word.  Portable host builds have no popcnt
 * instruction and __builtin_popcount becomes a library call; this is a few
 * inline ops.  The device has its own instruction.
 */
GI_HD int
popcount32(uint32_t v)
{
#ifdef __CUDA_ARCH__
	return __popc(v);
#else
	v = v - ((v >> 1) & 0x55555555u);
	v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
	v = (v + (v >> 4)) & 0x0F0F0F0Fu;
	return (int) ((v * 0x01010101u) >> 24);
#endif
}

/* Table slot for key in a table of slots entries (universal hash with the
 * image's constants a and b: ((a * key + b) >> 32) scaled to slots). */
GI_HD uint32_t
hash_slot(uint64_t a, uint64_t b, uint32_t key, uint32_t slots)
{
	uint32_t	h = (uint32_t) ((a * key + b) >> 32);

	return (uint32_t) (((uint64_t) h * slots) >> 32);
}

/*
 * A hash-table slot, 64 bits, 0 when empty.  A child cluster (w >= 8): the
 * child's high half key in the low 32 bits, cluster number + 1 in the high
 * 32.  A child bitmap (w = 4): the bitmap in bits 0-15, its 4-bit key in
 * bits 16-19, the distinct index of its first value in the high 32 bits.
 */
typedef uint64_t VebSlot;

/* Key (0..15) of a child bitmap slot. */
GI_HD uint32_t
slot_key(uint64_t e)
{
	return (uint32_t) ((e >> 16) & 15);
}

/* Bitmap of a child bitmap slot (a 64-bit table entry). */
GI_HD uint32_t
slot_bits(uint64_t e)
{
	return (uint32_t) (e & 0xFFFF);
}

/* Distinct index of the first value of a child bitmap slot. */
GI_HD uint32_t
slot_first(uint64_t e)
{
	return (uint32_t) (e >> 32);
}

/* Slots of a table for at most children entries (fill ratio, one free). */
GI_HD uint32_t
table_size(uint64_t children)
{
	uint64_t	slots = (children * 100 + VEB_FILL_PERCENT - 1) / VEB_FILL_PERCENT;

	if (children == 0)
		return 0;
	if (slots <= children)
		slots = children + 1;
	return slots > 0xFFFFFFFFull ? 0xFFFFFFFFu : (uint32_t) slots;
}

/* splitmix64 step: the image's hash constants. */
GI_HD uint64_t
splitmix(uint64_t *state)
{
	uint64_t	z = (*state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/*
 * First index after i whose bits [0, pb) differ from x[i]'s, or nd (Eq. 8):
 * a few neighbours, then a binary search for the next prefix.
 */
GI_HD uint64_t
prefix_end(const uint64_t *x, uint64_t nd, uint64_t i, int pb, int W)
{
	int			sh = W - pb;
	uint64_t	pfx;
	uint64_t	target;
	uint64_t	lo;
	uint64_t	hi;
	uint64_t	k;

	if (pb == 0)
		return nd;
	pfx = x[i] >> sh;
	for (k = i + 1; k < nd && k <= i + LINEAR_STEPS; k++)
		if ((x[k] >> sh) != pfx)
			return k;
	if (k >= nd || pfx == low_mask(pb))
		return nd;
	target = (pfx + 1) << sh;
	lo = k;
	hi = nd;
	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (x[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif							/* GPUIDX_VEB_TWIN_H */
