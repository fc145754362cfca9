/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK telemetry commands under /viad/. EAL's telemetry threads run the
 * callbacks; the objects they read are the control thread's, which changes
 * them only while it holds the objects lock and every shard's data-path
 * lock (via_dp_lock_all()). A callback takes the objects lock alone: the
 * control thread waits for it, the poll lcores never do. What the lcores
 * change meanwhile (a VI's sequence numbers, its queues, the per-lcore
 * counters) is read as it is at that instant, word by word, each with a
 * relaxed load; a difference of two such counters reads the smaller first.
 *
 * Who asks decides what is shown (via_telemetry_proto.h): EAL's socket is
 * root's; viad's own socket, open to the socket group, relays each query
 * to EAL's and tells the callbacks who asked, so a member of the group
 * sees the pids, uids and process names of their own sessions only.
 *
 * Lists that can be long (sessions, VIs, CQs, connections) give ids, a page
 * of at most LIST_PAGE at a time: {"ids": [...], "next": CURSOR}, where a
 * non-zero CURSOR is the START of the next page. One object is asked for by
 * id. Telemetry's replies are at most 16 KiB, so a list of whole objects
 * would be cut short. Short lists (ports, lcores) are objects keyed by
 * name, each also holding its name: DPDK 22.11 has no arrays of objects
 * (viactl --json turns them into arrays).
 *
 * Names in replies follow DPDK's: letters, digits and '_' only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_random.h>
#include <rte_ring.h>
#include <rte_telemetry.h>
#include <rte_version.h>

#include "capture.h"
#include "dp/dp.h"
#include "hosts.h"
#include "runtime.h"
#include "telemetry.h"
#include "upgrade.h"
#include "via_telemetry_proto.h"
#include "via_glue.h"
#include "via_version.h"

/* ids per page of a list: below RTE_TEL_MAX_ARRAY_ENTRIES, and their
 * digits fit the 16 KiB reply */
#define LIST_PAGE 256

static struct viad *tel_viad;
static uint64_t tel_started_ms;

/*
 * Keep the objects as they are: the control thread changes them only with
 * this lock held too. @return false once viad is stopping: the objects are
 * being freed, and nothing is reported (the control thread sets stopping
 * under this lock).
 */
static bool
tel_enter(void)
{
	via_dp_lock(&tel_viad->objects_lock);
	if (__atomic_load_n(&tel_viad->stopping, __ATOMIC_ACQUIRE)) {
		via_dp_unlock(&tel_viad->objects_lock);
		return false;
	}
	return true;
}

static void
tel_leave(void)
{
	via_dp_unlock(&tel_viad->objects_lock);
}

/* A counter an lcore moves while telemetry reads it. */
#define LIVE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* ---- who asks ---------------------------------------------------------------- */

#define RELAY_CLIENTS  16        /* group members' connections at once */
#define RELAY_CMD_MAX  1023      /* EAL reads a command into 1 KiB */
#define RELAY_REPLY_MAX (64 * 1024)
#define RELAY_WAIT_MS  5000      /* EAL answers at once; a stuck one is dropped */

static struct {
	int lfd;                 /* viad's telemetry socket */
	int eal_fd;              /* viad's connection to EAL's socket */
	int stop_fd;             /* eventfd: viad stops */
	bool running;
	pthread_t thread;
	char path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	char hello[512];         /* EAL's greeting, passed on to each client */
	ssize_t hello_len;
	char secret[32];         /* what "/viad/relay" must be given: in viad's memory only */
	pid_t eal_tid;           /* atomic: EAL's thread that serves eal_fd */
	uid_t asker;             /* atomic: who asked the query eal_fd carries */
	char *reply;
	struct { int fd; uid_t uid; } clients[RELAY_CLIENTS];
} relay = { .lfd = -1, .eal_fd = -1, .stop_fd = -1 };

/*
 * Whether the query being answered may show what user @p owner owns (pids,
 * uids, process names): on EAL's socket root asks (mode 0600); a query
 * relayed from viad's socket runs on the one EAL thread that serves the
 * relay, and shows the asker's own only, unless the asker is root or viad.
 */
static bool
tel_may_see(uid_t owner)
{
	uid_t asker;

	if ((pid_t)syscall(SYS_gettid) != __atomic_load_n(&relay.eal_tid, __ATOMIC_ACQUIRE))
		return true;
	asker = __atomic_load_n(&relay.asker, __ATOMIC_ACQUIRE);
	return asker == 0 || asker == geteuid() || asker == owner;
}

/* The relay's first query on its EAL connection: the thread that answers
 * it answers all the relay's queries (EAL gives a connection a thread). */
static int
tel_relay(const char *cmd, const char *params, struct rte_tel_data *r)
{
	(void)cmd;
	if (params == NULL || strcmp(params, relay.secret) != 0)
		return -EPERM;
	__atomic_store_n(&relay.eal_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_int(r, "relay", 1);
	return 0;
}


/*
 * Up to @p max unsigned numbers separated by commas. @return how many,
 * -EINVAL (not numbers, or too many)
 */
static int
parse_numbers(const char *params, uint64_t *v, unsigned max)
{
	unsigned n = 0;
	const char *p = params;
	char *end;

	if (p == NULL || *p == '\0')
		return 0;
	for (;;) {
		if (n == max || *p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v[n++] = strtoull(p, &end, 0);
		if (errno != 0)
			return -EINVAL;
		if (*end == '\0')
			return (int)n;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

/* The one id a command about one object takes. @return 0, -EINVAL */
static int
parse_id(const char *params, uint32_t *id)
{
	uint64_t v;

	if (parse_numbers(params, &v, 1) != 1 || v == 0 || v > UINT32_MAX)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

static void
mac_string(char *buf, size_t len, const uint8_t mac[6])
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
		 mac[4], mac[5]);
}

static void
add_mac(struct rte_tel_data *r, const char *name, const uint8_t mac[6])
{
	char buf[18];

	mac_string(buf, sizeof(buf), mac);
	rte_tel_data_add_dict_string(r, name, buf);
}

/* A discriminator as text when it is printable, else as hex (at most
 * RTE_TEL_MAX_STRING_LEN - 1 characters either way) */
static void
add_disc(struct rte_tel_data *r, const char *name, const struct via_ctl_addr *a)
{
	char buf[RTE_TEL_MAX_STRING_LEN];
	unsigned i, len = RTE_MIN(a->disc_len, (uint8_t)sizeof(a->disc));
	bool text = true;

	for (i = 0; i < len; i++) {
		if (a->disc[i] < 0x20 || a->disc[i] > 0x7e || a->disc[i] == '"' ||
		    a->disc[i] == '\\')
			text = false;
	}
	if (text) {
		memcpy(buf, a->disc, len);
		buf[len] = '\0';
	} else {
		buf[0] = '\0';
		for (i = 0; i < len && 2 * i + 2 < sizeof(buf); i++)
			snprintf(buf + 2 * i, 3, "%02x", a->disc[i]);
	}
	rte_tel_data_add_dict_string(r, name, buf);
}

static const char *
reliability_name(uint32_t level)
{
	switch (level) {
	case VIP_SERVICE_UNRELIABLE:
		return "unreliable";
	case VIP_SERVICE_RELIABLE_DELIVERY:
		return "reliable_delivery";
	case VIP_SERVICE_RELIABLE_RECEPTION:
		return "reliable_reception";
	default:
		return "?";
	}
}

static const char *
poll_mode_name(enum via_poll_mode m)
{
	return m == VIA_POLL_BUSY ? "busy" : m == VIA_POLL_BACKOFF ? "backoff" : "adaptive";
}

/* ---- viad, its configuration, its ports ---------------------------------- */

/* The captures: the NICs being captured ("via0 via1", or "off"), and the
 * frames written and dropped by each NIC's running or last capture, summed.
 * @return how many run */
static unsigned
capture_summary(char *running, size_t len, uint64_t *frames, uint64_t *dropped)
{
	struct via_capture_status st[VIA_CONF_MAX_PORTS];
	unsigned i, n = via_capture_get_status(st, RTE_DIM(st)), active = 0;
	size_t at = 0;

	*frames = *dropped = 0;
	running[0] = '\0';
	for (i = 0; i < n; i++) {
		*frames += st[i].frames;
		*dropped += st[i].dropped;
		if (st[i].active && at < len)
			at += (size_t)snprintf(running + at, len - at, "%s%s", active++ ? " " : "",
					       st[i].port);
	}
	if (active == 0)
		snprintf(running, len, "off");
	return active;
}

static int
tel_info(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct viad *d = tel_viad;
	char captures[RTE_TEL_MAX_STRING_LEN];
	uint64_t frames, dropped;

	(void)cmd;
	(void)params;
	if (!tel_enter())
		return -EAGAIN;
	capture_summary(captures, sizeof(captures), &frames, &dropped);
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_string(r, "version", VIA_DPDK_VERSION);
	rte_tel_data_add_dict_string(r, "dpdk", rte_version());
	rte_tel_data_add_dict_string(r, "instance", d->conf.instance);
	rte_tel_data_add_dict_int(r, "pid", (int)getpid());
	rte_tel_data_add_dict_u64(r, "uptime_s", (via_now_ms() - tel_started_ms) / 1000);
	rte_tel_data_add_dict_string(r, "socket", d->conf.socket_path);
	rte_tel_data_add_dict_string(r, "poll_mode", poll_mode_name(d->conf.poll_mode));
	rte_tel_data_add_dict_u64(r, "poll_lcores", d->nb_shards);
	rte_tel_data_add_dict_u64(r, "nics", d->nb_nics);
	rte_tel_data_add_dict_u64(r, "sessions", d->sessions.nb_live);
	rte_tel_data_add_dict_u64(r, "vis", d->vis.nb_live);
	rte_tel_data_add_dict_u64(r, "cqs", d->cqs.nb_live);
	rte_tel_data_add_dict_u64(r, "regions", d->mrs.nb_live);
	rte_tel_data_add_dict_u64(r, "ptags", d->ptags.nb_live);
	rte_tel_data_add_dict_string(r, "capture", captures);
	/* handovers of this pid (viactl upgrade: section 18 of docs/design.md) */
	{
		uint64_t blackout_us;
		uint32_t upgrades = via_upgrade_count(&blackout_us);

		rte_tel_data_add_dict_u64(r, "upgrades", upgrades);
		rte_tel_data_add_dict_u64(r, "last_blackout_us", blackout_us);
	}
	tel_leave();
	return 0;
}

static int
tel_config(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct via_conf *c = &tel_viad->conf;

	(void)cmd;
	(void)params;
	/* the configuration never changes after start: no lock */
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_string(r, "instance", c->instance);
	rte_tel_data_add_dict_string(r, "socket", c->socket_path);
	rte_tel_data_add_dict_string(r, "hosts", c->hosts_path);
	rte_tel_data_add_dict_string(r, "glue_dir", c->glue_dir);
	rte_tel_data_add_dict_string(r, "log_level", c->log_level);
	rte_tel_data_add_dict_string(r, "poll_mode", poll_mode_name(c->poll_mode));
	rte_tel_data_add_dict_u64(r, "poll_lcores", c->poll_lcores);
	rte_tel_data_add_dict_u64(r, "idle_spin_us", c->idle_spin_us);
	rte_tel_data_add_dict_u64(r, "idle_sleep_us", c->idle_sleep_us);
	rte_tel_data_add_dict_u64(r, "adaptive_timeout_us", c->adaptive_timeout_us);
	rte_tel_data_add_dict_u64(r, "rel_rto_min_us", c->rel_rto_min_us);
	rte_tel_data_add_dict_u64(r, "rel_rto_max_us", c->rel_rto_max_us);
	rte_tel_data_add_dict_u64(r, "rel_max_retries", c->rel_max_retries);
	rte_tel_data_add_dict_u64(r, "rel_keepalive_ms", c->rel_keepalive_ms);
	rte_tel_data_add_dict_u64(r, "max_sessions", c->max_sessions);
	rte_tel_data_add_dict_u64(r, "max_vi", c->max_vi);
	rte_tel_data_add_dict_u64(r, "max_cq", c->max_cq);
	rte_tel_data_add_dict_u64(r, "max_cq_entries", c->max_cq_entries);
	rte_tel_data_add_dict_u64(r, "max_desc_per_queue", c->max_desc_per_queue);
	rte_tel_data_add_dict_u64(r, "max_segments_per_desc", c->max_segments_per_desc);
	rte_tel_data_add_dict_u64(r, "max_transfer_size", c->max_transfer_size);
	rte_tel_data_add_dict_u64(r, "max_ptags", c->max_ptags);
	rte_tel_data_add_dict_u64(r, "max_regions", c->max_regions);
	rte_tel_data_add_dict_u64(r, "max_register_bytes", c->max_register_bytes);
	rte_tel_data_add_dict_u64(r, "session_shm_bytes", c->session_shm_bytes);
	rte_tel_data_add_dict_u64(r, "max_alloc_bytes", c->max_alloc_bytes);
	rte_tel_data_add_dict_u64(r, "max_in_place_bytes", c->max_in_place_bytes);
	rte_tel_data_add_dict_u64(r, "max_discriminator_len", c->max_discriminator_len);
	return 0;
}

/* One port, as a dict of its own; the caller holds the locks. */
static struct rte_tel_data *
port_dict(const struct viad *d, const struct via_nic *nic)
{
	struct rte_tel_data *p = rte_tel_data_alloc();
	const struct via_session *s;
	struct via_ctl_port_info pi;
	struct via_port_stats st;
	uint64_t sessions = 0;

	if (p == NULL)
		return NULL;
	TAILQ_FOREACH(s, &d->session_list, link)
		sessions += s->opened && s->nic == nic;
	via_nic_port_info(nic, &pi);
	rte_tel_data_start_dict(p);
	rte_tel_data_add_dict_string(p, "name", nic->info.name);
	rte_tel_data_add_dict_u64(p, "index", nic->index);
	rte_tel_data_add_dict_string(p, "glue", pi.glue);
	add_mac(p, "mac", pi.mac);
	rte_tel_data_add_dict_u64(p, "mtu", pi.mtu);
	rte_tel_data_add_dict_u64(p, "frame_payload", via_dp_frame_payload(nic));
	rte_tel_data_add_dict_string(p, "link", pi.link_up ? "up" : "down");
	rte_tel_data_add_dict_u64(p, "link_speed_mbps", pi.link_speed_mbps);
	rte_tel_data_add_dict_u64(p, "rx_packets", pi.rx_packets);
	rte_tel_data_add_dict_u64(p, "tx_packets", pi.tx_packets);
	rte_tel_data_add_dict_u64(p, "rx_bytes", pi.rx_bytes);
	rte_tel_data_add_dict_u64(p, "tx_bytes", pi.tx_bytes);
	rte_tel_data_add_dict_u64(p, "rx_errors", pi.rx_errors);
	rte_tel_data_add_dict_u64(p, "tx_errors", pi.tx_errors);
	/* IP beside VIA: the frames that crossed the port's ip_interface */
	if (nic->index < d->conf.nb_ports && d->conf.ports[nic->index].ip_interface[0] != '\0' &&
	    via_port_stats_get(nic->port, &st) == 0) {
		rte_tel_data_add_dict_string(p, "ip_interface", d->conf.ports[nic->index].ip_interface);
		rte_tel_data_add_dict_u64(p, "ip_to_kernel", st.ip_to_kernel);
		rte_tel_data_add_dict_u64(p, "ip_from_kernel", st.ip_from_kernel);
		rte_tel_data_add_dict_u64(p, "ip_dropped", st.ip_dropped);
	}
	/* frames the port did not take yet: a backlog that stays full drops */
	rte_tel_data_add_dict_u64(p, "tx_backlog", rte_ring_count(nic->backlog));
	rte_tel_data_add_dict_int(p, "own_address_via_port",
				  (nic->caps & VIA_PORT_CAP_SELF_VIA_PORT) != 0);
	rte_tel_data_add_dict_int(p, "tx_zero_copy", (nic->caps & VIA_PORT_CAP_TX_BY_VA) != 0);
	rte_tel_data_add_dict_u64(p, "sessions", sessions);
	return p;
}

static int
tel_ports(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct viad *d = tel_viad;
	unsigned i;
	int rc = 0;

	(void)cmd;
	(void)params;
	if (!tel_enter())
		return -EAGAIN;
	rte_tel_data_start_dict(r);
	for (i = 0; i < d->nb_nics && rc == 0; i++) {
		struct rte_tel_data *p = port_dict(d, &d->nics[i]);

		rc = p == NULL ? -ENOMEM
			       : rte_tel_data_add_dict_container(r, d->nics[i].info.name, p, 0);
	}
	tel_leave();
	return rc;
}

/* ---- lists of objects, a page at a time ---------------------------------- */

/* Which objects of a table a list shows; @p filter is its number or 0. */
typedef bool (*list_pick)(const void *obj, uint32_t filter);

/*
 * {"ids": [...], "next": CURSOR} of the objects of @p t that @p pick takes,
 * from cursor @p start; the caller holds the locks.
 */
static int
list_page(struct rte_tel_data *r, const struct via_idtab *t, uint32_t start, list_pick pick,
	  uint32_t filter)
{
	struct rte_tel_data *ids = rte_tel_data_alloc();
	uint32_t cursor = start, id, n = 0;
	const void *obj;

	if (ids == NULL)
		return -ENOMEM;
	rte_tel_data_start_array(ids, RTE_TEL_U64_VAL);
	while (n < LIST_PAGE && (obj = via_idtab_next(t, &cursor, &id)) != NULL) {
		if (pick == NULL || pick(obj, filter)) {
			rte_tel_data_add_array_u64(ids, id);
			n++;
		}
	}
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_container(r, "ids", ids, 0);
	/* a full page may have more after it */
	rte_tel_data_add_dict_u64(r, "next", n == LIST_PAGE ? cursor : 0);
	return 0;
}

/* "[FILTER[,START]]" or, without a filter, "[START]" */
static int
list_params(const char *params, bool filtered, uint32_t *filter, uint32_t *start)
{
	uint64_t v[2] = { 0, 0 };
	int n = parse_numbers(params, v, filtered ? 2 : 1);

	if (n < 0 || v[0] > UINT32_MAX || v[1] > UINT32_MAX)
		return -EINVAL;
	*filter = filtered ? (uint32_t)v[0] : 0;
	*start = (uint32_t)(filtered ? v[1] : v[0]);
	return 0;
}

/*
 * A list command: the page of table @p t that @p params asks for
 * (list_params), of the objects @p pick takes (NULL: all).
 */
static int
list_command(const char *params, struct rte_tel_data *r, const struct via_idtab *t,
	     bool filtered, list_pick pick)
{
	uint32_t filter, start;
	int rc;

	if (list_params(params, filtered, &filter, &start) != 0)
		return -EINVAL;
	if (!tel_enter())
		return -EAGAIN;
	rc = list_page(r, t, start, pick, filter);
	tel_leave();
	return rc;
}

static int
tel_sessions(const char *cmd, const char *params, struct rte_tel_data *r)
{
	(void)cmd;
	return list_command(params, r, &tel_viad->sessions, false, NULL);
}

/* The command name of process @p pid, quotes and controls replaced. */
static void
process_name(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	for (i = 0; buf[i] != '\0'; i++) {
		if ((unsigned char)buf[i] < 0x20 || buf[i] == '"' || buf[i] == '\\')
			buf[i] = '?';
	}
}

static int
tel_session(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct via_session *s;
	const struct via_ptag *pt;
	const struct via_pmem *pm;
	const struct via_mr *mr;
	const struct via_cq *cq;
	const struct via_vi *vi;
	uint64_t n_ptags = 0, n_mrs = 0, n_cqs = 0, n_vis = 0, n_allocs = 0, alloc_bytes = 0;
	uint64_t mr_bytes = 0;
	char comm[32];
	uint32_t id;

	(void)cmd;
	if (parse_id(params, &id) != 0)
		return -EINVAL;
	if (!tel_enter())
		return -EAGAIN;
	s = via_idtab_lookup(&tel_viad->sessions, id);
	if (s == NULL) {
		tel_leave();
		return -ENOENT;
	}
	TAILQ_FOREACH(pt, &s->ptags, link)
		n_ptags++;
	TAILQ_FOREACH(mr, &s->mrs, link) {
		n_mrs++;
		mr_bytes += mr->len;
	}
	TAILQ_FOREACH(cq, &s->cqs, link)
		n_cqs++;
	TAILQ_FOREACH(vi, &s->vis, link)
		n_vis++;
	TAILQ_FOREACH(pm, &s->pmems, link) {
		n_allocs++;
		alloc_bytes += pm->shm.len;
	}
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_u64(r, "id", s->id);
	/* whose it is: for the asker's own sessions (and root) only */
	if (tel_may_see(s->uid)) {
		process_name(s->pid, comm, sizeof(comm));
		rte_tel_data_add_dict_int(r, "pid", (int)s->pid);
		rte_tel_data_add_dict_string(r, "comm", comm);
		rte_tel_data_add_dict_u64(r, "uid", s->uid);
		rte_tel_data_add_dict_u64(r, "gid", s->gid);
	}
	rte_tel_data_add_dict_string(r, "nic", s->opened ? s->nic->info.name : "");
	rte_tel_data_add_dict_u64(r, "segment_bytes", s->opened ? s->seg.len : 0);
	rte_tel_data_add_dict_int(r, "segment_hugepages", s->opened && s->seg.hugepages);
	rte_tel_data_add_dict_u64(r, "vis", n_vis);
	rte_tel_data_add_dict_u64(r, "cqs", n_cqs);
	rte_tel_data_add_dict_u64(r, "ptags", n_ptags);
	rte_tel_data_add_dict_u64(r, "regions", n_mrs);
	rte_tel_data_add_dict_u64(r, "registered_bytes", mr_bytes);
	rte_tel_data_add_dict_u64(r, "in_place_bytes", s->in_place_bytes);
	rte_tel_data_add_dict_u64(r, "allocs", n_allocs);
	rte_tel_data_add_dict_u64(r, "alloc_bytes", alloc_bytes);
	tel_leave();
	return 0;
}

static bool
vi_of_session(const void *obj, uint32_t session)
{
	return session == 0 || ((const struct via_vi *)obj)->owner->id == session;
}

static int
tel_vis(const char *cmd, const char *params, struct rte_tel_data *r)
{
	(void)cmd;
	return list_command(params, r, &tel_viad->vis, true, vi_of_session);
}

/* Descriptors posted on a work queue that viad has not taken yet; read
 * only, so that a telemetry query never changes the consumer's view. */
static uint32_t
wq_posted(const struct via_vi *vi, enum via_wq_kind q)
{
	const struct via_ring *ring = &vi->wq[q];
	uint32_t n = __atomic_load_n(&ring->sh->prod, __ATOMIC_ACQUIRE) - ring->local;

	return n > ring->mask + 1 ? ring->mask + 1 : n;
}

static int
tel_vi(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct via_vi *vi;
	const struct via_vi_rel *rel;
	uint32_t una, rel_nxt, nxt, sq_head, sq_tail, ans_head, ans_tail;
	bool reliable;
	uint32_t id;

	(void)cmd;
	if (parse_id(params, &id) != 0)
		return -EINVAL;
	if (!tel_enter())
		return -EAGAIN;
	vi = via_idtab_lookup(&tel_viad->vis, id);
	if (vi == NULL) {
		tel_leave();
		return -ENOENT;
	}
	rel = &vi->rel;
	reliable = vi->attr.reliability != VIP_SERVICE_UNRELIABLE;
	/* each difference of two moving counters reads the one behind first */
	una = LIVE(rel->snd_una);
	rel_nxt = LIVE(rel->snd_nxt);
	nxt = reliable ? rel_nxt : LIVE(vi->tx_seq);
	sq_head = LIVE(vi->sq.head);
	sq_tail = LIVE(vi->sq.tail);
	ans_head = LIVE(vi->answers.head);
	ans_tail = LIVE(vi->answers.tail);
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_u64(r, "id", vi->id);
	rte_tel_data_add_dict_u64(r, "session", vi->owner->id);
	if (tel_may_see(vi->owner->uid))
		rte_tel_data_add_dict_int(r, "pid", (int)vi->owner->pid);
	rte_tel_data_add_dict_string(r, "nic", vi->owner->nic->info.name);
	rte_tel_data_add_dict_string(r, "state", via_vi_state_name(LIVE(vi->state)));
	rte_tel_data_add_dict_string(r, "reliability", reliability_name(vi->attr.reliability));
	rte_tel_data_add_dict_int(r, "rdma_write", vi->attr.rdma_write);
	rte_tel_data_add_dict_int(r, "rdma_read", vi->attr.rdma_read);
	rte_tel_data_add_dict_u64(r, "max_transfer", vi->attr.max_transfer);
	rte_tel_data_add_dict_u64(r, "ptag", vi->attr.ptag);
	rte_tel_data_add_dict_u64(r, "lcore", vi->shard->lcore);
	rte_tel_data_add_dict_u64(r, "send_cq", vi->cq[VIA_WQ_SEND] ? vi->cq[VIA_WQ_SEND]->id : 0);
	rte_tel_data_add_dict_u64(r, "recv_cq", vi->cq[VIA_WQ_RECV] ? vi->cq[VIA_WQ_RECV]->id : 0);
	rte_tel_data_add_dict_u64(r, "queue_capacity", vi->wq_capacity);
	rte_tel_data_add_dict_u64(r, "send_posted", wq_posted(vi, VIA_WQ_SEND));
	rte_tel_data_add_dict_u64(r, "recv_posted", wq_posted(vi, VIA_WQ_RECV));
	rte_tel_data_add_dict_int(r, "sending", LIVE(vi->tx.active));
	rte_tel_data_add_dict_int(r, "receiving", LIVE(vi->rx.state) != VIA_RX_IDLE);
	rte_tel_data_add_dict_string(r, "rx_state", via_rx_state_name(LIVE(vi->rx.state)));
	/* the connection (VIA §4): who is at the other end */
	rte_tel_data_add_dict_u64(r, "conn_id", vi->conn.id);
	rte_tel_data_add_dict_int(r, "requesting", via_cm_handshaking(vi));
	rte_tel_data_add_dict_string(r, "cm_state", via_cm_state_name(vi->conn.cm_state));
	add_mac(r, "remote_mac", vi->conn.remote_mac);
	rte_tel_data_add_dict_u64(r, "remote_vi", vi->conn.remote_vi);
	add_disc(r, "local_disc", &vi->conn.local);
	add_disc(r, "remote_disc", &vi->conn.remote);
	rte_tel_data_add_dict_u64(r, "frame_payload", vi->conn.frame_payload);
	/* counters since it connected: the sequence numbers count them */
	rte_tel_data_add_dict_u64(r, "messages_sent", LIVE(vi->tx_msg_id));
	rte_tel_data_add_dict_u64(r, "messages_received", LIVE(vi->rx.last_msg_id));
	rte_tel_data_add_dict_u64(r, "frames_sent", nxt);
	rte_tel_data_add_dict_u64(r, "frames_received_in_order", LIVE(rel->rcv_nxt));
	rte_tel_data_add_dict_u64(r, "frames_acked", una);
	rte_tel_data_add_dict_u64(r, "frames_in_flight", (uint32_t)(rel_nxt - una));
	rte_tel_data_add_dict_u64(r, "window", LIVE(rel->win_size));
	rte_tel_data_add_dict_u64(r, "rto_us", LIVE(rel->rto_us));
	rte_tel_data_add_dict_u64(r, "retries", LIVE(rel->retries));
	rte_tel_data_add_dict_int(r, "probing", LIVE(rel->probing));
	rte_tel_data_add_dict_u64(r, "completions_held", (uint32_t)(sq_tail - sq_head));
	rte_tel_data_add_dict_u64(r, "reads_outstanding", LIVE(vi->sq.reads));
	rte_tel_data_add_dict_u64(r, "reads_to_answer", (uint32_t)(ans_tail - ans_head));
	tel_leave();
	return 0;
}

static bool
cq_of_session(const void *obj, uint32_t session)
{
	return session == 0 || ((const struct via_cq *)obj)->owner->id == session;
}

static int
tel_cqs(const char *cmd, const char *params, struct rte_tel_data *r)
{
	(void)cmd;
	return list_command(params, r, &tel_viad->cqs, true, cq_of_session);
}

static int
tel_cq(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct via_cq *cq;
	uint32_t id, queued, cons;

	(void)cmd;
	if (parse_id(params, &id) != 0)
		return -EINVAL;
	if (!tel_enter())
		return -EAGAIN;
	cq = via_idtab_lookup(&tel_viad->cqs, id);
	if (cq == NULL) {
		tel_leave();
		return -ENOENT;
	}
	/* produced by viad, not consumed by the client yet */
	cons = __atomic_load_n(&cq->ring.sh->cons, __ATOMIC_ACQUIRE);
	queued = LIVE(cq->ring.local) - cons;
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_u64(r, "id", cq->id);
	rte_tel_data_add_dict_u64(r, "session", cq->owner->id);
	rte_tel_data_add_dict_u64(r, "capacity", cq->capacity);
	rte_tel_data_add_dict_u64(r, "queued", RTE_MIN(queued, cq->ring.mask + 1));
	rte_tel_data_add_dict_u64(r, "work_queues", cq->refs);
	tel_leave();
	return 0;
}

/* VIs that have or seek a connection */
static bool
vi_connected(const void *obj, uint32_t unused)
{
	const struct via_vi *vi = obj;

	(void)unused;
	return vi->state != VIP_STATE_IDLE || via_cm_handshaking(vi);
}

static int
tel_conns(const char *cmd, const char *params, struct rte_tel_data *r)
{
	(void)cmd;
	return list_command(params, r, &tel_viad->vis, false, vi_connected);
}

/* ---- counters, lcores, hosts, capture ------------------------------------ */

#define STAT(st, f) __atomic_load_n(&(st)->f, __ATOMIC_RELAXED)

/* The data-path counters of every lcore, the control thread's included. */
static void
poll_sum(struct via_poll_stats *sum)
{
	unsigned lc;

	memset(sum, 0, sizeof(*sum));
	RTE_LCORE_FOREACH(lc) {
		const struct via_poll_stats *st = via_poll_stats_of(lc);

		sum->frames_rx += STAT(st, frames_rx);
		sum->frames_tx += STAT(st, frames_tx);
		sum->frames_dropped += STAT(st, frames_dropped);
		sum->frames_corrupt += STAT(st, frames_corrupt);
		sum->frames_unmatched += STAT(st, frames_unmatched);
		sum->cq_overruns += STAT(st, cq_overruns);
		sum->frames_retransmitted += STAT(st, frames_retransmitted);
		sum->rto_expiries += STAT(st, rto_expiries);
		sum->frames_tx_zero_copy += STAT(st, frames_tx_zero_copy);
		sum->naks_tx += STAT(st, naks_tx);
		sum->naks_rx += STAT(st, naks_rx);
		sum->frames_duplicate += STAT(st, frames_duplicate);
		sum->frames_out_of_order += STAT(st, frames_out_of_order);
		sum->cm_cookies_sent += STAT(st, cm_cookies_sent);
		sum->cm_requests_refused += STAT(st, cm_requests_refused);
		sum->pool_exhausted += STAT(st, pool_exhausted);
		sum->rx_bursts += STAT(st, rx_bursts);
		sum->rx_burst_frames += STAT(st, rx_burst_frames);
		sum->iterations += STAT(st, iterations);
		sum->busy_iterations += STAT(st, busy_iterations);
		sum->busy_cycles += STAT(st, busy_cycles);
	}
}

/* Timer cycles the poll lcores have polled, all together. */
static uint64_t
poll_cycles(const struct viad *d, uint64_t now)
{
	uint64_t total = 0;
	unsigned i;

	for (i = 0; i < d->nb_shards; i++) {
		uint64_t at = STAT(via_poll_stats_of(d->shards[i].lcore), started_at);

		if (at != 0 && now > at)
			total += now - at;
	}
	return total;
}

static int
tel_counters(const char *cmd, const char *params, struct rte_tel_data *r)
{
	struct via_ctl_counters c;
	struct via_poll_stats p;
	char captures[RTE_TEL_MAX_STRING_LEN];
	uint64_t cap_frames, cap_dropped;

	(void)cmd;
	(void)params;
	if (!tel_enter())
		return -EAGAIN;
	c = tel_viad->counters;
	tel_leave();
	poll_sum(&p);
	capture_summary(captures, sizeof(captures), &cap_frames, &cap_dropped);
	rte_tel_data_start_dict(r);
	/* VIP_DPDK_COUNTERS, in its order */
	rte_tel_data_add_dict_u64(r, "sessions", c.sessions);
	rte_tel_data_add_dict_u64(r, "sessions_closed", c.sessions_closed);
	rte_tel_data_add_dict_u64(r, "vis_created", c.vis_created);
	rte_tel_data_add_dict_u64(r, "vis_destroyed", c.vis_destroyed);
	rte_tel_data_add_dict_u64(r, "cqs_created", c.cqs_created);
	rte_tel_data_add_dict_u64(r, "cqs_destroyed", c.cqs_destroyed);
	rte_tel_data_add_dict_u64(r, "ptags_created", c.ptags_created);
	rte_tel_data_add_dict_u64(r, "ptags_destroyed", c.ptags_destroyed);
	rte_tel_data_add_dict_u64(r, "regions_registered", c.regions_registered);
	rte_tel_data_add_dict_u64(r, "regions_deregistered", c.regions_deregistered);
	rte_tel_data_add_dict_u64(r, "bytes_registered", c.bytes_registered);
	rte_tel_data_add_dict_u64(r, "regions_in_place", c.regions_in_place);
	rte_tel_data_add_dict_u64(r, "regions_copied", c.regions_copied);
	rte_tel_data_add_dict_u64(r, "reclaimed_vis", c.reclaimed_vis);
	rte_tel_data_add_dict_u64(r, "reclaimed_cqs", c.reclaimed_cqs);
	rte_tel_data_add_dict_u64(r, "reclaimed_ptags", c.reclaimed_ptags);
	rte_tel_data_add_dict_u64(r, "reclaimed_regions", c.reclaimed_regions);
	rte_tel_data_add_dict_u64(r, "reclaimed_allocs", c.reclaimed_allocs);
	rte_tel_data_add_dict_u64(r, "clients_disconnected_for_violation",
				  c.clients_disconnected_for_violation);
	rte_tel_data_add_dict_u64(r, "control_errors", c.control_errors);
	rte_tel_data_add_dict_u64(r, "frames_rx", p.frames_rx);
	rte_tel_data_add_dict_u64(r, "frames_tx", p.frames_tx);
	rte_tel_data_add_dict_u64(r, "frames_dropped", p.frames_dropped);
	rte_tel_data_add_dict_u64(r, "frames_corrupt", p.frames_corrupt);
	rte_tel_data_add_dict_u64(r, "frames_unmatched", p.frames_unmatched);
	rte_tel_data_add_dict_u64(r, "cq_overruns", p.cq_overruns);
	rte_tel_data_add_dict_u64(r, "frames_tx_zero_copy", p.frames_tx_zero_copy);
	/* the reliable transport */
	rte_tel_data_add_dict_u64(r, "frames_retransmitted", p.frames_retransmitted);
	rte_tel_data_add_dict_u64(r, "rto_expiries", p.rto_expiries);
	rte_tel_data_add_dict_u64(r, "naks_tx", p.naks_tx);
	rte_tel_data_add_dict_u64(r, "naks_rx", p.naks_rx);
	rte_tel_data_add_dict_u64(r, "frames_duplicate", p.frames_duplicate);
	rte_tel_data_add_dict_u64(r, "frames_out_of_order", p.frames_out_of_order);
	/* the connection manager's defence against forged requests */
	rte_tel_data_add_dict_u64(r, "cm_cookies_sent", p.cm_cookies_sent);
	rte_tel_data_add_dict_u64(r, "cm_requests_refused", p.cm_requests_refused);
	/* the poll lcores' pools (dp/dp_mem.c): resource errors */
	rte_tel_data_add_dict_u64(r, "pool_exhausted", p.pool_exhausted);
	/* the poll lcores: busy share = busy_cycles / poll_cycles */
	rte_tel_data_add_dict_u64(r, "rx_bursts", p.rx_bursts);
	rte_tel_data_add_dict_u64(r, "rx_burst_frames", p.rx_burst_frames);
	rte_tel_data_add_dict_u64(r, "poll_iterations", p.iterations);
	rte_tel_data_add_dict_u64(r, "poll_busy_iterations", p.busy_iterations);
	rte_tel_data_add_dict_u64(r, "poll_busy_cycles", p.busy_cycles);
	rte_tel_data_add_dict_u64(r, "poll_cycles", poll_cycles(tel_viad, rte_get_timer_cycles()));
	rte_tel_data_add_dict_u64(r, "timer_hz", rte_get_timer_hz());
	rte_tel_data_add_dict_u64(r, "capture_frames", cap_frames);
	rte_tel_data_add_dict_u64(r, "capture_dropped", cap_dropped);
	return 0;
}

static struct rte_tel_data *
lcore_dict(const struct via_shard *sh, uint64_t now)
{
	const struct via_poll_stats *st = via_poll_stats_of(sh->lcore);
	struct rte_tel_data *l = rte_tel_data_alloc();
	rte_cpuset_t cpus = rte_lcore_cpuset(sh->lcore);
	uint64_t at = STAT(st, started_at), busy = STAT(st, busy_cycles);
	uint64_t cycles = at != 0 && now > at ? now - at : 0;
	int cpu;

	if (l == NULL)
		return NULL;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &cpus); cpu++)
		;
	rte_tel_data_start_dict(l);
	rte_tel_data_add_dict_u64(l, "lcore", sh->lcore);
	rte_tel_data_add_dict_u64(l, "shard", sh->index);
	rte_tel_data_add_dict_int(l, "cpu", cpu < CPU_SETSIZE ? cpu : -1);
	rte_tel_data_add_dict_u64(l, "vis", sh->nb_vis);
	rte_tel_data_add_dict_u64(l, "iterations", STAT(st, iterations));
	rte_tel_data_add_dict_u64(l, "busy_iterations", STAT(st, busy_iterations));
	rte_tel_data_add_dict_u64(l, "busy_cycles", busy);
	rte_tel_data_add_dict_u64(l, "cycles", cycles);
	rte_tel_data_add_dict_u64(l, "busy_percent", cycles != 0 ? busy * 100 / cycles : 0);
	rte_tel_data_add_dict_u64(l, "frames_rx", STAT(st, frames_rx));
	rte_tel_data_add_dict_u64(l, "frames_tx", STAT(st, frames_tx));
	rte_tel_data_add_dict_u64(l, "rx_bursts", STAT(st, rx_bursts));
	rte_tel_data_add_dict_u64(l, "rx_burst_frames", STAT(st, rx_burst_frames));
	return l;
}

static int
tel_lcores(const char *cmd, const char *params, struct rte_tel_data *r)
{
	const struct viad *d = tel_viad;
	uint64_t now = rte_get_timer_cycles();
	unsigned i;
	int rc = 0;

	(void)cmd;
	(void)params;
	if (!tel_enter())
		return -EAGAIN;
	rte_tel_data_start_dict(r);
	for (i = 0; i < d->nb_shards && rc == 0; i++) {
		struct rte_tel_data *l = lcore_dict(&d->shards[i], now);
		char name[32];

		snprintf(name, sizeof(name), "lcore%u", d->shards[i].lcore);
		rc = l == NULL ? -ENOMEM : rte_tel_data_add_dict_container(r, name, l, 0);
	}
	tel_leave();
	return rc;
}

static int
tel_hosts(const char *cmd, const char *params, struct rte_tel_data *r)
{
	struct rte_tel_data *names = rte_tel_data_alloc(), *macs = rte_tel_data_alloc();
	const char *name;
	uint8_t mac[6];
	char buf[18];
	size_t i;

	(void)cmd;
	(void)params;
	/* the table is freed when viad stops */
	if (names == NULL || macs == NULL || !tel_enter()) {
		rte_tel_data_free(names);
		rte_tel_data_free(macs);
		return names == NULL || macs == NULL ? -ENOMEM : -EAGAIN;
	}
	/* host names may hold characters a telemetry name may not: two
	 * lists, line by line, rather than a dict */
	rte_tel_data_start_array(names, RTE_TEL_STRING_VAL);
	rte_tel_data_start_array(macs, RTE_TEL_STRING_VAL);
	for (i = 0; i < RTE_TEL_MAX_ARRAY_ENTRIES &&
		    via_hosts_entry(tel_viad->hosts, i, &name, mac) == 0; i++) {
		mac_string(buf, sizeof(buf), mac);
		rte_tel_data_add_array_string(names, name);
		rte_tel_data_add_array_string(macs, buf);
	}
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_string(r, "file", tel_viad->conf.hosts_path);
	rte_tel_data_add_dict_container(r, "names", names, 0);
	rte_tel_data_add_dict_container(r, "macs", macs, 0);
	tel_leave();
	return 0;
}

/* {"active": N, "running": "via0 via1", "frames", "dropped", and per NIC
 * captured so far its running or last capture: {"via0": {...}}} */
static int
tel_capture(const char *cmd, const char *params, struct rte_tel_data *r)
{
	struct via_capture_status st[VIA_CONF_MAX_PORTS];
	char captures[RTE_TEL_MAX_STRING_LEN];
	uint64_t frames, dropped;
	unsigned i, n, active;

	(void)cmd;
	(void)params;
	active = capture_summary(captures, sizeof(captures), &frames, &dropped);
	n = via_capture_get_status(st, RTE_DIM(st));
	rte_tel_data_start_dict(r);
	rte_tel_data_add_dict_int(r, "active", (int)active);
	rte_tel_data_add_dict_string(r, "running", active ? captures : "");
	rte_tel_data_add_dict_u64(r, "frames", frames);
	rte_tel_data_add_dict_u64(r, "dropped", dropped);
	for (i = 0; i < n; i++) {
		struct rte_tel_data *c = rte_tel_data_alloc();

		if (c == NULL)
			return -ENOMEM;
		rte_tel_data_start_dict(c);
		rte_tel_data_add_dict_int(c, "active", st[i].active);
		rte_tel_data_add_dict_u64(c, "frames", st[i].frames);
		rte_tel_data_add_dict_u64(c, "dropped", st[i].dropped);
		rte_tel_data_add_dict_container(r, st[i].port, c, 0);
	}
	return 0;
}

/* ---- registration --------------------------------------------------------- */

static const struct {
	const char *cmd;
	telemetry_cb fn;
	const char *help;
} commands[] = {
	{ "/viad/info", tel_info, "viad: version, instance, uptime, object counts. No parameters" },
	{ "/viad/config", tel_config, "viad: configuration ([viad], [limits]). No parameters" },
	{ "/viad/ports", tel_ports, "viad: NICs: glue, MAC, MTU, link, packets. No parameters" },
	{ "/viad/sessions", tel_sessions, "viad: session ids. Parameters: [START]" },
	{ "/viad/session", tel_session, "viad: one session. Parameters: SESSION" },
	{ "/viad/vis", tel_vis, "viad: VI ids. Parameters: [SESSION (0: all)[,START]]" },
	{ "/viad/vi", tel_vi, "viad: one VI: state, peer, queues, counters. Parameters: VI" },
	{ "/viad/cqs", tel_cqs, "viad: CQ ids. Parameters: [SESSION (0: all)[,START]]" },
	{ "/viad/cq", tel_cq, "viad: one CQ. Parameters: CQ" },
	{ "/viad/conns", tel_conns, "viad: ids of VIs with a connection. Parameters: [START]" },
	{ "/viad/counters", tel_counters, "viad: counters, data path and transport. No parameters" },
	{ "/viad/lcores", tel_lcores, "viad: poll lcores: busy share, bursts. No parameters" },
	{ "/viad/hosts", tel_hosts, "viad: the hosts file's names and MACs. No parameters" },
	{ "/viad/capture", tel_capture, "viad: the packet capture running or last run. No parameters" },
	{ "/viad/relay", tel_relay, "viad: viad's own telemetry socket binds its queries. Internal" },
};

/* ---- viad's socket: the group's queries, relayed with who asks ------------- */

/* One message on @p fd within RELAY_WAIT_MS, NUL-terminated in @p buf. */
static ssize_t
recv_msg(int fd, char *buf, size_t len)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&pf, 1, RELAY_WAIT_MS) != 1)
		return -1;
	n = recv(fd, buf, len - 1, MSG_DONTWAIT);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Connect to EAL's socket and bind its thread. @return 0, -errno */
static int
relay_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char q[64];

	if (relay.eal_fd >= 0)
		close(relay.eal_fd);
	__atomic_store_n(&relay.eal_tid, 0, __ATOMIC_RELEASE);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dpdk_telemetry.v2",
		 rte_eal_get_runtime_dir());
	relay.eal_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (relay.eal_fd < 0 || connect(relay.eal_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -errno;
	relay.hello_len = recv_msg(relay.eal_fd, relay.hello, sizeof(relay.hello));
	snprintf(q, sizeof(q), "/viad/relay,%s", relay.secret);
	if (relay.hello_len <= 0 || send(relay.eal_fd, q, strlen(q), MSG_NOSIGNAL) < 0 ||
	    recv_msg(relay.eal_fd, relay.reply, RELAY_REPLY_MAX) <= 0 ||
	    __atomic_load_n(&relay.eal_tid, __ATOMIC_ACQUIRE) == 0)
		return -ECONNRESET;
	return 0;
}

/* What the group may ask: viad's commands and telemetry's own lists. */
static bool
relay_allows(const char *q)
{
	size_t n = strcspn(q, ",");

	if (strncmp(q, "/viad/relay", n) == 0 && n == strlen("/viad/relay"))
		return false;
	return strncmp(q, "/viad/", 6) == 0 || strcmp(q, "/") == 0 || strcmp(q, "/info") == 0 ||
	       strncmp(q, "/help,", 6) == 0;
}

/* One query of client @p c: asked of EAL as the client, answered. @return
 * false when the client is to be dropped */
static bool
relay_query(int c, uid_t uid)
{
	static const char denied[] = "{\"denied\":null}";
	char q[RELAY_CMD_MAX + 1];
	ssize_t n = recv(c, q, sizeof(q), MSG_DONTWAIT | MSG_TRUNC);
	const char *out = denied;
	size_t len = sizeof(denied) - 1;

	if (n <= 0 || n > RELAY_CMD_MAX)
		return false;
	q[n] = '\0';
	if (relay_allows(q)) {
		/* the reply, or an EAL connection gone: once more, afresh */
		__atomic_store_n(&relay.asker, uid, __ATOMIC_RELEASE);
		n = send(relay.eal_fd, q, (size_t)n, MSG_NOSIGNAL) < 0 ? -1
			: recv_msg(relay.eal_fd, relay.reply, RELAY_REPLY_MAX);
		if (n <= 0 && relay_connect() == 0 &&
		    send(relay.eal_fd, q, strlen(q), MSG_NOSIGNAL) >= 0)
			n = recv_msg(relay.eal_fd, relay.reply, RELAY_REPLY_MAX);
		if (n <= 0) {
			VLOG_WARN("telemetry: relay to %s/dpdk_telemetry.v2 failed",
				  rte_eal_get_runtime_dir());
			return false;
		}
		out = relay.reply;
		len = (size_t)n;
	}
	/* a client that does not read its replies is dropped, never waited for */
	return send(c, out, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len;
}

static void
relay_accept(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int c = accept4(relay.lfd, NULL, NULL, SOCK_CLOEXEC), i;

	if (c < 0)
		return;
	for (i = 0; i < RELAY_CLIENTS && relay.clients[i].fd >= 0; i++)
		;
	if (i == RELAY_CLIENTS || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    send(c, relay.hello, (size_t)relay.hello_len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		close(c);
		return;
	}
	relay.clients[i].fd = c;
	relay.clients[i].uid = cred.uid;
}

static void *
relay_thread(void *arg)
{
	struct pollfd pf[2 + RELAY_CLIENTS];
	int i;

	(void)arg;
	for (;;) {
		pf[0] = (struct pollfd){ .fd = relay.stop_fd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = relay.lfd, .events = POLLIN };
		for (i = 0; i < RELAY_CLIENTS; i++)
			pf[2 + i] = (struct pollfd){ .fd = relay.clients[i].fd, .events = POLLIN };
		if (poll(pf, RTE_DIM(pf), -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents != 0)
			break;
		for (i = 0; i < RELAY_CLIENTS; i++) {
			if (pf[2 + i].revents != 0 &&
			    !relay_query(relay.clients[i].fd, relay.clients[i].uid)) {
				close(relay.clients[i].fd);
				relay.clients[i].fd = -1;
			}
		}
		if (pf[1].revents & POLLIN)
			relay_accept();
	}
	return NULL;
}

/* A group name or number. @return 0, -ENOENT */
static int
group_id(const char *name, gid_t *gid)
{
	struct group gr, *res = NULL;
	char buf[4096], *end;
	unsigned long v;

	if (name[0] == '\0')
		return -ENOENT;
	v = strtoul(name, &end, 10);
	if (*end == '\0') {
		*gid = (gid_t)v;
		return 0;
	}
	if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) != 0 || res == NULL)
		return -ENOENT;
	*gid = gr.gr_gid;
	return 0;
}

/*
 * Who reaches what. EAL's socket stays root's (0600). Under a runtime
 * directory systemd (or the admin) gave viad ($RUNTIME_DIRECTORY), that
 * directory and EAL's in it are viad's own: root and viad.socket_group
 * pass (0750), and the group may connect to viad's telemetry socket (0660)
 * but not to the capture socket (0600). Elsewhere (/var/run/dpdk, shared
 * by every DPDK program) only root does.
 */
static void
open_to_group(const struct via_conf *c)
{
	const char *base = getenv("RUNTIME_DIRECTORY");
	const char *run = rte_eal_get_runtime_dir();
	char parent[PATH_MAX], eal[PATH_MAX];
	size_t n = base != NULL ? strlen(base) : 0;
	gid_t gid;

	snprintf(eal, sizeof(eal), "%s/dpdk_telemetry.v2", run);
	if (chmod(eal, 0600) != 0)
		VLOG_WARN("telemetry: %s: %s", eal, strerror(errno));
	if (n == 0 || strncmp(run, base, n) != 0 || run[n] != '/' ||
	    group_id(c->socket_group, &gid) != 0)
		return;
	snprintf(parent, sizeof(parent), "%s/dpdk", base);
	if (chown(base, 0, gid) != 0 || chmod(base, 0750) != 0 ||
	    chown(parent, 0, gid) != 0 || chmod(parent, 0750) != 0 ||
	    chown(run, 0, gid) != 0 || chmod(run, 0750) != 0 ||
	    chown(relay.path, 0, gid) != 0 || chmod(relay.path, 0660) != 0) {
		VLOG_WARN("telemetry: %s: cannot open it to group %u: %s", relay.path,
			  (unsigned)gid, strerror(errno));
		return;
	}
	VLOG_INFO("telemetry: %s open to group %u", relay.path, (unsigned)gid);
}

/* viad's socket and the relay thread. @return 0, -errno */
static int
relay_init(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t r[2] = { rte_rand(), rte_rand() };
	int i, rc;

	for (i = 0; i < RELAY_CLIENTS; i++)
		relay.clients[i].fd = -1;
	snprintf(relay.secret, sizeof(relay.secret), "%016" PRIx64 "%015" PRIx64, r[0],
		 r[1] >> 4);
	if ((size_t)snprintf(relay.path, sizeof(relay.path), "%s/%s", rte_eal_get_runtime_dir(),
			     VIA_TELEMETRY_SOCKET) >= sizeof(relay.path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, relay.path);
	relay.reply = malloc(RELAY_REPLY_MAX);
	relay.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	relay.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (relay.reply == NULL || relay.lfd < 0 || relay.stop_fd < 0)
		return relay.reply == NULL ? -ENOMEM : -errno;
	rc = via_socket_claim(relay.path);
	if (rc != 0)
		return rc;
	if (bind(relay.lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    chmod(relay.path, 0600) != 0 || listen(relay.lfd, 8) != 0)
		return -errno;
	rc = relay_connect();
	if (rc != 0)
		return rc;
	rc = rte_ctrl_thread_create(&relay.thread, "viad-telemetry", NULL, relay_thread, NULL);
	if (rc != 0)
		return -rc;
	relay.running = true;
	return 0;
}

void
via_telemetry_fini(void)
{
	int i;

	if (relay.running) {
		eventfd_write(relay.stop_fd, 1);
		pthread_join(relay.thread, NULL);
		relay.running = false;
	}
	for (i = 0; i < RELAY_CLIENTS; i++) {
		if (relay.clients[i].fd >= 0)
			close(relay.clients[i].fd);
		relay.clients[i].fd = -1;
	}
	if (relay.lfd >= 0) {
		close(relay.lfd);
		unlink(relay.path);
		relay.lfd = -1;
	}
	if (relay.eal_fd >= 0)
		close(relay.eal_fd);
	if (relay.stop_fd >= 0)
		close(relay.stop_fd);
	relay.eal_fd = relay.stop_fd = -1;
	free(relay.reply);
	relay.reply = NULL;
}

int
via_telemetry_init(struct viad *d)
{
	unsigned i;
	int rc;

	tel_viad = d;
	tel_started_ms = via_now_ms();
	for (i = 0; i < RTE_DIM(commands); i++) {
		rc = rte_telemetry_register_cmd(commands[i].cmd, commands[i].fn, commands[i].help);
		if (rc != 0)
			return rc < 0 ? rc : -rc;
	}
	rc = relay_init();
	if (rc != 0) {
		via_telemetry_fini();
		return rc;
	}
	open_to_group(&d->conf);
	VLOG_INFO("telemetry: /viad/... on %s (viactl -i %s) and, for root, on "
		  "%s/dpdk_telemetry.v2 (dpdk-telemetry.py -f %s)", relay.path, d->conf.instance,
		  rte_eal_get_runtime_dir(), d->conf.instance);
	return 0;
}
