/*
 * FixedLookup: a segment's point lookup and key-range scan in one C call each, with its
 * value cache (fixed_lookup.c says what and why).
 */
#ifndef LSM_FIXED_LOOKUP_H
#define LSM_FIXED_LOOKUP_H

#include "entry.h"

extern PyTypeObject FixedLookupType;

/* Interns the value cache's attribute names and readies FixedLookupType; 0, or -1 with
 * an error set. Once, at import. */
int fixed_lookup_ready(void);

#endif
