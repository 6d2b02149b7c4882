-- steer5g subscriber store, schema 1: the UDR's subscribers and the UDM instances' IND leases.
-- Applied once by the first process that opens the database (under an advisory lock), and
-- recorded in steer5g_schema. Never edit an applied migration: add the next file.

CREATE TABLE subscribers (
    -- imsi- followed by 5..15 digits; byte order, as the embedded store pages them.
    supi       text COLLATE "C" PRIMARY KEY CHECK (supi ~ '^imsi-[0-9]{5,15}$'),
    k          bytea    NOT NULL CHECK (length(k) = 16),
    -- 'opc' (the usual SIM vendor output) or 'op' (OPc derived with K at each use).
    op_kind    text     NOT NULL CHECK (op_kind IN ('op', 'opc')),
    op_or_opc  bytea    NOT NULL CHECK (length(op_or_opc) = 16),
    amf        bytea    NOT NULL CHECK (length(amf) = 2),
    -- The SQN counter (SEQ || IND, 48 bits): the end of the last claim any UDM instance
    -- made. It only grows, except when a new K is provisioned (a new SIM).
    sqn        bigint   NOT NULL CHECK (sqn BETWEEN 0 AND 281474976710655),
    -- 'SST' or 'SST:SD' (six hex digits), the default slice first.
    slices     text[]   NOT NULL CHECK (cardinality(slices) >= 1),
    -- The default DNN first.
    dnns       text[]   NOT NULL CHECK (cardinality(dnns) >= 1),
    ambr_ul    bigint   NOT NULL CHECK (ambr_ul > 0),
    ambr_dl    bigint   NOT NULL CHECK (ambr_dl > 0),
    -- Bumped by every change other than an SQN claim: another instance that cached the
    -- record compares it.
    version    bigint   NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Each UDM instance sharing this database issues SQNs with its own IND (TS 33.102 Annex
-- C.1.2, C.3): it holds a lease on one value of 0..31 and renews it while it runs.
CREATE TABLE udm_ind_leases (
    ind        smallint PRIMARY KEY CHECK (ind BETWEEN 0 AND 31),
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Every process caches the records it reads (per worker) and drops a cached record when
-- this channel names it: a change made anywhere (another instance's provisioning API,
-- `steer5g subscriber`, psql) reaches every instance. SQN claims leave `version` alone and
-- notify no one; inserts need no notice (absent records are not cached).
CREATE FUNCTION steer5g_subscriber_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('steer5g_subscribers', OLD.supi);
    RETURN NULL;
END
$$;

CREATE TRIGGER subscriber_updated AFTER UPDATE ON subscribers
    FOR EACH ROW WHEN (OLD.version IS DISTINCT FROM NEW.version)
    EXECUTE FUNCTION steer5g_subscriber_changed();

CREATE TRIGGER subscriber_deleted AFTER DELETE ON subscribers
    FOR EACH ROW EXECUTE FUNCTION steer5g_subscriber_changed();

-- The UDM's state that outlives an instance (TS 29.503): the serving AMF's registration for
-- 3GPP access and the last authentication result, as their SBI JSON bodies. Written behind
-- by the UDM that served the request; read by an instance that has none in memory.
CREATE TABLE udm_state (
    supi             text COLLATE "C" PRIMARY KEY
                     REFERENCES subscribers (supi) ON DELETE CASCADE,
    amf_registration jsonb,
    auth_event       jsonb,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
