/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * unix-connect: tries connect() on a unix stream socket and says what
 * happened, for attack tests run as another user.
 *
 *   unix-connect PATH        a socket file
 *   unix-connect @NAME       an abstract socket (no trailing NUL in the name)
 *   unix-connect --listen @NAME|PATH
 *                            the control: listens there, prints "listening",
 *                            accepts until its stdin reaches EOF
 *
 * Prints "connected" and exits 0, or prints the errno name (ENOENT, EACCES,
 * ECONNREFUSED, ...) and exits 1; 2 on bad usage. SOCK_SEQPACKET is tried
 * when the socket refuses a stream connection with EPROTOTYPE (runsc's
 * control socket is a seqpacket socket).
 *
 * Built by the test that uses it, with cc.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *errno_name(int e) {
        switch (e) {
        case ENOENT: return "ENOENT";
        case EACCES: return "EACCES";
        case EPERM: return "EPERM";
        case ECONNREFUSED: return "ECONNREFUSED";
        case EPROTOTYPE: return "EPROTOTYPE";
        case ENOTDIR: return "ENOTDIR";
        case ENAMETOOLONG: return "ENAMETOOLONG";
        default: return "EOTHER";
        }
}

static int try_connect(int type, const struct sockaddr_un *sa, socklen_t len) {
        int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        return 0;
}

int main(int argc, char *argv[]) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t len;
        size_t n;
        int r;

        const char *name;
        bool listening = false;

        if (argc == 3 && strcmp(argv[1], "--listen") == 0)
                listening = true;
        else if (argc != 2) {
                fprintf(stderr, "usage: unix-connect [--listen] PATH|@NAME\n");
                return 2;
        }
        name = argv[argc - 1];
        n = strlen(name);
        if (n == 0 || n >= sizeof(sa.sun_path)) {
                fprintf(stderr, "unix-connect: empty or too long name\n");
                return 2;
        }
        if (name[0] == '@') {
                /* Abstract: a leading NUL, then the name, its length given exactly. */
                memcpy(sa.sun_path + 1, name + 1, n - 1);
                len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n);
        } else {
                memcpy(sa.sun_path, name, n);
                len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);
        }

        if (listening) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                char c;

                if (fd < 0 || bind(fd, (const struct sockaddr *) &sa, len) < 0 || listen(fd, 16) < 0) {
                        printf("%s (%s)\n", errno_name(errno), strerror(errno));
                        return 1;
                }
                puts("listening");
                fflush(stdout);
                /* Pending connections complete in the backlog without accept(). */
                while (read(STDIN_FILENO, &c, 1) > 0)
                        ;
                return 0;
        }

        r = try_connect(SOCK_STREAM, &sa, len);
        if (r == -EPROTOTYPE)
                r = try_connect(SOCK_SEQPACKET, &sa, len);
        if (r == 0) {
                puts("connected");
                return 0;
        }
        printf("%s (%s)\n", errno_name(-r), strerror(-r));
        return 1;
}
