// Package exemptions keeps Steward's own exemptions of compliance
// findings, apart from Azure Policy's exemptions (the Exempt states the
// policy states carry): an exemption is one tenant's, of one scope — a
// finding (a resource under a policy definition), a resource, a policy
// definition, or a framework's control — with a reason, an owner and an
// expiry. While active (before expires_at) it hides the findings it
// matches from the findings list and counts the failing resources it
// covers as exempted rather than failing in the framework coverage; at
// expires_at it lapses on its own, since every read compares expires_at
// with the time of the read. The expiry job records each lapse in the
// audit log once.
//
// The package serves the exemption routes (create, list, read, change,
// delete, each change audited), stores the exemptions, and gives the
// coverage package the condition that hides exempted findings in the
// database (Hidden) and the matching of one finding (Match).
package exemptions

import (
	"embed"
	"io/fs"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the exemption tables' schema, numbered 0300 to 0399.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Scopes of an exemption: what it matches.
const (
	// ScopeFinding matches one resource under one policy definition.
	ScopeFinding = "finding"
	// ScopeResource matches a resource under every policy definition.
	ScopeResource = "resource"
	// ScopePolicy matches every resource under a policy definition.
	ScopePolicy = "policy"
	// ScopeControl matches every resource under the policy definitions
	// mapped to a framework's control.
	ScopeControl = "control"
)

// Exemption is one stored exemption. ResourceID and PolicyDefinitionID
// are lower case; the columns its scope does not use are empty.
type Exemption struct {
	bun.BaseModel      `bun:"table:compliance_exemptions,alias:e"`
	ID                 int64      `bun:"id,pk,autoincrement"`
	TenantID           string     `bun:"tenant_id"`
	Scope              string     `bun:"scope"`
	ResourceID         string     `bun:"resource_id"`
	PolicyDefinitionID string     `bun:"policy_definition_id"`
	FrameworkID        string     `bun:"framework_id"`
	ControlID          string     `bun:"control_id"`
	Reason             string     `bun:"reason"`
	Owner              string     `bun:"owner"`
	ExpiresAt          time.Time  `bun:"expires_at"`
	CreatedBy          string     `bun:"created_by"`
	CreatedAt          time.Time  `bun:"created_at"`
	UpdatedAt          time.Time  `bun:"updated_at"`
	LapseRecordedAt    *time.Time `bun:"lapse_recorded_at"`
}

// Active reports whether the exemption is in force at now.
func (e *Exemption) Active(now time.Time) bool { return e.ExpiresAt.After(now) }

// Ref is an exemption as a finding or a resource it exempts names it.
type Ref struct {
	ID        int64     `json:"id"`
	Reason    string    `json:"reason"`
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Ref returns the exemption's reference.
func (e *Exemption) Ref() *Ref {
	return &Ref{ID: e.ID, Reason: e.Reason, Owner: e.Owner, ExpiresAt: e.ExpiresAt}
}

// ControlPolicies returns the ids of the policy definitions mapped to a
// framework's control among those in scope, as the coverage's mapping
// gives them.
type ControlPolicies func(frameworkID, controlID string) []string

// Match returns the first of the active exemptions (ordered by id, as
// Store.Active returns them) that matches the tenant's resource under the
// policy definition, or nil: a control exemption matches when the policy
// is one of the control's, and never when controls is nil.
func Match(active []Exemption, tenantID, resourceID, policyID string, controls ControlPolicies) *Exemption {
	resource, policy := strings.ToLower(resourceID), strings.ToLower(policyID)
	for i := range active {
		e := &active[i]
		if e.TenantID != tenantID {
			continue
		}
		var ok bool
		switch e.Scope {
		case ScopeFinding:
			ok = e.ResourceID == resource && e.PolicyDefinitionID == policy
		case ScopeResource:
			ok = e.ResourceID == resource
		case ScopePolicy:
			ok = e.PolicyDefinitionID == policy
		case ScopeControl:
			if controls == nil {
				continue
			}
			for _, id := range controls(e.FrameworkID, e.ControlID) {
				if strings.EqualFold(id, policyID) {
					ok = true
					break
				}
			}
		}
		if ok {
			return e
		}
	}
	return nil
}

// Hidden returns the condition that hides the findings the active
// exemptions match from a query over the findings, whose alias is f with
// the columns tenant_id, resource_id and policy_definition_id: the
// finding, resource and policy exemptions in force at now are looked up in
// the table (NOT EXISTS), and each control exemption of active excludes its
// tenant's findings of the control's policy definitions. It returns nil
// when nothing is hidden.
func Hidden(active []Exemption, now time.Time, controls ControlPolicies) func(*bun.SelectQuery) *bun.SelectQuery {
	if len(active) == 0 {
		return nil
	}
	return func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where(`NOT EXISTS (SELECT 1 FROM compliance_exemptions AS e WHERE e.tenant_id = f.tenant_id AND e.expires_at > ? AND (
			(e.scope = ? AND e.resource_id = LOWER(f.resource_id) AND e.policy_definition_id = LOWER(f.policy_definition_id)) OR
			(e.scope = ? AND e.resource_id = LOWER(f.resource_id)) OR
			(e.scope = ? AND e.policy_definition_id = LOWER(f.policy_definition_id))))`,
			now, ScopeFinding, ScopeResource, ScopePolicy)
		for _, e := range active {
			if e.Scope != ScopeControl {
				continue
			}
			if ids := controls(e.FrameworkID, e.ControlID); len(ids) > 0 {
				q = q.Where("NOT (f.tenant_id = ? AND f.policy_definition_id IN (?))", e.TenantID, bun.List(ids))
			}
		}
		return q
	}
}
