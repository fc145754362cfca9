/*
 * Unit test for daemon/conf.c and daemon/hosts.c.
 *
 * Usage: test_conf [CONFIG_DIR]
 *
 * CONFIG_DIR holds the shipped viad.conf and hosts.example, which must load
 * cleanly and, for viad.conf, match the built-in defaults.  It defaults to
 * "config" (run from the source root); when that directory is absent and no
 * argument was given, those two checks are skipped.
 *
 * Exit status 0 when every check passes; each failure is printed as
 * file:line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "hosts.h"
#include "test_common.h"

static char tmpdir[] = "/tmp/test_conf.XXXXXX";
static unsigned int nb_files;

/* Write @text to a fresh file in the temporary directory. */
static const char *
write_file(const char *text)
{
	static char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/f%u", tmpdir, nb_files++);
	f = fopen(path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
	return path;
}

static void
cleanup(void)
{
	char path[4096];
	unsigned int i;

	for (i = 0; i < nb_files; i++) {
		snprintf(path, sizeof(path), "%s/f%u", tmpdir, i);
		unlink(path);
	}
	rmdir(tmpdir);
}

/* Field-by-field, because struct assignment need not copy padding. */
static int
conf_equal(const struct via_conf *a, const struct via_conf *b)
{
	unsigned int i;

	if (strcmp(a->instance, b->instance) ||
	    strcmp(a->socket_path, b->socket_path) ||
	    strcmp(a->socket_group, b->socket_group) ||
	    strcmp(a->allowed_uids, b->allowed_uids) ||
	    strcmp(a->allowed_gids, b->allowed_gids) ||
	    strcmp(a->hosts_path, b->hosts_path) ||
	    strcmp(a->glue_dir, b->glue_dir) ||
	    strcmp(a->xdp_prog, b->xdp_prog) ||
	    strcmp(a->log_level, b->log_level) ||
	    a->poll_mode != b->poll_mode ||
	    a->idle_spin_us != b->idle_spin_us ||
	    a->idle_sleep_us != b->idle_sleep_us ||
	    a->adaptive_timeout_us != b->adaptive_timeout_us ||
	    a->rel_rto_min_us != b->rel_rto_min_us ||
	    a->rel_rto_max_us != b->rel_rto_max_us ||
	    a->rel_max_retries != b->rel_max_retries ||
	    a->rel_keepalive_ms != b->rel_keepalive_ms ||
	    a->cm_nomatch_grace_ms != b->cm_nomatch_grace_ms ||
	    a->max_sessions != b->max_sessions ||
	    a->max_vi != b->max_vi ||
	    a->max_cq != b->max_cq ||
	    a->max_cq_entries != b->max_cq_entries ||
	    a->max_desc_per_queue != b->max_desc_per_queue ||
	    a->max_segments_per_desc != b->max_segments_per_desc ||
	    a->max_transfer_size != b->max_transfer_size ||
	    a->max_ptags != b->max_ptags ||
	    a->max_regions != b->max_regions ||
	    a->max_register_bytes != b->max_register_bytes ||
	    a->session_shm_bytes != b->session_shm_bytes ||
	    a->max_alloc_bytes != b->max_alloc_bytes ||
	    a->max_in_place_bytes != b->max_in_place_bytes ||
	    a->max_discriminator_len != b->max_discriminator_len ||
	    a->nb_ports != b->nb_ports)
		return 0;
	for (i = 0; i < a->nb_ports; i++) {
		const struct via_port_conf *p = &a->ports[i], *q = &b->ports[i];

		if (strcmp(p->name, q->name) || strcmp(p->glue, q->glue) ||
		    strcmp(p->devargs, q->devargs) || strcmp(p->mac, q->mac) ||
		    p->mtu != q->mtu || p->rx_queues != q->rx_queues ||
		    p->tx_queues != q->tx_queues || p->rx_desc != q->rx_desc ||
		    p->tx_desc != q->tx_desc || strcmp(p->inner, q->inner) ||
		    p->rx_drop != q->rx_drop || p->rx_dup != q->rx_dup ||
		    p->rx_reorder != q->rx_reorder ||
		    p->rx_corrupt != q->rx_corrupt ||
		    p->rx_delay != q->rx_delay || p->tx_drop != q->tx_drop ||
		    p->tx_dup != q->tx_dup || p->tx_reorder != q->tx_reorder ||
		    p->tx_corrupt != q->tx_corrupt ||
		    p->tx_delay != q->tx_delay || p->delay_us != q->delay_us ||
		    p->corrupt_bits != q->corrupt_bits ||
		    p->corrupt_where != q->corrupt_where || p->seed != q->seed ||
		    p->xdp_filter != q->xdp_filter || strcmp(p->ip_interface, q->ip_interface))
			return 0;
	}
	return 1;
}

static void
test_defaults(void)
{
	struct via_conf c;

	via_conf_defaults(&c);
	CHECK_STR(c.instance, "viad");
	CHECK_STR(c.socket_path, "/run/viad/viad.sock");
	CHECK_STR(c.socket_group, "vipl");
	CHECK_STR(c.allowed_uids, "");
	CHECK_STR(c.hosts_path, "");
	/* <prefix>/<libdir>/viad/glue: the prefix is the build's */
	CHECK(c.glue_dir[0] == '/' && strlen(c.glue_dir) > strlen("/viad/glue") &&
	      strcmp(c.glue_dir + strlen(c.glue_dir) - strlen("/viad/glue"), "/viad/glue") == 0);
	CHECK_STR(c.log_level, "info");
	CHECK_EQ(c.poll_mode, VIA_POLL_BACKOFF);
	CHECK_EQ(c.idle_spin_us, 200);
	CHECK_EQ(c.idle_sleep_us, 100);
	CHECK_EQ(c.max_sessions, 256);
	CHECK_EQ(c.max_vi, 16384);
	CHECK_EQ(c.max_cq, 4096);
	CHECK_EQ(c.max_cq_entries, 65536);
	CHECK_EQ(c.max_desc_per_queue, 1024);
	CHECK_EQ(c.max_segments_per_desc, 252);
	CHECK_EQ(c.max_transfer_size, 65536);
	CHECK_EQ(c.max_ptags, 65536);
	CHECK_EQ(c.max_regions, 262144);
	CHECK(c.max_register_bytes == 64ULL << 30);
	CHECK(c.session_shm_bytes == 32ULL << 20);
	CHECK(c.max_alloc_bytes == 1ULL << 30);
	CHECK_EQ(c.max_discriminator_len, 64);
	/* the limits per user: the global ones / 4, root included */
	CHECK_EQ(c.user_share, 4);
	CHECK_EQ(c.user_max_vi, 0);
	CHECK(c.user_max_alloc_bytes == 0);
	CHECK_EQ(c.root_exempt, 0);
	CHECK_EQ(c.nb_ports, 0);
	CHECK_EQ(via_conf_check(&c, NULL, 0), 0);
}

static void
test_full_file(void)
{
	static const char text[] =
		"# full configuration\n"
		"; semicolon comment\n"
		"\n"
		"[viad]\n"
		"instance = viad-test_2\n"
		"  socket=\"/tmp/viad test.sock\"  \n"
		"hosts = /etc/viad/hosts\n"
		"glue_dir = /opt/via glue\n"
		"log_level = debug\r\n"
		"poll_mode = busy\n"
		"idle_spin_us = 0\n"
		"idle_sleep_us = 1000000\n"
		"\t[ limits ]\t\n"
		"max_sessions = 65536\n"
		"max_vi = 1\n"
		"max_cq = 77\n"
		"max_cq_entries = 1024\n"
		"max_desc_per_queue = 65536\n"
		"max_segments_per_desc = 1024\n"
		"max_transfer_size = 16M\n"
		"max_ptags = 100\n"
		"max_regions = 1048576\n"
		"max_register_bytes = 2G\n"
		"session_shm_bytes = 2048k\n"
		"max_alloc_bytes = 4096\n"
		"max_discriminator_len = 256\n"
		"user_share = 16\n"
		"user_max_sessions = 3\n"
		"user_max_alloc_bytes = 6M\n"
		"user_max_requests = 1\n"
		"root_exempt = yes\n"
		"[port]\n"
		"mtu = 9000\n"
		"mac = 02:00:00:00:00:0A\n"
		"[port  via7]\n"
		"glue = ethdev\n"
		"devargs = net_memif0,role=server,socket=/run/viad/memif.sock\n"
		"mtu = 0\n"
		"rx_queues = 4\n"
		"tx_queues = 2\n"
		"rx_desc = 512\n"
		"tx_desc = 32768\n";
	struct via_conf c;
	char err[256] = "";

	via_conf_defaults(&c);
	CHECK_EQ(via_conf_load(&c, write_file(text), err, sizeof(err)), 0);
	if (err[0] != '\0')
		fprintf(stderr, "  (%s)\n", err);
	CHECK_STR(c.instance, "viad-test_2");
	CHECK_STR(c.socket_path, "/tmp/viad test.sock");
	CHECK_STR(c.hosts_path, "/etc/viad/hosts");
	CHECK_STR(c.glue_dir, "/opt/via glue");
	CHECK_STR(c.log_level, "debug");
	CHECK_EQ(c.poll_mode, VIA_POLL_BUSY);
	CHECK_EQ(c.idle_spin_us, 0);
	CHECK_EQ(c.idle_sleep_us, 1000000);
	CHECK_EQ(c.max_sessions, 65536);
	CHECK_EQ(c.max_vi, 1);
	CHECK_EQ(c.user_share, 16);
	CHECK_EQ(c.user_max_sessions, 3);
	CHECK(c.user_max_alloc_bytes == 6ULL << 20);
	CHECK_EQ(c.user_max_requests, 1);
	CHECK_EQ(c.root_exempt, 1);
	CHECK_EQ(c.max_cq, 77);
	CHECK_EQ(c.max_cq_entries, 1024);
	CHECK_EQ(c.max_desc_per_queue, 65536);
	CHECK_EQ(c.max_segments_per_desc, 1024);
	CHECK_EQ(c.max_transfer_size, 16 << 20);
	CHECK_EQ(c.max_ptags, 100);
	CHECK_EQ(c.max_regions, 1 << 20);
	CHECK(c.max_register_bytes == 2ULL << 30);
	CHECK(c.session_shm_bytes == 2ULL << 20);
	CHECK(c.max_alloc_bytes == 4096);
	CHECK_EQ(c.max_discriminator_len, 256);

	CHECK_EQ(c.nb_ports, 2);
	CHECK_STR(c.ports[0].name, "via0");
	CHECK_STR(c.ports[0].glue, "loopback");
	CHECK_STR(c.ports[0].devargs, "");
	CHECK_EQ(c.ports[0].mtu, 9000);
	CHECK_EQ(c.ports[0].rx_queues, 1);
	CHECK_EQ(c.ports[0].tx_queues, 1);
	CHECK_EQ(c.ports[0].rx_desc, 1024);
	CHECK_EQ(c.ports[0].tx_desc, 1024);
	CHECK_STR(c.ports[0].mac, "02:00:00:00:00:0a");

	CHECK_STR(c.ports[1].name, "via7");
	CHECK_STR(c.ports[1].glue, "ethdev");
	CHECK_STR(c.ports[1].devargs,
		  "net_memif0,role=server,socket=/run/viad/memif.sock");
	CHECK_EQ(c.ports[1].mtu, 0);
	CHECK_EQ(c.ports[1].rx_queues, 4);
	CHECK_EQ(c.ports[1].tx_queues, 2);
	CHECK_EQ(c.ports[1].rx_desc, 512);
	CHECK_EQ(c.ports[1].tx_desc, 32768);
	CHECK_STR(c.ports[1].mac, "");
	CHECK_EQ(via_conf_check(&c, NULL, 0), 0);

	/* A second file applies on top and appends its ports. */
	CHECK_EQ(via_conf_load(&c, write_file("[viad]\nlog_level = error\n"
					       "[port]\n"),
				err, sizeof(err)), 0);
	CHECK_STR(c.log_level, "error");
	CHECK_STR(c.instance, "viad-test_2");
	CHECK_EQ(c.nb_ports, 3);
	CHECK_STR(c.ports[2].name, "via2");

	/* Empty file: nothing changes. */
	via_conf_defaults(&c);
	CHECK_EQ(via_conf_load(&c, write_file(""), err, sizeof(err)), 0);
	CHECK_EQ(c.nb_ports, 0);
}

/*
 * Load @text on top of defaults and expect -EINVAL, a message starting with
 * "<file>:<line>: " and containing @needle, and an unchanged configuration.
 */
static void
expect_error_at(int caller_line, const char *text, unsigned int line,
		const char *needle)
{
	struct via_conf c, before;
	char err[512] = "", prefix[4200];
	const char *path = write_file(text);
	int rc;

	via_conf_defaults(&c);
	memcpy(&before, &c, sizeof(c));
	rc = via_conf_load(&c, path, err, sizeof(err));
	snprintf(prefix, sizeof(prefix), "%s:%u: ", path, line);
	if (rc != -EINVAL || strncmp(err, prefix, strlen(prefix)) != 0 ||
	    strstr(err, needle) == NULL ||
	    memcmp(&before, &c, sizeof(c)) != 0) {
		fprintf(stderr,
			"%s:%d: load returned %d, message \"%s\"; expected -EINVAL, \"%s...%s...\", unchanged conf\n",
			__FILE__, caller_line, rc, err, prefix, needle);
		test_failures++;
	}
}

#define expect_error(text, line, needle) \
	expect_error_at(__LINE__, text, line, needle)

static void
test_errors(void)
{
	char text[1024];
	size_t used = 0;
	unsigned int i;

	/* Structure. */
	expect_error("[viad]\nfoo = 1\n", 2, "unknown key 'foo'");
	expect_error("[limits]\ninstance = x\n", 2, "unknown key 'instance'");
	expect_error("\n[bogus]\n", 2, "unknown section [bogus]");
	expect_error("[viad x]\n", 1, "takes no name");
	expect_error("[viad\n", 1, "lacks ']'");
	expect_error("[viad]\njust words\n", 2, "key = value");
	expect_error("[viad]\n = 3\n", 2, "missing key");
	expect_error("instance = x\n", 1, "outside of any section");
	expect_error("[viad]\nsocket = \"/tmp/x\n", 2, "unterminated");

	/* Numbers. */
	expect_error("[limits]\nmax_vi = 12x\n", 2, "not a decimal number");
	expect_error("[limits]\nuser_share = 0\n", 2, "out of range [1, 65536]");
	expect_error("[limits]\nuser_max_register_bytes = 1K\n", 2, "out of range");
	expect_error("[limits]\nroot_exempt = maybe\n", 2, "root_exempt");
	expect_error("[limits]\nmax_vi = -1\n", 2, "not a decimal number");
	expect_error("[limits]\nmax_vi = \n", 2, "not a decimal number");
	expect_error("[limits]\nmax_vi = 1K\n", 2, "not a decimal number");
	expect_error("[limits]\nmax_vi = 0x10\n", 2, "not a decimal number");
	expect_error("[limits]\nmax_sessions = 0\n", 2, "out of range [1, 65536]");
	expect_error("[limits]\nmax_sessions = 65537\n", 2, "out of range");
	expect_error("[limits]\nmax_vi = 99999999999999999999999\n", 2,
		     "out of range");
	expect_error("[limits]\nmax_transfer_size = 32767\n", 2,
		     "out of range [32768, 16777216]");
	expect_error("[limits]\nmax_transfer_size = 17M\n", 2, "out of range");
	expect_error("[limits]\nmax_segments_per_desc = 251\n", 2,
		     "out of range [252, 1024]");
	expect_error("[limits]\nmax_segments_per_desc = 1025\n", 2,
		     "out of range");
	expect_error("[limits]\nmax_cq_entries = 1023\n", 2, "out of range");
	expect_error("[limits]\nmax_discriminator_len = 15\n", 2,
		     "out of range");
	expect_error("[limits]\nsession_shm_bytes = 1M\n", 2, "out of range");
	expect_error("[limits]\nmax_register_bytes = 64T\n", 2, "not a size");
	expect_error("[limits]\nmax_register_bytes = 64GB\n", 2, "not a size");
	expect_error("[limits]\nmax_register_bytes = 99999999999999G\n", 2,
		     "out of range");
	expect_error("[viad]\nidle_sleep_us = 0\n", 2, "out of range");
	expect_error("[viad]\nrel_max_retries = 0\n", 2, "out of range");
	expect_error("[viad]\nrel_rto_min_us = 5\n", 2, "out of range");
	expect_error("[viad]\ncm_nomatch_grace_ms = 60001\n", 2, "out of range");
	expect_error("[port]\nmtu = 67\n", 2, "out of range [0 or 68, 65535]");
	expect_error("[port]\nrx_queues = 0\n", 2, "out of range");
	expect_error("[port]\ntx_desc = 65536\n", 2, "out of range");

	/* Strings and choices. */
	expect_error("[viad]\ninstance = a/b\n", 2, "only letters");
	expect_error("[viad]\ninstance =\n", 2, "must not be empty");
	expect_error("[viad]\nsocket = \"\"\n", 2, "must not be empty");
	expect_error("[viad]\nsocket = /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		     "aaaaaaaaaaaa\n", 2, "too long (at most 107");
	expect_error("[viad]\nlog_level = verbose\n", 2,
		     "expected one of error, warning, info, debug");
	expect_error("[viad]\npoll_mode = sometimes\n", 2,
		     "expected one of busy, backoff");
	expect_error("[port]\nglue = ../evil\n", 2, "only letters");

	/* Ports. */
	expect_error("[port]\nglue = ethdev\n[viad]\n", 1,
		     "glue 'ethdev' requires devargs");
	expect_error("[viad]\n[port via3]\nglue = ethdev\n", 2,
		     "port via3: glue 'ethdev' requires devargs");
	expect_error("[port via1]\n[port via1]\n", 2,
		     "duplicate port name 'via1'");
	expect_error("[port via1]\n[port]\n", 2, "'via1'");
	expect_error("[port eth0]\n", 1, "invalid port name 'eth0'");
	expect_error("[port via01]\n", 1, "invalid port name");
	expect_error("[port via]\n", 1, "invalid port name");
	expect_error("[port]\nmac = 02:00:00:00:00\n", 2,
		     "expected a MAC address");
	expect_error("[port]\nmac = 02:00:00:00:00:0g\n", 2,
		     "expected a MAC address");
	expect_error("[port]\nmac = 01:00:5e:00:00:01\n", 2,
		     "not a unicast address");
	expect_error("[port]\nmac = 00:00:00:00:00:00\n", 2,
		     "not a unicast address");
	for (i = 0; i <= VIA_CONF_MAX_PORTS; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "[port]\n");
	expect_error(text, VIA_CONF_MAX_PORTS + 1, "too many ports");
}

/* The faulty glue's keys: defaults, every syntax, every error. */
static void
test_faulty_keys(void)
{
	static const char text[] =
		"[port via4]\n"
		"glue = faulty\n"
		"inner = ethdev\n"
		"devargs = net_ring0\n"
		"rx_drop = 0.05\n"
		"rx_dup = 5%\n"
		"rx_reorder = 1\n"
		"rx_corrupt = 100%\n"
		"rx_delay = 0\n"
		"tx_drop = 0.000001\n"
		"tx_dup = 0.0001%\n"
		"tx_reorder = 2.5%\n"
		"tx_corrupt = 0.1234560\n"
		"tx_delay = 1.000000\n"
		"delay_us = 0\n"
		"corrupt_bits = 64\n"
		"corrupt_where = payload\n"
		"seed = 18446744073709551615\n"
		"[port]\n"
		"glue = faulty\n";
	static const struct {
		const char *text;
		uint32_t ppm;
	} ok[] = {
		{ "0", 0 }, { "0%", 0 }, { "0.0", 0 }, { "1", 1000000 },
		{ "1.0", 1000000 }, { "100%", 1000000 }, { "100.0000%", 1000000 },
		{ "0.5", 500000 }, { "50%", 500000 }, { "0.05", 50000 },
		{ "5%", 50000 }, { "5.5%", 55000 }, { "0.000001", 1 },
		{ "0.0001%", 1 }, { "0.0000010", 1 }, { "00.25", 250000 },
	};
	static const char *const bad_syntax[] = {
		"", "abc", ".5", "5.", "-0.1", "+0.1", "5 %", " 5%", "1e-3",
		"5%%", "%", "0x1", "0,5", "5%x", "0.5.1", "1/2",
	};
	static const char *const bad_range[] = {
		"1.5", "2", "1.000001", "1.0000001", "101%", "100.0001%",
		"100.00001%", "99999999999999999999999",
	};
	static const char *const bad_precision[] = {
		"0.0000001", "0.00001%", "0.1234567", "5.00001%",
	};
	struct via_conf c, before;
	char err[512] = "";
	const struct via_port_conf *p;
	unsigned int i;

	/* defaults of a new port */
	via_conf_defaults(&c);
	CHECK_EQ(via_conf_set(&c, "port.via3", "glue", "faulty", err,
			       sizeof(err)), 0);
	p = &c.ports[0];
	CHECK_STR(p->inner, "loopback");
	CHECK_EQ(p->rx_drop + p->rx_dup + p->rx_reorder + p->rx_corrupt +
		  p->rx_delay + p->tx_drop + p->tx_dup + p->tx_reorder +
		  p->tx_corrupt + p->tx_delay, 0);
	CHECK_EQ(p->delay_us, 100);
	CHECK_EQ(p->corrupt_bits, 1);
	CHECK_EQ(p->corrupt_where, VIA_CORRUPT_ANY);
	CHECK(p->seed == 1);
	CHECK_EQ(via_conf_check(&c, err, sizeof(err)), 0);

	/* every accepted spelling, through the single setter */
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK_EQ(via_conf_set(&c, "port.via3", "tx_dup", ok[i].text,
				       err, sizeof(err)), 0);
		if (c.ports[0].tx_dup != ok[i].ppm)
			fprintf(stderr, "  tx_dup = '%s'\n", ok[i].text);
		CHECK_EQ(c.ports[0].tx_dup, ok[i].ppm);
	}
	memcpy(&before, &c, sizeof(c));
	for (i = 0; i < sizeof(bad_syntax) / sizeof(bad_syntax[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(via_conf_set(&c, "port.via3", "rx_drop",
				       bad_syntax[i], err, sizeof(err)),
			  -EINVAL);
		if (strstr(err, "not a probability") == NULL)
			fprintf(stderr, "  '%s': %s\n", bad_syntax[i], err);
		CHECK(strstr(err, "not a probability") != NULL);
	}
	for (i = 0; i < sizeof(bad_range) / sizeof(bad_range[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(via_conf_set(&c, "port.via3", "rx_delay",
				       bad_range[i], err, sizeof(err)),
			  -EINVAL);
		if (strstr(err, "out of range [0, 1]") == NULL)
			fprintf(stderr, "  '%s': %s\n", bad_range[i], err);
		CHECK(strstr(err, "out of range [0, 1]") != NULL);
	}
	for (i = 0; i < sizeof(bad_precision) / sizeof(bad_precision[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(via_conf_set(&c, "port.via3", "tx_corrupt",
				       bad_precision[i], err, sizeof(err)),
			  -EINVAL);
		if (strstr(err, "finer than 1 ppm") == NULL)
			fprintf(stderr, "  '%s': %s\n", bad_precision[i], err);
		CHECK(strstr(err, "finer than 1 ppm") != NULL);
	}
	CHECK(memcmp(&before, &c, sizeof(c)) == 0);

	/* a whole section from a file */
	via_conf_defaults(&c);
	err[0] = '\0';
	CHECK_EQ(via_conf_load(&c, write_file(text), err, sizeof(err)), 0);
	if (err[0] != '\0')
		fprintf(stderr, "  (%s)\n", err);
	CHECK_EQ(c.nb_ports, 2);
	p = &c.ports[0];
	CHECK_STR(p->name, "via4");
	CHECK_STR(p->glue, "faulty");
	CHECK_STR(p->inner, "ethdev");
	CHECK_STR(p->devargs, "net_ring0");
	CHECK_EQ(p->rx_drop, 50000);
	CHECK_EQ(p->rx_dup, 50000);
	CHECK_EQ(p->rx_reorder, 1000000);
	CHECK_EQ(p->rx_corrupt, 1000000);
	CHECK_EQ(p->rx_delay, 0);
	CHECK_EQ(p->tx_drop, 1);
	CHECK_EQ(p->tx_dup, 1);
	CHECK_EQ(p->tx_reorder, 25000);
	CHECK_EQ(p->tx_corrupt, 123456);
	CHECK_EQ(p->tx_delay, 1000000);
	CHECK_EQ(p->delay_us, 0);
	CHECK_EQ(p->corrupt_bits, 64);
	CHECK_EQ(p->corrupt_where, VIA_CORRUPT_PAYLOAD);
	CHECK(p->seed == UINT64_MAX);
	p = &c.ports[1];
	CHECK_STR(p->name, "via1");
	CHECK_STR(p->glue, "faulty");
	CHECK_STR(p->inner, "loopback");
	CHECK_EQ(p->delay_us, 100);
	CHECK(p->seed == 1);
	CHECK_EQ(via_conf_check(&c, NULL, 0), 0);
	CHECK_EQ(via_conf_set(&c, "port.via4", "corrupt_where", "header",
			       NULL, 0), 0);
	CHECK_EQ(c.ports[0].corrupt_where, VIA_CORRUPT_HEADER);
	CHECK_EQ(via_conf_set(&c, "port.via4", "corrupt_where", "any",
			       NULL, 0), 0);
	CHECK_EQ(c.ports[0].corrupt_where, VIA_CORRUPT_ANY);
	CHECK_EQ(via_conf_set(&c, "port.via4", "seed", "0", NULL, 0), 0);
	CHECK(c.ports[0].seed == 0);

	/* faults on a glue that ignores them: caught by the check */
	CHECK_EQ(via_conf_set(&c, "port.via4", "glue", "loopback", NULL, 0),
		  0);
	CHECK_EQ(via_conf_check(&c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "port via4: rx_drop needs glue 'faulty'") != NULL);

	/* out of range and malformed values in a file, line numbers */
	expect_error("[port]\nglue = faulty\nrx_drop = 1.5\n", 3,
		     "port via0.rx_drop = '1.5' is out of range [0, 1]");
	expect_error("[port]\nglue = faulty\ntx_dup = 101%\n", 3,
		     "out of range [0, 1] (or [0%, 100%])");
	expect_error("[port]\nglue = faulty\nrx_corrupt = 0.0000001\n", 3,
		     "finer than 1 ppm");
	expect_error("[port]\nglue = faulty\ntx_delay = 5 %\n", 3,
		     "not a probability");
	expect_error("[port]\nrx_reorder = lots\n", 2, "not a probability");
	expect_error("[port]\ntx_reorder = -1%\n", 2, "not a probability");
	expect_error("[port]\ndelay_us = 1000001\n", 2,
		     "out of range [0, 1000000]");
	expect_error("[port]\ndelay_us = 1ms\n", 2, "not a decimal number");
	expect_error("[port]\ncorrupt_bits = 0\n", 2, "out of range [1, 64]");
	expect_error("[port]\ncorrupt_bits = 65\n", 2, "out of range");
	expect_error("[port]\ncorrupt_where = middle\n", 2,
		     "expected one of any, header, payload");
	expect_error("[port]\ncorrupt_where = \n", 2, "expected one of");
	expect_error("[port]\nseed = 18446744073709551616\n", 2,
		     "out of range");
	expect_error("[port]\nseed = -1\n", 2, "not a decimal number");
	expect_error("[port]\nseed = 0x10\n", 2, "not a decimal number");
	expect_error("[port]\ninner = ../evil\n", 2, "only letters");
	expect_error("[port]\ninner =\n", 2, "must not be empty");
	expect_error("[port]\nrx_dupe = 1%\n", 2, "unknown key 'rx_dupe'");
	/* cross-key rules, reported at the section header */
	expect_error("[port via2]\nglue = faulty\ninner = ethdev\n[viad]\n", 1,
		     "port via2: glue 'faulty' with inner 'ethdev' requires devargs");
	expect_error("[viad]\n[port]\nglue = faulty\ninner = faulty\n", 2,
		     "inner 'faulty' cannot wrap itself");
	expect_error("[port]\nglue = ethdev\ndevargs = net_ring0\n"
		     "tx_drop = 1%\n", 1,
		     "port via0: tx_drop needs glue 'faulty' (glue is 'ethdev')");
	expect_error("[port]\nrx_delay = 0.5\n", 1,
		     "rx_delay needs glue 'faulty' (glue is 'loopback')");
}

/* IP beside VIA (issue 16): af_xdp ports filter by default; an exception
 * interface needs glue ethdev and a name the kernel takes. */
static void
test_ip_keys(void)
{
	struct via_conf c;
	char err[512] = "";
	const char *path = write_file("[viad]\nxdp_prog = /x/via_xdp.o\n"
				      "[port]\nglue = ethdev\ndevargs = net_memif0\nip_interface = via0ip\n"
				      "[port]\nglue = ethdev\ndevargs = net_af_xdp0,iface=e0\nxdp_filter = no\n");

	via_conf_defaults(&c);
	CHECK(via_conf_load(&c, path, err, sizeof(err)) == 0);
	CHECK(strcmp(c.xdp_prog, "/x/via_xdp.o") == 0);
	CHECK(strcmp(c.ports[0].ip_interface, "via0ip") == 0 && c.ports[0].xdp_filter == 1);
	CHECK(c.ports[1].ip_interface[0] == '\0' && c.ports[1].xdp_filter == 0);
	expect_error("[port]\nip_interface = ip0\n", 1, "port via0: ip_interface needs glue 'ethdev'");
	expect_error("[port]\nglue = ethdev\ndevargs = x\nip_interface = a/b\n", 1,
		     "port via0: 'a/b' is not an interface name");
	expect_error("[port]\nglue = ethdev\ndevargs = x\nip_interface = 0123456789abcdef\n", 4,
		     "too long (at most 15 characters)");
	expect_error("[port]\nxdp_filter = maybe\n", 2, "expected one of");
}

static void
test_load_errno(void)
{
	struct via_conf c;
	char err[512] = "", path[4200];

	via_conf_defaults(&c);
	snprintf(path, sizeof(path), "%s/does-not-exist.conf", tmpdir);
	CHECK_EQ(via_conf_load(&c, path, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, path) != NULL);
	CHECK_EQ(via_conf_load(&c, NULL, NULL, 0), -EINVAL);
	CHECK_EQ(via_conf_load(NULL, path, NULL, 0), -EINVAL);
	/* A directory cannot be read as a file. */
	CHECK(via_conf_load(&c, tmpdir, err, sizeof(err)) < 0);
}

static void
test_set(void)
{
	struct via_conf c, before;
	char err[512];

	via_conf_defaults(&c);
	CHECK_EQ(via_conf_set(&c, "viad", "socket", "/x", err, sizeof(err)), 0);
	CHECK_STR(c.socket_path, "/x");
	CHECK_EQ(via_conf_set(&c, "viad", "glue_dir", "/tmp/glue", NULL, 0), 0);
	CHECK_STR(c.glue_dir, "/tmp/glue");
	CHECK_EQ(via_conf_set(&c, "viad", "glue_dir", "", err, sizeof(err)), -EINVAL);
	CHECK_STR(c.glue_dir, "/tmp/glue");
	CHECK_EQ(via_conf_set(&c, "viad", "poll_mode", "busy", NULL, 0), 0);
	CHECK_EQ(c.poll_mode, VIA_POLL_BUSY);
	CHECK_EQ(via_conf_set(&c, "viad", "poll_mode", "adaptive", NULL, 0), 0);
	CHECK_EQ(c.poll_mode, VIA_POLL_ADAPTIVE);
	CHECK_EQ(via_conf_set(&c, "viad", "poll_mode", "busy", NULL, 0), 0);
	CHECK_EQ(via_conf_set(&c, "limits", "max_register_bytes", "3G",
			       NULL, 0), 0);
	CHECK(c.max_register_bytes == 3ULL << 30);

	/* A port can be created and completed from the command line. */
	CHECK_EQ(via_conf_set(&c, "port.via2", "glue", "ethdev", err,
			       sizeof(err)), 0);
	CHECK_EQ(c.nb_ports, 1);
	CHECK_STR(c.ports[0].name, "via2");
	CHECK_EQ(c.ports[0].rx_desc, 1024);
	CHECK_EQ(via_conf_check(&c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "requires devargs") != NULL);
	CHECK_EQ(via_conf_set(&c, "port via2", "devargs",
			       "net_af_xdp0,iface=veth0", NULL, 0), 0);
	CHECK_EQ(c.nb_ports, 1);
	CHECK_EQ(via_conf_check(&c, err, sizeof(err)), 0);
	CHECK_EQ(via_conf_set(&c, "port.via2", "mac", "02:00:00:00:00:01",
			       NULL, 0), 0);
	CHECK_STR(c.ports[0].mac, "02:00:00:00:00:01");
	CHECK_EQ(via_conf_set(&c, "port.via2", "mac", "", NULL, 0), 0);
	CHECK_STR(c.ports[0].mac, "");

	/* Errors leave the configuration untouched. */
	memcpy(&before, &c, sizeof(c));
	CHECK_EQ(via_conf_set(&c, "viad", "nope", "1", err, sizeof(err)),
		  -EINVAL);
	CHECK(strstr(err, "unknown key 'nope' in section [viad]") != NULL);
	CHECK_EQ(via_conf_set(&c, "limits", "max_vi", "0", err, sizeof(err)),
		  -EINVAL);
	CHECK(strstr(err, "limits.max_vi = '0' is out of range") != NULL);
	CHECK_EQ(via_conf_set(&c, "port.via5", "mtu", "1", err, sizeof(err)),
		  -EINVAL);
	CHECK_EQ(via_conf_set(&c, "port.via5", "bogus", "1", NULL, 0),
		  -EINVAL);
	CHECK_EQ(via_conf_set(&c, "port", "mtu", "1500", err, sizeof(err)),
		  -EINVAL);
	CHECK(strstr(err, "needs a port name") != NULL);
	CHECK_EQ(via_conf_set(&c, "port.eth0", "mtu", "1500", err,
			       sizeof(err)), -EINVAL);
	CHECK(strstr(err, "invalid port name") != NULL);
	CHECK_EQ(via_conf_set(&c, "nosuch", "a", "b", err, sizeof(err)),
		  -EINVAL);
	CHECK(strstr(err, "unknown section") != NULL);
	CHECK_EQ(via_conf_set(&c, "viad.x", "socket", "/y", NULL, 0), -EINVAL);
	CHECK_EQ(via_conf_set(&c, "viad", "socket", NULL, NULL, 0), -EINVAL);
	CHECK_EQ(via_conf_set(NULL, "viad", "socket", "/y", NULL, 0), -EINVAL);
	CHECK(memcmp(&before, &c, sizeof(c)) == 0);

	/* An override applies on top of a loaded file's port. */
	via_conf_defaults(&c);
	CHECK_EQ(via_conf_load(&c, write_file("[port]\n[port]\n"), err,
				sizeof(err)), 0);
	CHECK_EQ(via_conf_set(&c, "port.via1", "mtu", "1500", NULL, 0), 0);
	CHECK_EQ(c.nb_ports, 2);
	CHECK_EQ(c.ports[1].mtu, 1500);
	CHECK_EQ(c.ports[0].mtu, 0);
}

static void
test_size_suffixes(void)
{
	static const struct {
		const char *text;
		uint64_t value;
	} ok[] = {
		{ "2097152", 2ULL << 20 },
		{ "2048K", 2ULL << 20 },
		{ "2048k", 2ULL << 20 },
		{ "3M", 3ULL << 20 },
		{ "3m", 3ULL << 20 },
		{ "4G", 4ULL << 30 },
		{ "4g", 4ULL << 30 },
	};
	static const char *const bad[] = {
		"", "K", "1KB", "1 K", "1.5G", "+1M", "-1M", "1T", "1KK",
	};
	struct via_conf c;
	unsigned int i;

	via_conf_defaults(&c);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK_EQ(via_conf_set(&c, "limits", "session_shm_bytes",
				       ok[i].text, NULL, 0), 0);
		CHECK(c.session_shm_bytes == ok[i].value);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(via_conf_set(&c, "limits", "session_shm_bytes",
				       bad[i], NULL, 0), -EINVAL);
	/* Above the 4 GiB cap, and overflowing 64 bits once multiplied. */
	CHECK_EQ(via_conf_set(&c, "limits", "session_shm_bytes", "5G",
			       NULL, 0), -EINVAL);
	CHECK_EQ(via_conf_set(&c, "limits", "max_register_bytes",
			       "18446744073709551615G", NULL, 0), -EINVAL);
	CHECK_EQ(via_conf_set(&c, "limits", "max_register_bytes", "1024K",
			       NULL, 0), 0);
	CHECK(c.max_register_bytes == 1ULL << 20);
	CHECK_EQ(via_conf_set(&c, "limits", "max_transfer_size", "32K",
			       NULL, 0), 0);
	CHECK_EQ(c.max_transfer_size, 32768);
}

static void
test_parse_mac(void)
{
	static const char *const bad[] = {
		"", "02:00:00:00:00", "02:00:00:00:00:01:", "02:00:00:00:00:011",
		"2:00:00:00:00:01", "02-00-00-00-00-01", "02:00:00:00:00:0g",
		"02:00:00:00:00:01 ", " 02:00:00:00:00:01", "0200.0000.0001",
	};
	uint8_t mac[6] = { 0 }, want[6] = { 0x02, 0xab, 0xcd, 0xef, 0x00, 0x9f };
	unsigned int i;

	CHECK_EQ(via_parse_mac("02:AB:cd:Ef:00:9f", mac), 0);
	CHECK(memcmp(mac, want, 6) == 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(mac, 0x55, sizeof(mac));
		CHECK_EQ(via_parse_mac(bad[i], mac), -EINVAL);
		CHECK(mac[0] == 0x55 && mac[5] == 0x55);
	}
	CHECK_EQ(via_parse_mac(NULL, mac), -EINVAL);
	CHECK(via_mac_is_unicast(want));
	CHECK(!via_mac_is_unicast((const uint8_t[6]){ 0x01, 0, 0x5e, 0, 0, 1 }));
	CHECK(!via_mac_is_unicast((const uint8_t[6]){ 0xff, 0xff, 0xff,
						      0xff, 0xff, 0xff }));
	CHECK(!via_mac_is_unicast((const uint8_t[6]){ 0 }));
}

static void
test_hosts_lookup(void)
{
	static const char text[] =
		"# VIA hosts\n"
		"   # indented comment\n"
		"\n"
		"alpha 02:00:00:00:00:01\n"
		"beta\t02:00:00:00:00:01\n"
		"  alpha   02:00:00:00:00:02   # second NIC of alpha\n"
		"gamma 02:AB:cd:00:00:03#comment\n";
	static const uint8_t m1[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t m2[6] = { 2, 0, 0, 0, 0, 2 };
	static const uint8_t m3[6] = { 2, 0xab, 0xcd, 0, 0, 3 };
	static const uint8_t m9[6] = { 2, 0, 0, 0, 0, 9 };
	struct via_hosts *h = NULL;
	const char *name = NULL;
	char err[512] = "";
	uint8_t mac[6];

	CHECK_EQ(via_hosts_load(&h, write_file(text), err, sizeof(err)), 0);
	if (err[0] != '\0')
		fprintf(stderr, "  (%s)\n", err);
	CHECK(h != NULL);

	CHECK_EQ(via_hosts_by_name(h, "alpha", 0, mac), 0);
	CHECK(memcmp(mac, m1, 6) == 0);
	CHECK_EQ(via_hosts_by_name(h, "alpha", 1, mac), 0);
	CHECK(memcmp(mac, m2, 6) == 0);
	CHECK_EQ(via_hosts_by_name(h, "alpha", 2, mac), -ENOENT);
	CHECK_EQ(via_hosts_by_name(h, "beta", 0, mac), 0);
	CHECK(memcmp(mac, m1, 6) == 0);
	CHECK_EQ(via_hosts_by_name(h, "beta", 1, mac), -ENOENT);
	CHECK_EQ(via_hosts_by_name(h, "gamma", 0, mac), 0);
	CHECK(memcmp(mac, m3, 6) == 0);
	CHECK_EQ(via_hosts_by_name(h, "delta", 0, mac), -ENOENT);
	CHECK_EQ(via_hosts_by_name(h, "alph", 0, mac), -ENOENT);
	CHECK_EQ(via_hosts_by_name(h, NULL, 0, mac), -EINVAL);

	/* Several names share m1: the first in file order wins. */
	CHECK_EQ(via_hosts_by_addr(h, m1, &name), 0);
	CHECK_STR(name, "alpha");
	CHECK_EQ(via_hosts_by_addr(h, m2, &name), 0);
	CHECK_STR(name, "alpha");
	CHECK_EQ(via_hosts_by_addr(h, m3, &name), 0);
	CHECK_STR(name, "gamma");
	CHECK_EQ(via_hosts_by_addr(h, m9, &name), -ENOENT);
	CHECK_EQ(via_hosts_by_addr(h, NULL, &name), -EINVAL);
	via_hosts_free(h);

	/* No hosts file configured: everything is unknown. */
	CHECK_EQ(via_hosts_by_name(NULL, "alpha", 0, mac), -ENOENT);
	CHECK_EQ(via_hosts_by_addr(NULL, m1, &name), -ENOENT);
	via_hosts_free(NULL);

	/* An empty file is a valid, empty table. */
	h = NULL;
	CHECK_EQ(via_hosts_load(&h, write_file("# nothing\n"), NULL, 0), 0);
	CHECK(h != NULL);
	CHECK_EQ(via_hosts_by_name(h, "alpha", 0, mac), -ENOENT);
	via_hosts_free(h);
}

static void
expect_hosts_error_at(int caller_line, const char *text, unsigned int line,
		      const char *needle)
{
	struct via_hosts *h = (struct via_hosts *)&test_failures; /* sentinel */
	char err[512] = "", prefix[4200];
	const char *path = write_file(text);
	int rc;

	rc = via_hosts_load(&h, path, err, sizeof(err));
	snprintf(prefix, sizeof(prefix), "%s:%u: ", path, line);
	if (rc != -EINVAL || strncmp(err, prefix, strlen(prefix)) != 0 ||
	    strstr(err, needle) == NULL ||
	    h != (struct via_hosts *)&test_failures) {
		fprintf(stderr,
			"%s:%d: hosts load returned %d, message \"%s\"; expected -EINVAL, \"%s...%s...\", *out untouched\n",
			__FILE__, caller_line, rc, err, prefix, needle);
		test_failures++;
	}
}

#define expect_hosts_error(text, line, needle) \
	expect_hosts_error_at(__LINE__, text, line, needle)

static void
test_hosts_errors(void)
{
	char text[600], path[4200], err[512] = "";
	struct via_hosts *h = NULL;
	uint8_t mac[6];

	expect_hosts_error("# ok\nalpha\n", 2, "expected 'name");
	expect_hosts_error("alpha # no address\n", 1, "expected 'name");
	expect_hosts_error("alpha 02:00:00:00:00\n", 1, "invalid MAC");
	expect_hosts_error("alpha 02:00:00:00:00:0g\n", 1, "invalid MAC");
	expect_hosts_error("alpha 02:00:00:00:00:01 extra\n", 1,
			   "unexpected text");
	expect_hosts_error("alpha 01:00:5e:00:00:01\n", 1, "not a unicast");
	expect_hosts_error("alpha 00:00:00:00:00:00\n", 1, "not a unicast");
	expect_hosts_error("al#pha 02:00:00:00:00:01\n", 1, "'#'");
	expect_hosts_error("a 02:00:00:00:00:01\nb 02:00:00:00:00:02\n"
			   "a 02:00:00:00:00:01\n", 3, "duplicate entry");

	/* Names of exactly VIA_HOSTS_NAME_MAX characters are fine. */
	memset(text, 'n', VIA_HOSTS_NAME_MAX);
	snprintf(text + VIA_HOSTS_NAME_MAX, sizeof(text) - VIA_HOSTS_NAME_MAX,
		 " 02:00:00:00:00:01\n");
	CHECK_EQ(via_hosts_load(&h, write_file(text), err, sizeof(err)), 0);
	text[VIA_HOSTS_NAME_MAX] = '\0';
	CHECK_EQ(via_hosts_by_name(h, text, 0, mac), 0);
	via_hosts_free(h);
	memset(text, 'n', VIA_HOSTS_NAME_MAX + 1);
	snprintf(text + VIA_HOSTS_NAME_MAX + 1,
		 sizeof(text) - VIA_HOSTS_NAME_MAX - 1, " 02:00:00:00:00:01\n");
	expect_hosts_error(text, 1, "longer than 255");

	snprintf(path, sizeof(path), "%s/no-hosts", tmpdir);
	h = NULL;
	CHECK_EQ(via_hosts_load(&h, path, err, sizeof(err)), -ENOENT);
	CHECK(h == NULL);
	CHECK(strstr(err, path) != NULL);
	CHECK_EQ(via_hosts_load(NULL, path, NULL, 0), -EINVAL);
}

/* The shipped files must load, and viad.conf must restate the defaults. */
static void
test_shipped(const char *dir, int required)
{
	struct via_conf c, def;
	struct via_hosts *h = NULL;
	char path[4096], err[512] = "";
	struct stat st;
	int rc;

	if (!required && stat(dir, &st) != 0) {
		printf("test_conf: no '%s' directory, shipped files not checked\n",
		       dir);
		return;
	}
	snprintf(path, sizeof(path), "%s/viad.conf", dir);
	via_conf_defaults(&c);
	via_conf_defaults(&def);
	rc = via_conf_load(&c, path, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc < 0)
		fprintf(stderr, "  (%s)\n", err);
	CHECK(conf_equal(&c, &def));

	snprintf(path, sizeof(path), "%s/hosts.example", dir);
	rc = via_hosts_load(&h, path, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc < 0)
		fprintf(stderr, "  (%s)\n", err);
	via_hosts_free(h);
}

int
main(int argc, char **argv)
{
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	test_defaults();
	test_full_file();
	test_errors();
	test_faulty_keys();
	test_ip_keys();
	test_load_errno();
	test_set();
	test_size_suffixes();
	test_parse_mac();
	test_hosts_lookup();
	test_hosts_errors();
	test_shipped(argc > 1 ? argv[1] : "config", argc > 1);
	cleanup();

	return test_summary("test_conf");
}
