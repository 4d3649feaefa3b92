/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "egress-glib.h"

typedef struct GlibSink {
        void (*sink)(void *userdata, const char *domain, const char *level, const char *message);
        void *userdata;
} GlibSink;

/* glib's default handler is process-wide: so is its target. */
static GlibSink glib_sink;

static const char *level_name(GLogLevelFlags level) {
        if (level & G_LOG_LEVEL_ERROR)
                return "error";
        if (level & G_LOG_LEVEL_CRITICAL)
                return "critical";
        if (level & G_LOG_LEVEL_WARNING)
                return "warning";
        if (level & G_LOG_LEVEL_MESSAGE)
                return "message";
        if (level & G_LOG_LEVEL_INFO)
                return "info";
        return "debug";
}

static void on_glib_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer user_data) {
        const GlibSink *s = user_data;

        /* libslirp's debug output is off unless its SLIRP_DEBUG asks: nothing of it is worth a line. */
        if (level & G_LOG_LEVEL_DEBUG)
                return;
        s->sink(s->userdata, domain ? domain : "glib", level_name(level), message ? message : "");
}

void egress_glib_log_to(void (*sink)(void *userdata, const char *domain, const char *level, const char *message),
                        void *userdata) {
        glib_sink = (GlibSink) { .sink = sink, .userdata = userdata };
        (void) g_log_set_default_handler(on_glib_log, &glib_sink);
}
