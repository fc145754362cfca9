/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NIC (VIA §3.1, §9.2, §9.8.1), its name service and its asynchronous
 * errors (§9.9.1).
 *
 * NIC "tcp0" is the host's TCP/IP stack. Opening it binds a listening
 * socket to VIPL_TCP_ADDR (default 127.0.0.1) port VIPL_TCP_PORT (default
 * 0: a port the kernel picks) and starts the NIC's progress thread. The
 * NIC address (VipQueryNic's LocalNicAddress) is that socket's IPv4
 * address and port, 6 bytes in network order: a requester connects there.
 * Each VipOpenNic is a NIC of its own, with a listening socket of its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_prov.h"

/* held undelivered at most; more are dropped (the handler is too slow) */
#define MAX_ASYNC 4096u

/*
 * The NIC slots. A slot's structure, once made, is never freed: a handle
 * of a closed NIC then still leads to a lock and a generation that says
 * it is stale (handle.c). nics_lock guards the allocation of slots.
 */
static struct tcp_nic *nics[TCP_MAX_NICS];
static bool slot_used[TCP_MAX_NICS];
static pthread_mutex_t nics_lock = PTHREAD_MUTEX_INITIALIZER;

void
tcp_log(const char *fmt, ...)
{
	static int debug = -1;
	int on = __atomic_load_n(&debug, __ATOMIC_RELAXED);
	va_list ap;

	if (on < 0) {
		on = getenv("VIPL_TCP_DEBUG") != NULL;
		__atomic_store_n(&debug, on, __ATOMIC_RELAXED);
	}
	if (!on)
		return;
	va_start(ap, fmt);
	fputs("vipl-tcp: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

struct tcp_nic *
tcp_nic_slot(unsigned slot)
{
	return slot < TCP_MAX_NICS ? __atomic_load_n(&nics[slot], __ATOMIC_ACQUIRE) : NULL;
}

/* A new NIC structure for @p slot: its lock and conditions live for ever. */
static struct tcp_nic *
nic_make(unsigned slot)
{
	struct tcp_nic *nic = calloc(1, sizeof(*nic));
	pthread_condattr_t ca;
	unsigned i;

	if (nic == NULL)
		return NULL;
	pthread_mutex_init(&nic->lock, NULL);
	/* timeouts are intervals: the monotonic clock, not the wall clock */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (i = 0; i < TCP_NB_CONDS; i++)
		pthread_cond_init(&nic->conds[i], &ca);
	pthread_cond_init(&nic->cm_cond, &ca);
	pthread_condattr_destroy(&ca);
	nic->slot = (uint8_t)slot;
	nic->listen_fd = nic->ep_fd = nic->wake_fd = -1;
	return nic;
}

/* The listening address the environment asks for. @return 0, -EINVAL */
static int
listen_addr(struct sockaddr_in *sa)
{
	const char *addr = getenv("VIPL_TCP_ADDR");
	const char *port = getenv("VIPL_TCP_PORT");
	unsigned long p = 0;
	char *end;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr != NULL && addr[0] != '\0' ? addr : "127.0.0.1",
		      &sa->sin_addr) != 1) {
		fprintf(stderr, "vipl-tcp: VIPL_TCP_ADDR=%s is not an IPv4 address\n", addr);
		return -EINVAL;
	}
	if (port != NULL && port[0] != '\0') {
		errno = 0;
		p = strtoul(port, &end, 10);
		if (errno != 0 || *end != '\0' || p > 65535) {
			fprintf(stderr, "vipl-tcp: VIPL_TCP_PORT=%s is not a TCP port\n", port);
			return -EINVAL;
		}
	}
	sa->sin_port = htons((uint16_t)p);
	return 0;
}

/* Close what nic_start opened. */
static void
nic_stop_fds(struct tcp_nic *nic)
{
	if (nic->listen_fd >= 0)
		close(nic->listen_fd);
	if (nic->ep_fd >= 0)
		close(nic->ep_fd);
	if (nic->wake_fd >= 0)
		close(nic->wake_fd);
	nic->listen_fd = nic->ep_fd = nic->wake_fd = -1;
	via_idtab_fini(&nic->objs);
	via_idtab_fini(&nic->mrs);
}

/* Set up a closed @p nic: tables, sockets, progress thread. @return 0, -errno */
static int
nic_start(struct tcp_nic *nic)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	sigset_t all, old;
	int rc, one = 1;

	rc = listen_addr(&sa);
	if (rc != 0)
		return rc;
	if (via_idtab_init(&nic->objs, TCP_MAX_OBJS) != 0 ||
	    via_idtab_init(&nic->mrs, TCP_MAX_REGIONS) != 0) {
		rc = -ENOMEM;
		goto fail;
	}
	nic->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	nic->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	nic->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (nic->listen_fd < 0 || nic->ep_fd < 0 || nic->wake_fd < 0)
		goto fail_errno;
	/* a fixed VIPL_TCP_PORT can be reopened at once after a close */
	setsockopt(nic->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(nic->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(nic->listen_fd, (int)TCP_BACKLOG) != 0 ||
	    getsockname(nic->listen_fd, (struct sockaddr *)&sa, &sl) != 0)
		goto fail_errno;
	memcpy(nic->addr, &sa.sin_addr, 4);
	memcpy(nic->addr + 4, &sa.sin_port, 2);
	ev.data.u64 = TCP_EP_LISTEN;
	if (epoll_ctl(nic->ep_fd, EPOLL_CTL_ADD, nic->listen_fd, &ev) != 0)
		goto fail_errno;
	ev.data.u64 = TCP_EP_WAKE;
	if (epoll_ctl(nic->ep_fd, EPOLL_CTL_ADD, nic->wake_fd, &ev) != 0)
		goto fail_errno;
	TAILQ_INIT(&nic->conns);
	TAILQ_INIT(&nic->lingers);
	STAILQ_INIT(&nic->errors);
	nic->nb_vi = nic->nb_cq = nic->nb_ptag = nic->nb_conn = nic->nb_linger = 0;
	nic->nb_errors = 0;
	nic->registered_bytes = 0;
	nic->err_handler = NULL;
	nic->err_ctx = NULL;
	nic->ns_open = false;
	/* the consumer's signals are for its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&nic->thread, NULL, tcp_progress_main, nic);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		goto fail;
	return 0;
fail_errno:
	rc = -errno;
fail:
	if (rc == -EADDRINUSE || rc == -EADDRNOTAVAIL)
		fprintf(stderr, "vipl-tcp: cannot listen on %s port %u: %s\n",
			inet_ntoa(sa.sin_addr), ntohs(sa.sin_port), strerror(-rc));
	nic_stop_fds(nic);
	return rc;
}

VIP_RETURN
tcp_open_nic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle)
{
	struct tcp_nic *nic = NULL;
	unsigned slot;
	int rc;

	if (DeviceName == NULL || NicHandle == NULL || strcmp(DeviceName, TCP_NIC_NAME) != 0)
		return VIP_INVALID_PARAMETER;
	pthread_mutex_lock(&nics_lock);
	for (slot = 0; slot < TCP_MAX_NICS && slot_used[slot]; slot++)
		;
	if (slot == TCP_MAX_NICS) {
		pthread_mutex_unlock(&nics_lock);
		return VIP_ERROR_RESOURCE;
	}
	nic = nics[slot];
	if (nic == NULL) {
		nic = nic_make(slot);
		if (nic == NULL) {
			pthread_mutex_unlock(&nics_lock);
			return VIP_ERROR_RESOURCE;
		}
		__atomic_store_n(&nics[slot], nic, __ATOMIC_RELEASE);
	}
	slot_used[slot] = true;
	pthread_mutex_unlock(&nics_lock);

	pthread_mutex_lock(&nic->lock);
	rc = nic_start(nic);
	if (rc == 0) {
		nic->gen++;
		nic->open = true;
		*NicHandle = tcp_handle_of(nic, NULL);
	}
	pthread_mutex_unlock(&nic->lock);
	if (rc != 0) {
		pthread_mutex_lock(&nics_lock);
		slot_used[slot] = false;
		pthread_mutex_unlock(&nics_lock);
		return rc == -EINVAL ? VIP_ERROR_RESOURCE : via_vip_return(rc);
	}
	return VIP_SUCCESS;
}

/* Every object of the NIC goes (VIA §3.1: the provider cleans up after the consumer). */
static void
nic_free_objects(struct tcp_nic *nic)
{
	struct tcp_async *e;
	struct tcp_conn *c;
	struct tcp_linger *l;
	struct tcp_obj *obj;
	uint32_t cursor = 0;

	tcp_vi_fini_all(nic);
	while ((c = TAILQ_FIRST(&nic->conns)) != NULL)
		tcp_conn_free(nic, c);
	while ((l = TAILQ_FIRST(&nic->lingers)) != NULL) {
		TAILQ_REMOVE(&nic->lingers, l, link);
		close(l->fd);
		tcp_obj_del(nic, &l->obj);
		free(l);
	}
	while ((obj = via_idtab_next(&nic->objs, &cursor, NULL)) != NULL) {
		if (obj->type == TCP_OBJ_CQ)
			tcp_cq_free(nic, (struct tcp_cq *)obj);
	}
	tcp_mr_fini(nic);
	while ((e = STAILQ_FIRST(&nic->errors)) != NULL) {
		STAILQ_REMOVE_HEAD(&nic->errors, link);
		free(e);
	}
}

VIP_RETURN
tcp_close_nic(VIP_NIC_HANDLE NicHandle)
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	unsigned i;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (pthread_equal(pthread_self(), nic->thread)) {
		/* an error handler: its thread cannot wait for itself */
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	/* from here on the handles of the NIC resolve no more */
	nic->open = false;
	tcp_nic_leave(nic);
	tcp_progress_wake(nic);
	pthread_join(nic->thread, NULL);

	pthread_mutex_lock(&nic->lock);
	nic_free_objects(nic);
	nic_stop_fds(nic);
	/* waiters wake, find their handle stale and return */
	for (i = 0; i < TCP_NB_CONDS; i++)
		pthread_cond_broadcast(&nic->conds[i]);
	pthread_cond_broadcast(&nic->cm_cond);
	pthread_mutex_unlock(&nic->lock);

	pthread_mutex_lock(&nics_lock);
	slot_used[nic->slot] = false;
	pthread_mutex_unlock(&nics_lock);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_query_nic(VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *Attributes)
{
	struct tcp_nic *nic;

	if (Attributes == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	memset(Attributes, 0, sizeof(*Attributes));
	snprintf(Attributes->Name, sizeof(Attributes->Name), "%s", TCP_NIC_NAME);
	Attributes->HardwareVersion = 0;
	Attributes->ProviderVersion = TCP_WIRE_VERSION;
	Attributes->NicAddressLen = sizeof(nic->addr);
	Attributes->LocalNicAddress = nic->addr;
	Attributes->ThreadSafe = VIP_TRUE;
	Attributes->MaxDiscriminatorLen = TCP_WIRE_MAX_DISC;
	Attributes->MaxRegisterBytes = TCP_MAX_REGISTER_BYTES;
	Attributes->MaxRegisterRegions = TCP_MAX_REGIONS;
	Attributes->MaxRegisterBlockBytes = TCP_MAX_REGISTER_BYTES;
	Attributes->MaxVI = TCP_MAX_VI;
	Attributes->MaxDescriptorsPerQueue = TCP_MAX_DESC_PER_QUEUE;
	Attributes->MaxSegmentsPerDesc = TCP_MAX_SEGS;
	Attributes->MaxCQ = TCP_MAX_CQ;
	Attributes->MaxCQEntries = TCP_MAX_CQ_ENTRIES;
	Attributes->MaxTransferSize = TCP_MAX_TRANSFER;
	/* a stream has no frame size: a message is one frame of any size */
	Attributes->NativeMTU = TCP_MAX_TRANSFER;
	Attributes->MaxPtags = TCP_MAX_PTAGS;
	/* TCP gives what Reliable Delivery asks (VIA §2.5.2); Reliable
	 * Reception would need the peer's word for each placement (§2.5.3) */
	Attributes->ReliabilityLevelSupport = VIP_SERVICE_UNRELIABLE | VIP_SERVICE_RELIABLE_DELIVERY;
	Attributes->RDMAReadSupport = VIP_TRUE;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

/* ---- asynchronous errors (VIA §7, §9.9.1) ------------------------------- */

void
tcp_async_error(struct tcp_nic *nic, VIP_ERROR_CODE code, VIP_RESOURCE_CODE res,
		const struct tcp_vi *vi, VIP_DESCRIPTOR *desc, uint32_t op)
{
	struct tcp_async *e;

	if (nic->nb_errors >= MAX_ASYNC || (e = calloc(1, sizeof(*e))) == NULL)
		return;
	e->desc.NicHandle = tcp_handle_of(nic, NULL);
	e->desc.ViHandle = vi != NULL ? tcp_handle_of(nic, &vi->obj) : NULL;
	e->desc.CqHandle = NULL;
	e->desc.DescriptorPtr = desc;
	e->desc.OpCode = op;
	e->desc.ResourceCode = res;
	e->desc.ErrorCode = code;
	STAILQ_INSERT_TAIL(&nic->errors, e, link);
	nic->nb_errors++;
	/* the progress thread calls the handler, never with the lock held */
	if (!pthread_equal(pthread_self(), nic->thread))
		tcp_progress_wake(nic);
}

VIP_RETURN
tcp_error_callback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context, VIP_ERROR_HANDLER Handler)
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* NULL restores the default handler, which logs (VIA §9.9.1) */
	nic->err_handler = Handler;
	nic->err_ctx = Context;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

/* ---- name service (Intel VI Developer's Guide) -------------------------- */

/*
 * Names are "HOST:PORT" or "HOST" (this NIC's port): the NIC address of a
 * tcp NIC listening there. HOST is what getaddrinfo() resolves.
 */

VIP_RETURN
tcp_ns_init(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo)
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (NSInitInfo != NULL) {
		/* nothing to configure: getaddrinfo() is the name service */
		tcp_nic_leave(nic);
		return VIP_INVALID_PARAMETER;
	}
	nic->ns_open = true;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_ns_shutdown(VIP_NIC_HANDLE NicHandle)
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	bool was_open;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	was_open = nic->ns_open;
	nic->ns_open = false;
	tcp_nic_leave(nic);
	return was_open ? VIP_SUCCESS : VIP_ERROR_NAMESERVICE;
}

/* Resolve @p nic's handle for a name service call: VipNSInit must have run.
 * The first step of VipNSGetHostByName and VipNSGetHostByAddr: their
 * VIP_RETURN if it fails. */
static VIP_RETURN
ns_enter(VIP_NIC_HANDLE NicHandle, uint8_t port[2])
{
	struct tcp_nic *nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	bool open;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	open = nic->ns_open;
	memcpy(port, nic->addr + 4, 2);
	tcp_nic_leave(nic);
	return open ? VIP_SUCCESS : VIP_ERROR_NAMESERVICE;
}

VIP_RETURN
tcp_ns_get_host_by_name(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name, VIP_NET_ADDRESS *Address,
			VIP_ULONG NameIndex)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char host[256];
	const char *colon, *service = NULL;
	uint8_t own_port[2];
	VIP_ULONG index = 0;
	VIP_RETURN ret;
	size_t hlen;

	ret = ns_enter(NicHandle, own_port);
	if (ret != VIP_SUCCESS)
		return ret;
	if (Name == NULL || Address == NULL)
		return VIP_INVALID_PARAMETER;
	colon = strrchr(Name, ':');
	hlen = colon != NULL ? (size_t)(colon - Name) : strlen(Name);
	if (hlen >= sizeof(host))
		return VIP_INVALID_PARAMETER;
	memcpy(host, Name, hlen);
	host[hlen] = '\0';
	if (colon != NULL)
		service = colon + 1;
	if (host[0] == '\0' || (service != NULL && service[0] == '\0'))
		return VIP_ERROR_NAMESERVICE;
	if (getaddrinfo(host, service, &hints, &res) != 0)
		return VIP_ERROR_NAMESERVICE;
	/* NameIndex picks among the name's IPv4 addresses, in resolver order */
	ret = VIP_ERROR_NAMESERVICE;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		const struct sockaddr_in *sa = (const struct sockaddr_in *)ai->ai_addr;

		if (ai->ai_family != AF_INET || index++ != NameIndex)
			continue;
		/* the host part only; the discriminator is the caller's (§9.10.8) */
		Address->HostAddressLen = 6;
		memcpy(Address->HostAddress, &sa->sin_addr, 4);
		if (service != NULL)
			memcpy(Address->HostAddress + 4, &sa->sin_port, 2);
		else
			memcpy(Address->HostAddress + 4, own_port, 2);
		ret = VIP_SUCCESS;
		break;
	}
	freeaddrinfo(res);
	return ret;
}

VIP_RETURN
tcp_ns_get_host_by_addr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *Address, VIP_CHAR *Name,
			VIP_ULONG *NameLen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[NI_MAXHOST], name[NI_MAXHOST + 8];
	uint8_t own_port[2];
	VIP_RETURN ret;
	size_t need;

	ret = ns_enter(NicHandle, own_port);
	if (ret != VIP_SUCCESS)
		return ret;
	if (Address == NULL || Name == NULL || NameLen == NULL || Address->HostAddressLen != 6)
		return VIP_INVALID_PARAMETER;
	memcpy(&sa.sin_addr, Address->HostAddress, 4);
	memcpy(&sa.sin_port, Address->HostAddress + 4, 2);
	if (getnameinfo((struct sockaddr *)&sa, sizeof(sa), host, sizeof(host), NULL, 0,
			NI_NAMEREQD) != 0)
		return VIP_ERROR_NAMESERVICE;
	/* "HOST:PORT", which VipNSGetHostByName takes back */
	snprintf(name, sizeof(name), "%s:%u", host, ntohs(sa.sin_port));
	need = strlen(name) + 1;
	if (*NameLen < need) {
		*NameLen = need;
		return VIP_ERROR_RESOURCE;
	}
	memcpy(Name, name, need);
	*NameLen = need;
	return VIP_SUCCESS;
}
