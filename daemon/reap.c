/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing what clients handed over (docs/design.md section 10, "Fds"). A
 * close() can wait for as long as the object behind the fd says: a TCP
 * socket with SO_LINGER and unsent data waits up to its linger time, a
 * file of a FUSE file system waits for its daemon, a Unix socket releases
 * the fds queued in it (any of those). The control thread holds every
 * data-path lock: it never closes a client's fd, nor a socket a client may
 * have queued fds in. It hands them to the reapers, threads that hold no
 * lock and close one fd at a time. A reaper stuck in a close for longer
 * than STUCK_MS while more wait gets a sibling (up to REAPERS_MAX), logged
 * with the session the stuck fd came from; at exit viad does not wait for
 * a stuck one.
 *
 * Until via_reap_start() (unit tests, fuzzers) an fd is closed at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "viad.h"

#define REAPERS_MAX 16
#define STUCK_MS    200

struct reap_item {
	int fd;
	uint32_t session;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;         /**< an item came, or stop */
	pthread_cond_t idle;         /**< the queue emptied and no reaper closes */
	struct reap_item *q;
	uint32_t cap, head, count;   /**< a ring of cap items */
	unsigned nb_reapers;
	unsigned busy;
	/** per reaper: when its close began (0: none), and what it closes */
	uint64_t busy_since[REAPERS_MAX];
	struct reap_item closing[REAPERS_MAX];
	bool started, stopping;
} r = { .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER };

static void *
reaper_main(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;

	pthread_mutex_lock(&r.lock);
	for (;;) {
		struct reap_item it;

		while (r.count == 0 && !r.stopping)
			pthread_cond_wait(&r.work, &r.lock);
		if (r.count == 0)
			break;
		it = r.q[r.head];
		r.head = (r.head + 1) % r.cap;
		r.count--;
		r.busy++;
		r.busy_since[me] = via_now_ms();
		r.closing[me] = it;
		pthread_mutex_unlock(&r.lock);
		close(it.fd);
		pthread_mutex_lock(&r.lock);
		r.busy_since[me] = 0;
		r.busy--;
		if (r.count == 0 && r.busy == 0)
			pthread_cond_broadcast(&r.idle);
	}
	pthread_mutex_unlock(&r.lock);
	return NULL;
}

/* One more reaper. Under the lock. @return 0, -errno */
static int
reaper_add(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, reaper_main, (void *)(uintptr_t)r.nb_reapers);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return -rc;
	pthread_setname_np(t, "viad-reap");
	r.nb_reapers++;
	return 0;
}

int
via_reap_start(void)
{
	int rc;

	pthread_mutex_lock(&r.lock);
	r.stopping = false;
	rc = reaper_add();
	r.started = rc == 0;
	pthread_mutex_unlock(&r.lock);
	return rc;
}

/* Every reaper in a close for longer than STUCK_MS while more wait: one more.
 * Under the lock. */
static void
watch(void)
{
	uint64_t now = via_now_ms(), oldest = now;
	unsigned i, stuck_at = 0;

	if (r.count == 0 || r.busy < r.nb_reapers || r.nb_reapers == REAPERS_MAX)
		return;
	for (i = 0; i < r.nb_reapers; i++) {
		if (r.busy_since[i] == 0 || now - r.busy_since[i] < STUCK_MS)
			return;
		if (r.busy_since[i] < oldest) {
			oldest = r.busy_since[i];
			stuck_at = i;
		}
	}
	VLOG_WARN("closing an fd of session %u has taken %llu ms (a socket lingering, a file "
		  "system that does not answer): %u more wait; reaper %u of %u started",
		  r.closing[stuck_at].session, (unsigned long long)(now - oldest), r.count,
		  r.nb_reapers + 1, REAPERS_MAX);
	reaper_add();
}

void
via_reap(int fd, uint32_t session)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&r.lock);
	if (!r.started) {
		pthread_mutex_unlock(&r.lock);
		close(fd);
		return;
	}
	if (r.count == r.cap) {
		uint32_t cap = r.cap != 0 ? 2 * r.cap : 64, i;
		struct reap_item *q = malloc(cap * sizeof(*q));

		if (q == NULL) {
			/* not closed: an fd leaked is better than a control
			 * thread frozen in a close */
			pthread_mutex_unlock(&r.lock);
			VLOG_ERR("reaper: out of memory: fd %d of session %u stays open", fd, session);
			return;
		}
		for (i = 0; i < r.count; i++)
			q[i] = r.q[(r.head + i) % r.cap];
		free(r.q);
		r.q = q;
		r.cap = cap;
		r.head = 0;
	}
	r.q[(r.head + r.count) % r.cap] = (struct reap_item){ .fd = fd, .session = session };
	r.count++;
	pthread_cond_signal(&r.work);
	watch();
	pthread_mutex_unlock(&r.lock);
}

void
via_reap_watch(void)
{
	pthread_mutex_lock(&r.lock);
	watch();
	pthread_mutex_unlock(&r.lock);
}

void
via_reap_stop(unsigned wait_ms)
{
	struct timespec until;

	pthread_mutex_lock(&r.lock);
	if (!r.started) {
		pthread_mutex_unlock(&r.lock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while ((r.count != 0 || r.busy != 0) &&
	       pthread_cond_timedwait(&r.idle, &r.lock, &until) != ETIMEDOUT)
		;
	if (r.count != 0 || r.busy != 0)
		VLOG_WARN("reaper: %u fds still closing at exit", r.count + r.busy);
	r.stopping = true;
	r.started = false;
	pthread_cond_broadcast(&r.work);
	/* a reaper still closing, or fds still queued: the queue goes with
	 * the process */
	if (r.busy == 0 && r.count == 0) {
		free(r.q);
		r.q = NULL;
		r.cap = r.head = r.count = 0;
	}
	pthread_mutex_unlock(&r.lock);
}

int
via_reap_take(int **fds, uint32_t *n)
{
	uint32_t i;

	pthread_mutex_lock(&r.lock);
	*n = r.count;
	*fds = malloc(((size_t)r.count + 1) * sizeof(**fds));
	if (*fds == NULL) {
		pthread_mutex_unlock(&r.lock);
		*n = 0;
		return -ENOMEM;
	}
	for (i = 0; i < r.count; i++)
		(*fds)[i] = r.q[(r.head + i) % r.cap].fd;
	r.head = r.count = 0;
	pthread_mutex_unlock(&r.lock);
	return 0;
}
