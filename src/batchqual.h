/*
 * batchqual.h - quals on a gpuidx key as one batch of key intervals
 * (batchqual.c): which clauses a batch can answer (planner), and their
 * evaluation into a sorted interval list (executor).  Shared by GpuIndexScan
 * (customscan_*.c) and GpuIndexAgg (customagg_*.c).
 */
#ifndef GPUIDX_BATCHQUAL_H
#define GPUIDX_BATCHQUAL_H

#include "postgres.h"

#include "keyinterval.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

/* A batch clause prepared for evaluation. */
typedef struct GpuidxBatchTerm
{
	int			kind;			/* 'c' comparison, 'a' = ANY, '|' OR, '&' AND */
	int			strategy;		/* for 'c': btree strategy with the key on the left */
	ExprState  *value;			/* for 'c' and 'a': the scan-constant side */
	Oid			value_type;		/* its type (element type for 'a') */
	List	   *children;		/* for '|' and '&' */
} GpuidxBatchTerm;

/* planner */
extern Node *gpuidx_batch_clause(PlannerInfo *root, Node *clause,
								 IndexOptInfo *index, Index relid,
								 Relids *outer);
extern double gpuidx_clause_probes(Node *clause);
extern void gpuidx_restriction_batch(PlannerInfo *root, RelOptInfo *rel,
									 IndexOptInfo *index, List **batch,
									 List **exact);

/* executor */
extern List *gpuidx_prepare_batch(List *clauses, PlanState *ps, Oid opfamily);
extern GpuidxIntervals gpuidx_eval_batch(List *terms, ExprContext *econtext);

#endif							/* GPUIDX_BATCHQUAL_H */
