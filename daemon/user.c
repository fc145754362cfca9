/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Limits per user (issue 14, issue 25; docs/design.md section 10): what one
 * uid's sessions hold together is counted here, so that one user cannot
 * take the viad-wide limits (viad.conf [limits]) every other user needs,
 * nor what the host has for all: viad's mappings (the kernel's
 * vm.max_map_count is one for the whole process), the hugepage pool and
 * memory. Each object is charged where its viad-wide limit is applied and
 * uncharged where it is freed, by its owner or by the reclaim of its
 * session; the session itself is charged at connect and uncharged when it
 * ends.
 *
 * A limit left 0 is a share: the viad-wide limit / user_share, and for
 * what takes memory, at most the host's memory / user_share; the mappings,
 * hugepages and memory viad creates are shares of what the host has, read
 * at start (via_user_init), not of constants. Mappings are also capped
 * viad-wide (limits.max_mappings, by default half of what vm.max_map_count
 * leaves viad at start, and at most half of the open files RLIMIT_NOFILE
 * leaves it: it keeps an fd of each for an upgrade), so that viad keeps
 * room for its own.
 *
 * A limit reached refuses the request with -ENOSPC (VIP_ERROR_RESOURCE at
 * the client, as a viad-wide limit does) and one log line naming the
 * limit and the uid; a user held at a limit is not logged again until it
 * drops below it, so a client retrying in a loop cannot flood the log.
 * Hugepages are the exception: past its share a user's segments and
 * allocations are made of normal pages (pmem.c), logged the same way.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>

#include "viad.h"

/* the [limits] key of each resource, as the log names it */
static const char *const res_keys[VIA_USER_RES_COUNT] = {
	[VIA_USER_SESSIONS] = "user_max_sessions",
	[VIA_USER_VIS] = "user_max_vi",
	[VIA_USER_CQS] = "user_max_cq",
	[VIA_USER_PTAGS] = "user_max_ptags",
	[VIA_USER_REGIONS] = "user_max_regions",
	[VIA_USER_REGISTER_BYTES] = "user_max_register_bytes",
	[VIA_USER_IN_PLACE_BYTES] = "user_max_in_place_bytes",
	[VIA_USER_ALLOC_BYTES] = "user_max_alloc_bytes",
	[VIA_USER_REQUESTS] = "user_max_requests",
	[VIA_USER_MAPPINGS] = "user_max_mappings",
	[VIA_USER_HUGEPAGE_BYTES] = "user_max_hugepage_bytes",
	[VIA_USER_MEMORY_BYTES] = "user_max_memory_bytes",
};

/* a * b, UINT64_MAX if it does not fit */
static uint64_t
mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* A number from the first line of @p path that starts with @p key (the
 * host's own /proc and /sys files). @return it, 0 if none */
static uint64_t
host_number(const char *path, const char *key)
{
	char line[256];
	uint64_t v = 0;
	size_t klen = strlen(key);
	FILE *f = fopen(path, "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, key, klen) == 0) {
			v = strtoull(line + klen, NULL, 10);
			break;
		}
	}
	if (f != NULL)
		fclose(f);
	return v;
}

void
via_user_init(struct viad *d)
{
	uint64_t map_max = host_number("/proc/sys/vm/max_map_count", ""),
		 own = 0, by_maps, by_fds = UINT64_MAX, fds = 0;
	struct rlimit nofile;
	struct dirent *e;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	DIR *dir = opendir("/proc/self/fd");

	/* viad's own mappings now, counted by lines of its own maps */
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		own += strchr(line, '\n') != NULL;
	if (f != NULL)
		fclose(f);
	d->host.mem_bytes = host_number("/proc/meminfo", "MemTotal:") * 1024;
	d->host.hugepage_bytes =
		host_number("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "") << 21;
	by_maps = map_max > own ? (map_max - own) / 2 : 0;
	/* viad keeps an fd of each mapping an upgrade hands over (a segment,
	 * an allocation, a shared object: upgrade.c), so its open files cap
	 * the mappings as vm.max_map_count does */
	while (dir != NULL && (e = readdir(dir)) != NULL)
		fds += e->d_name[0] != '.';
	if (dir != NULL)
		closedir(dir);
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
		by_fds = nofile.rlim_cur > fds ? (nofile.rlim_cur - fds) / 2 : 0;
	d->host.max_mappings = d->conf.max_mappings != 0 ? d->conf.max_mappings
			       : by_maps < by_fds ? by_maps : by_fds;
	VLOG_INFO("limits: the host has %" PRIu64 " MiB of memory, %" PRIu64 " MiB of 2 MiB "
		  "hugepages and vm.max_map_count %" PRIu64 " (viad uses %" PRIu64 "), viad %"
		  PRIu64 " open files (%" PRIu64 " used); clients' "
		  "mappings %" PRIu64 "; per user (1/%u): mappings %" PRIu64 ", hugepages %" PRIu64
		  " MiB, memory %" PRIu64 " MiB", d->host.mem_bytes >> 20,
		  d->host.hugepage_bytes >> 20, map_max, own,
		  by_fds == UINT64_MAX ? UINT64_MAX : (uint64_t)nofile.rlim_cur, fds,
		  d->host.max_mappings,
		  d->conf.user_share, via_user_limit(d, VIA_USER_MAPPINGS),
		  via_user_limit(d, VIA_USER_HUGEPAGE_BYTES) >> 20,
		  via_user_limit(d, VIA_USER_MEMORY_BYTES) >> 20);
}

uint64_t
via_user_limit(const struct viad *d, enum via_user_res res)
{
	const struct via_conf *c = &d->conf;
	/* the limit set, the viad-wide limit it is a share of (the per-session
	 * caps count for max_sessions sessions), and whether it takes memory */
	const struct {
		uint64_t set, global;
		bool memory;
	} l[VIA_USER_RES_COUNT] = {
		[VIA_USER_SESSIONS] = { c->user_max_sessions, c->max_sessions, false },
		[VIA_USER_VIS] = { c->user_max_vi, c->max_vi, false },
		[VIA_USER_CQS] = { c->user_max_cq, c->max_cq, false },
		[VIA_USER_PTAGS] = { c->user_max_ptags, c->max_ptags, false },
		[VIA_USER_REGIONS] = { c->user_max_regions, c->max_regions, false },
		[VIA_USER_REGISTER_BYTES] = { c->user_max_register_bytes, c->max_register_bytes,
					      true },
		[VIA_USER_IN_PLACE_BYTES] = { c->user_max_in_place_bytes,
					      mul_sat(c->max_in_place_bytes, c->max_sessions), true },
		[VIA_USER_ALLOC_BYTES] = { c->user_max_alloc_bytes,
					   mul_sat(c->max_alloc_bytes, c->max_sessions), true },
		/* a connection request or wait per VI at most, in fair use */
		[VIA_USER_REQUESTS] = { c->user_max_requests, c->max_vi, false },
		[VIA_USER_MAPPINGS] = { c->user_max_mappings, d->host.max_mappings, false },
		[VIA_USER_HUGEPAGE_BYTES] = { c->user_max_hugepage_bytes, d->host.hugepage_bytes,
					      false },
		[VIA_USER_MEMORY_BYTES] = { c->user_max_memory_bytes, d->host.mem_bytes, false },
	};
	uint64_t share, shares = c->user_share != 0 ? c->user_share : 1, global = l[res].global;

	if (l[res].set != 0)
		return l[res].set;
	/* the host unknown (unit tests): no such limit */
	if (global == 0)
		return UINT64_MAX;
	if (l[res].memory && d->host.mem_bytes != 0 && d->host.mem_bytes < global)
		global = d->host.mem_bytes;
	share = global / shares;
	return share != 0 ? share : 1;
}

int
via_user_charge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n)
{
	struct via_user *u = s->user;
	uint64_t limit;

	/* a session made without a peer (viad's unit tests and fuzzers) */
	if (u == NULL)
		return 0;
	limit = via_user_limit(d, res);
	if (u->used[res] + n < u->used[res] || u->used[res] + n > limit) {
		if (u->uid == 0 && d->conf.root_exempt)
			goto take;
		if (!(u->refused & (1u << res)))
			VLOG_WARN("uid %u: limits.%s (%" PRIu64 ") reached: %" PRIu64 " held, %" PRIu64
				  " more refused (session %u, pid %d)", (unsigned)u->uid,
				  res_keys[res], limit, u->used[res], n, s->id, (int)s->pid);
		u->refused |= 1u << res;
		return -ENOSPC;
	}
	/* viad's own room among the kernel's mappings: for every user */
	if (res == VIA_USER_MAPPINGS && d->host.max_mappings != 0 &&
	    d->mappings + n > d->host.max_mappings) {
		if (!(u->refused & (1u << res)))
			VLOG_WARN("uid %u: limits.max_mappings (%" PRIu64 ") reached by all users "
				  "together; %" PRIu64 " more refused (session %u, pid %d)",
				  (unsigned)u->uid, d->host.max_mappings, n, s->id, (int)s->pid);
		u->refused |= 1u << res;
		return -ENOSPC;
	}
take:
	u->used[res] += n;
	if (res == VIA_USER_MAPPINGS)
		d->mappings += n;
	return 0;
}

void
via_user_uncharge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n)
{
	struct via_user *u = s->user;

	if (u == NULL)
		return;
	u->used[res] -= n;
	if (res == VIA_USER_MAPPINGS)
		d->mappings -= n;
	if (u->used[res] < via_user_limit(d, res))
		u->refused &= ~(1u << res);
}

/* Free @p u once nothing is charged to it. */
static void
user_put(struct viad *d, struct via_user *u)
{
	unsigned r;

	for (r = 0; r < VIA_USER_RES_COUNT; r++) {
		if (u->used[r] != 0)
			return;
	}
	TAILQ_REMOVE(&d->users, u, link);
	free(u);
}

int
via_user_attach(struct viad *d, struct via_session *s)
{
	struct via_user *u;
	int rc;

	TAILQ_FOREACH(u, &d->users, link) {
		if (u->uid == s->uid)
			break;
	}
	if (u == NULL) {
		u = calloc(1, sizeof(*u));
		if (u == NULL)
			return -ENOMEM;
		u->uid = s->uid;
		TAILQ_INSERT_TAIL(&d->users, u, link);
	}
	s->user = u;
	rc = via_user_charge(d, s, VIA_USER_SESSIONS, 1);
	if (rc != 0) {
		s->user = NULL;
		user_put(d, u);
	}
	return rc;
}

void
via_user_detach(struct viad *d, struct via_session *s)
{
	struct via_user *u = s->user;

	if (u == NULL)
		return;
	via_user_uncharge(d, s, VIA_USER_SESSIONS, 1);
	s->user = NULL;
	user_put(d, u);
}
