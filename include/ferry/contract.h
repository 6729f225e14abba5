/* ferry/contract.h - payload contracts: JSON Schema documents (a stated subset of draft-07,
 * docs/contracts.md) loaded once, then checked against job payloads before a handler runs.
 *
 * A ferry_contract is one loaded schema; a ferry_contracts registry maps a job name (and,
 * optionally, the payload's "schemaVersion") to a contract. Both are immutable once loaded:
 * any number of threads may validate and check on one handle at once, without locks.
 * Loading refuses every keyword outside the subset, naming it and its place in the schema;
 * nothing in a schema is ignored silently except the annotations listed in docs/contracts.md.
 *
 * Verdicts name the failing place in the payload (a JSON pointer, RFC 6901) and the failing
 * keyword, never a value of the payload: payloads can hold personal data.
 * Blocks: no call here does network I/O; the _load calls read files. */
#ifndef FERRY_CONTRACT_H
#define FERRY_CONTRACT_H

#include <stddef.h>

#include "common.h"
#include "worker.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits (docs/contracts.md "Limits"). Input over one is refused, naming the limit. */
#define FERRY_CONTRACT_SCHEMA_MAX_BYTES (1024u * 1024) /* a schema document's text */
#define FERRY_CONTRACT_DEPTH_MAX 64          /* subschemas nested in a schema (root = 1) */
#define FERRY_CONTRACT_JSON_DEPTH_MAX 256    /* array/object nesting of a schema's text */
#define FERRY_CONTRACT_PAYLOAD_DEPTH_MAX 128 /* array/object nesting of a payload */
#define FERRY_CONTRACT_PATTERN_MAX 4096      /* bytes of one "pattern" */
#define FERRY_CONTRACT_MATCH_LIMIT 1000000u  /* PCRE2 match limit of one "pattern" test */
#define FERRY_CONTRACT_PATH_MAX 512          /* a violation's JSON pointer, NUL included */
#define FERRY_CONTRACT_VERSION_MAX 64        /* a schemaVersion text in a registry */
#define FERRY_CONTRACTS_MAX 4096             /* contracts in one registry */

typedef struct ferry_contract ferry_contract;   /* one loaded schema */
typedef struct ferry_contracts ferry_contracts; /* contracts by job name (+ schemaVersion) */

/* Load a schema from JSON text json[0..len) (no NUL needed). source names it in messages
 * (a file name; NULL = "schema").
 * Returns: 0 with *out set (free it with ferry_contract_free).
 * Errors: FERRY_EINVAL when the text is not JSON, is not a schema of the subset (a keyword
 *   outside it, a keyword with a value of the wrong shape, a "format" other than date-time
 *   and uuid, a "pattern" PCRE2 cannot compile, a "$schema" other than draft-07 / 2020-12),
 *   nests deeper than FERRY_CONTRACT_DEPTH_MAX / FERRY_CONTRACT_JSON_DEPTH_MAX, or a
 *   required argument is NULL; the message is `contract SOURCE: POINTER: problem`.
 *   FERRY_ETOOBIG over FERRY_CONTRACT_SCHEMA_MAX_BYTES. FERRY_ENOMEM. *out is NULL then.
 * Blocks: no. Threads: any. */
FERRY_API int ferry_contract_parse(const char *json, size_t len, const char *source,
                                   ferry_contract **out, ferry_error *err);

/* ferry_contract_parse of the file at path, source = the file's name.
 * Errors: as ferry_contract_parse; FERRY_EIO when the file cannot be read (the message names
 *   the path and the system's reason). Blocks: reads the file. Threads: any. */
FERRY_API int ferry_contract_load(const char *path, ferry_contract **out, ferry_error *err);

/* Free c (NULL is fine). Threads: no other call on c may run or follow. */
FERRY_API void ferry_contract_free(ferry_contract *c);

/* Where and why a payload failed. path: the JSON pointer of the failing instance ("" = the
 * whole payload; a pointer longer than the buffer is cut and ends with "..."); keyword: the
 * schema keyword that failed ("type", "minimum", "false" for a false schema, "json" for a
 * payload that is not JSON, "depth" for one nested deeper than
 * FERRY_CONTRACT_PAYLOAD_DEPTH_MAX). Neither ever holds a value of the payload. */
typedef struct ferry_contract_violation {
    char path[FERRY_CONTRACT_PATH_MAX];
    char keyword[32];
} ferry_contract_violation;

/* Validate the JSON text json[0..len) against c.
 * Returns: 0 valid; 1 invalid, with *v filled for the first failure in checking order
 *   (docs/contracts.md "Verdicts"; v may be NULL).
 * Errors: FERRY_ENOMEM; FERRY_EINVAL when c is NULL or json is NULL with len > 0.
 * Blocks: no. Threads: any number at once on one c. */
FERRY_API int ferry_contract_validate(const ferry_contract *c, const char *json, size_t len,
                                      ferry_contract_violation *v);

/* An empty registry.
 * Returns: 0 with *out set (free with ferry_contracts_free). Errors: FERRY_ENOMEM,
 *   FERRY_EINVAL (out NULL). Blocks: no. Threads: any. */
FERRY_API int ferry_contracts_new(ferry_contracts **out, ferry_error *err);

/* Register c for job_name (1..FERRY_JOB_NAME_MAX bytes). version NULL = the contract of the
 * job name itself; else the contract of its payloads whose "schemaVersion" is that text
 * (1..FERRY_CONTRACT_VERSION_MAX bytes; an integer schemaVersion 2 matches "2").
 * Returns: 0; r owns c from then on.
 * Errors: FERRY_EINVAL (NULL argument, a name or version empty or too long, the same
 *   job name + version twice), FERRY_ETOOBIG (more than FERRY_CONTRACTS_MAX), FERRY_ENOMEM;
 *   the caller keeps c then.
 * Threads: only while no other thread uses r (registries are filled before use). */
FERRY_API int ferry_contracts_add(ferry_contracts *r, const char *job_name, const char *version,
                                  ferry_contract *c, ferry_error *err);

/* A registry of every NAME.json (job name NAME) and NAME@V.json (job name NAME,
 * schemaVersion V, split at the last '@') in dir. Names starting with '.' are skipped; any
 * other entry that is not a regular *.json file is refused (a contracts directory holds
 * nothing else, so a misnamed contract cannot be left out unnoticed).
 * Returns: 0 with *out set.
 * Errors: FERRY_EIO (dir unreadable, naming it); FERRY_EINVAL ("no contracts in DIR", an
 *   entry that is not a regular .json file, a bad file name, a bad schema: the message
 *   names the file and the problem); FERRY_ETOOBIG; FERRY_ENOMEM. *out is NULL then.
 * Blocks: reads the directory and its files. Threads: any. */
FERRY_API int ferry_contracts_load_dir(const char *dir, ferry_contracts **out, ferry_error *err);

/* Free r and its contracts (NULL is fine). Threads: no other call on r may run or follow. */
FERRY_API void ferry_contracts_free(ferry_contracts *r);

/* Check one payload (JSON text payload[0..len)) of job job_name against r:
 *   - no contract for the name: `contract: no contract for job name "NAME"`;
 *   - the name has versioned contracts: a payload with a "schemaVersion" (string, or integer
 *     as its decimal text) uses that version's contract (`contract NAME: unknown
 *     schemaVersion "V"` when none), one without uses the unversioned contract
 *     (`contract NAME: payload has no schemaVersion` when there is none);
 *   - the name has only the unversioned contract: it applies whatever schemaVersion says;
 *   - an invalid payload: `contract NAME[@V]: POINTER: KEYWORD` ("(root)" for the whole
 *     payload), `contract NAME[@V]: payload is not JSON`.
 * Names are escaped (controls as \xNN) so a reason is one printable line; no reason holds a
 * value of the payload (a schemaVersion is named only when short and printable).
 * Returns: 0 = valid (run the handler); 1 = refused, with a NUL-terminated reason in
 *   reason[cap] (cut with "..." when cap is short; reason may be NULL when cap is 0);
 *   FERRY_ENOMEM (reason says so); FERRY_EINVAL for a NULL r or job_name.
 * Blocks: no. Threads: any number at once on one r. */
FERRY_API int ferry_contracts_check(const ferry_contracts *r, const char *job_name,
                                    const char *payload, size_t len, char *reason, size_t cap);

/* ferry_contracts_check of ferry_job_payload(job) for ferry_job_name(job), with the
 * signature of ferry_worker_options.check: set check = ferry_contracts_job_check and
 * check_userdata = the (const ferry_contracts *) registry, which must outlive the worker.
 * Returns: as ferry_contracts_check. Threads, Blocks: as ferry_contracts_check. */
FERRY_API int ferry_contracts_job_check(const ferry_job *job, char *reason, size_t cap,
                                        void *userdata);

#ifdef __cplusplus
}
#endif

#endif
