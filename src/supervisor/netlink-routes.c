/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <linux/if.h>          /* IF_OPER_UP; after <net/if.h>, which it then defers to */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"
#include "netlink-routes.h"

/* Requests are small; a dump answer is read in chunks of this size (a multiple of the page size). */
#define NL_REQUEST_SIZE 4096
#define NL_DUMP_SIZE 32768

struct Netlink {
        struct mnl_socket *sock;
        uint32_t portid;
        uint32_t seq;
};

int netlink_open(Netlink **ret) {
        _cleanup_free_ Netlink *nl = NULL;
        int one = 1;

        nl = calloc(1, sizeof(Netlink));
        if (!nl)
                return -ENOMEM;
        nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
        if (!nl->sock)
                return -errno;
        /* Error answers carry the kernel's extended message; not needed, but harmless. */
        (void) mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
        if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
                int r = -errno;
                mnl_socket_close(nl->sock);
                return r;
        }
        nl->portid = mnl_socket_get_portid(nl->sock);
        nl->seq = 1;
        *ret = TAKE_PTR(nl);
        return 0;
}

Netlink *netlink_close(Netlink *nl) {
        if (!nl)
                return NULL;
        if (nl->sock)
                mnl_socket_close(nl->sock);
        free(nl);
        return NULL;
}

/* Sends one request with NLM_F_ACK and waits for its answer: 0 or the kernel's -errno. */
static int request(Netlink *nl, struct nlmsghdr *nlh) {
        uint8_t buf[NL_REQUEST_SIZE];

        nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
        nlh->nlmsg_seq = ++nl->seq;
        if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
                if (n < 0)
                        return -errno;
                int r = mnl_cb_run(buf, (size_t) n, nl->seq, nl->portid, NULL, NULL);
                if (r < 0)
                        return errno > 0 ? -errno : -EPROTO;
                if (r == MNL_CB_STOP)
                        return 0;
        }
}

typedef int (*dump_cb_t)(const struct nlmsghdr *nlh, void *userdata);

typedef struct DumpState {
        dump_cb_t cb;
        void *userdata;
        int error;
} DumpState;

static int dump_one(const struct nlmsghdr *nlh, void *data) {
        DumpState *s = data;
        int r;

        if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) {
                /* the tables changed while being dumped: the caller must not trust a partial view */
                s->error = -EAGAIN;
                return MNL_CB_ERROR;
        }
        r = s->cb(nlh, s->userdata);
        if (r < 0) {
                s->error = r;
                return MNL_CB_ERROR;
        }
        return MNL_CB_OK;
}

static int dump(Netlink *nl, uint16_t type, uint8_t family, size_t hdrlen, dump_cb_t cb, void *userdata) {
        uint8_t req[NL_REQUEST_SIZE];
        _cleanup_free_ uint8_t *buf = NULL;
        struct nlmsghdr *nlh;
        DumpState s = { cb, userdata, 0 };
        uint8_t *hdr;

        buf = malloc(NL_DUMP_SIZE);
        if (!buf)
                return -ENOMEM;

        nlh = mnl_nlmsg_put_header(req);
        nlh->nlmsg_type = type;
        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        nlh->nlmsg_seq = ++nl->seq;
        /* rtmsg and ifaddrmsg both start with the family byte */
        hdr = mnl_nlmsg_put_extra_header(nlh, hdrlen);
        hdr[0] = family;

        if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(nl->sock, buf, NL_DUMP_SIZE);
                if (n < 0)
                        return -errno;
                errno = 0;
                int r = mnl_cb_run(buf, (size_t) n, nl->seq, nl->portid, dump_one, &s);
                if (r < 0)
                        return s.error < 0 ? s.error : errno > 0 ? -errno : -EPROTO;
                if (r == MNL_CB_STOP)
                        return 0;
        }
}

int netlink_link_index(const char *name) {
        unsigned idx;

        if (strlen(name) >= IFNAMSIZ)
                return -EINVAL;
        idx = if_nametoindex(name);
        if (idx == 0)
                return errno == ENODEV || errno == ENXIO ? -ENODEV : -errno;
        return (int) idx;
}

int netlink_veth_create(Netlink *nl, const char *name, const char *peer, int peer_netns_fd) {
        uint8_t buf[NL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifm;
        struct nlattr *linkinfo, *data, *peer_nest;

        if (strlen(name) >= IFNAMSIZ || strlen(peer) >= IFNAMSIZ || !*name || !*peer)
                return -EINVAL;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_NEWLINK;
        nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
        ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
        ifm->ifi_family = AF_UNSPEC;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
        linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
        mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
        data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
        peer_nest = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
        /* the peer's attributes follow an ifinfomsg of their own */
        memset(mnl_nlmsg_get_payload_tail(nlh), 0, MNL_ALIGN(sizeof(struct ifinfomsg)));
        nlh->nlmsg_len += MNL_ALIGN(sizeof(struct ifinfomsg));
        mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
        if (peer_netns_fd >= 0)
                mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t) peer_netns_fd);
        mnl_attr_nest_end(nlh, peer_nest);
        mnl_attr_nest_end(nlh, data);
        mnl_attr_nest_end(nlh, linkinfo);
        return request(nl, nlh);
}

/* RTM_NEWLINK/RTM_DELLINK for one link; mtu 0 leaves the MTU alone. */
static int link_message(Netlink *nl, uint16_t type, int ifindex, unsigned flags, unsigned change, uint32_t mtu) {
        uint8_t buf[NL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifm;

        if (ifindex <= 0)
                return -ENODEV;
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = type;
        ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
        ifm->ifi_family = AF_UNSPEC;
        ifm->ifi_index = ifindex;
        ifm->ifi_flags = flags;
        ifm->ifi_change = change;
        if (mtu > 0)
                mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
        return request(nl, nlh);
}

int netlink_link_delete(Netlink *nl, int ifindex) {
        return link_message(nl, RTM_DELLINK, ifindex, 0, 0, 0);
}

int netlink_link_set_up(Netlink *nl, int ifindex) {
        return link_message(nl, RTM_NEWLINK, ifindex, IFF_UP, IFF_UP, 0);
}

int netlink_link_set_down(Netlink *nl, int ifindex) {
        return link_message(nl, RTM_NEWLINK, ifindex, 0, IFF_UP, 0);
}

typedef struct LinkState {
        int ifindex;
        int operstate;          /* IF_OPER_*, -1 until seen */
} LinkState;

static int link_state_attr(const struct nlattr *a, void *data) {
        LinkState *st = data;

        if (mnl_attr_get_type(a) == IFLA_OPERSTATE && mnl_attr_validate(a, MNL_TYPE_U8) >= 0)
                st->operstate = mnl_attr_get_u8(a);
        return MNL_CB_OK;
}

static int link_state_msg(const struct nlmsghdr *nlh, void *data) {
        LinkState *st = data;
        const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

        if (nlh->nlmsg_type != RTM_NEWLINK || ifm->ifi_index != st->ifindex)
                return MNL_CB_OK;
        return mnl_attr_parse(nlh, sizeof(*ifm), link_state_attr, st);
}

/* The link's operational state (IF_OPER_*), by RTM_GETLINK for its index. */
static int link_operstate(Netlink *nl, int ifindex) {
        uint8_t buf[NL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifm;
        LinkState st = { .ifindex = ifindex, .operstate = -1 };

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_GETLINK;
        nlh->nlmsg_flags = NLM_F_REQUEST;
        nlh->nlmsg_seq = ++nl->seq;
        ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
        ifm->ifi_family = AF_UNSPEC;
        ifm->ifi_index = ifindex;
        if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        /* One RTM_NEWLINK answers, or an error. */
        ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
        if (n < 0)
                return -errno;
        errno = 0;
        if (mnl_cb_run(buf, (size_t) n, nl->seq, nl->portid, link_state_msg, &st) < 0)
                return errno > 0 ? -errno : -EPROTO;
        return st.operstate < 0 ? -EBADMSG : st.operstate;
}

int netlink_link_wait_up(Netlink *nl, int ifindex, int timeout_ms) {
        for (int waited = 0;; waited++) {
                int r = link_operstate(nl, ifindex);

                if (r < 0 || r == IF_OPER_UP)
                        return r < 0 ? r : 0;
                if (waited >= timeout_ms)
                        return -ETIMEDOUT;
                (void) usleep(1000);
        }
}

int netlink_link_set_mtu(Netlink *nl, int ifindex, uint32_t mtu) {
        return mtu > 0 ? link_message(nl, RTM_NEWLINK, ifindex, 0, 0, mtu) : -EINVAL;
}

int netlink_address_add(Netlink *nl, int ifindex, const Cidr *address, bool no_prefix_route) {
        uint8_t buf[NL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct ifaddrmsg *ifa;

        if (ifindex <= 0)
                return -ENODEV;
        if (address->prefixlen > 32)
                return -EINVAL;
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_NEWADDR;
        nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
        ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
        ifa->ifa_family = AF_INET;
        ifa->ifa_prefixlen = address->prefixlen;
        ifa->ifa_scope = RT_SCOPE_UNIVERSE;
        ifa->ifa_index = (uint32_t) ifindex;
        mnl_attr_put_u32(nlh, IFA_LOCAL, htonl(address->addr));
        mnl_attr_put_u32(nlh, IFA_ADDRESS, htonl(address->addr));
        if (no_prefix_route)
                mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NOPREFIXROUTE);
        return request(nl, nlh);
}

static int write_sysctl(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t l = strlen(value);
        ssize_t n;

        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = write(fd, value, l);
        if (n < 0)
                return -errno;
        return (size_t) n == l ? 0 : -EIO;
}

int netlink_disable_ipv6(void) {
        int r;

        /* /proc/sys/net shows the network namespace of the process that opens it. */
        if (access("/proc/sys/net/ipv6", F_OK) < 0)
                return errno == ENOENT ? 0 : -errno;   /* a kernel without IPv6 */
        /* default first, so a link created meanwhile starts disabled too */
        r = write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1\n");
        if (r < 0)
                return r;
        return write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1\n");
}

int netlink_resolve_links(Netlink *nl, NetlinkLinks *ret) {
        NetlinkLinks l;

        for (size_t i = 0; i < _NET_LINK_MAX; i++) {
                int r = netlink_link_index(net_links[i].name);
                if (r < 0)
                        return r;
                l.ifindex[i] = r;
        }
        *ret = l;
        return 0;
}

static int route_message(Netlink *nl, uint16_t type, uint16_t flags, const NetRoute *r, const NetlinkLinks *links) {
        uint8_t buf[NL_REQUEST_SIZE];
        struct nlmsghdr *nlh;
        struct rtmsg *rtm;
        int oif;

        if (r->link >= _NET_LINK_MAX || r->dst.prefixlen > 32)
                return -EINVAL;
        oif = links->ifindex[r->link];
        if (oif <= 0)
                return -ENODEV;

        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = type;
        nlh->nlmsg_flags = flags;
        rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
        rtm->rtm_family = AF_INET;
        rtm->rtm_dst_len = r->dst.prefixlen;
        rtm->rtm_table = r->table < 256 ? (uint8_t) r->table : RT_TABLE_UNSPEC;
        rtm->rtm_protocol = RTPROT_STATIC;
        rtm->rtm_scope = r->gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
        rtm->rtm_type = RTN_UNICAST;
        mnl_attr_put_u32(nlh, RTA_TABLE, r->table);
        if (r->dst.prefixlen > 0)
                mnl_attr_put_u32(nlh, RTA_DST, htonl(r->dst.addr));
        mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t) oif);
        if (r->gateway)
                mnl_attr_put_u32(nlh, RTA_GATEWAY, htonl(r->gateway));
        if (r->priority)
                mnl_attr_put_u32(nlh, RTA_PRIORITY, r->priority);
        return request(nl, nlh);
}

int netlink_route_add(Netlink *nl, const NetRoute *r, const NetlinkLinks *links) {
        return route_message(nl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, r, links);
}

int netlink_route_delete(Netlink *nl, const NetRoute *r, const NetlinkLinks *links) {
        return route_message(nl, RTM_DELROUTE, 0, r, links);
}

int netlink_policy_install(Netlink *nl, const NetPolicy *p, const NetlinkLinks *links, size_t *ret_failed_index) {
        for (size_t i = 0; i < p->n_routes; i++) {
                int r = netlink_route_add(nl, &p->routes[i], links);
                if (r < 0) {
                        if (ret_failed_index)
                                *ret_failed_index = i;
                        return r;
                }
        }
        return 0;
}

/* ------------------------------------------------------------ read-back */

typedef struct RouteVec {
        NetlinkRoute *items;
        size_t n, allocated;
} RouteVec;

static int route_attr(const struct nlattr *a, void *data) {
        const struct nlattr **tb = data;
        uint16_t type = mnl_attr_get_type(a);

        if (mnl_attr_type_valid(a, RTA_MAX) < 0)
                return MNL_CB_OK;       /* newer attributes: not part of the compared projection */
        switch (type) {
        case RTA_DST:
        case RTA_SRC:
        case RTA_GATEWAY:
        case RTA_OIF:
        case RTA_PRIORITY:
        case RTA_TABLE:
                if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
                        return MNL_CB_ERROR;
                break;
        }
        tb[type] = a;
        return MNL_CB_OK;
}

static int route_collect(const struct nlmsghdr *nlh, void *userdata) {
        RouteVec *v = userdata;
        const struct nlattr *tb[RTA_MAX + 1] = {};
        const struct rtmsg *rtm;
        NetlinkRoute r;

        if (nlh->nlmsg_type != RTM_NEWROUTE)
                return 0;
        if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*rtm))
                return -EBADMSG;
        rtm = mnl_nlmsg_get_payload(nlh);
        if (rtm->rtm_family != AF_INET)
                return 0;
        if (mnl_attr_parse(nlh, sizeof(*rtm), route_attr, tb) < 0)
                return -EBADMSG;

        r = (NetlinkRoute) {
                .dst = tb[RTA_DST] ? ntohl(mnl_attr_get_u32(tb[RTA_DST])) : 0,
                .prefixlen = rtm->rtm_dst_len,
                .table = tb[RTA_TABLE] ? mnl_attr_get_u32(tb[RTA_TABLE]) : rtm->rtm_table,
                .type = rtm->rtm_type,
                .scope = rtm->rtm_scope,
                .gateway = tb[RTA_GATEWAY] ? ntohl(mnl_attr_get_u32(tb[RTA_GATEWAY])) : 0,
                .oif = tb[RTA_OIF] ? (int) mnl_attr_get_u32(tb[RTA_OIF]) : 0,
                .priority = tb[RTA_PRIORITY] ? mnl_attr_get_u32(tb[RTA_PRIORITY]) : 0,
                .multipath = tb[RTA_MULTIPATH] != NULL,
                .other_source = tb[RTA_SRC] != NULL || rtm->rtm_src_len != 0 || rtm->rtm_tos != 0,
        };

        if (v->n == v->allocated) {
                size_t na = v->allocated ? v->allocated * 2 : 64;
                NetlinkRoute *ni;
                if (na > 4 * NET_POLICY_MAX_ROUTES)
                        return -E2BIG;
                ni = realloc(v->items, na * sizeof(NetlinkRoute));
                if (!ni)
                        return -ENOMEM;
                v->items = ni;
                v->allocated = na;
        }
        v->items[v->n++] = r;
        return 0;
}

int netlink_routes_dump(Netlink *nl, NetlinkRoute **ret, size_t *ret_n) {
        RouteVec v = {};
        int r;

        r = dump(nl, RTM_GETROUTE, AF_INET, sizeof(struct rtmsg), route_collect, &v);
        if (r < 0) {
                free(v.items);
                return r;
        }
        *ret = v.items;
        *ret_n = v.n;
        return 0;
}

static void describe_kernel_route(FILE *f, const NetlinkRoute *r) {
        char d[16], g[16], dev[IF_NAMESIZE] = "?";

        ipv4_to_string(r->dst, d);
        if (r->oif > 0 && !if_indextoname((unsigned) r->oif, dev))
                snprintf(dev, sizeof(dev), "#%d", r->oif);
        fprintf(f, "%s/%u", d, r->prefixlen);
        if (r->gateway) {
                ipv4_to_string(r->gateway, g);
                fprintf(f, " via %s", g);
        }
        fprintf(f, " dev %s table %u metric %u type %u scope %u%s%s", r->oif > 0 ? dev : "(none)", r->table,
                r->priority, r->type, r->scope, r->multipath ? " multipath" : "", r->other_source ? " source-specific" : "");
}

static bool in_prefix(uint32_t addr, uint32_t net, uint8_t prefixlen) {
        uint32_t mask = prefixlen == 0 ? 0 : UINT32_MAX << (32 - prefixlen);
        return (addr & mask) == (net & mask);
}

/* The local table holds what the kernel derives from addresses: local and broadcast routes. */
static bool local_route_expected(const NetlinkRoute *k, const NetlinkLinks *links, int lo) {
        if (k->gateway || k->multipath || k->other_source)
                return false;
        if (k->oif == lo && lo > 0)
                return (k->type == RTN_LOCAL || k->type == RTN_BROADCAST) && in_prefix(k->dst, NET_IP4(127, 0, 0, 0), 8) &&
                        k->prefixlen >= 8;
        for (size_t i = 0; i < _NET_LINK_MAX; i++) {
                const Cidr *a = &net_links[i].address;
                if (k->oif != links->ifindex[i])
                        continue;
                if (k->type == RTN_LOCAL)
                        return k->prefixlen == 32 && k->dst == a->addr;
                if (k->type == RTN_BROADCAST)
                        return k->prefixlen == 32 && in_prefix(k->dst, a->addr, a->prefixlen);
                return false;
        }
        return false;
}

static bool kernel_route_matches(const NetlinkRoute *k, const NetRoute *want, int oif) {
        return k->type == RTN_UNICAST &&
                k->scope == (want->gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK) &&
                k->gateway == want->gateway &&
                k->oif == oif &&
                k->priority == want->priority &&
                !k->multipath && !k->other_source;
}

int netlink_policy_verify(Netlink *nl, const NetPolicy *p, const NetlinkLinks *links, char **ret_mismatch) {
        _cleanup_free_ NetlinkRoute *kr = NULL;
        _cleanup_free_ bool *seen = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n_kr = 0, text_len = 0;
        bool mismatch = false;
        FILE *f;
        int r, lo;

        r = netlink_routes_dump(nl, &kr, &n_kr);
        if (r < 0)
                return r;
        lo = netlink_link_index("lo");
        if (lo < 0)
                lo = 0;

        seen = calloc(p->n_routes ?: 1, sizeof(bool));
        if (!seen)
                return -ENOMEM;
        f = open_memstream(&text, &text_len);
        if (!f)
                return -ENOMEM;

        for (size_t i = 0; i < n_kr; i++) {
                const NetlinkRoute *k = &kr[i];
                char want[NET_ROUTE_STRING_MAX];
                size_t j;

                if (k->table == RT_TABLE_LOCAL && local_route_expected(k, links, lo))
                        continue;
                for (j = 0; j < p->n_routes; j++) {
                        const NetRoute *w = &p->routes[j];
                        if (w->table == k->table && w->dst.addr == k->dst && w->dst.prefixlen == k->prefixlen && !seen[j])
                                break;
                }
                if (j == p->n_routes) {
                        fputs("unexpected route ", f);
                        describe_kernel_route(f, k);
                        fputc('\n', f);
                        mismatch = true;
                        continue;
                }
                seen[j] = true;
                if (!kernel_route_matches(k, &p->routes[j], links->ifindex[p->routes[j].link])) {
                        fprintf(f, "route %s differs: found ", net_route_to_string(&p->routes[j], want));
                        describe_kernel_route(f, k);
                        fputc('\n', f);
                        mismatch = true;
                }
        }
        for (size_t j = 0; j < p->n_routes; j++)
                if (!seen[j]) {
                        char want[NET_ROUTE_STRING_MAX];
                        fprintf(f, "missing route %s\n", net_route_to_string(&p->routes[j], want));
                        mismatch = true;
                }

        if (fclose(f) != 0)
                return -ENOMEM;
        if (!mismatch)
                return 1;
        if (text_len > 0 && text[text_len - 1] == '\n')
                text[text_len - 1] = 0;
        *ret_mismatch = TAKE_PTR(text);
        return 0;
}

/* ------------------------------------------------------------ IPv6 */

typedef struct Ipv6State {
        char *problem;
} Ipv6State;

static int ipv6_addr_seen(const struct nlmsghdr *nlh, void *userdata) {
        Ipv6State *s = userdata;
        const struct ifaddrmsg *ifa;
        char name[IF_NAMESIZE] = "?";

        if (nlh->nlmsg_type != RTM_NEWADDR || s->problem)
                return 0;
        if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*ifa))
                return -EBADMSG;
        ifa = mnl_nlmsg_get_payload(nlh);
        if (ifa->ifa_family != AF_INET6)
                return 0;
        /* Any IPv6 address at all, ::1 included, means IPv6 is live somewhere here. */
        (void) if_indextoname(ifa->ifa_index, name);
        if (asprintf(&s->problem, "an IPv6 address (/%u) is configured on %s", ifa->ifa_prefixlen, name) < 0) {
                s->problem = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int ipv6_route_seen(const struct nlmsghdr *nlh, void *userdata) {
        Ipv6State *s = userdata;
        const struct rtmsg *rtm;

        if (nlh->nlmsg_type != RTM_NEWROUTE || s->problem)
                return 0;
        if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*rtm))
                return -EBADMSG;
        rtm = mnl_nlmsg_get_payload(nlh);
        if (rtm->rtm_family != AF_INET6)
                return 0;
        if (asprintf(&s->problem, "an IPv6 route (/%u, table %u, type %u) exists", rtm->rtm_dst_len, rtm->rtm_table,
                     rtm->rtm_type) < 0) {
                s->problem = NULL;
                return -ENOMEM;
        }
        return 0;
}

int netlink_ipv6_absent(Netlink *nl, char **ret_problem) {
        Ipv6State s = {};
        int r;

        r = dump(nl, RTM_GETADDR, AF_INET6, sizeof(struct ifaddrmsg), ipv6_addr_seen, &s);
        if (r >= 0 && !s.problem)
                r = dump(nl, RTM_GETROUTE, AF_INET6, sizeof(struct rtmsg), ipv6_route_seen, &s);
        if (r < 0) {
                free(s.problem);
                return r;
        }
        if (!s.problem)
                return 1;
        *ret_problem = s.problem;
        return 0;
}
