/*
 * duckdb_run.c - run SQL in an in-memory DuckDB and time queries, for the
 * benchmarks that compare gpuidx with DuckDB on the same rows (bench/sql/
 * include: DuckDB's ASOF JOIN against GpuIndexJoin's as-of join).
 *
 * DuckDB is not a build dependency: its shared library (libduckdb.so, from
 * the npm package bench/duckdb/fetch names) is loaded at run time, and the
 * handful of C API functions used here are declared below by their
 * documented signatures (duckdb.h is not needed).
 *
 *   duckdb_run LIBDUCKDB THREADS REPS SETUP_SQL QUERY...
 *
 * Runs SETUP_SQL once (loading the tables; its time is printed as
 * "setup_ms"), then each QUERY once unmeasured and REPS times measured, and
 * prints a line per query: "query N result=TEXT median_ms=M min_ms=A
 * max_ms=B" (TEXT: the first column of the first row).  Exit status 1 on
 * any DuckDB error (the message on stderr).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint64_t idx_t;
typedef void *db_handle;		/* duckdb_database, duckdb_connection */

/* duckdb_result is a small struct the library fills; room for it, opaque. */
typedef struct
{
	_Alignas(16) unsigned char bytes[256];
} db_result;

static int (*db_open) (const char *path, db_handle *out);
static int (*db_connect) (db_handle db, db_handle *out);
static int (*db_query) (db_handle con, const char *sql, db_result *out);
static void (*db_destroy_result) (db_result *res);
static const char *(*db_result_error) (db_result *res);
static char *(*db_value_varchar) (db_result *res, idx_t col, idx_t row);
static void (*db_free) (void *p);
static void (*db_disconnect) (db_handle *con);
static void (*db_close) (db_handle *db);
static const char *(*db_library_version) (void);

/* Resolve one symbol of the library, or exit. */
static void *
need(void *lib, const char *name)
{
	void	   *p = dlsym(lib, name);

	if (p == NULL)
	{
		fprintf(stderr, "duckdb_run: %s not in the library: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

/* Load the library and the functions used. */
static void
load_library(const char *path)
{
	void	   *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (lib == NULL)
	{
		fprintf(stderr, "duckdb_run: cannot load %s: %s\n", path, dlerror());
		exit(1);
	}
	*(void **) &db_open = need(lib, "duckdb_open");
	*(void **) &db_connect = need(lib, "duckdb_connect");
	*(void **) &db_query = need(lib, "duckdb_query");
	*(void **) &db_destroy_result = need(lib, "duckdb_destroy_result");
	*(void **) &db_result_error = need(lib, "duckdb_result_error");
	*(void **) &db_value_varchar = need(lib, "duckdb_value_varchar");
	*(void **) &db_free = need(lib, "duckdb_free");
	*(void **) &db_disconnect = need(lib, "duckdb_disconnect");
	*(void **) &db_close = need(lib, "duckdb_close");
	*(void **) &db_library_version = need(lib, "duckdb_library_version");
}

/* Milliseconds on the monotonic clock. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Run sql; the first column of its first row into result (room for len
 * bytes; "" when there is none).  Exits on an error.
 */
static void
run(db_handle con, const char *sql, char *result, size_t len)
{
	db_result	res;
	char	   *v;

	memset(&res, 0, sizeof(res));
	if (db_query(con, sql, &res) != 0)
	{
		const char *msg = db_result_error(&res);

		fprintf(stderr, "duckdb_run: %s\n  in: %s\n", msg ? msg : "(no message)", sql);
		db_destroy_result(&res);
		exit(1);
	}
	if (result)
	{
		v = db_value_varchar(&res, 0, 0);
		snprintf(result, len, "%s", v ? v : "");
		if (v)
			db_free(v);
	}
	db_destroy_result(&res);
}

/* qsort order of doubles. */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	db_handle	db = NULL,
				con = NULL;
	char		sql[256],
				result[256];
	int			threads,
				reps,
				q;
	double		t0;

	if (argc < 6)
	{
		fprintf(stderr, "usage: duckdb_run LIBDUCKDB THREADS REPS SETUP_SQL QUERY...\n");
		return 2;
	}
	threads = atoi(argv[2]);
	reps = atoi(argv[3]);
	if (threads < 1 || reps < 1)
	{
		fprintf(stderr, "duckdb_run: THREADS and REPS must be 1 or more\n");
		return 2;
	}
	load_library(argv[1]);
	if (db_open(NULL, &db) != 0 || db_connect(db, &con) != 0)
	{
		fprintf(stderr, "duckdb_run: cannot open an in-memory database\n");
		return 1;
	}
	printf("duckdb %s, threads %d\n", db_library_version(), threads);
	snprintf(sql, sizeof(sql), "SET threads = %d", threads);
	run(con, sql, NULL, 0);
	t0 = now_ms();
	run(con, argv[4], NULL, 0);
	printf("setup_ms=%.1f\n", now_ms() - t0);
	fflush(stdout);
	for (q = 5; q < argc; q++)
	{
		double	   *ms = malloc(sizeof(double) * reps);
		int			r;

		run(con, argv[q], result, sizeof(result));	/* warm-up */
		for (r = 0; r < reps; r++)
		{
			t0 = now_ms();
			run(con, argv[q], result, sizeof(result));
			ms[r] = now_ms() - t0;
		}
		qsort(ms, reps, sizeof(double), cmp_double);
		printf("query %d result=%s median_ms=%.2f min_ms=%.2f max_ms=%.2f\n", q - 4, result,
			   reps % 2 ? ms[reps / 2] : (ms[reps / 2 - 1] + ms[reps / 2]) / 2, ms[0], ms[reps - 1]);
		fflush(stdout);
		free(ms);
	}
	db_disconnect(&con);
	db_close(&db);
	return 0;
}
