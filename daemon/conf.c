/*
 * viad configuration.
 *
 * Every key is described once, in conf_keys[]: the file loader and
 * command-line overrides both go through it, so a key cannot be accepted by
 * one and rejected by the other, and ranges live in a single place.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "hosts.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

enum conf_section {
	SECT_VIAD,
	SECT_LIMITS,
	SECT_PORT,
	SECT_NONE,	/* loader state before the first header */
};

static const char *const section_names[] = {
	[SECT_VIAD] = "viad",
	[SECT_LIMITS] = "limits",
	[SECT_PORT] = "port",
};

enum conf_type {
	CT_STR,		/* string, restricted by CF_NAME / CF_EMPTY_OK */
	CT_CHOICE,	/* string that must be one of ->choices */
	CT_POLL_MODE,	/* enum via_poll_mode, spelled as ->choices */
	CT_UINT,	/* unsigned integer of ->size bytes in [min, max] */
	CT_MAC,		/* unicast MAC, stored in canonical form; "" = none */
	CT_PPM,		/* probability "0.05" or "5%", stored as uint32 ppm */
	CT_ENUM,	/* one of ->choices, stored as its index (->size bytes) */
};

#define CF_EMPTY_OK	(1u << 0) /* "" is accepted (means "unset") */
#define CF_NAME		(1u << 1) /* [A-Za-z0-9_-]+: used in file and module names */
#define CF_SIZE		(1u << 2) /* number may carry a K, M or G suffix */
#define CF_ZERO_OK	(1u << 3) /* 0 ("default") is accepted besides [min, max] */

struct conf_key {
	enum conf_section section;
	const char *key;
	enum conf_type type;
	unsigned int flags;
	size_t offset;		/* in via_conf, or in via_port_conf for ports */
	size_t size;		/* string capacity or integer width */
	uint64_t min, max;	/* CT_UINT only */
	const char *const *choices; /* CT_CHOICE, CT_POLL_MODE; NULL-ended */
};

static const char *const log_levels[] = {
	"error", "warning", "info", "debug", NULL
};

static const char *const poll_modes[] = {
	[VIA_POLL_BUSY] = "busy",
	[VIA_POLL_BACKOFF] = "backoff",
	[VIA_POLL_ADAPTIVE] = "adaptive",
	NULL
};

static const char *const no_yes[] = { "no", "yes", NULL };

static const char *const corrupt_wheres[] = {
	[VIA_CORRUPT_ANY] = "any",
	[VIA_CORRUPT_HEADER] = "header",
	[VIA_CORRUPT_PAYLOAD] = "payload",
	NULL
};

/* One probability in parts per million: 1000000 = always. */
#define PPM_ONE 1000000u

#define FIELD(type, f) offsetof(type, f), sizeof(((type *)0)->f)
#define G(f) FIELD(struct via_conf, f)
#define P(f) FIELD(struct via_port_conf, f)

static const struct conf_key conf_keys[] = {
	{ SECT_VIAD, "instance", CT_STR, CF_NAME, G(instance), 0, 0, NULL },
	{ SECT_VIAD, "socket", CT_STR, 0, G(socket_path), 0, 0, NULL },
	/* Who may connect: the socket's group (mode 0660), then viad's own lists. */
	{ SECT_VIAD, "socket_group", CT_STR, CF_EMPTY_OK, G(socket_group), 0, 0, NULL },
	{ SECT_VIAD, "allowed_uids", CT_STR, CF_EMPTY_OK, G(allowed_uids), 0, 0, NULL },
	{ SECT_VIAD, "allowed_gids", CT_STR, CF_EMPTY_OK, G(allowed_gids), 0, 0, NULL },
	{ SECT_VIAD, "hosts", CT_STR, CF_EMPTY_OK, G(hosts_path), 0, 0, NULL },
	/* A port whose glue is not built in loads its module from here. */
	{ SECT_VIAD, "glue_dir", CT_STR, 0, G(glue_dir), 0, 0, NULL },
	/* af_xdp ports' XDP program: VIA frames to viad, the rest to the kernel */
	{ SECT_VIAD, "xdp_prog", CT_STR, CF_EMPTY_OK, G(xdp_prog), 0, 0, NULL },
	{ SECT_VIAD, "log_level", CT_CHOICE, 0, G(log_level), 0, 0,
	  log_levels },
	{ SECT_VIAD, "poll_mode", CT_POLL_MODE, 0, G(poll_mode), 0, 0,
	  poll_modes },
	/* Without EAL arguments: how many poll lcores viad starts (shards). */
	{ SECT_VIAD, "poll_lcores", CT_UINT, 0, G(poll_lcores), 1, VIA_CONF_MAX_POLL_LCORES, NULL },
	/* Bounded at one second: a longer idle spin or sleep is a typo. */
	{ SECT_VIAD, "idle_spin_us", CT_UINT, 0, G(idle_spin_us),
	  0, 1000000, NULL },
	/* A zero sleep would be busy polling under another name. */
	{ SECT_VIAD, "idle_sleep_us", CT_UINT, 0, G(idle_sleep_us),
	  1, 1000000, NULL },
	/* Frames from a port wait at most this long for a sleeping poller. */
	{ SECT_VIAD, "adaptive_timeout_us", CT_UINT, 0, G(adaptive_timeout_us),
	  10, 10000000, NULL },
	/* The reliable levels' timers: they bound how long a lost peer goes
	 * unnoticed (about keepalive + the sum of the backed-off timeouts). */
	{ SECT_VIAD, "rel_rto_min_us", CT_UINT, 0, G(rel_rto_min_us), 10, 1000000, NULL },
	{ SECT_VIAD, "rel_rto_max_us", CT_UINT, 0, G(rel_rto_max_us), 10, 10000000, NULL },
	{ SECT_VIAD, "rel_max_retries", CT_UINT, 0, G(rel_max_retries), 1, 64, NULL },
	{ SECT_VIAD, "rel_keepalive_ms", CT_UINT, 0, G(rel_keepalive_ms), 10, 3600000, NULL },
	/* What a peer viad's planned upgrade looks like from here: silence,
	 * and on memif the link going down (docs/design.md section 18). Up to
	 * an hour; 0 breaks as soon as the retries or the link say. */
	{ SECT_VIAD, "rel_silence_ms", CT_UINT, 0, G(rel_silence_ms), 0, 3600000, NULL },
	{ SECT_VIAD, "link_down_grace_ms", CT_UINT, 0, G(link_down_grace_ms), 0, 3600000, NULL },
	{ SECT_VIAD, "upgrades", CT_ENUM, 0, G(upgrades), 0, 0, no_yes },
	/* How long a connection request may wait for its VipConnectWait (VIA
	 * §4.1): up to a minute, a longer backlog is a typo. */
	{ SECT_VIAD, "cm_nomatch_grace_ms", CT_UINT, 0, G(cm_nomatch_grace_ms), 0, 60000, NULL },
	/* How long a request may go unanswered, and an accept unconfirmed:
	 * at least a retransmission interval (100 ms), at most ten minutes. */
	{ SECT_VIAD, "cm_unreachable_ms", CT_UINT, 0, G(cm_unreachable_ms), 100, 600000, NULL },

	{ SECT_LIMITS, "max_sessions", CT_UINT, 0, G(max_sessions),
	  1, 65536, NULL },
	{ SECT_LIMITS, "max_vi", CT_UINT, 0, G(max_vi), 1, 262144, NULL },
	{ SECT_LIMITS, "max_cq", CT_UINT, 0, G(max_cq), 1, 262144, NULL },
	/* The VIA spec guarantees CQs of at least 1024 entries. */
	{ SECT_LIMITS, "max_cq_entries", CT_UINT, 0, G(max_cq_entries),
	  1024, 1u << 24, NULL },
	{ SECT_LIMITS, "max_desc_per_queue", CT_UINT, 0,
	  G(max_desc_per_queue), 1, 65536, NULL },
	/* VIA requires at least 252 data segments per descriptor. */
	{ SECT_LIMITS, "max_segments_per_desc", CT_UINT, 0,
	  G(max_segments_per_desc), 252, 1024, NULL },
	/* VIA requires a maximum transfer size of at least 32 KiB. */
	{ SECT_LIMITS, "max_transfer_size", CT_UINT, CF_SIZE,
	  G(max_transfer_size), 32 * KiB, 16 * MiB, NULL },
	{ SECT_LIMITS, "max_ptags", CT_UINT, 0, G(max_ptags),
	  1, 1u << 20, NULL },
	{ SECT_LIMITS, "max_regions", CT_UINT, 0, G(max_regions),
	  1, 1u << 20, NULL },
	{ SECT_LIMITS, "max_register_bytes", CT_UINT, CF_SIZE,
	  G(max_register_bytes), 1 * MiB, 1024 * TiB, NULL },
	/* Below one 2 MiB hugepage the segment cannot hold a session. */
	{ SECT_LIMITS, "session_shm_bytes", CT_UINT, CF_SIZE,
	  G(session_shm_bytes), 2 * MiB, 4 * GiB, NULL },
	{ SECT_LIMITS, "max_alloc_bytes", CT_UINT, CF_SIZE,
	  G(max_alloc_bytes), 4 * KiB, 1 * TiB, NULL },
	{ SECT_LIMITS, "max_in_place_bytes", CT_UINT, CF_SIZE,
	  G(max_in_place_bytes), 4 * KiB, 1024 * TiB, NULL },
	/* the client's table of regions (issue 29): 0 = none, every
	 * registration a control call */
	{ SECT_LIMITS, "table_regions", CT_UINT, CF_ZERO_OK, G(table_regions), 64, 65536, NULL },
	{ SECT_LIMITS, "max_discriminator_len", CT_UINT, 0,
	  G(max_discriminator_len), 16, 256, NULL },
	/* 0 = derived from vm.max_map_count and RLIMIT_NOFILE at start (daemon/user.c) */
	{ SECT_LIMITS, "max_mappings", CT_UINT, CF_ZERO_OK, G(max_mappings), 16, 1u << 30, NULL },
	/* Per user (issue 14): one uid cannot take what every other user
	 * needs. 0 = the global limit divided by user_share. */
	{ SECT_LIMITS, "user_share", CT_UINT, 0, G(user_share), 1, 65536, NULL },
	{ SECT_LIMITS, "user_max_sessions", CT_UINT, CF_ZERO_OK, G(user_max_sessions),
	  1, 65536, NULL },
	{ SECT_LIMITS, "user_max_vi", CT_UINT, CF_ZERO_OK, G(user_max_vi), 1, 262144, NULL },
	{ SECT_LIMITS, "user_max_cq", CT_UINT, CF_ZERO_OK, G(user_max_cq), 1, 262144, NULL },
	{ SECT_LIMITS, "user_max_ptags", CT_UINT, CF_ZERO_OK, G(user_max_ptags),
	  1, 1u << 20, NULL },
	{ SECT_LIMITS, "user_max_regions", CT_UINT, CF_ZERO_OK, G(user_max_regions),
	  1, 1u << 20, NULL },
	{ SECT_LIMITS, "user_max_register_bytes", CT_UINT, CF_SIZE | CF_ZERO_OK,
	  G(user_max_register_bytes), 4 * KiB, 1024 * TiB, NULL },
	{ SECT_LIMITS, "user_max_in_place_bytes", CT_UINT, CF_SIZE | CF_ZERO_OK,
	  G(user_max_in_place_bytes), 4 * KiB, 1024 * TiB, NULL },
	{ SECT_LIMITS, "user_max_alloc_bytes", CT_UINT, CF_SIZE | CF_ZERO_OK,
	  G(user_max_alloc_bytes), 4 * KiB, 1024 * TiB, NULL },
	{ SECT_LIMITS, "user_max_requests", CT_UINT, CF_ZERO_OK, G(user_max_requests),
	  1, 1u << 20, NULL },
	/* What the host has for all (issue 25): 0 = its share, the viad-wide
	 * mappings, the hugepage pool, MemTotal / user_share. */
	{ SECT_LIMITS, "user_max_mappings", CT_UINT, CF_ZERO_OK, G(user_max_mappings),
	  1, 1u << 30, NULL },
	{ SECT_LIMITS, "user_max_hugepage_bytes", CT_UINT, CF_SIZE | CF_ZERO_OK,
	  G(user_max_hugepage_bytes), 2 * MiB, 1024 * TiB, NULL },
	{ SECT_LIMITS, "user_max_memory_bytes", CT_UINT, CF_SIZE | CF_ZERO_OK,
	  G(user_max_memory_bytes), 2 * MiB, 1024 * TiB, NULL },
	{ SECT_LIMITS, "root_exempt", CT_ENUM, 0, G(root_exempt), 0, 0, no_yes },

	{ SECT_PORT, "glue", CT_STR, CF_NAME, P(glue), 0, 0, NULL },
	{ SECT_PORT, "devargs", CT_STR, CF_EMPTY_OK, P(devargs), 0, 0, NULL },
	/* 68 is the IPv4 minimum MTU, also DPDK's RTE_ETHER_MIN_MTU. */
	{ SECT_PORT, "mtu", CT_UINT, CF_ZERO_OK, P(mtu), 68, 65535, NULL },
	/* 1024 is DPDK's default RTE_MAX_QUEUES_PER_PORT. */
	{ SECT_PORT, "rx_queues", CT_UINT, 0, P(rx_queues), 1, 1024, NULL },
	{ SECT_PORT, "tx_queues", CT_UINT, 0, P(tx_queues), 1, 1024, NULL },
	/* PMDs clamp further with rte_eth_dev_adjust_nb_rx_tx_desc(). */
	{ SECT_PORT, "rx_desc", CT_UINT, 0, P(rx_desc), 32, 32768, NULL },
	{ SECT_PORT, "tx_desc", CT_UINT, 0, P(tx_desc), 32, 32768, NULL },
	{ SECT_PORT, "mac", CT_MAC, CF_EMPTY_OK, P(mac), 0, 0, NULL },
	/* IP beside VIA: filter at XDP (af_xdp), or a kernel interface for the
	 * frames that are not VIA's (ports the kernel cannot see) */
	{ SECT_PORT, "xdp_filter", CT_ENUM, 0, P(xdp_filter), 0, 0, no_yes },
	{ SECT_PORT, "ip_interface", CT_STR, CF_EMPTY_OK, P(ip_interface), 0, 0, NULL },

	/* glue "faulty": the fault injector and the port it wraps */
	{ SECT_PORT, "inner", CT_STR, CF_NAME, P(inner), 0, 0, NULL },
	{ SECT_PORT, "rx_drop", CT_PPM, 0, P(rx_drop), 0, PPM_ONE, NULL },
	{ SECT_PORT, "rx_dup", CT_PPM, 0, P(rx_dup), 0, PPM_ONE, NULL },
	{ SECT_PORT, "rx_reorder", CT_PPM, 0, P(rx_reorder), 0, PPM_ONE, NULL },
	{ SECT_PORT, "rx_corrupt", CT_PPM, 0, P(rx_corrupt), 0, PPM_ONE, NULL },
	{ SECT_PORT, "rx_delay", CT_PPM, 0, P(rx_delay), 0, PPM_ONE, NULL },
	{ SECT_PORT, "tx_drop", CT_PPM, 0, P(tx_drop), 0, PPM_ONE, NULL },
	{ SECT_PORT, "tx_dup", CT_PPM, 0, P(tx_dup), 0, PPM_ONE, NULL },
	{ SECT_PORT, "tx_reorder", CT_PPM, 0, P(tx_reorder), 0, PPM_ONE, NULL },
	{ SECT_PORT, "tx_corrupt", CT_PPM, 0, P(tx_corrupt), 0, PPM_ONE, NULL },
	{ SECT_PORT, "tx_delay", CT_PPM, 0, P(tx_delay), 0, PPM_ONE, NULL },
	/* Bounded at one second like idle_spin_us: longer is a typo, and a
	 * delayed frame occupies a slot of a bounded queue meanwhile. */
	{ SECT_PORT, "delay_us", CT_UINT, 0, P(delay_us), 0, 1000000, NULL },
	/* The glue picks distinct positions from a 64-entry table. */
	{ SECT_PORT, "corrupt_bits", CT_UINT, 0, P(corrupt_bits), 1, 64, NULL },
	{ SECT_PORT, "corrupt_where", CT_ENUM, 0, P(corrupt_where), 0, 0,
	  corrupt_wheres },
	{ SECT_PORT, "seed", CT_UINT, 0, P(seed), 0, UINT64_MAX, NULL },
};

#undef P
#undef G
#undef FIELD

static const struct via_conf conf_defaults = {
	.instance = "viad",
	.socket_path = "/run/viad/viad.sock",
	.socket_group = "vipl",
	.hosts_path = "",
	.glue_dir = VIAD_GLUE_DIR,	/* <prefix>/<libdir>/viad/glue (meson) */
	.xdp_prog = VIAD_XDP_PROG,	/* <prefix>/<libdir>/viad/via_xdp.o, "" without clang */
	.log_level = "info",
	.poll_mode = VIA_POLL_BACKOFF,
	.poll_lcores = 1,
	.idle_spin_us = 200,
	.idle_sleep_us = 100,
	.adaptive_timeout_us = 10000,
	.rel_rto_min_us = 1000,
	.rel_rto_max_us = 100000,
	.rel_max_retries = 10,
	.rel_keepalive_ms = 1000,
	.rel_silence_ms = 2000,
	.link_down_grace_ms = 2000,
	.upgrades = 1,
	.cm_nomatch_grace_ms = 500,
	.cm_unreachable_ms = 3000,
	.max_sessions = 256,
	.max_vi = 16384,
	.max_cq = 4096,
	.max_cq_entries = 65536,
	.max_desc_per_queue = 1024,
	.max_segments_per_desc = 252,
	.max_transfer_size = 65536,
	.max_ptags = 65536,
	.max_regions = 262144,
	.max_register_bytes = 64 * GiB,
	.session_shm_bytes = 32 * MiB,
	.max_alloc_bytes = 1 * GiB,
	.max_in_place_bytes = 16 * GiB,
	.table_regions = 4096,
	.max_discriminator_len = 64,
	.user_share = 4,
	.nb_ports = 0,
};

static const struct via_port_conf port_defaults = {
	.glue = "loopback",
	.rx_queues = 1,
	.tx_queues = 1,
	.rx_desc = 1024,
	.tx_desc = 1024,
	.inner = "loopback",
	.delay_us = 100,
	.corrupt_bits = 1,
	.corrupt_where = VIA_CORRUPT_ANY,
	.seed = 1,
	.xdp_filter = 1,
};

/* Parsed, validated value waiting to be stored. */
union conf_val {
	uint64_t u;
	const char *s;		/* CT_STR, CT_CHOICE: points into the input */
	unsigned int idx;	/* CT_POLL_MODE */
	/* CT_PPM, CT_ENUM: in u */
	uint8_t mac[6];		/* CT_MAC; all-zero means "unset" */
};

static void __attribute__((format(printf, 3, 4)))
conf_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void
via_conf_defaults(struct via_conf *c)
{
	*c = conf_defaults;
}

static const struct conf_key *
find_key(enum conf_section section, const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++)
		if (conf_keys[i].section == section &&
		    strcmp(conf_keys[i].key, key) == 0)
			return &conf_keys[i];
	return NULL;
}

/* Explicit ranges rather than isalnum(), whose answer depends on locale. */
static bool
is_name(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '-')
			return false;
	return true;
}

/*
 * Decimal only: a leading zero must not silently switch to octal as
 * strtoull(, 0) would.  Returns -EINVAL for malformed text and -ERANGE for
 * numbers that do not fit in 64 bits.
 */
static int
parse_uint(const char *s, bool size_suffix, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	/* strtoull() would accept blanks, a sign, and wrap negatives. */
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (size_suffix) {
		switch (*end) {
		case 'K': case 'k':
			mult = KiB;
			end++;
			break;
		case 'M': case 'm':
			mult = MiB;
			end++;
			break;
		case 'G': case 'g':
			mult = GiB;
			end++;
			break;
		default:
			break;
		}
	}
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = (uint64_t)v * mult;
	return 0;
}

static int
parse_str(const struct conf_key *k, const char *label, const char *value,
	  union conf_val *v, char *msg, size_t msglen)
{
	if (*value == '\0' && !(k->flags & CF_EMPTY_OK)) {
		conf_err(msg, msglen, "%s.%s must not be empty", label, k->key);
		return -EINVAL;
	}
	if (strlen(value) >= k->size) {
		conf_err(msg, msglen, "%s.%s is too long (at most %zu characters)",
			 label, k->key, k->size - 1);
		return -EINVAL;
	}
	if ((k->flags & CF_NAME) && !is_name(value)) {
		conf_err(msg, msglen,
			 "%s.%s = '%s': only letters, digits, '_' and '-' are allowed",
			 label, k->key, value);
		return -EINVAL;
	}
	v->s = value;
	return 0;
}

static int
parse_choice(const struct conf_key *k, const char *label, const char *value,
	     union conf_val *v, char *msg, size_t msglen)
{
	char list[128];
	size_t used = 0;
	unsigned int i;

	for (i = 0; k->choices[i] != NULL; i++) {
		if (strcmp(value, k->choices[i]) == 0) {
			if (k->type == CT_POLL_MODE)
				v->idx = i;
			else if (k->type == CT_ENUM)
				v->u = i;
			else
				v->s = k->choices[i];
			return 0;
		}
	}
	list[0] = '\0';
	for (i = 0; k->choices[i] != NULL && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%s", i ? ", " : "", k->choices[i]);
	conf_err(msg, msglen, "%s.%s = '%s': expected one of %s",
		 label, k->key, value, list);
	return -EINVAL;
}

static int
parse_num(const struct conf_key *k, const char *label, const char *value,
	  union conf_val *v, char *msg, size_t msglen)
{
	int rc;

	rc = parse_uint(value, k->flags & CF_SIZE, &v->u);
	if (rc == -EINVAL) {
		conf_err(msg, msglen, "%s.%s = '%s': not a %s",
			 label, k->key, value,
			 k->flags & CF_SIZE ?
			 "size (decimal, optional K, M or G suffix)" :
			 "decimal number");
		return -EINVAL;
	}
	if (rc == 0 && v->u == 0 && (k->flags & CF_ZERO_OK))
		return 0;
	if (rc < 0 || v->u < k->min || v->u > k->max) {
		conf_err(msg, msglen,
			 "%s.%s = '%s' is out of range [%s%" PRIu64 ", %" PRIu64 "]",
			 label, k->key, value,
			 k->flags & CF_ZERO_OK ? "0 or " : "", k->min, k->max);
		return -EINVAL;
	}
	return 0;
}

/*
 * A probability, as a decimal fraction in [0, 1] ("0.05", "1", "0") or a
 * percentage in [0, 100] ("5%", "2.5%"), into parts per million.  Digits
 * only (no sign, exponent or blank), like parse_uint().  Precision is
 * 1 ppm: 6 decimals for a fraction, 4 for a percentage; further digits
 * must be zeros, so that the value stored is exactly the value written.
 * Returns -EINVAL for malformed text, -ERANGE above 1 (100%), -EDOM for a
 * value finer than 1 ppm.
 */
static int
parse_ppm(const char *s, uint64_t *out)
{
	uint64_t ip = 0, frac = 0;
	unsigned int ndec = 0, places;
	bool finer = false, pct;
	const char *p = s, *dec = NULL;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		if (ip <= 1000)	/* saturate: anything above is out of range */
			ip = ip * 10 + (uint64_t)(*p - '0');
	if (*p == '.') {
		dec = ++p;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	pct = *p == '%';
	if (pct)
		p++;
	if (*p != '\0')
		return -EINVAL;
	places = pct ? 4 : 6;	/* 1 ppm = 0.0001% = 0.000001 */
	for (; dec != NULL && isdigit((unsigned char)*dec); dec++) {
		if (ndec < places) {
			frac = frac * 10 + (uint64_t)(*dec - '0');
			ndec++;
		} else if (*dec != '0') {
			finer = true;
		}
	}
	for (; ndec < places; ndec++)
		frac *= 10;
	/* percent: ip * 10^4 + frac is already ppm; fraction: ip * 10^6 + frac */
	*out = ip * (pct ? 10000 : PPM_ONE) + frac;
	/* a value above 1 by less than 1 ppm is still above 1 */
	if (*out > PPM_ONE || (finer && *out == PPM_ONE))
		return -ERANGE;
	if (finer)
		return -EDOM;
	return 0;
}

static int
parse_prob(const struct conf_key *k, const char *label, const char *value,
	   union conf_val *v, char *msg, size_t msglen)
{
	switch (parse_ppm(value, &v->u)) {
	case 0:
		return 0;
	case -ERANGE:
		conf_err(msg, msglen,
			 "%s.%s = '%s' is out of range [0, 1] (or [0%%, 100%%])",
			 label, k->key, value);
		return -EINVAL;
	case -EDOM:
		conf_err(msg, msglen,
			 "%s.%s = '%s' is finer than 1 ppm (0.000001, 0.0001%%)",
			 label, k->key, value);
		return -EINVAL;
	default:
		conf_err(msg, msglen,
			 "%s.%s = '%s': not a probability (a fraction like 0.05 or a percentage like 5%%)",
			 label, k->key, value);
		return -EINVAL;
	}
}

static int
parse_mac_value(const struct conf_key *k, const char *label,
		const char *value, union conf_val *v, char *msg, size_t msglen)
{
	if (*value == '\0') {
		memset(v->mac, 0, sizeof(v->mac));
		return 0;
	}
	if (via_parse_mac(value, v->mac) < 0) {
		conf_err(msg, msglen,
			 "%s.%s = '%s': expected a MAC address like 02:00:00:00:00:01",
			 label, k->key, value);
		return -EINVAL;
	}
	/* A port's own address must be unicast; all-zero means "unset". */
	if (!via_mac_is_unicast(v->mac)) {
		conf_err(msg, msglen, "%s.%s = '%s' is not a unicast address",
			 label, k->key, value);
		return -EINVAL;
	}
	return 0;
}

/*
 * Validate @value for key @k into @v without storing it; @label names the
 * section in messages ("viad", "port via1").
 */
static int
parse_value(const struct conf_key *k, const char *label, const char *value,
	    union conf_val *v, char *msg, size_t msglen)
{
	int rc = -EINVAL;

	switch (k->type) {
	case CT_STR:
		rc = parse_str(k, label, value, v, msg, msglen);
		break;
	case CT_CHOICE:
	case CT_POLL_MODE:
	case CT_ENUM:
		rc = parse_choice(k, label, value, v, msg, msglen);
		break;
	case CT_PPM:
		rc = parse_prob(k, label, value, v, msg, msglen);
		break;
	case CT_UINT:
		rc = parse_num(k, label, value, v, msg, msglen);
		break;
	case CT_MAC:
		rc = parse_mac_value(k, label, value, v, msg, msglen);
		break;
	}
	return rc;
}

/*
 * Find key @key of section @sect and validate @value for it; @label names
 * the section in messages ("viad", "port via1").
 */
static int
lookup_value(enum conf_section sect, const char *label, const char *key,
	     const char *value, const struct conf_key **k, union conf_val *v,
	     char *msg, size_t msglen)
{
	*k = find_key(sect, key);
	if (*k == NULL) {
		conf_err(msg, msglen, "unknown key '%s' in section [%s]",
			 key, label);
		return -EINVAL;
	}
	return parse_value(*k, label, value, v, msg, msglen);
}

static void
store_value(const struct conf_key *k, void *base, const union conf_val *v)
{
	char *p = (char *)base + k->offset;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;

	switch (k->type) {
	case CT_STR:
	case CT_CHOICE:
		/* Length was checked against k->size by parse_value(). */
		memcpy(p, v->s, strlen(v->s) + 1);
		break;
	case CT_POLL_MODE:
		*(enum via_poll_mode *)(void *)p = (enum via_poll_mode)v->idx;
		break;
	case CT_UINT:
	case CT_PPM:
	case CT_ENUM:
		/* Range was checked by parse_value(), so narrowing is exact. */
		if (k->size == sizeof(u8)) {
			u8 = (uint8_t)v->u;
			memcpy(p, &u8, sizeof(u8));
		} else if (k->size == sizeof(u16)) {
			u16 = (uint16_t)v->u;
			memcpy(p, &u16, sizeof(u16));
		} else if (k->size == sizeof(u32)) {
			u32 = (uint32_t)v->u;
			memcpy(p, &u32, sizeof(u32));
		} else {
			memcpy(p, &v->u, sizeof(v->u));
		}
		break;
	case CT_MAC:
		if (via_mac_is_unicast(v->mac))
			snprintf(p, k->size, "%02x:%02x:%02x:%02x:%02x:%02x",
				 v->mac[0], v->mac[1], v->mac[2],
				 v->mac[3], v->mac[4], v->mac[5]);
		else
			p[0] = '\0';
		break;
	}
}

/*
 * Split "viad", "port", "port via1" or "port.via1".  *name is NULL when
 * no name is given.  Returns -EINVAL for an unknown section.
 */
static int
parse_section(const char *s, enum conf_section *sect, const char **name)
{
	size_t len = strcspn(s, " \t.");
	unsigned int i;

	for (i = 0; i < sizeof(section_names) / sizeof(section_names[0]); i++)
		if (strlen(section_names[i]) == len &&
		    strncmp(s, section_names[i], len) == 0)
			break;
	if (i == sizeof(section_names) / sizeof(section_names[0]))
		return -EINVAL;
	*sect = (enum conf_section)i;
	s += len;
	if (*s == '.')
		s++;
	else
		s += strspn(s, " \t");
	*name = *s != '\0' ? s : NULL;
	return 0;
}

/*
 * Port names are "via" and a decimal number without leading zeros, so
 * that "via01" cannot pose as a second spelling of "via1".
 */
static bool
is_port_name(const char *s)
{
	size_t digits;

	if (strncmp(s, "via", 3) != 0)
		return false;
	s += 3;
	digits = strspn(s, "0123456789");
	return digits > 0 && digits <= 5 && s[digits] == '\0' &&
	       (s[0] != '0' || digits == 1);
}

static int
find_port(const struct via_conf *c, const char *name)
{
	unsigned int i;

	for (i = 0; i < c->nb_ports; i++)
		if (strcmp(c->ports[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

/*
 * Append a port with default settings.  A NULL @name means an unnamed
 * [port] section: it is called via<N>, N being its position among ports.
 * Returns the new port's index or -EINVAL.
 */
static int
add_port(struct via_conf *c, const char *name, char *msg, size_t msglen)
{
	struct via_port_conf *p;
	char auto_name[sizeof(p->name)];

	if (c->nb_ports >= VIA_CONF_MAX_PORTS) {
		conf_err(msg, msglen, "too many ports (at most %d)",
			 VIA_CONF_MAX_PORTS);
		return -EINVAL;
	}
	if (name == NULL) {
		snprintf(auto_name, sizeof(auto_name), "via%u", c->nb_ports);
		if (find_port(c, auto_name) >= 0) {
			conf_err(msg, msglen,
				 "this unnamed port would be '%s' (its position), which is already used: name it explicitly",
				 auto_name);
			return -EINVAL;
		}
		name = auto_name;
	} else {
		if (!is_port_name(name)) {
			conf_err(msg, msglen,
				 "invalid port name '%s': expected via0, via1, ...",
				 name);
			return -EINVAL;
		}
		if (find_port(c, name) >= 0) {
			conf_err(msg, msglen, "duplicate port name '%s'", name);
			return -EINVAL;
		}
	}
	p = &c->ports[c->nb_ports];
	*p = port_defaults;
	/* is_port_name() and the "via%u" format both fit in p->name. */
	snprintf(p->name, sizeof(p->name), "%s", name);
	return (int)c->nb_ports++;
}

static int
check_port(const struct via_port_conf *p, char *msg, size_t msglen)
{
	static const struct {
		const char *key;
		size_t offset;
	} probs[] = {
#define PROB(f) { #f, offsetof(struct via_port_conf, f) }
		PROB(rx_drop), PROB(rx_dup), PROB(rx_reorder),
		PROB(rx_corrupt), PROB(rx_delay),
		PROB(tx_drop), PROB(tx_dup), PROB(tx_reorder),
		PROB(tx_corrupt), PROB(tx_delay),
#undef PROB
	};
	bool faulty = strcmp(p->glue, "faulty") == 0;
	uint32_t ppm;
	size_t i;

	/* The ethdev glue has nothing to probe without devargs. */
	if (strcmp(p->glue, "ethdev") == 0 && p->devargs[0] == '\0') {
		conf_err(msg, msglen, "port %s: glue 'ethdev' requires devargs",
			 p->name);
		return -EINVAL;
	}
	if (faulty && strcmp(p->inner, "ethdev") == 0 && p->devargs[0] == '\0') {
		conf_err(msg, msglen,
			 "port %s: glue 'faulty' with inner 'ethdev' requires devargs",
			 p->name);
		return -EINVAL;
	}
	/* The exception path is the ethdev glue's; a kernel interface name is
	 * what the kernel takes (IFNAMSIZ, no '/', ':' or white space). */
	if (p->ip_interface[0] != '\0' && strcmp(p->glue, "ethdev") != 0) {
		conf_err(msg, msglen, "port %s: ip_interface needs glue 'ethdev'", p->name);
		return -EINVAL;
	}
	if (strcmp(p->ip_interface, ".") == 0 || strcmp(p->ip_interface, "..") == 0 ||
	    strpbrk(p->ip_interface, "/: \t") != NULL) {
		conf_err(msg, msglen, "port %s: '%s' is not an interface name", p->name,
			 p->ip_interface);
		return -EINVAL;
	}
	/* A fault injector around a fault injector only obscures the seed. */
	if (faulty && strcmp(p->inner, "faulty") == 0) {
		conf_err(msg, msglen, "port %s: inner 'faulty' cannot wrap itself",
			 p->name);
		return -EINVAL;
	}
	/* Other glues ignore faults: a probability set there is a mistake
	 * that would otherwise go unnoticed until a test "passes". */
	for (i = 0; !faulty && i < sizeof(probs) / sizeof(probs[0]); i++) {
		memcpy(&ppm, (const char *)p + probs[i].offset, sizeof(ppm));
		if (ppm != 0) {
			conf_err(msg, msglen,
				 "port %s: %s needs glue 'faulty' (glue is '%s')",
				 p->name, probs[i].key, p->glue);
			return -EINVAL;
		}
	}
	return 0;
}

int
via_conf_check(const struct via_conf *c, char *err, size_t errlen)
{
	unsigned int i, j;
	int rc;

	if (c == NULL) {
		conf_err(err, errlen, "invalid argument");
		return -EINVAL;
	}
	if (c->nb_ports > VIA_CONF_MAX_PORTS) {
		conf_err(err, errlen, "too many ports (%u, at most %d)",
			 c->nb_ports, VIA_CONF_MAX_PORTS);
		return -EINVAL;
	}
	if (c->rel_rto_min_us > c->rel_rto_max_us) {
		conf_err(err, errlen, "rel_rto_min_us (%u) exceeds rel_rto_max_us (%u)",
			 c->rel_rto_min_us, c->rel_rto_max_us);
		return -EINVAL;
	}
	for (i = 0; i < c->nb_ports; i++) {
		rc = check_port(&c->ports[i], err, errlen);
		if (rc < 0)
			return rc;
		for (j = 0; j < i; j++) {
			if (strcmp(c->ports[i].name, c->ports[j].name) == 0) {
				conf_err(err, errlen, "duplicate port name '%s'",
					 c->ports[i].name);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int
via_conf_set(struct via_conf *c, const char *section, const char *key,
	     const char *value, char *err, size_t errlen)
{
	const struct conf_key *k;
	enum conf_section sect;
	union conf_val v;
	const char *name;
	char label[64];
	void *base;
	int idx, rc;

	if (c == NULL || section == NULL || key == NULL || value == NULL) {
		conf_err(err, errlen, "invalid argument");
		return -EINVAL;
	}
	if (parse_section(section, &sect, &name) < 0) {
		conf_err(err, errlen, "unknown section [%s]", section);
		return -EINVAL;
	}
	if (sect == SECT_PORT && name == NULL) {
		conf_err(err, errlen,
			 "section 'port' needs a port name, e.g. 'port.via0'");
		return -EINVAL;
	}
	if (sect != SECT_PORT && name != NULL) {
		conf_err(err, errlen, "section [%s] takes no name",
			 section_names[sect]);
		return -EINVAL;
	}
	snprintf(label, sizeof(label), "%s%s%s", section_names[sect],
		 name ? " " : "", name ? name : "");
	/* Validate before creating a port, so that errors change nothing. */
	rc = lookup_value(sect, label, key, value, &k, &v, err, errlen);
	if (rc < 0)
		return rc;
	if (sect == SECT_PORT) {
		idx = find_port(c, name);
		if (idx < 0)
			idx = add_port(c, name, err, errlen);
		if (idx < 0)
			return idx;
		base = &c->ports[idx];
	} else {
		base = c;
	}
	store_value(k, base, &v);
	return 0;
}

static char *
trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

/* Loader state carried from line to line. */
struct conf_parser {
	struct via_conf *c;
	enum conf_section sect;
	int port;			/* index of the current [port], or -1 */
	unsigned int port_line;		/* its header line */
	unsigned int lineno;		/* line being parsed */
	unsigned int err_line;		/* line an error is reported on */
};

/*
 * A port's cross-key constraints can only be checked once its section
 * ends, at the next header or at end of file; errors then point at the
 * port's header rather than at the line that ended it.
 */
static int
close_port(struct conf_parser *ps, char *msg, size_t msglen)
{
	int rc;

	if (ps->port < 0)
		return 0;
	rc = check_port(&ps->c->ports[ps->port], msg, msglen);
	if (rc < 0)
		ps->err_line = ps->port_line;
	ps->port = -1;
	return rc;
}

/* Handle "[...]"; @s is the trimmed text between the brackets. */
static int
parse_header(struct conf_parser *ps, char *s, char *msg, size_t msglen)
{
	enum conf_section sect;
	const char *name;
	int idx, rc;

	rc = close_port(ps, msg, msglen);
	if (rc < 0)
		return rc;
	if (parse_section(s, &sect, &name) < 0) {
		conf_err(msg, msglen, "unknown section [%s]", s);
		return -EINVAL;
	}
	if (sect != SECT_PORT) {
		if (name != NULL) {
			conf_err(msg, msglen, "section [%s] takes no name",
				 section_names[sect]);
			return -EINVAL;
		}
		ps->sect = sect;
		return 0;
	}
	idx = add_port(ps->c, name, msg, msglen);
	if (idx < 0)
		return idx;
	ps->sect = SECT_PORT;
	ps->port = idx;
	ps->port_line = ps->lineno;
	return 0;
}

/* Handle one line, without its trailing newline. */
static int
parse_line(struct conf_parser *ps, char *line, char *msg, size_t msglen)
{
	const struct conf_key *k;
	char *key, *value, *eq;
	union conf_val v;
	size_t len;
	char label[64];
	int rc;

	line = trim(line);
	if (*line == '\0' || *line == '#' || *line == ';')
		return 0;

	if (*line == '[') {
		len = strlen(line);
		if (line[len - 1] != ']') {
			conf_err(msg, msglen, "section header lacks ']'");
			return -EINVAL;
		}
		line[len - 1] = '\0';
		return parse_header(ps, trim(line + 1), msg, msglen);
	}

	eq = strchr(line, '=');
	if (eq == NULL) {
		conf_err(msg, msglen, "expected '[section]' or 'key = value'");
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (*key == '\0') {
		conf_err(msg, msglen, "missing key before '='");
		return -EINVAL;
	}
	if (*value == '"') {
		len = strlen(value);
		if (len < 2 || value[len - 1] != '"') {
			conf_err(msg, msglen, "unterminated quoted value");
			return -EINVAL;
		}
		value[len - 1] = '\0';
		value++;
	}
	if (ps->sect == SECT_NONE) {
		conf_err(msg, msglen, "key '%s' outside of any section", key);
		return -EINVAL;
	}

	if (ps->sect == SECT_PORT)
		snprintf(label, sizeof(label), "port %s",
			 ps->c->ports[ps->port].name);
	else
		snprintf(label, sizeof(label), "%s", section_names[ps->sect]);
	rc = lookup_value(ps->sect, label, key, value, &k, &v, msg, msglen);
	if (rc < 0)
		return rc;
	store_value(k, ps->sect == SECT_PORT ?
		    (void *)&ps->c->ports[ps->port] : (void *)ps->c, &v);
	return 0;
}

int
via_conf_load(struct via_conf *c, const char *path, char *err, size_t errlen)
{
	struct conf_parser ps = { .sect = SECT_NONE, .port = -1 };
	struct via_conf *work;
	char msg[512];
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int rc = 0;

	if (c == NULL || path == NULL) {
		conf_err(err, errlen, "invalid argument");
		return -EINVAL;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		rc = -errno;
		conf_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* Parse into a copy so that a bad file leaves *c untouched. */
	work = malloc(sizeof(*work));
	if (work == NULL) {
		fclose(f);
		conf_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	*work = *c;
	ps.c = work;

	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			/* getline() reports EOF and errors alike. */
			if (ferror(f) || errno == ENOMEM) {
				rc = errno ? -errno : -EIO;
				conf_err(err, errlen, "%s: %s", path,
					 strerror(-rc));
				goto out;
			}
			break;
		}
		ps.err_line = ++ps.lineno;
		rc = parse_line(&ps, line, msg, sizeof(msg));
		if (rc < 0)
			goto parse_error;
	}
	rc = close_port(&ps, msg, sizeof(msg));
	if (rc < 0)
		goto parse_error;
	*c = *work;
	goto out;

parse_error:
	conf_err(err, errlen, "%s:%u: %s", path, ps.err_line, msg);
out:
	free(line);
	free(work);
	fclose(f);
	return rc;
}
