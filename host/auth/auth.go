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
