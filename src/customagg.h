/*
 * customagg.h - what the two halves of GpuIndexAgg share
 * (customagg_plan.c builds the plan, customagg_exec.c runs it); private to
 * them.
 *
 * The plan node is a CustomScan with scanrelid 0:
 *   custom_scan_tlist  the aggregates (Aggrefs over the table), then the
 *                      table's key column (a Var, so that setrefs.c can
 *                      point the batch clauses' key at the scan tuple);
 *   custom_exprs       the batch clauses (ANDed), all answered exactly;
 *   qual               the query's HAVING clause, if any;
 *   custom_private     GpuidxAggPrivate below.
 * The scan tuple holds one row: each aggregate's result, and NULL for the
 * key column.
 */
#ifndef GPUIDX_CUSTOMAGG_H
#define GPUIDX_CUSTOMAGG_H

#include "nodes/extensible.h"

/* What one aggregate computes (GpuidxAggSpec.func). */
typedef enum GpuidxAggFunc
{
	GPUIDX_AGG_COUNT_STAR,		/* count(*) */
	GPUIDX_AGG_COUNT,			/* count(c) */
	GPUIDX_AGG_SUM,				/* sum(c), c an integer column */
	GPUIDX_AGG_AVG,				/* avg(c), c an integer column */
	GPUIDX_AGG_MIN,
	GPUIDX_AGG_MAX,
	GPUIDX_AGG_BOOL_AND,		/* bool_and(c), every(c) */
	GPUIDX_AGG_BOOL_OR			/* bool_or(c) */
} GpuidxAggFunc;

/* Where an aggregate's argument comes from (GpuidxAggSpec.src). */
#define GPUIDX_AGG_SRC_NONE		(-2)	/* count(*) */
#define GPUIDX_AGG_SRC_KEY		(-1)	/* the index key */
/* 0..15: the index's INCLUDE column of that number */

/*
 * The plan node's custom_private list, by position.  GPUIDX_CAGG_SPECS is
 * a list with one IntList (func, src, base type of the argument) per
 * aggregate, in custom_scan_tlist order.
 */
typedef enum GpuidxAggPrivate
{
	GPUIDX_CAGG_INDEX = 0,		/* the gpuidx index (Integer) */
	GPUIDX_CAGG_TABLE = 1,		/* its table (Integer) */
	GPUIDX_CAGG_RTE = 2,		/* the table's range table entry (permissions) */
	GPUIDX_CAGG_SPECS = 3,
	GPUIDX_CAGG_PARTIAL = 4		/* over a join: one worker's partial states
								 * (Integer; absent: final values) */
} GpuidxAggPrivate;

/* The plan node's methods: CreateCustomScanState (customagg_exec.c). */
extern const CustomScanMethods gpuidx_agg_methods;

#endif							/* GPUIDX_CUSTOMAGG_H */
