// The thread pool behind loom_do_par_for.
//
// One process-wide pool of LOOM_NUM_THREADS - 1 workers (default: the
// number of online processors); the thread calling loom_do_par_for is the
// last participant, so a pool of N threads runs N tasks at once. Iterations
// are handed out from an atomic counter in shrinking chunks (each claim takes
// an eighth of an equal share of what is left: guided self-scheduling). The
// claims are few when tasks are small, no thread ever holds much of the work
// (a thread the machine deschedules while it holds a big chunk makes the
// others wait), and the last claims are single tasks. Several threads may run parallel loops at the
// same time: each call is a Job in a shared queue and idle workers join whichever job still has
// iterations left.
//
// A parallel loop inside a task (nested parallelism) runs serially on the
// thread that reaches it. That cannot deadlock (no thread ever waits for work
// that only a blocked thread could do) and the outer loop already keeps every
// thread busy.
//
// Written against pthreads rather than std::thread so that AOT libraries need
// no C++ runtime (see loom_runtime_internal.h).
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>

#include "loom_runtime_internal.h"

namespace {

// Nonzero while this thread runs a task of a parallel loop; worker threads
// are always inside one. Parallel loops started from such a thread run serially.
thread_local int par_depth = 0;

struct Job {
    loom_task_t task = nullptr;
    uint8_t *closure = nullptr;
    int64_t end = 0;
    int64_t share_divisor = 2;  // a claim takes (what is left) / this, at least 1
    std::atomic<int64_t> next{0};
    std::atomic<int32_t> result{0};
    int active = 0;           // workers inside run(); guarded by the pool mutex
    Job *next_job = nullptr;  // the queue link; guarded by the pool mutex
    // The message of the first failing task, when a worker (not the caller)
    // ran it: the caller's thread must report it.
    bool error_from_worker = false;
    char worker_error[LOOM_ERROR_BUFFER_SIZE];

    bool has_work() const { return next.load(std::memory_order_relaxed) < end; }

    void run(bool is_worker) {
        int64_t start = next.load(std::memory_order_relaxed);
        while (true) {
            if (start >= end) return;
            int64_t take = (end - start) / share_divisor;
            if (take < 1) take = 1;
            if (!next.compare_exchange_weak(start, start + take, std::memory_order_relaxed))
                continue;  // start now holds the current counter
            int64_t stop = start + take;
            for (int64_t i = start; i < stop; i++) {
                if (result.load(std::memory_order_relaxed) != 0) {
                    // Another task failed: stop handing out work.
                    next.store(end, std::memory_order_relaxed);
                    return;
                }
                int32_t r = task(static_cast<int32_t>(i), closure);
                if (r != 0) {
                    int32_t expected = 0;
                    if (result.compare_exchange_strong(expected, r) && is_worker) {
                        loom_runtime_copy_error_message(worker_error, sizeof(worker_error));
                        error_from_worker = true;
                    }
                    next.store(end, std::memory_order_relaxed);
                    return;
                }
            }
            start = next.load(std::memory_order_relaxed);
        }
    }
};

// The pool: plain globals with constant initializers, started once.
pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
pthread_cond_t finished_cond = PTHREAD_COND_INITIALIZER;
Job *queue_head = nullptr;  // guarded by pool_mutex
pthread_once_t pool_once = PTHREAD_ONCE_INIT;
int pool_threads = 1;

// Removes job from the queue if it is there. Called with the mutex held.
void unlink_job(Job *job) {
    for (Job **p = &queue_head; *p; p = &(*p)->next_job) {
        if (*p == job) {
            *p = job->next_job;
            job->next_job = nullptr;
            return;
        }
    }
}

void *worker_main(void *) {
    par_depth = 1;
    pthread_mutex_lock(&pool_mutex);
    while (true) {
        Job *job = nullptr;
        // Jobs whose iterations are all claimed need no more helpers.
        while (queue_head && !queue_head->has_work()) {
            Job *done = queue_head;
            queue_head = done->next_job;
            done->next_job = nullptr;
        }
        for (Job *j = queue_head; j; j = j->next_job) {
            if (j->has_work()) {
                job = j;
                break;
            }
        }
        if (!job) {
            pthread_cond_wait(&wake_cond, &pool_mutex);
            continue;
        }
        job->active++;
        pthread_mutex_unlock(&pool_mutex);
        job->run(true);
        pthread_mutex_lock(&pool_mutex);
        if (--job->active == 0) pthread_cond_broadcast(&finished_cond);
    }
    return nullptr;
}

int threads_from_env() {
    int n = 0;
    if (const char *s = getenv("LOOM_NUM_THREADS")) n = atoi(s);
    if (n <= 0) n = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    if (n <= 0) n = 1;
    return n > 1024 ? 1024 : n;
}

void start_pool() {
    pool_threads = threads_from_env();
    // The workers live for the whole process and sleep when idle; they are
    // detached so that exit never waits for them.
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = 1;
    for (int i = 0; i + 1 < pool_threads; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker_main, nullptr) == 0) started++;
    }
    pthread_attr_destroy(&attr);
    pool_threads = started;
}

int num_pool_threads() {
    pthread_once(&pool_once, start_pool);
    return pool_threads;
}

int32_t run_on_pool(loom_task_t task, int32_t min, int32_t extent, uint8_t *closure) {
    Job job;
    job.task = task;
    job.closure = closure;
    job.next.store(min);
    job.end = static_cast<int64_t>(min) + extent;
    job.share_divisor = 8 * static_cast<int64_t>(pool_threads);

    pthread_mutex_lock(&pool_mutex);
    job.next_job = queue_head;
    queue_head = &job;
    pthread_cond_broadcast(&wake_cond);
    pthread_mutex_unlock(&pool_mutex);

    par_depth++;
    job.run(false);
    par_depth--;

    pthread_mutex_lock(&pool_mutex);
    unlink_job(&job);
    while (job.active != 0) pthread_cond_wait(&finished_cond, &pool_mutex);
    pthread_mutex_unlock(&pool_mutex);

    if (job.error_from_worker) loom_runtime_set_error_message(job.worker_error);
    return job.result.load();
}

}  // namespace

LOOM_RUNTIME_EXPORT int32_t loom_do_par_for(loom_task_t task, int32_t min, int32_t extent,
                                            uint8_t *closure) {
    if (extent <= 0) return 0;
    if (par_depth > 0 || extent == 1 || num_pool_threads() == 1) {
        for (int64_t i = min; i < static_cast<int64_t>(min) + extent; i++) {
            int32_t r = task(static_cast<int32_t>(i), closure);
            if (r != 0) return r;
        }
        return 0;
    }
    return run_on_pool(task, min, extent, closure);
}

LOOM_RUNTIME_EXPORT int32_t loom_num_threads(void) { return num_pool_threads(); }
