/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <shadow/subid.h>

#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "strv.h"
#include "parse-util.h"
#include "subid.h"
#include "util.h"

int subid_pick(const SubidSpan *spans, size_t n_spans, SubidRange *ret) {
        bool found = false;
        SubidRange best = {};

        for (size_t i = 0; i < n_spans; i++) {
                const SubidSpan *s = &spans[i];

                if (s->count < SUBID_COUNT || s->start > UINT32_MAX - (SUBID_COUNT - 1))
                        continue;
                if (found && s->start >= best.start)
                        continue;
                best = (SubidRange) {
                        .start = (uint32_t) s->start,
                        .count = s->count > UINT32_MAX ? UINT32_MAX : (uint32_t) s->count,
                };
                found = true;
        }
        if (!found)
                return -ENOENT;
        *ret = best;
        return 0;
}

int subid_nss_source(const char *text, char **ret) {
        for (const char *line = text; line && *line;) {
                const char *eol = strchrnul(line, '\n'), *p, *end;

                if (eol - line >= 6 && strncasecmp(line, "subid:", 6) == 0) {
                        p = line + 6;
                        while (p < eol && isspace((unsigned char) *p))
                                p++;
                        if (p < eol) {
                                char *name;

                                for (end = p; end < eol && !isspace((unsigned char) *end); end++)
                                        ;
                                if ((size_t) (end - p) == strlen("files") && strncmp(p, "files", 5) == 0) {
                                        *ret = NULL;
                                        return 0;
                                }
                                name = strndup(p, end - p);
                                if (!name)
                                        return -ENOMEM;
                                *ret = name;
                                return 0;
                        }
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret = NULL;
        return 0;
}

int subid_missing_message(const char *who, const char *nss_source, bool uids, bool gids, char **ret) {
        _cleanup_free_ char *fix = NULL;
        int r;

        assert(uids || gids);

        if (asprintf(&fix, "sudo usermod%s%s %s", uids ? " --add-subuids 100000-165535" : "",
                     gids ? " --add-subgids 100000-165535" : "", who) < 0)
                return -ENOMEM;
        if (nss_source)
                r = asprintf(ret, "no range of %u subordinate IDs for %s from the subid source \"%s\" of %s "
                             "(have one assigned there, or make that line \"subid: files\" and add one with: %s)",
                             SUBID_COUNT, who, nss_source, SUBID_NSSWITCH_FILE, fix);
        else
                r = asprintf(ret, "no range of %u subordinate IDs for %s in %s (add one with: %s)", SUBID_COUNT,
                             who, uids && gids ? SUBID_UID_FILE " and " SUBID_GID_FILE : uids ? SUBID_UID_FILE : SUBID_GID_FILE,
                             fix);
        return r < 0 ? -ENOMEM : 0;
}

int subid_user_name(uid_t uid, char **ret) {
        struct passwd pw, *result = NULL;
        char buf[4096];
        char *name;
        int r;

        r = getpwuid_r(uid, &pw, buf, sizeof(buf), &result);
        if (r != 0)
                return -r;
        if (!result)
                return -ESRCH;
        name = strdup(result->pw_name);
        if (!name)
                return -ENOMEM;
        *ret = name;
        return 0;
}

/*
 * libsubid, loaded the first time a subordinate ID is looked up rather than
 * linked: its own dependencies (PAM, SELinux, libaudit, libsemanage: eleven
 * libraries) cost every lazaretctl and coordinator start about 0.9 ms
 * (median of 300 starts), and only the coordinator's start-up, image
 * preparation and `lazaretctl unshare` look subordinate IDs up. The
 * functions are typed by the header this was built against, the library
 * named by the soname the linker would have recorded (LIBSUBID_SONAME).
 */
static struct {
        int state;              /* 0 not tried, 1 loaded, else a negative errno */
        char error[256];
        typeof(subid_init) *init;
        typeof(subid_get_uid_ranges) *uid_ranges;
        typeof(subid_get_gid_ranges) *gid_ranges;
} lib;

/* libsubid reports to a FILE; nothing of it reaches our stderr, and the FILE
 * is not inherited by our children. */
static int subid_library_init(void) {
        FILE *devnull;
        void *h;

        if (lib.state != 0)
                return lib.state < 0 ? lib.state : 0;
        lib.state = -ELIBACC;
        h = dlopen(LIBSUBID_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                snprintf(lib.error, sizeof(lib.error), "%s", strna(dlerror()));
                return lib.state;
        }
        lib.init = (typeof(lib.init)) dlsym(h, "subid_init");
        lib.uid_ranges = (typeof(lib.uid_ranges)) dlsym(h, "subid_get_uid_ranges");
        lib.gid_ranges = (typeof(lib.gid_ranges)) dlsym(h, "subid_get_gid_ranges");
        if (!lib.init || !lib.uid_ranges || !lib.gid_ranges) {
                snprintf(lib.error, sizeof(lib.error), "it lacks subid_init(), subid_get_uid_ranges() or "
                         "subid_get_gid_ranges()");
                lib.state = -ELIBBAD;
                return lib.state;
        }
        lib.state = 1;
        devnull = fopen("/dev/null", "we");
        if (devnull)
                (void) lib.init("lazaret", devnull);
        return 0;
}

/*
 * libsubid's ranges of owner. The files source reports a missing file as
 * an error with errno ENOENT: that is no range. An nss source's failure
 * carries no errno of its own: -EIO.
 */
static int subid_list(const char *owner, bool gids, const char *nss_source, SubidSpan **ret, size_t *ret_n) {
        _cleanup_free_ struct subid_range *ranges = NULL;
        _cleanup_free_ SubidSpan *spans = NULL;
        int n;

        if (subid_library_init() < 0)
                return lib.state;
        errno = 0;
        n = gids ? lib.gid_ranges(owner, &ranges) : lib.uid_ranges(owner, &ranges);
        if (n < 0) {
                if (nss_source || errno <= 0)
                        return -EIO;
                if (errno != ENOENT)
                        return -errno;
                n = 0;
        }
        if (n > 0) {
                spans = calloc((size_t) n, sizeof(SubidSpan));
                if (!spans)
                        return -ENOMEM;
                for (int i = 0; i < n; i++)
                        spans[i] = (SubidSpan) { .start = ranges[i].start, .count = ranges[i].count };
        }
        *ret = TAKE_PTR(spans);
        *ret_n = (size_t) n;
        return 0;
}

int subid_pick_for_user(const char *user, uid_t uid, SubidRange *ret_uids, SubidRange *ret_gids, char **ret_why) {
        _cleanup_free_ char *nsswitch = NULL, *nss_source = NULL, *msg = NULL;
        _cleanup_free_ SubidSpan *uid_spans = NULL, *gid_spans = NULL;
        size_t n_uid = 0, n_gid = 0;
        SubidRange uids, gids;
        bool no_uids, no_gids;
        char owner[16];
        int r;

        snprintf(owner, sizeof(owner), "%u", (unsigned) uid);
        if (!user)
                user = owner;
        r = subid_library_init();
        if (r < 0)
                return errorf(ret_why, r, "cannot load %s, the shadow suite's library of subordinate IDs (%s); "
                              "install it (Debian: libsubid4)", LIBSUBID_SONAME, lib.error);

        r = read_full_file(SUBID_NSSWITCH_FILE, 1024 * 1024, &nsswitch, NULL);
        if (r >= 0)
                r = subid_nss_source(nsswitch, &nss_source);
        if (r == -ENOMEM)
                return r;

        for (int gid = 0; gid < 2; gid++) {
                r = subid_list(user, gid, nss_source, gid ? &gid_spans : &uid_spans, gid ? &n_gid : &n_uid);
                if (r < 0 && nss_source)
                        return errorf(ret_why, r, "cannot look up the subordinate %s of %s through the subid "
                                      "source \"%s\" of %s (libsubid_%s.so)", gid ? "GIDs" : "UIDs", user,
                                      nss_source, SUBID_NSSWITCH_FILE, nss_source);
                if (r < 0)
                        return errorf(ret_why, r, "cannot read %s: %s", gid ? SUBID_GID_FILE : SUBID_UID_FILE,
                                      strerror(-r));
        }

        no_uids = subid_pick(uid_spans, n_uid, &uids) < 0;
        no_gids = subid_pick(gid_spans, n_gid, &gids) < 0;
        if (no_uids || no_gids) {
                r = subid_missing_message(user, nss_source, no_uids, no_gids, &msg);
                if (r < 0)
                        return r;
                return errorf(ret_why, -ENOENT, "%s", msg);
        }
        *ret_uids = uids;
        *ret_gids = gids;
        return 0;
}

int subid_mapper_argv(const char *tool, pid_t pid, uint32_t id, const SubidRange *range, char ***ret) {
        _cleanup_strv_free_ char **argv = NULL;
        char *prog = NULL, spid[16], sid[16], sstart[16], scount[16];
        int r;

        r = find_program(tool, &prog);
        if (r < 0)
                return r;
        if (strv_push(&argv, prog) < 0) {
                free(prog);
                return -ENOMEM;
        }
        snprintf(spid, sizeof(spid), "%d", (int) pid);
        snprintf(sid, sizeof(sid), "%" PRIu32, id);
        snprintf(sstart, sizeof(sstart), "%" PRIu32, range->start);
        snprintf(scount, sizeof(scount), "%u", SUBID_COUNT);
        if (strv_extend(&argv, spid) < 0 || strv_extend(&argv, "0") < 0 || strv_extend(&argv, sid) < 0 ||
            strv_extend(&argv, "1") < 0 || strv_extend(&argv, "1") < 0 || strv_extend(&argv, sstart) < 0 ||
            strv_extend(&argv, scount) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(argv);
        return 0;
}

int subid_map_check(const char *text, uint32_t id, const SubidRange *range) {
        unsigned lines = 0;
        bool first = false, second = false;

        for (const char *line = text; line && *line;) {
                const char *eol = strchrnul(line, '\n');
                _cleanup_free_ char *l = strndup(line, eol - line);
                uint64_t a, b, n;
                char *f[3];

                if (!l)
                        return -ENOMEM;
                /* The kernel pads each column to ten characters with spaces. */
                if (split_fields(l, " ", f, 3) != 3 ||
                    parse_unsigned(f[0], 0, 0, UINT32_MAX, &a) < 0 ||
                    parse_unsigned(f[1], 0, 0, UINT32_MAX, &b) < 0 ||
                    parse_unsigned(f[2], 0, 0, UINT32_MAX, &n) < 0)
                        return -EPERM;
                lines++;
                if (a == 0 && b == id && n == 1)
                        first = true;
                else if (a == 1 && b == range->start && n == SUBID_COUNT)
                        second = true;
                line = *eol ? eol + 1 : eol;
        }
        return lines == 2 && first && second ? 0 : -EPERM;
}

int subid_map_check_pid(pid_t pid, const char *file, uint32_t id, const SubidRange *range) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        int r;

        if (asprintf(&path, "/proc/%d/%s", (int) pid, file) < 0)
                return -ENOMEM;
        r = read_full_file(path, 4096, &buf, NULL);
        if (r < 0)
                return r;
        return subid_map_check(buf, id, range);
}

int userns_child_hook(void *userdata) {
        const UsernsHook *h = userdata;
        char c;

        if (unshare(CLONE_NEWUSER) < 0)
                return 1;
        if (write(h->sync_fd, "u", 1) != 1)
                return 1;
        if (read(h->go_fd, &c, 1) != 1 || c != 'g')
                return 1;
        (void) close(h->sync_fd);
        (void) close(h->go_fd);
        if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
                return 1;
        return 0;
}
