/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A broken connection fails every pending operation (issue 27, part 1):
 * run by tests/mpi/run.sh with the two ends on two viads, one of which is
 * killed while the other end has operations outstanding.
 *
 *   fi_break server DIR          the end whose viad dies: it says hello,
 *                                then makes no progress (so the client's
 *                                sends wait: for credits, for a FIN)
 *   fi_break client DIR BOUND_S  posts sends (eager and rendezvous) and
 *                                receives directed at the server, writes
 *                                DIR/ready, and once DIR/killed exists
 *                                requires every operation to complete
 *                                within BOUND_S seconds: receives and
 *                                rendezvous sends with FI_EIO, eager ones
 *                                with FI_EIO or success (those the server's
 *                                VIA buffers took before)
 *
 * The two exchange their names (fi_getname) through DIR/server.name and
 * DIR/client.name. Exit status 0 when the client's checks pass.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define FAIL(...)                                                      \
	do {                                                           \
		fprintf(stderr, "fi_break: %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                          \
		fputc('\n', stderr);                                   \
		exit(1);                                               \
	} while (0)

#define OK(call)                                                                     \
	do {                                                                         \
		ssize_t ret_ = (call);                                               \
		if (ret_ < 0)                                                        \
			FAIL("%s: %s (%zd)", #call, fi_strerror((int)-ret_), ret_); \
	} while (0)

enum { N_EAGER = 64, EAGER_LEN = 4096, N_RNDV = 8, RNDV_LEN = 1 << 20, N_RECV = 16 };
enum kind { K_EAGER, K_RNDV, K_RECV, K_HELLO };

struct op {
	enum kind kind;
	int done;      /* 1 success, -err */
};

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static fi_addr_t peer;

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void
open_ep(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	hints->mode = FI_CONTEXT;
	hints->fabric_attr->prov_name = strdup("via");
	OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	OK(fi_fabric(info->fabric_attr, &fab, NULL));
	OK(fi_domain(fab, info, &dom, NULL));
	OK(fi_cq_open(dom, &cq_attr, &cq, NULL));
	OK(fi_av_open(dom, &av_attr, &av, NULL));
	OK(fi_endpoint(dom, info, &ep, NULL));
	OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	OK(fi_ep_bind(ep, &av->fid, 0));
	OK(fi_enable(ep));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* Write our name to DIR/MINE, read the peer's from DIR/THEIRS (30 s). */
static void
exchange(const char *dir, const char *mine, const char *theirs)
{
	uint8_t name[64];
	size_t len = sizeof(name), i;
	char path[512];
	FILE *f;
	double until = now_s() + 30;

	OK(fi_getname(&ep->fid, name, &len));
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, mine);
	f = fopen(path, "w");
	if (f == NULL)
		FAIL("%s: %s", path, strerror(errno));
	for (i = 0; i < len; i++)
		fprintf(f, "%02x", name[i]);
	fclose(f);
	{
		char final[512];

		snprintf(final, sizeof(final), "%s/%s", dir, mine);
		if (rename(path, final) != 0)
			FAIL("rename %s: %s", path, strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, theirs);
	while ((f = fopen(path, "r")) == NULL) {
		if (now_s() > until)
			FAIL("no %s within 30 s", path);
		usleep(10000);
	}
	for (len = 0; len < sizeof(name) && fscanf(f, "%2hhx", &name[len]) == 1; len++)
		;
	fclose(f);
	if (fi_av_insert(av, name, 1, &peer, 0, NULL) != 1)
		FAIL("fi_av_insert of the peer's name (%zu bytes)", len);
}

/* One completion (or error) for up to @p ms; its op, or NULL. */
static struct op *
reap(int ms)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	double until = now_s() + ms / 1e3;

	do {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1) {
			struct op *o = e.op_context;

			o->done = 1;
			return o;
		}
		if (n == -FI_EAVAIL) {
			struct op *o;

			memset(&err, 0, sizeof(err));
			OK(fi_cq_readerr(cq, &err, 0));
			o = err.op_context;
			o->done = -err.err;
			return o;
		}
		if (n != -FI_EAGAIN)
			FAIL("fi_cq_read: %s", fi_strerror((int)-n));
	} while (now_s() < until);
	return NULL;
}

static void
wait_op(struct op *want, const char *what)
{
	while (!want->done) {
		if (reap(30000) == NULL)
			FAIL("%s: no completion within 30 s", what);
	}
	if (want->done != 1)
		FAIL("%s: %s", what, fi_strerror(-want->done));
}

static int
server(const char *dir)
{
	static char buf[64];
	struct op hello = { K_HELLO, 0 };

	open_ep();
	exchange(dir, "server.name", "client.name");
	OK(fi_trecv(ep, buf, sizeof(buf), NULL, peer, 1, 0, &hello));
	wait_op(&hello, "the client's hello");
	/* no progress from now on: the client's sends wait for credits and
	 * FINs until this end's viad dies */
	for (;;)
		pause();
	return 0;
}

static bool
file_exists(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static int
client(const char *dir, double bound)
{
	static struct op ops[N_EAGER + N_RNDV + N_RECV];
	static char eager[N_EAGER][EAGER_LEN], rbuf[N_RECV][64];
	static struct op hello = { K_HELLO, 0 };
	char *rndv = malloc((size_t)N_RNDV * RNDV_LEN), path[512];
	int i, n = 0, left, ok_eager = 0, eio = 0;
	double killed_at = 0;
	FILE *f;

	if (rndv == NULL)
		FAIL("no memory");
	memset(rndv, 7, (size_t)N_RNDV * RNDV_LEN);
	open_ep();
	exchange(dir, "client.name", "server.name");
	OK(fi_tsend(ep, "hello", 6, NULL, peer, 1, &hello));
	wait_op(&hello, "hello to the server");
	for (i = 0; i < N_EAGER; i++, n++) {
		ops[n].kind = K_EAGER;
		OK(fi_tsend(ep, eager[i], EAGER_LEN, NULL, peer, 2, &ops[n]));
	}
	for (i = 0; i < N_RNDV; i++, n++) {
		ops[n].kind = K_RNDV;
		OK(fi_tsend(ep, rndv + (size_t)i * RNDV_LEN, RNDV_LEN, NULL, peer, 3, &ops[n]));
	}
	for (i = 0; i < N_RECV; i++, n++) {
		ops[n].kind = K_RECV;
		OK(fi_trecv(ep, rbuf[i], sizeof(rbuf[i]), NULL, peer, 4, 0, &ops[n]));
	}
	/* what can go before the kill goes */
	for (i = 0; i < 200; i++)
		reap(1);
	snprintf(path, sizeof(path), "%s/ready", dir);
	f = fopen(path, "w");
	if (f == NULL)
		FAIL("%s: %s", path, strerror(errno));
	fclose(f);
	printf("fi_break: %d operations posted, waiting for the kill\n", n);
	fflush(stdout);
	for (left = 0, i = 0; i < n; i++)
		left += !ops[i].done;
	while (left > 0) {
		struct op *o;

		if (killed_at == 0 && file_exists(dir, "killed"))
			killed_at = now_s();
		if (killed_at == 0 && file_exists(dir, "gave-up"))
			FAIL("the script gave up before the kill");
		if (killed_at != 0 && now_s() - killed_at > bound)
			break;
		o = reap(10);
		if (o != NULL)
			left--;
	}
	for (i = 0; i < n; i++) {
		const char *k = ops[i].kind == K_EAGER ? "eager send" :
				ops[i].kind == K_RNDV ? "rendezvous send" : "directed receive";

		if (ops[i].done == 0)
			FAIL("%s %d: not completed %.1f s after the peer's viad died (%d left)", k, i,
			     bound, left);
		if (ops[i].done == 1 && ops[i].kind == K_EAGER) {
			ok_eager++;
			continue;
		}
		if (ops[i].done != -FI_EIO)
			FAIL("%s %d: completed with %s, not FI_EIO", k, i,
			     ops[i].done == 1 ? "success" : fi_strerror(-ops[i].done));
		eio++;
	}
	printf("fi_break: every operation completed %.2f s after the kill: %d eager sends "
	       "delivered before it, %d failed with FI_EIO\n", now_s() - killed_at, ok_eager, eio);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	free(rndv);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "server") == 0)
		return server(argv[2]);
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: fi_break server DIR | client DIR BOUND_S\n");
	return 2;
}
