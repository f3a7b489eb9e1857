// Package auth signs Steward's callers in: it issues and verifies the
// session tokens, manages the secrets that sign them and records refresh
// tokens so a sign-in can be rotated and revoked. [Routes] serve sign-in
// over HTTP: the development login, the identity provider's sign-in
// (through host/oidc), the token grants, logout and who the caller is. The
// host's server authenticates requests with the tokens this package
// verifies.
//
// Tokens are HS256 JWTs. An access token carries enough about the user to
// authorise a request without a lookup; a refresh token carries only the
// user id, so that exchanging it reloads the user and picks up changed roles
// or a disabled account.
package auth
