/* crc32.c - CRC-32 as zlib computes it (reflected polynomial 0xEDB88320),
 * for checkpoint integrity without a zlib dependency in the library. */
#include "internal.h"

static uint32_t table[256];
static once_flag table_once = ONCE_FLAG_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int j = 0; j < 8; j++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}

uint32_t clg__crc32(uint32_t crc, const void *data, size_t n)
{
    call_once(&table_once, make_table);
    const unsigned char *p = data;
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
