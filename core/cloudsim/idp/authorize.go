package idp

import (
	"encoding/base64"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
)

// browserClient reads what a browser request of the provider's pages
// names — the tenant of its path, its client and that client's registered
// redirect URI — or answers it with an error page and false. It never
// redirects to a URI the client has not registered: that would make the
// provider an open redirector.
func (p *Provider) browserClient(w http.ResponseWriter, r *http.Request) (t tenant, clientID string, redirect *url.URL, ok bool) {
	q := r.URL.Query()
	seg := r.PathValue("tenant")
	if t, ok = p.resolveTenant(seg); !ok {
		errorPage(w, unknownTenant(seg))
		return t, "", nil, false
	}
	if clientID = q.Get("client_id"); clientID == "" {
		errorPage(w, missingParameter("client_id"))
		return t, "", nil, false
	}
	redirect, oe := p.redirectURI(clientID, q.Get("redirect_uri"))
	if oe != nil {
		errorPage(w, oe)
		return t, "", nil, false
	}
	return t, clientID, redirect, true
}

// handleAuthorize answers an authorization request: with a code at once
// for the user named by login_hint, or with a page to pick the user.
func (p *Provider) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t, clientID, redirect, ok := p.browserClient(w, r)
	if !ok {
		return
	}
	// From here on the client hears about errors at its redirect URI.
	state := q.Get("state")
	sc, oe := checkAuthorizeRequest(q)
	if oe != nil {
		redirectError(w, r, redirect, oe, state)
		return
	}
	hint := q.Get("login_hint")
	if hint == "" {
		if q.Get("prompt") == "none" {
			redirectError(w, r, redirect, newError(http.StatusBadRequest, "login_required", 50058,
				"A silent sign-in request was sent but no user is signed in."), state)
			return
		}
		p.pickerPage(w, r, p.Users().AdmittedAt(t), clientID)
		return
	}
	// domain_hint names the directory, as on Entra ID; an address that
	// more than one directory has needs it, or the user picks one.
	var dir string
	if dh := q.Get("domain_hint"); dh != "" {
		if ht, ok := p.resolveTenant(dh); ok && !ht.any {
			dir = ht.id
		}
	}
	if accounts := p.Users().Accounts(hint, dir).AdmittedAt(t); len(accounts) > 1 {
		p.pickerPage(w, r, accounts, clientID)
		return
	}
	u, oe := p.signInUser(hint, dir, t, "access_denied")
	if oe != nil {
		redirectError(w, r, redirect, oe, state)
		return
	}
	code := p.issueCode(&authCode{
		clientID: clientID, redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), scope: sc, email: u.Email, dir: u.DirectoryTenantID, tenant: t,
		expires: p.sim.Now().Add(p.opts.CodeLifetime),
	})
	redirectWith(w, r, redirect, url.Values{"code": {code}}, state)
}

// redirectURI checks a redirect URI against the client's registration, or,
// with no clients registered, that it is an http(s) loopback URI.
func (p *Provider) redirectURI(clientID, raw string) (*url.URL, *oauthError) {
	if raw == "" {
		return nil, missingParameter("redirect_uri")
	}
	if len(p.opts.Clients) > 0 {
		c, ok := p.opts.Clients[clientID]
		if !ok {
			return nil, newError(http.StatusBadRequest, "unauthorized_client", 700016,
				"Application with identifier '%s' was not found in the directory.", clientID)
		}
		if !slices.Contains(c.RedirectURIs, raw) {
			return nil, newError(http.StatusBadRequest, "invalid_request", 50011,
				"The redirect URI '%s' specified in the request does not match the redirect URIs configured for the application '%s'.", raw, clientID)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Fragment != "" {
		return nil, newError(http.StatusBadRequest, "invalid_request", 50011,
			"The redirect URI '%s' specified in the request is not an absolute http(s) URI without a fragment.", raw)
	}
	if len(p.opts.Clients) == 0 && !isLoopback(u.Hostname()) {
		return nil, newError(http.StatusBadRequest, "invalid_request", 50011,
			"The redirect URI '%s' specified in the request is not a loopback URI; with no registered applications only loopback URIs are accepted.", raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// checkAuthorizeRequest checks the parameters of an authorization request
// other than its client and redirect URI.
func checkAuthorizeRequest(q url.Values) (scope, *oauthError) {
	if rt := q.Get("response_type"); rt != "code" {
		return scope{}, newError(http.StatusBadRequest, "unsupported_response_type", 700054,
			"response_type '%s' is not supported; the simulated provider implements the authorization code flow (response_type=code).", rt)
	}
	if rm := q.Get("response_mode"); rm != "" && rm != "query" {
		return scope{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. response_mode '%s' is not supported; use query.", rm)
	}
	sc, oe := parseScope(q.Get("scope"))
	if oe != nil {
		return scope{}, oe
	}
	if !sc.openID {
		return scope{}, newError(http.StatusBadRequest, "invalid_scope", 70011,
			"The provided value for the input parameter 'scope' is not valid. The scope must contain openid.")
	}
	// PKCE is required of every client, confidential ones too, and only
	// with S256: plain would send the verifier itself through the browser.
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	if challenge == "" {
		return scope{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. Proof Key for Code Exchange is required: send code_challenge and code_challenge_method=S256.")
	}
	if method != "S256" {
		return scope{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. code_challenge_method '%s' is not supported; use S256.", method)
	}
	if b, err := base64.RawURLEncoding.DecodeString(challenge); err != nil || len(b) != 32 {
		return scope{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. code_challenge is not a base64url-encoded SHA-256 hash.")
	}
	return sc, nil
}

// redirectError sends an error back to the client as OAuth 2.0 does.
func redirectError(w http.ResponseWriter, r *http.Request, redirect *url.URL, oe *oauthError, state string) {
	redirectWith(w, r, redirect, url.Values{"error": {oe.code}, "error_description": {oe.description()}}, state)
}

// redirectWith sends the browser back to the client with params and the
// request's state added to the redirect URI's own query.
func redirectWith(w http.ResponseWriter, r *http.Request, redirect *url.URL, params url.Values, state string) {
	u := *redirect
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if state != "" {
		q.Set("state", state)
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

var pages = template.Must(template.New("").Parse(`
{{define "picker"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to your account</title>
<style>body{font-family:sans-serif;max-width:32rem;margin:3rem auto}li{margin:.5rem 0}small{color:#666}</style></head>
<body><h1>Pick an account</h1><p>to continue to <code>{{.Client}}</code></p>
{{with .Accounts}}<ul>{{range .}}<li>{{.Name}} <a href="{{.Href}}">{{.Email}}</a>{{if .Disabled}} <small>(disabled)</small>{{end}}</li>
{{end}}</ul>{{else}}<p>This directory has no users.</p>{{end}}</body></html>
{{end}}
{{define "error"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to your account</title></head>
<body><h1>Sorry, but we’re having trouble signing you in.</h1><p>{{.}}</p></body></html>
{{end}}`))

// pickerPage lists users who may sign in; each link repeats the
// authorization request with the user as login_hint and its directory as
// domain_hint, which completes it. Disabled accounts are listed too, so
// their refusal can be tried.
func (p *Provider) pickerPage(w http.ResponseWriter, r *http.Request, users Users, clientID string) {
	type account struct {
		Name, Email, Href string
		Disabled          bool
	}
	accounts := make([]account, 0, len(users))
	for _, u := range users {
		q := r.URL.Query()
		q.Set("login_hint", u.Email)
		q.Set("domain_hint", u.DirectoryTenantID)
		accounts = append(accounts, account{Name: u.Name, Email: u.Email, Href: r.URL.Path + "?" + q.Encode(), Disabled: !enabled(u)})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = pages.ExecuteTemplate(w, "picker", map[string]any{"Client": clientID, "Accounts": accounts})
}

// errorPage tells the person at the browser what is wrong with a request
// that cannot go back to its client.
func errorPage(w http.ResponseWriter, oe *oauthError) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_ = pages.ExecuteTemplate(w, "error", oe.description())
}
