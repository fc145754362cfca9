/*
 * viad configuration: defaults, INI file loader and key=value overrides.
 *
 * File syntax:
 *
 *	# comment            ; comment
 *	[viad]               global daemon settings
 *	[limits]             resource limits reported by VipQueryNic
 *	[port]               a port named "via<N>", N = its position among ports
 *	[port via3]          a port with an explicit name
 *	key = value          whitespace around key and value is trimmed;
 *	key = "value"        quotes keep leading/trailing blanks; no escapes
 *
 * Comments are whole lines only: '#' and ';' inside a value are literal,
 * because devargs and paths may legitimately contain them.
 *
 * This module depends on libc only so that it can be unit tested without
 * DPDK; it performs no I/O besides reading the configuration file.
 */
#ifndef VIAD_CONF_H
#define VIAD_CONF_H

#include <stddef.h>
#include <stdint.h>

/** Maximum number of [port] sections. */
#define VIA_CONF_MAX_PORTS 16
#define VIA_CONF_MAX_POLL_LCORES 32   /**< = VIA_MAX_SHARDS (viad.h) */

/** How the datapath lcore waits for work. */
enum via_poll_mode {
	VIA_POLL_BUSY,		/**< spin forever: lowest latency, one full core */
	VIA_POLL_BACKOFF,	/**< spin idle_spin_us, then sleep idle_sleep_us */
	VIA_POLL_ADAPTIVE,	/**< spin idle_spin_us, then sleep until a client
				 *   posts (NEED_WAKEUP) or adaptive_timeout_us */
};

/**
 * Where the faulty glue flips bits (via_port_conf::corrupt_where); the
 * values are those of enum via_fault_where in pmd_glue/via_fault.h, which
 * this libc-only header cannot include.
 */
enum via_corrupt_where {
	VIA_CORRUPT_ANY = 0,		/**< "any": anywhere after the Ethernet header */
	VIA_CORRUPT_HEADER = 1,		/**< "header": the 48-byte VIA header */
	VIA_CORRUPT_PAYLOAD = 2,	/**< "payload": after the VIA header */
};

/** One [port] section. */
struct via_port_conf {
	char name[32];		/**< "via<N>"; explicit names match via[0-9]+ */
	char glue[32];		/**< glue module: "loopback" (default), "ethdev",
				 *   "faulty", or a plugin of glue_dir */
	char devargs[256];	/**< DPDK devargs; required by the ethdev glue
				 *   (and by faulty over ethdev, which forwards
				 *   them to its inner port) */
	uint16_t mtu;		/**< 0 = the port's default */
	uint16_t rx_queues;	/**< default 1 */
	uint16_t tx_queues;	/**< default 1 */
	uint16_t rx_desc;	/**< default 1024 */
	uint16_t tx_desc;	/**< default 1024 */
	char mac[18];		/**< "02:00:00:00:00:01" override; "" = port's own */

	/* glue "faulty" only: fault injection around an inner port.
	 * Probabilities are parts per million, [0, 1000000]; written in the
	 * file as a fraction (0.05) or a percentage (5%). */
	char inner[32];		/**< glue of the wrapped port, default "loopback" */
	uint32_t rx_drop;	/**< received frames dropped */
	uint32_t rx_dup;	/**< received frames duplicated */
	uint32_t rx_reorder;	/**< received frames swapped with the next */
	uint32_t rx_corrupt;	/**< received frames with bits flipped */
	uint32_t rx_delay;	/**< received frames held delay_us */
	uint32_t tx_drop;	/**< same, for transmitted frames */
	uint32_t tx_dup;
	uint32_t tx_reorder;
	uint32_t tx_corrupt;
	uint32_t tx_delay;
	uint32_t delay_us;	/**< how long a delayed frame is held, default
				 *   100, [0, 1000000] */
	uint16_t corrupt_bits;	/**< bits flipped per corrupted frame, default
				 *   1, [1, 64] */
	uint8_t corrupt_where;	/**< enum via_corrupt_where, default any */
	uint64_t seed;		/**< PRNG seed, default 1: same seed and same
				 *   frames = same faults */

	/* IP beside VIA on the port (docs/design.md, "VIA and IP on one port") */
	uint8_t xdp_filter;	/**< net_af_xdp: 1 (default) = viad's XDP program
				 *   (viad.xdp_prog) takes only VIA frames, the
				 *   kernel keeps the rest; 0 = the PMD's, which
				 *   takes every frame */
	char ip_interface[16];	/**< ethdev ports the kernel cannot see (memif,
				 *   PCI): a kernel interface (TAP) of this name
				 *   carries the frames that are not VIA's;
				 *   "" = none (they are dropped) */
};

/** Whole daemon configuration. */
struct via_conf {
	/* [viad] */
	char instance[32];	/**< DPDK file prefix, lets several viads share a host */
	char socket_path[108];	/**< control socket (fits sockaddr_un.sun_path) */
	char socket_group[64];	/**< group that may connect (mode 0660): a name or a gid */
	char allowed_uids[256];	/**< if set, only these uids (and root) connect: "1000,1001" */
	char allowed_gids[256];	/**< if set, also members of these groups: "100,vipl" */
	char hosts_path[256];	/**< name-service hosts file; "" = none */
	char glue_dir[256];	/**< glue plugins: via_glue_NAME.so for a port's
				 *   glue NAME that is not built in */
	char xdp_prog[256];	/**< XDP object of the af_xdp ports with
				 *   xdp_filter (built as bpf/via_xdp.o) */
	char log_level[16];	/**< "error" | "warning" | "info" | "debug" */
	enum via_poll_mode poll_mode;
	uint32_t poll_lcores;	/**< poll lcores viad starts when given no EAL arguments */
	uint32_t idle_spin_us;	/**< backoff: spin this long before sleeping */
	uint32_t idle_sleep_us;	/**< backoff: sleep per idle iteration */
	uint32_t adaptive_timeout_us;	/**< adaptive: longest sleep (port frames wait) */
	uint32_t rel_rto_min_us;	/**< reliable levels: first retransmission timeout */
	uint32_t rel_rto_max_us;	/**< ... doubling up to this */
	uint32_t rel_max_retries;	/**< expiries in a row that break a connection */
	uint32_t rel_keepalive_ms;	/**< silence after which an idle peer is probed */
	/** a connection breaks for its peer's silence only after this much of
	 *  it, however fast its retries ran out: a peer viad's planned
	 *  upgrade (a blackout) breaks nothing */
	uint32_t rel_silence_ms;
	/** a port's link down this long breaks its connections; a shorter
	 *  outage (a peer viad upgrading, memif) breaks none */
	uint32_t link_down_grace_ms;
	/** 1: viad can be upgraded under its clients (viactl upgrade): what it
	 *  needs to start stays in its permitted set after the drop, for the
	 *  exec (runtime.c, docs/design.md section 18.6); 0: refused */
	uint8_t upgrades;
	uint32_t cm_nomatch_grace_ms;	/**< a request nobody waits for fails after this */
	/** a request no viad answers, and an accept its requester does not
	 *  confirm, fail after this (VIA §4.1: "not reachable") */
	uint32_t cm_unreachable_ms;

	/* [limits] */
	uint32_t max_sessions;
	uint32_t max_vi;
	uint32_t max_cq;
	uint32_t max_cq_entries;
	uint32_t max_desc_per_queue;
	uint32_t max_segments_per_desc;
	uint32_t max_transfer_size;
	uint32_t max_ptags;
	uint32_t max_regions;
	uint64_t max_register_bytes;
	uint64_t session_shm_bytes;	/**< each client's shared segment */
	uint64_t max_alloc_bytes;	/**< per-session VipDpdkAllocMem cap */
	uint64_t max_in_place_bytes;	/**< per-session cap on ordinary memory mapped in place */
	uint32_t table_regions;		/**< entries of a session's client table; 0: none */
	/** viad's mappings of client memory, all users together; 0: half of
	 *  what vm.max_map_count leaves viad at start (daemon/user.c) */
	uint64_t max_mappings;
	uint32_t max_discriminator_len;
	/* per user (uid): a limit left 0 is the fair share of the global one,
	 * the global one divided by user_share (daemon/user.c) */
	uint32_t user_share;
	uint32_t user_max_sessions;
	uint32_t user_max_vi;
	uint32_t user_max_cq;
	uint32_t user_max_ptags;
	uint32_t user_max_regions;
	uint64_t user_max_register_bytes;
	uint64_t user_max_in_place_bytes;	/**< client memory viad maps (in place) */
	uint64_t user_max_alloc_bytes;		/**< provider memory (VipDpdkAllocMem) */
	uint32_t user_max_requests;	/**< control requests awaiting a deferred reply */
	/* per user, shares of the host by default (0): max_mappings, the
	 * hugepage pool, MemTotal, each / user_share */
	uint64_t user_max_mappings;	/**< viad's mappings of its memory */
	uint64_t user_max_hugepage_bytes; /**< its segments and allocations on hugepages */
	uint64_t user_max_memory_bytes;	/**< memory viad creates for it */
	uint8_t root_exempt;		/**< 1: the per-user limits spare root */

	/* [port] sections, in file order */
	unsigned int nb_ports;
	struct via_port_conf ports[VIA_CONF_MAX_PORTS];
};

/**
 * Fill @p c with the built-in defaults.
 *
 * No port is configured: when the configuration ends up with no port the
 * daemon adds an implicit loopback "via0" itself, so that an empty file
 * still yields a usable daemon.
 *
 * @param c  configuration to initialise.
 */
void via_conf_defaults(struct via_conf *c);

/**
 * Parse the configuration file @p path on top of @p c.
 *
 * @p c is expected to hold defaults (via_conf_defaults()) or an earlier
 * configuration; keys present in the file override it and [port] sections
 * are appended.  Parsing works on a copy, so @p c is only modified when the
 * whole file is valid.  Each [port] section is checked with the rules of
 * via_conf_check() when it ends, so that errors name its header line.
 *
 * @param c       configuration to update.
 * @param path    file to read.
 * @param err     buffer receiving a human readable message ("file:line: ...")
 *                on error; may be NULL.
 * @param errlen  size of @p err.
 * @return 0 on success, or
 *   - -EINVAL: NULL @p c or @p path; syntax error; a key outside any
 *              section; unknown section or key; malformed number, name,
 *              probability or MAC; value too long or out of range; a port
 *              name that is invalid or already used; more than
 *              VIA_CONF_MAX_PORTS ports; a port section that fails
 *              via_conf_check()'s per-port rules.
 *   - -ENOENT: @p path does not exist (the caller decides whether that is
 *              acceptable).
 *   - -ENOMEM: out of memory while reading a line.
 *   - other -errno from fopen() or reading (e.g. -EACCES, -EIO).
 */
int via_conf_load(struct via_conf *c, const char *path, char *err,
		  size_t errlen);

/**
 * Set one key: the single place that knows every key, its type and range.
 *
 * Used by the file loader and by command-line overrides such as
 * "--set viad.socket=/x" or "--set port.via1.mtu=9000".  A port section
 * names its port as "port NAME" or "port.NAME"; a port that does not exist
 * yet is appended with default settings, so a port can be defined entirely
 * from the command line.  On error @p c is unchanged.  Constraints that
 * span several keys are not checked here because overrides arrive one key
 * at a time: call via_conf_check() once all of them are applied.
 *
 * @param c        configuration to update.
 * @param section  "viad", "limits", "port NAME" or "port.NAME".
 * @param key      key within the section.
 * @param value    textual value, already unquoted.
 * @param err      buffer for a human readable message on error; may be NULL.
 * @param errlen   size of @p err.
 * @return 0 on success, or
 *   - -EINVAL: a NULL argument; unknown section or key; "port" without a
 *              name; invalid port name; malformed value; value out of range;
 *              creating the port would exceed VIA_CONF_MAX_PORTS.
 */
int via_conf_set(struct via_conf *c, const char *section, const char *key,
		 const char *value, char *err, size_t errlen);

/**
 * Check constraints that involve several keys.
 *
 * via_conf_load() calls it; callers applying via_conf_set() overrides call
 * it again afterwards.
 *
 * @param c       configuration to check.
 * @param err     buffer for a human readable message on error; may be NULL.
 * @param errlen  size of @p err.
 * @return 0 when consistent, or
 *   - -EINVAL: NULL @p c; a port uses glue "ethdev", or glue "faulty" with
 *              inner "ethdev", without devargs; a faulty port's inner glue
 *              is "faulty"; a port that is not faulty has a non-zero fault
 *              probability (it would be silently ignored); two ports share
 *              a name; nb_ports exceeds VIA_CONF_MAX_PORTS.
 */
int via_conf_check(const struct via_conf *c, char *err, size_t errlen);

#endif /* VIAD_CONF_H */
