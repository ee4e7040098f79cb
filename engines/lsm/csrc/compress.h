/*
 * Block compression: LZ4 from the system's liblz4.so.1, opened at import with dlopen
 * (lz4_load), and a stored block's decompression, zlib or LZ4 (unpack_block).
 *
 * Why dlopen: the library is on every Debian-like system (apt, systemd and zstd depend on
 * it) but its headers are not, and a build that needed them would lose the whole compiled
 * path where they are missing. The functions used are LZ4's stable ABI. Without the
 * library, LZ4 is False (LZ4_MISSING says why) and the Python side writes zlib (format 3)
 * instead.
 */
#ifndef LSM_COMPRESS_H
#define LSM_COMPRESS_H

#include "entry.h"

typedef int (*lz4_compress_fn)(const char *src, char *dst, int src_size, int dst_capacity);
typedef int (*lz4_decompress_fn)(const char *src, char *dst, int compressed_size, int dst_capacity);
typedef int (*lz4_bound_fn)(int input_size);
typedef int (*lz4_partial_fn)(const char *src, char *dst, int compressed_size, int target, int dst_capacity);
extern lz4_compress_fn lz4_compress;     /* LZ4_compress_default (acceleration 1) */
extern lz4_decompress_fn lz4_decompress; /* LZ4_decompress_safe: bounds-checked on bad input */
extern lz4_bound_fn lz4_bound;           /* LZ4_compressBound */
extern lz4_partial_fn lz4_partial;       /* LZ4_decompress_safe_partial (optional): a block's head only */
extern char lz4_missing[256];              /* why LZ4 is unavailable; empty when loaded */

/* Fills the pointers above, or lz4_missing with why not; once, at import. */
void lz4_load(void);

/* zlib inflates at most about 1032:1: a recorded length beyond this is damage, refused
 * before anything is allocated for it. */
#define MAX_INFLATE(stored) (1032ULL * (uint64_t)(stored) + 64)

/* A block's stored bytes decompressed into d (raw bytes): zlib, or LZ4 when lz4 is set.
 * 0: done; else what is wrong with them. */
const char *unpack_block(int lz4, const unsigned char *b, uint32_t len, unsigned char *d, uint32_t raw);

#endif
