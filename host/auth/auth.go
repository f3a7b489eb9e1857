// Package auth issues and verifies Steward's session tokens and manages the
// secrets that sign them. It has no HTTP routes of its own: the host decides
// where tokens come from and how failures are answered, and uses this
// package for the parts that must be exactly right.
//
// Tokens are HS256 JWTs. An access token carries enough about the user to
// authorise a request without a lookup; a refresh token carries only the
// user id, so that exchanging it reloads the user and picks up changed roles
// or a disabled account.
package auth

import "slices"

// Principal kinds.
const (
	KindUser   = "user"
	KindAPIKey = "apikey"
)

// Principal is whoever a request acts for: a signed-in user or an API key.
type Principal struct {
	ID      string   `json:"id"`
	Email   string   `json:"email,omitempty"`
	Name    string   `json:"name,omitempty"`
	Roles   []string `json:"roles"`
	IsAdmin bool     `json:"is_admin"`
	// Kind is KindUser or KindAPIKey.
	Kind string `json:"kind"`
	// TenantIDs are the tenants a standard principal may see. Admins see
	// every tenant whatever this holds.
	TenantIDs []string `json:"tenant_ids"`
}

// CanSeeTenant reports whether p may see the tenant with the given id.
func (p Principal) CanSeeTenant(id string) bool {
	return p.IsAdmin || slices.Contains(p.TenantIDs, id)
}
