/*
 * service_pool.c - the gpuidx service's query threads (service_pool.h).
 *
 * A FIFO of jobs under a pthread mutex and condition variable, and
 * nworkers threads that take a job, run the engine query and finish the
 * request.  Everything here that a worker runs stays clear of PostgreSQL's
 * memory contexts, error handling, locks and signals: the only PostgreSQL
 * calls are SetLatch and the pg_atomic operations (see service_pool.h).
 */
#include "gpuidx.h"
#include "service_pool.h"

#include <pthread.h>
#include <signal.h>

#include "portability/instr_time.h"

#define SERVICE_POOL_MAX	64

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static ServiceJob *queue_head = NULL;	/* jobs not yet taken */
static ServiceJob *queue_tail = NULL;
static ServiceJob *failed = NULL;	/* device errors, for the main thread */
static bool stopping = false;
static pthread_t threads[SERVICE_POOL_MAX];
static int	nthreads = 0;
static Latch *pool_main_latch = NULL;
static int	jobs_active = 0;	/* submitted, not yet finished (atomic) */

/*
 * Finish a job's request: its answer into the slot, DONE, the backend's
 * latch (a worker, or the main thread for a job that failed).  The job, its image and its slot may be reused as soon as the
 * image's count drops and the slot says DONE, so nothing is read after.
 */
void
service_job_finish(ServiceJob *job)
{
	GpuidxServiceRequest *req = job->req;
	Latch	   *latch = req->latch;

	req->status = job->status;
	req->engine_used = job->engine;
	req->engine_ms = job->build_ms + job->engine_ms;
	snprintf(req->message, sizeof(req->message), "%s", job->message);
	pg_atomic_fetch_sub_u32(job->inflight, 1);
	pg_write_barrier();
	pg_atomic_write_u32(&req->state, GPUIDX_REQ_DONE);
	if (latch)
		SetLatch(latch);
}

/* Run one job's engine query or aggregation (no PostgreSQL calls). */
static void
run_job(ServiceJob *job)
{
	int64		n = job->nprobes;
	char	   *buf = job->buf;
	GiError		err;
	instr_time	t0,
				t1;

	INSTR_TIME_SET_CURRENT(t0);
	if (job->op == GPUIDX_REQ_OP_AGG)
		job->status = service_agg_run(job->image, job->hostp, buf, &job->kept,
									  &job->nkept, &err);
	else
		job->status = gi_image_query(job->image, (GiOp) job->op,
									 (const int64_t *) buf,
									 job->op == GI_OP_RANGE ? (const int64_t *) (buf + n * 8) : NULL,
									 (size_t) n, (uint64_t *) (buf + 2 * n * 8),
									 (uint64_t *) (buf + 3 * n * 8), &err);
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	job->engine_ms = INSTR_TIME_GET_MILLISEC(t1);
	job->message[0] = '\0';
	if (job->status != GI_OK)
		snprintf(job->message, sizeof(job->message), "%s", err.message);
}

/* A worker thread: take jobs until the pool stops. */
static void *
worker_main(void *arg)
{
	(void) arg;
	for (;;)
	{
		ServiceJob *job;

		pthread_mutex_lock(&pool_lock);
		while (queue_head == NULL && !stopping)
			pthread_cond_wait(&pool_cond, &pool_lock);
		if (queue_head == NULL)
		{
			pthread_mutex_unlock(&pool_lock);
			return NULL;		/* stopping, and nothing queued */
		}
		job = queue_head;
		queue_head = job->next;
		if (queue_head == NULL)
			queue_tail = NULL;
		pthread_mutex_unlock(&pool_lock);

		run_job(job);
		if (job->status == GI_ERR_DEVICE || job->status == GI_ERR_DEVICE_OOM)
		{
			/* the main thread drops the engine image, then finishes it */
			pthread_mutex_lock(&pool_lock);
			job->next = failed;
			failed = job;
			pthread_mutex_unlock(&pool_lock);
		}
		else
			service_job_finish(job);
		__atomic_sub_fetch(&jobs_active, 1, __ATOMIC_RELEASE);
		/* the main thread may wait for this image, or have deferred work */
		SetLatch(pool_main_latch);
	}
}

/*
 * Start nworkers threads (at most SERVICE_POOL_MAX), each with every signal
 * blocked; returns how many started.  Fewer than two: the caller answers
 * requests itself (nothing is left running).
 */
int
service_pool_start(int nworkers, Latch *main_latch)
{
	sigset_t	all,
				saved;
	int			i;

	if (nworkers < 2)
		return 0;
	nworkers = Min(nworkers, SERVICE_POOL_MAX);
	pool_main_latch = main_latch;
	stopping = false;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (i = 0; i < nworkers; i++)
	{
		if (pthread_create(&threads[nthreads], NULL, worker_main, NULL) != 0)
			break;
		nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (nthreads == 1)
	{
		(void) service_pool_stop();
		return 0;
	}
	return nthreads;
}

/* Is the pool answering queries? */
bool
service_pool_running(void)
{
	return nthreads > 0;
}

/* Are no jobs queued or running (true without a pool, too)? */
bool
service_pool_idle(void)
{
	return __atomic_load_n(&jobs_active, __ATOMIC_ACQUIRE) == 0;
}

/* Queue a job (its image's inflight count already includes it). */
void
service_pool_submit(ServiceJob *job)
{
	job->next = NULL;
	__atomic_add_fetch(&jobs_active, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&pool_lock);
	if (queue_tail)
		queue_tail->next = job;
	else
		queue_head = job;
	queue_tail = job;
	pthread_cond_signal(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
}

/* The jobs that failed with a device error since the last call (a list). */
ServiceJob *
service_pool_take_failed(void)
{
	ServiceJob *list;

	pthread_mutex_lock(&pool_lock);
	list = failed;
	failed = NULL;
	pthread_mutex_unlock(&pool_lock);
	return list;
}

/*
 * Stop the pool: the jobs no worker has taken are returned (a list) for the
 * main thread to finish; running ones complete first, then every thread is
 * joined.  Jobs that failed since are still to be taken.
 */
ServiceJob *
service_pool_stop(void)
{
	ServiceJob *unrun;
	int			i;

	pthread_mutex_lock(&pool_lock);
	unrun = queue_head;
	queue_head = queue_tail = NULL;
	stopping = true;
	pthread_cond_broadcast(&pool_cond);
	pthread_mutex_unlock(&pool_lock);
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	nthreads = 0;
	return unrun;
}
