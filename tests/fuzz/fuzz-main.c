/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replays fuzz inputs without libFuzzer: each argument is a file or a
 * directory of files, fed to LLVMFuzzerTestOneInput() one at a time. A file
 * named "accept-*" must be accepted and one named "reject-*" refused (the
 * target reports through fuzz_accepted); others must merely not crash.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fs-util.h"
#include "fuzz.h"

static int run_file(const char *path) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r;

        r = read_full_file(path, 16 * 1024 * 1024, &buf, &n);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        fuzz_accepted = false;
        LLVMFuzzerTestOneInput((const uint8_t *) buf, n);

        /* Inputs named for their outcome must have it. */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (strncmp(base, "reject-", 7) == 0 && fuzz_accepted) {
                fprintf(stderr, "%s: accepted, but must be refused\n", path);
                return -EBADMSG;
        }
        if (strncmp(base, "accept-", 7) == 0 && !fuzz_accepted) {
                fprintf(stderr, "%s: refused, but must be accepted\n", path);
                return -EBADMSG;
        }
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
        printf("replayed %u inputs\n", count);
        return count > 0 ? 0 : 1;
}
