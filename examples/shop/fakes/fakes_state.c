/* fakes_state.c - the fake providers' state, ledgers and idempotency keys (fakes_state.h).
 *
 * jansson objects serve as the hash maps (id -> authorization, key -> first request and
 * answer). An authorization is one json object shared by the id map and the ledger's list,
 * so the ledger shows its current status. One mutex guards everything; answers leave as
 * copies made under it. */
#include "fakes_state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/outbox.h"

struct fakes_state {
    pthread_mutex_t mu;
    fakes_faults faults;
    size_t max;
    /* gateway */
    json_t *auths;        /* id -> authorization (shared with auth_list) */
    json_t *auth_list;    /* ledger: every authorization, in order */
    json_t *auth_keys;    /* key -> {"amount","reference","answer"} */
    json_t *captures;     /* ledger */
    json_t *capture_keys; /* key -> {"authorizationId","amount","captureId"} */
    json_t *voids;        /* ledger */
    json_t *void_keys;    /* key -> authorizationId */
    long long gateway_replays;
    /* carrier */
    json_t *shipments; /* ledger */
    json_t *by_ref;    /* reference -> its first shipment */
    json_t *tracking;  /* tracking number -> true (uniqueness) */
    long long lookups;
    /* mailer */
    json_t *messages;     /* ledger */
    json_t *message_keys; /* key -> {"request","messageId"} */
    long long mailer_replays;
    /* injected faults */
    long long f_errors, f_slow, f_throttled, f_dropped;
};

fakes_state *fakes_state_new(const fakes_faults *faults, size_t max_entries) {
    fakes_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->faults = *faults;
    s->max = max_entries;
    json_t **all[] = {&s->auths,  &s->auth_keys, &s->capture_keys, &s->void_keys,
                      &s->by_ref, &s->tracking,  &s->message_keys};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        *all[i] = json_object();
    json_t **lists[] = {&s->auth_list, &s->captures, &s->voids, &s->shipments, &s->messages};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        *lists[i] = json_array();
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!*all[i]) goto oom;
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if (!*lists[i]) goto oom;
    return s;
oom:
    fakes_state_free(s);
    return NULL;
}

void fakes_state_free(fakes_state *s) {
    if (!s) return;
    json_t *all[] = {s->auths,        s->auth_list, s->auth_keys, s->captures,
                     s->capture_keys, s->voids,     s->void_keys, s->shipments,
                     s->by_ref,       s->tracking,  s->messages,  s->message_keys};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        json_decref(all[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ---- answers ------------------------------------------------------------------------- */

static int answer(json_t **out, int status, json_t *body) {
    *out = body;
    return body ? status : 500;
}

static int error_answer(json_t **out, int status, const char *message) {
    return answer(out, status, json_pack("{s:s}", "error", message));
}

/* 409 with the authorization's status (and its captureId when captured). */
static int conflict(json_t **out, const char *message, const json_t *auth) {
    json_t *b = json_pack("{s:s,s:O}", "error", message, "status", json_object_get(auth, "status"));
    json_t *cap = json_object_get(auth, "captureId");
    if (b && cap) json_object_set(b, "captureId", cap);
    return answer(out, 409, b);
}

static int full(json_t **out, const fakes_state *s, const char *what) {
    char msg[160];
    snprintf(msg, sizeof msg, "ledger full: at most %zu %s are kept in this process", s->max, what);
    return error_answer(out, 507, msg);
}

static int key_conflict(json_t **out) {
    return error_answer(out, 422, "this Idempotency-Key was already used with a different request");
}

/* PREFIX + a new uuid into buf. Returns 0, -1 when the random source fails. */
static int new_id(const char *prefix, char *buf, size_t cap) {
    char uuid[FERRY_UUID_STRLEN + 1];
    if (ferry_uuid7(uuid) != 0) return -1;
    snprintf(buf, cap, "%s%s", prefix, uuid);
    return 0;
}

static const char *status_of(const json_t *auth) {
    return json_string_value(json_object_get(auth, "status"));
}

/* ---- faults -------------------------------------------------------------------------- */

fakes_fault_decision fakes_state_fault(fakes_state *s, fakes_op op) {
    pthread_mutex_lock(&s->mu);
    fakes_fault_decision d = fakes_faults_decide(&s->faults, op);
    s->f_errors += d.error;
    s->f_throttled += d.throttle;
    s->f_slow += d.slow;
    s->f_dropped += d.drop;
    pthread_mutex_unlock(&s->mu);
    return d;
}

int fakes_state_faults_post(fakes_state *s, const char *body, size_t len, json_t **out) {
    char err[300];
    pthread_mutex_lock(&s->mu);
    int rc = fakes_faults_apply_json(&s->faults, body, len, err, sizeof err);
    json_t *now = rc == 0 ? fakes_faults_to_json(&s->faults) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (rc != 0) return error_answer(out, 400, err);
    return answer(out, 200, now);
}

int fakes_state_faults_get(fakes_state *s, json_t **out) {
    pthread_mutex_lock(&s->mu);
    json_t *now = fakes_faults_to_json(&s->faults);
    pthread_mutex_unlock(&s->mu);
    return answer(out, 200, now);
}

int fakes_state_faults_delete(fakes_state *s, json_t **out) {
    pthread_mutex_lock(&s->mu);
    fakes_faults_clear(&s->faults);
    json_t *now = fakes_faults_to_json(&s->faults);
    pthread_mutex_unlock(&s->mu);
    return answer(out, 200, now);
}

/* ---- ledger -------------------------------------------------------------------------- */

char *fakes_state_ledger_text(fakes_state *s) {
    pthread_mutex_lock(&s->mu);
    json_t *l =
        json_pack("{s:{s:O,s:O,s:O,s:I},s:{s:O,s:I},s:{s:O,s:I},s:{s:I,s:I,s:I,s:I}}", "gateway",
                  "authorizations", s->auth_list, "captures", s->captures, "voids", s->voids,
                  "replays", (json_int_t)s->gateway_replays, "carrier", "shipments", s->shipments,
                  "lookups", (json_int_t)s->lookups, "mailer", "messages", s->messages, "replays",
                  (json_int_t)s->mailer_replays, "faults", "errors", (json_int_t)s->f_errors,
                  "slow", (json_int_t)s->f_slow, "throttled", (json_int_t)s->f_throttled, "dropped",
                  (json_int_t)s->f_dropped);
    char *text = l ? json_dumps(l, JSON_COMPACT) : NULL;
    json_decref(l); /* drops only the wrapper: the lists stay ours */
    pthread_mutex_unlock(&s->mu);
    return text;
}

/* ---- payment gateway ----------------------------------------------------------------- */

int fakes_gateway_authorize(fakes_state *s, const fakes_authorize_req *r, const char *key,
                            json_t **out) {
    int rc;
    pthread_mutex_lock(&s->mu);
    json_t *seen = key ? json_object_get(s->auth_keys, key) : NULL;
    if (seen) {
        if (json_integer_value(json_object_get(seen, "amount")) != r->amount ||
            strcmp(json_string_value(json_object_get(seen, "reference")), r->reference) != 0) {
            rc = key_conflict(out);
        } else {
            s->gateway_replays++;
            rc = answer(out, 200, json_deep_copy(json_object_get(seen, "answer")));
        }
        goto done;
    }
    if (json_array_size(s->auth_list) >= s->max ||
        (key && json_object_size(s->auth_keys) >= s->max)) {
        rc = full(out, s, "authorizations");
        goto done;
    }
    char id[64];
    if (new_id("auth_", id, sizeof id) != 0) {
        rc = error_answer(out, 500, "no random source for an id");
        goto done;
    }
    json_t *auth = json_pack("{s:s,s:s,s:I,s:s}", "authorizationId", id, "status", "authorized",
                             "amount", (json_int_t)r->amount, "reference", r->reference);
    json_t *first = auth ? json_deep_copy(auth) : NULL;
    json_t *rec = key && first ? json_pack("{s:I,s:s,s:O}", "amount", (json_int_t)r->amount,
                                           "reference", r->reference, "answer", first)
                               : NULL;
    if (!auth || !first || (key && !rec) || json_object_set(s->auths, id, auth) != 0 ||
        json_array_append(s->auth_list, auth) != 0 ||
        (key && json_object_set(s->auth_keys, key, rec) != 0)) {
        json_object_del(s->auths, id);
        json_decref(auth);
        json_decref(first);
        json_decref(rec);
        rc = error_answer(out, 500, "out of memory");
        goto done;
    }
    json_decref(auth);
    json_decref(rec);
    rc = answer(out, 201, first);
done:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int fakes_gateway_get(fakes_state *s, const char *id, json_t **out) {
    pthread_mutex_lock(&s->mu);
    json_t *auth = json_object_get(s->auths, id);
    json_t *copy = auth ? json_deep_copy(auth) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (!auth) return error_answer(out, 404, "no such authorization");
    return answer(out, 200, copy);
}

int fakes_gateway_capture(fakes_state *s, const char *id, const fakes_capture_req *r,
                          const char *key, json_t **out) {
    int rc;
    pthread_mutex_lock(&s->mu);
    json_t *auth = json_object_get(s->auths, id);
    if (!auth) {
        rc = error_answer(out, 404, "no such authorization");
        goto done;
    }
    json_int_t authorized = json_integer_value(json_object_get(auth, "amount"));
    json_int_t amount = r->has_amount ? (json_int_t)r->amount : authorized;
    json_t *seen = json_object_get(s->capture_keys, key);
    if (seen) {
        if (strcmp(json_string_value(json_object_get(seen, "authorizationId")), id) != 0 ||
            json_integer_value(json_object_get(seen, "amount")) != amount) {
            rc = key_conflict(out);
        } else {
            s->gateway_replays++;
            rc = answer(out, 200,
                        json_pack("{s:O,s:s}", "captureId", json_object_get(seen, "captureId"),
                                  "status", "captured"));
        }
        goto done;
    }
    const char *st = status_of(auth);
    if (strcmp(st, "voided") == 0 || strcmp(st, "expired") == 0) {
        rc = conflict(out,
                      strcmp(st, "voided") == 0 ? "the authorization is voided"
                                                : "the authorization has expired",
                      auth);
        goto done;
    }
    if (strcmp(st, "captured") == 0) {
        rc = conflict(out, "the authorization was already captured under another Idempotency-Key",
                      auth);
        goto done;
    }
    if (amount > authorized) {
        rc = error_answer(out, 422, "amount is over the authorized amount");
        goto done;
    }
    if (json_array_size(s->captures) >= s->max || json_object_size(s->capture_keys) >= s->max) {
        rc = full(out, s, "captures");
        goto done;
    }
    char cid[64];
    if (new_id("cap_", cid, sizeof cid) != 0) {
        rc = error_answer(out, 500, "no random source for an id");
        goto done;
    }
    json_t *entry =
        json_pack("{s:s,s:s,s:O,s:I,s:s}", "captureId", cid, "authorizationId", id, "reference",
                  json_object_get(auth, "reference"), "amount", amount, "idempotencyKey", key);
    json_t *rec =
        json_pack("{s:s,s:I,s:s}", "authorizationId", id, "amount", amount, "captureId", cid);
    json_t *body = json_pack("{s:s,s:s}", "captureId", cid, "status", "captured");
    if (!entry || !rec || !body || json_array_append(s->captures, entry) != 0 ||
        json_object_set(s->capture_keys, key, rec) != 0) {
        json_decref(entry);
        json_decref(rec);
        json_decref(body);
        rc = error_answer(out, 500, "out of memory");
        goto done;
    }
    json_object_set_new(auth, "status", json_string("captured"));
    json_object_set_new(auth, "captureId", json_string(cid));
    json_decref(entry);
    json_decref(rec);
    rc = answer(out, 200, body);
done:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int fakes_gateway_void(fakes_state *s, const char *id, const char *key, json_t **out) {
    int rc;
    pthread_mutex_lock(&s->mu);
    json_t *auth = json_object_get(s->auths, id);
    if (!auth) {
        rc = error_answer(out, 404, "no such authorization");
        goto done;
    }
    json_t *seen = key ? json_object_get(s->void_keys, key) : NULL;
    if (seen) {
        if (strcmp(json_string_value(seen), id) != 0) {
            rc = key_conflict(out);
        } else {
            s->gateway_replays++;
            rc = answer(out, 200, json_pack("{s:s}", "status", "voided"));
        }
        goto done;
    }
    const char *st = status_of(auth);
    if (strcmp(st, "captured") == 0 || strcmp(st, "expired") == 0) {
        rc = conflict(out,
                      strcmp(st, "captured") == 0 ? "the authorization is captured"
                                                  : "the authorization has expired",
                      auth);
        goto done;
    }
    if (key && json_object_size(s->void_keys) >= s->max) {
        rc = full(out, s, "void keys");
        goto done;
    }
    if (strcmp(st, "authorized") == 0) {
        if (json_array_size(s->voids) >= s->max) {
            rc = full(out, s, "voids");
            goto done;
        }
        json_t *entry = json_pack("{s:s,s:O}", "authorizationId", id, "reference",
                                  json_object_get(auth, "reference"));
        if (!entry || json_array_append_new(s->voids, entry) != 0) {
            rc = error_answer(out, 500, "out of memory");
            goto done;
        }
        json_object_set_new(auth, "status", json_string("voided"));
    }
    /* voided now (by this request or an earlier one): remember the key either way */
    if (key) json_object_set_new(s->void_keys, key, json_string(id));
    rc = answer(out, 200, json_pack("{s:s}", "status", "voided"));
done:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int fakes_gateway_expire(fakes_state *s, const char *id, json_t **out) {
    int rc;
    pthread_mutex_lock(&s->mu);
    json_t *auth = json_object_get(s->auths, id);
    if (!auth) {
        rc = error_answer(out, 404, "no such authorization");
        goto done;
    }
    const char *st = status_of(auth);
    if (strcmp(st, "captured") == 0 || strcmp(st, "voided") == 0) {
        rc = conflict(out,
                      strcmp(st, "captured") == 0 ? "the authorization is captured"
                                                  : "the authorization is voided",
                      auth);
        goto done;
    }
    json_object_set_new(auth, "status", json_string("expired"));
    rc = answer(out, 200, json_pack("{s:s}", "status", "expired"));
done:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- carrier ------------------------------------------------------------------------- */

int fakes_carrier_lookup(fakes_state *s, const char *reference, json_t **out) {
    pthread_mutex_lock(&s->mu);
    s->lookups++;
    json_t *sh = json_object_get(s->by_ref, reference);
    json_t *body = json_pack("{s:o}", "shipment", sh ? json_deep_copy(sh) : json_null());
    pthread_mutex_unlock(&s->mu);
    return answer(out, 200, body);
}

/* A tracking number "TRK" + 12 digits not given out before. Returns 0, -1 (no random). */
static int new_tracking(fakes_state *s, char out[16]) {
    for (int tries = 0; tries < 100; tries++) {
        char uuid[FERRY_UUID_STRLEN + 1];
        if (ferry_uuid7(uuid) != 0) return -1;
        /* the last 12 hex digits of a uuid7 are random: 48 bits, taken modulo 10^12 */
        unsigned long long n = strtoull(uuid + 24, NULL, 16) % 1000000000000ULL;
        snprintf(out, 16, "TRK%012llu", n);
        if (!json_object_get(s->tracking, out)) return 0;
    }
    return -1;
}

int fakes_carrier_create(fakes_state *s, const fakes_shipment_req *r, json_t **out) {
    int rc;
    pthread_mutex_lock(&s->mu);
    if (json_array_size(s->shipments) >= s->max) {
        rc = full(out, s, "shipments");
        goto done;
    }
    char trk[16];
    if (new_tracking(s, trk) != 0) {
        rc = error_answer(out, 500, "no random source for a tracking number");
        goto done;
    }
    json_t *sh = json_pack("{s:s,s:s,s:I}", "trackingNumber", trk, "reference", r->reference,
                           "items", (json_int_t)r->items);
    json_t *body = sh ? json_deep_copy(sh) : NULL;
    if (!sh || !body || json_array_append(s->shipments, sh) != 0 ||
        json_object_set_new(s->tracking, trk, json_true()) != 0 ||
        (!json_object_get(s->by_ref, r->reference) &&
         json_object_set(s->by_ref, r->reference, sh) != 0)) {
        json_decref(sh);
        json_decref(body);
        rc = error_answer(out, 500, "out of memory");
        goto done;
    }
    json_decref(sh);
    rc = answer(out, 201, body);
done:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- mailer -------------------------------------------------------------------------- */

int fakes_mailer_send(fakes_state *s, const json_t *message, const char *key, json_t **out) {
    int rc;
    pthread_mutex_lock(&s->mu);
    json_t *seen = json_object_get(s->message_keys, key);
    if (seen) {
        if (!json_equal(json_object_get(seen, "request"), (json_t *)message)) {
            rc = key_conflict(out);
        } else {
            s->mailer_replays++;
            rc = answer(out, 202,
                        json_pack("{s:O}", "messageId", json_object_get(seen, "messageId")));
        }
        goto done;
    }
    if (json_array_size(s->messages) >= s->max || json_object_size(s->message_keys) >= s->max) {
        rc = full(out, s, "messages");
        goto done;
    }
    char mid[64];
    if (new_id("msg_", mid, sizeof mid) != 0) {
        rc = error_answer(out, 500, "no random source for an id");
        goto done;
    }
    json_t *entry =
        json_pack("{s:s,s:s,s:O,s:O,s:O}", "messageId", mid, "idempotencyKey", key, "to",
                  json_object_get(message, "to"), "template", json_object_get(message, "template"),
                  "reference", json_object_get(message, "reference"));
    json_t *rec = json_pack("{s:o,s:s}", "request", json_deep_copy(message), "messageId", mid);
    json_t *body = json_pack("{s:s}", "messageId", mid);
    if (!entry || !rec || !body || json_array_append(s->messages, entry) != 0 ||
        json_object_set(s->message_keys, key, rec) != 0) {
        json_decref(entry);
        json_decref(rec);
        json_decref(body);
        rc = error_answer(out, 500, "out of memory");
        goto done;
    }
    json_decref(entry);
    json_decref(rec);
    rc = answer(out, 202, body);
done:
    pthread_mutex_unlock(&s->mu);
    return rc;
}
