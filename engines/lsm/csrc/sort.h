/*
 * Sorting a memtable's entries for a flush: a byte-wise radix sort (sort.c says why).
 */
#ifndef LSM_SORT_H
#define LSM_SORT_H

#include "entry.h"

/* Whether n entries are in increasing key order already (the profiles tree's memtable
 * after an insert of increasing ids): then the flush does not sort. */
int entries_sorted(const Entry *e, Py_ssize_t n);

/* Sorts n entries of distinct keys by key_cmp, from byte d on (every key shares its first
 * d bytes); a caller passes d = 0. */
void radix_sort(Entry *a, Py_ssize_t n, Py_ssize_t d);

#endif
