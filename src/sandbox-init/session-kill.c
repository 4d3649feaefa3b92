/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "parse-util.h"
#include "session-kill.h"

#define SESSION_KILL_PASSES 64
/* Processes already signalled: a killed process shows until it is gone. */
#define SESSION_KILL_TRACKED 4096

typedef struct Killed {
        pid_t pid[SESSION_KILL_TRACKED];
        size_t n;
} Killed;

static bool killed_before(const Killed *k, pid_t pid) {
        for (size_t i = 0; i < k->n; i++)
                if (k->pid[i] == pid)
                        return true;
        return false;
}

int proc_stat_session(const char *line, char *ret_state, pid_t *ret_session) {
        const char *p = strrchr(line, ')');
        char field[16], state;
        int sid;

        /* ") S ppid pgrp session ..." */
        if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
                return -EINVAL;
        state = p[2];
        p += 4;
        for (int i = 0; i < 3; i++) {
                size_t n = strcspn(p, " \n");

                if (n == 0 || n >= sizeof(field) || (p[n] != ' ' && i < 2))
                        return -EINVAL;
                if (i == 2) {
                        memcpy(field, p, n);
                        field[n] = 0;
                        /* Session 0: a kernel thread's, never a session of ours. */
                        if (parse_int(field, 0, INT32_MAX, &sid) < 0)
                                return -EINVAL;
                }
                p += n + (p[n] == ' ');
        }
        *ret_state = state;
        *ret_session = sid;
        return 0;
}

/* One pass: returns how many live processes of sid were signalled for the first time. */
static int kill_pass(const char *proc_dir, pid_t sid, Killed *killed) {
        DIR *d = opendir(proc_dir);
        struct dirent *de;
        int n = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char path[64], line[1024], state;
                pid_t session;
                ssize_t k;
                int pid, fd;

                if (parse_int(de->d_name, 2, INT32_MAX, &pid) < 0 || pid == getpid())
                        continue;
                if (snprintf(path, sizeof(path), "%s/%d/stat", proc_dir, pid) >= (int) sizeof(path))
                        continue;
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;       /* gone meanwhile */
                k = read(fd, line, sizeof(line) - 1);
                close(fd);
                if (k <= 0)
                        continue;
                line[k] = 0;
                if (proc_stat_session(line, &state, &session) < 0 || session != sid)
                        continue;
                /* A zombie waits for its parent (or init) to reap it. */
                if (state == 'Z' || state == 'X')
                        continue;
                if (kill(pid, SIGKILL) < 0 || killed_before(killed, pid))
                        continue;
                if (killed->n < SESSION_KILL_TRACKED)
                        killed->pid[killed->n++] = pid;
                n++;
        }
        closedir(d);
        return n;
}

int session_kill(const char *proc_dir, pid_t sid) {
        static Killed killed;
        int total = 0;

        killed.n = 0;
        for (int pass = 0; pass < SESSION_KILL_PASSES; pass++) {
                int n = kill_pass(proc_dir, sid, &killed);

                if (n < 0)
                        return n;
                if (n == 0)
                        return total;
                total += n;
        }
        return -EBUSY;
}
