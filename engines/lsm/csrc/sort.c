#include "sort.h"

#include <stdlib.h>

/* Sorting a memtable's entries: a byte-wise radix sort.
 *
 * Why: a flush sorts its memtable's keys, and perf of an index tree's flush (200_000 keys
 * at 200k profiles) put most of it in qsort's memcmp calls: the workload's index keys
 * share long prefixes (a created-at key starts with 7 zeros, a country/status key with
 * `CC|status|`), so every comparison walks them again. A most-significant-byte radix
 * sort (American flag sort, in place) reads each key byte about once per level; buckets
 * of at most RADIX_SMALL entries are finished by insertion sort from the bytes they
 * share, and below RADIX_DEPTH bytes (a stack bound for long keys) by qsort. Keys are
 * distinct (a dict's), so the order is the one key_cmp gives. */
#define RADIX_SMALL 24
#define RADIX_DEPTH 64

static int
entry_cmp(const void *x, const void *y)
{
    const Entry *a = x, *b = y;
    return key_cmp(a->k, a->klen, b->k, b->klen);
}

/* bucket of e at byte d: 0 for a key that ends before d, else the byte + 1 */
static inline int
radix_bucket(const Entry *e, Py_ssize_t d)
{
    return d < e->klen ? (int)e->k[d] + 1 : 0;
}

/* Whether n entries are in increasing key order already. */
static int
entries_sorted(const Entry *e, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++)
        if (key_cmp(e[i - 1].k, e[i - 1].klen, e[i].k, e[i].klen) >= 0)
            return 0;
    return 1;
}

static void
radix_sort(Entry *a, Py_ssize_t n, Py_ssize_t d)
{
    if (n <= RADIX_SMALL) { /* every key here has the same first d bytes */
        for (Py_ssize_t i = 1; i < n; i++) {
            Entry t = a[i];
            Py_ssize_t j = i;
            while (j > 0 && key_cmp(t.k + d, t.klen - d, a[j - 1].k + d, a[j - 1].klen - d) < 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = t;
        }
        return;
    }
    if (d >= RADIX_DEPTH) {
        qsort(a, (size_t)n, sizeof(Entry), entry_cmp);
        return;
    }
    Py_ssize_t count[257] = {0}, next[257], end[257];
    for (Py_ssize_t i = 0; i < n; i++)
        count[radix_bucket(&a[i], d)]++;
    Py_ssize_t at = 0;
    for (int b = 0; b < 257; b++) {
        next[b] = at;
        at += count[b];
        end[b] = at;
    }
    for (int b = 0; b < 257; b++) { /* move each entry into its bucket, cycle by cycle */
        while (next[b] < end[b]) {
            Entry t = a[next[b]];
            int tb = radix_bucket(&t, d);
            while (tb != b) {
                Entry u = a[next[tb]];
                a[next[tb]++] = t;
                t = u;
                tb = radix_bucket(&t, d);
            }
            a[next[b]++] = t;
        }
    }
    for (int b = 1; b < 257; b++) /* bucket 0 holds at most one key: they are distinct */
        if (count[b] > 1)
            radix_sort(a + (end[b] - count[b]), count[b], d + 1);
}

void
sort_entries(Entry *a, Py_ssize_t n)
{
    if (n > 1 && !entries_sorted(a, n))
        radix_sort(a, n, 0);
}
