/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Standard addressing of the "via" provider (issue 27, part 4), the way
 * libfabric applications do it: a host name and a service, nothing passed
 * out of band.
 *
 *   fi_addr server SERVICE         (VIAD_SOCKET: the server's viad)
 *   fi_addr client NODE SERVICE    (NODE: a name in viad's hosts file)
 *
 * 1. FI_EP_RDM: the server binds SERVICE (fi_getinfo(NULL, SERVICE,
 *    FI_SOURCE)); the client resolves NODE and SERVICE (fi_getinfo(NODE,
 *    SERVICE, 0)), inserts the dest_addr it got, and checks that
 *    fi_av_insertsvc(NODE, SERVICE) names the same endpoint; it sends a
 *    message naming itself, the server answers to the name it read.
 * 2. FI_EP_MSG on SERVICE + 1: the server's passive endpoint listens, the
 *    client connects (fi_connect to the resolved dest_addr), the server
 *    opens a domain and an endpoint from the FI_CONNREQ's fi_info and
 *    accepts; both see FI_CONNECTED; a tagged message each way, data
 *    checked; the client shuts down and the server sees FI_SHUTDOWN
 *    (reading its CQ meanwhile: data progress is manual).
 * 3. The client: an unknown host and a service that is no number give
 *    FI_ENODATA.
 *
 * Exit status 0 when every check passed; the first failure ends it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

static const char *who = "fi_addr";

#define FAIL(...)                                                   \
	do {                                                        \
		fprintf(stderr, "%s: %s:%d: ", who, __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                       \
		fputc('\n', stderr);                                \
		exit(1);                                            \
	} while (0)

#define OK(call)                                                                     \
	do {                                                                         \
		ssize_t ret_ = (call);                                               \
		if (ret_ < 0)                                                        \
			FAIL("%s: %s (%zd)", #call, fi_strerror((int)-ret_), ret_); \
	} while (0)

#define MSG_LEN 4000
#define NAME_LEN 64 /* room for an endpoint name (fi_getname) */

struct side {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_eq *eq;
};

static struct fi_info *
hints_for(enum fi_ep_type type)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = type;
	h->caps = FI_MSG | FI_TAGGED;
	h->mode = FI_CONTEXT;
	h->fabric_attr->prov_name = strdup("via");
	return h;
}

static struct fi_info *
getinfo(enum fi_ep_type type, const char *node, const char *service, uint64_t flags)
{
	struct fi_info *h = hints_for(type), *info = NULL;

	OK(fi_getinfo(FI_VERSION(1, 17), node, service, flags, h, &info));
	fi_freeinfo(h);
	if (info->ep_attr->type != type)
		FAIL("fi_getinfo gave endpoint type %d, not %d", info->ep_attr->type, type);
	return info;
}

/* Completions read while waiting for another one: a reply can complete
 * before the send it answers does (its ACK comes later). */
static void *early[8];
static unsigned n_early;

/* The completion of @p ctx on @p cq (10 s). */
static void
wait_cq(struct fid_cq *cq, void *ctx, const char *what)
{
	time_t until = time(NULL) + 10;
	unsigned i;

	for (i = 0; i < n_early; i++)
		if (early[i] == ctx) {
			early[i] = early[--n_early];
			return;
		}
	for (;;) {
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1 && e.op_context == ctx)
			return;
		if (n == 1) {
			if (n_early == sizeof(early) / sizeof(early[0]))
				FAIL("%s: too many other completions meanwhile", what);
			early[n_early++] = e.op_context;
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			FAIL("%s: completed with %s", what, fi_strerror(err.err));
		}
		if (n < 0 && n != -FI_EAGAIN)
			FAIL("%s: fi_cq_read: %s", what, fi_strerror((int)-n));
		if (time(NULL) > until)
			FAIL("%s: no completion within 10 s", what);
	}
}

/*
 * The next event of @p eq (10 s), @p want or failed. With @p cq, its
 * completions are read meanwhile: data progress is manual, and a
 * connection that ends is seen there (FI_SHUTDOWN).
 */
static struct fi_eq_cm_entry
wait_eq(struct fid_eq *eq, uint32_t want, const char *what, struct fid_cq *cq)
{
	time_t until = time(NULL) + 10;
	struct fi_eq_cm_entry e;
	uint32_t event;
	ssize_t n;

	for (;;) {
		n = fi_eq_sread(eq, &event, &e, sizeof(e), cq ? 1 : 10000, 0);
		if (n != -FI_EAGAIN || time(NULL) > until)
			break;
		if (cq != NULL) {
			struct fi_cq_tagged_entry c;

			if (fi_cq_read(cq, &c, 1) == -FI_EAVAIL) {
				struct fi_cq_err_entry err = { 0 };

				fi_cq_readerr(cq, &err, 0);
			}
		}
	}
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		fi_eq_readerr(eq, &err, 0);
		FAIL("%s: error event: %s", what, fi_strerror(err.err));
	}
	if (n != (ssize_t)sizeof(e))
		FAIL("%s: fi_eq_sread: %s", what, fi_strerror((int)-n));
	if (event != want)
		FAIL("%s: event %u, not %u", what, event, want);
	return e;
}

static void
open_active(struct side *s, struct fi_info *info, bool with_eq)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	s->info = info;
	if (s->fab == NULL)
		OK(fi_fabric(info->fabric_attr, &s->fab, NULL));
	OK(fi_domain(s->fab, info, &s->dom, NULL));
	OK(fi_cq_open(s->dom, &cq_attr, &s->cq, NULL));
	OK(fi_endpoint(s->dom, info, &s->ep, NULL));
	OK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	if (info->ep_attr->type == FI_EP_RDM) {
		OK(fi_av_open(s->dom, &av_attr, &s->av, NULL));
		OK(fi_ep_bind(s->ep, &s->av->fid, 0));
	} else if (with_eq) {
		if (s->eq == NULL)
			OK(fi_eq_open(s->fab, &eq_attr, &s->eq, NULL));
		OK(fi_ep_bind(s->ep, &s->eq->fid, 0));
	}
	OK(fi_enable(s->ep));
}

static void
close_active(struct side *s)
{
	OK(fi_close(&s->ep->fid));
	if (s->av)
		OK(fi_close(&s->av->fid));
	OK(fi_close(&s->cq->fid));
	OK(fi_close(&s->dom->fid));
	s->av = NULL;
}

/* Bytes @p from .. MSG_LEN of @p b get the pattern of @p salt (the RDM
 * client's first NAME_LEN bytes are its name). */
static void
fill(char *b, int from, int salt)
{
	int i;

	for (i = from; i < MSG_LEN; i++)
		b[i] = (char)(i * 13 + salt);
}

static void
check(const char *b, int from, int salt, const char *what)
{
	int i;

	for (i = from; i < MSG_LEN; i++)
		if (b[i] != (char)(i * 13 + salt))
			FAIL("%s: byte %d differs", what, i);
}

/* ---- the server ------------------------------------------------------------ */

static void
server_rdm(struct side *s, const char *service)
{
	static char buf[MSG_LEN];
	struct fi_context rctx, sctx;
	fi_addr_t client;

	open_active(s, getinfo(FI_EP_RDM, NULL, service, FI_SOURCE), false);
	printf("%s: RDM endpoint bound to service %s\n", who, service);
	fflush(stdout);
	OK(fi_trecv(s->ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, &rctx));
	wait_cq(s->cq, &rctx, "RDM: the client's message");
	check(buf, NAME_LEN, 1, "RDM: the client's message");
	/* its first bytes are its name: answer to it */
	if (fi_av_insert(s->av, buf, 1, &client, 0, NULL) != 1)
		FAIL("RDM: fi_av_insert of the client's name");
	fill(buf, 0, 2);
	OK(fi_tsend(s->ep, buf, sizeof(buf), NULL, client, 2, &sctx));
	wait_cq(s->cq, &sctx, "RDM: the answer");
	fi_freeinfo(s->info);
	close_active(s);
}

static void
server_msg(struct side *s, const char *service)
{
	static char buf[MSG_LEN];
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_info *pinfo = getinfo(FI_EP_MSG, NULL, service, FI_SOURCE);
	struct fi_context rctx, sctx;
	struct fi_eq_cm_entry e;
	struct fid_pep *pep;

	OK(fi_eq_open(s->fab, &eq_attr, &s->eq, NULL));
	OK(fi_passive_ep(s->fab, pinfo, &pep, NULL));
	OK(fi_pep_bind(pep, &s->eq->fid, 0));
	OK(fi_listen(pep));
	printf("%s: passive endpoint listening on service %s\n", who, service);
	fflush(stdout);
	e = wait_eq(s->eq, FI_CONNREQ, "MSG: a connection request", NULL);
	if (e.fid != &pep->fid || e.info == NULL || e.info->handle == NULL)
		FAIL("MSG: FI_CONNREQ names the passive endpoint and carries an fi_info");
	open_active(s, e.info, true);
	OK(fi_trecv(s->ep, buf, sizeof(buf), NULL, 0, 3, 0, &rctx));
	OK(fi_accept(s->ep, NULL, 0));
	e = wait_eq(s->eq, FI_CONNECTED, "MSG: accepted", NULL);
	if (e.fid != &s->ep->fid)
		FAIL("MSG: FI_CONNECTED names the endpoint that accepted");
	wait_cq(s->cq, &rctx, "MSG: the client's message");
	check(buf, 0, 3, "MSG: the client's message");
	fill(buf, 0, 4);
	OK(fi_tsend(s->ep, buf, sizeof(buf), NULL, 0, 4, &sctx));
	wait_cq(s->cq, &sctx, "MSG: the answer");
	e = wait_eq(s->eq, FI_SHUTDOWN, "MSG: the client's shutdown", s->cq);
	if (e.fid != &s->ep->fid)
		FAIL("MSG: FI_SHUTDOWN names the endpoint");
	fi_freeinfo(s->info);
	close_active(s);
	OK(fi_close(&pep->fid));
	OK(fi_close(&s->eq->fid));
	fi_freeinfo(pinfo);
}

static int
server(const char *service)
{
	struct side s = { 0 };
	char msvc[16];

	who = "fi_addr server";
	server_rdm(&s, service);
	snprintf(msvc, sizeof(msvc), "%u", (unsigned)atoi(service) + 1);
	server_msg(&s, msvc);
	OK(fi_close(&s.fab->fid));
	printf("%s: RDM and MSG served\n", who);
	return 0;
}

/* ---- the client ---------------------------------------------------------------- */

/* fi_getinfo of @p node / @p service fails with FI_ENODATA. */
static void
no_data(const char *node, const char *service)
{
	struct fi_info *h = hints_for(FI_EP_RDM), *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), node, service, 0, h, &info);

	fi_freeinfo(h);
	if (ret != -FI_ENODATA)
		FAIL("fi_getinfo(%s, %s): %s, not FI_ENODATA", node, service,
		     ret ? fi_strerror(-ret) : "an fi_info");
}

static void
client_rdm(struct side *s, const char *node, const char *service)
{
	static char buf[MSG_LEN];
	struct fi_info *info = getinfo(FI_EP_RDM, node, service, 0);
	struct fi_context rctx, sctx;
	fi_addr_t server, again;
	size_t len = NAME_LEN;
	double until = (double)time(NULL) + 10;
	ssize_t ret;

	if (info->dest_addr == NULL)
		FAIL("RDM: fi_getinfo(%s, %s) gave no dest_addr", node, service);
	open_active(s, info, false);
	if (fi_av_insert(s->av, info->dest_addr, 1, &server, 0, NULL) != 1)
		FAIL("RDM: fi_av_insert of the dest_addr");
	{
		uint8_t a[64], b[64];
		size_t la = sizeof(a), lb = sizeof(b);

		if (fi_av_insertsvc(s->av, node, service, &again, 0, NULL) != 1 ||
		    fi_av_lookup(s->av, server, a, &la) != 0 ||
		    fi_av_lookup(s->av, again, b, &lb) != 0 || la != lb || memcmp(a, b, la) != 0)
			FAIL("RDM: fi_av_insertsvc(%s, %s) names the same endpoint as dest_addr",
			     node, service);
	}
	OK(fi_trecv(s->ep, buf, sizeof(buf), NULL, server, 2, 0, &rctx));
	{
		static char out[MSG_LEN];

		OK(fi_getname(&s->ep->fid, out, &len));
		fill(out, NAME_LEN, 1);
		/* the server may not be up yet: its service answers once it is */
		while ((ret = fi_tsend(s->ep, out, sizeof(out), NULL, server, 1, &sctx)) ==
		       -FI_EAGAIN && time(NULL) < until)
			;
		OK(ret);
		wait_cq(s->cq, &sctx, "RDM: the message to the service");
	}
	wait_cq(s->cq, &rctx, "RDM: the server's answer");
	check(buf, 0, 2, "RDM: the server's answer");
	printf("%s: RDM: %s service %s resolved, message and answer\n", who, node, service);
	close_active(s);
	fi_freeinfo(info);
}

static void
client_msg(struct side *s, const char *node, const char *service)
{
	static char buf[MSG_LEN], out[MSG_LEN];
	struct fi_info *info = getinfo(FI_EP_MSG, node, service, 0);
	struct fi_context rctx, sctx;
	struct fi_eq_cm_entry e;

	open_active(s, info, true);
	OK(fi_trecv(s->ep, buf, sizeof(buf), NULL, 0, 4, 0, &rctx));
	OK(fi_connect(s->ep, info->dest_addr, NULL, 0));
	e = wait_eq(s->eq, FI_CONNECTED, "MSG: connected", NULL);
	if (e.fid != &s->ep->fid)
		FAIL("MSG: FI_CONNECTED names the endpoint");
	fill(out, 0, 3);
	OK(fi_tsend(s->ep, out, sizeof(out), NULL, 0, 3, &sctx));
	wait_cq(s->cq, &sctx, "MSG: the message");
	wait_cq(s->cq, &rctx, "MSG: the server's answer");
	check(buf, 0, 4, "MSG: the server's answer");
	OK(fi_shutdown(s->ep, 0));
	/* a send after the shutdown is refused */
	if (fi_tsend(s->ep, out, 8, NULL, 0, 5, &sctx) != -FI_ENOTCONN)
		FAIL("MSG: a send after fi_shutdown is refused with FI_ENOTCONN");
	printf("%s: MSG: %s service %s connected, message each way, shut down\n", who, node,
	       service);
	close_active(s);
	OK(fi_close(&s->eq->fid));
	fi_freeinfo(info);
}

static int
client(const char *node, const char *service)
{
	struct side s = { 0 };
	char msvc[16];

	who = "fi_addr client";
	no_data("no-such-host.invalid", service);
	no_data(node, "not-a-number");
	client_rdm(&s, node, service);
	snprintf(msvc, sizeof(msvc), "%u", (unsigned)atoi(service) + 1);
	client_msg(&s, node, msvc);
	OK(fi_close(&s.fab->fid));
	printf("%s: all checks passed\n", who);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "server") == 0)
		return server(argv[2]);
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: fi_addr server SERVICE | client NODE SERVICE\n");
	return 2;
}
