/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management and VI states through a real viad (VIA 1.0 §4, §5,
 * §9.4 and the peer-to-peer calls of the Intel VI Developer's Guide):
 * VipConnectWait / VipDpdkConnectWaitFrom, VipConnectAccept,
 * VipConnectReject, VipConnectRequest, VipDisconnect,
 * VipConnectPeerRequest / Done / Wait, the Pending Connect, Connected and
 * Error states, the backlog of early requests, CONN_LOST through the error
 * callback, reconnection.
 *
 * One viad with the harness defaults (the loopback NIC "via0") and a grace
 * of CM_GRACE_MS for requests nobody waits for; the two ends of a
 * connection are two sessions (VipOpenNic twice) of this process or two VIs
 * of one session.
 *
 * Usage: it_cm PATH/TO/viad
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* slack allowed past a timeout on a shared 2-core machine */
#define CM_SLACK_MS 1000   /* a late timer on a loaded 2-core machine; never early */
/* viad.cm_nomatch_grace_ms of this test's viad: a request nobody waits for
 * fails after it (VIA §4.1); the backlog tests below keep requests waiting
 * for a VipConnectWait for several hundred ms */
#define CM_GRACE_MS 3000
/* viad.cm_unreachable_ms of this test's viad: a request no viad answers
 * fails after it, whatever its Timeout (VIA §4.1, issue 26) */
#define CM_UNREACHABLE_MS 1000

static const uint8_t mac_nobody[6] = { 0x02, 0x99, 0x99, 0x99, 0x99, 0x99 };
static uint8_t mac_self[6];
static VIP_NIC_ATTRIBUTES nic_attrs;

/* ---- addresses ------------------------------------------------------------ */

static bool
addr_is(const VIP_NET_ADDRESS *a, const uint8_t *mac, const char *disc)
{
	size_t dl = strlen(disc);

	return a->HostAddressLen == 6 && memcmp(a->HostAddress, mac, 6) == 0 &&
	       a->DiscriminatorLen == dl && memcmp(a->HostAddress + 6, disc, dl) == 0;
}

/* ---- asynchronous errors ---------------------------------------------------- */

/* ---- VIs ------------------------------------------------------------------ */

static VIP_VI_HANDLE
vi_new(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, VIP_ULONG mtu)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN rc;

	h_vi_attrs(&a, ptag);
	if (mtu != 0)
		a.MaxTransferSize = mtu;
	rc = VipCreateVi(nic, &a, NULL, NULL, &vi);
	if (rc != VIP_SUCCESS) {
		CHECK_RET(rc, VIP_SUCCESS, "create a VI");
		return NULL;
	}
	return vi;
}

#define CHECK_STATE(vi, want, ...)                                                  \
	do {                                                                        \
		int st_ = h_vi_state(vi);                                           \
		char what_[256];                                                    \
		snprintf(what_, sizeof(what_), __VA_ARGS__);                        \
		CHECK(st_ == (int)(want), "%s: state %s (got %s)", what_,           \
		      h_state_name((int)(want)), h_state_name(st_));                \
	} while (0)

/* ---- asynchronous connection calls ----------------------------------------- */

struct req_job {
	pthread_t t;
	VIP_VI_HANDLE vi;
	union h_net_addr local, remote;
	VIP_ULONG timeout;
	VIP_VI_ATTRIBUTES attrs;
	VIP_RETURN rc;
	uint64_t elapsed;
	volatile bool finished;
};

static void *
req_main(void *arg)
{
	struct req_job *j = arg;
	uint64_t t0 = h_now_ms();

	j->rc = VipConnectRequest(j->vi, &j->local.a, &j->remote.a, j->timeout, &j->attrs);
	j->elapsed = h_now_ms() - t0;
	__atomic_store_n(&j->finished, true, __ATOMIC_RELEASE);
	return NULL;
}

/* VipConnectRequest(vi, {self, ldisc}, {rmac, rdisc}, timeout) in a thread. */
static void
req_start(struct req_job *j, VIP_VI_HANDLE vi, const char *ldisc, const uint8_t *rmac,
	  const char *rdisc, VIP_ULONG timeout)
{
	memset(j, 0, sizeof(*j));
	j->vi = vi;
	h_addr(&j->local, mac_self, ldisc);
	h_addr(&j->remote, rmac, rdisc);
	j->timeout = timeout;
	j->rc = VIP_ERROR_RESOURCE;
	if (pthread_create(&j->t, NULL, req_main, j) != 0) {
		CHECK(0, "start a VipConnectRequest thread");
		j->finished = true;
		j->t = pthread_self();
	}
}

static void
req_join(struct req_job *j)
{
	if (!pthread_equal(j->t, pthread_self()))
		pthread_join(j->t, NULL);
}

enum wait_action { WAIT_ONLY, WAIT_ACCEPT, WAIT_REJECT };

struct wait_job {
	pthread_t t;
	VIP_NIC_HANDLE nic;
	union h_net_addr local;
	VIP_ULONG timeout;
	enum wait_action action;
	VIP_VI_HANDLE vi;
	union h_net_addr remote;
	VIP_VI_ATTRIBUTES rattrs;
	VIP_CONN_HANDLE conn;
	VIP_RETURN wait_rc, act_rc;
	uint64_t elapsed;
};

static void *
wait_main(void *arg)
{
	struct wait_job *j = arg;
	uint64_t t0 = h_now_ms();

	j->wait_rc = VipConnectWait(j->nic, &j->local.a, j->timeout, &j->remote.a, &j->rattrs,
				    &j->conn);
	j->elapsed = h_now_ms() - t0;
	if (j->wait_rc == VIP_SUCCESS && j->action == WAIT_ACCEPT)
		j->act_rc = VipConnectAccept(j->conn, j->vi);
	else if (j->wait_rc == VIP_SUCCESS && j->action == WAIT_REJECT)
		j->act_rc = VipConnectReject(j->conn);
	return NULL;
}

static void
wait_start(struct wait_job *j, VIP_NIC_HANDLE nic, const char *disc, VIP_ULONG timeout,
	   enum wait_action action, VIP_VI_HANDLE vi)
{
	memset(j, 0, sizeof(*j));
	j->nic = nic;
	h_addr(&j->local, mac_self, disc);
	j->timeout = timeout;
	j->action = action;
	j->vi = vi;
	j->wait_rc = j->act_rc = VIP_ERROR_RESOURCE;
	if (pthread_create(&j->t, NULL, wait_main, j) != 0) {
		CHECK(0, "start a VipConnectWait thread");
		j->t = pthread_self();
	}
}

static void
wait_join(struct wait_job *j)
{
	if (!pthread_equal(j->t, pthread_self()))
		pthread_join(j->t, NULL);
}

/* ---- posting helpers (a few descriptors for flush checks) -------------------- */

struct mem {
	uint8_t *base;
	size_t len;
	VIP_MEM_HANDLE mh;
};

static VIP_DESCRIPTOR *
desc_prep(struct mem *m, unsigned idx, uint32_t buf_len)
{
	VIP_DESCRIPTOR *d = (VIP_DESCRIPTOR *)(m->base + (size_t)idx * 64);

	memset(d, 0, sizeof(*d));
	d->CS.SegCount = 1;
	d->CS.Length = buf_len;
	d->DS[0].Local.Data.Address = m->base + 65536 + (size_t)idx * 4096;
	d->DS[0].Local.Handle = m->mh;
	d->DS[0].Local.Length = buf_len;
	return d;
}

/* ---- tests ------------------------------------------------------------------- */

static void
test_request_params(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt)
{
	VIP_VI_HANDLE vi = vi_new(nic, pt, 0);
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	char longdisc[300];
	uint64_t t0;
	VIP_RETURN rc;

	h_note("VipConnectRequest parameters");
	if (vi == NULL)
		return;
	memset(longdisc, 'x', sizeof(longdisc) - 1);
	longdisc[nic_attrs.MaxDiscriminatorLen + 1] = '\0';
	h_addr(&l, mac_self, "rp-l");
	h_addr(&r, NULL, "rp-r");
	CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "remote HostAddressLen 0");
	h_addr(&r, mac_self, "rp-r");
	r.a.HostAddressLen = 4;
	r.a.DiscriminatorLen = 0;
	CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "remote HostAddressLen 4");
	h_addr(&r, mac_self, "rp-r");
	h_addr(&l, mac_nobody, "rp-l");
	CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "local host address not this NIC's");
	h_addr(&l, mac_self, longdisc);
	CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "local discriminator of MaxDiscriminatorLen+1 (%u) bytes",
		  (unsigned)nic_attrs.MaxDiscriminatorLen + 1);
	h_addr(&l, mac_self, "rp-l");
	h_addr(&r, mac_self, longdisc);
	CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "remote discriminator of MaxDiscriminatorLen+1 bytes");
	h_addr(&r, mac_self, "rp-r");
	CHECK_RET(VipConnectRequest(vi, NULL, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "NULL LocalAddr");
	CHECK_RET(VipConnectRequest(vi, &l.a, NULL, 1000, &ra), VIP_INVALID_PARAMETER,
		  "NULL RemoteAddr");
	CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 1000, NULL), VIP_INVALID_PARAMETER,
		  "NULL RemoteViAttribs");
	CHECK_RET(VipConnectRequest(NULL, &l.a, &r.a, 1000, &ra), VIP_INVALID_PARAMETER,
		  "NULL VI handle");
	CHECK_STATE(vi, VIP_STATE_IDLE, "VI after the rejected calls");

	t0 = h_now_ms();
	rc = VipConnectRequest(vi, &l.a, &r.a, 0, &ra);
	CHECK_RET(rc, VIP_TIMEOUT, "Timeout 0 (§9.4.4: immediate timeout error)");
	CHECK(h_now_ms() - t0 < 100, "Timeout 0 returns at once (%llu ms)",
	      (unsigned long long)(h_now_ms() - t0));
	CHECK_STATE(vi, VIP_STATE_IDLE, "VI after Timeout 0");

	/* a local address without host part is allowed: connect for real */
	{
		VIP_NIC_HANDLE snic = nic;
		VIP_VI_HANDLE svi = vi_new(snic, pt, 0);
		struct wait_job w;

		if (svi != NULL) {
			wait_start(&w, snic, "rp-srv", 3000, WAIT_ACCEPT, svi);
			h_addr(&l, NULL, "rp-nohost");
			h_addr(&r, mac_self, "rp-srv");
			CHECK_RET(VipConnectRequest(vi, &l.a, &r.a, 3000, &ra), VIP_SUCCESS,
				  "request with a local address of HostAddressLen 0");
			wait_join(&w);
			CHECK(w.wait_rc == VIP_SUCCESS && addr_is(&w.remote.a, mac_self, "rp-nohost"),
			      "the server sees this NIC's MAC and the discriminator as the "
			      "requester's address");
			VipDisconnect(vi);
			VipDisconnect(svi);
			CHECK_RET(VipDestroyVi(svi), VIP_SUCCESS, "destroy the server VI");
		}
	}
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");
	h_err_clear();
}

static void
test_wait_params(VIP_NIC_HANDLE nic)
{
	union h_net_addr l, r, from;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	char longdisc[300];
	uint64_t t0, el;

	h_note("VipConnectWait parameters and timeouts");
	memset(longdisc, 'y', sizeof(longdisc) - 1);
	longdisc[nic_attrs.MaxDiscriminatorLen + 1] = '\0';
	h_addr(&l, mac_self, "wp-none");
	t0 = h_now_ms();
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "ConnectWait Timeout 0 with no request");
	CHECK(h_now_ms() - t0 < 100, "Timeout 0 returns at once (%llu ms)",
	      (unsigned long long)(h_now_ms() - t0));
	t0 = h_now_ms();
	CHECK_RET(VipConnectWait(nic, &l.a, 300, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "ConnectWait Timeout 300 with no request");
	el = h_now_ms() - t0;
	CHECK(el >= 300 && el <= 300 + CM_SLACK_MS, "ConnectWait times out after 300 ms (%llu ms)",
	      (unsigned long long)el);
	h_addr(&l, NULL, "wp-none");
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "ConnectWait with a local address of HostAddressLen 0");
	h_addr(&l, mac_self, longdisc);
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn), VIP_INVALID_PARAMETER,
		  "ConnectWait discriminator longer than MaxDiscriminatorLen");
	h_addr(&l, mac_self, "wp");
	l.a.HostAddressLen = 3;
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn), VIP_INVALID_PARAMETER,
		  "ConnectWait HostAddressLen 3");
	h_addr(&l, mac_self, "wp");
	CHECK_RET(VipConnectWait(nic, NULL, 0, &r.a, &ra, &conn), VIP_INVALID_PARAMETER,
		  "ConnectWait NULL LocalAddr");
	CHECK_RET(VipConnectWait(nic, &l.a, 0, NULL, &ra, &conn), VIP_INVALID_PARAMETER,
		  "ConnectWait NULL RemoteAddr");
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, NULL, &conn), VIP_INVALID_PARAMETER,
		  "ConnectWait NULL RemoteViAttribs");
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, &ra, NULL), VIP_INVALID_PARAMETER,
		  "ConnectWait NULL ConnHandle");
	CHECK_RET(VipConnectWait(NULL, &l.a, 0, &r.a, &ra, &conn), VIP_INVALID_PARAMETER,
		  "ConnectWait NULL NIC");
	h_addr(&from, mac_self, longdisc);
	CHECK_RET(VipDpdkConnectWaitFrom(nic, &l.a, &from.a, 0, &r.a, &ra, &conn),
		  VIP_INVALID_PARAMETER, "ConnectWaitFrom filter discriminator too long");
	h_addr(&from, mac_self, "x");
	from.a.HostAddressLen = 5;
	CHECK_RET(VipDpdkConnectWaitFrom(nic, &l.a, &from.a, 0, &r.a, &ra, &conn),
		  VIP_INVALID_PARAMETER, "ConnectWaitFrom filter HostAddressLen 5");
	CHECK_RET(VipConnectAccept(NULL, NULL), VIP_INVALID_PARAMETER, "Accept NULL handles");
	CHECK_RET(VipConnectReject(NULL), VIP_INVALID_PARAMETER, "Reject NULL handle");
	CHECK_RET(VipDisconnect(NULL), VIP_INVALID_PARAMETER, "Disconnect NULL handle");
}

static void
test_no_answer(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt)
{
	VIP_VI_HANDLE vi = vi_new(nic, pt, 0);
	struct req_job j;
	bool pending;

	h_note("VipConnectRequest to a MAC nobody has, and to a discriminator nobody waits on");
	if (vi == NULL)
		return;
	req_start(&j, vi, "na-l", mac_nobody, "na-r", 500);
	pending = h_state_wait(vi, VIP_STATE_CONNECT_PENDING, 400) == VIP_STATE_CONNECT_PENDING;
	CHECK(pending, "the VI is Pending Connect during VipConnectRequest (seen from another "
		       "thread)");
	req_join(&j);
	CHECK_RET(j.rc, VIP_TIMEOUT, "request to 02:99:99:99:99:99: no answer at all");
	CHECK(j.elapsed >= 500 && j.elapsed <= 500 + CM_SLACK_MS,
	      "it times out after its Timeout of 500 ms (%llu ms)", (unsigned long long)j.elapsed);
	CHECK_STATE(vi, VIP_STATE_IDLE, "VI after the timeout");

	req_start(&j, vi, "nm-l", mac_self, "nm-nobody-waits", 600);
	pending = h_state_wait(vi, VIP_STATE_CONNECT_PENDING, 400) == VIP_STATE_CONNECT_PENDING;
	CHECK(pending, "Pending Connect while waiting for a match");
	req_join(&j);
	CHECK_RET(j.rc, VIP_NO_MATCH, "request that viad answers but nobody waits on");
	CHECK(j.elapsed >= 600 && j.elapsed <= 600 + CM_SLACK_MS,
	      "NO_MATCH at its Timeout of 600 ms, shorter than the grace (%llu ms)",
	      (unsigned long long)j.elapsed);
	CHECK_STATE(vi, VIP_STATE_IDLE, "VI after NO_MATCH");
	/* §4.1: "the VI Provider will return an error to the VI Consumer's
	 * request": after the grace, not at a longer Timeout */
	req_start(&j, vi, "nm-l", mac_self, "nm-nobody-waits", 3 * CM_GRACE_MS);
	req_join(&j);
	CHECK(j.rc == VIP_NO_MATCH && j.elapsed >= CM_GRACE_MS &&
	      j.elapsed <= CM_GRACE_MS + CM_SLACK_MS,
	      "Timeout %u ms: NO_MATCH after the grace of %u ms (%s, %llu ms)", 3 * CM_GRACE_MS,
	      CM_GRACE_MS, VipDpdkReturnString(j.rc), (unsigned long long)j.elapsed);

	/* §4.1: "If the specified remote VI ... is not reachable ... the VI
	 * Provider will return an error": VIP_INFINITE too */
	req_start(&j, vi, "un-l", mac_nobody, "un-r", VIP_INFINITE);
	req_join(&j);
	CHECK(j.rc == VIP_TIMEOUT && j.elapsed >= CM_UNREACHABLE_MS &&
	      j.elapsed <= CM_UNREACHABLE_MS + CM_SLACK_MS,
	      "VIP_INFINITE to a MAC nobody has: VIP_TIMEOUT after viad.cm_unreachable_ms = %u ms "
	      "(%s, %llu ms)", CM_UNREACHABLE_MS, VipDpdkReturnString(j.rc),
	      (unsigned long long)j.elapsed);
	CHECK_STATE(vi, VIP_STATE_IDLE, "VI after an unreachable peer");
	{
		union h_net_addr l, r;
		VIP_VI_ATTRIBUTES ra;
		uint64_t t0 = h_now_ms();
		VIP_RETURN rc;

		CHECK_RET(VipConnectPeerRequest(vi, h_addr(&l, mac_self, "un-pl"),
						h_addr(&r, mac_nobody, "un-pr"), VIP_INFINITE),
			  VIP_SUCCESS, "a peer request, VIP_INFINITE, to a MAC nobody has");
		rc = VipConnectPeerWait(vi, &ra);
		CHECK(rc == VIP_TIMEOUT && h_now_ms() - t0 <= CM_UNREACHABLE_MS + CM_SLACK_MS,
		      "VipConnectPeerWait: VIP_TIMEOUT after viad.cm_unreachable_ms (%s, %llu ms)",
		      VipDpdkReturnString(rc), (unsigned long long)(h_now_ms() - t0));
	}
	CHECK_RET(VipDestroyVi(vi), VIP_SUCCESS, "destroy the VI");
}

static void
test_basic(VIP_NIC_HANDLE c_nic, VIP_PROTECTION_HANDLE c_pt, VIP_NIC_HANDLE s_nic,
	   VIP_PROTECTION_HANDLE s_pt)
{
	VIP_VI_HANDLE cvi = vi_new(c_nic, c_pt, 0), svi = vi_new(s_nic, s_pt, 16384);
	VIP_VI_ATTRIBUTES a, qa;
	VIP_BOOLEAN se, re;
	VIP_VI_STATE st;
	struct wait_job w;
	struct req_job j;
	struct h_err_event ev;
	union h_net_addr l, r;
	VIP_RETURN rc;

	h_note("connect two sessions: Wait + Accept against Request; then Disconnect");
	if (cvi == NULL || svi == NULL)
		return;
	/* the server's VI must match the requester's MTU: set it */
	h_vi_attrs(&a, s_pt);
	CHECK_RET(VipSetViAttributes(svi, &a), VIP_SUCCESS, "set the server VI's MTU to 32 KiB");
	wait_start(&w, s_nic, "basic-srv", 3000, WAIT_ONLY, NULL);
	req_start(&j, cvi, "basic-cli", mac_self, "basic-srv", 3000);
	wait_join(&w);
	CHECK_RET(w.wait_rc, VIP_SUCCESS, "ConnectWait gets the request");
	CHECK(addr_is(&w.remote.a, mac_self, "basic-cli"),
	      "RemoteAddr: this NIC's MAC and the requester's discriminator");
	CHECK(w.rattrs.ReliabilityLevel == VIP_SERVICE_UNRELIABLE &&
	      w.rattrs.MaxTransferSize == 32768 && w.rattrs.QoS == 0,
	      "RemoteViAttribs: the requester's reliability %u, MTU %lu, QoS %lu",
	      (unsigned)w.rattrs.ReliabilityLevel, (unsigned long)w.rattrs.MaxTransferSize,
	      (unsigned long)w.rattrs.QoS);
	CHECK_STATE(cvi, VIP_STATE_CONNECT_PENDING, "requester while the server decides");
	if (w.wait_rc == VIP_SUCCESS) {
		CHECK_RET(VipConnectAccept(w.conn, svi), VIP_SUCCESS, "accept");
		CHECK_RET(VipConnectAccept(w.conn, svi), VIP_INVALID_PARAMETER,
			  "the ConnHandle is invalid after a successful Accept");
		CHECK_RET(VipConnectReject(w.conn), VIP_INVALID_PARAMETER,
			  "Reject of the consumed ConnHandle");
	}
	req_join(&j);
	CHECK_RET(j.rc, VIP_SUCCESS, "the request succeeds");
	CHECK(j.attrs.ReliabilityLevel == VIP_SERVICE_UNRELIABLE &&
	      j.attrs.MaxTransferSize == 32768,
	      "the requester gets the server VI's attributes (MTU %lu)",
	      (unsigned long)j.attrs.MaxTransferSize);
	CHECK_STATE(cvi, VIP_STATE_CONNECTED, "requester");
	CHECK_STATE(svi, VIP_STATE_CONNECTED, "server");
	rc = VipQueryVi(cvi, &st, &qa, &se, &re);
	CHECK(rc == VIP_SUCCESS && se && re, "both queues of a fresh connection are empty");

	/* requests not valid while Connected (§5) */
	h_addr(&l, mac_self, "basic-cli2");
	h_addr(&r, mac_self, "basic-srv");
	CHECK_RET(VipConnectRequest(cvi, &l.a, &r.a, 500, &a), VIP_INVALID_STATE,
		  "ConnectRequest on a Connected VI");
	CHECK_RET(VipConnectPeerRequest(cvi, &l.a, &r.a, 500), VIP_INVALID_STATE,
		  "ConnectPeerRequest on a Connected VI");
	h_vi_attrs(&a, c_pt);
	CHECK_RET(VipSetViAttributes(cvi, &a), VIP_INVALID_STATE,
		  "SetViAttributes on a Connected VI");
	CHECK_RET(VipDestroyVi(cvi), VIP_ERROR_RESOURCE, "DestroyVi on a Connected VI");
	CHECK_STATE(cvi, VIP_STATE_CONNECTED, "requester after the refused calls");

	/* VipDisconnect: the peer learns of it */
	h_err_clear();
	CHECK_RET(VipDisconnect(cvi), VIP_SUCCESS, "requester disconnects");
	CHECK_STATE(cvi, VIP_STATE_IDLE, "requester after Disconnect");
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, svi, 2000, &ev),
	      "the server VI gets VIP_ERROR_CONN_LOST through its error callback");
	if (ev.code == VIP_ERROR_CONN_LOST) {
		CHECK(ev.nic == s_nic && ev.resource == VIP_RESOURCE_VI,
		      "CONN_LOST names the server's NIC and ResourceCode VI (%d)",
		      (int)ev.resource);
		CHECK(!ev.on_main_thread, "the handler ran on a provider thread");
	}
	CHECK(h_err_count(VIP_ERROR_CONN_LOST, cvi) == 0,
	      "no CONN_LOST for the VI that disconnected itself");
	CHECK(h_state_wait(svi, VIP_STATE_ERROR, 1000) == VIP_STATE_ERROR,
	      "the server VI is in the Error state (now %s)", h_state_name(h_vi_state(svi)));
	CHECK_RET(VipConnectRequest(svi, &l.a, &r.a, 500, &a), VIP_INVALID_STATE,
		  "ConnectRequest on a VI in the Error state");
	CHECK_RET(VipDestroyVi(svi), VIP_ERROR_RESOURCE, "DestroyVi in the Error state");
	CHECK_RET(VipDisconnect(svi), VIP_SUCCESS, "Disconnect in the Error state");
	CHECK_STATE(svi, VIP_STATE_IDLE, "server after its Disconnect");
	CHECK_RET(VipDisconnect(svi), VIP_SUCCESS, "Disconnect of an Idle VI");
	CHECK_STATE(svi, VIP_STATE_IDLE, "server after a second Disconnect");

	/* both can connect again, the other way round */
	h_connect(s_nic, svi, c_nic, cvi, "basic-swap", 5000);
	CHECK_STATE(svi, VIP_STATE_CONNECTED, "former server");
	CHECK_STATE(cvi, VIP_STATE_CONNECTED, "former requester");
	VipDisconnect(svi);
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, cvi, 2000, &ev), "CONN_LOST on the second connection");
	VipDisconnect(cvi);
	CHECK_RET(VipDestroyVi(cvi), VIP_SUCCESS, "destroy the requester VI");
	CHECK_RET(VipDestroyVi(svi), VIP_SUCCESS, "destroy the server VI");
	h_err_clear();
}

static void
test_reject(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt)
{
	VIP_VI_HANDLE cvi = vi_new(nic, pt, 0), svi = vi_new(nic, pt, 0);
	struct wait_job w;
	struct req_job j;

	h_note("VipConnectReject");
	if (cvi == NULL || svi == NULL)
		return;
	/* "rej-c" and "rej-s": the addresses of h_connect(..., "rej", ...) below */
	wait_start(&w, nic, "rej-s", 3000, WAIT_ONLY, NULL);
	req_start(&j, cvi, "rej-c", mac_self, "rej-s", 3000);
	wait_join(&w);
	CHECK_RET(w.wait_rc, VIP_SUCCESS, "ConnectWait gets the request");
	if (w.wait_rc == VIP_SUCCESS) {
		CHECK_RET(VipConnectReject(w.conn), VIP_SUCCESS, "reject it");
		CHECK_RET(VipConnectReject(w.conn), VIP_INVALID_PARAMETER,
			  "the ConnHandle is invalid after Reject (Reject again)");
		CHECK_RET(VipConnectAccept(w.conn, svi), VIP_INVALID_PARAMETER,
			  "the ConnHandle is invalid after Reject (Accept)");
	}
	req_join(&j);
	CHECK_RET(j.rc, VIP_REJECT, "the requester's ConnectRequest returns VIP_REJECT");
	CHECK(j.elapsed < 2000, "soon after the rejection (%llu ms)", (unsigned long long)j.elapsed);
	CHECK_STATE(cvi, VIP_STATE_IDLE, "requester after the rejection");
	CHECK_STATE(svi, VIP_STATE_IDLE, "the server VI was not touched");
	/* the rejected VI connects afterwards, same addresses */
	h_connect(nic, cvi, nic, svi, "rej", 5000);
	CHECK_STATE(cvi, VIP_STATE_CONNECTED, "requester");
	VipDisconnect(cvi);
	VipDisconnect(svi);
	CHECK_RET(VipDestroyVi(cvi), VIP_SUCCESS, "destroy");
	CHECK_RET(VipDestroyVi(svi), VIP_SUCCESS, "destroy");
	h_err_clear();
}

static void
test_accept_errors(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, VIP_NIC_HANDLE other,
		   VIP_PROTECTION_HANDLE other_pt)
{
	VIP_VI_HANDLE cvi = vi_new(nic, pt, 0), rel = NULL, big = vi_new(nic, pt, 65536),
		      busy_a = vi_new(nic, pt, 0), busy_b = vi_new(nic, pt, 0),
		      foreign = vi_new(other, other_pt, 0);
	VIP_VI_ATTRIBUTES a;
	struct wait_job w;
	struct req_job j;

	h_note("VipConnectAccept errors leave the request valid (§4.1, §9.4.2)");
	h_vi_attrs(&a, pt);
	a.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
	if ((nic_attrs.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY) &&
	    VipCreateVi(nic, &a, NULL, NULL, &rel) != VIP_SUCCESS)
		CHECK(0, "create a Reliable Delivery VI");
	if (cvi == NULL || big == NULL || busy_a == NULL || busy_b == NULL || foreign == NULL)
		return;
	/* a connected VI for the state check */
	h_connect(nic, busy_a, nic, busy_b, "acc-busy", 5000);
	wait_start(&w, nic, "acc-srv", 3000, WAIT_ONLY, NULL);
	req_start(&j, cvi, "acc-cli", mac_self, "acc-srv", 5000);
	wait_join(&w);
	CHECK_RET(w.wait_rc, VIP_SUCCESS, "ConnectWait gets the request");
	if (w.wait_rc == VIP_SUCCESS) {
		if (rel != NULL) {
			CHECK_RET(VipConnectAccept(w.conn, rel), VIP_INVALID_RELIABILITY_LEVEL,
				  "Accept with a Reliable Delivery VI (requester Unreliable)");
			CHECK_STATE(rel, VIP_STATE_IDLE, "the refused VI");
		}
		CHECK_RET(VipConnectAccept(w.conn, busy_a), VIP_INVALID_STATE,
			  "Accept with a Connected VI");
		CHECK_RET(VipConnectAccept(w.conn, foreign), VIP_INVALID_PARAMETER,
			  "Accept with a VI of another NIC handle");
		CHECK_RET(VipConnectAccept(w.conn, NULL), VIP_INVALID_PARAMETER,
			  "Accept with a NULL VI");
		CHECK_STATE(cvi, VIP_STATE_CONNECT_PENDING, "the requester still waits");
		/* §4.1, §9.10.5: sizes are no conflict, the smaller is granted
		 * (integration_conform, mtu) */
		CHECK_RET(VipConnectAccept(w.conn, big), VIP_SUCCESS,
			  "Accept with an Idle VI of MTU 64 KiB afterwards (requester 32 KiB)");
	}
	req_join(&j);
	CHECK_RET(j.rc, VIP_SUCCESS, "the requester is connected");
	CHECK(j.attrs.MaxTransferSize == 32768, "on the smaller MaxTransferSize (%lu)",
	      (unsigned long)j.attrs.MaxTransferSize);
	CHECK_STATE(big, VIP_STATE_CONNECTED, "accepting VI");
	h_note("a QoS conflict cannot be produced: VipCreateVi takes QoS 0 only");
	VipDisconnect(cvi);
	VipDisconnect(big);
	VipDisconnect(busy_a);
	VipDisconnect(busy_b);
	VipDestroyVi(cvi);
	if (rel != NULL)
		VipDestroyVi(rel);
	VipDestroyVi(big);
	VipDestroyVi(busy_a);
	VipDestroyVi(busy_b);
	VipDestroyVi(foreign);
	h_err_clear();
}

static void
test_backlog(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct mem *m)
{
	VIP_VI_HANDLE cvi = vi_new(nic, pt, 0), svi = vi_new(nic, pt, 0);
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	struct req_job j;
	VIP_RETURN rc;

	h_note("a request that arrived before VipConnectWait (backlog)");
	if (cvi == NULL || svi == NULL)
		return;
	req_start(&j, cvi, "bl-cli", mac_self, "bl-srv", 3000);
	h_sleep_ms(350);
	h_addr(&l, mac_self, "bl-srv");
	rc = VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn);
	CHECK_RET(rc, VIP_SUCCESS, "ConnectWait Timeout 0 finds the request that came first");
	if (rc == VIP_SUCCESS) {
		CHECK(addr_is(&r.a, mac_self, "bl-cli"), "with the requester's address");
		CHECK_RET(VipConnectAccept(conn, svi), VIP_SUCCESS, "accept it");
	}
	req_join(&j);
	CHECK_RET(j.rc, VIP_SUCCESS, "the early requester is connected");
	CHECK(j.elapsed < 1500, "soon after the accept (%llu ms)", (unsigned long long)j.elapsed);
	CHECK_RET(VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "an accepted request is not handed out again");
	VipDisconnect(cvi);
	VipDisconnect(svi);
	h_err_clear();

	h_note("backlog of a requester that gave up");
	req_start(&j, cvi, "bl2-cli", mac_self, "bl2-srv", 300);
	req_join(&j);
	CHECK_RET(j.rc, VIP_NO_MATCH, "requester with Timeout 300 and no listener");
	h_addr(&l, mac_self, "bl2-srv");
	rc = VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn);
	if (rc == VIP_SUCCESS) {
		/* the request is still in the backlog; the requester gave up */
		VIP_RETURN arc = VipConnectAccept(conn, svi);

		CHECK_RET(arc, VIP_TIMEOUT,
			  "Accept of a request whose requester timed out (vipl.h: VIP_TIMEOUT)");
		if (arc == VIP_SUCCESS) {
			VIP_DESCRIPTOR *sd = desc_prep(m, 20, 16), *out;
			struct h_err_event ev;

			h_note("the accepting VI is now %s, 'connected' to a VI that is %s",
			       h_state_name(h_vi_state(svi)), h_state_name(h_vi_state(cvi)));
			/* §4.2: at the latest the first transfer tells it */
			h_err_clear();
			VipPostSend(svi, sd, m->mh);
			VipSendWait(svi, 1000, &out);
			CHECK(h_err_take(VIP_ERROR_CONN_LOST, svi, 2000, &ev),
			      "its first send makes it learn that the peer is not connected "
			      "(CONN_LOST, §4.2)");
			VipDisconnect(svi);
		} else if (arc != VIP_TIMEOUT) {
			VipConnectReject(conn);
		}
	} else {
		CHECK_RET(rc, VIP_TIMEOUT, "ConnectWait right after the requester gave up");
	}
	CHECK_STATE(cvi, VIP_STATE_IDLE, "the requester that gave up");

	req_start(&j, cvi, "bl3-cli", mac_self, "bl3-srv", 200);
	req_join(&j);
	CHECK_RET(j.rc, VIP_NO_MATCH, "requester with Timeout 200 and no listener");
	h_sleep_ms(1600);
	h_addr(&l, mac_self, "bl3-srv");
	rc = VipConnectWait(nic, &l.a, 0, &r.a, &ra, &conn);
	CHECK_RET(rc, VIP_TIMEOUT, "the backlog entry expired ~1 s after the last retransmission");
	if (rc == VIP_SUCCESS)
		VipConnectReject(conn);
	VipDisconnect(cvi);
	VipDisconnect(svi);
	CHECK_RET(VipDestroyVi(cvi), VIP_SUCCESS, "destroy");
	CHECK_RET(VipDestroyVi(svi), VIP_SUCCESS, "destroy");
	h_err_clear();
}

static void
test_filter(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt)
{
	VIP_VI_HANDLE c1 = vi_new(nic, pt, 0), c2 = vi_new(nic, pt, 0), s1 = vi_new(nic, pt, 0),
		      s2 = vi_new(nic, pt, 0);
	union h_net_addr l, r, from;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	struct req_job j1, j2;
	VIP_RETURN rc;

	h_note("VipDpdkConnectWaitFrom: requests from a specific endpoint (§4.1, §4.3)");
	if (c1 == NULL || c2 == NULL || s1 == NULL || s2 == NULL)
		return;
	req_start(&j1, c1, "flt-c1", mac_self, "flt-srv", 4000);
	h_sleep_ms(150);
	req_start(&j2, c2, "flt-c2", mac_self, "flt-srv", 4000);
	h_sleep_ms(300);
	h_addr(&l, mac_self, "flt-srv");
	h_addr(&from, NULL, "flt-none");
	CHECK_RET(VipDpdkConnectWaitFrom(nic, &l.a, &from.a, 0, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "filter on a discriminator nobody requests from");
	h_addr(&from, mac_nobody, "");
	CHECK_RET(VipDpdkConnectWaitFrom(nic, &l.a, &from.a, 200, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "filter on a host nobody requests from");
	h_addr(&from, NULL, "flt-c2");
	rc = VipDpdkConnectWaitFrom(nic, &l.a, &from.a, 0, &r.a, &ra, &conn);
	CHECK_RET(rc, VIP_SUCCESS, "filter on flt-c2 (the second requester)");
	if (rc == VIP_SUCCESS) {
		CHECK(addr_is(&r.a, mac_self, "flt-c2"), "it returns the second requester");
		CHECK_RET(VipConnectAccept(conn, s2), VIP_SUCCESS, "accept it");
	}
	h_addr(&from, mac_self, "flt-c1");
	rc = VipDpdkConnectWaitFrom(nic, &l.a, &from.a, 0, &r.a, &ra, &conn);
	CHECK_RET(rc, VIP_SUCCESS, "filter on this host and flt-c1");
	if (rc == VIP_SUCCESS) {
		CHECK(addr_is(&r.a, mac_self, "flt-c1"), "it returns the first requester");
		CHECK_RET(VipConnectAccept(conn, s1), VIP_SUCCESS, "accept it");
	}
	req_join(&j1);
	req_join(&j2);
	CHECK_RET(j1.rc, VIP_SUCCESS, "first requester connected");
	CHECK_RET(j2.rc, VIP_SUCCESS, "second requester connected");

	/* a plain wait takes any requester; a waiter on another
	 * discriminator takes none */
	VipDisconnect(c1);
	VipDisconnect(s1);
	h_err_clear();
	req_start(&j1, c1, "flt-c3", mac_self, "flt-srv2", 3000);
	h_addr(&l, mac_self, "flt-other");
	CHECK_RET(VipConnectWait(nic, &l.a, 300, &r.a, &ra, &conn), VIP_TIMEOUT,
		  "a wait on another discriminator does not get the request");
	h_addr(&l, mac_self, "flt-srv2");
	rc = VipConnectWait(nic, &l.a, 2000, &r.a, &ra, &conn);
	CHECK_RET(rc, VIP_SUCCESS, "a plain wait on the discriminator gets it");
	if (rc == VIP_SUCCESS)
		CHECK_RET(VipConnectAccept(conn, s1), VIP_SUCCESS, "accept");
	req_join(&j1);
	CHECK_RET(j1.rc, VIP_SUCCESS, "connected");
	VipDisconnect(c1);
	VipDisconnect(s1);
	VipDisconnect(c2);
	VipDisconnect(s2);
	VipDestroyVi(c1);
	VipDestroyVi(c2);
	VipDestroyVi(s1);
	VipDestroyVi(s2);
	h_err_clear();
}

/* Two waiters on one discriminator: one request goes to exactly one. */
static void
test_two_waiters(VIP_NIC_HANDLE n1, VIP_PROTECTION_HANDLE p1, VIP_NIC_HANDLE n2,
		 VIP_PROTECTION_HANDLE p2)
{
	VIP_VI_HANDLE cvi = vi_new(n1, p1, 0), s1 = vi_new(n1, p1, 0), s2 = vi_new(n2, p2, 0);
	struct wait_job w1, w2;
	struct req_job j;
	unsigned got;

	h_note("two VipConnectWait on one discriminator, one request");
	if (cvi == NULL || s1 == NULL || s2 == NULL)
		return;
	wait_start(&w1, n1, "tw-srv", 1000, WAIT_ACCEPT, s1);
	wait_start(&w2, n2, "tw-srv", 1000, WAIT_ACCEPT, s2);
	h_sleep_ms(50);
	req_start(&j, cvi, "tw-cli", mac_self, "tw-srv", 3000);
	req_join(&j);
	wait_join(&w1);
	wait_join(&w2);
	CHECK_RET(j.rc, VIP_SUCCESS, "the request connects");
	got = (w1.wait_rc == VIP_SUCCESS) + (w2.wait_rc == VIP_SUCCESS);
	CHECK(got == 1, "exactly one waiter got it (%s, %s)", VipDpdkReturnString(w1.wait_rc),
	      VipDpdkReturnString(w2.wait_rc));
	CHECK((w1.wait_rc == VIP_SUCCESS ? w2.wait_rc : w1.wait_rc) == VIP_TIMEOUT,
	      "the other one timed out");
	VipDisconnect(cvi);
	VipDisconnect(s1);
	VipDisconnect(s2);
	VipDestroyVi(cvi);
	VipDestroyVi(s1);
	VipDestroyVi(s2);
	h_err_clear();
}

static void
test_pending(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt)
{
	VIP_VI_HANDLE cvi = vi_new(nic, pt, 0), svi = vi_new(nic, pt, 0);
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES a;
	struct wait_job w;
	struct req_job j;

	h_note("requests refused in Pending Connect; VipDisconnect of a pending VI");
	if (cvi == NULL || svi == NULL)
		return;
	req_start(&j, cvi, "pd-cli", mac_self, "pd-srv", 4000);
	CHECK(h_state_wait(cvi, VIP_STATE_CONNECT_PENDING, 1000) == VIP_STATE_CONNECT_PENDING,
	      "VI Pending Connect");
	h_addr(&l, mac_self, "pd-cli2");
	h_addr(&r, mac_self, "pd-srv");
	CHECK_RET(VipConnectRequest(cvi, &l.a, &r.a, 500, &a), VIP_INVALID_STATE,
		  "a second ConnectRequest while Pending Connect (§5)");
	CHECK_RET(VipConnectPeerRequest(cvi, &l.a, &r.a, 500), VIP_INVALID_STATE,
		  "a PeerRequest while Pending Connect");
	h_vi_attrs(&a, pt);
	CHECK_RET(VipSetViAttributes(cvi, &a), VIP_INVALID_STATE,
		  "SetViAttributes while Pending Connect");
	CHECK_RET(VipDestroyVi(cvi), VIP_ERROR_RESOURCE, "DestroyVi while Pending Connect");
	wait_start(&w, nic, "pd-srv", 3000, WAIT_ACCEPT, svi);
	wait_join(&w);
	req_join(&j);
	CHECK_RET(j.rc, VIP_SUCCESS, "the first request still connects");
	CHECK_RET(w.act_rc, VIP_SUCCESS, "accepted");
	VipDisconnect(cvi);
	VipDisconnect(svi);
	h_err_clear();

	req_start(&j, cvi, "pd2-cli", mac_self, "pd2-nobody", 5000);
	CHECK(h_state_wait(cvi, VIP_STATE_CONNECT_PENDING, 1000) == VIP_STATE_CONNECT_PENDING,
	      "VI Pending Connect again");
	CHECK_RET(VipDisconnect(cvi), VIP_SUCCESS, "Disconnect of a Pending Connect VI");
	CHECK_STATE(cvi, VIP_STATE_IDLE, "VI after Disconnect in Pending Connect (§5.2)");
	req_join(&j);
	CHECK(j.rc != VIP_SUCCESS && j.elapsed < 2000,
	      "the blocked ConnectRequest returns at once, unsuccessfully (%s after %llu ms)",
	      VipDpdkReturnString(j.rc), (unsigned long long)j.elapsed);
	h_note("ConnectRequest aborted by VipDisconnect returned %s", VipDpdkReturnString(j.rc));
	/* the VI connects after the aborted request */
	h_connect(nic, cvi, nic, svi, "pd3", 5000);
	VipDisconnect(cvi);
	VipDisconnect(svi);
	CHECK_RET(VipDestroyVi(cvi), VIP_SUCCESS, "destroy");
	CHECK_RET(VipDestroyVi(svi), VIP_SUCCESS, "destroy");
	h_err_clear();
}

/* Descriptors posted on a connection when it ends (§4.2, §5.4, §9.4.5). */
static void
test_flush(VIP_NIC_HANDLE c_nic, VIP_PROTECTION_HANDLE c_pt, struct mem *cm,
	   VIP_NIC_HANDLE s_nic, VIP_PROTECTION_HANDLE s_pt, struct mem *sm)
{
	VIP_VI_HANDLE cvi = vi_new(c_nic, c_pt, 0), svi = vi_new(s_nic, s_pt, 0);
	VIP_DESCRIPTOR *d[4], *out;
	struct h_err_event ev;
	VIP_RETURN rc;
	unsigned i;
	bool ok;

	h_note("VipDisconnect flushes, the peer goes to Error (§4.2, §5.4)");
	if (cvi == NULL || svi == NULL)
		return;
	if (!h_connect(c_nic, cvi, s_nic, svi, "fl", 5000))
		return;
	for (i = 0; i < 3; i++) {
		d[i] = desc_prep(cm, i, 1024);
		CHECK_RET(VipPostRecv(cvi, d[i], cm->mh), VIP_SUCCESS, "post receive %u", i);
	}
	d[3] = desc_prep(sm, 0, 1024);
	CHECK_RET(VipPostRecv(svi, d[3], sm->mh), VIP_SUCCESS, "peer posts a receive");
	h_err_clear();
	CHECK_RET(VipDisconnect(cvi), VIP_SUCCESS, "disconnect with 3 receives posted");
	ok = true;
	for (i = 0; i < 3; i++) {
		rc = VipRecvDone(cvi, &out);
		if (rc != VIP_SUCCESS || out != d[i] ||
		    out->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
				       VIP_STATUS_OP_RECEIVE)) {
			h_note("receive %u: %s, desc %p (want %p), status %#x", i,
			       VipDpdkReturnString(rc), (void *)out, (void *)d[i],
			       rc == VIP_SUCCESS ? out->CS.Status : 0);
			ok = false;
		}
	}
	CHECK(ok, "every posted receive completed with Done|DESC_FLUSHED|OP_RECEIVE, in order");
	CHECK_RET(VipRecvDone(cvi, &out), VIP_NOT_DONE, "nothing more on the receive queue");
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, svi, 2000, &ev), "the peer gets CONN_LOST");
	CHECK(h_state_wait(svi, VIP_STATE_ERROR, 1000) == VIP_STATE_ERROR,
	      "the peer is in the Error state");
	rc = VipRecvWait(svi, 1000, &out);
	CHECK(rc == VIP_SUCCESS && out == d[3] &&
	      (out->CS.Status & (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR)) ==
		      (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR),
	      "the peer's posted receive completes DESC_FLUSHED on the lost connection (%s, "
	      "status %#x)",
	      VipDpdkReturnString(rc), rc == VIP_SUCCESS ? out->CS.Status : 0);

	/* §5.4: send and receive posted in the Error state complete in error */
	d[0] = desc_prep(sm, 1, 100);
	CHECK_RET(VipPostSend(svi, d[0], sm->mh), VIP_SUCCESS, "send posted in the Error state");
	rc = VipSendWait(svi, 1000, &out);
	CHECK(rc == VIP_SUCCESS && out == d[0] &&
	      out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR),
	      "it completes with Done|DESC_FLUSHED (%s, status %#x)", VipDpdkReturnString(rc),
	      rc == VIP_SUCCESS ? out->CS.Status : 0);
	d[1] = desc_prep(sm, 2, 100);
	CHECK_RET(VipPostRecv(svi, d[1], sm->mh), VIP_SUCCESS, "receive posted in the Error state");
	rc = VipRecvWait(svi, 500, &out);
	CHECK(rc == VIP_SUCCESS && (out->CS.Status & VIP_STATUS_DONE) &&
	      (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "a receive posted in the Error state completes in error (§5.4) (%s)",
	      VipDpdkReturnString(rc));
	CHECK_RET(VipDisconnect(svi), VIP_SUCCESS, "the peer disconnects");
	if (rc != VIP_SUCCESS) {
		rc = VipRecvDone(svi, &out);
		CHECK(rc == VIP_SUCCESS && out == d[1] &&
		      (out->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR),
		      "the receive posted in Error is flushed by Disconnect at least");
	}
	CHECK_STATE(svi, VIP_STATE_IDLE, "the peer after Disconnect");

	/* Idle: a receive posted is flushed by Disconnect (§5.1) */
	d[2] = desc_prep(cm, 3, 100);
	CHECK_RET(VipPostRecv(cvi, d[2], cm->mh), VIP_SUCCESS, "receive posted on an Idle VI");
	CHECK_RET(VipRecvDone(cvi, &out), VIP_NOT_DONE, "it is not processed while Idle");
	CHECK_RET(VipDestroyVi(cvi), VIP_ERROR_RESOURCE, "DestroyVi with a receive posted");
	CHECK_RET(VipDisconnect(cvi), VIP_SUCCESS, "Disconnect of the Idle VI");
	rc = VipRecvDone(cvi, &out);
	CHECK(rc == VIP_SUCCESS && out == d[2] &&
	      out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
				 VIP_STATUS_OP_RECEIVE),
	      "Disconnect of an Idle VI flushes its receive queue (%s, status %#x)",
	      VipDpdkReturnString(rc), rc == VIP_SUCCESS ? out->CS.Status : 0);

	/* a send posted on an Idle VI completes in error (§6.2) */
	d[3] = desc_prep(cm, 4, 100);
	CHECK_RET(VipPostSend(cvi, d[3], cm->mh), VIP_SUCCESS, "send posted on an Idle VI");
	rc = VipSendWait(cvi, 1000, &out);
	CHECK(rc == VIP_SUCCESS && out == d[3] &&
	      out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR),
	      "it completes with Done|DESC_FLUSHED (%s, status %#x)", VipDpdkReturnString(rc),
	      rc == VIP_SUCCESS ? out->CS.Status : 0);

	/* reconnect and move one message to prove the pair works again */
	/* the pair connects again after the flushes */
	if (h_connect(c_nic, cvi, s_nic, svi, "fl2", 5000)) {
		d[0] = desc_prep(sm, 3, 64);
		d[1] = desc_prep(cm, 5, 64);
		memset(d[1]->DS[0].Local.Data.Address, 0x7e, 64);
		d[1]->CS.Control = VIP_CONTROL_IMMEDIATE;
		d[1]->CS.ImmediateData = 0x5eed;
		VipPostRecv(svi, d[0], sm->mh);
		VipPostSend(cvi, d[1], cm->mh);
		rc = VipRecvWait(svi, 2000, &out);
		CHECK(rc == VIP_SUCCESS && out->CS.Length == 64 && out->CS.ImmediateData == 0x5eed &&
		      out->CS.Status ==
			      (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE) &&
		      memcmp(d[0]->DS[0].Local.Data.Address, d[1]->DS[0].Local.Data.Address, 64) ==
			      0,
		      "a message crosses the new connection (%s)", VipDpdkReturnString(rc));
		rc = VipSendWait(cvi, 2000, &out);
		CHECK(rc == VIP_SUCCESS && out->CS.Status == VIP_STATUS_DONE,
		      "and its send completes");
		VipDisconnect(cvi);
		VipDisconnect(svi);
	}
	CHECK_RET(VipDestroyVi(cvi), VIP_SUCCESS, "destroy");
	CHECK_RET(VipDestroyVi(svi), VIP_SUCCESS, "destroy");
	h_err_clear();
}

/* A VI of the old connection cannot reach the peer's new connection. */
static void
test_stale(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct mem *m)
{
	VIP_VI_HANDLE a = vi_new(nic, pt, 0), b = vi_new(nic, pt, 0), c = vi_new(nic, pt, 0);
	VIP_DESCRIPTOR *rd, *sd, *out;
	struct h_err_event ev;
	VIP_RETURN rc;
	unsigned round, good = 0;

	h_note("reconnections: frames of an old connection never reach a new one (§4.1, §4.2)");
	if (a == NULL || b == NULL || c == NULL)
		return;
	if (!h_connect(nic, a, nic, b, "st-ab", 5000))
		return;
	CHECK_RET(VipDisconnect(b), VIP_SUCCESS, "b disconnects");
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, a, 2000, &ev), "a gets CONN_LOST");
	if (!h_connect(nic, c, nic, b, "st-cb", 5000))
		return;
	rd = desc_prep(m, 10, 256);
	CHECK_RET(VipPostRecv(b, rd, m->mh), VIP_SUCCESS, "b posts a receive");
	sd = desc_prep(m, 11, 256);
	CHECK_RET(VipPostSend(a, sd, m->mh), VIP_SUCCESS, "a (Error) posts a send");
	rc = VipSendWait(a, 1000, &out);
	CHECK(rc == VIP_SUCCESS && out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR),
	      "a's send is flushed");
	h_sleep_ms(100);
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "nothing reached b's new connection");
	VipDisconnect(a);
	VipDisconnect(c);
	VipDisconnect(b);
	VipRecvDone(b, &out);
	h_err_clear();

	/* connect, transfer, disconnect many times in a row */
	for (round = 0; round < 20; round++) {
		char tag[16];

		snprintf(tag, sizeof(tag), "st-r%u", round);
		if (!h_connect(nic, a, nic, b, tag, 5000))
			break;
		rd = desc_prep(m, 12, 256);
		sd = desc_prep(m, 13, 8);
		sd->CS.Control = VIP_CONTROL_IMMEDIATE;
		sd->CS.ImmediateData = round;
		VipPostRecv(b, rd, m->mh);
		VipPostSend(a, sd, m->mh);
		rc = VipRecvWait(b, 2000, &out);
		if (rc == VIP_SUCCESS && out->CS.ImmediateData == round &&
		    out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE))
			good++;
		else
			h_note("round %u: %s, imm %u", round, VipDpdkReturnString(rc),
			       rc == VIP_SUCCESS ? out->CS.ImmediateData : 0);
		VipSendWait(a, 2000, &out);
		if (round & 1) {
			VipDisconnect(a);
			VipDisconnect(b);
		} else {
			VipDisconnect(b);
			VipDisconnect(a);
		}
	}
	CHECK(good == 20, "20 rounds of connect, one message, disconnect: %u delivered right", good);
	CHECK_STATE(a, VIP_STATE_IDLE, "a at the end");
	CHECK_STATE(b, VIP_STATE_IDLE, "b at the end");
	CHECK_RET(VipDestroyVi(a), VIP_SUCCESS, "destroy a");
	CHECK_RET(VipDestroyVi(b), VIP_SUCCESS, "destroy b");
	CHECK_RET(VipDestroyVi(c), VIP_SUCCESS, "destroy c");
	h_err_clear();
}

static void
test_peer(VIP_NIC_HANDLE n1, VIP_PROTECTION_HANDLE p1, VIP_NIC_HANDLE n2,
	  VIP_PROTECTION_HANDLE p2)
{
	VIP_VI_HANDLE a = vi_new(n1, p1, 0), b = vi_new(n2, p2, 0), c = vi_new(n1, p1, 0),
		      d = vi_new(n1, p1, 0);
	union h_net_addr la, lb;
	VIP_VI_ATTRIBUTES ra;
	uint64_t t0, el;
	VIP_RETURN rc;

	h_note("VipConnectPeerRequest / Done / Wait");
	if (a == NULL || b == NULL || c == NULL || d == NULL)
		return;
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_INVALID_STATE, "PeerDone without a PeerRequest");
	CHECK_RET(VipConnectPeerDone(a, NULL), VIP_INVALID_PARAMETER, "PeerDone NULL attributes");
	CHECK_RET(VipConnectPeerWait(a, &ra), VIP_INVALID_STATE, "PeerWait without a PeerRequest");
	h_addr(&la, mac_self, "peer-a");
	h_addr(&lb, mac_self, "peer-b");
	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 4000), VIP_SUCCESS,
		  "a (session 1) PeerRequest a->b");
	CHECK_STATE(a, VIP_STATE_CONNECT_PENDING, "a after PeerRequest");
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_NOT_DONE, "PeerDone while b has not asked");
	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 4000), VIP_INVALID_STATE,
		  "a second PeerRequest on the pending VI");
	h_sleep_ms(250);
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_NOT_DONE, "still NOT_DONE 250 ms later");
	CHECK_RET(VipConnectPeerRequest(b, &lb.a, &la.a, 4000), VIP_SUCCESS,
		  "b (session 2) PeerRequest b->a");
	rc = VipConnectPeerWait(b, &ra);
	CHECK_RET(rc, VIP_SUCCESS, "PeerWait on b");
	CHECK(rc != VIP_SUCCESS || (ra.MaxTransferSize == 32768 &&
				    ra.ReliabilityLevel == VIP_SERVICE_UNRELIABLE),
	      "with a's attributes");
	t0 = h_now_ms();
	do {
		rc = VipConnectPeerDone(a, &ra);
		if (rc == VIP_NOT_DONE)
			h_sleep_ms(5);
	} while (rc == VIP_NOT_DONE && h_now_ms() - t0 < 3000);
	CHECK_RET(rc, VIP_SUCCESS, "PeerDone on a");
	CHECK_STATE(a, VIP_STATE_CONNECTED, "a");
	CHECK_STATE(b, VIP_STATE_CONNECTED, "b");
	VipDisconnect(a);
	VipDisconnect(b);
	h_err_clear();

	/* two VIs of one session, the other one first */
	h_addr(&la, mac_self, "peer-c");
	h_addr(&lb, mac_self, "peer-d");
	CHECK_RET(VipConnectPeerRequest(d, &lb.a, &la.a, 4000), VIP_SUCCESS, "d PeerRequest d->c");
	CHECK_RET(VipConnectPeerRequest(c, &la.a, &lb.a, 4000), VIP_SUCCESS, "c PeerRequest c->d");
	CHECK_RET(VipConnectPeerWait(c, &ra), VIP_SUCCESS, "PeerWait on c (same session)");
	CHECK_RET(VipConnectPeerWait(d, &ra), VIP_SUCCESS, "PeerWait on d (same session)");
	CHECK_STATE(c, VIP_STATE_CONNECTED, "c");
	CHECK_STATE(d, VIP_STATE_CONNECTED, "d");
	VipDisconnect(c);
	VipDisconnect(d);
	h_err_clear();

	/* nobody answers */
	h_addr(&la, mac_self, "peer-lonely");
	h_addr(&lb, mac_self, "peer-absent");
	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 400), VIP_SUCCESS,
		  "PeerRequest nobody answers, Timeout 400");
	t0 = h_now_ms();
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_NOT_DONE, "PeerDone before the timeout");
	do {
		rc = VipConnectPeerDone(a, &ra);
		if (rc == VIP_NOT_DONE)
			h_sleep_ms(5);
	} while (rc == VIP_NOT_DONE && h_now_ms() - t0 < 3000);
	el = h_now_ms() - t0;
	CHECK_RET(rc, VIP_TIMEOUT, "PeerDone after the timeout");
	CHECK(el >= 350 && el <= 400 + CM_SLACK_MS, "after about 400 ms (%llu ms)",
	      (unsigned long long)el);
	CHECK_STATE(a, VIP_STATE_IDLE, "the VI is Idle again");
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_INVALID_STATE,
		  "PeerDone once the result was taken");

	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 400), VIP_SUCCESS,
		  "PeerRequest nobody answers, again, Timeout 400");
	t0 = h_now_ms();
	rc = VipConnectPeerWait(a, &ra);
	el = h_now_ms() - t0;
	CHECK_RET(rc, VIP_TIMEOUT, "PeerWait on a PeerRequest nobody answers");
	CHECK(el >= 350 && el <= 400 + CM_SLACK_MS, "PeerWait returns after about 400 ms (%llu ms)",
	      (unsigned long long)el);
	CHECK_STATE(a, VIP_STATE_IDLE, "the VI is Idle again");
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_INVALID_STATE,
		  "PeerDone once PeerWait returned the result: no request outstanding");

	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 4000), VIP_SUCCESS,
		  "PeerRequest, then Disconnect while pending");
	CHECK_RET(VipDisconnect(a), VIP_SUCCESS, "Disconnect of a pending PeerRequest");
	CHECK_STATE(a, VIP_STATE_IDLE, "Idle after the Disconnect");
	CHECK_RET(VipConnectPeerDone(a, &ra), VIP_INVALID_STATE,
		  "PeerDone after the Disconnect: no request outstanding");
	h_addr(&la, mac_self, "peer-x");
	h_addr(&lb, mac_self, "peer-y");
	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 0), VIP_TIMEOUT,
		  "PeerRequest Timeout 0");
	CHECK_STATE(a, VIP_STATE_IDLE, "Idle after PeerRequest Timeout 0");
	lb.a.HostAddressLen = 0;
	CHECK_RET(VipConnectPeerRequest(a, &la.a, &lb.a, 1000), VIP_INVALID_PARAMETER,
		  "PeerRequest remote without host address");
	VipDestroyVi(a);
	VipDestroyVi(b);
	VipDestroyVi(c);
	VipDestroyVi(d);
	h_err_clear();
}

/* Closing a session with a Connected VI tells the peer. */
static void
test_session_close(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt)
{
	VIP_NIC_HANDLE n2 = NULL;
	VIP_PROTECTION_HANDLE p2 = NULL;
	VIP_VI_HANDLE a = vi_new(nic, pt, 0), b;
	struct h_err_event ev;

	h_note("closing the NIC of a connected VI: the peer loses the connection");
	if (a == NULL)
		return;
	if (VipOpenNic("via0", &n2) != VIP_SUCCESS || VipCreatePtag(n2, &p2) != VIP_SUCCESS) {
		CHECK(0, "open a third session");
		return;
	}
	VipErrorCallback(n2, NULL, h_err_handler);
	b = vi_new(n2, p2, 0);
	if (b == NULL)
		return;
	if (!h_connect(nic, a, n2, b, "sc", 5000))
		return;
	h_err_clear();
	CHECK_RET(VipCloseNic(n2), VIP_SUCCESS, "close the session holding the connected VI");
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, a, 2000, &ev), "the peer gets CONN_LOST");
	CHECK(h_state_wait(a, VIP_STATE_ERROR, 1000) == VIP_STATE_ERROR,
	      "the peer is in the Error state");
	VipDisconnect(a);
	CHECK_RET(VipDestroyVi(a), VIP_SUCCESS, "destroy");
	h_err_clear();
}

int
main(int argc, char **argv)
{
	struct viad_proc v;
	VIP_NIC_HANDLE n1 = NULL, n2 = NULL;
	VIP_PROTECTION_HANDLE p1 = NULL, p2 = NULL;
	struct mem m1 = { 0 }, m2 = { 0 };
	VIP_MEM_ATTRIBUTES ma;
	uint64_t t0;
	char grace[64], unreachable[64];
	const char *sets[] = { grace, unreachable, NULL };

	h_init(argc, argv, 100);
	snprintf(grace, sizeof(grace), "viad.cm_nomatch_grace_ms=%u", CM_GRACE_MS);
	snprintf(unreachable, sizeof(unreachable), "viad.cm_unreachable_ms=%u", CM_UNREACHABLE_MS);
	if (viad_start(&v, "cm", sets) != 0)
		return h_finish();
	t0 = h_now_ms();
	if (VipOpenNic("via0", &n1) != VIP_SUCCESS || VipOpenNic("via0", &n2) != VIP_SUCCESS ||
	    VipQueryNic(n1, &nic_attrs) != VIP_SUCCESS || VipCreatePtag(n1, &p1) != VIP_SUCCESS ||
	    VipCreatePtag(n2, &p2) != VIP_SUCCESS) {
		CHECK(0, "open two sessions on via0");
		viad_stop(&v);
		return h_finish();
	}
	memcpy(mac_self, nic_attrs.LocalNicAddress, 6);
	h_note("via0: MAC %02x:%02x:%02x:%02x:%02x:%02x, MTU %lu, max discriminator %u",
	       mac_self[0], mac_self[1], mac_self[2], mac_self[3], mac_self[4], mac_self[5],
	       (unsigned long)nic_attrs.MaxTransferSize, (unsigned)nic_attrs.MaxDiscriminatorLen);
	CHECK_RET(VipErrorCallback(n1, NULL, h_err_handler), VIP_SUCCESS, "error callback, session 1");
	CHECK_RET(VipErrorCallback(n2, NULL, h_err_handler), VIP_SUCCESS, "error callback, session 2");
	memset(&ma, 0, sizeof(ma));
	m1.len = m2.len = 1 << 20;
	ma.Ptag = p1;
	if (h_alloc(n1, m1.len, (void **)&m1.base) != VIP_SUCCESS ||
	    VipRegisterMem(n1, m1.base, m1.len, &ma, &m1.mh) != VIP_SUCCESS) {
		CHECK(0, "provider memory for session 1");
		return h_finish();
	}
	ma.Ptag = p2;
	m2.base = aligned_alloc(4096, m2.len);
	if (m2.base == NULL || VipRegisterMem(n2, m2.base, m2.len, &ma, &m2.mh) != VIP_SUCCESS) {
		CHECK(0, "heap memory for session 2");
		return h_finish();
	}

	test_request_params(n1, p1);
	test_wait_params(n1);
	test_no_answer(n1, p1);
	test_basic(n1, p1, n2, p2);
	test_reject(n1, p1);
	test_accept_errors(n1, p1, n2, p2);
	test_backlog(n1, p1, &m1);
	test_filter(n1, p1);
	test_two_waiters(n1, p1, n2, p2);
	test_pending(n1, p1);
	test_flush(n1, p1, &m1, n2, p2, &m2);
	test_stale(n1, p1, &m1);
	test_peer(n1, p1, n2, p2);
	test_session_close(n1, p1);

	VipDeregisterMem(n2, m2.base, m2.mh);
	free(m2.base);
	VipDeregisterMem(n1, m1.base, m1.mh);
	h_free(n1, m1.base);
	CHECK_RET(VipCloseNic(n2), VIP_SUCCESS, "close session 2");
	CHECK_RET(VipCloseNic(n1), VIP_SUCCESS, "close session 1");
	h_note("tests took %llu ms", (unsigned long long)(h_now_ms() - t0));
	CHECK(viad_alive(&v), "viad is still running");
	viad_stop(&v);
	return h_finish();
}
