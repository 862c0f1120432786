/* fuzz_tuning.c - libFuzzer harness for clgrad-tune's tuning file parser
 * (tools/gemm/tuning_file.c), which the trainer runs on whatever file sits
 * in the cache directory: any bytes are either rejected with a message, or
 * parse into a record that passes tuning_check, whose every kernel record
 * keeps to CLBlast's constraints (tuning_constraints.h: the values a tuner
 * can produce, the divisibility its kernels need), and that formats to a
 * text that parses back into the same text (a fixed point after one
 * round). Each
 * input runs twice: as it is, and with its last line's CRC made right
 * (when it has one), so that mutations reach the records behind the CRC. */
#include "tuning_constraints.h"
#include "tuning_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void check_one(const char *data, size_t size)
{
    static tuning t, again; /* about 30 KB each: not on the stack */
    char err[256];
    err[0] = '\0';
    if (tuning_parse(data, size, &t, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort(); /* rejected without a reason */
        return;
    }
    if (tuning_check(&t, err, sizeof err) != 0)
        abort(); /* accepted, but not valid */
    for (size_t i = 0; i < t.n_kernels; i++)
        if (tuning_check_kernel_values(&t.kernel[i], err, sizeof err) != 0)
            abort(); /* accepted, but CLBlast's kernels cannot take it */
    size_t len = 0, len2 = 0;
    char *text = tuning_format(&t, &len);
    if (!text)
        abort();
    if (tuning_parse(text, len, &again, err, sizeof err) != 0)
        abort(); /* its own output refused */
    char *text2 = tuning_format(&again, &len2);
    if (!text2 || len2 != len || memcmp(text, text2, len) != 0)
        abort();
    free(text);
    free(text2);
}

/* The last line, "crc32 " and 8 hex digits, rewritten to the CRC-32 of
 * the bytes before it; 0 when the input has no such line. */
static int seal(char *buf, size_t size)
{
    const size_t line = 15; /* "crc32 " 8 digits '\n' */
    if (size < line || buf[size - 1] != '\n' || (size > line && buf[size - line - 1] != '\n') ||
        memcmp(buf + size - line, "crc32 ", 6) != 0)
        return 0;
    char hex[9];
    uLong crc = crc32(0L, (const Bytef *)buf, (uInt)(size - line));
    snprintf(hex, sizeof hex, "%08lx", (unsigned long)crc);
    memcpy(buf + size - line + 6, hex, 8);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_one((const char *)data, size);
    char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    if (seal(copy, size))
        check_one(copy, size);
    free(copy);
    return 0;
}
