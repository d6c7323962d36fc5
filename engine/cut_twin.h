/*
 * cut_twin.h - the CUBPT cut formulas of the B+ tree, one source for the CPU
 * engine (engine/cpu_btree.c, cpu_insert.c) and the GPU engine
 * (cuda/gpu_btree.cu, gpu_insert.cu).  K items go into
 * node_num = ceil(K / m) nodes (formula 1), the first h holding
 * ave = ceil(K / node_num) items and the rest ave - 1, with
 * h = K - node_num * (ave - 1) (formula 2).
 */
#ifndef GPUIDX_CUT_TWIN_H
#define GPUIDX_CUT_TWIN_H

#include "twin.h"

/* One level cut: items spread over nodes. */
typedef struct GiCut
{
	uint64_t	nodes;			/* node_num */
	uint64_t	ave;			/* items in each of the first h nodes */
	uint64_t	h;
} GiCut;

/* Cut K items into nodes of at most m items (formulas 1 and 2); K = 0
 * gives no nodes. */
GI_HD GiCut
gi_cut(uint64_t k, uint64_t m)
{
	GiCut		c;

	c.nodes = (k + m - 1) / m;
	c.ave = c.nodes ? (k + c.nodes - 1) / c.nodes : 0;
	c.h = k - c.nodes * (c.ave ? c.ave - 1 : 0);
	return c;
}

/* Index of the first item of node j in a level cut by (ave, h). */
GI_HD uint64_t
gi_cut_start(uint64_t j, uint64_t ave, uint64_t h)
{
	return j * (ave - 1) + (j < h ? j : h);
}

/* Node and slot of item r in a level cut by (ave, h): the inverse of
 * gi_cut_start (the first h nodes hold ave items, the rest ave - 1). */
GI_HD void
gi_cut_locate(uint64_t r, uint64_t ave, uint64_t h, uint64_t *node, uint32_t *slot)
{
	uint64_t	big = h * ave;

	if (r < big)
	{
		*node = r / ave;
		*slot = (uint32_t) (r % ave);
	}
	else
	{
		*node = h + (r - big) / (ave - 1);
		*slot = (uint32_t) ((r - big) % (ave - 1));
	}
}

#endif							/* GPUIDX_CUT_TWIN_H */
