/* errmsg.c - see errmsg.h. */
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int errmsg_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when p does
 * not start one: no overlong form, surrogate or code point past U+10FFFF. */
static size_t utf8_sequence(const unsigned char *p)
{
    size_t n;
    unsigned long min;
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2;
        min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3;
        min = 0x800;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    unsigned long cp = p[0] & (0x3fu >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* the terminating 0 included */
            return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

char *errmsg_escape(const char *s, char *buf, size_t len)
{
    if (!len)
        return buf;
    size_t used = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        char esc[8];
        const char *out = (const char *)p;
        size_t n = utf8_sequence(p), w = n;
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f))) {
            if (*p == '\n' || *p == '\r' || *p == '\t')
                snprintf(esc, sizeof esc, "\\%c", *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't');
            else
                snprintf(esc, sizeof esc, "\\x%02x", *p);
            out = esc;
            n = 1;
            w = strlen(esc);
        }
        if (used + w >= len)
            break;
        memcpy(buf + used, out, w);
        used += w;
        p += n;
    }
    buf[used] = 0;
    return buf;
}
