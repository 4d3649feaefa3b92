/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <unistd.h>
#include <grp.h>
#include <sched.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "parse-util.h"
#include "strv.h"
#include "subid.h"
#include "util.h"

/* A column of /etc/subuid: decimal, leading zeros tolerated (shadow's own reader takes them). */
static int parse_u32(const char *s, size_t n, uint32_t *ret) {
        uint64_t v;
        int r;

        r = parse_unsigned_n(s, n, PARSE_LEADING_ZEROS, 0, UINT32_MAX, &v);
        if (r < 0)
                return r;
        *ret = (uint32_t) v;
        return 0;
}

int subid_pick(const char *text, const char *user, uint32_t id, SubidRange *ret) {
        char idstr[16];
        bool found = false;
        SubidRange best = {};

        snprintf(idstr, sizeof(idstr), "%" PRIu32, id);

        for (const char *line = text; line && *line;) {
                const char *eol = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', eol - line);
                const char *c2 = c1 ? memchr(c1 + 1, ':', eol - c1 - 1) : NULL;
                SubidRange r;

                if (c1 && c2) {
                        size_t nl = c1 - line;
                        bool ours = (user && strlen(user) == nl && strncmp(line, user, nl) == 0) ||
                                    (strlen(idstr) == nl && strncmp(line, idstr, nl) == 0);
                        if (ours && parse_u32(c1 + 1, c2 - c1 - 1, &r.start) >= 0 &&
                            parse_u32(c2 + 1, eol - c2 - 1, &r.count) >= 0 &&
                            r.count >= SUBID_COUNT && (uint64_t) r.start + SUBID_COUNT - 1 <= UINT32_MAX &&
                            (!found || r.start < best.start)) {
                                best = r;
                                found = true;
                        }
                }
                line = *eol ? eol + 1 : eol;
        }
        if (!found)
                return -ENOENT;
        *ret = best;
        return 0;
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

int subid_pick_ranges(const char *uid_path, const char *gid_path, const char *user, uid_t uid, gid_t gid,
                      SubidRange *ret_uids, SubidRange *ret_gids, char **ret_why) {
        _cleanup_free_ char *uid_text = NULL, *gid_text = NULL;
        SubidRange uids, gids;
        char who[16];
        int r;

        r = read_full_file(uid_path, 1024 * 1024, &uid_text, NULL);
        if (r < 0 && r != -ENOENT)
                return errorf(ret_why, r, "cannot read %s: %s", uid_path, strerror(-r));
        if (r >= 0) {
                r = read_full_file(gid_path, 1024 * 1024, &gid_text, NULL);
                if (r < 0 && r != -ENOENT)
                        return errorf(ret_why, r, "cannot read %s: %s", gid_path, strerror(-r));
        }
        if (r >= 0)
                r = subid_pick(uid_text, user, (uint32_t) uid, &uids);
        if (r >= 0)
                r = subid_pick(gid_text, user, (uint32_t) gid, &gids);
        if (r < 0) {
                snprintf(who, sizeof(who), "%u", (unsigned) uid);
                return errorf(ret_why, r,
                              "no range of %u subordinate IDs for %s in %s and %s "
                              "(add one with: sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s)",
                              SUBID_COUNT, user ?: who, uid_path, gid_path, user ?: who);
        }
        *ret_uids = uids;
        *ret_gids = gids;
        return 0;
}

int subid_pick_for_user(const char *user, uid_t uid, gid_t gid, SubidRange *ret_uids, SubidRange *ret_gids,
                        char **ret_why) {
        return subid_pick_ranges(SUBID_UID_FILE, SUBID_GID_FILE, user, uid, gid, ret_uids, ret_gids, ret_why);
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
        ssize_t k;
        char c;

        if (unshare(CLONE_NEWUSER) < 0)
                return -errno;
        if (write(h->sync_fd, "u", 1) != 1)
                return -EPIPE;
        k = read(h->go_fd, &c, 1);
        if (k < 0)
                return -errno;
        if (k != 1 || c != 'g')
                return -ECANCELED;      /* the parent gave up on us */
        (void) close(h->sync_fd);
        (void) close(h->go_fd);
        if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
                return -errno;
        return 0;
}
