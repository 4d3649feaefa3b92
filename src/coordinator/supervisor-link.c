/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "log.h"
#include "supervisor-link.h"

struct SupervisorLink {
        int fd;
        sd_event_source *source;
        SupervisorLinkCallbacks cb;
        void *userdata;
};

SupervisorLink *supervisor_link_free(SupervisorLink *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->source);
        safe_close(l->fd);
        free(l);
        return NULL;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        SupervisorLink *l = userdata;
        SupervisorMsg msg;
        int r, passed = -EBADF;

        r = supervisor_msg_recv(fd, &msg, &passed);
        if (r == -EAGAIN)
                return 0;
        if (r == 0 || (r < 0 && r != -EBADMSG)) {
                l->source = sd_event_source_disable_unref(l->source);
                l->cb.closed(l, NULL, l->userdata);
                return 0;
        }
        if (r < 0) {
                log_error("The supervisor sent a message outside its protocol");
                l->source = sd_event_source_disable_unref(l->source);
                l->cb.closed(l, "the Runtime Supervisor sent a malformed message", l->userdata);
                return 0;
        }
        /* The callee owns what came with it. */
        l->cb.message(l, &msg, passed, l->userdata);
        return 0;
}

int supervisor_link_new(sd_event *e, int fd, const SupervisorLinkCallbacks *cb, void *userdata, SupervisorLink **ret) {
        SupervisorLink *l;
        int r;

        l = calloc(1, sizeof(SupervisorLink));
        if (!l) {
                safe_close(fd);
                return -ENOMEM;
        }
        l->fd = fd;
        l->cb = *cb;
        l->userdata = userdata;
        r = sd_event_add_io(e, &l->source, fd, EPOLLIN, on_readable, l);
        if (r < 0) {
                supervisor_link_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
