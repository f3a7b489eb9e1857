package states

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store"
)

// Store keeps the policy states, the subscriptions' syncs and the
// tenants' snapshots.
type Store struct {
	DB *bun.DB
	// FlushRows is how many states Replace holds in memory before it
	// writes them to its stage; DefaultFlushRows when zero.
	FlushRows int
	// stageByInsert stages with multi-row inserts on PostgreSQL too, for
	// the benchmark's comparison with COPY.
	stageByInsert bool

	once sync.Once
	// summaries keeps the policy part of each tenant selection's summary
	// with the revision of the states it was read at.
	summaries *revcache.Cache[policyPart]
}

// DefaultFlushRows is how many streamed states Replace holds in memory at
// most when Store.FlushRows is zero.
const DefaultFlushRows = 5000

// stageRows is how many rows one multi-row INSERT into the stage carries:
// at thirteen columns a row, far below both databases' parameter limits.
const stageRows = 500

// stageColumns are the stage's columns, in the order rows are written.
var stageColumns = []string{"resource_id", "resource_type", "policy_assignment_id", "policy_definition_id", "policy_definition_name",
	"policy_name", "category", "group_names", "compliance_state", "state_rank", "severity", "severity_rank", "evaluated_unix"}

// Subscription is a subscription's last successful sync.
type Subscription struct {
	bun.BaseModel  `bun:"table:compliance_subscriptions"`
	SubscriptionID string    `bun:"subscription_id,pk"`
	TenantID       string    `bun:"tenant_id"`
	PolicyStates   int64     `bun:"policy_states"`
	SyncedAt       time.Time `bun:"synced_at"`
}

// Snapshot is a tenant's figures on a day, from its states once all its
// subscriptions synced.
type Snapshot struct {
	bun.BaseModel         `bun:"table:compliance_snapshots,alias:s"`
	TenantID              string    `bun:"tenant_id,pk"`
	Day                   string    `bun:"day,pk"`
	CompliantResources    int64     `bun:"compliant_resources"`
	NonCompliantResources int64     `bun:"non_compliant_resources"`
	TotalResources        int64     `bun:"total_resources"`
	CompliantPolicies     int64     `bun:"compliant_policies"`
	NonCompliantPolicies  int64     `bun:"non_compliant_policies"`
	TotalPolicies         int64     `bun:"total_policies"`
	PolicyStates          int64     `bun:"policy_states"`
	TakenAt               time.Time `bun:"taken_at"`
}

// CompliancePercent is the snapshot's compliant resources over its
// compliant and non-compliant ones, in percent; nil without either.
func (s *Snapshot) CompliancePercent() *float64 {
	return Percent(s.CompliantResources, s.NonCompliantResources)
}

// Written is what Replace did.
type Written struct {
	// Rows is how many states the stream emitted.
	Rows int64
	// Batches is how many times emitted states were flushed to the
	// stage: the stream is held in memory one batch at a time, never
	// whole.
	Batches int
}

// Target is the subscription a Replace writes.
type Target struct {
	TenantID       string
	SubscriptionID string
	SyncedAt       time.Time
	// Resources is how many distinct resources the subscription's policy
	// summary counts (ids compared without regard to case). A listing
	// that streams fewer was cut short — a provider may end a paged
	// listing early without an error — and Replace refuses it with
	// ErrCutShort. Zero checks nothing.
	Resources int
}

// ErrCutShort is Replace's refusal of a listing with fewer resources than
// the subscription's summary counts.
var ErrCutShort = errors.New("the policy states listing was cut short")

// Replace makes the store hold, for the target's subscription, exactly the
// states stream emits, as its tenant's. The states are streamed into a temporary
// stage on one connection a batch (FlushRows) at a time — with COPY on
// PostgreSQL, multi-row inserts on SQLite, neither of which locks the
// shared table — then replace the subscription's stored states in one
// short transaction, which also records the subscription's sync. If
// stream fails, nothing stored changes and its error is returned as is.
// On PostgreSQL the transaction holds an advisory lock on the
// subscription, so two replicas syncing it take turns.
func (s *Store) Replace(ctx context.Context, t Target, stream func(emit func(State) error) error) (Written, error) {
	var out Written
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Close()
	useCopy := s.DB.Dialect().Name() == dialect.PG && !s.stageByInsert
	st, err := store.OpenStage(ctx, conn, "compliance_stage", `resource_id TEXT NOT NULL, resource_type TEXT NOT NULL,
		policy_assignment_id TEXT NOT NULL, policy_definition_id TEXT NOT NULL, policy_definition_name TEXT NOT NULL,
		policy_name TEXT NOT NULL, category TEXT NOT NULL, group_names TEXT NOT NULL, compliance_state TEXT NOT NULL,
		state_rank SMALLINT NOT NULL, severity TEXT NOT NULL, severity_rank SMALLINT NOT NULL, evaluated_unix BIGINT NOT NULL`,
		stageColumns, useCopy, stageRows)
	if err != nil {
		return out, fmt.Errorf("states: stage: %w", err)
	}
	defer st.Drop()

	flush := s.FlushRows
	if flush <= 0 {
		flush = DefaultFlushRows
	}
	out.Rows, out.Batches, err = store.WriteBatches(flush, func(emit func([]any) error) error {
		return stream(func(v State) error {
			row, err := stageRow(v)
			if err != nil {
				return err
			}
			return emit(row)
		})
	}, func(rows [][]any) error {
		if err := st.Write(ctx, len(rows), func(i int) []any { return rows[i] }); err != nil {
			return fmt.Errorf("states: stage: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if t.Resources > 0 {
		var resources int
		if err := conn.NewRaw(`SELECT COUNT(DISTINCT LOWER(resource_id)) FROM compliance_stage`).Scan(ctx, &resources); err != nil {
			return out, fmt.Errorf("states: stage: %w", err)
		}
		if resources < t.Resources {
			return out, fmt.Errorf("%w: %d resources listed, the summary counts %d", ErrCutShort, resources, t.Resources)
		}
	}
	err = conn.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		if s.DB.Dialect().Name() == dialect.PG {
			// Two replicas replacing one subscription take turns, or
			// each would insert beside the rows the other inserted.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`, "compliance_states:"+t.SubscriptionID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM compliance_policy_states WHERE subscription_id = ?`, t.SubscriptionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO compliance_policy_states (tenant_id, subscription_id, `+columnList+`)
			SELECT ?, ?, `+columnList+` FROM compliance_stage`, t.TenantID, t.SubscriptionID)
		if err != nil {
			return err
		}
		if err := s.replaceDefinitionCounts(ctx, tx, t); err != nil {
			return err
		}
		if err := bumpRevision(ctx, tx, t.TenantID); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&Subscription{SubscriptionID: t.SubscriptionID, TenantID: t.TenantID, PolicyStates: out.Rows, SyncedAt: t.SyncedAt.UTC()}).
			On("CONFLICT (subscription_id) DO UPDATE").
			Set("tenant_id = EXCLUDED.tenant_id").
			Set("policy_states = EXCLUDED.policy_states").
			Set("synced_at = EXCLUDED.synced_at").
			Exec(ctx)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("states: replace subscription %s: %w", t.SubscriptionID, err)
	}
	return out, nil
}

var columnList = strings.Join(stageColumns, ", ")

// stageRow is a state's values in the stage's columns.
func stageRow(v State) ([]any, error) {
	groups := v.GroupNames
	if groups == nil {
		groups = []string{}
	}
	g, err := json.Marshal(groups)
	if err != nil {
		return nil, err
	}
	severity := NormalizeSeverity(v.Severity)
	if severity == "" {
		severity = SeverityOfCategory(v.Category)
	}
	state := normalizeState(v.ComplianceState)
	name := v.PolicyName
	if name == "" {
		name = v.PolicyDefinitionName
	}
	return []any{v.ResourceID, v.ResourceType, v.PolicyAssignmentID, v.PolicyDefinitionID, v.PolicyDefinitionName,
		name, v.Category, string(g), state, int16(stateRank(state)), severity, int16(severityRanks[severity]), v.EvaluatedAt.Unix()}, nil
}

// Finish closes a tenant's sync once every subscription of it synced:
// the states of subscriptions no longer among them are dropped, and the
// day's snapshot of the tenant is taken (replacing an earlier one of the
// same day), in one transaction. It returns the snapshot.
func (s *Store) Finish(ctx context.Context, tenantID string, subscriptions []string, at time.Time) (Snapshot, error) {
	snap := Snapshot{TenantID: tenantID, Day: at.UTC().Format(time.DateOnly), TakenAt: at.UTC()}
	if len(subscriptions) == 0 {
		return snap, errors.New("states: finish a tenant without subscriptions")
	}
	err := s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		for _, table := range []string{"compliance_policy_states", "compliance_definition_counts", "compliance_subscriptions"} {
			if _, err := tx.NewDelete().Table(table).Where("tenant_id = ?", tenantID).Where("subscription_id NOT IN (?)", bun.List(subscriptions)).Exec(ctx); err != nil {
				return err
			}
		}
		if err := bumpRevision(ctx, tx, tenantID); err != nil {
			return err
		}
		res, err := countRanks(ctx, tx, []string{tenantID}, "resource_id")
		if err != nil {
			return err
		}
		pol, err := countRanks(ctx, tx, []string{tenantID}, "policy_definition_id")
		if err != nil {
			return err
		}
		n, err := tx.NewSelect().Table("compliance_policy_states").Where("tenant_id = ?", tenantID).Count(ctx)
		if err != nil {
			return err
		}
		snap.CompliantResources, snap.NonCompliantResources, snap.TotalResources = res.Compliant, res.NonCompliant, res.Total
		snap.CompliantPolicies, snap.NonCompliantPolicies, snap.TotalPolicies = pol.Compliant, pol.NonCompliant, pol.Total
		snap.PolicyStates = int64(n)
		_, err = tx.NewInsert().Model(&snap).On("CONFLICT (tenant_id, day) DO UPDATE").
			Set("compliant_resources = EXCLUDED.compliant_resources").
			Set("non_compliant_resources = EXCLUDED.non_compliant_resources").
			Set("total_resources = EXCLUDED.total_resources").
			Set("compliant_policies = EXCLUDED.compliant_policies").
			Set("non_compliant_policies = EXCLUDED.non_compliant_policies").
			Set("total_policies = EXCLUDED.total_policies").
			Set("policy_states = EXCLUDED.policy_states").
			Set("taken_at = EXCLUDED.taken_at").
			Exec(ctx)
		return err
	})
	if err != nil {
		return snap, fmt.Errorf("states: snapshot of tenant %s: %w", tenantID, err)
	}
	return snap, nil
}

// rankCounts counts the distinct items (resources or policies) of the
// states by their worst state.
type rankCounts struct {
	NonCompliant int64 `bun:"non_compliant"`
	Compliant    int64 `bun:"compliant"`
	Total        int64 `bun:"total"`
}

// countRanks counts the tenants' distinct items of column (resource_id or
// policy_definition_id, each within its tenant) by the worst of their
// states, in the database.
func countRanks(ctx context.Context, db bun.IDB, tenants []string, column string) (rankCounts, error) {
	var out rankCounts
	if len(tenants) == 0 {
		return out, nil
	}
	items := db.NewSelect().Table("compliance_policy_states").ColumnExpr("MAX(state_rank) AS r").
		Where("tenant_id IN (?)", bun.List(tenants)).GroupExpr("tenant_id, ?", bun.Ident(column))
	err := db.NewSelect().TableExpr("(?) AS i", items).
		ColumnExpr("COALESCE(SUM(CASE WHEN r = 2 THEN 1 ELSE 0 END), 0) AS non_compliant").
		ColumnExpr("COALESCE(SUM(CASE WHEN r = 1 THEN 1 ELSE 0 END), 0) AS compliant").
		ColumnExpr("COUNT(*) AS total").
		Scan(ctx, &out)
	return out, err
}

// LatestSnapshots returns each of the tenants' latest snapshot, ordered by
// tenant; a tenant never synced has none.
func (s *Store) LatestSnapshots(ctx context.Context, tenants []string) ([]Snapshot, error) {
	out := []Snapshot{}
	if len(tenants) == 0 {
		return out, nil
	}
	latest := s.DB.NewSelect().Table("compliance_snapshots").ColumnExpr("tenant_id, MAX(day) AS day").
		Where("tenant_id IN (?)", bun.List(tenants)).Group("tenant_id")
	err := s.DB.NewSelect().Model(&out).
		Join("JOIN (?) AS l ON l.tenant_id = s.tenant_id AND l.day = s.day", latest).
		Order("s.tenant_id").Scan(ctx)
	return out, err
}

// LatestSnapshot returns the tenant's latest snapshot, or nil when it
// never synced. The custom rules' compliance_score category reads it.
func (s *Store) LatestSnapshot(ctx context.Context, tenantID string) (*Snapshot, error) {
	snaps, err := s.LatestSnapshots(ctx, []string{tenantID})
	if err != nil || len(snaps) == 0 {
		return nil, err
	}
	return &snaps[0], nil
}
