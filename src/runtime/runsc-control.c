/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "runsc-control.h"
#include "util.h"

/* The capabilities by number (linux/capability.h), as runsc names them. */
static const char *const capability_names[] = {
        "CAP_CHOWN",            "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
        "CAP_FSETID",           "CAP_KILL",         "CAP_SETGID",          "CAP_SETUID",
        "CAP_SETPCAP",          "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
        "CAP_NET_ADMIN",        "CAP_NET_RAW",      "CAP_IPC_LOCK",        "CAP_IPC_OWNER",
        "CAP_SYS_MODULE",       "CAP_SYS_RAWIO",    "CAP_SYS_CHROOT",      "CAP_SYS_PTRACE",
        "CAP_SYS_PACCT",        "CAP_SYS_ADMIN",    "CAP_SYS_BOOT",        "CAP_SYS_NICE",
        "CAP_SYS_RESOURCE",     "CAP_SYS_TIME",     "CAP_SYS_TTY_CONFIG",  "CAP_MKNOD",
        "CAP_LEASE",            "CAP_AUDIT_WRITE",  "CAP_AUDIT_CONTROL",   "CAP_SETFCAP",
        "CAP_MAC_OVERRIDE",     "CAP_MAC_ADMIN",    "CAP_SYSLOG",          "CAP_WAKE_ALARM",
        "CAP_BLOCK_SUSPEND",    "CAP_AUDIT_READ",   "CAP_PERFMON",         "CAP_BPF",
        "CAP_CHECKPOINT_RESTORE",
};
#define CAP_NET_RAW_BIT 13

int runsc_capability_from_name(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(capability_names); i++)
                if (streq(name, capability_names[i]))
                        return (int) i;
        return -EINVAL;
}

void runsc_reply_done(RunscReply *r) {
        free(r->err);
        *r = (RunscReply) {};
}

void runsc_state_done(RunscState *s) {
        free(s->status);
        free(s->control_socket);
        json_object_put(s->process);
        *s = (RunscState) {};
}

ssize_t runsc_reply_length(const char *buf, size_t len) {
        size_t i = 0, depth = 0;
        bool in_string = false, escaped = false;

        while (i < len && buf[i] && strchr(" \t\r\n", buf[i]))
                i++;
        if (i == len)
                return 0;
        if (buf[i] != '{')
                return -EBADMSG;
        for (; i < len; i++) {
                char c = buf[i];

                if (c == 0)
                        return -EBADMSG;
                if (in_string) {
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (c == '"')
                        in_string = true;
                else if (c == '{' || c == '[') {
                        if (++depth > JSON_MAX_DEPTH)
                                return -EBADMSG;
                } else if (c == '}' || c == ']') {
                        if (depth == 0)
                                return -EBADMSG;
                        if (--depth == 0)
                                return (ssize_t) i + 1;
                }
        }
        return 0;
}

static int fail(char **ret_error, const char *what) {
        return errorf(ret_error, -EBADMSG, "%s", what);
}

int runsc_reply_parse(const char *buf, size_t len, RunscReply *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        json_object *success, *err, *result;
        RunscReply r = {};
        int k;

        k = json_parse_strict(buf, len, &o, ret_error);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return -EBADMSG;
        if (!json_object_is_type(o, json_type_object))
                return fail(ret_error, "the reply is not an object");
        if (!json_object_object_get_ex(o, "success", &success) || !json_object_is_type(success, json_type_boolean))
                return fail(ret_error, "the reply's \"success\" is missing or not a boolean");
        r.success = json_object_get_boolean(success);
        if (json_object_object_get_ex(o, "err", &err)) {
                if (!json_object_is_type(err, json_type_string))
                        return fail(ret_error, "the reply's \"err\" is not a string");
                if (json_object_get_string_len(err) > 0) {
                        r.err = utf8_escape_invalid(json_object_get_string(err));
                        if (!r.err)
                                return -ENOMEM;
                }
        }
        if (json_object_object_get_ex(o, "result", &result) && result) {
                if (json_object_is_type(result, json_type_int)) {
                        r.has_result = true;
                        r.result = json_object_get_int64(result);
                } else if (!json_object_is_type(result, json_type_object)) {
                        free(r.err);
                        return fail(ret_error, "the reply's \"result\" is neither a number, null nor an object");
                }
        }
        *ret = r;
        return 0;
}

bool runsc_err_is_protocol(const char *err) {
        /* urpc's ErrUnknownMethod, and encoding/json's errors for an argument its types do not take. */
        return err && (streq(err, "unknown method") || startswith(err, "json: ") ||
                       startswith(err, "invalid character") || streq(err, "unexpected end of JSON input"));
}

int runsc_state_parse(const char *text, size_t len, RunscState *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        json_object *status, *sandbox, *sock, *spec, *process;
        RunscState s = {};
        int r;

        if (len > RUNSC_STATE_MAX)
                return fail(ret_error, "the state file is larger than 1 MiB");
        r = json_parse_strict(text, len, &o, ret_error);
        if (r < 0)
                return r == -ENOMEM ? r : -EBADMSG;
        if (!json_object_is_type(o, json_type_object))
                return fail(ret_error, "the state is not an object");
        if (!json_object_object_get_ex(o, "status", &status) || !json_object_is_type(status, json_type_string))
                return fail(ret_error, "the state has no \"status\"");
        if (!json_object_object_get_ex(o, "sandbox", &sandbox) || !json_object_is_type(sandbox, json_type_object) ||
            !json_object_object_get_ex(sandbox, "controlSocketPath", &sock) || !json_object_is_type(sock, json_type_string) ||
            json_object_get_string_len(sock) == 0 || json_object_get_string(sock)[0] != '/')
                return fail(ret_error, "the state names no control socket (sandbox.controlSocketPath)");
        if (json_object_object_get_ex(o, "spec", &spec) && json_object_is_type(spec, json_type_object) &&
            json_object_object_get_ex(spec, "process", &process) && json_object_is_type(process, json_type_object))
                s.process = json_object_get(process);
        s.status = strdup(json_object_get_string(status));
        s.control_socket = strdup(json_object_get_string(sock));
        if (!s.status || !s.control_socket) {
                runsc_state_done(&s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

static json_object *member(json_object *o, const char *key) {
        json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        return v;
}

/* A set of capabilities from a list of names, without CAP_NET_RAW (runsc without --net-raw). */
static int capability_set(json_object *names, const char *set, uint64_t *ret, char **ret_error) {
        uint64_t bits = 0;

        if (!names) {
                *ret = 0;
                return 0;
        }
        if (!json_object_is_type(names, json_type_array))
                return errorf(ret_error, -EINVAL, "capabilities.%s is not a list", set);
        for (size_t i = 0; i < json_object_array_length(names); i++) {
                json_object *n = json_object_array_get_idx(names, i);
                int c = json_object_is_type(n, json_type_string) ? runsc_capability_from_name(json_object_get_string(n))
                                                                 : -EINVAL;
                if (c < 0)
                        return errorf(ret_error, -EINVAL, "capabilities.%s[%zu] is not a capability runsc knows", set, i);
                if (c != CAP_NET_RAW_BIT)
                        bits |= UINT64_C(1) << c;
        }
        *ret = bits;
        return 0;
}

static int capabilities_add(json_object *call_arg, json_object *caps, char **ret_error) {
        static const struct {
                const char *oci, *runsc;
        } sets[] = {
                { "bounding", "BoundingCaps" },
                { "effective", "EffectiveCaps" },
                { "inheritable", "InheritableCaps" },
                { "permitted", "PermittedCaps" },
        };
        _cleanup_json_ json_object *o = NULL;
        int r;

        if (!caps)
                return json_add_null(call_arg, "Capabilities");
        if (!json_object_is_type(caps, json_type_object))
                return errorf(ret_error, -EINVAL, "capabilities is not an object");
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(sets); i++) {
                uint64_t bits = 0;

                r = capability_set(member(caps, sets[i].oci), sets[i].oci, &bits, ret_error);
                if (r < 0)
                        return r;
                r = json_add_uint64(o, sets[i].runsc, bits);
                if (r < 0)
                        return r;
        }
        /* Ambient capabilities: runsc 20240729 takes none from a spec either. */
        r = json_add_uint64(o, "AmbientCaps", 0);
        if (r < 0)
                return r;
        return json_add(call_arg, "Capabilities", TAKE_PTR(o));
}

static int strings_add(json_object *call_arg, const char *key, json_object *v, const char *what, bool required,
                       char **ret_error) {
        if (!v) {
                if (required)
                        return errorf(ret_error, -EINVAL, "the process has no %s", what);
                return json_add(call_arg, key, json_object_new_array());
        }
        if (!json_object_is_type(v, json_type_array))
                return errorf(ret_error, -EINVAL, "the process's %s is not a list", what);
        for (size_t i = 0; i < json_object_array_length(v); i++)
                if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string))
                        return errorf(ret_error, -EINVAL, "the process's %s[%zu] is not a string", what, i);
        return json_add(call_arg, key, json_object_get(v));
}

static int id_get(json_object *user, const char *key, int64_t *ret) {
        json_object *v = member(user, key);

        if (!v) {
                *ret = 0;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
            json_object_get_int64(v) > UINT32_MAX)
                return -EINVAL;
        *ret = json_object_get_int64(v);
        return 0;
}

static int call_new(const char *method, json_object *arg, char **ret) {
        _cleanup_json_ json_object *call = json_object_new_object();
        int r;

        if (!call) {
                json_object_put(arg);
                return -ENOMEM;
        }
        r = json_add_string(call, "method", method);
        if (r < 0) {
                json_object_put(arg);
                return r;
        }
        r = json_add(call, "arg", arg);
        if (r < 0)
                return r;
        return json_to_string(call, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, ret);
}

int runsc_exec_call(json_object *process, json_object *container_process, const char *container_id,
                    const int *guest_fds, size_t n_guest_fds, char **ret, char **ret_error) {
        _cleanup_json_ json_object *arg = json_object_new_object(), *fds = json_object_new_array();
        json_object *user = member(process, "user"), *cwd, *caps, *gids, *terminal, *nnp;
        int64_t uid, gid;
        int r;

        if (!arg || !fds)
                return -ENOMEM;
        if (!process || !json_object_is_type(process, json_type_object))
                return errorf(ret_error, -EINVAL, "the process is not an object");
        r = json_add_string(arg, "filename", "");
        if (r >= 0)
                r = strings_add(arg, "argv", member(process, "args"), "args", true, ret_error);
        if (r >= 0 && json_object_array_length(json_object_object_get(arg, "argv")) == 0)
                return errorf(ret_error, -EINVAL, "the process's args are empty");
        /* runsc takes the container's environment, working directory and
         * capabilities for what the process does not say. */
        if (r >= 0)
                r = strings_add(arg, "envv", member(process, "env") ?: member(container_process, "env"), "env", false,
                                ret_error);
        if (r < 0)
                return r;
        cwd = member(process, "cwd") ?: member(container_process, "cwd");
        if (cwd && (!json_object_is_type(cwd, json_type_string) || json_object_get_string(cwd)[0] != '/'))
                return errorf(ret_error, -EINVAL, "the process's cwd is not an absolute path");
        r = json_add_string(arg, "wd", cwd ? json_object_get_string(cwd) : "");
        if (r < 0)
                return r;
        if ((user && !json_object_is_type(user, json_type_object)) || id_get(user, "uid", &uid) < 0 ||
            id_get(user, "gid", &gid) < 0)
                return errorf(ret_error, -EINVAL, "the process's user is not a uid and gid");
        r = json_add_int64(arg, "KUID", uid);
        if (r >= 0)
                r = json_add_int64(arg, "KGID", gid);
        if (r < 0)
                return r;
        gids = member(user, "additionalGids");
        if (gids && !json_object_is_type(gids, json_type_array))
                return errorf(ret_error, -EINVAL, "the process's user.additionalGids is not a list");
        for (size_t i = 0; gids && i < json_object_array_length(gids); i++) {
                json_object *g = json_object_array_get_idx(gids, i);
                if (!json_object_is_type(g, json_type_int) || json_object_get_int64(g) < 0 ||
                    json_object_get_int64(g) > UINT32_MAX)
                        return errorf(ret_error, -EINVAL, "the process's user.additionalGids holds a value that is no group ID");
        }
        r = json_add(arg, "ExtraKGIDs", gids ? json_object_get(gids) : json_object_new_array());
        if (r < 0)
                return r;
        caps = member(process, "capabilities") ?: member(container_process, "capabilities");
        r = capabilities_add(arg, caps, ret_error);
        if (r < 0)
                return r;
        terminal = member(process, "terminal");
        nnp = member(process, "noNewPrivileges");
        if ((terminal && !json_object_is_type(terminal, json_type_boolean)) ||
            (nnp && !json_object_is_type(nnp, json_type_boolean)))
                return errorf(ret_error, -EINVAL, "the process's terminal or noNewPrivileges is not a boolean");
        r = json_add_bool(arg, "StdioIsPty", terminal && json_object_get_boolean(terminal));
        /* Taken by gVisor since 2025; runsc 20240729's server ignores it. */
        if (r >= 0)
                r = json_add_bool(arg, "NoNewPrivileges", nnp && json_object_get_boolean(nnp));
        /* What runsc exec itself has sent since 2025 (other TTYs passed in stay TTYs). */
        if (r >= 0)
                r = json_add_bool(arg, "SupportTTYs", true);
        for (size_t i = 0; r >= 0 && i < n_guest_fds; i++) {
                if (guest_fds[i] < 0 || (i > 0 && guest_fds[i] <= guest_fds[i - 1]))
                        return -EINVAL;
                r = json_append(fds, json_object_new_int64(guest_fds[i]));
        }
        if (r >= 0)
                r = json_add(arg, "GuestFDs", TAKE_PTR(fds));
        if (r >= 0)
                r = json_add_string(arg, "ContainerID", container_id);
        if (r < 0)
                return r;
        return call_new(RUNSC_METHOD_EXECUTE_ASYNC, TAKE_PTR(arg), ret);
}

int runsc_wait_call(const char *container_id, int32_t pid, char **ret) {
        _cleanup_json_ json_object *arg = json_object_new_object();
        int r;

        if (!arg)
                return -ENOMEM;
        r = json_add_int64(arg, "PID", pid);
        if (r >= 0)
                r = json_add_string(arg, "CID", container_id);
        if (r < 0)
                return r;
        return call_new(RUNSC_METHOD_WAIT_PID, TAKE_PTR(arg), ret);
}

int runsc_signal_call(const char *container_id, int32_t pid, int sig, int mode, char **ret) {
        _cleanup_json_ json_object *arg = json_object_new_object();
        int r;

        if (!arg)
                return -ENOMEM;
        r = json_add_string(arg, "CID", container_id);
        if (r >= 0)
                r = json_add_int64(arg, "Signo", sig);
        if (r >= 0)
                r = json_add_int64(arg, "PID", pid);
        if (r >= 0)
                r = json_add_int64(arg, "Mode", mode);
        if (r < 0)
                return r;
        return call_new(RUNSC_METHOD_SIGNAL, TAKE_PTR(arg), ret);
}

int runsc_connect(const char *path) {
        _cleanup_close_ int fd = -EBADF, opath = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char proc[64];
        const char *p = path;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                opath = open(path, O_PATH | O_CLOEXEC);
                if (opath < 0)
                        return -errno;
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", opath);
                p = proc;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        strncpy(sa.sun_path, p, sizeof(sa.sun_path) - 1);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static void close_passed(struct msghdr *m) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int *fds = (int *) CMSG_DATA(c);
                        for (size_t i = 0; i < n; i++)
                                (void) close(fds[i]);
                }
}

int runsc_send(int fd, const char *call, const int *fds, size_t n_fds) {
        size_t len = strlen(call), off = 0;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(RUNSC_FILES_MAX * sizeof(int))];
        } ctl = {};

        if (n_fds > RUNSC_FILES_MAX)
                return -E2BIG;
        while (off < len) {
                struct iovec iov = { .iov_base = (char *) call + off, .iov_len = len - off };
                struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
                ssize_t n;

                /* The files ride on the first bytes, as urpc reads them. */
                if (off == 0 && n_fds > 0) {
                        m.msg_control = ctl.b;
                        m.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
                        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                        c->cmsg_level = SOL_SOCKET;
                        c->cmsg_type = SCM_RIGHTS;
                        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
                        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
                }
                n = sendmsg(fd, &m, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                off += (size_t) n;
        }
        return 0;
}

int runsc_receive(int fd, RunscReply *ret, char **ret_error) {
        _cleanup_free_ char *buf = malloc(RUNSC_REPLY_MAX);
        size_t have = 0;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(RUNSC_FILES_MAX * sizeof(int))];
        } ctl;

        if (!buf)
                return -ENOMEM;
        for (;;) {
                struct iovec iov = { .iov_base = buf + have, .iov_len = RUNSC_REPLY_MAX - have };
                struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                                    .msg_controllen = sizeof(ctl.b) };
                ssize_t n, l;

                if (have == RUNSC_REPLY_MAX)
                        return fail(ret_error, "the reply is longer than 64 KiB");
                n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                close_passed(&m);
                if (n == 0)
                        return -ECONNRESET;
                have += (size_t) n;
                l = runsc_reply_length(buf, have);
                if (l < 0)
                        return fail(ret_error, "the reply is not a JSON object");
                if (l > 0)
                        return runsc_reply_parse(buf, (size_t) l, ret, ret_error);
        }
}

int runsc_call(int fd, const char *call, const int *fds, size_t n_fds, RunscReply *ret, char **ret_error) {
        int r = runsc_send(fd, call, fds, n_fds);

        return r < 0 ? r : runsc_receive(fd, ret, ret_error);
}
