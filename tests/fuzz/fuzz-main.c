/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replays fuzz inputs without libFuzzer: each argument is a file or a
 * directory of files, fed to LLVMFuzzerTestOneInput() one at a time. Every
 * file says in its name what must happen: "accept-*" must be accepted and
 * "reject-*" refused (the target reports through fuzz_accepted). A file named
 * otherwise fails the replay, and so does a replay without at least one input
 * of each kind: a corpus whose expectations are missing cannot pass.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fs-util.h"
#include "fuzz.h"

static unsigned n_accept, n_reject;

static int run_file(const char *path) {
        _cleanup_free_ char *buf = NULL;
        const char *base = strrchr(path, '/');
        bool want;
        size_t n;
        int r;

        base = base ? base + 1 : path;
        if (strncmp(base, "accept-", 7) == 0)
                want = true;
        else if (strncmp(base, "reject-", 7) == 0)
                want = false;
        else {
                fprintf(stderr, "%s: no expectation: name it accept-* or reject-*\n", path);
                return -EINVAL;
        }
        r = read_full_file(path, 16 * 1024 * 1024, &buf, &n);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        fuzz_accepted = false;
        LLVMFuzzerTestOneInput((const uint8_t *) buf, n);

        if (fuzz_accepted != want) {
                fprintf(stderr, "%s: %s\n", path, want ? "refused, but must be accepted" : "accepted, but must be refused");
                return -EBADMSG;
        }
        if (want)
                n_accept++;
        else
                n_reject++;
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned count = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (run_file(argv[i]) < 0)
                                return 1;
                        count++;
                        continue;
                }
                DIR *d = opendir(argv[i]);
                struct dirent *de;
                if (!d)
                        return 1;
                while ((de = readdir(d))) {
                        char *p;
                        if (de->d_name[0] == '.')
                                continue;
                        if (asprintf(&p, "%s/%s", argv[i], de->d_name) < 0)
                                return 1;
                        if (run_file(p) < 0)
                                return 1;
                        free(p);
                        count++;
                }
                closedir(d);
        }
        printf("replayed %u inputs: %u accepted, %u refused, as named\n", count, n_accept, n_reject);
        if (n_accept == 0 || n_reject == 0) {
                fprintf(stderr, "the corpus needs at least one accept-* and one reject-* input\n");
                return 1;
        }
        return 0;
}
