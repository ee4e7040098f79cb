#include "compress.h"

#include <dlfcn.h>
#include <stdio.h>
#include <zlib.h>

lz4_compress_fn lz4_compress;     /* LZ4_compress_default (acceleration 1) */
lz4_decompress_fn lz4_decompress; /* LZ4_decompress_safe: bounds-checked on bad input */
lz4_bound_fn lz4_bound;           /* LZ4_compressBound */
lz4_partial_fn lz4_partial;       /* LZ4_decompress_safe_partial (optional): a block's head only */
char lz4_missing[256];            /* why LZ4 is unavailable; empty when loaded */

void
lz4_load(void)
{
    void *h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(lz4_missing, sizeof(lz4_missing), "%s", e ? e : "liblz4.so.1 not found");
        return;
    }
    lz4_compress = (lz4_compress_fn)dlsym(h, "LZ4_compress_default");
    lz4_decompress = (lz4_decompress_fn)dlsym(h, "LZ4_decompress_safe");
    lz4_bound = (lz4_bound_fn)dlsym(h, "LZ4_compressBound");
    lz4_partial = (lz4_partial_fn)dlsym(h, "LZ4_decompress_safe_partial");
    if (lz4_compress == NULL || lz4_decompress == NULL || lz4_bound == NULL) {
        lz4_compress = NULL;
        lz4_decompress = NULL;
        lz4_bound = NULL;
        snprintf(lz4_missing, sizeof(lz4_missing), "liblz4.so.1 lacks LZ4_compress_default, "
                 "LZ4_decompress_safe or LZ4_compressBound");
    }
}

const char *
unpack_block(int lz4, const unsigned char *b, uint32_t len, unsigned char *d, uint32_t raw)
{
    if (lz4) {
        if (lz4_decompress == NULL)
            return "is LZ4 and liblz4 is not loaded";
        if (len > INT32_MAX || raw > INT32_MAX)
            return "too large for LZ4";
        int got = lz4_decompress((const char *)b, (char *)d, (int)len, (int)raw);
        if (got < 0)
            return "does not decompress";
        return (uint32_t)got == raw ? NULL : "decompresses to another length";
    }
    uLongf got = raw;
    int zr = uncompress(d, &got, b, len);
    if (zr != Z_OK)
        return "does not decompress";
    return got == raw ? NULL : "decompresses to another length";
}
