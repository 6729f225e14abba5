/* tz.h - time zones for the cron scheduler: UTC offsets of IANA zones at an instant.
 *
 * Zone data comes from the system's compiled tz database (TZif files under $TZDIR, default
 * /usr/share/zoneinfo), read with their 64-bit data and the POSIX TZ footer that covers
 * times after the last listed transition. We read the files ourselves instead of using
 * ICU because Debian keeps the tzdata package current while ICU's built-in copy is frozen
 * at its release (ICU 72 in Debian 12 carries tzdata 2022e), and Node (BullMQ's side)
 * ships a recent tzdata: the system files agree with Node far more often than ICU 72.
 *
 * Zone names are resolved the way luxon (cron-parser's date library) resolves them, so
 * a `tz` accepted by Node BullMQ means the same zone here:
 *   NULL or ""                      UTC (Node would use its process's local zone)
 *   "UTC", "GMT" (any case)         UTC
 *   "UTC+5", "utc-03:30"            fixed offsets: utc[+-]H{1,2}[:MM] (case-insensitive)
 *   "local", "system", "default"    this process's zone: $TZ, else /etc/localtime
 *   anything else                   an IANA name ("Europe/Berlin", "US/Eastern"), matched
 *                                   case-insensitively like Intl; "posix/...", "right/..."
 *                                   (leap-second zones), "posixrules", "localtime" and
 *                                   "Factory" are refused as Intl refuses them.
 */
#ifndef FERRY_SCHED_TZ_H
#define FERRY_SCHED_TZ_H

#include <stddef.h>

#include "ferry/common.h"

/* Longest zone name accepted (bytes); longer is FERRY_ETOOBIG. */
#define FERRY_TZ_NAME_MAX 255
/* Largest TZif file accepted (bytes); bigger is FERRY_ETOOBIG. Real files are < 4 KiB. */
#define FERRY_TZ_TZIF_MAX (256 * 1024)
/* Longest POSIX TZ rule string accepted (bytes). */
#define FERRY_TZ_POSIX_MAX 255

/* An immutable, reference-counted zone. Offsets only: abbreviations are not kept. */
typedef struct ferry__tz ferry__tz;

/* Resolve `name` (see the table above) to a zone. Returns 0 and a new reference in *out
 * that the caller releases with ferry__tz_close(); FERRY_EINVAL for an unknown or malformed
 * name, FERRY_ETOOBIG for an over-long name or oversized file, FERRY_ENOMEM.
 * Loaded zones are cached for the life of the process (at most 256 distinct names; more
 * are loaded on each call), so only the first open of a name reads a file; a tzdata
 * update on disk is seen after a restart. Thread-safe. */
int ferry__tz_open(const char *name, ferry__tz **out, ferry_error *err);

/* Drop a reference from ferry__tz_open / _from_tzif / _from_posix. NULL is fine.
 * Thread-safe (the count is atomic). */
void ferry__tz_close(ferry__tz *tz);

/* Build a zone from the bytes of a TZif file (RFC 8536, versions 1-4; the 64-bit block and
 * footer are used when present). `len` at most FERRY_TZ_TZIF_MAX. Pure: no I/O. Returns 0
 * and a new reference in *out, or FERRY_EINVAL naming the defect. Thread-safe. */
int ferry__tz_from_tzif(const void *data, size_t len, ferry__tz **out, ferry_error *err);

/* Build a zone from a POSIX TZ rule such as "CET-1CEST,M3.5.0,M10.5.0/3" (with the RFC 8536
 * extensions: hours up to 167 in rule times, negative rule times). A rule with a DST name
 * but no dates uses the US rule M3.2.0,M11.1.0 like glibc. Pure. Thread-safe. */
int ferry__tz_from_posix(const char *spec, ferry__tz **out, ferry_error *err);

/* The UTC zone: a static object, never freed (closing it is a no-op). */
ferry__tz *ferry__tz_utc(void);

/* Offset from UTC in seconds (east positive) in force at `utc_seconds` since the epoch
 * (any value; beyond +-10^14 s the offset at the bound is returned). Pure, thread-safe. */
long ferry__tz_offset(const ferry__tz *tz, long long utc_seconds);

#endif
