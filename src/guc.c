/*
 * guc.c - every gpuidx.* setting: its variable, its definition and its
 * documentation string, in one place.  _PG_init (handler.c) calls
 * gpuidx_define_gucs() once per process.
 */
#include "gpuidx.h"
#include "service.h"

#include "miscadmin.h"
#include "utils/guc.h"

int			gpuidx_engine_setting = GPUIDX_ENGINE_AUTO;
int			gpuidx_pending_limit = 100000;
int			gpuidx_device_memory_limit_mb = 0;
int			gpuidx_host_memory_limit_mb = 1024;
int			gpuidx_batch_chunk = 1048576;
int			gpuidx_default_structure = GI_STRUCT_BTREE;
bool		gpuidx_enable_batch_insert = true;
bool		gpuidx_enable_customscan = true;
bool		gpuidx_enable_customjoin = true;
bool		gpuidx_enable_customagg = true;
bool		gpuidx_outer_in_place = true;
int			gpuidx_gpu_min_batch = 256;
int			gpuidx_gpu_min_agg_entries = 50000;
bool		gpuidx_service_setting = true;
int			gpuidx_service_max_images = 256;
int			gpuidx_service_workers = 4;
int			gpuidx_service_memory_limit_mb = 4096;
int			gpuidx_service_test_delay_ms = 0;
bool		gpuidx_service_test_agg_cpu = false;
double		gpuidx_service_spin_ms = 0.2;
double		gpuidx_service_gpu_spin_ms = 2.0;

static const struct config_enum_entry structure_options[] = {
	{"btree", GI_STRUCT_BTREE, false},
	{"veb", GI_STRUCT_VEB, false},
	{NULL, 0, false}
};

static const struct config_enum_entry engine_options[] = {
	{"auto", GPUIDX_ENGINE_AUTO, false},
	{"gpu", GPUIDX_ENGINE_GPU, false},
	{"cpu", GPUIDX_ENGINE_CPU, false},
	{NULL, 0, false}
};

/* Define the gpuidx.* settings (the caller reserves the prefix). */
void
gpuidx_define_gucs(void)
{
	DefineCustomEnumVariable("gpuidx.engine",
							 "Where gpuidx builds images and answers batches.",
							 "auto uses the GPU when a usable one exists, else the CPU; "
							 "gpu raises an error when there is none.",
							 &gpuidx_engine_setting, GPUIDX_ENGINE_AUTO,
							 engine_options, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.pending_limit",
							"Pending entries after which an insert folds the pending list into the base run.",
							NULL,
							&gpuidx_pending_limit, 100000, 1, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.device_memory_limit",
							"Device memory gpuidx images may use in one backend (0 = no limit).",
							NULL,
							&gpuidx_device_memory_limit_mb, 0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.host_memory_limit",
							"Host memory gpuidx images may use in one backend (0 = no limit).",
							"Past it the least recently used images that no running scan holds are "
							"freed; they are loaded again when next used.",
							&gpuidx_host_memory_limit_mb, 1024, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.batch_chunk",
							"Probes sent to the engine at a time by the batch functions.",
							"Larger batches are split into chunks of this size; "
							"the query can be cancelled between chunks.",
							&gpuidx_batch_chunk, 1048576, 1024, 1 << 28,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("gpuidx.default_structure",
							 "Structure of a new gpuidx index created without WITH (structure = ...).",
							 NULL,
							 &gpuidx_default_structure, GI_STRUCT_BTREE,
							 structure_options, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuidx.enable_batch_insert",
							 "Brings new index entries into a cached B+ tree image by batch insertion.",
							 "When off, every change rebuilds the image from its sorted entries "
							 "(for comparison; the answers are the same).",
							 &gpuidx_enable_batch_insert, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuidx.enable_customscan",
							 "Lets the planner use GpuIndexScan, which answers a table's quals on a gpuidx column as one batch.",
							 NULL,
							 &gpuidx_enable_customscan, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuidx.enable_customjoin",
							 "Lets the planner use GpuIndexJoin, which answers a join's probes into a gpuidx-indexed table as batches.",
							 NULL,
							 &gpuidx_enable_customjoin, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuidx.enable_customagg",
							 "Lets the planner use GpuIndexAgg, which answers count, sum, min, max and avg over a batch of key intervals from the index image.",
							 NULL,
							 &gpuidx_enable_customagg, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuidx.outer_in_place",
							 "Lets GpuIndexJoin read its outer side's rows in place from the heap pages of a plain sequential scan.",
							 "The rows a page-at-a-time scan already found visible are read from the pinned "
							 "page instead of one executor call each (for comparison; the answers are the same).",
							 &gpuidx_outer_in_place, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.gpu_min_batch",
							"Fewest probes sent to the GPU in one call.",
							"A smaller batch on a GPU image (an index rescan, say) is answered "
							"by a binary search of the backend's host copy of the sorted entries, "
							"which is faster than a device call below this size.",
							&gpuidx_gpu_min_batch, 256, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.gpu_min_agg_entries",
							"Fewest index entries GpuIndexAgg adds up on the GPU in one run.",
							"With fewer entries a GPU image's entries are added up on the host "
							"(as the key of a veb image always is).  In service mode the service adds up.  The default is the "
							"crossover measured on an H100 (device about 0.14 ms a run, the host "
							"about 3 ns an entry).",
							&gpuidx_gpu_min_agg_entries, 50000, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.service_memory_limit",
							"Shared memory the gpuidx service's images may use (0 = no limit).",
							"Past it the least recently used images that no transaction reads are "
							"freed; they are loaded again when next used.",
							&gpuidx_service_memory_limit_mb, 4096, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MB, NULL, NULL, NULL);
	/*
	 * Settings fixed at server start exist only when the postmaster loads
	 * gpuidx (shared_preload_libraries): a library loaded later cannot
	 * define them, and without the preload there is no service.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomBoolVariable("gpuidx.service",
								 "Runs the gpuidx service when gpuidx is in shared_preload_libraries.",
								 "The service holds every index's image once for the whole server "
								 "and is the only process that uses the GPU; off keeps images per backend.",
								 &gpuidx_service_setting, true,
								 PGC_POSTMASTER, 0, NULL, NULL, NULL);
		DefineCustomIntVariable("gpuidx.service_max_images",
								"Most index images the gpuidx service holds at once.",
								NULL,
								&gpuidx_service_max_images, 256, 1, 65536,
								PGC_POSTMASTER, 0, NULL, NULL, NULL);
		DefineCustomIntVariable("gpuidx.service_workers",
								"Threads the gpuidx service runs engine queries on.",
								"With 2 or more, several backends' batches run at once; "
								"0 or 1: the service answers one batch at a time.",
								&gpuidx_service_workers, 4, 0, 64,
								PGC_POSTMASTER, 0, NULL, NULL, NULL);
	}
	DefineCustomRealVariable("gpuidx.service_spin",
							 "How long a backend polls for the gpuidx service's answer before sleeping.",
							 "A small batch's answer comes back sooner than a latch wakeup; "
							 "0 sleeps at once (the CPU stays free for others).",
							 &gpuidx_service_spin_ms, 0.2, 0, 100,
							 PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomRealVariable("gpuidx.service_gpu_spin",
							 "How long polling may last around a batch the gpuidx service answers on the GPU.",
							 "A backend polls for such an answer for about the time the GPU took on the "
							 "image's last batch, at most this; the service, after answering on the GPU, "
							 "polls for the next request this long before sleeping.  Never for the CPU "
							 "engine (gpuidx.service_spin is its poll); 0: only gpuidx.service_spin.",
							 &gpuidx_service_gpu_spin_ms, 2.0, 0, 100,
							 PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("gpuidx.service_test_delay",
							"Testing only: the gpuidx service waits this long before each answer.",
							"Lets tests cancel a waiting backend or kill the service mid-batch.",
							&gpuidx_service_test_delay_ms, 0, 0, 600000,
							PGC_SIGHUP, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomBoolVariable("gpuidx.service_test_agg_cpu",
							 "Testing only: GpuIndexAgg sends runs on a CPU image to the gpuidx service too.",
							 "The service then adds them up with the CPU engine, so that a host without "
							 "a GPU runs the requests a GPU image's runs send (a backend adds up faster "
							 "itself).",
							 &gpuidx_service_test_agg_cpu, false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}
