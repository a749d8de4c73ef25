// The thread pool behind loom_do_par_for.
//
// One process-wide pool of LOOM_NUM_THREADS - 1 workers (default: the
// hardware's thread count); the thread calling loom_do_par_for is the last
// participant, so a pool of N threads runs N tasks at once. Iterations are
// handed out in chunks from an atomic counter, so uneven tasks balance
// themselves. Several threads may run parallel loops at the same time: each
// call is a Job in a shared queue and idle workers join whichever job still
// has iterations left.
//
// A parallel loop inside a task (nested parallelism) runs serially on the
// thread that reaches it. That cannot deadlock (no thread ever waits for work
// that only a blocked thread could do) and the outer loop already keeps every
// thread busy.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loom/runtime/loom_runtime.h"

namespace loom {
namespace internal {
std::string loom_runtime_take_error_message();
void loom_runtime_set_error_message(const std::string &msg);
}  // namespace internal
}  // namespace loom

namespace {

using loom::internal::loom_runtime_set_error_message;
using loom::internal::loom_runtime_take_error_message;

// Nonzero while this thread runs a task of a parallel loop; worker threads
// are always inside one. Parallel loops started from such a thread run serially.
thread_local int par_depth = 0;

struct Job {
    loom_task_t task = nullptr;
    uint8_t *closure = nullptr;
    int64_t end = 0;
    int64_t chunk = 1;
    std::atomic<int64_t> next{0};
    std::atomic<int32_t> result{0};
    // The message of the first failing task, when a worker (not the caller)
    // ran it: the caller's thread must report it.
    std::string worker_error;
    bool error_from_worker = false;
    int active = 0;  // workers inside run(); guarded by the pool mutex

    bool has_work() const { return next.load(std::memory_order_relaxed) < end; }

    void run(bool is_worker) {
        while (true) {
            int64_t start = next.fetch_add(chunk, std::memory_order_relaxed);
            if (start >= end) return;
            int64_t stop = std::min(end, start + chunk);
            for (int64_t i = start; i < stop; i++) {
                if (result.load(std::memory_order_relaxed) != 0) {
                    // Another task failed: stop handing out work.
                    next.store(end, std::memory_order_relaxed);
                    return;
                }
                int32_t r = task(static_cast<int32_t>(i), closure);
                if (r != 0) {
                    int32_t expected = 0;
                    if (result.compare_exchange_strong(expected, r)) {
                        if (is_worker) {
                            worker_error = loom_runtime_take_error_message();
                            error_from_worker = true;
                        }
                    }
                    next.store(end, std::memory_order_relaxed);
                    return;
                }
            }
        }
    }
};

class ThreadPool {
  public:
    explicit ThreadPool(int n) : num_threads(n) {
        for (int i = 0; i + 1 < n; i++) workers.emplace_back([this] { worker_loop(); });
        // The pool lives for the whole process: its workers sleep when idle,
        // and detaching avoids joining at exit while a static may still use it.
        for (auto &w : workers) w.detach();
    }

    int32_t run(loom_task_t task, int32_t min, int32_t extent, uint8_t *closure) {
        Job job;
        job.task = task;
        job.closure = closure;
        job.next.store(min);
        job.end = static_cast<int64_t>(min) + extent;
        // Several chunks per thread, so that threads finishing early can help.
        job.chunk = std::max<int64_t>(1, extent / (static_cast<int64_t>(num_threads) * 4));
        {
            std::lock_guard<std::mutex> lock(mutex);
            jobs.push_back(&job);
        }
        wake.notify_all();

        par_depth++;
        job.run(false);
        par_depth--;

        {
            std::unique_lock<std::mutex> lock(mutex);
            auto it = std::find(jobs.begin(), jobs.end(), &job);
            if (it != jobs.end()) jobs.erase(it);
            finished.wait(lock, [&] { return job.active == 0; });
        }
        if (job.error_from_worker) loom_runtime_set_error_message(job.worker_error);
        return job.result.load();
    }

    const int num_threads;

  private:
    void worker_loop() {
        par_depth = 1;
        std::unique_lock<std::mutex> lock(mutex);
        while (true) {
            Job *job = nullptr;
            for (auto it = jobs.begin(); it != jobs.end();) {
                if ((*it)->has_work()) {
                    job = *it;
                    break;
                }
                // Every iteration is claimed: no one else needs to find it.
                it = jobs.erase(it);
            }
            if (!job) {
                wake.wait(lock);
                continue;
            }
            job->active++;
            lock.unlock();
            job->run(true);
            lock.lock();
            if (--job->active == 0) finished.notify_all();
        }
    }

    std::mutex mutex;
    std::condition_variable wake, finished;
    std::deque<Job *> jobs;
    std::vector<std::thread> workers;
};

int threads_from_env() {
    int n = 0;
    if (const char *s = std::getenv("LOOM_NUM_THREADS")) n = std::atoi(s);
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    return std::clamp(n, 1, 1024);
}

ThreadPool &pool() {
    // Leaked on purpose: see the constructor.
    static ThreadPool *p = new ThreadPool(threads_from_env());
    return *p;
}

}  // namespace

extern "C" {

int32_t loom_do_par_for(loom_task_t task, int32_t min, int32_t extent, uint8_t *closure) {
    if (extent <= 0) return 0;
    if (par_depth > 0 || extent == 1 || pool().num_threads == 1) {
        for (int64_t i = min; i < static_cast<int64_t>(min) + extent; i++) {
            int32_t r = task(static_cast<int32_t>(i), closure);
            if (r != 0) return r;
        }
        return 0;
    }
    return pool().run(task, min, extent, closure);
}

int32_t loom_num_threads(void) { return pool().num_threads; }

}  // extern "C"
