/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viactl: look at a running viad, as rdma(8) and ibv_devinfo look at RDMA
 * devices. It asks viad's DPDK telemetry commands (daemon/telemetry.c) on
 * EAL's telemetry socket, RUNTIME/dpdk/INSTANCE/dpdk_telemetry.v2, and, to
 * capture frames, viad's capture socket beside it (abi/via_capture_proto.h).
 * Whoever may open those sockets may use viactl: root, viad's own user, or,
 * under viad.service, the members of its socket directory's group (capture
 * excepted: viad's user only).
 *
 * Tables for people, --json for programs. Exit status: 0 done, 1 viad could
 * not be reached or refused, 2 a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>


#include "via_capture_proto.h"
#include "json.h"
#include "via_telemetry_proto.h"
#include "via_upgrade_proto.h"
#include "via_version.h"

#define EXIT_USAGE 2
#define TEL_SOCKET VIA_TELEMETRY_SOCKET
#define TEL_REPLY_MAX (64 * 1024)   /* telemetry replies are at most 16 KiB */
#define MAX_COLS 16
#define WATCH_HEADER_EVERY 20

static const char *prog = "viactl";
static bool json_out;

static void __attribute__((format(printf, 1, 2)))
err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: viactl [-i INSTANCE] [-r DIR] [--json] COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  status                  viad's version, uptime, objects, capture\n"
		"  ports                   NICs: glue, MAC, MTU, link, packets, errors\n"
		"  sessions                client sessions: process, NIC, objects, memory\n"
		"  vis [--session N]       VIs: state, reliability level, peer, queues, messages\n"
		"  conns                   connections: the VIs that have or seek one\n"
		"  cqs [--session N]       completion queues\n"
		"  counters [--watch SECS [--count N]]\n"
		"                          totals, or rates per second every SECS\n"
		"  lcores                  poll lcores: busy share, frames per burst\n"
		"  hosts                   the hosts file viad resolves names with\n"
		"  cpus [--others]         the CPUs viad's poll lcores run on, or (--others)\n"
		"                          this machine's other CPUs: for mpirun --cpu-set\n"
		"  capture --port NIC -w FILE [--force] [-c N] [-s BYTES] [-t SECS]\n"
		"          [-f FILTER] [--progress | -q]\n"
		"                          write the NIC's frames to FILE (pcapng; - is stdout)\n"
		"                          until N frames, SECS seconds or Ctrl-C; FILE must\n"
		"                          be new (--force: replace a regular file or feed a\n"
		"                          FIFO; never through a symbolic link). FILTER: VIA\n"
		"                          frames of 'vi N', 'opcode NAME', 'conn ID', joined\n"
		"                          by 'and'. A live count on a terminal (--progress: a\n"
		"                          line at a time; -q: none). One capture per NIC\n"
		"  upgrade [BINARY]        hand viad over to BINARY (default: the file at viad's\n"
		"                          own path) under its running clients; root only\n"
		"\n"
		"Options:\n"
		"  -i, --instance NAME     viad's instance (viad.instance; default viad)\n"
		"  -r, --runtime-dir DIR   its EAL runtime directory (default: looked for in\n"
		"                          $RUNTIME_DIRECTORY, /run/viad, /var/run,\n"
		"                          $XDG_RUNTIME_DIR, /tmp, each + /dpdk/INSTANCE)\n"
		"      --json              JSON instead of tables\n"
		"  -V, --version           print the version and exit\n"
		"  -h, --help              this text\n"
		"\n"
		"Exit status: 0 done, 1 viad unreachable or the request failed, 2 usage.\n");
}

/* ---- the telemetry socket ------------------------------------------------- */

struct tel {
	int fd;
	char dir[108];          /* viad's EAL runtime directory */
	char *buf;
};

/*
 * Where EAL put viad's runtime directory: the first of the places EAL picks
 * from (for viad run by systemd, by root, by a user) that holds the
 * telemetry socket. @return 0, -ENOENT (none), -EACCES (one we may not see)
 */
static int
find_runtime_dir(const char *instance, char *out, size_t len)
{
	const char *bases[] = {
		getenv("RUNTIME_DIRECTORY"), "/run/viad", "/var/run", getenv("XDG_RUNTIME_DIR"),
		"/tmp",
	};
	int rc = -ENOENT;
	unsigned i;

	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		char path[256];
		struct stat st;

		if (bases[i] == NULL || bases[i][0] == '\0')
			continue;
		snprintf(path, sizeof(path), "%s/dpdk/%s/" TEL_SOCKET, bases[i], instance);
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
			snprintf(out, len, "%s/dpdk/%s", bases[i], instance);
			return 0;
		}
		if (errno == EACCES)
			rc = -EACCES;
	}
	return rc;
}

static int
unix_connect(const char *dir, const char *name, int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int rc = -errno;

		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

static int
tel_open(struct tel *t, const char *instance, const char *dir)
{
	struct vj *hello;
	ssize_t n;
	int rc;

	t->fd = -1;
	t->buf = malloc(TEL_REPLY_MAX + 1);
	if (t->buf == NULL)
		return -ENOMEM;
	if (dir != NULL)
		snprintf(t->dir, sizeof(t->dir), "%s", dir);
	rc = dir != NULL ? 0 : find_runtime_dir(instance, t->dir, sizeof(t->dir));
	if (rc == -EACCES) {
		err("viad '%s': permission denied: its runtime directory is not open to you "
		    "(run as root, or join viad.socket_group, the group of its sockets)", instance);
		return rc;
	}
	if (rc != 0) {
		err("viad '%s' is not running (no telemetry socket found; -i INSTANCE, -r DIR)",
		    instance);
		return rc;
	}
	rc = unix_connect(t->dir, TEL_SOCKET, &t->fd);
	if (rc != 0) {
		err("%s/%s: %s%s", t->dir, TEL_SOCKET, strerror(-rc),
		    rc == -ECONNREFUSED ? " (viad is not running)" : "");
		return rc;
	}
	/* telemetry greets with its version, pid and reply size first */
	n = recv(t->fd, t->buf, TEL_REPLY_MAX, 0);
	if (n <= 0)
		return n < 0 ? -errno : -ECONNRESET;
	t->buf[n] = '\0';
	hello = vj_parse(t->buf);
	rc = hello != NULL && vj_get(hello, "version") != NULL ? 0 : -EPROTO;
	vj_free(hello);
	if (rc != 0)
		err("%s/%s: not DPDK telemetry", t->dir, TEL_SOCKET);
	return rc;
}

static void
tel_close(struct tel *t)
{
	if (t->fd >= 0)
		close(t->fd);
	free(t->buf);
}

/*
 * Ask @p cmd (with its parameters) and return its value: the reply is
 * {"COMMAND": VALUE}. @return the value (vj_free() it), or NULL after
 * saying why: viad refused (an unknown object, bad parameters: null), or
 * the socket failed
 */
static struct vj *
tel_ask(struct tel *t, const char *cmd, bool quiet)
{
	struct vj *reply, *value = NULL;
	ssize_t n;

	if (send(t->fd, cmd, strlen(cmd), MSG_NOSIGNAL) < 0) {
		err("%s: %s", cmd, strerror(errno));
		return NULL;
	}
	n = recv(t->fd, t->buf, TEL_REPLY_MAX, 0);
	if (n <= 0) {
		err("%s: %s", cmd, n < 0 ? strerror(errno) : "viad closed the connection");
		return NULL;
	}
	t->buf[n] = '\0';
	reply = vj_parse(t->buf);
	if (reply != NULL && reply->child != NULL)
		value = vj_take(reply, reply->child->key);
	vj_free(reply);
	if (value == NULL)
		err("%s: malformed reply", cmd);
	else if (value->type == VJ_NULL && !quiet)
		err("%s: viad has no such object, or the parameters are wrong", cmd);
	if (value != NULL && value->type == VJ_NULL) {
		vj_free(value);
		value = NULL;
	}
	return value;
}

static struct vj *
tel_query(struct tel *t, const char *cmd)
{
	return tel_ask(t, cmd, false);
}

/* The same, silent about an object that does not exist: the caller says it. */
static struct vj *
tel_query_quiet(struct tel *t, const char *cmd)
{
	return tel_ask(t, cmd, true);
}

/*
 * Every id a paged list command gives: @p cmd with @p filter ("N," or "")
 * and START. @return an array of numbers, or NULL (said why)
 */
static struct vj *
list_ids(struct tel *t, const char *cmd, const char *filter)
{
	struct vj *all = vj_new(VJ_ARRAY);
	uint64_t start = 0;

	if (all == NULL)
		return NULL;
	do {
		char q[128];
		struct vj *page, *ids, *id;

		snprintf(q, sizeof(q), "%s,%s%llu", cmd, filter, (unsigned long long)start);
		page = tel_query(t, q);
		ids = vj_take(page, "ids");
		if (ids == NULL || ids->type != VJ_ARRAY) {
			if (page != NULL)
				err("%s: malformed reply", q);
			vj_free(page);
			vj_free(ids);
			vj_free(all);
			return NULL;
		}
		start = vj_u64(vj_get(page, "next"));
		while ((id = ids->child) != NULL) {
			ids->child = id->next;
			id->next = NULL;
			vj_append(all, id);
		}
		vj_free(ids);
		vj_free(page);
	} while (start != 0);
	return all;
}

/* The objects of @p ids, each from "@p cmd,ID". An object gone meanwhile is skipped. */
static struct vj *
fetch_each(struct tel *t, const char *cmd, const struct vj *ids)
{
	struct vj *all = vj_new(VJ_ARRAY);
	const struct vj *id;

	for (id = ids->child; all != NULL && id != NULL; id = id->next) {
		char q[128];
		struct vj *o;
		ssize_t n;

		snprintf(q, sizeof(q), "%s,%s", cmd, vj_text(id));
		if (send(t->fd, q, strlen(q), MSG_NOSIGNAL) < 0 ||
		    (n = recv(t->fd, t->buf, TEL_REPLY_MAX, 0)) <= 0) {
			err("%s: %s", q, strerror(errno));
			vj_free(all);
			return NULL;
		}
		t->buf[n] = '\0';
		o = vj_parse(t->buf);
		if (o != NULL && o->child != NULL && o->child->type == VJ_OBJECT)
			vj_append(all, vj_take(o, o->child->key));
		vj_free(o);
	}
	return all;
}

/* ---- tables ----------------------------------------------------------------- */

struct col {
	const char *head;
	const char *key;      /* the member shown; NULL: fmt makes the cell */
	bool left;            /* text is left-aligned, numbers right */
	void (*fmt)(const struct vj *row, char *buf, size_t len);
};

static void
cell(const struct col *c, const struct vj *row, char *buf, size_t len)
{
	if (c->fmt != NULL)
		c->fmt(row, buf, len);
	else
		snprintf(buf, len, "%s", vj_text(vj_get(row, c->key)));
}

/* A table of the objects of @p rows (an array or an object of objects). */
static void
print_table(const struct col *cols, unsigned ncols, const struct vj *rows)
{
	size_t width[MAX_COLS];
	const struct vj *row;
	char buf[256];
	unsigned i;

	for (i = 0; i < ncols; i++)
		width[i] = strlen(cols[i].head);
	for (row = rows->child; row != NULL; row = row->next) {
		for (i = 0; i < ncols; i++) {
			cell(&cols[i], row, buf, sizeof(buf));
			if (strlen(buf) > width[i])
				width[i] = strlen(buf);
		}
	}
	/* the last column is not padded: no trailing blanks */
	for (i = 0; i < ncols; i++) {
		if (i + 1 == ncols)
			printf("%s\n", cols[i].head);
		else
			printf(cols[i].left ? "%-*s  " : "%*s  ", (int)width[i], cols[i].head);
	}
	for (row = rows->child; row != NULL; row = row->next) {
		for (i = 0; i < ncols; i++) {
			cell(&cols[i], row, buf, sizeof(buf));
			if (i + 1 == ncols)
				printf("%s\n", buf);
			else
				printf(cols[i].left ? "%-*s  " : "%*s  ", (int)width[i], buf);
		}
	}
}

/* The output of a command: its tree as JSON, or a table (none: @p ncols 0).
 * A list is a JSON array: an object telemetry keys by name (ports, lcores)
 * becomes the array of its members, each of which holds its name too. */
static int
show(struct vj *v, const struct col *cols, unsigned ncols)
{
	struct vj *m;

	if (v == NULL)
		return 1;
	if (v->type == VJ_OBJECT) {
		v->type = VJ_ARRAY;
		for (m = v->child; m != NULL; m = m->next) {
			free(m->key);
			m->key = NULL;
		}
	}
	if (json_out) {
		vj_print(stdout, v, true);
		putchar('\n');
	} else {
		print_table(cols, ncols, v);
	}
	vj_free(v);
	return 0;
}

/* An object's members, one "KEY VALUE" line each, keys @p key_width wide
 * (or the object as is, with --json); @return 0, or 1 without @p v. */
static int
show_members(struct vj *v, int key_width)
{
	const struct vj *m;

	if (v == NULL)
		return 1;
	if (json_out) {
		vj_print(stdout, v, true);
		putchar('\n');
	} else {
		for (m = v->child; m != NULL; m = m->next)
			printf("%-*s %s\n", key_width, m->key, vj_text(m));
	}
	vj_free(v);
	return 0;
}

static void
fmt_level(const struct vj *row, char *buf, size_t len)
{
	const char *l = vj_text(vj_get(row, "reliability"));

	snprintf(buf, len, "%s", strcmp(l, "unreliable") == 0 ? "UD" :
			       strcmp(l, "reliable_delivery") == 0 ? "RD" :
			       strcmp(l, "reliable_reception") == 0 ? "RR" : l);
}

static void
fmt_peer(const struct vj *row, char *buf, size_t len)
{
	if (vj_u64(vj_get(row, "conn_id")) == 0 && vj_u64(vj_get(row, "requesting")) == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s/%s", vj_text(vj_get(row, "remote_mac")),
			 vj_text(vj_get(row, "remote_vi")));
}

static void
fmt_conn_id(const struct vj *row, char *buf, size_t len)
{
	snprintf(buf, len, "0x%08llx", (unsigned long long)vj_u64(vj_get(row, "conn_id")));
}

/* pid/name, or "-" for another user's session (viad shows its owner only) */
static void
fmt_process(const struct vj *row, char *buf, size_t len)
{
	if (vj_get(row, "pid") == NULL)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s/%s", vj_text(vj_get(row, "pid")),
			 vj_text(vj_get(row, "comm")));
}

static void
fmt_uid(const struct vj *row, char *buf, size_t len)
{
	snprintf(buf, len, "%s", vj_get(row, "uid") != NULL ? vj_text(vj_get(row, "uid")) : "-");
}

/* A byte count with a binary prefix: 32M, 1.5G. */
static void
bytes_text(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)b;
	int u = -1;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)b);
	else
		snprintf(buf, len, v < 10 && v != (double)(uint64_t)v ? "%.1f%c" : "%.0f%c", v,
			 units[u]);
}

#define FMT_BYTES(name, key)                                                    \
	static void name(const struct vj *row, char *buf, size_t len)            \
	{ bytes_text(vj_u64(vj_get(row, key)), buf, len); }

FMT_BYTES(fmt_seg, "segment_bytes")
FMT_BYTES(fmt_regbytes, "registered_bytes")
FMT_BYTES(fmt_allocbytes, "alloc_bytes")

static void
fmt_per_burst(const struct vj *row, char *buf, size_t len)
{
	uint64_t b = vj_u64(vj_get(row, "rx_bursts"));

	snprintf(buf, len, "%.1f", b ? (double)vj_u64(vj_get(row, "rx_burst_frames")) / (double)b
				     : 0.0);
}

/* ---- commands ----------------------------------------------------------------- */

struct cmd_ctx {
	const char *instance;
	const char *dir;        /* -r, or NULL: looked for */
	struct tel t;           /* opened by connect_viad() once the options are read */
	bool connected;
	int argc;
	char **argv;
};

/* Reach viad; a command does this after its options were found good, so
 * that a usage error is one whether viad runs or not. @return the socket or NULL */
static struct tel *
connect_viad(struct cmd_ctx *c)
{
	if (!c->connected && tel_open(&c->t, c->instance, c->dir) != 0) {
		tel_close(&c->t);
		return NULL;
	}
	c->connected = true;
	return &c->t;
}

/* Options of a command after its name: only --session N. @return 0, -1 */
static int
session_option(const struct cmd_ctx *c, char *filter, size_t len)
{
	int i;

	snprintf(filter, len, "0,");
	for (i = 1; i < c->argc; i++) {
		char *end;

		if (strcmp(c->argv[i], "--session") != 0 || i + 1 == c->argc) {
			err("%s: unexpected '%s'", c->argv[0], c->argv[i]);
			return -1;
		}
		strtoul(c->argv[++i], &end, 0);
		if (*end != '\0' || c->argv[i][0] == '\0') {
			err("--session: not a session id: '%s'", c->argv[i]);
			return -1;
		}
		snprintf(filter, len, "%s,", c->argv[i]);
	}
	return 0;
}

static int
no_options(struct cmd_ctx *c)
{
	if (c->argc > 1) {
		err("%s: unexpected '%s'", c->argv[0], c->argv[1]);
		return -1;
	}
	return 0;
}

static int
cmd_status(struct cmd_ctx *c)
{
	if (no_options(c) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	return show_members(tel_query(&c->t, "/viad/info"), 18);
}

static int
cmd_ports(struct cmd_ctx *c)
{
	static const struct col cols[] = {
		{ "NIC", "name", true, NULL }, { "GLUE", "glue", true, NULL },
		{ "MAC", "mac", true, NULL }, { "MTU", "mtu", false, NULL },
		{ "LINK", "link", true, NULL }, { "RX_PKTS", "rx_packets", false, NULL },
		{ "TX_PKTS", "tx_packets", false, NULL }, { "RX_ERR", "rx_errors", false, NULL },
		{ "TX_ERR", "tx_errors", false, NULL }, { "BACKLOG", "tx_backlog", false, NULL },
		{ "SESSIONS", "sessions", false, NULL },
	};

	if (no_options(c) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	return show(tel_query(&c->t, "/viad/ports"), cols, sizeof(cols) / sizeof(cols[0]));
}

/* The objects of a paged list: ids from @p list_cmd, each from @p obj_cmd. */
static struct vj *
objects(struct tel *t, const char *list_cmd, const char *filter, const char *obj_cmd)
{
	struct vj *ids = list_ids(t, list_cmd, filter), *all;

	if (ids == NULL)
		return NULL;
	all = fetch_each(t, obj_cmd, ids);
	vj_free(ids);
	return all;
}

/*
 * A list of objects (@p list_cmd, each from @p obj_cmd) of all sessions or,
 * with --session N, of session N: a session that does not exist is an
 * error (status 1), not an empty list.
 */
static int
session_objects(struct cmd_ctx *c, const char *list_cmd, const char *obj_cmd,
		const struct col *cols, unsigned ncols)
{
	char filter[32], q[64];
	struct vj *sess;

	if (session_option(c, filter, sizeof(filter)) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	if (strcmp(filter, "0,") != 0) {
		snprintf(q, sizeof(q), "/viad/session,%.*s", (int)strlen(filter) - 1, filter);
		sess = tel_query_quiet(&c->t, q);
		if (sess == NULL) {
			err("no session %.*s (viactl sessions lists them)", (int)strlen(filter) - 1,
			    filter);
			return 1;
		}
		vj_free(sess);
	}
	return show(objects(&c->t, list_cmd, filter, obj_cmd), cols, ncols);
}

static int
cmd_sessions(struct cmd_ctx *c)
{
	static const struct col cols[] = {
		{ "SESSION", "id", false, NULL }, { "PROCESS", NULL, true, fmt_process },
		{ "UID", NULL, false, fmt_uid }, { "NIC", "nic", true, NULL },
		{ "SEGMENT", NULL, false, fmt_seg }, { "VIS", "vis", false, NULL },
		{ "CQS", "cqs", false, NULL }, { "REGIONS", "regions", false, NULL },
		{ "REGISTERED", NULL, false, fmt_regbytes }, { "ALLOCS", NULL, false, fmt_allocbytes },
	};

	if (no_options(c) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	return show(objects(&c->t, "/viad/sessions", "", "/viad/session"), cols,
		    sizeof(cols) / sizeof(cols[0]));
}

static int
cmd_vis(struct cmd_ctx *c)
{
	static const struct col cols[] = {
		{ "VI", "id", false, NULL }, { "SESSION", "session", false, NULL },
		{ "NIC", "nic", true, NULL }, { "STATE", "state", true, NULL },
		{ "LEVEL", NULL, true, fmt_level }, { "LCORE", "lcore", false, NULL },
		{ "PEER", NULL, true, fmt_peer }, { "SQ", "send_posted", false, NULL },
		{ "RQ", "recv_posted", false, NULL }, { "MSGS_TX", "messages_sent", false, NULL },
		{ "MSGS_RX", "messages_received", false, NULL },
		{ "IN_FLIGHT", "frames_in_flight", false, NULL },
	};

	return session_objects(c, "/viad/vis", "/viad/vi", cols, sizeof(cols) / sizeof(cols[0]));
}

static int
cmd_conns(struct cmd_ctx *c)
{
	static const struct col cols[] = {
		{ "VI", "id", false, NULL }, { "SESSION", "session", false, NULL },
		{ "NIC", "nic", true, NULL }, { "STATE", "state", true, NULL },
		{ "LEVEL", NULL, true, fmt_level }, { "CONN_ID", NULL, true, fmt_conn_id },
		{ "LOCAL_DISC", "local_disc", true, NULL }, { "PEER", NULL, true, fmt_peer },
		{ "REMOTE_DISC", "remote_disc", true, NULL },
		{ "PAYLOAD", "frame_payload", false, NULL },
	};

	if (no_options(c) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	return show(objects(&c->t, "/viad/conns", "", "/viad/vi"), cols,
		    sizeof(cols) / sizeof(cols[0]));
}

static int
cmd_cqs(struct cmd_ctx *c)
{
	static const struct col cols[] = {
		{ "CQ", "id", false, NULL }, { "SESSION", "session", false, NULL },
		{ "CAPACITY", "capacity", false, NULL }, { "QUEUED", "queued", false, NULL },
		{ "WORK_QUEUES", "work_queues", false, NULL },
	};

	return session_objects(c, "/viad/cqs", "/viad/cq", cols, sizeof(cols) / sizeof(cols[0]));
}

static int
cmd_lcores(struct cmd_ctx *c)
{
	static const struct col cols[] = {
		{ "LCORE", "lcore", false, NULL }, { "SHARD", "shard", false, NULL },
		{ "CPU", "cpu", false, NULL }, { "VIS", "vis", false, NULL },
		{ "BUSY%", "busy_percent", false, NULL }, { "ITERATIONS", "iterations", false, NULL },
		{ "BUSY_ITER", "busy_iterations", false, NULL },
		{ "RX_BURSTS", "rx_bursts", false, NULL },
		{ "FRAMES/BURST", NULL, false, fmt_per_burst },
	};

	if (no_options(c) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	return show(tel_query(&c->t, "/viad/lcores"), cols, sizeof(cols) / sizeof(cols[0]));
}

/* The CPUs viad's poll lcores run on, or the others of the machine, as a
 * list "a,b,c" for taskset, mpirun --cpu-set or a rankfile (issue 27). */
static int
cmd_cpus(struct cmd_ctx *c)
{
	bool others = c->argc == 2 && strcmp(c->argv[1], "--others") == 0;
	bool used[CPU_SETSIZE] = { false };
	const struct vj *l;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	struct vj *v;
	int cpu, printed = 0;

	if (c->argc > 2 || (c->argc == 2 && !others)) {
		err("%s: unexpected '%s'", c->argv[0], c->argv[1]);
		return EXIT_USAGE;
	}
	if (connect_viad(c) == NULL)
		return 1;
	v = tel_query(&c->t, "/viad/lcores");
	if (v == NULL)
		return 1;
	for (l = v->child; l != NULL; l = l->next) {
		const struct vj *p = vj_get(l, "cpu");

		cpu = p != NULL ? atoi(vj_text(p)) : -1;
		if (cpu >= 0 && cpu < CPU_SETSIZE)
			used[cpu] = true;
	}
	vj_free(v);
	for (cpu = 0; cpu < CPU_SETSIZE && cpu < n; cpu++) {
		if (used[cpu] == others)
			continue;
		printf("%s%d", printed++ ? "," : "", cpu);
	}
	if (printed == 0) {
		err(others ? "viad's poll lcores use every CPU" : "viad reports no poll lcore");
		return 1;
	}
	putchar('\n');
	return 0;
}

/* A new member @p key of an object: a copy of @p v's text. */
static struct vj *
member_text(const char *key, const struct vj *v)
{
	struct vj *m = vj_new(VJ_STRING);

	if (m != NULL) {
		m->key = strdup(key);
		m->text = strdup(vj_text(v));
	}
	return m;
}

/* --json hosts: {"file": F, "hosts": [{"name": N, "mac": M}, ...]}, from
 * telemetry's two lists side by side (telemetry.c says why it sends two) */
static void
hosts_json(const struct vj *v)
{
	struct vj *out = vj_new(VJ_OBJECT), *list = vj_new(VJ_ARRAY);
	const struct vj *n, *m;

	if (out == NULL || list == NULL) {
		vj_free(out);
		vj_free(list);
		return;
	}
	vj_append(out, member_text("file", vj_get(v, "file")));
	list->key = strdup("hosts");
	vj_append(out, list);
	n = vj_get(v, "names") ? vj_get(v, "names")->child : NULL;
	m = vj_get(v, "macs") ? vj_get(v, "macs")->child : NULL;
	for (; n != NULL && m != NULL; n = n->next, m = m->next) {
		struct vj *h = vj_new(VJ_OBJECT);

		if (h == NULL)
			break;
		vj_append(h, member_text("name", n));
		vj_append(h, member_text("mac", m));
		vj_append(list, h);
	}
	vj_print(stdout, out, true);
	putchar('\n');
	vj_free(out);
}

static int
cmd_hosts(struct cmd_ctx *c)
{
	const struct vj *n, *m;
	struct vj *v;

	if (no_options(c) != 0)
		return EXIT_USAGE;
	if (connect_viad(c) == NULL)
		return 1;
	v = tel_query(&c->t, "/viad/hosts");
	if (v == NULL)
		return 1;
	if (json_out) {
		hosts_json(v);
		vj_free(v);
		return 0;
	}
	/* two lists, line by line: a table of their pairs */
	n = vj_get(v, "names") ? vj_get(v, "names")->child : NULL;
	m = vj_get(v, "macs") ? vj_get(v, "macs")->child : NULL;
	printf("# %s\n", vj_text(vj_get(v, "file"))[0] ? vj_text(vj_get(v, "file"))
						       : "no hosts file configured");
	for (; n != NULL && m != NULL; n = n->next, m = m->next)
		printf("%-32s %s\n", vj_text(n), vj_text(m));
	vj_free(v);
	return 0;
}

/* ---- counters ----------------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;

static void
on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Ctrl-C ends a watch or a capture cleanly: no SA_RESTART, so waits return */
static void
catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A rate at a glance: three digits and an SI prefix. */
static void
rate_text(double r, char *buf, size_t len)
{
	static const char units[] = " kMGT";
	int u = 0;

	while (r >= 999.5 && u < 4) {
		r /= 1000;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f", r);
	else
		snprintf(buf, len, r < 9.995 ? "%.2f%c" : r < 99.95 ? "%.1f%c" : "%.0f%c", r,
			 units[u]);
}

/* What a watch line shows: counters of /viad/counters, per second. */
static const struct {
	const char *head;
	const char *key;
} watched[] = {
	{ "RX/s", "frames_rx" }, { "TX/s", "frames_tx" }, { "DROP/s", "frames_dropped" },
	{ "CORRUPT/s", "frames_corrupt" }, { "RETX/s", "frames_retransmitted" },
	{ "RTO/s", "rto_expiries" }, { "NAK/s", "naks_tx" }, { "DUP/s", "frames_duplicate" },
	{ "OOO/s", "frames_out_of_order" }, { "CQOVR/s", "cq_overruns" },
};
#define NB_WATCHED (sizeof(watched) / sizeof(watched[0]))

static uint64_t
delta(const struct vj *now, const struct vj *then, const char *key)
{
	return vj_u64(vj_get(now, key)) - vj_u64(vj_get(then, key));
}

static void
watch_line(const struct vj *now, const struct vj *then, double secs, unsigned line)
{
	uint64_t cycles = delta(now, then, "poll_cycles"), bursts = delta(now, then, "rx_bursts");
	double busy = cycles ? 100.0 * (double)delta(now, then, "poll_busy_cycles") / (double)cycles
			     : 0;
	double per_burst = bursts ? (double)delta(now, then, "rx_burst_frames") / (double)bursts : 0;
	char stamp[16], buf[32];
	time_t t = time(NULL);
	unsigned i;

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&t));
	if (json_out) {
		printf("{\"time\":\"%s\",\"interval_s\":%.3f", stamp, secs);
		for (i = 0; i < NB_WATCHED; i++)
			printf(",\"%s_per_s\":%.1f", watched[i].key,
			       (double)delta(now, then, watched[i].key) / secs);
		printf(",\"frames_per_burst\":%.2f,\"busy_percent\":%.1f}\n", per_burst, busy);
		fflush(stdout);
		return;
	}
	if (line % WATCH_HEADER_EVERY == 0) {
		printf("%-8s", "TIME");
		for (i = 0; i < NB_WATCHED; i++)
			printf(" %9s", watched[i].head);
		printf(" %7s %6s\n", "BURST", "BUSY%");
	}
	printf("%-8s", stamp);
	for (i = 0; i < NB_WATCHED; i++) {
		rate_text((double)delta(now, then, watched[i].key) / secs, buf, sizeof(buf));
		printf(" %9s", buf);
	}
	printf(" %7.1f %6.1f\n", per_burst, busy);
	fflush(stdout);
}

static int
counters_watch(struct tel *t, double every, unsigned long count)
{
	struct vj *then = tel_query(t, "/viad/counters"), *now;
	double t0 = now_s(), t1;
	unsigned line = 0;

	if (then == NULL)
		return 1;
	catch_stop_signals();
	while (!stop_requested && (count == 0 || line < count)) {
		struct timespec ts = { .tv_sec = (time_t)every,
				       .tv_nsec = (long)((every - (double)(time_t)every) * 1e9) };

		if (nanosleep(&ts, NULL) != 0 && stop_requested)
			break;
		now = tel_query(t, "/viad/counters");
		t1 = now_s();
		if (now == NULL) {
			vj_free(then);
			return 1;
		}
		watch_line(now, then, t1 - t0, line++);
		vj_free(then);
		then = now;
		t0 = t1;
	}
	vj_free(then);
	return 0;
}

static int
cmd_counters(struct cmd_ctx *c)
{
	unsigned long count = 0;
	double every = 0;
	int i;

	for (i = 1; i < c->argc; i++) {
		char *end = NULL;

		if (strcmp(c->argv[i], "--watch") == 0 && i + 1 < c->argc)
			every = strtod(c->argv[++i], &end);
		else if (strcmp(c->argv[i], "--count") == 0 && i + 1 < c->argc)
			count = strtoul(c->argv[++i], &end, 10);
		if (end == NULL || *end != '\0' || c->argv[i][0] == '\0' || every < 0) {
			err("counters: bad option '%s' (--watch SECS, --count N)", c->argv[i]);
			return EXIT_USAGE;
		}
	}
	if (count != 0 && every == 0) {
		err("counters: --count goes with --watch");
		return EXIT_USAGE;
	}
	if (connect_viad(c) == NULL)
		return 1;
	if (every > 0)
		return counters_watch(&c->t, every, count);
	return show_members(tel_query(&c->t, "/viad/counters"), 36);
}

/* ---- capture ---------------------------------------------------------------- */

static int
send_request(int s, const struct via_capture_req *q, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = { .iov_base = (void *)q, .iov_len = sizeof(*q) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(&cbuf, 0, sizeof(cbuf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*q) ? 0 : -errno;
}

/* A reply of viad; waits until @p until (now_s() time; 0: for ever) and
 * through Ctrl-C, which it turns into a stop request once. @return 0,
 * -ETIMEDOUT, -EPROTO, -errno */
static int
recv_reply(int s, struct via_capture_rep *r, double until, bool *stop_sent)
{
	struct pollfd pf = { .fd = s, .events = POLLIN };
	ssize_t n;

	for (;;) {
		int wait = until == 0 ? -1 : (int)((until - now_s()) * 1000);

		if (stop_requested && !*stop_sent) {
			/* viad stops at our hang-up, writes the statistics, answers */
			shutdown(s, SHUT_WR);
			*stop_sent = true;
		}
		if (until != 0 && wait <= 0)
			return -ETIMEDOUT;
		if (poll(&pf, 1, wait) > 0)
			break;
	}
	n = recv(s, r, sizeof(*r), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(*r) || r->magic != VIA_CAPTURE_MAGIC)
		return -EPROTO;
	return 0;
}

struct capture_opts {
	const char *port;
	const char *file;
	const char *filter;    /* -f, as given */
	unsigned long long count;
	unsigned long snaplen;
	double duration;
	bool force;            /* -w may replace an existing file */
	bool progress;         /* the live count a line at a time */
	bool quiet;            /* no live count */
};

/*
 * A filter as dumpcap's -f takes one, for VIA: "vi N", "opcode NAME|N",
 * "conn ID", joined by "and" (or nothing); every one given must match.
 * viad knows the opcode names. @return 0, -1 after saying why
 */
static int
filter_parse(const char *text, struct via_capture_req *q)
{
	char buf[256], *save, *word, *value, *end;
	unsigned long long v;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", text) >= sizeof(buf))
		goto bad;
	for (word = strtok_r(buf, " \t", &save); word != NULL; word = strtok_r(NULL, " \t", &save)) {
		if (strcmp(word, "and") == 0 || strcmp(word, "&&") == 0)
			continue;
		value = strtok_r(NULL, " \t", &save);
		if (value == NULL)
			goto bad;
		if (strcmp(word, "opcode") == 0) {
			if (strlen(value) >= sizeof(q->filter_opcode))
				goto bad;
			strcpy(q->filter_opcode, value);
			continue;
		}
		v = strtoull(value, &end, 0);
		if (*end != '\0' || v == 0 || v > UINT32_MAX)
			goto bad;
		if (strcmp(word, "vi") == 0)
			q->filter_vi = (uint32_t)v;
		else if (strcmp(word, "conn") == 0)
			q->filter_conn_id = (uint32_t)v;
		else
			goto bad;
	}
	return 0;
bad:
	err("capture: bad filter '%s' (vi N, opcode NAME, conn ID, joined by and)", text);
	return -1;
}

/*
 * The capture file, made by us with our rights: a new file, never one
 * that is there already, nor one a symbolic link leads to (root running
 * viactl in /tmp must not write where another user points it). With
 * @p force an existing regular file is replaced, and a FIFO fed (for a
 * live Wireshark); still no symbolic link and nothing else. *@p created:
 * the file is ours to remove if the capture is refused. @return the fd or
 * -1, after saying why
 */
static int
output_open(const char *path, bool force, bool *created)
{
	int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd;

	*created = false;
	fd = open(path, flags | O_CREAT | O_EXCL, 0644);
	if (fd >= 0) {
		*created = true;
		return fd;
	}
	if (errno == EEXIST && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		errno = ELOOP;
	else if (errno == EEXIST && force)
		fd = open(path, flags);
	if (fd < 0) {
		err("%s: %s%s", path, strerror(errno),
		    errno == EEXIST ? " (--force replaces it)" :
		    errno == ELOOP ? " (a symbolic link: viactl writes only the file itself)" : "");
		return -1;
	}
	if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) ||
	    (S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)) {
		err("%s: not replaced: %s", path,
		    S_ISREG(st.st_mode) ? strerror(errno) : "neither a regular file nor a FIFO");
		close(fd);
		return -1;
	}
	return fd;
}

static int
capture_options(const struct cmd_ctx *c, struct capture_opts *o, struct via_capture_req *q)
{
	int i;

	memset(o, 0, sizeof(*o));
	for (i = 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		char *end = NULL;

		/* the flags */
		if (strcmp(a, "--force") == 0 || strcmp(a, "--progress") == 0 ||
		    strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
			if (strcmp(a, "--force") == 0)
				o->force = true;
			else if (strcmp(a, "--progress") == 0)
				o->progress = true;
			else
				o->quiet = true;
			continue;
		}
		if (i + 1 == c->argc) {
			err("capture: '%s' needs a value", a);
			return -1;
		}
		if (strcmp(a, "--port") == 0 || strcmp(a, "-p") == 0) {
			o->port = c->argv[++i];
			continue;
		}
		if (strcmp(a, "-w") == 0 || strcmp(a, "--write") == 0) {
			o->file = c->argv[++i];
			continue;
		}
		if (strcmp(a, "-f") == 0 || strcmp(a, "--filter") == 0) {
			o->filter = c->argv[++i];
			if (filter_parse(o->filter, q) != 0)
				return -1;
			continue;
		}
		if (strcmp(a, "--count") == 0 || strcmp(a, "-c") == 0)
			o->count = strtoull(c->argv[++i], &end, 10);
		else if (strcmp(a, "--snaplen") == 0 || strcmp(a, "-s") == 0)
			o->snaplen = strtoul(c->argv[++i], &end, 10);
		else if (strcmp(a, "--duration") == 0 || strcmp(a, "-t") == 0)
			o->duration = strtod(c->argv[++i], &end);
		if (end == NULL || *end != '\0' || c->argv[i][0] == '\0' || o->duration < 0 ||
		    o->snaplen > UINT32_MAX) {
			err("capture: bad option '%s %s'", a, c->argv[i]);
			return -1;
		}
	}
	if (o->port == NULL || o->file == NULL) {
		err("capture: --port NIC and -w FILE are needed");
		return -1;
	}
	if (strlen(o->port) >= VIA_CAPTURE_NAME_MAX) {
		err("capture: NIC name too long: %s", o->port);
		return -1;
	}
	return 0;
}

static int
cmd_capture(struct cmd_ctx *c)
{
	struct via_capture_req q = { .magic = VIA_CAPTURE_MAGIC, .version = VIA_CAPTURE_VERSION };
	bool to_stdout, created = false, stop_sent = false;
	struct via_capture_rep r;
	struct capture_opts o;
	int fd, s = -1, rc;
	double until;
	bool live;

	if (capture_options(c, &o, &q) != 0)
		return EXIT_USAGE;
	to_stdout = strcmp(o.file, "-") == 0;
	if (to_stdout && json_out) {
		err("capture: --json and -w - would share stdout");
		return EXIT_USAGE;
	}
	if (connect_viad(c) == NULL)
		return 1;
	snprintf(q.port, sizeof(q.port), "%s", o.port);
	q.count = o.count;
	q.snaplen = (uint32_t)o.snaplen;
	/* the file is ours, made with our rights; viad writes into it */
	fd = to_stdout ? STDOUT_FILENO : output_open(o.file, o.force, &created);
	if (fd < 0)
		return 1;
	rc = unix_connect(c->t.dir, VIA_CAPTURE_SOCKET, &s);
	if (rc == 0)
		rc = send_request(s, &q, fd);
	if (rc == 0)
		rc = recv_reply(s, &r, now_s() + 5, &stop_sent);
	if (rc == 0 && r.kind != VIA_CAPTURE_STARTED)
		rc = r.status != 0 ? r.status : -EPROTO;
	if (!to_stdout)
		close(fd);
	if (rc != 0) {
		err("capture on %s: %s%s", o.port, strerror(-rc),
		    rc == -EACCES || rc == -EPERM ? " (capture is for viad's own user)" :
		    rc == -ENODEV ? " (no such NIC; viactl ports lists them)" :
		    rc == -EBUSY ? " (another capture of that NIC runs)" :
		    rc == -EINVAL ? " (viad knows no such opcode: wire-format.md lists them)" : "");
		if (created)
			unlink(o.file);
		if (s >= 0)
			close(s);
		return 1;
	}
	fprintf(stderr, "%s: capturing %s into %s (snaplen %u%s%s); %s\n", prog, o.port, o.file,
		r.snaplen, o.filter ? ", filter " : "", o.filter ? o.filter : "",
		o.count ? "until the count" : "Ctrl-C stops");
	catch_stop_signals();
	/* the live count (dumpcap's): on one line on a terminal, a line each
	 * with --progress, none with --quiet */
	live = !o.quiet && (o.progress || isatty(STDERR_FILENO));
	until = o.duration > 0 ? now_s() + o.duration : 0;
	while ((rc = recv_reply(s, &r, until, &stop_sent)) == 0 &&
	       r.kind == VIA_CAPTURE_PROGRESS) {
		if (live)
			fprintf(stderr, "%s%s: %s: %llu frames, %llu dropped%s", o.progress ? "" : "\r",
				prog, o.port, (unsigned long long)r.frames,
				(unsigned long long)r.dropped, o.progress ? "\n" : "");
	}
	if (live && !o.progress)
		fputc('\n', stderr);
	if (rc == -ETIMEDOUT) {
		stop_requested = 1;
		until = now_s() + 10;
		while ((rc = recv_reply(s, &r, until, &stop_sent)) == 0 &&
		       r.kind == VIA_CAPTURE_PROGRESS)
			;
	}
	close(s);
	if (rc == 0 && r.kind != VIA_CAPTURE_DONE)
		rc = -EPROTO;
	if (rc != 0) {
		err("capture on %s: %s", o.port, strerror(-rc));
		return 1;
	}
	fprintf(stderr, "%s: %llu frames captured, %llu dropped%s%s\n", prog,
		(unsigned long long)r.frames, (unsigned long long)r.dropped,
		r.status ? "; writing failed: " : "", r.status ? strerror(-r.status) : "");
	return r.status != 0;
}

/* ---- upgrade ---------------------------------------------------------------- */

/* a handover: EAL and the ports released, then started by the new binary */
#define UPGRADE_REPLY_MS 60000

/* The request, with the new binary's fd if there is one (@p fd >= 0). */
static int
admin_send(int s, const struct via_admin_req *q, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = { .iov_base = (void *)q, .iov_len = sizeof(*q) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*q) ? 0 : -errno;
}

static void
upgrade_print(const struct via_admin_rep *r)
{
	static const char *const results[] = {
		[VIA_ADMIN_UPGRADED] = "upgraded", [VIA_ADMIN_ROLLED_BACK] = "rolled_back",
		[VIA_ADMIN_REFUSED] = "refused",
	};

	if (json_out) {
		printf("{\"result\": \"%s\", \"status\": %d, \"detail\": \"%s\", "
		       "\"blackout_us\": %llu, \"image_version\": %u, \"image_bytes\": %llu, "
		       "\"sessions\": %u, \"vis\": %u, \"connections\": %u, \"frames\": %u}\n",
		       results[r->result], r->status, r->detail, (unsigned long long)r->blackout_us,
		       r->image_version, (unsigned long long)r->image_bytes, r->sessions, r->vis,
		       r->connections, r->frames);
		return;
	}
	if (r->result == VIA_ADMIN_REFUSED) {
		printf("upgrade refused: %s (%s); viad goes on as it was\n", r->detail,
		       strerror(-r->status));
		return;
	}
	if (r->result == VIA_ADMIN_UPGRADED)
		printf("upgraded to %s: blackout %.1f ms\n", r->detail, r->blackout_us / 1000.0);
	else
		printf("rolled back: the new binary refused the image (%s); the old viad resumed "
		       "after %.1f ms\n", r->detail, r->blackout_us / 1000.0);
	printf("adopted %u sessions, %u VIs, %u connections, %u frames in flight "
	       "(image version %u, %llu bytes)\n", r->sessions, r->vis, r->connections, r->frames,
	       r->image_version, (unsigned long long)r->image_bytes);
}

/* Hand viad over to BINARY; the viad running afterwards answers. */
static int
cmd_upgrade(struct cmd_ctx *c)
{
	const struct via_admin_req q = {
		.magic = VIA_ADMIN_MAGIC, .version = VIA_ADMIN_VERSION, .op = VIA_ADMIN_UPGRADE,
	};
	const char *binary = c->argc == 2 ? c->argv[1] : NULL;
	struct pollfd pf = { .events = POLLIN };
	struct via_admin_rep r;
	int fd = -1, s, rc;
	ssize_t n;

	if (c->argc > 2) {
		err("upgrade: one BINARY at most");
		return EXIT_USAGE;
	}
	/* what we may open, viad executes (as root, so root only: viad checks) */
	if (binary != NULL && (fd = open(binary, O_PATH | O_CLOEXEC)) < 0) {
		err("upgrade: %s: %s", binary, strerror(errno));
		return 1;
	}
	if (connect_viad(c) == NULL)
		return 1;
	rc = unix_connect(c->t.dir, VIA_ADMIN_SOCKET, &s);
	if (rc == 0) {
		rc = admin_send(s, &q, fd);
		pf.fd = s;
		if (rc == 0 && poll(&pf, 1, UPGRADE_REPLY_MS) <= 0)
			rc = -ETIMEDOUT;
		if (rc == 0 && (n = recv(s, &r, sizeof(r), 0)) != (ssize_t)sizeof(r))
			rc = n < 0 ? -errno : -EPROTO;
		close(s);
	}
	if (fd >= 0)
		close(fd);
	if (rc == 0 && (r.magic != VIA_ADMIN_MAGIC || r.result < VIA_ADMIN_UPGRADED ||
			r.result > VIA_ADMIN_REFUSED))
		rc = -EPROTO;
	if (rc != 0) {
		err("upgrade: %s/%s: %s%s", c->t.dir, VIA_ADMIN_SOCKET, strerror(-rc),
		    rc == -EACCES ? " (only root may upgrade viad)" : "");
		return 1;
	}
	r.detail[sizeof(r.detail) - 1] = '\0';
	upgrade_print(&r);
	return r.result == VIA_ADMIN_UPGRADED ? 0 : 1;
}

/* ---- main ------------------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(struct cmd_ctx *c);
} commands[] = {
	{ "status", cmd_status }, { "ports", cmd_ports }, { "sessions", cmd_sessions },
	{ "vis", cmd_vis }, { "conns", cmd_conns }, { "cqs", cmd_cqs },
	{ "counters", cmd_counters }, { "lcores", cmd_lcores }, { "hosts", cmd_hosts },
	{ "cpus", cmd_cpus },
	{ "capture", cmd_capture }, { "upgrade", cmd_upgrade },
};

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "instance", required_argument, NULL, 'i' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cmd_ctx c = { .instance = "viad" };
	unsigned i;
	int opt, rc, j, k;

	/* --json anywhere, as people type it (viactl vis --json) */
	for (j = k = 0; j < argc; j++) {
		if (j > 0 && strcmp(argv[j], "--json") == 0)
			json_out = true;
		else
			argv[k++] = argv[j];
	}
	argc = k;
	argv[argc] = NULL;
	/* options before the command only: the command's own come after it */
	while ((opt = getopt_long(argc, argv, "+i:r:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			c.instance = optarg;
			break;
		case 'r':
			c.dir = optarg;
			break;
		case 'V':
			printf("viactl (VIA-DPDK) %s\n", VIA_DPDK_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[optind], commands[i].name) == 0)
			break;
	}
	if (i == sizeof(commands) / sizeof(commands[0])) {
		err("unknown command '%s' (viactl -h lists them)", argv[optind]);
		return EXIT_USAGE;
	}
	c.argc = argc - optind;
	c.argv = argv + optind;
	rc = commands[i].fn(&c);
	if (c.connected)
		tel_close(&c.t);
	return rc;
}
