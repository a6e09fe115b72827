"""Never-forget and the append-only audit log on PostgreSQL, enforced by the database.

Triggers raise the messages SQLite's triggers raise (``omoide-protected:``,
``omoide-audit:``), which :mod:`omoide.storage.postgres` turns into the same typed errors. A
protected episode or document cannot be deleted, archived, compressed or rewritten, except a
delete under a purge grant (one item, named by its audit row, consumed by the delete); the
audit log takes inserts only. :data:`GUARDS` is part of the baseline migration,
:data:`TRUNCATE_GUARDS` a later one (see :mod:`omoide.storage.pg_schema`).
"""

from __future__ import annotations

__all__ = ["GUARDS", "TRUNCATE_GUARDS"]

GUARDS = r"""
CREATE FUNCTION omoide_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'integrity_constraint_violation';
END $$;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION omoide_refuse('omoide-audit: the audit log is append-only');
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT
    EXECUTE FUNCTION omoide_refuse('omoide-audit: the audit log is append-only');

CREATE FUNCTION omoide_purge_granted(p_layer TEXT, p_collection TEXT, p_item TEXT)
    RETURNS BOOLEAN LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM purge_grants
                   WHERE layer = p_layer AND collection = p_collection AND item_id = p_item)
$$;

CREATE FUNCTION omoide_purge_grant_audited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM audit_log WHERE id = NEW.audit_id AND action = 'purge'
                   AND layer = NEW.layer AND collection = NEW.collection
                   AND item_id = NEW.item_id) THEN
        RAISE EXCEPTION USING MESSAGE = 'omoide-protected: a purge needs its audit record',
            ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER purge_grants_audited BEFORE INSERT ON purge_grants
    FOR EACH ROW EXECUTE FUNCTION omoide_purge_grant_audited();

CREATE FUNCTION omoide_episode_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.protected = 1 AND NOT omoide_purge_granted('episodic', '', OLD.id) THEN
            RAISE EXCEPTION USING
                MESSAGE = 'omoide-protected: a never-forget episode cannot be deleted',
                ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.protected = 1 AND (
        NEW.protected IS DISTINCT FROM 1
        OR NEW.state IS DISTINCT FROM OLD.state
        OR NEW.archived_at IS DISTINCT FROM OLD.archived_at
        OR NEW.compressed_at IS DISTINCT FROM OLD.compressed_at
        OR NEW.id IS DISTINCT FROM OLD.id
        OR NEW.description IS DISTINCT FROM OLD.description
        OR NEW.context IS DISTINCT FROM OLD.context
        OR NEW.event_type IS DISTINCT FROM OLD.event_type
        OR NEW.agent_name IS DISTINCT FROM OLD.agent_name
        OR NEW.timestamp IS DISTINCT FROM OLD.timestamp
        OR NEW.scope IS DISTINCT FROM OLD.scope
        OR (OLD.outcome IS NOT NULL AND NEW.outcome IS DISTINCT FROM OLD.outcome)
    ) THEN
        RAISE EXCEPTION USING MESSAGE = 'omoide-protected: a never-forget episode cannot be '
            'archived, compressed or rewritten', ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER episodes_protected BEFORE UPDATE OR DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION omoide_episode_guard();

CREATE FUNCTION omoide_document_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.protected = 1
           AND NOT omoide_purge_granted('semantic', OLD.collection, OLD.id) THEN
            RAISE EXCEPTION USING
                MESSAGE = 'omoide-protected: a never-forget document cannot be deleted',
                ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.protected = 1 AND (
        NEW.protected IS DISTINCT FROM 1
        OR (NEW.state NOT IN ('pending', 'active')
            AND NOT (NEW.state = 'deleting'
                     AND omoide_purge_granted('semantic', OLD.collection, OLD.id)))
        OR NEW.archived_at IS DISTINCT FROM OLD.archived_at
        OR NEW.compressed_at IS DISTINCT FROM OLD.compressed_at
        OR NEW.id IS DISTINCT FROM OLD.id
        OR NEW.collection IS DISTINCT FROM OLD.collection
        OR NEW.content IS DISTINCT FROM OLD.content
    ) THEN
        RAISE EXCEPTION USING MESSAGE = 'omoide-protected: a never-forget document cannot be '
            'archived, compressed or rewritten', ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER semantic_docs_protected BEFORE UPDATE OR DELETE ON semantic_docs
    FOR EACH ROW EXECUTE FUNCTION omoide_document_guard();

CREATE FUNCTION omoide_purged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM purge_grants
        WHERE layer = TG_ARGV[0] AND collection = COALESCE(
            CASE WHEN TG_ARGV[0] = 'semantic' THEN to_jsonb(OLD) ->> 'collection' END, '')
        AND item_id = OLD.id;
    RETURN OLD;
END $$;
CREATE TRIGGER episodes_purged AFTER DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION omoide_purged('episodic');
CREATE TRIGGER semantic_docs_purged AFTER DELETE ON semantic_docs
    FOR EACH ROW EXECUTE FUNCTION omoide_purged('semantic');
"""

#: TRUNCATE fires no row trigger: without a statement trigger it would empty a table of
#: never-forget rows (SQLite has no TRUNCATE; its DELETE fires the row triggers). Refused
#: while the table holds a protected row (a purge grant names one row, for a DELETE).
TRUNCATE_GUARDS = r"""
CREATE FUNCTION omoide_refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held BOOLEAN;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE protected = 1)', TG_TABLE_NAME)
        INTO held;
    IF held THEN
        RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER episodes_protected_truncate BEFORE TRUNCATE ON episodes
    FOR EACH STATEMENT EXECUTE FUNCTION
    omoide_refuse_truncate('omoide-protected: a never-forget episode cannot be deleted');
CREATE TRIGGER semantic_docs_protected_truncate BEFORE TRUNCATE ON semantic_docs
    FOR EACH STATEMENT EXECUTE FUNCTION
    omoide_refuse_truncate('omoide-protected: a never-forget document cannot be deleted');
"""
