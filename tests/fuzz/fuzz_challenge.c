/* fuzz_challenge.c - libFuzzer target: WWW-Authenticate values (common/challenge.c).
 *
 * Input: one or more header values, one a line (several WWW-Authenticate headers of one
 * answer). Each is parsed into one list. A value that parses appends exactly the number of
 * challenges it says, each with a scheme, lowercase param names that are found again by
 * challenge_param() and by challenges_find() for the scheme; a value that is refused leaves the
 * list as it was and says where. */
#include <ctype.h>

#include "credkit/challenge.h"

#include "fuzz.h"

static void check_challenge(const struct auth_challenges *list, const struct auth_challenge *c)
{
    fuzz_check(c->scheme && c->scheme[0]);
    fuzz_check(challenges_find(list, c->scheme) != NULL);
    fuzz_check(c->n_params == 0 || c->params);
    for (size_t i = 0; i < c->n_params; i++) {
        const struct auth_param *p = &c->params[i];
        fuzz_check(p->name && p->name[0] && p->value);
        for (const char *s = p->name; *s; s++)
            fuzz_check(!isupper((unsigned char)*s));
        /* a name given twice in one challenge is refused, so the lookup finds this one */
        fuzz_check(challenge_param(c, p->name) == p->value);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct auth_challenges list = {0};
    char *text = fuzz_strndup(data, size);
    char *line = text, *next;

    for (; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        struct err e = ERR_INIT;
        size_t before = list.n;
        int r = challenges_parse(line, &list, &e);
        if (r < 0) {
            fuzz_check(e.msg[0] != 0);
            fuzz_check(list.n == before);
            continue;
        }
        fuzz_check(list.n == before + (size_t)r);
    }
    for (size_t i = 0; i < list.n; i++)
        check_challenge(&list, &list.v[i]);
    challenges_release(&list);
    free(text);
    return 0;
}
