/* jsonw.c - JSON text straight into a buffer */
#include <string.h>

#include "credkit/jsonw.h"

int jsonw_string(struct buf *b, const char *s, size_t len)
{
    return jsonw_string_ex(b, s, len, JSONW_ESCAPE_DEL);
}

int jsonw_string_ex(struct buf *b, const char *s, size_t len, unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    int r = buf_append_char(b, '"');
    size_t plain = 0;
    for (size_t i = 0; r >= 0 && i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7];
        size_t n = 0;
        switch (c) {
        case '"':
            memcpy(esc, "\\\"", n = 2);
            break;
        case '\\':
            memcpy(esc, "\\\\", n = 2);
            break;
        case '\n':
            memcpy(esc, "\\n", n = 2);
            break;
        case '\r':
            memcpy(esc, "\\r", n = 2);
            break;
        case '\t':
            memcpy(esc, "\\t", n = 2);
            break;
        case '\b':
            memcpy(esc, "\\b", n = 2);
            break;
        case '\f':
            memcpy(esc, "\\f", n = 2);
            break;
        default:
            if (c < 0x20 || (c == 0x7f && (flags & JSONW_ESCAPE_DEL))) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
            }
        }
        if (!n)
            continue;
        r = buf_append(b, s + plain, i - plain);
        if (r >= 0)
            r = buf_append(b, esc, n);
        plain = i + 1;
    }
    if (r >= 0)
        r = buf_append(b, s + plain, len - plain);
    if (r >= 0)
        r = buf_append_char(b, '"');
    return r;
}

int jsonw_kv_string(struct buf *b, const char *key, const char *value)
{
    int r = jsonw_string(b, key, strlen(key));
    if (r >= 0)
        r = buf_append_char(b, ':');
    if (r >= 0)
        r = jsonw_string(b, value, strlen(value));
    return r;
}

int jsonw_kv_int(struct buf *b, const char *key, int64_t value)
{
    int r = jsonw_string(b, key, strlen(key));
    if (r >= 0)
        r = buf_printf(b, ":%lld", (long long)value);
    return r;
}
