/*
 * cpu_insert.c - CUBPT batch insertion for the CPU engine (placeholder until
 * the insertion lands: it answers GI_ERR_UNSUPPORTED so callers rebuild).
 */
#include "cpu_engine.h"

/* Batch insertion into a CPU B+ tree image. */
GiStatus
gi_cpu_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
			  size_t n, GiError *err)
{
	(void) image, (void) keys, (void) payloads, (void) n;
	return gi_set_error(err, GI_ERR_UNSUPPORTED, "batch insertion is not implemented yet");
}
