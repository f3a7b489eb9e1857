package auth

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/audit"
)

// Session is a browser's freshly issued or refreshed session: Steward's
// own token pair, which the web pages keep in cookies.
type Session struct {
	Subject        string
	Access         string
	AccessExpires  time.Time
	Refresh        string
	RefreshExpires time.Time
}

// ErrSignInRefused is returned for credentials, a code or a token that a
// browser's sign-in or refresh presented and the host refuses; the audit
// log holds the reason.
var ErrSignInRefused = errors.New("sign-in refused")

// ErrSignInUnavailable is returned when a browser cannot sign in now: no
// identity provider is configured, it does not answer, or the shared cache
// that keeps started sign-ins is away.
var ErrSignInUnavailable = errors.New("sign-in unavailable")

// The browser's sign-in runs the very operations of the API — the same
// checks, the same audit entries — and turns their answers into a Session
// or one of the two errors above.

// DevSession signs in with the development credentials.
func (r Routes) DevSession(ctx context.Context, username, password string) (Session, error) {
	in := &loginInput{}
	in.Body.Username, in.Body.Password = username, password
	return r.session(r.login(ctx, in))
}

// BeginBrowserSignIn starts a sign-in with the identity provider that
// returns to redirectURI; the browser keeps state and verifier to finish it.
func (r Routes) BeginBrowserSignIn(ctx context.Context, redirectURI, loginHint string) (authorizationURL, state, verifier string, err error) {
	out, err := r.idpLogin(ctx, &idpLoginInput{LoginHint: loginHint, RedirectURI: redirectURI})
	if err != nil {
		return "", "", "", sessionError(err)
	}
	return out.Body.AuthorizationURL, out.Body.State, out.Body.CodeVerifier, nil
}

// FinishBrowserSignIn redeems the identity provider's code.
func (r Routes) FinishBrowserSignIn(ctx context.Context, code, verifier, state string) (Session, error) {
	in := &idpCallbackInput{}
	in.Body.Code, in.Body.CodeVerifier, in.Body.State = code, verifier, state
	return r.session(r.idpCallback(ctx, in))
}

// RefreshSession rotates a browser's refresh token.
func (r Routes) RefreshSession(ctx context.Context, refreshToken string) (Session, error) {
	return r.session(r.refresh(ctx, refreshToken))
}

// EndSession ends a browser's sign-in whatever state its cookies are in:
// the access token, if it still verifies, is revoked with its refresh
// family, and the refresh token, if it verifies (it outlives the access
// token), has its family revoked too, as POST /api/v1/auth/logout does. A
// token that does not verify — expired, malformed, absent — is passed
// over: nothing of it is left to revoke. Only a failure to revoke is an
// error.
func (r Routes) EndSession(ctx context.Context, accessToken, refreshToken string) error {
	subject := ""
	if claims, err := r.Issuer.Verify(accessToken, TypeAccess); err == nil {
		if err := r.Tokens.Logout(ctx, claims); err != nil {
			return err
		}
		subject = claims.Subject
	}
	if claims, err := r.Issuer.Verify(refreshToken, TypeRefresh); err == nil {
		if err := r.Tokens.EndFamily(ctx, refreshToken, claims); err != nil {
			return err
		}
		subject = claims.Subject
	}
	if subject != "" {
		r.Audit.Record(ctx, audit.Entry{Action: "auth.logout.success", Status: audit.StatusSuccess, ActorID: subject, ResourceType: "session"})
	}
	return nil
}

// session reads an operation's token answer as a Session.
func (r Routes) session(out *struct{ Body tokenResponse }, err error) (Session, error) {
	if err != nil {
		return Session{}, sessionError(err)
	}
	ac, err := r.Issuer.Verify(out.Body.AccessToken, TypeAccess)
	if err != nil {
		return Session{}, err
	}
	rc, err := r.Issuer.Verify(out.Body.RefreshToken, TypeRefresh)
	if err != nil {
		return Session{}, err
	}
	return Session{Subject: ac.Subject, Access: out.Body.AccessToken, AccessExpires: ac.ExpiresAt.Time,
		Refresh: out.Body.RefreshToken, RefreshExpires: rc.ExpiresAt.Time}, nil
}

// sessionError maps an operation's refusal to the browser's errors; other
// errors pass unchanged.
func sessionError(err error) error {
	var se huma.StatusError
	if !errors.As(err, &se) {
		return err
	}
	switch s := se.GetStatus(); {
	case s == http.StatusUnauthorized || s == http.StatusForbidden || s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		return errors.Join(ErrSignInRefused, err)
	case s == http.StatusBadGateway || s == http.StatusServiceUnavailable:
		return errors.Join(ErrSignInUnavailable, err)
	}
	return err
}
