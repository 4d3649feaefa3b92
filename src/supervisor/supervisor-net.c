/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdnoreturn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <net/if.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <linux/if_packet.h>
#include <net/if_arp.h>
#include <net/ethernet.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "helper.h"
#include "macro.h"
#include "netlink-routes.h"
#include "parse-util.h"
#include "strv.h"
#include "supervisor-net.h"
#include "util.h"

#define CANARY_PEER "canary1"
#define DENY_PEER "sink"
#define SLIRP_MTU 65520u


/*
 * A new network namespace, as an fd, made by a short-lived child: nobody can
 * enter the namespace we started in again (the user namespace owning it is
 * not ours), so we never leave it that way. With disable_ipv6 the child turns
 * IPv6 off in it before anything else exists there.
 */
static int new_netns(bool disable_ipv6, int *ret) {
        int sync[2], fd = -1, r = 0;
        char path[64], c = 0;
        pid_t pid;

        if (pipe2(sync, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(sync[0]);
                close(sync[1]);
                return r;
        }
        if (pid == 0) {
                close(sync[0]);
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(1);
                if (disable_ipv6 && netlink_disable_ipv6() < 0)
                        _exit(2);
                if (write(sync[1], "n", 1) != 1)
                        _exit(3);
                /* Held until the parent has its fd: it kills us then. */
                for (;;)
                        pause();
        }
        close(sync[1]);
        if (read(sync[0], &c, 1) != 1 || c != 'n')
                r = -EPERM;
        close(sync[0]);
        if (r >= 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
        }
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        if (r < 0)
                return r;
        *ret = fd;
        return 0;
}

/*
 * The network helper (slirp4netns or lazaret-egress): its exit pipe (its
 * read end passed as fd 4; closing the write end, kept in
 * n->slirp_exit_fd, tells it to go) and its start as a supervised helper.
 */
static int start_network_helper(SupNet *n, Helpers *helpers, const char *name, char **argv, bool keep_stderr,
                                char **ret_error) {
        _cleanup_close_ int exit_r = -EBADF;
        int exitp[2];

        if (pipe2(exitp, O_CLOEXEC) < 0)
                return errorf(ret_error, -errno, "cannot create the exit pipe for %s: %s", name, strerror(errno));
        exit_r = exitp[0];
        n->slirp_exit_fd = exitp[1];
        return helper_start(helpers, &(HelperSpec) {
                                 .name = name,
                                 .role = "the network helper",
                                 .death_means = "network readiness withdrawn; the sandbox cannot get its network back "
                                                "and is stopped",
                                 .not_ready_hint = "does /dev/net/tun exist and may this user open it?",
                                 .argv = argv,
                                 .pass_fds = &exit_r,
                                 .n_pass_fds = 1,
                                 .ready_timeout_ms = 10000,
                                 .keep_stderr = keep_stderr,
                         }, &n->slirp_pid, ret_error);
}

/*
 * slirp4netns, a supervised helper: readiness on --ready-fd (it writes "1"
 * once tap0 exists), and --exit-fd, whose write end the supervisor keeps
 * until it exits: closing it ends slirp4netns.
 */
static int start_slirp(SupNet *n, const SupNetParams *p, Helpers *helpers, char **ret_error) {
        _Static_assert(HELPER_READY_FD == 3 && HELPER_FIRST_PASS_FD == 4, "slirp4netns' fd arguments");
        /* --api-socket: the coordinator's own path (its published ports,
         * spec 4.5); slirp4netns binds it before it enters its sandbox. */
        char *argv[] = {
                (char *) p->slirp4netns, (char *) "--mtu=65520", (char *) "--disable-host-loopback",
                (char *) "--cidr", (char *) NET_SLIRP_CIDR, (char *) "--enable-sandbox", (char *) "--enable-seccomp",
                (char *) "--ready-fd=3", (char *) "--exit-fd=4", (char *) "--netns-type=path",
                (char *) "--api-socket", (char *) p->api_socket,
                (char *) p->netns_path, (char *) net_links[NET_LINK_TAP].name, NULL,
        };

        return start_network_helper(n, helpers, "slirp4netns", argv, false, ret_error);
}

/*
 * lazaret-egress in slirp4netns' place, for a policy with host rules (spec
 * 4.5, "Egress by name"): the same readiness and exit fds and API socket
 * protocol, so the rest of the start, the attestation and published ports
 * do not change. Its listeners go to a private directory beside the API
 * socket; the host rules are the policy's own (so the digest attested
 * covers what the helper enforces), and so is the address floor. The name
 * canary's socket, in that directory, is bound later by the canary
 * responder (canary_child()); the helper connects to it only when the
 * probe's allowed name canary arrives.
 */
static int start_egress(SupNet *n, const SupNetParams *p, Helpers *helpers, char **ret_error) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *run_dir = NULL;
        const char *slash = strrchr(p->api_socket, '/');
        int k;

        if (!p->egress)
                return errorf(ret_error, -EINVAL, "the network policy has host rules, but no egress helper was given");
        if (!slash || asprintf(&run_dir, "%.*s/egress", (int) (slash - p->api_socket), p->api_socket) < 0)
                return errorf(ret_error, -ENOMEM, "out of memory");
        if (mkdir(run_dir, 0700) < 0 && errno != EEXIST)
                return errorf(ret_error, -errno, "cannot create %s: %s", run_dir, strerror(errno));
        k = snprintf(n->canary_socket, sizeof(n->canary_socket), "%s/canary", run_dir);
        if (k < 0 || (size_t) k >= sizeof(n->canary_socket))
                return errorf(ret_error, -ENAMETOOLONG, "the egress helper's directory %s is too long for a socket path",
                              run_dir);
        if (strv_extend(&argv, p->egress) < 0 || strv_extendf(&argv, "--run-dir=%s", run_dir) < 0 ||
            strv_extendf(&argv, "--api-socket=%s", p->api_socket) < 0 || strv_extend(&argv, "--ready-fd=3") < 0 ||
            strv_extend(&argv, "--exit-fd=4") < 0)
                return errorf(ret_error, -ENOMEM, "out of memory");
#if ENABLE_TEST_HOOKS
        if (!p->fault_no_name_canary)
#endif
                if (strv_extendf(&argv, "--canary-socket=%s", n->canary_socket) < 0)
                        return errorf(ret_error, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n->policy->n_hosts; i++)
                if (strv_extendf(&argv, "--allow-host=%s", n->policy->hosts[i]) < 0)
                        return errorf(ret_error, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n->policy->n_routes; i++) {
                const NetRoute *r = &n->policy->routes[i];
                const Cidr own = { NET_IP4(10, 137, 0, 0), 16 };
                char buf[CIDR_STRING_MAX];

                /* The default route and Lazaret's own topology are not the floor's. */
                if (r->dst.prefixlen == 0 || cidr_contains(&own, &r->dst))
                        continue;
                if (strv_extendf(&argv, "--%s-prefix=%s", r->verdict == NET_ALLOW ? "allow" : "deny",
                                 cidr_to_string(&r->dst, buf)) < 0)
                        return errorf(ret_error, -ENOMEM, "out of memory");
        }
        if (strv_extend(&argv, p->netns_path) < 0 || strv_extend(&argv, net_links[NET_LINK_TAP].name) < 0)
                return errorf(ret_error, -ENOMEM, "out of memory");
        return start_network_helper(n, helpers, "lazaret-egress", argv, true, ret_error);
}

/*
 * A connection to the name canary, carried by the egress helper after it
 * checked the probe's ClientHello: that record is read first (the probe
 * sends one TLS record), because closing with bytes unread would reset the
 * helper's end, which could drop the answer before it relays it; then the
 * challenge. Anything else gets no answer, and the probe reports that.
 * Read as it arrives, beside the other canaries (responder()): the probe
 * runs its canaries at once, and the address canary's answer must not
 * wait for the helper to relay a ClientHello.
 */
typedef struct NameCanaryConn {
        int fd;                 /* -1: a free slot */
        uint8_t head[5];        /* the record's header */
        size_t have, need;      /* bytes of the record read, and its length once the header is in */
} NameCanaryConn;

#define NAME_CANARY_CONNS 8

/* Reads what has arrived; true when the connection is done with (answered, or to be closed unanswered). */
static bool name_canary_read(NameCanaryConn *c, const char *line, size_t len) {
        uint8_t buf[4096];

        while (c->have < c->need) {
                size_t want = c->need - c->have;
                ssize_t k;

                if (c->have < sizeof(c->head))
                        want = sizeof(c->head) - c->have;
                k = read(c->fd, buf, want < sizeof(buf) ? want : sizeof(buf));
                if (k < 0)
                        return errno != EAGAIN && errno != EINTR;
                if (k == 0)
                        return true;
                if (c->have < sizeof(c->head))
                        memcpy(c->head + c->have, buf, (size_t) k);
                c->have += (size_t) k;
                if (c->have == sizeof(c->head)) {
                        if (c->head[0] != 22)
                                return true;
                        c->need = sizeof(c->head) + ((size_t) c->head[3] << 8 | c->head[4]);
                }
        }
        (void) !write(c->fd, line, len);
        return true;
}

/*
 * The supervisor's word to the responder once the report is judged, on the
 * socket it has held since it started: stop
 * answering, delete the canary link (its own end, which takes canary0
 * with it) and exit, 0 when the link is gone. The deletion waits for the
 * kernel's RCU grace periods (15 to 20 ms); here it no longer holds up the
 * start (supnet_teardown_canary()).
 */
#define RESPONDER_DELETE 'd'

/* The link named name deleted (with its veth peer), checked gone. */
static int link_delete_checked(const char *name) {
        _cleanup_netlink_ Netlink *nl = NULL;
        int r, idx;

        r = netlink_open(&nl);
        if (r >= 0)
                r = idx = netlink_link_index(name);
        if (r >= 0)
                r = netlink_link_delete(nl, idx);
        if (r >= 0)
                r = netlink_link_index(name) == -ENODEV ? 0 : -EEXIST;
        return r;
}

static noreturn void responder_delete_link(const int fds[3]) {
        for (size_t i = 0; i < 3; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        _exit(link_delete_checked(CANARY_PEER) < 0 ? 1 : 0);
}

/* fds[0..1]: the address canaries; fds[2], when >= 0: the name canary's Unix socket; ctl: the supervisor's word. */
static void responder(const int fds[3], int ctl, const char *challenge) {
        NameCanaryConn conns[NAME_CANARY_CONNS];
        char line[96];
        size_t len = (size_t) snprintf(line, sizeof(line), "%s\n", challenge);
        int n_fds = fds[2] >= 0 ? 3 : 2;

        for (size_t k = 0; k < NAME_CANARY_CONNS; k++)
                conns[k].fd = -1;
        for (;;) {
                struct pollfd p[4 + NAME_CANARY_CONNS] = {
                        { .fd = fds[0], .events = POLLIN }, { .fd = fds[1], .events = POLLIN },
                        { .fd = fds[2], .events = POLLIN }, { .fd = ctl, .events = POLLIN },
                };

                for (size_t k = 0; k < NAME_CANARY_CONNS; k++)
                        p[4 + k] = (struct pollfd) { .fd = conns[k].fd, .events = POLLIN };
                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(1);
                }
                if (p[3].revents) {
                        char c = 0;

                        /* The word, or the supervisor's end closed: either way, done. */
                        if (read(ctl, &c, 1) == 1 && c == RESPONDER_DELETE)
                                responder_delete_link(fds);
                        _exit(0);
                }
                for (size_t k = 0; k < NAME_CANARY_CONNS; k++)
                        if (conns[k].fd >= 0 && p[4 + k].revents && name_canary_read(&conns[k], line, len)) {
                                close(conns[k].fd);
                                conns[k].fd = -1;
                        }
                for (int i = 0; i < n_fds; i++)
                        if (p[i].revents) {
                                int c = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC | (i == 2 ? SOCK_NONBLOCK : 0));
                                size_t k;

                                if (c < 0)
                                        continue;
                                if (i < 2) {
                                        (void) !write(c, line, len);
                                        close(c);
                                        continue;
                                }
                                for (k = 0; k < NAME_CANARY_CONNS && conns[k].fd >= 0; k++)
                                        ;
                                if (k == NAME_CANARY_CONNS) {
                                        close(c);       /* more than the probe ever makes: unanswered */
                                        continue;
                                }
                                conns[k] = (NameCanaryConn) { .fd = c, .need = sizeof(conns[k].head) };
                        }
        }
}

/* The name canary's listener: a Unix socket at path, made by the responder in the canary namespace. */
static int listen_unix_at(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int listen_on(uint32_t addr, int port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port), .sin_addr.s_addr = htonl(addr) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/*
 * The product-owned canary endpoints: a child in its own network namespace
 * (the canary peer) configures its end of the veth, listens on both canaries
 * (and, with host rules, on the name canary's socket) and answers each
 * connection with this generation's challenge.
 */
static int canary_child(int to_parent, int from_parent, const SupNet *n) {
        _cleanup_netlink_ Netlink *nl = NULL;
        int r, lo, idx, fds[3] = { -1, -1, -1 };
        char c;

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || unshare(CLONE_NEWNET) < 0 || netlink_disable_ipv6() < 0)
                return 1;
        if (write(to_parent, "n", 1) != 1 || read(from_parent, &c, 1) != 1 || c != 'l')
                return 1;
        r = netlink_open(&nl);
        if (r >= 0)
                r = lo = netlink_link_index("lo");
        if (r >= 0)
                r = netlink_link_set_up(nl, lo);
        if (r >= 0)
                r = idx = netlink_link_index(CANARY_PEER);
        if (r >= 0)
                r = netlink_address_add(nl, idx, &(Cidr) { NET_CANARY_ALLOWED, 29 }, false);
        if (r >= 0)
                r = netlink_address_add(nl, idx, &(Cidr) { NET_CANARY_DENIED, 29 }, false);
        if (r >= 0)
                r = netlink_link_set_up(nl, idx);
        if (r < 0)
                return 1;
        fds[0] = listen_on(NET_CANARY_ALLOWED, n->port);
        fds[1] = listen_on(NET_CANARY_DENIED, n->port);
        if (n->canary_socket[0])
                fds[2] = listen_unix_at(n->canary_socket);
        if (fds[0] < 0 || fds[1] < 0 || (n->canary_socket[0] && fds[2] < 0) || write(to_parent, "s", 1) != 1)
                return 1;
        close(to_parent);
        /* from_parent stays: the supervisor's word (RESPONDER_DELETE) comes on it. */
        responder(fds, from_parent, n->challenge);
        return 0;
}

/*
 * A veth end brought up while its peer is down gets its transmit queue
 * only when the kernel's link watch work runs for it, on a kernel worker
 * thread, after the peer came up; until then it drops what it sends. The
 * end brought up second gets its queue at once. The liveness check's first
 * frames are ARP, whose lost request or reply Linux sends again only after
 * a second: about one cold start in ten to twenty took 1.0 s longer in the
 * network step (issue 34), when that worker had not run yet. So the end
 * that waits is always ours, and we wait for it (netlink_link_wait_up()):
 * a millisecond or two, at most LINK_UP_TIMEOUT_MS, after which the start
 * goes on as before (a lost frame then costs the second it always cost).
 */
#define LINK_UP_TIMEOUT_MS 1000

static void link_wait_up(Netlink *nl, int ifindex) {
        (void) netlink_link_wait_up(nl, ifindex, LINK_UP_TIMEOUT_MS);
}

static int start_canary(SupNet *n, Netlink *nl, char **ret_error) {
        int up[2], down[2], r, idx;
        char path[64], c = 0;
        pid_t pid;

        /* down: a socket, not a pipe, so that the supervisor's last word
         * (RESPONDER_DELETE) to a responder that died meanwhile is an error
         * (MSG_NOSIGNAL), not a SIGPIPE that would end the supervisor. */
        if (pipe2(up, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, down) < 0)
                return errorf(ret_error, -errno, "cannot make the canary responder's channels: %s", strerror(errno));
        pid = fork();
        if (pid < 0)
                return errorf(ret_error, -errno, "cannot start the canary responder: %s", strerror(errno));
        if (pid == 0) {
                close(up[0]);
                close(down[1]);
                _exit(canary_child(up[1], down[0], n));
        }
        n->responder_pid = pid;
        close(up[1]);
        close(down[0]);
        r = read(up[0], &c, 1) == 1 && c == 'n' ? 0 : -EPERM;
        if (r >= 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) pid);
                n->canary_fd = open(path, O_RDONLY | O_CLOEXEC);
                r = n->canary_fd < 0 ? -errno : 0;
        }
        if (r >= 0)
                r = netlink_veth_create(nl, net_links[NET_LINK_CANARY].name, CANARY_PEER, n->canary_fd);
        /* Our end up first, then the child's (LINK_UP_TIMEOUT_MS). */
        if (r >= 0)
                r = idx = netlink_link_index(net_links[NET_LINK_CANARY].name);
        if (r >= 0)
                r = netlink_link_set_up(nl, idx);
        if (r >= 0)
                r = send(down[1], "l", 1, MSG_NOSIGNAL) == 1 ? 0 : -EPIPE;
        if (r >= 0)
                r = read(up[0], &c, 1) == 1 && c == 's' ? 0 : -EIO;
        close(up[0]);
        n->responder_ctl = down[1];
        if (r < 0)
                return errorf(ret_error, r, "cannot set up the canary namespace and its responder: %s", strerror(-r));
        link_wait_up(nl, idx);
        return 0;
}

/* Reads one line from addr:port from this namespace (the supervisor's own, Linux's view). */
/*
 * Reads the line addr:port answers, from this namespace (the supervisor's
 * own, Linux's view), to the responder's end of the connection; then
 * resets it. Nothing of this connection may travel later: once the
 * temporary route is gone, a late FIN or ACK to the denied canary would be
 * routed by the policy into deny0 and look like gVisor's packets to the
 * deny link's witness.
 */
static int fetch(uint32_t addr, int port, char *buf, size_t size) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port), .sin_addr.s_addr = htonl(addr) };
        struct timeval tv = { .tv_sec = 3 };
        struct linger abortive = { .l_onoff = 1, .l_linger = 0 };
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        size_t n = 0;
        ssize_t k;

        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        /* The responder writes its line and closes: read to its FIN. */
        while ((k = read(fd, buf + n, size - 1 - n)) > 0 && n + (size_t) k < size - 1)
                n += (size_t) k;
        if (k < 0)
                return -errno;
        if (k > 0)
                return -EMSGSIZE;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        /* An RST now, sent by close() while the route is still there, and
         * no FIN of ours waiting for an ACK afterwards. */
        if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive)) < 0)
                return -errno;
        return 0;
}

/* The denied canary is live (so "unreachable" later means the policy, not a dead endpoint). */
static int check_denied_live(SupNet *n, Netlink *nl, const NetlinkLinks *links, char **ret_error) {
        NetRoute probe = { { NET_CANARY_DENIED, 32 }, NET_ALLOW, NET_LINK_CANARY, 0, NET_ROUTE_TABLE, NET_ROUTE_PRIORITY };
        char line[128];
        int r, q;

        r = netlink_route_add(nl, &probe, links);
        if (r < 0)
                return errorf(ret_error, r, "cannot route to the denied canary for its liveness check: %s", strerror(-r));
        q = fetch(NET_CANARY_DENIED, n->port, line, sizeof(line));
        r = netlink_route_delete(nl, &probe, links);
        if (q < 0 || !streq(line, n->challenge))
                return errorf(ret_error, q < 0 ? q : -EIO,
                              "the denied canary " NET_CANARY_DENIED_STR " is not live before the policy (%s)",
                              q < 0 ? strerror(-q) : "wrong answer");
        if (r < 0)
                return errorf(ret_error, r, "cannot remove the denied canary's liveness route: %s", strerror(-r));
        return 0;
}

#if ENABLE_TEST_HOOKS
/*
 * The test hook (LAZARET_TEST_NETWORK_FAULT=deny-on-lo, test builds only),
 * run only after the correct policy was installed and read back: every route
 * toward deny0 is deleted and added again, same destination and next hop, on
 * lo. Linux then still holds a deny policy, but one that this gVisor drops at
 * import (it ignores routes on lo), so only the in-gVisor comparison of
 * supnet_judge() can refuse it. Canonical order puts the on-link next hop
 * before the routes via it, as on install.
 */
static int fault_move_deny_to_lo(SupNet *n, Netlink *nl, const NetlinkLinks *links, int lo, char **ret_error) {
        NetlinkLinks on_lo = *links;
        char b[NET_ROUTE_STRING_MAX];
        int r;

        on_lo.ifindex[NET_LINK_DENY] = lo;
        for (size_t i = 0; i < n->policy->n_routes; i++) {
                const NetRoute *route = &n->policy->routes[i];

                if (route->link != NET_LINK_DENY)
                        continue;
                r = netlink_route_delete(nl, route, links);
                if (r >= 0)
                        r = netlink_route_add(nl, route, &on_lo);
                if (r < 0)
                        return errorf(ret_error, r, "test fault deny-on-lo: cannot move %s to lo: %s",
                                    net_route_to_string(route, b), strerror(-r));
        }
        return 0;
}
#endif

/*
 * The witness of the deny path: a packet socket on sink, deny0's peer, for
 * ARP frames. gVisor sends frames for a denied destination to deny0's next
 * hop 10.137.55.10, which no one owns: the first thing it puts on deny0 for
 * one is an ARP request for that address, which arrives here. No one ever
 * answers it, so denied connections still fail as "no route to host".
 */
static int open_witness(SupNet *n, char **ret_error) {
        struct sockaddr_ll sa = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ARP) };
        int idx;

        idx = netlink_link_index(DENY_PEER);
        if (idx < 0)
                return errorf(ret_error, idx, "cannot find the deny link's sink: %s", strerror(-idx));
        sa.sll_ifindex = idx;
        /* Protocol 0 here and ARP in bind(): a socket that listened from
         * its creation would be unhooked again in bind(), which waits for
         * an RCU grace period (so does close(): see supnet_close_witness()). */
        n->witness_fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (n->witness_fd < 0 || bind(n->witness_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return errorf(ret_error, -errno, "cannot watch the deny link's sink: %s", strerror(errno));
        return 0;
}

/* The policy the coordinator derived, strictly decoded, its digest as announced. */
static int read_policy(SupNet *n, const SupNetParams *p, char **ret_error) {
        _cleanup_free_ char *bytes = NULL;
        uint8_t digest[SHA256_DIGEST_LEN];
        size_t len = 0;
        int r, fd;

        fd = open(p->policy_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        r = fd < 0 ? -errno : read_full_fd(fd, 4u << 20, &bytes, &len);
        if (fd >= 0)
                close(fd);
        if (r < 0)
                return errorf(ret_error, r, "cannot read the network policy %s: %s", p->policy_path, strerror(-r));
        r = net_policy_decode((const uint8_t *) bytes, len, &n->policy);
        if (r < 0)
                return errorf(ret_error, r, "the network policy %s is not in canonical form", p->policy_path);
        r = net_policy_digest(n->policy, digest);
        if (r < 0)
                return errorf(ret_error, r, "cannot digest the network policy");
        hexify(digest, sizeof(digest), n->digest_hex);
        if (!streq(n->digest_hex, p->policy_digest))
                return errorf(ret_error, -EBADMSG, "the network policy's digest %s is not the announced %s",
                            n->digest_hex, p->policy_digest);
        return 0;
}

/* What the allowed canary answers and the probe must report: this generation's ID and 16 random bytes. */
static int make_challenge(SupNet *n, const SupNetParams *p, char **ret_error) {
        uint8_t rnd[16];
        char rndhex[33];

        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
                return errorf(ret_error, -EIO, "getrandom failed");
        hexify(rnd, sizeof(rnd), rndhex);
        snprintf(n->challenge, sizeof(n->challenge), "%s:%s", p->generation, rndhex);
        n->port = p->canary_port;
        return 0;
}

/* The enforcement namespace, IPv6 off in it before anything else exists there; reachable by path in our mount namespace only. */
static int make_enforcement_netns(SupNet *n, const SupNetParams *p, char **ret_error) {
        char src[64];
        struct stat st;
        int r, fd;

        r = new_netns(true, &n->enforcement_fd);
        if (r < 0)
                return errorf(ret_error, r, "cannot create the enforcement network namespace: %s", strerror(-r));
        fd = open(p->netns_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot create %s: %s", p->netns_path, strerror(errno));
        close(fd);
        snprintf(src, sizeof(src), "/proc/self/fd/%d", n->enforcement_fd);
        if (mount(src, p->netns_path, NULL, MS_BIND, NULL) < 0)
                return errorf(ret_error, -errno, "cannot bind the enforcement namespace to %s: %s", p->netns_path,
                            strerror(errno));
        if (fstat(n->enforcement_fd, &st) < 0)
                return errorf(ret_error, -errno, "fstat: %s", strerror(errno));
        n->netns_ino = (unsigned long long) st.st_ino;
        return 0;
}

/*
 * From here on the supervisor (and runsc) live in the enforcement
 * namespace: entered, /proc/sys/net/core hidden from runsc, a netlink
 * socket in it (*ret_nl) and lo up (*ret_lo, its index).
 */
static int enter_enforcement_netns(SupNet *n, Netlink **ret_nl, int *ret_lo, char **ret_error) {
        _cleanup_netlink_ Netlink *nl = NULL;
        int r, lo = -1;

        if (setns(n->enforcement_fd, CLONE_NEWNET) < 0)
                return errorf(ret_error, -errno, "cannot enter the enforcement namespace: %s", strerror(errno));
        /* IPv6 is off here since new_netns(): tap0 came up with the default
         * off; netlink_ipv6_absent() in install_policy() checks that it stayed so. */
        /* This runsc takes a namespace with /proc/sys/net/core/rmem_default for
         * the host's: hide it, in our mount namespace and for this network
         * namespace only (/proc/sys/net shows the reader's namespace). */
        if (access("/proc/sys/net/core/rmem_default", F_OK) >= 0 &&
            mount("tmpfs", "/proc/sys/net/core", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555") < 0)
                return errorf(ret_error, -errno, "cannot hide /proc/sys/net/core from runsc: %s", strerror(errno));
        r = netlink_open(&nl);
        if (r >= 0)
                r = lo = netlink_link_index("lo");
        if (r >= 0)
                r = netlink_link_set_up(nl, lo);
        if (r < 0)
                return errorf(ret_error, r, "cannot bring up lo in the enforcement namespace: %s", strerror(-r));
        *ret_nl = TAKE_PTR(nl);
        *ret_lo = lo;
        return 0;
}

/* The links: tap0, the dead end deny0/sink, the canaries. */
static int make_links(SupNet *n, Netlink *nl, char **ret_error) {
        int r, idx;

        r = idx = netlink_link_index(net_links[NET_LINK_TAP].name);
        if (r >= 0)
                r = netlink_link_set_mtu(nl, idx, SLIRP_MTU);
        if (r >= 0)
                r = netlink_address_add(nl, idx, &net_links[NET_LINK_TAP].address, true);
        if (r >= 0)
                r = netlink_link_set_up(nl, idx);
        if (r < 0)
                return errorf(ret_error, r, "cannot configure %s: %s", net_links[NET_LINK_TAP].name, strerror(-r));
        r = netlink_veth_create(nl, net_links[NET_LINK_DENY].name, DENY_PEER, -1);
        if (r >= 0)
                r = idx = netlink_link_index(net_links[NET_LINK_DENY].name);
        if (r >= 0)
                r = netlink_address_add(nl, idx, &net_links[NET_LINK_DENY].address, true);
        if (r >= 0)
                r = netlink_link_set_up(nl, idx);
        if (r >= 0)
                r = idx = netlink_link_index(DENY_PEER);
        if (r >= 0)
                r = netlink_link_set_up(nl, idx);
        if (r < 0)
                return errorf(ret_error, r, "cannot configure the deny link: %s", strerror(-r));
        /* deny0 came up first: gVisor's ARP on it is what the witness sees. */
        link_wait_up(nl, netlink_link_index(net_links[NET_LINK_DENY].name));
        r = start_canary(n, nl, ret_error);
        if (r < 0)
                return r;
        r = idx = netlink_link_index(net_links[NET_LINK_CANARY].name);
        if (r >= 0)
                r = netlink_address_add(nl, idx, &net_links[NET_LINK_CANARY].address, true);
        if (r < 0)
                return errorf(ret_error, r, "cannot configure the canary link: %s", strerror(-r));
        return 0;
}

/* The policy, installed and read back exactly; no IPv6 anywhere in the namespace. */
static int install_policy(SupNet *n, Netlink *nl, const NetlinkLinks *links, char **ret_error) {
        _cleanup_free_ char *mismatch = NULL, *problem = NULL;
        size_t failed = 0;
        int r;

        r = netlink_policy_install(nl, n->policy, links, &failed);
        if (r < 0) {
                char b[NET_ROUTE_STRING_MAX];
                return errorf(ret_error, r, "cannot install the network policy route %s: %s",
                            failed < n->policy->n_routes ? net_route_to_string(&n->policy->routes[failed], b) : "?",
                            strerror(-r));
        }
        r = netlink_policy_verify(nl, n->policy, links, &mismatch);
        if (r < 0)
                return errorf(ret_error, r, "cannot read the network policy back: %s", strerror(-r));
        if (r == 0) {
                if (mismatch)
                        mismatch[strcspn(mismatch, "\n")] = 0;
                return errorf(ret_error, -EBADMSG, "the installed network policy differs from the derived one: %s",
                            strna(mismatch));
        }
        r = netlink_ipv6_absent(nl, &problem);
        if (r < 0)
                return errorf(ret_error, r, "cannot look for IPv6 in the enforcement namespace: %s", strerror(-r));
        if (r == 0)
                return errorf(ret_error, -EPERM, "IPv6 is present in the enforcement namespace: %s", strna(problem));
        return 0;
}

const char *supnet_step_name(SupNetStep step) {
        static const char *const names[_SUPNET_STEP_MAX] = {
                [SUPNET_STEP_NAMESPACE] = "namespace", [SUPNET_STEP_HELPER] = "helper",
                [SUPNET_STEP_ENTER] = "enter",         [SUPNET_STEP_LINKS] = "links",
                [SUPNET_STEP_LIVENESS] = "liveness",   [SUPNET_STEP_POLICY] = "policy",
                [SUPNET_STEP_WITNESS] = "witness",
        };

        return step < _SUPNET_STEP_MAX ? names[step] : NULL;
}

/* The time since *last into n->step_usec[step]; *last moves on. */
static void step_done(SupNet *n, SupNetStep step, uint64_t *last) {
        uint64_t t = now_usec();

        n->step_usec[step] = t - *last;
        *last = t;
}

int supnet_prepare(SupNet *n, const SupNetParams *p, Helpers *helpers, char **ret_error) {
        _cleanup_netlink_ Netlink *nl = NULL;
        NetlinkLinks links;
        uint64_t last = now_usec();
        int r, lo = -1;

        r = read_policy(n, p, ret_error);
        if (r >= 0)
                r = make_challenge(n, p, ret_error);
        /* 1. The enforcement namespace. */
        if (r >= 0)
                r = make_enforcement_netns(n, p, ret_error);
        step_done(n, SUPNET_STEP_NAMESPACE, &last);
        /* 2. The connectivity helper stays where we are, its tap inside: lazaret-egress for a
         * policy with host rules, slirp4netns otherwise. */
        if (r >= 0)
                r = n->policy->n_hosts > 0 ? start_egress(n, p, helpers, ret_error) : start_slirp(n, p, helpers, ret_error);
        step_done(n, SUPNET_STEP_HELPER, &last);
        /* 3. The supervisor moves into the enforcement namespace. */
        if (r >= 0)
                r = enter_enforcement_netns(n, &nl, &lo, ret_error);
        step_done(n, SUPNET_STEP_ENTER, &last);
        /* 4. The links. */
        if (r >= 0)
                r = make_links(n, nl, ret_error);
        if (r < 0)
                return r;
        r = netlink_resolve_links(nl, &links);
        if (r < 0)
                return errorf(ret_error, r, "cannot resolve the policy links: %s", strerror(-r));
        step_done(n, SUPNET_STEP_LINKS, &last);
        r = check_denied_live(n, nl, &links, ret_error);
        step_done(n, SUPNET_STEP_LIVENESS, &last);
        /* 5. The policy. */
        if (r >= 0)
                r = install_policy(n, nl, &links, ret_error);
        step_done(n, SUPNET_STEP_POLICY, &last);
        /* Last: nothing of the set-up above is seen by the witness. */
        if (r >= 0)
                r = open_witness(n, ret_error);
        step_done(n, SUPNET_STEP_WITNESS, &last);
        if (r < 0)
                return r;
#if ENABLE_TEST_HOOKS
        if (p->fault_deny_on_lo)
                return fault_move_deny_to_lo(n, nl, &links, lo, ret_error);
#endif
        return 0;
}

int supnet_witness_denied(SupNet *n, int timeout_ms, char **ret_error) {
        uint64_t deadline = now_msec() + (uint64_t) timeout_ms;

        for (;;) {
                /* ARP for IPv4 over Ethernet: header, then sender MAC and
                 * IP, target MAC and IP (RFC 826); SOCK_DGRAM strips the
                 * Ethernet header. */
                uint8_t frame[64];
                struct arphdr ah;
                uint32_t target;
                uint64_t now;
                ssize_t k;
                int r;

                k = recv(n->witness_fd, frame, sizeof(frame), 0);
                if (k >= (ssize_t) (sizeof(ah) + 20)) {
                        memcpy(&ah, frame, sizeof(ah));
                        memcpy(&target, frame + sizeof(ah) + 16, 4);
                        if (ntohs(ah.ar_op) == ARPOP_REQUEST && ntohs(ah.ar_pro) == ETH_P_IP && ah.ar_hln == 6 &&
                            ah.ar_pln == 4 && ntohl(target) == NET_DENY_NEXTHOP)
                                return 0;
                        continue;
                }
                if (k >= 0)
                        continue;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return errorf(ret_error, -errno, "cannot read the deny link's witness: %s", strerror(errno));
                now = now_msec();
                if (now >= deadline)
                        return errorf(ret_error, -EHOSTUNREACH, "network attestation failed: the probe's connection to the "
                                    "denied canary " NET_CANARY_DENIED_STR " never reached the deny link (gVisor asked for no next hop "
                                    "on deny0 within %d ms)", timeout_ms);
                r = poll(&(struct pollfd) { .fd = n->witness_fd, .events = POLLIN }, 1, (int) (deadline - now));
                if (r < 0 && errno != EINTR)
                        return errorf(ret_error, -errno, "cannot wait for the deny link's witness: %s", strerror(errno));
        }
}

/* A /proc/net/route address: eight hex digits. */
static int parse_hex32(const char *s, uint32_t *ret) {
        uint64_t v;
        int r;

        if (strlen(s) != 8)
                return -EINVAL;
        r = parse_unsigned(s, PARSE_HEX | PARSE_LEADING_ZEROS, 0, UINT32_MAX, &v);
        if (r < 0)
                return r;
        /* /proc/net/route prints network byte order as a native integer. */
        *ret = ntohl((uint32_t) v);
        return 0;
}

/*
 * The prefix length of a /proc/net/route mask. This gVisor prints the last
 * byte of a mask like /29 with its bits reversed (1FFFFFFF for F8FFFFFF), so
 * only the number of bits set is relied on.
 */
static int prefixlen_of(uint32_t mask) {
        return __builtin_popcount(mask);
}

/* How many times c occurs in s. */
static size_t count_char(const char *s, char c) {
        size_t n = 0;

        for (; *s; s++)
                n += *s == c;
        return n;
}

/* At most 60 bytes of a line, anything but printable ASCII as '?'. */
static const char *excerpt(const char *line, char buf[static 64]) {
        size_t i;

        for (i = 0; i < 60 && line[i]; i++)
                buf[i] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
        buf[i] = 0;
        return buf;
}

/*
 * The name canaries (a policy with host rules), in the order judged: the
 * probe reports each as "KEY OK" or "KEY-failed WHY". OK is the challenge
 * for the allowed name (ok NULL), the word given here for the others.
 */
typedef enum NameCanary {
        NAME_CANARY_ALLOWED,
        NAME_CANARY_DENIED,
        NAME_CANARY_DIRECT,
        NAME_CANARY_SNI,
        _NAME_CANARY_MAX,
} NameCanary;

static const struct {
        const char *key;
        const char *ok;
        const char *what;       /* the canary, as the one line of a failure names it */
} name_canaries[_NAME_CANARY_MAX] = {
        [NAME_CANARY_ALLOWED] = { "name-allowed", NULL, "the allowed name canary " NET_CANARY_NAME_ALLOWED },
        [NAME_CANARY_DENIED] = { "name-denied", "nxdomain", "the denied name canary " NET_CANARY_NAME_DENIED },
        [NAME_CANARY_DIRECT] = { "name-direct", "refused", "the direct connection canary to " NET_EGRESS_UNBOUND_STR
                                                           " (an address no name resolved to)" },
        [NAME_CANARY_SNI] = { "name-sni", "closed", "the ClientHello canary (naming " NET_CANARY_NAME_DENIED
                                                     " on the allowed name's address)" },
};

/* The probe's report as read, before it is judged. */
typedef struct ProbeReport {
        bool allowed;                   /* the allowed canary answered this generation's challenge */
        bool denied;                    /* the denied canary did not answer */
        bool denied_reached;            /* the denied canary answered */
        bool end;
        const char *allowed_failed;     /* why the allowed canary was not reached */
        const char *allowed_wrong;      /* what the allowed canary answered instead of the challenge */
        char extra[128];                /* the first route gVisor holds that the policy does not */
        bool *seen;                     /* for each of the policy's routes: gVisor holds it */
        const char *name_ok[_NAME_CANARY_MAX];          /* what follows KEY */
        const char *name_failed[_NAME_CANARY_MAX];      /* what follows KEY-failed */
} ProbeReport;

/* A "name-..." line: 1 when it is one, 0 when not, < 0 (with the line) when it is a second of its canary. */
static int read_name_line(const char *line, ProbeReport *rep, char **ret_error) {
        for (size_t i = 0; i < _NAME_CANARY_MAX; i++) {
                const char *v = startswith(line, name_canaries[i].key);
                bool failed;

                if (!v)
                        continue;
                failed = startswith(v, "-failed ");
                if (failed)
                        v += strlen("-failed ");
                else if (*v == ' ')
                        v++;
                else
                        continue;
                if (rep->name_ok[i] || rep->name_failed[i])
                        return errorf(ret_error, -EBADMSG, "network attestation failed: the probe reported %s twice",
                                      name_canaries[i].what);
                if (failed)
                        rep->name_failed[i] = v;
                else
                        rep->name_ok[i] = v;
                return 1;
        }
        return 0;
}

/* One "route" line, the probe's own (iface dst gw flags mask metric), found in the policy or noted as extra. */
static int read_route_line(SupNet *n, char *v, ProbeReport *rep, char **ret_error) {
        char *f[6], ex[64];
        const char *iface;
        uint32_t d, g, m;
        uint64_t flags, metric;
        int plen;
        bool found = false;

        /* Single spaces: six fields and five spaces leave no room for another. */
        (void) excerpt(v, ex);
        if (count_char(v, ' ') != ELEMENTSOF(f) - 1 ||
            split_fields(v, " ", f, ELEMENTSOF(f)) != (int) ELEMENTSOF(f) ||
            strlen(f[0]) >= IFNAMSIZ || parse_hex32(f[1], &d) < 0 || parse_hex32(f[2], &g) < 0 ||
            strlen(f[3]) != 4 || parse_unsigned(f[3], PARSE_HEX | PARSE_LEADING_ZEROS, 0, UINT16_MAX, &flags) < 0 ||
            parse_hex32(f[4], &m) < 0 || parse_unsigned(f[5], 0, 0, UINT32_MAX, &metric) < 0)
                return errorf(ret_error, -EBADMSG, "network attestation failed: unreadable route \"%s\"", ex);
        iface = f[0];
        plen = prefixlen_of(m);
        for (size_t i = 0; i < n->policy->n_routes; i++) {
                const NetRoute *pr = &n->policy->routes[i];
                if (pr->dst.addr == d && pr->dst.prefixlen == plen && pr->gateway == g &&
                    streq(net_links[pr->link].name, iface) && metric == pr->priority && !rep->seen[i]) {
                        rep->seen[i] = found = true;
                        break;
                }
        }
        if (!found && !rep->extra[0]) {
                char a[16], b[16];
                ipv4_to_string(d, a);
                ipv4_to_string(g, b);
                snprintf(rep->extra, sizeof(rep->extra), "%s/%d via %s dev %.16s metric %" PRIu64, a, plen, b, iface, metric);
        }
        return 0;
}

/*
 * Strict: every line one the probe prints, each canary reported once,
 * nothing after "end" (which ends with its newline). text is cut into
 * lines in place; *rep points into it.
 */
static int read_probe_report(SupNet *n, char *text, ProbeReport *rep, char **ret_error) {
        unsigned n_allowed = 0, n_denied = 0;
        char *line, *next, ex[64];
        int r;

        for (line = text; *line; line = next) {
                const char *v;

                next = strchr(line, '\n');
                if (!next)
                        return errorf(ret_error, -EBADMSG, "network attestation failed: the probe's report ends in an "
                                    "unfinished line \"%s\"", excerpt(line, ex));
                *next++ = 0;
                if (rep->end)
                        return errorf(ret_error, -EBADMSG, "network attestation failed: the probe's report goes on after "
                                    "its end: \"%s\"", excerpt(line, ex));
                if (startswith(line, "allowed ") || startswith(line, "allowed-failed ")) {
                        /* With host rules the allowed name canary takes its place (spec 4.5, "One link answers"). */
                        if (n->policy->n_hosts > 0)
                                return errorf(ret_error, -EBADMSG, "network attestation failed: the probe ran the allowed "
                                              "address canary, which a policy with host rules leaves to the allowed name canary");
                        if (++n_allowed > 1)
                                return errorf(ret_error, -EBADMSG, "network attestation failed: the probe reported the allowed canary twice");
                }
                if (startswith(line, "denied ") && ++n_denied > 1)
                        return errorf(ret_error, -EBADMSG, "network attestation failed: the probe reported the denied canary twice");

                if ((v = startswith(line, "allowed "))) {
                        if (streq(v, n->challenge))
                                rep->allowed = true;
                        else
                                rep->allowed_wrong = v;
                } else if ((v = startswith(line, "allowed-failed ")))
                        rep->allowed_failed = v;
                else if (startswith(line, "denied reached"))
                        rep->denied_reached = true;
                else if (streq(line, "denied pending") || startswith(line, "denied unreachable "))
                        /* Not answered: the witness decides whether it went to the sink. */
                        rep->denied = true;
                else if ((v = startswith(line, "ipv6 ")))
                        return errorf(ret_error, -EPERM, "network attestation failed: the sandbox has IPv6 (%s)", excerpt(v, ex));
                else if ((v = startswith(line, "route-error ")))
                        return errorf(ret_error, -EIO, "network attestation failed: the sandbox's route table is unreadable (%s)",
                                    excerpt(v, ex));
                else if ((v = startswith(line, "route "))) {
                        r = read_route_line(n, (char *) v, rep, ret_error);
                        if (r < 0)
                                return r;
                } else if (streq(line, "end"))
                        rep->end = true;
                else if (n->policy->n_hosts > 0 && (r = read_name_line(line, rep, ret_error)) != 0) {
                        if (r < 0)
                                return r;
                } else
                        return errorf(ret_error, -EBADMSG, "network attestation failed: the probe's report has an "
                                    "unknown line \"%s\"", excerpt(line, ex));
        }
        return 0;
}

/* The policy's routes gVisor lacks, the first named: one via a next hop (a real destination) rather than the next hop's own. */
static int judge_missing_routes(SupNet *n, const ProbeReport *rep, char **ret_error) {
        size_t n_missing = 0, first_missing = SIZE_MAX;
        const NetRoute *pr;
        char a[16], g[16] = "";

        for (size_t i = 0; i < n->policy->n_routes; i++)
                if (!rep->seen[i]) {
                        n_missing++;
                        if (first_missing == SIZE_MAX ||
                            (n->policy->routes[first_missing].gateway == 0 && n->policy->routes[i].gateway != 0))
                                first_missing = i;
                }
        if (n_missing == 0)
                return 0;
        pr = &n->policy->routes[first_missing];
        ipv4_to_string(pr->dst.addr, a);
        if (pr->gateway != 0) {
                ipv4_to_string(pr->gateway, g);
                strcat(g, " ");
        }
        return errorf(ret_error, -EBADMSG, "network attestation failed: gVisor has no route for %s/%u (the policy %s "
                    "it %s%sdev %s); %zu of the policy's %zu routes missing%s", a, (unsigned) pr->dst.prefixlen,
                    pr->verdict == NET_DENY ? "denies" : "allows", pr->gateway ? "via " : "", g,
                    net_links[pr->link].name, n_missing, n->policy->n_routes,
                    rep->denied_reached ? "; the denied canary " NET_CANARY_DENIED_STR " answered" : "");
}

/*
 * With host rules: each name canary reported once, each as it must be; the
 * first that is not is named. The allowed name is judged first: when it
 * fails, the name path itself is broken and the others say little.
 */
static int judge_name_canaries(SupNet *n, const ProbeReport *rep, char **ret_error) {
        char ex[64];

        for (size_t i = 0; i < _NAME_CANARY_MAX; i++) {
                const char *ok = name_canaries[i].ok ?: n->challenge, *v = rep->name_ok[i];

                if (rep->name_failed[i])
                        return errorf(ret_error, -EPERM, "network attestation failed: %s: %s", name_canaries[i].what,
                                      excerpt(rep->name_failed[i], ex));
                if (!v)
                        return errorf(ret_error, -EBADMSG, "network attestation failed: the probe did not report %s",
                                      name_canaries[i].what);
                if (!streq(v, ok))
                        return errorf(ret_error, -EBADMSG, "network attestation failed: %s: the probe reported \"%s\"%s",
                                      name_canaries[i].what, excerpt(v, ex),
                                      i == NAME_CANARY_ALLOWED ? ", not this generation's challenge" : "");
        }
        return 0;
}

/*
 * Reads the whole report first, then names the most telling difference:
 * gVisor's route table against the policy (the cause), then the canaries
 * (the effect), so that a deny route gVisor dropped is named as such even
 * when it also let the denied canary answer.
 */
int supnet_judge(SupNet *n, const char *report, char **ret_error) {
        _cleanup_free_ char *copy = strdup(report);
        _cleanup_free_ bool *seen = NULL;
        ProbeReport rep = {};
        char ex[64];
        int r;

        if (!copy)
                return -ENOMEM;
        seen = calloc(n->policy->n_routes ?: 1, sizeof(bool));
        if (!seen)
                return -ENOMEM;
        rep.seen = seen;
        r = read_probe_report(n, copy, &rep, ret_error);
        if (r < 0)
                return r;
        if (!rep.end)
                return errorf(ret_error, -EBADMSG, "network attestation failed: the probe did not finish its report");
        if (rep.extra[0])
                return errorf(ret_error, -EBADMSG, "network attestation failed: gVisor holds a route the policy does not: %s%s",
                            rep.extra, rep.denied_reached ? "; the denied canary " NET_CANARY_DENIED_STR " answered" : "");
        r = judge_missing_routes(n, &rep, ret_error);
        if (r < 0)
                return r;
        if (rep.denied_reached)
                return errorf(ret_error, -EPERM, "network attestation failed: the denied canary " NET_CANARY_DENIED_STR " "
                            "answered from inside the sandbox");
        if (rep.allowed_wrong)
                return errorf(ret_error, -EBADMSG, "network attestation failed: the allowed canary "
                            "answered \"%s\", not this generation's challenge", excerpt(rep.allowed_wrong, ex));
        if (rep.allowed_failed)
                return errorf(ret_error, -EHOSTUNREACH, "network attestation failed: the allowed canary " NET_CANARY_ALLOWED_STR " "
                            "is unreachable from inside the sandbox (%s)", excerpt(rep.allowed_failed, ex));
        if (!rep.denied)
                return errorf(ret_error, -EBADMSG, "network attestation failed: the probe did not report the denied canary");
        if (n->policy->n_hosts > 0)
                return judge_name_canaries(n, &rep, ret_error);
        if (!rep.allowed)
                return errorf(ret_error, -EBADMSG, "network attestation failed: the probe did not report the allowed canary");
        return 0;
}

bool supnet_report_complete(const char *buf, size_t n) {
        return (n >= 4 && memcmp(buf, "end\n", 4) == 0) || memmem(buf, n, "\nend\n", 5);
}

/*
 * canary0 is set down here, which carries nothing from then on and takes
 * half a millisecond, and the responder, told so, closes its listeners,
 * deletes the pair and exits on its own, after READY; its pidfd goes to
 * *ret_responder_pidfd for the supervisor to reap. When the responder
 * cannot be told, it is killed and reaped and the link deleted here.
 */
int supnet_teardown_canary(SupNet *n, int *ret_responder_pidfd, char **ret_error) {
        int r;

        *ret_responder_pidfd = -EBADF;
        /* The allowed name canary now leads nowhere: the helper's connection to it is refused. */
        if (n->canary_socket[0] && unlink(n->canary_socket) < 0 && errno != ENOENT)
                return errorf(ret_error, -errno, "cannot remove the name canary's socket %s: %s", n->canary_socket,
                              strerror(errno));
        n->canary_socket[0] = 0;
        if (n->responder_pid > 0 && n->responder_ctl >= 0) {
                _cleanup_netlink_ Netlink *nl = NULL;
                int idx, pidfd;

                r = netlink_open(&nl);
                if (r >= 0)
                        r = idx = netlink_link_index(net_links[NET_LINK_CANARY].name);
                if (r >= 0)
                        r = netlink_link_set_down(nl, idx);
                if (r < 0)
                        return errorf(ret_error, r, "cannot set the canary link down: %s", strerror(-r));
                pidfd = (int) syscall(SYS_pidfd_open, n->responder_pid, 0);
                if (pidfd >= 0 && send(n->responder_ctl, (char[]) { RESPONDER_DELETE }, 1, MSG_NOSIGNAL) == 1) {
                        n->responder_ctl = safe_close(n->responder_ctl);
                        n->responder_pid = 0;   /* not ours to kill any more: it exits once the link is gone */
                        n->canary_fd = safe_close(n->canary_fd);
                        *ret_responder_pidfd = pidfd;
                        return 0;
                }
                if (pidfd >= 0)
                        close(pidfd);
        }
        if (n->responder_pid > 0) {
                (void) kill(n->responder_pid, SIGKILL);
                (void) waitpid(n->responder_pid, NULL, 0);
                n->responder_pid = 0;
        }
        n->responder_ctl = safe_close(n->responder_ctl);
        /* Deleting one end of the veth deletes the peer's too; the canary
         * namespace goes with its last reference. */
        r = link_delete_checked(net_links[NET_LINK_CANARY].name);
        if (r < 0)
                return errorf(ret_error, r, "cannot remove the canary link: %s", strerror(-r));
        n->canary_fd = safe_close(n->canary_fd);
        return 0;
}

void supnet_close_witness(SupNet *n) {
        if (n->witness_fd >= 0)
                close(n->witness_fd);
        n->witness_fd = -1;
}

void supnet_done(SupNet *n) {
        if (n->responder_pid > 0) {
                (void) kill(n->responder_pid, SIGKILL);
                (void) waitpid(n->responder_pid, NULL, 0);
        }
        n->responder_ctl = safe_close(n->responder_ctl);
        if (n->canary_fd >= 0)
                close(n->canary_fd);
        if (n->enforcement_fd >= 0)
                close(n->enforcement_fd);
        n->canary_fd = n->enforcement_fd = -1;
        n->policy = net_policy_free(n->policy);
}
