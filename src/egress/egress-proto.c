/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "egress-proto.h"
#include "egress-util.h"
#include "json-util.h"
#include "macro.h"
#include "parse-util.h"
#include "util.h"

static const char *const scope_names[_EGRESS_SCOPE_MAX] = {
        [EGRESS_SCOPE_ONCE] = "once",
        [EGRESS_SCOPE_DOMAIN] = "domain",
        [EGRESS_SCOPE_KEEP] = "keep",
};

const char *egress_scope_to_string(EgressScope s) {
        return s >= 0 && s < _EGRESS_SCOPE_MAX ? scope_names[s] : NULL;
}

int egress_scope_from_string(const char *s, EgressScope *ret) {
        for (int i = 0; i < _EGRESS_SCOPE_MAX; i++)
                if (s && streq(s, scope_names[i])) {
                        *ret = (EgressScope) i;
                        return 0;
                }
        return -EINVAL;
}

/* Whether name is exactly what host_name_normalize() writes: the only names this protocol carries. */
static bool name_is_normal(const char *name) {
        char norm[DNS_NAME_TEXT_MAX + 1];
        size_t n = strnlen(name, DNS_NAME_TEXT_MAX + 1);

        return n <= DNS_NAME_TEXT_MAX && host_name_normalize(name, n, 0, norm, NULL) >= 0 && streq(norm, name);
}

int egress_event_format(const EgressEvent *ev, char buf[static EGRESS_EVENT_LINE_MAX]) {
        int n;

        switch (ev->kind) {
        case EGRESS_EVENT_DENIED_DNS:
                if (!name_is_normal(ev->name))
                        return -EINVAL;
                n = snprintf(buf, EGRESS_EVENT_LINE_MAX, "denied dns %s\n", ev->name);
                break;
        case EGRESS_EVENT_DENIED_PORT:
                if (!name_is_normal(ev->name) || ev->port == 0)
                        return -EINVAL;
                n = snprintf(buf, EGRESS_EVENT_LINE_MAX, "denied port %s %u\n", ev->name, (unsigned) ev->port);
                break;
        case EGRESS_EVENT_DROPPED:
                if (ev->dropped == 0)
                        return -EINVAL;
                n = snprintf(buf, EGRESS_EVENT_LINE_MAX, "dropped %u\n", (unsigned) ev->dropped);
                break;
        default:
                return -EINVAL;
        }
        return n < 0 || (size_t) n >= EGRESS_EVENT_LINE_MAX ? -EINVAL : n;
}

int egress_event_parse(const char *line, size_t n, EgressEvent *ret, char **ret_error) {
        char s[EGRESS_EVENT_LINE_MAX + 1], shown[EGRESS_SHOW_MAX];
        EgressEvent ev = {};
        const char *arg, *sp;
        uint64_t v;

        if (n == 0 || n >= EGRESS_EVENT_LINE_MAX)
                return errorf(ret_error, -EBADMSG, "an event line of %zu bytes", n);
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) line[i] < 0x20 || (unsigned char) line[i] >= 0x7f)
                        return errorf(ret_error, -EBADMSG, "an event line holding \"%s\"",
                                      egress_show(line + i, 1, shown));
        memcpy(s, line, n);
        s[n] = 0;

        if ((arg = startswith(s, "denied dns "))) {
                ev.kind = EGRESS_EVENT_DENIED_DNS;
                if (strlen(arg) > DNS_NAME_TEXT_MAX || !name_is_normal(arg))
                        return errorf(ret_error, -EBADMSG, "\"%s\" is not a host name", egress_show(arg, strlen(arg), shown));
                strcpy(ev.name, arg);
        } else if ((arg = startswith(s, "denied port "))) {
                ev.kind = EGRESS_EVENT_DENIED_PORT;
                sp = strchr(arg, ' ');
                if (!sp || (size_t) (sp - arg) > DNS_NAME_TEXT_MAX)
                        return errorf(ret_error, -EBADMSG, "\"%s\" is not a name and a port", egress_show(arg, strlen(arg), shown));
                memcpy(ev.name, arg, (size_t) (sp - arg));
                ev.name[sp - arg] = 0;
                if (!name_is_normal(ev.name))
                        return errorf(ret_error, -EBADMSG, "\"%s\" is not a host name",
                                      egress_show(ev.name, strlen(ev.name), shown));
                if (parse_unsigned_n(sp + 1, strlen(sp + 1), 0, 1, 65535, &v) < 0)
                        return errorf(ret_error, -EBADMSG, "\"%s\" is not a port", egress_show(sp + 1, strlen(sp + 1), shown));
                ev.port = (uint16_t) v;
        } else if ((arg = startswith(s, "dropped "))) {
                ev.kind = EGRESS_EVENT_DROPPED;
                if (parse_unsigned_n(arg, strlen(arg), 0, 1, UINT32_MAX, &v) < 0)
                        return errorf(ret_error, -EBADMSG, "\"%s\" is not a count", egress_show(arg, strlen(arg), shown));
                ev.dropped = (uint32_t) v;
        } else
                return errorf(ret_error, -EBADMSG, "an unknown event \"%s\"", egress_show(s, n, shown));
        *ret = ev;
        return 0;
}

void egress_event_rule(const EgressEvent *ev, char buf[static HOST_RULE_STRING_MAX]) {
        if (ev->kind == EGRESS_EVENT_DENIED_PORT)
                snprintf(buf, HOST_RULE_STRING_MAX, "%s:%u", ev->name, (unsigned) ev->port);
        else
                snprintf(buf, HOST_RULE_STRING_MAX, "%s", ev->name);
}

/* {"execute":VERB,"arguments":*args} as one line; takes *args. */
static int execute_text(json_object *o, const char *verb, json_object **args, char **ret) {
        char *text;
        int k;

        k = json_add_string(o, "execute", verb);
        if (k < 0)
                return k;
        if (json_object_object_add(o, "arguments", *args) < 0)
                return -ENOMEM;
        *args = NULL;
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}

int egress_allow_request(const char *rule, EgressScope scope, char **ret, char **ret_error) {
        _cleanup_json_ json_object *o = json_object_new_object(), *args = json_object_new_object();
        char canon[HOST_RULE_STRING_MAX];
        HostRule r;
        int k;

        if (!o || !args)
                return -ENOMEM;
        k = host_rule_parse(rule, &r, ret_error);
        if (k < 0)
                return k;
        if (scope != EGRESS_SCOPE_ONCE && scope != EGRESS_SCOPE_DOMAIN)
                return errorf(ret_error, -EINVAL, "the helper holds a rule once or for the Domain's life only");
        host_rule_format(&r, canon);
        k = json_add_string(args, "rule", canon);
        if (k >= 0)
                k = json_add_string(args, "scope", egress_scope_to_string(scope));
        if (k < 0)
                return k;
        return execute_text(o, "add_host", &args, ret);
}

int egress_allow_parse(json_object *args, HostRule *ret_rule, EgressScope *ret_scope, char **ret_error) {
        json_object *rule, *scope;
        EgressScope s;
        HostRule r;
        int k;

        if (!json_object_is_type(args, json_type_object) || !json_object_object_get_ex(args, "rule", &rule) ||
            !json_object_is_type(rule, json_type_string) || !json_object_object_get_ex(args, "scope", &scope) ||
            !json_object_is_type(scope, json_type_string) || json_object_object_length(args) != 2)
                return errorf(ret_error, -EINVAL, "add_host takes a rule and a scope, both strings");
        if (egress_scope_from_string(json_object_get_string(scope), &s) < 0 ||
            (s != EGRESS_SCOPE_ONCE && s != EGRESS_SCOPE_DOMAIN))
                return errorf(ret_error, -EINVAL, "the scope is \"once\" or \"domain\"");
        k = host_rule_parse(json_object_get_string(rule), &r, ret_error);
        if (k < 0)
                return k;
        *ret_rule = r;
        *ret_scope = s;
        return 0;
}

int egress_remove_request(const char *rule, char **ret, char **ret_error) {
        _cleanup_json_ json_object *o = json_object_new_object(), *args = json_object_new_object();
        char canon[HOST_RULE_STRING_MAX];
        HostRule r;
        int k;

        if (!o || !args)
                return -ENOMEM;
        k = host_rule_parse(rule, &r, ret_error);
        if (k < 0)
                return k;
        host_rule_format(&r, canon);
        k = json_add_string(args, "rule", canon);
        if (k < 0)
                return k;
        return execute_text(o, "remove_host", &args, ret);
}

int egress_remove_parse(json_object *args, HostRule *ret_rule, char **ret_error) {
        json_object *rule;
        HostRule r;
        int k;

        if (!json_object_is_type(args, json_type_object) || !json_object_object_get_ex(args, "rule", &rule) ||
            !json_object_is_type(rule, json_type_string) || json_object_object_length(args) != 1)
                return errorf(ret_error, -EINVAL, "remove_host takes a rule, a string");
        k = host_rule_parse(json_object_get_string(rule), &r, ret_error);
        if (k < 0)
                return k;
        *ret_rule = r;
        return 0;
}

int egress_reply_parse(const char *text, size_t len, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        json_object *v, *desc, *removed;

        if (json_parse_strict(text, len, &o, &err) < 0 || !json_object_is_type(o, json_type_object))
                return errorf(ret_error, -EBADMSG, "the egress helper's answer is not a JSON object");
        if (json_object_object_get_ex(o, "return", &v)) {
                if (!json_object_is_type(v, json_type_object))
                        return errorf(ret_error, -EBADMSG, "the egress helper's return is not an object");
                return json_object_object_get_ex(v, "removed", &removed) &&
                       json_object_is_type(removed, json_type_boolean) && json_object_get_boolean(removed);
        }
        if (json_object_object_get_ex(o, "error", &v) && json_object_is_type(v, json_type_object) &&
            json_object_object_get_ex(v, "desc", &desc) && json_object_is_type(desc, json_type_string)) {
                char shown[EGRESS_SHOW_MAX];
                const char *t = json_object_get_string(desc);

                return errorf(ret_error, -EINVAL, "%s", egress_show(t, strlen(t), shown));
        }
        return errorf(ret_error, -EBADMSG, "the egress helper's answer is neither a return nor an error");
}
