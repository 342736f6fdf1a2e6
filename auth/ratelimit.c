/* ratelimit.c - per-minute caps on token requests and sign-ins, counted in the entry */
#include <errno.h>

#include <json-c/json.h>

#include "credkit/util.h"

#include "ratelimit.h"

static const struct {
    const char *key;   /* under "rate" in the entry */
    const char *words; /* in the message */
    int cap;           /* per minute */
} kinds[] = {
    [RATELIMIT_TOKEN] = {"token", "token requests", 60},
    [RATELIMIT_SIGNIN] = {"signin", "sign-ins", 5},
};

int ratelimit_check(struct token_entry *t, enum ratelimit_kind kind, struct err *e)
{
    int64_t now = now_unix();
    struct json_object *rate = NULL, *list = NULL, *fresh = json_object_new_array();
    if (!fresh)
        return -ENOMEM;
    if (!t->extra && !(t->extra = json_object_new_object())) {
        json_object_put(fresh);
        return -ENOMEM;
    }
    if (!json_object_object_get_ex(t->extra, "rate", &rate) ||
        !json_object_is_type(rate, json_type_object)) {
        rate = json_object_new_object();
        (void)json_object_object_add(t->extra, "rate", rate);
    }
    if (json_object_object_get_ex(rate, kinds[kind].key, &list) &&
        json_object_is_type(list, json_type_array))
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            int64_t ts = json_object_get_int64(json_object_array_get_idx(list, i));
            if (ts > now - 60 && ts <= now)
                (void)json_object_array_add(fresh, json_object_new_int64(ts));
        }
    if ((int)json_object_array_length(fresh) >= kinds[kind].cap) {
        json_object_put(fresh);
        return err_set(e, -EBUSY,
                       "already %d %s to '%s' in the last minute: stopping here so that a "
                       "failure cannot loop; wait a minute and try again",
                       kinds[kind].cap, kinds[kind].words, t->issuer);
    }
    (void)json_object_array_add(fresh, json_object_new_int64(now));
    (void)json_object_object_add(rate, kinds[kind].key, fresh);
    return 0;
}
