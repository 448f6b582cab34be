#include "server/broker/pg/pg_sql_api.h"

#include <cstdint>
#include <string>

namespace streamd {
namespace {

// The functions' bodies. Every helper is IMMUTABLE and STRICT; the entry points are SECURITY DEFINER
// with the search path of the schema they were created in, so a caller needs only EXECUTE on them
// (granted to the roles below), never a right on the tables, and cannot redirect their statements.
// Errors: SQLSTATE SD + the HTTP status the native protocol answers with the same error, and a message
// that starts with the error's name (docs/ENGINES.md §"Appends from SQL").
constexpr const char* kHelpers = R"sql(
CREATE OR REPLACE FUNCTION streamd_le(v bigint, n int) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  out bytea := ''::bytea;
BEGIN
  FOR i IN 0..n - 1 LOOP
    out := out || set_byte('\x00'::bytea, 0, ((v >> (8 * i)) & 255)::int);
  END LOOP;
  RETURN out;
END $$;

CREATE OR REPLACE FUNCTION streamd_le_get(b bytea, at int, n int) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  v bigint := 0;
BEGIN
  FOR i IN REVERSE n - 1..0 LOOP
    v := (v << 8) | get_byte(b, at + i);
  END LOOP;
  RETURN v;
END $$;

CREATE OR REPLACE FUNCTION streamd_zvarint(n bigint) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  z bigint := (n << 1) # (n >> 63);
  out bytea := ''::bytea;
BEGIN
  LOOP
    IF z < 128 THEN
      RETURN out || set_byte('\x00'::bytea, 0, z::int);
    END IF;
    out := out || set_byte('\x00'::bytea, 0, ((z & 127) | 128)::int);
    z := z >> 7;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION streamd_fnv1a32(b bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  h bigint := 2166136261;
BEGIN
  FOR i IN 0..length(b) - 1 LOOP
    h := ((h # get_byte(b, i)) * 16777619) & 4294967295;
  END LOOP;
  RETURN h;
END $$;
)sql";

constexpr const char* kCrcHead = R"sql(
CREATE OR REPLACE FUNCTION streamd_crc32c(b bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  t bigint[] := ')sql";

constexpr const char* kCrcTail = R"sql(';
  crc bigint := 4294967295;
BEGIN
  FOR i IN 0..length(b) - 1 LOOP
    crc := (crc >> 8) # t[((crc # get_byte(b, i)) & 255) + 1];
  END LOOP;
  RETURN crc # 4294967295;
END $$;
)sql";

constexpr const char* kEntryPoints = R"sql(
CREATE OR REPLACE FUNCTION streamd_append(p_stream text, p_key bytea, p_payload bytea, p_partition int DEFAULT NULL)
RETURNS TABLE (partition int, "offset" bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  v_key bytea := coalesce(p_key, ''::bytea);
  v_payload bytea := coalesce(p_payload, ''::bytea);
  v_stream record;
  v_head record;
  v_part int;
  v_max_record bigint;
  v_max_bytes bigint;
  v_segment_bytes bigint;
  v_held bigint;
  v_now bigint;
  v_record bytea;
  v_body bytea;
  v_batch bytea;
  v_size bigint;
  v_active_base bigint;
  v_active_bytes bigint;
  v_active_min_at bigint;
  v_segments int;
BEGIN
  SELECT s.id, s.partitions, s.meta INTO v_stream FROM streamd_streams s WHERE s.name = p_stream;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'STREAM_NOT_FOUND: no stream is named %', p_stream
      USING ERRCODE = 'SD404', DETAIL = format('stream=%s', p_stream);
  END IF;
  -- The stream's policy (docs/FORMAT.md §"Stream metadata"): max_record_bytes, max_bytes, segment_bytes.
  v_max_record := streamd_le_get(v_stream.meta, 9, 8);
  v_max_bytes := streamd_le_get(v_stream.meta, 33, 8);
  v_segment_bytes := streamd_le_get(v_stream.meta, 49, 8);
  IF length(v_key) + length(v_payload) > v_max_record THEN
    RAISE EXCEPTION 'RECORD_TOO_LARGE: the record is % bytes, the stream takes at most %',
      length(v_key) + length(v_payload), v_max_record
      USING ERRCODE = 'SD413', DETAIL = format('stream=%s size=%s limit=%s', p_stream,
                                               length(v_key) + length(v_payload), v_max_record);
  END IF;
  -- A keyed record goes where fnv1a32(key) % partitions says (docs/SEMANTICS.md §2); an unkeyed one
  -- where the caller says, or to a partition drawn at random.
  IF p_partition IS NOT NULL THEN
    IF p_partition < 0 OR p_partition >= v_stream.partitions THEN
      RAISE EXCEPTION 'UNKNOWN_PARTITION: stream % has no partition %', p_stream, p_partition
        USING ERRCODE = 'SD404', DETAIL = format('stream=%s partition=%s partitions=%s', p_stream, p_partition,
                                                 v_stream.partitions);
    END IF;
    IF length(v_key) > 0 AND streamd_fnv1a32(v_key) % v_stream.partitions <> p_partition THEN
      RAISE EXCEPTION 'PARTITIONS_MIXED: the key belongs to partition %, not %',
        streamd_fnv1a32(v_key) % v_stream.partitions, p_partition
        USING ERRCODE = 'SD400', DETAIL = format('stream=%s partition=%s record_partition=%s', p_stream,
                                                 p_partition, streamd_fnv1a32(v_key) % v_stream.partitions);
    END IF;
    v_part := p_partition;
  ELSIF length(v_key) > 0 THEN
    v_part := streamd_fnv1a32(v_key) % v_stream.partitions;
  ELSE
    v_part := floor(random() * v_stream.partitions)::int;
  END IF;

  -- The partition's head row, locked until the caller's transaction ends: appends to the partition,
  -- the brokers' and other transactions', wait for it, so offsets stay consecutive.
  SELECT * INTO v_head FROM streamd_heads h WHERE h.stream_id = v_stream.id AND h.part = v_part FOR UPDATE;
  v_now := greatest((extract(epoch FROM clock_timestamp()) * 1000000)::bigint, v_head.last_at);

  -- One record, Kafka's record encoding; a native record's empty key is no key, and its empty payload
  -- under a key a tombstone (docs/FORMAT.md §"Record batch").
  v_record := '\x000000'::bytea  -- attributes, timestamp delta 0, offset delta 0
    || CASE WHEN length(v_key) = 0 THEN streamd_zvarint(-1) ELSE streamd_zvarint(length(v_key)) || v_key END
    || CASE WHEN length(v_payload) = 0 AND length(v_key) > 0 THEN streamd_zvarint(-1)
            ELSE streamd_zvarint(length(v_payload)) || v_payload END
    || '\x00'::bytea;  -- no headers
  v_record := streamd_zvarint(length(v_record)) || v_record;
  -- A version 2 batch of that record at the head's next offset, sealed as the engine seals its own.
  v_body := '\x02000000'::bytea || streamd_le(v_head.next_offset, 8) || streamd_le(0, 4) || streamd_le(1, 4)
    || streamd_le(v_now, 8) || streamd_le(0, 8) || streamd_le(0, 8)
    || streamd_le(-1, 8) || streamd_le(-1, 2) || streamd_le(-1, 4) || v_record;
  v_batch := streamd_le(length(v_body) + 4, 4) || streamd_le(streamd_crc32c(v_body), 4) || v_body;
  v_size := length(v_batch);

  IF v_max_bytes > 0 THEN
    SELECT sum(h.bytes) INTO v_held FROM streamd_heads h WHERE h.stream_id = v_stream.id;
    IF v_held + v_size > v_max_bytes THEN
      RAISE EXCEPTION 'STREAM_FULL: the stream holds % bytes of its max_bytes %', v_held, v_max_bytes
        USING ERRCODE = 'SD507', DETAIL = format('stream=%s bytes=%s max_bytes=%s', p_stream, v_held, v_max_bytes);
    END IF;
  END IF;

  -- Segments roll at the policy's segment_bytes, as the engine's appends roll them.
  v_active_base := v_head.active_base;
  v_active_bytes := v_head.active_bytes;
  v_active_min_at := v_head.active_min_at;
  v_segments := v_head.segments;
  IF v_active_bytes > 0 AND v_active_bytes + v_size > v_segment_bytes THEN
    INSERT INTO streamd_segments (stream_id, part, end_offset, base_offset, bytes, min_at, max_at)
    VALUES (v_stream.id, v_part, v_head.next_offset, v_active_base, v_active_bytes, v_active_min_at, v_head.last_at);
    v_active_base := v_head.next_offset;
    v_active_bytes := 0;
    v_segments := v_segments + 1;
  END IF;
  IF v_active_bytes = 0 THEN
    v_active_min_at := v_now;
  END IF;
  INSERT INTO streamd_batches (stream_id, part, end_offset, base_offset, appended_at, records, data, max_ts)
  VALUES (v_stream.id, v_part, v_head.next_offset + 1, v_head.next_offset, v_now, 1, v_batch, v_now / 1000);
  UPDATE streamd_heads h SET next_offset = v_head.next_offset + 1, bytes = h.bytes + v_size, last_at = v_now,
    active_base = v_active_base, active_bytes = v_active_bytes + v_size, active_min_at = v_active_min_at,
    segments = v_segments
  WHERE h.stream_id = v_stream.id AND h.part = v_part;
  -- Delivered at COMMIT, never before: every broker takes the new head and wakes its long polls
  -- (the head item of server/broker/pg/pg_change_feed.h).
  PERFORM pg_notify('streamd_changes', 'sql|h' || concat_ws('.', v_stream.id, v_part, v_head.first_offset,
    v_head.next_offset + 1, v_head.bytes + v_size, v_now, v_active_base, v_active_bytes + v_size, v_active_min_at,
    v_segments, coalesce(v_head.first_open, -1)));
  partition := v_part;
  "offset" := v_head.next_offset;
  RETURN NEXT;
END $$;

CREATE OR REPLACE FUNCTION streamd_commit_offset(p_stream text, p_group text, p_partition int, p_next bigint)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  v_stream record;
  v_next bigint;
BEGIN
  SELECT s.id, s.partitions INTO v_stream FROM streamd_streams s WHERE s.name = p_stream;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'STREAM_NOT_FOUND: no stream is named %', p_stream
      USING ERRCODE = 'SD404', DETAIL = format('stream=%s', p_stream);
  END IF;
  IF coalesce(p_group, '') = '' THEN
    RAISE EXCEPTION 'STREAM_MISCONFIGURED: a commit needs a group name'
      USING ERRCODE = 'SD400', DETAIL = format('stream=%s field=group', p_stream);
  END IF;
  IF p_partition IS NULL OR p_partition < 0 OR p_partition >= v_stream.partitions THEN
    RAISE EXCEPTION 'UNKNOWN_PARTITION: stream % has no partition %', p_stream, p_partition
      USING ERRCODE = 'SD404', DETAIL = format('stream=%s partition=%s partitions=%s', p_stream, p_partition,
                                               v_stream.partitions);
  END IF;
  SELECT h.next_offset INTO v_next FROM streamd_heads h WHERE h.stream_id = v_stream.id AND h.part = p_partition;
  IF p_next IS NULL OR p_next < 0 OR p_next > v_next THEN
    RAISE EXCEPTION 'OFFSET_AHEAD: offset % is past the partition''s next offset %', p_next, v_next
      USING ERRCODE = 'SD416', DETAIL = format('stream=%s partition=%s offset=%s next=%s', p_stream, p_partition,
                                               p_next, v_next);
  END IF;
  INSERT INTO streamd_group_offsets (stream_id, group_name, part, next_offset, metadata)
  VALUES (v_stream.id, p_group, p_partition, p_next, ''::bytea)
  ON CONFLICT (stream_id, group_name, part) DO UPDATE SET next_offset = EXCLUDED.next_offset,
    metadata = EXCLUDED.metadata;
  PERFORM pg_notify('streamd_changes', 'sql|r');  -- the brokers read the groups' offsets again
END $$;

CREATE OR REPLACE FUNCTION streamd_committed(p_stream text, p_group text, p_partition int) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
  SELECT o.next_offset FROM streamd_group_offsets o JOIN streamd_streams s ON s.id = o.stream_id
  WHERE s.name = p_stream AND o.group_name = p_group AND o.part = p_partition
$$;

REVOKE ALL ON FUNCTION streamd_append(text, bytea, bytea, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION streamd_commit_offset(text, text, int, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION streamd_committed(text, text, int) FROM PUBLIC;
)sql";

// The roles the docs name, created where the broker's database user may create roles; otherwise a
// database administrator creates them (docs/ENGINES.md §"Appends from SQL"). Granted EXECUTE either way
// once they exist.
constexpr const char* kRoles = R"sql(
DO $$
BEGIN
  -- Roles belong to the whole server: a broker of another database may be creating them meanwhile.
  IF (SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'streamd_producer') THEN
        CREATE ROLE streamd_producer NOLOGIN;
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'streamd_committer') THEN
        CREATE ROLE streamd_committer NOLOGIN;
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'streamd_producer') THEN
    GRANT EXECUTE ON FUNCTION streamd_append(text, bytea, bytea, int) TO streamd_producer;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'streamd_committer') THEN
    GRANT EXECUTE ON FUNCTION streamd_commit_offset(text, text, int, bigint) TO streamd_committer;
    GRANT EXECUTE ON FUNCTION streamd_committed(text, text, int) TO streamd_committer;
  END IF;
END $$;
)sql";

// CRC32C's table (docs/FORMAT.md §Conventions: reflected polynomial 0x82F63B78), as an array literal.
std::string crc_table_literal() {
  std::string out = "{";
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    if (n > 0) out += ',';
    out += std::to_string(c);
  }
  return out + "}";
}

}  // namespace

Status install_sql_api(PgConnection& conn) {
  STREAMD_RETURN_IF_ERROR(conn.run("install SQL functions", kHelpers));
  STREAMD_RETURN_IF_ERROR(conn.run("install SQL functions", std::string(kCrcHead) + crc_table_literal() + kCrcTail));
  STREAMD_RETURN_IF_ERROR(conn.run("install SQL functions", kEntryPoints));
  return conn.run("install SQL functions", kRoles);
}

}  // namespace streamd
