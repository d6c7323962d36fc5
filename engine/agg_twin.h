/*
 * agg_twin.h - the per-entry arithmetic of adding up index entries
 * (GpuIndexAgg), one source for the CPU twin (engine/cpu_agg.c) and the
 * GPU twin (cuda/gpu_agg.cu): the visibility test of an entry's heap
 * block, the NULL test of a column bitmap, and the 64-bit halves a value's
 * sum is kept in, so that both twins count, pick and add exactly alike.
 * Plain C, no PostgreSQL.
 */
#ifndef GPUIDX_AGG_TWIN_H
#define GPUIDX_AGG_TWIN_H

#include "twin.h"

#include <stdbool.h>

/*
 * Is heap block blk all-visible in a copy of the visibility map?  2 bits a
 * block, block b's all-visible bit at bit 2 * (b % 4) of byte b / 4 (the
 * map's on-disk layout); blocks vm_blocks and past are not.  With vm_full
 * every block below vm_blocks is (the bitmap is then not read).
 */
GI_HD bool
gi_agg_block_visible(const uint8_t *vm, uint64_t vm_blocks, bool vm_full,
					 uint64_t blk)
{
	if (blk >= vm_blocks)
		return false;
	if (vm_full)
		return true;
	return ((vm[blk >> 2] >> ((blk & 3) << 1)) & 1) != 0;
}

/* The heap block of a packed TID (block << 16 | offset). */
GI_HD uint64_t
gi_agg_tid_block(uint64_t tid)
{
	return tid >> 16;
}

/* Is entry i's bit set in a bitmap (bit i % 8 of byte i / 8)? */
GI_HD bool
gi_agg_bit(const uint8_t *bits, uint64_t i)
{
	return ((bits[i >> 3] >> (i & 7)) & 1) != 0;
}

/*
 * A value's share of a sum kept as two 64-bit halves: its high 32 bits
 * (signed) and its low 32 bits (unsigned).  Neither half sum can overflow
 * over 2^31 values, and no 128-bit add runs per value; the total is
 * hi * 2^32 + lo (gi_agg_join on the host).
 */
GI_HD int64_t
gi_agg_hi(int64_t x)
{
	return x >> 32;
}

GI_HD uint64_t
gi_agg_lo(int64_t x)
{
	return (uint64_t) x & 0xffffffffu;
}

/* The 128-bit total of the two half sums (host code only). */
static inline __int128
gi_agg_join(int64_t hi, uint64_t lo)
{
	return (__int128) hi * ((__int128) 1 << 32) + (__int128) lo;
}

#endif							/* GPUIDX_AGG_TWIN_H */
