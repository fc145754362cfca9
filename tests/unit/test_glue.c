/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test for pmd_glue: registry, default slots, loopback module, ethdev
 * module (net_ring vdev), wrapper modules, error paths.
 *
 * Runs without hugepages:
 *   test_glue [extra EAL args]
 * Exit status 0 = all checks passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "via_glue.h"
#include "test_common.h"
#include "test_eal.h"

#define NB_MBUF 2047
#define BURST 32
#define ETHERTYPE_TEST 0x88b5 /* IEEE local experimental */

static struct rte_mempool *mp;

/* ------------------------------------------------------------------------ */
/* Frame helpers                                                            */
/* ------------------------------------------------------------------------ */

static uint16_t
frame_len(unsigned int seq)
{
	return (uint16_t)(60 + (seq * 37) % 1400);
}

static uint8_t
frame_byte(unsigned int seq, unsigned int off)
{
	return (uint8_t)(seq * 131 + off * 7 + 1);
}

static struct rte_mbuf *
make_frame(unsigned int seq, uint16_t len, const struct rte_ether_addr *dst)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	struct rte_ether_hdr *eh;
	uint8_t *d;
	unsigned int i;

	if (m == NULL)
		return NULL;
	d = (uint8_t *)rte_pktmbuf_append(m, len);
	if (d == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	eh = (struct rte_ether_hdr *)d;
	rte_ether_addr_copy(dst, &eh->dst_addr);
	memset(&eh->src_addr, 0, sizeof(eh->src_addr));
	eh->src_addr.addr_bytes[0] = 0x02;
	eh->src_addr.addr_bytes[5] = 0xee;
	eh->ether_type = rte_cpu_to_be_16(ETHERTYPE_TEST);
	for (i = sizeof(*eh); i < len; i++)
		d[i] = frame_byte(seq, i);
	return m;
}

static bool
frame_ok(const struct rte_mbuf *m, unsigned int seq, uint16_t len,
	 const struct rte_ether_addr *dst)
{
	const struct rte_ether_hdr *eh;
	const uint8_t *d;
	unsigned int i;

	if (m->pkt_len != len || m->nb_segs != 1)
		return false;
	d = rte_pktmbuf_mtod(m, const uint8_t *);
	eh = (const struct rte_ether_hdr *)d;
	if (!rte_is_same_ether_addr(&eh->dst_addr, dst) ||
	    eh->ether_type != rte_cpu_to_be_16(ETHERTYPE_TEST))
		return false;
	for (i = sizeof(*eh); i < len; i++)
		if (d[i] != frame_byte(seq, i))
			return false;
	return true;
}

/* tx n frames seq0.., rx them back on rxq, verify order and content. */
static void
round_trip(struct via_port *p, uint16_t txq, uint16_t rxq, unsigned int seq0,
	   unsigned int n)
{
	struct rte_mbuf *tx[BURST], *rx[BURST];
	unsigned int i, got = 0, tries;
	uint16_t sent;

	if (n > BURST)
		n = BURST;
	for (i = 0; i < n; i++) {
		tx[i] = make_frame(seq0 + i, frame_len(seq0 + i),
				   via_port_mac(p));
		CHECK(tx[i] != NULL);
		if (tx[i] == NULL)
			return;
	}
	sent = via_port_tx_burst(p, txq, tx, (uint16_t)n);
	CHECK(sent == n);
	if (sent < n)
		rte_pktmbuf_free_bulk(&tx[sent], n - sent);
	for (tries = 0; got < sent && tries < 1000; tries++)
		got += via_port_rx_burst(p, rxq, &rx[got],
					 (uint16_t)(BURST - got));
	CHECK(got == sent);
	for (i = 0; i < got; i++) {
		CHECK(frame_ok(rx[i], seq0 + i, frame_len(seq0 + i),
			       via_port_mac(p)));
		rte_pktmbuf_free(rx[i]);
	}
}

static struct via_glue_port_conf
base_conf(const char *name, const char *devargs)
{
	struct via_glue_port_conf c;

	memset(&c, 0, sizeof(c));
	c.name = name;
	c.devargs = devargs;
	c.nb_rxq = 1;
	c.nb_txq = 1;
	c.nb_rxd = 256;
	c.nb_txd = 256;
	c.mp = mp;
	c.socket_id = SOCKET_ID_ANY;
	return c;
}

/* ------------------------------------------------------------------------ */
/* Registry and default slots                                               */
/* ------------------------------------------------------------------------ */

static int t_remove_calls;

static int
t_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	RTE_SET_USED(port);
	RTE_SET_USED(conf);
	return 0;
}

static int
t_probe_fail(struct via_port *port, const struct via_glue_port_conf *conf)
{
	RTE_SET_USED(port);
	RTE_SET_USED(conf);
	return -EIO;
}

static void
t_remove(struct via_port *port)
{
	RTE_SET_USED(port);
	t_remove_calls++;
}

static int
t_mac(struct via_port *port, struct rte_ether_addr *mac)
{
	RTE_SET_USED(port);
	memset(mac, 0, sizeof(*mac));
	mac->addr_bytes[0] = 0x02;
	mac->addr_bytes[5] = 0x42;
	return 0;
}

static int
t_mtu(struct via_port *port, uint16_t *mtu)
{
	RTE_SET_USED(port);
	*mtu = 1234;
	return 0;
}

static uint16_t
t_rx(struct via_port *port, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	RTE_SET_USED(port);
	RTE_SET_USED(q);
	RTE_SET_USED(pkts);
	RTE_SET_USED(n);
	return 0;
}

static uint16_t
t_tx(struct via_port *port, uint16_t q, struct rte_mbuf **pkts, uint16_t n)
{
	RTE_SET_USED(port);
	RTE_SET_USED(q);
	RTE_SET_USED(pkts);
	RTE_SET_USED(n);
	return 0;
}

static void
test_registry(void)
{
	const struct via_glue_ops *def = via_glue_default_ops();
	const struct via_glue_ops *ops;
	struct via_glue_module m;
	struct via_glue_port_conf c;
	struct via_port *p;
	unsigned int i;
	uint8_t *priv;

	printf("-- registry\n");
	CHECK(via_glue_lookup("loopback") != NULL);
	CHECK(via_glue_lookup("ethdev") != NULL);
	CHECK(via_glue_lookup("nope") == NULL);
	CHECK(via_glue_lookup(NULL) == NULL);
	CHECK(def->probe == NULL);
	CHECK(def->remove && def->start && def->stop && def->mac_addr &&
	      def->mtu_get && def->link_get && def->stats_get &&
	      def->rx_burst && def->tx_burst);

	/* registration errors */
	CHECK_RC(via_glue_register(NULL), -EINVAL);
	memset(&m, 0, sizeof(m));
	m.abi_version = VIA_GLUE_ABI_VERSION;
	m.name = "t_noprobe";
	m.ops.rx_burst = t_rx;
	CHECK_RC(via_glue_register(&m), -EINVAL);
	CHECK(via_glue_lookup("t_noprobe") == NULL);
	m.ops.probe = t_probe;
	m.name = "";
	CHECK_RC(via_glue_register(&m), -EINVAL);
	m.name = NULL;
	CHECK_RC(via_glue_register(&m), -EINVAL);
	m.name = "t_this_name_is_far_too_long_for_the_registry";
	CHECK_RC(via_glue_register(&m), -ENAMETOOLONG);
	m.name = "loopback";
	CHECK_RC(via_glue_register(&m), -EEXIST);
	/* another ABI: refused before anything else is looked at */
	m.name = "t_abi";
	m.abi_version = VIA_GLUE_ABI_VERSION + 1;
	CHECK_RC(via_glue_register(&m), -EPROTO);
	m.name = NULL;
	CHECK_RC(via_glue_register(&m), -EPROTO);
	CHECK(via_glue_lookup("t_abi") == NULL);

	/* defaults filled in */
	memset(&m, 0, sizeof(m));
	m.abi_version = VIA_GLUE_ABI_VERSION;
	m.name = "t_mod";
	m.ops.probe = t_probe;
	m.ops.rx_burst = t_rx;
	m.ops.tx_burst = t_tx;
	CHECK_RC(via_glue_register(&m), 0);
	CHECK_RC(via_glue_register(&m), -EEXIST);
	ops = via_glue_lookup("t_mod");
	CHECK(ops != NULL);
	if (ops != NULL) {
		CHECK(ops->probe == t_probe);
		CHECK(ops->rx_burst == t_rx);
		CHECK(ops->tx_burst == t_tx);
		CHECK(ops->remove == def->remove);
		CHECK(ops->start == def->start);
		CHECK(ops->stop == def->stop);
		CHECK(ops->mac_addr == def->mac_addr);
		CHECK(ops->mtu_get == def->mtu_get);
		CHECK(ops->link_get == def->link_get);
		CHECK(ops->stats_get == def->stats_get);
	}
	/* the module description need not outlive registration */
	m.ops.rx_burst = NULL;
	CHECK(via_glue_lookup("t_mod")->rx_burst == t_rx);

	/* t_mod has no ethdev: default mac_addr slot fails with -ENODEV */
	c = base_conf("tp0", NULL);
	p = (struct via_port *)0x1;
	CHECK_RC(via_port_open(&p, "t_mod", &c), -ENODEV);
	CHECK(p == (struct via_port *)0x1);

	/* module with no ethdev but default data path: refused */
	memset(&m, 0, sizeof(m));
	m.abi_version = VIA_GLUE_ABI_VERSION;
	m.name = "t_baddp";
	m.ops.probe = t_probe;
	m.ops.remove = t_remove;
	m.ops.mac_addr = t_mac;
	m.ops.mtu_get = t_mtu;
	CHECK_RC(via_glue_register(&m), 0);
	t_remove_calls = 0;
	CHECK_RC(via_port_open(&p, "t_baddp", &c), -EINVAL);
	CHECK(t_remove_calls == 1);

	/* failing probe: error propagated, remove not called */
	m.name = "t_pfail";
	m.ops.probe = t_probe_fail;
	CHECK_RC(via_glue_register(&m), 0);
	t_remove_calls = 0;
	CHECK_RC(via_port_open(&p, "t_pfail", &c), -EIO);
	CHECK(t_remove_calls == 0);

	/* a complete software module with a priv area */
	memset(&m, 0, sizeof(m));
	m.abi_version = VIA_GLUE_ABI_VERSION;
	m.name = "t_full";
	m.ops.probe = t_probe;
	m.ops.remove = t_remove;
	m.ops.mac_addr = t_mac;
	m.ops.mtu_get = t_mtu;
	m.ops.rx_burst = t_rx;
	m.ops.tx_burst = t_tx;
	m.priv_size = 100;
	CHECK_RC(via_glue_register(&m), 0);
	p = NULL;
	t_remove_calls = 0;
	CHECK_RC(via_port_open(&p, "t_full", &c), 0);
	CHECK(p != NULL);
	if (p != NULL) {
		struct via_port_link l;

		CHECK(strcmp(via_port_name(p), "tp0") == 0);
		CHECK(strcmp(via_port_glue_name(p), "t_full") == 0);
		CHECK(via_port_id(p) == VIA_PORT_ID_NONE);
		CHECK(via_port_mtu(p) == 1234);
		CHECK(via_port_mac(p)->addr_bytes[5] == 0x42);
		CHECK(via_port_nb_rxq(p) == 1 && via_port_nb_txq(p) == 1);
		priv = via_port_priv(p);
		CHECK(priv != NULL);
		CHECK(((uintptr_t)priv % RTE_CACHE_LINE_SIZE) == 0);
		for (i = 0; priv != NULL && i < 100; i++)
			CHECK(priv[i] == 0);
		/* default start/link on a port without ethdev: -ENODEV */
		CHECK_RC(via_port_start(p), -ENODEV);
		CHECK(!via_port_is_started(p));
		CHECK_RC(via_port_link_get(p, &l), -ENODEV);
		via_port_close(p);
		CHECK(t_remove_calls == 1);
	}
	via_port_close(NULL);

	/* open argument errors */
	CHECK_RC(via_port_open(&p, "no_such_glue", &c), -ENOENT);
	CHECK_RC(via_port_open(&p, NULL, &c), -EINVAL);
	CHECK_RC(via_port_open(&p, "loopback", NULL), -EINVAL);
	CHECK_RC(via_port_open(NULL, "loopback", &c), -EINVAL);
	c.nb_rxq = 0;
	CHECK_RC(via_port_open(&p, "loopback", &c), -EINVAL);
	c.nb_rxq = 1;
	c.nb_txq = 0;
	CHECK_RC(via_port_open(&p, "loopback", &c), -EINVAL);
	c.nb_txq = 1;
	c.name = "";
	CHECK_RC(via_port_open(&p, "loopback", &c), -EINVAL);
	c.name = "a_port_name_that_is_much_too_long_0123";
	CHECK_RC(via_port_open(&p, "loopback", &c), -ENAMETOOLONG);

	/* plugins (tests/glue_plugin/ loads real ones): a registered module
	 * needs no file, an unknown one without a file is -ENOENT */
	CHECK_RC(via_glue_load("/nonexistent", "loopback"), 0);
	CHECK_RC(via_glue_load("/nonexistent", "t_full"), 0);
	CHECK_RC(via_glue_load("/nonexistent", "no_such_glue"), -ENOENT);
	CHECK_RC(via_glue_load("/nonexistent", "../loopback"), -EINVAL);
	CHECK_RC(via_glue_load("/nonexistent", ""), -EINVAL);
	CHECK_RC(via_glue_load("", "loopback"), -EINVAL);
	CHECK_RC(via_glue_load(NULL, "loopback"), -EINVAL);
	CHECK_RC(via_glue_load("/nonexistent", NULL), -EINVAL);
	CHECK_RC(via_glue_load("/nonexistent", "t_this_name_is_far_too_long_for_the_registry"),
		 -ENAMETOOLONG);
}

static void
test_registry_full(void)
{
	struct via_glue_module m;
	char name[VIA_GLUE_NAME_MAX];
	unsigned int i;
	int rc = 0;

	printf("-- registry full\n");
	memset(&m, 0, sizeof(m));
	m.abi_version = VIA_GLUE_ABI_VERSION;
	m.ops.probe = t_probe;
	for (i = 0; i <= VIA_GLUE_MAX_MODULES; i++) {
		snprintf(name, sizeof(name), "t_fill%u", i);
		m.name = name;
		rc = via_glue_register(&m);
		if (rc != 0)
			break;
		CHECK(via_glue_lookup(name) != NULL);
	}
	CHECK_RC(rc, -ENOSPC);
	CHECK(i < VIA_GLUE_MAX_MODULES);
	CHECK(via_glue_lookup("t_fill0") != NULL);
	CHECK(via_glue_lookup("loopback") != NULL);
}

/* ------------------------------------------------------------------------ */
/* Loopback                                                                 */
/* ------------------------------------------------------------------------ */

static void
test_loopback(void)
{
	struct via_glue_port_conf c = base_conf("lb0", NULL);
	struct rte_ether_addr want, ovr;
	struct rte_mbuf *tx[300], *rx[BURST];
	struct via_port *p = NULL, *p1 = NULL, *p2 = NULL;
	struct via_port_stats st;
	struct via_port_link l;
	unsigned int i, got;
	uint64_t bytes = 0;
	uint16_t n;

	printf("-- loopback\n");
	CHECK_RC(via_port_open(&p, "loopback", &c), 0);
	if (p == NULL)
		return;
	memset(&want, 0, sizeof(want));
	want.addr_bytes[0] = 0x02;
	CHECK(rte_is_same_ether_addr(via_port_mac(p), &want));
	CHECK(via_port_mtu(p) == 9000);
	CHECK(via_port_id(p) == VIA_PORT_ID_NONE);
	CHECK(strcmp(via_port_glue_name(p), "loopback") == 0);
	CHECK(via_port_caps(p) == (VIA_PORT_CAP_TX_BY_VA | VIA_PORT_CAP_LOOPBACK |
				   VIA_PORT_CAP_INTACT));
	CHECK_RC(via_port_link_get(p, &l), 0);
	CHECK(l.up && l.speed_mbps == 100000);

	/* not started: nothing accepted, nothing received */
	tx[0] = make_frame(0, 100, via_port_mac(p));
	CHECK(via_port_tx_burst(p, 0, tx, 1) == 0);
	rte_pktmbuf_free(tx[0]);
	CHECK(via_port_rx_burst(p, 0, rx, BURST) == 0);

	CHECK_RC(via_port_start(p), 0);
	CHECK(via_port_is_started(p));
	CHECK_RC(via_port_start(p), 0); /* idempotent */

	/* 32 frames out, the same 32 back */
	round_trip(p, 0, 0, 1000, BURST);
	for (i = 0; i < BURST; i++)
		bytes += frame_len(1000 + i);
	CHECK_RC(via_port_stats_get(p, &st), 0);
	CHECK(st.tx_packets == BURST && st.rx_packets == BURST);
	CHECK(st.tx_bytes == bytes && st.rx_bytes == bytes);
	CHECK(st.tx_errors == 0 && st.rx_errors == 0 && st.rx_missed == 0);

	/* bad queue ids */
	CHECK(via_port_rx_burst(p, 1, rx, BURST) == 0);

	/* ring full (256): the rest is not consumed */
	for (i = 0; i < RTE_DIM(tx); i++) {
		tx[i] = make_frame(i, 64, via_port_mac(p));
		CHECK(tx[i] != NULL);
	}
	n = via_port_tx_burst(p, 0, tx, RTE_DIM(tx));
	CHECK(n == 256);
	for (i = n; i < RTE_DIM(tx); i++) /* still ours, untouched */
		CHECK(rte_mbuf_refcnt_read(tx[i]) == 1 &&
		      frame_ok(tx[i], i, 64, via_port_mac(p)));
	rte_pktmbuf_free_bulk(&tx[n], RTE_DIM(tx) - n);
	got = 0;
	while ((n = via_port_rx_burst(p, 0, rx, BURST)) != 0) {
		for (i = 0; i < n; i++)
			CHECK(frame_ok(rx[i], got + i, 64, via_port_mac(p)));
		got += n;
		rte_pktmbuf_free_bulk(rx, n);
	}
	CHECK(got == 256);

	/* shared mbuf (sender keeps a reference): receiver gets a copy */
	tx[0] = make_frame(7, 200, via_port_mac(p));
	rte_mbuf_refcnt_update(tx[0], 1);
	CHECK(via_port_tx_burst(p, 0, tx, 1) == 1);
	CHECK(rte_mbuf_refcnt_read(tx[0]) == 1);
	CHECK(via_port_rx_burst(p, 0, rx, BURST) == 1);
	CHECK(rx[0] != tx[0]);
	CHECK(frame_ok(rx[0], 7, 200, via_port_mac(p)));
	rte_pktmbuf_adj(rx[0], 14);
	CHECK(frame_ok(tx[0], 7, 200, via_port_mac(p)));
	rte_pktmbuf_free(rx[0]);
	rte_pktmbuf_free(tx[0]);

	/* second port: next index, MTU 1500, oversize frame dropped */
	c = base_conf("lb1", NULL);
	c.mtu = 1500;
	CHECK_RC(via_port_open(&p1, "loopback", &c), 0);
	if (p1 != NULL) {
		want.addr_bytes[5] = 0x01;
		CHECK(rte_is_same_ether_addr(via_port_mac(p1), &want));
		CHECK(via_port_mtu(p1) == 1500);
		CHECK_RC(via_port_start(p1), 0);
		tx[0] = make_frame(1, 1514, via_port_mac(p1));
		tx[1] = make_frame(2, 1600, via_port_mac(p1)); /* > 1518 */
		tx[2] = make_frame(3, 1518, via_port_mac(p1));
		CHECK(via_port_tx_burst(p1, 0, tx, 3) == 3);
		CHECK(via_port_rx_burst(p1, 0, rx, BURST) == 2);
		CHECK(frame_ok(rx[0], 1, 1514, via_port_mac(p1)));
		CHECK(frame_ok(rx[1], 3, 1518, via_port_mac(p1)));
		rte_pktmbuf_free_bulk(rx, 2);
		CHECK_RC(via_port_stats_get(p1, &st), 0);
		CHECK(st.tx_packets == 2 && st.tx_errors == 1 &&
		      st.rx_packets == 2);
		/* nothing crossed over from/to port 0 */
		CHECK(via_port_rx_burst(p, 0, rx, BURST) == 0);
	}

	/* MAC override, multi-queue: tx q3 -> rx q (3 % 2) = 1 */
	memset(&ovr, 0, sizeof(ovr));
	ovr.addr_bytes[0] = 0x02;
	ovr.addr_bytes[1] = 0x11;
	ovr.addr_bytes[5] = 0x55;
	c = base_conf("lb2", NULL);
	c.mac = &ovr;
	c.nb_rxq = 2;
	c.nb_txq = 4;
	CHECK_RC(via_port_open(&p2, "loopback", &c), 0);
	if (p2 != NULL) {
		CHECK(rte_is_same_ether_addr(via_port_mac(p2), &ovr));
		CHECK_RC(via_port_start(p2), 0);
		round_trip(p2, 3, 1, 50, 8);
		round_trip(p2, 0, 0, 60, 8);
	}
	ovr.addr_bytes[0] = 0x01; /* multicast: refused */
	c.name = "lb3";
	{
		struct via_port *bad = NULL;

		CHECK_RC(via_port_open(&bad, "loopback", &c), -EINVAL);
		c.mac = NULL;
		c.nb_rxq = 17; /* > 16 */
		CHECK_RC(via_port_open(&bad, "loopback", &c), -EINVAL);
		c.nb_rxq = 1;
		c.mtu = 20;
		CHECK_RC(via_port_open(&bad, "loopback", &c), -EINVAL);
		CHECK(bad == NULL);
	}

	/* frames left queued at close are freed (leak check at the end) */
	tx[0] = make_frame(9, 100, via_port_mac(p));
	CHECK(via_port_tx_burst(p, 0, tx, 1) == 1);
	via_port_stop(p);
	CHECK(!via_port_is_started(p));
	via_port_close(p);
	via_port_close(p1);
	via_port_close(p2);

	/* index 0 is free again */
	p = NULL;
	c = base_conf("lb0", NULL);
	CHECK_RC(via_port_open(&p, "loopback", &c), 0);
	if (p != NULL) {
		want.addr_bytes[5] = 0;
		CHECK(rte_is_same_ether_addr(via_port_mac(p), &want));
		via_port_close(p);
	}
}

/* ------------------------------------------------------------------------ */
/* Wrapper module: opens an inner port and forwards to it                   */
/* ------------------------------------------------------------------------ */

struct wrap_priv {
	struct via_port *inner;
	uint64_t tx_calls;
};

static int
wrap_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	struct wrap_priv *w = via_port_priv(port);
	struct via_glue_port_conf ic = *conf;

	ic.name = "wrap_inner";
	return via_port_open(&w->inner, "loopback", &ic);
}

static void
wrap_remove(struct via_port *port)
{
	struct wrap_priv *w = via_port_priv(port);

	via_port_close(w->inner);
}

static int
wrap_start(struct via_port *port)
{
	return via_port_start(((struct wrap_priv *)via_port_priv(port))->inner);
}

static void
wrap_stop(struct via_port *port)
{
	via_port_stop(((struct wrap_priv *)via_port_priv(port))->inner);
}

static int
wrap_mac(struct via_port *port, struct rte_ether_addr *mac)
{
	struct wrap_priv *w = via_port_priv(port);

	rte_ether_addr_copy(via_port_mac(w->inner), mac);
	return 0;
}

static int
wrap_mtu(struct via_port *port, uint16_t *mtu)
{
	*mtu = via_port_mtu(((struct wrap_priv *)via_port_priv(port))->inner);
	return 0;
}

static int
wrap_link(struct via_port *port, struct via_port_link *l)
{
	return via_port_link_get(
		((struct wrap_priv *)via_port_priv(port))->inner, l);
}

static int
wrap_stats(struct via_port *port, struct via_port_stats *st)
{
	return via_port_stats_get(
		((struct wrap_priv *)via_port_priv(port))->inner, st);
}

static uint16_t
wrap_rx(struct via_port *port, uint16_t q, struct rte_mbuf **pk, uint16_t n)
{
	return via_port_rx_burst(
		((struct wrap_priv *)via_port_priv(port))->inner, q, pk, n);
}

static uint16_t
wrap_tx(struct via_port *port, uint16_t q, struct rte_mbuf **pk, uint16_t n)
{
	struct wrap_priv *w = via_port_priv(port);

	w->tx_calls++;
	return via_port_tx_burst(w->inner, q, pk, n);
}

static void
test_wrapper(void)
{
	static const struct via_glue_module wrap = {
		.abi_version = VIA_GLUE_ABI_VERSION,
		.name = "t_wrap",
		.ops = {
			.probe = wrap_probe, .remove = wrap_remove,
			.start = wrap_start, .stop = wrap_stop,
			.mac_addr = wrap_mac, .mtu_get = wrap_mtu,
			.link_get = wrap_link, .stats_get = wrap_stats,
			.rx_burst = wrap_rx, .tx_burst = wrap_tx,
		},
		.priv_size = sizeof(struct wrap_priv),
	};
	struct via_glue_port_conf c = base_conf("w0", NULL);
	struct via_port *p = NULL;
	struct via_port_stats st;
	struct wrap_priv *w;

	printf("-- wrapper\n");
	CHECK_RC(via_glue_register(&wrap), 0);
	CHECK_RC(via_port_open(&p, "t_wrap", &c), 0);
	if (p == NULL)
		return;
	w = via_port_priv(p);
	CHECK(w->inner != NULL);
	CHECK(via_port_mac(p)->addr_bytes[0] == 0x02);
	CHECK(via_port_mtu(p) == 9000);
	CHECK_RC(via_port_start(p), 0);
	CHECK(via_port_is_started(w->inner));
	round_trip(p, 0, 0, 77, BURST);
	CHECK(w->tx_calls == 1);
	CHECK_RC(via_port_stats_get(p, &st), 0);
	CHECK(st.rx_packets == BURST && st.tx_packets == BURST);
	via_port_close(p);
}

/* ------------------------------------------------------------------------ */
/* Capabilities and needs: what viad reads instead of module names          */
/* ------------------------------------------------------------------------ */

static void
test_needs_caps(void)
{
	struct via_glue_port_conf c = base_conf("nc0", NULL);
	struct via_port_needs n;
	struct via_port *p = NULL;

	printf("-- needs and capabilities\n");
	CHECK_RC(via_glue_needs("loopback", &c, &n), 0);
	CHECK(n.headroom == 0 && n.mtu == 9000);
	c.mtu = 1234;
	CHECK_RC(via_glue_needs("loopback", &c, &n), 0);
	CHECK(n.mtu == 1234);
	c.mtu = 0;
	/* the default slot: a module without one (t_mod registered above) */
	CHECK_RC(via_glue_needs("t_mod", &c, &n), 0);
	CHECK(n.headroom == 0 && n.mtu == RTE_ETHER_MTU);
	c.devargs = "net_ring0";
	CHECK_RC(via_glue_needs("ethdev", &c, &n), 0);
	CHECK(n.headroom == 0 && n.mtu == RTE_ETHER_MTU);
	c.devargs = "net_af_xdp0,iface=nowhere";
	CHECK_RC(via_glue_needs("ethdev", &c, &n), 0);
	CHECK(n.headroom == 256);
	/* a faulty port needs what its inner port does */
	c.inner_glue = "ethdev";
	CHECK_RC(via_glue_needs("faulty", &c, &n), 0);
	CHECK(n.headroom == 256 && n.mtu == RTE_ETHER_MTU);
	c.inner_glue = NULL;
	c.devargs = NULL;
	CHECK_RC(via_glue_needs("faulty", &c, &n), 0);
	CHECK(n.headroom == 0 && n.mtu == 9000);
	CHECK_RC(via_glue_needs("no_such_glue", &c, &n), -ENOENT);
	CHECK_RC(via_glue_needs(NULL, &c, &n), -EINVAL);
	CHECK_RC(via_glue_needs("loopback", NULL, &n), -EINVAL);
	CHECK_RC(via_glue_needs("loopback", &c, NULL), -EINVAL);

	/* faulty over loopback: its own frames cross it, it wants its kick,
	 * and it keeps the inner port's transmit by address and loopback, never
	 * INTACT: it alters frames */
	CHECK_RC(via_port_open(&p, "faulty", &c), 0);
	if (p != NULL) {
		CHECK(via_port_caps(p) == (VIA_PORT_CAP_TX_BY_VA | VIA_PORT_CAP_LOOPBACK |
					   VIA_PORT_CAP_SELF_VIA_PORT | VIA_PORT_CAP_TX_KICK));
		via_port_close(p);
	}
}

/* ------------------------------------------------------------------------ */
/* ethdev (net_ring)                                                        */
/* ------------------------------------------------------------------------ */

static void
test_ethdev(void)
{
	struct via_glue_port_conf c = base_conf("eth0", "net_ring0");
	struct via_port *p = NULL, *p2 = NULL;
	struct rte_mbuf *rx[BURST];
	struct via_port_stats st;
	struct via_port_link l;
	uint16_t pid;
	int rc;

	printf("-- ethdev (net_ring)\n");
	rc = via_port_open(&p, "ethdev", &c);
	CHECK_RC(rc, 0);
	if (p == NULL) {
		fprintf(stderr, "net_ring not available? (PMD plugin not "
			"loaded)\n");
		return;
	}
	pid = via_port_id(p);
	CHECK(rte_eth_dev_is_valid_port(pid));
	CHECK(strcmp(via_port_glue_name(p), "ethdev") == 0);
	CHECK(via_port_mtu(p) == RTE_ETHER_MTU);
	/* net_ring: no chained transmit by address tested, nothing held back */
	CHECK(via_port_caps(p) == 0);
	CHECK_RC(via_port_start(p), 0);
	CHECK_RC(via_port_link_get(p, &l), 0);
	CHECK(l.up);
	/* the net_ring vdev uses one ring per queue pair: tx q0 -> rx q0 */
	round_trip(p, 0, 0, 500, BURST);
	CHECK_RC(via_port_stats_get(p, &st), 0);
	CHECK(st.tx_packets == BURST && st.rx_packets == BURST);
	CHECK(via_port_rx_burst(p, 0, rx, BURST) == 0);

	/* the same device cannot be opened twice */
	c.name = "eth0b";
	CHECK_RC(via_port_open(&p2, "ethdev", &c), -EBUSY);
	via_port_close(p);

	/* closed = detached: reopen works, with an MTU */
	p = NULL;
	c = base_conf("eth0", "net_ring0");
	c.mtu = 9000;
	CHECK_RC(via_port_open(&p, "ethdev", &c), 0);
	if (p != NULL) {
		CHECK(via_port_mtu(p) == 9000);
		CHECK_RC(via_port_start(p), 0);
		round_trip(p, 0, 0, 600, 8);
		via_port_close(p);
	}

	/* device attached by the EAL (--vdev=net_ring1) is adopted */
	p = NULL;
	c = base_conf("eth1", "net_ring1");
	CHECK_RC(via_port_open(&p, "ethdev", &c), 0);
	if (p != NULL) {
		CHECK_RC(via_port_start(p), 0);
		round_trip(p, 0, 0, 700, 4);
		via_port_close(p);
	}
	p = NULL;
	CHECK_RC(via_port_open(&p, "ethdev", &c), 0); /* hot-plugged now */
	via_port_close(p);

	/* errors: bad devargs, missing arguments, too many queues */
	p = NULL;
	c = base_conf("ebad", "net_bogus0");
	rc = via_port_open(&p, "ethdev", &c);
	CHECK(rc < 0 && p == NULL);
	c.devargs = "net_ring2,nodeaction=bogus";
	rc = via_port_open(&p, "ethdev", &c);
	CHECK(rc < 0 && p == NULL);
	c.devargs = "0000:ff:1f.7"; /* --no-pci */
	rc = via_port_open(&p, "ethdev", &c);
	CHECK(rc < 0 && p == NULL);
	c.devargs = "";
	CHECK_RC(via_port_open(&p, "ethdev", &c), -EINVAL);
	c.devargs = NULL;
	CHECK_RC(via_port_open(&p, "ethdev", &c), -EINVAL);
	c.devargs = "net_ring0";
	c.mp = NULL;
	CHECK_RC(via_port_open(&p, "ethdev", &c), -EINVAL);
	c.mp = mp;
	c.nb_rxq = 64; /* net_ring: 16 max */
	CHECK_RC(via_port_open(&p, "ethdev", &c), -EINVAL);
	CHECK(p == NULL);
	/* and the failed attempts left nothing behind */
	c.nb_rxq = 2;
	c.nb_txq = 2;
	CHECK_RC(via_port_open(&p, "ethdev", &c), 0);
	if (p != NULL) {
		CHECK_RC(via_port_start(p), 0);
		round_trip(p, 1, 1, 800, BURST);
		via_port_close(p);
	}
}

int
main(int argc, char **argv)
{
	/* the ring port test_ethdev drives */
	static const char *const vdev[] = { "--vdev=net_ring1", NULL };
	unsigned int avail0;

	mp = test_eal_start(argc, argv, vdev, "test_glue_mp", NB_MBUF);
	if (mp == NULL)
		return 2;
	avail0 = rte_mempool_avail_count(mp);

	test_registry();
	test_loopback();
	test_wrapper();
	test_needs_caps();
	test_ethdev();
	test_registry_full();

	CHECK(rte_mempool_avail_count(mp) == avail0); /* no mbuf leaked */

	test_eal_stop(mp);
	return test_summary("test_glue");
}
