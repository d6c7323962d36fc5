/*
 * gpu_insert.cu - CUBPT batch insertion for the GPU engine (placeholder until
 * the insertion lands: it answers GI_ERR_UNSUPPORTED so callers rebuild).
 */
#include "engine_impl.h"

/* Batch insertion into a GPU B+ tree image. */
extern "C" GiStatus
gi_gpu_insert(GiImage *image, const int64_t *keys, const uint64_t *payloads,
			  size_t n, GiError *err)
{
	(void) image, (void) keys, (void) payloads, (void) n;
	return gi_set_error(err, GI_ERR_UNSUPPORTED, "batch insertion is not implemented yet");
}
