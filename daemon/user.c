/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Limits per user (issue 14; docs/design.md section 10): what one uid's
 * sessions hold together is counted here, so that one user cannot take the
 * viad-wide limits (viad.conf [limits]) every other user needs. Each
 * object is charged where its viad-wide limit is applied and uncharged
 * where it is freed, by its owner or by the reclaim of its session; the
 * session itself is charged at connect and uncharged when it ends.
 *
 * A limit reached refuses the request with -ENOSPC (VIP_ERROR_RESOURCE at
 * the client, as a viad-wide limit does) and one log line naming the
 * limit and the uid; a user held at a limit is not logged again until it
 * drops below it, so a client retrying in a loop cannot flood the log.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

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
};

/* a * b, UINT64_MAX if it does not fit */
static uint64_t
mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t
via_user_limit(const struct via_conf *c, enum via_user_res res)
{
	/* the limit set, and the viad-wide limit it is a share of; the
	 * per-session caps count for max_sessions sessions */
	const struct {
		uint64_t set, global;
	} l[VIA_USER_RES_COUNT] = {
		[VIA_USER_SESSIONS] = { c->user_max_sessions, c->max_sessions },
		[VIA_USER_VIS] = { c->user_max_vi, c->max_vi },
		[VIA_USER_CQS] = { c->user_max_cq, c->max_cq },
		[VIA_USER_PTAGS] = { c->user_max_ptags, c->max_ptags },
		[VIA_USER_REGIONS] = { c->user_max_regions, c->max_regions },
		[VIA_USER_REGISTER_BYTES] = { c->user_max_register_bytes, c->max_register_bytes },
		[VIA_USER_IN_PLACE_BYTES] = { c->user_max_in_place_bytes,
					      mul_sat(c->max_in_place_bytes, c->max_sessions) },
		[VIA_USER_ALLOC_BYTES] = { c->user_max_alloc_bytes,
					   mul_sat(c->max_alloc_bytes, c->max_sessions) },
		/* a connection request or wait per VI at most, in fair use */
		[VIA_USER_REQUESTS] = { c->user_max_requests, c->max_vi },
	};
	uint64_t share;

	if (l[res].set != 0)
		return l[res].set;
	share = l[res].global / (c->user_share != 0 ? c->user_share : 1);
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
	limit = via_user_limit(&d->conf, res);
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
take:
	u->used[res] += n;
	return 0;
}

void
via_user_uncharge(struct viad *d, struct via_session *s, enum via_user_res res, uint64_t n)
{
	struct via_user *u = s->user;

	if (u == NULL)
		return;
	u->used[res] -= n;
	if (u->used[res] < via_user_limit(&d->conf, res))
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
