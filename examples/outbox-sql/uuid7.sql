-- uuid7.sql - a UUIDv7 generator for PostgreSQL 13 and later, for applications that write
-- outbox rows in SQL (PostgreSQL 18 has uuidv7() built in). The first 48 bits are the Unix
-- time in milliseconds, so ids sort by creation time; the rest is gen_random_uuid()'s
-- randomness with the version set to 7 (its variant bits are already RFC 9562's).
-- Within one millisecond the order of two ids is random; ferry_outbox_append (C) keeps a
-- counter and orders those too.
CREATE OR REPLACE FUNCTION uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(
           set_bit(set_bit(
             overlay(uuid_send(gen_random_uuid())
                     PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                     FROM 1 FOR 6),
             52, 1), 53, 1),
           'hex')::uuid
$$;
