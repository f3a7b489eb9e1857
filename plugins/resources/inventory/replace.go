package inventory

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store"
)

// Listed is a resource as a sync lists it, its tags and properties
// already encoded as JSON objects.
type Listed struct {
	ResourceID    string
	Name          string
	Type          string
	Location      string
	ResourceGroup string
	SKU           string
	Tags          string
	Properties    string
}

// Scope is the subscription a sync replaces, and its tenant.
type Scope struct {
	TenantID       string
	SubscriptionID string
}

// Written is what Replace did.
type Written struct {
	// Rows is how many resources the stream listed.
	Rows int64
	// Batches is how many times listed rows were flushed to the stage.
	Batches int
	// Created, Changed and Deleted count the lifecycle events recorded.
	Created, Changed, Deleted int64
}

// DefaultFlushRows is how many listed resources Replace holds in memory
// before it writes them to its stage, when Store.FlushRows is zero.
const DefaultFlushRows = 2000

// stageRows is how many rows one multi-row INSERT into the stage carries:
// eight columns a row keeps it below both databases' parameter limits.
const stageRows = 500

// stageColumns are the stage's columns, in the order rows are written.
var stageColumns = []string{"uid", "resource_id", "name", "type", "location", "resource_group", "sku", "tags", "properties"}

// compared are the columns whose difference makes a changed event, by the
// field name the event records.
var compared = []string{"name", "type", "location", "resource_group", "sku", "tags", "properties"}

// Replace makes the inventory hold, for the scope's subscription, exactly
// the resources stream emits, and records what differs from the last sync
// as lifecycle events: a resource not stored before is created, one whose
// fields differ is changed (naming the fields), a stored one the stream no
// longer lists is deleted. Every listed resource's last seen time becomes
// syncedAt.
//
// Rows are streamed into a temporary stage on one connection, a batch at
// a time (COPY on PostgreSQL, multi-row inserts on SQLite), and compared
// and moved in one transaction once stream returns, which also raises the
// revision (RevisionTable) of the scope's tenant and of every tenant the
// subscription's stored resources belonged to. If stream fails, nothing
// stored changes and its error is returned as is. On PostgreSQL the move
// holds a transaction-scoped advisory lock on the subscription.
func (s *Store) Replace(ctx context.Context, sc Scope, syncedAt time.Time, stream func(emit func(Listed) error) error) (Written, error) {
	var out Written
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Close()
	pg := s.DB.Dialect().Name() == dialect.PG
	st, err := openStage(ctx, conn, pg)
	if err != nil {
		return out, fmt.Errorf("inventory: stage: %w", err)
	}
	defer st.Drop()

	flush := s.FlushRows
	if flush <= 0 {
		flush = DefaultFlushRows
	}
	out.Rows, out.Batches, err = store.WriteBatches(flush, stream, func(rows []Listed) error {
		if err := st.write(ctx, rows); err != nil {
			return fmt.Errorf("inventory: stage: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if err := st.move(ctx, sc, syncedAt.UTC(), &out); err != nil {
		return out, fmt.Errorf("inventory: replace %s: %w", sc.SubscriptionID, err)
	}
	return out, nil
}

// stage is the subscription's staging table.
type stage struct {
	*store.Stage
	pg bool
}

func openStage(ctx context.Context, conn bun.Conn, pg bool) (stage, error) {
	st, err := store.OpenStage(ctx, conn, "inventory_stage", `uid TEXT NOT NULL, resource_id TEXT NOT NULL, name TEXT NOT NULL,
		 type TEXT NOT NULL, location TEXT NOT NULL, resource_group TEXT NOT NULL, sku TEXT NOT NULL, tags TEXT NOT NULL, properties TEXT NOT NULL`, stageColumns, pg, stageRows)
	return stage{Stage: st, pg: pg}, err
}

func (st stage) write(ctx context.Context, rows []Listed) error {
	return st.Write(ctx, len(rows), func(i int) []any {
		r := &rows[i]
		return []any{UID(r.ResourceID), r.ResourceID, r.Name, r.Type, r.Location, r.ResourceGroup, r.SKU, r.Tags, r.Properties}
	})
}

// differs is a condition true when a stored row (i) and the row named
// other differ in any compared field; changedFields lists those fields of
// i and the stage's row s, comma-separated.
func differs(other string) string {
	parts := make([]string, len(compared))
	for i, c := range compared {
		parts[i] = "i." + c + " <> " + other + "." + c
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

func changedFields() string {
	parts := make([]string, len(compared))
	for i, c := range compared {
		parts[i] = "CASE WHEN i." + c + " <> s." + c + " THEN '" + c + ",' ELSE '' END"
	}
	return "RTRIM(" + strings.Join(parts, " || ") + ", ',')"
}

// move records the lifecycle events, rewrites the tags of resources whose
// tags changed, upserts the stage into the inventory and deletes the
// subscription's resources the stage lacks, in one transaction. The same
// transaction raises the revision of the scope's tenant and of the
// tenants of the subscription's resources before it (a subscription that
// moved to another tenant leaves its former one), as every listed row's
// last seen time changes.
func (st stage) move(ctx context.Context, sc Scope, at time.Time, out *Written) error {
	if _, err := st.Conn.ExecContext(ctx, `CREATE UNIQUE INDEX IF NOT EXISTS inventory_stage_uid ON inventory_stage (uid)`); err != nil {
		return err
	}
	if st.pg {
		// Temporary tables are never analysed automatically.
		if _, err := st.Conn.ExecContext(ctx, `ANALYZE inventory_stage`); err != nil {
			return err
		}
	}
	expand := "json_each(s.tags) t"
	if st.pg {
		expand = "jsonb_each_text(s.tags::jsonb) t"
	}
	count := func(res sql.Result, err error, n *int64) error {
		if err != nil {
			return err
		}
		if n != nil {
			*n, _ = res.RowsAffected()
		}
		return nil
	}
	return st.Conn.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		if st.pg {
			// Two replicas syncing one subscription take turns, so each
			// compares with what the other committed and no change is
			// recorded twice.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`, "resources_inventory:"+sc.SubscriptionID); err != nil {
				return err
			}
		}
		var tenants []string
		if err := tx.NewRaw(`SELECT DISTINCT tenant_id FROM resources_inventory WHERE subscription_id = ?`, sc.SubscriptionID).Scan(ctx, &tenants); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO resources_events (tenant_id, subscription_id, uid, resource_id, name, type, kind, fields, at)
			SELECT ?, ?, s.uid, s.resource_id, s.name, s.type, ?, '', ? FROM inventory_stage s
			WHERE NOT EXISTS (SELECT 1 FROM resources_inventory i WHERE i.uid = s.uid)`,
			sc.TenantID, sc.SubscriptionID, EventCreated, at)
		if err := count(res, err, &out.Created); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO resources_events (tenant_id, subscription_id, uid, resource_id, name, type, kind, fields, at)
			SELECT ?, ?, s.uid, s.resource_id, s.name, s.type, ?, `+changedFields()+`, ?
			FROM inventory_stage s JOIN resources_inventory i ON i.uid = s.uid WHERE `+differs("s"),
			sc.TenantID, sc.SubscriptionID, EventChanged, at)
		if err := count(res, err, &out.Changed); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO resources_events (tenant_id, subscription_id, uid, resource_id, name, type, kind, fields, at)
			SELECT i.tenant_id, i.subscription_id, i.uid, i.resource_id, i.name, i.type, ?, '', ? FROM resources_inventory i
			WHERE i.subscription_id = ? AND NOT EXISTS (SELECT 1 FROM inventory_stage s WHERE s.uid = i.uid)`,
			EventDeleted, at, sc.SubscriptionID)
		if err := count(res, err, &out.Deleted); err != nil {
			return err
		}
		// Tags, which carry their resource's tenant and type, are
		// rewritten only for resources whose tags, type or tenant changed
		// (or that came or went), before the inventory rows are: their
		// rows are deleted, then every staged resource left without tag
		// rows gets its own.
		res, err = tx.ExecContext(ctx, `DELETE FROM resources_inventory_tags WHERE subscription_id = ? AND tenant_id <> ?`,
			sc.SubscriptionID, sc.TenantID)
		if err := count(res, err, nil); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM resources_inventory_tags WHERE subscription_id = ? AND NOT EXISTS (
			SELECT 1 FROM resources_inventory i JOIN inventory_stage s ON s.uid = i.uid
			WHERE i.uid = resources_inventory_tags.uid AND i.tags = s.tags AND i.type = s.type)`, sc.SubscriptionID)
		if err := count(res, err, nil); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO resources_inventory_tags (uid, tenant_id, subscription_id, type, key, value)
			SELECT s.uid, ?, ?, s.type, t.key, t.value FROM inventory_stage s, `+expand+`
			WHERE NOT EXISTS (SELECT 1 FROM resources_inventory_tags x WHERE x.uid = s.uid)`,
			sc.TenantID, sc.SubscriptionID)
		if err := count(res, err, nil); err != nil {
			return err
		}
		set := make([]string, len(compared))
		for i, c := range compared {
			set[i] = c + " = EXCLUDED." + c
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO resources_inventory AS i (uid, tenant_id, subscription_id, resource_id, name, type, location,
			resource_group, sku, tags, properties, first_seen, last_seen, changed_at)
			SELECT s.uid, ?, ?, s.resource_id, s.name, s.type, s.location, s.resource_group, s.sku, s.tags, s.properties, ?, ?, ?
			FROM inventory_stage s WHERE true
			ON CONFLICT (uid) DO UPDATE SET `+strings.Join(set, ", ")+`, tenant_id = EXCLUDED.tenant_id, resource_id = EXCLUDED.resource_id,
			last_seen = EXCLUDED.last_seen,
			changed_at = CASE WHEN `+differs("EXCLUDED")+` THEN EXCLUDED.changed_at ELSE i.changed_at END`,
			sc.TenantID, sc.SubscriptionID, at, at, at)
		if err := count(res, err, nil); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM resources_inventory WHERE subscription_id = ?
			AND NOT EXISTS (SELECT 1 FROM inventory_stage s WHERE s.uid = resources_inventory.uid)`, sc.SubscriptionID)
		if err := count(res, err, nil); err != nil {
			return err
		}
		// In one order, so that two syncs raising the same tenants wait
		// for each other rather than deadlock.
		tenants = append(tenants, sc.TenantID)
		slices.Sort(tenants)
		for _, id := range slices.Compact(tenants) {
			if err := revcache.Bump(ctx, tx, RevisionTable, id); err != nil {
				return err
			}
		}
		return nil
	})
}
