/* fuzz_textsafe.c - libFuzzer target: escaping for terminals and the header checks
 * (common/textsafe.c).
 *
 * Input: any bytes. Escaped text needs no more escaping (escaping it again changes nothing),
 * and text that changes is not escaped to nothing; nothing in the escaped text is a control
 * character. header_value_safe() and
 * b64token_valid() agree with the grammars of RFC 9110 and RFC 6750 written out here. */
#include <stdbool.h>

#include "credkit/textsafe.h"

#include "fuzz.h"

static bool header_ok(const uint8_t *s, size_t n)
{
    if (n == 0 || s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
            return false;
    return true;
}

static bool b64token_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                     (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.' || s[i] == '_' ||
                     s[i] == '~' || s[i] == '+' || s[i] == '/'))
        i++;
    if (i == 0)
        return false;
    while (i < n && s[i] == '=')
        i++;
    return i == n;
}

/* Whether text_escape_append() leaves s[0..len) as it is. */
static bool escapes_to_itself(const char *s, size_t len)
{
    struct buf again;
    buf_init(&again, 0);
    fuzz_check(text_escape_append(&again, s, len) == 0);
    bool same = again.len == len && (len == 0 || memcmp(again.data, s, len) == 0);
    buf_release(&again);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    struct buf out;

    buf_init(&out, 0);
    fuzz_check(text_escape_append(&out, s, size) == 0);
    fuzz_check(escapes_to_itself(out.data ? out.data : "", out.len));
    for (size_t i = 0; i < out.len; i++)
        fuzz_check((unsigned char)out.data[i] >= 0x20 && out.data[i] != 0x7f);
    if (out.len != size || (size > 0 && memcmp(out.data, s, size) != 0))
        fuzz_check(out.len > 0);
    buf_release(&out);

    char *z = fuzz_strndup(data, size);
    char *dup = text_escape_dup(z);
    fuzz_check(dup != NULL && escapes_to_itself(dup, strlen(dup)));
    free(dup);
    free(z);

    fuzz_check(header_value_safe(s, size) == header_ok(data, size));
    fuzz_check(b64token_valid(s, size) == b64token_ok(data, size));
    return 0;
}
