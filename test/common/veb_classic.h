/*
 * veb_classic.h - the classic van Emde Boas insertion build (Algorithm 2 of
 * Mayr et al.), one key at a time with a dynamic allocation per cluster.
 * It is the build-time baseline of the parallel build in engine/cpu_veb.c,
 * for bench/veb and the unit tests only (test/common/veb_classic.c; not in
 * the module): images are built through engine.h (structure GI_STRUCT_VEB).  Both trees use 16-bit bitmaps for clusters of
 * word length 4 and hash tables for children, so that the comparison is of
 * the build methods.  No PostgreSQL headers here.
 */
#ifndef GPUIDX_VEB_CLASSIC_H
#define GPUIDX_VEB_CLASSIC_H

#include "engine.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct GiVebInsertTree GiVebInsertTree;

/*
 * Insert n keys (any order, duplicates ignored) of key_bytes width one at a
 * time into an empty tree (universe of 32 bits for 2 and 4 bytes, 64 for 8).
 */
GiStatus	gi_veb_insert_build(const int64_t *keys, size_t n, int key_bytes,
								GiVebInsertTree **out, GiError *err);

/* Largest key <= p into *key; false when there is none. */
bool		gi_veb_insert_pred(const GiVebInsertTree *t, int64_t p, int64_t *key);

/* Smallest key >= p into *key; false when there is none. */
bool		gi_veb_insert_succ(const GiVebInsertTree *t, int64_t p, int64_t *key);

/* Is p a key of the tree? */
bool		gi_veb_insert_exists(const GiVebInsertTree *t, int64_t p);

/* Bytes allocated for the tree (clusters and their hash tables). */
uint64_t	gi_veb_insert_bytes(const GiVebInsertTree *t);

/* Free the tree; NULL is fine. */
void		gi_veb_insert_free(GiVebInsertTree *t);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIDX_VEB_CLASSIC_H */
