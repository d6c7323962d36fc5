/*
 * customscan.h - what the two halves of GpuIndexScan share
 * (customscan_plan.c builds the plan, customscan_exec.c runs it); private
 * to them.
 */
#ifndef GPUIDX_CUSTOMSCAN_H
#define GPUIDX_CUSTOMSCAN_H

#include "nodes/extensible.h"

/*
 * The plan node's custom_private list, by position; custom_exprs holds the
 * batch clauses (ANDed).
 */
typedef enum GpuidxCustomPrivate
{
	GPUIDX_CSCAN_INDEXOID = 0,	/* the gpuidx index (Integer) */
	GPUIDX_CSCAN_KEYONLY_ATTNO = 1, /* > 0: key-only, the key's column */
	GPUIDX_CSCAN_MAX_ATTNO = 2	/* columns the plan reads; -1: all */
} GpuidxCustomPrivate;

/* The plan node's methods: CreateCustomScanState (customscan_exec.c). */
extern const CustomScanMethods gpuidx_scan_methods;

#endif							/* GPUIDX_CUSTOMSCAN_H */
