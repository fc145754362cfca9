/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_check: the send/receive check (top of topo_check.c), its server
 * and its client.
 */
#include "topo_check.h"

/* ---- server -------------------------------------------------------------- */

/* Post the receives, wait for one connection request and accept it. */
int
server_accept(struct ep *e)
{
	VIP_NET_ADDRESS *local = mk_addr(e->na.LocalNicAddress, opt.disc);
	VIP_NET_ADDRESS *remote = mk_addr((const uint8_t[6]){ 0 }, "");
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	VIP_RETURN r;
	int rc = -1;

	if (post_all_recv(e) != 0)
		goto out;
	say(e->who, "waiting for a connection on discriminator \"%s\" (%u ms)", opt.disc,
	    opt.wait_ms);
	r = VipConnectWait(e->nic, local, opt.wait_ms, remote, &ra, &conn);
	if (r != VIP_SUCCESS) {
		say(e->who, "FAIL: VipConnectWait: %s", VipDpdkReturnString(r));
		goto out;
	}
	say(e->who, "request from %02x:%02x:%02x:%02x:%02x:%02x disc \"%.*s\" mtu %lu",
	    remote->HostAddress[0], remote->HostAddress[1], remote->HostAddress[2],
	    remote->HostAddress[3], remote->HostAddress[4], remote->HostAddress[5],
	    remote->DiscriminatorLen, (const char *)remote->HostAddress + 6, ra.MaxTransferSize);
	r = VipConnectAccept(conn, e->vi);
	if (r != VIP_SUCCESS) {
		say(e->who, "FAIL: VipConnectAccept: %s", VipDpdkReturnString(r));
		goto out;
	}
	say(e->who, "connected");
	rc = 0;
out:
	free(local);
	free(remote);
	return rc;
}

/*
 * The server's next message: 1 with *@p d and *@p idx; 0 when the client
 * disconnected (*@p peer_gone) or sent nothing for --idle-ms; -1 on an
 * error. *@p last_msg_us is when the last message came.
 */
int
server_next(struct ep *e, uint64_t *last_msg_us, VIP_DESCRIPTOR **d, unsigned *idx,
	    bool *peer_gone)
{
	for (;;) {
		int got = recv_msg(e, 500, d, idx);

		if (got < 0)
			return -1;
		if (got == 0) {
			if (now_us() - *last_msg_us > (uint64_t)opt.idle_ms * 1000u) {
				say(e->who, "no message for %u ms: giving up waiting", opt.idle_ms);
				return 0;
			}
			continue;
		}
		if ((*d)->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR) {
			*peer_gone = true;          /* the client disconnected */
			return 0;
		}
		*last_msg_us = now_us();
		return 1;
	}
}

int
run_server(struct ep *e)
{
	uint64_t seed = opt.seed, last_msg_us, t0 = 0;
	uint32_t last_seq = 0, max = 0, chunk = 0;
	bool seed_known = false, got_bye = false, peer_gone = false;
	int rc = 0;

	if (server_accept(e) != 0)
		return -1;
	last_msg_us = now_us();
	for (;;) {
		VIP_DESCRIPTOR *d;
		struct msg_info mi;
		unsigned idx;
		int got = server_next(e, &last_msg_us, &d, &idx, &peer_gone);

		if (got <= 0) {
			rc = got < 0 ? -1 : rc;
			break;
		}
		{
			int bad = check_recv(e, &e->recv[idx], d, seed, max ? max : e->max_transfer,
					     chunk ? chunk : 1, seed_known, &mi);
			uint32_t imm = d->CS.ImmediateData, status = d->CS.Status;

			/* the content is in e->scratch now: the descriptor goes
			 * back at once, so that NB_RECV are posted while we echo */
			if (post_recv(e, idx) != 0) {
				rc = -1;
				break;
			}
			if (bad) {
				e->mismatches++;
				/* echo what arrived all the same: the client sees it too */
				if ((status & VIP_STATUS_ERROR_MASK) == 0 && mi.len <= e->max_transfer &&
				    mi.seq > last_seq) {
					last_seq = mi.seq;
					if (send_msg(e, e->scratch, mi.len, imm) != 0) {
						rc = -1;
						break;
					}
				}
				continue;
			}
			e->msgs_rx++;
			e->bytes_rx += mi.len;
			if (mi.type == T_BYE) {
				got_bye = true;
				break;
			}
			if (mi.seq <= last_seq) {
				e->stale++;        /* a resend overtook it, or a duplicate */
				continue;
			}
			last_seq = mi.seq;
			if (mi.type == T_HELLO) {
				struct hello h;

				memcpy(&h, e->scratch, sizeof(h));
				if (h.magic != HELLO_MAGIC || h.max > e->max_transfer || h.chunk == 0 ||
				    h.max / h.chunk == 0) {
					say(e->who, "MISMATCH: bad hello (magic %#" PRIx64 " max %u "
					    "chunk %u)", h.magic, h.max, h.chunk);
					e->mismatches++;
				} else {
					if (h.flags & HELLO_F_RDMA) {
						say(e->who, "MISMATCH: the client runs --rdma, "
						    "this server does not");
						e->mismatches++;
					}
					if (opt.seed_set && h.seed != opt.seed) {
						say(e->who, "MISMATCH: client seed %#" PRIx64
						    " != --seed %#" PRIx64, h.seed, opt.seed);
						e->mismatches++;
					}
					if (!seed_known)
						say(e->who, "hello: seed %#" PRIx64 " max %u chunk %u "
						    "rounds %u", h.seed, h.max, h.chunk, h.rounds);
					seed = h.seed;
					max = h.max;
					chunk = h.chunk;
					seed_known = true;
					t0 = now_us();
				}
			}
			if (send_msg(e, e->scratch, mi.len, imm) != 0) {
				rc = -1;
				break;
			}
		}
	}
	if (got_bye || peer_gone)
		async_quiet = 1;
	{
		double secs = t0 ? (double)(now_us() - t0) / 1e6 : 0;

		say(e->who, "summary: %" PRIu64 " messages received, %" PRIu64 " echoed, %" PRIu64
		    " bytes in, %" PRIu64 " stale ignored, %" PRIu64 " mismatches, %" PRIu64
		    " dirty tails, end: %s, %.2f s",
		    e->msgs_rx, e->msgs_tx, e->bytes_rx, e->stale, e->mismatches, e->dirty_tails,
		    got_bye ? "bye" : peer_gone ? "peer disconnected" : rc ? "error" : "idle timeout",
		    secs);
	}
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	if (rc == 0 && e->mismatches == 0 && e->errors == 0 && seed_known)
		return 0;
	if (!seed_known && rc == 0)
		say(e->who, "FAIL: no hello received");
	return -1;
}

/* ---- client -------------------------------------------------------------- */

static int
u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
client_connect(struct ep *e, const uint8_t mac[6], const char *local_disc)
{
	VIP_NET_ADDRESS *local = mk_addr(e->na.LocalNicAddress, local_disc);
	VIP_NET_ADDRESS *remote = mk_addr(mac, opt.disc);
	uint64_t t0 = now_us(), deadline = t0 + (uint64_t)opt.connect_ms * 1000u;
	VIP_VI_ATTRIBUTES ra;
	unsigned tries = 0;
	VIP_RETURN r;

	for (;;) {
		uint64_t now = now_us();
		unsigned left = now >= deadline ? 0 : (unsigned)((deadline - now) / 1000u);

		if (left == 0) {
			say(e->who, "FAIL: VipConnectRequest to %02x:%02x:%02x:%02x:%02x:%02x/%s: "
			    "%s after %u tries, %u ms", mac[0], mac[1], mac[2], mac[3], mac[4],
			    mac[5], opt.disc, tries ? VipDpdkReturnString(r) : "no time", tries,
			    opt.connect_ms);
			free(local);
			free(remote);
			return -1;
		}
		tries++;
		r = VipConnectRequest(e->vi, local, remote, left < 1000 ? left : 1000, &ra);
		if (r == VIP_SUCCESS)
			break;
		if (r != VIP_NO_MATCH && r != VIP_TIMEOUT && r != VIP_REJECT) {
			say(e->who, "FAIL: VipConnectRequest: %s", VipDpdkReturnString(r));
			free(local);
			free(remote);
			return -1;
		}
		if (opt.verbose)
			say(e->who, "connect try %u: %s", tries, VipDpdkReturnString(r));
		sleep_ms(50);
	}
	say(e->who, "connected to %02x:%02x:%02x:%02x:%02x:%02x/%s after %u tries, %.1f ms "
	    "(remote MaxTransferSize %lu)", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5],
	    opt.disc, tries, (double)(now_us() - t0) / 1000.0, ra.MaxTransferSize);
	free(local);
	free(remote);
	return 0;
}

/*
 * One round: @p n messages (type, payload) in flight at once, each resent
 * with a fresh sequence number until its echo comes back; every echo is
 * checked. Returns 0, or -1 on a hard error or after too many tries.
 * rtt_us[i]: of message i's attempt that succeeded; *resends counts.
 */
struct pend {
	uint32_t seq, len;
	uint64_t t0;
	unsigned tries;
	bool done;
};

static int
client_round(struct ep *e, uint32_t *next_seq, unsigned n, uint32_t type,
	     const uint8_t *payload, uint32_t fixed_len, uint64_t seed, uint32_t max,
	     uint32_t chunk, uint64_t *rtt_us, unsigned *resends)
{
	struct pend p[NB_SEND];
	unsigned i, left = n;

	memset(p, 0, sizeof(p));
	while (left > 0) {
		uint64_t deadline;

		for (i = 0; i < n; i++) {
			if (p[i].done)
				continue;
			if (p[i].tries++ > opt.max_retries) {
				say(e->who, "FAIL: no echo after %u tries (last seq %u, len %u)",
				    opt.max_retries + 1, p[i].seq, p[i].len);
				return -1;
			}
			if (p[i].tries > 1) {
				(*resends)++;
				if (opt.verbose)
					say(e->who, "seq %u (len %u): no echo within %u ms, resending",
					    p[i].seq, p[i].len, opt.retry_ms);
			}
			p[i].seq = (*next_seq)++ & IMM_SEQ_MASK;
			if (type == T_DATA) {
				p[i].len = msg_size(seed, p[i].seq, max, chunk);
				pattern_fill(e->expect, p[i].len, seed, p[i].seq);
				payload = e->expect;
			} else {
				p[i].len = fixed_len;
			}
			p[i].t0 = now_us();
			if (send_post(e, payload, p[i].len, MK_IMM(type, p[i].seq)) != 0)
				return -1;
		}
		if (send_reap(e) != 0)
			return -1;
		deadline = now_us() + (uint64_t)opt.retry_ms * 1000u;
		while (left > 0) {
			uint64_t now = now_us();
			VIP_DESCRIPTOR *d;
			struct msg_info mi;
			unsigned idx;
			int got;

			if (now >= deadline)
				break;
			got = recv_msg(e, (unsigned)((deadline - now + 999) / 1000u), &d, &idx);
			if (got < 0)
				return -1;
			if (got == 0)
				break;
			if (d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR) {
				say(e->who, "FAIL: receive flushed (status %#x): the connection is "
				    "gone", d->CS.Status);
				return -1;
			}
			if (check_recv(e, &e->recv[idx], d, seed, max, chunk, true, &mi) != 0) {
				e->mismatches++;
				if (post_recv(e, idx) != 0)
					return -1;
				if (d->CS.Status & VIP_STATUS_ERROR_MASK)
					return -1;   /* the VI is broken: no point going on */
				continue;
			}
			if (type == T_HELLO && mi.type == T_HELLO &&
			    memcmp(e->scratch, payload, HELLO_LEN) != 0) {
				say(e->who, "MISMATCH: hello echo differs");
				e->mismatches++;
			}
			e->msgs_rx++;
			e->bytes_rx += mi.len;
			if (post_recv(e, idx) != 0)
				return -1;
			if (mi.seq >= *next_seq) {
				say(e->who, "MISMATCH: echo of seq %u, never sent (next %u)", mi.seq,
				    *next_seq);
				e->mismatches++;
				continue;
			}
			for (i = 0; i < n; i++) {
				if (!p[i].done && p[i].seq == mi.seq) {
					p[i].done = true;
					rtt_us[i] = now_us() - p[i].t0;
					left--;
					break;
				}
			}
			if (i == n)
				e->stale++;           /* of an attempt resent since */
		}
	}
	return 0;
}

int
run_client(struct ep *e, const uint8_t mac[6], const char *local_disc)
{
	uint32_t max = e->max_transfer, chunk = e->chunk, next_seq = 1;
	const unsigned w = opt.window;
	uint64_t *rtts = calloc((size_t)opt.rounds * w + NB_SEND, sizeof(uint64_t)), t0;
	uint64_t seed = opt.seed, rtt[NB_SEND];
	unsigned resends = 0, round, done = 0, lost_rounds = 0, nrtt = 0, i;
	struct hello h = { 0 };
	double secs;
	int rc = 0;

	if (rtts == NULL)
		return -1;
	if (opt.max_size != 0 && opt.max_size < max)
		max = opt.max_size;
	if (max / chunk == 0)
		chunk = max;
	if (post_all_recv(e) != 0 || client_connect(e, mac, local_disc) != 0) {
		free(rtts);
		return -1;
	}
	h = (struct hello){ .magic = HELLO_MAGIC, .seed = seed, .max = max, .chunk = chunk,
			    .rounds = opt.rounds };
	if (client_round(e, &next_seq, 1, T_HELLO, (const uint8_t *)&h, HELLO_LEN, seed, max,
			 chunk, rtt, &resends) != 0) {
		say(e->who, "FAIL: hello");
		free(rtts);
		return -1;
	}
	resends = 0;
	t0 = now_us();
	for (round = 0; round < opt.rounds; round++) {
		unsigned before = resends;

		if (client_round(e, &next_seq, w, T_DATA, NULL, 0, seed, max, chunk, rtt,
				 &resends) != 0) {
			rc = -1;
			break;
		}
		if (resends != before) {
			lost_rounds++;
		} else {
			for (i = 0; i < w; i++)
				rtts[nrtt++] = rtt[i];
		}
		done++;
		if (opt.verbose > 1)
			say(e->who, "round %u ok, rtt %" PRIu64 " us", round, rtt[0]);
	}
	secs = (double)(now_us() - t0) / 1e6;
	async_quiet = 1;
	/* bye: the server also stops on our disconnect */
	if (rc == 0)
		send_msg(e, NULL, 0, MK_IMM(T_BYE, next_seq++));
	qsort(rtts, nrtt, sizeof(*rtts), u64cmp);
	say(e->who, "summary: %u/%u rounds of %u message%s completed, %u with a loss (%u resends), "
	    "%" PRIu64 " stale echoes, %" PRIu64 " mismatches, %" PRIu64 " dirty tails; %" PRIu64
	    " bytes each way, %.2f s, %.1f MB/s echoed; rtt us p50 %" PRIu64 " p99 %" PRIu64
	    " max %" PRIu64 " (rounds without loss); seed %#" PRIx64,
	    done, opt.rounds, w, w > 1 ? "s" : "", lost_rounds, resends, e->stale, e->mismatches,
	    e->dirty_tails,
	    e->bytes_rx, secs, secs > 0 ? (double)e->bytes_rx / secs / 1e6 : 0.0,
	    nrtt ? rtts[nrtt / 2] : 0, nrtt ? rtts[(nrtt * 99) / 100] : 0,
	    nrtt ? rtts[nrtt - 1] : 0, seed);
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	free(rtts);
	if (rc == 0 && done == opt.rounds && e->mismatches == 0 && e->errors == 0)
		return 0;
	return -1;
}
