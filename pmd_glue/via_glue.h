/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file via_glue.h
 * @brief PMD glue: adapts DPDK ports (or software devices) to the VIA
 *        transport through per-module override tables.
 *
 * Model (rdmavt / libfabric style): every glue module is described by a
 * struct via_glue_module whose @c ops table contains only the slots the
 * module overrides (NULL = "use the default").  via_glue_register() merges
 * the module's slots over the default table into a *resolved* table that has
 * no NULL slot, so the data path is always exactly one indirect call.
 *
 * The default slots drive a DPDK ethdev: they call the rte_eth_* function of
 * the same name on @c port->port_id.  A module that does not drive an ethdev
 * (port_id stays VIA_PORT_ID_NONE) must override the data-path slots
 * (rx_burst, tx_burst) and normally also the control slots; via_port_open()
 * refuses such a port if a data-path slot is still the ethdev default.
 *
 * Error convention: functions returning int return 0 (or a non-negative
 * value where documented) on success and a negative errno value on failure.
 *
 * ABI: a module is built against one version of this header and states it
 * in via_glue_module::abi_version (VIA_GLUE_ABI_VERSION).  The structs of
 * this header and the slots' contracts are the glue ABI; viad refuses a
 * module of another version (-EPROTO) instead of calling into it.
 *
 * Threading:
 *  - via_glue_register() / via_glue_lookup() are thread safe (internal lock)
 *    and may be called from constructors (before rte_eal_init()).
 *  - via_glue_load() is serialised by the caller (viad's control thread),
 *    like via_port_open(): two loads of one plugin at once would race.
 *  - via_port_open(), via_port_close(), via_port_start(), via_port_stop()
 *    and the other control functions need an initialised EAL and must be
 *    serialised by the caller (the daemon's control thread).  They are
 *    re-entrant in the sense that a module's probe may itself call
 *    via_port_open() to open an inner port (wrapper modules).
 *  - The burst functions follow DPDK's rules: a given queue of a given port
 *    is used by at most one thread at a time; different queues may be used
 *    concurrently.  Bursting on a port that is being stopped/closed is the
 *    caller's bug (same as for rte_eth_rx_burst()).
 *
 * Built-in modules (see glue_ethdev.c / glue_loopback.c for details):
 *  - "ethdev": any DPDK port from conf->devargs (vdev or PCI).  Requires
 *    devargs and mp.  Adopts a port already attached (EAL -a/--vdev),
 *    otherwise hot-plugs it; close detaches it.  probe errors: -EINVAL
 *    (devargs/mp missing, bad MAC, too many queues, MTU out of range),
 *    -EBUSY (port already open), -ENODEV, rte_dev_probe() errors (e.g.
 *    -EFAULT/-EINVAL/-ENODEV/-EPERM for bad devargs), ethdev
 *    configure/queue-setup/MTU/MAC/promiscuous errors, and the exception
 *    interface's (conf->ip_interface: -EEXIST, -EINVAL, net_tap's).
 *  - "loopback": software port, tx re-enters rx of the same port; MAC
 *    02:00:00:00:00:<index>, MTU 9000, link up at 100 Gbps.  mp optional
 *    (used to copy shared mbufs).  probe errors: -EINVAL (> 16 queues, MTU
 *    outside [68, 65517], bad MAC), -ENOSPC (256 loopback ports), -ENOMEM.
 *  - "faulty": fault injector wrapping an inner port of another module
 *    (conf->inner_glue, default "loopback"; conf->devargs is forwarded).
 *    Drops, duplicates, reorders, delays and corrupts frames per direction
 *    as conf->faults says, from a seeded PRNG so that a run can be replayed;
 *    see via_fault.h.  probe errors:
 *    -EINVAL (fault parameters out of range, inner_glue "faulty"), -ENOMEM,
 *    and the inner port's via_port_open() errors (e.g. -ENOENT for an
 *    unknown inner_glue, ethdev errors for bad devargs).
 *
 * Linking: the built-in modules ("ethdev", "loopback", "faulty") register
 * themselves from constructors (VIA_GLUE_MODULE_REGISTER).  When pmd_glue is
 * linked as a static library the linker drops objects nothing refers to, so
 * link it whole (meson: link_whole, ld: -Wl,--whole-archive ...
 * --no-whole-archive).
 *
 * Plugins: any other module is a shared object, via_glue_NAME.so, that
 * exports its module with VIA_GLUE_PLUGIN() and that viad loads from its
 * plugin directory (viad.glue_dir) when a port names glue NAME; see
 * via_glue_load().  A plugin is built against the installed header alone:
 *   cc -shared -fPIC $(pkg-config --cflags via-glue) glue_NAME.c \
 *      $(pkg-config --libs via-glue) -o via_glue_NAME.so
 * Its references to the functions declared here resolve against viad,
 * which exports them; its DPDK references against DPDK's libraries.
 */
#ifndef VIA_GLUE_H
#define VIA_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Version of the glue ABI this header describes: the layout of its structs
 * and the contracts of the slots.  Bumped on any change to either; a module
 * of another version is refused by via_glue_register().
 */
#define VIA_GLUE_ABI_VERSION 2

/** Size of the name buffers (port name, module name), NUL included. */
#define VIA_GLUE_NAME_MAX 32

/** Maximum number of registered glue modules. */
#define VIA_GLUE_MAX_MODULES 16

/** Value of via_port::port_id when the port has no DPDK ethdev behind it. */
#define VIA_PORT_ID_NONE UINT16_MAX

struct via_port;
struct via_fault_conf; /* the fault injector's, in via_fault.h */

/** Port configuration, filled by the daemon from its configuration. */
struct via_glue_port_conf {
	const char *name;      /**< Port name, e.g. "via0"; 1..31 chars. */
	const char *devargs;   /**< ethdev: DPDK devargs; NULL for loopback. */
	uint16_t mtu;          /**< MTU (L3 payload bytes); 0 = module default. */
	uint16_t nb_rxq;       /**< Number of rx queues, >= 1. */
	uint16_t nb_txq;       /**< Number of tx queues, >= 1. */
	uint16_t nb_rxd;       /**< Rx descriptors per queue; 0 = default. */
	uint16_t nb_txd;       /**< Tx descriptors per queue; 0 = default. */
	const struct rte_ether_addr *mac; /**< MAC override; NULL = port's own. */
	struct rte_mempool *mp; /**< Mbuf pool for rx (required by ethdev). */
	int socket_id;         /**< NUMA socket, or SOCKET_ID_ANY. */
	/** faulty: fault parameters; NULL = no fault (transparent).  Other
	 *  modules ignore it. */
	const struct via_fault_conf *faults;
	/** faulty: module of the wrapped port; NULL = "loopback".  Other
	 *  modules ignore it. */
	const char *inner_glue;
	/** ethdev, net_af_xdp devices: XDP object handed to the PMD as
	 *  xdp_prog= (a program and an XSKMAP named "xsks_map"); where it
	 *  cannot load or is "" (none built), the PMD's own program with a
	 *  log line.  NULL = the PMD's own.  Other modules ignore it. */
	const char *xdp_prog;
	/** ethdev: name of a kernel interface (TAP) that carries the frames
	 *  that are not VIA's, both ways (glue_exception.c); NULL = none.
	 *  Other modules ignore it. */
	const char *ip_interface;
};

/**
 * Port capabilities (via_port::caps), set by the module's probe: what viad
 * reads to decide how it uses the port, instead of the module's name.
 */
enum via_port_cap {
	/**
	 * tx_burst takes chained mbufs and reads every segment by virtual
	 * address (a software port that copies), so a frame may point into
	 * memory no device could DMA from (viad's zero-copy transmit).
	 */
	VIA_PORT_CAP_TX_BY_VA = 1u << 0,
	/**
	 * Frames to the port's own MAC cross the port instead of being handed
	 * over in memory by viad, so that its frame path is exercised:
	 * "faulty" (over a loopback inner port, which brings them back) and
	 * test ports that loop.  Without it viad delivers them itself, as a
	 * port that sends them out would not bring them back.
	 */
	VIA_PORT_CAP_SELF_VIA_PORT = 1u << 1,
	/**
	 * The port holds frames back (delayed, reordered) or needs its
	 * transmit side driven: viad calls tx_burst with no frame once per
	 * poll iteration.  Ports without it are not called when idle.
	 */
	VIA_PORT_CAP_TX_KICK = 1u << 2,
	/**
	 * No frame leaves the host: the port brings back what it sends (the
	 * loopback device of M-VIA; viad names it /dev/via_lo).
	 */
	VIA_PORT_CAP_LOOPBACK = 1u << 3,
	/**
	 * The link comes back only when the port is started again: a memif
	 * client connects at start only, so a server that went away (its viad
	 * upgrading, docs/design.md section 18) is not found again by itself.
	 * viad stops and starts it while its link is down.
	 */
	VIA_PORT_CAP_RESTART = 1u << 4,
	/**
	 * The link cannot alter a frame's bytes: memif (two processes' shared
	 * memory on one host) and the loopback device, as against a wire or a
	 * kernel path. viad then leaves the payload CRC off the data frames of
	 * connections whose other end says the same, as a NIC leaves the FCS
	 * to its hardware (docs/wire-format.md section 3). Never on "faulty".
	 */
	VIA_PORT_CAP_INTACT = 1u << 5,
};

/**
 * What a port needs of the mbuf pool it receives into, known before it is
 * opened (the needs slot): viad sizes one pool for all its ports.
 */
struct via_port_needs {
	/** Bytes the device places before a received frame, beyond
	 *  RTE_PKTMBUF_HEADROOM (af_xdp: its XDP headroom). */
	uint16_t headroom;
	/** The MTU the port will have: conf->mtu, or its default when 0. */
	uint16_t mtu;
};

/** Link state. */
struct via_port_link {
	uint32_t speed_mbps;   /**< Speed in Mbps; 0 = unknown. */
	bool up;               /**< Link is up. */
};

/** Port counters (cumulative since probe). */
struct via_port_stats {
	uint64_t rx_packets;
	uint64_t tx_packets;
	uint64_t rx_bytes;
	uint64_t tx_bytes;
	uint64_t rx_errors;
	uint64_t tx_errors;
	uint64_t rx_missed;    /**< Dropped for lack of rx resources
				*   (ethdev: imissed + rx_nombuf). */
	/* ethdev with conf->ip_interface: the frames that are not VIA's,
	 * through the kernel interface (all 0 without one) */
	uint64_t ip_to_kernel;   /**< Received, handed to the kernel. */
	uint64_t ip_from_kernel; /**< Sent by the kernel, transmitted. */
	uint64_t ip_dropped;     /**< Either way, not taken (ring full). */
};

/**
 * Glue operations.  In a struct via_glue_module only the overridden slots
 * are set; in a resolved table (via_glue_lookup(), via_port::ops) every slot
 * is non-NULL.
 */
struct via_glue_ops {
	/* ---- control slots ---- */
	/**
	 * REQUIRED (no default).  Bring the device up to the "configured,
	 * not started" state.  On entry port->name, port->glue, port->ops,
	 * port->priv (zeroed, module's priv_size bytes), port->nb_rxq,
	 * port->nb_txq are set and port->port_id is VIA_PORT_ID_NONE; a module
	 * driving an ethdev sets port->port_id.  On failure probe must undo
	 * everything it did (remove is NOT called) and return -errno.
	 */
	int (*probe)(struct via_port *port, const struct via_glue_port_conf *conf);
	/** Undo probe.  Called once, port stopped.  Default: no-op. */
	void (*remove)(struct via_port *port);
	/** Start the port.  Default: rte_eth_dev_start(). */
	int (*start)(struct via_port *port);
	/** Stop the port.  Default: rte_eth_dev_stop(). */
	void (*stop)(struct via_port *port);
	/** Read the current MAC.  Default: rte_eth_macaddr_get(). */
	int (*mac_addr)(struct via_port *port, struct rte_ether_addr *mac);
	/** Read the current MTU.  Default: rte_eth_dev_get_mtu(). */
	int (*mtu_get)(struct via_port *port, uint16_t *mtu);
	/** Read the link state.  Default: rte_eth_link_get_nowait(). */
	int (*link_get)(struct via_port *port, struct via_port_link *link);
	/** Read the counters.  Default: rte_eth_stats_get(). */
	int (*stats_get)(struct via_port *port, struct via_port_stats *st);
	/**
	 * Before probe, with the configuration probe will get (conf->mp not
	 * set yet): what the port needs of the mbuf pool.  Default: no
	 * headroom, MTU conf->mtu or RTE_ETHER_MTU.
	 */
	int (*needs)(const struct via_glue_port_conf *conf, struct via_port_needs *needs);
	/* ---- data-path slots ---- */
	/** Receive up to n frames.  Default: rte_eth_rx_burst(). */
	uint16_t (*rx_burst)(struct via_port *port, uint16_t q,
			     struct rte_mbuf **pkts, uint16_t n);
	/**
	 * Transmit up to n frames; returns how many of pkts[0..) were consumed
	 * (ownership passed).  Frames not consumed still belong to the caller.
	 * Default: rte_eth_tx_burst().
	 */
	uint16_t (*tx_burst)(struct via_port *port, uint16_t q,
			     struct rte_mbuf **pkts, uint16_t n);
};

/** A glue module (one kind of port). */
struct via_glue_module {
	/**
	 * VIA_GLUE_ABI_VERSION of the header the module was built with.
	 * First, so that it is found at the same place in every version.
	 */
	uint32_t abi_version;
	const char *name;          /**< Unique, 1..31 chars. */
	struct via_glue_ops ops;   /**< Overridden slots only; NULL = default. */
	size_t priv_size;          /**< Per-port private area (zeroed). */
};

/**
 * A VIA port.  Defined here so that the inline burst functions reach @c ops;
 * the daemon should use the accessors, modules may read/write @c port_id
 * (in probe) and @c priv.
 */
struct via_port {
	/* hot: first cache line */
	const struct via_glue_ops *ops; /**< Resolved table of the module. */
	void *priv;                     /**< Module private area (or NULL). */
	uint16_t port_id;               /**< DPDK port or VIA_PORT_ID_NONE. */
	uint16_t nb_rxq;                /**< Configured rx queues. */
	uint16_t nb_txq;                /**< Configured tx queues. */
	uint16_t mtu;                   /**< Cached MTU (after probe). */
	bool started;                   /**< Between start and stop. */
	uint32_t caps;                  /**< enum via_port_cap bits, set by probe. */
	struct rte_ether_addr mac;      /**< Cached MAC (after probe). */
	/* cold */
	char name[VIA_GLUE_NAME_MAX];   /**< Port name. */
	char glue[VIA_GLUE_NAME_MAX];   /**< Module name. */
	int socket_id;                  /**< Socket the port was allocated on. */
} __rte_cache_aligned;

/* ------------------------------------------------------------------------ */
/* Module registry                                                          */
/* ------------------------------------------------------------------------ */

/**
 * Register a glue module: merge @p m->ops over the default table into the
 * module's resolved table.  The module's name is copied; @p m itself need
 * not outlive the call.
 *
 * @param m  Module description.
 * @return 0 on success, or
 *   - -EINVAL: @p m is NULL, its name is NULL or empty, or the required
 *     slot @c probe is NULL;
 *   - -EPROTO: m->abi_version is not VIA_GLUE_ABI_VERSION (nothing else of
 *     @p m is read: its layout may differ);
 *   - -ENAMETOOLONG: name has VIA_GLUE_NAME_MAX chars or more;
 *   - -EEXIST: a module of that name is already registered;
 *   - -ENOSPC: the registry (VIA_GLUE_MAX_MODULES entries) is full.
 */
int via_glue_register(const struct via_glue_module *m);

/**
 * Find the resolved ops table of a registered module.
 *
 * @param name  Module name (NULL allowed).
 * @return the resolved table (every slot non-NULL, valid for the process
 *   lifetime), or NULL if @p name is NULL or not registered (no errno).
 */
const struct via_glue_ops *via_glue_lookup(const char *name);

/**
 * The default ops table (the ethdev-backed defaults).  @c probe is NULL in
 * it (probe has no default); every other slot is set.  Wrapper modules and
 * tests may use it to call or compare against a default.
 *
 * @return the default table; never fails.
 */
const struct via_glue_ops *via_glue_default_ops(void);

/**
 * Register @p mod from a constructor; abort()s with a message on stderr if
 * registration fails (a broken module is a programming error).
 * @p mod is the identifier of a struct via_glue_module object.
 * For modules linked into viad; a plugin uses VIA_GLUE_PLUGIN().
 */
#define VIA_GLUE_MODULE_REGISTER(mod)					\
	RTE_INIT(via_glue_module_register_##mod)			\
	{								\
		int via_rc_ = via_glue_register(&(mod));		\
		if (via_rc_ < 0) {					\
			fprintf(stderr, "via_glue: cannot register "	\
				"module '%s' (%s:%d): %s\n",		\
				(mod).name ? (mod).name : "(null)",	\
				__FILE__, __LINE__, strerror(-via_rc_));\
			abort();					\
		}							\
	}

/* ------------------------------------------------------------------------ */
/* Plugins                                                                  */
/* ------------------------------------------------------------------------ */

/** The symbol a plugin exports: a pointer to its module (VIA_GLUE_PLUGIN). */
#define VIA_GLUE_PLUGIN_SYMBOL "via_glue_plugin_module"

/**
 * Export @p mod, the identifier of a struct via_glue_module object, as the
 * module of a plugin (via_glue_NAME.so, NAME being the module's name).  Use
 * it once, at file scope, followed by a semicolon.  The plugin needs no
 * constructor: viad reads the module through this symbol and checks it
 * (via_glue_load()), so a broken plugin is refused with a log line where a
 * registering constructor could only abort() viad.
 */
#define VIA_GLUE_PLUGIN(mod)						\
	extern const struct via_glue_module *const via_glue_plugin_module; \
	__attribute__((visibility("default")))				\
	const struct via_glue_module *const via_glue_plugin_module = &(mod)

/**
 * Make module @p name available to via_port_open(): nothing to do if it is
 * registered (built in, or loaded before); otherwise dlopen() the plugin
 * @p dir/via_glue_@p name.so, take its module (VIA_GLUE_PLUGIN_SYMBOL),
 * check that it is named @p name and register it.  Success and every
 * refusal are logged with the file and the reason.  A refused plugin is
 * closed again; a loaded one stays loaded for the process lifetime.
 *
 * @param dir   Plugin directory.
 * @param name  Module name, 1..31 chars.
 * @return 0 on success, or
 *   - -EINVAL: @p dir or @p name is NULL or empty, @p name holds a '/',
 *     the plugin's module is not named @p name, or its required slot
 *     @c probe is NULL;
 *   - -ENAMETOOLONG: @p name has VIA_GLUE_NAME_MAX chars or more, or the
 *     plugin's path has PATH_MAX chars or more;
 *   - -ENOENT: no module @p name is registered and there is no such file;
 *   - -ELIBBAD: dlopen() failed (not a shared object, a symbol it needs
 *     that viad and its libraries do not define, ...), or the plugin
 *     exports no module (VIA_GLUE_PLUGIN_SYMBOL missing or NULL);
 *   - -EPROTO: the module was built for another VIA_GLUE_ABI_VERSION;
 *   - -ENOSPC: the registry is full.
 */
int via_glue_load(const char *dir, const char *name);

/* ------------------------------------------------------------------------ */
/* Ports                                                                    */
/* ------------------------------------------------------------------------ */

/**
 * What a port of module @p glue_name configured as @p conf needs of the
 * mbuf pool, through the module's needs slot (before via_port_open(),
 * which needs the pool).
 *
 * @return 0 and *@p needs, or -EINVAL (an argument NULL), -ENOENT (no
 *   module named @p glue_name), or the slot's error.
 */
int via_glue_needs(const char *glue_name, const struct via_glue_port_conf *conf,
		   struct via_port_needs *needs);

/**
 * Open a port: allocate it (plus the module's private area), run the
 * module's probe, then cache the MAC and MTU through the mac_addr and
 * mtu_get slots.  The port is left configured but not started.
 *
 * @param out        Where the new port is stored (set only on success).
 * @param glue_name  Module name ("ethdev", "loopback", ...).
 * @param conf       Configuration; only needed during the call.
 * @return 0 on success, or
 *   - -EINVAL: @p out, @p glue_name or @p conf is NULL, conf->name is NULL
 *     or empty, nb_rxq or nb_txq is 0, or the module left port_id invalid
 *     while using a default (ethdev) data-path slot;
 *   - -ENAMETOOLONG: conf->name has VIA_GLUE_NAME_MAX chars or more;
 *   - -ENOENT: no module named @p glue_name;
 *   - -ENOMEM: allocation failed;
 *   - any error returned by the module's probe, mac_addr or mtu_get slot
 *     (see the module; e.g. ethdev: -ENODEV, -EBUSY, -ENOTSUP, ...).
 */
int via_port_open(struct via_port **out, const char *glue_name,
		  const struct via_glue_port_conf *conf);

/**
 * Close a port: stop it if started, call the module's remove, free it.
 * @param port  Port (NULL is a no-op).  Never fails.
 */
void via_port_close(struct via_port *port);

/**
 * Start a port (no-op returning 0 if already started).
 *
 * @param port  Port.
 * @return 0 on success, -EINVAL if @p port is NULL, or the start slot's
 *   error (default slot: rte_eth_dev_start() errors, e.g. -ENODEV, -EIO).
 */
int via_port_start(struct via_port *port);

/**
 * Stop a port (no-op if not started or NULL).  The caller must have stopped
 * bursting on it.  Never fails (slot errors are logged).
 * @param port  Port.
 */
void via_port_stop(struct via_port *port);

/**
 * Read the link state through the link_get slot.
 *
 * @param port  Port.
 * @param link  Filled on success.
 * @return 0, -EINVAL if an argument is NULL, or the slot's error
 *   (default slot: -ENODEV, -ENOTSUP, -EIO).
 */
int via_port_link_get(struct via_port *port, struct via_port_link *link);

/**
 * Read the counters through the stats_get slot.
 *
 * @param port  Port.
 * @param st    Filled on success.
 * @return 0, -EINVAL if an argument is NULL, or the slot's error
 *   (default slot: -ENODEV, -ENOTSUP, -EIO).
 */
int via_port_stats_get(struct via_port *port, struct via_port_stats *st);

/**
 * Receive a burst (hot path, one indirect call).
 * @return number of frames stored in @p pk (0..n); never fails.
 */
static inline uint16_t
via_port_rx_burst(struct via_port *p, uint16_t q, struct rte_mbuf **pk,
		  uint16_t n)
{
	return p->ops->rx_burst(p, q, pk, n);
}

/**
 * Transmit a burst (hot path, one indirect call).
 * @return number of frames consumed from the front of @p pk (0..n); the
 *   others still belong to the caller.  Never fails.
 */
static inline uint16_t
via_port_tx_burst(struct via_port *p, uint16_t q, struct rte_mbuf **pk,
		  uint16_t n)
{
	return p->ops->tx_burst(p, q, pk, n);
}

/** @return the port name; never fails. */
static inline const char *
via_port_name(const struct via_port *p) { return p->name; }

/** @return the module name ("ethdev", "loopback", ...); never fails. */
static inline const char *
via_port_glue_name(const struct via_port *p) { return p->glue; }

/** @return the DPDK port id, or VIA_PORT_ID_NONE; never fails. */
static inline uint16_t
via_port_id(const struct via_port *p) { return p->port_id; }

/** @return the MAC cached at open; never fails. */
static inline const struct rte_ether_addr *
via_port_mac(const struct via_port *p) { return &p->mac; }

/** @return the enum via_port_cap bits probe set; never fails. */
static inline uint32_t
via_port_caps(const struct via_port *p) { return p->caps; }

/** @return the MTU cached at open; never fails. */
static inline uint16_t
via_port_mtu(const struct via_port *p) { return p->mtu; }

/** @return the module's private area (NULL if priv_size was 0). */
static inline void *
via_port_priv(const struct via_port *p) { return p->priv; }

/** @return the number of configured rx queues; never fails. */
static inline uint16_t
via_port_nb_rxq(const struct via_port *p) { return p->nb_rxq; }

/** @return the number of configured tx queues; never fails. */
static inline uint16_t
via_port_nb_txq(const struct via_port *p) { return p->nb_txq; }

/** @return true between a successful start and stop; never fails. */
static inline bool
via_port_is_started(const struct via_port *p) { return p->started; }

#ifdef __cplusplus
}
#endif

#endif /* VIA_GLUE_H */
