/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad: the VIA-DPDK daemon. A DPDK primary process whose main lcore is the
 * control thread (ctl.c) and whose worker lcores poll the ports (dp_poll.c).
 *
 *   viad [-c FILE] [-s SOCKET] [--set SECTION.KEY=VALUE]... [-- EAL ARGS]
 *
 * Without EAL arguments viad picks its own: a control lcore and
 * viad.poll_lcores poll lcores on the CPUs it may run on, in order (round
 * again when there are more lcores than CPUs), --in-memory
 * so that a killed viad leaves no hugepage files behind, no PCI scan unless
 * a port needs one, and no hugepages at all when none are reserved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <limits.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <vipl_dpdk.h>

#include "capture.h"
#include "hosts.h"
#include "dp/dp.h"
#include "runtime.h"
#include "telemetry.h"
#include "upgrade.h"
#include "via_glue.h"
#include "via_version.h"

#define DEFAULT_CONFIG VIAD_DEFAULT_CONFIG /* SYSCONFDIR/viad/viad.conf (meson.build) */
#define EAL_ARGS_MAX 64
/* EAL heap viad needs with --no-huge: the mbuf pool plus ethdev rings */
#define NO_HUGE_MEM_MB "256"
/* below this many free 2 MiB pages viad does not ask EAL for hugepages */
#define MIN_FREE_HUGEPAGES 32
#define SHUTDOWN_DRAIN_MS 50

/* VIP_NIC_ATTRIBUTES::ProviderVersion is the project's major.minor */
_Static_assert(VIPL_DPDK_PROVIDER_VERSION ==
	       ((VIA_DPDK_VERSION_MAJOR << 16) | VIA_DPDK_VERSION_MINOR),
	       "vipl_dpdk.h's VIPL_DPDK_PROVIDER_VERSION is meson.build's version");

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: viad [options] [-- EAL options]\n"
		"  -c, --config FILE        configuration file (default " DEFAULT_CONFIG
		" if it exists)\n"
		"  -s, --socket PATH        control socket (viad.socket)\n"
		"      --set SEC.KEY=VALUE  override one configuration key, e.g.\n"
		"                           --set limits.max_vi=1024 --set port.via1.mtu=9000\n"
		"  -V, --version            print the version and exit\n"
		"  -h, --help               this text\n"
		"EAL options after -- replace viad's defaults (see docs/design.md).\n");
}

/* "port.via1.mtu=9000" -> section "port.via1", key "mtu", value "9000";
 * every mistake is said, in one line */
static int
apply_set(struct via_conf *c, char *arg)
{
	char *eq = strchr(arg, '=');
	char *dot;
	char err[256];
	int rc;

	if (eq == NULL || eq == arg) {
		VLOG_ERR("--set %s: expected SECTION.KEY=VALUE, e.g. "
			"--set viad.instance=NAME (%s)", arg,
			eq == NULL ? "no '=' and value" : "no key before '='");
		return -EINVAL;
	}
	*eq = '\0';
	dot = strrchr(arg, '.');
	if (dot == NULL || dot == arg || dot[1] == '\0') {
		VLOG_ERR("--set %s=%s: expected SECTION.KEY=VALUE, e.g. "
			"--set limits.max_vi=1024 (%s)", arg, eq + 1,
			dot == NULL ? "no section: viad, limits, port.NAME, ..." :
			dot == arg ? "no section before '.'" : "no key after '.'");
		return -EINVAL;
	}
	*dot = '\0';
	rc = via_conf_set(c, arg, dot + 1, eq + 1, err, sizeof(err));
	if (rc != 0)
		VLOG_ERR("--set %s.%s=%s: %s", arg, dot + 1, eq + 1, err);
	return rc;
}

static int
parse_args(int argc, char **argv, struct via_conf *c, int *eal_index)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "set", required_argument, NULL, 'S' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		/* the upgrade's own (upgrade.c read them before) */
		{ "adopt", required_argument, NULL, 'A' },
		{ "adopt-refused", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL;
	char *sets[64];
	unsigned nb_sets = 0, i;
	char err[512];
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:s:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 's':
			if (nb_sets == 64)
				return -E2BIG;
			if (asprintf(&sets[nb_sets], "viad.socket=%s", optarg) < 0)
				return -ENOMEM;
			nb_sets++;
			break;
		case 'S':
			if (nb_sets == 64)
				return -E2BIG;
			sets[nb_sets] = strdup(optarg);
			if (sets[nb_sets] == NULL)
				return -ENOMEM;
			nb_sets++;
			break;
		case 'V':
			printf("viad (VIA-DPDK) %s\n", VIA_DPDK_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case 'A':
		case 'R':
			break;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	*eal_index = optind;
	via_conf_defaults(c);
	if (config == NULL && access(DEFAULT_CONFIG, R_OK) == 0)
		config = DEFAULT_CONFIG;
	if (config != NULL) {
		rc = via_conf_load(c, config, err, sizeof(err));
		if (rc != 0) {
			VLOG_ERR("%s", err);
			return rc;
		}
	}
	rc = 0;
	for (i = 0; i < nb_sets; i++) {
		if (rc == 0)
			rc = apply_set(c, sets[i]);
		free(sets[i]);
	}
	if (rc == 0) {
		rc = via_conf_check(c, err, sizeof(err));
		if (rc != 0)
			VLOG_ERR("%s", err);
	}
	return rc;
}

static unsigned
free_hugepages(void)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "re");
	unsigned n = 0;

	if (f != NULL) {
		if (fscanf(f, "%u", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

/* A PCI address (DDDD:BB:DD.F or BB:DD.F) rather than a vdev name. */
static bool
conf_needs_pci(const struct via_conf *c)
{
	unsigned i;

	for (i = 0; i < c->nb_ports; i++) {
		const char *dev = c->ports[i].devargs;
		size_t n = strcspn(dev, ",");

		if (strcmp(c->ports[i].glue, "ethdev") == 0 && memchr(dev, ':', n) != NULL &&
		    strncmp(dev, "net_", 4) != 0)
			return true;
	}
	return false;
}

/* Build EAL's argv: the user's after "--", or viad's defaults. */
static int
eal_args(const struct via_conf *c, char *prog, int argc, char **argv, char **out, char *buf,
	 size_t buflen)
{
	int n = 0, i;

	out[n++] = prog;
	if (argc > 0) {
		bool shconf = true;

		if (argc >= EAL_ARGS_MAX)
			return -E2BIG;
		for (i = 0; i < argc; i++) {
			out[n++] = argv[i];
			shconf &= strcmp(argv[i], "--in-memory") != 0 &&
				  strcmp(argv[i], "--no-shconf") != 0;
		}
		/* EAL's multi-process channel takes the runtime directory's
		 * lock and waits for it (rte_mp_channel_init): viad holds that
		 * lock already (via_runtime_lock), so EAL would wait for ever.
		 * viad serves no secondary process: no shared files. */
		if (shconf) {
			VLOG_INFO("EAL options: --no-shconf added (viad serves no DPDK "
				  "secondary process; --in-memory also implies it)");
			out[n++] = "--no-shconf";
		}
		out[n] = NULL;
		return n;
	}
	{
		cpu_set_t set;
		int cpu[CPU_SETSIZE], k = 0, len;
		uint32_t l;

		if (sched_getaffinity(0, sizeof(set), &set) != 0)
			return -errno;
		for (i = 0; i < CPU_SETSIZE; i++) {
			if (CPU_ISSET(i, &set))
				cpu[k++] = i;
		}
		if (k == 0)
			return -ENODEV;
		/* lcore L on the L-th CPU we may use, round the set again when
		 * there are more lcores than CPUs */
		len = snprintf(buf, buflen, "--lcores=0@%d", cpu[0]);
		for (l = 1; l <= c->poll_lcores && (size_t)len < buflen; l++)
			len += snprintf(buf + len, buflen - (size_t)len, ",%u@%d", l,
					cpu[l % (uint32_t)k]);
		if ((size_t)len >= buflen)
			return -E2BIG;
		out[n++] = buf;
		buf += len + 1;
		buflen -= (size_t)len + 1;
		snprintf(buf, buflen, "--file-prefix=%s", c->instance);
		out[n++] = buf;
	}
	if (!conf_needs_pci(c))
		out[n++] = "--no-pci";
	if (free_hugepages() >= MIN_FREE_HUGEPAGES) {
		out[n++] = "--in-memory";
	} else {
		/* --no-huge creates no files either; it excludes --in-memory */
		VLOG_WARN("fewer than %u free 2 MiB hugepages: running without "
			"hugepages (slower; see config/hugepages.md)", MIN_FREE_HUGEPAGES);
		out[n++] = "--no-huge";
		out[n++] = "--no-shconf";
		out[n++] = "-m";
		out[n++] = NO_HUGE_MEM_MB;
	}
	out[n] = NULL;
	return n;
}

/*
 * EAL leaves its (empty, with --in-memory) runtime directory behind:
 * RUNTIME_DIRECTORY/dpdk/INSTANCE (viad.service), /var/run/dpdk/INSTANCE
 * as root, XDG_RUNTIME_DIR/dpdk/INSTANCE otherwise. At exit, after DPDK's
 * own exit handler has removed the telemetry socket from it.
 */
static void
remove_runtime_dir(void)
{
	rmdir(rte_eal_get_runtime_dir());
}

/* Whether paths @p a and @p b name one directory. */
static bool
same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return a[0] != '\0' && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int
tables_init(struct viad *d)
{
	const struct via_conf *c = &d->conf;
	int rc = 0;

	rc |= via_idtab_init(&d->sessions, c->max_sessions);
	rc |= via_idtab_init(&d->ptags, c->max_ptags);
	rc |= via_idtab_init(&d->mrs, c->max_regions);
	rc |= via_idtab_init(&d->cqs, c->max_cq);
	rc |= via_idtab_init(&d->vis, c->max_vi);
	rc |= via_idtab_init(&d->pmems, c->max_sessions * 64);
	TAILQ_INIT(&d->session_list);
	TAILQ_INIT(&d->users);
	return rc != 0 ? -ENOMEM : 0;
}

static void
tables_fini(struct viad *d)
{
	via_idtab_fini(&d->sessions);
	via_idtab_fini(&d->ptags);
	via_idtab_fini(&d->mrs);
	via_idtab_fini(&d->cqs);
	via_idtab_fini(&d->vis);
	via_idtab_fini(&d->pmems);
}

/* Each shard's bits of the doorbell summary words: bit b of word j stands
 * for bell word j * 64 + b, which shard (j * 64 + b) % nb_shards owns. */
static void
bell_masks_init(struct viad *d)
{
	unsigned j, b;

	for (j = 0; j < VIA_BELL_SUMMARY_MAX; j++) {
		for (b = 0; b < 64; b++)
			d->shards[(j * 64 + b) % d->nb_shards].bell_masks[j] |= 1ull << b;
	}
}

/*
 * Poll lcores that may run on the same CPU take turns on it: each spins
 * while the other waits, so work waits a scheduler slice (and in adaptive
 * mode they may sleep past each other's wake-up: design.md section 14).
 */
static void
warn_shared_cpus(const struct viad *d)
{
	unsigned i, j;

	for (i = 0; i < d->nb_shards; i++) {
		rte_cpuset_t a = rte_lcore_cpuset(d->shards[i].lcore);

		for (j = i + 1; j < d->nb_shards; j++) {
			rte_cpuset_t b = rte_lcore_cpuset(d->shards[j].lcore), both;

			CPU_AND(&both, &a, &b);
			if (CPU_COUNT(&both) > 0)
				VLOG_WARN("poll lcores %u and %u share a CPU: they take turns on "
					  "it; give each its own (EAL --lcores)",
					  d->shards[i].lcore, d->shards[j].lcore);
		}
	}
}

/* One shard of the data path per worker lcore, in launch order. */
static void
shards_init(struct viad *d)
{
	unsigned lcore;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		struct via_shard *sh;

		if (d->nb_shards == VIA_MAX_SHARDS) {
			VLOG_WARN("lcore %u: more than %u poll lcores; it stays idle", lcore,
				  VIA_MAX_SHARDS);
			continue;
		}
		sh = &d->shards[d->nb_shards];
		sh->index = d->nb_shards++;
		sh->lcore = lcore;
		sh->wake_fd = -1;
		TAILQ_INIT(&sh->rel_vis);
		TAILQ_INIT(&sh->polled_vis);
	}
	bell_masks_init(d);
	VLOG_INFO("%u poll lcore(s): VIs are spread over them, a VI stays on its own",
		  d->nb_shards);
	warn_shared_cpus(d);
}

/*
 * An image to adopt (upgrade.c): the id tables keep its capacities, which
 * its ids' bits depend on, until a restart (logged where the configuration
 * says otherwise).
 */
static void
conf_from_image(struct via_conf *c, const struct via_image *img)
{
	const struct {
		const char *key;
		uint32_t *value;
		enum via_img_table_kind table;
	} keep[] = {
		{ "max_sessions", &c->max_sessions, VIA_IMG_T_SESSIONS },
		{ "max_ptags", &c->max_ptags, VIA_IMG_T_PTAGS },
		{ "max_regions", &c->max_regions, VIA_IMG_T_MRS },
		{ "max_cq", &c->max_cq, VIA_IMG_T_CQS },
		{ "max_vi", &c->max_vi, VIA_IMG_T_VIS },
	};
	unsigned i;

	for (i = 0; i < RTE_DIM(keep); i++) {
		uint32_t was = img->tables[keep[i].table]->capacity;

		if (*keep[i].value != was)
			VLOG_WARN("limits.%s stays %u until viad restarts (the upgrade keeps its "
				  "ids), not %u", keep[i].key, was, *keep[i].value);
		*keep[i].value = was;
	}
}

int
main(int argc, char **argv)
{
	static struct viad d = { .wake_fd = -1, .cm_fd = -1 };
	char *eal_argv[EAL_ARGS_MAX + 8];
	char eal_buf[512];
	char err[512];
	struct via_image img = { 0 };
	const char *refused;
	int eal_argc, first_eal, lfd, rc, adopt_fd;
	bool adopted = false;
	unsigned lcore;
	sigset_t sigs;

	/* before getopt reorders argv: the arguments an upgrade execs with */
	if (via_upgrade_init(argc, argv, &adopt_fd, &refused) != 0)
		fprintf(stderr, "viad: its own binary cannot be opened: no upgrade will be possible\n");
	if (parse_args(argc, argv, &d.conf, &first_eal) != 0)
		return 2;
	via_log_set_level(d.conf.log_level);
	if (!via_privileged(err, sizeof(err))) {
		VLOG_ERR("%s", err);
		return 2;
	}
	if (adopt_fd >= 0) {
		via_upgrade_open(adopt_fd, &img);
		conf_from_image(&d.conf, &img);
	}
	eal_argc = eal_args(&d.conf, argv[0], argc - first_eal, argv + first_eal, eal_argv,
			    eal_buf, sizeof(eal_buf));
	if (eal_argc < 0) {
		VLOG_ERR("EAL arguments: %s", strerror(-eal_argc));
		return 2;
	}
	/* before EAL, which would take a running instance's sockets or, with
	 * no runtime directory, put them in "/" */
	rc = via_runtime_lock(eal_argv, eal_argc, err, sizeof(err));
	if (rc != 0) {
		VLOG_ERR("%s", err);
		/* adopting: the old viad's lock went with its exec, and another
		 * took the instance meanwhile */
		if (adopt_fd >= 0)
			via_upgrade_failed(&img, err);
		return rc == -EADDRINUSE ? 1 : 2;
	}
	/* blocked before EAL starts its threads, so every thread inherits the
	 * mask and the signals reach only the control thread's signalfd */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	/* before EAL's: exit handlers run in reverse order */
	atexit(remove_runtime_dir);
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		VLOG_ERR("EAL init failed: %s", rte_strerror(rte_errno));
		if (adopt_fd >= 0)
			via_upgrade_failed(&img, "EAL did not start");
		return 1;
	}
	rc = 1;
	if (!same_dir(rte_eal_get_runtime_dir(), via_runtime_dir())) {
		VLOG_ERR("EAL's runtime directory '%s' is not the one viad locked (%s): "
			 "EAL arguments after -- name a runtime directory viad did not lock", rte_eal_get_runtime_dir(),
			 via_runtime_dir());
		goto out_eal;
	}
	if (rte_lcore_count() < 2) {
		VLOG_ERR("viad needs a poll lcore besides the main lcore (e.g. -- -l 0,1)");
		goto out_eal;
	}
	if (d.conf.hosts_path[0] != '\0' &&
	    via_hosts_load(&d.hosts, d.conf.hosts_path, err, sizeof(err)) != 0) {
		VLOG_ERR("hosts file: %s", err);
		goto out_eal;
	}
	if (tables_init(&d) != 0) {
		VLOG_ERR("out of memory for object tables");
		goto out_tables;
	}
	shards_init(&d);
	if (via_nics_open(&d) != 0)
		goto out_tables;
	/* adopted: the clients hold copies of the old viad's (upgrade.c) */
	if (adopt_fd < 0)
		d.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	d.cm_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if ((adopt_fd < 0 && d.wake_fd < 0) || d.cm_fd < 0 || via_dp_init(&d) != 0 ||
	    via_cm_init(&d) != 0) {
		VLOG_ERR("out of memory for the data path");
		goto out_nics;
	}
	if (via_ctl_init(&d) != 0)
		goto out_nics;
	if (adopt_fd >= 0) {
		via_upgrade_adopt(&d, &img, &lfd);
		adopted = true;
	} else {
		rc = via_ctl_listen(&d, &lfd);
		if (rc != 0) {
			VLOG_ERR("control socket %s: %s", d.conf.socket_path,
				 rc == -EADDRINUSE ? "another viad is serving it" :
				 rc == -ENOTSOCK ? "a file that is not a socket is there: viad "
						   "removes only a stale socket (is -s / viad.socket "
						   "right?)" :
				 strerror(-rc));
			rc = rc == -ENOTSOCK ? 2 : 1;
			goto out_nics;
		}
	}
	/* the operators' tools: viad serves its clients without them */
	rc = via_telemetry_init(&d);
	if (rc != 0)
		VLOG_WARN("telemetry commands: %s", strerror(-rc));
	rc = via_capture_init(&d);
	if (rc != 0)
		VLOG_WARN("packet capture: %s", strerror(-rc));
	/* everything that needed more is open: the ports, the sockets */
	if (via_drop_privileges(&d.conf) != 0) {
		rc = 1;
		close(lfd);
		unlink(d.conf.socket_path);
		goto out_nics;
	}
	if (adopt_fd >= 0) {
		via_upgrade_resumed(&d, &img);
		via_image_free(&img);
	}
	for (lcore = 0; lcore < d.nb_shards; lcore++)
		rte_eal_remote_launch(via_poll_main, &d, d.shards[lcore].lcore);
	via_notify("READY=1");
	rc = via_ctl_run(&d, lfd) == 0 ? 0 : 1;
	via_notify("STOPPING=1");
	rte_eal_mp_wait_lcore();
	/* the DISC frames of the sessions just ended sit in the ports' rings:
	 * give peers (memif, say) time to take them before the ports close */
	rte_delay_ms(SHUTDOWN_DRAIN_MS);
	VLOG_INFO("stopped: %llu sessions served", (unsigned long long)d.counters.sessions_closed);
out_nics:
	via_capture_fini();
	via_telemetry_fini();
	if (d.wake_fd >= 0)
		close(d.wake_fd);
	if (d.cm_fd >= 0)
		close(d.cm_fd);
	via_cm_fini(&d);
	via_dp_fini(&d);
	via_nics_close(&d);
	/* after the ports: frames they held point into the trackers (dp_zc.c),
	 * whose last unpins unmap allocations their clients freed already */
	for (unsigned int i = 0; i < d.nb_shards; i++)
		via_zc_fini(&d.shards[i]);
	via_pmem_reap();
out_tables:
	tables_fini(&d);
	via_hosts_free(d.hosts);
out_eal:
	rte_eal_cleanup();
	/* a new viad that could not start gives the image back (upgrade.c) */
	if (rc != 0 && adopt_fd >= 0 && !adopted)
		via_upgrade_failed(&img, "the new viad could not start (its log says why)");
	return rc;
}
