/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lt-rename FROM TO: rename(2) alone, for the tests of the workspace view,
 * which mv would hide behind its copying fallback on EXDEV. Built static by
 * lt_use_rename_image (tests/harness/lib.sh) and run inside the sandbox.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char *argv[]) {
        if (argc != 3) {
                fprintf(stderr, "usage: lt-rename FROM TO\n");
                return 2;
        }
        if (rename(argv[1], argv[2]) < 0) {
                fprintf(stderr, "rename: %s\n", strerror(errno));
                return 1;
        }
        return 0;
}
