/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NIC sessions (VIA §9.2), the control transport, error reporting
 * (VIA §9.9), system management information (VIA §9.8.6) and the name
 * service.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "vipl_priv.h"

#define DEFAULT_SOCKET "/run/viad/viad.sock"

void
vipl_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "libvipl-dpdk: %s\n", line);
}

struct vipl_nic *
vipl_nic_get(VIP_NIC_HANDLE handle)
{
	return vipl_dpdk_dp_get(handle, VIPL_DPDK_OBJ_NIC);
}

struct vipl_call {
	LIST_ENTRY(vipl_call) link;
	uint32_t seq;
	uint16_t op;
	bool done;
	int status;
	int fd;
	void *rep;
};

/* Read one reply and hand it to its caller. Called with ctl_lock held by
 * the one reader; drops the lock while blocked in the socket. */
static int
read_one_reply(struct vipl_nic *nic)
{
	uint8_t body[VIA_CTL_BODY_MAX];
	struct vipl_call *c;
	struct via_ctl_hdr h;
	int fd = -1, rc;

	nic->reader_active = true;
	pthread_mutex_unlock(&nic->ctl_lock);
	rc = via_ctl_recv(nic->sock, &h, body, 1, &fd);
	pthread_mutex_lock(&nic->ctl_lock);
	nic->reader_active = false;
	if (rc == 0) {
		LIST_FOREACH(c, &nic->calls, link) {
			if (c->seq == h.seq && c->op == h.op)
				break;
		}
		if (c == NULL) {
			rc = -EPROTO;
		} else {
			if (c->rep != NULL)
				memcpy(c->rep, body, h.len);
			c->status = h.status;
			c->fd = fd;
			fd = -1;
			c->done = true;
			LIST_REMOVE(c, link);
		}
	}
	if (fd >= 0)
		close(fd);
	pthread_cond_broadcast(&nic->ctl_cond);
	return rc;
}

static void
nic_lost(struct vipl_nic *nic, unsigned op, int rc)
{
	if (!nic->dead)
		vipl_log("%s: lost viad (%s); the NIC is unusable until reopened",
			 via_ctl_op_name(op), strerror(-rc));
	/* atomic: vipl_nic_alive() reads it without the lock (found by TSan) */
	__atomic_store_n(&nic->dead, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&nic->ctl_cond);
}

int
vipl_ctl_call_fd(struct vipl_nic *nic, unsigned op, const void *req, int fd_in, void *rep,
		 int *fd_out)
{
	struct vipl_call call = { .op = (uint16_t)op, .fd = -1, .rep = rep };
	struct via_ctl_hdr h;
	int rc;

	pthread_mutex_lock(&nic->ctl_lock);
	if (nic->dead) {
		pthread_mutex_unlock(&nic->ctl_lock);
		return -ECONNRESET;
	}
	call.seq = ++nic->seq;
	LIST_INSERT_HEAD(&nic->calls, &call, link);
	via_ctl_hdr_init(&h, op, 0, call.seq, 0);
	rc = via_ctl_send(nic->sock, &h, req, fd_in);
	if (rc != 0)
		nic_lost(nic, op, rc);
	while (!call.done && !nic->dead) {
		if (nic->reader_active) {
			pthread_cond_wait(&nic->ctl_cond, &nic->ctl_lock);
			continue;
		}
		rc = read_one_reply(nic);
		if (rc != 0)
			nic_lost(nic, op, rc);
	}
	if (!call.done) {
		LIST_REMOVE(&call, link);
		pthread_cond_broadcast(&nic->ctl_cond);
	}
	pthread_mutex_unlock(&nic->ctl_lock);
	rc = call.done ? call.status : -ECONNRESET;
	/* an fd comes with every reply of an fd-carrying op; only a success
	 * carries a meaningful one */
	if (call.fd >= 0 && (rc != 0 || fd_out == NULL)) {
		close(call.fd);
		call.fd = -1;
	}
	if (fd_out != NULL)
		*fd_out = call.fd;
	return rc;
}

int
vipl_ctl_call(struct vipl_nic *nic, unsigned op, const void *req, void *rep, int *fd_out)
{
	return vipl_ctl_call_fd(nic, op, req, -1, rep, fd_out);
}

int
vipl_ctl_give_fd(struct vipl_nic *nic, enum via_ctl_client_fd_kind kind, int fd)
{
	struct via_ctl_client_fd_req req = { .kind = kind };

	return vipl_ctl_call_fd(nic, VIA_CTL_CLIENT_FD, &req, fd, NULL, NULL);
}

void
vipl_futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

bool
vipl_nic_alive(struct vipl_nic *nic)
{
	struct pollfd p = { .fd = nic->sock, .events = 0 };

	if (__atomic_load_n(&nic->dead, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&nic->shm->daemon_state, __ATOMIC_ACQUIRE) != VIA_DAEMON_RUNNING)
		return false;
	/* viad killed without a word: its end of the socket is gone */
	return poll(&p, 1, 0) == 0 || !(p.revents & (POLLHUP | POLLERR));
}

void
vipl_futex_wait(uint32_t *word, uint32_t val, uint32_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	syscall(SYS_futex, word, FUTEX_WAIT, val, ms == UINT32_MAX ? NULL : &ts, NULL, 0);
}

/* A socket connected to viad's control socket. @return the fd, or -errno */
static int
connect_viad(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* a set-user-ID program talks to the system's viad only */
	const char *path = secure_getenv("VIAD_SOCKET");
	int fd;

	if (path == NULL || path[0] == '\0')
		path = DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		vipl_log("cannot reach viad at %s: %s (is viad running? VIAD_SOCKET selects "
			 "another socket)", path, strerror(errno));
		close(fd);
		return err;
	}
	return fd;
}

static void
default_error_handler(VIP_PVOID Context, VIP_ERROR_DESCRIPTOR *e)
{
	(void)Context;
	vipl_log("asynchronous error %s (resource %d, VI %p, descriptor %p, op 0x%lx)",
		 VipDpdkErrorCodeString(e->ErrorCode), (int)e->ResourceCode, e->ViHandle,
		 (void *)e->DescriptorPtr, e->OpCode);
}

static void
nic_free(struct vipl_nic *nic)
{
	if (nic->shm != NULL)
		munmap(nic->shm, nic->shm_size);
	if (nic->sock >= 0)
		close(nic->sock);
	if (nic->wake_fd >= 0)
		close(nic->wake_fd);
	if (nic->witness_fd >= 0)
		close(nic->witness_fd);
	pthread_mutex_destroy(&nic->ctl_lock);
	pthread_cond_destroy(&nic->ctl_cond);
	pthread_mutex_destroy(&nic->lock);
	vipl_obj_put(&nic->obj);
}

/*
 * Tie the session to this program, not to the process (issue 12): viad
 * moves copied regions through this address space's /proc/self/mem, which
 * stops working when an exec replaces it, and watches a pipe whose write
 * end closes at exec or exit. A program that clears close-on-exec on the
 * control socket and execs another one thus leaves viad no way into the new
 * program's memory, whatever it does with its fds.
 */
static int
give_program_fds(struct vipl_nic *nic)
{
	int pipefd[2], mem, rc;

	/* a process that changed its ids is not dumpable: its own mem file
	 * is root's. It still works, with in-place and provider memory only */
	mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (mem < 0)
		vipl_log("VipOpenNic: /proc/self/mem: %s: memory viad cannot share in place "
			 "(a private file mapping, read-only pages) cannot be registered",
			 strerror(errno));
	rc = mem < 0 ? 0 : vipl_ctl_give_fd(nic, VIA_CTL_FD_PROC_MEM, mem);
	if (mem >= 0)
		close(mem);
	if (rc != 0)
		return rc;
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -errno;
	rc = vipl_ctl_give_fd(nic, VIA_CTL_FD_EXEC_WITNESS, pipefd[0]);
	close(pipefd[0]);
	if (rc != 0) {
		close(pipefd[1]);
		return rc;
	}
	nic->witness_fd = pipefd[1];
	return 0;
}

static int
nic_open(const char *name, struct vipl_nic **out)
{
	struct via_ctl_open_req req = { .abi_version = VIA_ABI_VERSION };
	struct via_ctl_open_rep rep;
	struct vipl_nic *nic;
	void *va;
	int fd, rc;

	if (strlen(name) >= sizeof(req.nic_name))
		return -EINVAL;
	strcpy(req.nic_name, name);
	nic = vipl_obj_get_zeroed(VIPL_DPDK_OBJ_NIC, sizeof(*nic));
	if (nic == NULL)
		return -ENOMEM;
	nic->wake_fd = -1;
	nic->witness_fd = -1;
	pthread_mutex_init(&nic->ctl_lock, NULL);
	pthread_cond_init(&nic->ctl_cond, NULL);
	LIST_INIT(&nic->calls);
	pthread_mutex_init(&nic->lock, NULL);
	LIST_INIT(&nic->allocs);
	LIST_INIT(&nic->cqs);
	LIST_INIT(&nic->vis);
	nic->sock = connect_viad();
	if (nic->sock < 0) {
		rc = nic->sock;
		goto fail;
	}
	rc = vipl_ctl_call(nic, VIA_CTL_OPEN, &req, &rep, &fd);
	if (rc == -EPROTO)
		vipl_log("VipOpenNic: viad refused this library's segment ABI %u (a viad of "
			 "another version: update libvipl-dpdk or viad)", VIA_ABI_VERSION);
	if (rc != 0)
		goto fail;
	va = mmap(NULL, rep.shm_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (va == MAP_FAILED) {
		rc = -ENOMEM;
		goto fail;
	}
	nic->shm = va;
	nic->shm_size = rep.shm_size;
	if (nic->shm->cookie != VIA_SHM_COOKIE || nic->shm->abi_version != VIA_ABI_VERSION ||
	    nic->shm->segment_size != rep.shm_size) {
		vipl_log("VipOpenNic: viad's segment has an unknown layout (ABI %u, want %u)",
			 nic->shm->abi_version, VIA_ABI_VERSION);
		rc = -EPROTO;
		goto fail;
	}
	nic->info = rep.nic;
	nic->error_handler = default_error_handler;
	if (nic->shm->errq_off + via_shm_errq_size(nic->shm->errq_capacity) > nic->shm_size ||
	    (uint64_t)nic->shm->bell_off +
	    ((uint64_t)nic->shm->bell_words + via_bell_summary_words(nic->shm->bell_words)) * 8 >
		    nic->shm_size ||
	    nic->shm->bell_off % 8 != 0) {
		rc = -EPROTO;
		goto fail;
	}
	nic->bells = (uint64_t *)((uint8_t *)nic->shm + nic->shm->bell_off);
	rc = vipl_ctl_call(nic, VIA_CTL_WAKE_FD, NULL, NULL, &nic->wake_fd);
	if (rc == 0)
		rc = give_program_fds(nic);
	if (rc != 0)
		goto fail;
	nic->errq_sh = (struct via_shm_errq *)((uint8_t *)nic->shm + nic->shm->errq_off);
	rc = via_ring_attach(&nic->errq, &nic->errq_sh->ring, nic->errq_sh + 1,
			     nic->shm->errq_capacity, sizeof(struct via_async_error), false);
	if (rc == 0)
		rc = vipl_provider_start(nic);
	if (rc != 0)
		goto fail;
	vipl_handle_publish(&nic->obj);
	*out = nic;
	return 0;
fail:
	nic_free(nic);
	return rc;
}

VIPL_EXPORT VIP_RETURN
VipOpenNic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle)
{
	struct vipl_nic *nic;
	int rc;

	if (DeviceName == NULL || NicHandle == NULL)
		return VIP_INVALID_PARAMETER;
	rc = nic_open(DeviceName, &nic);
	if (rc == -ENODEV)
		vipl_log("VipOpenNic: viad has no NIC called \"%s\"", DeviceName);
	if (rc != 0)
		return via_vip_return(rc == -ECONNREFUSED || rc == -ENOENT ? -ECONNRESET : rc);
	*NicHandle = vipl_handle_of(&nic->obj);
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipCloseNic(VIP_NIC_HANDLE NicHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	bool alive;

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	alive = vipl_nic_alive(nic);
	vipl_handle_retire(&nic->obj);
	/* closing the socket is the whole protocol: viad frees everything the
	 * session still holds; here the handles of its VIs and CQs retire */
	vipl_provider_stop(nic);
	/* wake a thread blocked on the socket (say in VipConnectWait) and let
	 * every call in flight return before the NIC goes */
	pthread_mutex_lock(&nic->ctl_lock);
	__atomic_store_n(&nic->dead, true, __ATOMIC_RELAXED);
	shutdown(nic->sock, SHUT_RDWR);
	while (nic->reader_active || !LIST_EMPTY(&nic->calls))
		pthread_cond_wait(&nic->ctl_cond, &nic->ctl_lock);
	pthread_mutex_unlock(&nic->ctl_lock);
	vipl_vi_close_all(nic);
	vipl_cq_close_all(nic);
	vipl_mem_close(nic);
	nic_free(nic);
	/* released either way; the caller learns viad was gone */
	return alive ? VIP_SUCCESS : VIP_ERROR_RESOURCE;
}

VIPL_EXPORT VIP_RETURN
VipQueryNic(VIP_NIC_HANDLE NicHandle, VIP_NIC_ATTRIBUTES *Attributes)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	const struct via_ctl_nic_info *i;

	if (nic == NULL || Attributes == NULL)
		return VIP_INVALID_PARAMETER;
	if (!vipl_nic_alive(nic))
		return VIP_ERROR_RESOURCE;
	i = &nic->info;
	memset(Attributes, 0, sizeof(*Attributes));
	snprintf(Attributes->Name, sizeof(Attributes->Name), "%s", i->name);
	Attributes->HardwareVersion = i->hardware_version;
	Attributes->ProviderVersion = i->provider_version;
	Attributes->NicAddressLen = sizeof(i->mac);
	Attributes->LocalNicAddress = i->mac;
	Attributes->ThreadSafe = VIP_TRUE;
	Attributes->MaxDiscriminatorLen = (VIP_UINT16)i->max_discriminator_len;
	Attributes->MaxRegisterBytes = i->max_register_bytes;
	Attributes->MaxRegisterRegions = i->max_register_regions;
	Attributes->MaxRegisterBlockBytes = i->max_register_block_bytes;
	Attributes->MaxVI = i->max_vi;
	Attributes->MaxDescriptorsPerQueue = i->max_desc_per_queue;
	Attributes->MaxSegmentsPerDesc = i->max_segments_per_desc;
	Attributes->MaxCQ = i->max_cq;
	Attributes->MaxCQEntries = i->max_cq_entries;
	Attributes->MaxTransferSize = i->max_transfer_size;
	Attributes->NativeMTU = i->mtu;
	Attributes->MaxPtags = i->max_ptags;
	Attributes->ReliabilityLevelSupport = (VIP_RELIABILITY_LEVEL)i->reliability_support;
	Attributes->RDMAReadSupport = i->rdma_read_support ? VIP_TRUE : VIP_FALSE;
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipErrorCallback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context,
		 void (*Handler)(VIP_PVOID Context, VIP_ERROR_DESCRIPTOR *ErrorDesc))
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (!vipl_nic_alive(nic))
		return VIP_ERROR_RESOURCE;
	pthread_mutex_lock(&nic->lock);
	nic->error_handler = Handler != NULL ? Handler : default_error_handler;
	nic->error_context = Handler != NULL ? Context : NULL;
	pthread_mutex_unlock(&nic->lock);
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipQuerySystemManagementInfo(VIP_NIC_HANDLE NicHandle, VIP_ULONG InfoType, VIP_PVOID SysManInfo)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);
	unsigned op;

	if (nic == NULL || SysManInfo == NULL)
		return VIP_INVALID_PARAMETER;
	switch (InfoType) {
	case VIP_DPDK_SMI_COUNTERS:
		op = VIA_CTL_SMI_COUNTERS;
		break;
	case VIP_DPDK_SMI_PORT:
		op = VIA_CTL_SMI_PORT;
		break;
	default:
		return VIP_INVALID_PARAMETER;
	}
	return via_vip_return(vipl_ctl_call(nic, op, NULL, SysManInfo, NULL));
}

_Static_assert(sizeof(VIP_DPDK_COUNTERS) == sizeof(struct via_ctl_counters),
	       "SMI_COUNTERS reply is copied into VIP_DPDK_COUNTERS");
_Static_assert(sizeof(VIP_DPDK_PORT_INFO) == sizeof(struct via_ctl_port_info),
	       "SMI_PORT reply is copied into VIP_DPDK_PORT_INFO");

/* ---- name service ------------------------------------------------------ */

VIPL_EXPORT VIP_RETURN
VipNSInit(VIP_NIC_HANDLE NicHandle, VIP_PVOID NSInitInfo)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);

	(void)NSInitInfo;  /* viad's hosts file is the only source */
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (!vipl_nic_alive(nic))
		return VIP_ERROR_RESOURCE;
	__atomic_store_n(&nic->ns_open, true, __ATOMIC_RELAXED);
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipNSShutdown(VIP_NIC_HANDLE NicHandle)
{
	struct vipl_nic *nic = vipl_nic_get(NicHandle);

	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	if (!__atomic_exchange_n(&nic->ns_open, false, __ATOMIC_RELAXED))
		return VIP_ERROR_NAMESERVICE;
	return VIP_SUCCESS;
}

static struct vipl_nic *
ns_nic(VIP_NIC_HANDLE h, const char *call, VIP_RETURN *ret)
{
	struct vipl_nic *nic = vipl_nic_get(h);

	*ret = VIP_INVALID_PARAMETER;
	if (nic != NULL && !__atomic_load_n(&nic->ns_open, __ATOMIC_RELAXED)) {
		vipl_log("%s: the name service is not initialised (call VipNSInit first)", call);
		*ret = VIP_ERROR_NAMESERVICE;
		return NULL;
	}
	return nic;
}

VIPL_EXPORT VIP_RETURN
VipNSGetHostByName(VIP_NIC_HANDLE NicHandle, VIP_CHAR *Name, VIP_NET_ADDRESS *VipAddress,
		   VIP_ULONG NameIndex)
{
	struct via_ctl_ns_by_name_req req = { .index = (uint32_t)NameIndex };
	struct via_ctl_mac rep;
	struct vipl_nic *nic;
	VIP_RETURN ret;
	int rc;

	nic = ns_nic(NicHandle, "VipNSGetHostByName", &ret);
	if (nic == NULL)
		return ret;
	if (Name == NULL || VipAddress == NULL || strlen(Name) >= sizeof(req.name) ||
	    NameIndex > UINT32_MAX)
		return VIP_INVALID_PARAMETER;
	strcpy(req.name, Name);
	rc = vipl_ctl_call(nic, VIA_CTL_NS_BY_NAME, &req, &rep, NULL);
	if (rc == -ENOENT)
		return VIP_ERROR_NAMESERVICE;
	if (rc != 0)
		return via_vip_return(rc);
	/* the host part only; the discriminator is the caller's (§9.10.8) */
	VipAddress->HostAddressLen = sizeof(rep.mac);
	memcpy(VipAddress->HostAddress, rep.mac, sizeof(rep.mac));
	return VIP_SUCCESS;
}

VIPL_EXPORT VIP_RETURN
VipNSGetHostByAddr(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *VipAddress, VIP_CHAR *Name,
		   VIP_ULONG *NameLen)
{
	struct via_ctl_ns_by_addr_rep rep;
	struct via_ctl_mac req;
	struct vipl_nic *nic;
	VIP_RETURN ret;
	size_t need;
	int rc;

	memset(&req, 0, sizeof(req));
	nic = ns_nic(NicHandle, "VipNSGetHostByAddr", &ret);
	if (nic == NULL)
		return ret;
	if (VipAddress == NULL || Name == NULL || NameLen == NULL ||
	    VipAddress->HostAddressLen != sizeof(req.mac))
		return VIP_INVALID_PARAMETER;
	memcpy(req.mac, VipAddress->HostAddress, sizeof(req.mac));
	rc = vipl_ctl_call(nic, VIA_CTL_NS_BY_ADDR, &req, &rep, NULL);
	if (rc == -ENOENT)
		return VIP_ERROR_NAMESERVICE;
	if (rc != 0)
		return via_vip_return(rc);
	rep.name[sizeof(rep.name) - 1] = '\0';
	need = strlen(rep.name) + 1;
	if (*NameLen < need) {
		*NameLen = need;
		return VIP_ERROR_RESOURCE;
	}
	memcpy(Name, rep.name, need);
	*NameLen = need;
	return VIP_SUCCESS;
}

/* ---- names of codes ------------------------------------------------------ */

VIPL_EXPORT const char *
VipDpdkReturnString(VIP_RETURN Code)
{
	static const char *const names[] = {
		"VIP_SUCCESS", "VIP_NOT_DONE", "VIP_INVALID_PARAMETER", "VIP_ERROR_RESOURCE",
		"VIP_TIMEOUT", "VIP_REJECT", "VIP_INVALID_RELIABILITY_LEVEL", "VIP_INVALID_MTU",
		"VIP_INVALID_QOS", "VIP_INVALID_PTAG", "VIP_INVALID_RDMAREAD",
		"VIP_DESCRIPTOR_ERROR", "VIP_INVALID_STATE", "VIP_ERROR_NAMESERVICE",
		"VIP_NO_MATCH",
	};

	if ((unsigned)Code >= sizeof(names) / sizeof(names[0]))
		return "VIP_UNKNOWN";
	return names[Code];
}

VIPL_EXPORT const char *
VipDpdkErrorCodeString(VIP_ERROR_CODE Code)
{
	static const char *const names[] = {
		"VIP_ERROR_POST_DESC", "VIP_ERROR_CONN_LOST", "VIP_ERROR_RECVQ_EMPTY",
		"VIP_ERROR_VI_OVERRUN", "VIP_ERROR_RDMAW_PROT", "VIP_ERROR_RDMAW_DATA",
		"VIP_ERROR_RDMAW_ABORT", "VIP_ERROR_RDMAR_PROT", "VIP_ERROR_COMP_PROT",
		"VIP_ERROR_RDMA_TRANSPORT", "VIP_ERROR_CATASTROPHIC",
	};

	if ((unsigned)Code >= sizeof(names) / sizeof(names[0]))
		return "VIP_UNKNOWN";
	return names[Code];
}
